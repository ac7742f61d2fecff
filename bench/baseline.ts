/**
 * The saved baseline a later `npm run bench` is compared with
 * (bench/baseline.json, committed). Each entry is a figure's median and the
 * same-run reference it was measured beside (the scheduler's no-queue loop),
 * so a comparison can be read two ways: raw (this machine now vs then) and
 * normalized by the reference (which cancels part of a shared machine's
 * load). The CPU-second figures are compared raw and a drop of more than
 * 25% is flagged as a regression; wall figures are never flagged.
 *
 * `npm run bench -- sim --save-baseline` (or `-- sim-stream`, `-- fabric`)
 * rewrites the entries it measured.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface BaselineEntry {
  /** The figure's median (higher is better). */
  value: number;
  /** The same-run reference (no-queue loop callbacks/s). */
  reference: number;
  measured: string;
}

export interface BaselineFile {
  note: string;
  entries: Record<string, BaselineEntry>;
}

/** bench/baseline.json in the source tree (the bench runs from dist/bench). */
const PATH = fileURLToPath(new URL('../../bench/baseline.json', import.meta.url));

export function loadBaseline(): BaselineFile {
  try {
    return JSON.parse(readFileSync(PATH, 'utf8')) as BaselineFile;
  } catch {
    return { note: '', entries: {} };
  }
}

const fresh: Record<string, BaselineEntry> = {};

/** "vs baseline" text for one figure, and remembers it for saveBaseline(). */
export function vsBaseline(key: string, value: number, reference: number, lowerIsBetter = false): string {
  if (!Number.isFinite(value)) return 'vs baseline: not measured (nothing saved)';
  fresh[key] = { value, reference, measured: new Date().toISOString() };
  const b = loadBaseline().entries[key];
  if (!b) return 'vs baseline: none saved';
  if (key.startsWith('rt-')) return vsRealtime(value, reference, b, lowerIsBetter);
  const raw = value / b.value;
  // CPU-second figures barely move with the machine's load: compared raw, and a drop of more
  // than 25% is flagged. Wall figures move 2-4x with load: shown raw and per no-queue callback
  // (the loop is measured beside the rounds, not during them), never flagged.
  if (key.endsWith('-cpu')) return `vs baseline: x${raw.toFixed(2)}${raw < 0.75 ? '  REGRESSION' : ''}`;
  const norm = value / reference / (b.value / b.reference);
  return `vs baseline: x${raw.toFixed(2)} raw, x${norm.toFixed(2)} per no-queue callback (wall: load-dependent)`;
}

/**
 * The realtime figures (bench/realtime.bench.ts) take two threads of a
 * shared 2-core machine: they move with its load more than any CPU-second
 * figure. Shown raw and relative to their same-run reference (crc32 for a
 * rate, the cross-thread spin hand-off for a latency), as "better than" (> 1)
 * or "worse than" (< 1) the saved run; a figure that is more than 2x worse on
 * both readings is flagged.
 */
function vsRealtime(value: number, reference: number, b: BaselineEntry, lowerIsBetter: boolean): string {
  const raw = lowerIsBetter ? b.value / value : value / b.value;
  const norm = lowerIsBetter ? b.value / b.reference / (value / reference) : value / reference / (b.value / b.reference);
  return `vs baseline: x${raw.toFixed(2)} raw, x${norm.toFixed(2)} per same-run reference (> 1: better)${raw < 0.5 && norm < 0.5 ? '  REGRESSION' : ''}`;
}

/** Writes what this run measured over the saved entries of the same keys. */
export function saveBaseline(): void {
  const f = loadBaseline();
  f.note ||= 'medians of npm run bench, each beside the no-queue loop measured in the same run; rewrite with npm run bench -- sim --save-baseline';
  Object.assign(f.entries, fresh);
  writeFileSync(PATH, `${JSON.stringify(f, null, 2)}\n`);
  console.log(`baseline saved: ${Object.keys(fresh).join(', ')} -> bench/baseline.json`);
}
