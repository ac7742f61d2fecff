/**
 * One seed of a campaign: generate its scenario, run it on the simulator,
 * judge it. What a worker does per task, and what `--jobs 1` does inline.
 */
import { parseScenario } from '../scenario/scenario.js';
import { runScenario, type FaultHit } from '../scenario/scenario-runner.js';
import type { Campaign } from './config.js';
import { generateScenario, type ScenarioJson } from './generator.js';
import { judge, type Verdict } from './invariants.js';

export interface SeedResult extends Verdict {
  readonly seed: number;
  readonly wallMs: number;
  readonly eventsRun: number;
  readonly virtualNs: number;
  /** The scenario, for a failed seed (to save and shrink). */
  readonly scenario: ScenarioJson | null;
  /** The run threw (a setup error, a bug in the model reached as an exception). */
  readonly crashed: string | null;
}

/** Runs scenario JSON and judges it; an exception is a failure of its own class ('crash'). */
export async function runJudged(json: ScenarioJson, source: string): Promise<Verdict & { eventsRun: number; virtualNs: number; crashed: string | null }> {
  try {
    const s = parseScenario(json, source);
    // No capture while judging (it costs); the saved scenario keeps the default one for `rnic sim`.
    const r = await runScenario({ ...s, capture: [] });
    return { ...judge(r, new Map(s.qps.map((q) => [q.name, q.type]))), eventsRun: r.eventsRun, virtualNs: r.endNs, crashed: null };
  } catch (e) {
    const msg = `${(e as { code?: string }).code ?? (e as Error).name}: ${(e as Error).message}`;
    return { ok: false, classes: ['crash'], primary: 'crash', failures: [msg], exhausted: 0, eventsRun: 0, virtualNs: 0, crashed: msg };
  }
}

export async function runSeed(c: Campaign, seed: number): Promise<SeedResult> {
  const t0 = process.hrtime.bigint();
  const json = generateScenario(c, seed);
  const v = await runJudged(json, `${c.name}-${seed}`);
  return { ...v, seed, wallMs: Number(process.hrtime.bigint() - t0) / 1e6, scenario: v.ok ? null : json };
}

/** Most fault hits a recorded run keeps (a livelocked QP can draw tens of thousands). */
export const MAX_HITS = 20_000;

/** A run that also records every frame the faults acted on (to pin them, shrink.ts). */
export interface RecordedRun {
  readonly ok: boolean;
  readonly primary: string | null;
  /** In time order; at most MAX_HITS (`truncated` says so). */
  readonly hits: readonly FaultHit[];
  readonly truncated: boolean;
  /** When the failure began: the first finding, or a stalled stream's last progress, whichever is first (virtual ns). */
  readonly onsetNs: number;
  /** QPN of the scenario's QP i, on both ends, is qpnBase + i (null: not so). */
  readonly qpnBase: number | null;
}

export async function runRecorded(json: ScenarioJson, source: string): Promise<RecordedRun> {
  const hits: FaultHit[] = [];
  let truncated = false;
  try {
    const s = parseScenario(json, source);
    const r = await runScenario(
      { ...s, capture: [] },
      {
        onFault: (h) => {
          if (hits.length < MAX_HITS) hits.push(h);
          else truncated = true;
        },
      },
    );
    const v = judge(r, new Map(s.qps.map((q) => [q.name, q.type])));
    const index = new Map(s.qps.map((q, i) => [q.name, i]));
    const t0 = r.timeline.qps[0];
    const base = t0 ? t0.qpn - index.get(t0.qp)! : null;
    const linear = base !== null && r.timeline.qps.every((t) => t.qpn === base + index.get(t.qp)!);
    const onsetNs = Math.min(r.endNs, ...r.findings.map((f) => f.ns), ...r.stalls.map((x) => x.lastProgressNs));
    hits.sort((a, b) => a.ns - b.ns);
    return { ok: v.ok, primary: v.primary, hits, truncated, onsetNs, qpnBase: linear ? base : null };
  } catch {
    return { ok: false, primary: 'crash', hits, truncated, onsetNs: 0, qpnBase: null };
  }
}
