/**
 * The fault injector: logic over explicit state, no clock of its own, no
 * timers. A link (or `FaultyCableEnd`) asks it about each frame as the frame
 * leaves (`apply(frame, nowNs, direction)`) and does what the verdict says.
 *
 * Rules form a chain, in list order, like impairments in series: the first
 * rule that fires on a frame decides its fate, and later rules never see
 * that frame (they neither match nor count it). Before the rules, a link
 * that is down drops everything in its direction.
 *
 * For one rule and one frame the steps are, in order: direction, time
 * window, opcode / QP / PSN (a frame that passes is *matched* and counted),
 * `after`, `every`, `count`, then the probability roll. The roll happens
 * only when everything else passed, so the random stream is consumed in an
 * order fixed by the frame sequence: same seed, same frames, same faults.
 */
import { type FrameClass, classifyFrame, corruptClassified, newFrameClass } from './classify.js';
import { LINKTYPE_ETHERNET } from '../../wire/pcap.js';
import { markCe } from './ecn.js';
import { type RandomSource, mulberry32, streamSeed } from './random.js';
import {
  type FaultAction,
  type FaultDirection,
  FaultError,
  type FaultRule,
  type FaultStage,
  type ResolvedFaultRule,
  opcodeSelection,
  resolveFaultRule,
} from './rules.js';
import { formatFaultRule } from './spec.js';

/** What to do with one frame. Every kind may carry `release`: see below. */
export type FaultVerdict =
  /** Send it as it is. */
  | { readonly kind: 'pass'; readonly release?: readonly Uint8Array[] }
  /** Do not send it. `reason` 'link-down': lost because the link is down. */
  | { readonly kind: 'drop'; readonly rule: number; readonly reason: 'drop' | 'link-down'; readonly release?: readonly Uint8Array[] }
  /** Send `frame` (a corrupted copy) instead. */
  | { readonly kind: 'replace'; readonly frame: Uint8Array; readonly rule: number; readonly release?: readonly Uint8Array[] }
  /** Send it `ns` later than it would have gone; frames behind it do not wait. */
  | { readonly kind: 'delay'; readonly ns: number; readonly rule: number; readonly release?: readonly Uint8Array[] }
  /** Send it, then `count` more identical copies (1 + count frames in all). */
  | { readonly kind: 'duplicate'; readonly count: number; readonly rule: number; readonly release?: readonly Uint8Array[] }
  /** Do not send it now: the injector keeps a copy and hands it back later in a `release`. */
  | { readonly kind: 'hold'; readonly rule: number; readonly release?: readonly Uint8Array[] };

/*
 * `release`: frames held earlier (reorder) that are due now. Send them, in
 * order, right after this frame's own outcome: after the frame (pass,
 * replace, duplicate), or at once when this frame is dropped, held or
 * delayed. They are the injector's copies; the caller owns them.
 */

export type FaultVerdictKind = FaultVerdict['kind'];

/** The one frozen verdict of the common case: no allocation per frame. */
export const PASS: FaultVerdict = Object.freeze({ kind: 'pass' });
/** An ecn-mark rule's verdict: sent on, changed in place (not counted as passed). */
const MARKED: FaultVerdict = Object.freeze({ kind: 'pass' });

/** Counters of one rule. */
export interface FaultRuleStats {
  readonly index: number;
  readonly action: FaultAction;
  /** The rule in `--fault` form. */
  readonly spec: string;
  /** Frames that passed direction, window, opcode, QP and PSN. For a timed link-down: frames that met the link down. */
  readonly matched: number;
  /** Times the rule acted: frames dropped, corrupted, duplicated, delayed or held; for link-down, times the link went down. */
  readonly fired: number;
  /** link-down: frames lost while the link was down because of this rule. */
  readonly linkDownDropped: number;
}

export interface FaultStats {
  /** Frames given to `apply`. */
  readonly frames: number;
  /** Frames that went out untouched (verdict pass). */
  readonly passed: number;
  readonly dropped: number;
  readonly linkDownDropped: number;
  readonly corrupted: number;
  /** ECN-capable frames an ecn-mark rule set to CE. */
  readonly ecnMarked: number;
  /** Frames duplicated (not copies made). */
  readonly duplicated: number;
  readonly delayed: number;
  /** Frames held for reorder, and frames handed back. */
  readonly held: number;
  readonly released: number;
  readonly rules: readonly FaultRuleStats[];
}

export interface FaultStatDecl {
  readonly name: keyof Omit<FaultStats, 'rules'> | keyof Omit<FaultRuleStats, 'index' | 'action' | 'spec'>;
  readonly unit: 'frames' | 'events';
  readonly doc: string;
}

/** Descriptions of `FaultStats` and `FaultRuleStats` counters (STYLE §7). */
export const FAULT_STATS: readonly FaultStatDecl[] = Object.freeze([
  { name: 'frames', unit: 'frames', doc: 'frames the injector was asked about' },
  { name: 'passed', unit: 'frames', doc: 'frames that went out untouched' },
  { name: 'dropped', unit: 'frames', doc: 'frames dropped by a drop rule' },
  { name: 'linkDownDropped', unit: 'frames', doc: 'frames lost because the link was down' },
  { name: 'corrupted', unit: 'frames', doc: 'frames replaced by a copy with one bit flipped (bad ICRC)' },
  { name: 'ecnMarked', unit: 'frames', doc: 'ECN-capable frames marked CE by an ecn-mark rule' },
  { name: 'duplicated', unit: 'frames', doc: 'frames sent more than once' },
  { name: 'delayed', unit: 'frames', doc: 'frames sent late' },
  { name: 'held', unit: 'frames', doc: 'frames held back for reorder' },
  { name: 'released', unit: 'frames', doc: 'held frames handed back to be sent' },
  { name: 'matched', unit: 'frames', doc: 'per rule: frames that matched its direction, window, opcode, QP and PSN' },
  { name: 'fired', unit: 'events', doc: 'per rule: times it acted (a link-down: times the link went down)' },
  { name: 'linkDownDropped', unit: 'frames', doc: 'per link-down rule: frames lost while it held the link down' },
] satisfies FaultStatDecl[]);

/** A link going down (or coming back, at `upAtNs`). */
export interface LinkDownEvent {
  readonly rule: number;
  readonly directions: readonly FaultDirection[];
  readonly downAtNs: number;
  readonly upAtNs: number;
}

/** A rule acting on a frame, for traces (`fabric:fault:fired`). */
export interface FaultFiredEvent {
  readonly rule: number;
  readonly action: FaultAction;
  readonly direction: FaultDirection;
  readonly nowNs: number;
  /** -1 for a frame that is not RoCE. */
  readonly opcode: number;
  readonly destQp: number;
  readonly psn: number;
}

export interface FaultInjectorOptions {
  /**
   * Seed of the injector's own random streams, one per rule and direction
   * (mulberry32). Default 0. Ignored when `random` is given.
   */
  seed?: number;
  /**
   * A random source to use instead of `seed` (the simulator's seeded PRNG,
   * say). When it can `fork(label)`, each rule and direction gets its own
   * fork, labelled 'fault/<rule index>/<direction>'; otherwise every roll of
   * every rule, either way, is drawn from it in call order.
   */
  random?: RandomSource & { fork?: (label: string) => RandomSource };
  /** Called when a rule takes the link down (frame-triggered ones; timed ones are in `linkSchedule()` from the start). */
  onLinkDown?: (ev: LinkDownEvent) => void;
  /** Called when a rule acts on a frame. Nothing is built when absent. */
  onFired?: (ev: FaultFiredEvent) => void;
}

const DIR_BIT = { 'a->b': 1, 'b->a': 2, both: 3 } as const;
const DIRS: readonly FaultDirection[] = ['a->b', 'b->a'];

interface Compiled {
  readonly index: number;
  readonly rule: ResolvedFaultRule;
  readonly spec: string;
  readonly action: FaultAction;
  readonly dirMask: number;
  readonly winFrom: number;
  readonly winTo: number;
  /** Needs the decoder: anything but opcode 'any' without qpn / psn. */
  readonly needsDecode: boolean;
  readonly nonRoce: boolean;
  readonly opcodes: Uint8Array;
  readonly qpn: number;
  readonly psnFrom: number;
  readonly psnTo: number;
  readonly after: number;
  readonly every: number;
  readonly count: number;
  readonly p: number;
  /** A link-down at a fixed time: not evaluated per frame. */
  readonly timed: boolean;
  /** 0: the rule acts as frames are sent (tx); 1: as they are received (rx). */
  readonly stage: 0 | 1;
  /** Per direction (index 0: a->b). */
  readonly rnd: readonly [RandomSource, RandomSource];
  matched: number;
  fired: number;
  linkDownDropped: number;
}

interface Held {
  frame: Uint8Array;
  remaining: number;
}

export class FaultInjector {
  readonly rules: readonly ResolvedFaultRule[];
  readonly #c: readonly Compiled[];
  readonly #timed: readonly Compiled[];
  readonly #cls: FrameClass = newFrameClass();
  /** How the cable's frames decode: LINKTYPE_INFINIBAND on a native IB link (set by the runtime that lays the cable). */
  linktype = LINKTYPE_ETHERNET;
  #classified = false;
  /** Per direction: the link is down until this time (frame-triggered link-down), and which rule. */
  readonly #downUntil = [-1, -1];
  readonly #downRule = [-1, -1];
  /** Held for reorder, per stage and direction: index direction + 2 × stage (tx 0, rx 1). */
  readonly #held: [Held[], Held[], Held[], Held[]] = [[], [], [], []];
  readonly #onLinkDown: ((ev: LinkDownEvent) => void) | null;
  readonly #onFired: ((ev: FaultFiredEvent) => void) | null;
  #frames = 0;
  #passed = 0;
  #dropped = 0;
  #linkDownDropped = 0;
  #corrupted = 0;
  #ecnMarked = 0;
  #duplicated = 0;
  #delayed = 0;
  #heldCount = 0;
  #released = 0;

  /** `rules` may be raw data (a scenario file's list): each is checked and errors name its index. */
  constructor(rules: readonly (FaultRule | ResolvedFaultRule)[] = [], opts: FaultInjectorOptions = {}) {
    if (!Array.isArray(rules)) throw new FaultError('FAULT_BAD_RULE', 'faults: expected a list of rules');
    const seed = opts.seed ?? 0;
    if (typeof seed !== 'number' || !Number.isSafeInteger(seed)) {
      throw new FaultError('FAULT_BAD_CONFIG', `seed: expected an integer, got ${String(seed)}`, -1, 'seed');
    }
    const shared = opts.random ?? null;
    if (shared !== null && typeof shared.next !== 'function') {
      throw new FaultError('FAULT_BAD_CONFIG', 'random: expected an object with next(): number', -1, 'random');
    }
    this.rules = Object.freeze(rules.map((r, i) => resolveFaultRule(r, i)));
    this.#c = this.rules.map((rule, index): Compiled => {
      const m = rule.match;
      const sel = opcodeSelection(m.opcode);
      const rnd: [RandomSource, RandomSource] = !shared
        ? [mulberry32(streamSeed(seed, index * 2)), mulberry32(streamSeed(seed, index * 2 + 1))]
        : typeof shared.fork === 'function'
          ? [shared.fork(`fault/${index}/a->b`), shared.fork(`fault/${index}/b->a`)]
          : [shared, shared];
      return {
        index,
        rule,
        spec: formatFaultRule(rule),
        action: rule.action,
        dirMask: DIR_BIT[rule.direction],
        winFrom: m.window ? m.window[0] : 0,
        winTo: m.window && m.window[1] !== null ? m.window[1] : Infinity,
        needsDecode: !sel.nonRoce || m.qpn !== undefined || m.psn !== undefined,
        nonRoce: sel.nonRoce,
        opcodes: sel.table,
        qpn: m.qpn ?? -1,
        psnFrom: m.psn ? m.psn[0] : -1,
        psnTo: m.psn ? m.psn[1] : -1,
        after: m.after ?? 0,
        every: m.every ?? 1,
        count: m.count ?? Infinity,
        p: rule.probability ?? 1,
        timed: rule.action === 'link-down' && rule.atNs !== undefined,
        stage: rule.on === 'rx' ? 1 : 0,
        rnd,
        matched: 0,
        fired: 0,
        linkDownDropped: 0,
      };
    });
    this.#timed = this.#c.filter((c) => c.timed);
    this.#onLinkDown = opts.onLinkDown ?? null;
    this.#onFired = opts.onFired ?? null;
  }

  /** A hook for one direction of a link: `link.setFaultHook('a->b', injector.hook('a->b'))`. */
  hook(direction: FaultDirection, stage: FaultStage = 'tx'): (frame: Uint8Array, nowNs: number) => FaultVerdict {
    return (frame, nowNs) => this.apply(frame, nowNs, direction, stage);
  }

  /**
   * The fate of `frame`, leaving (stage 'tx') or arriving (stage 'rx') at
   * `nowNs` in `direction`. Only the rules of that stage are tried; a link
   * that is down drops at either. `frame` is not modified and not kept (a
   * held frame is copied).
   */
  apply(frame: Uint8Array, nowNs: number, direction: FaultDirection, stage: FaultStage = 'tx'): FaultVerdict {
    const d = direction === 'a->b' ? 0 : 1;
    const st = stage === 'rx' ? 1 : 0;
    const bit = d + 1;
    this.#frames++;
    this.#classified = false;

    const down = this.#linkDownRule(d, nowNs);
    if (down !== null) {
      down.linkDownDropped++;
      if (down.timed) down.matched++;
      this.#linkDownDropped++;
      return { kind: 'drop', rule: down.index, reason: 'link-down' };
    }

    let verdict: FaultVerdict = PASS;
    for (const r of this.#c) {
      if ((r.dirMask & bit) === 0 || r.timed || r.stage !== st) continue;
      if (nowNs < r.winFrom || nowNs >= r.winTo) continue;
      if (r.needsDecode) {
        const c = this.#classify(frame);
        if (!c.roce || r.opcodes[c.opcode] === 0) continue;
        if (r.qpn >= 0 && c.destQp !== r.qpn) continue;
        if (r.psnFrom >= 0) {
          const inRange = r.psnFrom <= r.psnTo ? c.psn >= r.psnFrom && c.psn <= r.psnTo : c.psn >= r.psnFrom || c.psn <= r.psnTo;
          if (!inRange) continue;
        }
      }
      const n = ++r.matched;
      if (n <= r.after) continue;
      if (r.every > 1 && (n - r.after) % r.every !== 0) continue;
      if (r.fired >= r.count) continue;
      if (r.p < 1 && !(r.rnd[d].next() < r.p)) continue;
      r.fired++;
      verdict = this.#fire(r, frame, nowNs, d);
      if (this.#onFired) {
        const c = this.#classify(frame);
        this.#onFired({ rule: r.index, action: r.action, direction, nowNs, opcode: c.opcode, destQp: c.destQp, psn: c.psn });
      }
      break;
    }
    if (verdict === PASS) this.#passed++;
    return this.#releaseDue(d + 2 * st, verdict, frame);
  }

  /** Whether the link is up in `direction` at `nowNs`, by the link-down rules seen so far. */
  isLinkUp(direction: FaultDirection, nowNs: number): boolean {
    return this.#linkDownRule(direction === 'a->b' ? 0 : 1, nowNs) === null;
  }

  /**
   * The link-down intervals known in advance (rules with `atNs`), so that a
   * runtime can schedule port state changes at exactly those times.
   */
  linkSchedule(): readonly LinkDownEvent[] {
    return this.#timed.map((r) => ({
      rule: r.index,
      directions: DIRS.filter((_, i) => (r.dirMask & (i + 1)) !== 0),
      downAtNs: r.rule.atNs!,
      upAtNs: r.rule.atNs! + r.rule.downForNs!,
    }));
  }

  /** Frames held for reorder in `direction` (or both), not yet released. */
  heldFrames(direction?: FaultDirection): number {
    const qs = direction === undefined ? [0, 1, 2, 3] : direction === 'a->b' ? [0, 2] : [1, 3];
    return qs.reduce((n, q) => n + this.#held[q]!.length, 0);
  }

  /**
   * Hands back every held frame of `direction` (or both, a->b first), in
   * hold order, and forgets them: for the end of a run, or a cable closing.
   */
  flush(direction?: FaultDirection, stage?: FaultStage): Uint8Array[] {
    const out: Uint8Array[] = [];
    const ds = direction === undefined ? [0, 1] : [direction === 'a->b' ? 0 : 1];
    const ss = stage === undefined ? [0, 1] : [stage === 'rx' ? 1 : 0];
    for (const s of ss) {
      for (const d of ds) {
        const q = d + 2 * s;
        for (const h of this.#held[q]!) out.push(h.frame);
        this.#held[q] = [];
      }
    }
    this.#released += out.length;
    return out;
  }

  stats(): FaultStats {
    return {
      frames: this.#frames,
      passed: this.#passed,
      dropped: this.#dropped,
      linkDownDropped: this.#linkDownDropped,
      corrupted: this.#corrupted,
      ecnMarked: this.#ecnMarked,
      duplicated: this.#duplicated,
      delayed: this.#delayed,
      held: this.#heldCount,
      released: this.#released,
      rules: this.#c.map((r) => ({
        index: r.index,
        action: r.action,
        spec: r.spec,
        matched: r.matched,
        fired: r.fired,
        linkDownDropped: r.linkDownDropped,
      })),
    };
  }

  /** One line per rule, in `--fault` form with its counters, for logs. */
  describe(): string {
    if (this.#c.length === 0) return 'faults: none';
    const lines = this.#c.map((r) => {
      const extra = r.action === 'link-down' ? `, ${r.linkDownDropped} lost while down` : '';
      return `fault #${r.index}${r.rule.name ? ` "${r.rule.name}"` : ''}: ${r.spec} (matched ${r.matched}, fired ${r.fired}${extra})`;
    });
    const held = this.heldFrames();
    if (held > 0) lines.push(`faults: ${held} frame(s) held for reorder`);
    return lines.join('\n');
  }

  #classify(frame: Uint8Array): FrameClass {
    if (!this.#classified) {
      classifyFrame(frame, this.#cls, this.linktype);
      this.#classified = true;
    }
    return this.#cls;
  }

  #linkDownRule(d: number, nowNs: number): Compiled | null {
    if (this.#downUntil[d]! > nowNs) return this.#c[this.#downRule[d]!]!;
    const bit = d + 1;
    for (const r of this.#timed) {
      const at = r.rule.atNs!;
      // A timed link-down has fired once anything has looked at the clock past its start.
      if (nowNs >= at && r.fired === 0) r.fired = 1;
      if ((r.dirMask & bit) !== 0 && nowNs >= at && nowNs < at + r.rule.downForNs!) return r;
    }
    return null;
  }

  #fire(r: Compiled, frame: Uint8Array, nowNs: number, d: number): FaultVerdict {
    const rule = r.rule;
    switch (rule.action) {
      case 'drop':
        this.#dropped++;
        return { kind: 'drop', rule: r.index, reason: 'drop' };
      case 'corrupt': {
        this.#corrupted++;
        const { frame: bad } = corruptClassified(frame, this.#classify(frame), rule.target ?? 'any', r.rnd[d]!);
        return { kind: 'replace', frame: bad, rule: r.index };
      }
      case 'ecn-mark':
        // In place, as a switch marks at egress: the link's own copy, which goes to the receiver.
        if (markCe(frame)) this.#ecnMarked++;
        return MARKED;
      case 'duplicate':
        this.#duplicated++;
        return { kind: 'duplicate', count: rule.copies ?? 1, rule: r.index };
      case 'delay':
        this.#delayed++;
        return { kind: 'delay', ns: rule.delayNs!, rule: r.index };
      case 'reorder':
        this.#heldCount++;
        // The copy is kept by #releaseDue, after the countdown: it does not count itself.
        return { kind: 'hold', rule: r.index };
      case 'link-down': {
        const upAt = nowNs + rule.downForNs!;
        const dirs: FaultDirection[] = [];
        for (let i = 0; i < 2; i++) {
          if ((r.dirMask & (i + 1)) !== 0) {
            this.#downUntil[i] = upAt;
            this.#downRule[i] = r.index;
            dirs.push(DIRS[i]!);
          }
        }
        if (this.#onLinkDown) this.#onLinkDown({ rule: r.index, directions: dirs, downAtNs: nowNs, upAtNs: upAt });
        r.linkDownDropped++;
        this.#linkDownDropped++;
        return { kind: 'drop', rule: r.index, reason: 'link-down' };
      }
    }
  }

  /**
   * Frames held in queue `d` (direction + 2 × stage) count down for each later frame that goes
   * out (pass, replace, duplicate, delay); frames dropped or held do not
   * count. Those at zero ride on this verdict's `release`.
   */
  #releaseDue(d: number, verdict: FaultVerdict, frame: Uint8Array): FaultVerdict {
    const held = this.#held[d]!;
    let release: Uint8Array[] | null = null;
    const goesOut = verdict.kind === 'pass' || verdict.kind === 'replace' || verdict.kind === 'duplicate' || verdict.kind === 'delay';
    if (held.length > 0 && goesOut) {
      let keep = 0;
      for (const h of held) {
        if (--h.remaining === 0) (release ??= []).push(h.frame);
        else held[keep++] = h;
      }
      held.length = keep;
    }
    if (verdict.kind === 'hold') {
      const r = this.#c[verdict.rule]!;
      held.push({ frame: frame.slice(), remaining: r.rule.reorderDepth ?? 1 });
    }
    if (release === null) return verdict;
    this.#released += release.length;
    return { ...verdict, release };
  }
}
