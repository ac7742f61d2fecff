/**
 * Local operations of the send queue (IBTA 10.6.7, 10.7): BIND_MW and
 * LOCAL_INV, executed by the device without a packet. The requester runs
 * one when it reaches the head of the send queue and every WQE before it
 * has completed (a stronger order than a fence: nothing posted before a
 * bind or invalidation can still be using the old window), then completes
 * it like any send WQE: IBV_WC_BIND_MW / IBV_WC_LOCAL_INV, or an error
 * that moves the QP to ERR.
 */
import { IBV_WC_LOC_QP_OP_ERR, IBV_WC_MW_BIND_ERR, IBV_WC_SUCCESS, IBV_WR_BIND_MW, IBV_WR_LOCAL_INV } from '../device/abi/constants.js';
import type { ContextTables } from '../device/contexts.js';
import { MwFault, mwBind, mwInvalidate } from '../device/mw.js';
import type { SendWqe } from './work-requests.js';

export function isLocalOp(opcode: number): boolean {
  return opcode === IBV_WR_BIND_MW || opcode === IBV_WR_LOCAL_INV;
}

/**
 * Executes the local operation `w` of QP `qpn` (PD `pdn`). Returns the
 * completion status: success, IBV_WC_MW_BIND_ERR for a refused bind
 * (rxe_do_local_ops), IBV_WC_LOC_QP_OP_ERR for a refused invalidation.
 */
export function executeLocalOp(t: ContextTables, w: SendWqe, qpn: number, pdn: number): number {
  if (w.opcode === IBV_WR_BIND_MW) return mwBind(t, w.bind!, qpn, pdn) === MwFault.OK ? IBV_WC_SUCCESS : IBV_WC_MW_BIND_ERR;
  return mwInvalidate(t, w.imm >>> 0, qpn, pdn, false) === MwFault.OK ? IBV_WC_SUCCESS : IBV_WC_LOC_QP_OP_ERR;
}
