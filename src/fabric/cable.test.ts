import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../test/seeded.js';
import { CABLE_STATS, InProcessCable } from './cable.js';

describe('InProcessCable', () => {
  it('its frame ring delivers as a plain FIFO would (seeded: 2,000 runs of sends, owned sends, drains, sends from handlers, growth past 64)', () => {
    for (let seed = 1; seed <= 2000; seed++) {
      const r = seededRandom(seed);
      const cable = new InProcessCable();
      // The reference: one FIFO of [receiving end, id]; a drain delivers what was queued when it began.
      const ref: [number, number][] = [];
      const got: [number, number][] = [];
      const want: [number, number][] = [];
      let id = 0;
      const send = (from: 0 | 1) => {
        const f = Uint8Array.of(id & 0xff, id >>> 8);
        ref.push([from === 0 ? 1 : 0, id++]);
        const end = from === 0 ? cable.a : cable.b;
        if (r() < 0.5) end.send(f);
        else end.sendOwned!(f);
      };
      const onFrame = (to: 0 | 1) => (f: Uint8Array) => {
        got.push([to, f[0]! | (f[1]! << 8)]);
        if (r() < 0.2) send(r() < 0.5 ? 0 : 1);
      };
      cable.a.onReceive(onFrame(0));
      cable.b.onReceive(onFrame(1));
      const steps = 1 + Math.floor(r() * 60);
      for (let s = 0; s < steps; s++) {
        if (r() < 0.7) {
          const burst = Math.floor(r() * (r() < 0.1 ? 300 : 8));
          for (let k = 0; k < burst; k++) send(r() < 0.5 ? 0 : 1);
        } else {
          const n = ref.length;
          want.push(...ref.splice(0, n));
          expect(cable.drain()).toBe(n);
        }
        expect(cable.pending).toBe(ref.length);
      }
      while (ref.length > 0) {
        const n = ref.length;
        want.push(...ref.splice(0, n));
        expect(cable.drain()).toBe(n);
      }
      expect(got).toEqual(want);
      expect(cable.pending).toBe(0);
    }
  });

  it('delivers copies, in order, only from drain()', () => {
    const cable = new InProcessCable();
    const gotB: Uint8Array[] = [];
    cable.b.onReceive((f) => gotB.push(f));
    const f = Uint8Array.of(1, 2, 3);
    cable.a.send(f);
    f[0] = 99; // the sender reuses its buffer at once
    cable.a.send(Uint8Array.of(4));
    expect(gotB).toHaveLength(0);
    expect(cable.pending).toBe(2);
    expect(cable.drain()).toBe(2);
    expect(gotB.map((x) => Array.from(x))).toEqual([[1, 2, 3], [4]]);
    expect(cable.a.stats).toEqual({ framesSent: 2, bytesSent: 4, framesReceived: 0, bytesReceived: 0, framesDropped: 0 });
    expect(cable.b.stats).toMatchObject({ framesReceived: 2, bytesReceived: 4 });
  });

  it('does not re-enter: frames sent by a handler wait for the next drain', () => {
    const cable = new InProcessCable();
    const log: string[] = [];
    // A ping-pong that would never end if drain() ran until empty.
    cable.a.onReceive((f) => {
      log.push(`a${f[0]}`);
      cable.a.send(Uint8Array.of(f[0]! + 1));
    });
    cable.b.onReceive((f) => {
      log.push(`b${f[0]}`);
      cable.b.send(Uint8Array.of(f[0]! + 1));
    });
    cable.a.send(Uint8Array.of(0));
    expect(cable.drain()).toBe(1);
    expect(cable.drain()).toBe(1);
    expect(cable.drain()).toBe(1);
    expect(log).toEqual(['b0', 'a1', 'b2']);
  });

  it('tells the runtime when there is something to drain', () => {
    let calls = 0;
    const cable = new InProcessCable({
      onQueued: () => {
        calls++;
      },
    });
    cable.a.send(Uint8Array.of(1));
    cable.b.send(Uint8Array.of(2));
    expect(calls).toBe(1);
    cable.drain();
    cable.b.send(Uint8Array.of(3));
    expect(calls).toBe(2);
  });

  it('drops and counts without a handler and after close', () => {
    const cable = new InProcessCable();
    cable.a.send(Uint8Array.of(1));
    expect(cable.drain()).toBe(0);
    expect(cable.b.stats.framesDropped).toBe(1);
    cable.b.onReceive(() => {});
    cable.a.send(Uint8Array.of(2));
    cable.b.close();
    cable.b.close();
    cable.a.send(Uint8Array.of(3));
    expect(cable.drain()).toBe(0);
    expect(cable.a.stats).toMatchObject({ framesSent: 2, framesDropped: 1 });
    expect(cable.b.stats).toMatchObject({ framesReceived: 0, framesDropped: 2 });
  });

  it('describes every stat', () => {
    expect(CABLE_STATS.map((s) => s.name).sort()).toEqual(Object.keys(new InProcessCable().a.stats).sort());
  });
});
