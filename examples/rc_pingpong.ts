/**
 * rc_pingpong: rdma-core's libibverbs/examples/rc_pingpong.c, ported (the
 * shared core, with uc_pingpong and ud_pingpong, is examples/pingpong/core.ts).
 */
import { pingpongMain, usage as pingpongUsage, type MainOptions } from './pingpong/core.js';

export * from './pingpong/core.js';

export function main(argv: string[], mo: MainOptions = {}): Promise<number> {
  return pingpongMain('RC', argv, mo);
}

export function usage(argv0: string): string {
  return pingpongUsage(argv0, 'RC');
}
