import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { describeParams } from '../params/params.js';
import { Random } from '../runtime/sim/random.js';
import { Priority, Scheduler } from '../runtime/sim/scheduler.js';
import { type FaultHook, type LinkDir, resolveSimLinkParams, SIM_LINK_PARAMS, SIM_LINK_STATS, SimLink, Verdict, WIRE_PRIORITY, wireBytes } from './link.js';

/** A frame whose first two bytes number it. */
function frame(len: number, id: number): Uint8Array {
  const f = new Uint8Array(len);
  f[0] = id >> 8;
  f[1] = id & 0xff;
  return f;
}
const idOf = (f: Uint8Array) => (f[0]! << 8) | f[1]!;

interface Arrival {
  ns: number;
  id: number;
  len: number;
}

function setup(raw: Record<string, unknown> = {}) {
  const sched = new Scheduler();
  const link = new SimLink(sched, resolveSimLinkParams(raw), 'l0');
  const atA: Arrival[] = [];
  const atB: Arrival[] = [];
  link.a.onReceive((f) => atA.push({ ns: sched.now(), id: idOf(f), len: f.length }));
  link.b.onReceive((f) => atB.push({ ns: sched.now(), id: idOf(f), len: f.length }));
  return { sched, link, atA, atB };
}

/** Runs `fn` as an event at `ns` (the scenario's own actions). */
function at(sched: Scheduler, ns: number, fn: () => void): void {
  sched.schedule(sched.event(`script@${ns}`, Priority.default, fn), ns);
}

describe('timing', () => {
  it('a 1500-byte frame at 100 Gb/s arrives 121.92 + 500 ns later, delivered at the next whole ns (622)', () => {
    const { sched, link, atB } = setup();
    link.a.send(frame(1500, 1));
    sched.runUntilIdle();
    expect(atB).toEqual([{ ns: 622, id: 1, len: 1500 }]);
    expect(link.stats('aToB').busyPs).toBe(121_920);
  });

  it('back-to-back frames queue behind each other, exact to the ps, no drift', () => {
    const { sched, link, atB } = setup();
    for (let i = 0; i < 3; i++) link.a.send(frame(1500, i));
    expect(link.queued('aToB')).toBe(2);
    expect(link.inFlight('aToB')).toBe(1);
    sched.runUntilIdle();
    // 621.92, 743.84, 865.76 → 622, 744, 866
    expect(atB.map((x) => x.ns)).toEqual([622, 744, 866]);
    expect(atB.map((x) => x.id)).toEqual([0, 1, 2]);
    const st = link.stats('aToB');
    expect(st.queueHighWater).toBe(2);
    expect(st.queueBytesHighWater).toBe(3000);
    expect(st.framesTransmitted).toBe(3);
    expect(st.framesDelivered).toBe(3);

    const long = setup();
    for (let i = 0; i < 1000; i++) long.link.a.send(frame(1500, i));
    long.sched.runUntilIdle();
    // 1000 × 121.92 + 500 = 122 420 ns exactly: rounding does not accumulate.
    expect(long.atB.at(-1)!.ns).toBe(122_420);
    expect(long.atB.length).toBe(1000);
  });

  it('frames sent while the line is busy start when it frees; frames sent later start when sent', () => {
    const { sched, link, atB } = setup();
    at(sched, 0, () => link.a.send(frame(1500, 1)));
    at(sched, 50, () => link.a.send(frame(1500, 2))); // waits for 121.92
    at(sched, 1000, () => link.a.send(frame(1500, 3))); // idle line
    sched.runUntilIdle();
    expect(atB.map((x) => x.ns)).toEqual([622, 744, 1622]);
  });

  it('a frame never starts before it was sent, even when the line freed inside the same ns tick', () => {
    // 10 Tb/s: a minimum frame (84 wire bytes) takes 67.2 ps, so several fit in one ns.
    const { sched, link, atB } = setup({ linkRate: '10Tbps', propagationDelay: '0ns' });
    const seen: [number, number][] = [];
    link.setFaultHook('aToB', (f, now) => {
      seen.push([idOf(f), now]);
      return Verdict.pass;
    });
    at(sched, 0, () => {
      link.a.send(frame(42, 1)); // 0 → 67.2 ps
      link.a.send(frame(42, 2)); // queued: 67.2 → 134.4 ps
    });
    // At 1 ns, before the link's own events (Priority.first < Priority.wire): frame 2
    // is still queued, so frame 3 queues behind it, but it was sent at 1000 ps.
    sched.schedule(
      sched.event('late', Priority.first, () => link.a.send(frame(42, 3))),
      1,
    );
    sched.runUntilIdle();
    expect(atB.map((x) => [x.ns, x.id])).toEqual([
      [1, 1],
      [1, 2],
      [2, 3],
    ]); // 67.2 ps, 134.4 ps, 1067.2 ps
    expect(seen).toEqual([
      [1, 0],
      [2, 1],
      [3, 1],
    ]);
  });

  it('short frames are padded to 60 bytes on the wire: 64-byte slot + 20 = 6.72 ns at 100 Gb/s', () => {
    expect(wireBytes(42)).toBe(84);
    expect(wireBytes(1500)).toBe(1524);
    const { sched, link, atB } = setup({ propagationDelay: '0ns' });
    for (let i = 0; i < 3; i++) link.a.send(frame(42, i));
    sched.runUntilIdle();
    expect(atB.map((x) => x.ns)).toEqual([7, 14, 21]); // 6.72, 13.44, 20.16
    expect(atB[0]!.len).toBe(42);
    expect(link.stats('aToB').busyPs).toBe(3 * 6720);
  });

  it('a native IB link serializes a packet as its bytes alone: 1502 B at 100 Gb/s is 120.16 ns, a 30 B one 2.4 ns', () => {
    const { sched, link, atB } = setup({ propagationDelay: '0ns' });
    link.nativeIb = true;
    link.a.send(frame(1502, 1));
    for (let i = 0; i < 2; i++) link.a.send(frame(30, 2 + i));
    sched.runUntilIdle();
    // 120.16, 122.56, 124.96 → 121, 123, 125 (no 60-byte minimum, FCS, preamble or gap)
    expect(atB.map((x) => x.ns)).toEqual([121, 123, 125]);
    expect(link.stats('aToB').busyPs).toBe(120_160 + 2 * 2400);
  });

  it('other rates: 25 Gb/s and 56 Gb/s (rounded up to the ps)', () => {
    const a = setup({ linkRate: '25Gbit/s', propagationDelay: '2us' });
    a.link.a.send(frame(1000, 1));
    a.sched.runUntilIdle();
    expect(a.atB[0]!.ns).toBe(2328); // 1024 × 8 / 25 = 327.68, + 2000, next whole ns
    const b = setup({ linkRate: '56Gbps', propagationDelay: '0ns' });
    b.link.a.send(frame(60, 1)); // 84 × 8 × 125 / 7 = 12000 ps
    b.link.a.send(frame(61, 2)); // 85 × 8 × 125 / 7 = 12142.86 → 12143 ps
    b.sched.runUntilIdle();
    expect(b.atB.map((x) => x.ns)).toEqual([12, 25]);
    expect(b.link.stats('aToB').busyPs).toBe(12_000 + 12_143);
  });

  it('is full duplex: each direction has its own transmitter', () => {
    const { sched, link, atA, atB } = setup();
    link.a.send(frame(1500, 1));
    link.b.send(frame(1500, 2));
    link.b.send(frame(1500, 3));
    sched.runUntilIdle();
    expect(atB.map((x) => [x.ns, x.id])).toEqual([[622, 1]]);
    expect(atA.map((x) => [x.ns, x.id])).toEqual([
      [622, 2],
      [744, 3],
    ]);
  });

  it('a receiver that answers at once goes out on the other direction', () => {
    const { sched, link } = setup();
    const seen: number[] = [];
    link.b.onReceive((f) => link.b.send(f)); // echo
    link.a.onReceive(() => seen.push(sched.now()));
    link.a.send(frame(1500, 1));
    sched.runUntilIdle();
    expect(seen).toEqual([1244]); // 621.92 → 622, then 622 + 621.92 = 1243.92 → 1244
  });

  it('utilisation is busy time over elapsed time', () => {
    const { sched, link } = setup({ propagationDelay: '0ns' });
    link.a.send(frame(1500, 1));
    sched.runUntil(244);
    expect(link.utilisation('aToB')).toBeCloseTo(121.92 / 244, 6);
    expect(link.utilisation('bToA')).toBe(0);
  });

  it("uses the scheduler's wire priority band", () => {
    expect(WIRE_PRIORITY).toBe(Priority.wire);
  });
});

describe('cable rules and counters', () => {
  it('copies on send: the sender may reuse its buffer at once', () => {
    const { sched, link, atB } = setup();
    const got: Uint8Array[] = [];
    link.b.onReceive((f) => got.push(f));
    const buf = frame(100, 7);
    link.a.send(buf);
    buf.fill(0xee);
    link.a.send(buf);
    sched.runUntilIdle();
    expect(idOf(got[0]!)).toBe(7);
    expect(got[1]![0]).toBe(0xee);
    expect(got[0]!.buffer).not.toBe(buf.buffer);
    expect(atB.length).toBe(0); // handler was replaced
  });

  it('counts on both ends; a frame with no handler is dropped at the receiver', () => {
    const { sched, link } = setup();
    link.b.onReceive(null);
    link.a.send(frame(100, 1));
    sched.runUntilIdle();
    expect(link.a.stats).toEqual({ framesSent: 1, bytesSent: 100, framesReceived: 0, bytesReceived: 0, framesDropped: 0 });
    expect(link.b.stats).toEqual({ framesSent: 0, bytesSent: 0, framesReceived: 0, bytesReceived: 0, framesDropped: 1 });
    expect(link.stats('aToB').framesDelivered).toBe(1);
  });

  it('tail-drops past queueLimit', () => {
    const { sched, link, atB } = setup({ queueLimit: 2 });
    for (let i = 0; i < 5; i++) link.a.send(frame(1500, i)); // 1 on the wire, 2 queued, 2 dropped
    sched.runUntilIdle();
    expect(atB.map((x) => x.id)).toEqual([0, 1, 2]);
    expect(link.stats('aToB').droppedQueueFull).toBe(2);
    expect(link.a.stats.framesDropped).toBe(2);
    expect(link.a.stats.framesSent).toBe(3);
  });

  it('declares every counter with a unit and a description', () => {
    const keys = Object.keys(new SimLink(new Scheduler()).stats('aToB')).sort();
    expect(SIM_LINK_STATS.map((d) => d.name).sort()).toEqual(keys);
    for (const d of SIM_LINK_STATS) expect(d.doc.length).toBeGreaterThan(10);
    expect(Object.keys(SIM_LINK_PARAMS)).toEqual(['linkRate', 'propagationDelay', 'queueLimit']);
  });

  it('docs/simulator.md carries the SIM_LINK_PARAMS and SIM_LINK_STATS tables', () => {
    const doc = readFileSync(new URL('../../docs/simulator.md', import.meta.url), 'utf8');
    expect(doc).toContain(describeParams(SIM_LINK_PARAMS));
    for (const d of SIM_LINK_STATS) expect(doc).toContain(`\`${d.name}\``);
  });

  it('rejects bad parameters naming the path', () => {
    expect(() => resolveSimLinkParams({ linkRate: '100' }, 'fabric.links[0]')).toThrow(/fabric\.links\[0\]\.linkRate/);
    expect(() => resolveSimLinkParams({ queueLimit: 0 })).toThrow(/link\.queueLimit/);
  });
});

describe('link down and close', () => {
  it('going down drops frames queued and on the wire, both ways; sends while down are dropped', () => {
    const { sched, link, atA, atB } = setup();
    const states: boolean[] = [];
    link.onStateChange((up) => states.push(up));
    at(sched, 0, () => {
      for (let i = 0; i < 4; i++) link.a.send(frame(1500, i));
      link.b.send(frame(1500, 100));
    });
    // At 700 ns: frame 0 delivered (622), frames 1..3 on the wire (743.84, 865.76, 987.68 + prop)
    at(sched, 700, () => link.setUp(false));
    at(sched, 800, () => link.a.send(frame(1500, 9)));
    at(sched, 2000, () => {
      link.setUp(true);
      link.a.send(frame(1500, 10));
    });
    sched.runUntilIdle();
    expect(atB.map((x) => [x.ns, x.id])).toEqual([
      [622, 0],
      [2622, 10],
    ]);
    expect(atA.map((x) => x.id)).toEqual([100]);
    const st = link.stats('aToB');
    expect(st.droppedLinkDown).toBe(3 + 1); // three in flight/queued, one sent while down
    expect(link.stats('bToA').droppedLinkDown).toBe(0);
    expect(link.a.stats.framesDropped).toBe(1);
    expect(states).toEqual([false, true]);
    expect(link.up).toBe(true);
  });

  it('down with frames still queued: nothing is delivered later, events are cancelled', () => {
    const { sched, link, atB } = setup();
    for (let i = 0; i < 10; i++) link.a.send(frame(1500, i));
    link.setUp(false);
    expect(link.queued('aToB')).toBe(0);
    expect(link.inFlight('aToB')).toBe(0);
    expect(sched.pending).toBe(0);
    sched.runUntilIdle();
    expect(atB).toEqual([]);
    expect(link.stats('aToB').droppedLinkDown).toBe(10);
    // Up again: the line is free at once.
    link.setUp(true);
    link.a.send(frame(1500, 1));
    sched.runUntilIdle();
    expect(atB).toEqual([{ ns: 622, id: 1, len: 1500 }]);
  });

  it('close cuts both ends: frames on the wire drop at their receiver, later sends at their sender', () => {
    const { sched, link, atB } = setup();
    link.a.send(frame(1500, 1));
    link.a.send(frame(1500, 2));
    link.b.close();
    link.a.send(frame(1500, 3));
    sched.runUntilIdle();
    expect(atB).toEqual([]);
    expect(link.b.stats.framesDropped).toBe(2);
    expect(link.a.stats.framesDropped).toBe(1);
    expect(link.up).toBe(false);
    link.a.close(); // idempotent
    link.setUp(true);
    expect(link.up).toBe(false);
  });
});

describe('fault hook', () => {
  function withHook(dir: LinkDir, hook: FaultHook, raw: Record<string, unknown> = {}) {
    const s = setup(raw);
    s.link.setFaultHook(dir, hook);
    return s;
  }

  it('drop: the frame still holds the line, and never arrives', () => {
    const { sched, link, atB } = withHook('aToB', (f) => (idOf(f) === 1 ? Verdict.drop : Verdict.pass));
    for (let i = 0; i < 3; i++) link.a.send(frame(1500, i));
    sched.runUntilIdle();
    expect(atB.map((x) => [x.ns, x.id])).toEqual([
      [622, 0],
      [866, 2],
    ]);
    expect(link.stats('aToB')).toMatchObject({ faultDropped: 1, framesTransmitted: 3, framesDelivered: 2 });
  });

  it('the hook sees each frame when it leaves the queue, with the time then', () => {
    const seen: [number, number][] = [];
    const { sched, link } = withHook('aToB', (f, now) => {
      seen.push([idOf(f), now]);
      return Verdict.pass;
    });
    for (let i = 0; i < 3; i++) link.a.send(frame(1500, i));
    sched.runUntilIdle();
    expect(seen).toEqual([
      [0, 0],
      [1, 122],
      [2, 244],
    ]);
  });

  it('replace: the new frame is serialized (its length sets the time) and delivered', () => {
    const { sched, link, atB } = withHook('aToB', (f) => Verdict.replace(f.subarray(0, 100)));
    link.a.send(frame(1500, 5));
    link.a.send(frame(1500, 6));
    sched.runUntilIdle();
    // 124 bytes = 9.92 ns each
    expect(atB).toEqual([
      { ns: 510, id: 5, len: 100 },
      { ns: 520, id: 6, len: 100 },
    ]);
    expect(link.stats('aToB').faultReplaced).toBe(2);
  });

  it('in-place change with pass reaches the receiver', () => {
    const got: number[] = [];
    const { sched, link } = withHook('aToB', (f) => {
      f[10] = 0x5a;
      return Verdict.pass;
    });
    link.b.onReceive((f) => got.push(f[10]!));
    link.a.send(frame(64, 1));
    sched.runUntilIdle();
    expect(got).toEqual([0x5a]);
  });

  it('delay: later frames overtake the delayed one (reordering); the line is not held', () => {
    const { sched, link, atB } = withHook('aToB', (f) => (idOf(f) === 0 ? Verdict.delay(300) : Verdict.pass));
    for (let i = 0; i < 4; i++) link.a.send(frame(1500, i));
    sched.runUntilIdle();
    // 0: 621.92 + 300 = 921.92; 1: 743.84; 2: 865.76; 3: 987.68
    expect(atB.map((x) => [x.ns, x.id])).toEqual([
      [744, 1],
      [866, 2],
      [922, 0],
      [988, 3],
    ]);
    expect(link.stats('aToB').faultDelayed).toBe(1);
  });

  it('frames arriving at the same picosecond keep send order', () => {
    // Delaying frame 0 by exactly one frame time lands it on frame 1. A delay is whole
    // ns, so use a rate where a 1500-byte frame (1524 wire bytes) takes 1000 ns: 12.192 Gb/s.
    const { sched, link, atB } = withHook('aToB', (f) => (idOf(f) === 0 ? Verdict.delay(1000) : Verdict.pass), { linkRate: '12.192Gbps' });
    link.a.send(frame(1500, 0));
    link.a.send(frame(1500, 1));
    sched.runUntilIdle();
    expect(atB.map((x) => [x.ns, x.id])).toEqual([
      [2500, 0],
      [2500, 1],
    ]);
  });

  it('duplicate: two copies, back to back, the copy not shown to the hook again', () => {
    let calls = 0;
    const got: Uint8Array[] = [];
    const { sched, link, atB } = withHook('aToB', () => {
      calls++;
      return Verdict.duplicate;
    });
    link.b.onReceive((f) => {
      got.push(f);
      atB.push({ ns: sched.now(), id: idOf(f), len: f.length });
    });
    link.a.send(frame(1500, 3));
    link.a.send(frame(1500, 4));
    sched.runUntilIdle();
    expect(calls).toBe(2);
    expect(atB.map((x) => [x.ns, x.id])).toEqual([
      [622, 3],
      [744, 3],
      [866, 4],
      [988, 4],
    ]);
    expect(got[0]).not.toBe(got[1]);
    expect(link.stats('aToB')).toMatchObject({ faultDuplicated: 2, framesTransmitted: 4, framesDelivered: 4 });
  });

  it('hooks are per direction and can be cleared', () => {
    const { sched, link, atA, atB } = withHook('bToA', () => Verdict.drop);
    link.a.send(frame(100, 1));
    link.b.send(frame(100, 2));
    sched.runUntilIdle();
    expect(atB.length).toBe(1);
    expect(atA.length).toBe(0);
    link.setFaultHook('bToA', null);
    link.b.send(frame(100, 3));
    sched.runUntilIdle();
    expect(atA.map((x) => x.id)).toEqual([3]);
  });

  it('rejects a malformed verdict with a typed error', () => {
    const { link } = withHook('aToB', () => Verdict.delay(-1));
    expect(() => link.a.send(frame(100, 1))).toThrow(expect.objectContaining({ code: 'FABRIC_BAD_CONFIG' }));
    const other = withHook('aToB', () => ({ kind: 'explode' }) as unknown as Verdict);
    expect(() => other.link.a.send(frame(100, 1))).toThrow(/unknown fault verdict/);
    expect(() => other.link.setFaultHook('sideways' as LinkDir, null)).toThrow(expect.objectContaining({ code: 'FABRIC_BAD_CONFIG' }));
    expect(() => other.link.stats('toString' as LinkDir)).toThrow(expect.objectContaining({ code: 'FABRIC_BAD_CONFIG' }));
  });
});

describe('reproducibility', () => {
  /** Two hosts exchanging random traffic through a lossy link, all randomness from one seed. */
  function scenario(seed: number): { trace: string; delivered: number } {
    const root = new Random(seed);
    const sched = new Scheduler();
    const link = new SimLink(sched, resolveSimLinkParams({ propagationDelay: '300ns', queueLimit: 8 }), 'l0');
    const faults = root.fork('l0.faults');
    link.setFaultHook('aToB', () => (faults.bernoulli(0.05) ? Verdict.drop : faults.bernoulli(0.05) ? Verdict.delay(faults.int(500)) : Verdict.pass));
    const lines: string[] = [];
    sched.setTracer((ev, t) => lines.push(`${t} ${ev.name}`));
    const hash = { h: 0x811c9dc5 };
    const fold = (f: Uint8Array, side: string) => {
      lines.push(`${sched.now()} rx ${side} ${idOf(f)} ${f.length}`);
      for (const b of f) hash.h = Math.imul(hash.h ^ b, 0x01000193) >>> 0;
    };
    link.a.onReceive((f) => fold(f, 'a'));
    link.b.onReceive((f) => fold(f, 'b'));
    for (const [end, name] of [
      [link.a, 'hostA'],
      [link.b, 'hostB'],
    ] as const) {
      const rng = root.fork(name);
      let id = 0;
      const tick = sched.event(`${name}.tx`, Priority.default, () => {
        const f = frame(60 + rng.int(1441), id++);
        for (let i = 2; i < f.length; i++) f[i] = rng.int(256);
        end.send(f);
        if (id < 400) sched.schedule(tick, sched.now() + rng.int(200));
      });
      sched.schedule(tick, rng.int(100));
    }
    sched.runUntilIdle();
    const st = link.stats('aToB');
    lines.push(JSON.stringify(st), JSON.stringify(link.stats('bToA')), hash.h.toString(16));
    return { trace: lines.join('\n'), delivered: st.framesDelivered };
  }

  it('two runs with the same seed give identical event traces and counters', () => {
    const a = scenario(2024);
    expect(a.delivered).toBeGreaterThan(100);
    expect(scenario(2024).trace).toBe(a.trace);
    expect(scenario(2025).trace).not.toBe(a.trace);
  });
});
