/**
 * `rnic campaign`: N seeds of a generated mixed workload under random
 * faults, each run on the simulator and checked from the application's
 * view; failures saved as scenario files `rnic sim` replays (docs/faults.md,
 * "Campaigns").
 */
import { availableParallelism } from 'node:os';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runCampaign } from '../../campaign/campaign.js';
import { CampaignError, DEFAULT_CAMPAIGN, campaignJson, formatCampaign, loadCampaign, parseCampaign, type Campaign } from '../../campaign/config.js';
import { inlineExecutor, type Executor } from '../../campaign/executor.js';
import { poolExecutor } from '../../campaign/pool.js';
import { formatReport } from '../../campaign/report.js';
import { shrinkScenario } from '../../campaign/shrink.js';
import { Progress } from '../../campaign/progress.js';
import { CliError, type Command } from '../command.js';

const USAGE = `usage: rnic campaign [--seeds N] [--first-seed S] [--campaign FILE] [--set KEY=JSON]...
                     [--jobs J] [--time-budget DURATION] [--out DIR] [--json FILE]
                     [--no-shrink] [--max-shrink N] [--quiet] [--print-campaign]

Runs seeds S..S+N-1 of a campaign: each seed generates a mixed workload (RC
QPs both ways doing SEND, SEND_IMM, WRITE, WRITE_IMM, READ, CAS, FAA; a UC
and a UD QP; random PSNs, MTUs, depths, timers, late receives) under random
faults, runs it on the simulator, and checks it from the application's view
(every WR completes once, in order, with the right status; the bytes; the
atomics; guard bytes around every MR; no hang). Every failed seed is saved
as a scenario file that 'rnic sim' replays, shrunk to a small one that still
fails the same way. The campaign file format is in docs/faults.md.

  --seeds N          how many seeds (default 100)
  --first-seed S     the first seed (default 0)
  --campaign FILE    the generator's knobs (default: the built-in campaign,
                     also in campaigns/default.json)
  --set KEY=JSON     override one knob, e.g. --set faults.rate=[0.01,0.02]
                     --set qps.RC=2 --set 'faults.kinds=["drop"]' (repeatable)
  --jobs J           worker threads (default: the number of cores); 1 runs
                     the seeds in this thread
  --time-budget D    start no seed after D of wall time ('10min', '30s'); the
                     seeds started finish, and the summary says so; shrinking
                     stops a minute after it
  --out DIR          where failed seeds' scenarios go (default
                     campaign-failures/<campaign>)
  --json FILE        write the summary as JSON (- for stdout)
  --no-shrink        save failures as generated, without shrinking
  --max-shrink N     shrink at most the first N failures found (default 20);
                     the others are saved as generated
  --quiet            no progress line
  --print-campaign   print the effective campaign file and exit

Exit status: 0 when every seed passed, 1 when one failed, 2 on bad usage.`;

function setKey(target: Record<string, unknown>, spec: string): void {
  const eq = spec.indexOf('=');
  if (eq <= 0) throw new CliError(`--set ${spec}: expected KEY=JSON`);
  const key = spec.slice(0, eq);
  const text = spec.slice(eq + 1);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = text; // bare text: a string ('10us', a name)
  }
  const parts = key.split('.');
  let o = target;
  for (const p of parts.slice(0, -1)) {
    const v = o[p];
    if (typeof v !== 'object' || v === null || Array.isArray(v)) o[p] = {};
    o = o[p] as Record<string, unknown>;
  }
  o[parts.at(-1)!] = value;
}

/** A wall-clock duration: '90s', '10min', '1.5h', '500ms' (a bare number is seconds) → ms. */
function wallDuration(v: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|min|h)?\s*$/.exec(v);
  if (!m) throw new CliError(`--time-budget: expected a duration such as 30s, 10min or 1h, got ${JSON.stringify(v)}`);
  const ms = Number(m[1]) * { ms: 1, s: 1000, min: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'min' | 'h'];
  if (!(ms > 0)) throw new CliError('--time-budget: must be more than 0');
  return ms;
}

function count(v: string | undefined, name: string, def: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (v === undefined) return def;
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(Number(v)) || Number(v) < min || Number(v) > max)
    throw new CliError(`--${name}: expected an integer ${max === Number.MAX_SAFE_INTEGER ? `≥ ${min}` : `in ${min}..${max}`}, got ${JSON.stringify(v)}`);
  return Number(v);
}

/** Worker threads at most: thousands of them crash V8 (SIGTRAP) before a seed runs. */
const MAX_JOBS = 256;

export const campaignCommand: Command = {
  summary: 'N seeds of a generated workload under random faults, checked; failures saved, shrunk',
  usage: USAGE,
  async run(args) {
    try {
      return await campaignMain(args);
    } catch (e) {
      // A bad option or campaign file: one line naming it.
      const code = (e as { code?: string }).code ?? '';
      if (e instanceof CliError || e instanceof CampaignError || code.startsWith('ERR_PARSE_ARGS')) {
        process.stderr.write(`rnic campaign: ${(e as Error).message}\n`);
        return 2;
      }
      throw e;
    }
  },
};

async function campaignMain(args: string[]): Promise<number> {
  {
    // Every option is checked before the worker pool starts.
    const { values, positionals } = parseArgs({
      args,
      options: {
        seeds: { type: 'string' },
        'first-seed': { type: 'string' },
        campaign: { type: 'string' },
        set: { type: 'string', multiple: true },
        jobs: { type: 'string', short: 'j' },
        'time-budget': { type: 'string' },
        out: { type: 'string' },
        json: { type: 'string' },
        'no-shrink': { type: 'boolean' },
        'max-shrink': { type: 'string' },
        quiet: { type: 'boolean' },
        'print-campaign': { type: 'boolean' },
      },
      allowPositionals: true,
      strict: true,
    });
    if (positionals.length > 0) throw new CliError(`unexpected argument ${positionals[0]}`);
    const seeds = count(values.seeds, 'seeds', 100, 1);
    const firstSeed = count(values['first-seed'], 'first-seed', 0, 0);
    if (firstSeed + seeds > Number.MAX_SAFE_INTEGER) throw new CliError('--first-seed: too large');
    const jobs = count(values.jobs, 'jobs', availableParallelism(), 1, MAX_JOBS);
    const budgetMs = values['time-budget'] === undefined ? null : wallDuration(values['time-budget']);
    const base = values.campaign ? campaignJson(loadCampaign(values.campaign)) : campaignJson(DEFAULT_CAMPAIGN);
    for (const s of values.set ?? []) setKey(base, s);
    const campaign: Campaign = parseCampaign(base, values.campaign ?? 'campaign');
    if (values['print-campaign']) {
      process.stdout.write(formatCampaign(campaign));
      return 0;
    }
    // An empty path would fail at the first failure (--out) or write nothing, silently (--json).
    for (const k of ['out', 'json'] as const) if (values[k] === '') throw new CliError(`--${k}: an empty path`);
    const outDir = values.out ?? join('campaign-failures', campaign.name);
    const quiet = values.quiet ?? false;
    const progress = new Progress(seeds, quiet ? null : (s) => process.stderr.write(s), process.stderr.isTTY === true);
    const maxShrink = count(values['max-shrink'], 'max-shrink', 20, 0);
    const executor: Executor = jobs === 1 ? inlineExecutor() : poolExecutor(jobs);
    // With a time budget, shrinking gets at most a minute past it.
    const shrinkDeadline = budgetMs === null ? undefined : Date.now() + budgetMs + 60_000;
    let shrunk = 0;
    const stop = { requested: false };
    const onSig = () => {
      stop.requested = true;
    };
    process.once('SIGINT', onSig);
    let summary;
    try {
      summary = await runCampaign({
        campaign,
        firstSeed,
        seeds,
        executor,
        outDir,
        timeBudgetMs: budgetMs,
        progress,
        shrink: values['no-shrink']
          ? null
          : async (r) =>
              shrunk++ < maxShrink ? (await shrinkScenario(r.scenario!, r.primary ?? '', executor, { stop, deadline: shrinkDeadline })).scenario : null,
        stop,
      });
    } finally {
      process.off('SIGINT', onSig);
      await executor.close();
    }
    const json = JSON.stringify(summary, null, 2) + '\n';
    if (values.json === '-') process.stdout.write(json);
    else {
      if (values.json) writeFileSync(values.json, json);
      process.stdout.write(formatReport(summary) + '\n');
    }
    return summary.failed === 0 ? 0 : 1;
  }
}
