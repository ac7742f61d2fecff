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
