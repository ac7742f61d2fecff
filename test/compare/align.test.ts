/**
 * align(): the longest common subsequence of two key sequences whose keys
 * are unique within each sequence, checked on 3000 seeded random cases
 * against the textbook O(n·m) dynamic programme (its length) and for being
 * a common subsequence at all (keys equal, both indices increasing), with
 * the leftovers exactly the unmatched positions.
 */
import { describe, expect, it } from 'vitest';
import { align } from '../../src/compare/align.js';
import { seededRandom } from '../seeded.js';

const rng = seededRandom;

function lcsLength(a: readonly string[], b: readonly string[]): number {
  const row = new Array<number>(b.length + 1).fill(0);
  for (let i = 1; i <= a.length; i++) {
    let diag = 0;
    for (let j = 1; j <= b.length; j++) {
      const up = row[j]!;
      row[j] = a[i - 1] === b[j - 1] ? diag + 1 : Math.max(row[j]!, row[j - 1]!);
      diag = up;
    }
  }
  return row[b.length]!;
}

/** A flow-like sequence: keys 0..n-1 in order, then a seeded edit (drops, inserts of fresh keys, a few swaps). */
function variant(base: readonly string[], r: () => number, tag: string): string[] {
  const out: string[] = [];
  let fresh = 0;
  for (const k of base) {
    if (r() < 0.15) continue;
    if (r() < 0.1) out.push(`${tag}${fresh++}`);
    out.push(k);
  }
  for (let s = 0; s < 3 && out.length > 1; s++) {
    if (r() < 0.3) {
      const i = Math.floor(r() * (out.length - 1));
      [out[i], out[i + 1]] = [out[i + 1]!, out[i]!];
    }
  }
  return out;
}

describe('align', () => {
  it('3000 seeded cases: a common subsequence, as long as the DP LCS, leftovers exact', () => {
    for (let seed = 0; seed < 3000; seed++) {
      const r = rng(seed);
      const n = Math.floor(r() * 60);
      const base = Array.from({ length: n }, (_, i) => `k${i}`);
      const a = variant(base, r, 'a');
      const b = variant(base, r, 'b');
      const al = align(a, b);
      expect(al.pairs.length, `seed ${seed}`).toBe(lcsLength(a, b));
      for (let p = 0; p < al.pairs.length; p++) {
        const [i, j] = al.pairs[p]!;
        expect(a[i], `seed ${seed}`).toBe(b[j]);
        if (p > 0) {
          expect(i).toBeGreaterThan(al.pairs[p - 1]![0]);
          expect(j).toBeGreaterThan(al.pairs[p - 1]![1]);
        }
      }
      expect(al.pairs.length + al.onlyA.length).toBe(a.length);
      expect(al.pairs.length + al.onlyB.length).toBe(b.length);
      expect(new Set([...al.pairs.map((x) => x[0]), ...al.onlyA]).size).toBe(a.length);
    }
  });

  it('identical sequences match whole; disjoint ones not at all', () => {
    expect(align(['x', 'y', 'z'], ['x', 'y', 'z'])).toEqual({
      pairs: [
        [0, 0],
        [1, 1],
        [2, 2],
      ],
      onlyA: [],
      onlyB: [],
    });
    expect(align(['x', 'y'], ['p', 'q'])).toEqual({ pairs: [], onlyA: [0, 1], onlyB: [0, 1] });
    expect(align([], ['p'])).toEqual({ pairs: [], onlyA: [], onlyB: [0] });
  });
});
