/**
 * Reproducibility: the same scenario with the same seed gives a
 * byte-identical pcap, identical counters and an identical timeline, run
 * after run; another seed gives another run.
 */
import { describe, expect, it } from 'vitest';
import { run, scenarioJson } from './helpers.js';

/** Four QPs, every fault kind at once, seeded. */
function faulty(seed: number): Record<string, unknown> {
  const json = scenarioJson('random-loss');
  json.seed = seed;
  json.capture = ['rnic0:1', 'rnic1:1'];
  json.faults = [
    { action: 'drop', probability: 0.02 },
    { action: 'corrupt', probability: 0.01 },
    { action: 'duplicate', probability: 0.01, copies: 2 },
    { action: 'reorder', probability: 0.01, reorderDepth: 2 },
    { action: 'delay', probability: 0.02, delayNs: '2us' },
  ];
  for (const t of json.traffic as { count: number }[]) t.count = 50;
  return json;
}

function same(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0;
}

describe('one seed, one run', () => {
  it('same scenario and seed twice: byte-identical pcaps, identical counters and timeline', async () => {
    const r1 = await run(faulty(5));
    const r2 = await run(faulty(5));
    expect(r1.verify).toEqual([]);
    const faults = r1.sim.links.l0!.faults!;
    // Every kind of fault happened at least once, so the run exercised them all.
    for (const k of ['dropped', 'corrupted', 'duplicated', 'held', 'delayed'] as const) expect(faults[k], k).toBeGreaterThan(0);
    for (const port of ['rnic0:1', 'rnic1:1']) {
      expect(r1.captures[port]!.length).toBeGreaterThan(10_000);
      expect(same(r1.captures[port]!, r2.captures[port]!), `${port} pcap`).toBe(true);
    }
    expect(r2.counters).toEqual(r1.counters);
    expect(JSON.stringify(r2.timeline)).toBe(JSON.stringify(r1.timeline));
    expect(r2.sim).toEqual(r1.sim);
    expect(r2.eventsRun).toBe(r1.eventsRun);
    expect(r2.endNs).toBe(r1.endNs);
  });

  it('another seed: another run', async () => {
    const r1 = await run(faulty(5));
    const r3 = await run(faulty(6));
    expect(r3.verify).toEqual([]);
    expect(same(r1.captures['rnic0:1']!, r3.captures['rnic0:1']!)).toBe(false);
    expect(JSON.stringify(r3.timeline)).not.toBe(JSON.stringify(r1.timeline));
    expect(r3.counters).not.toEqual(r1.counters);
  });

  it('a string seed works like a number', async () => {
    const a = faulty(0);
    a.seed = 'a string seed';
    const r1 = await run(a);
    const r2 = await run(a);
    expect(same(r1.captures['rnic0:1']!, r2.captures['rnic0:1']!)).toBe(true);
  });
});
