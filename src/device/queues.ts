/**
 * Device-side work queue consumption: where the next WQE of an SQ, RQ or
 * SRQ is, and how to retire it. Each queue has ONE consuming stage (the
 * requester for an SQ, the responder for an RQ / SRQ), so the consumer
 * counters in the contexts are plain [dev] fields; the producer counter is
 * read from the doorbell record with Atomics.load, which orders the WQE
 * bytes before it. All functions are allocation-free and return -1 for
 * "nothing posted".
 *
 * Peek, then advance: a stage peeks, checks and uses the WQE, and advances
 * only when it has taken it (e.g. the responder takes a receive WQE at the
 * first packet of a SEND).
 */
import { IBV_EVENT_SRQ_LIMIT_REACHED } from './abi/constants.js';
import { CtxOff, QPC, SRQC, SrqFlag, type ContextTables } from './contexts.js';
import type { HostMemory } from './host-memory.js';
import { loadDbrec, QP_DBREC, SRQ_DBREC } from './registers.js';
import { ringEntryAddr, SRQ_WQE_HDR } from './wqe.js';

const SQ_PI = QP_DBREC.f.sqPi.decl.offset;
const RQ_PI = QP_DBREC.f.rqPi.decl.offset;
const SRQ_PI = SRQ_DBREC.f.pi.decl.offset;

/** Send WQEs posted and not yet taken by the device. */
export function sqPending(mem: HostMemory, t: ContextTables, qp: number): number {
  const dv = t.dv;
  return (loadDbrec(mem, QPC.f.dbrecAddr.getNum(dv, qp) + SQ_PI) - QPC.f.sqConsumed.get(dv, qp)) >>> 0;
}

/** Host address of the next send WQE (counter sqConsumed), or -1 if none is posted. */
export function sqPeek(mem: HostMemory, t: ContextTables, qp: number): number {
  if (sqPending(mem, t, qp) === 0) return -1;
  return sqNextAddr(t, qp);
}

/** Host address of the send WQE at counter sqConsumed, posted or not: for a consumer that counted sqPending itself. */
export function sqNextAddr(t: ContextTables, qp: number): number {
  const dv = t.dv;
  return ringEntryAddr(QPC.f.sqRingAddr.getNum(dv, qp), QPC.f.sqConsumed.get(dv, qp), QPC.f.sqLogSize.get(dv, qp), QPC.f.sqLogStride.get(dv, qp));
}

/**
 * Offset into host memory (`mem.u8`) of the send WQE at counter sqConsumed,
 * given the ring's offset (`sqRingOff`, the same for the QP's life): a
 * consumer taking several WQEs reads the ring's geometry once, and an
 * offset is a small integer where an address is a boxed double.
 */
export function sqNextOff(t: ContextTables, qp: number, ringOff: number, logSize: number, logStride: number): number {
  return ringEntryAddr(ringOff, QPC.f.sqConsumed.get(t.dv, qp), logSize, logStride);
}

/** Offset into host memory of the QP's send ring (sqNextOff's `ringOff`). */
export function sqRingOff(mem: HostMemory, t: ContextTables, qp: number): number {
  return QPC.f.sqRingAddr.getNum(t.dv, qp) - mem.baseNum;
}

/** Retire the send WQE sqPeek returned. Returns its counter (for the CQE's wqeCounter). */
export function sqAdvance(t: ContextTables, qp: number): number {
  const n = QPC.f.sqConsumed.get(t.dv, qp);
  QPC.f.sqConsumed.set(t.dv, qp, (n + 1) >>> 0);
  return n;
}

/** Host address of the next receive WQE of the QP's own RQ, or -1. */
export function rqPeek(mem: HostMemory, t: ContextTables, qp: number): number {
  const dv = t.dv;
  const ci = QPC.f.rqConsumed.get(dv, qp);
  if (loadDbrec(mem, QPC.f.dbrecAddr.getNum(dv, qp) + RQ_PI) === ci) return -1;
  return ringEntryAddr(QPC.f.rqRingAddr.getNum(dv, qp), ci, QPC.f.rqLogSize.get(dv, qp), QPC.f.rqLogStride.get(dv, qp));
}

/** Retire the receive WQE rqPeek returned; returns its counter. */
export function rqAdvance(t: ContextTables, qp: number): number {
  const n = QPC.f.rqConsumed.get(t.dv, qp);
  QPC.f.rqConsumed.set(t.dv, qp, (n + 1) >>> 0);
  return n;
}

/** SRQ WQEs posted and not yet consumed. */
export function srqAvailable(mem: HostMemory, t: ContextTables, srq: number): number {
  const dv = t.dv;
  return (loadDbrec(mem, SRQC.f.dbrecAddr.getNum(dv, srq) + SRQ_PI) - SRQC.f.consumed.get(dv, srq)) >>> 0;
}

/** Host address of the SRQ WQE at the head of the free-list order, or -1 if none is posted. */
export function srqPeek(mem: HostMemory, t: ContextTables, srq: number): number {
  if (srqAvailable(mem, t, srq) === 0) return -1;
  const dv = t.dv;
  return ringEntryAddr(SRQC.f.ringAddr.getNum(dv, srq), SRQC.f.head.get(dv, srq), SRQC.f.logSize.get(dv, srq), SRQC.f.logStride.get(dv, srq));
}

/** Ring index of the SRQ head (what the CQE's wqeCounter must carry). */
export function srqHead(t: ContextTables, srq: number): number {
  return SRQC.f.head.get(t.dv, srq);
}

/**
 * Retire the head SRQ WQE: follow its nextWqeIndex, count it. Returns
 * IBV_EVENT_SRQ_LIMIT_REACHED if the armed limit was just crossed (the
 * limit is then disarmed; raise the event on the async EQ), else -1.
 */
export function srqAdvance(mem: HostMemory, t: ContextTables, srq: number): number {
  const dv = t.dv;
  const head = SRQC.f.head.get(dv, srq);
  const entry = ringEntryAddr(SRQC.f.ringAddr.getNum(dv, srq), head, SRQC.f.logSize.get(dv, srq), SRQC.f.logStride.get(dv, srq));
  SRQC.f.head.set(dv, srq, SRQ_WQE_HDR.f.nextWqeIndex.get(mem.dv, entry - mem.baseNum));
  SRQC.f.consumed.set(dv, srq, (SRQC.f.consumed.get(dv, srq) + 1) >>> 0);
  const w = (srq + CtxOff.SRQ_FLAGS) >> 2;
  const fl = Atomics.load(t.i32, w);
  if (fl & SrqFlag.LIMIT_ARMED && srqAvailable(mem, t, srq) < SRQC.f.limit.get(dv, srq)) {
    if (Atomics.compareExchange(t.i32, w, fl, fl & ~SrqFlag.LIMIT_ARMED) === fl) return IBV_EVENT_SRQ_LIMIT_REACHED;
  }
  return -1;
}
