/**
 * ibv_query_qp_data_in_order: whether the bytes of one message land in host
 * memory in order, so that a program polling the last byte of an RDMA WRITE
 * sees all before it. The model places a message's packets in PSN order
 * (the responder drops what comes out of sequence, go-back-N) and each
 * packet's payload front to back, from one thread; on x86 (TSO, where
 * libibverbs asks the provider at all) those stores are seen in that order.
 */
import type { ibv_qp } from '../verbs/types.js';
import { ModelQp } from './objects.js';

const TSO = process.arch === 'x64' || process.arch === 'ia32';

/** 1 if guaranteed, else 0 (also for a bad QP or flags other than 0, which rdma-core reserves). */
export function model_query_qp_data_in_order(ibqp: ibv_qp, op: number, flags: number): number {
  const qp = ibqp as ModelQp;
  if (!(qp instanceof ModelQp) || qp.destroyed || qp.context.closed) return 0;
  if (flags !== 0 || !Number.isInteger(op) || op < 0) return 0;
  return TSO ? 1 : 0;
}
