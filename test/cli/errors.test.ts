/**
 * The built `rnic` command on bad input: one line naming what is wrong, the
 * error code once; and what it reports about the files it wrote (issue 8).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { errorLine, joinDashValues } from '../../src/cli/command.js';
import { parseSeed } from '../../src/cli/commands/sim.js';

const ROOT = join(import.meta.dirname, '../..');
const CLI = join(ROOT, 'dist/src/cli/main.js');
const SCENARIO = join(ROOT, 'scenarios/drop-5th-packet.json');
const dir = mkdtempSync(join(tmpdir(), 'rnic-errors-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function rnic(args: string[], env: NodeJS.ProcessEnv = {}) {
  return spawnSync(process.execPath, [CLI, ...args], { cwd: dir, encoding: 'utf8', timeout: 120_000, env: { ...process.env, ...env } });
}

describe('error lines', () => {
  it('print a code once when the message already starts with it', () => {
    const e = Object.assign(new Error("ENOENT: no such file or directory, open 'x'"), { code: 'ENOENT' });
    expect(errorLine(e)).toBe("ENOENT: no such file or directory, open 'x'");
    expect(errorLine(Object.assign(new Error('no such device'), { code: 'CONFIG_INVALID' }))).toBe('CONFIG_INVALID: no such device');
    expect(errorLine('plain')).toBe('plain');
  });

  it('rnic pcap-sample into a missing directory: ENOENT once', () => {
    const r = rnic(['pcap-sample', '--out', join(dir, 'no/such/dir/x.pcap')]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^rnic pcap-sample: ENOENT: no such file or directory, open '.*x\.pcap'\n$/);
  });

  it('rnic sim --out naming a file: EEXIST once', () => {
    const file = join(dir, 'a-file');
    writeFileSync(file, 'x');
    const r = rnic(['sim', SCENARIO, '--out', file, '--quiet']);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^rnic sim: EEXIST: file already exists, mkdir '.*a-file'\n$/);
  });

  it('a configuration with two devices on one wire with the same MAC: one line naming the cable', () => {
    const cfg = join(dir, 'same-mac.json');
    const p = (ip: string) => ({ mac: '02:00:00:00:00:01', ipv4: [ip] });
    writeFileSync(
      cfg,
      JSON.stringify({
        devices: [
          { name: 'a', ports: [p('192.0.2.1')] },
          { name: 'b', ports: [p('192.0.2.2')] },
        ],
        cables: [{ kind: 'wire', a: 'a:1', b: 'b:1' }],
      }),
    );
    const r = rnic(['devinfo', '-l'], { RNIC_CONFIG: cfg });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(`${cfg}.cables[0]: a:1 and b:1 are on one wire with the same MAC 02:00:00:00:00:01`);
    expect(r.stderr).not.toMatch(/CONFIG_INVALID: CONFIG_INVALID/);
  });

  it('memory: "99999GiB" names the field', () => {
    const cfg = join(dir, 'huge.json');
    writeFileSync(cfg, JSON.stringify({ devices: [{ name: 'a', memory: '99999GiB', ports: [{ mac: '02:00:00:00:00:01' }] }] }));
    const r = rnic(['devinfo', '-l'], { RNIC_CONFIG: cfg });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(`${cfg}.devices[0].memory: "99999GiB" is more than the model's limit of 64 TiB`);
    expect(r.stderr).not.toContain('Array buffer allocation failed');
  });
});

describe('bad input files exit 2, as a bad option does', () => {
  it('rnic sim: a link rate the simulator refuses is found by the scenario checker (not when the run starts, exit 1)', () => {
    const file = join(dir, 'slow-link.json');
    writeFileSync(
      file,
      JSON.stringify({ qps: [{ name: 'q0' }], links: [{ a: 'rnic0', b: 'rnic1', linkRate: '1kbps' }], traffic: [{ qp: 'q0', op: 'write', size: 8 }] }),
    );
    const r = rnic(['sim', file, '--quiet']);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(`rnic sim: SCENARIO_INVALID: ${file}.links[0].linkRate: 1000 bit/s is outside [1000000, 10000000000000]\n`);
  });

  it('rnic sim: a missing or malformed scenario file; any command: a malformed RNIC_CONFIG', () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{bad');
    const missing = rnic(['sim', join(dir, 'none.json'), '--quiet']);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/^rnic sim: SCENARIO_INVALID: .*none\.json: cannot read it \(ENOENT/);
    const malformed = rnic(['sim', bad, '--quiet']);
    expect(malformed.status).toBe(2);
    expect(malformed.stderr).toMatch(/^rnic sim: SCENARIO_INVALID: .*bad\.json: not valid JSON/);
    const cfg = rnic(['counters'], { RNIC_CONFIG: bad });
    expect(cfg.status).toBe(2);
    expect(cfg.stderr).toMatch(/^rnic counters: CONFIG_INVALID: .*bad\.json: not valid JSON/);
  });
});

describe('options found by the fuzz of every subcommand', () => {
  it('rnic sim --fault with a bad spec exits 2 naming it (was 1)', () => {
    const r = rnic(['sim', SCENARIO, '--quiet', '--fault', 'melt:p=1%']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^rnic sim: FAULT_BAD_RULE: --fault #0 "melt:p=1%" \(action\): unknown action "melt"/);
  });

  it('an empty --out or --json is refused (sim: mkdir ENOENT, exit 1; campaign --json: nothing written, silently)', () => {
    for (const args of [
      ['sim', SCENARIO, '--quiet', '--out', ''],
      ['campaign', '--seeds', '1', '--jobs', '1', '--quiet', '--out', ''],
      ['campaign', '--seeds', '1', '--jobs', '1', '--quiet', '--json', ''],
    ]) {
      const r = rnic(args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(new RegExp(`^rnic ${args[0]}: --${args.at(-2)!.slice(2)}: an empty path\\n`));
    }
  });

  it('rnic compare --fault-b with a bad spec names --fault-b, not --fault', () => {
    const r = rnic(['compare', SCENARIO, '--fault-b', 'melt']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^rnic compare: --fault-b #0 "melt" \(action\): unknown action "melt"/);
  });

  it('rnic campaign --jobs above 256 is refused before any thread starts (4097 crashed V8 with SIGTRAP)', () => {
    const r = rnic(['campaign', '--seeds', '1', '--jobs', '4097', '--quiet']);
    expect(r.signal).toBeNull();
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^rnic campaign: --jobs: expected an integer in 1\.\.256, got "4097"\n/);
  });
});

describe('rnic sim --seed', () => {
  it('takes a negative number as the value and refuses it naming --seed (not "argument is ambiguous")', () => {
    const r = rnic(['sim', SCENARIO, '--seed', '-1']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^rnic sim: --seed: "-1" is not a seed \(an integer 0\.\.9007199254740991, or a word\)\n/);
    expect(r.stderr).not.toContain('ambiguous');
  });

  it('parses whole numbers and words, refuses other numbers', () => {
    expect(parseSeed('42')).toBe(42);
    expect(parseSeed('nightly')).toBe('nightly');
    for (const bad of ['-1', '1.5', '+3', '9007199254740993', '.5', '']) expect(() => parseSeed(bad), bad).toThrow(/--seed/);
  });

  it('joinDashValues joins only a valued option with a dash-number after it', () => {
    expect(joinDashValues(['x', '--seed', '-1', '--quiet'], ['--seed'])).toEqual(['x', '--seed=-1', '--quiet']);
    expect(joinDashValues(['--seed', '--quiet'], ['--seed'])).toEqual(['--seed', '--quiet']);
    expect(joinDashValues(['--out', '-1'], ['--seed'])).toEqual(['--out', '-1']);
  });
});

describe('rnic demo with a negative number', () => {
  it('names the option, not "argument is ambiguous"', () => {
    const r = rnic(['demo', '--iters', '-5']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^rnic demo: --iters must be a positive integer, got "-5"\n/);
  });
});

describe('rnic sim --out DIR/', () => {
  it('names the files it wrote in full with a trailing slash', () => {
    const r = rnic(['sim', SCENARIO, '--out', 'run/']);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(
      'wrote config.json, timeline.json, counters.json, summary.txt, summary.json, flows.json, capture.pcap, capture-rnic1-1.pcap in run/',
    );
    expect(readdirSync(join(dir, 'run')).sort()).toEqual([
      'capture-rnic1-1.pcap',
      'capture.pcap',
      'config.json',
      'counters.json',
      'flows.json',
      'summary.json',
      'summary.txt',
      'timeline.json',
    ]);
  });
});
