/**
 * Whether an RC requester's RETRY_EXC_ERR or RNR_RETRY_EXC_ERR was earned:
 * the wire shows the QP's retry budget used up, for reasons the scenario
 * itself caused (injected faults, receives not yet posted). A transport that
 * gives up early, or a responder that stops answering on its own, is not
 * explained and stays a failure.
 *
 * Evidence, from the run's timeline (what the requester's port sent and
 * received) and the fault hits:
 * - RETRY_EXC_ERR after retry_cnt retries (IBTA 9.7.5.1.3, C9-141: the
 *   transport retry counter counts local ACK timeouts and NAK sequence
 *   errors without forward progress; it is reset when a response makes
 *   progress): the failing WR was retransmitted from one PSN at least
 *   retry_cnt times in a row (each go-back-N round restarts at the oldest
 *   unacknowledged PSN, so a round that made progress starts later), and
 *   faults acted (or a switch dropped one for want of buffer) at least
 *   retry_cnt + 1 times on this QP's frames since its first packet (or that of
 *   an older WR still outstanding then: causesFrom), or
 *   some of the attempts timed out on delay (below): every failed attempt
 *   needs a cause. A NAK-sequence for a PSN the requester was about to
 *   send anyway is a retry too, though its resend follows on from the one
 *   before: the PSN's first resend after the NAK starts a round.
 * - Delay: a local ACK timeout shorter than the queueing on the way (the
 *   sender's own transmit FIFO, a congested egress, PFC pauses) expires
 *   with nothing lost, as it would on a real fabric. A timeout counts as
 *   delay when a whole timeout passed, with no NAK, since the resend that
 *   began the round before (a retry stops the timer, and the round's first
 *   packet starts it again; the rest of the round does not restart it, as
 *   rxe arms it only when it is not running, and no response did: one that
 *   made progress would have moved the next round to a later PSN), and at that
 *   moment some of the QP's frames were still on the way: handed to one
 *   host's port, not yet taken off the link by the other's, and not
 *   dropped (copies a duplicate made count as sent); or a request had
 *   reached the responder after its last response, and the responder's
 *   transmit FIFOs stayed non-empty from then on (its answer waiting behind
 *   its own traffic). Such a frame is a request sent at least a timeout
 *   earlier, or the answer to one: the exchange took longer than the
 *   timeout. A timer that fires early, or a responder that does not answer
 *   while it has room to, is still not explained.
 * - RNR_RETRY_EXC_ERR after rnr_retry retries (C9-149; 7 is infinite): at
 *   least rnr_retry + 1 RNR NAKs in a row for one PSN, and none of them
 *   while the responder provably held a receive (one posted before the
 *   earliest transmission the NAK can answer, and not completed by the time
 *   the NAK came back). A fault that delayed, reordered or duplicated one of
 *   the QP's frames lets one NAK answer an older transmission.
 */
import type { QpFlight, QpTimeline } from './timeline.js';

export type Exhaustion = { readonly ok: true; readonly why: string } | { readonly ok: false; readonly why: string };

const psnCmp = (a: number, b: number): number => ((a - b) << 8) >> 8;

/**
 * The retransmission rounds of WR `index` that restarted at the PSN of its
 * last round, in a row, ending with the last. Go-back-N restarts each round
 * at the oldest unacknowledged PSN and sends the WR's packets in PSN order,
 * so a round begins where a retransmission's PSN does not follow on from
 * the one before; a READ or an atomic is one request packet a round (a READ
 * resumes at the first response PSN it lacks). A NAK-sequence naming a PSN
 * starts a round at its next resend even when that follows on.
 */
export function trailingRounds(tl: QpTimeline, index: number): { psn: number; rounds: number; firstNs: number } | null {
  const w = tl.wrs[index];
  return w ? roundsOf(w.op, w.retransmissions, nakedBetween(tl)) : null;
}

/**
 * Whether a NAK-sequence naming `psn` reached the requester in (from, to]:
 * a resend of `psn` at `to`, its first since `from`, answers it, so it
 * begins a round (the requester goes back to the PSN, where it may have
 * been anyway). Since the PSN's last send, not the hand-off before: a NAK
 * can arrive just before a packet already on its way through the transmit
 * stages goes out (campaign seed 304298).
 */
function nakedBetween(tl: QpTimeline): (psn: number, from: number, to: number) => boolean {
  const naks = tl.events.filter((e) => e.kind === 'nak-psn-seq');
  return (psn, from, to) => naks.some((e) => e.psn === psn && e.ns > from && e.ns <= to);
}

/** Whether the requester handed PSN `psn` to its port at a time in [from, to). */
function handedOffBetween(f: QpFlight): (psn: number, from: number, to: number) => boolean {
  const byPsn = new Map<number, number[]>();
  for (let i = 0; i < f.reqTx.length; i++) {
    const psn = f.reqTxPsn[i]!;
    let xs = byPsn.get(psn);
    if (!xs) byPsn.set(psn, (xs = []));
    xs.push(f.reqTx[i]!);
  }
  return (psn, from, to) => {
    const xs = byPsn.get(psn);
    return xs !== undefined && lastBefore(xs, to) >= from;
  };
}

/**
 * trailingRounds over the retransmissions `rs` of a WR of operation `op`.
 * `afterTimeout(ns, prevNs)`: a resend at `ns` (the one before it at
 * `prevNs`) came after a whole timeout with nothing sent or received, so
 * the timer fired and it starts a round even if its PSN follows on (a
 * one-packet round, then progress, then a timeout at the next PSN).
 */
function roundsOf(
  op: string,
  rs: readonly { ns: number; psn: number }[],
  naked: (psn: number, from: number, to: number) => boolean,
  afterTimeout: (ns: number, prevNs: number) => boolean = () => false,
  sentBetween: (psn: number, from: number, to: number) => boolean = () => false,
): { psn: number; rounds: number; firstNs: number } | null {
  const onePacket = op === 'read' || op === 'fetch_add' || op === 'cmp_swap';
  const starts: { psn: number; ns: number }[] = [];
  /** When each PSN was last resent (none: only its first transmission, before any NAK naming it). */
  const lastSent = new Map<number, number>();
  for (let i = 0; i < rs.length; i++) {
    const r = rs[i]!;
    const prev = rs[i - 1];
    const nakedSince = naked(r.psn, lastSent.get(r.psn) ?? Number.NEGATIVE_INFINITY, r.ns);
    lastSent.set(r.psn, r.ns);
    // A PSN sent since the resend before (its first transmission, after a round that ended just
    // below it) is not that round's: the round resends what went before it (campaign seed 9401193).
    const follows = prev !== undefined && r.psn === ((prev.psn + 1) & 0xffffff) && !sentBetween(r.psn, prev.ns, r.ns);
    if (onePacket || !follows || afterTimeout(r.ns, prev!.ns) || nakedSince) starts.push(r);
  }
  if (starts.length === 0) return null;
  const last = starts[starts.length - 1]!.psn;
  let k = starts.length - 1;
  while (k > 0 && starts[k - 1]!.psn === last) k--;
  return { psn: last, rounds: starts.length - k, firstNs: starts[k]!.ns };
}

export interface RetryEvidence {
  readonly tl: QpTimeline;
  /** The WR that completed in error. */
  readonly index: number;
  /** retry_cnt, or Infinity when the device retries for ever (the rxe profile's 7). */
  readonly budget: number;
  /** Times (ns) faults acted on a frame of this QP's traffic (its requests, its responses), or a switch dropped one. */
  readonly faultNs: readonly number[];
  readonly errorNs: number;
  /** What tells a timeout on delay from one on loss; absent: delay explains nothing. */
  readonly delay?: DelayEvidence;
}

export interface DelayEvidence {
  readonly flight: QpFlight;
  /** The QP's local ACK timeout (ns). */
  readonly timeoutNs: number;
  /** When faults or switches dropped the QP's requests, and its responses. */
  readonly reqLostNs: readonly number[];
  readonly respLostNs: readonly number[];
  /** When duplicates added copies of the QP's requests, and of its responses (once per copy): frames that arrive without being sent. */
  readonly reqCopyNs?: readonly number[];
  readonly respCopyNs?: readonly number[];
  /**
   * When the responder's transmit FIFOs were empty: empty-from and filled-at
   * times, alternating (an odd length: empty at the end). Absent: the
   * responder is never taken to have held an answer back.
   */
  readonly responderTxIdle?: readonly number[];
  /**
   * How long a frame off the link takes to reach the transport (the receive
   * stages): until then it is still on the way, and a timer due meanwhile
   * fires first (campaign seed 9501147: a READ's answer arrived 33 ns before
   * the timeout and was taken 7 ns after it). Absent: 0.
   */
  readonly rxLatencyNs?: number;
}

/** How many of the ascending times `xs` are at or before `t`. */
function countUpTo(xs: readonly number[], t: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (xs[mid]! <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The last of the ascending times `xs` before `t`, or -Infinity. */
function lastBefore(xs: readonly number[], t: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (xs[mid]! < t) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 ? xs[lo - 1]! : Number.NEGATIVE_INFINITY;
}

/**
 * Frames of the QP still on the way at `t` (sent or copied by a duplicate,
 * not yet through the far end's receive stages, not dropped), requests and
 * responses. The counts run from the start of the run, so a copy not
 * counted as sent would hide one frame on the way for the rest of it
 * (campaign seed 9100939).
 */
function onTheWay(d: DelayEvidence, t: number): number {
  const f = d.flight;
  const copies = (xs: readonly number[] | undefined): number => (xs ? countUpTo(sorted(xs), t) : 0);
  const taken = t - (d.rxLatencyNs ?? 0);
  const req = countUpTo(f.reqTx, t) + copies(d.reqCopyNs) - countUpTo(f.reqRx, taken) - countUpTo(sorted(d.reqLostNs), t);
  const resp = countUpTo(f.respTx, t) + copies(d.respCopyNs) - countUpTo(f.respRx, taken) - countUpTo(sorted(d.respLostNs), t);
  return Math.max(0, req) + Math.max(0, resp);
}

/**
 * Whether at `t` the responder held an answer back behind its own traffic: a
 * request of the QP had reached it after the last response it handed to its
 * port, and from the latest such arrival to `t` its transmit FIFOs never
 * emptied. The pipeline hands a response over as soon as the FIFOs have room
 * and its turn comes; while they stay full other QPs' frames can take every
 * slot, but once they empty nothing is waiting, so an answer not given by
 * then was not queued (campaign seed 9100928: an ACK waited 9 µs behind the
 * responder's bulk data, past an 8.2 µs timeout).
 */
function answerHeldAtResponder(d: DelayEvidence, t: number): boolean {
  const idle = d.responderTxIdle;
  if (!idle) return false;
  const f = d.flight;
  // The latest request to arrive: the earlier ones since the last answer may be out of sequence
  // behind a lost one, dropped without an answer (campaign seed 9601568).
  const arrived = lastBefore(f.reqRx, t);
  if (arrived <= lastBefore(f.respTx, t)) return false;
  // Busy throughout [arrived, t]: not inside an empty spell at `arrived`, and the next one starts at `t` or later.
  const i = countUpTo(idle, arrived);
  return i % 2 === 0 && (i >= idle.length || idle[i]! >= t);
}

const sortedCache = new WeakMap<readonly number[], number[]>();
function sorted(xs: readonly number[]): number[] {
  let s = sortedCache.get(xs);
  if (!s) sortedCache.set(xs, (s = [...xs].sort((a, b) => a - b)));
  return s;
}

/**
 * When the timer last started before `x`, from its start at `from`: each
 * response the transport took before the timer was due may have restarted
 * it (one that made progress does; counting every one only asks more of the
 * delay).
 */
function restartedUntil(d: DelayEvidence, from: number, x: number): number {
  const lat = d.rxLatencyNs ?? 0;
  const rx = d.flight.respRx;
  let start = from;
  for (let i = countUpTo(rx, from - lat); i < rx.length; i++) {
    const taken = rx[i]! + lat;
    if (taken > x || taken >= start + d.timeoutNs) break;
    if (taken > start) start = taken;
  }
  return start;
}

/** Whether at `t` the exchange was still under way: a frame on the way, or an answer held by a busy responder. */
function delayedAt(d: DelayEvidence, t: number): boolean {
  return onTheWay(d, t) > 0 || answerHeldAtResponder(d, t);
}

/**
 * Of the moments the requester resent PSN `psn` for the last `rounds` times
 * (as it handed the frames to its port) or gave up (`errorNs`), those that
 * followed a timeout on delay (see the file comment).
 */
export function timeoutsOnDelay(tl: QpTimeline, d: DelayEvidence, psn: number, rounds: number, errorNs: number): number {
  if (!Number.isFinite(d.timeoutNs)) return 0;
  const f = d.flight;
  const resent: number[] = [];
  for (let i = 0; i < f.reqTx.length; i++) if (f.reqTxPsn[i] === psn && f.reqTx[i]! <= errorNs) resent.push(f.reqTx[i]!);
  const naks = tl.events.filter((e) => e.kind !== 'rnr-nak').map((e) => e.ns);
  let n = 0;
  for (const x of [...(rounds > 0 ? resent.slice(1).slice(-rounds) : []), errorNs]) {
    // The timer ran from the resend of `psn` before x (the round's first packet) at the latest: the
    // round's later packets, handed over as the port's FIFO made room, did not restart it (campaign
    // seed 301066), nor did a response meanwhile: one that made progress would have moved the next
    // round to a later PSN (seeds 302005, 302635). With no round at all (retry_cnt 0: the first
    // timeout ends the QP) a response may have made progress and restarted it: from the last one
    // taken before the timer was due.
    const quietFrom = rounds > 0 ? lastBefore(resent, x) : restartedUntil(d, lastBefore(resent, x), x);
    if (!Number.isFinite(quietFrom) || x - quietFrom < d.timeoutNs) continue;
    // A NAK since the last hand-off: x answered it (a NAK the requester heeded earlier sent it back
    // to a PSN, a hand-off; one it ignored stopped no timer).
    const sentFrom = lastBefore(f.reqTx, x);
    if (naks.some((ns) => ns > sentFrom && ns <= x)) continue;
    // What is still on the way when the timer fired, or just before x, was sent at least a timeout
    // earlier (a request), or answers one sent that long ago (a response), or a busy responder still
    // holds the answer: the exchange took longer than the timeout. The resend (x) can wait behind
    // the requester's own traffic long after the timer fired, and an answer arriving meanwhile
    // comes too late: the QP has gone back to resend (campaign seed 9101345).
    const fired = quietFrom + d.timeoutNs - 0.5;
    if (delayedAt(d, fired) || delayedAt(d, x - 0.5)) n++;
  }
  return n;
}

/**
 * From when a fault can have cost WR `index` a round: the first packet of
 * the oldest WR still outstanding when this one's first packet went out (or
 * this one's). Responses come in PSN order, so while an earlier READ or
 * atomic waits for its lost response the requester drops this WR's own
 * intact one (an implied NAK starts no second retry), and this WR must then
 * time out and resend: a loss before its first packet can fail one of its
 * rounds (campaign seed 8200904, retry_cnt 1).
 */
function causesFrom(tl: QpTimeline, index: number): number {
  const w = tl.wrs[index]!;
  const first = w.firstPacketNs ?? w.postedNs;
  let since = first;
  for (let j = index - 1; j >= 0; j--) {
    const o = tl.wrs[j]!;
    if (o.completedNs !== null && o.completedNs <= first) break;
    since = Math.min(since, o.firstPacketNs ?? o.postedNs);
  }
  return since;
}

export function explainRetryExhausted(e: RetryEvidence): Exhaustion {
  if (!Number.isFinite(e.budget)) return { ok: false, why: 'the device retries for ever at this retry_cnt, so it should never give up' };
  const w = e.tl.wrs[e.index];
  if (!w) return { ok: false, why: `WR ${e.index} is not in the timeline` };
  // As the requester resent (handed the frames to its port), where known: a resend may wait in the
  // port's FIFO past the moment the QP gives up, and never be seen on the line.
  const d = e.delay;
  const t = d
    ? roundsOf(
        w.op,
        d.flight.resent.get(e.index) ?? [],
        nakedBetween(e.tl),
        (ns, prevNs) => ns - Math.max(prevNs, lastBefore(d.flight.reqTx, ns), lastBefore(d.flight.respRx, ns)) >= d.timeoutNs,
        handedOffBetween(d.flight),
      )
    : trailingRounds(e.tl, e.index);
  const rounds = t?.rounds ?? 0;
  if (rounds < e.budget) return { ok: false, why: `gave up after ${rounds} retransmission round(s) from one PSN; retry_cnt ${e.budget} allows ${e.budget}` };
  const since = causesFrom(e.tl, e.index);
  const faults = e.faultNs.filter((ns) => ns >= since && ns <= e.errorNs).length;
  // retry_cnt 0: the one attempt is the first transmission, from the WR's first PSN.
  const psn = t?.psn ?? w.psnFirst;
  const delayed = e.delay ? timeoutsOnDelay(e.tl, e.delay, psn, rounds, e.errorNs) : 0;
  const onDelay = delayed > 0 ? ` and ${delayed} timeout(s) expired while its frames were still on the way` : '';
  if (faults + delayed < e.budget + 1)
    return {
      ok: false,
      why: `${rounds} round(s) failed but faults and switch drops acted on this QP's frames only ${faults} time(s) since its first packet (or the first of an older WR still outstanding then)${onDelay} (${e.budget + 1} causes needed)`,
    };
  return {
    ok: true,
    why: `${rounds} retries from PSN ${t?.psn ?? w.psnFirst} without progress (retry_cnt ${e.budget}), ${faults} fault(s) or switch drop(s) on this QP's frames${onDelay}`,
  };
}

export interface RnrEvidence {
  readonly tl: QpTimeline;
  readonly index: number;
  /** rnr_retry (7: infinite). */
  readonly rnrRetry: number;
  /** Receives the responder certainly held at a request sent at `txNs` and NAKed at `nakNs`. */
  readonly heldReceives: (txNs: number, nakNs: number) => number;
  /**
   * Times faults delayed, held back (reorder) or duplicated a frame of this
   * QP (its requests, its responses): each may let one NAK answer an older
   * transmission than the order of arrival says. Absent: none.
   */
  readonly displacingNs?: readonly number[];
}

export function explainRnrExhausted(e: RnrEvidence): Exhaustion {
  if (e.rnrRetry === 7) return { ok: false, why: 'rnr_retry 7 retries for ever, so it should never give up' };
  const naks = e.tl.events.filter((x) => x.kind === 'rnr-nak');
  if (naks.length === 0) return { ok: false, why: 'no RNR NAK reached the requester' };
  const psn = naks[naks.length - 1]!.psn;
  let k = naks.length - 1;
  while (k > 0 && naks[k - 1]!.psn === psn) k--;
  const run = naks.slice(k);
  if (run.length < e.rnrRetry + 1)
    return { ok: false, why: `gave up after ${run.length} RNR NAK(s) for PSN ${psn}; rnr_retry ${e.rnrRetry} allows ${e.rnrRetry} retries` };
  // Which transmission a NAK answers is not known (the link delays, faults may delay more): the
  // earliest one since the NAK before it holds the fewest receives, and it is the one judged.
  // A fault that delayed, reordered or duplicated one of the QP's frames may have brought a NAK
  // in late, answering an older transmission no other NAK answered (campaign seed 8400205: an
  // RNR NAK held back by a reorder arrived 2 ms after a resend sent with the receive posted);
  // each such fault excuses one NAK, judged against the earliest transmission left.
  const sent = sentTimes(e.tl, psn);
  const displacing = [...(e.displacingNs ?? [])].sort((a, b) => a - b);
  let excused = 0;
  const answered = new Set<number>();
  let after = -Infinity;
  for (const nak of run) {
    const tx = firstBetween(sent, after, nak.ns);
    after = nak.ns;
    if (tx === null) continue;
    const held = e.heldReceives(tx, nak.ns);
    if (held <= 0) {
      answered.add(tx);
      continue;
    }
    const older = sent.find((x) => x <= nak.ns && !answered.has(x));
    if (older !== undefined && excused < countUpTo(displacing, nak.ns) && e.heldReceives(older, nak.ns) <= 0) {
      excused++;
      answered.add(older);
      continue;
    }
    return { ok: false, why: `RNR NAK for PSN ${psn} at ${nak.ns} ns while the responder held ${held} receive(s) posted before the request left` };
  }
  const late = excused > 0 ? ` (${excused} of them late, answering an older transmission, after a fault delayed, reordered or duplicated the QP's frames)` : '';
  return { ok: true, why: `${run.length} RNR NAKs for PSN ${psn} in a row (rnr_retry ${e.rnrRetry}), each while no receive was posted${late}` };
}

/** When the requester sent `psn` (first transmission and retransmissions), in order. */
function sentTimes(tl: QpTimeline, psn: number): number[] {
  const out: number[] = [];
  for (const w of tl.wrs) {
    if (psnCmp(psn, w.psnFirst) < 0 || psnCmp(psn, w.psnLast) > 0) continue;
    if (w.firstPacketNs !== null && psn === w.psnFirst) out.push(w.firstPacketNs);
    for (const r of w.retransmissions) if (r.psn === psn) out.push(r.ns);
  }
  return out.sort((a, b) => a - b);
}

/** The first of the ascending times `xs` after `from` and at or before `to`. */
function firstBetween(xs: readonly number[], from: number, to: number): number | null {
  for (const x of xs) if (x > from && x <= to) return x;
  return null;
}
