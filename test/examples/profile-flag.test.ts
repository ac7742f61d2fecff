/** `--profile NAME` on `rnic perf` and the pingpongs: taken by the CLI, applied to every device the command starts. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { currentModel, stopModel } from '../../src/boot.js';
import { perfCommand } from '../../src/cli/commands/perf.js';
import { pingpongCommand, srqPingpongCommand } from '../../src/cli/commands/pingpong.js';
import { rcPingpongCommand } from '../../src/cli/commands/rc-pingpong.js';
import { ensurePeerModel } from '../../src/cli/peer-model.js';
import { takeProfileFlag } from '../../src/cli/profile-flag.js';

const CLI = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));

afterEach(async () => {
  vi.restoreAllMocks();
  await stopModel();
});

describe('takeProfileFlag', () => {
  it('takes --profile NAME and --profile=NAME out, leaves the rest in order', () => {
    expect(takeProfileFlag(['write_bw', '--profile', 'rxe', '-n', '5'])).toEqual({ profile: 'rxe', rest: ['write_bw', '-n', '5'] });
    expect(takeProfileFlag(['--profile=ibta', '-s', '64'])).toEqual({ profile: 'ibta', rest: ['-s', '64'] });
    expect(takeProfileFlag(['-n', '5'])).toEqual({ rest: ['-n', '5'] });
  });
  it('refuses a missing, unknown or repeated name, saying which', () => {
    expect(() => takeProfileFlag(['--profile'])).toThrow('--profile needs a profile name (ibta, rxe)');
    expect(() => takeProfileFlag(['--profile', '-n'])).toThrow('--profile needs a profile name');
    expect(() => takeProfileFlag(['--profile', 'mlx9'])).toThrow('unknown profile "mlx9" (known: ibta, rxe)');
    expect(() => takeProfileFlag(['--profile=rxe', '--profile', 'ibta'])).toThrow('--profile given twice');
  });
});

describe('--profile reaches the model', () => {
  it('rnic perf --loopback --profile rxe: a run on devices with the rxe profile', async () => {
    let out = '';
    vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => {
      out += String(s);
      return true;
    });
    expect(await perfCommand.run(['write_bw', '--loopback', '--profile', 'rxe', '-n', '5', '-s', '64'])).toBe(0);
    expect(out).toMatch(/^ 64\s+5\s/m);
    const devices = currentModel()!.config.devices;
    expect(devices.length).toBeGreaterThan(0);
    for (const d of devices) expect(d.profile).toBe('rxe');
  }, 60_000);

  it('the peer commands (pingpongs, perf to a host): RNIC_CONFIG devices all take the profile, over the file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rnic-profile-'));
    const file = join(dir, 'c.json');
    writeFileSync(
      file,
      JSON.stringify({
        profile: 'ibta',
        devices: [
          { name: 'a', ports: [{ mac: '02:00:00:00:00:01', ipv4: ['192.0.2.1'] }] },
          { name: 'b', profile: 'ibta', ports: [{ mac: '02:00:00:00:00:02', ipv4: ['192.0.2.2'] }] },
        ],
        cables: [{ kind: 'wire', a: 'a:1', b: 'b:1' }],
      }),
    );
    const saved = process.env.RNIC_CONFIG;
    process.env.RNIC_CONFIG = file;
    try {
      expect(await ensurePeerModel(() => {}, 'rxe')).toBe(true);
      expect(currentModel()!.config.devices.map((d) => d.profile)).toEqual(['rxe', 'rxe']);
      await stopModel();
      expect(await ensurePeerModel(() => {})).toBe(true);
      expect(currentModel()!.config.devices.map((d) => d.profile)).toEqual(['ibta', 'ibta']);
    } finally {
      if (saved === undefined) delete process.env.RNIC_CONFIG;
      else process.env.RNIC_CONFIG = saved;
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('the CLI', () => {
  it.each([
    ['perf', perfCommand],
    ['rc-pingpong', rcPingpongCommand],
    ['uc_pingpong', pingpongCommand('UC')],
    ['ud_pingpong', pingpongCommand('UD')],
    ['srq_pingpong', srqPingpongCommand],
  ])('rnic %s --help names --profile', (_n, cmd) => {
    expect(cmd.usage).toContain('--profile NAME');
    expect(cmd.usage).toContain('ibta, rxe');
  });

  it.each(['perf write_bw', 'uc_pingpong', 'srq_pingpong'])('rnic %s --profile bogus: exit 2, the error and the usage', (c) => {
    const r = spawnSync(process.execPath, [CLI, ...c.split(' '), '--profile', 'bogus'], { encoding: 'utf8', env: { ...process.env, RNIC_NO_MODEL: '1' } });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('unknown profile "bogus" (known: ibta, rxe)');
    expect(r.stderr).toContain('--profile NAME');
    expect(r.stdout).toBe('');
  });
});
