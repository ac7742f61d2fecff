/**
 * `rnic compare`'s inputs, read into RunRecords (src/compare): a capture
 * (pcap bytes) decoded frame by frame, and the JSON files `rnic sim --out`
 * writes beside it (timeline.json, counters.json, config.json). Anything
 * that cannot be read as what it claims to be is a CompareInputError that
 * names the file and what is wrong: exit status 2.
 */
export { CompareInputError, decodeCapture };
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { CompareInputError, decodeCapture, type QpCompletions, type RunRecord } from '../compare/index.js';
import { type DeviceProfile, type ProfileSpec, resolveProfile } from '../pipeline/profiles.js';

function readJson(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new CompareInputError(`${file}: ${(e as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new CompareInputError(`${file}: not JSON: ${(e as Error).message}`);
  }
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** timeline.json (`rnic sim`, or a recorder beside a real device): `{ qps: [{ qp, wrs: [{ index, op, size, status, completedNs }] }] }`. */
export function parseTimeline(raw: unknown, file: string): QpCompletions[] {
  const bad = (path: string, want: string): never => {
    throw new CompareInputError(`${file}${path}: expected ${want}`);
  };
  if (!isObj(raw) || !Array.isArray(raw.qps)) return bad('.qps', 'a list of QPs');
  return raw.qps.map((q: unknown, i: number) => {
    if (!isObj(q) || typeof q.qp !== 'string' || !Array.isArray(q.wrs)) return bad(`.qps[${i}]`, 'an object with qp (a name) and wrs (a list)');
    return {
      qp: q.qp,
      wrs: q.wrs.map((w: unknown, j: number) => {
        const at = `.qps[${i}].wrs[${j}]`;
        if (!isObj(w)) return bad(at, 'an object');
        if (!Number.isInteger(w.index)) bad(`${at}.index`, 'an integer');
        if (typeof w.op !== 'string') bad(`${at}.op`, 'a string');
        if (!Number.isInteger(w.size)) bad(`${at}.size`, 'an integer');
        if (w.status !== null && typeof w.status !== 'string') bad(`${at}.status`, 'a status name or null');
        if (w.completedNs !== null && typeof w.completedNs !== 'number') bad(`${at}.completedNs`, 'a number or null');
        return {
          index: w.index as number,
          op: w.op as string,
          size: w.size as number,
          status: w.status as string | null,
          completedNs: w.completedNs as number | null,
        };
      }),
    };
  });
}

/** counters.json: `{ devices: { NAME: { PORT: { counter: value } } } }`. */
export function parseCounters(raw: unknown, file: string): NonNullable<RunRecord['counters']> {
  if (!isObj(raw) || !isObj(raw.devices)) throw new CompareInputError(`${file}.devices: expected an object of devices`);
  return Object.entries(raw.devices).map(([device, ports]) => {
    if (!isObj(ports)) throw new CompareInputError(`${file}.devices.${device}: expected an object of ports`);
    const out: Record<string, Record<string, number>> = {};
    for (const [port, cs] of Object.entries(ports)) {
      if (!isObj(cs)) throw new CompareInputError(`${file}.devices.${device}.${port}: expected an object of counters`);
      out[port] = Object.fromEntries(Object.entries(cs).filter(([, v]) => typeof v === 'number')) as Record<string, number>;
    }
    return { device, ports: out };
  });
}

/** The profile a config.json (an effective scenario) gave its first device. */
function profileOfConfig(raw: unknown): DeviceProfile | undefined {
  if (!isObj(raw) || !Array.isArray(raw.devices) || !isObj(raw.devices[0])) return undefined;
  return resolveProfile(raw.devices[0].profile as ProfileSpec | undefined);
}

/**
 * A run from disk: a directory as `rnic sim --out` writes it (capture.pcap,
 * and timeline.json, counters.json, config.json when present), or a pcap file.
 */
export function loadRun(path: string, label: string): RunRecord {
  if (!existsSync(path)) throw new CompareInputError(`${path}: no such file or directory`);
  const dir = statSync(path).isDirectory();
  const pcap = dir ? join(path, 'capture.pcap') : path;
  if (!existsSync(pcap)) throw new CompareInputError(`${path}: a run directory needs capture.pcap (as rnic sim --out writes it)`);
  const { packets, invalidFrames } = decodeCapture(new Uint8Array(readFileSync(pcap)), pcap);
  const side = (name: string) => (dir && existsSync(join(path, name)) ? join(path, name) : null);
  const timeline = side('timeline.json');
  const counters = side('counters.json');
  const config = side('config.json');
  const profile = config ? profileOfConfig(readJson(config)) : undefined;
  return {
    label: `${label} ${path}`,
    packets,
    invalidFrames,
    ...(timeline ? { completions: parseTimeline(readJson(timeline), timeline) } : {}),
    ...(counters ? { counters: parseCounters(readJson(counters), counters) } : {}),
    ...(profile ? { profile } : {}),
  };
}
