/** The workload generator: seeded, within the campaign's knobs, and every scenario it writes is valid. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CAMPAIGN, parseCampaign } from '../../src/campaign/config.js';
import { generateScenario } from '../../src/campaign/generator.js';
import { parseScenario } from '../../src/scenario/scenario.js';

const SEEDS = Array.from({ length: 300 }, (_, i) => i);

describe('generator', () => {
  it('same campaign and seed: the same scenario; another seed: another one', () => {
    expect(JSON.stringify(generateScenario(DEFAULT_CAMPAIGN, 7))).toBe(JSON.stringify(generateScenario(DEFAULT_CAMPAIGN, 7)));
    expect(JSON.stringify(generateScenario(DEFAULT_CAMPAIGN, 8))).not.toBe(JSON.stringify(generateScenario(DEFAULT_CAMPAIGN, 7)));
  });

  it('over many seeds it covers what the default campaign asks for, and nothing outside it', () => {
    const ops = new Set<string>();
    const types = new Set<string>();
    const mtus = new Set<number>();
    const kinds = new Set<string>();
    let highPsn = 0;
    let inline = 0;
    let unsignaled = 0;
    let late = 0;
    let reverse = 0;
    let maxSize = 0;
    let zero = 0;
    for (const seed of SEEDS) {
      const j = generateScenario(DEFAULT_CAMPAIGN, seed);
      const s = parseScenario(j, `seed ${seed}`); // valid
      const rc = s.qps.filter((q) => q.type === 'RC').length;
      expect(rc).toBeGreaterThanOrEqual(2);
      expect(rc).toBeLessThanOrEqual(4);
      expect(s.qps.filter((q) => q.type === 'UC').length).toBe(1);
      expect(s.qps.filter((q) => q.type === 'UD').length).toBe(1);
      for (const q of s.qps) {
        types.add(q.type);
        mtus.add(q.mtu);
        if (q.psn_a >= 1 << 23) highPsn++;
        if (q.type === 'RC') {
          expect(q.timeout).toBeGreaterThanOrEqual(4);
          expect(q.timeout).toBeLessThanOrEqual(10);
        }
      }
      for (const t of s.traffic) {
        expect(t.depth).toBeGreaterThanOrEqual(1);
        expect(t.depth).toBeLessThanOrEqual(16);
        if (t.from === 'b') reverse++;
        if (t.recvStartNs > 0) late++;
        for (const w of t.wrs!) {
          ops.add(w.op);
          maxSize = Math.max(maxSize, w.size);
          expect(w.size).toBeLessThanOrEqual(12000);
          if (w.size === 0) zero++;
          if (w.inline) inline++;
          if (!w.signaled) unsignaled++;
        }
      }
      for (const f of s.links[0]!.faults) {
        kinds.add(f.action);
        expect(f.probability).toBeGreaterThanOrEqual(0.01);
        expect(f.probability).toBeLessThanOrEqual(0.1);
      }
    }
    expect([...ops].sort()).toEqual(['cmp_swap', 'fetch_add', 'read', 'send', 'send_imm', 'write', 'write_imm']);
    expect([...types].sort()).toEqual(['RC', 'UC', 'UD']);
    expect([...mtus].sort((a, b) => a - b)).toEqual([256, 512, 1024, 2048, 4096]);
    expect([...kinds].sort()).toEqual(['corrupt', 'delay', 'drop', 'duplicate', 'reorder']);
    expect(highPsn).toBeGreaterThan(100);
    for (const [what, n] of Object.entries({ inline, unsignaled, late, reverse, zero })) expect(n, what).toBeGreaterThan(20);
    expect(maxSize).toBeGreaterThan(8000);
  });

  it('follows its knobs: RC only, sends only, small sizes, one MTU, drops only', () => {
    const c = parseCampaign({
      qps: { RC: 1, UC: 0, UD: 0 },
      reverse: 0,
      ops: { send: 1 },
      sizes: { max: 100, zero: 0 },
      mtus: [512],
      faults: { kinds: ['drop'], rate: 0.05 },
      psn: [0x800000, 0x800000],
    });
    for (const seed of SEEDS.slice(0, 50)) {
      const s = parseScenario(generateScenario(c, seed));
      expect(s.qps.map((q) => [q.type, q.mtu, q.psn_a, q.psn_b])).toEqual([['RC', 512, 0x800000, 0x800000]]);
      expect(s.traffic.map((t) => t.from)).toEqual(['a']);
      for (const w of s.traffic[0]!.wrs!) {
        expect(w.op).toBe('send');
        expect(w.size).toBeGreaterThanOrEqual(1);
        expect(w.size).toBeLessThanOrEqual(100);
      }
      expect(s.links[0]!.faults.map((f) => [f.action, f.probability])).toEqual([['drop', 0.05]]);
    }
  });

  it('gids: every QP draws its source GID index from the list; the default leaves the scenarios as they were', () => {
    const c = parseCampaign({ gids: [0, 1, 2, 3, 4, 5], qps: { RC: [2, 4], UC: 1, UD: 1, XRC: 1 } });
    const seen = new Set<number>();
    for (const seed of SEEDS.slice(0, 100)) {
      const s = parseScenario(generateScenario(c, seed));
      for (const q of s.qps) seen.add(q.gid_index);
      // Only the GID indices differ from the same campaign without the knob.
      const plain = generateScenario(parseCampaign({ qps: { RC: [2, 4], UC: 1, UD: 1, XRC: 1 } }), seed);
      const j = generateScenario(c, seed);
      for (const q of j.qps) delete q.gid_index;
      expect(JSON.stringify(j)).toBe(JSON.stringify(plain));
    }
    expect([...seen].sort()).toEqual([0, 1, 2, 3, 4, 5]);
    expect(generateScenario(DEFAULT_CAMPAIGN, 5).qps.some((q) => 'gid_index' in q)).toBe(false);
    expect(() => parseCampaign({ gids: [6] }, 'c.json')).toThrow("c.json.gids[0]: expected a GID index 0..5 (the default hosts' GID table), got 6");
    expect(() => parseCampaign({ gids: [] }, 'c.json')).toThrow('c.json.gids: expected a list of GID indices, got []');
  });

  it('UD messages fit the MTU; inline only where max_inline_data allows', () => {
    for (const seed of SEEDS) {
      const s = parseScenario(generateScenario(DEFAULT_CAMPAIGN, seed));
      for (const t of s.traffic) {
        const q = s.qps.find((x) => x.name === t.qp)!;
        for (const w of t.wrs!) {
          if (q.type === 'UD') expect(w.size).toBeLessThanOrEqual(q.mtu);
          if (w.inline) expect(w.size).toBeLessThanOrEqual(q.max_inline_data);
        }
      }
    }
  });
});
