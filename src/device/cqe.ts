/**
 * Completion queue entries and the CQ ring protocol.
 *
 * A CQ ring has 2^logSize entries of 64 bytes in host memory (zeroed by the
 * driver's allocator). The device keeps a free-running 32-bit producer
 * counter P (CQ context); the driver keeps a consumer counter C and stores
 * it into the CQ doorbell record after consuming.
 *
 * Ownership without locks: the last byte of each CQE holds the owner
 * (phase) bit. Entry P mod 2^logSize is written on lap L = P >> logSize with
 * phase = (L & 1) ^ 1, i.e. 1 on the first lap, 0 on the second, and so on.
 * Host memory starts zeroed, so a fresh ring holds no valid entry. The
 * driver expects phase ((C >> logSize) & 1) ^ 1 at entry C mod 2^logSize:
 * starting at 1 and flipping every lap.
 *
 * Ordering:
 *  - device: write bytes 0x00..0x3e of the CQE (plain stores), then
 *    Atomics.store the owner byte (0x3f) — last;
 *  - driver: Atomics.load the owner byte; if it has the expected phase, the
 *    rest of the CQE is complete (read it after that load); consume, then
 *    Atomics.store C into the doorbell record.
 * Several device threads may write one CQ: each reserves its slot with
 * Atomics.add on the producer counter; the owner bits make out-of-order
 * completion of the writes safe.
 *
 * Overflow: if P − C ≥ 2^logSize when a slot is reserved, the CQ enters
 * error (CqFlag.ERROR): that and every later CQE is dropped, and the caller
 * raises IBV_EVENT_CQ_ERR (and moves the QP to ERR, as rxe does).
 */
import {
  IBV_WC_BIND_MW,
  IBV_WC_COMP_SWAP,
  IBV_WC_FETCH_ADD,
  IBV_WC_LOCAL_INV,
  IBV_WC_RDMA_READ,
  IBV_WC_RDMA_WRITE,
  IBV_WC_RECV,
  IBV_WC_RECV_RDMA_WITH_IMM,
  IBV_WC_SEND,
  IBV_WC_SUCCESS,
  IBV_WC_TSO,
  IBV_WC_FLUSH,
  IBV_WC_ATOMIC_WRITE,
} from './abi/constants.js';
import { CQC, CqFlag, CtxOff, type ContextTables } from './contexts.js';
import type { HostMemory } from './host-memory.js';
import { defineLayout, reserved, u, u64 } from './layout.js';
import { DbVal, loadDbrec } from './registers.js';

export const CQE_SIZE = 64;
/** Offset of the owner byte. */
export const CQE_OWNER_OFFSET = 0x3f;

const WC_OPCODE_NAMES: Readonly<Record<number, string>> = Object.freeze({
  [IBV_WC_SEND]: 'SEND',
  [IBV_WC_RDMA_WRITE]: 'RDMA_WRITE',
  [IBV_WC_RDMA_READ]: 'RDMA_READ',
  [IBV_WC_COMP_SWAP]: 'COMP_SWAP',
  [IBV_WC_FETCH_ADD]: 'FETCH_ADD',
  [IBV_WC_BIND_MW]: 'BIND_MW',
  [IBV_WC_LOCAL_INV]: 'LOCAL_INV',
  [IBV_WC_TSO]: 'TSO',
  [IBV_WC_FLUSH]: 'FLUSH',
  [IBV_WC_ATOMIC_WRITE]: 'ATOMIC_WRITE',
  [IBV_WC_RECV]: 'RECV',
  [IBV_WC_RECV_RDMA_WITH_IMM]: 'RECV_RDMA_WITH_IMM',
});

export const CQE = defineLayout(
  'cqe',
  64,
  'Completion queue entry: every ibv_wc field, plus the WQE counter, a timestamp and the owner bit. For a non-success status only wrId, status, qpNum, vendorErr (and wqeCounter) are meaningful.',
  [
    u64('wrId', 0x00, 'wr_id of the completed WQE'),
    u('byteLen', 0x08, 0, 32, 'byte_len: bytes received (receive), or transferred (READ / atomic: 8)'),
    u(
      'immData',
      0x0c,
      0,
      32,
      'imm_data, or invalidated_rkey (they are a union in ibv_wc; wcFlags WITH_IMM / WITH_INV tell which); ImmDt bytes in memory order',
    ),
    u('qpNum', 0x10, 0, 24, 'qp_num: local QP'),
    reserved(0x13, 8),
    u('srcQp', 0x14, 0, 24, 'src_qp: remote QP (UD receives)'),
    reserved(0x17, 8),
    u('vendorErr', 0x18, 0, 32, 'vendor_err: model-specific detail of an error status (0 on success)'),
    u('wcFlags', 0x1c, 0, 16, 'wc_flags: IBV_WC_GRH 1, WITH_IMM 2, IP_CSUM_OK 4, WITH_INV 8'),
    u('pkeyIndex', 0x1e, 0, 16, 'pkey_index (GSI only; 0)'),
    u('slid', 0x20, 0, 16, 'slid: source LID (InfiniBand UD)'),
    u('wqeCounter', 0x22, 0, 16, 'producer counter (mod 2^16) of the completed WQE; for SRQs the ring index to free'),
    u('status', 0x24, 0, 8, 'ibv_wc_status'),
    u('opcode', 0x25, 0, 8, 'ibv_wc_opcode', WC_OPCODE_NAMES),
    u('sl', 0x26, 0, 4, 'sl: service level of the received packet'),
    reserved(0x26, 4, 4),
    u('dlidPathBits', 0x27, 0, 7, 'dlid_path_bits (InfiniBand)'),
    reserved(0x27, 1, 7),
    u64('timestamp', 0x28, 'completion time in device clock ticks (hcaCoreClock kHz; ns by default)'),
    u('srqn', 0x30, 0, 24, 'XRC receives: the XRC SRQ whose WQE completed (the driver frees its entry there); 0 otherwise'),
    reserved(0x33, 8),
    reserved(0x34, 32),
    reserved(0x38, 32),
    reserved(0x3c, 24),
    u('owner', 0x3f, 0, 1, "phase bit: written last; valid when it equals the consumer's expected phase"),
    reserved(0x3f, 7, 1),
  ],
);

/** Owner phase for free-running counter `n` on a ring of 2^logSize entries. */
export function ringPhase(n: number, logSize: number): number {
  return ((n >>> logSize) & 1) ^ 1;
}

// ---------------------------------------------------------------------------
// Driver side
// ---------------------------------------------------------------------------

/**
 * Is CQE number `ci` (the consumer counter) ready? `ringOff` is the ring's
 * byte offset in host memory (address − base). Atomics.load of the owner
 * byte: the CQE's other bytes may be read after this returns true.
 */
export function cqeReady(mem: HostMemory, ringOff: number, ci: number, logSize: number): boolean {
  const off = ringOff + (ci & ((1 << logSize) - 1)) * CQE_SIZE;
  return (Atomics.load(mem.u8, off + CQE_OWNER_OFFSET) & 1) === ringPhase(ci, logSize);
}

/** Byte offset (into host memory) of CQE number `n`. */
export function cqeOffset(ringOff: number, n: number, logSize: number): number {
  return ringOff + (n & ((1 << logSize) - 1)) * CQE_SIZE;
}

// ---------------------------------------------------------------------------
// Device side
// ---------------------------------------------------------------------------

/**
 * A reusable scratch record of one completion (keep one per writer; the
 * hot path fills it and calls cqPush — no allocation). wr_id is split into
 * two 32-bit halves to avoid bigint on the hot path.
 */
export class CqeFields {
  wrIdLo = 0;
  wrIdHi = 0;
  byteLen = 0;
  immData = 0;
  qpNum = 0;
  srcQp = 0;
  /** XRC receives: the SRQ the WQE came from (qpNum is the XRC receive QP). */
  srqn = 0;
  vendorErr = 0;
  wcFlags = 0;
  pkeyIndex = 0;
  slid = 0;
  wqeCounter = 0;
  status = IBV_WC_SUCCESS;
  opcode = 0;
  sl = 0;
  dlidPathBits = 0;
  /** Completion time in device ticks (number; exact below 2^53). */
  timestamp = 0;
  /** The message carried SE (solicited event): fires a solicited-only arm. */
  solicited = false;

  /** Copy wr_id from the 8 bytes at `off` of `dv` (e.g. from the WQE). */
  wrIdFrom(dv: DataView, off: number): this {
    this.wrIdLo = dv.getUint32(off, true);
    this.wrIdHi = dv.getUint32(off + 4, true);
    return this;
  }

  reset(): this {
    this.wrIdLo = this.wrIdHi = this.byteLen = this.immData = this.qpNum = this.srcQp = this.srqn = 0;
    this.vendorErr = this.wcFlags = this.pkeyIndex = this.slid = this.wqeCounter = 0;
    this.status = IBV_WC_SUCCESS;
    this.opcode = this.sl = this.dlidPathBits = this.timestamp = 0;
    this.solicited = false;
    return this;
  }
}

/**
 * Write a CQE at byte offset `off` of host memory: the body, then the owner
 * byte with Atomics.store. Does not touch any counter.
 */
export function writeCqe(mem: HostMemory, off: number, f: CqeFields, phase: number): void {
  const dv = mem.dv;
  dv.setUint32(off + 0x00, f.wrIdLo, true);
  dv.setUint32(off + 0x04, f.wrIdHi, true);
  dv.setUint32(off + 0x08, f.byteLen, true);
  dv.setUint32(off + 0x0c, f.immData, true);
  dv.setUint32(off + 0x10, f.qpNum & 0xffffff, true);
  dv.setUint32(off + 0x14, f.srcQp & 0xffffff, true);
  dv.setUint32(off + 0x18, f.vendorErr, true);
  dv.setUint16(off + 0x1c, f.wcFlags, true);
  dv.setUint16(off + 0x1e, f.pkeyIndex, true);
  dv.setUint16(off + 0x20, f.slid, true);
  dv.setUint16(off + 0x22, f.wqeCounter, true);
  dv.setUint8(off + 0x24, f.status);
  dv.setUint8(off + 0x25, f.opcode);
  dv.setUint8(off + 0x26, f.sl & 0xf);
  dv.setUint8(off + 0x27, f.dlidPathBits & 0x7f);
  dv.setUint32(off + 0x28, f.timestamp >>> 0, true);
  dv.setUint32(off + 0x2c, Math.floor(f.timestamp / 4294967296) >>> 0, true);
  dv.setUint32(off + 0x30, f.srqn & 0xffffff, true);
  dv.setUint32(off + 0x34, 0, true);
  dv.setUint32(off + 0x38, 0, true);
  dv.setUint16(off + 0x3c, 0, true);
  dv.setUint8(off + 0x3e, 0);
  Atomics.store(mem.u8, off + CQE_OWNER_OFFSET, phase);
}

/** Result bits of cqPush. */
export const enum CqPush {
  /** The CQE was written. */
  WRITTEN = 1 << 0,
  /** The CQ was armed and this CQE matched: raise a completion EQE on the CQ's EQ. */
  EVENT = 1 << 1,
  /** The CQ overflowed now: raise IBV_EVENT_CQ_ERR (the CQE was dropped). */
  OVERFLOW = 1 << 2,
  /** The CQ was already in error: the CQE was dropped. */
  DROPPED = 1 << 3,
  /** Armed, but CQ moderation holds the event back (count not reached): start the period timer. */
  HELD = 1 << 4,
}

/**
 * The CQE writer: reserve a slot on CQ `cq` (an offset from cqByNumber),
 * check for overflow against the driver's consumer counter, write the CQE,
 * and decide whether an armed CQ raises a completion event. Allocates
 * nothing. Returns CqPush bits.
 */
export function cqPush(mem: HostMemory, t: ContextTables, cq: number, f: CqeFields): number {
  const i32 = t.i32;
  const flagsW = (cq + CtxOff.CQ_FLAGS) >> 2;
  if (Atomics.load(i32, flagsW) & CqFlag.ERROR) return CqPush.DROPPED;
  const dv = t.dv;
  const logSize = CQC.f.logSize.get(dv, cq);
  const n = Atomics.add(i32, (cq + CtxOff.CQ_PRODUCER) >> 2, 1) >>> 0;
  const ci = loadDbrec(mem, CQC.f.dbrecAddr.getNum(dv, cq));
  if ((n - ci) >>> 0 >= 1 << logSize) {
    const before = Atomics.or(i32, flagsW, CqFlag.ERROR);
    return before & CqFlag.ERROR ? CqPush.DROPPED : CqPush.OVERFLOW;
  }
  const ringOff = CQC.f.ringAddr.getNum(dv, cq) - mem.baseNum;
  writeCqe(mem, ringOff + (n & ((1 << logSize) - 1)) * CQE_SIZE, f, ringPhase(n, logSize));
  // Armed? Fire once for any CQE, or for solicited / error CQEs only.
  for (;;) {
    const fl = Atomics.load(i32, flagsW);
    if (!(fl & CqFlag.ARMED)) return CqPush.WRITTEN;
    if (fl & CqFlag.SOLICITED_ONLY && !f.solicited && f.status === IBV_WC_SUCCESS) return CqPush.WRITTEN;
    const count = CQC.f.modCount.get(dv, cq);
    if (count > 1 || CQC.f.modPeriod.get(dv, cq) > 0) {
      // Moderation: hold the event until `count` CQEs (count 0: only the period timer fires it).
      const pending = Atomics.add(i32, (cq + CtxOff.CQ_MOD_PENDING) >> 2, 1) + 1;
      if (count === 0 || pending < count) return CqPush.WRITTEN | CqPush.HELD;
    }
    if (Atomics.compareExchange(i32, flagsW, fl, fl & ~(CqFlag.ARMED | CqFlag.SOLICITED_ONLY)) === fl) {
      Atomics.store(i32, (cq + CtxOff.CQ_MOD_PENDING) >> 2, 0);
      return CqPush.WRITTEN | CqPush.EVENT;
    }
  }
}

/**
 * The CQ moderation period of CQ `cq` ran out: if it is still armed with
 * held-back CQEs, disarm it and return true (raise the completion event).
 */
export function cqModerationExpired(t: ContextTables, cq: number): boolean {
  const i32 = t.i32;
  const flagsW = (cq + CtxOff.CQ_FLAGS) >> 2;
  const pendW = (cq + CtxOff.CQ_MOD_PENDING) >> 2;
  for (;;) {
    const fl = Atomics.load(i32, flagsW);
    if (!(fl & CqFlag.ARMED) || Atomics.load(i32, pendW) === 0) return false;
    if (Atomics.compareExchange(i32, flagsW, fl, fl & ~(CqFlag.ARMED | CqFlag.SOLICITED_ONLY)) === fl) {
      Atomics.store(i32, pendW, 0);
      return true;
    }
  }
}

/**
 * Handle a CQ arm doorbell (slot value `v`, see registers.ts) for the CQ at
 * `cq`. Returns true when an event must be raised at once because CQEs
 * beyond the arm's consumer index already exist (the arm is then consumed;
 * for a solicited-only arm this event may be spurious, which verbs allow).
 * Race-free against cqPush: the arm is set before the producer is checked,
 * cqPush advances the producer before it checks the arm.
 */
export function cqArm(t: ContextTables, cq: number, v: number): boolean {
  const i32 = t.i32;
  const flagsW = (cq + CtxOff.CQ_FLAGS) >> 2;
  const ci = v & DbVal.CI_MASK;
  CQC.f.armCi.set(t.dv, cq, ci);
  const sol = v & DbVal.CQ_SOLICITED ? CqFlag.SOLICITED_ONLY : 0;
  for (;;) {
    const fl = Atomics.load(i32, flagsW);
    if (Atomics.compareExchange(i32, flagsW, fl, (fl & ~CqFlag.SOLICITED_ONLY) | CqFlag.ARMED | sol) === fl) break;
  }
  const producer = Atomics.load(i32, (cq + CtxOff.CQ_PRODUCER) >> 2);
  if (((producer - ci) & DbVal.CI_MASK) === 0) return false;
  for (;;) {
    const fl = Atomics.load(i32, flagsW);
    if (!(fl & CqFlag.ARMED)) return false; // a concurrent cqPush fired it
    if (Atomics.compareExchange(i32, flagsW, fl, fl & ~(CqFlag.ARMED | CqFlag.SOLICITED_ONLY)) === fl) return true;
  }
}
