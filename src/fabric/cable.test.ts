import { describe, expect, it } from 'vitest';
import { CABLE_STATS, InProcessCable } from './cable.js';

describe('InProcessCable', () => {
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
