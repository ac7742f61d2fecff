import { describe, expect, it } from 'vitest';
import { buildTopology, shortestPathPorts } from './topology.js';

describe('topologies', () => {
  it('a star: N hosts on sw0, port i+1 facing host i', () => {
    const t = buildTopology({ kind: 'star', hosts: 9 });
    expect(t.hosts).toHaveLength(9);
    expect(t.switches).toEqual([{ name: 'sw0', ports: 9 }]);
    expect(t.links[3]).toEqual({ a: 'h3:1', b: 'sw0:4' });
  });

  it('a leaf-spine: each leaf reaches a remote host through every spine (ECMP), a local host directly', () => {
    const t = buildTopology({ kind: 'leaf-spine', leaves: 3, spines: 4, hostsPerLeaf: 2 });
    expect(t.hosts).toHaveLength(6);
    expect(t.links).toHaveLength(6 + 12);
    const r = shortestPathPorts(t.links, new Set(t.switches.map((s) => s.name)));
    expect(r.get('leaf0')!.get('h0')).toEqual([1]);
    expect(r.get('leaf0')!.get('h5')).toEqual([3, 4, 5, 6]);
    expect(r.get('spine2')!.get('h5')).toEqual([3]);
  });

  it('a k-ary fat tree: k³/4 hosts, 5k²/4 switches, (k/2)² paths between pods', () => {
    for (const k of [2, 4, 6]) {
      const t = buildTopology({ kind: 'fat-tree', k });
      expect(t.hosts).toHaveLength(k ** 3 / 4);
      expect(t.switches).toHaveLength((5 * k * k) / 4);
      expect(t.links).toHaveLength((3 * k ** 3) / 4);
      for (const s of t.switches) expect(t.links.filter((l) => l.a.startsWith(`${s.name}:`) || l.b.startsWith(`${s.name}:`))).toHaveLength(s.ports);
      const r = shortestPathPorts(t.links, new Set(t.switches.map((s) => s.name)));
      const last = t.hosts[t.hosts.length - 1]!;
      // From the first edge switch to a host in the last pod: up through all k/2 aggregation switches.
      expect(r.get('edge0_0')!.get(last)).toHaveLength(k / 2);
      expect(r.get('agg0_0')!.get(last)).toHaveLength(k / 2);
    }
  });

  it('rejects shapes that cannot be built', () => {
    expect(() => buildTopology({ kind: 'star', hosts: 1 })).toThrow(/at least 2 hosts/);
    expect(() => buildTopology({ kind: 'fat-tree', k: 5 })).toThrow(/even k/);
    expect(() => buildTopology({ kind: 'leaf-spine', leaves: 0, spines: 1, hostsPerLeaf: 1 })).toThrow(/leaf-spine/);
  });
});
