/**
 * The pipeline's private state of one QP: what a real RNIC keeps in its QP
 * context cache beyond the firmware-visible fields — the send queue window
 * (fetched, unacknowledged WQEs), the responder's message in progress, its
 * read/atomic resources, and the transport timers. Attributes the firmware
 * owns are re-read from the context table whenever MODIFY_QP bumps
 * `modifySeq`.
 */
import { QPC, QpFlag } from '../device/contexts.js';
import type { ContextTables } from '../device/contexts.js';
import {
  IBV_QPS_RTR,
  IBV_QPS_SQE,
  IBV_QPT_RC,
  IBV_QPT_UC,
  IBV_QPT_UD,
  IBV_QPT_XRC_RECV,
  IBV_QPT_XRC_SEND,
  mtu_enum_to_bytes,
} from '../device/abi/constants.js';
import type { CcFlow } from './cc/congestion-control.js';
import type { PathTemplate } from './packet-builder.js';
import { readAv, type AddressVector, type RecvWqe, type SendWqe } from './work-requests.js';

/** A READ or ATOMIC the responder has executed: for responses and duplicates. */
export interface ResponderResource {
  kind: 'read' | 'atomic' | 'atomic-write' | 'flush';
  firstPsn: number;
  /** Last PSN of its responses. */
  lastPsn: number;
  va: number;
  rkey: number;
  length: number;
  /** ATOMIC: the original value returned (replayed on a duplicate). */
  orig: bigint;
}

/** A response the responder still has to send (read responses are cut into packets as they go). */
export interface PendingResponse {
  kind: 'ack' | 'nak' | 'read' | 'atomic';
  psn: number;
  syndrome: number;
  /** READ: host offset of the next byte, bytes left, packets sent. */
  hostOff: number;
  left: number;
  total: number;
  sent: number;
  /** READ: the key, the VA of the next byte and the PD it reads through, checked again before each packet (0 for the rest). */
  rkey: number;
  va: number;
  pdn: number;
  orig: bigint;
}

/** A response that carries no READ data (ACK, NAK, an atomic's result, a zero-length READ's answer). */
export function plainResponse(kind: PendingResponse['kind'], psn: number, syndrome: number, orig = 0n): PendingResponse {
  return { kind, psn, syndrome, hostOff: 0, left: 0, total: 0, sent: 0, rkey: 0, va: 0, pdn: 0, orig };
}

export class QpCtx {
  /** modifySeq the cached attributes were read at. */
  seq = -1;
  qpn: number;
  qpType = 0;
  /** RC, XRC_SEND or XRC_RECV: acknowledged, with retries (the RC transport rules). */
  reliable = false;
  /** What the transport adds to an RC opcode (IBTA Table 38): UC 0x20, XRC 0xA0, else 0. */
  opBase = 0;
  /** XRC_RECV: its XRC domain. */
  xrcdn = 0;
  /**
   * The PD, receive CQ and SRQ the responder uses. For XRC_RECV these are
   * the XRC SRQ's, set from each request's XRCETH (responder xrcTarget).
   */
  pdn = 0;
  sendCqn = 0;
  recvCqn = 0;
  srqn = 0;
  hasSrq = false;
  sqSigAll = false;
  portNum = 1;
  mtu = 256;
  destQpn = 0;
  qkey = 0;
  accessFlags = 0;
  timeout = 0;
  retryCnt = 0;
  rnrRetry = 0;
  minRnrTimer = 0;
  maxRdAtomic = 0;
  maxDestRdAtomic = 0;
  maxSendSge = 0;
  maxRecvSge = 0;
  maxInline = 0;
  av: AddressVector | null = null;
  /** Headers of the connected path (RC/UC), built on first use. */
  path: PathTemplate | null = null;

  // ---- requester ----
  /** PSN of the next new request packet. */
  sqPsn = 0;
  /** Highest PSN acknowledged by the responder (cumulative). */
  ackedPsn = 0xffffff;
  /** Highest PSN sent (a READ request covers its responses' PSNs): past `ackedPsn`, something is in flight. */
  sentPsn = 0xffffff;
  /** WQEs fetched and not yet completed, oldest first. */
  readonly window: SendWqe[] = [];
  /** Index in `window` of the WQE being transmitted. */
  txIndex = 0;
  /** Outstanding READ/ATOMIC WQEs (max_rd_atomic). */
  rdAtomicOut = 0;
  /** Retries left (timeout / NAK-sequence) and RNR retries left. */
  retryLeft = 0;
  rnrLeft = 0;
  /** Local ACK timer deadline (ns), Infinity when stopped. */
  ackDeadline = Infinity;
  /** RNR wait: no transmission before this time. */
  rnrUntil = 0;
  /** The PSN the RNR NAK being waited out named (a copy of it is ignored). */
  rnrPsn = -1;
  /** Packets sent since the last AckReq (coalescing). */
  sinceAckReq = 0;
  /** The QP hit a fatal error: flush when the window drains. */
  sqError = false;
  /** The next WQE (a bind or invalidation, or one failing its local checks) waits for the window to empty. */
  waitsForEmptyWindow = false;
  /** SQD: the firmware's drain is running; each retirement checks whether it is over (sq-drain.ts). */
  draining = false;
  /**
   * A retry (go-back-N) has started and no progress was seen since: further
   * implied NAKs (responses still in flight from before the retry) start no
   * new one (rxe `comp.started_retry`).
   */
  retryStarted = false;

  // ---- responder ----
  /** Expected PSN. */
  ePsn = 0;
  msn = 0;
  /** A NAK-sequence was sent and not yet answered by the expected PSN. */
  nakSent = false;
  /** SEND in progress: its receive WQE and bytes placed so far. */
  recv: RecvWqe | null = null;
  recvOffset = 0;
  /** The receive WQE came from the SRQ (for the CQE counter). */
  recvFromSrq = false;
  /** WRITE in progress: host offset of the next byte and bytes left. */
  writeHostOff = -1;
  writeLeft = 0;
  writeLength = 0;
  /** WRITE in progress: its RETH's rkey and the VA of the next byte (each later packet checks the key again). */
  writeRkey = 0;
  writeVa = 0;
  /** ContextTables.mptGen when the key was last checked: unchanged, the next packet needs no check. */
  writeGen = -1;
  /** The opcode class of the message in progress: 0 none, 1 send, 2 write. */
  inMessage = 0;
  readonly resources: ResponderResource[] = [];
  readonly responses: PendingResponse[] = [];

  /** Queued on the engine's transmit list. */
  scheduled = false;
  /** Order of first use: the engine serves QPs due at the same time in this order. */
  rank = 0;
  /** Transmit priority 0..7 (from the AV's SL or DSCP, cc-params.ts txPriority); UD: of its last WQE. */
  prio = 0;
  /** Waiting on the engine's list of QPs whose priority the far end paused (PFC). */
  parked = false;

  // ---- congestion control ----
  /** The reaction point's flow (DCQCN), made on the QP's first CNP; null while never notified. */
  cc: CcFlow | null = null;
  /** ibv_modify_qp_rate_limit's rate, bit/s (0: none): pacing without congestion control, or a cap on its rate. */
  rateLimitBps = 0;
  /** Pacing: the next request packet may not start before this time, ps. */
  nextSendPs = 0;
  /** The gap the last paced packet set before the next, ps (the MAC keeps it between them too). */
  paceGapPs = 0;
  /** The last paced packet: when it was allowed to start, ps, and its line bytes (a rate change re-times the next). */
  paceFromPs = 0;
  paceBytes = 0;
  /** The requester stopped for pacing: the engine's timer puts it back on the schedule. */
  paceWait = false;
  /** Notification point: when this QP last sent a CNP, ns. */
  lastCnpNs = -Infinity;

  constructor(qpn: number) {
    this.qpn = qpn;
  }

  /** Re-reads firmware-owned attributes. Returns true when they changed. */
  refresh(t: ContextTables, qp: number): boolean {
    const dv = t.dv;
    const seq = QPC.f.modifySeq.get(dv, qp);
    if (seq === this.seq) return false;
    this.seq = seq;
    const f = QPC.f;
    this.qpType = f.qpType.get(dv, qp);
    this.reliable = this.qpType === IBV_QPT_RC || this.qpType === IBV_QPT_XRC_SEND || this.qpType === IBV_QPT_XRC_RECV;
    this.opBase = this.qpType === IBV_QPT_UC ? 0x20 : this.qpType === IBV_QPT_XRC_SEND || this.qpType === IBV_QPT_XRC_RECV ? 0xa0 : 0;
    this.xrcdn = f.xrcdn.get(dv, qp);
    const flags = f.flags.get(dv, qp);
    // An XRC receive QP keeps the SRQ (PD, CQ) its last request named: a receive in progress
    // is flushed there when a MODIFY_QP moves the QP to ERR.
    if (this.qpType !== IBV_QPT_XRC_RECV) {
      this.pdn = f.pdn.get(dv, qp);
      this.recvCqn = f.recvCqn.get(dv, qp);
      this.srqn = f.srqn.get(dv, qp);
      this.hasSrq = (flags & QpFlag.HAS_SRQ) !== 0;
    }
    this.sendCqn = f.sendCqn.get(dv, qp);
    this.sqSigAll = (flags & QpFlag.SQ_SIG_ALL) !== 0;
    this.portNum = f.portNum.get(dv, qp) || 1;
    this.mtu = mtu_enum_to_bytes(f.pathMtu.get(dv, qp)) > 0 ? mtu_enum_to_bytes(f.pathMtu.get(dv, qp)) : 256;
    this.destQpn = f.destQpn.get(dv, qp);
    this.qkey = f.qkey.get(dv, qp);
    this.accessFlags = f.accessFlags.get(dv, qp);
    this.timeout = f.timeout.get(dv, qp);
    const retry = f.retryCnt.get(dv, qp);
    const rnr = f.rnrRetry.get(dv, qp);
    if (retry !== this.retryCnt || this.retryLeft === 0) this.retryLeft = retry;
    if (rnr !== this.rnrRetry || this.rnrLeft === 0) this.rnrLeft = rnr;
    this.retryCnt = retry;
    this.rnrRetry = rnr;
    this.minRnrTimer = f.minRnrTimer.get(dv, qp);
    this.maxRdAtomic = f.maxRdAtomic.get(dv, qp);
    this.maxDestRdAtomic = f.maxDestRdAtomic.get(dv, qp);
    this.maxSendSge = f.maxSendSge.get(dv, qp);
    this.maxRecvSge = f.maxRecvSge.get(dv, qp);
    this.maxInline = f.maxInlineData.get(dv, qp);
    this.rateLimitBps = f.rateLimit.get(dv, qp) * 1000;
    // Only a connected QP past INIT has a path; the AV of any other is never read (UD's WQEs carry theirs).
    const state = t.qpState(qp);
    this.av = this.qpType !== IBV_QPT_UD && state >= IBV_QPS_RTR && state <= IBV_QPS_SQE ? readAv(dv, qp + QPC.f.avDgid.decl.offset) : null;
    this.path = null;
    // PSNs are [fw, dev]: the pipeline writes its values back, so the context
    // holds ours unless MODIFY_QP just set new ones.
    this.sqPsn = f.sqPsn.get(dv, qp);
    // With nothing outstanding, everything before the next PSN counts as
    // acknowledged. The cumulative-ACK mark must sit just behind the send
    // PSN (set by RTR→RTS), or comparisons against a mark 2^23 away flip
    // sign (PSN order is modulo 2^24, IBTA 9.7.1).
    if (this.window.length === 0) this.ackedPsn = this.sentPsn = (this.sqPsn - 1) & 0xffffff;
    this.ePsn = f.rqPsn.get(dv, qp);
    return true;
  }

  /** Back to the state of a fresh QP (RESET). */
  clearTransport(): void {
    this.draining = false;
    this.window.length = 0;
    this.txIndex = 0;
    this.rdAtomicOut = 0;
    this.ackDeadline = Infinity;
    this.rnrUntil = 0;
    this.sinceAckReq = 0;
    this.sqError = false;
    this.waitsForEmptyWindow = false;
    this.retryStarted = false;
    this.nakSent = false;
    this.recv = null;
    this.recvOffset = 0;
    this.writeHostOff = -1;
    this.writeLeft = 0;
    this.inMessage = 0;
    this.resources.length = 0;
    this.responses.length = 0;
    this.msn = 0;
    // A reset QP starts unthrottled, as a fresh one (its DCQCN flow, pacing and CNP clock go).
    this.cc = null;
    this.paceWait = false;
    this.nextSendPs = 0;
    this.paceGapPs = 0;
    this.paceFromPs = 0;
    this.paceBytes = 0;
    this.lastCnpNs = -Infinity;
  }
}

/** The rate QP `q` is paced at, bit/s: its congestion-control rate, its rate limit, the lower of both, or Infinity (neither). */
export function paceRate(q: QpCtx): number {
  const limit = q.rateLimitBps > 0 ? q.rateLimitBps : Infinity;
  return q.cc !== null ? Math.min(q.cc.rateBps, limit) : limit;
}
