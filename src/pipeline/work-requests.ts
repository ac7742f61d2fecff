/**
 * WQE fetch: what the device reads out of a send or receive WQE in host
 * memory, as the JavaScript objects the stages work on. One object per WQE,
 * made at fetch time; the WQE slot itself is free for the driver once the
 * device has advanced past it... except that a WQE stays the driver's
 * until its completion (IBTA), so fetching early is safe.
 */
import {
  IBV_QPT_UD,
  IBV_SEND_FENCE,
  IBV_SEND_INLINE,
  IBV_SEND_SIGNALED,
  IBV_SEND_SOLICITED,
  IBV_WR_ATOMIC_CMP_AND_SWP,
  IBV_WR_ATOMIC_FETCH_AND_ADD,
  IBV_WR_ATOMIC_WRITE,
  IBV_WR_BIND_MW,
  IBV_WR_FLUSH,
  IBV_WR_LOCAL_INV,
} from '../device/abi/constants.js';
import type { HostMemory } from '../device/host-memory.js';
import type { BindRequest } from '../device/mw.js';
import { ATOMIC_SEG, BIND_SEG, DATA_SEG, INLINE_HDR, RADDR_SEG, RECV_WQE_HDR, SEND_CTRL, UD_SEG, WqeOff } from '../device/wqe.js';

/** One scatter/gather element (ibv_sge). */
export interface Sge {
  addr: number;
  length: number;
  lkey: number;
}

/** Address vector as the packet builder needs it. */
export interface AddressVector {
  dgid: Uint8Array;
  dmac: Uint8Array;
  flowLabel: number;
  sl: number;
  trafficClass: number;
  hopLimit: number;
  sgidIndex: number;
  portNum: number;
  /** InfiniBand: destination LID, source path bits (the low LMC bits of the SLID), and whether a GRH is carried. */
  dlid: number;
  srcPathBits: number;
  isGlobal: boolean;
}

export const enum WqeStatus {
  /** Fetched, not all packets sent. */
  PENDING = 0,
  /** Every packet sent at least once; waiting for ACK / responses. */
  SENT = 1,
  /** Done: completion written (or suppressed for unsignaled). */
  DONE = 2,
}

const NO_SGES: readonly Sge[] = Object.freeze([]);

/**
 * The `n` data segments at `off`, in an array of exactly that size (a WQE
 * has one or two, not a grown array's 16 slots); `reuse`, a retired WQE's
 * list, is refilled when it has that size.
 */
function readSges(dv: DataView, off: number, n: number, reuse: readonly Sge[] = NO_SGES): readonly Sge[] {
  if (n === 0) return NO_SGES;
  if (reuse.length === n) {
    for (let i = 0; i < n; i++) {
      const s = off + i * 16;
      const g = reuse[i] as Sge;
      g.addr = D.addr.getNum(dv, s);
      g.length = D.length.get(dv, s) >>> 0;
      g.lkey = D.lkey.get(dv, s) >>> 0;
    }
    return reuse;
  }
  const sges = new Array<Sge>(n);
  for (let i = 0; i < n; i++) {
    const s = off + i * 16;
    sges[i] = { addr: D.addr.getNum(dv, s), length: D.length.get(dv, s) >>> 0, lkey: D.lkey.get(dv, s) >>> 0 };
  }
  return sges;
}

/**
 * Completed send WQEs, reused by the next fetch (per thread): no object,
 * SGE list or SGE per post in steady state. A WQE goes back once its
 * completion is written (requester.ts completeSend), when nothing refers
 * to it any more.
 */
const wqePool: SendWqe[] = [];

export function releaseSendWqe(w: SendWqe): void {
  if (wqePool.length < 4096) wqePool.push(w);
}

function sgeBytes(sges: readonly Sge[]): number {
  let len = 0;
  for (let i = 0; i < sges.length; i++) len += sges[i]!.length;
  return len;
}

export class SendWqe {
  /** Free-running SQ counter of this WQE. */
  counter = 0;
  opcode = 0;
  flags = 0;
  wrIdLo = 0;
  wrIdHi = 0;
  imm = 0;
  sges: readonly Sge[] = NO_SGES;
  /** Inline payload (a copy taken at fetch), or null. */
  inline: Uint8Array | null = null;
  /** Total message length in bytes. */
  length = 0;
  remoteAddr = 0;
  rkey = 0;
  swapAdd = 0n;
  compare = 0n;
  /** FLUSH: the FETH (placement type | selectivity << 4) and the RETH DMA length. */
  feth = 0;
  flushLength = 0;
  /** BIND_MW: what to bind (the bind segment). LOCAL_INV: the rkey is `imm`. */
  bind: BindRequest | null = null;
  /** XRC_SEND: the remote XRC SRQ every packet's XRCETH names. */
  xrcSrqn = 0;
  /** UD only. */
  remoteQpn = 0;
  qkey = 0;
  av: AddressVector | null = null;
  /** PSN of the first packet and how many PSNs the message uses. */
  firstPsn = 0;
  npsn = 0;
  /** Single-SGE messages: the host alignment mod 8 of the first byte (dma.ts gatherAlign), once known; -2 before. */
  hostAlign = -2;
  /** Packets transmitted so far (the next one to send is index `sentPkts`). */
  sentPkts = 0;
  /** Its first packet has been sent (a rewind to 0 keeps it begun): SQD finishes begun messages only (sq-drain.ts). */
  started = false;
  /** READ: bytes of response received so far. */
  readDone = 0;
  status = WqeStatus.PENDING;
  /**
   * READ/ATOMIC: holds one of the max_rd_atomic slots, from its first
   * transmission until it retires. A retry keeps it: the responder still
   * holds the resource that answers it (rxe returns req.rd_atomic only on
   * completion), so no later READ/ATOMIC may push that resource out.
   */
  rdSlot = false;

  /** Every field back to its initial value (a pooled WQE's reuse); the SGE list is returned for refilling. */
  reset(): readonly Sge[] {
    const sges = this.sges;
    this.counter = 0;
    this.opcode = 0;
    this.flags = 0;
    this.wrIdLo = 0;
    this.wrIdHi = 0;
    this.imm = 0;
    this.sges = NO_SGES;
    this.inline = null;
    this.length = 0;
    this.remoteAddr = 0;
    this.rkey = 0;
    this.swapAdd = 0n;
    this.compare = 0n;
    this.feth = 0;
    this.flushLength = 0;
    this.bind = null;
    this.xrcSrqn = 0;
    this.remoteQpn = 0;
    this.qkey = 0;
    this.av = null;
    this.firstPsn = 0;
    this.npsn = 0;
    this.hostAlign = -2;
    this.sentPkts = 0;
    this.started = false;
    this.readDone = 0;
    this.status = WqeStatus.PENDING;
    this.rdSlot = false;
    return sges;
  }

  get signaled(): boolean {
    return (this.flags & IBV_SEND_SIGNALED) !== 0;
  }
  get solicited(): boolean {
    return (this.flags & IBV_SEND_SOLICITED) !== 0;
  }
  get fenced(): boolean {
    return (this.flags & IBV_SEND_FENCE) !== 0;
  }
}

export function readAv(dv: DataView, off: number): AddressVector {
  // DGID and DMAC are adjacent: one copy of their 22 bytes, two views of it.
  const b = new Uint8Array(dv.buffer, dv.byteOffset + off, 0x16).slice();
  return {
    dgid: b.subarray(0, 16),
    dmac: b.subarray(0x10, 0x16),
    flowLabel: (dv.getUint32(off + 0x18, true) & 0xfffff) >>> 0,
    sl: dv.getUint8(off + 0x1a) >>> 4,
    trafficClass: dv.getUint8(off + 0x1b),
    hopLimit: dv.getUint8(off + 0x1c),
    sgidIndex: dv.getUint8(off + 0x1d),
    portNum: dv.getUint8(off + 0x1e),
    dlid: dv.getUint16(off + 0x16, true),
    srcPathBits: dv.getUint8(off + 0x20) & 0x7f,
    isGlobal: dv.getUint8(off + 0x20) >>> 7 === 1,
  };
}

const C = SEND_CTRL.f;
const R = RADDR_SEG.f;
const A = ATOMIC_SEG.f;
const U = UD_SEG.f;
const D = DATA_SEG.f;
const B = BIND_SEG.f;

/**
 * Reads the send WQE at offset `o` of host memory (`mem.u8`; an offset, not
 * the address, which would be a boxed double per call). Returns null if
 * the segment count is impossible.
 */
export function readSendWqe(mem: HostMemory, o: number, qpType: number, counter: number, maxSge: number, maxInline: number): SendWqe | null {
  const dv = mem.dv;
  const pooled = wqePool.pop();
  const w = pooled ?? new SendWqe();
  const oldSges = pooled ? pooled.reset() : NO_SGES;
  w.counter = counter;
  w.wrIdLo = dv.getUint32(o, true);
  w.wrIdHi = dv.getUint32(o + 4, true);
  w.opcode = C.opcode.get(dv, o);
  w.flags = C.sendFlags.get(dv, o);
  w.imm = C.immData.get(dv, o);
  w.xrcSrqn = C.xrcSrqn.get(dv, o);
  const dataOff = o + (qpType === IBV_QPT_UD ? WqeOff.UD_DATA : WqeOff.RC_DATA);
  if (qpType === IBV_QPT_UD) {
    w.remoteQpn = U.remoteQpn.get(dv, o + WqeOff.UD);
    w.qkey = U.qkey.get(dv, o + WqeOff.UD);
    w.av = readAv(dv, o + WqeOff.UD + 0x08);
  } else {
    w.remoteAddr = R.remoteAddr.getNum(dv, o + WqeOff.RADDR);
    w.rkey = R.rkey.get(dv, o + WqeOff.RADDR);
    // 64-bit operands only for the atomics that carry them (a BigInt each: not for every WRITE).
    if (w.opcode === IBV_WR_ATOMIC_CMP_AND_SWP || w.opcode === IBV_WR_ATOMIC_FETCH_AND_ADD) {
      w.swapAdd = A.swapAdd.get(dv, o + WqeOff.ATOMIC);
      w.compare = A.compare.get(dv, o + WqeOff.ATOMIC);
    }
    if (w.opcode === IBV_WR_ATOMIC_WRITE) {
      // The 8 bytes to write are the message's payload.
      w.inline = mem.u8.slice(o + WqeOff.ATOMIC, o + WqeOff.ATOMIC + 8);
      w.length = 8;
      return w;
    }
    if (w.opcode === IBV_WR_BIND_MW) {
      const b = o + WqeOff.RADDR;
      w.bind = {
        addr: B.addr.getNum(dv, b),
        length: B.length.getNum(dv, b),
        mwKey: B.mwKey.get(dv, b) >>> 0,
        newKey: B.newKey.get(dv, b) >>> 0,
        mrLkey: B.mrLkey.get(dv, b) >>> 0,
        access: B.access.get(dv, b) >>> 0,
      };
      return w;
    }
    if (w.opcode === IBV_WR_LOCAL_INV) return w;
    if (w.opcode === IBV_WR_FLUSH) {
      w.feth = (C.flushType.get(dv, o) & 0xf) | ((C.flushLevel.get(dv, o) & 3) << 4);
      w.flushLength = R.length.get(dv, o + WqeOff.RADDR) >>> 0;
      return w;
    }
  }
  if (w.flags & IBV_SEND_INLINE) {
    const n = INLINE_HDR.f.byteCount.get(dv, dataOff);
    if (n > maxInline) return null;
    w.inline = mem.u8.slice(dataOff + WqeOff.INLINE_BYTES, dataOff + WqeOff.INLINE_BYTES + n);
    w.length = n;
  } else {
    const n = C.numDataSegs.get(dv, o);
    if (n > maxSge) return null;
    w.sges = readSges(dv, dataOff, n, oldSges);
    w.length = sgeBytes(w.sges);
  }
  return w;
}

export class RecvWqe {
  wrIdLo = 0;
  wrIdHi = 0;
  sges: readonly Sge[] = NO_SGES;
  length = 0;
  /** RQ / SRQ counter for the CQE. */
  counter = 0;
}

/** Reads a receive (RQ or SRQ) WQE; the header differs only in fields the device ignores here. */
export function readRecvWqe(mem: HostMemory, addr: number, counter: number, maxSge: number): RecvWqe | null {
  const dv = mem.dv;
  const o = addr - mem.baseNum;
  const w = new RecvWqe();
  w.counter = counter;
  w.wrIdLo = dv.getUint32(o, true);
  w.wrIdHi = dv.getUint32(o + 4, true);
  const n = RECV_WQE_HDR.f.numDataSegs.get(dv, o);
  if (n > maxSge) return null;
  w.sges = readSges(dv, o + WqeOff.RECV_DATA, n);
  w.length = sgeBytes(w.sges);
  return w;
}
