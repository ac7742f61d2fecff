/**
 * `rnic campaign`'s engine: runs seeds first..first+n-1 of a campaign on
 * an executor (inline or a worker pool), at most `jobs` at a time, until
 * done or the time budget is spent (seeds already started finish; no new
 * one starts); saves every failed seed's scenario, shrinks it if asked,
 * and sums up. Results are reported in seed order whatever order the
 * workers finished in.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Campaign } from './config.js';
import type { Executor } from './executor.js';
import type { ScenarioJson } from './generator.js';
import type { Progress } from './progress.js';
import { shapeOf, summarizeCampaign, type CampaignSummary, type FailureRecord } from './report.js';
import type { SeedResult } from './run-seed.js';

export interface CampaignRunOptions {
  readonly campaign: Campaign;
  readonly firstSeed: number;
  readonly seeds: number;
  readonly executor: Executor;
  /** Where failed seeds' scenarios go; null: not saved. */
  readonly outDir: string | null;
  /** Stop starting seeds after this much wall time (ms); null: no limit. */
  readonly timeBudgetMs: number | null;
  readonly progress: Progress;
  /** Shrinks a failed seed's scenario (null: no shrinking). */
  readonly shrink: ((r: SeedResult) => Promise<ScenarioJson | null>) | null;
  /** Set by a signal handler: stop starting seeds. */
  readonly stop?: { requested: boolean };
}

/** A scenario file: two-space JSON, with each work request, fault rule and short object or list on one line. */
export function formatScenario(json: ScenarioJson): string {
  return `${pretty(json, '', 0)}\n`;
}

/** One line for a value whose JSON is short (or a WR or fault rule), otherwise one line per member. */
function pretty(v: unknown, indent: string, depth: number): string {
  const flat = JSON.stringify(v);
  if (typeof v !== 'object' || v === null) return flat;
  const isEntry = !Array.isArray(v) && ('op' in v || 'action' in v);
  if (depth > 0 && (flat.length <= 100 || isEntry)) return oneLine(v);
  const inner = indent + '  ';
  if (Array.isArray(v)) return v.length === 0 ? '[]' : `[\n${v.map((x) => inner + pretty(x, inner, depth + 1)).join(',\n')}\n${indent}]`;
  const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined);
  return entries.length === 0 ? '{}' : `{\n${entries.map(([k, x]) => `${inner}${JSON.stringify(k)}: ${pretty(x, inner, depth + 1)}`).join(',\n')}\n${indent}}`;
}

function oneLine(v: unknown): string {
  if (typeof v !== 'object' || v === null) return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(oneLine).join(', ')}]`;
  const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined);
  return entries.length === 0 ? '{}' : `{ ${entries.map(([k, x]) => `${JSON.stringify(k)}: ${oneLine(x)}`).join(', ')} }`;
}

export async function runCampaign(o: CampaignRunOptions): Promise<CampaignSummary> {
  const t0 = process.hrtime.bigint();
  const elapsed = () => Number(process.hrtime.bigint() - t0) / 1e6;
  const results: SeedResult[] = [];
  const failures: FailureRecord[] = [];
  let next = o.firstSeed;
  const end = o.firstSeed + o.seeds;
  let stoppedBy: CampaignSummary['stoppedBy'] = 'done';
  if (o.outDir) mkdirSync(o.outDir, { recursive: true });
  const saves: Promise<void>[] = [];

  const onFailure = async (r: SeedResult): Promise<void> => {
    if (!r.scenario) {
      // The seed never ran (its worker failed): nothing to save.
      failures.push({
        seed: r.seed,
        primary: r.primary ?? 'crash',
        classes: r.classes,
        failures: r.failures,
        file: null,
        original: null,
        size: { before: { qps: 0, wrs: 0, faults: 0, bytes: 0 }, after: null },
      });
      o.progress.note(`seed ${r.seed} failed: ${r.failures[0] ?? r.primary}`);
      return;
    }
    const json = r.scenario;
    let file: string | null = null;
    let original: string | null = null;
    let after: FailureRecord['size']['after'] = null;
    if (o.outDir) {
      original = join(o.outDir, `seed-${r.seed}.orig.json`);
      writeFileSync(original, formatScenario(json));
    }
    if (o.shrink) {
      const small = await o.shrink(r);
      if (small) {
        after = shapeOf(small as never);
        if (o.outDir) {
          file = join(o.outDir, `seed-${r.seed}.json`);
          writeFileSync(file, formatScenario(small));
        }
      }
    }
    if (!file) file = original;
    failures.push({
      seed: r.seed,
      primary: r.primary ?? 'unknown',
      classes: r.classes,
      failures: r.failures,
      file,
      original,
      size: { before: shapeOf(json as never), after },
    });
    o.progress.note(`seed ${r.seed} failed: ${r.primary}${file ? ` (${file})` : ''}`);
  };

  const worker = async (): Promise<void> => {
    for (;;) {
      if (next >= end) return;
      if (o.stop?.requested) {
        stoppedBy = 'interrupted';
        return;
      }
      if (o.timeBudgetMs !== null && elapsed() >= o.timeBudgetMs) {
        stoppedBy = 'time-budget';
        return;
      }
      const seed = next++;
      const r = await o.executor.seed(o.campaign, seed);
      results.push(r);
      o.progress.tick(r.ok);
      if (!r.ok) saves.push(onFailure(r));
    }
  };
  // One more runner than jobs keeps every worker busy while results come back.
  const lanes = o.executor.jobs === 1 ? 1 : o.executor.jobs + 1;
  await Promise.all(Array.from({ length: lanes }, () => worker()));
  const seedWallMs = elapsed();
  await Promise.all(saves);
  o.progress.end();
  results.sort((a, b) => a.seed - b.seed);
  return summarizeCampaign({
    campaign: o.campaign.name,
    firstSeed: o.firstSeed,
    seedsRequested: o.seeds,
    results,
    failures,
    jobs: o.executor.jobs,
    wallMs: seedWallMs,
    totalWallMs: elapsed(),
    stoppedBy,
  });
}
