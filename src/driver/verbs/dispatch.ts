/**
 * How a verb reaches its provider: the context's ops table with every op
 * the provider left out filled by libibverbs-style dummies, and the
 * argument helpers every verb file shares. Internal to src/driver/verbs.
 */
import { errno } from '../../device/abi/constants.js';
import { VerbsError } from './errno-error.js';
import type { VerbsContextOps } from './ops.js';
import type { ibv_context } from './types.js';

type OpsContext = ibv_context & { ops: VerbsContextOps };

/*
 * Argument checks common to every provider. libibverbs dereferences what it
 * is given (a NULL or stale pointer is a crash in C); here an argument that
 * is not an object of the right kind is EINVAL: returned by int verbs,
 * thrown as a VerbsError by pointer verbs, a rejected Promise for the ones
 * that wait. The provider checks that the object is its own and alive.
 */
export function isObj(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null;
}

/*
 * libibverbs' dummy_ops: a provider gives the ops it has; each missing one
 * fails with EOPNOTSUPP in the way of its verb (an int returned, a
 * VerbsError thrown, a rejected Promise, a negative count from poll_cq).
 */
export const INT_OPS = [
  'query_device',
  'query_port',
  'query_gid',
  'close_device',
  'dealloc_pd',
  'dereg_mr',
  'destroy_comp_channel',
  'destroy_cq',
  'req_notify_cq',
  'modify_srq',
  'query_srq',
  'destroy_srq',
  'post_srq_recv',
  'modify_qp',
  'query_qp',
  'destroy_qp',
  'post_send',
  'post_recv',
  'destroy_ah',
  'resize_cq',
  'modify_cq',
  'post_send_all',
  'query_device_ex',
  'query_gid_ex',
  'query_rt_values',
  'attach_mcast',
  'detach_mcast',
  'dealloc_mw',
  'bind_mw',
  'close_xrcd',
  'get_srq_num',
] as const;
export const THROW_OPS = [
  'query_pkey',
  'alloc_pd',
  'reg_mr',
  'alloc_buf',
  'free_buf',
  'create_comp_channel',
  'create_cq',
  'ack_cq_events',
  'create_srq',
  'create_qp',
  'create_ah',
  'ack_async_event',
  'read_counters',
  'create_cq_ex',
  'create_qp_ex',
  'reg_mr_iova',
  'alloc_null_mr',
  'alloc_mw',
  'open_xrcd',
  'create_srq_xrc',
  'open_qp',
] as const;
export const ASYNC_OPS = ['get_cq_event', 'get_async_event'] as const;
const DUMMY_OPS: VerbsContextOps = (() => {
  const d: Record<string, unknown> = {};
  const unsupported = (k: string) => new VerbsError(errno.EOPNOTSUPP, `${k}: the provider does not implement it`);
  for (const k of INT_OPS) d[k] = () => errno.EOPNOTSUPP;
  for (const k of THROW_OPS)
    d[k] = () => {
      throw unsupported(k);
    };
  for (const k of ASYNC_OPS) d[k] = () => Promise.reject(unsupported(k));
  d['poll_cq'] = () => -errno.EOPNOTSUPP;
  d['poll_cq_ex'] = () => -errno.EOPNOTSUPP;
  d['rereg_mr'] = () => ({ rc: -1, errno: errno.EOPNOTSUPP }); // IBV_REREG_MR_ERR_INPUT
  return Object.freeze(d) as unknown as VerbsContextOps;
})();
const completed = new WeakMap<object, VerbsContextOps>();
// The last table looked up: one provider is the rule, and a WeakMap lookup costs more than a post.
let lastRaw: object | null = null;
let lastFull: VerbsContextOps | null = null;

/** The ops of an open context (missing ones filled with the dummies), or null. */
export function opsOrNull(ctx: unknown): VerbsContextOps | null {
  if (!isObj(ctx)) return null;
  const o = (ctx as Partial<OpsContext>).ops;
  if (o === lastRaw && o !== null) return lastFull;
  if (!isObj(o)) return null;
  lastRaw = o;
  let full = completed.get(o);
  if (!full) {
    full = { ...DUMMY_OPS };
    for (const [k, v] of Object.entries(o)) if (typeof v === 'function') (full as unknown as Record<string, unknown>)[k] = v;
    completed.set(o, full);
  }
  lastFull = full;
  return full;
}

/** The ops of the context an object (pd, cq, qp, ...) belongs to, or null. */
export function objOps(obj: unknown): VerbsContextOps | null {
  return isObj(obj) ? opsOrNull(obj['context']) : null;
}

export function ops(ctx: ibv_context, verb = 'verbs'): VerbsContextOps {
  const o = opsOrNull(ctx);
  if (!o) throw new VerbsError(errno.EINVAL, `${verb}: not an open ibv_context`);
  return o;
}

export function opsOfObj(obj: unknown, verb: string, what: string): VerbsContextOps {
  const o = objOps(obj);
  if (!o) throw new VerbsError(errno.EINVAL, `${verb}: not an ${what}`);
  return o;
}

export function rejected(verb: string, what: string): Promise<never> {
  return Promise.reject(new VerbsError(errno.EINVAL, `${verb}: not an ${what}`));
}

/*
 * C's errno for the verbs that return -1 and set it (ibv_query_gid,
 * ibv_query_pkey, ibv_get_pkey_index): the last one set, read with
 * rnic_errno(). One thread, so one value.
 */
let lastErrno = 0;
export function setErrno(e: number): number {
  lastErrno = e;
  return -1;
}
export function getErrno(): number {
  return lastErrno;
}
