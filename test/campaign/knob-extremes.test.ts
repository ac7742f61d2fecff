/**
 * A campaign the checker accepts always generates valid scenarios: seeded
 * combinations of every knob at its extremes (ranges at their ends, lists of
 * one, probabilities 0 and 1), each generating scenarios for two seeds
 * that the scenario checker must accept. A knob range wider than what a
 * scenario allows (a delay of 0 ns) would fail here.
 */
import { describe, expect, it } from 'vitest';
import { parseCampaign } from '../../src/campaign/config.js';
import { generateScenario } from '../../src/campaign/generator.js';
import { mulberry32 } from '../../src/fabric/faults.js';
import { parseScenario } from '../../src/scenario/scenario.js';

/** Knob (dotted path) → values at or near the ends of what parseCampaign accepts. */
const EXTREMES: Record<string, unknown[]> = {
  'qps.RC': [0, 1, 16, [0, 16]],
  'qps.UC': [0, 16],
  'qps.UD': [0, 16],
  'qps.XRC': [0, 16],
  reverse: [0, 1],
  wrs: [1, [1, 2], 64],
  'ops.read': [0, 1e6],
  'ops.send': [0],
  'ops.cmp_swap': [1e6],
  'sizes.max': [0, 1, 4096, 1 << 20],
  'sizes.zero': [0, 1],
  maxInline: [0, 400, [400, 400]],
  inline: [0, 1],
  signaled: [0, 1],
  psn: [0, 0xffffff, [0xfffff0, 0xffffff]],
  mtus: [[256], [4096]],
  gids: [[0], [5], [0, 1, 2, 3, 4, 5]],
  depth: [1, 256],
  recvDepth: [1, 256],
  timeout: [1, 31],
  retryCnt: [0, 7],
  rnrRetry: [0, 7],
  minRnrTimer: [0, 31],
  rdAtomic: [1, 16],
  'lateRecv.probability': [0, 1],
  'lateRecv.delayNs': [0, [0, 1e12]],
  startSpreadNs: [0, 1e12],
  'faults.kinds': [[], ['drop'], ['corrupt'], ['delay'], ['reorder'], ['duplicate']],
  'faults.perSeed': [0, 16],
  'faults.rate': [0, 1],
  'faults.delayNs': [1, [1e12, 1e12]],
  'faults.reorderDepth': [1, 4096],
  'faults.duplicateCopies': [1, 64],
  duration: [1, '1s'],
  profile: ['rxe', 'ibta'],
  explainExhaustion: [false],
};

describe('campaign knobs at their extremes', () => {
  it('every accepted combination generates scenarios the scenario checker accepts (1500 campaigns)', () => {
    const rnd = mulberry32(20261201);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd.next() * xs.length)]!;
    const keys = Object.keys(EXTREMES);
    let accepted = 0;
    for (let i = 0; i < 1500; i++) {
      const doc: Record<string, unknown> = {};
      for (let j = 1 + Math.floor(rnd.next() * 5); j > 0; j--) {
        const key = pick(keys);
        const parts = key.split('.');
        let o = doc;
        for (const p of parts.slice(0, -1)) o = (o[p] ??= {}) as Record<string, unknown>;
        o[parts.at(-1)!] = pick(EXTREMES[key]!);
      }
      let c: ReturnType<typeof parseCampaign>;
      try {
        c = parseCampaign(doc, 'c.json');
      } catch (e) {
        // Only combinations that leave nothing to generate may be refused.
        expect((e as Error).message, JSON.stringify(doc)).toMatch(/^c\.json\.(qps: no QP at all|ops: every weight is 0)$/);
        continue;
      }
      accepted++;
      for (const seed of [i, i * 7919 + 1_000_000]) {
        const json = generateScenario(c, seed);
        expect(() => parseScenario(json, `case ${i} seed ${seed}`), JSON.stringify(doc)).not.toThrow();
      }
    }
    expect(accepted).toBeGreaterThan(1200);
  });
});
