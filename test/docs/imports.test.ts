/**
 * Every import a document shows works: `from 'rnic-model…'` resolves through
 * the package's "exports" (Node's self-reference, as an installed package
 * resolves) and has each named binding; a relative import names a module of
 * the repository that exports the names (issue 8: docs promised
 * `./examples/perf.js`, which the package did not export).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const DOCS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

interface DocImport {
  doc: string;
  spec: string;
  names: string[];
}

function docImports(): DocImport[] {
  const out: DocImport[] = [];
  for (const doc of DOCS) {
    const text = readFileSync(join(ROOT, doc), 'utf8');
    for (const block of text.matchAll(/```(?:ts|typescript|js)\n([\s\S]*?)```/g)) {
      for (const m of block[1]!.matchAll(/import\s*\{([^}]*)\}\s*from\s*'([^']+)'/g)) {
        const names = m[1]!
          .split(',')
          .map((n) => n.trim())
          .filter((n) => n && !n.startsWith('type '))
          .map((n) => n.split(/\s+as\s+/)[0]!.trim());
        out.push({ doc, spec: m[2]!, names });
      }
    }
  }
  return out;
}

const imports = docImports();

describe('imports shown in the docs', () => {
  it('there are some (the extractor works)', () => {
    expect(imports.length).toBeGreaterThan(4);
    expect(imports.some((i) => i.spec === 'rnic-model/examples/perf')).toBe(true);
  });

  it.each(imports.filter((i) => i.spec.startsWith('rnic-model')).map((i) => [`${i.doc}: ${i.spec}`, i] as const))(
    '%s resolves from the package with its names',
    (_label, i) => {
      // A child Node resolves the specifier by the package's "exports", as a user's project would.
      const script = `const m = await import(${JSON.stringify(i.spec)}); const missing = ${JSON.stringify(i.names)}.filter((n) => !(n in m)); console.log(JSON.stringify(missing));`;
      const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 60_000,
        env: { ...process.env, RNIC_NO_MODEL: '1' },
      });
      expect(JSON.parse(out.trim().split('\n').pop()!), `names ${i.spec} lacks`).toEqual([]);
    },
  );

  it.each(imports.filter((i) => i.spec.startsWith('.')).map((i) => [`${i.doc}: ${i.spec}`, i] as const))(
    '%s names a module of the repository that exports its names',
    (_label, i) => {
      const file = join(ROOT, i.spec.replace(/\.js$/, '.ts'));
      expect(existsSync(file), file).toBe(true);
      const src = readFileSync(file, 'utf8');
      for (const n of i.names)
        expect(src, `${i.spec} exports ${n}`).toMatch(
          new RegExp(`export (async )?(function|const|class|let|type|interface) ${n}\\b|export \\{[^}]*\\b${n}\\b`),
        );
    },
  );

  it('no document imports a bare path of the repository (src/…, examples/…) that no package resolves', () => {
    expect(imports.filter((i) => /^(src|examples|test)\//.test(i.spec)).map((i) => `${i.doc}: ${i.spec}`)).toEqual([]);
  });
});
