/**
 * Topologies as graphs: the three shapes a scenario can name (a star of N
 * hosts on one switch, a two-tier leaf-spine, a k-ary fat tree) laid out as
 * hosts, switches and links, and the forwarding tables of a laid-out
 * fabric (every equal-cost shortest path from each switch to each host,
 * for ECMP). Pure data; the simulator builds the switches and links.
 *
 * Naming: hosts h0, h1, ...; switches sw0 (star), leaf0.. and spine0..
 * (leaf-spine), edge<pod>_<i>, agg<pod>_<i>, core<i> (fat tree). Ports
 * are 1-based, as device ports are ('sw0:3').
 */
import { FabricError } from './cable.js';

export interface TopoLink {
  /** 'h0:1', 'sw0:3' */
  readonly a: string;
  readonly b: string;
}

export interface TopoSwitch {
  readonly name: string;
  readonly ports: number;
}

export interface Topology {
  /** Host names in order (each has one port, :1). */
  readonly hosts: readonly string[];
  readonly switches: readonly TopoSwitch[];
  readonly links: readonly TopoLink[];
}

export type TopologySpec =
  | { readonly kind: 'star'; readonly hosts: number }
  | { readonly kind: 'leaf-spine'; readonly leaves: number; readonly spines: number; readonly hostsPerLeaf: number }
  | { readonly kind: 'fat-tree'; readonly k: number };

/** Lays out a topology (see the file comment for names). */
export function buildTopology(t: TopologySpec): Topology {
  const hosts: string[] = [];
  const switches: TopoSwitch[] = [];
  const links: TopoLink[] = [];
  const next = new Map<string, number>();
  const port = (node: string): string => {
    const n = (next.get(node) ?? 0) + 1;
    next.set(node, n);
    return `${node}:${n}`;
  };
  const link = (a: string, b: string): void => void links.push({ a: port(a), b: port(b) });
  const host = (): string => {
    const h = `h${hosts.length}`;
    hosts.push(h);
    return h;
  };
  switch (t.kind) {
    case 'star': {
      if (!Number.isSafeInteger(t.hosts) || t.hosts < 2) throw new FabricError('FABRIC_BAD_CONFIG', `a star needs at least 2 hosts, got ${t.hosts}`);
      for (let i = 0; i < t.hosts; i++) link(host(), 'sw0');
      switches.push({ name: 'sw0', ports: t.hosts });
      break;
    }
    case 'leaf-spine': {
      for (const [k, v] of [
        ['leaves', t.leaves],
        ['spines', t.spines],
        ['hostsPerLeaf', t.hostsPerLeaf],
      ] as const) {
        if (!Number.isSafeInteger(v) || v < 1) throw new FabricError('FABRIC_BAD_CONFIG', `a leaf-spine needs ${k} >= 1, got ${v}`);
      }
      for (let l = 0; l < t.leaves; l++) for (let i = 0; i < t.hostsPerLeaf; i++) link(host(), `leaf${l}`);
      for (let l = 0; l < t.leaves; l++) for (let s = 0; s < t.spines; s++) link(`leaf${l}`, `spine${s}`);
      for (let l = 0; l < t.leaves; l++) switches.push({ name: `leaf${l}`, ports: t.hostsPerLeaf + t.spines });
      for (let s = 0; s < t.spines; s++) switches.push({ name: `spine${s}`, ports: t.leaves });
      break;
    }
    case 'fat-tree': {
      const k = t.k;
      if (!Number.isSafeInteger(k) || k < 2 || k % 2 !== 0) throw new FabricError('FABRIC_BAD_CONFIG', `a fat tree needs an even k >= 2, got ${k}`);
      const half = k / 2;
      for (let p = 0; p < k; p++) for (let e = 0; e < half; e++) for (let i = 0; i < half; i++) link(host(), `edge${p}_${e}`);
      for (let p = 0; p < k; p++) for (let e = 0; e < half; e++) for (let a = 0; a < half; a++) link(`edge${p}_${e}`, `agg${p}_${a}`);
      // Aggregation switch a of every pod reaches core switches a·k/2 .. a·k/2 + k/2 − 1.
      for (let p = 0; p < k; p++) for (let a = 0; a < half; a++) for (let c = 0; c < half; c++) link(`agg${p}_${a}`, `core${a * half + c}`);
      for (let p = 0; p < k; p++) for (let e = 0; e < half; e++) switches.push({ name: `edge${p}_${e}`, ports: k });
      for (let p = 0; p < k; p++) for (let a = 0; a < half; a++) switches.push({ name: `agg${p}_${a}`, ports: k });
      for (let c = 0; c < half * half; c++) switches.push({ name: `core${c}`, ports: k });
      break;
    }
    default:
      throw new FabricError('FABRIC_BAD_CONFIG', `unknown topology kind ${JSON.stringify((t as { kind: unknown }).kind)}`);
  }
  return { hosts, switches, links };
}

/**
 * Forwarding of a laid-out fabric: for each switch, for each host, the
 * switch's ports (1-based) that start a shortest path to it (ECMP set).
 * `switches` names the nodes that forward; every other node is a host.
 */
export function shortestPathPorts(links: readonly TopoLink[], switches: ReadonlySet<string>): Map<string, Map<string, number[]>> {
  const adj = new Map<string, { port: number; peer: string }[]>();
  const add = (from: string, to: string): void => {
    const [node, p] = from.split(':') as [string, string];
    const peer = to.split(':')[0]!;
    let l = adj.get(node);
    if (!l) adj.set(node, (l = []));
    l.push({ port: Number(p), peer });
  };
  for (const l of links) {
    add(l.a, l.b);
    add(l.b, l.a);
  }
  const hosts = [...adj.keys()].filter((n) => !switches.has(n));
  const out = new Map<string, Map<string, number[]>>();
  for (const s of switches) out.set(s, new Map());
  for (const h of hosts) {
    // Distances from the host, walking only through switches.
    const dist = new Map<string, number>([[h, 0]]);
    const queue = [h];
    for (let i = 0; i < queue.length; i++) {
      const n = queue[i]!;
      if (n !== h && !switches.has(n)) continue;
      for (const { peer } of adj.get(n) ?? []) {
        if (dist.has(peer)) continue;
        dist.set(peer, dist.get(n)! + 1);
        queue.push(peer);
      }
    }
    for (const s of switches) {
      const d = dist.get(s);
      if (d === undefined) continue;
      const ports = (adj.get(s) ?? []).filter(({ peer }) => dist.get(peer) === d - 1 && (peer === h || switches.has(peer))).map((x) => x.port);
      if (ports.length > 0)
        out.get(s)!.set(
          h,
          ports.sort((x, y) => x - y),
        );
    }
  }
  return out;
}
