/**
 * Bad configuration and scenario files get one line naming the field, never
 * a crash or zod's own words: thousands of seeded mutations of good files
 * (a value replaced by one of the wrong kind, a key dropped, an unknown key
 * added), each either accepted or refused with CONFIG_INVALID /
 * SCENARIO_INVALID and one line `<file><path>: <what>` in our words (a
 * message of zod's own would fail).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../src/fabric/faults.js';
import { formatPath } from '../../src/params/schema.js';
import { parseConfig } from '../../src/runtime/config.js';
import { parseScenario } from '../../src/scenario/scenario.js';

const ROOT = join(import.meta.dirname, '../..');
const json = (f: string) => JSON.parse(readFileSync(join(ROOT, f), 'utf8')) as unknown;

const WRONG: unknown[] = [null, -1, 1.5, 0, 2 ** 60, '', 'x', '64MiB', '10us', true, [], [1], {}, { zz: 1 }, 'rnic9:7', 4096];

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Every path to a value in `v`. */
function paths(v: Json, at: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  out.push(at);
  if (Array.isArray(v)) v.forEach((x, i) => paths(x, [...at, i], out));
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) paths(x, [...at, k], out);
  return out;
}

function mutate(base: Json, rnd: () => number): { doc: Json; at: (string | number)[] } {
  const doc = structuredClone(base);
  const all = paths(doc).filter((p) => p.length > 0);
  const at = all[Math.floor(rnd() * all.length)]!;
  const parent = at.slice(0, -1).reduce<Json>((o, k) => (o as Record<string | number, Json>)[k]!, doc) as Record<string | number, Json>;
  const key = at[at.length - 1]!;
  const how = rnd();
  if (how < 0.15 && !Array.isArray(parent)) delete parent[key];
  else if (how < 0.3 && !Array.isArray(parent)) parent[`${String(key)}X`] = 1;
  else parent[key] = WRONG[Math.floor(rnd() * WRONG.length)] as Json;
  return { doc, at };
}

function check(parse: (raw: unknown, source: string) => unknown, code: string, base: Json, seed: number): { refused: number } {
  const src = mulberry32(seed);
  const rnd = () => src.next();
  let refused = 0;
  for (let i = 0; i < 1500; i++) {
    const { doc, at } = mutate(base, rnd);
    let err: (Error & { code?: string }) | null = null;
    try {
      parse(doc, 'f.json');
    } catch (e) {
      err = e as Error & { code?: string };
    }
    if (!err) continue;
    refused++;
    const where = `case ${i}: ${formatPath(at)} in ${JSON.stringify(doc).slice(0, 300)}`;
    expect(err.code, `${where}: ${err.stack}`).toBe(code);
    expect(err.message, where).toMatch(/^f\.json[.[:]/);
    expect(err.message, where).not.toContain('\n');
    expect(err.message, where).not.toMatch(/Invalid input|Too small|Too big|Unrecognized key/);
  }
  return { refused };
}

describe('mutated files: refused with one line naming the field, or accepted', () => {
  it('the model configuration (examples/config/host-a.json and the default)', () => {
    const a = check(parseConfig, 'CONFIG_INVALID', json('examples/config/host-a.json') as Json, 1);
    const b = check(
      parseConfig,
      'CONFIG_INVALID',
      {
        workers: 1,
        devices: [
          { name: 'rnic0', memory: '64MiB', caps: { maxQp: 64 }, ports: [{ mac: '02:00:00:00:00:01', ipv4: ['192.0.2.1'], ipv6: ['fd00::1'], mtu: 4096 }] },
          { name: 'rnic1', ports: [{ mac: '02:00:00:00:00:02', ipv4: ['192.0.2.2'], mtu: 1024, capture: 'x.pcap' }] },
        ],
        cables: [{ kind: 'wire', a: 'rnic0:1', b: 'rnic1:1', faults: [{ action: 'drop', match: { every: 3 } }] }],
        profile: { retryCnt7Infinite: true },
        seed: 7,
      },
      2,
    );
    // Most mutations make a bad file: the test sees refusals, not only acceptances.
    expect(a.refused + b.refused).toBeGreaterThan(1500);
  });

  it.each(['all-ops.json', 'drop-5th-packet.json', 'random-loss.json', 'rnr.json'])('scenarios/%s', (f) => {
    const r = check(parseScenario, 'SCENARIO_INVALID', json(`scenarios/${f}`) as Json, f.length);
    expect(r.refused).toBeGreaterThan(500);
  });
});
