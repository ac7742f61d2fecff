/** The docs carry the tables and keys of the code they describe. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { describeCcParams } from '../../src/pipeline/cc-params.js';
import { SCENARIO_KEYS } from '../../src/scenario/scenario.js';
import { describeSimRuntimeParams } from '../../src/runtime/sim/sim-params.js';

const doc = (name: string) => readFileSync(new URL(`../../docs/${name}`, import.meta.url), 'utf8');

describe('docs', () => {
  it('docs/simulator.md carries the SIM_RUNTIME_PARAMS table', () => {
    expect(doc('simulator.md')).toContain(describeSimRuntimeParams());
  });

  it('docs/pipeline.md carries the CC_PARAMS table (QoS, ECN, CNP, DCQCN)', () => {
    expect(doc('pipeline.md')).toContain(describeCcParams());
  });

  it('docs/scenarios.md documents every scenario key', () => {
    const text = doc('scenarios.md');
    for (const [where, keys] of Object.entries(SCENARIO_KEYS)) {
      for (const k of keys) expect(text, `${where}.${k}`).toContain(`\`${k}\``);
    }
  });
});
