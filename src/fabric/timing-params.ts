/**
 * The timing model of the sim runtime, as a parameter schema (STYLE §6),
 * and the shared parsers for durations and rates.
 *
 * Every entry has a default written as a configuration file would write it,
 * a unit, a one-line description and a reason for the default (in
 * docs/simulator.md, "Timing model"). Parsing turns the text into integer
 * base units and rejects bad values, naming the path, with the project's
 * configuration error (DEV_ERR_BAD_CONFIG, from `bad()` in
 * src/device/params.ts, like every other schema):
 *
 *   durations → integer nanoseconds (`durationNs`) or picoseconds (`durationPs`)
 *   rates     → integer bits per second (`rate`)
 *
 * Accepted text:
 *   durations: a decimal number and one of ps, ns, us (or µs), ms, s:
 *              '500ns', '1.5us', '2ms', '0.25 us'. A bare number is taken
 *              in the spec's base unit (ns for `durationNs`).
 *   rates:     a decimal number, an optional prefix k/K, M, G, T (×1000)
 *              or Ki, Mi, Gi, Ti (×1024), and a unit: bits per second as
 *              bps, bit/s or b/s; bytes per second as Bps or B/s (×8).
 *              '100Gbps', '25Gbit/s', '12.5GB/s', '16GiB/s'. A bare number is
 *              bits per second.
 *
 * Decimal fractions are parsed exactly (no floating point): '121.92ns' is
 * 121920 ps; a value finer than the base unit ('0.5ns' as ns) is rejected
 * rather than rounded.
 *
 * Layering note: src/fabric otherwise imports only src/wire; this file
 * reuses the schema helpers of src/device/params.ts as the project does
 * for every schema. Those helpers are pure (no state, no I/O).
 */
import { bad, describeParams, type ParamSpec, type ParamValues, resolveParams } from '../params/params.js';

const DURATION_PS: Readonly<Record<string, bigint>> = {
  ps: 1n,
  ns: 1_000n,
  us: 1_000_000n,
  µs: 1_000_000n,
  ms: 1_000_000_000n,
  s: 1_000_000_000_000n,
};

/** An exact decimal: mantissa / 10^scale. */
function decimal(digits: string, frac: string | undefined): { mant: bigint; scale: bigint } {
  const f = frac ?? '';
  return { mant: BigInt(digits + f), scale: 10n ** BigInt(f.length) };
}

/** Converts `mant / scale * mult` to an integer, or null if it is not one. */
function exact(mant: bigint, scale: bigint, mult: bigint): bigint | null {
  const v = mant * mult;
  return v % scale === 0n ? v / scale : null;
}

function safe(v: bigint, path: string, unit: string): number {
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) bad(path, `${v} ${unit} is too large`);
  return Number(v);
}

/**
 * Parses a duration into integer picoseconds. A bare number is taken as
 * `numberUnit` (default ns) and must be a non-negative integer.
 */
export function parseDurationPs(raw: unknown, path: string, numberUnit: 'ps' | 'ns' = 'ns'): number {
  if (typeof raw === 'number') {
    if (!Number.isSafeInteger(raw) || raw < 0) bad(path, `expected a non-negative integer number of ${numberUnit}, got ${raw}`);
    return safe(BigInt(raw) * DURATION_PS[numberUnit]!, path, 'ps');
  }
  const m = typeof raw === 'string' ? /^\s*(\d+)(?:\.(\d+))?\s*(ps|ns|us|µs|ms|s)\s*$/.exec(raw) : null;
  if (!m) return bad(path, `expected a duration like '500ns', '1.5us' or '2ms', got ${JSON.stringify(raw)}`);
  const { mant, scale } = decimal(m[1]!, m[2]);
  const ps = exact(mant, scale, DURATION_PS[m[3]!]!);
  if (ps === null) return bad(path, `${JSON.stringify(raw)} is finer than 1 ps`);
  return safe(ps, path, 'ps');
}

/** Parses a duration into integer nanoseconds; rejects fractions of a nanosecond. */
export function parseDurationNs(raw: unknown, path: string): number {
  const ps = parseDurationPs(raw, path, 'ns');
  if (ps % 1000 !== 0) bad(path, `${JSON.stringify(raw)} is not a whole number of nanoseconds`);
  return ps / 1000;
}

const RATE_PREFIX: Readonly<Record<string, bigint>> = {
  '': 1n,
  k: 1_000n,
  K: 1_000n,
  M: 1_000_000n,
  G: 1_000_000_000n,
  T: 1_000_000_000_000n,
  Ki: 1n << 10n,
  Mi: 1n << 20n,
  Gi: 1n << 30n,
  Ti: 1n << 40n,
};

/** Parses a rate into integer bits per second (see the file comment for the forms). */
export function parseRate(raw: unknown, path: string): number {
  if (typeof raw === 'number') {
    if (!Number.isSafeInteger(raw) || raw <= 0) bad(path, `expected a positive integer number of bits/s, got ${raw}`);
    return raw;
  }
  const m = typeof raw === 'string' ? /^\s*(\d+)(?:\.(\d+))?\s*(|k|K|M|G|T|Ki|Mi|Gi|Ti)(bps|bit\/s|b\/s|Bps|B\/s)\s*$/.exec(raw) : null;
  if (!m) return bad(path, `expected a rate like '100Gbps', '25Gbit/s' or '12.5GB/s', got ${JSON.stringify(raw)}`);
  const { mant, scale } = decimal(m[1]!, m[2]);
  const perUnit = m[4]!.startsWith('B') ? 8n : 1n;
  const bps = exact(mant, scale, RATE_PREFIX[m[3]!]! * perUnit);
  if (bps === null) return bad(path, `${JSON.stringify(raw)} is not a whole number of bits per second`);
  if (bps === 0n) return bad(path, 'a rate must be positive');
  return safe(bps, path, 'bit/s');
}

/** A duration parameter in integer nanoseconds, within [min, max] ns. */
export function durationNs(def: string, doc: string, min = 0, max = Number.MAX_SAFE_INTEGER): ParamSpec<number> {
  return {
    default: def,
    unit: 'ns',
    doc,
    parse: (raw, path) => {
      const v = parseDurationNs(raw, path);
      if (v < min || v > max) bad(path, `${v} ns is outside [${min}, ${max}]`);
      return v;
    },
  };
}

/** A duration parameter in integer picoseconds (a bare number is ps), within [min, max] ps. */
export function durationPs(def: string, doc: string, min = 0, max = Number.MAX_SAFE_INTEGER): ParamSpec<number> {
  return {
    default: def,
    unit: 'ps',
    doc,
    parse: (raw, path) => {
      const v = parseDurationPs(raw, path, 'ps');
      if (v < min || v > max) bad(path, `${v} ps is outside [${min}, ${max}]`);
      return v;
    },
  };
}

/** A rate parameter in integer bits per second, within [min, max]. */
export function rate(def: string, doc: string, min = 1, max = 10 ** 15): ParamSpec<number> {
  return {
    default: def,
    unit: 'bit/s',
    doc,
    parse: (raw, path) => {
      const v = parseRate(raw, path);
      if (v < min || v > max) bad(path, `${v} bit/s is outside [${min}, ${max}]`);
      return v;
    },
  };
}

/** One second in ns: the ceiling for any single latency in the timing model. */
const ONE_SECOND_NS = 1_000_000_000;

/**
 * The timing model. Resolved values are integers: durations in ns, rates in
 * bits/s. None depends on the MTU: per-packet costs are per packet, and
 * byte-proportional costs (serialization, DMA transfer) use the packet's
 * actual length. Reasons for the defaults: docs/simulator.md.
 */
export const TIMING_PARAMS = {
  doorbellLatency: durationNs('450ns', 'driver writes a doorbell (posted MMIO write) → the device sees it', 0, ONE_SECOND_NS),
  pcieLatency: durationNs('900ns', 'one DMA read round trip, request to completion, excluding transfer time', 0, ONE_SECOND_NS),
  dmaBandwidth: rate('110Gbps', 'host memory ↔ device payload bandwidth, each direction (transfer time = bytes × 8 / rate)', 1_000_000, 10 ** 13),
  stageProcessing: durationNs('20ns', 'time one packet spends in one pipeline stage', 0, ONE_SECOND_NS),
  linkRate: rate('100Gbps', 'link signalling rate; a frame is serialized in (max(len, 60) + 4 FCS + 20 preamble/IFG) × 8 / rate', 1_000_000, 10 ** 13),
  propagationDelay: durationNs('500ns', 'wire delay from the end of serialization to arrival at the far end', 0, ONE_SECOND_NS),
} as const;

export type TimingParams = ParamValues<typeof TIMING_PARAMS>;

/** Validates a timing configuration (DEV_ERR_BAD_CONFIG naming the path on error) into frozen values. */
export function resolveTimingParams(raw: Readonly<Record<string, unknown>> = {}, path = 'timing'): TimingParams {
  return resolveParams(TIMING_PARAMS, raw, path);
}

/** The timing schema as a markdown table (docs/simulator.md embeds it). */
export function describeTimingParams(): string {
  return describeParams(TIMING_PARAMS);
}

/**
 * The time of one bit at `bitsPerSec`, as a reduced fraction of
 * picoseconds `[num, den]` (10^12 / rate, divided by their gcd), so that
 * transfer times stay exact small-integer arithmetic: 100 Gb/s is [10, 1].
 */
export function psPerBit(bitsPerSec: number): readonly [num: number, den: number] {
  let a = 1_000_000_000_000;
  let b = bitsPerSec;
  while (b !== 0) [a, b] = [b, a % b];
  return [1_000_000_000_000 / a, bitsPerSec / a];
}

/** Picoseconds to transfer `bytes` at `bitsPerSec`, rounded up to a whole ps. */
export function transferPs(bytes: number, bitsPerSec: number): number {
  const [num, den] = psPerBit(bitsPerSec);
  return ceilDiv(bytes * 8, num, den);
}

/** Nanoseconds to transfer `bytes` at `bitsPerSec`, rounded up to a whole ns. */
export function transferNs(bytes: number, bitsPerSec: number): number {
  return Math.ceil(transferPs(bytes, bitsPerSec) / 1000);
}

/** ceil(a * b / d) for non-negative safe integers, exact where the product is not. */
export function ceilDiv(a: number, b: number, d: number): number {
  const p = a * b;
  if (p <= Number.MAX_SAFE_INTEGER) {
    let q = Math.floor(p / d);
    // Float division of exact integers can be off by one; correct it.
    if (q * d > p) q--;
    else if ((q + 1) * d <= p) q++;
    return q * d === p ? q : q + 1;
  }
  const bp = BigInt(a) * BigInt(b);
  const bd = BigInt(d);
  return Number((bp + bd - 1n) / bd);
}
