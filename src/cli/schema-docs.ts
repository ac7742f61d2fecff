/**
 * The files a user writes are described once, as zod schemas (the model
 * configuration in src/runtime/config.ts, scenarios in
 * src/scenario/scenario.ts). From them come the published JSON Schemas
 * (schemas/*.schema.json, for an editor to complete and check a file) and
 * the option tables of docs/configuration.md and docs/scenarios.md, which
 * are rendered from those JSON Schemas. `npm run schemas` writes both;
 * test/docs/schemas.test.ts fails when either is stale.
 */
import { z } from 'zod';
import { ConfigSchema } from '../runtime/config.js';
import { ScenarioSchema } from '../scenario/scenario.js';

/** A JSON Schema node, as far as the tables read it. */
interface Node {
  type?: string | string[];
  description?: string;
  default?: unknown;
  defaultText?: string;
  properties?: Record<string, Node>;
  required?: string[];
  items?: Node;
  oneOf?: Node[];
  const?: unknown;
}

export function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  // The input side: what a file may say (defaults are optional there), not the resolved values.
  return z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
}

/** Repository path → content of each published schema. */
export function schemaFiles(): Map<string, string> {
  return new Map([
    ['schemas/config.schema.json', `${JSON.stringify(jsonSchema(ConfigSchema), null, 2)}\n`],
    ['schemas/scenario.schema.json', `${JSON.stringify(jsonSchema(ScenarioSchema), null, 2)}\n`],
  ]);
}

function defaultCell(n: Node, required: boolean): string {
  if (n.defaultText !== undefined) return n.defaultText;
  if (n.default === undefined) return required ? 'required' : '';
  if (typeof n.default === 'number' || typeof n.default === 'boolean') return String(n.default);
  if (typeof n.default === 'string') return `\`${n.default}\``;
  return `\`${JSON.stringify(n.default)}\``;
}

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/**
 * Rows `key | meaning | default` for an object's properties. With `nested`,
 * the objects in a list are expanded in place (`devices[].ports[].mtu`), one
 * row per variant of a list of variants (`cables[]` with `kind: "udp"`);
 * other objects (capability overrides, quirks) are one row each.
 */
function rows(obj: Node, prefix: string, nested: boolean, out: Map<string, string>): void {
  const required = new Set(obj.required ?? []);
  for (const [key, n] of Object.entries(obj.properties ?? {})) {
    const path = `${prefix}${key}`;
    if (n.const !== undefined) continue;
    if (n.description !== undefined && !out.has(path)) out.set(path, `| \`${path}\` | ${cell(n.description)} | ${cell(defaultCell(n, required.has(key)))} |`);
    const items = n.items;
    if (!nested || !items) continue;
    if (items.properties) rows(items, `${path}[].`, nested, out);
    for (const v of items.oneOf ?? []) {
      const [tag, tagNode] = Object.entries(v.properties ?? {}).find(([, p]) => p.const !== undefined) ?? [];
      const label = tag ? `\`${path}[]\` \`{${tag}: ${JSON.stringify(tagNode!.const)}}\`` : `\`${path}[]\``;
      out.set(`${label}`, `| ${label} | ${cell(v.description ?? '')} | |`);
      rows(v, `${path}[].`, nested, out);
    }
  }
}

export function optionTable(obj: Node, nested: boolean): string {
  const out = new Map<string, string>();
  rows(obj, '', nested, out);
  return ['| key | meaning | default |', '|---|---|---|', ...out.values()].join('\n');
}

/** The generated tables: which document, under which marker, from which part of which schema. */
export function docTables(): { doc: string; name: string; table: string }[] {
  const config = jsonSchema(ConfigSchema) as Node;
  const scenario = jsonSchema(ScenarioSchema) as Node;
  const p = scenario.properties!;
  return [
    { doc: 'docs/configuration.md', name: 'config', table: optionTable(config, true) },
    { doc: 'docs/scenarios.md', name: 'scenario', table: optionTable(scenario, false) },
    { doc: 'docs/scenarios.md', name: 'scenario.links', table: optionTable(p.links!.items!, false) },
    { doc: 'docs/scenarios.md', name: 'scenario.qps', table: optionTable(p.qps!.items!, false) },
    { doc: 'docs/scenarios.md', name: 'scenario.traffic', table: optionTable(p.traffic!.items!, false) },
    { doc: 'docs/scenarios.md', name: 'scenario.traffic.wrs', table: optionTable(p.traffic!.items!.properties!.wrs!.items!, false) },
  ];
}

const begin = (name: string) => `<!-- generated: ${name} (from the schema; npm run schemas rewrites it) -->`;
const END = '<!-- end generated -->';

/** `text` of `doc` with each of its generated tables replaced by the schema's. A missing marker is an error. */
export function withTables(doc: string, text: string): string {
  let out = text;
  for (const t of docTables().filter((x) => x.doc === doc)) {
    const start = out.indexOf(begin(t.name));
    const end = start < 0 ? -1 : out.indexOf(END, start);
    if (start < 0 || end < 0) throw new Error(`${doc}: no "${begin(t.name)}" … "${END}" block`);
    out = `${out.slice(0, start)}${begin(t.name)}\n\n${t.table}\n\n${out.slice(end)}`;
  }
  return out;
}

export const TABLE_DOCS = ['docs/configuration.md', 'docs/scenarios.md'] as const;
