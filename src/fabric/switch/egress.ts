/**
 * One switch port's egress: a FIFO per priority, a control queue ahead of
 * them (PAUSE frames and ARP/ND answers: MAC control is never paused), the
 * PAUSE state each priority received from the far end, and the scheduler
 * that picks the next frame when the line frees: strict priority (7
 * first) or deficit-weighted round robin. Pure data and choice; the switch
 * does the accounting around it.
 */
import { PRIORITIES } from './config.js';

/** One FIFO: frames and the ingress port each came in on. */
class Fifo {
  frames: (Uint8Array | undefined)[] = [];
  inPorts: number[] = [];
  head = 0;
  bytes = 0;

  get length(): number {
    return this.frames.length - this.head;
  }

  push(f: Uint8Array, inPort: number): void {
    this.frames.push(f);
    this.inPorts.push(inPort);
    this.bytes += f.length;
  }

  headSize(): number {
    return this.frames[this.head]!.length;
  }

  /** Takes the head; `out.inPort` tells its ingress port. */
  shift(out: Dequeued): Uint8Array {
    const h = this.head;
    const f = this.frames[h]!;
    out.inPort = this.inPorts[h]!;
    this.frames[h] = undefined;
    this.head = h + 1;
    this.bytes -= f.length;
    if (this.head === this.frames.length) {
      this.frames = [];
      this.inPorts = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.frames.length) {
      this.frames = this.frames.slice(this.head);
      this.inPorts = this.inPorts.slice(this.head);
      this.head = 0;
    }
    return f;
  }

  clear(): void {
    this.frames = [];
    this.inPorts = [];
    this.head = 0;
    this.bytes = 0;
  }
}

/** What `Egress.next` says about the frame it returned. */
export interface Dequeued {
  /** -1 for a control frame. */
  prio: number;
  inPort: number;
}

export class Egress {
  readonly #q: Fifo[] = Array.from({ length: PRIORITIES }, () => new Fifo());
  readonly #ctl = new Fifo();
  /** When each priority's received PAUSE ends, ps (0: not paused). */
  readonly pausedUntilPs = new Float64Array(PRIORITIES);
  readonly #dwrr: boolean;
  readonly #quantum: Float64Array;
  readonly #deficit = new Float64Array(PRIORITIES);
  #cur = 0;
  #fresh = true;

  constructor(scheduler: 'strict' | 'dwrr', weights: readonly number[], quantumBytes: number) {
    this.#dwrr = scheduler === 'dwrr';
    this.#quantum = Float64Array.from(weights, (w) => w * quantumBytes);
  }

  push(prio: number, f: Uint8Array, inPort: number): void {
    this.#q[prio]!.push(f, inPort);
  }

  pushControl(f: Uint8Array): void {
    this.#ctl.push(f, -1);
  }

  /** Frames queued at one priority (control frames excluded). */
  frames(prio: number): number {
    return this.#q[prio]!.length;
  }

  /** Bytes queued at one priority. */
  bytes(prio: number): number {
    return this.#q[prio]!.bytes;
  }

  /** Bytes queued at every priority. */
  totalBytes(): number {
    let s = 0;
    for (const q of this.#q) s += q.bytes;
    return s;
  }

  #eligible(p: number, nowPs: number): boolean {
    return this.#q[p]!.length > 0 && this.pausedUntilPs[p]! <= nowPs;
  }

  /** Is any frame waiting that only a PAUSE holds back? Returns when the earliest such pause ends (ps), or -1. */
  heldUntilPs(nowPs: number): number {
    let t = -1;
    for (let p = 0; p < PRIORITIES; p++) {
      const u = this.pausedUntilPs[p]!;
      if (this.#q[p]!.length > 0 && u > nowPs && (t < 0 || u < t)) t = u;
    }
    return t;
  }

  /** The next frame to send at `nowPs`, or null (nothing, or all paused). */
  next(nowPs: number, out: Dequeued): Uint8Array | null {
    if (this.#ctl.length > 0) {
      out.prio = -1;
      return this.#ctl.shift(out);
    }
    if (!this.#dwrr) {
      for (let p = PRIORITIES - 1; p >= 0; p--) {
        if (this.#eligible(p, nowPs)) {
          out.prio = p;
          return this.#q[p]!.shift(out);
        }
      }
      return null;
    }
    let any = false;
    for (let p = 0; p < PRIORITIES; p++) if (this.#eligible(p, nowPs)) any = true;
    if (!any) return null;
    for (;;) {
      const p = this.#cur;
      if (!this.#eligible(p, nowPs)) {
        if (this.#q[p]!.length === 0) this.#deficit[p] = 0;
        this.#advance();
        continue;
      }
      if (this.#fresh) {
        this.#deficit[p] += this.#quantum[p]!;
        this.#fresh = false;
      }
      const q = this.#q[p]!;
      const size = q.headSize();
      if (size <= this.#deficit[p]!) {
        this.#deficit[p] -= size;
        out.prio = p;
        const f = q.shift(out);
        if (q.length === 0) {
          this.#deficit[p] = 0;
          this.#advance();
        }
        return f;
      }
      this.#advance();
    }
  }

  #advance(): void {
    this.#cur = (this.#cur + 1) % PRIORITIES;
    this.#fresh = true;
  }

  /** Drops everything queued (link down); calls `each` with every data frame's priority, ingress port and size. */
  flush(each: (prio: number, inPort: number, size: number) => void): number {
    let n = this.#ctl.length;
    this.#ctl.clear();
    const d: Dequeued = { prio: 0, inPort: 0 };
    for (let p = 0; p < PRIORITIES; p++) {
      const q = this.#q[p]!;
      while (q.length > 0) {
        const f = q.shift(d);
        each(p, d.inPort, f.length);
        n++;
      }
    }
    return n;
  }
}
