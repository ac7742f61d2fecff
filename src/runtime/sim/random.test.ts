import { describe, expect, it } from 'vitest';
import { deriveSeed, Random, splitMix64 } from './random.js';
import type { SimError } from './scheduler.js';

function codeOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (e) {
    return (e as SimError).code;
  }
  return undefined;
}

describe('known answers', () => {
  it('SplitMix64 matches the reference (Vigna, splitmix64.c)', () => {
    expect(splitMix64(0n, 3)).toEqual([0xe220a8397b1dcdafn, 0x6e789e6aa1b965f4n, 0x06c45d188009454fn]);
    expect(splitMix64(1234567n, 3)).toEqual([6457827717110365317n, 3203168211198807973n, 9817491932198370423n]);
  });

  it('xoshiro128** seeded by SplitMix64(42) matches the reference C code', () => {
    // xoshiro128starstar.c with s[] = {lo(sm1), hi(sm1), lo(sm2), hi(sm2)}, sm = splitmix64 from 42.
    const r = new Random(42);
    expect(Array.from({ length: 6 }, () => r.u32())).toEqual([1776835114, 4165204688, 17111135, 2317295270, 2792088233, 2554630222]);
  });

  it('fork derivation is pinned (checked against an independent Python implementation)', () => {
    const f = new Random(42).fork('nic0');
    expect(f.seed).toBe(0x8398623b8c1aa53bn);
    expect(f.path).toBe('root/nic0');
    expect(Array.from({ length: 4 }, () => f.u32())).toEqual([1438544717, 97022858, 2341159921, 4204744555]);
    expect(deriveSeed(deriveSeed(0n, 'a'), 'b')).toBe(0x77bab8101f589f0n);
    expect(new Random(0).fork('a').fork('b').path).toBe('root/a/b');
  });

  it('a string seed is its FNV-1a-64 hash', () => {
    expect(new Random('scenario-1').seed).toBe(0x61293c9720322d75n);
  });
});

describe('determinism and independence', () => {
  const draw = (r: Random, n: number) => Array.from({ length: n }, () => r.u32());

  it('the same seed gives the same stream; a different seed does not', () => {
    expect(draw(new Random(7), 100)).toEqual(draw(new Random(7), 100));
    expect(draw(new Random(7n), 100)).toEqual(draw(new Random(7), 100));
    expect(draw(new Random(7), 100)).not.toEqual(draw(new Random(8), 100));
  });

  it("a fork does not depend on the parent's draws or on its siblings", () => {
    const p1 = new Random(99);
    const alone = draw(p1.fork('link0'), 50);
    const p2 = new Random(99);
    draw(p2, 1000);
    const sibling = p2.fork('nic0');
    draw(sibling, 10);
    expect(draw(p2.fork('link0'), 50)).toEqual(alone);
    // Drawing from the fork does not move the parent.
    const p3 = new Random(5);
    const before = draw(new Random(5), 10);
    draw(p3.fork('x'), 100);
    expect(draw(p3, 10)).toEqual(before);
  });

  it('different labels give different streams; the same label the same', () => {
    const p = new Random(1);
    expect(draw(p.fork('a'), 20)).not.toEqual(draw(p.fork('b'), 20));
    expect(draw(p.fork('a'), 20)).toEqual(draw(p.fork('a'), 20));
    expect(draw(p.fork('a'), 20)).not.toEqual(draw(p, 20));
  });
});

describe('distributions', () => {
  it('next() is in [0, 1)', () => {
    const r = new Random(3);
    let sum = 0;
    for (let i = 0; i < 100_000; i++) {
      const x = r.next();
      expect(x >= 0 && x < 1).toBe(true);
      sum += x;
    }
    expect(sum / 100_000).toBeCloseTo(0.5, 2);
  });

  it('int(n) is in range and roughly uniform (chi-square, 10 bins)', () => {
    const r = new Random(4);
    const bins = new Array(10).fill(0);
    const N = 100_000;
    for (let i = 0; i < N; i++) bins[r.int(10)]++;
    const e = N / 10;
    const chi2 = bins.reduce((a, o) => a + (o - e) ** 2 / e, 0);
    expect(chi2).toBeLessThan(27.9); // p = 0.001 at 9 degrees of freedom
    expect(r.int(1)).toBe(0);
    for (let i = 0; i < 1000; i++) {
      const big = r.int(2 ** 53);
      expect(Number.isSafeInteger(big) && big >= 0).toBe(true);
      const mid = r.int(3 * 2 ** 32 + 1);
      expect(mid >= 0 && mid <= 3 * 2 ** 32).toBe(true);
      expect(r.int(2 ** 32)).toBeLessThan(2 ** 32);
    }
  });

  it('bernoulli: 0 never, 1 always, 0.25 about a quarter', () => {
    const r = new Random(5);
    let hits = 0;
    for (let i = 0; i < 40_000; i++) {
      expect(r.bernoulli(0)).toBe(false);
      expect(r.bernoulli(1)).toBe(true);
      if (r.bernoulli(0.25)) hits++;
    }
    expect(hits / 40_000).toBeCloseTo(0.25, 1);
  });
});

describe('bad arguments (SIM_ERR_BAD_ARGUMENT)', () => {
  it('rejects bad seeds, labels, n and p', () => {
    expect(codeOf(() => new Random(-1))).toBe('SIM_ERR_BAD_ARGUMENT');
    expect(codeOf(() => new Random(1.5))).toBe('SIM_ERR_BAD_ARGUMENT');
    expect(codeOf(() => new Random(1n << 64n))).toBe('SIM_ERR_BAD_ARGUMENT');
    const r = new Random(1);
    expect(codeOf(() => r.fork(''))).toBe('SIM_ERR_BAD_ARGUMENT');
    for (const n of [0, -3, 1.5, NaN, 2 ** 53 + 2]) expect(codeOf(() => r.int(n))).toBe('SIM_ERR_BAD_ARGUMENT');
    for (const p of [-0.1, 1.1, NaN]) expect(codeOf(() => r.bernoulli(p))).toBe('SIM_ERR_BAD_ARGUMENT');
  });
});
