import { describe, expect, it } from 'vitest';
import { encodeArpRequest } from '../../wire/arp.js';
import { newPacket } from '../../wire/build.js';
import { opcodeByName } from '../../wire/opcodes.js';
import { decodePacket, encodePacket, type Framing } from '../../wire/packet.js';
import { LINKTYPE_ETHERNET } from '../../wire/pcap.js';
import { corruptFrame, FAULT_STATS, FaultError, FaultInjector, type FaultRule, type FaultVerdict, type LinkDownEvent, mulberry32, PASS } from '../faults.js';

interface FrameOpts {
  psn?: number;
  qpn?: number;
  payload?: number;
  framing?: Framing;
  ipVersion?: 4 | 6;
}

/** A RoCE frame of `opcode`; payload bytes count up from the PSN. */
function roce(opcode: number | string, o: FrameOpts = {}): Uint8Array {
  const code = typeof opcode === 'number' ? opcode : opcodeByName(opcode);
  const payload = new Uint8Array(o.payload ?? 0).map((_, i) => (i + (o.psn ?? 0)) & 0xff);
  return encodePacket(newPacket(o.framing ?? 'roce-v2', code, { psn: o.psn ?? 0, destQp: o.qpn ?? 0x11, payload, ipVersion: o.ipVersion ?? 4 }));
}
const arp = () => encodeArpRequest(Uint8Array.of(2, 0, 0, 0, 0, 1), Uint8Array.of(192, 0, 2, 1), Uint8Array.of(192, 0, 2, 2));
const WM = 'RC_RDMA_WRITE_MIDDLE';
/** A write stream: FIRST, MIDDLE × n, LAST, PSNs from 0. */
function writeStream(middles: number, qpn = 0x11): Uint8Array[] {
  const out = [roce('RC_RDMA_WRITE_FIRST', { psn: 0, qpn, payload: 64 })];
  for (let i = 1; i <= middles; i++) out.push(roce(WM, { psn: i, qpn, payload: 64 }));
  out.push(roce('RC_RDMA_WRITE_LAST', { psn: middles + 1, qpn, payload: 16 }));
  return out;
}
const kinds = (vs: FaultVerdict[]) => vs.map((v) => v.kind);
const decodeErr = (f: Uint8Array) => {
  const r = decodePacket(f, LINKTYPE_ETHERNET);
  return r.ok ? 'ok' : r.error.code;
};
function run(inj: FaultInjector, frames: Uint8Array[], dir: 'a->b' | 'b->a' = 'a->b', t0 = 0, stepNs = 100): FaultVerdict[] {
  return frames.map((f, i) => inj.apply(f, t0 + i * stepNs, dir));
}
/** What a link would put on the wire for these verdicts (delays ignored, order of sending). */
function wire(frames: Uint8Array[], verdicts: FaultVerdict[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  verdicts.forEach((v, i) => {
    const f = frames[i]!;
    if (v.kind === 'pass' || v.kind === 'delay') out.push(f);
    else if (v.kind === 'replace') out.push(v.frame);
    else if (v.kind === 'duplicate') for (let k = 0; k <= v.count; k++) out.push(f);
    if (v.release) out.push(...v.release);
  });
  return out;
}
const psnOf = (f: Uint8Array) => {
  const r = decodePacket(f, LINKTYPE_ETHERNET, { verifyIcrc: false });
  if (!r.ok) throw r.error;
  return r.packet.bth.psn;
};

describe('FaultInjector: actions', () => {
  it('passes everything with no rules, with one shared frozen verdict', () => {
    const inj = new FaultInjector();
    const frames = [...writeStream(3), arp()];
    const v = run(inj, frames);
    expect(v.every((x) => x === PASS)).toBe(true);
    expect(Object.isFrozen(PASS)).toBe(true);
    expect(inj.stats()).toMatchObject({ frames: 6, passed: 6, dropped: 0 });
    expect(inj.describe()).toBe('faults: none');
  });

  it('drop: the frames that come out are exactly the others', () => {
    const frames = writeStream(6);
    const inj = new FaultInjector([{ action: 'drop', match: { opcode: WM, psn: [5, 5] } }]);
    const v = run(inj, frames);
    expect(v[5]).toEqual({ kind: 'drop', rule: 0, reason: 'drop' });
    expect(wire(frames, v)).toEqual(frames.filter((_, i) => i !== 5));
    expect(inj.stats().rules[0]).toMatchObject({ matched: 1, fired: 1 });
  });

  it('drop the 5th RDMA WRITE MIDDLE (after=4,count=1), also when the PSNs come round again', () => {
    const frames = [...writeStream(8), ...writeStream(8)]; // a retransmission of the same PSNs
    const inj = new FaultInjector([{ action: 'drop', match: { opcode: WM, after: 4, count: 1 } }]);
    const v = run(inj, frames);
    const dropped = v.flatMap((x, i) => (x.kind === 'drop' ? [i] : []));
    expect(dropped).toEqual([5]);
    expect(psnOf(frames[5]!)).toBe(5);
    expect(inj.stats().rules[0]).toMatchObject({ matched: 16, fired: 1 });
  });

  it('corrupt: one bit differs, the ICRC is not fixed up, the receiver sees WIRE_BAD_ICRC', () => {
    for (const target of ['any', 'header', 'payload', 'icrc'] as const) {
      for (const opts of [{}, { ipVersion: 6 as const }, { framing: 'roce-v1' as const }]) {
        for (const op of [WM, 'RC_RDMA_WRITE_FIRST', 'RC_ACKNOWLEDGE', 'RC_RDMA_READ_REQUEST', 'UD_SEND_ONLY']) {
          const f = roce(op, { psn: 9, payload: op === WM ? 256 : op === 'UD_SEND_ONLY' ? 30 : 0, ...opts });
          expect(decodeErr(f)).toBe('ok');
          const inj = new FaultInjector([{ action: 'corrupt', target }], { seed: 7 });
          for (let k = 0; k < 25; k++) {
            const before = f.slice();
            const v = inj.apply(f, k, 'a->b');
            if (v.kind !== 'replace') throw new Error(`expected replace, got ${v.kind}`);
            expect(f).toEqual(before); // the input is never modified
            expect(v.frame.length).toBe(f.length);
            let bits = 0;
            for (let i = 0; i < f.length; i++) {
              let x = f[i]! ^ v.frame[i]!;
              for (; x; x &= x - 1) bits++;
            }
            // One flipped bit, plus for IPv6 the recomputed UDP checksum.
            if (!opts.ipVersion) expect(bits).toBe(1);
            expect(decodeErr(v.frame)).toBe('WIRE_BAD_ICRC');
          }
        }
      }
    }
  });

  it('corrupt is seeded: same seed, same bits; another seed, other bits', () => {
    const frames = Array.from({ length: 50 }, (_, i) => roce(WM, { psn: i, payload: 512 }));
    const flips = (seed: number) =>
      run(new FaultInjector([{ action: 'corrupt' }], { seed }), frames).map((v) => (v.kind === 'replace' ? Buffer.from(v.frame).toString('hex') : ''));
    expect(flips(3)).toEqual(flips(3));
    expect(flips(3)).not.toEqual(flips(4));
  });

  it('corruptFrame by itself, on a non-RoCE frame: a bit after the Ethernet header', () => {
    const a = arp();
    const { frame, flip } = corruptFrame(a, mulberry32(1));
    expect(flip.byte).toBeGreaterThanOrEqual(14);
    expect(frame[flip.byte]! ^ a[flip.byte]!).toBe(1 << flip.bit);
  });

  it('duplicate: the frame, then `copies` identical copies', () => {
    const frames = writeStream(2);
    const inj = new FaultInjector([{ action: 'duplicate', copies: 2, match: { psn: [1, 1] } }]);
    const v = run(inj, frames);
    expect(v[1]).toEqual({ kind: 'duplicate', count: 2, rule: 0 });
    expect(wire(frames, v)).toEqual([frames[0], frames[1], frames[1], frames[1], frames[2], frames[3]]);
    expect(new FaultInjector([{ action: 'duplicate' }]).apply(frames[0]!, 0, 'a->b')).toEqual({ kind: 'duplicate', count: 1, rule: 0 });
  });

  it('delay: the verdict carries the delay in ns', () => {
    const inj = new FaultInjector([{ action: 'delay', delayNs: '2.5us', match: { opcode: 'ack' } }]);
    expect(inj.apply(roce('RC_ACKNOWLEDGE'), 0, 'b->a')).toEqual({ kind: 'delay', ns: 2500, rule: 0 });
    expect(inj.apply(roce(WM, { payload: 4 }), 0, 'b->a')).toBe(PASS);
  });

  it('reorder depth 1 swaps a frame with the next one that goes out', () => {
    const frames = writeStream(4); // PSN 0..5
    const inj = new FaultInjector([{ action: 'reorder', match: { psn: [2, 2] } }]);
    const v = run(inj, frames);
    expect(kinds(v)).toEqual(['pass', 'pass', 'hold', 'pass', 'pass', 'pass']);
    expect(v[3]!.release).toHaveLength(1);
    expect(wire(frames, v).map(psnOf)).toEqual([0, 1, 3, 2, 4, 5]);
    expect(inj.stats()).toMatchObject({ held: 1, released: 1 });
    expect(inj.heldFrames()).toBe(0);
  });

  it('reorder depth k: released after the k-th later frame; dropped frames do not count', () => {
    const frames = writeStream(8); // PSN 0..9
    const inj = new FaultInjector([
      { action: 'drop', match: { psn: [4, 4] } },
      { action: 'reorder', reorderDepth: 3, match: { psn: [2, 2] } },
    ]);
    const v = run(inj, frames);
    // 2 held; 3 goes (1), 4 dropped (no count), 5 (2), 6 (3) → 2 rides after 6.
    expect(wire(frames, v).map(psnOf)).toEqual([0, 1, 3, 5, 6, 2, 7, 8, 9]);
  });

  it('reorder: several held frames come back in hold order; the held copy survives buffer reuse', () => {
    const inj = new FaultInjector([{ action: 'reorder', reorderDepth: 2, match: { psn: [1, 2] } }]);
    const buf = roce(WM, { psn: 0, payload: 8 });
    const out: number[] = [];
    for (let psn = 0; psn < 6; psn++) {
      buf.set(roce(WM, { psn, payload: 8 })); // the sender reuses one buffer
      const v = inj.apply(buf, psn, 'a->b');
      if (v.kind === 'pass') out.push(psnOf(buf));
      for (const f of v.release ?? []) out.push(psnOf(f));
    }
    // 1 and 2 held, each for the next two frames that go out (3 and 4): both ride after 4, in hold order.
    expect(out).toEqual([0, 3, 4, 1, 2, 5]);
  });

  it('reorder: flush hands back what is still held', () => {
    const frames = writeStream(1);
    const inj = new FaultInjector([{ action: 'reorder', reorderDepth: 10, direction: 'a->b' }]);
    run(inj, frames);
    expect(inj.heldFrames('a->b')).toBe(3);
    expect(inj.heldFrames('b->a')).toBe(0);
    expect(inj.flush('a->b').map(psnOf)).toEqual([0, 1, 2]);
    expect(inj.flush()).toEqual([]);
  });

  it('a release rides on a delay or a drop verdict too', () => {
    const frames = writeStream(3); // PSN 0..4
    const inj = new FaultInjector([
      { action: 'reorder', match: { psn: [0, 0] } },
      { action: 'delay', delayNs: 1000, match: { psn: [1, 1] } },
    ]);
    const v = run(inj, frames);
    expect(v[1]).toMatchObject({ kind: 'delay', ns: 1000 });
    expect(v[1]!.release!.map(psnOf)).toEqual([0]);
  });

  it('link-down at a fixed time: everything either way is lost in [at, at+for)', () => {
    const inj = new FaultInjector([{ action: 'link-down', atNs: '2ms', downForNs: '1ms' }]);
    expect(inj.linkSchedule()).toEqual([{ rule: 0, directions: ['a->b', 'b->a'], downAtNs: 2e6, upAtNs: 3e6 }]);
    const f = roce(WM, { payload: 8 });
    expect(inj.apply(f, 1_999_999, 'a->b')).toBe(PASS);
    expect(inj.apply(f, 2_000_000, 'a->b')).toEqual({ kind: 'drop', rule: 0, reason: 'link-down' });
    expect(inj.apply(arp(), 2_500_000, 'b->a')).toEqual({ kind: 'drop', rule: 0, reason: 'link-down' });
    expect(inj.isLinkUp('a->b', 2_999_999)).toBe(false);
    expect(inj.isLinkUp('a->b', 3_000_000)).toBe(true);
    expect(inj.apply(f, 3_000_000, 'a->b')).toBe(PASS);
    expect(inj.stats()).toMatchObject({ linkDownDropped: 2, rules: [{ fired: 1, matched: 2, linkDownDropped: 2 }] });
  });

  it('link-down triggered by a packet, in one direction, with an event', () => {
    const events: LinkDownEvent[] = [];
    const inj = new FaultInjector([{ action: 'link-down', direction: 'a->b', downForNs: 500, match: { psn: [3, 3], count: 1 } }], {
      onLinkDown: (e) => events.push(e),
    });
    const frames = writeStream(6); // PSN 0..7, 100 ns apart
    const v = run(inj, frames);
    // PSN 3 at t=300 takes the link down until 800: 3..7 lost (t=300..700); b->a unaffected.
    expect(kinds(v)).toEqual(['pass', 'pass', 'pass', 'drop', 'drop', 'drop', 'drop', 'drop']);
    expect(events).toEqual([{ rule: 0, directions: ['a->b'], downAtNs: 300, upAtNs: 800 }]);
    expect(inj.apply(frames[0]!, 400, 'b->a')).toBe(PASS);
    expect(inj.apply(frames[0]!, 800, 'a->b')).toBe(PASS);
    expect(inj.stats().rules[0]).toMatchObject({ fired: 1, linkDownDropped: 5 });
  });
});

describe('FaultInjector: matching', () => {
  const mixed = (): Uint8Array[] => [
    roce('RC_SEND_ONLY', { psn: 1, qpn: 5, payload: 8 }),
    roce('RC_RDMA_WRITE_FIRST', { psn: 2, qpn: 5, payload: 8 }),
    roce(WM, { psn: 3, qpn: 6, payload: 8 }),
    roce('RC_ACKNOWLEDGE', { psn: 3, qpn: 7 }),
    roce('RC_RDMA_READ_RESPONSE_ONLY', { psn: 4, qpn: 7, payload: 8 }),
    roce('UD_SEND_ONLY', { psn: 5, qpn: 5, payload: 8 }),
    roce('CNP', { qpn: 5 }),
    arp(),
  ];
  const dropped = (rule: FaultRule, frames = mixed(), dir: 'a->b' | 'b->a' = 'a->b') =>
    run(new FaultInjector([rule]), frames, dir).flatMap((v, i) => (v.kind === 'drop' ? [i] : []));

  it('opcode by number, name (with or without IB_OPCODE_), kind, any; none = every RoCE packet', () => {
    expect(dropped({ action: 'drop', match: { opcode: 7 } })).toEqual([2]);
    expect(dropped({ action: 'drop', match: { opcode: 'IB_OPCODE_RC_RDMA_WRITE_MIDDLE' } })).toEqual([2]);
    expect(dropped({ action: 'drop', match: { opcode: 'write' } })).toEqual([1, 2]);
    expect(dropped({ action: 'drop', match: { opcode: 'send' } })).toEqual([0, 5]);
    expect(dropped({ action: 'drop', match: { opcode: 'ack' } })).toEqual([3]);
    expect(dropped({ action: 'drop', match: { opcode: 'read-response' } })).toEqual([4]);
    expect(dropped({ action: 'drop', match: { opcode: 'cnp' } })).toEqual([6]);
    expect(dropped({ action: 'drop' })).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(dropped({ action: 'drop', match: { opcode: 'any' } })).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it('qpn and psn (inclusive; a range may wrap past 0xffffff)', () => {
    expect(dropped({ action: 'drop', match: { qpn: 5 } })).toEqual([0, 1, 5, 6]);
    expect(dropped({ action: 'drop', match: { psn: [3, 4] } })).toEqual([2, 3, 4]);
    expect(dropped({ action: 'drop', match: { qpn: 7, psn: [3, 3] } })).toEqual([3]);
    expect(dropped({ action: 'drop', match: { opcode: 'any', qpn: 5 } })).toEqual([0, 1, 5, 6]); // ARP has no QP
    const wrap = [0xfffffe, 0xffffff, 0, 1, 2].map((psn) => roce(WM, { psn, payload: 4 }));
    expect(dropped({ action: 'drop', match: { psn: [0xffffff, 1] } }, wrap)).toEqual([1, 2, 3]);
  });

  it('direction', () => {
    expect(dropped({ action: 'drop', direction: 'b->a' }, mixed(), 'a->b')).toEqual([]);
    expect(dropped({ action: 'drop', direction: 'b->a', match: { opcode: 'ack' } }, mixed(), 'b->a')).toEqual([3]);
    expect(dropped({ action: 'drop', direction: 'both', match: { opcode: 'ack' } }, mixed(), 'b->a')).toEqual([3]);
  });

  it('every, after, count', () => {
    const frames = Array.from({ length: 20 }, (_, i) => roce(WM, { psn: i, payload: 4 }));
    expect(dropped({ action: 'drop', match: { every: 5 } }, frames)).toEqual([4, 9, 14, 19]);
    expect(dropped({ action: 'drop', match: { after: 3 } }, frames)).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
    expect(dropped({ action: 'drop', match: { after: 3, every: 5 } }, frames)).toEqual([7, 12, 17]);
    expect(dropped({ action: 'drop', match: { every: 5, count: 2 } }, frames)).toEqual([4, 9]);
    expect(dropped({ action: 'drop', match: { count: 3 } }, frames)).toEqual([0, 1, 2]);
  });

  it('window: [from, to) on the clock the caller passes; to may be open', () => {
    const frames = Array.from({ length: 10 }, (_, i) => roce(WM, { psn: i, payload: 4 })); // t = 0, 100, ... 900
    expect(dropped({ action: 'drop', match: { window: [200, 500] } }, frames)).toEqual([2, 3, 4]);
    expect(dropped({ action: 'drop', match: { window: ['0.7us', null] } }, frames)).toEqual([7, 8, 9]);
  });

  it('rules are a chain: the first rule that fires decides, later ones do not see the frame', () => {
    const frames = Array.from({ length: 10 }, (_, i) => roce(WM, { psn: i, payload: 4 }));
    const inj = new FaultInjector([
      { action: 'drop', match: { every: 2 } },
      { action: 'duplicate', match: { every: 2 } },
    ]);
    const v = run(inj, frames);
    expect(kinds(v)).toEqual(['pass', 'drop', 'duplicate', 'drop', 'pass', 'drop', 'duplicate', 'drop', 'pass', 'drop']);
    expect(inj.stats().rules.map((r) => [r.matched, r.fired])).toEqual([
      [10, 5],
      [5, 2],
    ]);
  });

  it('a frame that does not decode as RoCE is not RoCE (only opcode any sees it)', () => {
    const bad = roce(WM, { payload: 4 }).subarray(0, 40);
    expect(dropped({ action: 'drop' }, [bad])).toEqual([]);
    expect(dropped({ action: 'drop', match: { opcode: 'any' } }, [bad])).toEqual([0]);
  });
});

describe('FaultInjector: probability and seeds', () => {
  const frames = Array.from({ length: 10_000 }, (_, i) => roce(WM, { psn: i & 0xffffff, payload: 8 }));
  const drops = (inj: FaultInjector) => run(inj, frames).flatMap((v, i) => (v.kind === 'drop' ? [i] : []));

  it('1% loss over 10k frames: near 1%, the same twice, different with another seed', () => {
    const a = drops(new FaultInjector([{ action: 'drop', probability: 0.01 }], { seed: 42 }));
    const b = drops(new FaultInjector([{ action: 'drop', probability: 0.01 }], { seed: 42 }));
    const c = drops(new FaultInjector([{ action: 'drop', probability: 0.01 }], { seed: 43 }));
    // Binomial(10000, 0.01): sd ≈ 9.95; ±5 sd.
    expect(a.length).toBeGreaterThan(50);
    expect(a.length).toBeLessThan(150);
    expect(b).toEqual(a);
    expect(c).not.toEqual(a);
  });

  it('30% over 10k: within tolerance; p=0 never, p=1 always', () => {
    const n = drops(new FaultInjector([{ action: 'drop', probability: 0.3 }], { seed: 1 })).length;
    expect(Math.abs(n - 3000)).toBeLessThan(230); // ±5 sd (sd ≈ 45.8)
    expect(drops(new FaultInjector([{ action: 'drop', probability: 0 }]))).toEqual([]);
    expect(drops(new FaultInjector([{ action: 'drop', probability: 1 }])).length).toBe(10_000);
  });

  it('each rule and direction has its own stream: another rule or the other direction does not move its dice', () => {
    const solo = drops(new FaultInjector([{ action: 'drop', probability: 0.05, direction: 'a->b' }], { seed: 9 }));
    // The same rule at the same index, with a second rule rolling dice on interleaved traffic the other way.
    const inj = new FaultInjector(
      [
        { action: 'drop', probability: 0.05, direction: 'a->b' },
        { action: 'delay', delayNs: 10, probability: 0.5, direction: 'b->a' },
      ],
      { seed: 9 },
    );
    const got: number[] = [];
    frames.forEach((f, i) => {
      if (i % 3 === 0) inj.apply(roce('RC_ACKNOWLEDGE', { psn: i }), i, 'b->a');
      if (inj.apply(f, i, 'a->b').kind === 'drop') got.push(i);
    });
    expect(got).toEqual(solo);
    expect(inj.stats().rules[1]!.fired).toBeGreaterThan(0);
  });

  it('a shared random source is used in call order', () => {
    const draws: number[] = [];
    const src = mulberry32(5);
    const random = {
      next: () => {
        const x = src.next();
        draws.push(x);
        return x;
      },
    };
    const inj = new FaultInjector([{ action: 'drop', probability: 0.5 }], { random });
    const v = run(inj, frames.slice(0, 100));
    expect(draws).toHaveLength(100);
    expect(v.map((x) => x.kind === 'drop')).toEqual(draws.map((x) => x < 0.5));
  });

  it('a random source that can fork gives each rule and direction its own fork', () => {
    const labels: string[] = [];
    const random = {
      next: () => {
        throw new Error('the parent stream is not drawn from');
      },
      fork: (label: string) => {
        labels.push(label);
        return mulberry32(labels.length);
      },
    };
    const inj = new FaultInjector(
      [
        { action: 'drop', probability: 0.5 },
        { action: 'corrupt', probability: 0.5 },
      ],
      { random },
    );
    expect(labels).toEqual(['fault/0/a->b', 'fault/0/b->a', 'fault/1/a->b', 'fault/1/b->a']);
    run(inj, frames.slice(0, 100));
    run(inj, frames.slice(0, 100), 'b->a');
    expect(inj.stats().rules[0]!.fired).toBeGreaterThan(0);
  });

  it('mulberry32 is uniform enough and repeatable', () => {
    const r1 = mulberry32(123);
    const r2 = mulberry32(123);
    const buckets = new Array(10).fill(0);
    let same = true;
    for (let i = 0; i < 100_000; i++) {
      const x = r1.next();
      if (x !== r2.next() || x < 0 || x >= 1) same = false;
      buckets[Math.floor(x * 10)]++;
    }
    expect(same).toBe(true);
    for (const b of buckets) expect(Math.abs(b - 10_000)).toBeLessThan(500);
  });
});

describe('FaultInjector: construction, stats and logs', () => {
  it('checks rules and names the index', () => {
    expect(() => new FaultInjector([{ action: 'drop' }, { action: 'delay' } as FaultRule])).toThrow(/rule 1 \(delayNs\): a delay rule needs delayNs/);
    try {
      new FaultInjector([{ action: 'drop', match: { psn: [1, 2] } }, { action: 'drop' }, { action: 'drop', match: { qpn: -1 } }]);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(FaultError);
      expect(e).toMatchObject({ code: 'FAULT_BAD_RULE', ruleIndex: 2, field: 'match.qpn' });
    }
    expect(() => new FaultInjector([], { seed: 1.5 })).toThrow(expect.objectContaining({ code: 'FAULT_BAD_CONFIG' }));
    expect(() => new FaultInjector([], { random: {} as never })).toThrow(expect.objectContaining({ code: 'FAULT_BAD_CONFIG' }));
  });

  it('stats per rule, described counters, and describe()', () => {
    const frames = writeStream(10);
    const inj = new FaultInjector([
      { action: 'drop', name: 'lose-5', match: { opcode: WM, after: 4, count: 1 } },
      { action: 'corrupt', direction: 'a->b', match: { every: 4 } },
      { action: 'link-down', atNs: '1s', downForNs: '1ms' },
    ]);
    run(inj, frames);
    const s = inj.stats();
    expect(s).toMatchObject({ frames: 12, passed: 9, dropped: 1, corrupted: 2 });
    expect(s.rules).toEqual([
      { index: 0, action: 'drop', spec: 'drop:opcode=RC_RDMA_WRITE_MIDDLE,after=4,count=1,name=lose-5', matched: 10, fired: 1, linkDownDropped: 0 },
      { index: 1, action: 'corrupt', spec: 'corrupt:dir=a->b,every=4', matched: 11, fired: 2, linkDownDropped: 0 },
      { index: 2, action: 'link-down', spec: 'link-down:at=1s,for=1ms', matched: 0, fired: 0, linkDownDropped: 0 },
    ]);
    expect(inj.describe()).toBe(
      [
        'fault #0 "lose-5": drop:opcode=RC_RDMA_WRITE_MIDDLE,after=4,count=1,name=lose-5 (matched 10, fired 1)',
        'fault #1: corrupt:dir=a->b,every=4 (matched 11, fired 2)',
        'fault #2: link-down:at=1s,for=1ms (matched 0, fired 0, 0 lost while down)',
      ].join('\n'),
    );
    const names = new Set(FAULT_STATS.map((d) => d.name));
    for (const k of Object.keys(s)) if (k !== 'rules') expect(names.has(k as never)).toBe(true);
    for (const k of ['matched', 'fired', 'linkDownDropped']) expect(names.has(k as never)).toBe(true);
  });

  it('hook(dir) is apply bound to a direction', () => {
    const inj = new FaultInjector([{ action: 'drop', direction: 'b->a' }]);
    const f = roce(WM, { payload: 4 });
    expect(inj.hook('a->b')(f, 0)).toBe(PASS);
    expect(inj.hook('b->a')(f, 0).kind).toBe('drop');
  });

  it('fired events, only built when someone listens', () => {
    const seen: unknown[] = [];
    const inj = new FaultInjector([{ action: 'drop', match: { psn: [2, 2] } }], { onFired: (e) => seen.push(e) });
    run(inj, writeStream(3));
    expect(seen).toEqual([{ rule: 0, action: 'drop', direction: 'a->b', nowNs: 200, opcode: 7, destQp: 0x11, psn: 2 }]);
  });
});
