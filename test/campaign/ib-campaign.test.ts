/**
 * Native InfiniBand under the campaign's generator: 200 seeded
 * random workloads (RC, UC, UD; every op; LRH only or LRH+GRH by a coin;
 * the default faults) between two IB hosts, each judged by the scenario
 * checks; and a few of them captured, every frame decoding as a good IB
 * packet to or from the two LIDs.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CAMPAIGN, parseCampaign } from '../../src/campaign/config.js';
import { generateScenario } from '../../src/campaign/generator.js';
import { runSeed } from '../../src/campaign/run-seed.js';
import { parseScenario } from '../../src/scenario/scenario.js';
import { runScenario } from '../../src/scenario/scenario-runner.js';
import { decodePacket, LINKTYPE_INFINIBAND, Lnh, readPcap } from '../../src/wire/index.js';

const IB = parseCampaign({ name: 'ib', topology: { ib: 1 } }, 'ib-test');

describe('the IB campaign', () => {
  it('draws IB hosts only when asked: the default campaign is unchanged, an IB seed differs only in devices and grh', () => {
    for (let seed = 0; seed < 50; seed++) {
      const d = generateScenario(DEFAULT_CAMPAIGN, seed);
      expect('devices' in d).toBe(false);
      const ib = generateScenario({ ...DEFAULT_CAMPAIGN, name: 'default', topology: { ...DEFAULT_CAMPAIGN.topology, ib: 1 } }, seed);
      const strip = (s: Record<string, unknown>) =>
        JSON.stringify({ ...s, devices: undefined, qps: (s.qps as Record<string, unknown>[]).map(({ grh: _, ...q }) => q) });
      expect(strip(ib)).toBe(strip(d));
    }
  });

  it('200 seeds between two IB hosts pass every check', async () => {
    const failed: string[] = [];
    let lrhOnly = 0;
    for (let seed = 0; seed < 200; seed++) {
      const json = generateScenario(IB, seed);
      expect((json.devices as { ports: { linkLayer: string }[] }[]).every((d) => d.ports[0]!.linkLayer === 'infiniband')).toBe(true);
      lrhOnly += json.qps.filter((q) => q.grh === false).length;
      const r = await runSeed(IB, seed);
      if (!r.ok) failed.push(`seed ${seed}: ${r.failures.slice(0, 2).join('; ')}`);
    }
    expect(failed).toEqual([]);
    expect(lrhOnly, 'LRH-only QPs were drawn').toBeGreaterThan(200);
  }, 300_000);

  it('captured seeds: every frame is a good IB packet between LIDs 1 and 2, both LNH 2 and 3 present', async () => {
    const lnhs = new Set<number>();
    for (const seed of [3, 17, 42]) {
      const json = { ...generateScenario(IB, seed), capture: ['rnic0:1'] };
      const r = await runScenario(parseScenario(json, `ib-${seed}`));
      const pcap = readPcap(r.captures['rnic0:1']!);
      expect(pcap.linktype).toBe(LINKTYPE_INFINIBAND);
      expect(pcap.records.length).toBeGreaterThan(10);
      for (const rec of pcap.records) {
        const d = decodePacket(rec.data, LINKTYPE_INFINIBAND);
        // A corrupt fault's copy fails its VCRC (or ICRC): the receiver drops it, as the counters say.
        if (!d.ok) {
          expect(['WIRE_BAD_VCRC', 'WIRE_BAD_ICRC']).toContain(d.error.code);
          continue;
        }
        const l = d.packet.lrh!;
        expect([l.slid, l.dlid].sort()).toEqual([1, 2]);
        lnhs.add(l.lnh);
      }
    }
    expect([...lnhs].sort()).toEqual([Lnh.IBA_LOCAL, Lnh.IBA_GLOBAL]);
  }, 60_000);
});
