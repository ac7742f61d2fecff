/**
 * A campaign file (docs/faults.md, "Campaigns"): the knobs of the workload
 * generator. Every field is optional; what is left out comes from
 * DEFAULT_CAMPAIGN. `parseCampaign(json, source)` checks it and returns a
 * complete, frozen `Campaign`; a mistake is a `CampaignError` whose
 * message names the field: `campaign.json.faults.rate: 0.5 is outside [0, 0.25] ...`.
 */
import { readFileSync } from 'node:fs';
import { parseDurationNs, parseRate } from '../fabric/timing-params.js';
import { RnicError } from '../wire/errors.js';
import { DEFAULT_CONFIG, parseConfig } from '../runtime/config.js';
import { TRAFFIC_OPS, type TrafficOp } from '../scenario/scenario.js';
import type { ProfileSpec } from '../pipeline/profiles.js';

export class CampaignError extends RnicError<'CAMPAIGN_INVALID'> {
  constructor(message: string) {
    super('CAMPAIGN_INVALID', message);
    this.name = 'CampaignError';
  }
}

/** An inclusive integer range [min, max]. */
export type Range = readonly [number, number];

export const FAULT_KINDS = ['drop', 'corrupt', 'duplicate', 'reorder', 'delay'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface Campaign {
  readonly name: string;
  /** QPs per seed, by type: a count drawn from each range. */
  readonly qps: { readonly RC: Range; readonly UC: Range; readonly UD: Range; readonly XRC: Range };
  /** Chance that an RC QP also carries traffic from its b end (both directions on one QP). */
  readonly reverse: number;
  /** Work requests per traffic item. */
  readonly wrs: Range;
  /** Relative weights of the ops (each QP type uses the ones it has). */
  readonly ops: Readonly<Record<TrafficOp, number>>;
  /** Message sizes: `zero` of them are 0 bytes, the rest log-uniform in [1, max] (UD: at most the MTU). */
  readonly sizes: { readonly max: number; readonly zero: number };
  /** max_inline_data per QP, and the chance that a SEND or WRITE that fits it is posted inline. */
  readonly maxInline: Range;
  readonly inline: number;
  /** Chance that a WR is signaled (the runner still signals the last, and one per depth). */
  readonly signaled: number;
  /** First PSNs, each end of each QP, drawn from this range (default the whole 24-bit space). */
  readonly psn: Range;
  readonly mtus: readonly number[];
  /**
   * Source GID indices a QP draws from (the default hosts' GID table: 0, 1
   * RoCE v1, v2 over the link-local IPv6 address; 2, 3 over the IPv4 address;
   * 4, 5 over the IPv6 address).
   */
  readonly gids: readonly number[];
  readonly depth: Range;
  /** Receives kept posted (SEND, SEND_IMM, WRITE_IMM). */
  readonly recvDepth: Range;
  /** Local ACK timeout exponent, retry counts, RNR timer code, READ/atomic credits. */
  readonly timeout: Range;
  readonly retryCnt: Range;
  readonly rnrRetry: Range;
  readonly minRnrTimer: Range;
  readonly rdAtomic: Range;
  /** Chance that an item's receives are posted late, and how late (ns). */
  readonly lateRecv: { readonly probability: number; readonly delayNs: Range };
  /** The latest start of an item's first post (ns). */
  readonly startSpreadNs: number;
  readonly faults: {
    readonly kinds: readonly FaultKind[];
    /** How many of the kinds a seed uses (drawn without repetition; at most all of them). */
    readonly perSeed: Range;
    /** Each rule's probability, drawn uniformly in [min, max]. */
    readonly rate: readonly [number, number];
    readonly delayNs: Range;
    readonly reorderDepth: Range;
    readonly duplicateCopies: Range;
  };
  /** Virtual time limit of one seed (ns); the watchdog is the scenario default. */
  readonly durationNs: number;
  /**
   * The device profile of every seed (src/pipeline/profiles.ts). The default
   * is the IBTA's with retryCnt7Infinite, so that retry_cnt 7 retries for ever: at a
   * 10% loss rate a WR may legitimately exhaust seven retries, which would
   * hide real failures among correct RETRY_EXC_ERRs; retrying for ever, a
   * transport that stops making progress shows as a stall (the watchdog).
   */
  readonly profile: ProfileSpec;
  /**
   * With a finite retry budget, an RC QP that uses it up as its faults or late
   * receives explain passes (`expect: success-or-exhausted`, docs/scenarios.md);
   * false: every error completion is a failure (to hunt what made a QP give up).
   */
  readonly explainExhaustion: boolean;
  /**
   * The fabric of a seed: how many hosts, and whether they hang off one
   * switch (a star, docs/scenarios.md "Fabric") with PFC, ECN marking (the
   * hosts answer with CNPs and DCQCN) and QPs converging on one host. The
   * default, two hosts on one cable, draws nothing.
   */
  readonly topology: CampaignTopology;
}

export interface CampaignTopology {
  /** Hosts per seed; more than two always use a switch. */
  readonly hosts: Range;
  /** Chance that two hosts are joined through a switch rather than by one cable. */
  readonly switch: number;
  /** With a switch: the chance that PFC is on (the QPs' priority 3 lossless), and that ECN marking is. */
  readonly pfc: number;
  readonly ecn: number;
  /** With more than two hosts: the chance that every QP's `b` end is the same host (incast). */
  readonly converge: number;
  /**
   * With four hosts or more: the chance that they hang off a two-tier
   * leaf-spine (two to four leaves, one or two spines, every link at the
   * seed's rate, so the leaves' uplinks are oversubscribed; ECMP over the
   * spines) instead of one switch.
   */
  readonly leafSpine: number;
  /** The switch's shared pool (bytes; the buffer is this plus the ports' reserves and PFC headroom); ECN marks from 1/32 to 1/8 of it. */
  readonly buffer: Range;
  /** Every link's rate (bit/s), one of these per seed, and delay (ns). */
  readonly linkRates: readonly number[];
  readonly delayNs: Range;
  /** Chance that two hosts on one cable (no switch) are native InfiniBand ports instead of RoCE ones. */
  readonly ib: number;
}

export const DEFAULT_CAMPAIGN: Campaign = deepFreeze({
  name: 'default',
  qps: { RC: [2, 4], UC: [1, 1], UD: [1, 1], XRC: [0, 0] },
  reverse: 0.5,
  wrs: [4, 24],
  ops: { send: 2, send_imm: 1, write: 2, write_imm: 1, read: 2, cmp_swap: 1, fetch_add: 1 },
  sizes: { max: 12000, zero: 0.1 },
  maxInline: [0, 256],
  inline: 0.5,
  signaled: 0.5,
  psn: [0, 0xffffff],
  mtus: [256, 512, 1024, 2048, 4096],
  gids: [3],
  depth: [1, 16],
  recvDepth: [1, 16],
  timeout: [4, 10],
  retryCnt: [7, 7],
  rnrRetry: [7, 7],
  minRnrTimer: [1, 12],
  rdAtomic: [1, 16],
  lateRecv: { probability: 0.25, delayNs: [1000, 100_000] },
  startSpreadNs: 5000,
  faults: {
    kinds: [...FAULT_KINDS],
    perSeed: [1, 3],
    rate: [0.01, 0.1],
    delayNs: [500, 20_000],
    reorderDepth: [1, 4],
    duplicateCopies: [1, 2],
  },
  durationNs: 250_000_000,
  profile: { base: 'ibta', retryCnt7Infinite: true },
  explainExhaustion: true,
  topology: {
    hosts: [2, 2],
    switch: 0,
    pfc: 0,
    ecn: 0,
    converge: 0,
    leafSpine: 0,
    buffer: [262144, 262144],
    linkRates: [100_000_000_000],
    delayNs: [1000, 1000],
    ib: 0,
  },
} satisfies Campaign);

/** Entries in a default host's GID table: the link-local GID, then each address, each as RoCE v1 and v2. */
const GID_TABLE_SIZE = 2 * (1 + DEFAULT_CONFIG.devices[0]!.ports[0]!.ipv4.length + DEFAULT_CONFIG.devices[0]!.ports[0]!.ipv6.length);

// ---- checking -------------------------------------------------------------

function fail(path: string, msg: string): never {
  throw new CampaignError(`${path}: ${msg}`);
}

function bool(v: unknown, path: string, def: boolean): boolean {
  if (v === undefined) return def;
  if (typeof v !== 'boolean') fail(path, `expected true or false, got ${JSON.stringify(v)}`);
  return v;
}

function obj(v: unknown, path: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) fail(path, `expected an object, got ${JSON.stringify(v)}`);
  return v as Record<string, unknown>;
}

function onlyKeys(o: Record<string, unknown>, keys: readonly string[], path: string): void {
  for (const k of Object.keys(o)) if (!keys.includes(k)) fail(`${path}.${k}`, `unknown setting (known: ${keys.join(', ')})`);
}

function num(v: unknown, path: string, def: number, min: number, max: number, integer = false): number {
  if (v === undefined) return def;
  if (typeof v !== 'number' || !Number.isFinite(v) || (integer && !Number.isSafeInteger(v)))
    fail(path, `expected ${integer ? 'an integer' : 'a number'}, got ${JSON.stringify(v)}`);
  if (v < min || v > max) fail(path, `${v} is outside [${min}, ${max}]`);
  return v;
}

/** [min, max] or one number (both ends); durations allowed where `ns`. */
function range(v: unknown, path: string, def: Range, min: number, max: number, ns = false): Range {
  if (v === undefined) return def;
  const one = (x: unknown, p: string): number => {
    if (ns && typeof x === 'string') {
      try {
        x = parseDurationNs(x, p);
      } catch (e) {
        fail(p, (e as Error).message.replace(/^.*?: /, ''));
      }
    }
    return num(x, p, 0, min, max, true);
  };
  if (!Array.isArray(v)) {
    if (typeof v === 'number' || (ns && typeof v === 'string')) {
      const n = one(v, path);
      return [n, n];
    }
    fail(path, `expected [min, max] or a number, got ${JSON.stringify(v)}`);
  }
  if (v.length !== 2) fail(path, `expected [min, max], got ${JSON.stringify(v)}`);
  const a = one(v[0], `${path}[0]`);
  const b = one(v[1], `${path}[1]`);
  if (a > b) fail(path, `min ${a} is above max ${b}`);
  return [a, b];
}

/** A list of link rates, each bit/s or text ('25Gbps'), within what the simulator runs (1 Mb/s .. 1.6 Tb/s). */
function rates(v: unknown, path: string, def: readonly number[]): readonly number[] {
  if (v === undefined) return def;
  if (!Array.isArray(v) || v.length === 0) fail(path, `expected a list of link rates, got ${JSON.stringify(v)}`);
  return v.map((x, i) => {
    const q = `${path}[${i}]`;
    let r = 0;
    try {
      r = parseRate(x, q);
    } catch (e) {
      fail(q, (e as Error).message.replace(/^.*?: /, ''));
    }
    if (r < 1e6 || r > 1.6e12) fail(q, `${r} bit/s is outside [1Mbps, 1.6Tbps]`);
    return r;
  });
}

function prob(v: unknown, path: string, def: number): number {
  return num(v, path, def, 0, 1);
}

const TOP = [
  'name',
  'description',
  'qps',
  'reverse',
  'wrs',
  'ops',
  'sizes',
  'maxInline',
  'inline',
  'signaled',
  'psn',
  'mtus',
  'gids',
  'depth',
  'recvDepth',
  'timeout',
  'retryCnt',
  'rnrRetry',
  'minRnrTimer',
  'rdAtomic',
  'lateRecv',
  'startSpreadNs',
  'faults',
  'duration',
  'profile',
  'explainExhaustion',
  'topology',
] as const;
const TOPOLOGY_KEYS = ['hosts', 'switch', 'pfc', 'ecn', 'converge', 'leafSpine', 'buffer', 'linkRates', 'delayNs', 'ib'] as const;
const FAULT_KEYS = ['kinds', 'perSeed', 'rate', 'delayNs', 'reorderDepth', 'duplicateCopies'] as const;
/** Every key of a campaign file, by where (docs/faults.md documents each; a test checks). */
export const CAMPAIGN_KEYS = Object.freeze({
  top: TOP,
  qps: ['RC', 'UC', 'UD', 'XRC'],
  sizes: ['max', 'zero'],
  lateRecv: ['probability', 'delayNs'],
  faults: FAULT_KEYS,
  topology: TOPOLOGY_KEYS,
});

/** Checks a campaign (parsed JSON) over the defaults. */
export function parseCampaign(raw: unknown, source = 'campaign'): Campaign {
  const o = obj(raw, source);
  onlyKeys(o, TOP, source);
  const d = DEFAULT_CAMPAIGN;
  const p = (k: string) => `${source}.${k}`;
  let name = d.name;
  if (o.name !== undefined) {
    if (typeof o.name !== 'string' || !/^[A-Za-z0-9_.-]+$/.test(o.name))
      fail(p('name'), `expected a name of letters, digits, '_', '.', '-', got ${JSON.stringify(o.name)}`);
    name = o.name;
  }
  if (o.description !== undefined && typeof o.description !== 'string') fail(p('description'), 'expected text');
  const q = o.qps === undefined ? {} : obj(o.qps, p('qps'));
  onlyKeys(q, CAMPAIGN_KEYS.qps, p('qps'));
  const qps = {
    RC: range(q.RC, p('qps.RC'), d.qps.RC, 0, 16),
    UC: range(q.UC, p('qps.UC'), d.qps.UC, 0, 16),
    UD: range(q.UD, p('qps.UD'), d.qps.UD, 0, 16),
    XRC: range(q.XRC, p('qps.XRC'), d.qps.XRC, 0, 16),
  };
  if (qps.RC[1] + qps.UC[1] + qps.UD[1] + qps.XRC[1] === 0) fail(p('qps'), 'no QP at all');
  let ops = d.ops;
  if (o.ops !== undefined) {
    const oo = obj(o.ops, p('ops'));
    onlyKeys(oo, TRAFFIC_OPS, p('ops'));
    ops = Object.fromEntries(TRAFFIC_OPS.map((k) => [k, num(oo[k], p(`ops.${k}`), 0, 0, 1e6)])) as Record<TrafficOp, number>;
    if (!Object.values(ops).some((w) => w > 0)) fail(p('ops'), 'every weight is 0');
  }
  const so = o.sizes === undefined ? {} : obj(o.sizes, p('sizes'));
  onlyKeys(so, ['max', 'zero'], p('sizes'));
  const sizes = { max: num(so.max, p('sizes.max'), d.sizes.max, 0, 1 << 20, true), zero: prob(so.zero, p('sizes.zero'), d.sizes.zero) };
  let mtus = d.mtus;
  if (o.mtus !== undefined) {
    if (!Array.isArray(o.mtus) || o.mtus.length === 0) fail(p('mtus'), `expected a list of MTUs, got ${JSON.stringify(o.mtus)}`);
    mtus = o.mtus.map((m, i) => {
      if (![256, 512, 1024, 2048, 4096].includes(m as number)) fail(p(`mtus[${i}]`), `expected 256, 512, 1024, 2048 or 4096, got ${JSON.stringify(m)}`);
      return m as number;
    });
  }
  let gids = d.gids;
  if (o.gids !== undefined) {
    if (!Array.isArray(o.gids) || o.gids.length === 0) fail(p('gids'), `expected a list of GID indices, got ${JSON.stringify(o.gids)}`);
    gids = o.gids.map((g, i) => {
      if (!Number.isInteger(g) || (g as number) < 0 || (g as number) >= GID_TABLE_SIZE)
        fail(p(`gids[${i}]`), `expected a GID index 0..${GID_TABLE_SIZE - 1} (the default hosts' GID table), got ${JSON.stringify(g)}`);
      return g as number;
    });
  }
  const lo = o.lateRecv === undefined ? {} : obj(o.lateRecv, p('lateRecv'));
  onlyKeys(lo, ['probability', 'delayNs'], p('lateRecv'));
  const fo = o.faults === undefined ? {} : obj(o.faults, p('faults'));
  onlyKeys(fo, FAULT_KEYS, p('faults'));
  let kinds = d.faults.kinds;
  if (fo.kinds !== undefined) {
    if (!Array.isArray(fo.kinds)) fail(p('faults.kinds'), `expected a list of ${FAULT_KINDS.join(', ')}, got ${JSON.stringify(fo.kinds)}`);
    kinds = fo.kinds.map((k, i) => {
      if (!FAULT_KINDS.includes(k as FaultKind)) fail(p(`faults.kinds[${i}]`), `expected one of ${FAULT_KINDS.join(', ')}, got ${JSON.stringify(k)}`);
      return k as FaultKind;
    });
  }
  let rate = d.faults.rate;
  if (fo.rate !== undefined) {
    const r = Array.isArray(fo.rate) ? fo.rate : [fo.rate, fo.rate];
    if (r.length !== 2) fail(p('faults.rate'), `expected [min, max] or a number, got ${JSON.stringify(fo.rate)}`);
    rate = [num(r[0], p('faults.rate[0]'), 0, 0, 1), num(r[1], p('faults.rate[1]'), 0, 0, 1)];
    if (rate[0] > rate[1]) fail(p('faults.rate'), `min ${rate[0]} is above max ${rate[1]}`);
  }
  // How many kinds a seed uses, at most all of them.
  const ps = range(fo.perSeed, p('faults.perSeed'), d.faults.perSeed, 0, 16);
  const perSeed: Range = [Math.min(ps[0], kinds.length), Math.min(ps[1], kinds.length)];
  let durationNs = d.durationNs;
  if (o.duration !== undefined) {
    try {
      durationNs = parseDurationNs(o.duration, p('duration'));
    } catch (e) {
      fail(p('duration'), (e as Error).message.replace(/^.*?: /, ''));
    }
    if (durationNs <= 0) fail(p('duration'), 'must be more than 0');
  }
  let profile = d.profile;
  if (o.profile !== undefined) {
    // The model configuration's own checker names the field.
    try {
      profile = parseConfig({ workers: 0, devices: DEFAULT_CONFIG.devices.map((d) => ({ name: d.name, ports: d.ports })), profile: o.profile }, source)
        .devices[0]!.profile!;
    } catch (e) {
      throw new CampaignError((e as Error).message);
    }
  }
  const to = o.topology === undefined ? {} : obj(o.topology, p('topology'));
  onlyKeys(to, TOPOLOGY_KEYS, p('topology'));
  const dt = d.topology;
  const topology: CampaignTopology = {
    // A star of up to 16 hosts: the scenario's switch has a port each.
    hosts: range(to.hosts, p('topology.hosts'), dt.hosts, 2, 16),
    switch: prob(to.switch, p('topology.switch'), dt.switch),
    pfc: prob(to.pfc, p('topology.pfc'), dt.pfc),
    ecn: prob(to.ecn, p('topology.ecn'), dt.ecn),
    converge: prob(to.converge, p('topology.converge'), dt.converge),
    leafSpine: prob(to.leafSpine, p('topology.leafSpine'), dt.leafSpine),
    // Room for a few 4 KiB-MTU frames per port at the least.
    buffer: range(to.buffer, p('topology.buffer'), dt.buffer, 65536, 1 << 30),
    linkRates: rates(to.linkRates, p('topology.linkRates'), dt.linkRates),
    delayNs: range(to.delayNs, p('topology.delayNs'), dt.delayNs, 0, 1e9, true),
    ib: prob(to.ib, p('topology.ib'), dt.ib),
  };
  const c: Campaign = {
    name,
    qps,
    reverse: prob(o.reverse, p('reverse'), d.reverse),
    wrs: range(o.wrs, p('wrs'), d.wrs, 1, 10_000),
    ops,
    sizes,
    maxInline: range(o.maxInline, p('maxInline'), d.maxInline, 0, 400),
    inline: prob(o.inline, p('inline'), d.inline),
    signaled: prob(o.signaled, p('signaled'), d.signaled),
    psn: range(o.psn, p('psn'), d.psn, 0, 0xffffff),
    mtus,
    gids,
    depth: range(o.depth, p('depth'), d.depth, 1, 256),
    recvDepth: range(o.recvDepth, p('recvDepth'), d.recvDepth, 1, 256),
    timeout: range(o.timeout, p('timeout'), d.timeout, 1, 31),
    retryCnt: range(o.retryCnt, p('retryCnt'), d.retryCnt, 0, 7),
    rnrRetry: range(o.rnrRetry, p('rnrRetry'), d.rnrRetry, 0, 7),
    minRnrTimer: range(o.minRnrTimer, p('minRnrTimer'), d.minRnrTimer, 0, 31),
    rdAtomic: range(o.rdAtomic, p('rdAtomic'), d.rdAtomic, 1, 16),
    lateRecv: {
      probability: prob(lo.probability, p('lateRecv.probability'), d.lateRecv.probability),
      delayNs: range(lo.delayNs, p('lateRecv.delayNs'), d.lateRecv.delayNs, 0, 1e12, true),
    },
    startSpreadNs: range(o.startSpreadNs, p('startSpreadNs'), [d.startSpreadNs, d.startSpreadNs], 0, 1e12, true)[1],
    faults: {
      kinds,
      perSeed,
      rate,
      // A delay rule needs at least 1 ns (the scenario's fault checker refuses 0).
      delayNs: range(fo.delayNs, p('faults.delayNs'), d.faults.delayNs, 1, 1e12, true),
      reorderDepth: range(fo.reorderDepth, p('faults.reorderDepth'), d.faults.reorderDepth, 1, 4096),
      duplicateCopies: range(fo.duplicateCopies, p('faults.duplicateCopies'), d.faults.duplicateCopies, 1, 64),
    },
    durationNs,
    profile,
    explainExhaustion: bool(o.explainExhaustion, p('explainExhaustion'), d.explainExhaustion),
    topology,
  };
  return deepFreeze(c);
}

/** Reads and checks a campaign file. */
export function loadCampaign(file: string): Campaign {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new CampaignError(`${file}: cannot read it (${(e as Error).message})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new CampaignError(`${file}: not valid JSON (${(e as Error).message})`);
  }
  return parseCampaign(json, file);
}

/** The campaign as a campaign file (every field, plain JSON). */
export function campaignJson(c: Campaign): Record<string, unknown> {
  const { durationNs, ...rest } = c;
  const out = { ...JSON.parse(JSON.stringify(rest)), duration: durationNs };
  // `topology.ib` came after the campaign files: left out at its default 0, they print as they were.
  if (c.topology.ib === 0) delete out.topology.ib;
  return out;
}

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

/** A campaign file as text: two-space JSON with short lists on one line. */
export function formatCampaign(c: Campaign): string {
  return JSON.stringify(campaignJson(c), null, 2).replace(/\[\s*([^[\]{}]*?)\s*\]/g, (_, inner: string) => `[${inner.split(/,\s*/).join(', ')}]`) + '\n';
}
