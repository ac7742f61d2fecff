/**
 * Device profiles (src/pipeline/profiles.ts): the IBTA by default, a real
 * device's choice when a profile says so, each provoked precisely on the
 * simulator.
 */
import { describe, expect, it } from 'vitest';
import { decodePacket, iteratePcap, rxeInitialUdpSport } from '../../src/wire/index.js';
import { ctr, run } from './helpers.js';

/** Every ACK lost for 1.5 ms, then the link heals: 8 timeouts of 131 µs (timeout 5) would exceed retry_cnt 7. */
const lostAcks = (profile: unknown) => ({
  name: 'retry-7',
  seed: 3,
  duration: '20ms',
  profile,
  qps: [{ name: 'q', type: 'RC', mtu: 1024, timeout: 5, retry_cnt: 7 }],
  faults: [{ name: 'outage', action: 'drop', direction: 'b->a', match: { opcode: 'ack', window: ['0ns', '1.5ms'] } }],
  traffic: [{ qp: 'q', op: 'write', size: 1024, count: 1, depth: 1, expect: 'any' }],
});

describe('retryCnt7Infinite', () => {
  it('IBTA (default): retry_cnt 7 is seven retries, then RETRY_EXC_ERR', async () => {
    const r = await run(lostAcks('ibta'));
    expect(r.traffic[0]!.ok).toBe(0);
    expect(Object.keys(r.traffic[0]!.errors)).toEqual(['IBV_WC_RETRY_EXC_ERR']);
    expect(ctr(r, 'rnic0', 'retry_exceeded_err')).toBe(1);
    expect(ctr(r, 'rnic0', 'local_ack_timeout_err')).toBe(7);
  });

  it.each(['rxe', { retryCnt7Infinite: true }])(
    'profile %j (Linux rxe): retry_cnt 7 retries forever, and the WRITE completes once the ACKs get through',
    async (profile) => {
      const r = await run(lostAcks(profile));
      expect(r.traffic[0]!.ok).toBe(1);
      expect(ctr(r, 'rnic0', 'retry_exceeded_err')).toBe(0);
      expect(ctr(r, 'rnic0', 'local_ack_timeout_err')).toBeGreaterThan(7);
    },
  );
});

describe('the wire choices: IP TTL and the UD source port', () => {
  /** An RC and a UD QP whose address vectors say hop_limit 1, as rdma-core's pingpongs do. */
  const hop1 = (profile: unknown) => ({
    name: 'hop-limit-1',
    seed: 1,
    duration: '2ms',
    profile,
    qps: [
      { name: 'rc', type: 'RC', mtu: 1024, hop_limit: 1 },
      { name: 'ud', type: 'UD', mtu: 1024, hop_limit: 1 },
    ],
    traffic: [
      { qp: 'rc', op: 'send', size: 100, count: 2, depth: 1 },
      { qp: 'ud', op: 'send', size: 100, count: 2, depth: 1 },
    ],
  });
  const frames = async (profile: unknown) => {
    const r = await run(hop1(profile));
    const out: { ttl: number; ecn: number; sport: number; ud: boolean; srcQp: number }[] = [];
    for (const rec of iteratePcap(Object.values(r.captures)[0]!)) {
      const d = decodePacket(rec.data);
      if (d.ok)
        out.push({
          ttl: d.packet.ipv4!.ttl,
          ecn: d.packet.ipv4!.ecn,
          sport: d.packet.udp!.srcPort,
          ud: d.packet.deth !== null,
          srcQp: d.packet.deth?.srcQp ?? -1,
        });
    }
    expect(out.filter((f) => f.ud).length).toBe(2);
    expect(out.filter((f) => !f.ud).length).toBeGreaterThanOrEqual(4); // two SENDs, their ACKs
    return out;
  };

  it('ibta: TTL is the hop limit (1); ECT(0) with congestion control on (the default); UD from the flow-label port 0xC000', async () => {
    const out = await frames('ibta');
    expect(new Set(out.map((f) => f.ttl))).toEqual(new Set([1]));
    expect(new Set(out.map((f) => f.ecn))).toEqual(new Set([2]));
    for (const f of out.filter((x) => x.ud)) expect(f.sport).toBe(0xc000);
  });

  it("rxe: TTL 64 whatever the hop limit; ECN the traffic class's (0); UD from rxe's per-QP port 0xC000 + hash_32(qpn, 14)", async () => {
    const out = await frames('rxe');
    expect(new Set(out.map((f) => f.ttl))).toEqual(new Set([64]));
    expect(new Set(out.map((f) => f.ecn))).toEqual(new Set([0]));
    for (const f of out.filter((x) => x.ud)) expect(f.sport).toBe(rxeInitialUdpSport(f.srcQp));
    // The RC QP's port is the same under both profiles (rdma_get_udp_sport of the QPN pair, rxe_verbs.c rxe_modify_qp).
    const ibta = await frames('ibta');
    expect(out.filter((f) => !f.ud).map((f) => f.sport)).toEqual(ibta.filter((f) => !f.ud).map((f) => f.sport));
  });
});

describe('ackReqEveryMessage', () => {
  /** 16 unsignaled WRITEs of one packet each, one signaled in every 16 (and the last). */
  const stream = (profile: unknown) => ({
    name: 'ackreq',
    seed: 1,
    duration: '2ms',
    profile,
    qps: [{ name: 'q', type: 'RC', mtu: 1024 }],
    traffic: [{ qp: 'q', op: 'write', size: 512, count: 32, depth: 16, signalEvery: 16 }],
  });
  const ackReqs = async (profile: unknown) => {
    const r = await run(stream(profile));
    expect(r.traffic[0]!.ok).toBe(32);
    let asked = 0;
    let acks = 0;
    for (const rec of iteratePcap(Object.values(r.captures)[0]!)) {
      const d = decodePacket(rec.data);
      if (!d.ok) continue;
      if (d.packet.bth.opcode === 0x0a && d.packet.bth.ackReq) asked++; // RC_RDMA_WRITE_ONLY
      if (d.packet.bth.opcode === 0x11) acks++; // RC_ACKNOWLEDGE
    }
    return { asked, acks };
  };

  it('rxe asks on every message and is answered for each; ibta asks on the messages someone waits for', async () => {
    const rxe = await ackReqs('rxe');
    expect(rxe).toEqual({ asked: 32, acks: 32 });
    const ibta = await ackReqs('ibta');
    expect(ibta.asked).toBeLessThan(32);
    expect(ibta.acks).toBe(ibta.asked);
  });
});
