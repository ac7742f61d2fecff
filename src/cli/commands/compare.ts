/**
 * `rnic compare`: one scenario on two targets, or two recorded runs, aligned
 * per flow and per QP; every difference with where it happened
 * (docs/compare.md). The logic is src/compare; this file reads the inputs
 * and writes the report.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type CompareReport, compareRuns, PACKET_FIELDS, type RunRecord, renderReport } from '../../compare/index.js';
import { FaultError, parseFaultSpecs, resolveFaultRules } from '../../fabric/faults.js';
import { type ProfileName, resolveProfile } from '../../pipeline/profiles.js';
import { loadScenario, type Scenario, withProfile, withSeed } from '../../scenario/scenario.js';
import { runScenario } from '../../scenario/scenario-runner.js';
import { RnicError } from '../../wire/errors.js';
import { CliError, joinDashValues, type Command } from '../command.js';
import { CompareInputError, decodeCapture, loadRun } from '../compare-input.js';
import { parseSeed, profileFlag } from './sim.js';

const ALLOWABLE = [...PACKET_FIELDS, 'timer', 'counter', 'completion-order', 'retransmission', 'flow'];

const USAGE = `usage: rnic compare SCENARIO [--a PROFILE] [--b PROFILE] [--seed N]
                    [--fault-a SPEC]... [--fault-b SPEC]... [--out DIR]   [options]
       rnic compare RUN_A RUN_B [--a PROFILE] [--b PROFILE]                [options]

Compares two runs of one scenario and reports every difference with where
it happened (flow, relative PSN, frame, time; QP and WR; device and counter):
packet sequences per flow (opcodes, PSNs, AckReq, ACK/NAK syndromes, MSN,
retransmissions and the interval before each, READ segmentation, RETH
lengths, UDP source ports, TTL, ECN, DSCP), completions per QP (status,
byte_len, op, order) and counters.

With SCENARIO (a scenario file, docs/scenarios.md) it runs the scenario on
the simulator twice, every device on profile A and then on profile B
(default: ibta against rxe). With two runs, each is a directory as
\`rnic sim --out\` writes it (capture.pcap; timeline.json, counters.json and
config.json when present) or a pcap file (packets only), e.g. one from the
model and one recorded beside a real device.

  --a, --b PROFILE   the profile of run A / B (ibta, rxe); for recorded runs
                     this states what the run was (else its config.json says)
  --seed N           the scenario's seed for both runs
  --fault-a SPEC, --fault-b SPEC
                     a fault rule on the first link of run A / B only
                     (docs/faults.md; repeatable)
  --out DIR          also write each run to DIR/a and DIR/b (capture.pcap,
                     timeline.json, counters.json, config.json)
  --allow LIST       do not count these (comma-separated): ${ALLOWABLE.join(', ')}
  --timer-tolerance R  retransmission intervals agree within R × the larger
                     (default 0.5)
  --strict           count the differences the two profiles explain too
  --json             the report as JSON

Exit status: 0 identical modulo the allowed differences (those the two
runs' profiles explain, and --allow), 1 differences, 2 bad input (a missing
or unreadable file, not a pcap, a truncated frame, a bad option).`;

interface Flags {
  a?: string;
  b?: string;
  seed?: string;
  'fault-a'?: string[];
  'fault-b'?: string[];
  out?: string;
}

async function runOnSim(base: Scenario, profile: ProfileName, faults: string[] | undefined, label: string, out: string | undefined): Promise<RunRecord> {
  let s = withProfile(base, profile);
  if (faults && faults.length > 0) {
    if (s.links.length === 0) throw new CompareInputError(`--fault-${label.toLowerCase()}: the scenario has no link`);
    const [first, ...rest] = s.links;
    let extra: ReturnType<typeof resolveFaultRules>;
    try {
      extra = resolveFaultRules(parseFaultSpecs(faults));
    } catch (e) {
      // The spec parser names `--fault`; here the option is --fault-a or --fault-b.
      if (e instanceof FaultError) e.message = e.message.replace(/^--fault\b/, `--fault-${label.toLowerCase()}`);
      throw e;
    }
    s = { ...s, links: [{ ...first!, faults: [...first!.faults, ...extra] }, ...rest] };
  }
  const r = await runScenario(s);
  const port = s.capture[0];
  const pcap = port === undefined ? undefined : r.captures[port];
  if (!pcap) throw new CompareInputError(`${s.source}: the scenario captures no port (its first link's a port is the default)`);
  if (out !== undefined) {
    const dir = join(out, label.toLowerCase());
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'capture.pcap'), pcap);
    writeFileSync(join(dir, 'config.json'), `${JSON.stringify(s, null, 2)}\n`);
    writeFileSync(join(dir, 'timeline.json'), `${JSON.stringify({ scenario: r.scenario, seed: r.seed, qps: r.timeline.qps }, null, 1)}\n`);
    writeFileSync(join(dir, 'counters.json'), `${JSON.stringify({ scenario: r.scenario, seed: r.seed, devices: r.counters }, null, 2)}\n`);
  }
  const { packets, invalidFrames } = decodeCapture(pcap, `run ${label}'s capture`);
  return {
    label: `${s.name} on the simulator, seed ${r.seed}`,
    packets,
    invalidFrames,
    completions: r.timeline.qps.map((q) => ({ qp: q.qp, wrs: q.wrs })),
    counters: Object.entries(r.counters).map(([device, ports]) => ({ device, ports })),
    profile: resolveProfile(profile),
  };
}

async function runs(positionals: string[], v: Flags): Promise<[RunRecord, RunRecord]> {
  if (positionals.length === 1) {
    let s: Scenario;
    try {
      s = loadScenario(positionals[0]!);
    } catch (e) {
      throw new CompareInputError((e as Error).message);
    }
    if (v.seed !== undefined) s = withSeed(s, parseSeed(v.seed));
    const pa = profileFlag(v.a ?? 'ibta', '--a');
    const pb = profileFlag(v.b ?? 'rxe', '--b');
    return [await runOnSim(s, pa, v['fault-a'], 'A', v.out), await runOnSim(s, pb, v['fault-b'], 'B', v.out)];
  }
  if (positionals.length === 2) {
    for (const f of ['seed', 'fault-a', 'fault-b', 'out'] as const)
      if (v[f] !== undefined) throw new CliError(`--${f} runs a scenario: give one scenario file, not two runs`);
    const stated = (r: RunRecord, p: string | undefined, flag: string): RunRecord =>
      p === undefined ? r : { ...r, profile: resolveProfile(profileFlag(p, flag)) };
    return [stated(loadRun(positionals[0]!, 'run'), v.a, '--a'), stated(loadRun(positionals[1]!, 'run'), v.b, '--b')];
  }
  throw new CliError(positionals.length === 0 ? 'a scenario file, or two runs, is required' : `one scenario file or two runs, not ${positionals.length}`);
}

export const compareCommand: Command = {
  summary: 'run a scenario on two profiles, or take two recorded runs, and report every difference',
  usage: USAGE,
  async run(args) {
    const { values, positionals } = parseArgs({
      args: joinDashValues(args, ['--seed', '--timer-tolerance']),
      options: {
        a: { type: 'string' },
        b: { type: 'string' },
        seed: { type: 'string' },
        'fault-a': { type: 'string', multiple: true },
        'fault-b': { type: 'string', multiple: true },
        out: { type: 'string' },
        allow: { type: 'string', multiple: true },
        'timer-tolerance': { type: 'string' },
        strict: { type: 'boolean' },
        json: { type: 'boolean' },
      },
      allowPositionals: true,
      strict: true,
    });
    const allow = (values.allow ?? []).flatMap((x) => x.split(',')).filter((x) => x !== '');
    for (const x of allow) if (!ALLOWABLE.includes(x)) throw new CliError(`--allow: unknown ${JSON.stringify(x)} (known: ${ALLOWABLE.join(', ')})`);
    const tol = values['timer-tolerance'] === undefined ? 0.5 : Number(values['timer-tolerance']);
    if (!(tol >= 0 && tol <= 1)) throw new CliError(`--timer-tolerance: ${JSON.stringify(values['timer-tolerance'])} is not a number in [0, 1]`);
    let report: CompareReport;
    try {
      const [a, b] = await runs(positionals, values);
      report = compareRuns(a, b, { allow, timerTolerance: tol, strict: values.strict === true });
    } catch (e) {
      // Bad input is exit 2 with one line naming the file; anything else is a bug and goes up.
      if (e instanceof CompareInputError || e instanceof RnicError) {
        process.stderr.write(`rnic compare: ${e.message}\n`);
        return 2;
      }
      throw e;
    }
    process.stdout.write(values.json ? `${JSON.stringify(report, null, 1)}\n` : renderReport(report));
    return report.unexplained === 0 ? 0 : 1;
  },
};
