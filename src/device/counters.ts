/**
 * Per-port hardware counters, named as Linux RDMA drivers name them (the
 * rxe set, the mlx5 `hw_counters` set, and the two ibv_port_attr counters),
 * in a SharedArrayBuffer so any thread can read them.
 *
 * Layout: Float64Array [port][lane][counter]. Each writer thread (a
 * pipeline stage, or the one simulator thread) owns a lane and increments
 * its own slots with plain `c[Ctr.SENT_PKTS]++` — no atomics on the hot
 * path, exact up to 2^53. Readers sum the lanes. A reader may see a count
 * that lags by the increments in flight; it never sees a torn value on the
 * 64-bit platforms Node runs on.
 *
 * The declaration table below is the one source: names, descriptions and
 * the `Ctr` index constants (a test checks they agree).
 */
import { DeviceError } from './errors.js';

export interface CounterDecl {
  readonly name: string;
  /**
   * Where the name comes from: 'rxe', 'mlx5' (hw_counters), 'port'
   * (ibv_port_attr), 'ib_port' (the IB port counters Linux shows in
   * /sys/class/infiniband/<dev>/ports/<n>/counters), or 'model' (a drop
   * Linux drivers make silently, with no counter: the model names it).
   */
  readonly source: 'rxe' | 'mlx5' | 'port' | 'ib_port' | 'model';
  readonly doc: string;
}

const c = (name: string, source: CounterDecl['source'], doc: string): CounterDecl => ({ name, source, doc });

/** The counter table. Order = index = `Ctr`. Append only. */
export const COUNTERS: readonly CounterDecl[] = Object.freeze([
  // rxe (rxe_hw_counters.c)
  c('sent_pkts', 'rxe', 'packets sent'),
  c('rcvd_pkts', 'rxe', 'packets received that passed header and ICRC checks'),
  c('duplicate_request', 'rxe', 'responder: request with PSN < ePSN (duplicate)'),
  c('out_of_seq_request', 'rxe', 'responder: request with PSN > ePSN; the one NAK-sequence was sent'),
  c('rcvd_rnr_err', 'rxe', 'requester: RNR NAK received'),
  c('send_rnr_err', 'rxe', 'responder: RNR NAK sent'),
  c('rcvd_seq_err', 'rxe', 'requester: NAK-sequence received that advanced the completion PSN'),
  c('ack_deferred', 'rxe', 'completer ran deferred because more than one response was queued'),
  c('retry_exceeded_err', 'rxe', 'requester gave up with RETRY_EXC_ERR'),
  c('retry_rnr_exceeded_err', 'rxe', 'requester gave up with RNR_RETRY_EXC_ERR'),
  c('completer_retry_err', 'rxe', 'completer started a retry (timeout or NAK-sequence)'),
  c('send_err', 'rxe', 'transmit error (packet could not be sent)'),
  c('link_downed', 'rxe', 'port went down'),
  c('rdma_sends', 'rxe', 'messages sent (SEND / WRITE / READ requests)'),
  c('rdma_recvs', 'rxe', 'messages received'),
  // mlx5 hw_counters (drivers/infiniband/hw/mlx5/counters.c)
  c('out_of_sequence', 'mlx5', 'responder: out-of-sequence packet received (PSN > ePSN)'),
  c('packet_seq_err', 'mlx5', 'requester: NAK-sequence received, retry limit not yet exceeded'),
  c('implied_nak_seq_err', 'mlx5', 'requester: implied NAK (ACK/response beyond a pending READ/ATOMIC)'),
  c('local_ack_timeout_err', 'mlx5', 'requester: ACK timer expired, retry limit not yet exceeded'),
  c('rnr_nak_retry_err', 'mlx5', 'requester: RNR NAK received, RNR retry limit not yet exceeded'),
  c('out_of_buffer', 'mlx5', 'responder: drop for lack of a receive WQE'),
  c('rx_write_requests', 'mlx5', 'responder: RDMA WRITE requests received'),
  c('rx_read_requests', 'mlx5', 'responder: RDMA READ requests received'),
  c('rx_atomic_requests', 'mlx5', 'responder: ATOMIC requests received'),
  c('rx_icrc_encapsulated', 'mlx5', 'RoCE packets received with a bad ICRC'),
  c('np_ecn_marked_roce_packets', 'mlx5', 'notification point: RoCEv2 packets received with ECN CE'),
  c('np_cnp_sent', 'mlx5', 'notification point: CNPs sent'),
  c('rp_cnp_handled', 'mlx5', 'reaction point: CNPs that reduced the rate'),
  c('rp_cnp_ignored', 'mlx5', 'reaction point: CNPs received and ignored'),
  c('resp_local_length_error', 'mlx5', 'responder: local length error completions'),
  c('resp_cqe_error', 'mlx5', 'responder: error completions'),
  c('req_cqe_error', 'mlx5', 'requester: error completions'),
  c('req_remote_invalid_request', 'mlx5', 'requester: NAK invalid request received'),
  c('req_remote_access_errors', 'mlx5', 'requester: NAK remote access error received'),
  c('resp_remote_access_errors', 'mlx5', 'responder: remote access errors detected'),
  c('resp_cqe_flush_error', 'mlx5', 'responder: completions flushed (WR_FLUSH_ERR)'),
  c('req_cqe_flush_error', 'mlx5', 'requester: completions flushed (WR_FLUSH_ERR)'),
  // ibv_port_attr counters, reported by QUERY_PORT
  c('bad_pkey_cntr', 'port', 'packets dropped for a bad P_Key (ibv_port_attr.bad_pkey_cntr)'),
  c('qkey_viol_cntr', 'port', 'UD packets dropped for a Q_Key mismatch (ibv_port_attr.qkey_viol_cntr)'),
  // IB port counters (IBTA PortCounters; sysfs ports/<n>/counters)
  c(
    'port_rcv_errors',
    'ib_port',
    'RDMA frames the receive parser dropped as malformed: bad ICRC, truncated, bad version, length, checksum, reserved opcode (PortRcvErrors)',
  ),
  // drops rxe makes silently (hdr_check, check_type_state); the model counts them
  c('rx_unknown_opcode', 'model', 'frames dropped for a reserved or unsupported BTH opcode (also in port_rcv_errors)'),
  c('rx_unknown_qp', 'model', 'packets dropped: no QP with the destination QPN (never created, destroyed, special or multicast QPN)'),
  c('rx_qp_type_mismatch', 'model', "packets dropped: the opcode's transport (RC / UC / UD) is not the QP's type"),
  c('rx_qp_state_drop', 'model', "packets dropped: the QP's state does not accept them (requests in RESET / INIT / ERR, responses outside RTS / SQD)"),
  // IB port counters (IBTA PortCounters / PortCountersExtended), as Linux shows them for a RoCE port
  c(
    'port_xmit_data',
    'ib_port',
    'RDMA frames sent: bytes (Ethernet header through ICRC, no FCS; on IB, LRH through ICRC, no VCRC) divided by 4, as PortXmitData counts 4-octet words',
  ),
  c('port_rcv_data', 'ib_port', 'RDMA frames received (good or not): bytes divided by 4, on IB without the VCRC (PortRcvData)'),
  c('port_xmit_packets', 'ib_port', 'RDMA frames sent (PortXmitPkts)'),
  c('port_rcv_packets', 'ib_port', 'RDMA frames received, with errors included (PortRcvPkts)'),
  // native InfiniBand ports
  c('rx_vcrc_errors', 'model', 'InfiniBand packets dropped for a bad VCRC (also in port_rcv_errors)'),
  c('rx_dlid_mismatch', 'model', "InfiniBand packets dropped: the LRH DLID is none of the port's LIDs (base LID .. base + 2^LMC - 1)"),
]);

/** Index constants for the hot path; `Ctr.X` === COUNTERS index of 'x'. */
export const enum Ctr {
  SENT_PKTS = 0,
  RCVD_PKTS,
  DUPLICATE_REQUEST,
  OUT_OF_SEQ_REQUEST,
  RCVD_RNR_ERR,
  SEND_RNR_ERR,
  RCVD_SEQ_ERR,
  ACK_DEFERRED,
  RETRY_EXCEEDED_ERR,
  RETRY_RNR_EXCEEDED_ERR,
  COMPLETER_RETRY_ERR,
  SEND_ERR,
  LINK_DOWNED,
  RDMA_SENDS,
  RDMA_RECVS,
  OUT_OF_SEQUENCE,
  PACKET_SEQ_ERR,
  IMPLIED_NAK_SEQ_ERR,
  LOCAL_ACK_TIMEOUT_ERR,
  RNR_NAK_RETRY_ERR,
  OUT_OF_BUFFER,
  RX_WRITE_REQUESTS,
  RX_READ_REQUESTS,
  RX_ATOMIC_REQUESTS,
  RX_ICRC_ENCAPSULATED,
  NP_ECN_MARKED_ROCE_PACKETS,
  NP_CNP_SENT,
  RP_CNP_HANDLED,
  RP_CNP_IGNORED,
  RESP_LOCAL_LENGTH_ERROR,
  RESP_CQE_ERROR,
  REQ_CQE_ERROR,
  REQ_REMOTE_INVALID_REQUEST,
  REQ_REMOTE_ACCESS_ERRORS,
  RESP_REMOTE_ACCESS_ERRORS,
  RESP_CQE_FLUSH_ERROR,
  REQ_CQE_FLUSH_ERROR,
  BAD_PKEY_CNTR,
  QKEY_VIOL_CNTR,
  PORT_RCV_ERRORS,
  RX_UNKNOWN_OPCODE,
  RX_UNKNOWN_QP,
  RX_QP_TYPE_MISMATCH,
  RX_QP_STATE_DROP,
  PORT_XMIT_DATA,
  PORT_RCV_DATA,
  PORT_XMIT_PACKETS,
  PORT_RCV_PACKETS,
  RX_VCRC_ERRORS,
  RX_DLID_MISMATCH,
  /** Number of counters. */
  COUNT,
}

const INDEX = new Map(COUNTERS.map((d, i) => [d.name, i] as const));

/** Index of a counter by its Linux name; -1 if unknown. */
export function counterIndex(name: string): number {
  return INDEX.get(name) ?? -1;
}

export interface HwCountersDescriptor {
  readonly sab: SharedArrayBuffer;
  readonly ports: number;
  readonly lanes: number;
}

export class HwCounters {
  readonly ports: number;
  readonly lanes: number;
  readonly sab: SharedArrayBuffer;
  private readonly f64: Float64Array;

  private constructor(desc: HwCountersDescriptor) {
    this.ports = desc.ports;
    this.lanes = desc.lanes;
    this.sab = desc.sab;
    this.f64 = new Float64Array(desc.sab);
    if (this.f64.length !== desc.ports * desc.lanes * COUNTERS.length) {
      throw new DeviceError('DEV_ERR_BAD_CONFIG', 'counter buffer size does not match ports × lanes × counters');
    }
  }

  /** New zeroed counters for `ports` ports and `lanes` writer lanes per port. */
  static create(ports: number, lanes = 1): HwCounters {
    if (!Number.isInteger(ports) || ports < 1 || !Number.isInteger(lanes) || lanes < 1) {
      throw new DeviceError('DEV_ERR_BAD_CONFIG', `bad counter geometry ${ports} ports × ${lanes} lanes`);
    }
    return new HwCounters({ sab: new SharedArrayBuffer(ports * lanes * COUNTERS.length * 8), ports, lanes });
  }

  static attach(desc: HwCountersDescriptor): HwCounters {
    return new HwCounters(desc);
  }

  get descriptor(): HwCountersDescriptor {
    return { sab: this.sab, ports: this.ports, lanes: this.lanes };
  }

  /**
   * The block a writer increments: `lane(port, k)[Ctr.SENT_PKTS]++`.
   * `portNum` is 1-based. Only the owner of lane k writes it.
   */
  lane(portNum: number, lane = 0): Float64Array {
    this.check(portNum, lane);
    const start = ((portNum - 1) * this.lanes + lane) * COUNTERS.length;
    return this.f64.subarray(start, start + COUNTERS.length);
  }

  /** Sum of a counter over all lanes of a port. */
  read(portNum: number, counter: number | string): number {
    const idx = typeof counter === 'string' ? counterIndex(counter) : counter;
    if (idx < 0 || idx >= COUNTERS.length) throw new DeviceError('DEV_ERR_BAD_CONFIG', `unknown counter ${String(counter)}`);
    this.check(portNum, 0);
    let sum = 0;
    for (let l = 0; l < this.lanes; l++) sum += this.f64[((portNum - 1) * this.lanes + l) * COUNTERS.length + idx]!;
    return sum;
  }

  /** Every counter of a port by name (as /sys/class/infiniband/<dev>/ports/<p>/hw_counters shows them). */
  snapshot(portNum: number): Record<string, number> {
    const out: Record<string, number> = {};
    COUNTERS.forEach((d, i) => (out[d.name] = this.read(portNum, i)));
    return out;
  }

  private check(portNum: number, lane: number): void {
    if (!(portNum >= 1 && portNum <= this.ports && lane >= 0 && lane < this.lanes)) {
      throw new DeviceError('DEV_ERR_BAD_CONFIG', `no counters for port ${portNum} lane ${lane}`);
    }
  }
}
