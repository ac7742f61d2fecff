/** The `rnic` commands that run the examples: each is a Command whose run() is the example's main(). */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { devinfoCommand } from '../../src/cli/commands/devinfo.js';
import { perfCommand } from '../../src/cli/commands/perf.js';
import { rcPingpongCommand } from '../../src/cli/commands/rc-pingpong.js';

afterEach(() => vi.restoreAllMocks());

describe.each([
  ['rc-pingpong', rcPingpongCommand, ['--bogus'], 'rnic rc-pingpong'],
  ['perf', perfCommand, ['write_bw', '--bogus'], 'rnic perf'],
  ['devinfo', devinfoCommand, ['--bogus'], 'rnic devinfo'],
])('rnic %s', (_name, cmd, bad, prog) => {
  it('has a one-line summary and a usage text under its rnic name', () => {
    expect(cmd.summary.length).toBeGreaterThan(10);
    expect(cmd.summary).not.toContain('\n');
    expect(cmd.usage).toContain(prog);
  });

  it('a usage mistake exits 2 with the message and the usage on stderr, nothing on stdout', async () => {
    let err = '';
    let out = '';
    vi.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => {
      err += String(s);
      return true;
    });
    vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => {
      out += String(s);
      return true;
    });
    expect(await cmd.run(bad)).toBe(2);
    expect(err).toContain(`${prog}: unrecognized option '--bogus'`);
    expect(err).toContain('Usage:');
    expect(out).toBe('');
  });
});
