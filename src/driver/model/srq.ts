/**
 * Shared receive queues: CREATE_SRQ / MODIFY_SRQ / QUERY_SRQ / DESTROY_SRQ.
 *
 * The ring's free entries form a list through nextWqeIndex (device manual,
 * section 6.2; mlx5's scheme). At creation entry i links to i + 1 mod size,
 * head = 0 and tail = size − 1. The tail is a sentinel that is never posted
 * while it is the tail, so an SRQ of 2^k entries holds 2^k − 1 receives: the
 * driver sizes the ring as the smallest power of two ≥ max_wr + 1 and
 * reports max_wr = 2^k − 1 (mlx5 does the same). post_srq_recv (post.ts)
 * fills entry `head` and follows its link; poll_cq (cq.ts) links a consumed
 * entry back after the tail.
 */
import { errno, IBV_SRQ_LIMIT, IBV_SRQ_MAX_WR } from '../../device/abi/constants.js';
import { Cmd } from '../../device/commands.js';
import { log2, recvWqeMaxSge, recvWqeStride, SRQ_WQE_HDR } from '../../device/wqe.js';
import { VerbsError } from '../verbs/errno-error.js';
import type { ibv_cq, ibv_pd, ibv_srq, ibv_srq_attr, ibv_srq_init_attr, ibv_xrcd } from '../verbs/types.js';
import { model_drop_async_events } from './async.js';
import { model_cmd } from './cmd.js';
import { model_live } from './context.js';
import { ModelCq, ModelPd, ModelSrq, ModelXrcd, type XrcSrq } from './objects.js';

const SRQ_NEXT = SRQ_WQE_HDR.f.nextWqeIndex;

function nextPow2(n: number): number {
  return n <= 1 ? 1 : 2 ** Math.ceil(Math.log2(n));
}

export function model_create_srq(ibpd: ibv_pd, init: ibv_srq_init_attr): ibv_srq {
  return createSrq(ibpd, init, null, 'ibv_create_srq');
}

/** ibv_create_srq_ex with IBV_SRQT_XRC: an SRQ of XRC domain `xrcd` whose receives complete on `cq`. */
export function model_create_srq_xrc(ibpd: ibv_pd, ibxrcd: ibv_xrcd, ibcq: ibv_cq, init: ibv_srq_init_attr): ibv_srq {
  const xrcd = ibxrcd as ModelXrcd;
  const cq = ibcq as ModelCq;
  const verb = 'ibv_create_srq_ex';
  if (!(xrcd instanceof ModelXrcd) || xrcd.destroyed) throw new VerbsError(errno.EINVAL, `${verb}: not an open ibv_xrcd of the model provider`);
  if (!(cq instanceof ModelCq) || cq.destroyed) throw new VerbsError(errno.EINVAL, `${verb}: not a live ibv_cq of the model provider`);
  if (xrcd.context !== ibpd?.context || cq.context !== ibpd.context) throw new VerbsError(errno.EINVAL, `${verb}: the xrcd, cq and pd are not of one context`);
  return createSrq(ibpd, init, { xrcd, cq }, verb);
}

/** The ibv_get_srq_num of an XRC SRQ; EOPNOTSUPP for a basic one (libibverbs: no VERBS_SRQ_NUM). */
export function model_get_srq_num(ibsrq: ibv_srq, out: { srq_num: number }): number {
  const srq = ibsrq as ModelSrq;
  if (!(srq instanceof ModelSrq) || srq.destroyed || srq.context.closed || typeof out !== 'object' || out === null) return errno.EINVAL;
  if (!srq.xrc) return errno.EOPNOTSUPP;
  out.srq_num = srq.srqn;
  return 0;
}

function createSrq(ibpd: ibv_pd, init: ibv_srq_init_attr, xrc: XrcSrq | null, verb: string): ibv_srq {
  const pd = ibpd as ModelPd;
  if (!(pd instanceof ModelPd)) throw new VerbsError(errno.EINVAL, `${verb}: not an ibv_pd of the model provider`);
  const ctx = pd.context;
  model_live(ctx, verb);
  const fail = (n: number, why: string): never => {
    throw new VerbsError(n, `${verb}: ${why}`);
  };
  if (pd.destroyed) fail(errno.EINVAL, 'the PD was deallocated');
  const a = init?.attr;
  if (!a || typeof a !== 'object') return fail(errno.EINVAL, 'no attributes');
  const L = ctx.limits;
  // One entry is the free list's sentinel: max_wr + 1 entries must fit maxSrqWr.
  if (!Number.isInteger(a.max_wr) || a.max_wr < 1 || a.max_wr + 1 > nextPow2(L.maxSrqWr)) {
    fail(errno.EINVAL, `max_wr ${String(a.max_wr)} not in 1..${nextPow2(L.maxSrqWr) - 1}`);
  }
  if (!Number.isInteger(a.max_sge) || a.max_sge < 0 || a.max_sge > L.maxSrqSge) fail(errno.EINVAL, `max_sge ${String(a.max_sge)} > ${L.maxSrqSge}`);
  if (!Number.isInteger(a.srq_limit) || a.srq_limit < 0 || a.srq_limit > a.max_wr) fail(errno.EINVAL, `srq_limit ${String(a.srq_limit)} > max_wr`);
  const size = nextPow2(a.max_wr + 1);
  const stride = recvWqeStride(a.max_sge);
  const logSize = log2(size);
  const logStride = log2(stride);
  const maxSge = Math.min(recvWqeMaxSge(stride), L.maxSrqSge);
  const mem = ctx.mem;
  let ring;
  let rec;
  try {
    ring = mem.alloc(size << logStride, 4096);
  } catch (e) {
    return fail(errno.ENOMEM, (e as Error).message);
  }
  try {
    rec = mem.alloc(8, 64);
  } catch (e) {
    mem.free(ring.addrNum);
    return fail(errno.ENOMEM, (e as Error).message);
  }
  // Link the free list before the device can see the ring.
  const dv = mem.dv;
  const ringOff = ring.addrNum - mem.baseNum;
  for (let i = 0; i < size; i++) SRQ_NEXT.set(dv, ringOff + (i << logStride), (i + 1) & (size - 1));
  const r = model_cmd(ctx, Cmd.CREATE_SRQ, {
    pdn: pd.pdn,
    limit: a.srq_limit,
    ringAddr: ring.addr,
    dbrecAddr: rec.addr,
    logSize,
    logStride,
    maxSge,
    xrcdn: xrc ? xrc.xrcd.xrcdn : 0,
    cqn: xrc ? xrc.cq.cqn : 0,
  });
  if (r.errno) {
    mem.free(ring.addrNum);
    mem.free(rec.addrNum);
    fail(r.errno, r.what);
  }
  const srq = new ModelSrq(ctx, init.srq_context, pd, r.out['srqn'] as number, logSize, logStride, maxSge, ring.addrNum, rec.addrNum, xrc);
  a.max_wr = size - 1;
  a.max_sge = maxSge;
  ctx.srqs.set(srq.srqn, srq);
  return srq;
}

/** ibv_modify_srq: IBV_SRQ_LIMIT (re)arms the limit event; resizing (IBV_SRQ_MAX_WR) is EINVAL. */
export function model_modify_srq(ibsrq: ibv_srq, attr: ibv_srq_attr, mask: number): number {
  const srq = ibsrq as ModelSrq;
  if (!(srq instanceof ModelSrq)) return errno.EINVAL;
  const ctx = srq.context;
  if (srq.destroyed || ctx.closed || !attr || typeof mask !== 'number' || (mask >>> 0 !== mask && (mask | 0) !== mask)) return errno.EINVAL;
  const r = model_cmd(ctx, Cmd.MODIFY_SRQ, {
    srqn: srq.srqn,
    attrMask: mask >>> 0,
    maxWr: mask & IBV_SRQ_MAX_WR ? attr.max_wr : 0,
    limit: mask & IBV_SRQ_LIMIT ? attr.srq_limit : 0,
  });
  return r.errno;
}

export function model_query_srq(ibsrq: ibv_srq, attr: ibv_srq_attr): number {
  const srq = ibsrq as ModelSrq;
  if (!(srq instanceof ModelSrq)) return errno.EINVAL;
  const ctx = srq.context;
  if (srq.destroyed || ctx.closed) return errno.EINVAL;
  const r = model_cmd(ctx, Cmd.QUERY_SRQ, { srqn: srq.srqn });
  if (r.errno) return r.errno;
  attr.max_wr = (r.out['maxWr'] as number) - 1;
  attr.max_sge = r.out['maxSge'] as number;
  attr.srq_limit = r.out['limit'] as number;
  return 0;
}

/** ibv_destroy_srq (EBUSY while QPs use it, or while reported async events are unacknowledged). */
export function model_destroy_srq(ibsrq: ibv_srq): number {
  const srq = ibsrq as ModelSrq;
  if (!(srq instanceof ModelSrq)) return errno.EINVAL;
  const ctx = srq.context;
  if (srq.destroyed || ctx.closed) return errno.EINVAL;
  if (srq.asyncEventsReported !== srq.asyncEventsAcked) return errno.EBUSY;
  const r = model_cmd(ctx, Cmd.DESTROY_SRQ, { srqn: srq.srqn });
  if (r.errno) return r.errno;
  srq.destroyed = true;
  ctx.srqs.delete(srq.srqn);
  ctx.mem.free(srq.ringAddr);
  ctx.mem.free(srq.dbrecAddr);
  model_drop_async_events(ctx, 'srq', srq.srqn);
  return 0;
}
