/**
 * The data path: post_send, post_recv and post_srq_recv (device manual,
 * section 6). One WR at a time:
 *   1. validate it as rxe / mlx5 userspace do (see below);
 *   2. write the whole WQE into the ring slot of the producer counter;
 * then, once per call, for the WRs accepted:
 *   3. Atomics.store the producer counter into the doorbell record;
 *   4. ring the queue's BAR doorbell (send queues only: receive doorbells are
 *      optional wake-ups the device does not need, and mlx5 does not ring them).
 * A WR that fails validation is not written; the call returns its errno with
 * bad_wr.wr = that WR, and the WRs before it stay posted.
 *
 * Post-time errors (the verb's return value): the QP state (sends need RTS or
 * later — RTS, SQD, SQE, ERR as in rxe; receives anything but RESET), an
 * opcode the QP type does not have (UD: SEND / SEND_WITH_IMM; UC: no READ,
 * atomics or SEND_WITH_INV), num_sge above the QP's max, inline data above
 * max_inline_data (or not in host memory: EFAULT), an atomic without exactly
 * one 8-byte SGE or with a misaligned remote address, a UD WR without an AH,
 * a wr_id / address that is not a bigint, an XRC send WR without
 * qp_type.xrc.remote_srqn, any send on an XRC receive QP, any receive on an
 * XRC QP: EINVAL; a full queue: ENOMEM.
 * Key checks are not post-time errors: the device completes such a WQE with
 * an error status, as hardware does.
 *
 * Allocation-free: accessors and offsets are hoisted at module load, the
 * loops touch only the caller's objects and host memory.
 */
import { ringRqDoorbell } from '../../device/registers.js';
import {
  errno,
  IBV_QPS_RESET,
  IBV_QPS_RTS,
  IBV_QPT_XRC_RECV,
  IBV_QPT_XRC_SEND,
  IBV_SEND_INLINE,
  IBV_WR_ATOMIC_CMP_AND_SWP,
  IBV_WR_ATOMIC_FETCH_AND_ADD,
  IBV_WR_ATOMIC_WRITE,
  IBV_WR_BIND_MW,
  IBV_WR_FLUSH,
  IBV_WR_LOCAL_INV,
  IBV_WR_RDMA_READ,
  IBV_WR_RDMA_WRITE,
  IBV_WR_RDMA_WRITE_WITH_IMM,
  IBV_WR_SEND_WITH_IMM,
  IBV_WR_SEND_WITH_INV,
  IBV_FLUSH_GLOBAL,
  IBV_FLUSH_MR,
  IBV_FLUSH_PERSISTENT,
  IBV_FLUSH_RANGE,
} from '../../device/abi/constants.js';
import { HOST_LITTLE_ENDIAN, type HostMemory } from '../../device/host-memory.js';
import { ringSqDoorbell } from '../../device/registers.js';
import { ATOMIC_SEG, BIND_SEG, DATA_SEG, INLINE_HDR, RADDR_SEG, RECV_WQE_HDR, SEND_CTRL, SRQ_WQE_HDR, UD_SEG, WqeOff } from '../../device/wqe.js';
import type { BadWr } from '../verbs/ops.js';
import type { ibv_qp, ibv_recv_wr, ibv_send_wr, ibv_sge, ibv_srq } from '../verbs/types.js';
import { isBits32, isU32, isU64 } from './check.js';
import { ModelAh, ModelMr, ModelMw, ModelQp, ModelSrq } from './objects.js';

// Send WQE: control segment.
const CTRL_WR_ID = SEND_CTRL.f.wrId.decl.offset;
const CTRL_OPCODE = SEND_CTRL.f.opcode;
const CTRL_FLAGS = SEND_CTRL.f.sendFlags;
const CTRL_WQE_INDEX = SEND_CTRL.f.wqeIndex;
const CTRL_IMM = SEND_CTRL.f.immData;
const CTRL_XRC_SRQN = SEND_CTRL.f.xrcSrqn;
const CTRL_NUM_DS = SEND_CTRL.f.numDataSegs;
const CTRL_FLUSH_TYPE = SEND_CTRL.f.flushType;
const CTRL_FLUSH_LEVEL = SEND_CTRL.f.flushLevel;
const RADDR_LENGTH = RADDR_SEG.f.length;
// Remote address and atomic segments (RC / UC).
const RADDR_ADDR = WqeOff.RADDR + RADDR_SEG.f.remoteAddr.decl.offset;
const RADDR_RKEY = RADDR_SEG.f.rkey;
const ATOMIC_SWAP_ADD = WqeOff.ATOMIC + ATOMIC_SEG.f.swapAdd.decl.offset;
const ATOMIC_COMPARE = WqeOff.ATOMIC + ATOMIC_SEG.f.compare.decl.offset;
// Bind segment (BIND_MW), in place of the remote address and atomic segments.
const BIND_ADDR = BIND_SEG.f.addr;
const BIND_LENGTH = BIND_SEG.f.length;
const BIND_MW_KEY = BIND_SEG.f.mwKey;
const BIND_NEW_KEY = BIND_SEG.f.newKey;
const BIND_MR_LKEY = BIND_SEG.f.mrLkey;
const BIND_ACCESS = BIND_SEG.f.access;
// UD segment: the destination QP word (24 bits + reserved byte), Q_Key and the AV.
const UD_QPN_WORD = WqeOff.UD + UD_SEG.f.remoteQpn.decl.offset;
const UD_QKEY = UD_SEG.f.qkey;
const UD_AV = WqeOff.UD + UD_SEG.f.avDgid.decl.offset;
// Data segments and inline data.
const DS_ADDR = DATA_SEG.f.addr.decl.offset;
const DS_LENGTH = DATA_SEG.f.length;
const DS_LKEY = DATA_SEG.f.lkey;
const DS_SIZE = DATA_SEG.size;
const INLINE_COUNT = INLINE_HDR.f.byteCount;
// Receive and SRQ WQEs.
const RECV_WR_ID = RECV_WQE_HDR.f.wrId.decl.offset;
const RECV_NUM_DS = RECV_WQE_HDR.f.numDataSegs;
const SRQ_WR_ID = SRQ_WQE_HDR.f.wrId.decl.offset;
const SRQ_NUM_DS = SRQ_WQE_HDR.f.numDataSegs;
const SRQ_NEXT = SRQ_WQE_HDR.f.nextWqeIndex;

const SEND_FLAGS_MASK = 0x1f; // FENCE | SIGNALED | SOLICITED | INLINE | IP_CSUM
/** Splits a bigint address into two 32-bit halves (inline data sources). */
const SCRATCH = new DataView(new ArrayBuffer(8));

/** A 64-bit little-endian field: one BigUint64Array store when aligned (~3 ns), else the DataView's (~12 ns). */
function put64(mem: HostMemory, off: number, v: bigint): void {
  if (HOST_LITTLE_ENDIAN && (off & 7) === 0) mem.u64[off / 8] = v;
  else mem.dv.setBigUint64(off, v, true);
}

/** An SGE whose fields fit their C types (uint64_t addr, uint32_t length and lkey). */
function sgeOk(sge: ibv_sge | null | undefined): boolean {
  return typeof sge === 'object' && sge !== null && isU64(sge.addr) && isU32(sge.length) && isU32(sge.lkey);
}

/** Write `n` data segments from `sgl` at `off`; false if an SGE is malformed. */
function writeDataSegs(mem: HostMemory, off: number, sgl: ibv_sge[], n: number): boolean {
  const dv = mem.dv;
  for (let i = 0; i < n; i++) {
    const sge = sgl[i]!;
    if (!sgeOk(sge)) return false;
    put64(mem, off + DS_ADDR, sge.addr);
    DS_LENGTH.set(dv, off, sge.length);
    DS_LKEY.set(dv, off, sge.lkey);
    off += DS_SIZE;
  }
  return true;
}

/**
 * Validate and write one send WR into slot `off` of the SQ. Returns 0 or
 * the errno of the WR.
 */
function writeSendWqe(qp: ModelQp, wr: ibv_send_wr, off: number, pi: number): number {
  const mem = qp.context.mem;
  const dv = mem.dv;
  if (typeof wr !== 'object') return errno.EINVAL;
  const op = wr.opcode;
  if (typeof op !== 'number' || (op & 15) !== op || ((qp.opMask >>> op) & 1) === 0) return errno.EINVAL;
  const ns = wr.num_sge;
  if (typeof ns !== 'number' || (ns & 0xff) !== ns || ns > qp.maxSendSge) return errno.EINVAL;
  const sgl = wr.sg_list;
  if (ns > 0 && (!Array.isArray(sgl) || sgl.length < ns)) return errno.EINVAL;
  if (!isU64(wr.wr_id)) return errno.EINVAL;
  const sf = wr.send_flags;
  if (sf !== undefined && !isU32(sf)) return errno.EINVAL;
  const flags = sf & SEND_FLAGS_MASK;
  const isAtomic = op === IBV_WR_ATOMIC_CMP_AND_SWP || op === IBV_WR_ATOMIC_FETCH_AND_ADD;
  const inline =
    (flags & IBV_SEND_INLINE) !== 0 &&
    op !== IBV_WR_RDMA_READ &&
    !isAtomic &&
    op !== IBV_WR_LOCAL_INV &&
    op !== IBV_WR_BIND_MW &&
    op !== IBV_WR_ATOMIC_WRITE &&
    op !== IBV_WR_FLUSH;

  // Control segment.
  put64(mem, off + CTRL_WR_ID, wr.wr_id);
  CTRL_OPCODE.set(dv, off, op);
  CTRL_FLAGS.set(dv, off, inline ? flags : flags & ~IBV_SEND_INLINE);
  CTRL_WQE_INDEX.set(dv, off, pi & 0xffff);
  const imm =
    op === IBV_WR_SEND_WITH_IMM || op === IBV_WR_RDMA_WRITE_WITH_IMM
      ? wr.imm_data
      : op === IBV_WR_SEND_WITH_INV || op === IBV_WR_LOCAL_INV
        ? wr.invalidate_rkey
        : 0;
  if (imm !== undefined && !isBits32(imm)) return errno.EINVAL;
  CTRL_IMM.set(dv, off, imm === undefined ? 0 : imm >>> 0);
  if (qp.qp_type === IBV_QPT_XRC_SEND) {
    // Every XRC request names the remote XRC SRQ (qp_type.xrc.remote_srqn, or ibv_wr_set_xrc_srqn); 24 bits, as mlx5 writes it.
    const srqn = typeof wr.qp_type === 'object' && wr.qp_type !== null ? wr.qp_type.xrc?.remote_srqn : undefined;
    if (!isU32(srqn)) return errno.EINVAL;
    CTRL_XRC_SRQN.set(dv, off, srqn & 0xffffff);
  }

  // Address segments.
  if (qp.sqDataOff === WqeOff.UD_DATA) {
    const ud = typeof wr.wr === 'object' && wr.wr !== null ? wr.wr.ud : undefined;
    const ah = typeof ud === 'object' && ud !== null ? ud.ah : undefined;
    if (!(ah instanceof ModelAh) || ah.destroyed || ah.context !== qp.context) return errno.EINVAL;
    // A QPN of more than 24 bits is masked, as mlx5 writes it; NaN or a bigint is refused.
    if (!isU32(ud!.remote_qpn) || !isU32(ud!.remote_qkey)) return errno.EINVAL;
    dv.setUint32(off + UD_QPN_WORD, ud!.remote_qpn & 0xffffff, true);
    UD_QKEY.set(dv, off + WqeOff.UD, ud!.remote_qkey);
    mem.u8.set(ah.av, off + UD_AV);
  } else if (isAtomic) {
    const at = typeof wr.wr === 'object' && wr.wr !== null ? wr.wr.atomic : undefined;
    if (typeof at !== 'object' || at === null || !isU64(at.remote_addr) || !isU64(at.compare_add) || !isU32(at.rkey)) return errno.EINVAL;
    if (ns !== 1 || !sgeOk(sgl![0]) || sgl![0]!.length !== 8) return errno.EINVAL;
    dv.setBigUint64(off + RADDR_ADDR, at.remote_addr, true);
    if ((dv.getUint8(off + RADDR_ADDR) & 7) !== 0) return errno.EINVAL;
    RADDR_RKEY.set(dv, off + WqeOff.RADDR, at.rkey);
    if (op === IBV_WR_ATOMIC_CMP_AND_SWP) {
      if (!isU64(at.swap)) return errno.EINVAL;
      dv.setBigUint64(off + ATOMIC_SWAP_ADD, at.swap, true);
      dv.setBigUint64(off + ATOMIC_COMPARE, at.compare_add, true);
    } else {
      dv.setBigUint64(off + ATOMIC_SWAP_ADD, at.compare_add, true);
      dv.setBigUint64(off + ATOMIC_COMPARE, 0n, true);
    }
  } else if (op === IBV_WR_ATOMIC_WRITE || op === IBV_WR_FLUSH) {
    return writeAtomicWriteOrFlush(qp, wr, off, op === IBV_WR_FLUSH);
  } else if (op === IBV_WR_BIND_MW) {
    return writeBind(qp, wr, off);
  } else if (op === IBV_WR_LOCAL_INV) {
    CTRL_NUM_DS.set(dv, off, 0);
    return 0;
  } else if (op === IBV_WR_RDMA_WRITE || op === IBV_WR_RDMA_WRITE_WITH_IMM || op === IBV_WR_RDMA_READ) {
    const rdma = typeof wr.wr === 'object' && wr.wr !== null ? wr.wr.rdma : undefined;
    if (typeof rdma !== 'object' || rdma === null || !isU64(rdma.remote_addr) || !isU32(rdma.rkey)) return errno.EINVAL;
    put64(mem, off + RADDR_ADDR, rdma.remote_addr);
    RADDR_RKEY.set(dv, off + WqeOff.RADDR, rdma.rkey);
  }

  // Data: gather list, or the bytes themselves.
  const data = off + qp.sqDataOff;
  if (!inline) {
    CTRL_NUM_DS.set(dv, off, ns);
    return ns === 0 || writeDataSegs(mem, data, sgl!, ns) ? 0 : errno.EINVAL;
  }
  CTRL_NUM_DS.set(dv, off, 0);
  let total = 0;
  for (let i = 0; i < ns; i++) {
    if (!sgeOk(sgl![i])) return errno.EINVAL;
    total += sgl![i]!.length;
  }
  if (total > qp.maxInline) return errno.EINVAL;
  INLINE_COUNT.set(dv, data, total);
  const u8 = mem.u8;
  let dst = data + WqeOff.INLINE_BYTES;
  for (let i = 0; i < ns; i++) {
    const sge = sgl![i]!;
    const len = sge.length;
    // The address as a number without Number(bigint), which boxes a heap number.
    SCRATCH.setBigUint64(0, sge.addr, true);
    const src = SCRATCH.getUint32(4, true) * 4294967296 + SCRATCH.getUint32(0, true) - mem.baseNum;
    if (!(src >= 0 && src + len <= mem.size)) return errno.EFAULT;
    u8.copyWithin(dst, src, src + len);
    dst += len;
  }
  return 0;
}

/**
 * IBV_WR_ATOMIC_WRITE (IBA 1.5): 8 bytes, from `wr.atomic_wire` (the new
 * post API) or the WR's one 8-byte SGE (as rxe takes them from ibv_post_send),
 * to an 8-byte aligned remote address; they travel in the WQE's atomic
 * segment. IBV_WR_FLUSH: `wr.flush` = { len, type, level } to
 * `wr.wr.rdma`. No data segments for either.
 */
function writeAtomicWriteOrFlush(qp: ModelQp, wr: ibv_send_wr, off: number, flush: boolean): number {
  const mem = qp.context.mem;
  const dv = mem.dv;
  const rdma = typeof wr.wr === 'object' && wr.wr !== null ? wr.wr.rdma : undefined;
  if (typeof rdma !== 'object' || rdma === null || !isU64(rdma.remote_addr) || !isU32(rdma.rkey)) return errno.EINVAL;
  dv.setBigUint64(off + RADDR_ADDR, rdma.remote_addr, true);
  RADDR_RKEY.set(dv, off + WqeOff.RADDR, rdma.rkey);
  CTRL_NUM_DS.set(dv, off, 0);
  if (flush) {
    const f = wr.flush;
    if (typeof f !== 'object' || f === null || !isU32(f.len) || !isU32(f.type) || !isU32(f.level)) return errno.EINVAL;
    // Placement: global visibility, persistence or both (FETH bits 3..0); selectivity: a range or the whole MR.
    if (f.type === 0 || f.type > (IBV_FLUSH_GLOBAL | IBV_FLUSH_PERSISTENT) || (f.level !== IBV_FLUSH_RANGE && f.level !== IBV_FLUSH_MR)) return errno.EINVAL;
    RADDR_LENGTH.set(dv, off + WqeOff.RADDR, f.len);
    CTRL_FLUSH_TYPE.set(dv, off, f.type);
    CTRL_FLUSH_LEVEL.set(dv, off, f.level);
    return 0;
  }
  if ((dv.getUint8(off + RADDR_ADDR) & 7) !== 0) return errno.EINVAL;
  RADDR_LENGTH.set(dv, off + WqeOff.RADDR, 8);
  const wire = wr.atomic_wire;
  if (wire !== undefined) {
    if (!(wire instanceof Uint8Array) || wire.length !== 8) return errno.EINVAL;
    mem.u8.set(wire, off + ATOMIC_SWAP_ADD);
    return 0;
  }
  const sgl = wr.sg_list;
  if (wr.num_sge !== 1 || !Array.isArray(sgl) || !sgeOk(sgl[0]) || sgl[0]!.length !== 8) return errno.EINVAL;
  SCRATCH.setBigUint64(0, sgl[0]!.addr, true);
  const src = SCRATCH.getUint32(4, true) * 4294967296 + SCRATCH.getUint32(0, true) - mem.baseNum;
  if (!(src >= 0 && src + 8 <= mem.size)) return errno.EFAULT;
  mem.u8.copyWithin(off + ATOMIC_SWAP_ADD, src, src + 8);
  return 0;
}

/**
 * IBV_WR_BIND_MW: `wr.bind_mw` = { mw, rkey (the key after the bind), bind_info
 * { mr, addr, length, mw_access_flags } }, into the bind segment. The window
 * and the MR must be live objects of the QP's context (an MR may be null for
 * a zero-length type 1 unbind); every rule of the bind itself is the
 * device's (a refused bind completes with IBV_WC_MW_BIND_ERR).
 */
function writeBind(qp: ModelQp, wr: ibv_send_wr, off: number): number {
  const dv = qp.context.mem.dv;
  const bm = wr.bind_mw;
  if (typeof bm !== 'object' || bm === null || !(bm.mw instanceof ModelMw) || bm.mw.destroyed || bm.mw.context !== qp.context) return errno.EINVAL;
  const b = bm.bind_info;
  if (typeof b !== 'object' || b === null || !isU32(bm.rkey) || !isU64(b.addr) || !isU64(b.length) || !isU32(b.mw_access_flags)) return errno.EINVAL;
  const mr = b.mr;
  if (mr !== null && mr !== undefined && (!(mr instanceof ModelMr) || mr.destroyed || mr.context !== qp.context)) return errno.EINVAL;
  const seg = off + WqeOff.RADDR;
  BIND_ADDR.set(dv, seg, b.addr);
  BIND_LENGTH.set(dv, seg, b.length);
  BIND_MW_KEY.set(dv, seg, bm.mw.rkey);
  BIND_NEW_KEY.set(dv, seg, bm.rkey);
  BIND_MR_LKEY.set(dv, seg, mr ? mr.lkey : 0);
  BIND_ACCESS.set(dv, seg, b.mw_access_flags);
  CTRL_NUM_DS.set(dv, off, 0);
  return 0;
}

export function model_post_send(ibqp: ibv_qp, wr: ibv_send_wr, bad_wr?: BadWr<ibv_send_wr>): number {
  return postSend(ibqp, wr, bad_wr, false);
}

/**
 * The ibv_wr_complete of the new post API: the whole list or nothing. The
 * WQEs are written as post_send writes them, but the producer counter is
 * published only when every one was accepted (a WQE beyond the record's
 * counter is invisible to the device, as in mlx5's rollback).
 */
export function model_post_send_all(ibqp: ibv_qp, wr: ibv_send_wr, bad_wr?: BadWr<ibv_send_wr>): number {
  return postSend(ibqp, wr, bad_wr, true);
}

function postSend(ibqp: ibv_qp, wr: ibv_send_wr, bad_wr: BadWr<ibv_send_wr> | undefined, allOrNothing: boolean): number {
  const qp = ibqp as ModelQp;
  if (bad_wr) bad_wr.wr = null;
  if (!(qp instanceof ModelQp)) return errno.EINVAL;
  let rc = 0;
  let cur: ibv_send_wr | null = wr;
  let pi = qp.sqPi;
  if (typeof wr !== 'object' || wr === null) {
    // C passes a WR by pointer: NULL is no list at all, not an empty one.
    rc = errno.EINVAL;
  } else if (qp.state < IBV_QPS_RTS || qp.destroyed || qp.context.closed || qp.qp_type === IBV_QPT_XRC_RECV) {
    // An XRC receive QP has no send queue.
    rc = errno.EINVAL;
  } else {
    const ringOff = qp.sqRingOff;
    const logStride = qp.sqLogStride;
    // `next` ends the list at null (or left out); anything else must be a WR.
    while (cur !== null && cur !== undefined) {
      if ((pi - qp.sqCi) >>> 0 >= qp.sqSize) {
        rc = errno.ENOMEM;
        break;
      }
      rc = writeSendWqe(qp, cur, ringOff + ((pi & qp.sqMask) << logStride), pi);
      if (rc !== 0) break;
      pi = (pi + 1) >>> 0;
      cur = cur.next;
    }
  }
  if (rc !== 0 && allOrNothing) pi = qp.sqPi;
  if (pi !== qp.sqPi) {
    const ctx = qp.context;
    qp.sqPi = pi;
    Atomics.store(ctx.mem.i32, qp.sqPiWord, pi | 0);
    ringSqDoorbell(ctx.bar, qp.qp_num, pi | 0);
    (ctx.handle.serviceSoon ?? ctx.handle.serviceInline)?.();
  }
  if (rc !== 0 && bad_wr) bad_wr.wr = cur;
  return rc;
}

/** Validate and write one receive WR (RQ layout) at `off`. */
function writeRecvWqe(mem: HostMemory, wr: ibv_recv_wr, off: number, maxSge: number): number {
  const dv = mem.dv;
  if (typeof wr !== 'object') return errno.EINVAL;
  const ns = wr.num_sge;
  if (typeof ns !== 'number' || (ns & 0xff) !== ns || ns > maxSge) return errno.EINVAL;
  const sgl = wr.sg_list;
  if (ns > 0 && (!Array.isArray(sgl) || sgl.length < ns)) return errno.EINVAL;
  if (!isU64(wr.wr_id)) return errno.EINVAL;
  put64(mem, off + RECV_WR_ID, wr.wr_id);
  RECV_NUM_DS.set(dv, off, ns);
  return ns === 0 || writeDataSegs(mem, off + WqeOff.RECV_DATA, sgl!, ns) ? 0 : errno.EINVAL;
}

export function model_post_recv(ibqp: ibv_qp, wr: ibv_recv_wr, bad_wr?: BadWr<ibv_recv_wr>): number {
  const qp = ibqp as ModelQp;
  if (bad_wr) bad_wr.wr = null;
  if (!(qp instanceof ModelQp)) return errno.EINVAL;
  let rc = 0;
  let cur: ibv_recv_wr | null = wr;
  let pi = qp.rqPi;
  // XRC QPs have no receive queue: an XRC send QP receives nothing, an XRC receive QP's receives are its requests' XRC SRQs'.
  const noRq = qp.srq !== null || qp.qp_type === IBV_QPT_XRC_SEND || qp.qp_type === IBV_QPT_XRC_RECV;
  if (typeof wr !== 'object' || wr === null || qp.state === IBV_QPS_RESET || qp.destroyed || qp.context.closed || noRq) {
    rc = errno.EINVAL;
  } else {
    const mem = qp.context.mem;
    // `next` ends the list at null (or left out); anything else must be a WR.
    while (cur !== null && cur !== undefined) {
      if ((pi - qp.rqCi) >>> 0 >= qp.rqSize) {
        rc = errno.ENOMEM;
        break;
      }
      rc = writeRecvWqe(mem, cur, qp.rqRingOff + ((pi & qp.rqMask) << qp.rqLogStride), qp.maxRecvSge);
      if (rc !== 0) break;
      pi = (pi + 1) >>> 0;
      cur = cur.next;
    }
  }
  if (pi !== qp.rqPi) {
    qp.rqPi = pi;
    Atomics.store(qp.context.mem.i32, qp.rqPiWord, pi | 0);
    // The wake-up is how a QP the device moved to ERR learns to flush these.
    ringRqDoorbell(qp.context.bar, qp.qp_num, pi | 0);
    (qp.context.handle.serviceSoon ?? qp.context.handle.serviceInline)?.();
  }
  if (rc !== 0 && bad_wr) bad_wr.wr = cur;
  return rc;
}

export function model_post_srq_recv(ibsrq: ibv_srq, wr: ibv_recv_wr, bad_wr?: BadWr<ibv_recv_wr>): number {
  const srq = ibsrq as ModelSrq;
  if (bad_wr) bad_wr.wr = null;
  if (!(srq instanceof ModelSrq)) return errno.EINVAL;
  let rc = 0;
  let cur: ibv_recv_wr | null = wr;
  const start = srq.pi;
  if (typeof wr !== 'object' || wr === null || srq.destroyed || srq.context.closed) {
    rc = errno.EINVAL;
  } else {
    const dv = srq.context.mem.dv;
    // `next` ends the list at null (or left out); anything else must be a WR.
    while (cur !== null && cur !== undefined) {
      // mlx5's order: a malformed WR is EINVAL even when the SRQ is full.
      if (typeof cur !== 'object') {
        rc = errno.EINVAL;
        break;
      }
      const ns = cur.num_sge;
      const sgl = cur.sg_list;
      if (typeof ns !== 'number' || (ns & 0xff) !== ns || ns > srq.maxSge || (ns > 0 && (!Array.isArray(sgl) || sgl.length < ns)) || !isU64(cur.wr_id)) {
        rc = errno.EINVAL;
        break;
      }
      if (srq.head === srq.tail) {
        rc = errno.ENOMEM;
        break;
      }
      const off = srq.ringOff + (srq.head << srq.logStride);
      // nextWqeIndex (the free list) is left as it is.
      dv.setBigUint64(off + SRQ_WR_ID, cur.wr_id, true);
      SRQ_NUM_DS.set(dv, off, ns);
      if (ns > 0 && !writeDataSegs(srq.context.mem, off + WqeOff.RECV_DATA, sgl!, ns)) {
        rc = errno.EINVAL;
        break;
      }
      srq.head = SRQ_NEXT.get(dv, off);
      srq.pi = (srq.pi + 1) >>> 0;
      cur = cur.next;
    }
  }
  if (srq.pi !== start) Atomics.store(srq.context.mem.i32, srq.piWord, srq.pi | 0);
  if (rc !== 0 && bad_wr) bad_wr.wr = cur;
  return rc;
}
