/**
 * Checks of a run through switches (docs/scenarios.md, "Checks"), on top
 * of the application's:
 *
 *   lossless   with PFC on, a switch never refuses a frame of a lossless
 *              priority (its `droppedLossless`); and when nothing else can
 *              lose a frame (no fault rules, every QP's priority lossless
 *              at every switch) no responder ever sees a PSN gap
 *              (`out_of_sequence`): retransmissions then only come from
 *              timeouts (a long pause), which resend from the oldest
 *              unacknowledged PSN and leave no gap (nor does a host that
 *              sent no RNR NAK: after one, the rest of the message comes
 *              in past the expected PSN).
 *   dcqcn      every flow's rate stays within [min(rpg_min_rate, line),
 *              line]; a cut never raises it, an increase never lowers it
 *              nor takes it past the target, which never falls; and a
 *              flow whose last change was a cut, in a run that went on
 *              for rpg_time_reset after it, had an increase since (the
 *              rate recovers).
 */
import { resolveCcParams } from '../pipeline/cc-params.js';
import type { CongestionEvent } from '../runtime/sim/sim-model.js';
import type { Scenario } from './scenario.js';
import type { FabricResult, Finding } from './scenario-runner.js';

/** A rate compared with another: b/s differences below this are rounding. */
const EPS_BPS = 1;

function finding(kind: string, where: string, ns: number, detail: string): Finding {
  return { kind, qp: where, from: 'a', type: 'fabric', op: '', status: '', ns, detail };
}

/**
 * The switch priority of a QP's packets: its DSCP's, or 0 for RoCE v1,
 * which has no IP header (an untagged v1 frame is priority 0). GID index parity tells
 * v1 from v2 in the hosts' GID table (docs/configuration.md: each address
 * as v1, then v2).
 */
function prioOf(q: Scenario['qps'][number], sw: Scenario['switches'][number]): number {
  // The NIC sends untagged, so a switch that trusts the PCP falls back to the DSCP too.
  return q.gid_index % 2 === 0 ? 0 : sw.config.dscpToPriority[q.traffic_class >> 2]!;
}

export function losslessFindings(s: Scenario, fabric: FabricResult, counters: ScenarioCounters, endNs: number): Finding[] {
  const out: Finding[] = [];
  for (const [sw, ports] of Object.entries(fabric.switches)) {
    for (const [p, c] of Object.entries(ports)) {
      if (c.droppedLossless > 0)
        out.push(finding('lossless-drop', `${sw}:${p}`, endNs, `${sw}:${p} refused ${c.droppedLossless} frames of a lossless priority (PFC on)`));
    }
  }
  const allLossless =
    s.switches.length > 0 &&
    s.links.every((l) => l.faults.length === 0) &&
    s.switches.every((w) => w.config.pfc.enabled && s.qps.every((q) => ((w.config.pfc.priorities >>> prioOf(q, w)) & 1) === 1));
  if (allLossless) {
    for (const [dev, ports] of Object.entries(counters)) {
      for (const [p, c] of Object.entries(ports)) {
        // After an RNR NAK the rest of the message, already on its way, arrives past the expected PSN: no loss.
        const gaps = c.out_of_sequence ?? 0;
        if (gaps > 0 && (c.send_rnr_err ?? 0) === 0)
          out.push(finding('lossless-gap', `${dev}:${p}`, endNs, `${dev}:${p} saw ${gaps} out-of-sequence requests on a lossless fabric with no faults`));
      }
    }
  }
  return out;
}

type ScenarioCounters = Readonly<Record<string, Readonly<Record<string, Readonly<Record<string, number>>>>>>;

/** DCQCN's rules on each flow's events (`events` in time order, per device and QP). */
export function dcqcnFindings(s: Scenario, events: readonly CongestionEvent[], endNs: number): Finding[] {
  const out: Finding[] = [];
  const lineOf = new Map<string, number>();
  for (const l of s.links) for (const end of [l.a, l.b]) lineOf.set(end.split(':')[0]!, l.linkRate);
  const params = new Map(s.devices.map((d) => [d.name, resolveCcParams(d.congestion ?? {})]));
  const last = new Map<string, CongestionEvent>();
  const bad = new Set<string>();
  const fail = (key: string, e: CongestionEvent, what: string): void => {
    // One finding per flow: the first rule it broke.
    if (bad.has(key)) return;
    bad.add(key);
    out.push(finding('dcqcn', `${e.device}/qpn ${e.qpn}`, e.ns, `DCQCN ${e.kind} at ${e.ns} ns: ${what}`));
  };
  for (const e of events) {
    if (e.kind === 'sample') continue;
    const key = `${e.device}/${e.qpn}`;
    const line = lineOf.get(e.device) ?? Infinity;
    const p = params.get(e.device);
    const max = p && p.rpg_max_rate > 0 ? Math.min(p.rpg_max_rate * 1e6, line) : line;
    const min = Math.min((p?.rpg_min_rate ?? 0) * 1e6, max);
    const prev = last.get(key);
    const before = prev?.rateBps ?? max;
    const g = (x: number): string => (x >= 1e9 ? `${(x / 1e9).toFixed(3)} Gb/s` : `${(x / 1e6).toFixed(3)} Mb/s`);
    if (e.rateBps > max + EPS_BPS || e.rateBps < min - EPS_BPS) fail(key, e, `rate ${g(e.rateBps)} is outside [${g(min)}, ${g(max)}]`);
    else if ((e.kind === 'cut' || e.kind === 'first-cnp') && e.rateBps > before + EPS_BPS)
      fail(key, e, `a cut raised the rate from ${g(before)} to ${g(e.rateBps)}`);
    else if (e.kind !== 'cut' && e.kind !== 'first-cnp' && prev !== undefined) {
      if (e.rateBps < before - EPS_BPS) fail(key, e, `an increase lowered the rate from ${g(before)} to ${g(e.rateBps)}`);
      else if (e.targetBps < prev.targetBps - EPS_BPS) fail(key, e, `an increase lowered the target from ${g(prev.targetBps)} to ${g(e.targetBps)}`);
      else if (e.rateBps > e.targetBps + EPS_BPS) fail(key, e, `the rate ${g(e.rateBps)} passed the target ${g(e.targetBps)}`);
    }
    last.set(key, e);
  }
  for (const [key, e] of last) {
    const p = params.get(e.device);
    if (p === undefined || bad.has(key)) continue;
    const period = p.rpg_time_reset * 1000;
    if (e.kind === 'cut' && e.rateBps < (lineOf.get(e.device) ?? Infinity) && endNs > e.ns + period)
      fail(key, e, `no increase in the ${endNs - e.ns} ns after it (rpg_time_reset ${period} ns): the rate never recovered`);
  }
  return out;
}
