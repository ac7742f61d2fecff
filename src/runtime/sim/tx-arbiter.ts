/**
 * The transmit arbiter of a simulated port's MAC: one FIFO per transmit
 * priority (0..7) plus one for MAC Control frames (PAUSE / PFC, which no
 * pause holds), each frame with the time its DMA reads and transmit stages
 * are done. The next frame to the line is the head of the highest lane
 * that is ready and not paused by the far end (strict priority, the
 * control lane first); a paused lane waits without holding up the others.
 */
import type { PriorityPause } from '../../pipeline/pfc.js';

/** Lanes 0..7 are the priorities; this one carries MAC Control frames. */
export const CONTROL_LANE = 8;
const LANES = 9;

class Lane {
  frames: (Uint8Array | undefined)[] = [];
  ready: number[] = [];
  head = 0;
  lastReady = 0;

  get size(): number {
    return this.frames.length - this.head;
  }

  compact(): void {
    if (this.head === this.frames.length) {
      this.frames = [];
      this.ready = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.frames.length) {
      this.frames = this.frames.slice(this.head);
      this.ready = this.ready.slice(this.head);
      this.head = 0;
    }
  }
}

export class TxArbiter {
  readonly #lanes: Lane[] = Array.from({ length: LANES }, () => new Lane());
  /** Frames in all lanes. */
  size = 0;

  /** Queues `frame` on `lane`, ready at `readyNs` (never before the lane's previous frame: a FIFO). */
  push(lane: number, frame: Uint8Array, readyNs: number): void {
    const l = this.#lanes[lane]!;
    const at = readyNs < l.lastReady ? l.lastReady : readyNs;
    l.lastReady = at;
    l.frames.push(frame);
    l.ready.push(at);
    this.size++;
  }

  /** Puts a frame the line gave back at the head of its lane, ready now. */
  unshift(lane: number, frame: Uint8Array, nowNs: number): void {
    const l = this.#lanes[lane]!;
    if (l.head > 0) {
      l.head--;
      l.frames[l.head] = frame;
      l.ready[l.head] = nowNs;
    } else {
      l.frames.unshift(frame);
      l.ready.unshift(nowNs);
    }
    this.size++;
  }

  /** The lane whose head goes next at `nowNs`, or -1 when none may. */
  pick(nowNs: number, pause: PriorityPause): number {
    const paused = pause.pausedMask;
    for (let i = LANES - 1; i >= 0; i--) {
      const l = this.#lanes[i]!;
      if (l.head === l.frames.length || l.ready[l.head]! > nowNs) continue;
      if (i !== CONTROL_LANE && paused !== 0 && pause.isPaused(i, nowNs)) continue;
      return i;
    }
    return -1;
  }

  /** The first time after `nowNs` a head may go (ready, and its pause over), or Infinity when empty. */
  nextNs(nowNs: number, pause: PriorityPause): number {
    let t = Infinity;
    for (let i = 0; i < LANES; i++) {
      const l = this.#lanes[i]!;
      if (l.head === l.frames.length) continue;
      let at = l.ready[l.head]!;
      if (i !== CONTROL_LANE && pause.isPaused(i, nowNs)) at = Math.max(at, pause.resumeNs(i));
      if (at < t) t = at;
    }
    return t;
  }

  /** Takes the head of `lane` (after `pick` chose it). */
  take(lane: number): Uint8Array {
    const l = this.#lanes[lane]!;
    const f = l.frames[l.head]!;
    l.frames[l.head] = undefined;
    l.head++;
    l.compact();
    this.size--;
    return f;
  }

  /** Frames waiting on lanes the far end holds at `nowNs`. */
  held(nowNs: number, pause: PriorityPause): number {
    if (pause.pausedMask === 0) return 0;
    let n = 0;
    for (let i = 0; i < CONTROL_LANE; i++) if (pause.isPaused(i, nowNs)) n += this.#lanes[i]!.size;
    return n;
  }
}
