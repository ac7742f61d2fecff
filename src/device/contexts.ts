/**
 * Context tables: the device-side state that firmware commands create and
 * the pipeline reads on every packet — QP, CQ, EQ and SRQ contexts and the
 * memory protection table (MPT). Like a real RNIC's context memory (mlx's
 * ICM) they are binary entries in ONE SharedArrayBuffer, so pipeline stages
 * on other worker threads `attach` to the same tables.
 *
 * Entry n of a table is at `<table>Base + n · entrySize`; index 0 of every
 * table is reserved (and QPNs 0 and 1, the special QPs), so 0 always means
 * "none". Lookups are O(1) and allocate nothing.
 *
 * Who writes what (the "owner" in each field's description):
 *  - [fw]  firmware, while executing a command; the pipeline only reads.
 *  - [dev] the pipeline (requester, responder, CQE writer...); the
 *          firmware initialises it and reports it in QUERY_*.
 * Publication: the firmware writes every [fw] field of an entry, then
 * stores the word that makes it live (flags VALID for CQ/EQ/SRQ/MPT, the
 * QP `state` for QPs) with an Atomics store. Pipeline threads that reach an
 * entry through a doorbell, a packet or a CQE are ordered after that store
 * by the atomics on the path (doorbell, ring index).
 *
 * Memory keys: key = (MPT index << 8) | variant. The variant byte is bumped
 * every time an index is reused, so a key kept after DEREG_MR no longer
 * matches even when its index is registered again. lkey and rkey are the
 * same number (as on mlx devices); whether it may be used remotely is the
 * MR's access flags.
 */
import { IBV_ACCESS_LOCAL_WRITE, IBV_QPS_ERR } from './abi/constants.js';
import { AV } from './av.js';
import type { Capabilities } from './capabilities.js';
import { DeviceError } from './errors.js';
import { defineLayout, embed, reserved, u, u64 } from './layout.js';

// ---------------------------------------------------------------------------
// Flag words
// ---------------------------------------------------------------------------

/** QP context `flags` bits. */
export const enum QpFlag {
  /** [fw] entry allocated (CREATE_QP .. DESTROY_QP). */
  VALID = 1 << 0,
  /** [fw sets, dev clears] the QP entered ERR: flush every outstanding WQE with WR_FLUSH_ERR, then clear. */
  FLUSH_PENDING = 1 << 1,
  /** [fw sets, dev clears] the QP went to RESET: drop all private state (timers, PSNs, caches), then clear. */
  RESET_PENDING = 1 << 2,
  /** [fw] sq_sig_all: every send WQE completes with a CQE. */
  SQ_SIG_ALL = 1 << 3,
  /** [fw] receives come from the SRQ `srqn`. */
  HAS_SRQ = 1 << 4,
  /** [dev] SQD: still draining. */
  SQ_DRAINING = 1 << 5,
  /** [fw] raise IBV_EVENT_SQ_DRAINED when the SQD drain finishes. */
  EN_SQD_ASYNC_NOTIFY = 1 << 6,
  /** [fw] IBV_QP_CREATE_BLOCK_SELF_MCAST_LB: multicast this UD QP sends is not looped back to this device's members. */
  BLOCK_SELF_MCAST_LB = 1 << 7,
}

/** CQ context `flags` bits. */
export const enum CqFlag {
  VALID = 1 << 0,
  /** [dev] armed: the next matching CQE raises a completion event. */
  ARMED = 1 << 1,
  /** [dev] armed for solicited (and error) CQEs only. */
  SOLICITED_ONLY = 1 << 2,
  /** [dev] overflowed: CQEs are dropped, IBV_EVENT_CQ_ERR was raised. */
  ERROR = 1 << 3,
}

/** EQ context `flags` bits. */
export const enum EqFlag {
  VALID = 1 << 0,
  /** [dev] the next EQE fires the interrupt vector. */
  ARMED = 1 << 1,
  /** [dev] an EQE was dropped because the ring was full. */
  OVERFLOW = 1 << 2,
}

/** SRQ context `flags` bits. */
export const enum SrqFlag {
  VALID = 1 << 0,
  /** [fw sets, dev clears] raise IBV_EVENT_SRQ_LIMIT_REACHED when fewer than `limit` WQEs remain. */
  LIMIT_ARMED = 1 << 1,
  ERROR = 1 << 2,
}

/** MPT entry `flags` bits. */
export const enum MptFlag {
  /** The key works: a registered MR, or a memory window that is bound. */
  VALID = 1 << 0,
  /** [fw] the entry is a memory window (ALLOC_MW .. DEALLOC_MW), not an MR. */
  MW = 1 << 1,
  /** [fw] the window is type 2 (bound by a BIND_MW WQE to one QP), else type 1. */
  MW_TYPE_2 = 1 << 2,
}

/**
 * Window state (IBTA 10.6.7): a type 1 window is VALID from ALLOC_MW on
 * (bound when its length is non-zero); a type 2 window is FREE until a bind
 * makes it VALID, and FREE again after an invalidation. DEALLOC_MW frees
 * the entry (the window is then invalid: its key matches nothing).
 */
export const enum MwState {
  FREE = 1,
  VALID = 2,
}

/** Result of a memory key check (checkAccess). */
export const enum MrCheck {
  OK = 0,
  /** No MR with this key: never registered, deregistered, or a stale variant. */
  BAD_KEY = 1,
  /** The MR belongs to another protection domain. */
  BAD_PD = 2,
  /** The MR lacks a needed access right. */
  NO_ACCESS = 3,
  /** [addr, addr + len) is not inside the MR. */
  OUT_OF_BOUNDS = 4,
}

export const MR_CHECK_NAMES: readonly string[] = Object.freeze(['OK', 'BAD_KEY', 'BAD_PD', 'NO_ACCESS', 'OUT_OF_BOUNDS']);

// ---------------------------------------------------------------------------
// Layouts
// ---------------------------------------------------------------------------

export const QPC = defineLayout('qp-context', 256, 'QP context. Entry qpn of the QP table.', [
  u('state', 0x00, 0, 32, '[fw, dev] ibv_qp_state; Atomics word; the pipeline may move RTS→SQE/ERR, the firmware uses compare-exchange'),
  u('flags', 0x04, 0, 32, '[fw, dev] QpFlag bits; Atomics word'),
  u('modifySeq', 0x08, 0, 32, '[fw] incremented by every successful MODIFY_QP: reload cached attributes when it changes'),
  u('qpn', 0x0c, 0, 24, '[fw] QP number'),
  u('qpType', 0x0f, 0, 8, '[fw] IBV_QPT_RC / UC / UD / XRC_SEND / XRC_RECV'),
  u('pdn', 0x10, 0, 32, '[fw] protection domain'),
  u('sendCqn', 0x14, 0, 32, '[fw] CQ for send completions'),
  u('recvCqn', 0x18, 0, 32, '[fw] CQ for receive completions'),
  u('srqn', 0x1c, 0, 32, '[fw] SRQ when flags HAS_SRQ'),
  u64('sqRingAddr', 0x20, '[fw] send ring address (0: no send queue)'),
  u64('rqRingAddr', 0x28, '[fw] receive ring address (0: no receive queue / SRQ)'),
  u64('dbrecAddr', 0x30, '[fw] QP doorbell record address'),
  u('sqLogSize', 0x38, 0, 8, '[fw] log2 send ring entries'),
  u('sqLogStride', 0x39, 0, 8, '[fw] log2 send WQE stride'),
  u('rqLogSize', 0x3a, 0, 8, '[fw] log2 receive ring entries'),
  u('rqLogStride', 0x3b, 0, 8, '[fw] log2 receive WQE stride'),
  u('maxSendSge', 0x3c, 0, 8, '[fw] data segments per send WQE'),
  u('maxRecvSge', 0x3d, 0, 8, '[fw] data segments per receive WQE'),
  u('maxInlineData', 0x3e, 0, 16, '[fw] inline bytes per send WQE'),
  u('qkey', 0x40, 0, 32, '[fw] Q_Key (UD)'),
  u('rqPsn', 0x44, 0, 24, '[fw, dev] expected PSN of the next request (responder ePSN)'),
  u('pathMtu', 0x47, 0, 8, '[fw] ibv_mtu (1..5); default IBV_MTU_256 after CREATE_QP'),
  u('sqPsn', 0x48, 0, 24, '[fw, dev] PSN of the next new request packet'),
  u('timeout', 0x4b, 0, 8, '[fw] local ACK timeout, 4.096 µs · 2^timeout, 0 = infinite'),
  u('destQpn', 0x4c, 0, 24, '[fw] destination QP (RC/UC)'),
  u('retryCnt', 0x4f, 0, 3, '[fw] transport retries (0..7)'),
  u('rnrRetry', 0x4f, 3, 3, '[fw] RNR retries (0..7, 7 = infinite)'),
  reserved(0x4f, 2, 6),
  u('accessFlags', 0x50, 0, 32, '[fw] qp_access_flags: REMOTE_WRITE / READ / ATOMIC allowed as responder'),
  u('pkeyIndex', 0x54, 0, 16, '[fw] P_Key index'),
  u('altPkeyIndex', 0x56, 0, 16, '[fw] alternate path P_Key index'),
  u('portNum', 0x58, 0, 8, '[fw] port, 1-based'),
  u('altPortNum', 0x59, 0, 8, '[fw] alternate path port'),
  u('minRnrTimer', 0x5a, 0, 8, '[fw] RNR NAK timer code this QP sends as responder (0..31)'),
  u('altTimeout', 0x5b, 0, 8, '[fw] alternate path timeout'),
  u('maxRdAtomic', 0x5c, 0, 8, '[fw] outstanding READ/ATOMIC as initiator'),
  u('maxDestRdAtomic', 0x5d, 0, 8, '[fw] responder resources'),
  u('pathMigState', 0x5e, 0, 8, '[fw] ibv_mig_state'),
  reserved(0x5f, 8),
  u('rateLimit', 0x60, 0, 32, '[fw] rate limit, kbit/s (0 = none)'),
  u('sqConsumed', 0x64, 0, 32, '[dev] send WQEs fetched by the device (SQ consumer counter)'),
  u('rqConsumed', 0x68, 0, 32, '[dev] receive WQEs consumed (RQ consumer counter)'),
  u('xrcdn', 0x6c, 0, 32, '[fw] XRC receive QP: its XRC domain (0 for other types); requests name an XRC SRQ of this domain'),
  ...embed('av', AV, 0x70),
  ...embed('altAv', AV, 0x98),
  reserved(0xc0, 512),
]);

export const CQC = defineLayout('cq-context', 64, 'CQ context. Entry cqn of the CQ table.', [
  u('flags', 0x00, 0, 32, '[fw, dev] CqFlag bits; Atomics word'),
  u('producer', 0x04, 0, 32, '[dev] CQEs ever produced; producers reserve a slot with Atomics.add'),
  u64('ringAddr', 0x08, '[fw] ring address (64-byte CQEs)'),
  u64('dbrecAddr', 0x10, '[fw] CQ doorbell record (consumer counter)'),
  u('eqn', 0x18, 0, 32, "[fw] EQ that receives this CQ's completion events"),
  u('logSize', 0x1c, 0, 8, '[fw] log2 ring entries'),
  reserved(0x1d, 24),
  u('armCi', 0x20, 0, 32, '[dev] consumer index (mod 2^24) of the last arm request'),
  u('modCount', 0x24, 0, 16, '[fw] CQ moderation: an armed CQ raises its event after this many CQEs (0: at the first)'),
  u('modPeriod', 0x26, 0, 16, '[fw] CQ moderation: or this many µs after the first CQE it holds back (0: no period)'),
  u('modPending', 0x28, 0, 32, '[dev] CQEs written while armed whose event moderation holds back'),
  reserved(0x2c, 160),
]);

export const EQC = defineLayout('eq-context', 64, 'EQ context. Entry eqn of the EQ table.', [
  u('flags', 0x00, 0, 32, '[fw, dev] EqFlag bits; Atomics word'),
  u('producer', 0x04, 0, 32, '[dev] EQEs ever produced (Atomics.add)'),
  u64('ringAddr', 0x08, '[fw] ring address (32-byte EQEs)'),
  u('logSize', 0x10, 0, 8, '[fw] log2 ring entries'),
  reserved(0x11, 8),
  u('intVector', 0x12, 0, 16, '[fw] interrupt vector fired for this EQ'),
  reserved(0x14, 32),
  reserved(0x18, 320),
]);

export const SRQC = defineLayout('srq-context', 64, 'SRQ context. Entry srqn of the SRQ table.', [
  u('flags', 0x00, 0, 32, '[fw, dev] SrqFlag bits; Atomics word'),
  u('pdn', 0x04, 0, 32, '[fw] protection domain'),
  u64('ringAddr', 0x08, '[fw] ring address'),
  u64('dbrecAddr', 0x10, '[fw] SRQ doorbell record (producer counter)'),
  u('logSize', 0x18, 0, 8, '[fw] log2 ring entries'),
  u('logStride', 0x19, 0, 8, '[fw] log2 WQE stride'),
  u('maxSge', 0x1a, 0, 8, '[fw] data segments per WQE'),
  reserved(0x1b, 8),
  u('limit', 0x1c, 0, 32, '[fw] srq_limit: event when fewer WQEs remain (0 = disarmed)'),
  u('head', 0x20, 0, 32, '[dev] ring index of the next WQE to consume (follows nextWqeIndex)'),
  u('consumed', 0x24, 0, 32, '[dev] WQEs ever consumed'),
  u('xrcdn', 0x28, 0, 32, '[fw] XRC SRQ: its XRC domain (0: a basic SRQ)'),
  u('cqn', 0x2c, 0, 32, '[fw] XRC SRQ: the CQ its receives complete on'),
  reserved(0x30, 128),
]);

export const MPT = defineLayout(
  'mpt-entry',
  64,
  'Memory protection table entry: one per MR. Entry (key >> 8); entry 0, which no key names, holds in its first word the count of MPT changes (ContextTables.mptGen).',
  [
    u('key', 0x00, 0, 32, '[fw] the full key: (index << 8) | variant'),
    u('flags', 0x04, 0, 32, '[fw] MptFlag bits'),
    u('pdn', 0x08, 0, 32, '[fw] protection domain'),
    u('access', 0x0c, 0, 32, '[fw] ibv_access_flags'),
    u64('iova', 0x10, '[fw] first virtual address of the MR (keys are checked in this space)'),
    u64('length', 0x18, '[fw] length in bytes'),
    u64('hostAddr', 0x20, '[fw] host memory address that iova maps to'),
    u('mwCount', 0x28, 0, 32, '[dev] MR: windows bound to it (Atomics word); DEREG_MR and REREG_MR are BUSY while > 0'),
    u('mwParent', 0x2c, 0, 32, '[dev] window: the MPT index of the MR it is bound to (0: unbound)'),
    u('mwQpn', 0x30, 0, 24, '[dev] type 2 window: the QP it is bound to; only that QP may use it remotely'),
    u('mwState', 0x33, 0, 8, '[dev] window: MwState (FREE 1, VALID 2)'),
    reserved(0x34, 96),
  ],
);

/** Byte offsets inside entries for the hot path (a test checks them against the layouts). */
export const enum CtxOff {
  QP_STATE = 0x00,
  QP_FLAGS = 0x04,
  QP_MODIFY_SEQ = 0x08,
  CQ_FLAGS = 0x00,
  CQ_PRODUCER = 0x04,
  CQ_MOD_PENDING = 0x28,
  EQ_FLAGS = 0x00,
  EQ_PRODUCER = 0x04,
  SRQ_FLAGS = 0x00,
  MPT_KEY = 0x00,
  MPT_FLAGS = 0x04,
  MPT_PDN = 0x08,
  MPT_ACCESS = 0x0c,
  MPT_IOVA = 0x10,
  MPT_LENGTH = 0x18,
  MPT_HOST = 0x20,
  MPT_MW_COUNT = 0x28,
  MPT_MW_QPN = 0x30,
}

// ---------------------------------------------------------------------------
// The tables
// ---------------------------------------------------------------------------

export interface ContextTablesDescriptor {
  readonly sab: SharedArrayBuffer;
  readonly qpCount: number;
  readonly cqCount: number;
  readonly eqCount: number;
  readonly srqCount: number;
  readonly mrCount: number;
}

const TWO_32 = 4294967296;

export class ContextTables {
  readonly sab: SharedArrayBuffer;
  readonly dv: DataView;
  readonly i32: Int32Array;
  readonly u8: Uint8Array;
  /** Entries per table (index 0 reserved; QPNs 0 and 1 reserved). */
  readonly qpCount: number;
  readonly cqCount: number;
  readonly eqCount: number;
  readonly srqCount: number;
  readonly mrCount: number;
  /** Byte offset of entry 0 of each table. */
  readonly qpBase: number;
  readonly cqBase: number;
  readonly eqBase: number;
  readonly srqBase: number;
  readonly mptBase: number;

  private constructor(d: ContextTablesDescriptor) {
    this.sab = d.sab;
    this.dv = new DataView(d.sab);
    this.i32 = new Int32Array(d.sab);
    this.u8 = new Uint8Array(d.sab);
    this.qpCount = d.qpCount;
    this.cqCount = d.cqCount;
    this.eqCount = d.eqCount;
    this.srqCount = d.srqCount;
    this.mrCount = d.mrCount;
    this.qpBase = 0;
    this.cqBase = this.qpBase + d.qpCount * QPC.size;
    this.eqBase = this.cqBase + d.cqCount * CQC.size;
    this.srqBase = this.eqBase + d.eqCount * EQC.size;
    this.mptBase = this.srqBase + d.srqCount * SRQC.size;
    if (this.mptBase + d.mrCount * MPT.size !== d.sab.byteLength) {
      throw new DeviceError('DEV_ERR_BAD_CONFIG', 'context buffer size does not match the table geometry');
    }
  }

  /** Zeroed tables sized for `caps`. */
  static create(caps: Capabilities): ContextTables {
    const d = caps.device;
    // MRs and memory windows share the MPT (one key space, as on mlx5).
    const geo = { qpCount: d.maxQp + 2, cqCount: d.maxCq + 1, eqCount: d.maxEq + 1, srqCount: d.maxSrq + 1, mrCount: d.maxMr + d.maxMw + 1 };
    const bytes = geo.qpCount * QPC.size + geo.cqCount * CQC.size + geo.eqCount * EQC.size + geo.srqCount * SRQC.size + geo.mrCount * MPT.size;
    return new ContextTables({ sab: new SharedArrayBuffer(bytes), ...geo });
  }

  /**
   * How many times an MPT entry has changed (mod 2^32): every MR and window
   * command and the pipeline's binds and invalidations call mptChanged.
   * A WRITE's later packets skip the key check their first packet passed
   * while this reads the same (responder.ts). It lives in MPT entry 0,
   * which no key names (index 0 is reserved), so every view of the tables
   * sees it; its writers and its reader are the device's thread.
   */
  get mptGen(): number {
    return this.dv.getUint32(this.mptBase, true);
  }
  mptChanged(): void {
    this.dv.setUint32(this.mptBase, (this.dv.getUint32(this.mptBase, true) + 1) >>> 0, true);
  }

  /** Map tables created on another thread. */
  static attach(desc: ContextTablesDescriptor): ContextTables {
    return new ContextTables(desc);
  }

  get descriptor(): ContextTablesDescriptor {
    const { sab, qpCount, cqCount, eqCount, srqCount, mrCount } = this;
    return { sab, qpCount, cqCount, eqCount, srqCount, mrCount };
  }

  // --- entry offsets, no validity check (-1 when out of range) -------------

  qpOff(qpn: number): number {
    return qpn >= 2 && qpn < this.qpCount ? this.qpBase + qpn * QPC.size : -1;
  }
  cqOff(cqn: number): number {
    return cqn >= 1 && cqn < this.cqCount ? this.cqBase + cqn * CQC.size : -1;
  }
  eqOff(eqn: number): number {
    return eqn >= 1 && eqn < this.eqCount ? this.eqBase + eqn * EQC.size : -1;
  }
  srqOff(srqn: number): number {
    return srqn >= 1 && srqn < this.srqCount ? this.srqBase + srqn * SRQC.size : -1;
  }
  mptOff(index: number): number {
    return index >= 1 && index < this.mrCount ? this.mptBase + index * MPT.size : -1;
  }

  // --- lookups of live entries (-1 when none) ------------------------------

  private live(off: number, flagsAt: number): number {
    return off >= 0 && (Atomics.load(this.i32, (off + flagsAt) >> 2) & 1) !== 0 ? off : -1;
  }

  /** Offset of QP `qpn`'s context, or -1 if there is no such QP. */
  qpByNumber(qpn: number): number {
    return this.live(this.qpOff(qpn), CtxOff.QP_FLAGS);
  }
  cqByNumber(cqn: number): number {
    return this.live(this.cqOff(cqn), CtxOff.CQ_FLAGS);
  }
  eqByNumber(eqn: number): number {
    return this.live(this.eqOff(eqn), CtxOff.EQ_FLAGS);
  }
  srqByNumber(srqn: number): number {
    return this.live(this.srqOff(srqn), CtxOff.SRQ_FLAGS);
  }

  /**
   * Offset of the MPT entry of a live MR with exactly this key (index and
   * variant), or -1. lkey and rkey are the same key space.
   */
  mrByKey(key: number): number {
    const off = this.mptOff(key >>> 8);
    if (off < 0) return -1;
    const dv = this.dv;
    return dv.getUint32(off + CtxOff.MPT_KEY, true) === key >>> 0 && (dv.getUint32(off + CtxOff.MPT_FLAGS, true) & MptFlag.VALID) !== 0 ? off : -1;
  }
  /** A local key names an MR only: a window's key is for remote access (IBTA 10.6.7). */
  mrByLkey(lkey: number): number {
    const off = this.mrByKey(lkey);
    return off >= 0 && (this.dv.getUint32(off + CtxOff.MPT_FLAGS, true) & MptFlag.MW) === 0 ? off : -1;
  }
  mrByRkey(rkey: number): number {
    return this.mrByKey(rkey);
  }
  /** Is the MPT entry at `off` a memory window? */
  isMw(off: number): boolean {
    return (this.dv.getUint32(off + CtxOff.MPT_FLAGS, true) & MptFlag.MW) !== 0;
  }

  /** Host memory address of virtual address `va` of the MR at `mr` (after checkAccess said OK). */
  mrTranslate(mr: number, va: number): number {
    return u64At(this.dv, mr + CtxOff.MPT_HOST) + (va - u64At(this.dv, mr + CtxOff.MPT_IOVA));
  }

  // --- QP state, for the pipeline -------------------------------------------

  /** Current ibv_qp_state of the QP at `qp` (Atomics.load). */
  qpState(qp: number): number {
    return Atomics.load(this.i32, (qp + CtxOff.QP_STATE) >> 2);
  }
  qpFlags(qp: number): number {
    return Atomics.load(this.i32, (qp + CtxOff.QP_FLAGS) >> 2);
  }
  /**
   * Pipeline: move the QP to ERR (after a fatal completion error) and ask
   * for the flush. Returns false if the QP was already in RESET or ERR.
   */
  qpSetError(qp: number): boolean {
    const w = (qp + CtxOff.QP_STATE) >> 2;
    for (;;) {
      const cur = Atomics.load(this.i32, w);
      if (cur === IBV_QPS_ERR || cur === 0) return false;
      if (Atomics.compareExchange(this.i32, w, cur, IBV_QPS_ERR) === cur) break;
    }
    Atomics.or(this.i32, (qp + CtxOff.QP_FLAGS) >> 2, QpFlag.FLUSH_PENDING);
    return true;
  }
  /** Pipeline: clear FLUSH_PENDING / RESET_PENDING once handled. */
  qpClearFlags(qp: number, bits: number): void {
    Atomics.and(this.i32, (qp + CtxOff.QP_FLAGS) >> 2, ~bits);
  }
}

function u64At(dv: DataView, off: number): number {
  return dv.getUint32(off + 4, true) * TWO_32 + dv.getUint32(off, true);
}

/**
 * May a request use `len` bytes at virtual address `addr` of the MR at
 * `mr` (an offset from mrByKey, or -1), from protection domain `pdn`, with
 * the IBV_ACCESS_* rights `needed`? Local read is always allowed; pass
 * IBV_ACCESS_LOCAL_WRITE for a local scatter, REMOTE_* for remote access.
 * Checks in the order rxe does: key, PD, access, bounds. Pure; allocates
 * nothing. Addresses above 2^53 should be passed as NaN (out of bounds).
 */
export function checkAccess(t: ContextTables, mr: number, pdn: number, addr: number, len: number, needed: number): MrCheck {
  if (mr < 0) return MrCheck.BAD_KEY;
  const dv = t.dv;
  if (dv.getUint32(mr + CtxOff.MPT_PDN, true) !== pdn >>> 0) return MrCheck.BAD_PD;
  if ((dv.getUint32(mr + CtxOff.MPT_ACCESS, true) & needed) !== needed) return MrCheck.NO_ACCESS;
  const iova = u64At(dv, mr + CtxOff.MPT_IOVA);
  const length = u64At(dv, mr + CtxOff.MPT_LENGTH);
  if (!(addr >= iova && len >= 0 && addr + len <= iova + length)) return MrCheck.OUT_OF_BOUNDS;
  return MrCheck.OK;
}

/**
 * A remote access through `rkey` (an MR's or a bound window's) by QP `qpn`:
 * checkAccess, plus the rule of a type 2 window, which only the QP it is
 * bound to may use (rxe_lookup_mw). Returns the entry's offset, or
 * -1 - MrCheck.
 */
export function checkRemote(t: ContextTables, rkey: number, pdn: number, qpn: number, addr: number, len: number, needed: number): number {
  const off = t.mrByRkey(rkey);
  if (off >= 0 && t.isMw(off) && (t.dv.getUint32(off + CtxOff.MPT_FLAGS, true) & MptFlag.MW_TYPE_2) !== 0) {
    if ((t.dv.getUint32(off + CtxOff.MPT_MW_QPN, true) & 0xffffff) !== qpn) return -1 - MrCheck.BAD_KEY;
  }
  const st = checkAccess(t, off, pdn, addr, len, needed);
  return st === MrCheck.OK ? off : -1 - st;
}

/** mrByKey + checkAccess in one call. */
export function checkKey(t: ContextTables, key: number, pdn: number, addr: number, len: number, needed: number): MrCheck {
  return checkAccess(t, t.mrByKey(key), pdn, addr, len, needed);
}

/** IBV_ACCESS_LOCAL_WRITE, re-exported for pipeline readability. */
export const LOCAL_WRITE = IBV_ACCESS_LOCAL_WRITE;
