/**
 * The congestion-control interface the transmit path calls, per QP (a
 * "flow"): what was sent, that a CNP came, and its timers. The path asks
 * the flow one thing back, the rate to pace at. DCQCN (dcqcn.ts) is one
 * implementation; HPCC, TIMELY or Swift would be others beside it, with
 * their own feedback hooks, without touching the transmit path.
 *
 * A flow keeps no timers of its own: it says when it next wants `onTimer`
 * (`nextTimerNs`), and the NIC calls it then (or later) with the time. All
 * times are ns of the clock the NIC is handed; rates are bits per second.
 */

/** What one flow's state looks like from outside, for time series and tests. */
export interface CcSample {
  /** Current (pacing) rate, b/s. */
  readonly rateBps: number;
  /** Target rate, b/s (algorithms without one report the current rate). */
  readonly targetBps: number;
  /** DCQCN's α in [0, 1] (0 for algorithms without one). */
  readonly alpha: number;
}

/** Why a flow's rate or α changed (the time series' event column). */
export type CcEventKind = 'first-cnp' | 'cut' | 'fast-recovery' | 'additive' | 'hyper';

export interface CcFlow {
  /** Current rate to pace at, b/s; at or above the line rate the flow is not paced. */
  readonly rateBps: number;
  /** When the flow next wants `onTimer`, ns; Infinity for never. */
  readonly nextTimerNs: number;
  /** A packet of `wireBytes` (as the line carries it) left at `nowNs`. */
  onSent(wireBytes: number, nowNs: number): void;
  /** A CNP for this flow arrived at `nowNs`. */
  onCnp(nowNs: number): void;
  /** The time asked for in `nextTimerNs` has come (`nowNs` >= it). */
  onTimer(nowNs: number): void;
  /** The state at `nowNs` (α brought up to date). */
  sample(nowNs: number): CcSample;
}

/** Told of each change of a flow's rate: cheap to leave unset. */
export type CcListener = (kind: CcEventKind, nowNs: number, s: CcSample) => void;

export interface CongestionControl {
  readonly name: string;
  /** A flow on a port of `lineRateBps`, made when it first needs one (DCQCN: its first CNP). */
  newFlow(lineRateBps: number, listener: CcListener | null): CcFlow;
}
