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

/** One flow's receive counter and its series (found by device, then QP number: no key text per frame). */
interface FlowRx {
  bytes: number;
  readonly gbps: number[];
}

/** One sending QP's congestion-control series. */
interface CcSeries {
  readonly rate: number[];
  readonly alpha: number[];
}

export class FabricRecorder {
  readonly pfc: PfcRecord[] = [];
  readonly series: FabricSeries;
  readonly #sim: SimModel;
  readonly #ev: SimEvent;
  readonly #flows = new Map<string, Map<number, FlowRx>>();
  readonly #flowList: FlowRx[] = [];
  readonly #cc = new Map<string, Map<number, CcSeries>>();
  readonly #ccList: CcSeries[] = [];
  /** Each switch port's queue series, beside the port it samples. */
  readonly #queues: { readonly sw: SimModel['switches'][number]['sw']; readonly port: number; readonly list: number[] }[] = [];
  readonly #unobserve: () => void;
  #ended = false;

  constructor(sim: SimModel, intervalNs: number) {
    this.#sim = sim;
    this.series = { intervalNs, t: [], queueBytes: {}, flowGbps: {}, ccRateGbps: {}, ccAlpha: {} };
    for (const s of sim.switches) {
      s.sw.onPfc((r) => this.pfc.push({ ...r, port: r.port + 1 }));
      for (let p = 0; p < s.sw.portCount; p++) {
        const list: number[] = [];
        this.series.queueBytes[`${s.name}:${p + 1}`] = list;
        this.#queues.push({ sw: s.sw, port: p, list });
      }
    }
    this.#ev = new SimEvent('fabric.sample', Priority.stats, () => this.#sample());
    const observer: FrameObserver = (e) => {
      if (e.dir === 'rx') {
        const bth = bthOffset(e.headers);
        if (bth >= 0 && OPCODES[e.headers[bth]!]?.isRequest) this.#flow(e.device, bthDestQp(e.headers, bth)).bytes += payloadLength(e.headers, bth);
      }
      if (!this.#ev.scheduled && !this.#ended) {
        const now = this.#sim.now();
        this.#sim.scheduler.schedule(this.#ev, (Math.floor(now / intervalNs) + 1) * intervalNs);
      }
    };
    this.#unobserve = sim.observeHeaders(observer);
  }

  #flow(device: string, qpn: number): FlowRx {
    let byQp = this.#flows.get(device);
    if (!byQp) this.#flows.set(device, (byQp = new Map()));
    let f = byQp.get(qpn);
    if (!f) {
      // A flow first seen mid-run has had nothing in the intervals before.
      f = { bytes: 0, gbps: new Array<number>(this.series.t.length).fill(0) };
      this.series.flowGbps[`${device}/qpn ${qpn}`] = f.gbps;
      byQp.set(qpn, f);
      this.#flowList.push(f);
    }
    return f;
  }

  #ccOf(device: string, qpn: number, n: number): CcSeries {
    let byQp = this.#cc.get(device);
    if (!byQp) this.#cc.set(device, (byQp = new Map()));
    let c = byQp.get(qpn);
    if (!c) {
      c = { rate: new Array<number>(n).fill(Number.NaN), alpha: new Array<number>(n).fill(Number.NaN) };
      const k = `${device}/qpn ${qpn}`;
      this.series.ccRateGbps[k] = c.rate;
      this.series.ccAlpha[k] = c.alpha;
      byQp.set(qpn, c);
      this.#ccList.push(c);
    }
    return c;
  }

  #sample(): void {
    const s = this.series;
    const now = this.#sim.now();
    const n = s.t.length;
    s.t.push(now);
    for (const q of this.#queues) q.list.push(q.sw.queueBytes(q.port));
    for (const f of this.#flowList) {
      f.gbps.push((f.bytes * 8) / s.intervalNs);
      f.bytes = 0;
    }
    for (const c of this.#sim.congestionSnapshot()) {
      const cc = this.#ccOf(c.device, c.qpn, n);
      cc.rate.push(c.rateBps / 1e9);
      cc.alpha.push(c.alpha);
    }
    for (const cc of this.#ccList) {
      if (cc.rate.length < n + 1) cc.rate.push(Number.NaN);
      if (cc.alpha.length < n + 1) cc.alpha.push(Number.NaN);
    }
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
