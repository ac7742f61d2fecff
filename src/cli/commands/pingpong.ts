/** `rnic rc_pingpong`, `uc_pingpong`, `ud_pingpong`, `srq_pingpong`: rdma-core's ping-pong examples, ported (examples/pingpong/core.ts, examples/srq_pingpong.ts). */
import { pingpongMain, usage, type PingpongKind } from '../../../examples/pingpong/core.js';
import { main as srqMain, usage as srqUsage } from '../../../examples/srq_pingpong.js';
import type { Command } from '../command.js';
import { ensurePeerModel } from '../peer-model.js';

const SUMMARY: Record<PingpongKind, string> = {
  RC: 'RC send/receive ping-pong between two hosts (rdma-core rc_pingpong; faces the C program)',
  UC: 'UC send/receive ping-pong between two hosts (rdma-core uc_pingpong; faces the C program)',
  UD: 'UD send/receive ping-pong between two hosts (rdma-core ud_pingpong; faces the C program)',
};

export function pingpongCommand(kind: PingpongKind, name = `rnic ${kind.toLowerCase()}_pingpong`): Command {
  return {
    summary: SUMMARY[kind],
    usage: usage(name, kind),
    // Talks to a peer process: without RNIC_CONFIG, the two-hosts loopback default.
    run: async (args) => ((await ensurePeerModel()) ? pingpongMain(kind, args, { argv0: name }) : 1),
  };
}

const SRQ_NAME = 'rnic srq_pingpong';

export const srqPingpongCommand: Command = {
  summary: 'RC ping-pong on -q QPs sharing one SRQ (rdma-core srq_pingpong; faces the C program)',
  usage: srqUsage(SRQ_NAME),
  run: async (args) => ((await ensurePeerModel()) ? srqMain(args, { argv0: SRQ_NAME }) : 1),
};
