/**
 * Which profile choice (src/pipeline/profiles.ts) accounts for a
 * difference, when the two runs' profiles differ in that choice. A
 * difference no choice accounts for is unexplained: the exit status counts
 * it.
 */
import type { ProfileChoices } from '../pipeline/profiles.js';

type Choice = keyof ProfileChoices;

const RECV_OVERFLOW_SYNDROMES = new Set([0x61, 0x63]); // NAK invalid request, NAK remote operational error
const RECV_OVERFLOW_STATUSES = new Set(['IBV_WC_LOC_LEN_ERR', 'IBV_WC_REM_INV_REQ_ERR', 'IBV_WC_REM_OP_ERR', 'IBV_WC_LOC_QP_OP_ERR', 'IBV_WC_WR_FLUSH_ERR']);
const RETRY_STATUSES = new Set(['IBV_WC_RETRY_EXC_ERR', 'IBV_WC_WR_FLUSH_ERR', 'IBV_WC_SUCCESS', null]);

/** Counters that move with a choice (mlx5 / rxe names, src/device/counters.ts). */
const COUNTERS_OF: Partial<Record<Choice, readonly string[]>> = {
  retryCnt7Infinite: ['retry_exceeded_err', 'local_ack_timeout_err', 'completer_retry_err', 'req_cqe_error', 'req_cqe_flush_error', 'resp_cqe_flush_error'],
  recvOverflow: [
    'resp_local_length_error',
    'req_remote_invalid_request',
    'req_remote_operation_error',
    'req_cqe_error',
    'resp_cqe_error',
    'req_cqe_flush_error',
    'resp_cqe_flush_error',
  ],
  flushRecvPostedInErr: ['resp_cqe_flush_error'],
};

export interface Explainable {
  readonly kind: string;
  readonly field?: string;
  readonly a: unknown;
  readonly b: unknown;
  /** The flow carries UD datagrams. */
  readonly ud?: boolean;
  /** A packet's transmission count (retransmissions past the IBTA's 7 retries). */
  readonly transmission?: number;
  readonly counter?: string;
  /** The packet's opcode (a timer difference: which request was retried). */
  readonly opcode?: string;
}

/**
 * The choice of `differ` (where the runs' profiles differ) that accounts for
 * `d`; a counter several choices move names them all ('a or b').
 */
export function explain(d: Explainable, differ: ReadonlySet<Choice>): string | undefined {
  const has = (c: Choice) => differ.has(c);
  if (d.kind === 'packet-field') {
    if (d.field === 'ttl' && has('ipHopLimit')) return 'ipHopLimit';
    if (d.field === 'udpSrcPort' && d.ud && has('udSourcePort')) return 'udSourcePort';
    if (d.field === 'ecn' && has('ectWithCongestionControl')) return 'ectWithCongestionControl';
    if (d.field === 'ackReq' && has('ackReqEveryMessage')) return 'ackReqEveryMessage';
    if (d.field === 'syndrome' && has('recvOverflow') && RECV_OVERFLOW_SYNDROMES.has(d.a as number) && RECV_OVERFLOW_SYNDROMES.has(d.b as number))
      return 'recvOverflow';
    return undefined;
  }
  // A READ asked again at once under one profile, one timeout later under the other.
  if (d.kind === 'timer' && d.opcode?.startsWith('RC_RDMA_READ') && has('readResponseGap')) return 'readResponseGap';
  // More or fewer ACKs, as the requester asks for them.
  if ((d.kind === 'packet-only-in-a' || d.kind === 'packet-only-in-b') && has('ackReqEveryMessage') && (d.a ?? d.b) === 'RC_ACKNOWLEDGE')
    return 'ackReqEveryMessage';
  if ((d.kind === 'packet-only-in-a' || d.kind === 'packet-only-in-b') && has('retryCnt7Infinite') && (d.transmission ?? 0) > 8) return 'retryCnt7Infinite';
  if (d.kind === 'completion-field' && d.field === 'status') {
    if (has('recvOverflow') && RECV_OVERFLOW_STATUSES.has(d.a as string) && RECV_OVERFLOW_STATUSES.has(d.b as string)) return 'recvOverflow';
    if (has('retryCnt7Infinite') && RETRY_STATUSES.has(d.a as string) && RETRY_STATUSES.has(d.b as string)) return 'retryCnt7Infinite';
  }
  if (d.kind === 'completion-missing' && has('flushRecvPostedInErr') && (d.a === 'IBV_WC_WR_FLUSH_ERR' || d.b === 'IBV_WC_WR_FLUSH_ERR'))
    return 'flushRecvPostedInErr';
  if (d.kind === 'counter' && d.counter !== undefined) {
    const by = [...differ].filter((c) => COUNTERS_OF[c]?.includes(d.counter!));
    if (by.length > 0) return by.join(' or ');
  }
  return undefined;
}
