import { describe, expect, it } from 'vitest';
import { newPacket } from '../../wire/build.js';
import { decodePacket, encodePacket } from '../../wire/packet.js';
import { LINKTYPE_ETHERNET } from '../../wire/pcap.js';
import { InProcessCable } from '../cable.js';
import { FaultInjector, FaultyCableEnd, type FaultRule, parseFaultSpecs } from '../faults.js';

const WM = 0x07;
const frame = (psn: number) => encodePacket(newPacket('roce-v2', WM, { psn, destQp: 0x11, payload: new Uint8Array(32).fill(psn) }));
const psnOf = (f: Uint8Array) => {
  const r = decodePacket(f, LINKTYPE_ETHERNET, { verifyIcrc: false });
  if (!r.ok) throw r.error;
  return r.packet.bth.psn;
};

/** A fake timer queue and clock, driven by the test. */
function fakeTime() {
  let now = 0;
  const timers: { at: number; fn: () => void }[] = [];
  return {
    nowNs: () => now,
    setTimer: (ms: number, fn: () => void) => {
      timers.push({ at: now + ms * 1e6, fn });
    },
    advance(ns: number) {
      now += ns;
      timers.sort((x, y) => x.at - y.at);
      while (timers.length && timers[0]!.at <= now) timers.shift()!.fn();
    },
    get pending() {
      return timers.length;
    },
  };
}

function setup(rules: FaultRule[], seed = 1) {
  const cable = new InProcessCable();
  const t = fakeTime();
  const inj = new FaultInjector(rules, { seed });
  const a = new FaultyCableEnd(cable.a, inj, { direction: 'a->b', nowNs: t.nowNs, setTimer: t.setTimer });
  const b = new FaultyCableEnd(cable.b, inj, { direction: 'b->a', nowNs: t.nowNs, setTimer: t.setTimer });
  const atB: Uint8Array[] = [];
  const atA: Uint8Array[] = [];
  b.onReceive((f) => atB.push(f));
  a.onReceive((f) => atA.push(f));
  return { cable, t, inj, a, b, atB, atA };
}

describe('FaultyCableEnd', () => {
  it('drop, duplicate, corrupt and reorder act on send; the other end sees exactly the result', () => {
    const { cable, a, atB } = setup(parseFaultSpecs(['drop:psn=1', 'duplicate:psn=2,copies=2', 'corrupt:psn=3', 'reorder:psn=4']));
    for (let psn = 0; psn < 7; psn++) a.send(frame(psn));
    cable.drain();
    expect(atB.map(psnOf)).toEqual([0, 2, 2, 2, 3, 5, 4, 6]);
    const bad = atB[4]!;
    const r = decodePacket(bad, LINKTYPE_ETHERNET);
    expect(r.ok ? 'ok' : r.error.code).toBe('WIRE_BAD_ICRC');
    expect(a.stats).toMatchObject({ framesSent: 8 });
  });

  it('delay: a copy goes out when the injected timer fires; later frames do not wait', () => {
    const { cable, t, a, atB } = setup([{ action: 'delay', delayNs: '2ms', match: { psn: [0, 0] } }]);
    const buf = frame(0);
    a.send(buf);
    buf.fill(0xee); // the sender reuses its buffer
    a.send(frame(1));
    cable.drain();
    expect(atB.map(psnOf)).toEqual([1]);
    expect(a.faultStats.delayPending).toBe(1);
    t.advance(1_999_999);
    expect(t.pending).toBe(1);
    t.advance(1);
    cable.drain();
    expect(atB.map(psnOf)).toEqual([1, 0]);
    expect(atB[1]).toEqual(frame(0));
    expect(a.faultStats).toEqual({ delayPending: 0, delayedAfterClose: 0 });
  });

  it('faults each direction by the end it wraps; a link-down window uses the injected clock', () => {
    const { cable, t, a, b, atA, atB } = setup([
      { action: 'drop', direction: 'b->a', match: { opcode: 'write', every: 2 } },
      { action: 'link-down', atNs: '1ms', downForNs: '1ms' },
    ]);
    for (let psn = 0; psn < 4; psn++) {
      a.send(frame(psn));
      b.send(frame(psn));
    }
    t.advance(1_500_000);
    a.send(frame(9));
    b.send(frame(9));
    t.advance(500_000);
    a.send(frame(10));
    cable.drain();
    expect(atB.map(psnOf)).toEqual([0, 1, 2, 3, 10]);
    expect(atA.map(psnOf)).toEqual([0, 2]);
  });

  it('flush sends what is held; close forgets held and delayed frames', () => {
    const { cable, t, a, atB } = setup([
      { action: 'reorder', reorderDepth: 5, match: { psn: [0, 0] } },
      { action: 'delay', delayNs: 1000, match: { psn: [1, 1] } },
    ]);
    a.send(frame(0));
    a.send(frame(2));
    expect(a.flush()).toBe(1);
    cable.drain();
    expect(atB.map(psnOf)).toEqual([2, 0]);
    a.send(frame(0));
    a.send(frame(1));
    a.close();
    t.advance(10_000);
    cable.drain();
    expect(atB.map(psnOf)).toEqual([2, 0]);
    expect(a.faultStats.delayedAfterClose).toBe(1);
    expect(a.injector.heldFrames()).toBe(0);
  });

  it('seeded: two cables with the same seed and traffic lose the same frames', () => {
    const lost = () => {
      const { cable, a, atB } = setup(parseFaultSpecs(['drop:p=0.1']), 77);
      for (let psn = 0; psn < 500; psn++) a.send(frame(psn));
      cable.drain();
      const got = new Set(atB.map(psnOf));
      return Array.from({ length: 500 }, (_, i) => i).filter((i) => !got.has(i));
    };
    const x = lost();
    expect(x.length).toBeGreaterThan(20);
    expect(lost()).toEqual(x);
  });
});
