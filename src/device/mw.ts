/**
 * Memory windows (IBTA 10.6.7, o10-36.2.x / o10-37.2.x): the rules that
 * bind, invalidate and free them, over their MPT entries. A window lives in
 * the MPT beside the MRs (one key space): while bound, its entry holds the
 * window's own range, rights and translation, so a remote access through a
 * window key is checked exactly as one through an MR key (checkAccess),
 * plus the QP rule of type 2 windows (checkRemote).
 *
 * Who calls what: the firmware allocates and frees windows (ALLOC_MW,
 * DEALLOC_MW, DESTROY_QP of a QP type 2 windows are bound to); the pipeline
 * binds and invalidates them (BIND_MW and LOCAL_INV WQEs, the IETH of a
 * SEND_WITH_INV at the responder). Pure functions of the tables; no clock.
 *
 * The MR a window is bound to counts its windows (mwCount, an Atomics
 * word): a bind adds one and then checks that the MR is still registered;
 * DEREG_MR clears the MR's VALID flag and then checks the count (and puts
 * VALID back if it is not 0). Either the bind sees the MR gone or the
 * deregistration sees the window, whichever thread runs which.
 */
import {
  IBV_ACCESS_LOCAL_WRITE,
  IBV_ACCESS_MW_BIND,
  IBV_ACCESS_REMOTE_ATOMIC,
  IBV_ACCESS_REMOTE_READ,
  IBV_ACCESS_REMOTE_WRITE,
  IBV_ACCESS_ZERO_BASED,
} from './abi/constants.js';
import { type ContextTables, CtxOff, MPT, MptFlag, MwState } from './contexts.js';

/** Rights a window may grant (mw_access_flags). */
export const MW_ACCESS_SUPPORTED = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_ZERO_BASED;

/** Why a bind or an invalidation was refused (0: done). Names in MW_FAULT_NAMES. */
export const enum MwFault {
  OK = 0,
  /** No window at this key's index (bind), or none with exactly this key (invalidate: never allocated, freed, or an old key byte). */
  BAD_MW_KEY = 1,
  /** Bind: no MR with this lkey. */
  BAD_MR_KEY = 2,
  /** Bind: an access bit a window cannot have. */
  BAD_ACCESS = 3,
  /** Bind: a type 1 window not VALID / a type 2 window not FREE; invalidate: a window not bound. */
  BAD_STATE = 4,
  /** Bind: a zero-based type 1 window (o10-36.2.2). */
  ZERO_BASED_TYPE_1 = 5,
  /** The QP's PD is not the window's (type 2, C10-72), or the MR's PD is not the window's. */
  BAD_PD = 6,
  /** Bind of a type 2 window with no MR or length 0 (o10-37.2.40). */
  TYPE_2_NO_MR = 7,
  /** The MR was registered without IBV_ACCESS_MW_BIND (C10-73). */
  NO_BIND_ACCESS = 8,
  /** Remote write / atomic through a window of an MR without local write (C10-74). */
  NO_LOCAL_WRITE = 9,
  /** The window does not lie inside the MR (C10-75). */
  OUT_OF_BOUNDS = 10,
  /** Invalidation of a type 1 window (o10-37.2.26). */
  TYPE_1_INVALIDATE = 11,
  /** Remote invalidation by a QP the type 2 window is not bound to. */
  BAD_QP = 12,
  /** The key is an MR's: MRs registered with REG_MR cannot be invalidated (no fast-register MRs). */
  NOT_A_WINDOW = 13,
}

export const MW_FAULT_NAMES: readonly string[] = Object.freeze([
  'OK',
  'BAD_MW_KEY',
  'BAD_MR_KEY',
  'BAD_ACCESS',
  'BAD_STATE',
  'ZERO_BASED_TYPE_1',
  'BAD_PD',
  'TYPE_2_NO_MR',
  'NO_BIND_ACCESS',
  'NO_LOCAL_WRITE',
  'OUT_OF_BOUNDS',
  'TYPE_1_INVALIDATE',
  'BAD_QP',
  'NOT_A_WINDOW',
]);

/** What a BIND_MW WQE asks (bind segment, wqe.ts). Addresses above 2^53 arrive as numbers that fail the bounds check. */
export interface BindRequest {
  /** The window's key (its index is what counts). */
  mwKey: number;
  /** The window's key after the bind: its low byte replaces the key byte (the consumer's part of the key). */
  newKey: number;
  mrLkey: number;
  addr: number;
  length: number;
  access: number;
}

const TWO_32 = 4294967296;
const u32 = (t: ContextTables, off: number) => t.dv.getUint32(off, true);
const u64 = (t: ContextTables, off: number) => u32(t, off + 4) * TWO_32 + u32(t, off);
function setU64(t: ContextTables, off: number, v: number): void {
  t.dv.setUint32(off, v >>> 0, true);
  t.dv.setUint32(off + 4, Math.floor(v / TWO_32) >>> 0, true);
}

/** The entry of the allocated window whose key is exactly `key`, or -1. */
export function mwByKey(t: ContextTables, key: number): number {
  const off = t.mptOff(key >>> 8);
  if (off < 0) return -1;
  return (u32(t, off + CtxOff.MPT_FLAGS) & MptFlag.MW) !== 0 && u32(t, off + CtxOff.MPT_KEY) === key >>> 0 ? off : -1;
}

/** The entry of window `index` whatever its key byte, or -1. */
export function mwByIndex(t: ContextTables, index: number): number {
  const off = t.mptOff(index);
  return off >= 0 && (u32(t, off + CtxOff.MPT_FLAGS) & MptFlag.MW) !== 0 ? off : -1;
}

/** Firmware (ALLOC_MW): a new window in entry `off`, unbound: type 1 VALID, type 2 FREE. */
export function mwInit(t: ContextTables, off: number, key: number, pdn: number, type2: boolean): void {
  t.mptChanged();
  t.u8.fill(0, off, off + MPT.size);
  MPT.f.key.set(t.dv, off, key >>> 0);
  MPT.f.pdn.set(t.dv, off, pdn);
  MPT.f.mwState.set(t.dv, off, type2 ? MwState.FREE : MwState.VALID);
  Atomics.store(t.i32, (off + CtxOff.MPT_FLAGS) >> 2, MptFlag.MW | (type2 ? MptFlag.MW_TYPE_2 : 0));
}

/** Drops the window's binding (its MR's count, range, rights); the state is the caller's. */
function unbind(t: ContextTables, off: number): void {
  t.mptChanged();
  Atomics.and(t.i32, (off + CtxOff.MPT_FLAGS) >> 2, ~MptFlag.VALID);
  const parent = MPT.f.mwParent.get(t.dv, off);
  if (parent !== 0) {
    const mr = t.mptOff(parent);
    if (mr >= 0) Atomics.sub(t.i32, (mr + CtxOff.MPT_MW_COUNT) >> 2, 1);
  }
  MPT.f.mwParent.set(t.dv, off, 0);
  MPT.f.mwQpn.set(t.dv, off, 0);
  MPT.f.access.set(t.dv, off, 0);
  setU64(t, off + CtxOff.MPT_IOVA, 0);
  setU64(t, off + CtxOff.MPT_LENGTH, 0);
  setU64(t, off + CtxOff.MPT_HOST, 0);
}

/**
 * A BIND_MW WQE of QP `qpn` (protection domain `qpPdn`). Checks in rxe's
 * order (rxe_bind_mw, rxe_check_bind_mw), then binds: the new key byte,
 * the range, the rights, the MR's window count and, for type 2, the QP. A
 * type 1 window bound with length 0 is left unbound (and VALID).
 */
export function mwBind(t: ContextTables, r: BindRequest, qpn: number, qpPdn: number): MwFault {
  // By index, as mlx5 finds the mkey: a type 2 window's key byte is the consumer's (the last bind's WR), not the object's.
  const off = mwByIndex(t, r.mwKey >>> 8);
  if (off < 0) return MwFault.BAD_MW_KEY;
  const mr = r.length > 0 ? t.mrByLkey(r.mrLkey) : -1;
  if (r.length > 0 && mr < 0) return MwFault.BAD_MR_KEY;
  if ((r.access & ~MW_ACCESS_SUPPORTED) !== 0) return MwFault.BAD_ACCESS;
  const flags = u32(t, off + CtxOff.MPT_FLAGS);
  const type2 = (flags & MptFlag.MW_TYPE_2) !== 0;
  const state = MPT.f.mwState.get(t.dv, off);
  const mwPdn = MPT.f.pdn.get(t.dv, off);
  const zeroBased = (r.access & IBV_ACCESS_ZERO_BASED) !== 0;
  if (!type2) {
    if (state !== MwState.VALID) return MwFault.BAD_STATE;
    if (zeroBased) return MwFault.ZERO_BASED_TYPE_1;
  } else {
    if (state !== MwState.FREE) return MwFault.BAD_STATE;
    if (qpPdn !== mwPdn) return MwFault.BAD_PD;
    if (mr < 0) return MwFault.TYPE_2_NO_MR;
  }
  if (mr >= 0) {
    if (MPT.f.pdn.get(t.dv, mr) !== mwPdn) return MwFault.BAD_PD;
    const mrAccess = MPT.f.access.get(t.dv, mr);
    if ((mrAccess & IBV_ACCESS_MW_BIND) === 0) return MwFault.NO_BIND_ACCESS;
    if ((r.access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) !== 0 && (mrAccess & IBV_ACCESS_LOCAL_WRITE) === 0) return MwFault.NO_LOCAL_WRITE;
    const iova = u64(t, mr + CtxOff.MPT_IOVA);
    const len = u64(t, mr + CtxOff.MPT_LENGTH);
    // Zero-based or not, the window's bytes are [addr, addr + length) of the MR; only how remote addresses name them differs.
    if (!(r.addr >= iova && r.addr + r.length <= iova + len)) return MwFault.OUT_OF_BOUNDS;
    // Count the window on the MR first, then make sure the MR is still there (see the header).
    Atomics.add(t.i32, (mr + CtxOff.MPT_MW_COUNT) >> 2, 1);
    if (t.mrByLkey(r.mrLkey) !== mr) {
      Atomics.sub(t.i32, (mr + CtxOff.MPT_MW_COUNT) >> 2, 1);
      return MwFault.BAD_MR_KEY;
    }
  }
  const host = mr >= 0 ? t.mrTranslate(mr, r.addr) : 0;
  unbind(t, off); // counts as a change (mptChanged): what follows is one change
  MPT.f.key.set(t.dv, off, ((r.mwKey & ~0xff) | (r.newKey & 0xff)) >>> 0);
  if (mr >= 0) {
    MPT.f.access.set(t.dv, off, r.access);
    setU64(t, off + CtxOff.MPT_IOVA, zeroBased ? 0 : r.addr);
    setU64(t, off + CtxOff.MPT_LENGTH, r.length);
    setU64(t, off + CtxOff.MPT_HOST, host);
    MPT.f.mwParent.set(t.dv, off, (mr - t.mptBase) / MPT.size);
    MPT.f.mwQpn.set(t.dv, off, type2 ? qpn : 0);
    Atomics.or(t.i32, (off + CtxOff.MPT_FLAGS) >> 2, MptFlag.VALID);
  }
  MPT.f.mwState.set(t.dv, off, MwState.VALID);
  return MwFault.OK;
}

/**
 * Invalidates the window with key `rkey`: a LOCAL_INV WQE (`remote` false)
 * or the IETH of a SEND_WITH_INV (`remote` true), by QP `qpn` of PD `pdn`.
 * Only a bound type 2 window of that PD can be invalidated, remotely only
 * by the QP it is bound to; it becomes FREE (rebindable) and its key stops
 * working at once.
 */
export function mwInvalidate(t: ContextTables, rkey: number, qpn: number, pdn: number, remote: boolean): MwFault {
  const off = mwByKey(t, rkey);
  if (off < 0) return t.mrByKey(rkey) >= 0 ? MwFault.NOT_A_WINDOW : MwFault.BAD_MW_KEY;
  const flags = u32(t, off + CtxOff.MPT_FLAGS);
  if ((flags & MptFlag.MW_TYPE_2) === 0) return MwFault.TYPE_1_INVALIDATE;
  if ((flags & MptFlag.VALID) === 0) return MwFault.BAD_STATE;
  if (MPT.f.pdn.get(t.dv, off) !== pdn) return MwFault.BAD_PD;
  if (remote && MPT.f.mwQpn.get(t.dv, off) !== qpn) return MwFault.BAD_QP;
  unbind(t, off);
  MPT.f.mwState.set(t.dv, off, MwState.FREE);
  return MwFault.OK;
}

/** Firmware (DEALLOC_MW): unbind the window and free its entry. */
export function mwFree(t: ContextTables, off: number): void {
  t.mptChanged();
  unbind(t, off);
  Atomics.store(t.i32, (off + CtxOff.MPT_FLAGS) >> 2, 0);
  t.u8.fill(0, off, off + MPT.size);
}

/** Firmware (DESTROY_QP): a type 2 window bound to QP `qpn` goes back to FREE (its QP is gone). Returns whether it did. */
export function mwReleaseQp(t: ContextTables, off: number, qpn: number): boolean {
  const flags = u32(t, off + CtxOff.MPT_FLAGS);
  if ((flags & (MptFlag.MW_TYPE_2 | MptFlag.VALID)) !== (MptFlag.MW_TYPE_2 | MptFlag.VALID) || MPT.f.mwQpn.get(t.dv, off) !== qpn) return false;
  unbind(t, off);
  MPT.f.mwState.set(t.dv, off, MwState.FREE);
  return true;
}
