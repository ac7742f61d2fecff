/** Every op a reliable QP has, mixed sizes, inline and unsignaled: the work requests the runner tests post. */
export const ALL_RC = [
  { op: 'send', size: 3000 },
  { op: 'write', size: 40, inline: true, signaled: false },
  { op: 'cmp_swap' },
  { op: 'read', size: 5000 },
  { op: 'send_imm', size: 0 },
  { op: 'fetch_add', signaled: false },
  { op: 'write_imm', size: 1500 },
  { op: 'read', size: 0 },
  { op: 'write', size: 12000 },
  { op: 'fetch_add' },
  { op: 'send', size: 64, inline: true },
];
