/**
 * The one-line form of a rule, for `rnic ... --fault <spec>` and for logs:
 *
 *   action[:key=value[,key=value]...]
 *
 *   drop:opcode=RC_RDMA_WRITE_MIDDLE,psn=5-5
 *   drop:p=0.01
 *   corrupt:every=100,dir=a->b
 *   link-down:at=2ms,for=1ms
 *
 * `parseFaultSpec` gives the same normalised rule `resolveFaultRule` gives
 * for the object form; `formatFaultRule` writes a rule back in this form
 * (parse(format(r)) equals r).
 */
import { type FaultAction, FAULT_ACTIONS, FaultError, type FaultRule, type ResolvedFaultRule, formatDurationNs, resolveFaultRule } from './rules.js';

/** Where a key goes in the rule object. */
interface KeyDef {
  readonly keys: readonly string[];
  readonly field: string;
  readonly set: (rule: FaultRule, match: Record<string, unknown>, value: string, ctx: Ctx) => void;
}

interface Ctx {
  readonly index: number;
  readonly spec: string;
  readonly key: string;
}

function badSpec(ctx: Pick<Ctx, 'index' | 'spec'>, field: string, msg: string): never {
  const at = ctx.index >= 0 ? `--fault #${ctx.index} ` : '--fault ';
  throw new FaultError('FAULT_BAD_RULE', `${at}${JSON.stringify(ctx.spec)}${field ? ` (${field})` : ''}: ${msg}`, ctx.index, field);
}

function range(value: string, ctx: Ctx, open: boolean): [string, string | null] {
  const dash = value.indexOf('-');
  if (dash < 0) return [value, value];
  const from = value.slice(0, dash).trim();
  const to = value.slice(dash + 1).trim();
  if (from === '' || (to === '' && !open)) badSpec(ctx, ctx.key, `expected from-to, got ${JSON.stringify(value)}`);
  return [from, to === '' ? null : to];
}

function probability(value: string, ctx: Ctx): number {
  const m = /^\s*(\d+(?:\.\d*)?|\.\d+)(?:e(-?\d+))?\s*(%?)\s*$/i.exec(value);
  if (!m) badSpec(ctx, ctx.key, `expected a probability such as 0.01 or 1%, got ${JSON.stringify(value)}`);
  const n = Number(value.replace('%', '').trim());
  return m[3] ? n / 100 : n;
}

const KEYS: readonly KeyDef[] = [
  {
    keys: ['dir', 'direction'],
    field: 'direction',
    set: (r, _m, v) => {
      r.direction = v as FaultRule['direction'];
    },
  },
  {
    keys: ['on'],
    field: 'on',
    set: (r, _m, v) => {
      r.on = v as FaultRule['on'];
    },
  },
  {
    keys: ['opcode', 'op'],
    field: 'match.opcode',
    set: (_r, m, v) => {
      m.opcode = v;
    },
  },
  {
    keys: ['qpn', 'qp'],
    field: 'match.qpn',
    set: (_r, m, v) => {
      m.qpn = v;
    },
  },
  {
    keys: ['psn'],
    field: 'match.psn',
    set: (_r, m, v, c) => {
      m.psn = range(v, c, false);
    },
  },
  {
    keys: ['window', 'win'],
    field: 'match.window',
    set: (_r, m, v, c) => {
      const [from, to] = range(v, c, true);
      if (to === from) badSpec(c, c.key, `expected from-to (to may be left out: '2ms-'), got ${JSON.stringify(v)}`);
      m.window = [from, to];
    },
  },
  {
    keys: ['every'],
    field: 'match.every',
    set: (_r, m, v) => {
      m.every = v;
    },
  },
  {
    keys: ['count'],
    field: 'match.count',
    set: (_r, m, v) => {
      m.count = v;
    },
  },
  {
    keys: ['after'],
    field: 'match.after',
    set: (_r, m, v) => {
      m.after = v;
    },
  },
  {
    keys: ['p', 'probability'],
    field: 'probability',
    set: (r, _m, v, c) => {
      r.probability = probability(v, c);
    },
  },
  {
    keys: ['delay', 'delayNs'],
    field: 'delayNs',
    set: (r, _m, v) => {
      r.delayNs = v;
    },
  },
  {
    keys: ['copies'],
    field: 'copies',
    set: (r, _m, v) => {
      r.copies = v as unknown as number;
    },
  },
  {
    keys: ['depth', 'reorderDepth'],
    field: 'reorderDepth',
    set: (r, _m, v) => {
      r.reorderDepth = v as unknown as number;
    },
  },
  {
    keys: ['for', 'downForNs'],
    field: 'downForNs',
    set: (r, _m, v) => {
      r.downForNs = v;
    },
  },
  {
    keys: ['at', 'atNs'],
    field: 'atNs',
    set: (r, _m, v) => {
      r.atNs = v;
    },
  },
  {
    keys: ['target'],
    field: 'target',
    set: (r, _m, v) => {
      r.target = v as FaultRule['target'];
    },
  },
  {
    keys: ['name'],
    field: 'name',
    set: (r, _m, v) => {
      r.name = v;
    },
  },
];

const ALL_KEYS = KEYS.flatMap((k) => k.keys);

/**
 * Reads one `--fault` value. `index` (the flag's position) goes into
 * errors; the result is checked and normalised as `resolveFaultRule` does.
 */
export function parseFaultSpec(spec: string, index = -1): ResolvedFaultRule {
  const ctx = { index, spec };
  if (typeof spec !== 'string' || spec.trim() === '') badSpec(ctx, '', 'empty fault; expected action[:key=value,...]');
  const colon = spec.indexOf(':');
  const action = (colon < 0 ? spec : spec.slice(0, colon)).trim();
  if (!(FAULT_ACTIONS as readonly string[]).includes(action)) {
    badSpec(ctx, 'action', `unknown action ${JSON.stringify(action)}; expected one of ${FAULT_ACTIONS.join(', ')}`);
  }
  const rule: FaultRule = { action: action as FaultAction };
  const match: Record<string, unknown> = {};
  const seen = new Set<string>();
  const body = colon < 0 ? '' : spec.slice(colon + 1).trim();
  if (body !== '') {
    for (const part of body.split(',')) {
      const eq = part.indexOf('=');
      if (eq < 0) badSpec(ctx, '', `expected key=value, got ${JSON.stringify(part.trim())}`);
      const key = part.slice(0, eq).trim();
      const value = part.slice(eq + 1).trim();
      const def = KEYS.find((k) => k.keys.includes(key));
      if (!def) badSpec(ctx, key, `unknown key; expected one of ${ALL_KEYS.join(', ')}`);
      if (seen.has(def.field)) badSpec(ctx, key, 'given twice');
      seen.add(def.field);
      if (value === '') badSpec(ctx, key, 'has no value');
      def.set(rule, match, value, { ...ctx, key });
    }
  }
  if (Object.keys(match).length > 0) rule.match = match as FaultRule['match'];
  try {
    return resolveFaultRule(rule, index);
  } catch (e) {
    if (e instanceof FaultError) {
      const field = e.field;
      const key = KEYS.find((k) => k.field === field)?.keys[0] ?? field;
      badSpec(ctx, key, e.detail);
    }
    throw e;
  }
}

/** Reads every `--fault` value; errors name the flag's position. */
export function parseFaultSpecs(specs: readonly string[]): ResolvedFaultRule[] {
  return specs.map((s, i) => parseFaultSpec(s, i));
}

function fmtOpcode(v: number | string): string {
  return typeof v === 'number' ? `0x${v.toString(16).padStart(2, '0')}` : v;
}

/** The `--fault` form of a rule; defaults are left out. */
export function formatFaultRule(raw: FaultRule | ResolvedFaultRule): string {
  const r = resolveFaultRule(raw);
  const m = r.match;
  const parts: string[] = [];
  if (r.direction !== 'both') parts.push(`dir=${r.direction}`);
  if (r.on === 'rx') parts.push('on=rx');
  if (m.opcode !== undefined) parts.push(`opcode=${fmtOpcode(m.opcode)}`);
  if (m.qpn !== undefined) parts.push(`qpn=${m.qpn}`);
  if (m.psn !== undefined) parts.push(m.psn[0] === m.psn[1] ? `psn=${m.psn[0]}` : `psn=${m.psn[0]}-${m.psn[1]}`);
  if (m.window !== undefined) parts.push(`window=${formatDurationNs(m.window[0])}-${m.window[1] === null ? '' : formatDurationNs(m.window[1])}`);
  if (m.after !== undefined) parts.push(`after=${m.after}`);
  if (m.every !== undefined) parts.push(`every=${m.every}`);
  if (m.count !== undefined) parts.push(`count=${m.count}`);
  if (r.probability !== undefined) parts.push(`p=${r.probability}`);
  if (r.delayNs !== undefined) parts.push(`delay=${formatDurationNs(r.delayNs)}`);
  if (r.copies !== undefined && r.copies !== 1) parts.push(`copies=${r.copies}`);
  if (r.reorderDepth !== undefined && r.reorderDepth !== 1) parts.push(`depth=${r.reorderDepth}`);
  if (r.target !== undefined && r.target !== 'any') parts.push(`target=${r.target}`);
  if (r.atNs !== undefined) parts.push(`at=${formatDurationNs(r.atNs)}`);
  if (r.downForNs !== undefined) parts.push(`for=${formatDurationNs(r.downForNs)}`);
  if (r.name !== undefined) parts.push(`name=${r.name}`);
  return parts.length ? `${r.action}:${parts.join(',')}` : r.action;
}
