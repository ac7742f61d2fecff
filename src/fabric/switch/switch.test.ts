/**
 * The switch on its own, on the simulator's scheduler and real SimLinks:
 * RED ECN marking (exact against a replay of the same seeded stream, and
 * statistically), PFC frames it sends and their thresholds and refresh,
 * PAUSE it obeys at egress (exactly its priority, exactly its quanta),
 * strict priority and DWRR, ECMP spreading, ARP suppression.
 */
import { describe, expect, it } from 'vitest';
import { Random } from '../../runtime/sim/random.js';
import { Scheduler } from '../../runtime/sim/scheduler.js';
import { decodeArpFrame, encodeArpRequest } from '../../wire/arp.js';
import { internetChecksum } from '../../wire/ip.js';
import { decodeMacControl, encodePfc } from '../../wire/mac-control.js';
import { decodePacket, encodePacket } from '../../wire/packet.js';
import { newPacket } from '../../wire/build.js';
import { resolveSimLinkParams, SimLink } from '../link.js';
import { DEFAULT_SWITCH_CONFIG, type SwitchConfig } from './config.js';
import { LEARNT_CAPACITY, Switch } from './switch.js';

const MAC = (i: number): Uint8Array => Uint8Array.of(2, 0, 0, 0, 0, i + 1);
const IP = (i: number): Uint8Array => Uint8Array.of(10, 0, 0, i + 1);
const SWMAC = Uint8Array.of(2, 0x5e, 0, 0, 0, 0);

interface Arrival {
  ns: number;
  frame: Uint8Array;
}

function rig(n: number, cfg: SwitchConfig, seed = 1) {
  const sched = new Scheduler();
  const ports = Array.from({ length: n }, () => ({ linkRate: 100e9, delayNs: 1000, mtu: 9018, mac: SWMAC }));
  const sw = new Switch('sw', cfg, ports, sched, new Random(seed).fork('ecn'));
  const got: Arrival[][] = [];
  const links: SimLink[] = [];
  for (let i = 0; i < n; i++) {
    const link = new SimLink(sched, resolveSimLinkParams({ linkRate: '100Gbps', propagationDelay: 1000 }), `l${i}`);
    link.b.onReceive((f) => sw.receive(i, f));
    link.setPull('bToA', () => sw.pull(i));
    sw.attach(i, { kick: () => link.kick('bToA') });
    const list: Arrival[] = [];
    got.push(list);
    link.a.onReceive((f) => list.push({ ns: sched.now(), frame: f }));
    links.push(link);
    sw.addRoute(IP(i), [i]);
    sw.addHost(IP(i), MAC(i));
  }
  return { sched, sw, got, links };
}

/** A RoCE v2 SEND from host `from` to host `to` at priority `prio` (DSCP prio × 8), `psn` to tell it. */
function frame(from: number, to: number, o: { prio?: number; psn?: number; ecn?: number; payload?: number; sport?: number } = {}): Uint8Array {
  return encodePacket(
    newPacket('roce-v2', 0x04, {
      srcMac: MAC(from),
      dstMac: MAC(to),
      srcIp: IP(from),
      dstIp: IP(to),
      dscp: (o.prio ?? 3) << 3,
      ecn: o.ecn ?? 2,
      psn: o.psn ?? 0,
      destQp: 17,
      udpSrcPort: o.sport ?? 0xc000,
      payload: new Uint8Array(o.payload ?? 1000),
    }),
  );
}

const pfc = (prio: number, quanta: number): Uint8Array => {
  const t = [0, 0, 0, 0, 0, 0, 0, 0];
  t[prio] = quanta;
  return encodePfc(MAC(0), 1 << prio, t);
};

const cfg = (o: Omit<Partial<SwitchConfig>, 'pfc'> & { pfc?: Partial<SwitchConfig['pfc']> } = {}): SwitchConfig => ({
  ...DEFAULT_SWITCH_CONFIG,
  ...o,
  pfc: { ...DEFAULT_SWITCH_CONFIG.pfc, ...o.pfc },
});

const psnOf = (f: Uint8Array): number => {
  const d = decodePacket(f);
  if (!d.ok) throw new Error('not a packet');
  return d.packet.bth.psn;
};

describe('ECN marking at egress', () => {
  const KMIN = 400_000;
  const KMAX = 1_600_000;
  const PMAX = 0.2;

  /** Holds port 0 with a PAUSE, queues `n` frames for it (every `notEct`-th not ECT), releases it, runs. */
  function drain(n: number, seed: number, notEct = 0) {
    const r = rig(2, cfg({ pfc: { enabled: false } }), seed);
    r.sw.receive(0, pfc(3, 0xffff));
    const sizes: number[] = [];
    for (let k = 0; k < n; k++) {
      const f = frame(1, 0, { psn: k, ecn: notEct > 0 && k % notEct === 0 ? 0 : 2 });
      sizes.push(f.length);
      r.sw.receive(1, f);
    }
    r.sw.receive(0, pfc(3, 0));
    r.sched.runUntil(10_000_000);
    return { r, sizes };
  }

  it('marks exactly the packets a replay of the same seeded stream says: none at or below Kmin, all above Kmax, p = Pmax·(q−Kmin)/(Kmax−Kmin) between', () => {
    for (const seed of [1, 2, 3, 42]) {
      const n = 2000;
      const { r, sizes } = drain(n, seed, 7);
      const got = r.got[0]!;
      expect(got).toHaveLength(n);
      const replay = new Random(seed).fork('ecn');
      let q = sizes.reduce((a, b) => a + b, 0);
      let inBand = 0;
      let expectedInBand = 0;
      let markedInBand = 0;
      for (let k = 0; k < n; k++) {
        const f = got[k]!.frame;
        expect(psnOf(f)).toBe(k);
        q -= sizes[k]!;
        const ect = k % 7 !== 0;
        let mark = false;
        if (ect && q > KMIN) {
          if (q > KMAX) mark = true;
          else {
            const p = (PMAX * (q - KMIN)) / (KMAX - KMIN);
            mark = replay.next() < p;
            inBand++;
            expectedInBand += p;
            if (mark) markedInBand++;
          }
        }
        const ecn = f[15]! & 3;
        expect(ecn, `packet ${k} (queue ${q} B after it)`).toBe(mark ? 3 : ect ? 2 : 0);
        // The IPv4 header checksum still verifies, and so does the ICRC (it masks the TOS byte).
        expect(internetChecksum(f, 14, 20)).toBe(0);
        expect(decodePacket(f).ok).toBe(true);
      }
      expect(inBand).toBeGreaterThan(500);
      // Seeded, so exact; and the count is what the probabilities say (within 4 σ).
      expect(Math.abs(markedInBand - expectedInBand)).toBeLessThan(4 * Math.sqrt(expectedInBand));
      expect(r.sw.stats(0).ecnMarked).toBe(got.filter((a) => (a.frame[15]! & 3) === 3).length);
    }
  });

  it('never marks a packet that is not ECT, nor one on a priority without ECN', () => {
    const r = rig(2, cfg({ pfc: { enabled: false }, ecn: { thresholds: [{ linkRate: 100e9, kminBytes: 0, kmaxBytes: 1, pmax: 1 }], priorities: 1 << 3 } }));
    r.sw.receive(0, pfc(3, 0xffff));
    r.sw.receive(0, pfc(4, 0xffff));
    for (let k = 0; k < 50; k++) {
      r.sw.receive(1, frame(1, 0, { psn: k, ecn: 0 }));
      r.sw.receive(1, frame(1, 0, { psn: 1000 + k, prio: 4 }));
      r.sw.receive(1, frame(1, 0, { psn: 2000 + k }));
    }
    r.sw.receive(0, pfc(3, 0));
    r.sw.receive(0, pfc(4, 0));
    r.sched.runUntil(10_000_000);
    for (const a of r.got[0]!) {
      const psn = psnOf(a.frame);
      const ecn = a.frame[15]! & 3;
      if (psn < 1000) expect(ecn).toBe(0);
      else if (psn < 2000) expect(ecn).toBe(2);
      else if (psn < 2049) expect(ecn).toBe(3);
    }
  });
});

describe('PAUSE received: the egress obeys it per priority', () => {
  it('stops exactly the paused priority for exactly quanta × 512 bit times; other priorities flow', () => {
    const r = rig(2, cfg({ pfc: { enabled: false } }));
    const link0 = r.links[0]!;
    // Host 0 sends XOFF for priority 3, 1000 quanta (5120 ns at 100 Gb/s), arriving at the switch at 1000 + 64 B.
    link0.a.send(pfc(3, 1000));
    // The 60-byte PFC frame (84 B on the wire) takes 6.72 ns, then 1000 ns of cable: at the switch at 1007 ns.
    r.sched.runUntil(1006);
    expect(r.sw.isPausedByPeer(0, 3)).toBe(false);
    r.sched.runUntil(1007);
    const pausedAt = 1007;
    expect(r.sw.isPausedByPeer(0, 3)).toBe(true);
    for (let k = 0; k < 20; k++) {
      r.sw.receive(1, frame(1, 0, { psn: k, prio: 3 }));
      r.sw.receive(1, frame(1, 0, { psn: 100 + k, prio: 1 }));
    }
    r.sched.runUntil(1_000_000);
    const got = r.got[0]!;
    const start = (a: Arrival) => a.ns - 1000; // arrival − propagation ≈ end of serialization
    const p3 = got.filter((a) => psnOf(a.frame) < 100);
    const p1 = got.filter((a) => psnOf(a.frame) >= 100);
    expect(p3).toHaveLength(20);
    expect(p1).toHaveLength(20);
    // Every priority-1 frame went first; the first priority-3 frame started when the pause ended.
    const lastP1 = Math.max(...p1.map(start));
    expect(Math.min(...p3.map(start))).toBeGreaterThan(lastP1);
    // Its serialization started when the 5120 ns ended (arrivals are stamped at the next whole ns).
    const serNs = ((p3[0]!.frame.length + 24) * 8) / 100;
    expect(start(p3[0]!) - serNs).toBeGreaterThanOrEqual(pausedAt + 5120);
    expect(start(p3[0]!) - serNs).toBeLessThan(pausedAt + 5120 + 1);
    expect(r.sw.isPausedByPeer(0, 3)).toBe(false);
    expect(r.sw.stats(0).pauseReceived).toBe(1);
  });

  it('an XON ends the pause at once', () => {
    const r = rig(2, cfg({ pfc: { enabled: false } }));
    r.sw.receive(0, pfc(3, 0xffff));
    for (let k = 0; k < 5; k++) r.sw.receive(1, frame(1, 0, { psn: k }));
    r.sched.runUntil(50_000);
    expect(r.got[0]).toHaveLength(0);
    r.sw.receive(0, pfc(3, 0));
    r.sched.runUntil(60_000);
    expect(r.got[0]).toHaveLength(5);
    expect(r.got[0]![0]!.ns).toBeLessThan(50_000 + 1100);
  });
});

describe('PFC sent by the switch', () => {
  it('static thresholds: XOFF with pauseQuanta when an ingress crosses xoff, refreshed at half the pause time, XON once under xon', () => {
    const quanta = 2000; // 10.24 µs at 100 Gb/s: refresh every 5.12 µs
    const r = rig(2, cfg({ pfc: { mode: 'static', xoffBytes: 20_000, xonBytes: 10_000, pauseQuanta: quanta } }));
    r.sw.receive(0, pfc(3, 0xffff)); // hold the egress so the ingress fills
    for (let k = 0; k < 40; k++) r.sw.receive(1, frame(1, 0, { psn: k }));
    r.sched.runUntil(20_000);
    const sent = (): { ns: number; q: number }[] =>
      r.got[1]!.map((a) => ({ ns: a.ns, m: decodeMacControl(a.frame) }))
        .filter((x) => typeof x.m !== 'string')
        .map((x) => {
          const m = x.m as Exclude<typeof x.m, string>;
          if (m.kind !== 'pfc') throw new Error('not PFC');
          expect(m.classEnable).toBe(1 << 3);
          return { ns: x.ns, q: m.pauseTimes[3]! };
        });
    const xoff = sent();
    // First XOFF at t = 0 (the 4 KB reserve plus 20 KB crossed), then refreshes every 5120 ns.
    expect(xoff.length).toBeGreaterThanOrEqual(3);
    for (const x of xoff) expect(x.q).toBe(quanta);
    for (let i = 1; i < xoff.length; i++) expect(xoff[i]!.ns - xoff[i - 1]!.ns).toBe(5120);
    expect(r.sw.stats(1).pauseSent).toBe(xoff.length);
    // Release the egress: the ingress drains below xon and an XON follows.
    r.sw.receive(0, pfc(3, 0));
    r.sched.runUntil(100_000);
    const all = sent();
    expect(all[all.length - 1]!.q).toBe(0);
    expect(r.sw.stats(1).resumeSent).toBe(1);
    expect(r.got[0]).toHaveLength(40);
    expect(r.sw.mmu.usedBytes).toBe(0);
  });

  it('dynamic threshold: pauses at (buffer − headroom − reserve − shared) >> alphaShift, and drops nothing while headroom lasts', () => {
    const c = cfg({ bufferBytes: 1 << 20 });
    const r = rig(3, c);
    r.sw.receive(0, pfc(3, 0xffff));
    let firstPauseAt = -1;
    for (let k = 0; k < 200 && firstPauseAt < 0; k++) {
      r.sw.receive(1, frame(1, 0, { psn: k }));
      if (r.sw.stats(1).pauseSent > 0) firstPauseAt = r.sw.mmu.ingressBytes(1, 3);
    }
    // Headroom per port 3 × 100 Gb/s × 1 µs / 8 + 2 × 9018; threshold = (1 MiB − 3 × (headroom + 4 KiB) − shared) / 8.
    const headroom = 37_500 + 2 * 9018;
    const shared = firstPauseAt - 4096;
    expect(shared).toBeGreaterThanOrEqual(Math.floor((2 ** 20 - 3 * (headroom + 4096) - shared) / 8));
    expect(shared - frame(1, 0).length).toBeLessThan(Math.floor((2 ** 20 - 3 * (headroom + 4096) - (shared - frame(1, 0).length)) / 8));
    expect(r.sw.stats(0).droppedFrames).toBe(0);
  });
});

describe('scheduling between priorities', () => {
  it('strict priority: 7 before 5 before 3', () => {
    const r = rig(2, cfg({ pfc: { enabled: false } }));
    r.sw.receive(0, pfc(3, 0xffff));
    r.sw.receive(0, encodePfc(MAC(0), 0xff, [0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff]));
    for (let k = 0; k < 10; k++) for (const p of [3, 5, 7]) r.sw.receive(1, frame(1, 0, { psn: p * 100 + k, prio: p }));
    r.sw.receive(0, encodePfc(MAC(0), 0xff, [0, 0, 0, 0, 0, 0, 0, 0]));
    r.sched.runUntil(1_000_000);
    expect(r.got[0]!.map((a) => Math.floor(psnOf(a.frame) / 100))).toEqual([...Array(10).fill(7), ...Array(10).fill(5), ...Array(10).fill(3)]);
  });

  it('DWRR: backlogged priorities share the line by their weights', () => {
    const r = rig(2, cfg({ pfc: { enabled: false }, scheduler: 'dwrr', dwrrWeights: [1, 1, 1, 3, 1, 1, 1, 1], dwrrQuantumBytes: 1100 }));
    r.sw.receive(0, encodePfc(MAC(0), 0xff, [0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff]));
    for (let k = 0; k < 400; k++) for (const p of [1, 3]) r.sw.receive(1, frame(1, 0, { psn: p * 1000 + k, prio: p }));
    r.sw.receive(0, encodePfc(MAC(0), 0xff, [0, 0, 0, 0, 0, 0, 0, 0]));
    r.sched.runUntil(1_000_000);
    const first = r.got[0]!.slice(0, 400).map((a) => Math.floor(psnOf(a.frame) / 1000));
    const p3 = first.filter((p) => p === 3).length;
    expect(p3).toBe(300);
  });
});

describe('forwarding', () => {
  it('ECMP: one 5-tuple always takes one port; 4000 flows spread evenly over 4 ports', () => {
    const r = rig(5, cfg({ pfc: { enabled: false } }));
    r.sw.addRoute(IP(9), [1, 2, 3, 4]);
    const portOf = new Map<number, number>();
    for (let k = 0; k < 4000; k++) {
      const sport = 0xc000 + k;
      const before = [1, 2, 3, 4].map((p) => r.sw.stats(p).enqueuedFrames);
      r.sw.receive(0, frame(0, 9, { sport, payload: 64 }));
      r.sw.receive(0, frame(0, 9, { sport, payload: 64 }));
      const after = [1, 2, 3, 4].map((p) => r.sw.stats(p).enqueuedFrames);
      const moved = after.map((a, i) => a - before[i]!);
      expect(moved.filter((m) => m > 0)).toEqual([2]);
      portOf.set(
        sport,
        moved.findIndex((m) => m > 0),
      );
      r.sched.runUntil(r.sched.now() + 100);
    }
    const per = [0, 1, 2, 3].map((p) => [...portOf.values()].filter((x) => x === p).length);
    for (const n of per) expect(Math.abs(n - 1000)).toBeLessThan(120);
  });

  it(`learns at most ${LEARNT_CAPACITY} forged source addresses; what it learnt first stays routed`, () => {
    const r = rig(2, cfg({ pfc: { enabled: false } }));
    const forged = (k: number) => Uint8Array.of(198, 18, k >> 8, k & 0xff);
    const roce = (srcMac: Uint8Array, dstMac: Uint8Array, srcIp: Uint8Array, dstIp: Uint8Array) =>
      encodePacket(newPacket('roce-v2', 0x04, { srcMac, dstMac, srcIp, dstIp, psn: 0, destQp: 17, payload: new Uint8Array(8) }));
    for (let k = 0; k < LEARNT_CAPACITY + 1000; k++) {
      r.sw.receive(1, roce(MAC(1), MAC(0), forged(k), IP(0)));
      r.sched.runUntil(r.sched.now() + 100);
    }
    const to = (k: number) => roce(MAC(0), MAC(1), IP(0), forged(k));
    const before = r.sw.stats(1).enqueuedFrames;
    r.sw.receive(0, to(0));
    r.sw.receive(0, to(LEARNT_CAPACITY - 1));
    expect(r.sw.stats(1).enqueuedFrames - before, 'the first learnt are routed').toBe(2);
    r.sw.receive(0, to(LEARNT_CAPACITY));
    expect(r.sw.stats(0).droppedNoRoute, 'past the capacity nothing was learnt').toBe(1);
  });

  it('drops what it has no route for, and counts it', () => {
    const r = rig(2, cfg());
    r.sw.receive(0, frame(0, 7));
    expect(r.sw.stats(0).droppedNoRoute).toBe(1);
    r.sw.receive(0, new Uint8Array(10));
    expect(r.sw.stats(0).droppedMalformed).toBe(1);
  });

  it("answers ARP for a known host with that host's MAC (ARP suppression), and nothing for an unknown one", () => {
    const r = rig(2, cfg());
    r.links[0]!.a.send(encodeArpRequest(MAC(0), IP(0), IP(1)));
    r.links[0]!.a.send(encodeArpRequest(MAC(0), IP(0), Uint8Array.of(10, 9, 9, 9)));
    r.sched.runUntil(10_000);
    expect(r.got[0]).toHaveLength(1);
    const d = decodeArpFrame(r.got[0]![0]!.frame);
    expect(d.ok).toBe(true);
    if (!d.ok) return;
    expect([...d.frame.arp.senderMac]).toEqual([...MAC(1)]);
    expect([...d.frame.arp.senderIp]).toEqual([...IP(1)]);
    expect(r.got[1]).toHaveLength(0);
  });
});
