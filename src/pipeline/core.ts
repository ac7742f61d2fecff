/**
 * What the stages of one RNIC share: the environment, the per-QP state,
 * the CQE writer and the transmit path. `Nic` (nic.ts) implements it; the
 * requester, completer and responder are functions over it.
 */
import type { CqeFields } from '../device/cqe.js';
import type { CcParams } from './cc-params.js';
import type { EthPort } from './eth-port.js';
import type { NicEnv } from './nic-env.js';
import type { QpCtx } from './qp-ctx.js';

export interface NicCore {
  readonly env: NicEnv;
  /** QoS and congestion-control parameters in force (env.cc or the defaults). */
  readonly cc: CcParams;
  /** Counter block of a port (1-based), for this engine's lane. */
  ctr(portNum: number): Float64Array;
  /** A zeroed scratch CQE record. */
  cqe(): CqeFields;
  /** Writes a CQE to CQ `cqn`, raising a completion event when armed. */
  complete(cqn: number, f: CqeFields): void;
  /** Raises an asynchronous event (ibv_event_type) about `resource` on the EQ of CQ `cqn`. */
  asyncEvent(cqn: number, type: number, resource: number): void;
  /** Moves the QP to ERR: outstanding work is flushed on the next pass. */
  fail(q: QpCtx): void;
  /**
   * Sends a frame out of port `portNum` on transmit priority `priority`
   * (0..7). `spacingPs` >= 0: a paced QP's packet, to leave the MAC no
   * sooner than that after the QP's previous one (-1: not paced).
   */
  transmit(portNum: number, frame: Uint8Array, priority?: number, spacingPs?: number): void;
  port(portNum: number): EthPort;
  /** Next IPv4 identification value for port `portNum`. */
  nextIpId(portNum: number): number;
  /** Puts the QP on the transmit schedule. */
  schedule(q: QpCtx): void;
  /** Context-table offset of the QP. */
  qpOff(q: QpCtx): number;
}
