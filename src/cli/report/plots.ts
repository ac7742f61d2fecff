/**
 * The run's plots as Vega specifications (rendered to SVG by vega's
 * headless View, no canvas): egress queue depth per switch port, receive
 * rate per flow, PAUSE periods per (switch port, priority), and the
 * distribution of flow completion times. Pure: data in, spec out.
 */
import type { FabricResult, FlowRecord } from '../../scenario/scenario-runner.js';

type Spec = Record<string, unknown>;

const WIDTH = 720;
const HEIGHT = 260;
/** More series than this: no legend (it would be taller than the plot). */
const LEGEND_MAX = 16;

interface Point {
  x: number;
  y: number;
  s: string;
}

function lineChart(title: string, xTitle: string, yTitle: string, points: Point[], opts: { step?: boolean; series: number }): Spec {
  return {
    $schema: 'https://vega.github.io/schema/vega/v6.json',
    width: WIDTH,
    height: HEIGHT,
    padding: 8,
    title: { text: title },
    data: [{ name: 'table', values: points }],
    scales: [
      { name: 'x', type: 'linear', range: 'width', zero: false, nice: true, domain: { data: 'table', field: 'x' } },
      { name: 'y', type: 'linear', range: 'height', zero: true, nice: true, domain: { data: 'table', field: 'y' } },
      { name: 'color', type: 'ordinal', range: 'category', domain: { data: 'table', field: 's' } },
    ],
    axes: [
      { orient: 'bottom', scale: 'x', title: xTitle },
      { orient: 'left', scale: 'y', title: yTitle },
    ],
    legends: opts.series <= LEGEND_MAX ? [{ stroke: 'color', title: 'series', symbolType: 'stroke' }] : [],
    marks: [
      {
        type: 'group',
        from: { facet: { name: 'one', data: 'table', groupby: 's' } },
        marks: [
          {
            type: 'line',
            from: { data: 'one' },
            encode: {
              enter: {
                x: { scale: 'x', field: 'x' },
                y: { scale: 'y', field: 'y' },
                stroke: { scale: 'color', field: 's' },
                strokeWidth: { value: 1.4 },
                interpolate: { value: opts.step ? 'step-after' : 'linear' },
              },
            },
          },
        ],
      },
    ],
  };
}

/** Egress queue depth (KB) over time, one line per switch port that ever queued. */
export function queueDepthSpec(f: FabricResult): Spec {
  const pts: Point[] = [];
  let n = 0;
  for (const [port, ys] of Object.entries(f.series.queueBytes)) {
    if (!ys.some((y) => y > 0)) continue;
    n++;
    ys.forEach((y, i) => pts.push({ x: f.series.t[i]! / 1000, y: y / 1000, s: port }));
  }
  return lineChart('Switch egress queue depth', 'time (µs)', 'queue (KB)', pts, { series: n });
}

/** Receive rate per flow (Gb/s) over time. */
export function flowRateSpec(f: FabricResult): Spec {
  const pts: Point[] = [];
  const names = Object.keys(f.series.flowGbps);
  for (const k of names) f.series.flowGbps[k]!.forEach((y, i) => pts.push({ x: f.series.t[i]! / 1000, y, s: k }));
  return lineChart('Receive rate per flow', 'time (µs)', 'rate (Gb/s)', pts, { series: names.length });
}

/** The NIC's congestion-control (DCQCN) rate per sending QP, Gb/s, over time. */
export function ccRateSpec(f: FabricResult): Spec {
  const pts: Point[] = [];
  const names = Object.keys(f.series.ccRateGbps);
  for (const k of names)
    f.series.ccRateGbps[k]!.forEach((y, i) => {
      if (!Number.isNaN(y)) pts.push({ x: f.series.t[i]! / 1000, y, s: k });
    });
  return lineChart('Congestion-control rate per QP (DCQCN at the sender)', 'time (µs)', 'rate (Gb/s)', pts, { series: names.length });
}

/** One bar per pause period: from an XOFF a switch sent to its XON (or the end of the run). */
export interface PausePeriod {
  readonly lane: string;
  readonly startNs: number;
  readonly endNs: number;
}

export function pausePeriods(f: FabricResult, endNs: number): PausePeriod[] {
  const open = new Map<string, number>();
  const out: PausePeriod[] = [];
  for (const r of f.pfc) {
    const lane = `${r.node}:${r.port} prio ${r.priority}`;
    if (r.quanta > 0) {
      if (!open.has(lane)) open.set(lane, r.timeNs);
    } else {
      const s = open.get(lane);
      if (s !== undefined) out.push({ lane, startNs: s, endNs: r.timeNs });
      open.delete(lane);
    }
  }
  for (const [lane, s] of open) out.push({ lane, startNs: s, endNs });
  return out;
}

export function pauseSpec(f: FabricResult, endNs: number): Spec {
  const periods = pausePeriods(f, endNs).map((p) => ({ lane: p.lane, x: p.startNs / 1000, x2: Math.max(p.endNs, p.startNs + 1) / 1000 }));
  const lanes = [...new Set(periods.map((p) => p.lane))].sort();
  return {
    $schema: 'https://vega.github.io/schema/vega/v6.json',
    width: WIDTH,
    height: Math.max(60, 18 * lanes.length),
    padding: 8,
    title: { text: periods.length === 0 ? 'PFC pause periods (none sent)' : 'PFC pause periods (XOFF sent → XON sent)' },
    data: [{ name: 'table', values: periods }],
    scales: [
      { name: 'x', type: 'linear', range: 'width', zero: true, nice: true, domain: [0, endNs / 1000] },
      { name: 'y', type: 'band', range: 'height', padding: 0.2, domain: lanes },
    ],
    axes: [
      { orient: 'bottom', scale: 'x', title: 'time (µs)' },
      { orient: 'left', scale: 'y', title: 'ingress port, priority paused' },
    ],
    marks: [
      {
        type: 'rect',
        from: { data: 'table' },
        encode: {
          enter: {
            x: { scale: 'x', field: 'x' },
            x2: { scale: 'x', field: 'x2' },
            y: { scale: 'y', field: 'lane' },
            height: { scale: 'y', band: 1 },
            fill: { value: '#d62728' },
          },
        },
      },
    ],
  };
}

/** The empirical CDF of flow completion times (µs). */
export function fctSpec(flows: readonly FlowRecord[]): Spec {
  const fct = flows
    .map((f) => f.fctNs)
    .filter((x): x is number => x !== null)
    .sort((a, b) => a - b);
  const pts: Point[] = fct.map((v, i) => ({ x: v / 1000, y: (i + 1) / fct.length, s: 'FCT' }));
  const spec = lineChart(`Flow completion time, CDF of ${fct.length} flows`, 'FCT (µs)', 'fraction of flows', pts, { step: true, series: 0 });
  return spec;
}
