/**
 * Parameter schemas (STYLE §6), shared by every layer that has tunables
 * (device, fabric, pipeline, runtime); pure, imports only the error base: every tunable is declared once with a
 * default (as a configuration file would write it), a unit and a one-line
 * description. `resolveParams` turns a partial configuration into frozen,
 * validated values in base units (bytes, counts, enum numbers) and rejects
 * unknown keys and bad values with DEV_ERR_BAD_CONFIG.
 */
import { RnicError } from '../wire/errors.js';

/**
 * A bad configuration value. The code is the one the device layer has always
 * used for it, so callers that switch on `code` keep working wherever the
 * schema lives (device, fabric, pipeline, runtime).
 */
export class ParamError extends RnicError<'DEV_ERR_BAD_CONFIG'> {
  constructor(message: string) {
    super('DEV_ERR_BAD_CONFIG', message);
    this.name = 'ParamError';
  }
}

export interface ParamSpec<T> {
  /** The default, written as a configuration file would write it. */
  readonly default: unknown;
  /** 'count', 'bytes', 'flags', 'enum', 'guid', 'mac', ... */
  readonly unit: string;
  readonly doc: string;
  /** Validate and convert a raw value; throw via `bad()` on error. */
  readonly parse: (raw: unknown, path: string) => T;
}

export type ParamSchema = { readonly [k: string]: ParamSpec<unknown> };

export type ParamValues<S extends ParamSchema> = {
  readonly [K in keyof S]: S[K] extends ParamSpec<infer T> ? T : never;
};

export function bad(path: string, msg: string): never {
  throw new ParamError(`${path}: ${msg}`);
}

function toInteger(raw: unknown, path: string): number {
  const v = typeof raw === 'string' && /^(0x[0-9a-f]+|\d+)$/i.test(raw.trim()) ? Number(raw.trim()) : raw;
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) bad(path, `expected an integer, got ${JSON.stringify(raw)}`);
  return v;
}

/** An integer count in [min, max]. */
export function count(def: number, doc: string, min = 0, max = 2 ** 31 - 1): ParamSpec<number> {
  return {
    default: def,
    unit: 'count',
    doc,
    parse: (raw, path) => {
      const v = toInteger(raw, path);
      if (v < min || v > max) bad(path, `${v} is outside [${min}, ${max}]`);
      return v;
    },
  };
}

/** A 32-bit flag word (number or hex string). */
export function flags(def: number, doc: string): ParamSpec<number> {
  return {
    default: '0x' + (def >>> 0).toString(16),
    unit: 'flags',
    doc,
    parse: (raw, path) => {
      const v = toInteger(raw, path);
      if (v < 0 || v > 0xffffffff) bad(path, `${v} is not a 32-bit flag word`);
      return v >>> 0;
    },
  };
}

const SIZE_UNITS: Record<string, number> = { '': 1, B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3, KB: 1000, MB: 1000 ** 2, GB: 1000 ** 3 };

/** Parse '8MiB', '4096', '4 KiB' or a number into bytes. */
export function parseBytes(raw: unknown, path: string): number {
  if (typeof raw === 'number') {
    if (!Number.isSafeInteger(raw) || raw < 0) bad(path, `${raw} is not a byte count`);
    return raw;
  }
  if (typeof raw !== 'string') bad(path, `expected a size like '8MiB', got ${JSON.stringify(raw)}`);
  const m = /^\s*(\d+)\s*([KMG]i?B|B)?\s*$/.exec(raw);
  const mult = m ? SIZE_UNITS[m[2] ?? ''] : undefined;
  if (!m || mult === undefined) bad(path, `cannot parse size ${JSON.stringify(raw)}`);
  return Number(m[1]) * mult;
}

/** A byte size in [min, max]. */
export function size(def: string, doc: string, min = 0, max = Number.MAX_SAFE_INTEGER): ParamSpec<number> {
  return {
    default: def,
    unit: 'bytes',
    doc,
    parse: (raw, path) => {
      const v = parseBytes(raw, path);
      if (v < min || v > max) bad(path, `${v} bytes is outside [${min}, ${max}]`);
      return v;
    },
  };
}

/** An unsigned 64-bit value (bigint, safe integer, or hex / decimal string). */
export function u64Param(def: bigint, doc: string, unit = 'u64'): ParamSpec<bigint> {
  return {
    default: '0x' + def.toString(16),
    unit,
    doc,
    parse: (raw, path) => {
      let v: bigint;
      try {
        v = typeof raw === 'bigint' ? raw : typeof raw === 'number' && Number.isSafeInteger(raw) ? BigInt(raw) : BigInt(String(raw));
      } catch {
        bad(path, `cannot parse ${JSON.stringify(String(raw))} as a 64-bit value`);
      }
      if (v < 0n || v >= 1n << 64n) bad(path, `${v} does not fit 64 bits`);
      return v;
    },
  };
}

/** One of a set of names, converted to its number. */
export function choice(def: string, names: Readonly<Record<string, number>>, doc: string): ParamSpec<number> {
  return {
    default: def,
    unit: 'enum',
    doc: `${doc} (${Object.keys(names).join(', ')})`,
    parse: (raw, path) => {
      if (typeof raw === 'string' && Object.hasOwn(names, raw)) return names[raw]!;
      if (typeof raw === 'number' && Object.values(names).includes(raw)) return raw;
      return bad(path, `${JSON.stringify(raw)} is not one of ${Object.keys(names).join(', ')}`);
    },
  };
}

/** An IB MTU in bytes: 256, 512, 1024, 2048 or 4096. */
export function mtu(def: number, doc: string): ParamSpec<number> {
  return {
    default: def,
    unit: 'bytes',
    doc,
    parse: (raw, path) => {
      const v = parseBytes(raw, path);
      if (![256, 512, 1024, 2048, 4096].includes(v)) bad(path, `${v} is not an IB MTU (256..4096, power of two)`);
      return v;
    },
  };
}

/** A free-form string of at most `max` characters. */
export function text(def: string, doc: string, max = 63): ParamSpec<string> {
  return {
    default: def,
    unit: 'string',
    doc,
    parse: (raw, path) => {
      if (typeof raw !== 'string' || raw.length > max || !/^[\x20-\x7e]*$/.test(raw)) {
        bad(path, `expected printable ASCII of at most ${max} characters`);
      }
      return raw;
    },
  };
}

/** A list of values, each checked by `item`. */
export function list<T>(def: readonly unknown[], unit: string, doc: string, item: (raw: unknown, path: string) => T): ParamSpec<readonly T[]> {
  return {
    default: def,
    unit,
    doc,
    parse: (raw, path) => {
      if (!Array.isArray(raw)) bad(path, 'expected a list');
      return Object.freeze(raw.map((x, i) => item(x, `${path}[${i}]`)));
    },
  };
}

/**
 * Resolve `overrides` against `schema`: every key must be declared, every
 * value is parsed; missing keys take the default. Returns a frozen object.
 */
export function resolveParams<S extends ParamSchema>(schema: S, overrides: Readonly<Record<string, unknown>> = {}, path = 'config'): ParamValues<S> {
  for (const k of Object.keys(overrides)) {
    if (!Object.hasOwn(schema, k)) bad(`${path}.${k}`, 'unknown parameter');
  }
  const out: Record<string, unknown> = {};
  for (const [k, spec] of Object.entries(schema)) {
    const raw = Object.hasOwn(overrides, k) ? overrides[k] : spec.default;
    out[k] = spec.parse(raw, `${path}.${k}`);
  }
  return Object.freeze(out) as ParamValues<S>;
}

/** Markdown table of a schema: parameter, default, unit, description. */
export function describeParams(schema: ParamSchema): string {
  const rows = ['| parameter | default | unit | description |', '| --- | --- | --- | --- |'];
  for (const [k, s] of Object.entries(schema)) {
    const def = Array.isArray(s.default) ? JSON.stringify(s.default) : String(s.default);
    rows.push(`| \`${k}\` | \`${def}\` | ${s.unit} | ${s.doc.replace(/\|/g, '\\|')} |`);
  }
  return rows.join('\n');
}
