/**
 * Protection domains and memory regions: ALLOC_PD / DEALLOC_PD and
 * REG_MR / DEREG_MR. A buffer is registered by its host memory address,
 * which is also its iova (ibv_reg_mr: iova = the buffer's address), so the
 * MR's `addr` is what a peer puts in an RETH and what SGEs name.
 */
import {
  errno,
  IBV_REREG_MR_CHANGE_ACCESS,
  IBV_REREG_MR_CHANGE_PD,
  IBV_REREG_MR_CHANGE_TRANSLATION,
  IBV_REREG_MR_ERR_CMD,
  IBV_REREG_MR_ERR_INPUT,
  IBV_REREG_MR_FLAGS_SUPPORTED,
} from '../../device/abi/constants.js';
import { isU32, isU64 } from './check.js';
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
  // Address handles live in the driver (no firmware reference), but count as the PD's users as in
  // the kernel (rdma_create_ah takes a PD reference): EBUSY while one is left.
  for (const ah of ctx.ahs) if (ah.pd === pd) return errno.EBUSY;
  const r = model_cmd(ctx, Cmd.DEALLOC_PD, { pdn: pd.pdn });
  if (r.errno) return r.errno;
  pd.destroyed = true;
  ctx.pds.delete(pd);
  return 0;
}

export function model_reg_mr(ibpd: ibv_pd, buf: Uint8Array, access: number): ibv_mr {
  return regMr(ibpd, buf, null, access, 'ibv_reg_mr');
}

/** ibv_reg_mr_iova / ibv_reg_mr_iova2: keys see the buffer at [iova, iova + length). */
export function model_reg_mr_iova(ibpd: ibv_pd, buf: Uint8Array, iova: bigint, access: number): ibv_mr {
  if (!isU64(iova)) throw new VerbsError(errno.EINVAL, `ibv_reg_mr_iova: iova ${String(iova)} is not a uint64_t bigint`);
  return regMr(ibpd, buf, iova, access, 'ibv_reg_mr_iova');
}

function checkBuf(ctx: ModelContext, buf: Uint8Array, verb: string): void {
  if (!(buf instanceof Uint8Array) || buf.buffer !== ctx.mem.sab) {
    throw new VerbsError(errno.EINVAL, `${verb}: the buffer is not memory the device reaches (allocate it with rnic_alloc_buf)`);
  }
}

function regMr(ibpd: ibv_pd, buf: Uint8Array, iova: bigint | null, access: number, verb: string): ibv_mr {
  const pd = ibpd as ModelPd;
  if (!(pd instanceof ModelPd)) throw new VerbsError(errno.EINVAL, `${verb}: not an ibv_pd of the model provider`);
  const ctx = pd.context;
  model_live(ctx, verb);
  if (pd.destroyed) throw new VerbsError(errno.EINVAL, `${verb}: the PD was deallocated`);
  checkBuf(ctx, buf, verb);
  if (!Number.isInteger(access) || access < 0) throw new VerbsError(errno.EINVAL, `${verb}: bad access flags ${String(access)}`);
  const addr = ctx.mem.addrOf(buf);
  const out = model_cmd_or_throw(
    ctx,
    Cmd.REG_MR,
    { pdn: pd.pdn, access: access >>> 0, hostAddr: addr, length: BigInt(buf.byteLength), iova: iova ?? addr },
    verb,
  );
  const lkey = out['lkey'] as number;
  const mr = new ModelMr(ctx, pd, addr, buf.byteLength, lkey >>> 8, lkey, out['rkey'] as number, iova ?? addr);
  ctx.mrs.add(mr);
  return mr;
}

/**
 * ibv_rereg_mr: REREG_MR changes the MR in place (keys unchanged). Returns
 * 0, IBV_REREG_MR_ERR_INPUT with errno EINVAL for bad arguments, or
 * IBV_REREG_MR_ERR_CMD with the device's errno (the MR is then unchanged:
 * the device validates everything before it applies anything).
 * CHANGE_TRANSLATION takes a new buffer (iova = its address, as
 * ibv_rereg_mr has no iova).
 */
export function model_rereg_mr(ibmr: ibv_mr, flags: number, ibpd: ibv_pd | null, buf: Uint8Array | null, access: number): { rc: number; errno: number } {
  const mr = ibmr as ModelMr;
  const input = (why: string) => ({ rc: IBV_REREG_MR_ERR_INPUT, errno: errno.EINVAL, why });
  if (!(mr instanceof ModelMr) || mr.destroyed || mr.context.closed) return input('not a live MR of the model provider');
  const ctx = mr.context;
  if (!isU32(flags) || flags === 0 || flags & ~(IBV_REREG_MR_FLAGS_SUPPORTED - 1)) return input(`bad flags ${String(flags)}`);
  const pd = ibpd as ModelPd | null;
  if (flags & IBV_REREG_MR_CHANGE_PD && (!(pd instanceof ModelPd) || pd.context !== ctx || pd.destroyed)) return input('pd is not a live PD of this context');
  if (flags & IBV_REREG_MR_CHANGE_ACCESS && !isU32(access)) return input(`bad access flags ${String(access)}`);
  if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
    if (!(buf instanceof Uint8Array) || buf.buffer !== ctx.mem.sab || buf.byteLength === 0) return input('the new buffer is not memory the device reaches');
  }
  const addr = flags & IBV_REREG_MR_CHANGE_TRANSLATION ? ctx.mem.addrOf(buf!) : 0n;
  const len = flags & IBV_REREG_MR_CHANGE_TRANSLATION ? BigInt(buf!.byteLength) : 0n;
  const r = model_cmd(ctx, Cmd.REREG_MR, {
    key: mr.lkey,
    flags: flags & 7,
    pdn: flags & IBV_REREG_MR_CHANGE_PD ? pd!.pdn : 0,
    access: flags & IBV_REREG_MR_CHANGE_ACCESS ? access >>> 0 : 0,
    hostAddr: addr,
    length: len,
    iova: addr,
  });
  if (r.errno) return { rc: IBV_REREG_MR_ERR_CMD, errno: r.errno };
  if (flags & IBV_REREG_MR_CHANGE_PD) mr.pd = pd!;
  if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
    mr.addr = addr;
    mr.iova = addr;
    mr.length = buf!.byteLength;
  }
  return { rc: 0, errno: 0 };
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

/** ibv_alloc_null_mr: the device has no null memory key (mlx5 has one; rxe does not). */
export function model_alloc_null_mr(ibpd: ibv_pd): ibv_mr {
  const pd = ibpd as ModelPd;
  if (!(pd instanceof ModelPd) || pd.destroyed) throw new VerbsError(errno.EINVAL, 'ibv_alloc_null_mr: not a live ibv_pd of the model provider');
  model_live(pd.context, 'ibv_alloc_null_mr');
  throw new VerbsError(errno.EOPNOTSUPP, 'ibv_alloc_null_mr: the model device has no null memory key (as rxe)');
}
