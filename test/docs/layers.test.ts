/**
 * The layering of docs/layers.md is the compiler's, not a convention: in a
 * copy of the tree, one forbidden import (or a timer) is added to a layer,
 * and `tsc -b` on that layer must fail with the error that names it. The
 * unmodified copy builds first, so each failure is the probe's doing.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
/** A build of a few projects on a loaded 2-core machine. */
const BUILD_TIMEOUT_MS = 5 * 60_000;
let WORK = '';

function tscBuild(...projects: string[]): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, [TSC, '-b', ...projects], { cwd: WORK, encoding: 'utf8', timeout: BUILD_TIMEOUT_MS });
  return { status: r.status, out: r.stdout + r.stderr };
}

interface Probe {
  layer: string;
  /** Where in the layer the probe file goes (default: its folder). */
  dir?: string;
  code: string;
  /** The compiler's error code and a word of its message. */
  error: RegExp;
}

// Each imports a small file, so the compiler does not pull a whole other layer in.
// TS6307: a file of a project the layer does not reference. TS2307: a module that
// does not resolve (no @types/node in the layer). TS2304: an undeclared global.
const PROBES: Probe[] = [
  { layer: 'src/wire', code: "import '../device/errors.js';", error: /TS6307: File '[^']*src\/device\/errors\.ts'/ },
  { layer: 'src/wire', code: "import { readFileSync } from 'node:fs';\nexport const r = readFileSync;", error: /TS2307: Cannot find module 'node:fs'/ },
  { layer: 'src/device', code: "import '../pipeline/psn.js';", error: /TS6307: File '[^']*src\/pipeline\/psn\.ts'/ },
  { layer: 'src/device', code: 'setTimeout(() => {}, 1);', error: /TS2304: Cannot find name 'setTimeout'/ },
  { layer: 'src/fabric', code: "import '../device/errors.js';", error: /TS6307: File '[^']*src\/device\/errors\.ts'/ },
  { layer: 'src/fabric', code: "import * as dgram from 'node:dgram';\nexport const d = dgram;", error: /TS2307: Cannot find module 'node:dgram'/ },
  { layer: 'src/fabric', code: 'setInterval(() => {}, 1);', error: /TS2304: Cannot find name 'setInterval'/ },
  { layer: 'src/pipeline', code: "import '../fabric/cable.js';", error: /TS6307: File '[^']*src\/fabric\/cable\.ts'/ },
  {
    layer: 'src/pipeline',
    code: "import { Worker } from 'node:worker_threads';\nexport const w = Worker;",
    error: /TS2307: Cannot find module 'node:worker_threads'/,
  },
  { layer: 'src/pipeline', code: 'setImmediate(() => {});', error: /TS2304: Cannot find name 'setImmediate'/ },
  { layer: 'src/runtime', code: "import '../driver/verbs/errno-error.js';", error: /TS6307: File '[^']*src\/driver\/verbs\/errno-error\.ts'/ },
  { layer: 'src/driver', dir: 'src/driver/verbs', code: "import '../../pipeline/psn.js';", error: /TS6307: File '[^']*src\/pipeline\/psn\.ts'/ },
  { layer: 'src/driver', dir: 'src/driver/verbs', code: "import '../../runtime/worker-url.js';", error: /TS6307: File '[^']*src\/runtime\/worker-url\.ts'/ },
  { layer: 'src/driver/model', code: "import '../../runtime/worker-url.js';", error: /TS6307: File '[^']*src\/runtime\/worker-url\.ts'/ },
  { layer: 'src/driver/model', code: "import '../../fabric/cable.js';", error: /TS6307: File '[^']*src\/fabric\/cable\.ts'/ },
];

/** The projects the probes need built (and everything below them). */
const LAYERS = [...new Set(PROBES.map((p) => p.layer))];

beforeAll(() => {
  WORK = mkdtempSync(join(tmpdir(), 'rnic-layers-'));
  for (const f of ['package.json', 'tsconfig.json', 'tsconfig.base.json']) cpSync(join(ROOT, f), join(WORK, f));
  // Only the sources: a copy of dist/ would carry this tree's absolute paths in its build info.
  cpSync(join(ROOT, 'src'), join(WORK, 'src'), { recursive: true, filter: (s) => !s.includes('/native/build') });
  symlinkSync(join(ROOT, 'node_modules'), join(WORK, 'node_modules'));
  const r = tscBuild(...LAYERS);
  expect(r.out, 'the unmodified layers build').toBe('');
  expect(r.status).toBe(0);
}, BUILD_TIMEOUT_MS);

afterAll(() => {
  if (WORK) rmSync(WORK, { recursive: true, force: true });
});

describe('tsc -b rejects an import a layer may not make', () => {
  it('every pure layer compiles without Node types', () => {
    for (const layer of ['src/wire', 'src/params', 'src/device', 'src/fabric', 'src/pipeline', 'src/driver']) {
      const cfg = JSON.parse(readFileSync(join(ROOT, layer, 'tsconfig.json'), 'utf8')) as { compilerOptions: { types?: string[] } };
      expect(cfg.compilerOptions.types, layer).toEqual([]);
    }
  });

  it.each(PROBES.map((p) => [`${p.layer}: ${p.code.split('\n')[0]}`, p] as const))(
    '%s',
    (_label, p) => {
      const file = join(WORK, p.dir ?? p.layer, 'zz-layer-probe.ts');
      writeFileSync(file, `${p.code}\n`);
      try {
        const r = tscBuild(p.layer);
        expect(r.status).not.toBe(0);
        expect(r.out).toMatch(p.error);
      } finally {
        rmSync(file);
      }
    },
    BUILD_TIMEOUT_MS,
  );
});
