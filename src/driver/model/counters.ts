/**
 * Hardware counters by their Linux names (rxe / mlx5 hw_counters, and the
 * two ibv_port_attr counters), read from the handle's HwCounters window the
 * way Linux tools read /sys/class/infiniband/<dev>/ports/<p>/hw_counters.
 */
import { errno } from '../../device/abi/constants.js';
import { COUNTERS } from '../../device/counters.js';
import { VerbsError } from '../verbs/errno-error.js';
import type { ibv_context } from '../verbs/types.js';
import { ModelContext } from './context.js';

export function model_read_counters(ibctx: ibv_context, port_num: number): Record<string, bigint> {
  const ctx = ibctx as ModelContext;
  if (!(ctx instanceof ModelContext) || ctx.closed) throw new VerbsError(errno.EINVAL, 'rnic_read_counters: not an open ibv_context of the model provider');
  const c = ctx.handle.counters;
  if (!Number.isInteger(port_num) || port_num < 1 || port_num > c.ports) {
    throw new VerbsError(errno.EINVAL, `rnic_read_counters: no port ${String(port_num)}`);
  }
  const out: Record<string, bigint> = {};
  for (let i = 0; i < COUNTERS.length; i++) out[COUNTERS[i]!.name] = BigInt(Math.floor(c.read(port_num, i)));
  return out;
}
