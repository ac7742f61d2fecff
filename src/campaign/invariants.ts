/**
 * A seed's verdict from its run. The checks themselves are the scenario
 * runner's (an application's view: completions, bytes in memory, guard
 * bytes, atomic values, the virtual-time watchdog; docs/scenarios.md), so
 * that `rnic sim` on a saved failure finds the same thing. Here they are
 * cross-checked against the run's timeline (every posted WR completed
 * once, in order, at a time that does not go backwards) and turned into
 * failure classes: what a shrunk scenario must still show.
 */
import type { Finding, ScenarioResult } from '../scenario/scenario-runner.js';

export interface Verdict {
  readonly ok: boolean;
  /** Every distinct failure class, sorted. */
  readonly classes: readonly string[];
  /** The class of the first failure that is not a consequence of another (a flush, a WR left outstanding). */
  readonly primary: string | null;
  /** Up to 20 failed checks, as text. */
  readonly failures: readonly string[];
  /** QPs that ran out of retries as the run explains (no failure). */
  readonly exhausted: number;
}

/** The failure class of one finding: QP type, kind, and what it is about (a status, an op). */
export function classOf(f: Finding): string {
  const what = f.kind === 'error-completion' || f.kind === 'recv' ? f.status : f.kind === 'data' || f.kind === 'tail' ? f.op : '';
  return [f.type, f.kind, what].filter((x) => x !== '').join(' ');
}

/** Findings that follow from another failure rather than being one of their own. */
function consequence(f: Finding): boolean {
  return (
    (f.kind === 'error-completion' && f.status === 'IBV_WC_WR_FLUSH_ERR') || f.kind === 'outstanding' || f.kind === 'unposted' || f.kind === 'recv-missing'
  );
}

/** Timeline cross-checks: findings the runner's own bookkeeping could have missed. */
export function timelineFindings(r: ScenarioResult): Finding[] {
  const out: Finding[] = [];
  const stalled = new Set(r.stalls.map((s) => `${s.qp}/${s.from}`));
  // A pair that ran out of retries as the run explains leaves its other streams unfinished.
  const exhausted = new Set(r.exhausted.map((x) => x.qp));
  for (const q of r.timeline.qps) {
    if (exhausted.has(q.qp)) continue;
    let last = -1;
    let failed = false;
    for (const w of q.wrs) {
      const base = { qp: q.qp, from: q.from, type: '', op: w.op, status: w.status ?? '', ns: w.completedNs ?? r.endNs };
      if (w.completedNs === null) {
        if (!failed && !stalled.has(`${q.qp}/${q.from}`) && r.endedBy === 'complete')
          out.push({ ...base, kind: 'timeline', detail: `WR ${w.index} (${w.op}) has no completion in the timeline` });
        continue;
      }
      if (w.completedNs < last)
        out.push({ ...base, kind: 'timeline', detail: `WR ${w.index} completed at ${w.completedNs} ns, before WR ${w.index - 1} (${last} ns)` });
      last = w.completedNs;
      if (w.status !== 'IBV_WC_SUCCESS') failed = true;
    }
  }
  return out;
}

/** `qpTypes`: each QP's type by name (for the classes of timeline findings). */
export function judge(r: ScenarioResult, qpTypes: ReadonlyMap<string, string> = new Map()): Verdict {
  const typeOf = new Map<string, string>(qpTypes);
  for (const f of r.findings) typeOf.set(f.qp, f.type);
  const all = [...r.findings, ...timelineFindings(r).map((f) => ({ ...f, type: typeOf.get(f.qp) ?? '' }))].sort((a, b) => a.ns - b.ns);
  const classes = [...new Set(all.map(classOf))].sort();
  const first = all.find((f) => !consequence(f)) ?? all[0];
  return {
    ok: all.length === 0,
    classes,
    primary: first ? classOf(first) : null,
    failures: all.slice(0, 20).map((f) => `${f.qp}${f.from === 'b' ? ' (from b)' : ''}: ${f.detail}`),
    exhausted: r.exhausted.length,
  };
}
