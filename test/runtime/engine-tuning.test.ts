/** What a device engine's loop gets from the configuration's engineSpinUs and the caller's StartOptions.tuning. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/runtime/config.js';
import { engineTuning } from '../../src/runtime/model.js';
import { DEFAULT_TUNING } from '../../src/runtime/run-loop.js';

describe('engineTuning', () => {
  it('no engineSpinUs: the caller tuning as given (the loop defaults to DEFAULT_TUNING)', () => {
    expect(engineTuning(DEFAULT_CONFIG, undefined)).toBeUndefined();
    expect(engineTuning(DEFAULT_CONFIG, { maxSleepMs: 5 })).toEqual({ maxSleepMs: 5 });
  });

  it('engineSpinUs sets the spin in ns and a pass cap that lets it last (≥ 10 ns a pass)', () => {
    expect(engineTuning({ ...DEFAULT_CONFIG, engineSpinUs: 1000 }, undefined)).toEqual({ spinNs: 1_000_000, spinPasses: 100_000 });
    expect(engineTuning({ ...DEFAULT_CONFIG, engineSpinUs: 0 }, undefined)).toEqual({ spinNs: 0, spinPasses: DEFAULT_TUNING.spinPasses });
    expect(engineTuning({ ...DEFAULT_CONFIG, engineSpinUs: 10 }, undefined)).toEqual({ spinNs: 10_000, spinPasses: DEFAULT_TUNING.spinPasses });
  });

  it("the caller's StartOptions.tuning wins over the file", () => {
    expect(engineTuning({ ...DEFAULT_CONFIG, engineSpinUs: 1000 }, { spinNs: 7 })).toEqual({ spinNs: 7, spinPasses: 100_000 });
  });
});
