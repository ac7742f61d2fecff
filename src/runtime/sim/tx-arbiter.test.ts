/** The simulated MAC's arbiter: strict priority over ready heads, paused lanes skipped and held, MAC Control never paused. */
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../../test/seeded.js';
import { PriorityPause } from '../../pipeline/pfc.js';
import { encodePfc } from '../../wire/index.js';
import { CONTROL_LANE, TxArbiter } from './tx-arbiter.js';

const f = (tag: number) => Uint8Array.of(tag);
const MAC = Uint8Array.of(2, 0, 0, 0, 0, 9);

function pauseOf(prio: number, quanta: number, atNs: number): PriorityPause {
  const p = new PriorityPause(100e9);
  const t = [0, 0, 0, 0, 0, 0, 0, 0];
  t[prio] = quanta;
  p.receive(encodePfc(MAC, 1 << prio, t), atNs * 1000);
  return p;
}

describe('TxArbiter', () => {
  it('serves the highest ready lane first, FIFO within a lane, control first of all', () => {
    const a = new TxArbiter();
    const none = new PriorityPause();
    a.push(0, f(1), 0);
    a.push(3, f(2), 0);
    a.push(3, f(3), 0);
    a.push(CONTROL_LANE, f(4), 0);
    a.push(7, f(5), 10); // not ready yet
    const order: number[] = [];
    for (let lane = a.pick(0, none); lane >= 0; lane = a.pick(0, none)) order.push(a.take(lane)[0]!);
    expect(order).toEqual([4, 2, 3, 1]);
    expect(a.nextNs(0, none)).toBe(10);
    expect(a.pick(10, none)).toBe(7);
  });

  it('a lane is a FIFO in time: a frame is never ready before the one ahead of it', () => {
    const a = new TxArbiter();
    a.push(2, f(1), 50);
    a.push(2, f(2), 20);
    expect(a.nextNs(0, new PriorityPause())).toBe(50);
    a.take(a.pick(50, new PriorityPause()));
    expect(a.pick(50, new PriorityPause())).toBe(2);
  });

  it('a paused lane waits until its pause ends; the others go; control frames go while all are paused', () => {
    const a = new TxArbiter();
    const p = pauseOf(3, 1000, 100); // 100 ns + 5120 ns
    a.push(3, f(1), 0);
    a.push(1, f(2), 0);
    expect(a.pick(200, p)).toBe(1);
    a.take(1);
    expect(a.pick(200, p)).toBe(-1);
    expect(a.held(200, p)).toBe(1);
    expect(a.nextNs(200, p)).toBe(5220);
    expect(a.pick(5219, p)).toBe(-1);
    expect(a.pick(5220, p)).toBe(3);
    a.push(CONTROL_LANE, f(3), 300);
    expect(a.pick(300, p)).toBe(CONTROL_LANE);
  });

  it('a frame the line gave back goes to the head of its lane, ready now', () => {
    const a = new TxArbiter();
    a.push(4, f(1), 0);
    a.unshift(4, f(9), 30);
    expect(a.size).toBe(2);
    expect(a.take(a.pick(30, new PriorityPause()))[0]).toBe(9);
    expect(a.take(a.pick(30, new PriorityPause()))[0]).toBe(1);
    expect(a.size).toBe(0);
    expect(a.nextNs(30, new PriorityPause())).toBe(Infinity);
  });

  it('agrees with a plain scan of nine FIFOs on 1000 seeded random runs (push, give back, pick, take, nextNs, held; PFC pauses)', () => {
    for (let seed = 1; seed <= 1000; seed++) {
      const rnd = seededRandom(seed);
      const int = (n: number) => Math.floor(rnd() * n);
      const a = new TxArbiter();
      const model: { frame: Uint8Array; at: number }[][] = Array.from({ length: CONTROL_LANE + 1 }, () => []);
      const last = new Array<number>(CONTROL_LANE + 1).fill(0);
      const pause = int(2) === 0 ? new PriorityPause() : pauseOf(int(8), 1 + int(2000), int(200));
      let now = 0;
      const ref = {
        pick(): number {
          for (let i = CONTROL_LANE; i >= 0; i--) {
            const l = model[i]!;
            if (l.length === 0 || l[0]!.at > now) continue;
            if (i !== CONTROL_LANE && pause.isPaused(i, now)) continue;
            return i;
          }
          return -1;
        },
        next(): number {
          let t = Infinity;
          for (let i = 0; i <= CONTROL_LANE; i++) {
            const l = model[i]!;
            if (l.length === 0) continue;
            const at = i !== CONTROL_LANE && pause.isPaused(i, now) ? Math.max(l[0]!.at, pause.resumeNs(i)) : l[0]!.at;
            t = Math.min(t, at);
          }
          return t;
        },
      };
      for (let step = 0; step < 60; step++) {
        const r = rnd();
        const lane = int(CONTROL_LANE + 1);
        const frame = f(step);
        if (r < 0.4) {
          const at = Math.max(now + int(100), last[lane]!);
          last[lane] = at;
          a.push(lane, frame, at);
          model[lane]!.push({ frame, at });
        } else if (r < 0.45) {
          a.unshift(lane, frame, now);
          model[lane]!.unshift({ frame, at: now });
        } else if (r < 0.8) {
          const got = a.pick(now, pause);
          expect(got, `seed ${seed} step ${step}`).toBe(ref.pick());
          if (got >= 0) expect(a.take(got)).toBe(model[got]!.shift()!.frame);
        } else {
          expect(a.nextNs(now, pause), `seed ${seed} step ${step}`).toBe(ref.next());
          expect(a.held(now, pause)).toBe(
            pause.pausedMask === 0 ? 0 : model.slice(0, CONTROL_LANE).reduce((n, l, i) => n + (pause.isPaused(i, now) ? l.length : 0), 0),
          );
          now += int(300);
        }
        expect(a.size).toBe(model.reduce((n, l) => n + l.length, 0));
      }
    }
  });
});
