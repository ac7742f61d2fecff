/**
 * `rnic campaign` speed: seeds per second of the default campaign on one
 * core (inline, no pool), generation, setup, traffic, checks and teardown
 * included. Each repeat runs the same seeds; min, median and max over the
 * repeats (the machine is shared: the spread says how much).
 */
import '../src/boot.js';
import { DEFAULT_CAMPAIGN } from '../src/campaign/config.js';
import { runSeed } from '../src/campaign/run-seed.js';

export interface CampaignBench {
  readonly seeds: number;
  readonly repeats: readonly number[];
  readonly min: number;
  readonly median: number;
  readonly max: number;
  readonly failed: number;
}

export async function benchCampaign(seeds = 100, repeats = 5): Promise<CampaignBench> {
  // One warm-up seed (JIT, module init).
  await runSeed(DEFAULT_CAMPAIGN, 0);
  const rates: number[] = [];
  let failed = 0;
  for (let r = 0; r < repeats; r++) {
    const t0 = process.hrtime.bigint();
    for (let s = 0; s < seeds; s++) {
      const res = await runSeed(DEFAULT_CAMPAIGN, s);
      if (!res.ok && r === 0) failed++;
    }
    rates.push(seeds / (Number(process.hrtime.bigint() - t0) / 1e9));
  }
  const sorted = [...rates].sort((a, b) => a - b);
  return { seeds, repeats: rates, min: sorted[0]!, median: sorted[Math.floor(sorted.length / 2)]!, max: sorted.at(-1)!, failed };
}

export function printCampaign(b: CampaignBench): void {
  console.log(`\ncampaign (default campaign, seeds 0..${b.seeds - 1}, inline on one core, ${b.repeats.length} repeats)`);
  console.log(
    `  seeds/s per core: min ${b.min.toFixed(1)}, median ${b.median.toFixed(1)}, max ${b.max.toFixed(1)}  (repeats: ${b.repeats.map((x) => x.toFixed(1)).join(', ')})`,
  );
  console.log(`  ${b.failed} of ${b.seeds} seeds failed their checks`);
}
