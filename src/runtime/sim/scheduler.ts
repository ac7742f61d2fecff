/**
 * The discrete-event scheduler of the sim runtime: one thread, a virtual
 * clock in integer nanoseconds, and a queue of named, long-lived events
 * (gem5 `EventQueue` style, STYLE §1).
 *
 * A component creates its events once (`new SimEvent('nic0.txDone', ...)`)
 * and reschedules them; nothing allocates per `schedule`. The time, the
 * tie-break key and the heap slot live on the event itself, so an event is
 * in the queue at most once.
 *
 * Order is total and reproducible: earlier time first; at equal times the
 * lower `priority` first (gem5: lower number = runs earlier); at equal
 * priority, the event scheduled first (a global sequence number taken at
 * `schedule`/`reschedule` time) runs first.
 *
 * While an event's callback runs, the event is no longer scheduled: the
 * callback may schedule it again (the usual "tick" pattern). That case is
 * the hot path; the queue handles it with one sift-down instead of a pop
 * plus a push (the popped root stays a hole until the next insertion or
 * peek fills it).
 *
 * The queue is a binary min-heap of event objects in a plain array. Also
 * measured (same workload as bench/sim.bench.ts, this 2-core machine):
 * a 4-ary heap (no better anywhere) and a heap whose keys sit in parallel
 * Float64Arrays (8% slower at 10 pending, 15-40% faster at 1k-10k). The
 * simplest one stays until a model keeps thousands of events pending; a
 * calendar queue would be the next step then.
 */
import { RnicError } from '../../wire/errors.js';

export type SimErrorCode =
  /** `schedule`/`reschedule` at a time before `now()`. */
  | 'SIM_ERR_PAST'
  /** A time is not a non-negative safe integer of nanoseconds. */
  | 'SIM_ERR_BAD_TIME'
  /** `schedule` of an event that is already in the queue (use `reschedule`). */
  | 'SIM_ERR_ALREADY_SCHEDULED'
  /** `deschedule` of an event that is not in the queue. */
  | 'SIM_ERR_NOT_SCHEDULED'
  /** An event belongs to (is queued in) another scheduler. */
  | 'SIM_ERR_FOREIGN_EVENT'
  /** A priority is not an integer in [PRIORITY_MIN, PRIORITY_MAX]. */
  | 'SIM_ERR_BAD_PRIORITY'
  /** `runUntil`/`runUntilIdle`/`step` called from inside an event callback. */
  | 'SIM_ERR_REENTRANT'
  /** 2^42 schedule operations in one scheduler (about 5 days at 10 M/s). */
  | 'SIM_ERR_SEQ_EXHAUSTED'
  /** A seed, label or argument of the random source is invalid. */
  | 'SIM_ERR_BAD_ARGUMENT';

export class SimError extends RnicError<SimErrorCode> {
  constructor(code: SimErrorCode, message: string) {
    super(code, message);
    this.name = 'SimError';
  }
}

/** Lowest (runs first) and highest (runs last) priority an event may have. */
export const PRIORITY_MIN = -1024;
export const PRIORITY_MAX = 1023;

/**
 * Named priority bands (gem5 `Default_Pri` and friends). At one instant,
 * lower runs first. Components pick a band and say why.
 */
export const Priority = Object.freeze({
  /** Before anything else at this instant (fault and scenario scripting). */
  first: -100,
  /** Frames arriving off a wire, so a device that runs at the same instant sees them. */
  wire: -10,
  /** Ordinary device work. */
  default: 0,
  /** Observers that must see the result of the instant (sampling counters). */
  stats: 90,
  /** Stopping the run. */
  exit: 100,
});

/* The tie-break key packs (priority, sequence) into one double:
 * (priority - PRIORITY_MIN) * 2^42 + seq < 2^11 * 2^42 = 2^53, exact. */
const SEQ_BITS = 2 ** 42;

/**
 * One named event. Long-lived: build it once, schedule it many times. The
 * callback is called with no `this`; pass an arrow function or a bound
 * method.
 */
export class SimEvent {
  readonly name: string;
  readonly priority: number;
  readonly callback: () => void;
  /** @internal Time it is scheduled for (ns), valid while scheduled. */
  _when = 0;
  /** @internal (priority band, sequence) key; see SEQ_BITS. */
  _key = 0;
  /** @internal Heap slot, or -1 when not scheduled. */
  _index = -1;
  /** @internal The scheduler it is queued in, while queued. */
  _owner: Scheduler | null = null;
  /** @internal */
  readonly _prioBase: number;

  constructor(name: string, priority: number, callback: () => void) {
    if (!Number.isInteger(priority) || priority < PRIORITY_MIN || priority > PRIORITY_MAX) {
      throw new SimError('SIM_ERR_BAD_PRIORITY', `event ${name}: priority ${priority} is not an integer in [${PRIORITY_MIN}, ${PRIORITY_MAX}]`);
    }
    this.name = name;
    this.priority = priority;
    this.callback = callback;
    this._prioBase = (priority - PRIORITY_MIN) * SEQ_BITS;
  }

  /** True while the event is in a queue (false while its own callback runs). */
  get scheduled(): boolean {
    return this._index >= 0;
  }

  /** The time it is scheduled for, in ns; -1 when not scheduled. */
  get when(): number {
    return this._index >= 0 ? this._when : -1;
  }
}

/** Called before each event runs, with the clock already at its time. */
export type EventTracer = (ev: SimEvent, nowNs: number) => void;

function less(a: SimEvent, b: SimEvent): boolean {
  return a._when < b._when || (a._when === b._when && a._key < b._key);
}

export class Scheduler {
  #now = 0;
  #seq = 0;
  #eventsRun = 0;
  /** Heap slots [0, #n); when #hole, slot 0 is empty and [1, #n) are valid. */
  #heap: SimEvent[] = [];
  #n = 0;
  #hole = false;
  #running = false;
  /** Set by interrupt(): the run in progress returns after the current event. */
  #interrupted = false;
  #tracer: EventTracer | null = null;

  /** @param startNs the clock's initial value. */
  constructor(startNs = 0) {
    checkTime(startNs);
    this.#now = startNs;
  }

  /** The virtual clock, integer nanoseconds. */
  now(): number {
    return this.#now;
  }

  /** Events run so far (all calls). */
  get eventsRun(): number {
    return this.#eventsRun;
  }

  /** Events in the queue. */
  get pending(): number {
    return this.#hole ? this.#n - 1 : this.#n;
  }

  /** Time of the next event, or Infinity when the queue is empty. */
  nextTime(): number {
    if (this.#hole) this.#fillHole();
    return this.#n > 0 ? this.#heap[0]!._when : Infinity;
  }

  /**
   * A new event (same as `new SimEvent`). Lets components that must not
   * import the runtime (src/fabric, src/pipeline) create events through
   * the scheduler they are handed; see `EventScheduler` in src/fabric/link.ts.
   */
  event(name: string, priority: number, callback: () => void): SimEvent {
    return new SimEvent(name, priority, callback);
  }

  /** Sets (or with null clears) the one tracer, called before every event. */
  setTracer(tracer: EventTracer | null): void {
    this.#tracer = tracer;
  }

  /** Puts `ev` in the queue at `atNs` (>= now). Throws if it is already queued. */
  schedule(ev: SimEvent, atNs: number): void {
    if (ev._index >= 0) {
      throw new SimError(ev._owner === this ? 'SIM_ERR_ALREADY_SCHEDULED' : 'SIM_ERR_FOREIGN_EVENT', `event ${ev.name} is already scheduled at ${ev._when}`);
    }
    this.#check(ev, atNs);
    this.#insert(ev, atNs);
  }

  /** Moves `ev` to `atNs` (>= now), or schedules it if it is not queued. It takes a new sequence number. */
  reschedule(ev: SimEvent, atNs: number): void {
    this.#check(ev, atNs);
    if (ev._index >= 0) {
      if (ev._owner !== this) throw new SimError('SIM_ERR_FOREIGN_EVENT', `event ${ev.name} is queued in another scheduler`);
      this.#remove(ev);
    }
    this.#insert(ev, atNs);
  }

  /** Takes `ev` out of the queue. Throws if it is not queued here. */
  deschedule(ev: SimEvent): void {
    if (ev._index < 0) throw new SimError('SIM_ERR_NOT_SCHEDULED', `event ${ev.name} is not scheduled`);
    if (ev._owner !== this) throw new SimError('SIM_ERR_FOREIGN_EVENT', `event ${ev.name} is queued in another scheduler`);
    this.#remove(ev);
  }

  /**
   * Runs every event at or before `tNs`, then sets the clock to `tNs`
   * (if it is later). Returns the number of events run.
   */
  runUntil(tNs: number): number {
    checkTime(tNs);
    const ran = this.#run(tNs, Infinity);
    if (tNs > this.#now) this.#now = tNs;
    return ran;
  }

  /**
   * Runs events until the queue is empty or `limit` events have run. The
   * clock stays at the last event's time. Returns the number run.
   */
  runUntilIdle(limit = Infinity): number {
    return this.#run(Infinity, limit);
  }

  /** Runs the next event, if any. */
  step(): boolean {
    return this.#run(Infinity, 1) === 1;
  }

  /**
   * Runs events at or before `tNs`, at most `limit` of them, and returns
   * early after an event that called `interrupt()`. Unlike `runUntil` the
   * clock stays at the last event's time. Returns the number run. One call
   * for what a loop of `nextTime()` and `step()` would do, without their
   * per-event entry and exit.
   */
  runBatch(tNs: number, limit: number): number {
    return this.#run(tNs, limit);
  }

  /**
   * Asks the run in progress to return once the event now running has
   * finished (the events after it stay queued). Nothing happens outside a
   * run; each run starts uninterrupted.
   */
  interrupt(): void {
    if (this.#running) this.#interrupted = true;
  }

  // ---- internals -----------------------------------------------------------

  #check(ev: SimEvent, atNs: number): void {
    if (atNs < this.#now) throw new SimError('SIM_ERR_PAST', `event ${ev.name}: time ${atNs} ns is before now (${this.#now} ns)`);
    if (!Number.isSafeInteger(atNs)) checkTime(atNs);
  }

  #run(until: number, limit: number): number {
    if (this.#running) throw new SimError('SIM_ERR_REENTRANT', 'the scheduler is already running (called from inside an event callback)');
    this.#running = true;
    this.#interrupted = false;
    let ran = 0;
    try {
      const heap = this.#heap;
      while (ran < limit) {
        if (this.#hole) this.#fillHole();
        if (this.#n === 0) break;
        const ev = heap[0]!;
        if (ev._when > until) break;
        // Pop lazily: leave a hole at the root. If the callback schedules an
        // event (typically this one again) the insertion fills the hole with
        // one sift-down.
        this.#hole = true;
        ev._index = -1;
        ev._owner = null;
        this.#now = ev._when;
        ran++;
        this.#eventsRun++;
        if (this.#tracer !== null) this.#tracer(ev, ev._when);
        const cb = ev.callback;
        cb();
        if (this.#interrupted) break;
      }
    } finally {
      if (this.#hole) this.#fillHole();
      this.#running = false;
    }
    return ran;
  }

  #insert(ev: SimEvent, atNs: number): void {
    const seq = this.#seq++;
    if (seq >= SEQ_BITS) throw new SimError('SIM_ERR_SEQ_EXHAUSTED', 'the event sequence counter is exhausted');
    ev._when = atNs;
    ev._key = ev._prioBase + seq;
    ev._owner = this;
    if (this.#hole) {
      this.#hole = false;
      this.#siftDown(ev, 0);
    } else {
      const i = this.#n++;
      this.#siftUp(ev, i);
    }
  }

  /** Fills the root hole with the last element. */
  #fillHole(): void {
    this.#hole = false;
    const heap = this.#heap;
    const last = --this.#n;
    if (last === 0) {
      heap[0] = undefined as never;
      return;
    }
    const ev = heap[last]!;
    heap[last] = undefined as never;
    this.#siftDown(ev, 0);
  }

  #remove(ev: SimEvent): void {
    if (this.#hole) this.#fillHole();
    const heap = this.#heap;
    const i = ev._index;
    ev._index = -1;
    ev._owner = null;
    const last = --this.#n;
    if (i === last) {
      heap[last] = undefined as never;
      return;
    }
    const moved = heap[last]!;
    heap[last] = undefined as never;
    if (i > 0 && less(moved, heap[(i - 1) >> 1]!)) this.#siftUp(moved, i);
    else this.#siftDown(moved, i);
  }

  /** Places `ev` at slot `i` or above, moving larger parents down. */
  #siftUp(ev: SimEvent, i: number): void {
    const heap = this.#heap;
    const when = ev._when;
    const key = ev._key;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const pe = heap[p]!;
      if (pe._when < when || (pe._when === when && pe._key < key)) break;
      heap[i] = pe;
      pe._index = i;
      i = p;
    }
    heap[i] = ev;
    ev._index = i;
  }

  /** Places `ev` at slot `i` or below, moving smaller children up. */
  #siftDown(ev: SimEvent, i: number): void {
    const heap = this.#heap;
    const n = this.#n;
    const when = ev._when;
    const key = ev._key;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      let ce = heap[c]!;
      const r = c + 1;
      if (r < n) {
        const re = heap[r]!;
        if (re._when < ce._when || (re._when === ce._when && re._key < ce._key)) {
          c = r;
          ce = re;
        }
      }
      if (when < ce._when || (when === ce._when && key < ce._key)) break;
      heap[i] = ce;
      ce._index = i;
      i = c;
    }
    heap[i] = ev;
    ev._index = i;
  }
}

function checkTime(t: number): void {
  if (!Number.isSafeInteger(t) || t < 0) {
    throw new SimError('SIM_ERR_BAD_TIME', `time ${t} is not a non-negative integer number of nanoseconds`);
  }
}
