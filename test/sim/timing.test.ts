/**
 * Virtual timestamps follow the timing model (docs/simulator.md): the
 * worked example of the docs to the nanosecond, a 4 KiB WRITE and its ACK
 * on a 100 Gb/s link, per-link rate and delay, and a long stream at line
 * rate.
 */
import { describe, expect, it } from 'vitest';
import { wireBytes } from '../../src/fabric/link.js';
import { resolveTimingParams, transferPs } from '../../src/fabric/timing-params.js';
import { rows, run } from './helpers.js';

const one = (size: number, mtu: number, extra: Record<string, unknown> = {}) => ({
  seed: 1,
  duration: '1ms',
  capture: ['rnic0:1', 'rnic1:1'],
  qps: [{ name: 'q0', mtu }],
  traffic: [{ qp: 'q0', op: 'write', size, count: 1 }],
  ...extra,
});

describe('the timing model in the capture', () => {
  it("the docs' worked example: a 1024-byte WRITE leaves at 2370 ns and arrives at 2960 ns", async () => {
    const r = await run(one(1024, 1024));
    const tx = rows(r.captures['rnic0:1']!)[0]!;
    const rx = rows(r.captures['rnic1:1']!)[0]!;
    expect(tx).toMatchObject({ op: 'RC_RDMA_WRITE_ONLY', len: 1098, ns: 2370 });
    expect(rx).toMatchObject({ op: 'RC_RDMA_WRITE_ONLY', ns: 2960 });
    // Posted at 0; the timeline's first packet is the transmit capture's time.
    expect(r.timeline.qps[0]!.wrs[0]).toMatchObject({ postedNs: 0, firstPacketNs: 2370 });
  });

  it('a 4 KiB WRITE on 100 Gb/s: the ACK comes back no sooner than 2 × propagation + serialization', async () => {
    const r = await run(one(4096, 4096));
    const t = resolveTimingParams();
    const a = rows(r.captures['rnic0:1']!);
    const write = a.find((x) => x.op === 'RC_RDMA_WRITE_ONLY')!;
    const ack = a.find((x) => x.op === 'RC_ACKNOWLEDGE')!;
    const serPs = transferPs(wireBytes(write.len), t.linkRate);
    expect(serPs).toBe(335_520); // (4170 + 24) × 8 / 100 Gb/s
    const gap = ack.ns - write.ns;
    expect(gap).toBeGreaterThanOrEqual(2 * t.propagationDelay + serPs / 1000);
    // And exactly what the model adds: serialization + propagation, receive and transmit stages
    // at the responder, the ACK's serialization (62 bytes: 6.88 ns) + propagation.
    const ackSerPs = transferPs(wireBytes(62), t.linkRate);
    const expected = Math.ceil((serPs + 500_000) / 1000) + 4 * t.stageProcessing + Math.ceil((ackSerPs + 500_000) / 1000);
    expect(gap).toBe(expected);
    // The responder saw the WRITE one serialization + propagation after it left.
    const b = rows(r.captures['rnic1:1']!);
    expect(b[0]!.ns - write.ns).toBe(Math.ceil((serPs + 500_000) / 1000));
    // The CQE lands a posted write (pcieLatency / 2 + 64 B) after the ACK went through the receive stages.
    const done = r.timeline.qps[0]!.wrs[0]!.completedNs!;
    expect(done - ack.ns).toBe(2 * t.stageProcessing + Math.ceil((t.pcieLatency * 500 + transferPs(64, t.dmaBandwidth)) / 1000));
  });

  it('per-link rate and delay: 25 Gb/s and 2 µs', async () => {
    const r = await run(one(1024, 1024, { links: [{ a: 'rnic0:1', b: 'rnic1:1', linkRate: '25Gbps', propagationDelay: '2us' }] }));
    const tx = rows(r.captures['rnic0:1']!)[0]!;
    const rx = rows(r.captures['rnic1:1']!)[0]!;
    // (1098 + 24) × 8 / 25 Gb/s = 359.04 ns, + 2000 ns.
    expect(rx.ns - tx.ns).toBe(Math.ceil(359.04 + 2000));
  });

  it('timing overrides: a slower doorbell and PCIe move the first packet by exactly the difference', async () => {
    const base = await run(one(1024, 1024));
    const slow = await run(one(1024, 1024, { timing: { doorbellLatency: '1us', pcieLatency: '2us' } }));
    const d = rows(slow.captures['rnic0:1']!)[0]!.ns - rows(base.captures['rnic0:1']!)[0]!.ns;
    // doorbell +550 ns, WQE fetch +1100 ns, payload gather +1100 ns.
    expect(d).toBe(550 + 1100 + 1100);
  });

  it('a stream of 64 KiB WRITEs at MTU 4096 runs at the link rate (payload share of the wire bytes)', async () => {
    const r = await run({
      seed: 1,
      duration: '20ms',
      capture: [],
      qps: [{ name: 'q0', mtu: 4096 }],
      traffic: [{ qp: 'q0', op: 'write', size: 65536, count: 300, depth: 32, signalEvery: 8 }],
    });
    expect(r.verify).toEqual([]);
    // Per packet: 4096 payload + 14 Ethernet + 20 IPv4 + 8 UDP + 12 BTH + 4 ICRC, + 24 FCS/preamble/IFG on the wire.
    const limit = (100 * 4096) / (4096 + 14 + 20 + 8 + 12 + 4 + 24);
    const gbps = r.traffic[0]!.gbps!;
    expect(gbps).toBeLessThanOrEqual(limit);
    expect(gbps).toBeGreaterThan(0.97 * limit);
  });

  it('pcap timestamps are virtual time: non-decreasing, from 0', async () => {
    const r = await run({
      seed: 1,
      duration: '1ms',
      capture: ['rnic0:1'],
      qps: [{ name: 'q0', mtu: 1024 }],
      traffic: [{ qp: 'q0', op: 'read', size: 100_000, count: 3, depth: 3 }],
    });
    const t = rows(r.captures['rnic0:1']!).map((x) => x.ns);
    expect(t.length).toBeGreaterThan(100);
    for (let i = 1; i < t.length; i++) expect(t[i]!).toBeGreaterThanOrEqual(t[i - 1]!);
    expect(t.at(-1)!).toBeLessThan(1_000_000);
  });
});
