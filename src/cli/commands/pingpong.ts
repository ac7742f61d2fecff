/** `rnic rc_pingpong`, `uc_pingpong`, `ud_pingpong`, `srq_pingpong`, `xsrq_pingpong`: rdma-core's ping-pong examples, ported (examples/pingpong/core.ts, examples/srq_pingpong.ts, examples/xsrq_pingpong.ts). */
import { parse_args, pingpongMain, usage, type PingpongKind } from '../../../examples/pingpong/core.js';
import { parse_srq_args, main as srqMain, usage as srqUsage } from '../../../examples/srq_pingpong.js';
import { parse_xsrq_args, main as xsrqMain, usage as xsrqUsage } from '../../../examples/xsrq_pingpong.js';
import type { Command } from '../command.js';
import { answersWithoutModel, ensurePeerModel } from '../peer-model.js';
import { PROFILE_USAGE, takeProfileFlag } from '../profile-flag.js';

/** Takes --profile, starts the model on it, runs the example with the rest (a usage mistake or --help needs no model). */
async function withPeer(args: string[], parse: (argv: readonly string[]) => unknown, run: (rest: string[]) => Promise<number>): Promise<number> {
  const { profile, rest } = takeProfileFlag(args);
  if (answersWithoutModel(parse, rest)) return run(rest);
  return (await ensurePeerModel(undefined, profile)) ? run(rest) : 1;
}

const SUMMARY: Record<PingpongKind, string> = {
  RC: 'RC send/receive ping-pong between two hosts (rdma-core rc_pingpong; faces the C program)',
  UC: 'UC send/receive ping-pong between two hosts (rdma-core uc_pingpong; faces the C program)',
  UD: 'UD send/receive ping-pong between two hosts (rdma-core ud_pingpong; faces the C program)',
};

export function pingpongCommand(kind: PingpongKind, name = `rnic ${kind.toLowerCase()}_pingpong`): Command {
  return {
    summary: SUMMARY[kind],
    usage: `${usage(name, kind)}\n${PROFILE_USAGE}`,
    // Talks to a peer process: without RNIC_CONFIG, the two-hosts loopback default.
    run: (args) =>
      withPeer(
        args,
        (a) => parse_args(a, kind),
        (rest) => pingpongMain(kind, rest, { argv0: name }),
      ),
  };
}

const SRQ_NAME = 'rnic srq_pingpong';

export const srqPingpongCommand: Command = {
  summary: 'RC ping-pong on -q QPs sharing one SRQ (rdma-core srq_pingpong; faces the C program)',
  usage: `${srqUsage(SRQ_NAME)}\n${PROFILE_USAGE}`,
  run: (args) => withPeer(args, parse_srq_args, (rest) => srqMain(rest, { argv0: SRQ_NAME })),
};

const XSRQ_NAME = 'rnic xsrq_pingpong';

export const xsrqPingpongCommand: Command = {
  summary: 'XRC ping-pong: XRC send / receive QPs and an XRC SRQ per end (rdma-core xsrq_pingpong; faces the C program)',
  usage: `${xsrqUsage(XSRQ_NAME)}\n${PROFILE_USAGE}`,
  run: (args) => withPeer(args, parse_xsrq_args, (rest) => xsrqMain(rest, { argv0: XSRQ_NAME })),
};
