/**
 * compareRuns: two runs of one scenario (captures, timelines, counters)
 * aligned per flow and per QP, every difference reported with where it
 * happened and, where the two runs' device profiles differ in a choice
 * that accounts for it, which choice (docs/compare.md).
 */
import { type DeviceProfile, IBTA_PROFILE, PROFILES, type ProfileChoices, profileDifferences } from '../pipeline/profiles.js';
import { align } from './align.js';
import { type Explainable, explain } from './explain.js';
import { type Flow, type FlowPacket, flowsOf, retransmissions } from './flows.js';
import {
  type CompareOptions,
  type CompareReport,
  type Difference,
  type DifferenceKind,
  PACKET_FIELDS,
  type QpCompletions,
  type RunRecord,
  type Where,
} from './types.js';

/** What the comparison never looks at (docs/compare.md "What is not compared"). */
export const IGNORED = Object.freeze([
  "IPv4 identification: the model counts per port from 0; Linux draws it from the kernel's per-destination counter (__ip_select_ident)",
  "absolute PSNs: each flow's are compared relative to its first (the starting PSN is the application's or random)",
  'QP numbers, MAC and IP addresses: flows are paired by class and order of first appearance',
  'absolute times: only the interval before each retransmission (the timer that fired) is compared',
  'ICRC, IP and UDP checksums: checked when the capture is read (a bad one is an invalid frame)',
]);

const hex = (v: unknown): string => (typeof v === 'number' ? `0x${v.toString(16)}` : String(v));
/** AETH syndromes by what they say (IBTA 9.7.5.2.1). */
function syndromeText(v: unknown): string {
  if (typeof v !== 'number') return String(v);
  const naks: Record<number, string> = {
    96: 'PSN sequence error',
    97: 'invalid request',
    98: 'remote access error',
    99: 'remote operational error',
    100: 'invalid RD request',
  };
  const kind = v >>> 5;
  const what = kind === 0 ? 'ACK' : kind === 1 ? `RNR NAK, timer ${v & 0x1f}` : kind === 3 ? `NAK ${naks[v] ?? 'reserved'}` : 'reserved';
  return `0x${v.toString(16)} (${what})`;
}
const shown = (field: string | undefined, v: unknown): string => (field === 'syndrome' ? syndromeText(v) : field === 'udpSrcPort' ? hex(v) : JSON.stringify(v));

/** Differences as they are found, before grouping. */
interface Found extends Explainable {
  readonly kind: DifferenceKind;
  /** Consecutive packets this one difference stands for. */
  readonly packets?: number;
  readonly where: Where;
  readonly text: string;
}

function packetWhere(flow: Flow, pa: FlowPacket | undefined, pb: FlowPacket | undefined): Where {
  return {
    flow: flow.name,
    relPsn: (pa ?? pb)!.relPsn,
    ...(pa ? { psnA: pa.psn, packetA: pa.index, nsA: pa.ns } : {}),
    ...(pb ? { psnB: pb.psn, packetB: pb.index, nsB: pb.ns } : {}),
  };
}

/** Consecutive packets one run alone sent: one go-back-N burst, one READ resent, is one difference. */
function runsOf(ps: readonly FlowPacket[]): FlowPacket[][] {
  const out: FlowPacket[][] = [];
  for (const p of ps) {
    const run = out[out.length - 1];
    const prev = run?.[run.length - 1];
    if (prev && prev.transmission === p.transmission && ((prev.relPsn + 1) & 0xffffff) === p.relPsn) run!.push(p);
    else out.push([p]);
  }
  return out;
}

const label = (p: FlowPacket): string => `${p.opcode} PSN +${p.relPsn}${p.transmission > 1 ? ` (transmission ${p.transmission})` : ''}`;

function compareFlow(fa: Flow, fb: Flow, out: Found[], tolerance: number): number {
  const key = (p: FlowPacket) => `${p.opcode}:${p.relPsn}:${p.transmission}`;
  const al = align(fa.packets.map(key), fb.packets.map(key));
  for (const [i, j] of al.pairs) {
    const pa = fa.packets[i]!;
    const pb = fb.packets[j]!;
    for (const field of PACKET_FIELDS) {
      if (field === 'opcode') continue;
      const va = pa.fields[field];
      const vb = pb.fields[field];
      if (va === vb) continue;
      out.push({
        kind: 'packet-field',
        field,
        a: va,
        b: vb,
        ud: fa.ud,
        where: packetWhere(fa, pa, pb),
        text:
          field === 'udpSrcPort'
            ? `${label(pa)}: udpSrcPort ${va} (${hex(pa.udpSrcPortRaw)}) in A, ${vb} (${hex(pb.udpSrcPortRaw)}) in B`
            : `${label(pa)}: ${field} ${shown(field, va)} in A, ${shown(field, vb)} in B`,
      });
    }
    if (pa.startsRetry && !pa.nakDriven && !pb.nakDriven && pa.sincePreviousNs !== null && pb.sincePreviousNs !== null) {
      const [x, y] = [pa.sincePreviousNs, pb.sincePreviousNs];
      if (Math.abs(x - y) > tolerance * Math.max(x, y))
        out.push({
          kind: 'timer',
          field: 'retryAfterNs',
          opcode: pa.opcode,
          a: x,
          b: y,
          where: packetWhere(fa, pa, pb),
          text: `${label(pa)}: resent ${x} ns after the previous transmission in A, ${y} ns in B`,
        });
    }
  }
  // The same PSN and transmission with another opcode is one difference, not two.
  const onlyB = new Map(al.onlyB.map((j) => [`${fb.packets[j]!.relPsn}:${fb.packets[j]!.transmission}`, j]));
  const loneA: FlowPacket[] = [];
  for (const i of al.onlyA) {
    const pa = fa.packets[i]!;
    const j = onlyB.get(`${pa.relPsn}:${pa.transmission}`);
    if (j !== undefined) {
      onlyB.delete(`${pa.relPsn}:${pa.transmission}`);
      const pb = fb.packets[j]!;
      out.push({
        kind: 'packet-field',
        field: 'opcode',
        a: pa.opcode,
        b: pb.opcode,
        where: packetWhere(fa, pa, pb),
        text: `PSN +${pa.relPsn}: ${pa.opcode} in A, ${pb.opcode} in B`,
      });
      continue;
    }
    loneA.push(pa);
  }
  const loneB = [...onlyB.values()].sort((x, y) => x - y).map((j) => fb.packets[j]!);
  for (const [side, lone] of [
    ['a', loneA],
    ['b', loneB],
  ] as const) {
    for (const run of runsOf(lone)) {
      const p = run[0]!;
      const last = run[run.length - 1]!;
      const what =
        run.length === 1
          ? label(p)
          : `${p.opcode === last.opcode ? p.opcode : `${p.opcode}…${last.opcode}`} PSN +${p.relPsn}..+${last.relPsn} (${run.length} packets${p.transmission > 1 ? `, transmission ${p.transmission}` : ''})`;
      const [me, other] = side === 'a' ? ['A', 'B'] : ['B', 'A'];
      out.push({
        kind: side === 'a' ? 'packet-only-in-a' : 'packet-only-in-b',
        a: side === 'a' ? p.opcode : null,
        b: side === 'b' ? p.opcode : null,
        transmission: p.transmission,
        where: side === 'a' ? packetWhere(fa, p, undefined) : packetWhere(fa, undefined, p),
        text: `${me} sent ${what}; ${other} did not`,
        ...(run.length > 1 ? { packets: run.length } : {}),
      });
    }
  }
  return al.pairs.length;
}

/** Flows paired by class (requests / responses), UD or not, and order of first appearance. */
function pairFlows(a: readonly Flow[], b: readonly Flow[]): { pairs: [Flow, Flow][]; onlyA: Flow[]; onlyB: Flow[] } {
  const group = (fs: readonly Flow[]) => {
    const m = new Map<string, Flow[]>();
    for (const f of fs) {
      const k = `${f.cls}/${f.ud}`;
      m.set(k, [...(m.get(k) ?? []), f]);
    }
    return m;
  };
  const ga = group(a);
  const gb = group(b);
  const pairs: [Flow, Flow][] = [];
  const onlyA: Flow[] = [];
  const onlyB: Flow[] = [];
  for (const k of new Set([...ga.keys(), ...gb.keys()])) {
    const xa = ga.get(k) ?? [];
    const xb = gb.get(k) ?? [];
    for (let i = 0; i < Math.max(xa.length, xb.length); i++) {
      if (xa[i] && xb[i]) pairs.push([xa[i]!, xb[i]!]);
      else if (xa[i]) onlyA.push(xa[i]!);
      else onlyB.push(xb[i]!);
    }
  }
  return { pairs, onlyA, onlyB };
}

function compareCompletions(a: readonly QpCompletions[], b: readonly QpCompletions[], out: Found[]): void {
  const byName = new Map(b.map((q) => [q.qp, q]));
  a.forEach((qa, n) => {
    const qb = byName.get(qa.qp) ?? b[n];
    if (!qb) {
      out.push({ kind: 'completion-missing', a: qa.qp, b: null, where: { qp: qa.qp }, text: `QP ${qa.qp}: no timeline in B` });
      return;
    }
    const wb = new Map(qb.wrs.map((w) => [w.index, w]));
    for (const x of qa.wrs) {
      const y = wb.get(x.index);
      const where = { qp: qa.qp, wr: x.index };
      if (!y || (x.status === null) !== (y.status === null)) {
        out.push({
          kind: 'completion-missing',
          a: x.status,
          b: y?.status ?? null,
          where,
          text: `QP ${qa.qp} WR ${x.index} (${x.op}): ${x.status ?? 'no completion'} in A, ${y?.status ?? 'no completion'} in B`,
        });
        continue;
      }
      for (const field of ['op', 'size', 'status'] as const) {
        if (x[field] !== y[field])
          out.push({
            kind: 'completion-field',
            field: field === 'size' ? 'byteLen' : field,
            a: x[field],
            b: y[field],
            where,
            text: `QP ${qa.qp} WR ${x.index}: ${field === 'size' ? 'byte_len' : field} ${JSON.stringify(x[field])} in A, ${JSON.stringify(y[field])} in B`,
          });
      }
    }
    // The order of the WRs both runs completed.
    const both = new Set(qa.wrs.filter((w) => w.completedNs !== null && wb.get(w.index)?.completedNs != null).map((w) => w.index));
    const order = (q: QpCompletions) =>
      q.wrs
        .filter((w) => both.has(w.index))
        .sort((u, v) => u.completedNs! - v.completedNs! || u.index - v.index)
        .map((w) => w.index);
    const [oa, ob] = [order(qa), order(qb)];
    const at = oa.findIndex((w, i) => ob[i] !== w);
    if (at >= 0)
      out.push({
        kind: 'completion-order',
        a: oa.slice(at, at + 4),
        b: ob.slice(at, at + 4),
        where: { qp: qa.qp, wr: oa[at]! },
        text: `QP ${qa.qp}: completion ${at + 1} is WR ${oa[at]} in A, WR ${ob[at]} in B`,
      });
  });
}

function compareCounters(a: NonNullable<RunRecord['counters']>, b: NonNullable<RunRecord['counters']>, out: Found[]): void {
  a.forEach((da, n) => {
    const db = b[n];
    if (!db) return;
    for (const [port, ca] of Object.entries(da.ports)) {
      const cb = db.ports[port];
      if (!cb) continue;
      for (const [name, va] of Object.entries(ca)) {
        const vb = cb[name];
        if (vb === undefined || vb === va) continue;
        out.push({
          kind: 'counter',
          counter: name,
          a: va,
          b: vb,
          where: { device: `${da.device}:${port}`, counter: name },
          text: `${da.device} port ${port}: ${name} ${va} in A, ${vb} in B`,
        });
      }
    }
  });
}

function isAllowed(d: Found, allow: ReadonlySet<string>): boolean {
  if (allow.has(d.kind) || (d.field !== undefined && allow.has(d.field))) return true;
  if ((d.kind === 'packet-only-in-a' || d.kind === 'packet-only-in-b') && (d.transmission ?? 1) > 1 && allow.has('retransmission')) return true;
  return (d.kind === 'flow-only-in-a' || d.kind === 'flow-only-in-b') && allow.has('flow');
}

/** Differences with the same kind, field, values and flow or QP become one, counted, at its first occurrence. */
function grouped(found: readonly Found[], differ: ReadonlySet<keyof ProfileChoices>, opts: CompareOptions): Difference[] {
  const allow = new Set(opts.allow ?? []);
  const groups = new Map<string, { d: Found; count: number }>();
  for (const d of found) {
    const repeatable = d.kind === 'packet-field' || d.kind === 'counter' || d.kind === 'timer';
    const k = repeatable
      ? `${d.kind}|${d.field}|${JSON.stringify(d.a)}|${JSON.stringify(d.b)}|${d.where.flow ?? d.where.device ?? ''}|${d.counter ?? ''}`
      : `${groups.size}`;
    const g = groups.get(k);
    if (g) g.count++;
    else groups.set(k, { d, count: 1 });
  }
  return [...groups.values()].map(({ d, count }) => {
    const why = explain(d, differ);
    return {
      kind: d.kind,
      ...(d.field === undefined ? {} : { field: d.field }),
      where: d.where,
      a: d.a,
      b: d.b,
      ...(count > 1 ? { count } : {}),
      ...(d.packets === undefined ? {} : { packets: d.packets }),
      ...(why === undefined ? {} : { explainedBy: why }),
      ...(isAllowed(d, allow) ? { allowed: true } : {}),
      text: count > 1 ? `${d.text} (and ${count - 1} more like it)` : d.text,
    };
  });
}

export function compareRuns(a: RunRecord, b: RunRecord, opts: CompareOptions = {}): CompareReport {
  const tolerance = opts.timerTolerance ?? 0.5;
  const fa = flowsOf(a.packets);
  const fb = flowsOf(b.packets);
  const found: Found[] = [];
  const flows = pairFlows(fa, fb);
  let matched = 0;
  for (const [x, y] of flows.pairs) matched += compareFlow(x, y, found, tolerance);
  for (const f of flows.onlyA)
    found.push({
      kind: 'flow-only-in-a',
      a: f.packets.length,
      b: 0,
      where: { flow: f.name, packetA: f.firstIndex },
      text: `${f.name}: ${f.packets.length} packets in A, none in B`,
    });
  for (const f of flows.onlyB)
    found.push({
      kind: 'flow-only-in-b',
      a: 0,
      b: f.packets.length,
      where: { flow: f.name, packetB: f.firstIndex },
      text: `${f.name}: ${f.packets.length} packets in B, none in A`,
    });
  if (a.invalidFrames !== b.invalidFrames)
    found.push({
      kind: 'invalid-frames',
      a: a.invalidFrames,
      b: b.invalidFrames,
      where: {},
      text: `${a.invalidFrames} invalid frames in A, ${b.invalidFrames} in B`,
    });
  if (a.completions && b.completions) compareCompletions(a.completions, b.completions, found);
  if (a.counters && b.counters) compareCounters(a.counters, b.counters, found);
  const differ = new Set(profileDifferences(a.profile ?? IBTA_PROFILE, b.profile ?? IBTA_PROFILE));
  const differences = grouped(found, a.profile && b.profile ? differ : new Set(), opts);
  const unexplained = differences.filter((d) => !d.allowed && (opts.strict || d.explainedBy === undefined)).length;
  const summary = (r: RunRecord, f: Flow[]) => ({
    label: r.label,
    packets: r.packets.length,
    flows: f.length,
    retransmissions: retransmissions(f),
    invalidFrames: r.invalidFrames,
    ...(r.profile ? { profile: profileName(r.profile) } : {}),
  });
  return { a: summary(a, fa), b: summary(b, fb), flows: flows.pairs.length, matchedPackets: matched, differences, unexplained, ignored: IGNORED };
}

const profileName = (p: DeviceProfile): string =>
  PROFILES[p.name] === p ? p.name : `${p.name} with ${profileDifferences(PROFILES[p.name], p).join(', ')} changed`;
