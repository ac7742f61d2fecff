/**
 * DCQCN at the reaction point (Zhu et al., SIGCOMM 2015), in the shape
 * mlx5 firmware runs it and the HPCC ns-3 simulator models it ("Mellanox
 * version", rdma-hw.cc), with mlx5's parameters (cc-params.ts):
 *
 *  - First CNP of a QP: α = initial_alpha_value / 1024, current rate Rc =
 *    target rate Rt = rate_to_set_on_first_cnp (0: the line rate). The α
 *    period (dce_tcp_rtt) and the rate-reduction period
 *    (rate_reduce_monitor_period) start at that instant.
 *  - α, at the end of every α period: α ← (1 − g)·α + g if a CNP came in
 *    the period, else (1 − g)·α, with g = (1024 − dce_tcp_g) / 1024. The
 *    first CNP only starts the clock.
 *  - Rate cut, at the end of a rate-reduction period in which a CNP came
 *    (the first CNP's period included), after that instant's α update:
 *    Rt ← Rc if clamp_tgt_rate, or clamp_tgt_rate_after_time_inc and a
 *    timer increase ran since the last cut; then Rc ← max(rpg_min_rate,
 *    Rc · max(1 − α·2^10 / 2^rpg_gd, rpg_min_dec_fac / 100)). The stages
 *    and the byte counter reset; the increase timer restarts.
 *  - Increase events, after the first cut: one every rpg_time_reset (the
 *    time stage T) and one every rpg_byte_reset bytes sent (the byte stage
 *    B; 0 = off). With F = rpg_threshold and the stage(s) before the event:
 *    fast recovery while every stage is below F (Rc ← (Rc + Rt) / 2);
 *    hyper increase once every stage is past F (Rt += rpg_hai_rate);
 *    additive increase in between (Rt += rpg_ai_rate), Rt at most the
 *    maximum rate, then Rc ← (Rc + Rt) / 2. With the byte counter off this
 *    is HPCC's rule: T < F fast recovery, T = F additive, T > F hyper.
 *  - Once Rc and Rt are both at the maximum rate (rpg_max_rate, 0 = line
 *    rate) the flow is unlimited and its increase timer stops.
 *
 * α is brought up to date lazily (each period boundary in turn, exactly as
 * a timer would), so a flow costs events only for its cuts and increases.
 */
import type { CcParams } from '../cc-params.js';
import type { CcEventKind, CcFlow, CcListener, CcSample, CongestionControl } from './congestion-control.js';

const MBPS = 1e6;

export class Dcqcn implements CongestionControl {
  readonly name = 'dcqcn';
  constructor(readonly params: CcParams) {}

  newFlow(lineRateBps: number, listener: CcListener | null): DcqcnFlow {
    return new DcqcnFlow(this.params, lineRateBps, listener);
  }
}

export class DcqcnFlow implements CcFlow, CcSample {
  rateBps: number;
  targetBps: number;
  alpha = 0;
  /** Stages: increase events since the last cut, by the timer and by the byte counter. */
  timeStage = 0;
  byteStage = 0;

  readonly #maxBps: number;
  readonly #minBps: number;
  readonly #firstBps: number;
  readonly #aiBps: number;
  readonly #haiBps: number;
  readonly #g: number;
  readonly #initialAlpha: number;
  readonly #cutScale: number;
  readonly #minFactor: number;
  readonly #alphaPeriod: number;
  readonly #decPeriod: number;
  readonly #timePeriod: number;
  readonly #byteReset: number;
  readonly #threshold: number;
  readonly #clamp: boolean;
  readonly #clampAfterTimeInc: boolean;
  readonly #listener: CcListener | null;

  #started = false;
  /** Phase of the α and rate-reduction periods: the first CNP's time. */
  #t0 = 0;
  /** End of the α period not yet applied. */
  #alphaNext = Infinity;
  #alphaCnp = false;
  /** The rate-reduction check due (a CNP came in its period), or Infinity. */
  #decAt = Infinity;
  /** The next timer increase, or Infinity (before the first cut, and once unlimited). */
  #incAt = Infinity;
  /** Rate limited since the first cut: the byte counter runs. */
  #limited = false;
  #bytes = 0;

  constructor(p: CcParams, lineRateBps: number, listener: CcListener | null) {
    this.#maxBps = p.rpg_max_rate > 0 ? Math.min(p.rpg_max_rate * MBPS, lineRateBps) : lineRateBps;
    this.#minBps = Math.min(p.rpg_min_rate * MBPS, this.#maxBps);
    this.#firstBps = p.rate_to_set_on_first_cnp > 0 ? Math.min(p.rate_to_set_on_first_cnp * MBPS, this.#maxBps) : this.#maxBps;
    this.#aiBps = p.rpg_ai_rate * MBPS;
    this.#haiBps = p.rpg_hai_rate * MBPS;
    this.#g = (1024 - p.dce_tcp_g) / 1024;
    this.#initialAlpha = p.initial_alpha_value / 1024;
    this.#cutScale = 1024 / 2 ** p.rpg_gd;
    this.#minFactor = p.rpg_min_dec_fac / 100;
    this.#alphaPeriod = p.dce_tcp_rtt * 1000;
    this.#decPeriod = p.rate_reduce_monitor_period * 1000;
    this.#timePeriod = p.rpg_time_reset * 1000;
    this.#byteReset = p.rpg_byte_reset;
    this.#threshold = p.rpg_threshold;
    this.#clamp = p.clamp_tgt_rate;
    this.#clampAfterTimeInc = p.clamp_tgt_rate_after_time_inc;
    this.#listener = listener;
    this.rateBps = this.#maxBps;
    this.targetBps = this.#maxBps;
  }

  get maxRateBps(): number {
    return this.#maxBps;
  }

  get nextTimerNs(): number {
    return this.#decAt < this.#incAt ? this.#decAt : this.#incAt;
  }

  onCnp(nowNs: number): void {
    this.#catchUpAlpha(nowNs);
    if (!this.#started) {
      this.#started = true;
      this.#t0 = nowNs;
      this.alpha = this.#initialAlpha;
      this.#alphaNext = nowNs + this.#alphaPeriod;
      this.rateBps = this.targetBps = this.#firstBps;
      this.#decAt = nowNs + this.#decPeriod;
      this.#emit('first-cnp', nowNs);
      return;
    }
    this.#alphaCnp = true;
    if (this.#decAt === Infinity) {
      // The end of the rate-reduction period this CNP falls in (one at its very start counts for it).
      const k = Math.floor((nowNs - this.#t0) / this.#decPeriod) + 1;
      this.#decAt = this.#t0 + k * this.#decPeriod;
    }
  }

  onTimer(nowNs: number): void {
    for (;;) {
      const dec = this.#decAt;
      const inc = this.#incAt;
      if (dec <= inc) {
        if (dec > nowNs) return;
        this.#decAt = Infinity;
        this.#catchUpAlpha(dec);
        this.#cut(dec);
      } else {
        if (inc > nowNs) return;
        this.#incAt = inc + this.#timePeriod;
        this.#increase(inc, this.timeStage);
        this.timeStage++;
      }
    }
  }

  onSent(wireBytes: number, nowNs: number): void {
    if (!this.#limited || this.#byteReset === 0) return;
    this.#bytes += wireBytes;
    while (this.#limited && this.#bytes >= this.#byteReset) {
      this.#bytes -= this.#byteReset;
      this.#increase(nowNs, this.byteStage);
      this.byteStage++;
    }
  }

  sample(nowNs: number): CcSample {
    this.#catchUpAlpha(nowNs);
    return { rateBps: this.rateBps, targetBps: this.targetBps, alpha: this.alpha };
  }

  /** Applies every α period that ended at or before `t`, in order. */
  #catchUpAlpha(t: number): void {
    const period = this.#alphaPeriod;
    const keep = 1 - this.#g;
    while (this.#alphaNext <= t) {
      if (this.#alphaCnp) {
        this.alpha = keep * this.alpha + this.#g;
        this.#alphaCnp = false;
      } else if (this.alpha === 0 || keep === 1) {
        // Nothing changes any more until a CNP: jump to the last boundary at or before t.
        this.#alphaNext += Math.floor((t - this.#alphaNext) / period) * period;
      } else {
        this.alpha *= keep;
        if (this.alpha < 1e-300) this.alpha = 0;
      }
      this.#alphaNext += period;
    }
  }

  #cut(t: number): void {
    if (this.#clamp || (this.#clampAfterTimeInc && this.timeStage !== 0)) this.targetBps = this.rateBps;
    const factor = Math.max(1 - this.alpha * this.#cutScale, this.#minFactor);
    this.rateBps = Math.max(this.#minBps, this.rateBps * factor);
    this.timeStage = 0;
    this.byteStage = 0;
    this.#bytes = 0;
    this.#limited = true;
    this.#incAt = t + this.#timePeriod;
    this.#emit('cut', t);
  }

  /** One increase event; `stage` is the stage count of the counter that fired, before it counts this one. */
  #increase(t: number, stage: number): void {
    const F = this.#threshold;
    let kind: CcEventKind;
    if (this.#byteReset === 0) {
      kind = stage < F ? 'fast-recovery' : stage === F ? 'additive' : 'hyper';
    } else {
      const T = this.timeStage;
      const B = this.byteStage;
      kind = Math.max(T, B) < F ? 'fast-recovery' : Math.min(T, B) > F ? 'hyper' : 'additive';
    }
    if (kind === 'additive') this.targetBps = Math.min(this.targetBps + this.#aiBps, this.#maxBps);
    else if (kind === 'hyper') this.targetBps = Math.min(this.targetBps + this.#haiBps, this.#maxBps);
    this.rateBps = this.rateBps / 2 + this.targetBps / 2;
    if (this.rateBps >= this.#maxBps && this.targetBps >= this.#maxBps) {
      // Back at full rate: unlimited until the next CNP.
      this.rateBps = this.#maxBps;
      this.#limited = false;
      this.#incAt = Infinity;
    }
    this.#emit(kind, t);
  }

  #emit(kind: CcEventKind, t: number): void {
    if (this.#listener !== null) this.#listener(kind, t, { rateBps: this.rateBps, targetBps: this.targetBps, alpha: this.alpha });
  }
}
