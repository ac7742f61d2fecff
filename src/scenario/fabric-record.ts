/**
 * What a fabric run records beside the work-request timeline: every PAUSE
 * frame a switch sends (pfc.json), and time series sampled every
 * `intervalNs` of virtual time: the egress queue depth of every switch
 * port, the receive rate of every flow (payload bytes of request packets
 * arriving at a QP per interval), and the ports' paused priorities.
 *
 * The sampler is one named event at the stats priority. It runs only
 * while something else is scheduled (a lone sampler would keep a quiet
 * simulation busy for ever); the first frame after a quiet spell wakes it
 * at the next interval boundary.
 */
import type { PfcRecord } from '../fabric/switch/switch.js';
import { OPCODES } from '../wire/index.js';
import { bthDestQp, bthOffset, payloadLength } from '../runtime/sim/frame-info.js';
import { Priority, SimEvent } from '../runtime/sim/scheduler.js';
import type { FrameObserver } from '../runtime/sim/sim-device.js';
import type { SimModel } from '../runtime/sim/sim-model.js';

export interface FabricSeries {
  readonly intervalNs: number;
  /** Sample times, ns (the end of each interval). */
  readonly t: number[];
  /** 'sw0:3' (1-based port) → egress queue bytes at each sample. */
  readonly queueBytes: Record<string, number[]>;
  /** 'h1/qpn 17' → payload Gb/s received in each interval. */
  readonly flowGbps: Record<string, number[]>;
  /** Per sending QP (`"h1/qpn 2"`): the NIC's congestion-control rate (Gb/s) and α at each sample (NaN before it has a flow). */
  readonly ccRateGbps: Record<string, number[]>;
  readonly ccAlpha: Record<string, number[]>;
}

export class FabricRecorder {
  readonly pfc: PfcRecord[] = [];
  readonly series: FabricSeries;
  readonly #sim: SimModel;
  readonly #ev: SimEvent;
  readonly #bytes = new Map<string, number>();
  readonly #unobserve: () => void;
  #ended = false;

  constructor(sim: SimModel, intervalNs: number) {
    this.#sim = sim;
    this.series = { intervalNs, t: [], queueBytes: {}, flowGbps: {}, ccRateGbps: {}, ccAlpha: {} };
    for (const s of sim.switches) {
      s.sw.onPfc((r) => this.pfc.push({ ...r, port: r.port + 1 }));
      for (let p = 0; p < s.sw.portCount; p++) this.series.queueBytes[`${s.name}:${p + 1}`] = [];
    }
    this.#ev = new SimEvent('fabric.sample', Priority.stats, () => this.#sample());
    const observer: FrameObserver = (e) => {
      if (e.dir === 'rx') {
        const bth = bthOffset(e.frame);
        if (bth >= 0 && OPCODES[e.frame[bth]!]?.isRequest) {
          const key = `${e.device}/qpn ${bthDestQp(e.frame, bth)}`;
          this.#bytes.set(key, (this.#bytes.get(key) ?? 0) + payloadLength(e.frame, bth));
        }
      }
      if (!this.#ev.scheduled && !this.#ended) {
        const now = this.#sim.now();
        this.#sim.scheduler.schedule(this.#ev, (Math.floor(now / intervalNs) + 1) * intervalNs);
      }
    };
    this.#unobserve = sim.observe(observer);
  }

  #sample(): void {
    const s = this.series;
    const now = this.#sim.now();
    const n = s.t.length;
    s.t.push(now);
    for (const w of this.#sim.switches) {
      for (let p = 0; p < w.sw.portCount; p++) s.queueBytes[`${w.name}:${p + 1}`]!.push(w.sw.queueBytes(p));
    }
    for (const [k, b] of this.#bytes) {
      let list = s.flowGbps[k];
      if (!list) s.flowGbps[k] = list = new Array<number>(n).fill(0);
      list.push((b * 8) / s.intervalNs);
      this.#bytes.set(k, 0);
    }
    for (const list of Object.values(s.flowGbps)) if (list.length < n + 1) list.push(0);
    for (const c of this.#sim.congestionSnapshot()) {
      const k = `${c.device}/qpn ${c.qpn}`;
      let rate = s.ccRateGbps[k];
      let alpha = s.ccAlpha[k];
      if (!rate) s.ccRateGbps[k] = rate = new Array<number>(n).fill(Number.NaN);
      if (!alpha) s.ccAlpha[k] = alpha = new Array<number>(n).fill(Number.NaN);
      rate.push(c.rateBps / 1e9);
      alpha.push(c.alpha);
    }
    for (const list of Object.values(s.ccRateGbps)) if (list.length < n + 1) list.push(Number.NaN);
    for (const list of Object.values(s.ccAlpha)) if (list.length < n + 1) list.push(Number.NaN);
    // Keep sampling while the fabric has other work; a frame wakes us after a quiet spell.
    if (this.#sim.scheduler.pending > 0) this.#sim.scheduler.schedule(this.#ev, now + s.intervalNs);
  }

  /** No more samples (the PFC log goes on until stop). */
  endSampling(): void {
    this.#ended = true;
    if (this.#ev.scheduled) this.#sim.scheduler.deschedule(this.#ev);
  }

  stop(): void {
    this.endSampling();
    this.#unobserve();
    for (const s of this.#sim.switches) s.sw.onPfc(null);
  }
}
