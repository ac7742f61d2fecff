/**
 * A piscina pool of worker threads for the campaign (workers/campaign-task.ts):
 * each worker has its own simulated model and runs one task at a time.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import type { Executor, JudgedRun } from './executor.js';
import type { RecordedRun, SeedResult } from './run-seed.js';
import type { CampaignTask } from './task.js';

/** The compiled task entry (dist/workers/campaign-task.js), from built code or from sources (tests). */
export function campaignTaskUrl(): URL {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.js')) return new URL('../../workers/campaign-task.js', import.meta.url);
  const built = new URL('../../dist/workers/campaign-task.js', import.meta.url);
  if (!existsSync(fileURLToPath(built))) throw new Error('dist/workers/campaign-task.js is missing: run `npm run build` first');
  return built;
}

export function poolExecutor(jobs: number): Executor {
  const pool = new Piscina({
    filename: campaignTaskUrl().href,
    minThreads: jobs,
    maxThreads: jobs,
    concurrentTasksPerWorker: 1,
    idleTimeout: 60_000,
  });
  const run = <T>(t: CampaignTask): Promise<T> => pool.run(t) as Promise<T>;
  return {
    jobs,
    seed: (campaign, seed) => run<SeedResult>({ kind: 'seed', campaign, seed }),
    scenario: (json, source) => run<JudgedRun>({ kind: 'scenario', json, source }),
    record: (json, source) => run<RecordedRun>({ kind: 'record', json, source }),
    close: () => pool.destroy(),
  };
}
