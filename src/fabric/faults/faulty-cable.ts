/**
 * Faults on a cable, for the realtime runtime, where frames go straight
 * into a `CableEnd` with no link model to host a fault hook. A
 * `FaultyCableEnd` wraps the sending end and asks the injector about every
 * frame it sends: drop, corrupt, duplicate and reorder act at once; a delay
 * waits on a timer the runtime hands in (`setTimeout`, or a fake in tests).
 * Frames coming the other way pass untouched: to fault both directions,
 * wrap both ends with one injector.
 *
 * Timing here is the machine's: the clock is wall time, a delay is as
 * precise as the timer (Node's setTimeout rounds to whole milliseconds, at
 * least 1), and which frame meets which rule depends on how the threads
 * happened to interleave. The seed fixes the dice, not the schedule.
 */
import type { CableEnd, CableStats, FrameHandler } from '../cable.js';
import type { FaultDirection } from './rules.js';
import type { FaultInjector, FaultVerdict } from './injector.js';

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
  readonly #now: () => number;
  readonly #setTimer: (ms: number, fn: () => void) => unknown;
  #closed = false;
  #delayPending = 0;
  #delayedAfterClose = 0;

  constructor(inner: CableEnd, injector: FaultInjector, opts: FaultyCableEndOptions) {
    this.inner = inner;
    this.injector = injector;
    this.#dir = opts.direction;
    this.#now = opts.nowNs;
    this.#setTimer = opts.setTimer;
  }

  send(frame: Uint8Array): void {
    if (this.#closed) {
      this.inner.send(frame); // the inner end counts it as dropped
      return;
    }
    const v: FaultVerdict = this.injector.apply(frame, this.#now(), this.#dir);
    switch (v.kind) {
      case 'pass':
        this.inner.send(frame);
        break;
      case 'replace':
        this.inner.send(v.frame);
        break;
      case 'duplicate':
        for (let i = 0; i <= v.count; i++) this.inner.send(frame);
        break;
      case 'delay': {
        // The sender may reuse its buffer when send returns.
        const copy = frame.slice();
        this.#delayPending++;
        this.#setTimer(v.ns / 1e6, () => {
          this.#delayPending--;
          if (this.#closed) this.#delayedAfterClose++;
          else this.inner.send(copy);
        });
        break;
      }
      case 'drop':
      case 'hold':
        break;
    }
    if (v.release) for (const f of v.release) this.inner.send(f);
  }

  /** Sends, now, the frames the injector still holds for reorder in this direction. */
  flush(): number {
    const frames = this.injector.flush(this.#dir);
    for (const f of frames) this.inner.send(f);
    return frames.length;
  }

  onReceive(handler: FrameHandler | null): void {
    this.inner.onReceive(handler);
  }

  /** Closes the inner end; frames still held or waiting on a delay are not sent. */
  close(): void {
    this.#closed = true;
    this.injector.flush(this.#dir);
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
