/**
 * Scenario files (docs/scenarios.md): a whole simulated experiment in one
 * JSON file — the hosts (devices, in the model configuration's format),
 * the links between them (timing per link, faults), the queue pairs with
 * their attributes, the traffic, the duration and the seed.
 *
 * `parseScenario(json, source)` checks everything and returns a resolved,
 * frozen `Scenario`: durations in ns, rates in bit/s, defaults filled in,
 * fault rules resolved. Every mistake is a `ScenarioError`
 * (`SCENARIO_INVALID`) whose message starts with the path of the value:
 *
 *   scenario.json.qps[0].mtu: expected 256, 512, 1024, 2048 or 4096, got 1500
 *   scenario.json.links[0].faults: rule 1 (delayNs): a delay rule needs delayNs
 *
 * The resolved scenario is plain JSON data: it is what `rnic sim` writes
 * as the run's effective configuration.
 */
import { readFileSync } from 'node:fs';
import { DeviceError } from '../device/errors.js';
import { ParamError } from '../params/params.js';
import { bool, firstIssue, schemaRef, int, list, numberOrText, oneOf, paramsObject, parsed, shown, strictObject, text } from '../params/schema.js';
import { z } from 'zod';
import { FaultError, resolveFaultRules, type ResolvedFaultRule } from '../fabric/faults.js';
import { resolveSimLinkParams, SIM_LINK_PARAMS } from '../fabric/link.js';
import { parseDurationNs, parseRate, resolveTimingParams, TIMING_PARAMS, type TimingParams } from '../fabric/timing-params.js';
import { RnicError } from '../wire/errors.js';
import { ConfigError, DEFAULT_CONFIG, DeviceSchema, ProfileSchema, resolveDevices, type DeviceConfig } from '../runtime/config.js';
import type { ProfileSpec } from '../pipeline/profiles.js';
import { resolveSimRuntimeParams, SIM_RUNTIME_PARAMS, type SimRuntimeParams } from '../runtime/sim/sim-params.js';
import { expandFabric, type OutputOptions, type ScenarioSwitch } from './fabric-schema.js';

export class ScenarioError extends RnicError<'SCENARIO_INVALID'> {
  constructor(message: string) {
    super('SCENARIO_INVALID', message);
    this.name = 'ScenarioError';
  }
}

export type QpType = 'RC' | 'UC' | 'UD' | 'XRC';

/** Types with the reliable transport's acknowledgements, retries and RNR (an XRC pair is RC's transport to an SRQ). */
export function isReliable(t: QpType): boolean {
  return t === 'RC' || t === 'XRC';
}
export type TrafficOp = 'write' | 'write_imm' | 'send' | 'send_imm' | 'read' | 'fetch_add' | 'cmp_swap';
export const TRAFFIC_OPS: readonly TrafficOp[] = ['write', 'write_imm', 'send', 'send_imm', 'read', 'fetch_add', 'cmp_swap'];

/** Ops that consume a receive at the responder. */
export function consumesRecv(op: TrafficOp): boolean {
  return op === 'send' || op === 'send_imm' || op === 'write_imm';
}

export function isAtomic(op: TrafficOp): boolean {
  return op === 'fetch_add' || op === 'cmp_swap';
}

/** One work request of a mixed traffic item (`wrs`). */
export interface ScenarioWr {
  readonly op: TrafficOp;
  /** Bytes (atomics: 8). */
  readonly size: number;
  /** Posted with IBV_SEND_INLINE. */
  readonly inline: boolean;
  /** IBV_SEND_SIGNALED (the runner also signals the last WR, and one in every `depth`, see docs/scenarios.md). */
  readonly signaled: boolean;
}

export interface ScenarioLink {
  readonly name: string;
  /** 'rnic0:1' */
  readonly a: string;
  readonly b: string;
  /** bit/s */
  readonly linkRate: number;
  /** ns */
  readonly propagationDelay: number;
  readonly queueLimit: number;
  /** Largest frame a switch forwards from this link (bytes, no FCS); null: the simulator's default. */
  readonly mtu: number | null;
  readonly faults: readonly ResolvedFaultRule[];
}

export interface ScenarioQp {
  readonly name: string;
  readonly type: QpType;
  /** Device names of the two ends, and their ports. */
  readonly a: string;
  readonly aPort: number;
  readonly b: string;
  readonly bPort: number;
  readonly gid_index: number;
  /** InfiniBand: false for an LRH-only AV (absent: the GRH is carried). */
  readonly grh?: boolean;
  /** Service level and IP traffic class of the address vector each end uses (priority: docs/fabric.md). */
  readonly sl: number;
  readonly traffic_class: number;
  /** The GRH hop limit of that address vector (the IP TTL, unless the device profile fixes it). */
  readonly hop_limit: number;
  /** Path MTU in bytes. */
  readonly mtu: number;
  readonly timeout: number;
  readonly retry_cnt: number;
  readonly rnr_retry: number;
  readonly min_rnr_timer: number;
  readonly max_rd_atomic: number;
  readonly max_dest_rd_atomic: number;
  /** First PSN each end sends with (the other end's rq_psn). */
  readonly psn_a: number;
  readonly psn_b: number;
  readonly max_send_wr: number;
  readonly max_recv_wr: number;
  readonly max_inline_data: number;
  readonly qkey: number;
  readonly cq_depth: number;
}

export interface ScenarioTraffic {
  readonly qp: string;
  /** The requester end ('a' or 'b'). */
  readonly from: 'a' | 'b';
  /** 'mixed' when `wrs` lists the work requests one by one. */
  readonly op: TrafficOp | 'mixed';
  /** Bytes per work request (atomics: 8); with `wrs`, the largest. */
  readonly size: number;
  readonly count: number;
  /** Work requests outstanding at most. */
  readonly depth: number;
  /** Every n-th work request is signaled (and always the last). */
  readonly signalEvery: number;
  /** Virtual time of the first post, ns. */
  readonly startNs: number;
  /** SEND: receives kept posted at the responder, and when they are first posted (ns). */
  readonly recvDepth: number;
  readonly recvStartNs: number;
  /** Post with IBV_SEND_INLINE (size must fit max_inline_data). */
  readonly inline: boolean;
  /**
   * 'success': every WR must succeed (default); 'success-or-exhausted': the
   * same, or the QP runs out of its retry budget in a way the run explains
   * (exhaustion.ts); 'error': the stream must end in an error completion; 'any'.
   */
  readonly expect: 'success' | 'success-or-exhausted' | 'error' | 'any';
  /** The work requests one by one (mixed ops, sizes, inline, signaling), or null: `count` × `op` of `size`. */
  readonly wrs: readonly ScenarioWr[] | null;
}

export interface Scenario {
  readonly name: string;
  readonly source: string;
  readonly seed: number | string;
  readonly durationNs: number;
  /** Per-QP stall limit, ns; null: the default rule (docs/scenarios.md). */
  readonly watchdogNs: number | null;
  readonly timing: TimingParams;
  readonly sim: SimRuntimeParams;
  /** Each with its profile: its own, else the scenario's `profile`. */
  readonly devices: readonly DeviceConfig[];
  readonly links: readonly ScenarioLink[];
  /** Ports captured ('rnic0:1'); the first one is `capture.pcap`. */
  readonly capture: readonly string[];
  readonly qps: readonly ScenarioQp[];
  readonly traffic: readonly ScenarioTraffic[];
  /** Switches of the fabric (from `topology`), none without one. */
  readonly switches: readonly ScenarioSwitch[];
  /** Time-series sampling and plots of `rnic sim`. */
  readonly output: OutputOptions;
}

// ---- the file's shape, described once (schemas/scenario.schema.json and docs/scenarios.md come from it) ----

function fail(path: string, msg: string): never {
  throw new ScenarioError(`${path}: ${msg}`);
}

/**
 * Runs a checker from another schema (timing, sim runtime, fault rules) and
 * turns its error into a ScenarioError. Those messages already start with
 * our path, except fault rules, which name the rule: `prefix` goes in front
 * of those.
 */
function rethrow<T>(fn: () => T, prefix = 'faults'): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof FaultError) throw new ScenarioError(`${prefix}: ${e.message}`);
    if (e instanceof DeviceError || e instanceof ParamError || e instanceof ConfigError) throw new ScenarioError(e.message);
    throw e;
  }
}

const MTUS = [256, 512, 1024, 2048, 4096] as const;
const ENDPOINT = /^([A-Za-z0-9_.-]+)(?::(\d+))?$/;

const duration = () => parsed(numberOrText(), parseDurationNs);
const positiveDuration = () =>
  parsed(numberOrText(), (raw, path) => {
    const ns = parseDurationNs(raw, path);
    if (ns <= 0) throw new ParamError(`${path}: must be more than 0`);
    return ns;
  });
const endpointRef = () => text().regex(ENDPOINT, { error: (iss) => `${shown(iss.input)} is not DEVICE or DEVICE:PORT` });
const faultRules = () => list(z.unknown(), 'a list of fault rules');
const keyList = (o: object) =>
  Object.keys(o)
    .map((k) => `\`${k}\``)
    .join(', ');
const described = <T extends z.ZodType>(schema: T, description: string, defaultText?: string): T =>
  schema.meta(defaultText === undefined ? { description } : { description, defaultText });

const LinkSchema = strictObject({
  name: described(text().optional(), 'names its events, its fault streams (`<name>.faults`) and its counters', '`l<i>`'),
  a: described(endpointRef(), 'one port it joins, `"DEVICE"` (port 1) or `"DEVICE:PORT"`; `a->b` in a fault rule is from `a`'),
  b: described(endpointRef(), 'the other port it joins'),
  linkRate: described(parsed(numberOrText(), parseRate).optional(), "this link's rate", '`timing.linkRate`'),
  propagationDelay: described(duration().optional(), "this link's delay", '`timing.propagationDelay`'),
  queueLimit: described(
    parsed(numberOrText(), SIM_LINK_PARAMS.queueLimit.parse).prefault(SIM_LINK_PARAMS.queueLimit.default as number),
    SIM_LINK_PARAMS.queueLimit.doc,
  ),
  mtu: described(int(256, 16384).optional(), 'the largest frame (bytes, no FCS) a switch port on this link sizes its PFC headroom by', '9018'),
  faults: described(faultRules().optional(), 'fault rules on this link (docs/faults.md)', 'none'),
});

const QpSchema = strictObject({
  name: described(text().optional(), 'what traffic refers to', '`q<i>`'),
  type: described(
    oneOf(['RC', 'UC', 'UD', 'XRC'], 'RC, UC, UD or XRC').default('RC'),
    '`RC`, `UC`, `UD` or `XRC` (an XRC send QP at `a`, an XRC receive QP with an XRC SRQ of its own at `b`: traffic from `a` only)',
  ),
  a: described(endpointRef().optional(), 'one end, `"DEVICE"` or `"DEVICE:PORT"`', 'the first device'),
  b: described(endpointRef().optional(), 'the other end', 'the second device (the first if there is one)'),
  gid_index: described(
    int(0, 255).optional(),
    "source GID index (3: RoCE v2 over the port's first IPv4 address; 0 on an InfiniBand port: fe80::/64 + the port GUID)",
    '3 (Ethernet), 0 (InfiniBand)',
  ),
  grh: described(
    bool().optional(),
    "InfiniBand ports: carry the GRH (LNH 3); false: the LRH alone (LNH 2), routed by the peer's LID. RoCE always carries it",
    'true',
  ),
  sl: described(int(0, 15).default(0), "the address vector's service level: the 802.1p priority the NIC uses (PCP when tagged)"),
  traffic_class: described(
    int(0, 255).default(0),
    "the GRH traffic class: DSCP in the upper 6 bits (a switch's priority is `dscp >> 3` by default), ECN in the lower 2",
  ),
  hop_limit: described(
    int(0, 255).default(64),
    "the GRH hop limit, sent as the IP TTL / hop limit (rdma-core's pingpongs use 1; the `rxe` profile sends the route's 64 whatever this says)",
  ),
  mtu: described(oneOf(MTUS, '256, 512, 1024, 2048 or 4096').default(1024), "path MTU in bytes, 256..4096, at most the ports'"),
  timeout: described(int(0, 31).default(14), 'local ACK timeout, 4.096 µs × 2^timeout (0: none)'),
  retry_cnt: described(int(0, 7).default(7), 'transport retry count'),
  rnr_retry: described(int(0, 7).default(7), 'RNR retry count (7: infinite)'),
  min_rnr_timer: described(int(0, 31).default(12), 'the RNR timer code the responder sends in its RNR NAKs (IBTA table: 4 = 40 µs, 12 = 640 µs)'),
  max_rd_atomic: described(int(0, 255).default(16), 'READ/atomic credits as requester'),
  max_dest_rd_atomic: described(int(0, 255).default(16), 'READ/atomic credits as responder'),
  psn_a: described(int(0, 0xffffff).default(0x1000), 'first PSN end `a` sends with', '`0x1000`'),
  psn_b: described(int(0, 0xffffff).default(0x2000), 'first PSN end `b` sends with', '`0x2000`'),
  max_send_wr: described(int(1, 16384).default(256), '`ibv_qp_cap.max_send_wr`'),
  max_recv_wr: described(int(1, 16384).default(256), '`ibv_qp_cap.max_recv_wr`'),
  max_inline_data: described(int(0, 1024).default(64), '`ibv_qp_cap.max_inline_data`'),
  qkey: described(int(0, 0x7fffffff).default(0x11111111), 'UD Q_Key', '`0x11111111`'),
  cq_depth: described(int(1, 65536).default(1024), 'entries of each CQ (each end has a send CQ and a receive CQ)'),
});

const opField = () => oneOf(TRAFFIC_OPS as readonly TrafficOp[] as [TrafficOp, ...TrafficOp[]], `one of ${TRAFFIC_OPS.join(', ')}`);

const WrSchema = strictObject({
  op: described(opField(), "as `op` above, allowed on the QP's type"),
  size: described(int(0, 1 << 24).optional(), 'bytes (0 allowed; atomics: 8; UD: at most the MTU)', 'required (atomics: 8)'),
  inline: described(bool().default(false), '`IBV_SEND_INLINE` (a SEND or WRITE of at most `max_inline_data` bytes)'),
  signaled: described(bool().default(true), '`IBV_SEND_SIGNALED`'),
});

const TrafficSchema = strictObject({
  qp: described(text().optional(), 'the QP', 'the only one'),
  from: described(oneOf(['a', 'b'], "'a' or 'b'").default('a'), 'the requester end, `a` or `b`'),
  op: described(opField().optional(), '`write`, `write_imm`, `send`, `send_imm`, `read`, `fetch_add`, `cmp_swap` (UD: sends; UC: sends and writes)', '`write`'),
  size: described(int(0, 1 << 24).optional(), 'bytes per WR (atomics: 8)', '4096'),
  count: described(int(1, 100_000_000).optional(), 'WRs in all', '1'),
  depth: described(int(1, 16384).optional(), 'WRs outstanding at most (posted, not completed); at most `max_send_wr`', 'min(16, `max_send_wr`)'),
  signalEvery: described(int(1, 16384).optional(), 'every n-th WR is signaled, and the last; at most `depth`', '1'),
  startNs: described(duration().prefault(0), 'virtual time of the first post'),
  recvDepth: described(
    int(0, 16384).optional(),
    '`send`, `send_imm`, `write_imm`: receives kept posted at the responder; at most `max_recv_wr`',
    'max(`depth`, 16)',
  ),
  recvStartNs: described(duration().prefault(0), 'when the responder first posts its receives (before then, a SEND meets an RNR NAK)'),
  inline: described(bool().optional(), 'post with `IBV_SEND_INLINE` (SEND/WRITE of at most `max_inline_data` bytes)', 'false'),
  expect: described(
    oneOf(['success', 'success-or-exhausted', 'error', 'any'], "'success', 'success-or-exhausted', 'error' or 'any'").default('success'),
    '`success`: every WR must succeed; `success-or-exhausted`: the same, or (RC) the QP uses up its retry budget as the run explains, see [Exhausted retries](#exhausted-retries); `error`: the stream must end in an error completion; `any`',
  ),
  wrs: described(
    list(WrSchema)
      .min(1, { error: 'expected at least one work request' })
      .max(1_000_000, { error: (iss) => `${(iss.input as unknown[]).length} work requests; at most 1000000` })
      .optional(),
    'the work requests one by one, instead of `op`, `size`, `count`, `inline` and `signalEvery` (see below)',
    '',
  ),
});

const seedError = (iss: { input?: unknown }) => `expected a non-negative integer or a non-empty string, got ${shown(iss.input)}`;

/** A scenario file (docs/scenarios.md). */
export const ScenarioSchema = strictObject({
  $schema: schemaRef('scenario.schema.json'),
  name: described(text().optional(), 'shown in the summary; names the output folder', 'the file name'),
  description: described(text().optional(), 'free text', ''),
  seed: described(
    z
      .union([z.int({ error: seedError }).min(0, { error: seedError }), z.string({ error: seedError }).min(1, { error: seedError })], { error: seedError })
      .default(0),
    "the run's one seed: a non-negative integer or a string",
  ),
  duration: described(positiveDuration().prefault('1s'), 'virtual time after which the run stops, whatever is outstanding'),
  watchdog: described(
    positiveDuration().optional(),
    'a QP with outstanding WRs and no completion for this long is reported and given up on',
    'see [The watchdog](#the-watchdog)',
  ),
  timing: described(paramsObject(TIMING_PARAMS).default({}), `timing model overrides (${keyList(TIMING_PARAMS)}; docs/simulator.md)`, 'the defaults'),
  sim: described(paramsObject(SIM_RUNTIME_PARAMS).default({}), `sim runtime settings (${keyList(SIM_RUNTIME_PARAMS)}; docs/simulator.md)`, 'the defaults'),
  devices: described(
    list(DeviceSchema).optional(),
    "the hosts' devices, in the model configuration's format (`name`, `ports[]` with `mac`, `ipv4`, `ipv6`, `mtu`; `memory`, `caps`; docs/configuration.md)",
    '`rnic0` and `rnic1` of the default configuration',
  ),
  profile: ProfileSchema.meta({
    description:
      'the device profile of every device that names none (`devices[].profile`): `"ibta"` or `"rxe"`, or `{"base": …, choice: value}`; docs/compare.md',
    defaultText: '`ibta`',
  }),
  links: described(list(LinkSchema).optional(), 'the cables, see below', 'with exactly two devices: one link between their ports 1'),
  faults: described(
    faultRules().optional(),
    'fault rules (docs/faults.md) for the one link, or with a `topology` for every link (each drawing from its own stream); with several hand-written links put them in `links[i].faults`',
    'none',
  ),
  capture: described(list(endpointRef()).optional(), 'ports to capture, `"DEVICE:PORT"`; the first is `capture.pcap`', "the first link's `a` port"),
  qps: described(list(QpSchema).default([]), 'queue pairs, see below', 'none'),
  traffic: described(list(TrafficSchema).default([]), 'what the QPs send, see below', 'none'),
  // The fabric sections: checked by their own zod schemas (./fabric-schema.ts), which expand them first.
  topology: described(z.unknown().optional(), 'a switched fabric: hosts, switches and links made for you, see [Fabric](#fabric)', 'none'),
  switch: described(z.unknown().optional(), "every switch's buffer, PFC, ECN and scheduling, see [Fabric](#fabric)", 'the defaults'),
  incast: described(z.unknown().optional(), 'N senders, one receiver, one QP and one WRITE (or SEND) stream each, see [Fabric](#fabric)', 'none'),
  output: described(z.unknown().optional(), 'time-series sampling and plots of a fabric run, see [Fabric](#fabric)', 'the defaults'),
}).meta({ title: 'rnic-model scenario (rnic sim)' });

type RawQp = z.output<typeof QpSchema>;
type RawTraffic = z.output<typeof TrafficSchema>;

/** Every key a scenario file may use, by where (docs/scenarios.md documents each; a test checks). */
export const SCENARIO_KEYS = Object.freeze({
  top: Object.keys(ScenarioSchema.shape),
  links: Object.keys(LinkSchema.shape),
  qps: Object.keys(QpSchema.shape),
  traffic: Object.keys(TrafficSchema.shape),
  wrs: Object.keys(WrSchema.shape),
});

/** Traffic keys that `wrs` replaces. */
const UNIFORM_KEYS = ['op', 'size', 'count', 'signalEvery', 'inline'] as const;

// ---- what the shape cannot say: references between entries, limits that depend on another field ----

/** `v` (when given) within [min, max], in the words of int(). */
function within(v: number | undefined, def: number, min: number, max: number, path: string): number {
  if (v === undefined) return def;
  if (v < min || v > max) fail(path, `${v} is outside [${min}, ${max}]`);
  return v;
}

/** Checks one op against its QP; `path` names the op's place. */
function checkOp(qp: ScenarioQp, op: TrafficOp, path: string): void {
  if (qp.type === 'UD' && op !== 'send' && op !== 'send_imm') fail(path, `a UD QP only sends, not ${op}`);
  if (qp.type === 'UC' && (op === 'read' || isAtomic(op))) fail(path, `a UC QP has no ${op}`);
}

/** 'rnic0' or 'rnic0:2' → device and port, checked against the devices. */
function endpoint(s: string, path: string, devices: readonly DeviceConfig[]): { dev: string; port: number } {
  const m = ENDPOINT.exec(s)!;
  const d = devices.find((x) => x.name === m[1]);
  if (!d) fail(path, `no device named ${m[1]} (devices: ${devices.map((x) => x.name).join(', ')})`);
  const port = m[2] === undefined ? 1 : Number(m[2]);
  if (port < 1 || port > d.ports.length) fail(path, `${d.name} has no port ${port}`);
  return { dev: d.name, port };
}

/** 'sw0:3' when sw0 is a switch of the topology (ports 1..n), else null. */
function switchEnd(s: string, path: string, switches: ReadonlyMap<string, number>): { dev: string; port: number } | null {
  const m = /^([A-Za-z0-9_.-]+):(\d+)$/.exec(s);
  const n = m ? switches.get(m[1]!) : undefined;
  if (n === undefined) return null;
  const port = Number(m![2]);
  if (port < 1 || port > n) fail(path, `switch ${m![1]} has no port ${port} (1..${n})`);
  return { dev: m![1]!, port };
}

function resolveQp(q: RawQp, i: number, path: string, devices: readonly DeviceConfig[]): ScenarioQp {
  const name = q.name ?? `q${i}`;
  const first = devices[0]?.name ?? '';
  const a = endpoint(q.a ?? first, `${path}.a`, devices);
  const b = endpoint(q.b ?? devices[1]?.name ?? first, `${path}.b`, devices);
  const portMtu = Math.min(devices.find((d) => d.name === a.dev)!.ports[a.port - 1]!.mtu, devices.find((d) => d.name === b.dev)!.ports[b.port - 1]!.mtu);
  if (q.mtu > portMtu) fail(`${path}.mtu`, `${q.mtu} is above the ports' active MTU ${portMtu}`);
  return {
    name,
    type: q.type,
    a: a.dev,
    aPort: a.port,
    b: b.dev,
    bPort: b.port,
    gid_index: q.gid_index ?? (devices.find((d) => d.name === a.dev)!.ports[a.port - 1]!.ib ? 0 : 3),
    ...(q.grh === undefined ? {} : { grh: q.grh }),
    sl: q.sl,
    traffic_class: q.traffic_class,
    hop_limit: q.hop_limit,
    mtu: q.mtu,
    timeout: q.timeout,
    retry_cnt: q.retry_cnt,
    rnr_retry: q.rnr_retry,
    min_rnr_timer: q.min_rnr_timer,
    max_rd_atomic: q.max_rd_atomic,
    max_dest_rd_atomic: q.max_dest_rd_atomic,
    psn_a: q.psn_a,
    psn_b: q.psn_b,
    max_send_wr: q.max_send_wr,
    max_recv_wr: q.max_recv_wr,
    max_inline_data: q.max_inline_data,
    qkey: q.qkey,
    cq_depth: q.cq_depth,
  };
}

function resolveWrs(wrs: readonly z.output<typeof WrSchema>[], qp: ScenarioQp, path: string): ScenarioWr[] {
  return wrs.map((w, j): ScenarioWr => {
    const wp = `${path}[${j}]`;
    checkOp(qp, w.op, `${wp}.op`);
    if (w.size === undefined && !isAtomic(w.op)) fail(`${wp}.size`, 'required (bytes)');
    const size = isAtomic(w.op) ? within(w.size, 8, 8, 8, `${wp}.size`) : w.size!;
    if (qp.type === 'UD' && size > qp.mtu) fail(`${wp}.size`, `a UD message must fit the MTU (${qp.mtu})`);
    if (w.inline && (size > qp.max_inline_data || isAtomic(w.op) || w.op === 'read'))
      fail(`${wp}.inline`, `inline needs a SEND or WRITE of at most max_inline_data (${qp.max_inline_data}) bytes`);
    return { op: w.op, size, inline: w.inline, signaled: w.signaled };
  });
}

function resolveTraffic(t: RawTraffic, path: string, qps: readonly ScenarioQp[]): ScenarioTraffic {
  const qpName = t.qp ?? (qps.length === 1 ? qps[0]!.name : undefined);
  if (qpName === undefined) fail(`${path}.qp`, `expected a non-empty string, got nothing (qps: ${qps.map((q) => q.name).join(', ') || 'none'})`);
  const qp = qps.find((q) => q.name === qpName);
  if (!qp) fail(`${path}.qp`, `no QP named ${qpName} (qps: ${qps.map((q) => q.name).join(', ') || 'none'})`);
  if (qp.type === 'XRC' && t.from !== 'a') fail(`${path}.from`, `an XRC pair sends from a (its XRC send QP) only; ${qp.name}'s b end is an XRC receive QP`);
  const depth = within(t.depth, Math.min(16, qp.max_send_wr), 1, qp.max_send_wr, `${path}.depth`);
  /** recvDepth: by default enough receives for the WRs that consume one. */
  const recvDepth = (needsRecv: boolean, why: string) => {
    const n = within(t.recvDepth, needsRecv ? Math.min(qp.max_recv_wr, Math.max(depth, 16)) : 0, 0, qp.max_recv_wr, `${path}.recvDepth`);
    if (needsRecv && n === 0) fail(`${path}.recvDepth`, why);
    return n;
  };
  if (t.wrs !== undefined) {
    for (const k of UNIFORM_KEYS) if (t[k] !== undefined) fail(`${path}.${k}`, 'not with wrs (each entry of wrs has its own op, size, inline and signaled)');
    const wrs = resolveWrs(t.wrs, qp, `${path}.wrs`);
    const rd = recvDepth(
      wrs.some((w) => consumesRecv(w.op)),
      'SEND and WRITE with immediate need receives posted at the responder',
    );
    const size = wrs.reduce((m, w) => Math.max(m, w.size), 0);
    return {
      qp: qpName,
      from: t.from,
      op: 'mixed',
      size,
      count: wrs.length,
      depth,
      signalEvery: 1,
      startNs: t.startNs,
      recvDepth: rd,
      recvStartNs: t.recvStartNs,
      inline: false,
      expect: t.expect,
      wrs,
    };
  }
  const op = t.op ?? 'write';
  checkOp(qp, op, `${path}.op`);
  const size = isAtomic(op) ? within(t.size, 8, 8, 8, `${path}.size`) : (t.size ?? 4096);
  if (qp.type === 'UD' && size > qp.mtu) fail(`${path}.size`, `a UD message must fit the MTU (${qp.mtu})`);
  const signalEvery = within(t.signalEvery, 1, 1, depth, `${path}.signalEvery`);
  const inline = t.inline ?? false;
  if (inline && (size > qp.max_inline_data || isAtomic(op) || op === 'read'))
    fail(`${path}.inline`, `inline needs a SEND or WRITE of at most max_inline_data (${qp.max_inline_data}) bytes`);
  const rd = recvDepth(consumesRecv(op), `${op} needs receives posted at the responder`);
  return {
    qp: qpName,
    from: t.from,
    op,
    size,
    count: t.count ?? 1,
    depth,
    signalEvery,
    startNs: t.startNs,
    recvDepth: rd,
    recvStartNs: t.recvStartNs,
    inline,
    expect: t.expect,
    wrs: null,
  };
}

// ---- the parser ---------------------------------------------------------------

/** Checks a scenario (parsed JSON) and resolves it; `source` names it in messages (the file name). */
export function parseScenario(raw: unknown, source = 'scenario'): Scenario {
  // The fabric sections become devices, links, QPs and traffic, checked below like hand-written ones.
  const given = typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? (raw as Record<string, unknown>) : null;
  const fabric =
    given === null
      ? null
      : expandFabric(given, source, (m) => {
          throw new ScenarioError(m);
        });
  const expanded =
    fabric === null || fabric.topology === null
      ? raw
      : {
          ...given,
          devices: fabric.devices,
          links: fabric.links,
          qps: [...(Array.isArray(given!.qps) ? given!.qps : []), ...fabric.qps],
          traffic: [...(Array.isArray(given!.traffic) ? given!.traffic : []), ...fabric.traffic],
        };
  const r = ScenarioSchema.safeParse(expanded);
  if (!r.success) throw new ScenarioError(firstIssue(r.error, source));
  const o = r.data;
  const switchPorts = new Map((fabric?.switches ?? []).map((sw) => [sw.name, sw.ports]));
  const name = o.name ?? source.replace(/^.*[\\/]/, '').replace(/\.json$/i, '');
  const timing = rethrow(() => resolveTimingParams(o.timing, `${source}.timing`));
  const sim = rethrow(() => resolveSimRuntimeParams(o.sim, `${source}.sim`));

  // Devices: the model configuration's own checks, with our paths.
  const devices =
    o.devices === undefined
      ? DEFAULT_CONFIG.devices.map((d) => ({ ...d, caps: {}, ...(o.profile === undefined ? {} : { profile: o.profile }) }))
      : rethrow(() => resolveDevices(o.devices!, source, o.profile));

  // Links.
  const rawLinks =
    o.links ??
    (devices.length === 2 ? [{ a: `${devices[0]!.name}:1`, b: `${devices[1]!.name}:1`, queueLimit: SIM_LINK_PARAMS.queueLimit.default as number }] : []);
  // With a topology, top-level faults go on every link (each draws from its own stream).
  const everyLink = fabric?.topology != null;
  if (o.faults !== undefined && rawLinks.length !== 1 && !everyLink)
    fail(`${source}.faults`, `top-level faults apply to the one link; there are ${rawLinks.length}: put them in links[i].faults`);
  const used = new Set<string>();
  const names = new Set<string>();
  const links = rawLinks.map((l: z.output<typeof LinkSchema>, i): ScenarioLink => {
    const path = `${source}.links[${i}]`;
    const lname = l.name ?? `l${i}`;
    if (names.has(lname)) fail(`${path}.name`, `link ${lname} is defined twice`);
    names.add(lname);
    const ends = (['a', 'b'] as const).map((k) => {
      const e = switchEnd(l[k], `${path}.${k}`, switchPorts) ?? endpoint(l[k], `${path}.${k}`, devices);
      const ref = `${e.dev}:${e.port}`;
      if (used.has(ref)) fail(`${path}.${k}`, `port ${ref} already has a link`);
      used.add(ref);
      return ref;
    });
    const rawFaults = l.faults ?? (i === 0 || everyLink ? o.faults : undefined) ?? [];
    const faultPath = l.faults !== undefined ? `${path}.faults` : `${source}.faults`;
    const faults = rethrow(() => resolveFaultRules(rawFaults), faultPath);
    const linkRate = l.linkRate ?? timing.linkRate;
    const propagationDelay = l.propagationDelay ?? timing.propagationDelay;
    // The simulator's own limits (a rate of 4096 bit/s is parsed fine, and refused only when the run starts).
    rethrow(() => resolveSimLinkParams({ linkRate, propagationDelay }, path));
    return {
      name: lname,
      a: ends[0]!,
      b: ends[1]!,
      linkRate,
      propagationDelay,
      queueLimit: l.queueLimit,
      mtu: l.mtu ?? null,
      faults,
    };
  });

  // Captures.
  const capture =
    o.capture === undefined
      ? links.length > 0
        ? [links[0]!.a]
        : []
      : o.capture.map((c, i) => {
          const e = endpoint(c, `${source}.capture[${i}]`, devices);
          return `${e.dev}:${e.port}`;
        });

  // Queue pairs.
  const qpNames = new Set<string>();
  const qps = o.qps.map((q, i): ScenarioQp => {
    const path = `${source}.qps[${i}]`;
    const qp = resolveQp(q, i, path, devices);
    if (qpNames.has(qp.name)) fail(`${path}.name`, `QP ${qp.name} is defined twice`);
    qpNames.add(qp.name);
    return qp;
  });

  // Traffic.
  const traffic = o.traffic.map((t, i) => resolveTraffic(t, `${source}.traffic[${i}]`, qps));
  for (const [i, q] of qps.entries()) {
    const users = traffic.filter((t) => t.qp === q.name);
    if (users.length > 1 && q.type !== 'UD') {
      const dirs = new Set(users.map((u) => u.from));
      if (dirs.size !== users.length) fail(`${source}.qps[${i}]`, `more than one traffic item sends from the same end of ${q.name}: give each its own QP`);
    }
  }
  const switches = fabric?.switches ?? [];
  const output = fabric?.output ?? { sampleIntervalNs: 10_000, plots: true };
  return deepFreeze({
    name,
    source,
    seed: o.seed,
    durationNs: o.duration,
    watchdogNs: o.watchdog ?? null,
    timing,
    sim,
    devices,
    links,
    capture,
    qps,
    traffic,
    switches,
    output,
  });
}

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

/** Reads and checks a scenario file. */
export function loadScenario(file: string): Scenario {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ScenarioError(`${file}: cannot read it (${(e as Error).message})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new ScenarioError(`${file}: not valid JSON (${(e as Error).message})`);
  }
  return parseScenario(json, file);
}

/** The scenario with another seed (`rnic sim --seed`). */
export function withSeed(s: Scenario, seed: number | string): Scenario {
  return deepFreeze({ ...s, seed });
}

/** `s` with every device on profile `profile` (rnic sim --profile, rnic compare). */
export function withProfile(s: Scenario, profile: ProfileSpec): Scenario {
  return deepFreeze({ ...s, devices: s.devices.map((d) => ({ ...d, profile })) });
}
