/**
 * The one seeded random source of a simulation (STYLE §1: nothing in the
 * model calls Math.random).
 *
 * Generator: xoshiro128** 1.1 (Blackman and Vigna), 32-bit output, period
 * 2^128 - 1, state seeded from a 64-bit seed by SplitMix64, the seeding
 * the authors recommend. The state lives in an Int32Array so stepping does
 * not allocate.
 *
 * Sub-streams: `fork(label)` derives a child whose seed is a hash of the
 * parent's seed and the label, and nothing else. A child does not depend on
 * how many numbers the parent (or any sibling) has drawn, so adding a
 * component, or drawing more in one, does not perturb anyone else's
 * stream. The same label on the same parent gives the same stream: give
 * every component its own label (its name).
 *
 * Derivation (stable; known-answer tests pin it):
 *   root seed64   = the seed (integer or bigint), or FNV-1a-64 of a string seed
 *   child seed64  = mix64(FNV-1a-64(seed64 as 8 LE bytes, 0xff, UTF-8(label)))
 *   state         = two SplitMix64 outputs from seed64, low word first
 * where mix64 is the SplitMix64 finaliser.
 */
import { SimError } from './scheduler.js';

const M64 = (1n << 64n) - 1n;
const GOLDEN = 0x9e3779b97f4a7c15n;
const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const TWO32 = 2 ** 32;

/** The SplitMix64 output function (finaliser). */
function mix64(z: bigint): bigint {
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & M64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & M64;
  return z ^ (z >> 31n);
}

/** SplitMix64 (Vigna): the first `n` outputs from state `seed`. */
export function splitMix64(seed: bigint, n: number): bigint[] {
  const out: bigint[] = [];
  let s = seed & M64;
  for (let i = 0; i < n; i++) {
    s = (s + GOLDEN) & M64;
    out.push(mix64(s));
  }
  return out;
}

function fnv1a64(bytes: Iterable<number>, h = FNV_OFFSET): bigint {
  for (const b of bytes) h = ((h ^ BigInt(b)) * FNV_PRIME) & M64;
  return h;
}

function seedBytes(seed: bigint): number[] {
  const out: number[] = [];
  for (let i = 0n; i < 64n; i += 8n) out.push(Number((seed >> i) & 0xffn));
  return out;
}

/** Derives a child seed from a parent seed and a label (see the file comment). */
export function deriveSeed(seed: bigint, label: string): bigint {
  const h = fnv1a64(new TextEncoder().encode(label), fnv1a64([...seedBytes(seed), 0xff]));
  return mix64(h);
}

/** A seed as given in a scenario: a non-negative integer, a bigint below 2^64, or a string. */
export type Seed = number | bigint | string;

function toSeed64(seed: Seed): bigint {
  if (typeof seed === 'number') {
    if (!Number.isSafeInteger(seed) || seed < 0) throw new SimError('SIM_ERR_BAD_ARGUMENT', `seed ${seed} is not a non-negative safe integer`);
    return BigInt(seed);
  }
  if (typeof seed === 'bigint') {
    if (seed < 0n || seed > M64) throw new SimError('SIM_ERR_BAD_ARGUMENT', `seed ${seed} does not fit 64 bits`);
    return seed;
  }
  if (typeof seed === 'string') return fnv1a64(new TextEncoder().encode(seed));
  throw new SimError('SIM_ERR_BAD_ARGUMENT', `seed must be a number, bigint or string, got ${typeof seed}`);
}

export class Random {
  /** The 64-bit seed this stream was built from. */
  readonly seed: bigint;
  /** Labels from the root, for reports: 'root', 'root/nic0', 'root/nic0/dma'. */
  readonly path: string;
  readonly #s = new Int32Array(4);

  constructor(seed: Seed, path = 'root') {
    this.seed = toSeed64(seed);
    this.path = path;
    const [a, b] = splitMix64(this.seed, 2) as [bigint, bigint];
    this.#s[0] = Number(a & 0xffffffffn) | 0;
    this.#s[1] = Number(a >> 32n) | 0;
    this.#s[2] = Number(b & 0xffffffffn) | 0;
    this.#s[3] = Number(b >> 32n) | 0;
  }

  /** An independent, deterministic sub-stream for the component called `label`. */
  fork(label: string): Random {
    if (typeof label !== 'string' || label.length === 0) throw new SimError('SIM_ERR_BAD_ARGUMENT', 'a fork label must be a non-empty string');
    return new Random(deriveSeed(this.seed, label), `${this.path}/${label}`);
  }

  /** The next 32 random bits, as an unsigned integer in [0, 2^32). */
  u32(): number {
    const s = this.#s;
    const s0 = s[0]!;
    const s1 = s[1]!;
    const s2 = s[2]! ^ s0;
    const s3 = s[3]! ^ s1;
    const m = Math.imul(s1, 5);
    const r = Math.imul((m << 7) | (m >>> 25), 9);
    s[1] = s1 ^ s2;
    s[0] = s0 ^ s3;
    s[2] = s2 ^ (s1 << 9);
    s[3] = (s3 << 11) | (s3 >>> 21);
    return r >>> 0;
  }

  /** A number in [0, 1), a multiple of 2^-32. */
  next(): number {
    return this.u32() / TWO32;
  }

  /**
   * An integer in [0, n), without modulo bias (rejection sampling).
   * `n` is an integer in [1, 2^53].
   */
  int(n: number): number {
    if (!(n >= 1 && n <= 2 ** 53) || !Number.isInteger(n)) {
      throw new SimError('SIM_ERR_BAD_ARGUMENT', `int(n): n = ${n} is not an integer in [1, 2^53]`);
    }
    if (n <= TWO32) {
      const limit = TWO32 - (TWO32 % n);
      for (;;) {
        const x = this.u32();
        if (x < limit) return x % n;
      }
    }
    const span = 2 ** 53;
    const limit = span - (span % n);
    for (;;) {
      const x = (this.u32() >>> 11) * TWO32 + this.u32();
      if (x < limit) return x % n;
    }
  }

  /** True with probability `p` (0 <= p <= 1); p = 0 is never, p = 1 is always. */
  bernoulli(p: number): boolean {
    if (!(p >= 0 && p <= 1)) throw new SimError('SIM_ERR_BAD_ARGUMENT', `bernoulli(p): p = ${p} is not in [0, 1]`);
    return this.next() < p;
  }
}
