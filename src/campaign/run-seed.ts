/**
 * One seed of a campaign: generate its scenario, run it on the simulator,
 * judge it. What a worker does per task, and what `--jobs 1` does inline.
 */
import { parseScenario } from '../runtime/sim/scenario.js';
import { runScenario } from '../runtime/sim/scenario-runner.js';
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
    return { ...judge(r), eventsRun: r.eventsRun, virtualNs: r.endNs, crashed: null };
  } catch (e) {
    const msg = `${(e as { code?: string }).code ?? (e as Error).name}: ${(e as Error).message}`;
    return { ok: false, classes: ['crash'], primary: 'crash', failures: [msg], eventsRun: 0, virtualNs: 0, crashed: msg };
  }
}

export async function runSeed(c: Campaign, seed: number): Promise<SeedResult> {
  const t0 = process.hrtime.bigint();
  const json = generateScenario(c, seed);
  const v = await runJudged(json, `${c.name}-${seed}`);
  return { ...v, seed, wallMs: Number(process.hrtime.bigint() - t0) / 1e6, scenario: v.ok ? null : json };
}
