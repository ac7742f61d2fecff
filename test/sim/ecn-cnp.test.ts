/**
 * ECN and CNPs end to end in the simulator: rnic0 sends RoCE v2 ECT(0); an
 * `ecn-mark` fault on the cable marks its WRITEs CE (as a congested switch
 * would); rnic1, the notification point, answers with CNPs in the ConnectX
 * shape (opcode 0x81 to the sending QP, BECN, 16 zero bytes, a good ICRC,
 * cnp_dscp), at most one per min_time_between_cnps per QP; rnic0, the
 * reaction point, takes them (rp_cnp_handled) or, with its reaction point
 * off, ignores them (rp_cnp_ignored). Counters agree with the frames seen.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startSimModel, stopModel } from '../../src/boot.js';
import { IBV_QPT_RC, IBV_QPT_UD, IBV_WC_SUCCESS, rnic_read_counters } from '../../src/driver/verbs/index.js';
import type { ModelConfig } from '../../src/runtime/config.js';
import type { SimModel } from '../../src/runtime/sim/sim-model.js';
import { decodePacket, encodePfc, parseMac, readPcap } from '../../src/wire/index.js';
import {
  closeDev,
  connect,
  createAh,
  createQp,
  type Dev,
  type Ep,
  openDev,
  pollN,
  postRecv,
  postSend,
  recvWr,
  region,
  twoDeviceConfig,
  wrSend,
  wrWrite,
} from '../e2e/harness.js';

interface Seen {
  ns: number;
  frame: Uint8Array;
}

let sim: SimModel;
let a: Dev;
let b: Dev;

afterEach(async () => {
  closeDev(a);
  closeDev(b);
  await stopModel();
});

const MARK_WRITES = [{ action: 'ecn-mark', direction: 'a->b', match: { opcode: 'write' } }] as const;

async function setup(
  cc: { a?: Record<string, unknown>; b?: Record<string, unknown> } = {},
  faults: readonly unknown[] = MARK_WRITES,
): Promise<{ cnps: Seen[]; ce: Seen[]; dataTx: Seen[] }> {
  const config = twoDeviceConfig(0, (c: ModelConfig) => {
    if (cc.a) c.devices[0]!.congestion = cc.a;
    if (cc.b) c.devices[1]!.congestion = cc.b;
  });
  sim = await startSimModel({ ...config, seed: 'ecn', faults: faults as never });
  a = openDev('rnic0');
  b = openDev('rnic1');
  const cnps: Seen[] = [];
  const ce: Seen[] = [];
  const dataTx: Seen[] = [];
  sim.observe((e) => {
    const d = decodePacket(e.frame);
    if (!d.ok) return;
    const p = d.packet;
    if (e.dir === 'tx' && e.device === 'rnic1' && p.bth.opcode === 0x81) cnps.push({ ns: e.ns, frame: e.frame.slice() });
    if (e.dir === 'rx' && e.device === 'rnic1' && (p.ipv4?.ecn ?? p.ipv6!.trafficClass & 3) === 3) ce.push({ ns: e.ns, frame: e.frame.slice() });
    if (e.dir === 'tx' && e.device === 'rnic0' && p.bth.opcode !== 0x81) dataTx.push({ ns: e.ns, frame: e.frame.slice() });
  });
  return { cnps, ce, dataTx };
}

function hw(d: Dev): Record<string, number> {
  return Object.fromEntries(Object.entries(rnic_read_counters(d.ctx, 1)).map(([k, v]) => [k, Number(v)]));
}

function rcPair(): { a: Ep; b: Ep } {
  const p = { a: createQp(a, IBV_QPT_RC), b: createQp(b, IBV_QPT_RC) };
  connect(p.a, p.b);
  return p;
}

async function writes(p: { a: Ep; b: Ep }, count: number, len = 16384): Promise<void> {
  const src = region(a, len * count, undefined, { fill: (i) => i & 0xff });
  const dst = region(b, len * count);
  for (let i = 0; i < count; i++) postSend(p.a, wrWrite({ sge: [src.sge(i * len, len)], remote: { addr: dst.at(i * len), rkey: dst.rkey }, wrId: BigInt(i) }));
  const wcs = await pollN(p.a.scq, count, 'WRITEs');
  for (const w of wcs) expect(w.status).toBe(IBV_WC_SUCCESS);
  expect(Buffer.compare(dst.data, src.data)).toBe(0);
}

describe('ECN marking and CNPs', () => {
  it('RoCE v2 leaves ECT(0); CE-marked WRITEs are answered with CNPs in the ConnectX shape, one per 4 µs per QP', async () => {
    const { cnps, ce, dataTx } = await setup();
    const p = rcPair();
    await writes(p, 16);
    // Everything rnic0 sent was ECT(0).
    for (const t of dataTx) expect(decodePacket(t.frame).ok && (decodePacket(t.frame) as { packet: { ipv4: { ecn: number } } }).packet.ipv4.ecn).toBe(2);
    expect(ce.length).toBe(256); // 16 × 16 KiB at MTU 1024, every WRITE packet marked
    expect(cnps.length).toBeGreaterThan(3);
    const ca = hw(a);
    const cb = hw(b);
    expect(cb.np_ecn_marked_roce_packets).toBe(ce.length);
    expect(cb.np_cnp_sent).toBe(cnps.length);
    expect(ca.rp_cnp_handled).toBe(cnps.length);
    expect(ca.rp_cnp_ignored).toBe(0);
    expect(sim.stats().links.l0!.faults!.ecnMarked).toBe(ce.length);
    // The rate limit, exactly: a CNP for the first CE packet processed at least 4 µs after the last CNP.
    // (Each CE packet is processed rxStages × stageProcessing after it arrived; the CNP then leaves after txStages.)
    const rxDelay = cnps[0]!.ns - ce[0]!.ns;
    let last = -Infinity;
    const expected: number[] = [];
    for (const c of ce) {
      const at = c.ns + rxDelay;
      if (at - last >= 4000) {
        expected.push(at);
        last = at;
      }
    }
    expect(cnps.map((c) => c.ns)).toEqual(expected);
    // The shape of one CNP.
    const d = decodePacket(cnps[0]!.frame);
    expect(d.ok).toBe(true);
    if (!d.ok) return;
    const k = d.packet;
    expect(cnps[0]!.frame.length).toBe(14 + 20 + 8 + 12 + 16 + 4);
    expect(k.bth).toMatchObject({ opcode: 0x81, becn: 1, fecn: 0, psn: 0, pkey: 0xffff, destQp: p.a.qp.qp_num, ackReq: 0, se: 0 });
    expect(k.ipv4).toMatchObject({ dscp: 48, ecn: 2, ttl: 64 });
    expect(Array.from(k.ipv4!.src)).toEqual([192, 0, 2, 2]);
    expect(Array.from(k.ipv4!.dst)).toEqual([192, 0, 2, 1]);
    expect(k.udp).toMatchObject({ srcPort: 0, dstPort: 4791 });
    expect(Array.from(cnps[0]!.frame.subarray(54, 70))).toEqual(new Array(16).fill(0));
  });

  it('min_time_between_cnps 0: one CNP for every CE packet; cnp_dscp is configurable', async () => {
    const { cnps, ce } = await setup({ b: { min_time_between_cnps: 0, cnp_dscp: 26 } });
    await writes(rcPair(), 4);
    expect(cnps.length).toBe(ce.length);
    expect(hw(b).np_cnp_sent).toBe(64);
    const d = decodePacket(cnps[5]!.frame);
    expect(d.ok && d.packet.ipv4!.dscp).toBe(26);
  });

  it('a longer min_time_between_cnps sends fewer; each QP has its own clock', async () => {
    const { cnps } = await setup({ b: { min_time_between_cnps: 1000 } });
    const p1 = rcPair();
    const p2 = rcPair();
    await Promise.all([writes(p1, 4), writes(p2, 4)]);
    // Well under 1 ms of traffic: exactly one CNP per sending QP.
    const dest = cnps
      .map((c) => {
        const d = decodePacket(c.frame);
        return d.ok ? d.packet.bth.destQp : -1;
      })
      .sort();
    expect(dest).toEqual([p1.a.qp.qp_num, p2.a.qp.qp_num].sort());
  });

  it('ECN off: Not-ECT packets are never marked, no CNP', async () => {
    const { cnps, ce, dataTx } = await setup({ a: { ecn: false } });
    await writes(rcPair(), 2);
    expect(ce.length).toBe(0);
    expect(cnps.length).toBe(0);
    const d = decodePacket(dataTx[0]!.frame);
    expect(d.ok && d.packet.ipv4!.ecn).toBe(0);
    expect(hw(b).np_ecn_marked_roce_packets).toBe(0);
  });

  it('notification point off for the priority: CE counted, no CNP; reaction point off: CNPs ignored', async () => {
    const { cnps } = await setup({ a: { rp_enable: 0 }, b: { np_enable: 0xfe } });
    await writes(rcPair(), 2);
    expect(cnps.length).toBe(0);
    expect(hw(b).np_ecn_marked_roce_packets).toBe(32);
    await stopModel();
    closeDev(a);
    closeDev(b);
    const s2 = await setup({ a: { rp_enable: 0 } });
    await writes(rcPair(), 2);
    expect(s2.cnps.length).toBeGreaterThan(0);
    expect(hw(a)).toMatchObject({ rp_cnp_ignored: s2.cnps.length, rp_cnp_handled: 0 });
  });

  it('UD: the CNP goes to the DETH source QP', async () => {
    const { cnps } = await setup({ b: { min_time_between_cnps: 0 } }, [{ action: 'ecn-mark', direction: 'a->b', match: { opcode: 'send' } }]);
    const ua = createQp(a, IBV_QPT_UD);
    const ub = createQp(b, IBV_QPT_UD);
    connect(ua, ub);
    const buf = region(b, 4096);
    postRecv(ub, recvWr(1n, [buf.sge(0, 4096)]));
    const src = region(a, 256);
    const ah = createAh(a, b);
    postSend(ua, wrSend({ sge: [src.sge(0, 256)], wrId: 1n, ud: { ah, qpn: ub.qp.qp_num, qkey: 0x11111111 } }));
    await pollN(ua.scq, 1, 'UD SEND');
    await pollN(ub.rcq, 1, 'UD RECV');
    expect(cnps.length).toBe(1);
    const d = decodePacket(cnps[0]!.frame);
    expect(d.ok && d.packet.bth.destQp).toBe(ua.qp.qp_num);
  });

  it('CNPs go out on cnp_802p_prio: a PAUSE of priority 6 holds them, and only them', async () => {
    const { cnps } = await setup({ b: { min_time_between_cnps: 0 } });
    const p = rcPair();
    const t = [0, 0, 0, 0, 0, 0, 0xffff, 0];
    sim.injectFrame('rnic1:1', encodePfc(parseMac('02:00:00:00:00:01'), 1 << 6, t));
    await writes(p, 2); // the ACKs (priority 0) still flow, so the WRITEs complete
    expect(cnps.length).toBe(0);
    expect(hw(b).np_cnp_sent).toBe(32);
    sim.injectFrame('rnic1:1', encodePfc(parseMac('02:00:00:00:00:01'), 1 << 6, [0, 0, 0, 0, 0, 0, 0, 0]));
    sim.advance(10_000);
    expect(cnps.length).toBe(32);
  });
});

describe('congestion parameters in a scenario file', () => {
  it('devices[].congestion reaches the device: ECN off on rnic0, a CNP interval on rnic1; a bad value names its path', async () => {
    const { run, scenario } = await import('./helpers.js');
    const devices = [
      { name: 'rnic0', ports: [{ mac: '02:00:00:00:00:01', ipv4: ['192.0.2.1'] }], congestion: { ecn: false } },
      { name: 'rnic1', ports: [{ mac: '02:00:00:00:00:02', ipv4: ['192.0.2.2'] }], congestion: { min_time_between_cnps: 0 } },
    ];
    const base = {
      seed: 1,
      duration: '2ms',
      capture: ['rnic0:1'],
      qps: [{ name: 'q0', mtu: 1024 }],
      traffic: [{ qp: 'q0', op: 'write', size: 4096, count: 2 }],
    };
    const r = await run({ ...base, devices });
    // rnic0's own frames leave Not-ECT; rnic1's ACKs (default ECN on) ECT(0).
    const ecnFrom = (mac: number) => [
      ...new Set(
        readPcap(r.captures['rnic0:1']!)
          .records.filter((x) => x.data[11] === mac)
          .map((x) => {
            const d = decodePacket(x.data);
            return d.ok && d.packet.ipv4 ? d.packet.ipv4.ecn : -1;
          })
          .filter((e) => e >= 0),
      ),
    ];
    expect(ecnFrom(1)).toEqual([0]);
    expect(ecnFrom(2)).toEqual([2]);
    expect(() => scenario({ ...base, devices: [{ ...devices[0], congestion: { rpg_gd: 99 } }, devices[1]] }, 'sc.json')).toThrow(
      /sc\.json\.devices\[0\]\.congestion\.rpg_gd: 99 is outside \[1, 15\]/,
    );
  });
});
