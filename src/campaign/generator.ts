/**
 * The campaign's workload generator: one seed of a campaign → one scenario
 * file (docs/scenarios.md) that `rnic sim` runs on its own. The seed alone
 * decides everything (the project's seeded Random, forked per part), so
 * the same campaign and seed give the same scenario on any machine, in any
 * worker.
 */
import { DEFAULT_SWITCH_CONFIG, headroomBytes } from '../fabric/switch/config.js';
import { resolveProfile, retriesForever } from '../pipeline/profiles.js';
import { Random } from '../runtime/sim/random.js';
import { isReliable, type QpType, type TrafficOp } from '../scenario/scenario.js';
import type { Campaign, FaultKind, Range } from './config.js';

/** Scenario JSON, as written to a file. */
export type ScenarioJson = Record<string, unknown> & {
  qps: Record<string, unknown>[];
  traffic: Record<string, unknown>[];
  faults: Record<string, unknown>[];
};

const RC_OPS: readonly TrafficOp[] = ['send', 'send_imm', 'write', 'write_imm', 'read', 'cmp_swap', 'fetch_add'];
const UC_OPS: readonly TrafficOp[] = ['send', 'send_imm', 'write', 'write_imm'];
const UD_OPS: readonly TrafficOp[] = ['send', 'send_imm'];

function pick(r: Random, range: Range): number {
  return range[0] + r.int(range[1] - range[0] + 1);
}

function choose<T>(r: Random, xs: readonly T[]): T {
  return xs[r.int(xs.length)]!;
}

function weighted(r: Random, ops: readonly TrafficOp[], weights: Readonly<Record<TrafficOp, number>>): TrafficOp | null {
  const total = ops.reduce((s, o) => s + weights[o], 0);
  if (total <= 0) return null;
  let x = r.next() * total;
  for (const o of ops) {
    x -= weights[o];
    if (x < 0) return o;
  }
  return ops.filter((o) => weights[o] > 0).at(-1)!;
}

/** 0 with probability `zero`, else log-uniform in [1, max]. */
function size(r: Random, max: number, zero: number): number {
  if (max === 0 || r.bernoulli(zero)) return 0;
  return Math.max(1, Math.min(max, Math.floor(Math.exp(r.next() * Math.log(max + 1)))));
}

/** One QP of `type` (the k-th of its type) and the traffic it carries: attributes from `rq`, traffic from `rt`. */
function generateQp(
  c: Campaign,
  type: QpType,
  k: number,
  rq: Random,
  rt: Random,
  rg: Random,
): { qp: Record<string, unknown>; items: Record<string, unknown>[] } {
  const traffic: Record<string, unknown>[] = [];
  const name = `${type.toLowerCase()}${k}`;
  const mtu = choose(rq, c.mtus);
  const maxInline = pick(rq, c.maxInline);
  const rd = pick(rq, c.rdAtomic);
  const q: Record<string, unknown> = { name, type, mtu, psn_a: pick(rq, c.psn), psn_b: pick(rq, c.psn), max_inline_data: maxInline };
  // A stream of its own (forked per QP), so that choosing GIDs leaves every other draw of a seed as it was.
  if (c.gids.length > 1 || c.gids[0] !== 3) q.gid_index = choose(rg.fork(name), c.gids);
  if (isReliable(type)) {
    Object.assign(q, {
      timeout: pick(rq, c.timeout),
      retry_cnt: pick(rq, c.retryCnt),
      rnr_retry: pick(rq, c.rnrRetry),
      min_rnr_timer: pick(rq, c.minRnrTimer),
      max_rd_atomic: rd,
      max_dest_rd_atomic: rd,
    });
  }
  const ops = isReliable(type) ? RC_OPS : type === 'UC' ? UC_OPS : UD_OPS;
  // Only RC carries traffic both ways on one QP (an XRC pair's b end is a receive QP).
  const froms: ('a' | 'b')[] = type === 'RC' && rq.bernoulli(c.reverse) ? ['a', 'b'] : ['a'];
  let maxDepth = 1;
  let maxRecv = 1;
  for (const from of froms) {
    const r = rt.fork(`${name}/${from}`);
    const n = pick(r, c.wrs);
    const wrs: Record<string, unknown>[] = [];
    for (let i = 0; i < n; i++) {
      const op = weighted(r, ops, c.ops);
      if (op === null) break;
      const w: Record<string, unknown> = { op };
      if (op !== 'fetch_add' && op !== 'cmp_swap') {
        const sz = size(r, type === 'UD' ? Math.min(mtu, c.sizes.max) : c.sizes.max, c.sizes.zero);
        w.size = sz;
        if (op !== 'read' && sz <= maxInline && r.bernoulli(c.inline)) w.inline = true;
      }
      if (!r.bernoulli(c.signaled)) w.signaled = false;
      wrs.push(w);
    }
    if (wrs.length === 0) continue;
    const depth = pick(r, c.depth);
    const recvDepth = pick(r, c.recvDepth);
    maxDepth = Math.max(maxDepth, depth);
    maxRecv = Math.max(maxRecv, recvDepth);
    const t: Record<string, unknown> = { qp: name, from, depth, wrs };
    // A finite retry budget may run out under the faults: that is no bug when the run explains it.
    if (c.explainExhaustion && isReliable(type) && (!retriesForever(resolveProfile(c.profile), q.retry_cnt as number) || (q.rnr_retry as number) < 7))
      t.expect = 'success-or-exhausted';
    if (wrs.some((w) => w.op === 'send' || w.op === 'send_imm' || w.op === 'write_imm')) {
      t.recvDepth = recvDepth;
      if (r.bernoulli(c.lateRecv.probability)) t.recvStartNs = pick(r, c.lateRecv.delayNs);
    }
    const start = c.startSpreadNs > 0 ? r.int(c.startSpreadNs + 1) : 0;
    if (start > 0) t.startNs = start;
    traffic.push(t);
  }
  // Small queues: the model's setup cost grows with them, and a stream never needs more.
  Object.assign(q, { max_send_wr: maxDepth, max_recv_wr: maxRecv, cq_depth: Math.max(maxDepth, maxRecv) });
  return { qp: q, items: traffic };
}

/** Scenario seed of campaign seed `seed`: the seed itself (the scenario's faults and patterns draw from it). */
export function generateScenario(c: Campaign, seed: number): ScenarioJson {
  const root = new Random(`campaign:${c.name}:${seed}`);
  const rq = root.fork('qps');
  const rt = root.fork('traffic');
  const rf = root.fork('faults');
  const rg = root.fork('gids');
  const qps: Record<string, unknown>[] = [];
  const traffic: Record<string, unknown>[] = [];
  const types: [QpType, number, Random][] = [
    ['RC', pick(rq, c.qps.RC), rq],
    ['UC', pick(rq, c.qps.UC), rq],
    ['UD', pick(rq, c.qps.UD), rq],
  ];
  // XRC draws from a stream of its own, so adding it left the other QPs of every seed as they were.
  const rx = root.fork('xrc-qps');
  types.push(['XRC', pick(rx, c.qps.XRC), rx]);
  for (const [type, n, r] of types) {
    for (let k = 0; k < n; k++) {
      const { qp, items } = generateQp(c, type, k, r, rt, rg);
      qps.push(qp);
      traffic.push(...items);
    }
  }
  const faults: Record<string, unknown>[] = [];
  const fabric = drawFabric(c, root.fork('topology'), qps, traffic);
  // Its own stream: drawing the link layer leaves every other draw of a seed as it was.
  const ib = fabric === null && c.topology.ib > 0 && root.fork('link-layer').bernoulli(c.topology.ib) ? ibHosts(root.fork('ib-paths'), qps) : null;
  const kinds = [...c.faults.kinds];
  const nf = Math.min(kinds.length, pick(rf, c.faults.perSeed));
  for (let k = 0; k < nf; k++) {
    const kind = kinds.splice(rf.int(kinds.length), 1)[0]! as FaultKind;
    const p = c.faults.rate[0] + rf.next() * (c.faults.rate[1] - c.faults.rate[0]);
    const rule: Record<string, unknown> = { action: kind, probability: Math.round(p * 1e4) / 1e4 };
    if (kind === 'delay') rule.delayNs = pick(rf, c.faults.delayNs);
    if (kind === 'reorder') rule.reorderDepth = pick(rf, c.faults.reorderDepth);
    if (kind === 'duplicate') rule.copies = pick(rf, c.faults.duplicateCopies);
    faults.push(rule);
  }
  const base = {
    name: `${c.name}-${seed}`,
    description: `generated by rnic campaign (campaign ${c.name}, seed ${seed})`,
    seed,
    duration: c.durationNs,
    profile: c.profile,
  };
  if (ib !== null) return { ...base, devices: ib, qps, faults, traffic };
  if (fabric === null) return { ...base, qps, faults, traffic };
  // Through a switch the rules go on every link (a scenario's top-level faults do, with a topology), so a path of two hops meets them twice.
  return { ...base, topology: fabric.topology, switch: fabric.switch, qps, faults, traffic };
}

/** Chance that an IB seed's QP carries the GRH (LNH 3) rather than the LRH alone (LNH 2). */
const IB_GRH = 0.5;

/**
 * The two default hosts as native InfiniBand ports (LIDs 1 and 2): each QP
 * uses GID 0 (the only one an IB port has) and draws whether it carries a GRH.
 */
function ibHosts(r: Random, qps: Record<string, unknown>[]): Record<string, unknown>[] {
  for (const q of qps) {
    delete q.gid_index;
    if (!r.fork(`grh/${q.name as string}`).bernoulli(IB_GRH)) q.grh = false;
  }
  const host = (i: number) => ({ name: `rnic${i}`, ports: [{ mac: `02:00:00:00:00:0${i + 1}`, linkLayer: 'infiniband', lid: i + 1, mtu: 4096 }] });
  return [host(0), host(1)];
}

/**
 * Memory for the busiest host, MiB: 4 MiB for queues and CQs and room for the
 * buffers the runner registers (per item: depth slots of its largest message
 * at each end, and its receives), with a quarter more for guards and
 * alignment. Eight hosts of a fixed 64 MiB each ran a campaign out of a 4 GB
 * address space while shrinking.
 */
function hostMemoryMiB(qps: readonly Record<string, unknown>[], traffic: readonly Record<string, unknown>[]): number {
  const need = new Map<string, number>();
  const add = (h: string, n: number): void => void need.set(h, (need.get(h) ?? 0) + n);
  const ends = new Map(qps.map((q) => [q.name as string, q]));
  for (const t of traffic) {
    const q = ends.get(t.qp as string)!;
    const [req, resp] = t.from === 'a' ? [q.a as string, q.b as string] : [q.b as string, q.a as string];
    const slot = Math.max(8, ...(t.wrs as { size?: number }[]).map((w) => w.size ?? 8));
    const depth = t.depth as number;
    add(req, slot * depth);
    add(resp, slot * (depth + ((t.recvDepth as number | undefined) ?? 0)));
  }
  const most = Math.max(0, ...need.values());
  return Math.ceil((4 * 2 ** 20 + 1.25 * most) / 2 ** 20);
}

/** Two to four leaves (at least two hosts each), one or two spines, for `n` hosts. */
function drawLeafSpine(r: Random, n: number): { kind: 'leaf-spine'; leaves: number; spines: number; hostsPerLeaf: number } {
  const leaves = 2 + r.int(Math.min(4, Math.floor(n / 2)) - 1);
  return { kind: 'leaf-spine', leaves, spines: 1 + r.int(2), hostsPerLeaf: Math.ceil(n / leaves) };
}

/** The links' largest frame (the topology's default `mtu`), which sizes the PFC headroom. */
const LINK_MTU = 9018;

/** Priority of the QPs' traffic through a switch: the one PFC keeps lossless (DSCP 24, as the incasts). */
const PRIORITY = 3;

/**
 * The seed's fabric (null: two hosts on one cable, as before the knob): a
 * star of hosts on one switch or a leaf-spine, its PFC and ECN, and each QP's two hosts,
 * set on the QPs (`a`, `b`, and the priority's `sl` and DSCP).
 */
function drawFabric(
  c: Campaign,
  r: Random,
  qps: Record<string, unknown>[],
  traffic: readonly Record<string, unknown>[],
): { topology: Record<string, unknown>; switch: Record<string, unknown> } | null {
  const t = c.topology;
  const n = pick(r, t.hosts);
  if (n === 2 && !r.bernoulli(t.switch)) return null;
  const pfc = r.bernoulli(t.pfc);
  const ecn = r.bernoulli(t.ecn);
  const converge = n > 2 && r.bernoulli(t.converge);
  const shared = pick(r, t.buffer);
  const linkRate = choose(r, t.linkRates);
  const delay = pick(r, t.delayNs);
  // The drawn size is the shared pool: the buffer also holds every port's reserve and, with PFC, its headroom.
  // (A buffer smaller than those leaves a lossy priority a threshold of 0, and a frame above the reserve never gets in.)
  for (const q of qps) {
    const rq = r.fork(`qp/${q.name as string}`);
    const a = converge ? 1 + rq.int(n - 1) : rq.int(n);
    const b = converge ? 0 : (a + 1 + rq.int(n - 1)) % n;
    Object.assign(q, { a: `h${a}`, b: `h${b}`, sl: PRIORITY, traffic_class: (PRIORITY << 3) << 2 });
  }
  // Drawn last, and only when asked for, so that a campaign without it draws as before. The QPs keep
  // h0..h<n-1>; a last leaf's spare hosts stay idle.
  const shape = n >= 4 && t.leafSpine > 0 && r.bernoulli(t.leafSpine) ? drawLeafSpine(r, n) : { kind: 'star' as const, hosts: n };
  const ports = shape.kind === 'star' ? n : Math.max(shape.hostsPerLeaf + shape.spines, shape.leaves);
  const d = DEFAULT_SWITCH_CONFIG;
  const buffer = shared + ports * (d.reserveBytes + (pfc ? headroomBytes(d.pfc, linkRate, delay, LINK_MTU) : 0));
  return {
    topology: { ...shape, linkRate, delay, hostMtu: 4096, hostMemory: `${hostMemoryMiB(qps, traffic)}MiB` },
    switch: {
      buffer,
      pfc: { enabled: pfc, priorities: [PRIORITY] },
      ecn: {
        enabled: ecn,
        // Marks from 1/32 of the shared pool, every packet past 1/8: the campaign's small messages do meet them.
        thresholds: [{ linkRate, kmin: Math.floor(shared / 32), kmax: Math.floor(shared / 8), pmax: 0.2 }],
      },
    },
  };
}
