/**
 * Which frames the fault rules acted on, as they acted: the simulator tells
 * of every frame a link's injector judges (SimModel.observeFaults), at either
 * end of the link, so a switch's own transmissions (the second hop) and
 * `on: rx` rules are seen as well as a host's transmissions.
 */
import { bthDestQp, bthOffset, bthPsn } from '../runtime/sim/frame-info.js';
import type { FaultVerdict } from '../fabric/faults.js';
import { LINKTYPE_INFINIBAND } from '../wire/index.js';
import type { FaultJudgement, SimModel } from '../runtime/sim/sim-model.js';
import type { RequestKeys } from './timeline.js';

/**
 * A fault rule that acted on a frame: the link and direction, the rule's
 * index, and the frame by opcode, destination QP and PSN, with
 * `occurrence`: how many frames with the same opcode, QP and PSN this
 * link's injector judged before it in the same direction and stage (0 for
 * the first transmission, 1 for the first resend ...).
 */
export interface FaultHit {
  readonly link: string;
  readonly direction: 'a->b' | 'b->a';
  readonly rule: number;
  /** What the rule did (a switch's congestion drop: 'drop'). */
  readonly kind: Exclude<FaultVerdict['kind'], 'pass'>;
  readonly opcode: number;
  readonly qpn: number;
  readonly psn: number;
  readonly occurrence: number;
  readonly ns: number;
  /** The device the frame was addressed to (by destination MAC: through a switch, not the link's far end); null or absent: the link's far end. */
  readonly to?: string | null;
  /**
   * The frame was lost because a link-down rule held the link down, not the
   * frame that took it down: a loss to count, not a rule to pin (shrink.ts).
   */
  readonly whileDown?: boolean;
  /** A duplicate: how many copies it added (each arrives beside the original). */
  readonly copies?: number;
}

/** Reports each fault hit on a RoCE frame to `onFault` as it happens; returns the remover. */
export function recordFaultHits(sim: SimModel, onFault: (hit: FaultHit) => void, keys: RequestKeys, names: readonly string[]): () => void {
  const injectors = new Map(sim.links.map((l) => [l.name, l.faults]));
  /** Per link: each link-down rule's `fired` when last looked at (a rise marks the frame that took the link down). */
  const downFired = new Map<string, number[]>();
  const seen = new Map<string, number>();
  return sim.observeFaults((j: FaultJudgement) => {
    // A native IB link's frames start with the LRH.
    const ib = injectors.get(j.link)?.linktype === LINKTYPE_INFINIBAND;
    const bth = bthOffset(j.frame, ib);
    if (bth < 0) return;
    const opcode = j.frame[bth]!;
    const qpn = bthDestQp(j.frame, bth);
    const psn = bthPsn(j.frame, bth);
    const key = `${j.link}/${j.direction}/${j.stage}/${opcode}/${qpn}/${psn}`;
    const occurrence = seen.get(key) ?? 0;
    seen.set(key, occurrence + 1);
    const v = j.verdict;
    if (v.kind === 'pass') return;
    let whileDown = false;
    if (v.kind === 'drop' && v.reason === 'link-down') {
      const rules = injectors.get(j.link)?.stats().rules ?? [];
      let fired = downFired.get(j.link);
      if (!fired) downFired.set(j.link, (fired = rules.map(() => 0)));
      const now = rules[v.rule]?.fired ?? 0;
      whileDown = now === fired[v.rule];
      fired[v.rule] = now;
    }
    const to = keys.destDevice(j.frame, ib);
    onFault({
      link: j.link,
      direction: j.direction,
      rule: v.rule,
      kind: v.kind,
      opcode,
      qpn,
      psn,
      occurrence,
      ns: j.ns,
      to: to < 0 ? null : names[to]!,
      ...(whileDown ? { whileDown } : {}),
      ...(v.kind === 'duplicate' ? { copies: v.count } : {}),
    });
  });
}
