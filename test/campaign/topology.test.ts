/**
 * The campaign's `topology` knob: checked with errors naming the field, the
 * default draws nothing (every default seed is the scenario it was), and a
 * fabric seed is a star of hosts on one switch whose QPs, faults, buffer and
 * ECN thresholds follow the knobs.
 */
import { describe, expect, it } from 'vitest';
import { CampaignError, DEFAULT_CAMPAIGN, loadCampaign, parseCampaign } from '../../src/campaign/config.js';
import { generateScenario } from '../../src/campaign/generator.js';
import { DEFAULT_SWITCH_CONFIG, headroomBytes } from '../../src/fabric/switch/config.js';
import { parseScenario } from '../../src/scenario/scenario.js';

const bad = (raw: unknown): string => {
  try {
    parseCampaign(raw, 'c.json');
  } catch (e) {
    expect(e).toBeInstanceOf(CampaignError);
    return (e as Error).message;
  }
  throw new Error('accepted');
};

describe('campaign topology knob', () => {
  it('refuses what it cannot draw, naming the field', () => {
    expect(bad({ topology: 3 })).toBe('c.json.topology: expected an object, got 3');
    expect(bad({ topology: { racks: 2 } })).toMatch(/^c\.json\.topology\.racks: unknown setting \(known: hosts, switch, pfc, ecn, converge/);
    expect(bad({ topology: { hosts: [1, 4] } })).toBe('c.json.topology.hosts[0]: 1 is outside [2, 16]');
    expect(bad({ topology: { hosts: [2, 17] } })).toBe('c.json.topology.hosts[1]: 17 is outside [2, 16]');
    expect(bad({ topology: { hosts: [5, 3] } })).toBe('c.json.topology.hosts: min 5 is above max 3');
    expect(bad({ topology: { switch: 1.5 } })).toBe('c.json.topology.switch: 1.5 is outside [0, 1]');
    expect(bad({ topology: { pfc: 'yes' } })).toBe('c.json.topology.pfc: expected a number, got "yes"');
    expect(bad({ topology: { buffer: 1000 } })).toBe('c.json.topology.buffer: 1000 is outside [65536, 1073741824]');
    expect(bad({ topology: { linkRates: [] } })).toBe('c.json.topology.linkRates: expected a list of link rates, got []');
    expect(bad({ topology: { linkRates: ['fast'] } })).toMatch(/^c\.json\.topology\.linkRates\[0\]: expected a rate like '100Gbps'/);
    expect(bad({ topology: { linkRates: ['100kbps'] } })).toBe('c.json.topology.linkRates[0]: 100000 bit/s is outside [1Mbps, 1.6Tbps]');
    expect(bad({ topology: { delayNs: -1 } })).toBe('c.json.topology.delayNs: -1 is outside [0, 1000000000]');
    expect(parseCampaign({ topology: { linkRates: ['25Gbps', 1e10], delayNs: '2us' } }).topology).toMatchObject({
      linkRates: [25e9, 1e10],
      delayNs: [2000, 2000],
    });
  });

  it('the default draws no fabric: seeds of the default knobs and of the same knobs spelt out are the same scenarios', () => {
    const spelt = parseCampaign({ topology: { hosts: 2, switch: 0, pfc: 0.7, ecn: 0.7, converge: 0.7 } });
    for (let seed = 0; seed < 200; seed++) {
      const j = generateScenario(DEFAULT_CAMPAIGN, seed);
      expect(j.topology).toBeUndefined();
      expect(JSON.stringify(generateScenario(spelt, seed))).toBe(JSON.stringify(j));
    }
  });

  it('campaigns/fabric.json draws stars of 2-8 hosts and leaf-spines, QPs between two hosts each, faults on every link, the buffer above its reservations', () => {
    const c = loadCampaign('campaigns/fabric.json');
    const hosts = new Set<number>();
    const shapes = new Set<string>();
    let switched = 0;
    let leafSpine = 0;
    let converged = 0;
    let pfc = 0;
    let ecn = 0;
    let faulted = 0;
    for (let seed = 0; seed < 300; seed++) {
      const j = generateScenario(c, seed);
      const s = parseScenario(j, `fabric-${seed}`);
      if (s.switches.length === 0) {
        expect(s.devices).toHaveLength(2);
        continue;
      }
      switched++;
      const n = s.devices.length;
      const leaves = s.switches.filter((x) => x.name.startsWith('leaf')).length;
      const spines = s.switches.filter((x) => x.name.startsWith('spine')).length;
      let ports = n;
      if (leaves === 0) {
        hosts.add(n);
        expect(s.switches).toHaveLength(1);
        expect(s.links).toHaveLength(n);
      } else {
        // Two to four leaves of two hosts or more each, one or two spines, every leaf on every spine.
        leafSpine++;
        shapes.add(`${leaves}x${spines}`);
        expect(leaves).toBeGreaterThanOrEqual(2);
        expect(leaves).toBeLessThanOrEqual(4);
        expect([1, 2]).toContain(spines);
        expect(s.switches).toHaveLength(leaves + spines);
        expect(n % leaves).toBe(0);
        expect(s.links).toHaveLength(n + leaves * spines);
        expect(n / leaves).toBeGreaterThanOrEqual(2);
        ports = Math.max(n / leaves + spines, leaves);
      }
      const sw = s.switches[0]!.config;
      for (const x of s.switches) expect(x.config).toEqual(sw);
      if (sw.pfc.enabled) pfc++;
      if (sw.ecn !== null) ecn++;
      const rate = s.links[0]!.linkRate;
      expect([10e9, 25e9, 100e9]).toContain(rate);
      const reserved =
        ports *
        (DEFAULT_SWITCH_CONFIG.reserveBytes + (sw.pfc.enabled ? headroomBytes(DEFAULT_SWITCH_CONFIG.pfc, rate, s.links[0]!.propagationDelay, 9018) : 0));
      expect(sw.bufferBytes - reserved).toBeGreaterThanOrEqual(65536);
      expect(sw.bufferBytes - reserved).toBeLessThanOrEqual(524288);
      for (const q of s.qps) {
        expect(q.a).not.toBe(q.b);
        // Priority 3 (DSCP 24), the lossless one.
        expect([q.sl, q.traffic_class]).toEqual([3, 96]);
      }
      if (n > 2 && s.qps.length > 1 && s.qps.every((q) => q.b === 'h0')) converged++;
      // The seed's rules on every link, each its own stream.
      const rules = JSON.stringify(s.links[0]!.faults);
      for (const l of s.links) expect(JSON.stringify(l.faults)).toBe(rules);
      if (s.links[0]!.faults.length > 0) faulted++;
    }
    expect(switched).toBeGreaterThan(250);
    expect([...hosts].sort()).toEqual([2, 3, 4, 5, 6, 7, 8]);
    // 40 % of the seeds with four hosts or more: all six shapes.
    expect(leafSpine).toBeGreaterThan(50);
    expect(leafSpine).toBeLessThan(switched / 2);
    expect([...shapes].sort()).toEqual(['2x1', '2x2', '3x1', '3x2', '4x1', '4x2']);
    for (const k of [pfc, ecn, converged]) {
      expect(k).toBeGreaterThan(50);
      expect(k).toBeLessThan(switched - 50);
    }
    expect(faulted).toBeGreaterThan(250);
  });
});
