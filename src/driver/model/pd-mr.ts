/**
 * Protection domains and memory regions: ALLOC_PD / DEALLOC_PD and
 * REG_MR / DEREG_MR. A buffer is registered by its host memory address,
 * which is also its iova (ibv_reg_mr: iova = the buffer's address), so the
 * MR's `addr` is what a peer puts in an RETH and what SGEs name.
 */
import { errno } from '../../device/abi/constants.js';
import { Cmd } from '../../device/commands.js';
import { VerbsError } from '../verbs/errno-error.js';
import type { ibv_mr, ibv_pd } from '../verbs/types.js';
import type { ibv_context } from '../verbs/types.js';
import { model_cmd, model_cmd_or_throw } from './cmd.js';
import { model_live, type ModelContext } from './context.js';
import { ModelMr, ModelPd } from './objects.js';

export function model_alloc_pd(ibctx: ibv_context): ibv_pd {
  const ctx = ibctx as ModelContext;
  model_live(ctx, 'ibv_alloc_pd');
  const out = model_cmd_or_throw(ctx, Cmd.ALLOC_PD, {}, 'ibv_alloc_pd');
  const pd = new ModelPd(ctx, out['pdn'] as number);
  ctx.pds.add(pd);
  return pd;
}

export function model_dealloc_pd(ibpd: ibv_pd): number {
  const pd = ibpd as ModelPd;
  if (!(pd instanceof ModelPd)) return errno.EINVAL;
  const ctx = pd.context;
  if (pd.destroyed || ctx.closed) return errno.EINVAL;
  const r = model_cmd(ctx, Cmd.DEALLOC_PD, { pdn: pd.pdn });
  if (r.errno) return r.errno;
  pd.destroyed = true;
  ctx.pds.delete(pd);
  return 0;
}

export function model_reg_mr(ibpd: ibv_pd, buf: Uint8Array, access: number): ibv_mr {
  const pd = ibpd as ModelPd;
  if (!(pd instanceof ModelPd)) throw new VerbsError(errno.EINVAL, 'ibv_reg_mr: not an ibv_pd of the model provider');
  const ctx = pd.context;
  model_live(ctx, 'ibv_reg_mr');
  if (pd.destroyed) throw new VerbsError(errno.EINVAL, 'ibv_reg_mr: the PD was deallocated');
  if (buf.buffer !== ctx.mem.sab) {
    throw new VerbsError(errno.EINVAL, 'ibv_reg_mr: the buffer is not memory the device reaches (allocate it with rnic_alloc_buf)');
  }
  if (!Number.isInteger(access) || access < 0) throw new VerbsError(errno.EINVAL, `ibv_reg_mr: bad access flags ${String(access)}`);
  const addr = ctx.mem.addrOf(buf);
  const out = model_cmd_or_throw(
    ctx,
    Cmd.REG_MR,
    { pdn: pd.pdn, access: access >>> 0, hostAddr: addr, length: BigInt(buf.byteLength), iova: addr },
    'ibv_reg_mr',
  );
  const lkey = out['lkey'] as number;
  const mr = new ModelMr(ctx, pd, addr, buf.byteLength, lkey >>> 8, lkey, out['rkey'] as number);
  ctx.mrs.add(mr);
  return mr;
}

export function model_dereg_mr(ibmr: ibv_mr): number {
  const mr = ibmr as ModelMr;
  if (!(mr instanceof ModelMr)) return errno.EINVAL;
  const ctx = mr.context;
  if (mr.destroyed || ctx.closed) return errno.EINVAL;
  const r = model_cmd(ctx, Cmd.DEREG_MR, { key: mr.lkey });
  if (r.errno) return r.errno;
  mr.destroyed = true;
  ctx.mrs.delete(mr);
  return 0;
}
