/** `rnic perf`: perftest-style bandwidth and latency tests (examples/perf.ts). */
import { main, usage } from '../../../examples/perf.js';
import type { Command } from '../command.js';
import { ensurePeerModel } from '../peer-model.js';

const NAME = 'rnic perf';

export const perfCommand: Command = {
  summary: 'bandwidth/latency of SEND, RDMA WRITE and RDMA READ, perftest style (write_bw, read_lat, ...)',
  usage: usage(NAME),
  // Without --loopback it talks to a peer process: without RNIC_CONFIG, the two-hosts loopback default.
  run: async (args) => (args.includes('--loopback') || (await ensurePeerModel()) ? main(args, { argv0: NAME }) : 1),
};
