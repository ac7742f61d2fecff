import { describe, expect, it } from 'vitest';
import { fillBytes } from './fill-bytes.js';

/** A seeded xorshift: int(n) in [0, n). */
class Rng {
  constructor(private x: number) {}
  int(n: number): number {
    this.x ^= this.x << 13;
    this.x ^= this.x >>> 17;
    this.x ^= this.x << 5;
    return (this.x >>> 0) % n;
  }
}

/** An integer in [lo, hi]. */
const between = (r: Rng, lo: number, hi: number): number => lo + r.int(hi - lo + 1);

/** Index of the first byte where a and b differ, or -1. */
function firstDiff(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}

describe('fillBytes: the same bytes as Uint8Array.fill', () => {
  it('5,000 seeded fills of shared and unshared views (any offset, length, range and value): the whole buffer matches fill', () => {
    const r = new Rng(0x9e3779b9);
    let wordwise = 0;
    for (let i = 0; i < 5000; i++) {
      const shared = r.int(4) !== 0;
      const size = between(r, 1, 4096);
      const make = () => (shared ? new SharedArrayBuffer(size + 32) : new ArrayBuffer(size + 32));
      const a = make();
      const b = make();
      // The same random background in both buffers, so a byte written out of range shows.
      const init = new Uint8Array(size + 32);
      for (let k = 0; k < init.length; k++) init[k] = r.int(256);
      new Uint8Array(a).set(init);
      new Uint8Array(b).set(init);
      const off = between(r, 0, 31);
      const len = between(r, 0, size + 32 - off);
      const va = new Uint8Array(a, off, len);
      const vb = new Uint8Array(b, off, va.length);
      const pick = r.int(10);
      // Mostly in-range spans; sometimes fill's other forms (defaults, negative, past the end, reversed).
      const start = pick === 0 ? -between(r, 0, 80) : between(r, 0, va.length);
      const end = pick === 1 ? va.length + between(r, 0, 80) : pick === 2 ? between(r, 0, start < 0 ? 0 : start) : between(r, start < 0 ? 0 : start, va.length);
      const values = [r.int(256), between(r, -600, 600), r.int(2 ** 31) * 2, 1.5, -0.5, Number.NaN, Number.POSITIVE_INFINITY];
      const value = values[r.int(values.length)]!;
      const form = r.int(8);
      if (form === 0) {
        fillBytes(va, value);
        vb.fill(value);
      } else if (form === 1) {
        fillBytes(va, value, start);
        vb.fill(value, start);
      } else {
        fillBytes(va, value, start, end);
        vb.fill(value, start, end);
      }
      if (shared && end - start >= 64 && start >= 0 && end <= va.length && form > 1) wordwise++;
      expect(firstDiff(new Uint8Array(a), new Uint8Array(b)), `case ${i}: off ${off} len ${va.length} [${start}, ${end}) value ${value} form ${form}`).toBe(-1);
    }
    // The word-wise path ran on many of them.
    expect(wordwise).toBeGreaterThan(1000);
  });

  it('returns the view, as fill does', () => {
    const v = new Uint8Array(new SharedArrayBuffer(256), 3, 200);
    expect(fillBytes(v, 7, 1, 150)).toBe(v);
    expect(v[0]).toBe(0);
    expect(v[1]).toBe(7);
    expect(v[149]).toBe(7);
    expect(v[150]).toBe(0);
  });
});
