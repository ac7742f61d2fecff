#!/usr/bin/env node
/**
 * Builds the rdma-core provider's native addon (rnic_rdma_core.node) with
 * node-gyp, when it can: `npm install` / `npm ci` run this (the package's
 * "install" script). A machine without libibverbs-dev (no
 * <infiniband/verbs.h>), without node-gyp, or without Node's headers skips
 * the build with one line saying why, and exits 0: the model installs and
 * runs everywhere, and the rdma-core provider then reports itself
 * unavailable (src/driver/rdma-core/addon.ts says why).
 *
 *   node src/driver/rdma-core/native/build.mjs [--force]
 *
 * RNIC_RDMA_CORE_BUILD=0 skips it; RNIC_RDMA_CORE_BUILD=require makes a
 * failed or skipped build an error (exit 1), for CI on a machine that has
 * libibverbs-dev. It rebuilds only when a source (the .cc files, common.h)
 * or binding.gyp is newer than the addon.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';

const here = import.meta.dirname;
const out = join(here, 'build', 'Release', 'rnic_rdma_core.node');
const mode = process.env.RNIC_RDMA_CORE_BUILD ?? 'auto';
const force = process.argv.includes('--force');

function skip(why) {
  console.log(`rdma-core provider: not built (${why}); the model is unaffected`);
  process.exit(mode === 'require' ? 1 : 0);
}

if (mode === '0') skip('RNIC_RDMA_CORE_BUILD=0');
if (process.platform !== 'linux') skip(`libibverbs is Linux-only, this is ${process.platform}`);
const incDirs = ['/usr/include', '/usr/local/include', ...(process.env.CPATH ?? '').split(':').filter(Boolean)];
if (!incDirs.some((d) => existsSync(join(d, 'infiniband', 'verbs.h')))) skip('no <infiniband/verbs.h>: apt-get install libibverbs-dev');

const mtime = (p) => (existsSync(p) ? statSync(p).mtimeMs : 0);
const sources = ['rdma_core.cc', 'extended.cc', 'common.h', 'binding.gyp'];
if (!force && mtime(out) > Math.max(...sources.map((f) => mtime(join(here, f))))) {
  console.log('rdma-core provider: addon up to date');
  process.exit(0);
}

const require = createRequire(import.meta.url);
let gyp;
try {
  gyp = require.resolve('node-gyp/bin/node-gyp.js');
  require.resolve('node-addon-api');
} catch {
  skip('node-gyp or node-addon-api is not installed (optional dependencies)');
}

// Node's own headers, so that node-gyp needs no download (there may be no
// network): an official or distro install has <prefix>/include/node.
const args = [gyp, 'rebuild', '--directory', here];
const prefix = resolve(dirname(process.execPath), '..');
if (!process.env.npm_config_nodedir && existsSync(join(prefix, 'include', 'node', 'node_api.h'))) args.push(`--nodedir=${prefix}`);

const r = spawnSync(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
if (r.status !== 0 || !existsSync(out)) {
  process.stderr.write(r.stdout.slice(-4000) + r.stderr.slice(-4000));
  skip(`node-gyp failed with status ${r.status}`);
}
console.log(`rdma-core provider: built ${out}`);
