/**
 * XRC pairs in scenarios and campaigns: an XRC send QP at `a`, an XRC
 * receive QP with its own XRC SRQ at `b`, judged by RC's checks.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CAMPAIGN, parseCampaign } from '../../src/campaign/config.js';
import { generateScenario } from '../../src/campaign/generator.js';
import { parseScenario } from '../../src/scenario/scenario.js';
import { runScenario } from '../../src/scenario/scenario-runner.js';
import { decodePacket, OPCODES, readPcap } from '../../src/wire/index.js';
import { ALL_RC } from './all-ops.js';

function xrcScenario(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    seed: 5,
    duration: '50ms',
    capture: ['rnic0:1'],
    qps: [
      { name: 'x0', type: 'XRC', mtu: 1024, psn_a: 0xfffff0, timeout: 6, max_inline_data: 64 },
      { name: 'x1', type: 'XRC', mtu: 256, psn_a: 12_000_000, timeout: 6 },
      { name: 'rc', mtu: 512, timeout: 6 },
    ],
    traffic: [
      { qp: 'x0', depth: 4, recvDepth: 2, recvStartNs: '20us', wrs: ALL_RC },
      { qp: 'x1', depth: 3, wrs: [...ALL_RC].reverse() },
      { qp: 'rc', from: 'b', op: 'send', size: 2000, count: 20, depth: 4 },
    ],
    ...extra,
  };
}

describe('XRC pairs in a scenario', () => {
  it('every RC op through two XRC pairs beside an RC QP: all checks pass, XRC on the wire, the receive QPs in RTR', async () => {
    const r = await runScenario(parseScenario(xrcScenario()));
    expect(r.verify).toEqual([]);
    expect(r.endedBy).toBe('complete');
    expect(r.traffic.map((t) => [t.qp, t.op, t.ok])).toEqual([
      ['x0', 'mixed', 11],
      ['x1', 'mixed', 11],
      ['rc', 'send', 20],
    ]);
    expect(r.traffic[0]!.receives, 'three SENDs and a WRITE_IMM consumed SRQ receives').toBe(4);
    expect(r.traffic[0]!.naks['rnr-nak'] ?? 0, 'a SEND met the SRQ before its receives were posted').toBeGreaterThan(0);
    expect(r.qpStates.x0).toEqual({ a: 'RTS', b: 'RTR' });
    expect(r.qpStates.rc).toEqual({ a: 'RTS', b: 'RTS' });
    // rnic0's requests on the XRC pairs carry XRC opcodes and an XRCETH; the RC QP's do not.
    const srqns = new Set<number>();
    let xrcRequests = 0;
    for (const rec of readPcap(r.captures['rnic0:1']!).records) {
      const d = decodePacket(rec.data);
      expect(d.ok).toBe(true);
      if (!d.ok || rec.data[11] !== 1) continue; // frames rnic0 sent
      const info = OPCODES[d.packet.bth.opcode]!;
      if (!info.isRequest) continue;
      if (d.packet.bth.opcode >> 5 === 5) {
        xrcRequests++;
        expect(d.packet.xrceth).not.toBeNull();
        srqns.add(d.packet.xrceth!.xrcSrq);
      } else expect(d.packet.xrceth).toBeNull();
    }
    expect(xrcRequests).toBeGreaterThan(40);
    expect(srqns.size, 'one SRQ per XRC pair').toBe(2);
  });

  it('the same under 5% loss, corruption, duplication, reordering and delay', async () => {
    const faults = [
      { action: 'drop', probability: 0.05 },
      { action: 'corrupt', probability: 0.05 },
      { action: 'duplicate', probability: 0.05 },
      { action: 'reorder', probability: 0.05, reorderDepth: 2 },
      { action: 'delay', probability: 0.05, delayNs: '3us' },
    ];
    for (const seed of [1, 2, 3, 4]) {
      const r = await runScenario(parseScenario(xrcScenario({ seed, faults, capture: [], profile: { retryCnt7Infinite: true } })));
      expect(r.verify, `seed ${seed}`).toEqual([]);
      expect(r.sim.links.l0!.faults!.dropped, `seed ${seed}`).toBeGreaterThan(0);
    }
  });

  it('an XRC error is a finding of type XRC (a SEND into an SRQ without receives, no RNR retries)', async () => {
    const r = await runScenario(
      parseScenario({
        duration: '10ms',
        qps: [{ name: 'x', type: 'XRC', rnr_retry: 0, min_rnr_timer: 1 }],
        traffic: [{ qp: 'x', op: 'send', size: 100, count: 2, recvStartNs: '5ms' }],
      }),
    );
    expect(r.findings[0]).toMatchObject({ kind: 'error-completion', qp: 'x', type: 'XRC', op: 'send', status: 'IBV_WC_RNR_RETRY_EXC_ERR' });
  });

  it('traffic from the receive end of an XRC pair is refused, naming it', () => {
    expect(() => parseScenario({ qps: [{ name: 'x', type: 'XRC' }], traffic: [{ qp: 'x', from: 'b' }] }, 's.json')).toThrow(
      "s.json.traffic[0].from: an XRC pair sends from a (its XRC send QP) only; x's b end is an XRC receive QP",
    );
  });
});

describe('XRC pairs in a campaign', () => {
  const SEEDS = Array.from({ length: 200 }, (_, i) => i);
  const withXrc = parseCampaign({ qps: { ...DEFAULT_CAMPAIGN.qps, XRC: [1, 2] } });

  it('qps.XRC adds XRC pairs with RC attributes, traffic from a only, and leaves the rest of each seed as it was', () => {
    const ops = new Set<string>();
    for (const seed of SEEDS) {
      const j = generateScenario(withXrc, seed);
      const s = parseScenario(j, `seed ${seed}`);
      const xrc = s.qps.filter((q) => q.type === 'XRC');
      expect(xrc.length).toBeGreaterThanOrEqual(1);
      expect(xrc.length).toBeLessThanOrEqual(2);
      for (const q of xrc) {
        expect(q.timeout).toBeGreaterThanOrEqual(4);
        expect(q.timeout).toBeLessThanOrEqual(10);
      }
      for (const t of s.traffic.filter((t) => xrc.some((q) => q.name === t.qp))) {
        expect(t.from).toBe('a');
        for (const w of t.wrs!) ops.add(w.op);
      }
      const plain = generateScenario(DEFAULT_CAMPAIGN, seed);
      expect(j.qps.filter((q) => q.type !== 'XRC')).toEqual(plain.qps);
      expect(j.traffic.filter((t) => !String(t.qp).startsWith('xrc'))).toEqual(plain.traffic);
      expect(j.faults).toEqual(plain.faults);
    }
    expect([...ops].sort()).toEqual(['cmp_swap', 'fetch_add', 'read', 'send', 'send_imm', 'write', 'write_imm']);
  });

  it('generated XRC seeds pass (30 seeds of campaigns/xrc.json run end to end)', async () => {
    for (const seed of SEEDS.slice(0, 30)) {
      const r = await runScenario(parseScenario(generateScenario(withXrc, seed), `seed ${seed}`));
      expect(r.verify, `seed ${seed}`).toEqual([]);
    }
  }, 120_000);
});
