/**
 * `rnic campaign` end to end: the same verdicts inline and on the worker
 * pool, failures saved as scenarios `rnic sim` replays, exit statuses and
 * one-line errors. Runs the built CLI and the built worker (npm test builds
 * first).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseCampaign } from '../../src/campaign/config.js';
import { inlineExecutor } from '../../src/campaign/executor.js';
import { poolExecutor } from '../../src/campaign/pool.js';
import { generateScenario } from '../../src/campaign/generator.js';
import { shrinkScenario } from '../../src/campaign/shrink.js';

const CLI = join(import.meta.dirname, '../../dist/src/cli/main.js');
const dir = mkdtempSync(join(tmpdir(), 'rnic-campaign-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const rnic = (...args: string[]) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 240_000, cwd: dir });

/**
 * A campaign that fails often, for a reason the IBTA gives: no retries at 20%
 * loss, the exhaustion counted as a failure (explainExhaustion false).
 */
const LOSSY = [
  '--set',
  'explainExhaustion=false',
  '--set',
  'retryCnt=0',
  '--set',
  'profile="ibta"',
  '--set',
  'faults.kinds=["drop"]',
  '--set',
  'faults.rate=0.2',
  '--set',
  'qps.RC=1',
  '--set',
  'wrs=[2,5]',
];
const lossy = parseCampaign({ explainExhaustion: false, retryCnt: 0, profile: 'ibta', faults: { kinds: ['drop'], rate: 0.2 }, qps: { RC: 1 }, wrs: [2, 5] });

describe('rnic campaign', () => {
  it('the same seeds give the same verdicts inline and on a pool of two workers', async () => {
    const seeds = [0, 1, 2, 3, 4, 5, 6, 7];
    const inline = inlineExecutor();
    const pool = poolExecutor(2);
    try {
      const a = await Promise.all(seeds.map((s) => inline.seed(lossy, s)));
      const b = await Promise.all(seeds.map((s) => pool.seed(lossy, s)));
      const v = (r: (typeof a)[number]) => [r.seed, r.ok, r.primary, r.classes, r.failures, r.eventsRun, r.virtualNs];
      expect(b.map(v)).toEqual(a.map(v));
      expect(
        a.some((r) => !r.ok),
        'some seeds fail',
      ).toBe(true);
    } finally {
      await pool.close();
    }
  }, 120_000);

  it('a failure shrinks to the same scenario inline and on the pool', async () => {
    const inline = inlineExecutor();
    const pool = poolExecutor(2);
    try {
      let seed = 0;
      let r = await inline.seed(lossy, seed);
      while (r.ok && seed < 100) r = await inline.seed(lossy, ++seed);
      expect(r.ok, 'a failing seed among the first 100').toBe(false);
      const json = generateScenario(lossy, seed);
      const a = await shrinkScenario(json, r.primary!, inline);
      const b = await shrinkScenario(json, r.primary!, pool);
      expect(b.scenario).toEqual(a.scenario);
      expect([b.runs, b.steps]).toEqual([a.runs, a.steps]);
      expect(a.steps).toBeGreaterThan(0);
    } finally {
      await pool.close();
    }
  }, 240_000);

  it('a clean campaign exits 0 with a summary', () => {
    const r = rnic('campaign', '--seeds', '6', '--jobs', '2', '--json', 'clean.json', '--quiet');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^campaign default: seeds 0\.\.5 \(6\): 6 passed, 0 failed; .* on 2 jobs, .* seeds\/s/);
    const s = JSON.parse(readFileSync(join(dir, 'clean.json'), 'utf8'));
    expect(s).toMatchObject({ campaign: 'default', seeds: 6, passed: 6, failed: 0, stoppedBy: 'done', jobs: 2, failureClasses: {}, failures: [] });
    expect(s.seedsPerSec).toBeGreaterThan(0);
  });

  it('failures exit 1, are saved shrunk, and the saved scenario fails the same way under rnic sim', () => {
    const r = rnic('campaign', '--seeds', '3', '--jobs', '1', '--out', 'fails', '--json', '-', ...LOSSY);
    expect(r.status).toBe(1);
    const s = JSON.parse(r.stdout);
    expect(s.failed).toBeGreaterThan(0);
    expect(s.passed + s.failed).toBe(3);
    const f = s.failures[0];
    expect(f.primary).toMatch(/^RC error-completion IBV_WC_RETRY_EXC_ERR$/);
    expect(f.file).toBe(join('fails', `seed-${f.seed}.json`));
    expect(f.size.after.wrs).toBeLessThanOrEqual(f.size.before.wrs);
    expect(f.size.after.qps).toBe(1);
    expect(readdirSync(join(dir, 'fails')).sort()).toContain(`seed-${f.seed}.orig.json`);
    const sim = rnic('sim', f.file, '--out', 'replay', '--quiet');
    expect(sim.status).toBe(3);
    const verify = JSON.parse(readFileSync(join(dir, 'replay', 'counters.json'), 'utf8')).verify as string[];
    expect(verify.join('\n')).toMatch(/completed with IBV_WC_RETRY_EXC_ERR/);
    // The original replays too.
    expect(rnic('sim', join('fails', `seed-${f.seed}.orig.json`), '--out', 'replay-orig', '--quiet').status).toBe(3);
  }, 240_000);

  it('--time-budget stops starting seeds and says so', () => {
    const r = rnic('campaign', '--seeds', '100000', '--jobs', '1', '--time-budget', '2s', '--json', '-', '--quiet');
    expect(r.status).toBe(0);
    const s = JSON.parse(r.stdout);
    expect(s.stoppedBy).toBe('time-budget');
    expect(s.seeds).toBeGreaterThan(0);
    expect(s.seeds).toBeLessThan(100000);
    expect(s.passed).toBe(s.seeds);
  });

  it('bad options and campaign files: one line naming the field, exit 2', () => {
    writeFileSync(join(dir, 'bad.json'), JSON.stringify({ faults: { rate: [0.2, 0.1] } }));
    const cases: [string[], RegExp][] = [
      [['--seeds', '0'], /^rnic campaign: --seeds: expected an integer ≥ 1, got "0"\n$/],
      [['--jobs', 'lots'], /^rnic campaign: --jobs: expected an integer in 1\.\.256, got "lots"\n$/],
      [['--campaign', 'bad.json'], /^rnic campaign: bad\.json\.faults\.rate: min 0\.2 is above max 0\.1\n$/],
      [['--set', 'mtus=[1500]'], /^rnic campaign: campaign\.mtus\[0\]: expected 256, 512, 1024, 2048 or 4096, got 1500\n$/],
      [['--set', 'nope'], /^rnic campaign: --set nope: expected KEY=JSON\n$/],
      [['--time-budget', 'soon'], /^rnic campaign: --time-budget: expected a duration/],
      [['--frobnicate'], /^rnic campaign: Unknown option '--frobnicate'/],
    ];
    for (const [args, msg] of cases) {
      const r = rnic('campaign', ...args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(msg);
      expect(r.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
    }
  });

  it('--print-campaign prints campaigns/default.json', () => {
    const r = rnic('campaign', '--print-campaign');
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(readFileSync(new URL('../../campaigns/default.json', import.meta.url), 'utf8'));
  });
});
