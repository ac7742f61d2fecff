/**
 * Memory windows: ibv_alloc_mw, ibv_dealloc_mw, ibv_bind_mw (type 1) and
 * ibv_inc_rkey. A type 2 window is bound by posting IBV_WR_BIND_MW
 * (`wr.bind_mw`, or ibv_wr_bind_mw) and invalidated by IBV_WR_LOCAL_INV or
 * a peer's IBV_WR_SEND_WITH_INV.
 *
 * TypeScript shape: C's inline ibv_bind_mw checks what it checks (type 1,
 * an MR or a zero range, the MR's PD) and hands the rest to the provider,
 * which posts a bind WR on `qp` and, once posted, sets `mw.rkey` to the key
 * the bind gives the window (libibverbs providers do the same).
 */
import { errno, IBV_MW_TYPE_1 } from '../../device/abi/constants.js';
import { isObj, objOps, opsOfObj } from './dispatch.js';
import type { ibv_mw, ibv_mw_bind, ibv_pd, ibv_qp } from './types.js';

/** ibv_alloc_mw(pd, type): a window of IBV_MW_TYPE_1 or IBV_MW_TYPE_2; throws EINVAL for another type, ENOMEM when max_mw exist. */
export function ibv_alloc_mw(pd: ibv_pd, type: number): ibv_mw {
  return opsOfObj(pd, 'ibv_alloc_mw', 'ibv_pd').alloc_mw(pd, type);
}

/** ibv_dealloc_mw: 0, or EINVAL for something that is not a live window. */
export function ibv_dealloc_mw(mw: ibv_mw): number {
  const o = objOps(mw);
  return o ? o.dealloc_mw(mw) : errno.EINVAL;
}

/**
 * ibv_bind_mw(qp, mw, mw_bind): binds a type 1 window through a bind WR on
 * `qp`. Returns 0 (the bind completes on the send CQ, IBV_WC_BIND_MW, when
 * signaled) or an errno: EINVAL for a window that is not type 1 or an
 * address range without an MR, EPERM for an MR of another PD (libibverbs'
 * checks), or what ibv_post_send would return.
 */
export function ibv_bind_mw(qp: ibv_qp, mw: ibv_mw, mw_bind: ibv_mw_bind): number {
  const o = objOps(qp);
  if (!o || !isObj(mw) || !isObj(mw_bind) || !isObj(mw_bind.bind_info)) return errno.EINVAL;
  if (mw.type !== IBV_MW_TYPE_1) return errno.EINVAL;
  const b = mw_bind.bind_info;
  if (b.mr !== null && b.mr !== undefined && !isObj(b.mr)) return errno.EINVAL;
  if (!b.mr && (b.addr || b.length)) return errno.EINVAL;
  if (b.mr && b.mr.pd !== mw.pd) return errno.EPERM;
  return o.bind_mw(qp, mw, mw_bind);
}
