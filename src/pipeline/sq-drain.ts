/**
 * The SQD state's drain (IBTA 10.3.1, "Send Queue Drain"; rxe's
 * QP_STATE_DRAIN): on RTS → SQD the requester starts no new message (the
 * firmware sets SQ_DRAINING), the messages it had begun finish and are
 * acknowledged, and then the drain is over: `sq_draining` reads 0 and, if
 * the QP asked for it (en_sqd_async_notify), IBV_EVENT_SQ_DRAINED is raised
 * once. WRs posted meanwhile wait in the send queue for SQD → RTS.
 */
import { IBV_EVENT_SQ_DRAINED, IBV_QPS_SQD } from '../device/abi/constants.js';
import { QpFlag } from '../device/contexts.js';
import type { NicCore } from './core.js';
import type { QpCtx } from './qp-ctx.js';

/** Whether every message the requester began has completed (what is left, if anything, was never started). */
function drained(q: QpCtx): boolean {
  return q.window.length === 0 || !q.window[0]!.started;
}

/**
 * Ends the drain of QP `q` (context-table offset `off`) when it is over.
 * Called when the firmware has flagged a drain and after each retirement
 * while one runs (`q.draining`).
 */
export function sqDrainCheck(nic: NicCore, q: QpCtx, off: number): void {
  const t = nic.env.tables;
  const flags = t.qpFlags(off);
  if (t.qpState(off) !== IBV_QPS_SQD || !(flags & QpFlag.SQ_DRAINING)) {
    q.draining = false;
    return;
  }
  q.draining = true;
  if (!drained(q)) return;
  q.draining = false;
  t.qpClearFlags(off, QpFlag.SQ_DRAINING);
  if (flags & QpFlag.EN_SQD_ASYNC_NOTIFY) nic.asyncEvent(q.sendCqn, IBV_EVENT_SQ_DRAINED, q.qpn);
}
