/**
 * The memory verbs beyond ibv_reg_mr: ibv_reg_mr_iova / ibv_reg_mr_iova2,
 * ibv_rereg_mr and ibv_alloc_null_mr.
 *
 * TypeScript shape: the buffer is a Uint8Array (C's addr + length), as for
 * ibv_reg_mr. After ibv_reg_mr_iova, `mr.addr` is the buffer's address (as
 * libibverbs sets it) and SGEs and RETHs name the MR's bytes by iova.
 */
import { errno, IBV_REREG_MR_CHANGE_ACCESS, IBV_REREG_MR_ERR_INPUT } from '../../device/abi/constants.js';
import { isObj, objOps, opsOfObj, setErrno } from './dispatch.js';
import { VerbsError } from './errno-error.js';
import type { ibv_mr, ibv_pd } from './types.js';

function checkAccess(verb: string, access: unknown): void {
  if (typeof access !== 'number' || !Number.isInteger(access) || access < 0 || access > 0xffffffff)
    throw new VerbsError(errno.EINVAL, `${verb}: bad access flags ${String(access)}`);
}

/** An MR whose bytes keys address as [iova, iova + buf.length). */
export function ibv_reg_mr_iova(pd: ibv_pd, buf: Uint8Array, iova: bigint, access: number): ibv_mr {
  const o = opsOfObj(pd, 'ibv_reg_mr_iova', 'ibv_pd');
  if (!(buf instanceof Uint8Array)) throw new VerbsError(errno.EINVAL, 'ibv_reg_mr_iova: buf must be a Uint8Array');
  checkAccess('ibv_reg_mr_iova', access);
  return o.reg_mr_iova(pd, buf, iova, access);
}

/** ibv_reg_mr_iova2: the same with an `unsigned int` access (C's difference is the type only). */
export function ibv_reg_mr_iova2(pd: ibv_pd, buf: Uint8Array, iova: bigint, access: number): ibv_mr {
  return ibv_reg_mr_iova(pd, buf, iova, access);
}

/**
 * ibv_rereg_mr(mr, flags, pd, buf, access): IBV_REREG_MR_CHANGE_TRANSLATION
 * (a new buffer), _PD, _ACCESS. Returns 0, or an IBV_REREG_MR_ERR_* code
 * (negative) with rnic_errno() set; the MR object's pd / addr / length
 * follow a success. Access flags without IBV_REREG_MR_CHANGE_ACCESS are
 * IBV_REREG_MR_ERR_INPUT (EINVAL), as libibverbs checks.
 */
export function ibv_rereg_mr(mr: ibv_mr, flags: number, pd: ibv_pd | null, buf: Uint8Array | null, access: number): number {
  const o = objOps(mr);
  // libibverbs' own check, before any provider: access flags are given only with IBV_REREG_MR_CHANGE_ACCESS.
  if (!o || (access && typeof flags === 'number' && !(flags & IBV_REREG_MR_CHANGE_ACCESS))) {
    setErrno(errno.EINVAL);
    return IBV_REREG_MR_ERR_INPUT;
  }
  const r = o.rereg_mr(mr, flags, pd, buf, access);
  if (r.rc !== 0) setErrno(r.errno);
  return r.rc;
}

/** ibv_alloc_null_mr: an MR that drops writes and reads zeros (mlx5). No model provider has it: EOPNOTSUPP. */
export function ibv_alloc_null_mr(pd: ibv_pd): ibv_mr {
  if (!isObj(pd)) throw new VerbsError(errno.EINVAL, 'ibv_alloc_null_mr: not an ibv_pd');
  return opsOfObj(pd, 'ibv_alloc_null_mr', 'ibv_pd').alloc_null_mr(pd);
}
