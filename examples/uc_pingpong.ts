/**
 * uc_pingpong: rdma-core's libibverbs/examples/uc_pingpong.c, ported on the
 * ping-pong core shared with rc_pingpong (examples/pingpong/core.ts).
 */
import { pingpongMain, usage as pingpongUsage, type MainOptions } from './pingpong/core.js';

export function main(argv: string[], mo: MainOptions = {}): Promise<number> {
  return pingpongMain('UC', argv, mo);
}

export function usage(argv0: string): string {
  return pingpongUsage(argv0, 'UC');
}
