/**
 * Scenario files: defaults, errors that name the path, the example files in
 * scenarios/ (each checks and runs clean), and `rnic sim` end to end — the
 * files it writes, and the same bytes from two separate processes.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parseScenario, ScenarioError } from '../../src/scenario/scenario.js';
import { iteratePcap } from '../../src/wire/index.js';
import { run, SCENARIOS, scenarioJson } from './helpers.js';

const writeJson = (path: string, json: unknown) => writeFileSync(path, JSON.stringify(json));

const bad = (json: unknown): string => {
  try {
    parseScenario(json, 'sc.json');
  } catch (e) {
    expect(e).toBeInstanceOf(ScenarioError);
    expect((e as ScenarioError).code).toBe('SCENARIO_INVALID');
    return (e as Error).message;
  }
  throw new Error('no error');
};

describe('parseScenario', () => {
  it('fills in the defaults: the two default hosts, one link, 1 s, seed 0, the timing model', () => {
    const s = parseScenario({ qps: [{}], traffic: [{}] }, 'sc.json');
    expect(s.devices.map((d) => d.name)).toEqual(['rnic0', 'rnic1']);
    expect(s.links).toEqual([{ name: 'l0', a: 'rnic0:1', b: 'rnic1:1', linkRate: 100e9, propagationDelay: 500, queueLimit: 4096, mtu: null, faults: [] }]);
    expect(s).toMatchObject({ seed: 0, durationNs: 1e9, watchdogNs: null, capture: ['rnic0:1'] });
    expect(s.timing).toMatchObject({ doorbellLatency: 450, pcieLatency: 900, stageProcessing: 20 });
    expect(s.qps[0]).toMatchObject({ name: 'q0', type: 'RC', a: 'rnic0', b: 'rnic1', mtu: 1024, timeout: 14, retry_cnt: 7, rnr_retry: 7, gid_index: 3 });
    expect(s.traffic[0]).toMatchObject({ qp: 'q0', from: 'a', op: 'write', size: 4096, count: 1, depth: 16, signalEvery: 1, startNs: 0, expect: 'success' });
    expect(Object.isFrozen(s.qps[0])).toBe(true);
  });

  it('durations and rates with units', () => {
    const s = parseScenario({
      duration: '2.5ms',
      watchdog: '100us',
      links: [{ a: 'rnic0', b: 'rnic1:1', linkRate: '25Gbps', propagationDelay: '1.5us' }],
      qps: [{}],
      traffic: [{ startNs: '3us' }],
    });
    expect(s).toMatchObject({ durationNs: 2_500_000, watchdogNs: 100_000 });
    expect(s.links[0]).toMatchObject({ a: 'rnic0:1', linkRate: 25e9, propagationDelay: 1500 });
    expect(s.traffic[0]!.startNs).toBe(3000);
  });

  it('every mistake names its path', () => {
    expect(bad({ qps: [{ mtu: 1500 }] })).toBe('sc.json.qps[0].mtu: expected 256, 512, 1024, 2048 or 4096, got 1500');
    expect(bad({ qps: [{ type: 'RD' }] })).toBe('sc.json.qps[0].type: expected RC, UC, UD or XRC, got "RD"');
    expect(bad({ qps: [{ a: 'rnic9' }] })).toBe('sc.json.qps[0].a: no device named rnic9 (devices: rnic0, rnic1)');
    expect(bad({ qps: [{ a: 'rnic0:2' }] })).toBe('sc.json.qps[0].a: rnic0 has no port 2');
    expect(bad({ qps: [{ timeout: 32 }] })).toBe('sc.json.qps[0].timeout: 32 is outside [0, 31]');
    expect(bad({ qps: [{}], traffic: [{ op: 'flush' }] })).toMatch(/^sc\.json\.traffic\[0\]\.op: expected one of write, /);
    expect(bad({ qps: [{}], traffic: [{ qp: 'nope' }] })).toBe('sc.json.traffic[0].qp: no QP named nope (qps: q0)');
    expect(bad({ qps: [{ type: 'UD' }], traffic: [{ op: 'write' }] })).toBe('sc.json.traffic[0].op: a UD QP only sends, not write');
    expect(bad({ qps: [{}], traffic: [{ depth: 4, signalEvery: 8 }] })).toBe('sc.json.traffic[0].signalEvery: 8 is outside [1, 4]');
    expect(bad({ qps: [{}], traffic: [{ sizee: 1 }] })).toMatch(/^sc\.json\.traffic\[0\]\.sizee: unknown setting/);
    expect(bad({ duration: '1 fortnight' })).toMatch(/^sc\.json\.duration: expected a duration like/);
    expect(bad({ timing: { pcieLatency: 'fast' } })).toMatch(/^sc\.json\.timing\.pcieLatency: /);
    expect(bad({ timing: { pcieLatncy: '1us' } })).toBe('sc.json.timing.pcieLatncy: unknown parameter');
    expect(bad({ links: [{ a: 'rnic0', b: 'rnic1', linkRate: '100Gb' }] })).toMatch(/^sc\.json\.links\[0\]\.linkRate: expected a rate/);
    expect(bad({ links: [{ a: 'rnic0', b: 'rnic0' }] })).toBe('sc.json.links[0].b: port rnic0:1 already has a link');
    expect(bad({ faults: [{ action: 'drop', match: { psm: [1, 2] } }] })).toMatch(/^sc\.json\.faults: rule 0 \(match\.psm\)/);
    expect(bad({ links: [{ a: 'rnic0', b: 'rnic1', faults: [{ action: 'delay' }] }] })).toMatch(/^sc\.json\.links\[0\]\.faults: rule 0 \(delayNs\)/);
    expect(bad({ devices: [{ name: 'x', ports: [{ mac: '02:00:00:00:00:01', mtu: 1500 }] }] })).toBe(
      'sc.json.devices[0].ports[0].mtu: expected 256, 512, 1024, 2048 or 4096, got 1500',
    );
    expect(
      bad({
        devices: [
          { name: 'x', ports: [{ mac: '02:00:00:00:00:01' }] },
          { name: 'y', ports: [{ mac: '02:00:00:00:00:02' }] },
          { name: 'z', ports: [{ mac: '02:00:00:00:00:03' }] },
        ],
        faults: [],
      }),
    ).toMatch(/^sc\.json\.faults: top-level faults apply to the one link; there are 0/);
  });
});

describe('the example scenarios', () => {
  const files = readdirSync(SCENARIOS).filter((f) => f.endsWith('.json'));
  it('there are some', () => expect(files.length).toBeGreaterThanOrEqual(6));
  for (const f of files) {
    it(`${f} checks, runs and passes its own checks`, async () => {
      const json = scenarioJson(f.replace(/\.json$/, ''));
      expect(typeof json.description).toBe('string');
      const r = await run(json);
      expect(r.verify).toEqual([]);
      expect(r.endedBy).toBe('complete');
    });
  }
});

describe('rnic sim', () => {
  const root = fileURLToPath(new URL('../../', import.meta.url));
  const cli = join(root, 'dist/src/cli/main.js');
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const sim = (args: string[]) => spawnSync(process.execPath, [cli, 'sim', ...args], { encoding: 'utf8', cwd: root });

  it.skipIf(!existsSync(cli))('writes capture, counters, timeline, config and summary; two processes give the same bytes', () => {
    const outs = [0, 1].map(() => {
      const d = mkdtempSync(join(tmpdir(), 'rnic-sim-'));
      dirs.push(d);
      const p = sim([join(SCENARIOS, 'random-loss.json'), '--seed', '3', '--out', d]);
      // Nothing on stderr but the progress line a run slower than a few wall seconds prints (a loaded machine).
      expect(p.stderr.split('\n').filter((l) => l !== '' && !/^sim: [\d.]+ µs simulated of /.test(l))).toEqual([]);
      expect(p.status).toBe(0);
      expect(p.stdout).toContain('scenario random-loss, seed 3: ended (complete)');
      expect(p.stdout).toContain('checks: all passed');
      return d;
    });
    for (const f of ['capture.pcap', 'counters.json', 'timeline.json', 'config.json', 'summary.txt']) expect(existsSync(join(outs[0]!, f)), f).toBe(true);
    const pcap = (d: string) => readFileSync(join(d, 'capture.pcap'));
    expect(Buffer.compare(pcap(outs[0]!), pcap(outs[1]!))).toBe(0);
    expect([...iteratePcap(pcap(outs[0]!))].length).toBeGreaterThan(1000);
    const counters = (d: string) => JSON.parse(readFileSync(join(d, 'counters.json'), 'utf8')) as { devices: unknown; seed: number };
    expect(counters(outs[1]!).devices).toEqual(counters(outs[0]!).devices);
    expect(counters(outs[0]!).seed).toBe(3);
    expect(readFileSync(join(outs[1]!, 'timeline.json'), 'utf8')).toBe(readFileSync(join(outs[0]!, 'timeline.json'), 'utf8'));
    const config = JSON.parse(readFileSync(join(outs[0]!, 'config.json'), 'utf8')) as {
      seed: number;
      timing: Record<string, number>;
      links: { faults: unknown[] }[];
    };
    expect(config.seed).toBe(3);
    expect(config.timing.doorbellLatency).toBe(450);
    expect(config.links[0]!.faults).toHaveLength(1);
  });

  it.skipIf(!existsSync(cli))('--fault adds a rule; a failed check exits 3; a bad file exits 2 naming the path', () => {
    const d = mkdtempSync(join(tmpdir(), 'rnic-sim-'));
    dirs.push(d);
    // timeout 0 (no ACK timer) and the only WRITE lost: the watchdog reports it.
    const sc = join(d, 'stall.json');
    writeJson(sc, { duration: '20ms', watchdog: '1ms', qps: [{ timeout: 0 }], traffic: [{ size: 100 }] });
    const p = sim([sc, '--out', d, '--fault', 'drop:dir=a->b,opcode=write']);
    expect(p.status).toBe(3);
    expect(p.stderr).toContain('watchdog: q0 (a) made no progress for 1000000 ns with 1 WRs outstanding; QP state RTS');
    expect(p.stdout).toContain('stalled: q0');
    const badFile = join(d, 'bad.json');
    writeJson(badFile, { qps: [{ mtu: 9000 }] });
    const q = sim([badFile, '--out', d]);
    expect(q.status).toBe(2);
    expect(q.stderr).toContain(`${badFile}.qps[0].mtu: expected 256, 512, 1024, 2048 or 4096, got 9000`);
    expect(sim([]).status).toBe(2);
  });
});
