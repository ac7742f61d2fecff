/**
 * `SimLink`: a point-to-point, full-duplex Ethernet link for the
 * discrete-event simulator. Each direction ("lane") is a transmit queue, a
 * transmitter that serializes one frame at a time at the link rate, and a
 * wire that delivers each frame a propagation delay after its last bit
 * left (ns-3 `PointToPointChannel`, gem5 `EtherLink`).
 *
 * Timing, per frame, exact to the picosecond:
 *
 *   serialization = (max(len, 60) + 4 FCS + 8 preamble/SFD + 12 IFG) × 8 / linkRate
 *   start         = max(end of the previous frame, time the frame was sent)
 *   arrival       = start + serialization + propagationDelay
 *
 * `len` is the frame as ports hand it to a cable (no FCS); frames shorter
 * than 60 bytes are padded on the wire, as a MAC does. The link keeps its
 * own time in integer picoseconds, so back-to-back frames do not drift
 * (a 1500-byte frame at 100 Gb/s is 121.920 ns, not 122); the scheduler's
 * clock is integer ns, so an event fires at the first whole nanosecond at
 * or after the exact time (ceil). A receiver therefore sees a frame at most
 * 999 ps late, never early, and never cumulatively late.
 *
 * Events: per lane two long-lived events, `txDone` (the transmitter may
 * take the next queued frame) and `deliver` (the earliest frame on the wire
 * has arrived), both at `WIRE_PRIORITY`. Nothing allocates a closure per
 * frame. The link reaches the scheduler only through `EventScheduler`
 * (the runtime's `Scheduler` satisfies it), so src/fabric does not import
 * the runtime.
 *
 * Cable rules (src/fabric/cable.ts): `send` copies the frame before it
 * returns; the receive handler owns the frame it is given. There is no
 * back-pressure: a frame the link cannot take (down, closed, queue full)
 * is dropped and counted.
 */
import { count, type ParamValues, resolveParams } from '../params/params.js';
import { type CableEnd, type CableStats, FabricError, type FrameHandler, newStats } from './cable.js';
import { materializePayload, sealBeforeChange, sealIcrc } from '../wire/lazy-icrc.js';
import { TimedQueue } from './timed-queue.js';
import { ceilDiv, psPerBit, TIMING_PARAMS } from './timing-params.js';

// ---- the scheduler a link is handed (STYLE §1) ------------------------------

/** What a component needs to know about one of its events. */
export interface EventHandle {
  readonly scheduled: boolean;
}

/**
 * The part of a discrete-event scheduler a fabric component uses.
 * `Scheduler` in src/runtime/sim/scheduler.ts implements it; a realtime
 * runner can implement it over its own timer wheel.
 */
export interface EventScheduler<E extends EventHandle = EventHandle> {
  /** Current time, integer ns. */
  now(): number;
  /** A new long-lived event; lower priority runs first at equal times. */
  event(name: string, priority: number, callback: () => void): E;
  /** Queues an unscheduled event at `atNs` >= now. */
  schedule(ev: E, atNs: number): void;
  /** Moves a queued event, or queues an unscheduled one, to `atNs` >= now. */
  reschedule(ev: E, atNs: number): void;
  /** Takes a queued event out. */
  deschedule(ev: E): void;
}

/**
 * Priority of the link's events: the `Priority.wire` band of
 * src/runtime/sim/scheduler.ts (a test checks they agree). Frames arriving
 * at an instant are handed over before ordinary device work at that
 * instant runs, so a device polled at t sees what arrived at t.
 */
export const WIRE_PRIORITY = -10;

// ---- parameters (STYLE §6) --------------------------------------------------

export const SIM_LINK_PARAMS = {
  linkRate: TIMING_PARAMS.linkRate,
  propagationDelay: TIMING_PARAMS.propagationDelay,
  queueLimit: count(4096, 'frames that may wait per direction behind the one being serialized; more are tail-dropped', 1, 1 << 24),
} as const;

export type SimLinkParams = ParamValues<typeof SIM_LINK_PARAMS>;

/** Validates a link configuration (DEV_ERR_BAD_CONFIG naming the path on error) into frozen values. */
export function resolveSimLinkParams(raw: Readonly<Record<string, unknown>> = {}, path = 'link'): SimLinkParams {
  return resolveParams(SIM_LINK_PARAMS, raw, path);
}

/** Preamble (7) + start-of-frame delimiter (1) + minimum inter-frame gap (12). */
export const ETH_PREAMBLE_IFG_BYTES = 20;
export const ETH_FCS_BYTES = 4;
/** Minimum frame without FCS; shorter frames are padded on the wire. */
export const ETH_MIN_FRAME_BYTES = 60;

/**
 * Bytes a native InfiniBand packet of `len` (LRH through VCRC) occupies: just
 * itself. The start / end delimiters and idles between packets are not modelled.
 */
export function ibWireBytes(len: number): number {
  return len;
}

/** Bytes a frame of `len` (no FCS) occupies on the wire, padding, FCS, preamble and IFG included. */
export function wireBytes(len: number): number {
  return (len < ETH_MIN_FRAME_BYTES ? ETH_MIN_FRAME_BYTES : len) + ETH_FCS_BYTES + ETH_PREAMBLE_IFG_BYTES;
}

// ---- fault hook -------------------------------------------------------------

/**
 * What a fault hook decides for one frame, when the frame leaves the
 * transmit queue:
 *
 * - `pass`: send it unchanged (or as the hook modified it in place).
 * - `drop`: it is serialized (the line is busy for its duration, as for a
 *   frame lost on the wire) and never arrives.
 * - `replace`: serialize and deliver `frame` instead (corruption,
 *   truncation, a rewritten header). The link takes ownership of `frame`.
 * - `delay`: it arrives `ns` (a non-negative integer) later than it would;
 *   the line is not held longer, so later frames may overtake it
 *   (reordering). Frames arriving at the same picosecond keep send order.
 * - `duplicate`: it is serialized `1 + count` times back to back (`count`
 *   defaults to 1) and every copy arrives, each one serialization time
 *   after the previous.
 * - `hold`: it is not sent now (the hook kept a copy, to hand back later
 *   in a `release`); the line is not used.
 *
 * Any verdict may carry `release`: frames the hook held earlier that are
 * due now. The link owns them; they are serialized right after this
 * frame's own outcome (at once when it was dropped, held or delayed), in
 * order, and delivered normally; the hook does not see them again. This is
 * the shape of `FaultVerdict` (src/fabric/faults/injector.ts), so an
 * injector's `hook(direction)` is a `FaultHook` as it is. Extra fields a
 * verdict carries (the injector's `rule`, `reason`) are ignored.
 *
 * `Verdict.pass`, `Verdict.drop`, `Verdict.duplicate` and `Verdict.hold`
 * are shared constants: a hook that only passes and drops allocates nothing.
 */
export type Verdict = (
  | { readonly kind: 'pass' }
  | { readonly kind: 'drop' }
  | { readonly kind: 'replace'; readonly frame: Uint8Array }
  | { readonly kind: 'delay'; readonly ns: number }
  | { readonly kind: 'duplicate'; readonly count?: number }
  | { readonly kind: 'hold' }
) & { readonly release?: readonly Uint8Array[] };

export const Verdict = Object.freeze({
  pass: Object.freeze({ kind: 'pass' }) as Verdict,
  drop: Object.freeze({ kind: 'drop' }) as Verdict,
  duplicate: Object.freeze({ kind: 'duplicate' }) as Verdict,
  hold: Object.freeze({ kind: 'hold' }) as Verdict,
  replace: (frame: Uint8Array): Verdict => ({ kind: 'replace', frame }),
  delay: (ns: number): Verdict => ({ kind: 'delay', ns }),
});

/**
 * A fault injector's view of one direction. Called once per frame as it
 * starts serialization, with the link's own copy of the frame (it may read
 * or modify it in place, but must not keep it: it goes to the receiver)
 * and the current virtual time in ns. Frames made by `duplicate` are not
 * shown to the hook again. A hook that throws aborts the run (the error
 * propagates out of `send` or the scheduler).
 */
export type FaultHook = (frame: Uint8Array, nowNs: number) => Verdict;

/**
 * Told of each frame of one direction as it starts serialization, before
 * any fault hook (a sender's capture and observers). It must not change the
 * frame: a deferred ICRC stays deferred for it (wire/lazy-icrc.ts).
 */
export interface SerializeTap {
  onSerialize(frame: Uint8Array, nowNs: number): void;
}

/** Told from a link's txDone event that the transmitter has started its next frame (SimLink.onTxDone). */
export interface TxDoneListener {
  lineFree(): void;
}

/**
 * One direction's transmit side, for a sender that sends many frames: the
 * same as `SimLink.queued(dir)`, `sendOwned(dir, ...)` and `unsend(dir, ...)`
 * without looking the direction up each time.
 */
export interface LinkTransmitter {
  /** Frames waiting behind the one being serialized. */
  readonly queued: number;
  /** `sendOwned` on the end that transmits in this direction. */
  sendOwned(frame: Uint8Array): void;
  /** See `SimLink.unsend`. */
  unsend(frame: Uint8Array): boolean;
}

/** A direction: frames sent on end a travel `aToB`. */
export type LinkDir = 'aToB' | 'bToA';

// ---- counters (STYLE §7) ----------------------------------------------------

/** Counters of one direction. */
export interface SimLinkStats {
  readonly framesTransmitted: number;
  readonly bytesTransmitted: number;
  readonly busyPs: number;
  readonly framesDelivered: number;
  readonly bytesDelivered: number;
  readonly queueHighWater: number;
  readonly queueBytesHighWater: number;
  readonly droppedQueueFull: number;
  readonly droppedLinkDown: number;
  readonly faultDropped: number;
  readonly faultReplaced: number;
  readonly faultDelayed: number;
  readonly faultDuplicated: number;
  readonly faultHeld: number;
  readonly faultReleased: number;
}

export interface LinkStatDecl {
  readonly name: keyof SimLinkStats;
  readonly unit: 'frames' | 'bytes' | 'ps';
  readonly doc: string;
}

/** Descriptions of `SimLinkStats`. Utilisation is a formula: `SimLink.utilisation`. */
export const SIM_LINK_STATS: readonly LinkStatDecl[] = Object.freeze([
  { name: 'framesTransmitted', unit: 'frames', doc: 'frames serialized onto the wire (fault drops and duplicates included)' },
  { name: 'bytesTransmitted', unit: 'bytes', doc: 'bytes of framesTransmitted, as sent (no padding, FCS, preamble or IFG)' },
  { name: 'busyPs', unit: 'ps', doc: 'time the transmitter spent serializing (whole frames, counted when each starts)' },
  { name: 'framesDelivered', unit: 'frames', doc: 'frames that arrived at the far end and were handed to its cable end' },
  { name: 'bytesDelivered', unit: 'bytes', doc: 'bytes of framesDelivered' },
  { name: 'queueHighWater', unit: 'frames', doc: 'most frames ever waiting in the transmit queue (not counting the one on the wire)' },
  { name: 'queueBytesHighWater', unit: 'bytes', doc: 'most bytes ever waiting in the transmit queue' },
  { name: 'droppedQueueFull', unit: 'frames', doc: 'frames refused at send because queueLimit frames were waiting' },
  { name: 'droppedLinkDown', unit: 'frames', doc: 'frames refused while down, plus frames queued or on the wire when the link went down' },
  { name: 'faultDropped', unit: 'frames', doc: 'frames the fault hook dropped' },
  { name: 'faultReplaced', unit: 'frames', doc: 'frames the fault hook replaced' },
  { name: 'faultDelayed', unit: 'frames', doc: 'frames the fault hook delayed' },
  { name: 'faultDuplicated', unit: 'frames', doc: 'frames the fault hook duplicated (each counts once)' },
  { name: 'faultHeld', unit: 'frames', doc: 'frames the fault hook held back (not sent when dequeued)' },
  { name: 'faultReleased', unit: 'frames', doc: 'held frames the fault hook handed back, serialized after the frame they rode on' },
]);

type MutableLinkStats = { -readonly [K in keyof SimLinkStats]: number };

function newLinkStats(): MutableLinkStats {
  return {
    framesTransmitted: 0,
    bytesTransmitted: 0,
    busyPs: 0,
    framesDelivered: 0,
    bytesDelivered: 0,
    queueHighWater: 0,
    queueBytesHighWater: 0,
    droppedQueueFull: 0,
    droppedLinkDown: 0,
    faultDropped: 0,
    faultReplaced: 0,
    faultDelayed: 0,
    faultDuplicated: 0,
    faultHeld: 0,
    faultReleased: 0,
  };
}

// ---- the link ---------------------------------------------------------------

export class SimLink {
  readonly name: string;
  readonly params: SimLinkParams;
  /** The two ends; frames sent on `a` arrive at `b` and vice versa. */
  readonly a: CableEnd;
  readonly b: CableEnd;
  readonly #lanes: Readonly<Record<LinkDir, Lane>>;
  #up = true;
  #closed = false;
  /** Carries native InfiniBand packets: serialized as their bytes alone (no Ethernet padding, FCS, preamble, IFG). */
  nativeIb = false;
  #onStateChange: ((up: boolean) => void) | null = null;

  constructor(sched: EventScheduler, params: SimLinkParams = resolveSimLinkParams(), name = 'link') {
    this.name = name;
    this.params = params;
    const a = new SimEnd(this);
    const b = new SimEnd(this);
    const [num, den] = psPerBit(params.linkRate);
    const aToB = new Lane(this, sched, `${name}.aToB`, a, b, num, den);
    const bToA = new Lane(this, sched, `${name}.bToA`, b, a, num, den);
    a.lane = aToB;
    b.lane = bToA;
    this.#lanes = { aToB, bToA };
    this.a = a;
    this.b = b;
  }

  /** False while the link is down (setUp(false)) or after close(). */
  get up(): boolean {
    return this.#up && !this.#closed;
  }

  /** True once either end was closed. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Takes the link down or brings it back. Going down drops every frame
   * queued or on the wire, both ways (counted in droppedLinkDown); while
   * down, sends are dropped and counted. Coming up starts empty.
   */
  setUp(up: boolean): void {
    if (this.#closed || up === this.#up) return;
    this.#up = up;
    if (!up) {
      this.#lanes.aToB.flush('down');
      this.#lanes.bToA.flush('down');
    }
    this.#onStateChange?.(up);
  }

  /** Sets (or with null clears) `dir`'s serialize tap (SerializeTap): it runs before the fault hook. */
  setTap(dir: LinkDir, tap: SerializeTap | null): void {
    this.#lane(dir).tap = tap;
  }

  /** `dir`'s transmit side (LinkTransmitter). */
  transmitter(dir: LinkDir): LinkTransmitter {
    return this.#lane(dir);
  }

  /** Sets (or with null clears) the one listener told of setUp changes (a port's carrier). */
  onStateChange(handler: ((up: boolean) => void) | null): void {
    this.#onStateChange = handler;
  }

  /**
   * Sets (or with null clears) the fault hook of one direction. `readOnly`:
   * the hook only looks (a capture tap) and never changes a frame's bytes,
   * so a frame whose ICRC its sender deferred keeps it deferred and arrives
   * "as built" (wire/lazy-icrc.ts); such a hook calls `sealIcrc` before it
   * reads past the headers. Any other hook is handed the frame with its
   * ICRC computed, and the frame no longer counts as built.
   */
  setFaultHook(dir: LinkDir, hook: FaultHook | null, opts: { readOnly?: boolean } = {}): void {
    const lane = this.#lane(dir);
    lane.hook = hook;
    lane.hookReadOnly = hook !== null && opts.readOnly === true;
  }

  /**
   * Pull mode for one direction (a switch's egress): whenever the
   * transmitter becomes free and its own queue is empty, the link asks
   * `pull` for the next frame (null: nothing to send now) and starts it at
   * once, exactly where the previous frame ended, so the sender decides
   * what goes next at the instant the line frees (priorities, PAUSE, ECN
   * marking at dequeue). The link owns each frame pulled. A sender that
   * gets something to send while the line is idle calls `kick`.
   */
  setPull(dir: LinkDir, pull: (() => Uint8Array | null) | null): void {
    this.#lane(dir).pull = pull;
  }

  /**
   * Sets (or with null clears) the one listener of `dir` told, from the
   * link's own txDone event, that the transmitter has just started the next
   * queued frame (or found its queue empty): a sender that keeps one frame
   * waiting behind the one on the wire queues its next one from here, in
   * the same event, rather than in an event of its own at the same instant.
   */
  onTxDone(dir: LinkDir, listener: TxDoneListener | null): void {
    this.#lane(dir).afterTxDone = listener;
  }

  /** The pull source of `dir` has a frame now: start it if the line is idle (see setPull). */
  kick(dir: LinkDir): void {
    this.#lane(dir).kick();
  }

  /** True while `dir`'s transmitter is serializing a frame. */
  busy(dir: LinkDir): boolean {
    return this.#lane(dir).busy;
  }

  /** A snapshot of one direction's counters. */
  stats(dir: LinkDir): SimLinkStats {
    return { ...this.#lane(dir).s };
  }

  /** `sendOwned` on the end that transmits in `dir` (a for aToB, b for bToA). */
  sendOwned(dir: LinkDir, frame: Uint8Array): void {
    ((dir === 'aToB' ? this.a : this.b) as SimEnd).sendOwned(frame);
  }

  /** Frames waiting in one direction's transmit queue now. */
  queued(dir: LinkDir): number {
    return this.#lane(dir).queued;
  }

  /**
   * Takes `frame` back if it is the last frame waiting in `dir`'s transmit
   * queue (sent, not yet started): a MAC that was told to pause its
   * priority keeps it. Returns whether it did; the frame is the caller's
   * again and counts as never sent.
   */
  unsend(dir: LinkDir, frame: Uint8Array): boolean {
    return this.#lane(dir).unsend(frame);
  }

  /** Frames being serialized or propagating in one direction now. */
  inFlight(dir: LinkDir): number {
    return this.#lane(dir).inFlight;
  }

  /** busyPs / elapsed time: the fraction of [0, now] the transmitter was busy (at most 1). */
  utilisation(dir: LinkDir): number {
    const lane = this.#lane(dir);
    const elapsedPs = lane.sched.now() * 1000;
    return elapsedPs === 0 ? 0 : Math.min(1, lane.s.busyPs / elapsedPs);
  }

  #lane(dir: LinkDir): Lane {
    const lane = dir === 'aToB' ? this.#lanes.aToB : dir === 'bToA' ? this.#lanes.bToA : undefined;
    if (!lane) throw new FabricError('FABRIC_BAD_CONFIG', `${this.name}: no direction ${JSON.stringify(dir)} (aToB or bToA)`);
    return lane;
  }

  /** @internal Closing either end cuts the cable: frames queued or in flight are dropped at their receiver. */
  cut(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#lanes.aToB.flush('closed');
    this.#lanes.bToA.flush('closed');
  }
}

/** One direction of a link. */
class Lane implements LinkTransmitter {
  readonly link: SimLink;
  readonly sched: EventScheduler;
  readonly from: SimEnd;
  readonly to: SimEnd;
  readonly s = newLinkStats();
  hook: FaultHook | null = null;
  hookReadOnly = false;
  tap: SerializeTap | null = null;
  pull: (() => Uint8Array | null) | null = null;
  afterTxDone: TxDoneListener | null = null;
  readonly #num: number;
  readonly #den: number;
  readonly #propPs: number;
  readonly #queueLimit: number;
  readonly #txDone: EventHandle;
  readonly #deliver: EventHandle;
  /** Transmit queue: frames and the ns at which each was sent. */
  readonly #q = new TimedQueue();
  #qBytes = 0;
  /** When the transmitter is free: end of the last frame's serialization, ps. */
  #busyUntilPs = 0;
  /** On the wire, in arrival order (stable), with their arrival times, ps. */
  readonly #fl = new TimedQueue();

  constructor(link: SimLink, sched: EventScheduler, name: string, from: SimEnd, to: SimEnd, num: number, den: number) {
    this.link = link;
    this.sched = sched;
    this.from = from;
    this.to = to;
    this.#num = num;
    this.#den = den;
    this.#propPs = link.params.propagationDelay * 1000;
    this.#queueLimit = link.params.queueLimit;
    this.#txDone = sched.event(`${name}.txDone`, WIRE_PRIORITY, () => this.#onTxDone());
    this.#deliver = sched.event(`${name}.deliver`, WIRE_PRIORITY, () => this.#onDeliver());
  }

  get queued(): number {
    return this.#q.length;
  }

  get busy(): boolean {
    return this.sched.now() * 1000 < this.#busyUntilPs;
  }

  /** Pull mode: the source has a frame. Idle line: take it now; busy: make sure txDone will ask. */
  kick(): void {
    if (this.pull === null || !this.link.up) return;
    if (this.#q.length > 0 || this.sched.now() * 1000 < this.#busyUntilPs) {
      if (!this.#txDone.scheduled) this.sched.schedule(this.#txDone, ceilNs(this.#busyUntilPs));
      return;
    }
    this.#pullNext(this.sched.now() * 1000);
  }

  /** Asks the pull source for a frame and starts it at `startPs`. */
  #pullNext(startPs: number): void {
    const frame = this.pull!();
    if (frame === null) return;
    const from = this.from.s;
    from.framesSent++;
    from.bytesSent += frame.length;
    this.#startTx(frame, startPs);
    if (this.pull !== null && !this.#txDone.scheduled) this.sched.schedule(this.#txDone, ceilNs(this.#busyUntilPs));
  }

  get inFlight(): number {
    return this.#fl.length;
  }

  /**
   * A frame from `from`; the end has checked it is not closed. `owned`: the
   * sender gave the frame away (sendOwned), so the link keeps it without a
   * copy; otherwise it copies (the cable rule), a deferred ICRC computed first.
   */
  send(frame: Uint8Array, owned = false): void {
    const from = this.from.s;
    if (!this.link.up) {
      this.s.droppedLinkDown++;
      from.framesDropped++;
      return;
    }
    const queued = this.#q.length;
    const nowNs = this.sched.now();
    if (queued === 0 && nowNs * 1000 >= this.#busyUntilPs) {
      from.framesSent++;
      from.bytesSent += frame.length;
      this.#startTx(owned ? frame : sealIcrc(frame).slice(), nowNs * 1000);
      return;
    }
    if (queued >= this.#queueLimit) {
      this.s.droppedQueueFull++;
      from.framesDropped++;
      return;
    }
    from.framesSent++;
    from.bytesSent += frame.length;
    this.#q.push(owned ? frame : sealIcrc(frame).slice(), nowNs);
    this.#qBytes += frame.length;
    if (queued + 1 > this.s.queueHighWater) this.s.queueHighWater = queued + 1;
    if (this.#qBytes > this.s.queueBytesHighWater) this.s.queueBytesHighWater = this.#qBytes;
    if (!this.#txDone.scheduled) this.sched.schedule(this.#txDone, ceilNs(this.#busyUntilPs));
  }

  sendOwned(frame: Uint8Array): void {
    if (this.link.closed) {
      this.from.s.framesDropped++;
      return;
    }
    this.send(frame, true);
  }

  unsend(frame: Uint8Array): boolean {
    if (this.#q.last() !== frame) return false;
    this.#q.pop();
    this.#qBytes -= frame.length;
    this.from.s.framesSent--;
    this.from.s.bytesSent -= frame.length;
    if (this.#q.length === 0 && this.#txDone.scheduled) this.sched.deschedule(this.#txDone);
    return true;
  }

  /** The transmitter is free: start the next queued frame (or, in pull mode, the source's next). */
  #onTxDone(): void {
    if (this.#q.length === 0) {
      // Fired at the first ns at or after the end of the last frame: the next starts where it ended.
      if (this.pull !== null && this.link.up) this.#pullNext(Math.max(this.#busyUntilPs, (this.sched.now() - 1) * 1000 + 1));
      return;
    }
    const sentNs = this.#q.firstAt();
    const frame = this.#q.shift();
    this.#qBytes -= frame.length;
    const sentPs = sentNs * 1000;
    this.#startTx(frame, this.#busyUntilPs > sentPs ? this.#busyUntilPs : sentPs);
    if (this.#q.length > 0 || this.pull !== null) this.sched.schedule(this.#txDone, ceilNs(this.#busyUntilPs));
    // After the start, with the lane consistent again: the sender may queue its next frame now.
    if (this.afterTxDone !== null) this.afterTxDone.lineFree();
  }

  /** Serializes `frame` (the link's own copy) from `startPs`. */
  #startTx(frame: Uint8Array, startPs: number): void {
    let wire = frame;
    let deliver = true;
    let extraPs = 0;
    let copies = 1;
    let release: readonly Uint8Array[] | undefined;
    const hook = this.hook;
    // A hook that may change bytes sees (and may change) a complete frame: a deferred
    // ICRC is computed first, which also ends the frame's standing as built.
    if (hook !== null && !this.hookReadOnly) sealBeforeChange(frame);
    // One that only reads sees every payload byte in place (a deferred payload: wire/lazy-icrc.ts).
    else if (hook !== null) materializePayload(frame);
    if (this.tap !== null) this.tap.onSerialize(frame, this.sched.now());
    if (hook !== null) {
      const v = hook(frame, this.sched.now());
      switch (v.kind) {
        case 'pass':
          break;
        case 'drop':
          deliver = false;
          this.s.faultDropped++;
          break;
        case 'replace':
          if (!(v.frame instanceof Uint8Array)) throw new FabricError('FABRIC_BAD_CONFIG', `${this.link.name}: a replace verdict needs a Uint8Array frame`);
          wire = v.frame;
          this.s.faultReplaced++;
          break;
        case 'delay':
          if (!Number.isSafeInteger(v.ns) || v.ns < 0)
            throw new FabricError('FABRIC_BAD_CONFIG', `${this.link.name}: a delay verdict needs a non-negative integer ns, got ${v.ns}`);
          extraPs = v.ns * 1000;
          this.s.faultDelayed++;
          break;
        case 'duplicate': {
          const n = v.count ?? 1;
          if (!Number.isSafeInteger(n) || n < 1)
            throw new FabricError('FABRIC_BAD_CONFIG', `${this.link.name}: a duplicate verdict needs a count >= 1, got ${n}`);
          copies = 1 + n;
          this.s.faultDuplicated++;
          break;
        }
        case 'hold':
          copies = 0;
          this.s.faultHeld++;
          break;
        default:
          throw new FabricError('FABRIC_BAD_CONFIG', `${this.link.name}: unknown fault verdict ${JSON.stringify((v as { kind: unknown }).kind)}`);
      }
      release = v.release;
    }
    // A hook that took the link down (or cut it) has dropped this frame too.
    if (!this.link.up) {
      const lost = copies > 0 ? 1 : 0;
      const n = lost + (release?.length ?? 0);
      if (this.link.closed) this.to.s.framesDropped += n;
      else this.s.droppedLinkDown += n;
      return;
    }
    let end = startPs;
    if (copies > 0) {
      // Copies carry no mark: they get the ICRC itself.
      if (copies > 1) sealIcrc(wire);
      const serPs = ceilDiv((this.link.nativeIb ? ibWireBytes(wire.length) : wireBytes(wire.length)) * 8, this.#num, this.#den);
      for (let i = 0; i < copies; i++) {
        end += serPs;
        this.s.framesTransmitted++;
        this.s.bytesTransmitted += wire.length;
        this.s.busyPs += serPs;
        if (deliver) this.#putOnWire(i === 0 ? wire : wire.slice(), end + this.#propPs + extraPs);
      }
    }
    if (release !== undefined) {
      for (const r of release) {
        if (!(r instanceof Uint8Array)) throw new FabricError('FABRIC_BAD_CONFIG', `${this.link.name}: a released frame must be a Uint8Array`);
        const serPs = ceilDiv((this.link.nativeIb ? ibWireBytes(r.length) : wireBytes(r.length)) * 8, this.#num, this.#den);
        end += serPs;
        this.s.framesTransmitted++;
        this.s.bytesTransmitted += r.length;
        this.s.busyPs += serPs;
        this.s.faultReleased++;
        this.#putOnWire(r, end + this.#propPs);
      }
    }
    this.#busyUntilPs = end;
  }

  /** Inserts a frame in arrival order (after any arriving at the same ps). */
  #putOnWire(frame: Uint8Array, arrivePs: number): void {
    if (this.#fl.insertByTime(frame, arrivePs) === 0) this.sched.reschedule(this.#deliver, ceilNs(arrivePs));
  }

  /** Hands over every frame that has arrived by now. */
  #onDeliver(): void {
    const limitPs = this.sched.now() * 1000;
    const fl = this.#fl;
    while (fl.length > 0 && fl.firstAt() <= limitPs) {
      const frame = fl.shift();
      this.s.framesDelivered++;
      this.s.bytesDelivered += frame.length;
      this.to.deliver(frame);
    }
    if (fl.length > 0) this.sched.reschedule(this.#deliver, ceilNs(fl.firstAt()));
  }

  /** Drops everything queued and on the wire: link down, or cable cut. */
  flush(why: 'down' | 'closed'): void {
    const n = this.queued + this.inFlight;
    if (why === 'down') this.s.droppedLinkDown += n;
    else this.to.s.framesDropped += n;
    this.#q.clear();
    this.#qBytes = 0;
    this.#fl.clear();
    const nowPs = this.sched.now() * 1000;
    if (this.#busyUntilPs > nowPs) this.#busyUntilPs = nowPs;
    if (this.#txDone.scheduled) this.sched.deschedule(this.#txDone);
    if (this.#deliver.scheduled) this.sched.deschedule(this.#deliver);
  }
}

function ceilNs(ps: number): number {
  return Math.ceil(ps / 1000);
}

class SimEnd implements CableEnd {
  readonly #link: SimLink;
  /** @internal */
  readonly s = newStats();
  /** @internal The direction this end transmits on. */
  lane!: Lane;
  #handler: FrameHandler | null = null;

  constructor(link: SimLink) {
    this.#link = link;
  }

  send(frame: Uint8Array): void {
    if (this.#link.closed) {
      this.s.framesDropped++;
      return;
    }
    this.lane.send(frame);
  }

  /** Sends a frame the caller gives away: the link keeps it as its own copy (no copy made). */
  sendOwned(frame: Uint8Array): void {
    this.lane.sendOwned(frame);
  }

  onReceive(handler: FrameHandler | null): void {
    this.#handler = handler;
  }

  close(): void {
    this.#link.cut();
  }

  get stats(): CableStats {
    return { ...this.s };
  }

  /** @internal */
  deliver(frame: Uint8Array): void {
    const h = this.#handler;
    if (this.#link.closed || !h) {
      this.s.framesDropped++;
      return;
    }
    this.s.framesReceived++;
    this.s.bytesReceived += frame.length;
    h(frame);
  }
}
