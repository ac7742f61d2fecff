/**
 * ibv_modify_qp_rate_limit on the simulator: the device paces a QP's
 * requests packet by packet (a request starts no sooner than its
 * predecessor's line bytes at the rate), 0 lifts the limit, and the verb's
 * argument checks give the errnos of a provider without burst support.
 */
import { simFabric } from './helpers.js';
import { afterEach, describe, expect, it } from 'vitest';
import { stopModel } from '../../src/boot.js';
import type { SimModel } from '../../src/runtime/sim/sim-model.js';
import { bthOffset } from '../../src/runtime/sim/frame-info.js';
import { OPCODES } from '../../src/wire/index.js';
import {
  errno,
  IBV_MTU_1024,
  IBV_QPT_RC,
  IBV_QPT_UC,
  IBV_QPT_UD,
  IBV_WC_SUCCESS,
  ibv_modify_qp_rate_limit,
  ibv_query_device_ex,
  newDeviceAttrEx,
} from '../../src/driver/verbs/index.js';
import { createAh, expectWc, QKEY, makePair, pollN, postRecv, postSend, recvWr, region, wrSend, wrWrite } from '../e2e/harness.js';

afterEach(async () => {
  await stopModel();
});

const rl = (rate_limit: number, more: Partial<{ max_burst_sz: number; typical_pkt_sz: number; comp_mask: number }> = {}) => ({
  rate_limit,
  max_burst_sz: 0,
  typical_pkt_sz: 0,
  comp_mask: 0,
  ...more,
});

/** Request frames rnic0 starts sending: start time (ns) and length (bytes, no FCS). */
function requestsOf(s: SimModel): { ns: number; len: number }[] {
  const out: { ns: number; len: number }[] = [];
  s.observe((e) => {
    if (e.dir !== 'tx' || e.deviceIndex !== 0) return;
    const bth = bthOffset(e.frame);
    if (bth >= 0 && OPCODES[e.frame[bth]!]?.isRequest) out.push({ ns: e.ns, len: e.frame.length });
  });
  return out;
}

/** Line bytes of a frame of `len` bytes without FCS: padded to 60, FCS, preamble, SFD and gap. */
const lineBytes = (len: number) => Math.max(60, len) + 24;

describe('ibv_modify_qp_rate_limit', () => {
  it('paces RC WRITEs at the rate, packet by packet; 0 lifts the limit', async () => {
    const f = await simFabric();
    const { a } = makePair(f, IBV_QPT_RC, { mtu: IBV_MTU_1024 });
    const src = region(f.a, 65536, undefined, { fill: (i) => i & 0xff });
    const dst = region(f.b, 65536);
    const frames = requestsOf(f.sim);
    const writeAll = async (n: number) => {
      const t0 = f.sim.now();
      postSend(
        a,
        Array.from({ length: n }, (_, i) => wrWrite({ wrId: BigInt(i), sge: [src.sge(0, 65536)], remote: { addr: dst.at(0), rkey: dst.rkey } })),
      );
      for (const w of await pollN(a.scq, n, 'the WRITEs')) expectWc(w, { status: IBV_WC_SUCCESS }, 'WRITE');
      return f.sim.now() - t0;
    };
    const rate = 2_000_000; // kbit/s: 2 Gb/s
    expect(ibv_modify_qp_rate_limit(a.qp, rl(rate))).toBe(0);
    const slowNs = await writeAll(8);
    const paced = frames.splice(0);
    expect(paced.length).toBe(8 * 64);
    // No request starts before the one before it has gone at 2 Gb/s (line bytes; to the ns).
    for (let i = 1; i < paced.length; i++) {
      const gap = paced[i]!.ns - paced[i - 1]!.ns;
      expect(gap, `request ${i}`).toBeGreaterThanOrEqual(Math.floor((lineBytes(paced[i - 1]!.len) * 8) / (rate / 1e6)) - 1);
    }
    // And the run as a whole keeps to the rate: at most 2 Gb/s of line bytes, and not far below.
    const bits = paced.reduce((s, p) => s + lineBytes(p.len) * 8, 0);
    const gbps = bits / (paced.at(-1)!.ns - paced[0]!.ns);
    expect(gbps).toBeLessThanOrEqual(2.0 * 1.01);
    expect(gbps).toBeGreaterThan(2.0 * 0.95);
    expect(ibv_modify_qp_rate_limit(a.qp, rl(0))).toBe(0);
    const fastNs = await writeAll(8);
    expect(fastNs * 10).toBeLessThan(slowNs);
  });

  it('paces UD SENDs too', async () => {
    const f = await simFabric();
    const { a, b } = makePair(f, IBV_QPT_UD, {});
    const frames = requestsOf(f.sim);
    expect(ibv_modify_qp_rate_limit(a.qp, rl(500_000))).toBe(0); // 500 Mb/s
    const ah = createAh(f.a, f.b);
    const src = region(f.a, 1024);
    const dst = region(f.b, 40 + 1024);
    for (let i = 0; i < 16; i++) postRecv(b, recvWr(BigInt(i), [dst.sge(0, 40 + 1024)]));
    postSend(
      a,
      Array.from({ length: 16 }, (_, i) => wrSend({ wrId: BigInt(i), sge: [src.sge(0, 1024)], ud: { ah, qpn: b.qp.qp_num, qkey: QKEY } })),
    );
    for (const w of await pollN(a.scq, 16, 'the SENDs')) expectWc(w, { status: IBV_WC_SUCCESS }, 'SEND');
    // A UD SEND completes when the device hands it to the port; the last may start on the wire later.
    await f.sim.sleep(100_000);
    expect(frames.length).toBe(16);
    for (let i = 1; i < frames.length; i++)
      expect(frames[i]!.ns - frames[i - 1]!.ns).toBeGreaterThanOrEqual(Math.floor((lineBytes(frames[i - 1]!.len) * 8) / 0.5) - 1);
  });

  it('refuses what a provider without burst support refuses, and reports its caps', async () => {
    const f = await simFabric();
    const { a } = makePair(f, IBV_QPT_UC, {});
    expect(ibv_modify_qp_rate_limit(a.qp, rl(1000, { comp_mask: 1 }))).toBe(errno.EINVAL);
    expect(ibv_modify_qp_rate_limit(a.qp, rl(1000, { max_burst_sz: 4096 }))).toBe(errno.EINVAL);
    expect(ibv_modify_qp_rate_limit(a.qp, rl(1000, { typical_pkt_sz: 1024 }))).toBe(errno.EINVAL);
    expect(ibv_modify_qp_rate_limit(a.qp, rl(400_000_001))).toBe(errno.EINVAL);
    expect(ibv_modify_qp_rate_limit(a.qp, rl(-1))).toBe(errno.EINVAL);
    expect(ibv_modify_qp_rate_limit(a.qp, rl(1.5))).toBe(errno.EINVAL);
    expect(ibv_modify_qp_rate_limit(null as never, rl(1000))).toBe(errno.EINVAL);
    expect(ibv_modify_qp_rate_limit(a.qp, null as never)).toBe(errno.EINVAL);
    expect(ibv_modify_qp_rate_limit(a.qp, rl(1))).toBe(0);
    expect(ibv_modify_qp_rate_limit(a.qp, rl(400_000_000))).toBe(0);
    const x = newDeviceAttrEx();
    expect(ibv_query_device_ex(f.a.ctx, null, x)).toBe(0);
    expect(x.packet_pacing_caps).toEqual({
      qp_rate_limit_min: 1,
      qp_rate_limit_max: 400_000_000,
      supported_qpts: (1 << IBV_QPT_RC) | (1 << IBV_QPT_UC) | (1 << IBV_QPT_UD),
    });
  });
});
