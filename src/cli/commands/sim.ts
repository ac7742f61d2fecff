/**
 * `rnic sim SCENARIO`: runs a scenario file (docs/scenarios.md) on the
 * simulator — virtual time, one seed — and writes the capture, the
 * counters, the timeline of every work request and the effective
 * configuration to a directory, with a short summary on stdout.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { parseFaultSpecs, resolveFaultRules, type ResolvedFaultRule } from '../../fabric/faults.js';
import { loadScenario, type Scenario, withProfile, withSeed } from '../../scenario/scenario.js';
import { PROFILE_NAMES, type ProfileName } from '../../pipeline/profiles.js';
import { runScenario, summarize } from '../../scenario/scenario-runner.js';
import { CliError, joinDashValues, type Command } from '../command.js';
import { openPcapFile } from '../../runtime/pcap-file.js';
import { renderPlots, reportHtml } from '../report/render.js';

const USAGE = `usage: rnic sim SCENARIO [--seed N] [--profile NAME] [--out DIR] [--fault SPEC]... [--quiet]

Runs SCENARIO, a JSON scenario file (docs/scenarios.md: hosts, links with
their timing and faults, queue pairs, traffic, duration, seed), on the
simulator: the model's pipeline on a virtual nanosecond clock, reproducible
for a given seed. Writes to DIR (default sim-out/<scenario name>):

  capture.pcap    the first captured port, both ways, virtual-time timestamps
                  (more ports: capture-<device>-<port>.pcap)
  counters.json   hardware counters per device and port, link and fault statistics
  timeline.json   every work request: posted, first packet, retransmissions,
                  completion and status; NAKs per queue pair
  config.json     the effective scenario: every default filled in, the seed
  summary.txt     the summary printed on stdout
  summary.json    the run in numbers: simulated and wall time, events,
                  packet-hops, checks
  flows.json      one object per flow: src, dst, qp, bytes, startNs,
                  finishNs, fctNs

with switches (a scenario with a topology), also:

  pfc.json        every PAUSE frame a switch sent: node, port, priority,
                  timeNs, quanta (0 = XON)
  timeseries.json queue depth per switch port, receive rate per flow,
                  sampled every output.sampleInterval
  queue-depth.svg, flow-rate.svg, pauses.svg, fct.svg, report.html
                  the plots, and one self-contained HTML report

  --seed N        run with this seed instead of the file's
  --profile NAME  every device on this device profile (ibta, rxe; docs/compare.md)
  --out DIR       where to write
  --fault SPEC    add a fault rule to the first link (docs/faults.md, repeatable)
  --quiet         print nothing but errors

Exit status: 0 when every check passed, 3 when one failed (a stalled queue
pair, an unexpected completion status, data that differs), 2 on a bad option
or scenario file (or RNIC_CONFIG), 1 on other errors.`;

/** --seed: a non-negative safe integer, or a word (hashed, as a scenario's string seed). */
export function parseSeed(v: string): number | string {
  if (/^[+-]?[\d.]/.test(v) || v === '') {
    const n = Number(v);
    if (!/^\d+$/.test(v) || !Number.isSafeInteger(n))
      throw new CliError(`--seed: ${JSON.stringify(v)} is not a seed (an integer 0..${Number.MAX_SAFE_INTEGER}, or a word)`);
    return n;
  }
  return v;
}

/** --profile: one of the profile names. */
export function profileFlag(v: string, flag = '--profile'): ProfileName {
  if (!(PROFILE_NAMES as readonly string[]).includes(v))
    throw new CliError(`${flag}: unknown profile ${JSON.stringify(v)} (known: ${PROFILE_NAMES.join(', ')})`);
  return v as ProfileName;
}

function captureFile(dir: string, port: string, index: number): string {
  return join(dir, index === 0 ? 'capture.pcap' : `capture-${port.replace(':', '-')}.pcap`);
}

export const simCommand: Command = {
  summary: 'run a scenario file on the simulator (virtual time, seeded): pcap, counters, timeline',
  usage: USAGE,
  async run(args) {
    const { values, positionals } = parseArgs({
      args: joinDashValues(args, ['--seed']),
      options: {
        seed: { type: 'string' },
        profile: { type: 'string' },
        out: { type: 'string' },
        fault: { type: 'string', multiple: true },
        quiet: { type: 'boolean' },
      },
      allowPositionals: true,
      strict: true,
    });
    if (positionals.length !== 1) throw new CliError(positionals.length === 0 ? 'a scenario file is required' : `one scenario file, not ${positionals.length}`);
    let scenario: Scenario = loadScenario(positionals[0]!);
    if (values.seed !== undefined) {
      scenario = withSeed(scenario, parseSeed(values.seed));
    }
    if (values.profile !== undefined) scenario = withProfile(scenario, profileFlag(values.profile));
    if (values.fault && values.fault.length > 0) {
      if (scenario.links.length === 0) throw new CliError('--fault: the scenario has no link');
      const extra: readonly ResolvedFaultRule[] = resolveFaultRules(parseFaultSpecs(values.fault));
      const [first, ...rest] = scenario.links;
      scenario = { ...scenario, links: [{ ...first!, faults: [...first!.faults, ...extra] }, ...rest] };
    }
    if (values.out === '') throw new CliError('--out: an empty path');
    const dir = values.out ?? join('sim-out', scenario.name.replace(/[^A-Za-z0-9_.-]+/g, '_'));
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'config.json'), JSON.stringify(scenario, null, 2) + '\n');
    const result = await runScenario(scenario, {
      captureWriter: (port, i, linktype) => openPcapFile(captureFile(dir, port, i), { linktype, nanosecond: true }),
      log: values.quiet ? undefined : (line) => process.stderr.write(`${line}\n`),
      progress: values.quiet ? undefined : (line) => process.stderr.write(`${line}\n`),
      // A stall or leftover WRs then say how many of their QP's frames the faults hit.
      faultHits: true,
    });
    writeFileSync(
      join(dir, 'timeline.json'),
      JSON.stringify({ scenario: result.scenario, seed: result.seed, endNs: result.endNs, qps: result.timeline.qps }, null, 1) + '\n',
    );
    writeFileSync(
      join(dir, 'counters.json'),
      JSON.stringify(
        {
          scenario: result.scenario,
          seed: result.seed,
          endNs: result.endNs,
          eventsRun: result.eventsRun,
          devices: result.counters,
          links: result.sim.links,
          sim: result.sim.devices,
          switches: result.fabric?.switches ?? {},
          stalls: result.stalls,
          verify: result.verify,
        },
        null,
        2,
      ) + '\n',
    );
    const text = summarize(result);
    const files = [
      'config.json',
      'timeline.json',
      'counters.json',
      'summary.txt',
      'summary.json',
      'flows.json',
      ...scenario.capture.map((p, i) => relative(dir, captureFile(dir, p, i))),
    ];
    writeFileSync(join(dir, 'summary.txt'), text + '\n');
    const json = (name: string, v: unknown): void => writeFileSync(join(dir, name), JSON.stringify(v, null, 1) + '\n');
    json('summary.json', {
      scenario: result.scenario,
      seed: result.seed,
      endedBy: result.endedBy,
      simulatedNs: result.endNs,
      wallNs: result.wallNs,
      events: result.eventsRun,
      packetHops: result.packetHops,
      checksFailed: result.verify.length,
      verify: result.verify,
    });
    json(
      'flows.json',
      result.flows.map(({ src, dst, qp, bytes, startNs, finishNs, fctNs }) => ({ src, dst, qp, bytes, startNs, finishNs, fctNs })),
    );
    if (result.fabric !== null) {
      json('pfc.json', result.fabric.pfc);
      json('timeseries.json', result.fabric.series);
      files.push('pfc.json', 'timeseries.json');
      if (scenario.output.plots) {
        const plots = await renderPlots(result);
        for (const [name, svg] of Object.entries(plots)) writeFileSync(join(dir, name), svg);
        writeFileSync(join(dir, 'report.html'), reportHtml(result, text, plots));
        files.push(...Object.keys(plots), 'report.html');
      }
    }
    if (!values.quiet) process.stdout.write(`${text}\n  wrote ${files.join(', ')} in ${dir}\n`);
    return result.verify.length === 0 ? 0 : 3;
  },
};
