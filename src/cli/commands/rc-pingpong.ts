/** `rnic rc-pingpong`: rdma-core's rc_pingpong, ported (examples/rc_pingpong.ts). */
import { main, usage } from '../../../examples/rc_pingpong.js';
import type { Command } from '../command.js';
import { ensurePeerModel } from '../peer-model.js';

const NAME = 'rnic rc-pingpong';

export const rcPingpongCommand: Command = {
  summary: 'RC send/receive ping-pong between two hosts (rdma-core rc_pingpong; faces the C program)',
  usage: usage(NAME),
  // Talks to a peer process: without RNIC_CONFIG, the two-hosts loopback default.
  run: async (args) => ((await ensurePeerModel()) ? main(args, { argv0: NAME }) : 1),
};
