/** A campaign's summary (JSON) and its short human report. */
import type { SeedResult } from './run-seed.js';

export interface FailureRecord {
  readonly seed: number;
  readonly primary: string;
  readonly classes: readonly string[];
  readonly failures: readonly string[];
  /** The saved scenario (shrunk when shrinking ran), and the unshrunk one. */
  readonly file: string | null;
  readonly original: string | null;
  /** Work requests, QPs and fault rules before and after shrinking. */
  readonly size: { readonly before: Shape; readonly after: Shape | null };
}

export interface Shape {
  readonly qps: number;
  readonly wrs: number;
  readonly faults: number;
  readonly bytes: number;
}

export interface CampaignSummary {
  readonly campaign: string;
  readonly firstSeed: number;
  /** Seeds asked for, and run (fewer when the time budget ran out). */
  readonly seedsRequested: number;
  readonly seeds: number;
  readonly passed: number;
  readonly failed: number;
  /** Passed seeds in which a QP ran out of its retry budget as the run explains (retry_cnt / rnr_retry below 7). */
  readonly exhausted: number;
  readonly stoppedBy: 'done' | 'time-budget' | 'interrupted';
  /** Failed seeds per failure class (their primary class). */
  readonly failureClasses: Record<string, number>;
  /** Per failure class, the seeds it was the first failure of (at most 20 listed). */
  readonly primarySeeds: Record<string, readonly number[]>;
  /** Every class seen in any failed seed, with the seeds that showed it (at most 20 listed). */
  readonly classSeeds: Record<string, readonly number[]>;
  readonly failures: readonly FailureRecord[];
  readonly jobs: number;
  /** Wall time running the seeds (what seeds/s is computed from), and in all, shrinking included. */
  readonly wallMs: number;
  readonly totalWallMs: number;
  readonly seedsPerSec: number;
  readonly seedsPerSecPerJob: number;
  /** Median and maximum wall time of one seed, ms. */
  readonly seedMs: { readonly median: number; readonly max: number };
  readonly events: number;
}

export function shapeOf(json: { qps: unknown[]; traffic: { wrs?: { size?: number }[] }[]; faults?: unknown[] }): Shape {
  let wrs = 0;
  let bytes = 0;
  for (const t of json.traffic) {
    for (const w of t.wrs ?? []) {
      wrs++;
      bytes += w.size ?? 8;
    }
  }
  return { qps: json.qps.length, wrs, faults: json.faults?.length ?? 0, bytes };
}

export function summarizeCampaign(args: {
  campaign: string;
  firstSeed: number;
  seedsRequested: number;
  results: readonly SeedResult[];
  failures: readonly FailureRecord[];
  jobs: number;
  wallMs: number;
  totalWallMs: number;
  stoppedBy: CampaignSummary['stoppedBy'];
}): CampaignSummary {
  const { results } = args;
  const failureClasses: Record<string, number> = {};
  const classSeeds: Record<string, number[]> = {};
  const primarySeeds: Record<string, number[]> = {};
  for (const r of results) {
    if (r.ok) continue;
    const p = r.primary ?? 'unknown';
    failureClasses[p] = (failureClasses[p] ?? 0) + 1;
    const ps = (primarySeeds[p] ??= []);
    if (ps.length < 20) ps.push(r.seed);
    for (const c of r.classes) {
      const l = (classSeeds[c] ??= []);
      if (l.length < 20) l.push(r.seed);
    }
  }
  const ms = results.map((r) => r.wallMs).sort((a, b) => a - b);
  const sec = args.wallMs / 1000;
  const seedsPerSec = sec > 0 ? results.length / sec : 0;
  return {
    campaign: args.campaign,
    firstSeed: args.firstSeed,
    seedsRequested: args.seedsRequested,
    seeds: results.length,
    passed: results.filter((r) => r.ok).length,
    failed: results.filter((r) => !r.ok).length,
    exhausted: results.filter((r) => r.ok && r.exhausted > 0).length,
    stoppedBy: args.stoppedBy,
    failureClasses: sortByCount(failureClasses),
    primarySeeds,
    classSeeds,
    failures: [...args.failures].sort((a, b) => a.seed - b.seed),
    jobs: args.jobs,
    wallMs: Math.round(args.wallMs),
    totalWallMs: Math.round(args.totalWallMs),
    seedsPerSec: round(seedsPerSec),
    seedsPerSecPerJob: round(seedsPerSec / args.jobs),
    seedMs: { median: round(ms[Math.floor(ms.length / 2)] ?? 0), max: round(ms.at(-1) ?? 0) },
    events: results.reduce((s, r) => s + r.eventsRun, 0),
  };
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}

function sortByCount(o: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(o).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])));
}

/** The short human report. */
export function formatReport(s: CampaignSummary): string {
  const lines: string[] = [];
  const last = s.firstSeed + s.seeds - 1;
  lines.push(
    `campaign ${s.campaign}: seeds ${s.firstSeed}..${last} (${s.seeds}${s.seeds < s.seedsRequested ? ` of ${s.seedsRequested}, stopped by the ${s.stoppedBy}` : ''}): ` +
      `${s.passed} passed, ${s.failed} failed; ${(s.wallMs / 1000).toFixed(1)} s wall${s.totalWallMs > s.wallMs + 1000 ? ` (${(s.totalWallMs / 1000).toFixed(1)} s with shrinking)` : ''} on ${s.jobs} job${s.jobs === 1 ? '' : 's'}, ` +
      `${s.seedsPerSec.toFixed(1)} seeds/s (${s.seedsPerSecPerJob.toFixed(1)} per job), a seed ${s.seedMs.median.toFixed(0)} ms median, ${s.seedMs.max.toFixed(0)} ms at most`,
  );
  if (s.exhausted > 0)
    lines.push(
      `  ${s.exhausted} of the passed seeds ran a QP out of its retry budget, as their faults or late receives explain (expect: success-or-exhausted)`,
    );
  if (s.failed > 0) {
    lines.push('  failure classes (failed seeds by first failure):');
    for (const [c, n] of Object.entries(s.failureClasses))
      lines.push(`    ${String(n).padStart(5)}  ${c}  (seeds ${(s.primarySeeds[c] ?? []).slice(0, 8).join(', ')}${n > 8 ? ', ...' : ''})`);
    const shown = s.failures.slice(0, 10);
    lines.push(`  failures${s.failures.length > shown.length ? ` (first ${shown.length} of ${s.failures.length})` : ''}:`);
    for (const f of shown) {
      const a = f.size.after;
      const shrunk = a
        ? `, shrunk to ${a.qps} QP${a.qps === 1 ? '' : 's'}, ${a.wrs} WR${a.wrs === 1 ? '' : 's'}, ${a.faults} fault${a.faults === 1 ? '' : 's'}`
        : '';
      lines.push(`    seed ${f.seed}: ${f.primary}${shrunk}${f.file ? `: rnic sim ${f.file}` : ''}`);
      if (f.failures[0]) lines.push(`      ${f.failures[0]}`);
    }
  }
  return lines.join('\n');
}
