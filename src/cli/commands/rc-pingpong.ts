/** `rnic rc-pingpong`: rdma-core's rc_pingpong, ported (examples/rc_pingpong.ts). */
import { main, usage } from '../../../examples/rc_pingpong.js';
import type { Command } from '../command.js';

const NAME = 'rnic rc-pingpong';

export const rcPingpongCommand: Command = {
  summary: 'RC send/receive ping-pong between two hosts (rdma-core rc_pingpong; faces the C program)',
  usage: usage(NAME),
  run: (args) => main(args, { argv0: NAME }),
};
