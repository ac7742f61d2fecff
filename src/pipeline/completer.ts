/**
 * The completer: takes ACKs, NAKs, read responses and atomic ACKs for the
 * requester, retires WQEs in order, and runs the local ACK and RNR timers
 * (IBTA §9.7.5–9.7.6; rxe_comp.c's behaviour where the IBTA leaves room).
 */
import {
  IBV_ACCESS_LOCAL_WRITE,
  IBV_QPS_RTS,
  IBV_QPS_SQD,
  IBV_WC_REM_ACCESS_ERR,
  IBV_WC_REM_INV_REQ_ERR,
  IBV_WC_REM_OP_ERR,
  IBV_WC_RETRY_EXC_ERR,
  IBV_WC_RNR_RETRY_EXC_ERR,
  IBV_WC_SUCCESS,
  IBV_WC_BAD_RESP_ERR,
  IBV_WC_LOC_PROT_ERR,
  IBV_WR_ATOMIC_CMP_AND_SWP,
  IBV_WR_ATOMIC_FETCH_AND_ADD,
  IBV_WR_ATOMIC_WRITE,
  IBV_WR_FLUSH,
  IBV_WR_RDMA_READ,
} from '../device/abi/constants.js';
import { MrCheck } from '../device/contexts.js';
import { sqDrainCheck } from './sq-drain.js';
import { Ctr } from '../device/counters.js';
import { aethType, AethType, aethValue, Op, type ScratchPacket, Syndrome } from '../wire/index.js';
import type { NicCore } from './core.js';
import { scatter } from './dma.js';
import { psnAdd, psnCompare } from './psn.js';
import { retriesForever } from './profiles.js';
import type { QpCtx } from './qp-ctx.js';
import { completeSend, failHead, hasUnacked, isReadOrAtomic, lastPsn, rewindTo } from './requester.js';
import { localAckTimeoutNs, rnrTimerNs } from './timer-tables.js';
import { type SendWqe, WqeStatus } from './work-requests.js';

/**
 * Retires SEND/WRITE WQEs fully covered by a cumulative ACK of `psn`. Stops
 * at a READ/ATOMIC. A WQE being retransmitted (rewound to PENDING by a
 * NAK or a timeout) is retired too when the ACK covers it: the responder has
 * all of it (an ACK only covers PSNs that were sent).
 */
function ackThrough(nic: NicCore, q: QpCtx, psn: number): number {
  const win = q.window;
  let retired = 0;
  while (retired < win.length) {
    const w = win[retired]!;
    if (isReadOrAtomic(w.opcode)) break;
    if (psnCompare(psn, lastPsn(w)) < 0) break;
    completeSend(nic, q, w, IBV_WC_SUCCESS);
    retired++;
  }
  if (retired > 0) {
    // One move for the whole run (an ACK can cover a full window: shift() each would be quadratic),
    // by a loop: Array copyWithin is a generic builtin, ~10x slower on a 128-entry window.
    const left = win.length - retired;
    for (let i = 0; i < left; i++) win[i] = win[i + retired]!;
    win.length = left;
    q.txIndex = Math.max(0, q.txIndex - retired);
  }
  // A retired WQE is progress: the retry budgets start again (rxe reset_retry_counters).
  if (retired > 0) {
    restoreRetries(q);
    // The timer runs while packets are outstanding (IBTA 9.7.6.1.3): with none left it stops, and
    // the next packet sent starts it afresh. Left running (a READ's response restarted it, then
    // retired the SENDs an earlier ACK covered), it fired 13 µs after the next WR's first packet
    // and spent a retry on a packet not yet due (fabric campaign seed 304477).
    if (!hasUnacked(q)) q.ackDeadline = Infinity;
    if (q.draining) sqDrainCheck(nic, q, nic.qpOff(q));
    // A WQE that waits for the window to empty (a failing one, a bind) goes next.
    if (win.length === 0 && q.waitsForEmptyWindow) {
      q.waitsForEmptyWindow = false;
      nic.schedule(q);
    }
  }
  return retired;
}

/**
 * Progress restores both retry budgets: retry_cnt and rnr_retry bound the
 * attempts at one packet without progress, not the whole life of the QP
 * (IBTA C9-139/C9-142 count consecutive retries; rxe reset_retry_counters).
 */
function restoreRetries(q: QpCtx): void {
  q.retryLeft = q.retryCnt;
  q.rnrLeft = q.rnrRetry;
}

function progress(q: QpCtx, psn: number, now: number): void {
  if (psnCompare(psn, q.ackedPsn) > 0) q.ackedPsn = psn;
  restoreRetries(q);
  q.retryStarted = false;
  q.ackDeadline = hasUnacked(q) ? now + localAckTimeoutNs(q.timeout) : Infinity;
}

/**
 * A response for a PSN past the head READ/ATOMIC means the head's response
 * was lost: an implied NAK (IBTA 9.7.5.1.4; rxe check_psn → ERROR_RETRY).
 * Only once per loss: what was in flight before the retry starts no new one
 * (rxe started_retry).
 */
function impliedNak(nic: NicCore, q: QpCtx): void {
  if (q.retryStarted) return;
  nic.ctr(q.portNum)[Ctr.IMPLIED_NAK_SEQ_ERR]!++;
  if (takeRetry(nic, q)) {
    retransmitFromOldest(q);
    q.retryStarted = true;
    stopTimerUntilResend(q);
  }
  nic.schedule(q);
}

/**
 * A retransmission restarts the transport timer (IBTA 9.7.6.1.3): left at its
 * old deadline it fires before the resent packets can be acknowledged and
 * spends a second retry on the same loss. It starts when the resend goes out
 * (requester.ts arms a stopped timer after a transmit), not at the decision:
 * a requester kept from sending (its QP's READ responses go first, a full
 * ring) spent a retry per timeout on packets it had not sent again, and gave
 * up with retries left (fabric campaign seed 300036).
 */
function stopTimerUntilResend(q: QpCtx): void {
  q.ackDeadline = Infinity;
}

/** Where a READ resumes (the first response PSN not received) or an ATOMIC restarts. */
function resumePsn(q: QpCtx, w: SendWqe): number {
  return w.opcode === IBV_WR_RDMA_READ ? psnAdd(w.firstPsn, Math.floor(w.readDone / q.mtu)) : w.firstPsn;
}

/**
 * Go back N after a loss signal: rewind to the oldest unacknowledged PSN.
 * A READ or ATOMIC at the head has not delivered its response even if
 * later PSNs were acknowledged (a NAK-sequence acknowledges only SEND and
 * WRITE): it is asked again, from where its responses stopped.
 */
function retransmitFromOldest(q: QpCtx): void {
  const head = q.window[0];
  if (!head) return;
  if (isReadOrAtomic(head.opcode)) {
    rewindTo(q, resumePsn(q, head));
    return;
  }
  const from = psnCompare(psnAdd(q.ackedPsn, 1), head.firstPsn) > 0 ? psnAdd(q.ackedPsn, 1) : head.firstPsn;
  rewindTo(q, from);
}

/**
 * Go back N to `psn`, which a NAK named. A READ or ATOMIC before it at the
 * head (the SENDs and WRITEs before it are retired by then) was executed but
 * its response is lost or was dropped while it waited to be resent: ask it
 * again first, or the rewind would skip it for good.
 */
function goBackTo(q: QpCtx, psn: number): void {
  const head = q.window[0];
  if (head && isReadOrAtomic(head.opcode) && psnCompare(head.firstPsn, psn) < 0) rewindTo(q, resumePsn(q, head));
  else rewindTo(q, psn);
}

/** Consumes one transport retry; false (and the WQE failed) when none is left. */
function takeRetry(nic: NicCore, q: QpCtx): boolean {
  const head = q.window[0];
  if (!head) return true;
  const infinite = retriesForever(nic.env.profile, q.retryCnt);
  if (q.retryLeft === 0 && !infinite) {
    failHead(nic, q, head, IBV_WC_RETRY_EXC_ERR, Ctr.RETRY_EXCEEDED_ERR);
    return false;
  }
  if (!infinite) q.retryLeft--;
  nic.ctr(q.portNum)[Ctr.COMPLETER_RETRY_ERR]!++;
  return true;
}

/** A response packet for QP `q` (already matched to it and decoded). */
export function completerReceive(nic: NicCore, q: QpCtx, qp: number, p: ScratchPacket, now: number): void {
  const state = nic.env.tables.qpState(qp);
  if (state !== IBV_QPS_RTS && state !== IBV_QPS_SQD) return;
  const psn = p.bth.psn;
  // The operation bits: RC and XRC responses share them (the receive parser matched the transport to the QP).
  const op = p.bth.opcode & 0x1f;
  const ctr = nic.ctr(q.portNum);
  if (op === Op.RC_ACKNOWLEDGE) {
    const syn = p.aeth!.syndrome;
    switch (aethType(syn)) {
      case AethType.ACK: {
        // Nothing new (a duplicated or delayed ACK): no progress, no retry budget back (rxe check_psn → DONE).
        if (psnCompare(psn, q.ackedPsn) <= 0) return;
        ackThrough(nic, q, psn);
        // The responder has everything through `psn`, the WQEs behind a READ or
        // ATOMIC still waiting for its response included: they retire with it.
        q.ackedPsn = psn;
        // A cumulative ACK beyond a pending READ/ATOMIC means its response was lost.
        const head = q.window[0];
        if (head && head.status === WqeStatus.SENT && isReadOrAtomic(head.opcode) && psnCompare(psn, head.firstPsn) >= 0) {
          impliedNak(nic, q);
          return;
        }
        progress(q, psn, now);
        if (q.txIndex < q.window.length) nic.schedule(q);
        return;
      }
      case AethType.RNR_NAK: {
        // Stale (before what is acknowledged), or the RNR NAK being waited out arriving again.
        if (psnCompare(psn, q.ackedPsn) <= 0 || (now < q.rnrUntil && psn === q.rnrPsn)) return;
        // The NAK acknowledges everything before its PSN: past what was acknowledged, that is
        // progress, and both budgets start again before this NAK takes its RNR retry, as a
        // NAK-sequence's does. Without it a timeout, then an RNR NAK that moved on, then a
        // timeout spent retry_cnt 2 on one PSN's single round (campaign seed 9980609).
        if (psnCompare(psn, psnAdd(q.ackedPsn, 1)) > 0) restoreRetries(q);
        ackThrough(nic, q, psnAdd(psn, -1));
        q.ackedPsn = psnAdd(psn, -1);
        const head = q.window[0];
        if (!head) return;
        // Past a READ or ATOMIC still waiting for its response, the NAK says that response was
        // lost: a transport retry of the head, not a receiver-not-ready one (IBTA 9.7.5.1.2 implied
        // NAK; rxe check_psn → COMPST_ERROR_RETRY). The resent SEND meets its RNR NAK again if need be.
        // A head already rewound to be asked again (a NAK or timeout came first) is resent in its
        // turn, and the SENDs after it reach the responder again: the NAK has nothing to say (rxe
        // check_psn → COMPST_DONE for a WQE not pending). Taken as an RNR NAK it spent the RNR
        // budget on a SEND behind the READ and failed the READ with RNR_RETRY_EXC_ERR (campaign
        // seed 9100287).
        if (isReadOrAtomic(head.opcode) && psnCompare(psn, lastPsn(head)) > 0) {
          if (head.status === WqeStatus.SENT) impliedNak(nic, q);
          return;
        }
        ctr[Ctr.RCVD_RNR_ERR]!++;
        if (q.rnrLeft === 0) {
          failHead(nic, q, head, IBV_WC_RNR_RETRY_EXC_ERR, Ctr.RETRY_RNR_EXCEEDED_ERR);
          return;
        }
        if (q.rnrRetry !== 7) q.rnrLeft--;
        ctr[Ctr.RNR_NAK_RETRY_ERR]!++;
        q.rnrUntil = now + rnrTimerNs(aethValue(syn));
        q.rnrPsn = psn;
        stopTimerUntilResend(q);
        goBackTo(q, psn);
        nic.schedule(q);
        return;
      }
      case AethType.NAK: {
        if (syn === Syndrome.NAK_PSN_SEQ_ERR) {
          // Everything before the NAKed PSN arrived; resend from it. A NAK for a
          // PSN already acknowledged is stale, and the same gap NAKed again
          // after its retry started is a copy (the responder NAKs a gap once,
          // IBTA C9-103): neither starts another retry (rxe started_retry).
          const d = psnCompare(psn, psnAdd(q.ackedPsn, 1));
          if (d < 0 || (d === 0 && q.retryStarted)) return;
          ctr[Ctr.RCVD_SEQ_ERR]!++;
          if (d > 0) {
            ackThrough(nic, q, psnAdd(psn, -1));
            q.ackedPsn = psnAdd(psn, -1);
            restoreRetries(q);
          }
          if (!takeRetry(nic, q)) return;
          // mlx5 packet_seq_err: a NAK-sequence with the retry limit not exceeded.
          ctr[Ctr.PACKET_SEQ_ERR]!++;
          goBackTo(q, psn);
          q.retryStarted = true;
          stopTimerUntilResend(q);
          nic.schedule(q);
          return;
        }
        ackThrough(nic, q, psnAdd(psn, -1));
        const head = q.window[0];
        if (!head) return;
        const status =
          syn === Syndrome.NAK_INVALID_REQUEST ? IBV_WC_REM_INV_REQ_ERR : syn === Syndrome.NAK_REMOTE_ACCESS ? IBV_WC_REM_ACCESS_ERR : IBV_WC_REM_OP_ERR;
        const counter =
          syn === Syndrome.NAK_INVALID_REQUEST ? Ctr.REQ_REMOTE_INVALID_REQUEST : syn === Syndrome.NAK_REMOTE_ACCESS ? Ctr.REQ_REMOTE_ACCESS_ERRORS : undefined;
        failHead(nic, q, head, status, counter);
        return;
      }
      default:
        return; // reserved syndrome: ignore
    }
  }
  // Read responses and atomic ACKs implicitly acknowledge what came before.
  ackThrough(nic, q, psnAdd(psn, -1));
  const head = q.window[0];
  if (!head || (head.status === WqeStatus.PENDING && head.sentPkts === 0)) return;
  // A response past the head's last PSN answers a later request: the head's was lost.
  if (psnCompare(psn, lastPsn(head)) > 0) {
    impliedNak(nic, q);
    return;
  }
  if (psnCompare(psn, head.firstPsn) < 0) return; // a duplicate of one already taken
  if (op === Op.RC_ATOMIC_ACKNOWLEDGE) {
    // Inside the head's PSNs but not what it asked for: a bad response (rxe check_ack → FATAL).
    if (head.opcode !== IBV_WR_ATOMIC_CMP_AND_SWP && head.opcode !== IBV_WR_ATOMIC_FETCH_AND_ADD) {
      failHead(nic, q, head, IBV_WC_BAD_RESP_ERR);
      return;
    }
    const orig = new Uint8Array(8);
    new DataView(orig.buffer).setBigUint64(0, p.atomicAckEth!.origData, true);
    if (scatter(nic.env.mem, nic.env.tables, q.pdn, head.sges, 0, orig, 0, orig.length, IBV_ACCESS_LOCAL_WRITE) !== MrCheck.OK) {
      failHead(nic, q, head, IBV_WC_LOC_PROT_ERR);
      return;
    }
    retire(nic, q, head, psn, now);
    return;
  }
  // ATOMIC_WRITE and FLUSH are answered by one zero-length READ response (rxe send_read_response_ack).
  if (head.opcode === IBV_WR_ATOMIC_WRITE || head.opcode === IBV_WR_FLUSH) {
    if (op !== Op.RC_RDMA_READ_RESPONSE_ONLY || p.payloadLength !== 0 || psn !== head.firstPsn) {
      failHead(nic, q, head, IBV_WC_BAD_RESP_ERR);
      return;
    }
    retire(nic, q, head, psn, now);
    return;
  }
  // READ responses.
  if (head.opcode !== IBV_WR_RDMA_READ) {
    failHead(nic, q, head, IBV_WC_BAD_RESP_ERR);
    return;
  }
  const expected = psnAdd(head.firstPsn, Math.floor(head.readDone / q.mtu));
  const d = psnCompare(psn, expected);
  if (d < 0) return; // duplicate response
  if (d > 0) {
    // A response of this READ is missing: ask again from what we have (resumePsn),
    // or (rxe) ignore this one and leave the retry to the transport timer (profiles.ts).
    if (nic.env.profile.readResponseGap === 'reissue') impliedNak(nic, q);
    return;
  }
  const isFirst = op === Op.RC_RDMA_READ_RESPONSE_FIRST || op === Op.RC_RDMA_READ_RESPONSE_ONLY;
  const isLast = op === Op.RC_RDMA_READ_RESPONSE_LAST || op === Op.RC_RDMA_READ_RESPONSE_ONLY;
  const len = p.payloadLength;
  const left = head.length - head.readDone;
  const lengthOk = isLast ? len === left : len === q.mtu && left > q.mtu;
  if (!lengthOk || (isFirst && head.readDone % q.mtu !== 0)) {
    failHead(nic, q, head, IBV_WC_BAD_RESP_ERR);
    return;
  }
  if (scatter(nic.env.mem, nic.env.tables, q.pdn, head.sges, head.readDone, p.payloadBytes, p.payloadAt, len, IBV_ACCESS_LOCAL_WRITE) !== MrCheck.OK) {
    failHead(nic, q, head, IBV_WC_LOC_PROT_ERR);
    return;
  }
  head.readDone += len;
  if (isLast) retire(nic, q, head, psn, now);
  else progress(q, psn, now);
}

function retire(nic: NicCore, q: QpCtx, w: SendWqe, psn: number, now: number): void {
  q.window.shift();
  q.txIndex = Math.max(0, q.txIndex - 1);
  if (w.rdSlot) q.rdAtomicOut--;
  completeSend(nic, q, w, IBV_WC_SUCCESS);
  progress(q, psn, now);
  // SENDs and WRITEs behind it that an earlier ACK covered complete now, in order.
  ackThrough(nic, q, q.ackedPsn);
  if (q.draining) sqDrainCheck(nic, q, nic.qpOff(q));
  nic.schedule(q);
}

/** Local ACK timer expiry. */
export function completerTimeout(nic: NicCore, q: QpCtx, now: number): void {
  q.ackDeadline = Infinity;
  if (!hasUnacked(q)) return;
  // Waiting out an RNR NAK nothing is resent, so nothing is overdue: the resend
  // after the RNR timer arms the ACK timer again (requester.ts). Counted, the
  // timer spent retry_cnt while the requester could not send (campaign seed 810828).
  if (now < q.rnrUntil) return;
  // mlx5 local_ack_timeout_err: the timer expired and the retry limit is not exceeded (else retry_exceeded_err).
  if (!takeRetry(nic, q)) return;
  nic.ctr(q.portNum)[Ctr.LOCAL_ACK_TIMEOUT_ERR]!++;
  retransmitFromOldest(q);
  q.retryStarted = true;
  stopTimerUntilResend(q);
  nic.schedule(q);
}
