/** `rnic perf`: perftest-style bandwidth and latency tests (examples/perf.ts). */
import { main, usage } from '../../../examples/perf.js';
import type { Command } from '../command.js';

const NAME = 'rnic perf';

export const perfCommand: Command = {
  summary: 'bandwidth/latency of SEND, RDMA WRITE and RDMA READ, perftest style (write_bw, read_lat, ...)',
  usage: usage(NAME),
  run: (args) => main(args, { argv0: NAME }),
};
