import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../test/seeded.js';
import { TimedQueue } from './timed-queue.js';

interface Item {
  frame: Uint8Array;
  at: number;
  tag: number;
}

describe('TimedQueue', () => {
  it('behaves as a plain array model under 20,000 seeded random operations (push, sorted insert, shift, unshift, pop, clear), across compactions', () => {
    for (const seed of [1, 2, 3, 4]) {
      const rnd = seededRandom(seed);
      const q = new TimedQueue();
      const model: Item[] = [];
      for (let step = 0; step < 5000; step++) {
        const r = rnd();
        // Bias toward growth in long stretches so the head runs past 1024 and the queue compacts.
        const grow = step % 2000 < 1500 ? 0.55 : 0.3;
        if (r < grow * 0.6) {
          const it = { frame: new Uint8Array(1), at: model.length ? model[model.length - 1]!.at + Math.floor(rnd() * 3) : 0, tag: step & 7 };
          q.push(it.frame, it.at, it.tag);
          model.push(it);
        } else if (r < grow) {
          const it = { frame: new Uint8Array(1), at: Math.floor(rnd() * 50) + (model[0]?.at ?? 0), tag: step & 7 };
          let i = model.length;
          while (i > 0 && model[i - 1]!.at > it.at) i--;
          expect(q.insertByTime(it.frame, it.at, it.tag)).toBe(i);
          model.splice(i, 0, it);
        } else if (r < 0.97) {
          if (model.length === 0) continue;
          const want = model[0]!;
          expect(q.firstAt()).toBe(want.at);
          expect(q.firstTag()).toBe(want.tag);
          expect(q.first()).toBe(want.frame);
          expect(q.shift()).toBe(want.frame);
          model.shift();
        } else if (r < 0.98) {
          // Put back at the front (the MAC gives a frame back), at a head of 0 or past it.
          const it = { frame: new Uint8Array(1), at: model[0]?.at ?? 0, tag: step & 7 };
          q.unshift(it.frame, it.at, it.tag);
          model.unshift(it);
        } else if (r < 0.995) {
          expect(q.last()).toBe(model[model.length - 1]?.frame);
          if (model.length === 0) continue;
          expect(q.pop()).toBe(model.pop()!.frame);
        } else {
          q.clear();
          model.length = 0;
        }
        expect(q.length).toBe(model.length);
      }
      while (model.length > 0) expect(q.shift()).toBe(model.shift()!.frame);
      expect(q.length).toBe(0);
      expect(q.last()).toBeUndefined();
    }
  });

  it('keeps order and times when the head runs far ahead (the storage is compacted)', () => {
    const q = new TimedQueue();
    const frames = Array.from({ length: 3000 }, () => new Uint8Array(1));
    for (let i = 0; i < 1500; i++) q.push(frames[i]!, i, i % 5);
    let next = 0;
    for (let i = 1500; i < 3000; i++) {
      q.push(frames[i]!, i, i % 5);
      expect(q.firstAt()).toBe(next);
      expect(q.firstTag()).toBe(next % 5);
      expect(q.shift()).toBe(frames[next++]!);
    }
    expect(q.length).toBe(1500);
    while (q.length > 0) {
      expect(q.firstAt()).toBe(next);
      expect(q.shift()).toBe(frames[next++]!);
    }
    expect(next).toBe(3000);
  });
});
