/**
 * The fabric sections of a scenario file (docs/scenarios.md, "Fabric"),
 * checked with zod schemas of their own so they plug into whatever checks
 * the rest of the file:
 *
 *   topology  star / leaf-spine / fat-tree of hosts and switches, with the
 *             links' rate, delay and MTU (and per-link overrides and faults)
 *   switch    every switch's buffer, PFC, ECN and scheduling settings
 *   incast    N senders, one receiver: one QP and one traffic item each
 *   output    time-series sampling of the run's outputs
 *
 * `expandFabric` turns them into the plain sections the scenario parser
 * already knows (devices, links, qps, traffic) plus the resolved switches;
 * every mistake is reported with the path of the field, as
 * `incast-8to1.json.switch.ecn.thresholds[0].kmax: must be above kmin`.
 */
import { z } from 'zod';
import type { SwitchConfig } from '../fabric/switch/config.js';
import { buildTopology, type Topology } from '../fabric/topology.js';
import { resolveCcParams } from '../pipeline/cc-params.js';
import { duration, prio, rate, resolveSwitchConfig, SwitchSchema } from '../runtime/switch-schema.js';

const linkOverride = z.strictObject({
  linkRate: rate.optional(),
  delay: duration.optional(),
  mtu: z.number().int().min(256).max(16384).optional(),
  queueLimit: z
    .number()
    .int()
    .min(1)
    .max(1 << 24)
    .optional(),
  faults: z.array(z.unknown()).optional(),
});

const topoCommon = {
  linkRate: rate.default(100_000_000_000),
  delay: duration.default(1000),
  /** Largest frame (bytes, no FCS) a switch forwards; sizes PFC headroom. */
  mtu: z.number().int().min(256).max(16384).default(9018),
  queueLimit: z
    .number()
    .int()
    .min(1)
    .max(1 << 24)
    .optional(),
  /** Active MTU of every host port (the RoCE path MTU ceiling). */
  hostMtu: z.union([z.literal(256), z.literal(512), z.literal(1024), z.literal(2048), z.literal(4096)]).default(4096),
  /** Per link (by generated name, 'h0-sw0'): rate, delay, MTU, queue limit and fault rules. */
  links: z.record(z.string(), linkOverride).default({}),
  /** Every host's memory (bytes or '64MiB'); default: 4 MiB and room for the incast's buffers. */
  hostMemory: z.union([z.number(), z.string()]).optional(),
  /** Every host's QoS and congestion-control parameters (the device configuration's `congestion`: DCQCN, ECN, CNPs). */
  hostCongestion: z.record(z.string(), z.unknown()).optional(),
};

export const TopologySchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('star'), hosts: z.number().int().min(2).max(1024), ...topoCommon }),
  z.strictObject({
    kind: z.literal('leaf-spine'),
    leaves: z.number().int().min(1).max(64),
    spines: z.number().int().min(1).max(64),
    hostsPerLeaf: z.number().int().min(1).max(256),
    ...topoCommon,
  }),
  z.strictObject({
    kind: z.literal('fat-tree'),
    k: z
      .number()
      .int()
      .min(2)
      .max(16)
      .refine((k) => k % 2 === 0, 'k must be even'),
    ...topoCommon,
  }),
]);

export const IncastSchema = z.strictObject({
  receiver: z.string().min(1).default('h0'),
  /** How many senders (the hosts after the receiver, in order), or their names. */
  senders: z.union([z.number().int().min(1).max(1023), z.array(z.string().min(1)).min(1)]),
  op: z.enum(['write', 'send']).default('write'),
  size: z
    .number()
    .int()
    .min(1)
    .max(1 << 26)
    .default(1_000_000),
  count: z.number().int().min(1).max(1_000_000).default(1),
  priority: prio.default(3),
  mtu: z.union([z.literal(256), z.literal(512), z.literal(1024), z.literal(2048), z.literal(4096)]).default(1024),
  start: duration.default(0),
});

export const OutputSchema = z.strictObject({
  sampleInterval: duration.default(10_000).refine((v) => v > 0, 'must be more than 0'),
  plots: z.boolean().default(true),
});

/** One switch of a scenario, resolved. */
export interface ScenarioSwitch {
  readonly name: string;
  readonly ports: number;
  readonly config: SwitchConfig;
}

export interface OutputOptions {
  readonly sampleIntervalNs: number;
  readonly plots: boolean;
}

/** What the fabric sections add to a scenario: plain sections for the main parser, and the switches. */
export interface FabricExpansion {
  readonly topology: Topology | null;
  readonly devices: readonly Record<string, unknown>[] | null;
  readonly links: readonly Record<string, unknown>[] | null;
  readonly qps: readonly Record<string, unknown>[];
  readonly traffic: readonly Record<string, unknown>[];
  readonly switches: readonly ScenarioSwitch[];
  readonly output: OutputOptions;
}

export const FABRIC_KEYS = ['topology', 'switch', 'incast', 'output'] as const;

function check<T extends z.ZodType>(schema: T, raw: unknown, path: string, fail: (msg: string) => never): z.output<T> {
  const r = schema.safeParse(raw);
  if (r.success) return r.data;
  const i = r.error.issues[0]!;
  let p = path;
  for (const k of i.path) p += typeof k === 'number' ? `[${k}]` : `.${String(k)}`;
  if (i.code === 'unrecognized_keys') return fail(`${p}.${i.keys[0]}: unknown setting`);
  return fail(`${p}: ${i.message}`);
}

const hex2 = (n: number): string => n.toString(16).padStart(2, '0');

/**
 * Checks the fabric sections of scenario object `o` (`source` names it in
 * messages) and expands them. With no `topology`, `switch` and `incast`
 * are errors (there is no switch to configure, no hosts to pick).
 */
export function expandFabric(o: Record<string, unknown>, source: string, fail: (msg: string) => never): FabricExpansion {
  const output = check(OutputSchema, o.output ?? {}, `${source}.output`, fail);
  const out: FabricExpansion = {
    topology: null,
    devices: null,
    links: null,
    qps: [],
    traffic: [],
    switches: [],
    output: { sampleIntervalNs: output.sampleInterval, plots: output.plots },
  };
  if (o.topology === undefined) {
    if (o.switch !== undefined) fail(`${source}.switch: needs a topology (there is no switch without one)`);
    if (o.incast !== undefined) fail(`${source}.incast: needs a topology (its hosts come from it)`);
    return out;
  }
  if (o.devices !== undefined) fail(`${source}.devices: not with topology (the topology makes the hosts)`);
  if (o.links !== undefined) fail(`${source}.links: not with topology (set links under topology.links by name)`);
  const t = check(TopologySchema, o.topology, `${source}.topology`, fail);
  if (t.hostCongestion !== undefined) {
    try {
      resolveCcParams(t.hostCongestion, `${source}.topology.hostCongestion`);
    } catch (e) {
      fail((e as Error).message);
    }
  }
  const topo = buildTopology(t);
  if (topo.hosts.length > 4096) fail(`${source}.topology: ${topo.hosts.length} hosts; at most 4096`);
  const sw = resolveSwitchConfig(check(SwitchSchema, o.switch ?? {}, `${source}.switch`, fail));
  const incast = o.incast === undefined ? null : check(IncastSchema, o.incast, `${source}.incast`, fail);

  // Who sends to whom (for host memory: each registers its buffers).
  let senders: string[] = [];
  if (incast) {
    if (!topo.hosts.includes(incast.receiver)) fail(`${source}.incast.receiver: no host ${incast.receiver} (hosts h0..h${topo.hosts.length - 1})`);
    const others = topo.hosts.filter((h) => h !== incast.receiver);
    if (typeof incast.senders === 'number') {
      if (incast.senders > others.length)
        fail(`${source}.incast.senders: ${incast.senders} senders, but the topology has ${others.length} hosts besides the receiver`);
      senders = others.slice(0, incast.senders);
    } else {
      for (const [i, s] of incast.senders.entries()) {
        if (!others.includes(s)) fail(`${source}.incast.senders[${i}]: ${JSON.stringify(s)} is not a host other than the receiver`);
      }
      if (new Set(incast.senders).size !== incast.senders.length) fail(`${source}.incast.senders: a sender is listed twice`);
      senders = [...incast.senders];
    }
    if (incast.mtu > t.hostMtu) fail(`${source}.incast.mtu: ${incast.mtu} is above topology.hostMtu ${t.hostMtu}`);
  }
  const need = new Map<string, number>();
  for (const s of senders) {
    need.set(s, (need.get(s) ?? 0) + incast!.size);
    need.set(incast!.receiver, (need.get(incast!.receiver) ?? 0) + incast!.size);
  }
  const mib = 1 << 20;
  const devices = topo.hosts.map((h, i) => ({
    name: h,
    // Queues and CQs take little; the registered buffers (and their guards) the rest.
    memory: t.hostMemory ?? `${Math.ceil((4 * mib + 1.25 * (need.get(h) ?? 0)) / mib)}MiB`,
    ...(t.hostCongestion !== undefined ? { congestion: { ...t.hostCongestion } } : {}),
    ports: [
      {
        mac: `02:00:00:00:${hex2(i >> 8)}:${hex2(i & 0xff)}`,
        ipv4: [`10.${(i >> 16) & 0xff}.${(i >> 8) & 0xff}.${(i & 0xff) + 1}`],
        ipv6: [`fd00::${(i + 1).toString(16)}`],
        mtu: t.hostMtu,
      },
    ],
  }));
  const names = new Set<string>();
  const links = topo.links.map((l) => {
    const name = `${l.a.split(':')[0]}-${l.b.split(':')[0]}`;
    names.add(name);
    const ov = t.links[name];
    return {
      name,
      a: l.a,
      b: l.b,
      linkRate: ov?.linkRate ?? t.linkRate,
      propagationDelay: ov?.delay ?? t.delay,
      mtu: ov?.mtu ?? t.mtu,
      ...((ov?.queueLimit ?? t.queueLimit) !== undefined ? { queueLimit: ov?.queueLimit ?? t.queueLimit } : {}),
      ...(ov?.faults !== undefined ? { faults: ov.faults } : {}),
    };
  });
  for (const k of Object.keys(t.links)) if (!names.has(k)) fail(`${source}.topology.links.${k}: no such link (links are named like ${links[0]!.name})`);
  const qps: Record<string, unknown>[] = [];
  const traffic: Record<string, unknown>[] = [];
  if (incast) {
    for (const s of senders) {
      const qp = `${s}-${incast.receiver}`;
      // DSCP = priority × 8 (the default DSCP → priority map is dscp >> 3); the NIC adds ECT.
      qps.push({
        name: qp,
        type: 'RC',
        a: s,
        b: incast.receiver,
        mtu: incast.mtu,
        sl: incast.priority,
        traffic_class: (incast.priority << 3) << 2,
        max_send_wr: Math.max(16, incast.count),
        cq_depth: Math.max(64, 2 * incast.count),
      });
      traffic.push({
        qp,
        from: 'a',
        op: incast.op,
        size: incast.size,
        count: incast.count,
        depth: Math.min(16, incast.count),
        startNs: incast.start,
        ...(incast.op === 'send' ? { recvDepth: Math.min(16, incast.count) } : {}),
      });
    }
  }
  const switches = topo.switches.map((s) => ({ name: s.name, ports: s.ports, config: sw }));
  return { ...out, topology: topo, devices, links, qps, traffic, switches };
}
