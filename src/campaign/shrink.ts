/**
 * Shrinking a failed seed's scenario: greedy passes that each try smaller
 * variants (fewer fault rules, traffic items, QPs, WRs; smaller sizes;
 * fewer options) and keep the first one that still fails with the same
 * failure class (the same primary class, invariants.ts), until no pass
 * makes progress or the run budget is spent.
 *
 * Random faults first become pinned ones: the failing run is recorded,
 * and each probabilistic rule is replaced by one rule per frame it acted
 * on (`match` on opcode, QP, PSN, `after` the transmissions before it,
 * `count` 1). Otherwise removing anything would move every later roll of
 * the dice, and the failure with it. If the pinned scenario does not fail
 * the same way, shrinking goes on with the random rules.
 *
 * Candidates of one step are run `jobs` at a time and the first one in
 * list order that still fails is kept, and runs are counted as a serial
 * search counts them, so the result is the same on any number of jobs
 * (unless the wall-time limit cuts a search short).
 */
import type { FaultHit } from '../scenario/scenario-runner.js';
import { psnCount } from '../scenario/timeline.js';
import type { Executor } from './executor.js';
import type { ScenarioJson } from './generator.js';

type Wr = Record<string, unknown> & { op: string; size?: number };
type Item = Record<string, unknown> & { qp: string; wrs: Wr[] };

export interface ShrinkOptions {
  /** Most scenario runs spent on one failure (default 1000), and most wall time (default 2 min). */
  readonly maxRuns?: number;
  readonly maxWallMs?: number;
  /** Give up (keeping what was found) at this Date.now() time, or when `stop.requested`. */
  readonly deadline?: number;
  readonly stop?: { readonly requested: boolean };
}

export interface ShrinkResult {
  readonly scenario: ScenarioJson;
  readonly runs: number;
  /** Steps that made it smaller. */
  readonly steps: number;
}

const clone = (j: ScenarioJson): ScenarioJson => structuredClone(j);

/** Most pinned rules (every frame is tried against each, in order). */
const MAX_PINNED = 500;

function items(j: ScenarioJson): Item[] {
  return j.traffic as Item[];
}

/**
 * Drops QPs no traffic item uses. With pinned faults (QP i has QPN
 * `qpnBase` + i), rules on a dropped QP go and the QPNs of later ones move
 * down with their QPs; null: QPs stay (their QPNs must not move).
 */
function dropUnusedQps(j: ScenarioJson, qpnBase: number | null | undefined): ScenarioJson {
  if (qpnBase === null && j.faults.some((f) => (f.match as { qpn?: number } | undefined)?.qpn !== undefined)) return j;
  const used = new Set(items(j).map((t) => t.qp));
  const keep = j.qps.map((q) => used.has(q.name as string));
  if (qpnBase !== undefined && qpnBase !== null) {
    const newQpn = new Map<number, number>();
    let n = 0;
    keep.forEach((k, i) => {
      if (k) newQpn.set(qpnBase + i, qpnBase + n++);
    });
    j.faults = j.faults.filter((f) => {
      const m = f.match as { qpn?: number } | undefined;
      if (m?.qpn === undefined) return true;
      const q = newQpn.get(m.qpn);
      if (q === undefined) return m.qpn < qpnBase || m.qpn >= qpnBase + j.qps.length;
      m.qpn = q;
      return true;
    });
  }
  j.qps = j.qps.filter((_, i) => keep[i]);
  return j;
}

/** Keeps max_send_wr/max_recv_wr/cq_depth in step with what is left. */
function fitQueues(j: ScenarioJson): ScenarioJson {
  for (const q of j.qps) {
    const ts = items(j).filter((t) => t.qp === q.name);
    const depth = Math.max(1, ...ts.map((t) => (t.depth as number) ?? 1));
    const recv = Math.max(1, ...ts.map((t) => (t.recvDepth as number) ?? 1));
    if (q.max_send_wr !== undefined) q.max_send_wr = Math.max(depth, 1);
    if (q.max_recv_wr !== undefined) q.max_recv_wr = Math.max(recv, 1);
    if (q.cq_depth !== undefined) q.cq_depth = Math.max(depth, recv);
  }
  return j;
}

const needsRecv = (w: Wr) => w.op === 'send' || w.op === 'send_imm' || w.op === 'write_imm';

/** After WRs were removed: an item with no receive-consuming WR has no receive settings. */
function tidyItem(t: Item): void {
  if (!t.wrs.some(needsRecv)) {
    delete t.recvDepth;
    delete t.recvStartNs;
  }
}

/** Every candidate of one pass (each built from the current scenario); `qpnBase` as for dropUnusedQps (undefined: faults not pinned). */
type Pass = (cur: ScenarioJson, qpnBase: number | null | undefined) => ScenarioJson[];

/** Removing runs of `n` elements: halves, quarters, ... single ones. */
function chunks(n: number, keepOne: boolean): [number, number][] {
  const out: [number, number][] = [];
  for (let chunk = Math.max(1, Math.floor(n / 2)); chunk >= 1; chunk = chunk === 1 ? 0 : Math.max(1, Math.floor(chunk / 2))) {
    for (let start = 0; start + chunk <= n; start += chunk) if (!(keepOne && chunk === n)) out.push([start, chunk]);
    if (chunk === 1) break;
  }
  if (!keepOne && n > 1) out.unshift([0, n]);
  return out;
}

const passes: Pass[] = [
  // Fault rules: all of them, halves, ... single ones.
  (cur) =>
    chunks(cur.faults.length, false).map(([start, n]) => {
      const j = clone(cur);
      j.faults.splice(start, n);
      return j;
    }),
  // Whole traffic items (then their QPs if unused).
  (cur, base) =>
    items(cur).length <= 1
      ? []
      : items(cur).map((_, i) => {
          const j = clone(cur);
          j.traffic.splice(i, 1);
          return fitQueues(dropUnusedQps(j, base));
        }),
  // WRs: halves, quarters, ... single ones, per item.
  (cur, base) => {
    const out: ScenarioJson[] = [];
    items(cur).forEach((t, ti) => {
      for (const [start, n] of chunks(t.wrs.length, true)) {
        const j = clone(cur);
        const it = items(j)[ti]!;
        const old = it.wrs.slice();
        it.wrs.splice(start, n);
        tidyItem(it);
        out.push(
          renumber(
            j,
            ti,
            old,
            it.wrs.map((_, k) => (k < start ? k : k + n)),
            base,
          ),
        );
      }
    });
    return out;
  },
  // Sizes: 0, then halves.
  (cur, base) => {
    const out: ScenarioJson[] = [];
    items(cur).forEach((t, ti) =>
      t.wrs.forEach((w, wi) => {
        const sz = w.size ?? 0;
        if (sz <= 0 || w.op === 'fetch_add' || w.op === 'cmp_swap') return;
        for (const smaller of [0, Math.floor(sz / 2)]) {
          if (smaller >= sz) continue;
          const j = clone(cur);
          const old = items(j)[ti]!.wrs.map((x) => ({ ...x }));
          items(j)[ti]!.wrs[wi]!.size = smaller;
          out.push(
            renumber(
              j,
              ti,
              old,
              old.map((_, k) => k),
              base,
            ),
          );
        }
      }),
    );
    return out;
  },
  // Options: inline and unsignaled WRs become plain ones; late receives and start times go; depth 1.
  (cur) => {
    const out: ScenarioJson[] = [];
    items(cur).forEach((t, ti) => {
      for (const k of ['recvStartNs', 'startNs'] as const) {
        if (t[k] === undefined) continue;
        const j = clone(cur);
        delete items(j)[ti]![k];
        out.push(j);
      }
      for (const [k, v] of [
        ['depth', 1],
        ['recvDepth', 1],
      ] as const) {
        if (t[k] === undefined || t[k] === v) continue;
        const j = clone(cur);
        items(j)[ti]![k] = v;
        out.push(fitQueues(j));
      }
      t.wrs.forEach((w, wi) => {
        for (const k of ['inline', 'signaled'] as const) {
          if (w[k] === undefined) continue;
          const j = clone(cur);
          delete items(j)[ti]!.wrs[wi]![k];
          out.push(j);
        }
      });
    });
    return out;
  },
];

const PSN_MASK = 0xffffff;

/** PSNs a WR uses (psnCount of the runner's timeline). */
function psns(w: Wr, mtu: number, ud: boolean): number {
  return psnCount(w.op, w.size ?? 8, mtu, ud);
}

/**
 * With pinned faults, after item `ti`'s WRs changed from `old` to its
 * current list (`from[k]`: the old index of new WR k), moves the rules on
 * that item's packets to the PSNs those packets have now, and drops the
 * rules on packets that are gone, so the faults keep hitting the same
 * packets. A rule is on the item's packets when it names the item's QP
 * and the direction of its requests (request opcodes) or of their
 * responses (ACKs, READ responses, atomic ACKs).
 */
function renumber(j: ScenarioJson, ti: number, old: Wr[], from: number[], base: number | null | undefined): ScenarioJson {
  if (base === undefined || base === null) return j;
  const it = items(j)[ti]!;
  const qi = j.qps.findIndex((q) => q.name === it.qp);
  const q = j.qps[qi]!;
  const mtu = (q.mtu as number | undefined) ?? 1024;
  const ud = q.type === 'UD';
  const fromB = it.from === 'b';
  const start = ((fromB ? q.psn_b : q.psn_a) as number | undefined) ?? (fromB ? 0x2000 : 0x1000);
  const oldOff: number[] = [];
  let o = 0;
  for (const w of old) {
    oldOff.push(o);
    o += psns(w, mtu, ud);
  }
  const oldTotal = o;
  // old PSN offset -> new offset
  const map = new Map<number, number>();
  let n = 0;
  it.wrs.forEach((w, k) => {
    const src = from[k]!;
    const cnt = psns(w, mtu, ud);
    for (let p = 0; p < cnt; p++) map.set(oldOff[src]! + p, n + p);
    n += cnt;
  });
  const qpn = base + qi;
  const reqDir = fromB ? 'b->a' : 'a->b';
  j.faults = j.faults.filter((f) => {
    const m = f.match as { qpn?: number; psn?: [number, number]; opcode?: number } | undefined;
    if (!m || m.qpn !== qpn || !m.psn || typeof m.opcode !== 'number') return true;
    const response = m.opcode >= 13 && m.opcode <= 18; // RC READ responses, ACK, atomic ACK
    if ((f.direction === reqDir) === response) return true;
    const off = (m.psn[0] - start) & PSN_MASK;
    if (off >= oldTotal) return true;
    const to = map.get(off);
    if (to === undefined) return false;
    const psn = (start + to) & PSN_MASK;
    m.psn = [psn, psn];
    return true;
  });
  return j;
}

/**
 * Shrinks `json`, which fails with primary class `cls`. `jobs` candidates
 * run at a time on `exec`.
 */
export async function shrinkScenario(json: ScenarioJson, cls: string, exec: Executor, opts: ShrinkOptions = {}): Promise<ShrinkResult> {
  const maxRuns = opts.maxRuns ?? 1000;
  const deadline = Math.min(Date.now() + (opts.maxWallMs ?? 120_000), opts.deadline ?? Infinity);
  const over = () => runs >= maxRuns || Date.now() >= deadline || opts.stop?.requested === true;
  let cur = clone(json);
  let runs = 0;
  let steps = 0;
  // Runs are counted as a serial search would count them (up to the first success of a batch),
  // so that the run budget ends the search at the same point on any number of jobs.
  const fails = async (c: ScenarioJson): Promise<boolean> => {
    const v = await exec.scenario(c, String(c.name));
    return !v.ok && v.primary === cls;
  };
  // Pin the faults.
  let qpnBase: number | null | undefined;
  let pinnedNote = '';
  if (cur.faults.length > 0) {
    runs++;
    const rec = await exec.record(cur, String(cur.name));
    if (!rec.ok && rec.primary === cls) {
      // Faults after the failure began rarely matter: pin those up to a little after its onset
      // first (fewer rules), then more; at most MAX_PINNED rules.
      const tried = new Set<number>();
      for (const slack of [100_000, 1_000_000, 10_000_000, Infinity]) {
        const hits = rec.hits.filter((h) => h.ns <= rec.onsetNs + slack);
        if (hits.length > MAX_PINNED || tried.has(hits.length) || (slack === Infinity && rec.truncated)) continue;
        tried.add(hits.length);
        const pinned = clone(cur);
        pinned.faults = pinFaults(cur.faults, hits);
        runs++;
        if (await fails(pinned)) {
          cur = pinned;
          qpnBase = rec.qpnBase;
          pinnedNote = `, faults pinned to the ${hits.length} frames they hit${slack === Infinity ? '' : ` up to ${slack / 1000} µs after the failure began`}`;
          break;
        }
      }
    }
  }
  let progress = true;
  while (progress && !over()) {
    progress = false;
    for (const pass of passes) {
      // Within a pass, keep taking the first smaller candidate that still fails.
      for (;;) {
        if (over()) break;
        const cands = pass(cur, qpnBase);
        let found: ScenarioJson | null = null;
        for (let k = 0; k < cands.length && !found && !over(); k += exec.jobs) {
          const batch = cands.slice(k, k + Math.min(exec.jobs, maxRuns - runs));
          const ok = await Promise.all(batch.map(fails));
          const first = ok.indexOf(true);
          runs += first >= 0 ? first + 1 : batch.length;
          if (first >= 0) found = batch[first]!;
        }
        if (!found) break;
        cur = found;
        steps++;
        progress = true;
      }
    }
  }
  cur.description = `${String(json.description ?? '')}; shrunk (${steps} steps, ${runs} runs${pinnedNote}) keeping the failure class "${cls}"`;
  return { scenario: cur, runs, steps };
}

/**
 * One rule per frame a rule acted on, in the order they happened. A rule
 * sees only frames no earlier rule acted on (rules form a chain), so
 * `after` counts the transmissions of that frame before it minus those
 * that earlier pinned rules took.
 */
export function pinFaults(rules: readonly Record<string, unknown>[], hits: readonly FaultHit[]): Record<string, unknown>[] {
  const taken = new Map<string, number>();
  const out: Record<string, unknown>[] = [];
  for (const h of [...hits].sort((a, b) => a.ns - b.ns)) {
    const r = rules[h.rule];
    if (!r || h.whileDown) continue;
    const key = `${h.link}/${h.direction}/${r.on === 'rx' ? 'rx' : 'tx'}/${h.opcode}/${h.qpn}/${h.psn}`;
    const before = taken.get(key) ?? 0;
    taken.set(key, before + 1);
    const rule: Record<string, unknown> = {
      action: r.action,
      direction: h.direction,
      match: { opcode: h.opcode, qpn: h.qpn, psn: [h.psn, h.psn], ...(h.occurrence - before > 0 ? { after: h.occurrence - before } : {}), count: 1 },
    };
    for (const k of ['on', 'delayNs', 'copies', 'reorderDepth', 'target', 'downForNs'] as const) if (r[k] !== undefined) rule[k] = r[k];
    out.push(rule);
  }
  return out;
}
