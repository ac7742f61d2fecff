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
import { FaultError, resolveFaultRules, type ResolvedFaultRule } from '../fabric/faults.js';
import { SIM_LINK_PARAMS } from '../fabric/link.js';
import { parseDurationNs, parseRate, resolveTimingParams, type TimingParams } from '../fabric/timing-params.js';
import { RnicError } from '../wire/errors.js';
import { ConfigError, DEFAULT_CONFIG, parseConfig, type DeviceConfig } from '../runtime/config.js';
import { resolveSimRuntimeParams, type SimRuntimeParams } from '../runtime/sim/sim-params.js';
import { expandFabric, FABRIC_KEYS, type OutputOptions, type ScenarioSwitch } from './fabric-schema.js';

export class ScenarioError extends RnicError<'SCENARIO_INVALID'> {
  constructor(message: string) {
    super('SCENARIO_INVALID', message);
    this.name = 'ScenarioError';
  }
}

export type QpType = 'RC' | 'UC' | 'UD';
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
  /** Service level and IP traffic class of the address vector each end uses (priority: docs/fabric.md). */
  readonly sl: number;
  readonly traffic_class: number;
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
  /** 'success': every WR must succeed (default); 'error': the stream must end in an error completion; 'any'. */
  readonly expect: 'success' | 'error' | 'any';
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
  readonly devices: readonly DeviceConfig[];
  readonly quirks: Readonly<Record<string, boolean>>;
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

// ---- checking helpers -------------------------------------------------------

function fail(path: string, msg: string): never {
  throw new ScenarioError(`${path}: ${msg}`);
}

function obj(v: unknown, path: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) fail(path, `expected an object, got ${JSON.stringify(v)}`);
  return v as Record<string, unknown>;
}

function onlyKeys(o: Record<string, unknown>, keys: readonly string[], path: string): void {
  for (const k of Object.keys(o)) if (!keys.includes(k)) fail(`${path}.${k}`, `unknown setting (known: ${keys.join(', ')})`);
}

function list(v: unknown, path: string): unknown[] {
  if (!Array.isArray(v)) fail(path, `expected a list, got ${JSON.stringify(v)}`);
  return v;
}

function str(v: unknown, path: string, def?: string): string {
  if (v === undefined && def !== undefined) return def;
  if (typeof v !== 'string' || v.length === 0) fail(path, `expected a non-empty string, got ${JSON.stringify(v)}`);
  return v;
}

function int(v: unknown, path: string, def: number, min: number, max: number): number {
  if (v === undefined) return def;
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) fail(path, `expected an integer, got ${JSON.stringify(v)}`);
  if (v < min || v > max) fail(path, `${v} is outside [${min}, ${max}]`);
  return v;
}

function bool(v: unknown, path: string, def: boolean): boolean {
  if (v === undefined) return def;
  if (typeof v !== 'boolean') fail(path, `expected true or false, got ${JSON.stringify(v)}`);
  return v;
}

/** A duration (ns number or text such as '10us'), re-thrown with our path. */
function duration(v: unknown, path: string, def: number): number {
  if (v === undefined) return def;
  return rethrow(() => parseDurationNs(v, path));
}

/**
 * Runs a checker from another schema (timing, model configuration, fault
 * rules) and turns its error into a ScenarioError. Those messages already
 * start with our path, except fault rules, which name the rule: `prefix`
 * goes in front of those.
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

const MTUS = [256, 512, 1024, 2048, 4096];
const QP_KEYS = [
  'name', 'type', 'a', 'b', 'gid_index', 'sl', 'traffic_class', 'mtu', 'timeout', 'retry_cnt', 'rnr_retry', 'min_rnr_timer', 'max_rd_atomic',
  'max_dest_rd_atomic', 'psn_a', 'psn_b', 'max_send_wr', 'max_recv_wr', 'max_inline_data', 'qkey', 'cq_depth',
] as const;
const TRAFFIC_KEYS = ['qp', 'from', 'op', 'size', 'count', 'depth', 'signalEvery', 'startNs', 'recvDepth', 'recvStartNs', 'inline', 'expect', 'wrs'] as const;
const WR_KEYS = ['op', 'size', 'inline', 'signaled'] as const;
/** Traffic keys that `wrs` replaces. */
const UNIFORM_KEYS = ['op', 'size', 'count', 'signalEvery', 'inline'] as const;
const LINK_KEYS = ['name', 'a', 'b', 'linkRate', 'propagationDelay', 'queueLimit', 'mtu', 'faults'] as const;
const TOP_KEYS = ['name', 'description', 'seed', 'duration', 'watchdog', 'timing', 'sim', 'devices', 'quirks', 'links', 'faults', 'capture', 'qps', 'traffic', ...FABRIC_KEYS] as const;

/** Every key a scenario file may use, by where (docs/scenarios.md documents each; a test checks). */
export const SCENARIO_KEYS = Object.freeze({ top: TOP_KEYS, links: LINK_KEYS, qps: QP_KEYS, traffic: TRAFFIC_KEYS, wrs: WR_KEYS });

/** Checks one op (and its size and inline flag) against its QP; `path` names the op's place. */
function checkOp(qp: ScenarioQp, op: TrafficOp, path: string): void {
  if (qp.type === 'UD' && op !== 'send' && op !== 'send_imm') fail(path, `a UD QP only sends, not ${op}`);
  if (qp.type === 'UC' && (op === 'read' || isAtomic(op))) fail(path, `a UC QP has no ${op}`);
}

function parseWrs(raw: unknown, qp: ScenarioQp, path: string): ScenarioWr[] {
  const items = list(raw, path);
  if (items.length === 0) fail(path, 'expected at least one work request');
  if (items.length > 1_000_000) fail(path, `${items.length} work requests; at most 1000000`);
  return items.map((w, j): ScenarioWr => {
    const wp = `${path}[${j}]`;
    const wo = obj(w, wp);
    onlyKeys(wo, WR_KEYS, wp);
    const op = str(wo.op, `${wp}.op`) as TrafficOp;
    if (!TRAFFIC_OPS.includes(op)) fail(`${wp}.op`, `expected one of ${TRAFFIC_OPS.join(', ')}, got ${JSON.stringify(op)}`);
    checkOp(qp, op, `${wp}.op`);
    const size = isAtomic(op) ? int(wo.size, `${wp}.size`, 8, 8, 8) : int(wo.size, `${wp}.size`, 0, 0, 1 << 24);
    if (wo.size === undefined && !isAtomic(op)) fail(`${wp}.size`, 'required (bytes)');
    if (qp.type === 'UD' && size > qp.mtu) fail(`${wp}.size`, `a UD message must fit the MTU (${qp.mtu})`);
    const inline = bool(wo.inline, `${wp}.inline`, false);
    if (inline && (size > qp.max_inline_data || isAtomic(op) || op === 'read')) fail(`${wp}.inline`, `inline needs a SEND or WRITE of at most max_inline_data (${qp.max_inline_data}) bytes`);
    return { op, size, inline, signaled: bool(wo.signaled, `${wp}.signaled`, true) };
  });
}

/** 'rnic0' or 'rnic0:2' → device and port, checked against the devices. */
function endpoint(v: unknown, path: string, devices: readonly DeviceConfig[]): { dev: string; port: number } {
  const s = str(v, path);
  const m = /^([A-Za-z0-9_.-]+)(?::(\d+))?$/.exec(s);
  if (!m) fail(path, `${JSON.stringify(s)} is not DEVICE or DEVICE:PORT`);
  const d = devices.find((x) => x.name === m[1]);
  if (!d) fail(path, `no device named ${m[1]} (devices: ${devices.map((x) => x.name).join(', ')})`);
  const port = m[2] === undefined ? 1 : Number(m[2]);
  if (port < 1 || port > d.ports.length) fail(path, `${d.name} has no port ${port}`);
  return { dev: d.name, port };
}

/** 'sw0:3' when sw0 is a switch of the topology (ports 1..n), else null. */
function switchEnd(v: unknown, path: string, switches: ReadonlyMap<string, number>): { dev: string; port: number } | null {
  if (typeof v !== 'string') return null;
  const m = /^([A-Za-z0-9_.-]+):(\d+)$/.exec(v);
  const n = m ? switches.get(m[1]!) : undefined;
  if (n === undefined) return null;
  const port = Number(m![2]);
  if (port < 1 || port > n) fail(path, `switch ${m![1]} has no port ${port} (1..${n})`);
  return { dev: m![1]!, port };
}

// ---- the parser ---------------------------------------------------------------

/** Checks a scenario (parsed JSON) and resolves it; `source` names it in messages (the file name). */
export function parseScenario(raw: unknown, source = 'scenario'): Scenario {
  const given = obj(raw, source);
  onlyKeys(given, TOP_KEYS, source);
  // The fabric sections become devices, links, QPs and traffic, checked below like hand-written ones.
  const fabric = expandFabric(given, source, (m) => {
    throw new ScenarioError(m);
  });
  const o: Record<string, unknown> = fabric.topology === null ? given : {
    ...given,
    devices: fabric.devices,
    links: fabric.links,
    qps: [...(given.qps === undefined ? [] : list(given.qps, `${source}.qps`)), ...fabric.qps],
    traffic: [...(given.traffic === undefined ? [] : list(given.traffic, `${source}.traffic`)), ...fabric.traffic],
  };
  const switchPorts = new Map(fabric.switches.map((s) => [s.name, s.ports]));
  const name = o.name === undefined ? source.replace(/^.*[\\/]/, '').replace(/\.json$/i, '') : str(o.name, `${source}.name`);
  if (o.description !== undefined) str(o.description, `${source}.description`);
  let seed: number | string = 0;
  if (o.seed !== undefined) {
    if (typeof o.seed === 'string' && o.seed.length > 0) seed = o.seed;
    else seed = int(o.seed, `${source}.seed`, 0, 0, Number.MAX_SAFE_INTEGER);
  }
  const durationNs = duration(o.duration, `${source}.duration`, 1_000_000_000);
  if (durationNs <= 0) fail(`${source}.duration`, 'must be more than 0');
  const watchdogNs = o.watchdog === undefined ? null : duration(o.watchdog, `${source}.watchdog`, 0);
  if (watchdogNs !== null && watchdogNs <= 0) fail(`${source}.watchdog`, 'must be more than 0');
  const timing = rethrow(() => resolveTimingParams(o.timing === undefined ? {} : obj(o.timing, `${source}.timing`), `${source}.timing`));
  const sim = rethrow(() => resolveSimRuntimeParams(o.sim === undefined ? {} : obj(o.sim, `${source}.sim`), `${source}.sim`));

  // Devices: the model configuration's own checker, with our paths.
  const rawDevices = o.devices === undefined ? DEFAULT_CONFIG.devices.map((d) => ({ name: d.name, ports: d.ports })) : list(o.devices, `${source}.devices`);
  const model = rethrow(() => parseConfig({ workers: 0, devices: rawDevices, quirks: o.quirks ?? {} }, source));
  const devices = model.devices;

  // Links.
  const rawLinks = o.links === undefined
    ? (devices.length === 2 ? [{ a: `${devices[0]!.name}:1`, b: `${devices[1]!.name}:1` }] : [])
    : list(o.links, `${source}.links`);
  if (o.faults !== undefined && rawLinks.length !== 1) fail(`${source}.faults`, `top-level faults apply to the one link; there are ${rawLinks.length}: put them in links[i].faults`);
  const used = new Set<string>();
  const names = new Set<string>();
  const links = rawLinks.map((l, i): ScenarioLink => {
    const path = `${source}.links[${i}]`;
    const lo = obj(l, path);
    onlyKeys(lo, LINK_KEYS, path);
    const lname = str(lo.name, `${path}.name`, `l${i}`);
    if (names.has(lname)) fail(`${path}.name`, `link ${lname} is defined twice`);
    names.add(lname);
    const ends = (['a', 'b'] as const).map((k) => {
      const e = switchEnd(lo[k], `${path}.${k}`, switchPorts) ?? endpoint(lo[k], `${path}.${k}`, devices);
      const ref = `${e.dev}:${e.port}`;
      if (used.has(ref)) fail(`${path}.${k}`, `port ${ref} already has a link`);
      used.add(ref);
      return ref;
    });
    const linkRate = lo.linkRate === undefined ? timing.linkRate : rethrow(() => parseRate(lo.linkRate, `${path}.linkRate`));
    const propagationDelay = duration(lo.propagationDelay, `${path}.propagationDelay`, timing.propagationDelay);
    const queueLimit = lo.queueLimit === undefined ? 4096 : rethrow(() => SIM_LINK_PARAMS.queueLimit.parse(lo.queueLimit, `${path}.queueLimit`));
    const mtu = lo.mtu === undefined ? null : int(lo.mtu, `${path}.mtu`, 0, 256, 16384);
    const rawFaults = lo.faults ?? (i === 0 ? o.faults : undefined) ?? [];
    const faultPath = lo.faults !== undefined ? `${path}.faults` : `${source}.faults`;
    const faults = rethrow(() => resolveFaultRules(rawFaults), faultPath);
    return { name: lname, a: ends[0]!, b: ends[1]!, linkRate, propagationDelay, queueLimit, mtu, faults };
  });

  // Captures.
  const capture = o.capture === undefined
    ? (links.length > 0 ? [links[0]!.a] : [])
    : list(o.capture, `${source}.capture`).map((c, i) => {
        const e = endpoint(c, `${source}.capture[${i}]`, devices);
        return `${e.dev}:${e.port}`;
      });

  // Queue pairs.
  const qpNames = new Set<string>();
  const qps = (o.qps === undefined ? [] : list(o.qps, `${source}.qps`)).map((q, i): ScenarioQp => {
    const path = `${source}.qps[${i}]`;
    const qo = obj(q, path);
    onlyKeys(qo, QP_KEYS, path);
    const qname = str(qo.name, `${path}.name`, `q${i}`);
    if (qpNames.has(qname)) fail(`${path}.name`, `QP ${qname} is defined twice`);
    qpNames.add(qname);
    const type = str(qo.type, `${path}.type`, 'RC');
    if (type !== 'RC' && type !== 'UC' && type !== 'UD') fail(`${path}.type`, `expected RC, UC or UD, got ${JSON.stringify(type)}`);
    const a = endpoint(qo.a ?? devices[0]?.name, `${path}.a`, devices);
    const b = endpoint(qo.b ?? devices[1]?.name ?? devices[0]?.name, `${path}.b`, devices);
    const mtu = qo.mtu === undefined ? 1024 : qo.mtu;
    if (!MTUS.includes(mtu as number)) fail(`${path}.mtu`, `expected 256, 512, 1024, 2048 or 4096, got ${JSON.stringify(mtu)}`);
    const portMtu = Math.min(devices.find((d) => d.name === a.dev)!.ports[a.port - 1]!.mtu, devices.find((d) => d.name === b.dev)!.ports[b.port - 1]!.mtu);
    if ((mtu as number) > portMtu) fail(`${path}.mtu`, `${mtu} is above the ports' active MTU ${portMtu}`);
    const maxSend = int(qo.max_send_wr, `${path}.max_send_wr`, 256, 1, 16384);
    return {
      name: qname,
      type,
      a: a.dev,
      aPort: a.port,
      b: b.dev,
      bPort: b.port,
      gid_index: int(qo.gid_index, `${path}.gid_index`, 3, 0, 255),
      sl: int(qo.sl, `${path}.sl`, 0, 0, 15),
      traffic_class: int(qo.traffic_class, `${path}.traffic_class`, 0, 0, 255),
      mtu: mtu as number,
      timeout: int(qo.timeout, `${path}.timeout`, 14, 0, 31),
      retry_cnt: int(qo.retry_cnt, `${path}.retry_cnt`, 7, 0, 7),
      rnr_retry: int(qo.rnr_retry, `${path}.rnr_retry`, 7, 0, 7),
      min_rnr_timer: int(qo.min_rnr_timer, `${path}.min_rnr_timer`, 12, 0, 31),
      max_rd_atomic: int(qo.max_rd_atomic, `${path}.max_rd_atomic`, 16, 0, 255),
      max_dest_rd_atomic: int(qo.max_dest_rd_atomic, `${path}.max_dest_rd_atomic`, 16, 0, 255),
      psn_a: int(qo.psn_a, `${path}.psn_a`, 0x1000, 0, 0xffffff),
      psn_b: int(qo.psn_b, `${path}.psn_b`, 0x2000, 0, 0xffffff),
      max_send_wr: maxSend,
      max_recv_wr: int(qo.max_recv_wr, `${path}.max_recv_wr`, 256, 1, 16384),
      max_inline_data: int(qo.max_inline_data, `${path}.max_inline_data`, 64, 0, 1024),
      qkey: int(qo.qkey, `${path}.qkey`, 0x11111111, 0, 0x7fffffff),
      cq_depth: int(qo.cq_depth, `${path}.cq_depth`, 1024, 1, 65536),
    };
  });

  // Traffic.
  const traffic = (o.traffic === undefined ? [] : list(o.traffic, `${source}.traffic`)).map((t, i): ScenarioTraffic => {
    const path = `${source}.traffic[${i}]`;
    const to = obj(t, path);
    onlyKeys(to, TRAFFIC_KEYS, path);
    const qpName = str(to.qp, `${path}.qp`, qps.length === 1 ? qps[0]!.name : undefined);
    const qp = qps.find((q) => q.name === qpName);
    if (!qp) fail(`${path}.qp`, `no QP named ${qpName} (qps: ${qps.map((q) => q.name).join(', ') || 'none'})`);
    const from = str(to.from, `${path}.from`, 'a');
    if (from !== 'a' && from !== 'b') fail(`${path}.from`, `expected 'a' or 'b', got ${JSON.stringify(from)}`);
    if (to.wrs !== undefined) return mixedTraffic(to, qp, qpName, from, path);
    const op = str(to.op, `${path}.op`, 'write') as TrafficOp;
    if (!TRAFFIC_OPS.includes(op)) fail(`${path}.op`, `expected one of ${TRAFFIC_OPS.join(', ')}, got ${JSON.stringify(op)}`);
    const atomic = op === 'fetch_add' || op === 'cmp_swap';
    checkOp(qp, op, `${path}.op`);
    const size = atomic ? int(to.size, `${path}.size`, 8, 8, 8) : int(to.size, `${path}.size`, 4096, 0, 1 << 24);
    if (qp.type === 'UD' && size > qp.mtu) fail(`${path}.size`, `a UD message must fit the MTU (${qp.mtu})`);
    const depth = int(to.depth, `${path}.depth`, Math.min(16, qp.max_send_wr), 1, qp.max_send_wr);
    const signalEvery = int(to.signalEvery, `${path}.signalEvery`, 1, 1, depth);
    const inline = bool(to.inline, `${path}.inline`, false);
    if (inline && (size > qp.max_inline_data || atomic || op === 'read')) fail(`${path}.inline`, `inline needs a SEND or WRITE of at most max_inline_data (${qp.max_inline_data}) bytes`);
    const needsRecv = op === 'send' || op === 'send_imm' || op === 'write_imm';
    const recvDepth = int(to.recvDepth, `${path}.recvDepth`, needsRecv ? Math.min(qp.max_recv_wr, Math.max(depth, 16)) : 0, 0, qp.max_recv_wr);
    if (needsRecv && recvDepth === 0) fail(`${path}.recvDepth`, `${op} needs receives posted at the responder`);
    const expect = str(to.expect, `${path}.expect`, 'success');
    if (expect !== 'success' && expect !== 'error' && expect !== 'any') fail(`${path}.expect`, `expected 'success', 'error' or 'any', got ${JSON.stringify(expect)}`);
    return {
      qp: qpName,
      from,
      op,
      size,
      count: int(to.count, `${path}.count`, 1, 1, 100_000_000),
      depth,
      signalEvery,
      startNs: duration(to.startNs, `${path}.startNs`, 0),
      recvDepth,
      recvStartNs: duration(to.recvStartNs, `${path}.recvStartNs`, 0),
      inline,
      expect,
      wrs: null,
    };
  });
  for (const [i, q] of qps.entries()) {
    const users = traffic.filter((t) => t.qp === q.name);
    if (users.length > 1 && q.type !== 'UD') {
      const dirs = new Set(users.map((u) => u.from));
      if (dirs.size !== users.length) fail(`${source}.qps[${i}]`, `more than one traffic item sends from the same end of ${q.name}: give each its own QP`);
    }
  }
  return deepFreeze({ name, source, seed, durationNs, watchdogNs, timing, sim, devices, quirks: model.quirks, links, capture, qps, traffic, switches: fabric.switches, output: fabric.output });
}

/** A traffic item that lists its work requests (`wrs`). */
function mixedTraffic(to: Record<string, unknown>, qp: ScenarioQp, qpName: string, from: 'a' | 'b', path: string): ScenarioTraffic {
  for (const k of UNIFORM_KEYS) if (to[k] !== undefined) fail(`${path}.${k}`, 'not with wrs (each entry of wrs has its own op, size, inline and signaled)');
  const wrs = parseWrs(to.wrs, qp, `${path}.wrs`);
  const depth = int(to.depth, `${path}.depth`, Math.min(16, qp.max_send_wr), 1, qp.max_send_wr);
  const needsRecv = wrs.some((w) => consumesRecv(w.op));
  const recvDepth = int(to.recvDepth, `${path}.recvDepth`, needsRecv ? Math.min(qp.max_recv_wr, Math.max(depth, 16)) : 0, 0, qp.max_recv_wr);
  if (needsRecv && recvDepth === 0) fail(`${path}.recvDepth`, 'SEND and WRITE with immediate need receives posted at the responder');
  const expect = str(to.expect, `${path}.expect`, 'success');
  if (expect !== 'success' && expect !== 'error' && expect !== 'any') fail(`${path}.expect`, `expected 'success', 'error' or 'any', got ${JSON.stringify(expect)}`);
  return {
    qp: qpName,
    from,
    op: 'mixed',
    size: wrs.reduce((m, w) => Math.max(m, w.size), 0),
    count: wrs.length,
    depth,
    signalEvery: 1,
    startNs: duration(to.startNs, `${path}.startNs`, 0),
    recvDepth,
    recvStartNs: duration(to.recvStartNs, `${path}.recvStartNs`, 0),
    inline: false,
    expect,
    wrs,
  };
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
