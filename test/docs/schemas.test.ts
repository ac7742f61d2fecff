/**
 * The configuration and scenario files are described once, as zod schemas;
 * the published JSON Schemas (schemas/) and the option tables in
 * docs/configuration.md and docs/scenarios.md are derived from them
 * (src/cli/schema-docs.ts). Stale copies fail here: run `npm run schemas`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { docTables, schemaFiles, TABLE_DOCS, withTables } from '../../src/cli/schema-docs.js';
import { parseConfig } from '../../src/runtime/config.js';
import { parseScenario } from '../../src/scenario/scenario.js';

const ROOT = join(import.meta.dirname, '../..');

/**
 * Just the JSON Schema keywords the emitted schemas use (type, properties,
 * required, additionalProperties, items, enum, const, oneOf, anyOf,
 * minimum/maximum, minItems/maxItems, minLength, pattern): enough to see that
 * an editor checking a file against the published schema accepts the
 * repository's own files and refuses wrong ones. Returns the first problem.
 */
type Schema = Record<string, unknown>;
function problem(s: Schema, v: unknown, at = ''): string | null {
  const kind = (x: unknown) => (x === null ? 'null' : Array.isArray(x) ? 'array' : Number.isInteger(x) ? 'integer' : typeof x);
  if (s.anyOf) return (s.anyOf as Schema[]).some((o) => problem(o, v, at) === null) ? null : `${at}: matches no anyOf`;
  if (s.oneOf) return (s.oneOf as Schema[]).filter((o) => problem(o, v, at) === null).length === 1 ? null : `${at}: matches not exactly one oneOf`;
  if (s.type !== undefined) {
    const types = ([] as unknown[]).concat(s.type);
    const k = kind(v);
    if (!types.includes(k) && !(k === 'integer' && types.includes('number'))) return `${at}: ${k} is not ${types.join('|')}`;
  }
  if (s.const !== undefined && v !== s.const) return `${at}: not ${JSON.stringify(s.const)}`;
  if (s.enum && !(s.enum as unknown[]).includes(v)) return `${at}: not one of the enum`;
  if (typeof v === 'number') {
    if (typeof s.minimum === 'number' && v < s.minimum) return `${at}: below minimum`;
    if (typeof s.maximum === 'number' && v > s.maximum) return `${at}: above maximum`;
  }
  if (typeof v === 'string') {
    if (typeof s.minLength === 'number' && v.length < s.minLength) return `${at}: too short`;
    if (typeof s.pattern === 'string' && !new RegExp(s.pattern, 'u').test(v)) return `${at}: does not match ${s.pattern}`;
  }
  if (Array.isArray(v)) {
    if (typeof s.minItems === 'number' && v.length < s.minItems) return `${at}: too few items`;
    if (typeof s.maxItems === 'number' && v.length > s.maxItems) return `${at}: too many items`;
    if (s.items)
      for (const [i, x] of v.entries()) {
        const p = problem(s.items as Schema, x, `${at}[${i}]`);
        if (p) return p;
      }
  }
  if (kind(v) === 'object' && s.properties) {
    const o = v as Record<string, unknown>;
    const props = s.properties as Record<string, Schema>;
    for (const r of (s.required as string[] | undefined) ?? []) if (!(r in o)) return `${at}.${r}: required`;
    for (const [k, x] of Object.entries(o)) {
      if (!props[k]) {
        if (s.additionalProperties === false) return `${at}.${k}: not allowed`;
        continue;
      }
      const p = problem(props[k]!, x, `${at}.${k}`);
      if (p) return p;
    }
  }
  return null;
}
const read = (f: string) => readFileSync(join(ROOT, f), 'utf8');

describe('schemas and the docs derived from them', () => {
  it.each([...schemaFiles().keys()])('%s is what the zod schema emits (npm run schemas)', (file) => {
    expect(read(file), `${file} is stale: run npm run schemas`).toBe(schemaFiles().get(file));
  });

  it.each([...TABLE_DOCS])('%s carries the tables generated from the schema (npm run schemas)', (doc) => {
    expect(read(doc), `${doc} is stale: run npm run schemas`).toBe(withTables(doc, read(doc)));
  });

  it('a hand edit of a generated table is caught (the check can fail)', () => {
    const doc = 'docs/configuration.md';
    const edited = read(doc).replace('| `workers` |', '| `workerz` |');
    expect(edited).not.toBe(read(doc));
    expect(withTables(doc, edited)).toBe(read(doc));
  });

  it('every table lists every key its part of the schema has', () => {
    const scenario = JSON.parse(schemaFiles().get('schemas/scenario.schema.json')!) as { properties: Record<string, unknown> };
    const top = docTables().find((t) => t.name === 'scenario')!.table;
    for (const k of Object.keys(scenario.properties)) expect(top).toContain(`| \`${k}\` |`);
    const config = docTables().find((t) => t.name === 'config')!.table;
    for (const k of ['devices[].ports[].mtu', 'cables[].socketBufferBytes', 'cables[].faults', 'seed']) expect(config).toContain(`| \`${k}\` |`);
  });

  it('the package publishes the schemas (files and exports)', () => {
    const pkg = JSON.parse(read('package.json')) as { files: string[]; exports: Record<string, string> };
    expect(pkg.files).toContain('schemas');
    for (const f of schemaFiles().keys()) expect(pkg.exports[`./${f}`]).toBe(`./${f}`);
  });

  it("the published JSON Schemas accept the repository's files and refuse wrong ones, as the parsers do", () => {
    const config = JSON.parse(read('schemas/config.schema.json')) as Schema;
    const scenario = JSON.parse(read('schemas/scenario.schema.json')) as Schema;
    const files = [
      ...readdirSync(join(ROOT, 'scenarios'))
        .filter((x) => x.endsWith('.json'))
        .map((f) => [scenario, `scenarios/${f}`] as const),
      ...readdirSync(join(ROOT, 'examples/config'))
        .filter((x) => x.endsWith('.json'))
        .map((f) => [config, `examples/config/${f}`] as const),
    ];
    expect(files.length).toBeGreaterThan(5);
    for (const [schema, f] of files) expect(problem(schema, JSON.parse(read(f)) as unknown), f).toBeNull();
    const good = JSON.parse(read('examples/config/host-a.json')) as Record<string, unknown>;
    const wrong: [unknown, RegExp][] = [
      [{ ...good, workerz: 1 }, /\.workerz: not allowed/],
      [{ ...good, workers: 65 }, /\.workers: above maximum/],
      [{ ...good, devices: [] }, /\.devices: too few items/],
      [{ ...good, devices: [{ name: 'x', ports: [{ mac: '02:00:00:00:00:01', mtu: 1500 }] }] }, /\.devices\[0\]\.ports\[0\]\.mtu: not one of the enum/],
      [{ ...good, cables: [{ kind: 'wire', a: 'rnic0', b: 'rnic1:1' }] }, /cables\[0\]: matches not exactly one oneOf/],
    ];
    for (const [doc, re] of wrong) {
      expect(problem(config, doc)).toMatch(re);
      expect(() => parseConfig(doc, 'f.json')).toThrow();
    }
    expect(problem(scenario, { qps: [{ timeout: 32 }] })).toMatch(/\.qps\[0\]\.timeout: above maximum/);
    expect(problem(scenario, { traffic: [{ op: 'flush' }] })).toMatch(/\.traffic\[0\]\.op: not one of the enum/);
  });

  it('the files in the repository parse, with a "$schema" key or without', () => {
    for (const f of readdirSync(join(ROOT, 'scenarios')).filter((x) => x.endsWith('.json'))) {
      const json = JSON.parse(read(`scenarios/${f}`)) as Record<string, unknown>;
      expect(() => parseScenario({ $schema: './node_modules/rnic-model/schemas/scenario.schema.json', ...json }, f), f).not.toThrow();
    }
    for (const f of readdirSync(join(ROOT, 'examples/config')).filter((x) => x.endsWith('.json'))) {
      const json = JSON.parse(read(`examples/config/${f}`)) as Record<string, unknown>;
      expect(() => parseConfig({ $schema: './node_modules/rnic-model/schemas/config.schema.json', ...json }, f), f).not.toThrow();
    }
  });
});
