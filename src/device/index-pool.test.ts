import { describe, expect, it } from 'vitest';
import { IndexPool } from './firmware.js';

/** The pool's contract, spelled out as the ring it replaces: [first, count) queued at creation, frees appended. */
class RingPool {
  private readonly q: number[] = [];
  private readonly live = new Set<number>();
  constructor(first: number, count: number) {
    for (let i = first; i < count; i++) this.q.push(i);
  }
  alloc(): number {
    const i = this.q.shift();
    if (i === undefined) return -1;
    this.live.add(i);
    return i;
  }
  free(i: number): void {
    if (this.live.delete(i)) this.q.push(i);
  }
}

describe('IndexPool', () => {
  it('hands out indices in the order of a FIFO ring filled with [first, count) (seeded random alloc/free)', () => {
    let x = 12345;
    const rnd = (n: number) => (x = (x * 1103515245 + 12345) >>> 0) % n;
    const pool = new IndexPool(2, 300);
    const ref = new RingPool(2, 300);
    const held: number[] = [];
    for (let step = 0; step < 20_000; step++) {
      if (held.length === 0 || rnd(3) > 0) {
        const a = pool.alloc();
        expect(a).toBe(ref.alloc());
        if (a >= 0) held.push(a);
      } else {
        const i = held.splice(rnd(held.length), 1)[0]!;
        pool.free(i);
        ref.free(i);
        pool.free(i); // a double free changes nothing
      }
      expect(pool.inUse).toBe(held.length);
    }
  });

  it('is exhausted at count, and refuses to free what it did not hand out', () => {
    const pool = new IndexPool(1, 4);
    expect([pool.alloc(), pool.alloc(), pool.alloc(), pool.alloc()]).toEqual([1, 2, 3, -1]);
    pool.free(0);
    pool.free(7);
    expect(pool.alloc()).toBe(-1);
    pool.free(2);
    expect(pool.alloc()).toBe(2);
  });
});
