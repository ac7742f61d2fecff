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
 * "Changed" is a SHA-256 over the tsconfig and every .ts file its
 * "include" names (directory prefixes before "**"), kept in
 * <outDir>/.build-hash. The lock is a directory (mkdir is atomic), holding
 * the holder's pid; a lock whose holder is gone is taken over.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';

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

/** The directories the tsconfig's "include" patterns start from. */
function sourceDirs() {
  const dirs = new Set();
  for (const pat of tsconfig.include ?? ['**/*.ts']) {
    const head = pat.split('/').filter((p) => !p.includes('*'));
    dirs.add(head.join('/') || '.');
  }
  return [...dirs];
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
  const files = [];
  for (const d of sourceDirs()) walk(join(root, d), files);
  files.sort();
  const h = createHash('sha256');
  h.update(readFileSync(join(root, project)));
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
    process.stdout.write(`rnic-model: building (tsc -p ${project})\n`);
    const tsc = createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');
    const r = spawnSync(process.execPath, [tsc, '-p', join(root, project)], { cwd: root, stdio: 'inherit' });
    if (r.status !== 0) process.exit(r.status ?? 1);
    mkdirSync(outDir, { recursive: true });
    writeFileSync(hashFile, hash + '\n');
  }
} finally {
  unlock();
}
