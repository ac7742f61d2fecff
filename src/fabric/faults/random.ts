/**
 * The injector's random numbers. Any `{ next(): number }` giving uniform
 * values in [0, 1) will do (the simulator's seeded PRNG, say); without one
 * the injector makes its own streams from a seed with mulberry32.
 */

export interface RandomSource {
  /** A uniform number in [0, 1). */
  next(): number;
}

/** mulberry32 (Tommy Ettinger): 32 bits of state, fast, good enough for fault dice. */
export function mulberry32(seed: number): RandomSource {
  let a = seed >>> 0;
  return {
    next(): number {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    },
  };
}

/** murmur3's finaliser: spreads every input bit over the output. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * The seed of one independent stream: `seed` (any safe integer) mixed with a
 * stream number, so rule 3's dice for a→b do not move when rule 1 rolls, or
 * when frames the other way interleave differently.
 */
export function streamSeed(seed: number, stream: number): number {
  const lo = seed >>> 0;
  const hi = Math.floor(seed / 4294967296) >>> 0;
  return fmix32(fmix32(lo ^ 0x9e3779b9) ^ Math.imul(hi, 0x27d4eb2f) ^ fmix32(stream + 0x632be5ab));
}
