/**
 * Fault rules as plain data: what a scenario file, the `rnic --fault` flag
 * and the API all hand to a `FaultInjector`. `resolveFaultRule` checks one
 * rule and returns it normalised (defaults filled in, durations in integer
 * nanoseconds, opcode names canonical): still plain JSON-able data, and
 * resolving it again gives the same object.
 */
import { RnicError } from '../../wire/errors.js';
import { OPCODES, type OpKind } from '../../wire/opcodes.js';

/** What can go wrong declaring faults. */
export type FaultErrorCode =
  /** A rule (object or `--fault` text) is malformed; `ruleIndex` and `field` say where. */
  | 'FAULT_BAD_RULE'
  /** An injector option (seed, random source) is malformed. */
  | 'FAULT_BAD_CONFIG';

export class FaultError extends RnicError<FaultErrorCode> {
  /** Position of the rule in its list (or of the `--fault` flag), -1 when none. */
  readonly ruleIndex: number;
  /** The field at fault, as a path ('match.psn', 'delayNs'), or '' for the rule as a whole. */
  readonly field: string;
  /** The message without the rule and field it names. */
  readonly detail: string;
  constructor(code: FaultErrorCode, message: string, ruleIndex = -1, field = '', detail = message) {
    super(code, message);
    this.name = 'FaultError';
    this.ruleIndex = ruleIndex;
    this.field = field;
    this.detail = detail;
  }
}

export const FAULT_ACTIONS = ['drop', 'corrupt', 'duplicate', 'reorder', 'delay', 'link-down', 'ecn-mark'] as const;
export type FaultAction = (typeof FAULT_ACTIONS)[number];

/** The way a frame travels along a link: from end a to end b, or back. */
export type FaultDirection = 'a->b' | 'b->a';
export type FaultDirectionSpec = FaultDirection | 'both';
export const FAULT_DIRECTIONS: readonly FaultDirectionSpec[] = ['a->b', 'b->a', 'both'];

/** Where `corrupt` flips its bit. Every choice leaves a frame whose ICRC no longer matches. */
export type CorruptTarget = 'any' | 'header' | 'payload' | 'icrc';
export const CORRUPT_TARGETS: readonly CorruptTarget[] = ['any', 'header', 'payload', 'icrc'];

/** A duration: integer nanoseconds, or text with a unit ('500ns', '1.5us', '2ms', '1s'). */
export type Duration = number | string;

export interface FaultMatch {
  /**
   * Which packets: an opcode byte (7), an ib_pack.h name ('RC_RDMA_WRITE_MIDDLE',
   * with or without 'IB_OPCODE_'), an opcode kind ('send', 'write', 'read-request',
   * 'read-response', 'ack', 'atomic', 'atomic-ack', 'flush', 'atomic-write', 'cnp'),
   * or 'any' (every frame, non-RoCE ones such as ARP and ND included).
   * Absent: every RoCE packet, and no non-RoCE frame.
   */
  opcode?: number | string;
  /** BTH destination QP. */
  qpn?: number;
  /** BTH PSN range, both ends included; from > to wraps past 0xffffff. */
  psn?: readonly [number, number];
  /** Fire on every n-th matching packet (counted after `after`). */
  every?: number;
  /** Fire at most this many times. */
  count?: number;
  /** Let the first n matching packets through. */
  after?: number;
  /** Only frames dequeued in [from, to) ns of the runtime's clock; `to` null: no end. */
  window?: readonly [Duration, Duration | null];
}

/**
 * Where a rule acts: 'tx', on frames as their port sends them (the
 * default), or 'rx', on frames as their port receives them (from a peer the
 * model does not run, such as a VM or a real NIC at the far end of a UDP
 * cable).
 */
export type FaultStage = 'tx' | 'rx';
export const FAULT_STAGES: readonly FaultStage[] = ['tx', 'rx'];

export interface FaultRule {
  action: FaultAction;
  /** Default 'both'. */
  direction?: FaultDirectionSpec;
  /** Default 'tx'. */
  on?: FaultStage;
  match?: FaultMatch;
  /** Chance, 0..1, that a packet which passes the match fires the rule (default 1). */
  probability?: number;
  /** `delay`: extra time on the wire. */
  delayNs?: Duration;
  /** `duplicate`: extra copies sent after the frame (default 1). */
  copies?: number;
  /** `reorder`: hold the frame until this many later frames have gone through (default 1). */
  reorderDepth?: number;
  /** `link-down`: how long the link stays down. */
  downForNs?: Duration;
  /** `link-down`: go down at this time, whatever the traffic (no `match`, no `probability`). */
  atNs?: Duration;
  /** `corrupt`: where to flip the bit (default 'any'). */
  target?: CorruptTarget;
  /** A label for logs and reports. */
  name?: string;
}

/** A rule after `resolveFaultRule`: defaults in place, durations as integer ns. */
export interface ResolvedFaultMatch {
  readonly opcode?: number | string;
  readonly qpn?: number;
  readonly psn?: readonly [number, number];
  readonly every?: number;
  readonly count?: number;
  readonly after?: number;
  readonly window?: readonly [number, number | null];
}

export interface ResolvedFaultRule {
  readonly action: FaultAction;
  readonly direction: FaultDirectionSpec;
  /** Present only for 'rx' ('tx' is the default). */
  readonly on?: FaultStage;
  readonly match: ResolvedFaultMatch;
  readonly probability?: number;
  readonly delayNs?: number;
  readonly copies?: number;
  readonly reorderDepth?: number;
  readonly downForNs?: number;
  readonly atNs?: number;
  readonly target?: CorruptTarget;
  readonly name?: string;
}

export const MAX_COPIES = 64;
export const MAX_REORDER_DEPTH = 4096;
/** One hour: longer delays or outages are almost surely a unit slip. */
export const MAX_FAULT_DURATION_NS = 3_600_000_000_000;

const RULE_KEYS: readonly string[] = [
  'action',
  'direction',
  'on',
  'match',
  'probability',
  'delayNs',
  'copies',
  'reorderDepth',
  'downForNs',
  'atNs',
  'target',
  'name',
];
const MATCH_KEYS: readonly string[] = ['opcode', 'qpn', 'psn', 'every', 'count', 'after', 'window'];

/** The parameters each action takes; any other action's parameter is an error. */
const ACTION_PARAMS: Readonly<Record<FaultAction, readonly string[]>> = {
  drop: [],
  corrupt: ['target'],
  duplicate: ['copies'],
  reorder: ['reorderDepth'],
  delay: ['delayNs'],
  'link-down': ['downForNs', 'atNs'],
  'ecn-mark': [],
};
const ALL_ACTION_PARAMS = ['delayNs', 'copies', 'reorderDepth', 'downForNs', 'atNs', 'target'];

/** Opcode kinds, from the one opcode table. */
export const OPCODE_KINDS: readonly OpKind[] = [...new Set(OPCODES.filter((i) => i !== undefined).map((i) => i!.kind))];

const BTH_24 = 0xffffff;

function where(index: number, field: string): string {
  return index >= 0 ? `rule ${index}${field ? ` (${field})` : ''}` : field || 'rule';
}

export function badRule(index: number, field: string, msg: string): never {
  throw new FaultError('FAULT_BAD_RULE', `${where(index, field)}: ${msg}`, index, field, msg);
}

function show(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean' || v === null || v === undefined) return String(v);
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

function intIn(v: unknown, index: number, field: string, min: number, max: number): number {
  const n = typeof v === 'string' && /^\s*(0x[0-9a-f]+|\d+)\s*$/i.test(v) ? Number(v.trim()) : v;
  if (typeof n !== 'number' || !Number.isSafeInteger(n)) badRule(index, field, `expected an integer, got ${show(v)}`);
  if (n < min || n > max) badRule(index, field, `${n} is outside [${min}, ${max}]`);
  return n;
}

const DURATION_EXP: Readonly<Record<string, number>> = { ns: 0, us: 3, µs: 3, ms: 6, s: 9 };

/**
 * A duration in integer nanoseconds: a number is taken as ns; text may carry
 * a unit (ns, us, µs, ms, s; none means ns) and a decimal fraction that
 * comes out to whole nanoseconds ('1.5us' yes, '0.5ns' no).
 */
export function parseDurationNs(raw: unknown, index = -1, field = 'duration'): number {
  if (typeof raw === 'number') {
    if (!Number.isSafeInteger(raw) || raw < 0) badRule(index, field, `${raw} is not a whole, non-negative number of nanoseconds`);
    return raw;
  }
  if (typeof raw !== 'string') badRule(index, field, `expected a duration such as 500 (ns), '2us' or '1.5ms', got ${show(raw)}`);
  const m = /^\s*(\d+)(?:\.(\d+))?\s*(ns|us|µs|ms|s)?\s*$/.exec(raw);
  if (!m) badRule(index, field, `cannot read ${show(raw)} as a duration (a number with ns, us, ms or s)`);
  const exp = DURATION_EXP[m[3] ?? 'ns']!;
  const frac = m[2] ?? '';
  if (frac.length > exp && !/^0*$/.test(frac.slice(exp))) badRule(index, field, `${show(raw)} is not a whole number of nanoseconds`);
  const n = Number(m[1]! + frac.slice(0, exp).padEnd(exp, '0'));
  if (!Number.isSafeInteger(n)) badRule(index, field, `${show(raw)} is too large`);
  return n;
}

/** The shortest exact spelling of `ns`: '2ms', '1500ns', '3us'. */
export function formatDurationNs(ns: number): string {
  if (ns === 0) return '0';
  if (ns % 1e9 === 0) return `${ns / 1e9}s`;
  if (ns % 1e6 === 0) return `${ns / 1e6}ms`;
  if (ns % 1e3 === 0) return `${ns / 1e3}us`;
  return `${ns}ns`;
}

function duration(raw: unknown, index: number, field: string, min: number): number {
  const n = parseDurationNs(raw, index, field);
  if (n < min) badRule(index, field, `must be at least ${min} ns, got ${show(raw)}`);
  if (n > MAX_FAULT_DURATION_NS) badRule(index, field, `${show(raw)} is more than an hour`);
  return n;
}

/**
 * Canonical spelling of an opcode match: an opcode byte as a number, an
 * ib_pack name in capitals without 'IB_OPCODE_', a kind in lower case, or 'any'.
 */
export function canonicalOpcode(raw: unknown, index = -1, field = 'match.opcode'): number | string {
  if (typeof raw === 'number' || (typeof raw === 'string' && /^\s*(0x[0-9a-f]+|\d+)\s*$/i.test(raw))) {
    const n = intIn(raw, index, field, 0, 0xff);
    if (!OPCODES[n]) badRule(index, field, `opcode 0x${n.toString(16).padStart(2, '0')} is reserved or vendor-specific`);
    return n;
  }
  if (typeof raw !== 'string' || raw.trim() === '') {
    badRule(index, field, `expected an opcode number, name or kind, got ${show(raw)}`);
  }
  const s = raw.trim();
  const lower = s.toLowerCase();
  if (lower === 'any') return 'any';
  if ((OPCODE_KINDS as readonly string[]).includes(lower)) return lower;
  const upper = s.toUpperCase().replace(/^IB_OPCODE_/, '');
  if (OPCODES.some((i) => i?.name === upper)) return upper;
  return badRule(
    index,
    field,
    `${show(raw)} is not an opcode: use a name such as 'RC_RDMA_WRITE_MIDDLE', a kind (${OPCODE_KINDS.join(', ')}), a number, or 'any'`,
  );
}

/**
 * The opcodes an opcode match selects, as a 256-entry table (1 = selected),
 * and whether non-RoCE frames are selected too.
 */
export function opcodeSelection(canonical: number | string | undefined): { table: Uint8Array; nonRoce: boolean } {
  const table = new Uint8Array(256);
  if (canonical === undefined || canonical === 'any') {
    for (const info of OPCODES) if (info) table[info.code] = 1;
    return { table, nonRoce: canonical === 'any' };
  }
  for (const info of OPCODES) {
    if (info && (info.code === canonical || info.name === canonical || info.kind === canonical)) table[info.code] = 1;
  }
  return { table, nonRoce: false };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function checkKeys(o: Record<string, unknown>, allowed: readonly string[], index: number, prefix: string): void {
  for (const k of Object.keys(o)) {
    if (!allowed.includes(k)) {
      badRule(index, prefix + k, `unknown field; expected one of ${allowed.join(', ')}`);
    }
  }
}

function resolveMatch(raw: unknown, index: number): ResolvedFaultMatch {
  if (raw === undefined) return {};
  if (!isRecord(raw)) badRule(index, 'match', `expected an object, got ${show(raw)}`);
  checkKeys(raw, MATCH_KEYS, index, 'match.');
  const m: {
    opcode?: number | string;
    qpn?: number;
    psn?: readonly [number, number];
    every?: number;
    count?: number;
    after?: number;
    window?: readonly [number, number | null];
  } = {};
  if (raw.opcode !== undefined) m.opcode = canonicalOpcode(raw.opcode, index, 'match.opcode');
  if (raw.qpn !== undefined) m.qpn = intIn(raw.qpn, index, 'match.qpn', 0, BTH_24);
  if (raw.psn !== undefined) {
    const p = raw.psn;
    if (!Array.isArray(p) || p.length !== 2) badRule(index, 'match.psn', `expected [from, to], got ${show(p)}`);
    m.psn = Object.freeze([intIn(p[0], index, 'match.psn', 0, BTH_24), intIn(p[1], index, 'match.psn', 0, BTH_24)] as const);
  }
  if (raw.every !== undefined) m.every = intIn(raw.every, index, 'match.every', 1, 2 ** 31 - 1);
  if (raw.count !== undefined) m.count = intIn(raw.count, index, 'match.count', 1, Number.MAX_SAFE_INTEGER);
  if (raw.after !== undefined) m.after = intIn(raw.after, index, 'match.after', 0, Number.MAX_SAFE_INTEGER);
  if (raw.window !== undefined) {
    const w = raw.window;
    if (!Array.isArray(w) || w.length < 1 || w.length > 2) badRule(index, 'match.window', `expected [fromNs, toNs], got ${show(w)}`);
    const from = parseDurationNs(w[0], index, 'match.window');
    const to = w[1] === undefined || w[1] === null ? null : parseDurationNs(w[1], index, 'match.window');
    if (to !== null && to <= from) badRule(index, 'match.window', `ends (${to} ns) before it starts (${from} ns)`);
    m.window = Object.freeze([from, to] as const);
  }
  return Object.freeze(m);
}

/** Checks one rule; returns it normalised and frozen. `index` names it in errors. */
export function resolveFaultRule(raw: unknown, index = -1): ResolvedFaultRule {
  if (!isRecord(raw)) badRule(index, '', `expected a rule object, got ${show(raw)}`);
  checkKeys(raw, RULE_KEYS, index, '');
  const action = raw.action;
  if (typeof action !== 'string' || !(FAULT_ACTIONS as readonly string[]).includes(action)) {
    badRule(index, 'action', `expected one of ${FAULT_ACTIONS.join(', ')}, got ${show(action)}`);
  }
  const act = action as FaultAction;
  for (const k of ALL_ACTION_PARAMS) {
    if (raw[k] !== undefined && !ACTION_PARAMS[act].includes(k)) {
      const owner = FAULT_ACTIONS.filter((a) => ACTION_PARAMS[a].includes(k)).join(', ');
      badRule(index, k, `applies to ${owner}, not to ${act}`);
    }
  }
  const direction = raw.direction ?? 'both';
  if (typeof direction !== 'string' || !(FAULT_DIRECTIONS as readonly string[]).includes(direction)) {
    badRule(index, 'direction', `expected 'a->b', 'b->a' or 'both', got ${show(raw.direction)}`);
  }
  const on = raw.on ?? 'tx';
  if (typeof on !== 'string' || !(FAULT_STAGES as readonly string[]).includes(on)) {
    badRule(index, 'on', `expected 'tx' (as the port sends) or 'rx' (as the port receives), got ${show(raw.on)}`);
  }
  const r: {
    action: FaultAction;
    direction: FaultDirectionSpec;
    on?: FaultStage;
    match: ResolvedFaultMatch;
    probability?: number;
    delayNs?: number;
    copies?: number;
    reorderDepth?: number;
    downForNs?: number;
    atNs?: number;
    target?: CorruptTarget;
    name?: string;
  } = { action: act, direction: direction as FaultDirectionSpec, ...(on === 'rx' ? { on: 'rx' as const } : {}), match: resolveMatch(raw.match, index) };
  if (raw.probability !== undefined) {
    const p = raw.probability;
    if (typeof p !== 'number' || !Number.isFinite(p) || p < 0 || p > 1) badRule(index, 'probability', `expected a number in [0, 1], got ${show(p)}`);
    r.probability = p;
  }
  switch (act) {
    case 'delay':
      if (raw.delayNs === undefined) badRule(index, 'delayNs', 'a delay rule needs delayNs');
      r.delayNs = duration(raw.delayNs, index, 'delayNs', 1);
      break;
    case 'duplicate':
      r.copies = raw.copies === undefined ? 1 : intIn(raw.copies, index, 'copies', 1, MAX_COPIES);
      break;
    case 'reorder':
      r.reorderDepth = raw.reorderDepth === undefined ? 1 : intIn(raw.reorderDepth, index, 'reorderDepth', 1, MAX_REORDER_DEPTH);
      break;
    case 'corrupt': {
      const t = raw.target ?? 'any';
      if (typeof t !== 'string' || !(CORRUPT_TARGETS as readonly string[]).includes(t)) {
        badRule(index, 'target', `expected one of ${CORRUPT_TARGETS.join(', ')}, got ${show(raw.target)}`);
      }
      r.target = t as CorruptTarget;
      break;
    }
    case 'link-down':
      if (raw.downForNs === undefined) badRule(index, 'downForNs', 'a link-down rule needs downForNs');
      r.downForNs = duration(raw.downForNs, index, 'downForNs', 1);
      if (raw.atNs !== undefined) {
        r.atNs = duration(raw.atNs, index, 'atNs', 0);
        if (raw.match !== undefined && Object.keys(r.match).length > 0) {
          badRule(index, 'match', 'a link-down at a fixed time (atNs) takes no match: it does not wait for a packet');
        }
        if (r.probability !== undefined) badRule(index, 'probability', 'a link-down at a fixed time (atNs) is certain');
      }
      break;
    case 'drop':
    case 'ecn-mark':
      break;
  }
  if (raw.name !== undefined) {
    if (typeof raw.name !== 'string') badRule(index, 'name', `expected a string, got ${show(raw.name)}`);
    if (/[,=]/.test(raw.name)) badRule(index, 'name', `${show(raw.name)} has a ',' or '=', which the --fault form cannot carry`);
    r.name = raw.name;
  }
  return Object.freeze(r);
}

/** Checks a list of rules (a scenario file's `faults`, say); errors name the index. */
export function resolveFaultRules(raw: unknown): readonly ResolvedFaultRule[] {
  if (!Array.isArray(raw)) throw new FaultError('FAULT_BAD_RULE', `faults: expected a list of rules, got ${show(raw)}`);
  return Object.freeze(raw.map((r, i) => resolveFaultRule(r, i)));
}
