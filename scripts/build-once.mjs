#!/usr/bin/env node
/**
 * The package's build, made safe to run any number of times, from any
 * number of processes at once: `npm install` runs it (prepare), and so does
 * npm itself when `npx rnic` first links this directory into npx's cache.
 * It compiles only when the sources changed since the last build, and one
 * process at a time compiles while the others wait for it.
 *
 *   node scripts/build-once.mjs [--root DIR] [--project tsconfig.json]
 *
 * "Changed" is a SHA-256 over the tsconfig, every project it references
 * (docs/layers.md: one per layer, built by `tsc -b`), the configs they
 * extend, and every .ts file their "include" and "files" name (directory
 * prefixes before "**"), kept in <outDir>/.build-hash. The lock is a directory (mkdir is atomic), holding
 * the holder's pid; a lock whose holder is gone is taken over.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? args[i + 1] : def;
};
const root = resolve(opt('--root', join(import.meta.dirname, '..')));
const project = opt('--project', 'tsconfig.json');
const tsconfig = JSON.parse(readFileSync(join(root, project), 'utf8'));
const outDir = join(root, tsconfig.compilerOptions?.outDir ?? 'dist');
const hashFile = join(outDir, '.build-hash');
const lockDir = join(root, '.build-lock');

/**
 * The project and every project it references, transitively: for each, its
 * config files (with what they extend) and the directories and files its
 * sources come from.
 */
function projectInputs() {
  const configs = new Set();
  const dirs = new Set();
  const files = new Set();
  const readConfig = (file) => {
    configs.add(file);
    const cfg = JSON.parse(readFileSync(file, 'utf8'));
    if (typeof cfg.extends === 'string') readConfig(resolve(dirname(file), cfg.extends));
    return cfg;
  };
  const visit = (file) => {
    if (configs.has(file)) return;
    const cfg = readConfig(file);
    const here = dirname(file);
    if (!cfg.files) {
      for (const pat of cfg.include ?? ['**/*.ts']) {
        const head = pat.split('/').filter((p) => !p.includes('*'));
        dirs.add(resolve(here, head.join('/') || '.'));
      }
    }
    for (const f of cfg.files ?? []) files.add(resolve(here, f));
    for (const r of cfg.references ?? []) {
      const ref = resolve(here, r.path);
      visit(ref.endsWith('.json') ? ref : join(ref, 'tsconfig.json'));
    }
  };
  visit(join(root, project));
  return { configs: [...configs].sort(), dirs: [...dirs], files: [...files] };
}
function walk(dir, out) {
  let names;
  try {
    names = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of names) {
    if (e.name === 'node_modules' || e.name.startsWith('.')) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (resolve(p) !== outDir) walk(p, out);
    } else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')) out.push(p);
  }
}

function sourceHash() {
  const { configs, dirs, files: listed } = projectInputs();
  const found = [...listed];
  for (const d of dirs) walk(d, found);
  const files = [...new Set([...configs, ...found])].sort();
  const h = createHash('sha256');
  for (const f of files) {
    h.update(f.slice(root.length));
    h.update('\0');
    h.update(readFileSync(f));
  }
  return h.digest('hex');
}

const upToDate = (hash) => existsSync(hashFile) && readFileSync(hashFile, 'utf8').trim() === hash;

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}

const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

function lock() {
  for (;;) {
    try {
      mkdirSync(lockDir);
      writeFileSync(join(lockDir, 'pid'), String(process.pid));
      return;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
    }
    let holder = NaN;
    try {
      holder = Number(readFileSync(join(lockDir, 'pid'), 'utf8'));
    } catch {
      // being written, or being removed
    }
    const age = (() => {
      try {
        return Date.now() - statSync(lockDir).mtimeMs;
      } catch {
        return 0;
      }
    })();
    // A holder that died leaves its lock: take it over (a pid-less lock only after a while).
    if ((Number.isInteger(holder) && holder > 0 && !alive(holder)) || (!Number.isInteger(holder) && age > 10_000)) {
      rmSync(lockDir, { recursive: true, force: true });
      continue;
    }
    sleep(100);
  }
}

const unlock = () => rmSync(lockDir, { recursive: true, force: true });

let hash = sourceHash();
if (upToDate(hash)) {
  process.stdout.write(`rnic-model: build up to date (${outDir})\n`);
  process.exit(0);
}
lock();
try {
  hash = sourceHash();
  if (upToDate(hash)) {
    process.stdout.write('rnic-model: built by another process meanwhile\n');
  } else {
    process.stdout.write(`rnic-model: building (tsc -b ${project})\n`);
    const tsc = createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');
    const r = spawnSync(process.execPath, [tsc, '-b', join(root, project)], { cwd: root, stdio: 'inherit' });
    if (r.status !== 0) process.exit(r.status ?? 1);
    mkdirSync(outDir, { recursive: true });
    writeFileSync(hashFile, hash + '\n');
  }
} finally {
  unlock();
}
