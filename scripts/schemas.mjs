#!/usr/bin/env node
/**
 * Writes what the zod schemas describe (src/cli/schema-docs.ts): the JSON
 * Schemas in schemas/ and the option tables in docs/configuration.md and
 * docs/scenarios.md. Runs from the build (dist/), so `npm run build` first;
 * `npm run build` runs it itself.
 *
 *   node scripts/schemas.mjs           write the files that changed
 *   node scripts/schemas.mjs --check   write nothing; exit 1 naming the stale ones
 */
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';

const root = join(import.meta.dirname, '..');
const { schemaFiles, withTables, TABLE_DOCS } = await import('../dist/src/cli/schema-docs.js');
const check = process.argv.includes('--check');

const wanted = new Map(schemaFiles());
for (const doc of TABLE_DOCS) wanted.set(doc, withTables(doc, readFileSync(join(root, doc), 'utf8')));

const stale = [];
for (const [file, content] of wanted) {
  let now = null;
  try {
    now = readFileSync(join(root, file), 'utf8');
  } catch {
    // not there yet
  }
  if (now === content) continue;
  stale.push(file);
  if (!check) {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(join(root, file), content);
  }
}
if (check && stale.length > 0) {
  process.stderr.write(`stale (run npm run schemas): ${stale.join(', ')}\n`);
  process.exit(1);
}
process.stdout.write(stale.length > 0 ? `schemas: wrote ${stale.join(', ')}\n` : 'schemas: up to date\n');
