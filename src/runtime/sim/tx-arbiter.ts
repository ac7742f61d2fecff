/**
 * The transmit arbiter of a simulated port's MAC: one FIFO per transmit
 * priority (0..7) plus one for MAC Control frames (PAUSE / PFC, which no
 * pause holds), each frame with the time its DMA reads and transmit stages
 * are done. The next frame to the line is the head of the highest lane
 * that is ready and not paused by the far end (strict priority, the
 * control lane first); a paused lane waits without holding up the others.
 */
import { TimedQueue } from '../../fabric/timed-queue.js';
import type { PriorityPause } from '../../pipeline/pfc.js';

/** Lanes 0..7 are the priorities; this one carries MAC Control frames. */
export const CONTROL_LANE = 8;
const LANES = 9;

/** One FIFO: its frames with their ready times (a queue that keeps its storage), and the last ready time. */
class Lane {
  readonly q = new TimedQueue();
  lastReady = 0;
}

export class TxArbiter {
  readonly #lanes: Lane[] = Array.from({ length: LANES }, () => new Lane());
  /** Frames in all lanes. */
  size = 0;
  /** Bit i set while lane i has a frame: the scans visit only those (usually one lane of nine). */
  #nonEmpty = 0;

  /** Queues `frame` on `lane`, ready at `readyNs` (never before the lane's previous frame: a FIFO). */
  push(lane: number, frame: Uint8Array, readyNs: number): void {
    const l = this.#lanes[lane]!;
    const at = readyNs < l.lastReady ? l.lastReady : readyNs;
    l.lastReady = at;
    l.q.push(frame, at);
    this.#nonEmpty |= 1 << lane;
    this.size++;
  }

  /** Puts a frame the line gave back at the head of its lane, ready now. */
  unshift(lane: number, frame: Uint8Array, nowNs: number): void {
    this.#lanes[lane]!.q.unshift(frame, nowNs);
    this.#nonEmpty |= 1 << lane;
    this.size++;
  }

  /** The lane whose head goes next at `nowNs`, or -1 when none may. */
  pick(nowNs: number, pause: PriorityPause): number {
    const paused = pause.pausedMask;
    // Highest lane first.
    for (let m = this.#nonEmpty; m !== 0; ) {
      const i = 31 - Math.clz32(m);
      m &= ~(1 << i);
      if (this.#lanes[i]!.q.firstAt() > nowNs) continue;
      if (i !== CONTROL_LANE && paused !== 0 && pause.isPaused(i, nowNs)) continue;
      return i;
    }
    return -1;
  }

  /** The first time after `nowNs` a head may go (ready, and its pause over), or Infinity when empty. */
  nextNs(nowNs: number, pause: PriorityPause): number {
    let t = Infinity;
    for (let m = this.#nonEmpty; m !== 0; m &= m - 1) {
      const i = 31 - Math.clz32(m & -m);
      let at = this.#lanes[i]!.q.firstAt();
      if (i !== CONTROL_LANE && pause.isPaused(i, nowNs)) at = Math.max(at, pause.resumeNs(i));
      if (at < t) t = at;
    }
    return t;
  }

  /** Takes the head of `lane` (after `pick` chose it). */
  take(lane: number): Uint8Array {
    const q = this.#lanes[lane]!.q;
    this.size--;
    const f = q.shift();
    if (q.length === 0) this.#nonEmpty &= ~(1 << lane);
    return f;
  }

  /** Frames waiting on lanes the far end holds at `nowNs`. */
  held(nowNs: number, pause: PriorityPause): number {
    if (pause.pausedMask === 0) return 0;
    let n = 0;
    for (let i = 0; i < CONTROL_LANE; i++) if (pause.isPaused(i, nowNs)) n += this.#lanes[i]!.q.length;
    return n;
  }
}
