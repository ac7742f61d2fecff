/**
 * The reaction point end to end in the simulator: a CNP arriving for a QP
 * starts its DCQCN flow, the first rate-reduction period ends with the cut
 * the algorithm gives (mlx5 defaults: α₀ = 1023/1024, G = 1019, gd 11),
 * and the QP's packets then leave paced, not in bursts: each no earlier
 * than its predecessor's line bytes at the new rate, checked to the ns on
 * the wire. The time series hook sees the same events; nobody listening
 * costs nothing and changes nothing (same frames either way).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startSimModel, stopModel } from '../../src/boot.js';
import { IBV_QPT_RC, IBV_WC_SUCCESS } from '../../src/driver/verbs/index.js';
import type { ModelConfig } from '../../src/runtime/config.js';
import type { CongestionEvent, SimModel } from '../../src/runtime/sim/sim-model.js';
import { decodePacket, encodePacket, newPacket, parseIpv4, parseMac } from '../../src/wire/index.js';
import { closeDev, connect, createQp, type Dev, type Ep, openDev, pollN, postSend, region, twoDeviceConfig, wrWrite } from '../e2e/harness.js';

let sim: SimModel;
let a: Dev;
let b: Dev;

afterEach(async () => {
  closeDev(a);
  closeDev(b);
  await stopModel();
});

/** No increase during the test: the rate after the cut holds. */
const HOLD = { rpg_byte_reset: 0, rpg_time_reset: 100_000 };

async function setup(
  cc: Record<string, unknown> = HOLD,
  timing?: Record<string, unknown>,
): Promise<{ p: { a: Ep; b: Ep }; tx: { ns: number; op: number; len: number }[] }> {
  sim = await startSimModel({
    ...twoDeviceConfig(0, (c: ModelConfig) => {
      c.devices[0]!.congestion = cc;
    }),
    seed: 'pacing',
    ...(timing ? { timing } : {}),
  });
  a = openDev('rnic0');
  b = openDev('rnic1');
  const tx: { ns: number; op: number; len: number }[] = [];
  sim.observe((e) => {
    if (e.dir !== 'tx' || e.device !== 'rnic0') return;
    const d = decodePacket(e.frame);
    if (d.ok) tx.push({ ns: e.ns, op: d.packet.bth.opcode, len: e.frame.length });
  });
  const p = { a: createQp(a, IBV_QPT_RC), b: createQp(b, IBV_QPT_RC) };
  connect(p.a, p.b);
  return { p, tx };
}

/** A CNP for rnic0's QP `qpn`, as rnic1 (or a switch on its behalf) would send it. */
function cnpFor(qpn: number): Uint8Array {
  return encodePacket(
    newPacket('roce-v2', 0x81, {
      srcMac: parseMac('02:00:00:00:00:02'),
      dstMac: parseMac('02:00:00:00:00:01'),
      srcIp: parseIpv4('192.0.2.2'),
      dstIp: parseIpv4('192.0.2.1'),
      dscp: 48,
      udpSrcPort: 0,
      destQp: qpn,
    }),
  );
}

/** The rate after the first cut with mlx5's defaults, worked by hand: α₀ = 1023/1024 decays 4 times by 1019/1024, then Rc = 100 Gb/s × (1 − α/2). */
function firstCutRate(): number {
  let alpha = 1023 / 1024;
  for (let i = 0; i < 4; i++) alpha *= 1019 / 1024;
  return 100e9 * (1 - (alpha * 1024) / 2 ** 11);
}

describe('DCQCN pacing on the wire', () => {
  it('after a CNP and its cut, a WRITE leaves paced at the new rate, to the ns', async () => {
    const { p, tx } = await setup();
    const seen: CongestionEvent[] = [];
    sim.observeCongestion((e) => seen.push(e));
    sim.injectFrame('rnic0:1', cnpFor(p.a.qp.qp_num));
    sim.advance(10_000);
    expect(seen.map((e) => e.kind)).toEqual(['first-cnp', 'cut']);
    // The cut is one rate_reduce_monitor_period (4 µs) after the CNP took effect.
    expect(seen[1]!.ns - seen[0]!.ns).toBe(4000);
    const rate = firstCutRate();
    expect(Math.abs(seen[1]!.rateBps - rate) / rate).toBeLessThan(1e-12);
    expect(sim.congestionSnapshot()).toMatchObject([{ device: 'rnic0', qpn: p.a.qp.qp_num, rateBps: seen[1]!.rateBps }]);
    expect(sim.portCounters('rnic0:1').rx_rdma_packets).toBe(1);

    const len = 64 * 1024;
    const src = region(a, len, undefined, { fill: (i) => (i * 13) & 0xff });
    const dst = region(b, len);
    const before = tx.length;
    postSend(p.a, wrWrite({ sge: [src.sge(0, len)], remote: { addr: dst.at(0), rkey: dst.rkey }, wrId: 1n }));
    const [wc] = await pollN(p.a.scq, 1, 'paced WRITE');
    expect(wc!.status).toBe(IBV_WC_SUCCESS);
    expect(Buffer.compare(dst.data, src.data)).toBe(0);
    const pkts = tx.slice(before).filter((t) => t.op >= 0x06 && t.op <= 0x08);
    expect(pkts.length).toBe(64);
    // Line bytes: the frame + 4 FCS + 20 preamble/SFD/IFG. Packet i may leave no sooner than packet
    // i-1's line bytes at `rate` after it (exact ps, kept from the requester through the DMA to the
    // MAC), seen on the ns clock: start_i - start_0 = ceil((f + S_i) / 1000) - ceil(f / 1000) for
    // the sum S_i of the gaps before it and one sub-ns phase f of packet 0, the same for all i.
    const gapPs = (frameLen: number) => Math.ceil(((frameLen + 24) * 8e12) / rate);
    const sums: number[] = [0];
    for (let i = 1; i < pkts.length; i++) sums.push(sums[i - 1]! + gapPs(pkts[i - 1]!.len));
    const fits = (f: number) => pkts.every((t, i) => t.ns - pkts[0]!.ns === Math.ceil((f + sums[i]!) / 1000) - Math.ceil(f / 1000));
    const phases = Array.from({ length: 1000 }, (_, f) => f).filter(fits);
    expect(
      phases.length,
      `start offsets ${pkts
        .slice(0, 8)
        .map((t) => t.ns - pkts[0]!.ns)
        .join(' ')}`,
    ).toBeGreaterThan(0);
    // No drift: 63 gaps of ~175 ns end exactly where their sum says.
    expect(Math.abs(pkts[63]!.ns - pkts[0]!.ns - sums[63]! / 1000)).toBeLessThan(1);
    // Pacing, not bursts: no two packets closer than the rate allows (≈ 2 × a 100 Gb/s frame time).
    const minGap = Math.min(...pkts.slice(1).map((t, i) => t.ns - pkts[i]!.ns));
    expect(minGap).toBeGreaterThanOrEqual(Math.floor(gapPs(1082) / 1000));
    expect(minGap).toBeGreaterThan(170);
  });

  it('without CNPs nothing is paced: back-to-back at line rate, and an observer changes no frame', async () => {
    const run = async (listen: boolean) => {
      const { p, tx } = await setup();
      if (listen) sim.observeCongestion(() => {});
      const len = 32 * 1024;
      const src = region(a, len);
      const dst = region(b, len);
      postSend(p.a, wrWrite({ sge: [src.sge(0, len)], remote: { addr: dst.at(0), rkey: dst.rkey }, wrId: 1n }));
      await pollN(p.a.scq, 1, 'WRITE');
      const out = tx.map((t) => `${t.ns}/${t.op}/${t.len}`);
      closeDev(a);
      closeDev(b);
      await stopModel();
      return out;
    };
    const quiet = await run(false);
    const heard = await run(true);
    expect(heard).toEqual(quiet);
    await setup(); // for afterEach
  });

  it('the rate recovers by the timer: fast recovery then additive increase, as the time series shows', async () => {
    const { p } = await setup({ rpg_byte_reset: 0, rpg_time_reset: 50, rpg_threshold: 1, rpg_ai_rate: 1000 });
    const seen: CongestionEvent[] = [];
    sim.observeCongestion((e) => seen.push(e));
    sim.injectFrame('rnic0:1', cnpFor(p.a.qp.qp_num));
    sim.advance(200_000);
    expect(seen.slice(0, 4).map((e) => e.kind)).toEqual(['first-cnp', 'cut', 'fast-recovery', 'additive']);
    const t0 = seen[1]!.ns;
    expect(seen.slice(2, 5).map((e) => e.ns - t0)).toEqual([50_000, 100_000, 150_000]);
    const rc1 = seen[1]!.rateBps;
    expect(Math.abs(seen[2]!.rateBps - (rc1 + 100e9) / 2)).toBeLessThan(1);
    expect(seen[2]!.targetBps).toBe(100e9);
  });

  it('a rate change re-times the packet waiting for its turn: after an increase it goes at the new rate, not the old gap', async () => {
    // A deep cut to the 5 Gb/s floor (rpg_gd 10: × (1 − α) ≈ 0.02), then fast recovery 30 µs later to (5 + 100) / 2 = 52.5 Gb/s.
    // No DMA or stage latency: a packet starts on the wire when the pipeline lets it go.
    const { p, tx } = await setup(
      { rpg_byte_reset: 0, rpg_time_reset: 30, rpg_gd: 10, rpg_min_dec_fac: 1, rpg_min_rate: 5000 },
      { pcieLatency: 0, stageProcessing: 0, dmaBandwidth: '10Tbps' },
    );
    const seen: CongestionEvent[] = [];
    sim.observeCongestion((e) => seen.push(e));
    sim.injectFrame('rnic0:1', cnpFor(p.a.qp.qp_num));
    sim.advance(5_000);
    expect(seen.map((e) => [e.kind, e.rateBps])).toEqual([
      ['first-cnp', 100e9],
      ['cut', 5e9],
    ]);
    const len = 32 * 1024;
    const src = region(a, len);
    const dst = region(b, len);
    const before = tx.length;
    postSend(p.a, wrWrite({ sge: [src.sge(0, len)], remote: { addr: dst.at(0), rkey: dst.rkey }, wrId: 1n }));
    await pollN(p.a.scq, 1, 'WRITE');
    const inc = seen.find((e) => e.kind === 'fast-recovery')!;
    expect(inc.rateBps).toBe(52.5e9);
    const pkts = tx.slice(before).filter((t) => t.op >= 0x06 && t.op <= 0x08);
    const slowGap = (1106 * 8e12) / 5e9 / 1000; // 1769.6 ns
    const fastGap = (1106 * 8e12) / 52.5e9 / 1000; // 168.53 ns
    const i = pkts.findIndex((t) => t.ns >= inc.ns);
    expect(i).toBeGreaterThan(1);
    // Before the increase: the 5 Gb/s gaps; the packet waiting when the rate rose goes at once (its
    // predecessor left more than a 52.5 Gb/s gap ago), not at the end of its old gap; then 52.5 Gb/s.
    expect(Math.abs(pkts[i - 1]!.ns - pkts[i - 2]!.ns - slowGap)).toBeLessThan(1);
    expect(inc.ns - pkts[i - 1]!.ns).toBeGreaterThan(fastGap);
    expect(pkts[i]!.ns - inc.ns).toBeGreaterThanOrEqual(0);
    expect(pkts[i]!.ns - inc.ns).toBeLessThanOrEqual(1); // the payload's 0.8 ns DMA transfer at 10 Tb/s
    for (let k = i + 1; k < Math.min(i + 10, pkts.length); k++) expect(Math.abs(pkts[k]!.ns - pkts[k - 1]!.ns - fastGap)).toBeLessThan(1);
  });
});
