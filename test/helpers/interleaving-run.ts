/**
 * What the interleaving tests beyond RC share (interleavings-*.test.ts):
 * a seed's scheduling of the hand-turned devices (how many passes a driver
 * call runs, passes between calls, time standing or jumping past timers),
 * the step loop that runs an application against it with a hang bound,
 * and the run over many seeds. test/runtime/interleavings.test.ts (RC)
 * draws the same dimensions and more (events, SQD, teardown).
 */
import { expect } from 'vitest';
import { ibv_poll_cq, newWc, type ibv_cq, type ibv_wc } from '../../src/index.js';
import { handTurnedHost, type HandTurnedHost, type ServicePolicy } from './hand-turned-host.js';

/** RNIC_INTERLEAVING_SEEDS=N runs N seeds; else `fallback`. */
export const seedCount = (fallback: number) => Number(process.env.RNIC_INTERLEAVING_SEEDS ?? fallback);

/** Past any run that works (RC timeout 17, 537 ms, with retries; RNR timer). */
const MAX_VIRTUAL_NS = 120e9;
const MAX_STEPS = 50_000;

export interface Schedule {
  readonly policy: ServicePolicy;
  /** Time between two steps of the driver loop (ns). */
  advance(): number;
  extraPasses(): number;
}

export function drawSchedule(rand: () => number): Schedule {
  const serve = rand(); // chance that a driver call finds the device running
  const settle = rand() * 0.5; // chance that it runs until quiet
  return {
    policy: () => {
      const r = rand();
      return r < settle ? 'settle' : r < settle + serve * (1 - settle) ? 1 + Math.floor(rand() * 3) : 0;
    },
    advance: () => {
      const r = rand();
      if (r < 0.6) return 0;
      if (r < 0.97) return Math.floor(rand() * 20_000);
      return Math.floor(rand() * 150e6); // past a retransmit or RNR timer
    },
    extraPasses: () => (rand() < 0.3 ? Math.floor(rand() * 3) : 0),
  };
}

/**
 * Runs `step` (the applications' next driver calls; a failure or null)
 * with passes and time between, until `done`. A run past the bounds is a
 * hang, reported with `where()`. `await` between steps lets woken
 * event waits run.
 */
export async function drive(
  t: HandTurnedHost,
  sched: Schedule,
  app: { step(n: number): string | null; done(): boolean; where(): string },
): Promise<string | null> {
  t.policy = sched.policy;
  for (let n = 0; !app.done(); n++) {
    if (n > MAX_STEPS || t.clock.t > MAX_VIRTUAL_NS) return `hang: after ${n} steps and ${(t.clock.t / 1e9).toFixed(3)} s virtual; ${app.where()}`;
    const e = app.step(n);
    if (e) return e;
    for (let k = sched.extraPasses(); k > 0; k--) t.host.poll();
    t.clock.t += sched.advance();
    t.deliverInterrupts();
    if (n % 16 === 15) await new Promise<void>((r) => setImmediate(r));
  }
  return null;
}

const wcs = Array.from({ length: 16 }, () => newWc());
/** Everything on `cq` now (copies). */
export function pollAll(cq: ibv_cq): ibv_wc[] {
  const out: ibv_wc[] = [];
  for (;;) {
    const n = ibv_poll_cq(cq, wcs.length, wcs);
    if (n < 0) throw new Error(`ibv_poll_cq: ${n}`);
    for (let i = 0; i < n; i++) out.push({ ...wcs[i]! });
    if (n < wcs.length) return out;
  }
}

/**
 * Runs `seeds` seeds of `runSeed` on fresh hand-turned devices, each failure
 * (or throw) named with its seed; expects none.
 */
export async function runSeeds(seeds: number, runSeed: (t: HandTurnedHost, seed: number) => Promise<string | null>): Promise<void> {
  const failures: string[] = [];
  for (let seed = 1; seed <= seeds; seed++) {
    const t = await handTurnedHost();
    let failure: string | null;
    try {
      failure = await runSeed(t, seed);
    } catch (e) {
      failure = `threw: ${(e as Error).stack ?? String(e)}`;
    } finally {
      await t.close();
    }
    if (failure) failures.push(`seed ${seed}: ${failure}`);
  }
  expect(failures.slice(0, 10)).toEqual([]);
}

/** A random byte pattern of `len` bytes written into `buf` at `at`. */
export function fill(buf: Uint8Array, at: number, len: number, rand: () => number): void {
  for (let k = 0; k < len; k++) buf[at + k] = Math.floor(rand() * 256);
}

/** Where `got` (at `at`, `len` bytes then zeros to `slot`) differs from `want` at `from`; or null. */
export function bytesDiffer(got: Uint8Array, at: number, want: Uint8Array, from: number, len: number, slot: number): string | null {
  for (let k = 0; k < slot; k++) {
    const w = k < len ? want[from + k]! : 0;
    if (got[at + k] !== w) return `byte ${k} is ${got[at + k]}, expected ${w}`;
  }
  return null;
}
