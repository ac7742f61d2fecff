/**
 * Faults on a cable, for the realtime runtime, where frames go straight
 * into a `CableEnd` with no link model to host a fault hook. A
 * `FaultyCableEnd` wraps an end and asks the injector about every frame it
 * sends (the rules with `on: tx`, in this end's direction) and every frame
 * it receives (the rules with `on: rx`, in the other direction): drop,
 * corrupt, duplicate and reorder act at once; a delay waits on a timer the
 * runtime hands in (`setTimeout`, or a fake in tests). To fault both
 * directions of a wire, wrap both ends with one injector; on a UDP cable to
 * a peer the model does not run, `on: rx` rules fault what the peer sends.
 *
 * Timing here is the machine's: the clock is wall time, a delay is as
 * precise as the timer (Node's setTimeout rounds to whole milliseconds, at
 * least 1), and which frame meets which rule depends on how the threads
 * happened to interleave. The seed fixes the dice, not the schedule.
 */
import type { CableEnd, CableStats, FrameHandler } from '../cable.js';
import type { FaultDirection } from './rules.js';
import type { FaultInjector } from './injector.js';
import { carryOut } from './carry-out.js';

export interface FaultyCableEndOptions {
  /** The direction frames sent on this end travel ('a->b' when wrapping end a). */
  direction: FaultDirection;
  /** The clock for time windows and link-down times, in ns (e.g. from `process.hrtime.bigint()` minus the start). */
  nowNs: () => number;
  /** Runs `fn` after `ms` milliseconds (fractions allowed). The realtime runtime passes setTimeout. */
  setTimer: (ms: number, fn: () => void) => unknown;
}

export interface FaultyCableEndStats {
  /** Frames whose delay timer is still running. */
  readonly delayPending: number;
  /** Delayed frames whose timer fired after close (not sent). */
  readonly delayedAfterClose: number;
}

export class FaultyCableEnd implements CableEnd {
  readonly inner: CableEnd;
  readonly injector: FaultInjector;
  readonly #dir: FaultDirection;
  /** The direction of the frames this end receives. */
  readonly #rxDir: FaultDirection;
  readonly #now: () => number;
  readonly #setTimer: (ms: number, fn: () => void) => unknown;
  #closed = false;
  #delayPending = 0;
  #delayedAfterClose = 0;

  constructor(inner: CableEnd, injector: FaultInjector, opts: FaultyCableEndOptions) {
    this.inner = inner;
    this.injector = injector;
    this.#dir = opts.direction;
    this.#rxDir = opts.direction === 'a->b' ? 'b->a' : 'a->b';
    this.#now = opts.nowNs;
    this.#setTimer = opts.setTimer;
  }

  send(frame: Uint8Array): void {
    if (this.#closed) {
      this.inner.send(frame); // the inner end counts it as dropped
      return;
    }
    carryOut(
      this.injector.apply(frame, this.#now(), this.#dir, 'tx'),
      frame,
      (f) => this.inner.send(f),
      (ns, f) => this.#later(ns, () => this.inner.send(f)),
    );
  }

  /** Runs `fn` after `ns`, unless the end has closed by then. */
  #later(ns: number, fn: () => void): void {
    this.#delayPending++;
    this.#setTimer(ns / 1e6, () => {
      this.#delayPending--;
      if (this.#closed) this.#delayedAfterClose++;
      else fn();
    });
  }

  /** Sends (and delivers), now, the frames the injector still holds for reorder at this end. */
  flush(): number {
    const frames = this.injector.flush(this.#dir, 'tx');
    for (const f of frames) this.inner.send(f);
    const received = this.injector.flush(this.#rxDir, 'rx');
    for (const f of received) this.#handler?.(f);
    return frames.length + received.length;
  }

  #handler: FrameHandler | null = null;

  onReceive(handler: FrameHandler | null): void {
    this.#handler = handler;
    if (!handler || !this.injector.rules.some((r) => r.on === 'rx')) {
      this.inner.onReceive(handler); // no receive-side rules: frames go straight to the handler
      return;
    }
    this.inner.onReceive((frame) => {
      const deliver = (f: Uint8Array): void => this.#handler?.(f);
      carryOut(this.injector.apply(frame, this.#now(), this.#rxDir, 'rx'), frame, deliver, (ns, f) => this.#later(ns, () => deliver(f)));
    });
  }

  /** Closes the inner end; frames still held or waiting on a delay are not sent. */
  close(): void {
    this.#closed = true;
    this.injector.flush(this.#dir, 'tx');
    this.injector.flush(this.#rxDir, 'rx');
    this.inner.close();
  }

  /** The inner end's counters: what actually went on the cable. */
  get stats(): CableStats {
    return this.inner.stats;
  }

  get faultStats(): FaultyCableEndStats {
    return { delayPending: this.#delayPending, delayedAfterClose: this.#delayedAfterClose };
  }
}
