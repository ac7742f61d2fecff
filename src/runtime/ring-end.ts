/**
 * A cable end over two FrameRings (one each way) to another thread: a
 * device engine on another worker, or the UDP I/O thread that owns a
 * socket (workers/udp-io.ts). The device loop calls `poll()` every pass,
 * so a frame pushed by the other thread reaches the pipeline within one
 * pass, whatever the event loop is doing.
 *
 * No loss inside the machine: a frame that does not fit the TX ring now
 * waits in a bounded overflow queue and goes out, in order, on a later
 * pass (the other thread is only late, not gone: it was descheduled, say).
 * Only past `overflowLimitBytes` is a frame dropped, and counted.
 */
import type { CableEnd, CableStats } from '../fabric/cable.js';
import { FrameRing } from '../fabric/frame-ring.js';

type WaitAsync = (a: Int32Array, i: number, v: number, t?: number) => { async: boolean; value: Promise<string> | string };
const waitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync;

/**
 * Atomics.waitAsync on one word, at most one waiter at a time: a loop that
 * sleeps often would otherwise leave a waiter behind at every sleep (each
 * until its timeout), and every notify would wake them all, one task each
 * on this thread's event loop. A waiter without timeout is kept while the
 * word still holds the value it waits on, and reused.
 */
export class WordWaiter {
  private array: Int32Array | null = null;
  private index = 0;
  private value = 0;
  private pending: Promise<unknown> | null = null;

  /** Resolves when `array[index]` no longer holds `value` (at once if it already does not). */
  wait(w: { readonly array: Int32Array; readonly index: number; readonly value: number }): Promise<unknown> {
    if (this.pending && this.array === w.array && this.index === w.index && this.value === w.value) return this.pending;
    const r = waitAsync(w.array, w.index, w.value);
    if (!r.async) return Promise.resolve();
    this.array = w.array;
    this.index = w.index;
    this.value = w.value;
    const p = (r.value as Promise<string>).then(() => {
      if (this.pending === p) this.pending = null;
    });
    this.pending = p;
    return p;
  }
}

/** Frames delivered per poll at most, so a flood cannot starve the transmit side. */
const RX_BUDGET = 256;

export interface RingEndStats extends CableStats {
  /** Frames that waited in the overflow queue because the TX ring was full. */
  readonly txDeferred: number;
  /** Frames dropped because even the overflow queue was full. */
  readonly txOverflowDropped: number;
}

export class RingEnd implements CableEnd {
  private handler: ((f: Uint8Array) => void) | null = null;
  private readonly s = { framesSent: 0, bytesSent: 0, framesReceived: 0, bytesReceived: 0, framesDropped: 0, txDeferred: 0, txOverflowDropped: 0 };
  private readonly tx: FrameRing;
  private readonly rx: FrameRing;
  private readonly overflow: Uint8Array[] = [];
  private readonly rxWaiter = new WordWaiter();
  private readonly txWaiter = new WordWaiter();
  private overflowHead = 0;
  private overflowBytes = 0;

  constructor(
    tx: SharedArrayBuffer,
    rx: SharedArrayBuffer,
    private readonly overflowLimitBytes = 64 << 20,
  ) {
    this.tx = FrameRing.attach(tx);
    this.rx = FrameRing.attach(rx);
  }

  send(frame: Uint8Array): void {
    if (this.overflowHead === this.overflow.length && this.tx.push(frame)) {
      this.s.framesSent++;
      this.s.bytesSent += frame.length;
      return;
    }
    if (this.overflowBytes + frame.length > this.overflowLimitBytes) {
      this.s.framesDropped++;
      this.s.txOverflowDropped++;
      return;
    }
    // The caller may reuse its buffer once send returns: keep a copy.
    this.overflow.push(frame.slice());
    this.overflowBytes += frame.length;
    this.s.txDeferred++;
  }

  onReceive(h: ((f: Uint8Array) => void) | null): void {
    this.handler = h;
  }

  close(): void {
    this.handler = null;
  }

  get stats(): RingEndStats {
    return { ...this.s };
  }

  /** Frames still waiting for room in the TX ring. */
  get pendingTx(): number {
    return this.overflow.length - this.overflowHead;
  }

  /**
   * Bytes the TX ring can take now (less what the overflow queue holds):
   * the device loop sends no more than this in a pass, so the pipeline
   * keeps its packets (and its timers do not run) while the other side is
   * behind, as a NIC's transmit waits for the link, instead of queueing
   * them where no retransmission timer can see how late they are.
   */
  txRoom(): number {
    return this.tx.capacity - this.tx.usedBytes - this.overflowBytes;
  }

  /** Set by the device loop when it held packets back for want of room: wait for room too. */
  wantRoom = false;

  /** Moves what the overflow queue holds into the TX ring, as far as it fits; returns how many. */
  flush(): number {
    let n = 0;
    while (this.overflowHead < this.overflow.length) {
      const f = this.overflow[this.overflowHead]!;
      if (!this.tx.push(f)) break;
      this.overflow[this.overflowHead++] = undefined as unknown as Uint8Array;
      this.overflowBytes -= f.length;
      this.s.framesSent++;
      this.s.bytesSent += f.length;
      n++;
    }
    if (this.overflowHead === this.overflow.length && this.overflowHead > 0) {
      this.overflow.length = 0;
      this.overflowHead = 0;
    } else if (this.overflowHead > 4096) {
      this.overflow.splice(0, this.overflowHead);
      this.overflowHead = 0;
    }
    return n;
  }

  /** Flushes the overflow queue, then delivers what the other thread sent; returns the work done. */
  poll(): number {
    let n = this.overflowHead < this.overflow.length ? this.flush() : 0;
    const h = this.handler;
    for (let i = 0; i < RX_BUDGET; i++) {
      const f = this.rx.pop();
      if (!f) break;
      this.s.framesReceived++;
      this.s.bytesReceived += f.length;
      h?.(f);
      n++;
    }
    return n;
  }

  /**
   * Resolves when there is something to do: a frame from the other thread,
   * or (with frames in the overflow queue) room in the TX ring. Resolves
   * at once when there is already something to do. No timeout: the caller
   * races it with its own timer.
   */
  wait(): Promise<unknown> {
    const d = this.rx.dataWaitWord();
    if (!d) return Promise.resolve();
    const rx = this.rxWaiter.wait(d);
    if (this.pendingTx === 0 && !this.wantRoom) return rx;
    const s = this.tx.spaceWaitWord();
    if (!s) return Promise.resolve();
    return Promise.race([rx, this.txWaiter.wait(s)]);
  }
}
