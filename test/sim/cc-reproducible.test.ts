/**
 * Seeded runs with the congestion machinery busy are byte-reproducible:
 * ECN marks by seeded dice, CNPs, DCQCN cuts and increases, pacing, and PFC
 * pauses of one priority while another flows. Same seed: the same frames
 * (bytes and virtual times) at every port, the same counters and the same
 * congestion time series; another seed: another run.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { startSimModel, stopModel } from '../../src/boot.js';
import { IBV_QPT_RC, IBV_WC_SUCCESS, rnic_read_counters } from '../../src/driver/verbs/index.js';
import type { ModelConfig } from '../../src/runtime/config.js';
import { encodePfc, parseMac } from '../../src/wire/index.js';
import { closeDev, connect, createQp, openDev, pollN, postSend, region, twoDeviceConfig, wrWrite } from '../e2e/harness.js';

async function runOnce(seed: string): Promise<{ frames: string; counters: string; cc: string; events: number; cnps: number }> {
  const sim = await startSimModel({
    ...twoDeviceConfig(0, (c: ModelConfig) => {
      c.devices[0]!.congestion = { rpg_time_reset: 20, rpg_byte_reset: 65536, rpg_ai_rate: 500, rpg_hai_rate: 5000 };
      c.devices[1]!.congestion = { min_time_between_cnps: 1 };
    }),
    seed,
    faults: [{ action: 'ecn-mark', direction: 'a->b', match: { opcode: 'write' }, probability: 0.2 }],
  });
  const h = createHash('sha256');
  let events = 0;
  sim.observe((e) => {
    h.update(`${e.dir} ${e.device} ${e.ns} `);
    h.update(e.frame);
    events++;
  });
  const cc: string[] = [];
  sim.observeCongestion((e) => cc.push(`${e.device} ${e.qpn} ${e.kind} ${e.ns} ${e.rateBps} ${e.targetBps} ${e.alpha}`));
  const a = openDev('rnic0');
  const b = openDev('rnic1');
  const p3 = { a: createQp(a, IBV_QPT_RC), b: createQp(b, IBV_QPT_RC) };
  const p0 = { a: createQp(a, IBV_QPT_RC), b: createQp(b, IBV_QPT_RC) };
  connect(p3.a, p3.b, { sl: 3 });
  connect(p0.a, p0.b, { sl: 0 });
  const len = 32768;
  const n = 12;
  const src = region(a, len * n * 2, undefined, { fill: (i) => (i * 17) & 0xff });
  const dst = region(b, len * n * 2);
  for (let i = 0; i < n; i++) {
    postSend(p3.a, wrWrite({ sge: [src.sge(i * len, len)], remote: { addr: dst.at(i * len), rkey: dst.rkey }, wrId: BigInt(i) }));
    postSend(p0.a, wrWrite({ sge: [src.sge((n + i) * len, len)], remote: { addr: dst.at((n + i) * len), rkey: dst.rkey }, wrId: BigInt(i) }));
  }
  const peer = parseMac('02:00:00:00:00:02');
  for (const [at, q] of [
    [5_000, 2000],
    [15_000, 0],
    [30_000, 4000],
  ] as const) {
    sim.advance(at - sim.now());
    sim.injectFrame('rnic0:1', encodePfc(peer, 0x08, [0, 0, 0, q, 0, 0, 0, 0]));
  }
  for (const w of [...(await pollN(p3.a.scq, n, 'SL 3')), ...(await pollN(p0.a.scq, n, 'SL 0'))]) expect(w.status).toBe(IBV_WC_SUCCESS);
  expect(Buffer.compare(dst.data, src.data)).toBe(0);
  sim.advance(100_000);
  const counters = JSON.stringify(
    [rnic_read_counters(a.ctx, 1), rnic_read_counters(b.ctx, 1), sim.portCounters('rnic0:1'), sim.portCounters('rnic1:1')],
    (_k, v) => (typeof v === 'bigint' ? v.toString() : v),
  );
  const cnps = Number(rnic_read_counters(b.ctx, 1).np_cnp_sent);
  closeDev(a);
  closeDev(b);
  await stopModel();
  return { frames: h.digest('hex'), counters, cc: cc.join('\n'), events, cnps };
}

describe('congestion control, seeded and reproducible', () => {
  it('same seed twice: identical frames, counters and time series; another seed differs', async () => {
    const one = await runOnce('cc-1');
    const two = await runOnce('cc-1');
    expect(one.cnps).toBeGreaterThan(5);
    expect(one.cc.split('\n').length).toBeGreaterThan(10);
    expect(two).toEqual(one);
    const other = await runOnce('cc-2');
    expect(other.frames).not.toBe(one.frames);
  });
});
