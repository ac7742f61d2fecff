/**
 * What the model provider checks of the objects and numbers a verb is
 * given. libibverbs hands a provider whatever pointer the program passed;
 * here a program can pass anything at all, so every verb makes sure the
 * object is one of this provider's (instanceof), of the right context and
 * alive, and that every number fits its C type (below), before it touches
 * the device. A failure is EINVAL, never a TypeError.
 */
export const U64_MAX = 0xffff_ffff_ffff_ffffn;

/** A C `uint32_t`: an integer 0..2^32−1 (not NaN, not a bigint, not a string). */
export function isU32(v: unknown): v is number {
  return typeof v === 'number' && v >>> 0 === v;
}

/** A 32-bit field a program may also hold as a signed int (`htonl()` results, `x | 0`). */
export function isBits32(v: unknown): v is number {
  return typeof v === 'number' && (v >>> 0 === v || (v | 0) === v);
}

/** A C `uint64_t` as a bigint: 0..2^64−1. */
export function isU64(v: unknown): v is bigint {
  // asUintN(64) is what TurboFan optimizes to a machine word: ~10 ns less per check than two comparisons.
  return typeof v === 'bigint' && BigInt.asUintN(64, v) === v;
}
