/**
 * Where seeds run: inline (one at a time in this thread; `--jobs 1`) or on
 * a worker pool (pool.ts). Both take the same tasks and give the same
 * answers: a task depends on nothing but its inputs.
 */
import type { Campaign } from './config.js';
import type { ScenarioJson } from './generator.js';
import { runJudged, runRecorded, runSeed, type RecordedRun, type SeedResult } from './run-seed.js';
import type { Verdict } from './invariants.js';

export type JudgedRun = Verdict & { eventsRun: number; virtualNs: number; crashed: string | null };

export interface Executor {
  readonly jobs: number;
  /** Generates, runs and judges one seed. */
  seed(c: Campaign, seed: number): Promise<SeedResult>;
  /** Runs and judges a scenario (a shrinking candidate). */
  scenario(json: ScenarioJson, source: string): Promise<JudgedRun>;
  /** Runs a scenario recording the frames its faults acted on. */
  record(json: ScenarioJson, source: string): Promise<RecordedRun>;
  close(): Promise<void>;
}

/** Inline: the simulated model is one per thread, so tasks run one after another. */
export function inlineExecutor(): Executor {
  let chain: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const p = chain.then(fn, fn);
    chain = p.catch(() => undefined);
    return p;
  };
  return {
    jobs: 1,
    seed: (c, s) => serial(() => runSeed(c, s)),
    scenario: (json, source) => serial(() => runJudged(json, source)),
    record: (json, source) => serial(() => runRecorded(json, source)),
    close: async () => {},
  };
}
