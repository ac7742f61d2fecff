/**
 * The build happens once, whoever asks and however many ask at once
 * (issue 8: two first `npx rnic` calls ran `prepare` — the TypeScript
 * build — together and broke npx's cache). scripts/build-once.mjs on a small
 * project of its own, and the `rnic` bin, which never builds.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const SCRIPT = join(ROOT, 'scripts/build-once.mjs');
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A project with one source file, tsc from this repository's node_modules. */
function project(): string {
  const d = mkdtempSync(join(tmpdir(), 'rnic-build-once-'));
  dirs.push(d);
  mkdirSync(join(d, 'src'));
  writeFileSync(join(d, 'package.json'), JSON.stringify({ name: 'p', type: 'module' }));
  writeFileSync(
    join(d, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { outDir: 'dist', rootDir: '.', module: 'NodeNext', target: 'ES2022', skipLibCheck: true, types: [] },
      include: ['src/**/*.ts'],
    }),
  );
  writeFileSync(join(d, 'src/a.ts'), 'export const a: number = 1;\n');
  symlinkSync(join(ROOT, 'node_modules'), join(d, 'node_modules'));
  return d;
}

const run = (d: string) => execFileSync(process.execPath, [SCRIPT, '--root', d], { encoding: 'utf8', timeout: 120_000 });

function runAsync(d: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [SCRIPT, '--root', d], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (b: Buffer) => (out += b.toString()));
    p.on('close', (code) => resolve({ code, out }));
  });
}

describe('scripts/build-once.mjs', () => {
  it('builds, then does nothing until a source changes', () => {
    const d = project();
    expect(run(d)).toMatch(/building/);
    const built = statSync(join(d, 'dist/src/a.js')).mtimeMs;
    expect(run(d)).toMatch(/build up to date/);
    expect(statSync(join(d, 'dist/src/a.js')).mtimeMs).toBe(built);
    writeFileSync(join(d, 'src/a.ts'), 'export const a: number = 2;\n');
    expect(run(d)).toMatch(/building/);
    expect(readFileSync(join(d, 'dist/src/a.js'), 'utf8')).toContain('= 2');
  });

  it('four at once: one compiles, the others wait for it and compile nothing', async () => {
    const d = project();
    const results = await Promise.all([0, 1, 2, 3].map(() => runAsync(d)));
    expect(results.map((r) => r.code)).toEqual([0, 0, 0, 0]);
    expect(results.filter((r) => /building/.test(r.out))).toHaveLength(1);
    for (const r of results) expect(r.out).toMatch(/building|built by another process meanwhile|build up to date/);
    expect(readFileSync(join(d, 'dist/src/a.js'), 'utf8')).toContain('= 1');
  }, 180_000);

  it('takes over a lock whose holder died', () => {
    const d = project();
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    mkdirSync(join(d, '.build-lock'));
    writeFileSync(join(d, '.build-lock/pid'), dead.stdout);
    expect(run(d)).toMatch(/building/);
  });

  it('a compile error fails the build and records nothing', () => {
    const d = project();
    writeFileSync(join(d, 'src/a.ts'), 'export const a: number = "x";\n');
    const r = spawnSync(process.execPath, [SCRIPT, '--root', d], { encoding: 'utf8', timeout: 120_000 });
    expect(r.status).not.toBe(0);
    expect(() => statSync(join(d, 'dist/.build-hash'))).toThrow();
  });
});

describe('the rnic bin', () => {
  it('is executable in git (a fresh clone can run it) and is not the compiled file', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string>; scripts: Record<string, string> };
    expect(pkg.bin['rnic']).toBe('./bin/rnic.js');
    expect(execFileSync('git', ['ls-files', '-s', 'bin/rnic.js'], { cwd: ROOT, encoding: 'utf8' })).toMatch(/^100755 /);
    expect(pkg.scripts['prepare']).toBe('node scripts/build-once.mjs');
  });

  it('says what to do when the package is not built, and builds nothing', () => {
    const d = mkdtempSync(join(tmpdir(), 'rnic-bin-'));
    dirs.push(d);
    mkdirSync(join(d, 'bin'));
    copyFileSync(join(ROOT, 'bin/rnic.js'), join(d, 'bin/rnic.js'));
    writeFileSync(join(d, 'package.json'), JSON.stringify({ type: 'module' }));
    const r = spawnSync(process.execPath, [join(d, 'bin/rnic.js'), 'devinfo'], { encoding: 'utf8', timeout: 30_000 });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^rnic: the package is not built: run `npm install` \(or `npm run build`\) in /);
    expect(() => statSync(join(d, 'dist'))).toThrow();
  });

  it('runs the built command', () => {
    const r = spawnSync(process.execPath, [join(ROOT, 'bin/rnic.js'), '--help'], { encoding: 'utf8', timeout: 30_000 });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^usage: rnic <command>/);
  });
});
