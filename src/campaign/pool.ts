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

/**
 * Piscina loads a task file with require() first and import() if that
 * fails. On a Node that can require() ES modules (20.19 and later), the
 * task's module graph is then loaded by require() while the model imports
 * some of it later (boot.ts imports the simulator on first use), and Node 20
 * sometimes stops a worker with ERR_INTERNAL_ASSERTION ("a module that is
 * imported again after being required"). Turning require(esm) off in the
 * workers makes that first require() fail at once, so the whole graph is
 * loaded by import().
 */
const WORKER_EXEC_ARGV = process.allowedNodeEnvironmentFlags.has('--no-experimental-require-module')
  ? [...process.execArgv, '--no-experimental-require-module']
  : [...process.execArgv];

export function poolExecutor(jobs: number): Executor {
  const pool = new Piscina({
    filename: campaignTaskUrl().href,
    minThreads: jobs,
    maxThreads: jobs,
    concurrentTasksPerWorker: 1,
    idleTimeout: 60_000,
    execArgv: WORKER_EXEC_ARGV,
  });
  const run = <T>(t: CampaignTask): Promise<T> => pool.run(t) as Promise<T>;
  // A task that could not run at all (the worker died, its modules failed to load) is a crash
  // of that seed, reported with the error, not the end of the campaign.
  const why = (e: unknown) => `worker: ${(e as { code?: string }).code ?? (e as Error).name}: ${(e as Error).message}`;
  const crash = (e: unknown) => ({
    ok: false,
    classes: ['crash'],
    primary: 'crash',
    failures: [why(e)],
    exhausted: 0,
    eventsRun: 0,
    virtualNs: 0,
    crashed: why(e),
  });
  return {
    jobs,
    seed: (campaign, seed) => run<SeedResult>({ kind: 'seed', campaign, seed }).catch((e: unknown) => ({ ...crash(e), seed, wallMs: 0, scenario: null })),
    scenario: (json, source) => run<JudgedRun>({ kind: 'scenario', json, source }).catch(crash),
    record: (json, source) =>
      run<RecordedRun>({ kind: 'record', json, source }).catch(() => ({ ok: false, primary: 'crash', hits: [], truncated: false, onsetNs: 0, qpnBase: null })),
    close: () => pool.destroy(),
  };
}
