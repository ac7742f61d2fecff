/**
 * The requester: fetches send WQEs, cuts messages into MTU-sized packets
 * (gathering the payload straight into the frame), numbers them with PSNs,
 * and (re)transmits from its window. UC and UD messages complete when their
 * last packet is out; RC messages wait for the completer.
 */
import {
  IBV_QPS_RTS,
  IBV_QPS_SQD,
  IBV_QPT_RC,
  IBV_QPT_UC,
  IBV_QPT_UD,
  IBV_QPT_XRC_SEND,
  IBV_SEND_INLINE,
  IBV_WC_COMP_SWAP,
  IBV_WC_FETCH_ADD,
  IBV_WC_LOC_LEN_ERR,
  IBV_WC_LOC_PROT_ERR,
  IBV_WC_LOC_QP_OP_ERR,
  IBV_WC_RDMA_READ,
  IBV_WC_RDMA_WRITE,
  IBV_WC_SEND,
  IBV_WC_SUCCESS,
  IBV_WR_ATOMIC_CMP_AND_SWP,
  IBV_WR_ATOMIC_FETCH_AND_ADD,
  IBV_WR_RDMA_READ,
  IBV_WR_RDMA_WRITE,
  IBV_WR_RDMA_WRITE_WITH_IMM,
  IBV_WR_SEND,
  IBV_WR_SEND_WITH_IMM,
  IBV_WR_SEND_WITH_INV,
  IBV_ACCESS_LOCAL_WRITE,
  IBV_WC_ATOMIC_WRITE,
  IBV_WC_FLUSH,
  IBV_WR_ATOMIC_WRITE,
  IBV_WR_FLUSH,
  IBV_WC_BIND_MW,
  IBV_WC_LOCAL_INV,
  IBV_WR_BIND_MW,
  IBV_WR_LOCAL_INV,
} from '../device/abi/constants.js';
import { sqDrainCheck } from './sq-drain.js';
import { MrCheck, QPC } from '../device/contexts.js';
import { Ctr } from '../device/counters.js';
import { sqAdvance, sqNextOff, sqPending, sqRingOff } from '../device/queues.js';
import { SEND_CTRL } from '../device/wqe.js';
import { Op } from '../wire/index.js';
import { txPriority } from './cc-params.js';
import type { NicCore } from './core.js';
import { checkSges, gather, gatherAlign, gatherSource } from './dma.js';
import { executeLocalOp, isLocalOp } from './local-ops.js';
import type { PathTemplate } from './packet-builder.js';
import { bswap32, connectedPath, udPath } from './paths.js';
import { psnAdd, psnCompare } from './psn.js';
import { paceRate, type QpCtx } from './qp-ctx.js';
import { localAckTimeoutNs } from './timer-tables.js';
import { readSendWqe, releaseSendWqe, SendWqe, WqeStatus } from './work-requests.js';

/** Packets between two AckReq bits on a long message (rxe: RXE_MAX_PKT_PER_ACK). */
const MAX_PKT_PER_ACK = 64;

/** The last PSN of `w` (a READ's request covers its responses' PSNs). */
export function lastPsn(w: SendWqe): number {
  return psnAdd(w.firstPsn, w.npsn - 1);
}

/** Requests the responder answers with a response (READ / atomic ACK) and a responder resource. */
export function isReadOrAtomic(opcode: number): boolean {
  return (
    opcode === IBV_WR_RDMA_READ ||
    opcode === IBV_WR_ATOMIC_CMP_AND_SWP ||
    opcode === IBV_WR_ATOMIC_FETCH_AND_ADD ||
    opcode === IBV_WR_ATOMIC_WRITE ||
    opcode === IBV_WR_FLUSH
  );
}

function opcodeAllowed(qpType: number, op: number): boolean {
  switch (qpType) {
    case IBV_QPT_UD:
      return op === IBV_WR_SEND || op === IBV_WR_SEND_WITH_IMM;
    case IBV_QPT_UC:
      return op === IBV_WR_SEND || op === IBV_WR_SEND_WITH_IMM || op === IBV_WR_RDMA_WRITE || op === IBV_WR_RDMA_WRITE_WITH_IMM;
    case IBV_QPT_RC:
    case IBV_QPT_XRC_SEND:
      // XRC has every RC operation but FLUSH and ATOMIC_WRITE (IBTA Table 38 has no XRC codes for them).
      if (qpType === IBV_QPT_XRC_SEND && (op === IBV_WR_FLUSH || op === IBV_WR_ATOMIC_WRITE)) return false;
      return (
        op === IBV_WR_SEND ||
        op === IBV_WR_SEND_WITH_IMM ||
        op === IBV_WR_SEND_WITH_INV ||
        op === IBV_WR_RDMA_WRITE ||
        op === IBV_WR_RDMA_WRITE_WITH_IMM ||
        op === IBV_WR_RDMA_READ ||
        op === IBV_WR_ATOMIC_CMP_AND_SWP ||
        op === IBV_WR_ATOMIC_FETCH_AND_ADD ||
        op === IBV_WR_ATOMIC_WRITE ||
        op === IBV_WR_FLUSH
      );
    default:
      return false;
  }
}

export function wcOpcodeOf(op: number): number {
  switch (op) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
      return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ:
      return IBV_WC_RDMA_READ;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
      return IBV_WC_COMP_SWAP;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
      return IBV_WC_FETCH_ADD;
    case IBV_WR_ATOMIC_WRITE:
      return IBV_WC_ATOMIC_WRITE;
    case IBV_WR_FLUSH:
      return IBV_WC_FLUSH;
    case IBV_WR_BIND_MW:
      return IBV_WC_BIND_MW;
    case IBV_WR_LOCAL_INV:
      return IBV_WC_LOCAL_INV;
    default:
      return IBV_WC_SEND;
  }
}

/**
 * Writes the send completion of `w` (always for errors, else when signaled)
 * and gives `w` back for reuse: the caller has taken it out of the window
 * (or never put it there) and does not touch it again.
 */
export function completeSend(nic: NicCore, q: QpCtx, w: SendWqe, status: number): void {
  w.status = WqeStatus.DONE;
  if (status === IBV_WC_SUCCESS && !w.signaled && !q.sqSigAll) {
    releaseSendWqe(w);
    return;
  }
  const f = nic.cqe();
  f.wrIdLo = w.wrIdLo;
  f.wrIdHi = w.wrIdHi;
  f.status = status;
  f.opcode = wcOpcodeOf(w.opcode);
  f.byteLen = w.length;
  f.qpNum = q.qpn;
  f.wqeCounter = w.counter & 0xffff;
  releaseSendWqe(w);
  nic.complete(q.sendCqn, f);
}

/** Completes the head WQE with an error and moves the QP to ERR. */
export function failHead(nic: NicCore, q: QpCtx, w: SendWqe, status: number, counter?: Ctr): void {
  if (counter !== undefined) nic.ctr(q.portNum)[counter]!++;
  nic.ctr(q.portNum)[Ctr.REQ_CQE_ERROR]!++;
  const i = q.window.indexOf(w);
  if (i >= 0) {
    q.window.splice(i, 1);
    if (i < q.txIndex) q.txIndex--;
  }
  completeSend(nic, q, w, status);
  nic.fail(q);
}

/** Why the requester cannot start `w` (null: unreadable), or IBV_WC_SUCCESS: checked before anything is sent. */
function localError(t: NicCore['env']['tables'], q: QpCtx, w: SendWqe | null, maxMsg: number): number {
  if (!w || !opcodeAllowed(q.qpType, w.opcode)) return IBV_WC_LOC_QP_OP_ERR;
  const isAtomic = w.opcode === IBV_WR_ATOMIC_CMP_AND_SWP || w.opcode === IBV_WR_ATOMIC_FETCH_AND_ADD;
  if (w.length > maxMsg || (q.qpType === IBV_QPT_UD && w.length > q.mtu) || (isAtomic && w.length !== 8)) return IBV_WC_LOC_LEN_ERR;
  // Local keys are checked before anything is sent: a READ or ATOMIC writes its local buffer.
  const needed = w.opcode === IBV_WR_RDMA_READ || isAtomic ? IBV_ACCESS_LOCAL_WRITE : 0;
  if (!(w.flags & IBV_SEND_INLINE) && checkSges(t, q.pdn, w.sges, needed) !== MrCheck.OK) return IBV_WC_LOC_PROT_ERR;
  return IBV_WC_SUCCESS;
}

/** Takes newly posted send WQEs into the window. */
function fetch(nic: NicCore, q: QpCtx, qp: number): void {
  const { mem, tables: t, caps } = nic.env;
  const limit = Math.max(1, caps.device.maxQpWr);
  if (q.window.length >= limit || q.sqError) return;
  const maxMsg = caps.ports[q.portNum - 1]?.maxMsgSz ?? 0x800000;
  // The doorbell record read once per pass (an Atomics.load): WQEs posted meanwhile ring again.
  const ringOff = sqRingOff(mem, t, qp);
  const logSize = QPC.f.sqLogSize.get(t.dv, qp);
  const logStride = QPC.f.sqLogStride.get(t.dv, qp);
  for (let pending = sqPending(mem, t, qp); pending > 0 && q.window.length < limit && !q.sqError; pending--) {
    const o = sqNextOff(t, qp, ringOff, logSize, logStride);
    if (q.qpType !== IBV_QPT_UD && isLocalOp(SEND_CTRL.f.opcode.get(mem.dv, o))) {
      // A bind or invalidation waits until every WQE before it has completed (local-ops.ts); the completer reschedules the QP.
      if (q.window.length > 0) {
        q.waitsForEmptyWindow = true;
        return;
      }
      const w = readSendWqe(mem, o, q.qpType, sqAdvance(t, qp), q.maxSendSge, q.maxInline)!;
      const status = executeLocalOp(t, w, q.qpn, q.pdn);
      if (status !== IBV_WC_SUCCESS) {
        failHead(nic, q, w, status);
        return;
      }
      completeSend(nic, q, w, IBV_WC_SUCCESS);
      continue;
    }
    // Read at the consumer counter before taking it: a WQE that fails waits there (below).
    const counter = QPC.f.sqConsumed.get(t.dv, qp);
    const read = readSendWqe(mem, o, q.qpType, counter, q.maxSendSge, q.maxInline);
    const status = localError(t, q, read, maxMsg);
    if (status !== IBV_WC_SUCCESS) {
      // A work queue's completions come in the order its WRs were posted
      // (IBTA ch. 10, work completions; rxe's completer ends an errored WQE
      // only at the head): the WRs ahead in the window complete first, so this
      // one waits at the consumer counter until the window is empty.
      if (q.window.length > 0) {
        if (read) releaseSendWqe(read);
        q.waitsForEmptyWindow = true;
        return;
      }
      sqAdvance(t, qp);
      const bad = read ?? Object.assign(new SendWqe(), { counter, wrIdLo: mem.dv.getUint32(o, true), wrIdHi: mem.dv.getUint32(o + 4, true) });
      failHead(nic, q, bad, status);
      return;
    }
    sqAdvance(t, qp);
    const w = read!;
    const isAtomic = w.opcode === IBV_WR_ATOMIC_CMP_AND_SWP || w.opcode === IBV_WR_ATOMIC_FETCH_AND_ADD;
    w.firstPsn = q.sqPsn;
    // One packet without a division when the message fits the MTU (every small message).
    w.npsn = isAtomic || q.qpType === IBV_QPT_UD || w.length <= q.mtu ? 1 : Math.ceil(w.length / q.mtu);
    q.sqPsn = psnAdd(q.sqPsn, w.npsn);
    // Written back, so ibv_query_qp reports it and a later MODIFY_QP that
    // does not set sq_psn (RTS→RTS, →SQD) keeps it.
    QPC.f.sqPsn.set(t.dv, qp, q.sqPsn);
    q.window.push(w);
  }
}

/** The request opcode of packet `i` of `w`; `base` is the transport's (QpCtx.opBase). */
function sendOpcode(w: SendWqe, i: number, base: number): number {
  const only = w.npsn === 1;
  const last = i === w.npsn - 1;
  switch (w.opcode) {
    case IBV_WR_SEND:
      return base + (only ? Op.RC_SEND_ONLY : i === 0 ? Op.RC_SEND_FIRST : last ? Op.RC_SEND_LAST : Op.RC_SEND_MIDDLE);
    case IBV_WR_SEND_WITH_IMM:
      return base + (only ? Op.RC_SEND_ONLY_WITH_IMMEDIATE : i === 0 ? Op.RC_SEND_FIRST : last ? Op.RC_SEND_LAST_WITH_IMMEDIATE : Op.RC_SEND_MIDDLE);
    case IBV_WR_SEND_WITH_INV:
      return base + (only ? Op.RC_SEND_ONLY_WITH_INVALIDATE : i === 0 ? Op.RC_SEND_FIRST : last ? Op.RC_SEND_LAST_WITH_INVALIDATE : Op.RC_SEND_MIDDLE);
    case IBV_WR_RDMA_WRITE:
      return base + (only ? Op.RC_RDMA_WRITE_ONLY : i === 0 ? Op.RC_RDMA_WRITE_FIRST : last ? Op.RC_RDMA_WRITE_LAST : Op.RC_RDMA_WRITE_MIDDLE);
    case IBV_WR_RDMA_WRITE_WITH_IMM:
      return (
        base +
        (only ? Op.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE : i === 0 ? Op.RC_RDMA_WRITE_FIRST : last ? Op.RC_RDMA_WRITE_LAST_WITH_IMMEDIATE : Op.RC_RDMA_WRITE_MIDDLE)
      );
    case IBV_WR_RDMA_READ:
      return base + Op.RC_RDMA_READ_REQUEST;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
      return base + Op.RC_COMPARE_SWAP;
    case IBV_WR_ATOMIC_WRITE:
      return Op.RC_ATOMIC_WRITE;
    case IBV_WR_FLUSH:
      return Op.RC_FLUSH;
    default:
      return base + Op.RC_FETCH_ADD;
  }
}

/** Smaller payloads are gathered into the frame: deferring costs about what copying them does. */
const DEFER_PAYLOAD_MIN = 512;

/**
 * Sends packet `w.sentPkts` of `w` on `path`. Returns the frame's length,
 * or 0 when the packet could not be built (a gather fault: the WQE has
 * been failed).
 */
function sendPacket(nic: NicCore, q: QpCtx, w: SendWqe, path: PathTemplate, portNum: number, spacingPs: number): number {
  const { mem, tables: t } = nic.env;
  const i = w.sentPkts;
  const ud = q.qpType === IBV_QPT_UD;
  let opcode: number;
  let psn = psnAdd(w.firstPsn, i);
  let payloadLen = 0;
  if (ud) opcode = w.opcode === IBV_WR_SEND_WITH_IMM ? Op.UD_SEND_ONLY_WITH_IMMEDIATE : Op.UD_SEND_ONLY;
  else opcode = sendOpcode(w, i, q.opBase);
  const isRead = w.opcode === IBV_WR_RDMA_READ;
  const isAtomic = w.opcode === IBV_WR_ATOMIC_CMP_AND_SWP || w.opcode === IBV_WR_ATOMIC_FETCH_AND_ADD;
  if (!isRead && !isAtomic) payloadLen = Math.min(q.mtu, w.length - i * q.mtu);
  if (isRead) psn = psnAdd(w.firstPsn, Math.floor(w.readDone / q.mtu));
  const lastPkt = isRead || isAtomic || ud || i === w.npsn - 1;
  q.sinceAckReq++;
  // AckReq is the requester's to choose (IBTA 9.7.4.1.1): ask on the last
  // packet of a message someone waits for (signaled, or the last one queued),
  // and every MAX_PKT_PER_ACK packets; a stream of unsignaled messages is
  // acknowledged cumulatively. rxe asks on every message's last packet (profiles.ts ackReqEveryMessage).
  const wanted = lastPkt && (nic.env.profile.ackReqEveryMessage || w.signaled || q.sqSigAll || q.txIndex === q.window.length - 1 || isReadOrAtomic(w.opcode));
  const ackReq = q.reliable && (wanted || q.sinceAckReq >= MAX_PKT_PER_ACK) ? 1 : 0;
  if (ackReq) q.sinceAckReq = 0;
  const se =
    lastPkt &&
    w.solicited &&
    (w.opcode === IBV_WR_SEND || w.opcode === IBV_WR_SEND_WITH_IMM || w.opcode === IBV_WR_SEND_WITH_INV || w.opcode === IBV_WR_RDMA_WRITE_WITH_IMM)
      ? 1
      : 0;
  const destQp = ud ? w.remoteQpn : q.destQpn;
  if (ud) path.setDeth(w.qkey & 0x80000000 ? q.qkey : w.qkey, q.qpn);
  if (isRead) path.setReth(w.remoteAddr + w.readDone, w.rkey, w.length - w.readDone);
  else if (i === 0 && (w.opcode === IBV_WR_RDMA_WRITE || w.opcode === IBV_WR_RDMA_WRITE_WITH_IMM || w.opcode === IBV_WR_ATOMIC_WRITE))
    path.setReth(w.remoteAddr, w.rkey, w.length);
  else if (w.opcode === IBV_WR_FLUSH) path.setReth(w.remoteAddr, w.rkey, w.flushLength);
  if (isAtomic) path.setAtomic(w.remoteAddr, w.rkey, w.swapAdd, w.opcode === IBV_WR_ATOMIC_CMP_AND_SWP ? w.compare : 0n);
  // A payload worth a word-wise copy gets a frame placed at its source's alignment
  // (one MR lookup per message when it has one SGE).
  let align = -1;
  if (payloadLen >= 64 && !w.inline) {
    if (w.sges.length !== 1) align = gatherAlign(mem, t, w.sges, i * q.mtu);
    else {
      if (w.hostAlign === -2) w.hostAlign = gatherAlign(mem, t, w.sges, 0);
      align = w.hostAlign < 0 ? -1 : (w.hostAlign + i * q.mtu) & 7;
    }
  }
  const { frame, payloadOff } = path.begin(opcode, psn, destQp, ackReq, se, payloadLen, align);
  if (w.opcode === IBV_WR_SEND_WITH_IMM || w.opcode === IBV_WR_RDMA_WRITE_WITH_IMM) path.setImm(bswap32(w.imm));
  if (w.opcode === IBV_WR_SEND_WITH_INV) path.setIeth(w.imm);
  if (w.opcode === IBV_WR_FLUSH) path.setFeth(w.feth);
  if (q.qpType === IBV_QPT_XRC_SEND) path.setXrceth(w.xrcSrqn);
  // The simulator may leave a reliable SEND/WRITE payload in host memory for the receiver to read
  // (NicEnv.payloads): the application keeps the buffer until the completion, which comes after delivery.
  const pd = nic.env.payloads;
  const deferAt =
    pd?.enabled && payloadLen >= DEFER_PAYLOAD_MIN && q.reliable && !w.inline && path.leavesIcrcPending
      ? gatherSource(mem, t, q.pdn, w.sges, i * q.mtu, payloadLen)
      : -1;
  if (payloadLen > 0 && deferAt < 0) {
    if (w.inline) frame.set(w.inline.subarray(i * q.mtu, i * q.mtu + payloadLen), payloadOff);
    else if (gather(mem, t, q.pdn, w.sges, i * q.mtu, payloadLen, frame, payloadOff) !== MrCheck.OK) {
      failHead(nic, q, w, IBV_WC_LOC_PROT_ERR);
      return 0;
    }
  }
  const built = path.finish(frame, nic.nextIpId(portNum));
  if (deferAt >= 0) pd!.defer(built, payloadOff, payloadLen, mem.u8, deferAt);
  const len = built.length;
  nic.transmit(portNum, built, q.prio, spacingPs);
  w.sentPkts = isRead || isAtomic ? w.npsn : i + 1;
  const covered = isRead ? lastPsn(w) : psn;
  if (psnCompare(covered, q.sentPsn) > 0) q.sentPsn = covered;
  if (i === 0) nic.ctr(portNum)[Ctr.RDMA_SENDS]!++;
  return len;
}

/** What a frame of `len` bytes (no FCS) takes on the line: padding to 60, FCS, preamble, SFD and IFG. */
function lineBytes(len: number): number {
  return (len < 60 ? 60 : len) + 24;
}

/**
 * Pacing (the rate limiter): after a packet of `len` bytes left at `nowNs`,
 * the next may not start before its bytes have gone at the flow's rate,
 * counted from when this one was allowed to (so waits do not drift). A rate
 * change before then re-times the wait (congestion.ts `repace`).
 */
function pace(q: QpCtx, len: number, nowNs: number, rateBps: number): void {
  const bytes = lineBytes(len);
  q.cc?.onSent(bytes, nowNs);
  const nowPs = nowNs * 1000;
  // A packet sent at the first ns at or after its allowed time counts from that time.
  const from = q.nextSendPs > nowPs - 1000 ? q.nextSendPs : nowPs;
  q.paceFromPs = from;
  q.paceBytes = bytes;
  q.paceGapPs = Math.ceil((bytes * 8e12) / rateBps);
  q.nextSendPs = from + q.paceGapPs;
}

/**
 * The gap the MAC must keep between a paced packet about to go at `nowNs`
 * and the one before it (which set it), ps; 0 after an idle spell (nothing
 * to keep), -1 when the QP is not paced.
 */
function spacingFor(q: QpCtx, paced: boolean, nowNs: number): number {
  if (!paced) return -1;
  return q.nextSendPs > nowNs * 1000 - 1000 ? q.paceGapPs : 0;
}

/**
 * Transmits up to `budget` request packets. Returns the number sent; when
 * the QP must wait (ARP, RNR timer, max_rd_atomic, fence) it returns early.
 */
export function requesterTransmit(nic: NicCore, q: QpCtx, qp: number, budget: number, now: number): number {
  const state = nic.env.tables.qpState(qp);
  if (state !== IBV_QPS_RTS && state !== IBV_QPS_SQD) return 0;
  if (now < q.rnrUntil) return 0;
  if (state === IBV_QPS_RTS) fetch(nic, q, qp);
  let sent = 0;
  while (sent < budget && q.txIndex < q.window.length && !q.sqError) {
    const w = q.window[q.txIndex]!;
    if (w.status === WqeStatus.PENDING && w.sentPkts === 0) {
      if (!w.started && state === IBV_QPS_SQD) break; // draining: no new message (sq-drain.ts)
      if (isReadOrAtomic(w.opcode) && !w.rdSlot && q.rdAtomicOut >= Math.max(1, q.maxRdAtomic)) break;
      if (w.fenced && q.txIndex > 0) break;
    }
    const path = q.qpType === IBV_QPT_UD ? udPath(nic, q, w.av!, udPaths(q)) : connectedPath(nic, q);
    if (!path) break; // neighbour being resolved: try again on the next pass
    const portNum = q.qpType === IBV_QPT_UD ? w.av!.portNum || q.portNum : q.portNum;
    if (q.qpType === IBV_QPT_UD) {
      // Each UD WQE names its own path, so its own priority; a paused one waits (PFC).
      q.prio = txPriority(w.av!.sl, w.av!.trafficClass, nic.cc.trust);
      if (nic.port(portNum).pause.isPaused(q.prio, now)) break;
    }
    const cc = q.cc;
    const rate = paceRate(q);
    const paced = rate !== Infinity && rate < nic.port(portNum).linkRateBps; // no rate (no CC, no limit): no port lookup
    if (paced && now * 1000 < q.nextSendPs) {
      q.paceWait = true;
      break;
    }
    const len = sendPacket(nic, q, w, path, portNum, spacingFor(q, paced, now));
    if (len === 0) break;
    w.started = true;
    if (paced) pace(q, len, now, rate);
    else if (cc !== null) cc.onSent(lineBytes(len), now);
    sent++;
    if (w.sentPkts >= w.npsn) {
      if (isReadOrAtomic(w.opcode) && !w.rdSlot) {
        w.rdSlot = true;
        q.rdAtomicOut++;
      }
      w.status = WqeStatus.SENT;
      q.txIndex++;
      if (!q.reliable) {
        // No acknowledgements on UC and UD: done once on the wire.
        q.window.splice(q.txIndex - 1, 1);
        q.txIndex--;
        completeSend(nic, q, w, IBV_WC_SUCCESS);
      }
    }
  }
  // The transport timer runs from a packet's send (IBTA 9.7.6.1.3): stopped by a retry or an
  // RNR NAK, it starts again with the first packet that goes out, not on a pass that sent none.
  if (sent > 0 && q.reliable && q.ackDeadline === Infinity && hasUnacked(q)) {
    q.ackDeadline = now + localAckTimeoutNs(q.timeout);
  }
  if (q.draining) sqDrainCheck(nic, q, qp);
  return sent;
}

/**
 * Packets are on the wire and not yet acknowledged: a PSN past the cumulative
 * ACK was sent, or a READ/ATOMIC that an ACK passed awaits its response (its
 * answer was lost, or dropped while an earlier READ's responses were
 * missing). A WQE being resent below the ACK is not: counted, the timer ran
 * from an ACK that covered all that was sent, fired before the next new PSN
 * went out and spent a retry on it (campaign seed 9981298).
 */
export function hasUnacked(q: QpCtx): boolean {
  if (psnCompare(q.sentPsn, q.ackedPsn) > 0) return q.window.length > 0;
  for (const w of q.window) {
    if (psnCompare(w.firstPsn, q.ackedPsn) > 0) break;
    if (isReadOrAtomic(w.opcode) && w.sentPkts > 0) return true;
  }
  return false;
}

/** Work left for the requester (new WQEs or packets to send). */
export function requesterHasWork(q: QpCtx): boolean {
  return q.txIndex < q.window.length;
}

const udPathCaches = new WeakMap<QpCtx, Map<string, PathTemplate>>();
function udPaths(q: QpCtx): Map<string, PathTemplate> {
  let m = udPathCaches.get(q);
  if (!m) udPathCaches.set(q, (m = new Map()));
  return m;
}

/**
 * Go back N: retransmit from `psn`, which lies in one of the window's WQEs
 * (anything before it is acknowledged).
 */
export function rewindTo(q: QpCtx, psn: number): void {
  for (let k = 0; k < q.window.length; k++) {
    const w = q.window[k]!;
    const d = (psn - w.firstPsn) & 0xffffff;
    if (d < w.npsn) {
      for (let j = k; j < q.window.length; j++) {
        const x = q.window[j]!;
        x.status = WqeStatus.PENDING;
        x.sentPkts = j === k && !isReadOrAtomic(x.opcode) ? d : 0;
      }
      q.txIndex = k;
      return;
    }
  }
  // Not in the window (acknowledged already, or never sent): nothing to resend,
  // and WQEs not yet sent keep their place.
}
