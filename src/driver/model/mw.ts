/**
 * Memory windows: ALLOC_MW / DEALLOC_MW, and ibv_bind_mw as libibverbs
 * providers do it (rxe_bind_mw, mlx5_bind_mw): a BIND_MW WR with the next
 * key (ibv_inc_rkey) posted on the QP, and the window's rkey updated once
 * the WR is posted. The bind itself happens on the device, which completes
 * it (IBV_WC_BIND_MW) or fails it (IBV_WC_MW_BIND_ERR).
 */
import { errno, IBV_ACCESS_ZERO_BASED, IBV_MW_TYPE_1, IBV_MW_TYPE_2, IBV_WR_BIND_MW, ibv_inc_rkey } from '../../device/abi/constants.js';
import { Cmd } from '../../device/commands.js';
import { VerbsError } from '../verbs/errno-error.js';
import type { ibv_mw, ibv_mw_bind, ibv_pd, ibv_qp, ibv_send_wr } from '../verbs/types.js';
import { isU32, isU64 } from './check.js';
import { model_cmd, model_cmd_or_throw } from './cmd.js';
import { model_live } from './context.js';
import { ModelMw, ModelPd, ModelQp } from './objects.js';
import { model_post_send } from './post.js';

export function model_alloc_mw(ibpd: ibv_pd, type: number): ibv_mw {
  const pd = ibpd as ModelPd;
  if (!(pd instanceof ModelPd) || pd.destroyed) throw new VerbsError(errno.EINVAL, 'ibv_alloc_mw: not a live ibv_pd of the model provider');
  model_live(pd.context, 'ibv_alloc_mw');
  if (type !== IBV_MW_TYPE_1 && type !== IBV_MW_TYPE_2)
    throw new VerbsError(errno.EINVAL, `ibv_alloc_mw: type ${String(type)} (IBV_MW_TYPE_1 or IBV_MW_TYPE_2)`);
  const out = model_cmd_or_throw(pd.context, Cmd.ALLOC_MW, { pdn: pd.pdn, type }, 'ibv_alloc_mw');
  const mw = new ModelMw(pd.context, pd, (out['rkey'] as number) >>> 0, type);
  pd.context.mws.add(mw);
  return mw;
}

export function model_dealloc_mw(ibmw: ibv_mw): number {
  const mw = ibmw as ModelMw;
  if (!(mw instanceof ModelMw) || mw.destroyed || mw.context.closed) return errno.EINVAL;
  const r = model_cmd(mw.context, Cmd.DEALLOC_MW, { key: mw.rkey });
  if (r.errno) return r.errno;
  mw.destroyed = true;
  mw.context.mws.delete(mw);
  return 0;
}

export function model_bind_mw(ibqp: ibv_qp, ibmw: ibv_mw, mw_bind: ibv_mw_bind): number {
  const qp = ibqp as ModelQp;
  const mw = ibmw as ModelMw;
  if (!(qp instanceof ModelQp) || !(mw instanceof ModelMw) || mw.destroyed || mw.context !== qp.context) return errno.EINVAL;
  const b = mw_bind.bind_info;
  if (!isU64(mw_bind.wr_id) || !isU32(b.mw_access_flags) || !isU64(b.addr) || !isU64(b.length)) return errno.EINVAL;
  // A type 1 window is never zero-based (o10-36.2.2; rxe's provider refuses it here).
  if (b.mw_access_flags & IBV_ACCESS_ZERO_BASED) return errno.EINVAL;
  const rkey = ibv_inc_rkey(mw.rkey);
  const wr: ibv_send_wr = {
    wr_id: mw_bind.wr_id,
    next: null,
    sg_list: null,
    num_sge: 0,
    opcode: IBV_WR_BIND_MW,
    send_flags: mw_bind.send_flags,
    bind_mw: { mw, rkey, bind_info: b },
  };
  const rc = model_post_send(qp, wr);
  if (rc === 0) mw.rkey = rkey;
  return rc;
}
