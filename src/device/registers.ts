/**
 * The BAR: the device's register window, a SharedArrayBuffer viewed as an
 * Int32Array. Every access is an `Atomics` load / store / add / or on a
 * 32-bit word; a "register" is a word index.
 *
 * Doorbells. The truth about a queue's producer / consumer index is its
 * doorbell RECORD in host memory (as in mlx5); the BAR write is only the
 * wake-up. Ringing a doorbell is, in this order:
 *   1. write the WQE bytes (plain stores);
 *   2. Atomics.store the new producer counter into the doorbell record;
 *   3. Atomics.store the same value into the queue's doorbell slot in the BAR;
 *   4. Atomics.or the queue's bit into its kind's pending bitmap (and the
 *      bits that name its word in the index and top words above it);
 *   5. Atomics.or the kind's bit into DB_SUMMARY;
 *   6. Atomics.add(DB_SEQ, 1), then Atomics.notify(DB_SEQ) if DEVICE_SLEEPING.
 * Steps 4–6 are skipped while the queue's pending bit is still set from an
 * earlier ring (the device has not taken it yet).
 * The device, woken by DB_SEQ (or polling DB_SUMMARY), exchanges DB_SUMMARY
 * with 0, then exchanges each pending-bitmap word of the flagged kinds with
 * 0 and reads the slots (and the records) of the queues it found. Because
 * both sides clear / set "summary before bitmap" / "bitmap before summary",
 * a doorbell is never lost: at worst it is seen twice. Doorbells coalesce:
 * two SQ doorbells for a QP before the device looks are one wake-up with the
 * later producer index.
 *
 * Sleeping. The device sets DEVICE_SLEEPING = 1, re-reads DB_SEQ, and only
 * then Atomics.wait(DB_SEQ, seen). The driver bumps DB_SEQ before it reads
 * DEVICE_SLEEPING. With sequentially consistent atomics one of the two sees
 * the other, so no wake-up is lost, and an awake device costs the driver no
 * notify.
 *
 * Interrupts (MSI-X). Each interrupt vector is a counter word: the device
 * writes the EQE, then Atomics.add(IRQ[v], 1) and Atomics.notify. The
 * driver Atomics.wait's on it (realtime) or the simulator runtime hooks it.
 */
import type { Capabilities } from './capabilities.js';
import { DeviceError } from './errors.js';
import type { HostMemory } from './host-memory.js';
import { defineLayout, reserved, u } from './layout.js';

/** Value of DEVICE_ID: "RNIC" read as a big-endian hex number. */
export const DEVICE_ID_VALUE = 0x524e4943;
/** Interface version 1.0: (major << 16) | minor. */
export const IF_VERSION_VALUE = 0x00010000;

/** Word indexes of the fixed registers (byte offset / 4). */
export const enum Reg {
  DEVICE_ID = 0x000 >> 2,
  IF_VERSION = 0x004 >> 2,
  DEVICE_STATUS = 0x008 >> 2,
  BAR_BYTES = 0x00c >> 2,
  NUM_PORTS = 0x010 >> 2,
  NUM_IRQ = 0x014 >> 2,
  IRQ_OFFSET = 0x018 >> 2,
  CMD_ADDR_LO = 0x040 >> 2,
  CMD_ADDR_HI = 0x044 >> 2,
  CMD_DOORBELL = 0x048 >> 2,
  CMD_STATUS = 0x04c >> 2,
  DB_SEQ = 0x080 >> 2,
  DB_SUMMARY = 0x084 >> 2,
  DEVICE_SLEEPING = 0x088 >> 2,
  /** Kind descriptor k is at KIND_BASE + 4k: COUNT, SLOT_OFFSET, PENDING_OFFSET, reserved. */
  KIND_BASE = 0x100 >> 2,
}

/** Offsets inside a kind descriptor (words). */
export const enum KindReg {
  COUNT = 0,
  SLOT_OFFSET = 1,
  PENDING_OFFSET = 2,
  STRIDE = 4,
}

/** Byte offset where the variable area (IRQ words, slots, bitmaps) begins. */
export const BAR_VARIABLE_AREA = 0x1000;

/** Doorbell kinds: the bit numbers of DB_SUMMARY. CMD has no slots. */
export const enum DbKind {
  SQ = 0,
  RQ = 1,
  SRQ = 2,
  CQ = 3,
  EQ = 4,
  CMD = 5,
  /** Kinds with slots and bitmaps. */
  COUNT_WITH_SLOTS = 5,
}

export const DB_KIND_NAMES: readonly string[] = Object.freeze(['SQ', 'RQ', 'SRQ', 'CQ', 'EQ', 'CMD']);

/** DEVICE_STATUS bits. */
export const enum DevStatus {
  READY = 1 << 0,
  FATAL = 1 << 1,
}

/** CQ doorbell slot value (an arm request) and EQ doorbell slot value. */
export const enum DbVal {
  /** CQ: notify only on a solicited (or error) completion. */
  CQ_SOLICITED = 1 << 30,
  /** CQ: this is an arm request. EQ: re-arm the interrupt. */
  ARM = 1 << 31,
  /** Consumer index, modulo 2^24. */
  CI_MASK = 0xffffff,
}

/** The fixed registers, for the reference manual. Access is from the driver's side. */
export const REGISTERS: readonly { name: string; offset: number; access: 'RO' | 'RW' | 'WO'; doc: string }[] = Object.freeze([
  { name: 'DEVICE_ID', offset: 0x000, access: 'RO', doc: `0x${DEVICE_ID_VALUE.toString(16)} ("RNIC")` },
  { name: 'IF_VERSION', offset: 0x004, access: 'RO', doc: 'interface version, (major << 16) | minor; this manual is 1.0' },
  { name: 'DEVICE_STATUS', offset: 0x008, access: 'RO', doc: 'bit 0 READY (firmware accepts commands), bit 1 FATAL' },
  { name: 'BAR_BYTES', offset: 0x00c, access: 'RO', doc: 'size of the BAR in bytes' },
  { name: 'NUM_PORTS', offset: 0x010, access: 'RO', doc: 'number of ports' },
  { name: 'NUM_IRQ', offset: 0x014, access: 'RO', doc: 'number of interrupt vectors (device.numCompVectors)' },
  { name: 'IRQ_OFFSET', offset: 0x018, access: 'RO', doc: 'byte offset of the interrupt counters, one word per vector' },
  { name: 'CMD_ADDR_LO', offset: 0x040, access: 'RW', doc: 'mailbox page address, bits 31:0' },
  { name: 'CMD_ADDR_HI', offset: 0x044, access: 'RW', doc: 'mailbox page address, bits 63:32' },
  { name: 'CMD_DOORBELL', offset: 0x048, access: 'WO', doc: 'write the command token (1..0xffff) to execute the mailbox' },
  { name: 'CMD_STATUS', offset: 0x04c, access: 'RO', doc: '(token << 8) | status of the last completed command' },
  { name: 'DB_SEQ', offset: 0x080, access: 'RW', doc: 'doorbell sequence: the driver adds 1 after every doorbell; the device waits on it' },
  {
    name: 'DB_SUMMARY',
    offset: 0x084,
    access: 'RW',
    doc: 'bit k: doorbell kind k has pending bits (0 SQ, 1 RQ, 2 SRQ, 3 CQ, 4 EQ, 5 CMD); driver ORs, device exchanges with 0',
  },
  { name: 'DEVICE_SLEEPING', offset: 0x088, access: 'RO', doc: '1 while the device waits on DB_SEQ: the driver notifies DB_SEQ only then' },
  ...DB_KIND_NAMES.slice(0, DbKind.COUNT_WITH_SLOTS).flatMap((k, i) => [
    { name: `${k}_COUNT`, offset: 0x100 + 16 * i, access: 'RO' as const, doc: `number of ${k} doorbell slots (queue numbers 0..COUNT-1)` },
    { name: `${k}_SLOT_OFFSET`, offset: 0x104 + 16 * i, access: 'RO' as const, doc: `byte offset of the ${k} doorbell slots, one word per queue number` },
    {
      name: `${k}_PENDING_OFFSET`,
      offset: 0x108 + 16 * i,
      access: 'RO' as const,
      doc: `byte offset of the ${k} pending bitmap: W = ceil(COUNT/32) words (bit n%32 of word n/32), then I = ceil(W/32) index words (bit w%32 of index word w/32: pending word w may be non-zero), then ceil(I/32) top words (bit i%32 of top word i/32: index word i may be non-zero)`,
    },
  ]),
]);

// ---------------------------------------------------------------------------
// Doorbell records in host memory
// ---------------------------------------------------------------------------

export const QP_DBREC = defineLayout(
  'qp-dbrec',
  8,
  'QP doorbell record, 8 bytes, 8-byte aligned in host memory. Written by the driver with Atomics.store after the WQEs; read by the device with Atomics.load. Counters are free-running 32-bit (they wrap at 2^32; the ring index is counter mod ring size).',
  [
    u('rqPi', 0x00, 0, 32, 'receive queue producer counter: receive WQEs ever posted'),
    u('sqPi', 0x04, 0, 32, 'send queue producer counter: send WQEs ever posted'),
  ],
);

export const SRQ_DBREC = defineLayout('srq-dbrec', 8, 'SRQ doorbell record, 8 bytes, 8-byte aligned in host memory.', [
  u('pi', 0x00, 0, 32, 'producer counter: SRQ WQEs ever posted'),
  reserved(0x04, 32),
]);

export const CQ_DBREC = defineLayout(
  'cq-dbrec',
  8,
  'CQ doorbell record, 8 bytes, 8-byte aligned in host memory. The driver stores its consumer counter after consuming CQEs; the device reads it to detect overflow.',
  [
    u('ci', 0x00, 0, 32, 'consumer counter: CQEs ever consumed by the driver'),
    u('armCmd', 0x04, 0, 32, 'last arm request written to the CQ doorbell (informational; the BAR slot is what the device acts on)'),
  ],
);

// ---------------------------------------------------------------------------
// The BAR object
// ---------------------------------------------------------------------------

/** Slot counts of the doorbell kinds for a capability set (index 0 of each is reserved). */
export function doorbellCounts(caps: Capabilities): number[] {
  const d = caps.device;
  return [d.maxQp + 2, d.maxQp + 2, d.maxSrq + 1, d.maxCq + 1, d.maxEq + 1];
}

export class Bar {
  readonly sab: SharedArrayBuffer;
  readonly i32: Int32Array;
  /** Word index of the first slot of each kind. */
  readonly slotBase: Int32Array;
  /** Word index of the first pending-bitmap word of each kind. */
  readonly pendBase: Int32Array;
  /** Number of slots of each kind. */
  readonly count: Int32Array;
  /** Word index of interrupt vector 0. */
  readonly irqBase: number;
  readonly numIrq: number;

  private constructor(sab: SharedArrayBuffer) {
    this.sab = sab;
    this.i32 = new Int32Array(sab);
    const r = this.i32;
    if (r.length < BAR_VARIABLE_AREA / 4 || Atomics.load(r, Reg.DEVICE_ID) !== DEVICE_ID_VALUE) {
      throw new DeviceError('DEV_ERR_BAD_BAR', 'DEVICE_ID does not read "RNIC"');
    }
    if (Atomics.load(r, Reg.IF_VERSION) >>> 16 !== IF_VERSION_VALUE >>> 16) {
      throw new DeviceError('DEV_ERR_BAD_BAR', `unsupported interface version 0x${Atomics.load(r, Reg.IF_VERSION).toString(16)}`);
    }
    this.slotBase = new Int32Array(DbKind.COUNT_WITH_SLOTS);
    this.pendBase = new Int32Array(DbKind.COUNT_WITH_SLOTS);
    this.count = new Int32Array(DbKind.COUNT_WITH_SLOTS);
    for (let k = 0; k < DbKind.COUNT_WITH_SLOTS; k++) {
      const d = Reg.KIND_BASE + k * KindReg.STRIDE;
      this.count[k] = Atomics.load(r, d + KindReg.COUNT);
      this.slotBase[k] = Atomics.load(r, d + KindReg.SLOT_OFFSET) >> 2;
      this.pendBase[k] = Atomics.load(r, d + KindReg.PENDING_OFFSET) >> 2;
    }
    this.irqBase = Atomics.load(r, Reg.IRQ_OFFSET) >> 2;
    this.numIrq = Atomics.load(r, Reg.NUM_IRQ);
  }

  /** Device side: build the BAR for `caps` and fill the read-only registers. READY is clear. */
  static create(caps: Capabilities): Bar {
    const counts = doorbellCounts(caps);
    const numIrq = caps.device.numCompVectors;
    let off = BAR_VARIABLE_AREA;
    const irqOff = off;
    off += numIrq * 4;
    const slotOffs: number[] = [];
    const pendOffs: number[] = [];
    for (const n of counts) {
      slotOffs.push(off);
      off += n * 4;
      pendOffs.push(off);
      const words = Math.ceil(n / 32);
      const indexWords = Math.ceil(words / 32);
      off += (words + indexWords + Math.ceil(indexWords / 32)) * 4;
    }
    const bytes = Math.ceil(off / 4096) * 4096;
    const sab = new SharedArrayBuffer(bytes);
    const r = new Int32Array(sab);
    r[Reg.DEVICE_ID] = DEVICE_ID_VALUE;
    r[Reg.IF_VERSION] = IF_VERSION_VALUE;
    r[Reg.BAR_BYTES] = bytes;
    r[Reg.NUM_PORTS] = caps.ports.length;
    r[Reg.NUM_IRQ] = numIrq;
    r[Reg.IRQ_OFFSET] = irqOff;
    counts.forEach((n, k) => {
      const d = Reg.KIND_BASE + k * KindReg.STRIDE;
      r[d + KindReg.COUNT] = n;
      r[d + KindReg.SLOT_OFFSET] = slotOffs[k]!;
      r[d + KindReg.PENDING_OFFSET] = pendOffs[k]!;
    });
    Atomics.store(r, Reg.DEVICE_STATUS, 0);
    return new Bar(sab);
  }

  /** Either side: map a BAR created elsewhere (validates DEVICE_ID and IF_VERSION). */
  static attach(sab: SharedArrayBuffer): Bar {
    return new Bar(sab);
  }

  /** A register by word index (Atomics.load). */
  read(word: number): number {
    return Atomics.load(this.i32, word);
  }
}

// ---------------------------------------------------------------------------
// Driver side
// ---------------------------------------------------------------------------

/**
 * Steps 3–6 of ringing a doorbell (see the file header): slot, pending bit,
 * summary bit, sequence, conditional notify. The caller has already done
 * steps 1–2 (WQE bytes, doorbell record).
 */
export function ringDoorbell(bar: Bar, kind: DbKind, n: number, value: number): void {
  const r = bar.i32;
  Atomics.store(r, bar.slotBase[kind]! + n, value);
  const w = n >>> 5;
  const pend = bar.pendBase[kind]!;
  const bit = 1 << (n & 31);
  // Still pending from the last ring (a driver posting faster than the
  // device drains): the device has yet to exchange this word, and reads
  // the slot after it does, so it sees the value just stored. The levels
  // above, the summary and DB_SEQ were set by that ring. One load instead
  // of five read-modify-writes per post in a burst.
  if ((Atomics.load(r, pend + w) & bit) !== 0) return;
  const words = (bar.count[kind]! + 31) >>> 5;
  Atomics.or(r, pend + w, bit);
  // The index word tells the device which pending word to look at, the top
  // word which index word: a drain reads a few words, not all of them.
  const iw = w >>> 5;
  Atomics.or(r, pend + words + iw, 1 << (w & 31));
  Atomics.or(r, pend + words + ((words + 31) >>> 5) + (iw >>> 5), 1 << (iw & 31));
  Atomics.or(r, Reg.DB_SUMMARY, 1 << kind);
  Atomics.add(r, Reg.DB_SEQ, 1);
  if (Atomics.load(r, Reg.DEVICE_SLEEPING) !== 0) Atomics.notify(r, Reg.DB_SEQ);
}

/** Wake the device for a kind that has no slots (CMD). */
export function ringKind(bar: Bar, kind: DbKind): void {
  const r = bar.i32;
  Atomics.or(r, Reg.DB_SUMMARY, 1 << kind);
  Atomics.add(r, Reg.DB_SEQ, 1);
  if (Atomics.load(r, Reg.DEVICE_SLEEPING) !== 0) Atomics.notify(r, Reg.DB_SEQ);
}

/** SQ doorbell: `pi` = new send producer counter, already stored in the QP doorbell record (sqPi). */
export function ringSqDoorbell(bar: Bar, qpn: number, pi: number): void {
  ringDoorbell(bar, DbKind.SQ, qpn, pi);
}

/** RQ doorbell: optional wake-up after storing rqPi (the device reads the record when a message arrives). */
export function ringRqDoorbell(bar: Bar, qpn: number, pi: number): void {
  ringDoorbell(bar, DbKind.RQ, qpn, pi);
}

/** SRQ doorbell: optional wake-up after storing the SRQ record's pi. */
export function ringSrqDoorbell(bar: Bar, srqn: number, pi: number): void {
  ringDoorbell(bar, DbKind.SRQ, srqn, pi);
}

/** Encode a CQ arm request. */
export function encodeCqArm(ci: number, solicitedOnly: boolean): number {
  return DbVal.ARM | (solicitedOnly ? DbVal.CQ_SOLICITED : 0) | (ci & DbVal.CI_MASK) | 0;
}

/**
 * Arm a CQ (ibv_req_notify_cq): one completion event for the next CQE (any,
 * or only solicited / error ones), or at once if CQEs beyond `ci` exist.
 * Store `ci` into the CQ doorbell record first.
 */
export function armCq(bar: Bar, cqn: number, ci: number, solicitedOnly: boolean): void {
  ringDoorbell(bar, DbKind.CQ, cqn, encodeCqArm(ci, solicitedOnly));
}

/** Encode an EQ doorbell value. */
export function encodeEqDoorbell(ci: number, arm: boolean): number {
  return (arm ? DbVal.ARM : 0) | (ci & DbVal.CI_MASK) | 0;
}

/** EQ doorbell: report the consumer counter and (optionally) re-arm the EQ's interrupt. */
export function updateEqCi(bar: Bar, eqn: number, ci: number, arm: boolean): void {
  ringDoorbell(bar, DbKind.EQ, eqn, encodeEqDoorbell(ci, arm));
}

/** Current count of interrupt vector `v` (the value to pass to waitIrq). */
export function irqCount(bar: Bar, v: number): number {
  return Atomics.load(bar.i32, bar.irqBase + v);
}

/**
 * Block (realtime driver thread only) until interrupt vector `v` fires, i.e.
 * its count differs from `seen`. Returns the new count, or `seen` on timeout.
 */
export function waitIrq(bar: Bar, v: number, seen: number, timeoutMs: number): number {
  const w = bar.irqBase + v;
  if (Atomics.load(bar.i32, w) === seen) Atomics.wait(bar.i32, w, seen, timeoutMs);
  return Atomics.load(bar.i32, w);
}

/** Store a 32-bit doorbell-record word (driver: step 2; ordered after the WQE bytes). */
export function storeDbrec(mem: HostMemory, addrNum: number, value: number): void {
  Atomics.store(mem.i32, (addrNum - mem.baseNum) >> 2, value | 0);
}

/** Load a 32-bit doorbell-record word as an unsigned number (device side). */
export function loadDbrec(mem: HostMemory, addrNum: number): number {
  return Atomics.load(mem.i32, (addrNum - mem.baseNum) >> 2) >>> 0;
}

// ---------------------------------------------------------------------------
// Device side
// ---------------------------------------------------------------------------

/** Claim the kinds with pending doorbells (bit k = DbKind k). */
export function takeSummary(bar: Bar): number {
  // Read before the exchange: an idle device polls this every pass, and an
  // exchange (a write) on every pass would take the cache line the driver's
  // doorbell writes away from the driver's core each time.
  if (Atomics.load(bar.i32, Reg.DB_SUMMARY) === 0) return 0;
  return Atomics.exchange(bar.i32, Reg.DB_SUMMARY, 0);
}

/**
 * Claim the pending doorbells of one kind. Writes pairs (queue number, slot
 * value) into `out` and returns the number of pairs; stops early when `out`
 * is full (the unclaimed bits of that word are put back, and the kind's
 * summary bit set again). Allocates nothing.
 */
export function drainDoorbells(bar: Bar, kind: DbKind, out: Int32Array): number {
  const r = bar.i32;
  const pend = bar.pendBase[kind]!;
  const slots = bar.slotBase[kind]!;
  const words = (bar.count[kind]! + 31) >>> 5;
  const index = pend + words;
  const indexWords = (words + 31) >>> 5;
  const top = index + indexWords;
  const topWords = (indexWords + 31) >>> 5;
  const cap = out.length >>> 1;
  let n = 0;
  for (let tw = 0; tw < topWords; tw++) {
    if (Atomics.load(r, top + tw) === 0) continue;
    // Each level is cleared before the level below it is read: a bit set
    // again meanwhile is at worst a second look at an empty word.
    let ibits = Atomics.exchange(r, top + tw, 0);
    while (ibits !== 0) {
      const ib = 31 - Math.clz32(ibits & -ibits);
      ibits &= ibits - 1;
      const iw = (tw << 5) | ib;
      let wbits = Atomics.exchange(r, index + iw, 0);
      while (wbits !== 0) {
        const wb = 31 - Math.clz32(wbits & -wbits);
        wbits &= wbits - 1;
        const w = (iw << 5) | wb;
        let bits = Atomics.exchange(r, pend + w, 0);
        while (bits !== 0) {
          if (n === cap) {
            // Out of room: give back what is left of this word, its index word and its top word.
            Atomics.or(r, pend + w, bits);
            Atomics.or(r, index + iw, wbits | (1 << wb));
            Atomics.or(r, top + tw, ibits | (1 << ib));
            Atomics.or(r, Reg.DB_SUMMARY, 1 << kind);
            return n;
          }
          const b = 31 - Math.clz32(bits & -bits);
          bits &= bits - 1;
          const q = (w << 5) | b;
          out[2 * n] = q;
          out[2 * n + 1] = Atomics.load(r, slots + q);
          n++;
        }
      }
    }
  }
  return n;
}

/**
 * Device idle wait (realtime runtime): returns when DB_SEQ differs from
 * `seen` or after `timeoutMs`. Returns the current DB_SEQ.
 */
export function waitForDoorbell(bar: Bar, seen: number, timeoutMs: number): number {
  const r = bar.i32;
  Atomics.store(r, Reg.DEVICE_SLEEPING, 1);
  if (Atomics.load(r, Reg.DB_SEQ) === seen) Atomics.wait(r, Reg.DB_SEQ, seen, timeoutMs);
  Atomics.store(r, Reg.DEVICE_SLEEPING, 0);
  return Atomics.load(r, Reg.DB_SEQ);
}

/** Fire interrupt vector `v` (after the EQE is written). */
export function raiseIrq(bar: Bar, v: number): void {
  Atomics.add(bar.i32, bar.irqBase + v, 1);
  Atomics.notify(bar.i32, bar.irqBase + v);
}

/** Decode a CQ arm slot value. */
export function cqArmCi(v: number): number {
  return v & DbVal.CI_MASK;
}
export function cqArmSolicited(v: number): boolean {
  return (v & DbVal.CQ_SOLICITED) !== 0;
}
/** Decode an EQ doorbell slot value. */
export function eqDbCi(v: number): number {
  return v & DbVal.CI_MASK;
}
export function eqDbArm(v: number): boolean {
  return (v & DbVal.ARM) !== 0;
}

/** Set / clear DEVICE_STATUS bits (device side). */
export function setDeviceStatus(bar: Bar, bits: number): void {
  Atomics.store(bar.i32, Reg.DEVICE_STATUS, bits);
  // A driver may be blocked waiting for READY (ibv_open_device).
  Atomics.notify(bar.i32, Reg.DEVICE_STATUS);
}
