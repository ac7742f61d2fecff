/**
 * docs/device-interface.md carries tables generated from the declarations.
 * This test fails when they drift. To regenerate:
 *   UPDATE_DOCS=1 npx vitest run src/device/docs.test.ts
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { applyGeneratedSections, generatedDocSections, sectionsIn } from './doc-tables.js';

const docPath = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs', 'device-interface.md');

describe('docs/device-interface.md', () => {
  it('contains every generated section, up to date', () => {
    const doc = readFileSync(docPath, 'utf8');
    const updated = applyGeneratedSections(doc);
    if (process.env['UPDATE_DOCS'] && updated !== doc) writeFileSync(docPath, updated);
    expect(sectionsIn(doc).sort()).toEqual(Object.keys(generatedDocSections()).sort());
    if (!process.env['UPDATE_DOCS']) expect(updated === doc, 'generated tables are stale: UPDATE_DOCS=1 npx vitest run src/device/docs.test.ts').toBe(true);
  });
});
