/**
 * Congestion control as the NIC runs it, between the transmit path and the
 * algorithm: the notification point (a CE-marked packet → a CNP), the
 * reaction point (a CNP → the QP's flow, made on its first), the flows'
 * timers and pacing waits, and the observer of rate changes. The algorithm
 * itself sits behind `CongestionControl` (cc/congestion-control.ts).
 */
import { IBV_QPT_UD } from '../device/abi/constants.js';
import { Ctr } from '../device/counters.js';
import type { Packet } from '../wire/index.js';
import type { CcParams } from './cc-params.js';
import type { CcEventKind, CcSample, CongestionControl } from './cc/congestion-control.js';
import { Dcqcn } from './cc/dcqcn.js';
import { CnpBuilder } from './cnp.js';
import type { NicCore } from './core.js';
import type { QpCtx } from './qp-ctx.js';

/** Told of every change of a QP's congestion-control rate (time series): `qpn`, the event, its time and the state after it. */
export type CcObserver = (qpn: number, kind: CcEventKind, nowNs: number, s: CcSample) => void;

export class Congestion {
  readonly #nic: NicCore;
  readonly #params: CcParams;
  readonly #algo: CongestionControl;
  readonly #cnps = new CnpBuilder();
  /** QPs with a flow (its timers) or waiting out their pacing. */
  readonly #timed = new Set<QpCtx>();
  /** service()'s list of the QPs due, reused (empty between calls: it holds no QP alive). */
  readonly #due: QpCtx[] = [];
  #observer: CcObserver | null = null;

  constructor(nic: NicCore, params: CcParams) {
    this.#nic = nic;
    this.#params = params;
    this.#algo = new Dcqcn(params);
  }

  /**
   * A CE-marked RoCE v2 packet `p` for QP `q`: counted, and answered with a
   * CNP to the QP that sent it (RC/UC: the connected peer; UD: the DETH's
   * source QP) unless the priority's notification point is off or this QP
   * sent one less than min_time_between_cnps ago.
   */
  notificationPoint(portNum: number, q: QpCtx, p: Packet): void {
    const nic = this.#nic;
    const cc = this.#params;
    const ctr = nic.ctr(portNum);
    ctr[Ctr.NP_ECN_MARKED_ROCE_PACKETS]!++;
    if ((cc.np_enable & (1 << q.prio)) === 0) return;
    const now = nic.env.clock.now();
    if (now - q.lastCnpNs < cc.min_time_between_cnps * 1000) return;
    q.lastCnpNs = now;
    const destQp = q.qpType === IBV_QPT_UD ? (p.deth?.srcQp ?? 0) : q.destQpn;
    const frame = this.#cnps.build(q.qpn, p, nic.port(portNum).mac, destQp, cc.cnp_dscp, cc.ecn, nic.nextIpId(portNum), nic.env.deferIcrc === true);
    ctr[Ctr.NP_CNP_SENT]!++;
    nic.transmit(portNum, frame, cc.cnp_802p_prio);
  }

  /**
   * A CNP for QP `q` (an RC, UC or UD QP that exists): its flow takes it
   * when the QP's priority has the reaction point on. Returns whether it
   * did (rp_cnp_handled) or not (rp_cnp_ignored).
   */
  reactionPoint(q: QpCtx): boolean {
    if ((this.#params.rp_enable & (1 << q.prio)) === 0) return false;
    const nic = this.#nic;
    if (q.cc === null) {
      q.cc = this.#algo.newFlow(nic.port(q.portNum).linkRateBps, (kind, nowNs, s) => {
        this.#repace(q, q.rateLimitBps > 0 ? Math.min(s.rateBps, q.rateLimitBps) : s.rateBps);
        const o = this.#observer;
        if (o !== null) o(q.qpn, kind, nowNs, s);
      });
    }
    q.cc.onCnp(nic.env.clock.now());
    this.#timed.add(q);
    return true;
  }

  /**
   * The rate changed while the QP's next packet waits for its time: the
   * wait is its predecessor's bytes at the new rate, from when the
   * predecessor was allowed to start (HPCC's ChangeRate does the same).
   */
  #repace(q: QpCtx, rateBps: number): void {
    if (q.paceBytes === 0 || q.nextSendPs <= this.#nic.env.clock.now() * 1000) return;
    q.paceGapPs = Math.ceil((q.paceBytes * 8e12) / rateBps);
    q.nextSendPs = q.paceFromPs + q.paceGapPs;
  }

  /** QP `q` stopped for pacing: its wait ends at its next allowed send. */
  paced(q: QpCtx): void {
    this.#timed.add(q);
  }

  forget(q: QpCtx): void {
    this.#timed.delete(q);
  }

  /**
   * Runs the flows' timers that are due and ends the pacing waits that are
   * over (those QPs go back on the schedule), in `order` (the NIC's QP
   * creation order). Returns how many QPs it served.
   */
  service(now: number, order: (qs: QpCtx[]) => void, schedule: (q: QpCtx) => void): number {
    if (this.#timed.size === 0) return 0;
    // Called on every poll of a paced or DCQCN flow: one array kept, not one per call.
    const due = this.#due;
    due.length = 0;
    for (const q of this.#timed) {
      if ((q.cc !== null && q.cc.nextTimerNs <= now) || (q.paceWait && q.nextSendPs <= now * 1000)) due.push(q);
      else if (!q.paceWait && (q.cc === null || q.cc.nextTimerNs === Infinity)) this.#timed.delete(q);
    }
    const n = due.length;
    if (n === 0) return 0;
    if (n > 1) order(due);
    for (let i = 0; i < n; i++) {
      const q = due[i]!;
      if (q.cc !== null && q.cc.nextTimerNs <= now) q.cc.onTimer(now);
      if (q.paceWait && q.nextSendPs <= now * 1000) {
        q.paceWait = false;
        schedule(q);
      }
    }
    due.length = 0;
    return n;
  }

  /** The earlier of `d` and the first flow timer or pacing wait to end, ns. */
  nextDeadline(d: number): number {
    if (this.#timed.size === 0) return d; // after every received frame: no iterator for an empty set
    for (const q of this.#timed) {
      if (q.cc !== null && q.cc.nextTimerNs < d) d = q.cc.nextTimerNs;
      if (q.paceWait) {
        const p = Math.ceil(q.nextSendPs / 1000);
        if (p < d) d = p;
      }
    }
    return d;
  }

  /** Sets (or with null clears) the observer of every QP's rate changes. Costs nothing unset. */
  setObserver(fn: CcObserver | null): void {
    this.#observer = fn;
  }

  /** The QPs of `qps` with a flow: each one's state now (α brought up to date). */
  snapshot(qps: Iterable<[number, QpCtx]>): { qpn: number; sample: CcSample }[] {
    const now = this.#nic.env.clock.now();
    const out: { qpn: number; sample: CcSample }[] = [];
    for (const [qpn, q] of qps) if (q.cc !== null) out.push({ qpn, sample: q.cc.sample(now) });
    return out;
  }
}
