/**
 * A cable: what a port's frames go into and come out of. Whatever is on
 * the other side (another port in this thread, a port on another worker
 * thread through a FrameRing, a UDP socket to QEMU or another model
 * process) is reached through the same `CableEnd`.
 *
 * Across a cable end a frame is copied (or transferred), never shared: the
 * sender may reuse its buffer as soon as `send` returns, and the receiver
 * owns what its handler is given.
 */
import { RnicError } from '../wire/errors.js';

/** What can go wrong building or using a cable. */
export type FabricErrorCode =
  /** An address is not a literal `host:port` the cable can use. */
  | 'FABRIC_BAD_ADDRESS'
  /** The local socket could not be bound (in use, not a local address, ...). */
  | 'FABRIC_BIND_FAILED'
  /** A parameter (size, capacity, limit) is out of range. */
  | 'FABRIC_BAD_CONFIG'
  /** A SharedArrayBuffer is not a frame ring (bad magic or size). */
  | 'FABRIC_BAD_RING'
  /** A frame can never fit (larger than the ring or the cable's limit). */
  | 'FABRIC_FRAME_TOO_LARGE'
  /** A buffer given to receive into is smaller than the frame. */
  | 'FABRIC_BUFFER_TOO_SMALL';

export class FabricError extends RnicError<FabricErrorCode> {
  constructor(code: FabricErrorCode, message: string) {
    super(code, message);
    this.name = 'FabricError';
  }
}

/** Counters every cable end keeps. Extra counters are cable-specific. */
export interface CableStats {
  readonly framesSent: number;
  readonly bytesSent: number;
  readonly framesReceived: number;
  readonly bytesReceived: number;
  /** Frames dropped at this end, either way (closed, no handler, too large, ...). */
  readonly framesDropped: number;
}

export interface StatDecl {
  readonly name: string;
  readonly unit: 'frames' | 'bytes' | 'datagrams' | 'errors';
  readonly doc: string;
}

/** Descriptions of `CableStats` (STYLE §7). */
export const CABLE_STATS: readonly StatDecl[] = Object.freeze([
  { name: 'framesSent', unit: 'frames', doc: 'frames accepted by send() and handed to the other side' },
  { name: 'bytesSent', unit: 'bytes', doc: 'bytes of the frames counted in framesSent (no FCS)' },
  { name: 'framesReceived', unit: 'frames', doc: 'frames delivered to the receive handler' },
  { name: 'bytesReceived', unit: 'bytes', doc: 'bytes of the frames counted in framesReceived' },
  { name: 'framesDropped', unit: 'frames', doc: 'frames dropped at this end, either direction (closed cable, no handler, size limits)' },
]);

export type FrameHandler = (frame: Uint8Array) => void;

export interface CableEnd {
  /**
   * Sends one Ethernet frame (no FCS). The frame is copied before return.
   * A cable has no back-pressure: a frame it cannot carry is dropped and
   * counted, as on a wire.
   */
  send(frame: Uint8Array): void;
  /**
   * Optional: sends a frame the caller gives away (it must not touch it
   * again), saving the copy. Cables that cannot take ownership leave it out.
   */
  sendOwned?(frame: Uint8Array): void;
  /** Sets (or with null clears) the one receive handler. The handler owns the frame it gets. */
  onReceive(handler: FrameHandler | null): void;
  /** Stops the cable end; later sends and arrivals are dropped and counted. Idempotent. */
  close(): void;
  /** A snapshot of the counters. */
  readonly stats: CableStats;
}

interface MutableStats {
  framesSent: number;
  bytesSent: number;
  framesReceived: number;
  bytesReceived: number;
  framesDropped: number;
}

export function newStats(): MutableStats {
  return { framesSent: 0, bytesSent: 0, framesReceived: 0, bytesReceived: 0, framesDropped: 0 };
}

export interface InProcessCableOptions {
  /**
   * Called when the queue goes from empty to non-empty, so the runtime can
   * schedule a `drain()` (the simulator as an event after the link delay,
   * the realtime runner with queueMicrotask). Never called re-entrantly
   * from inside `drain()` for frames `drain()` itself will not deliver.
   */
  onQueued?: () => void;
}

/**
 * Two cable ends in one thread.
 *
 * Delivery is deferred: `send` copies the frame into a FIFO queue and
 * returns; the runtime calls `drain()` to deliver. Why not deliver inside
 * `send`: a port answering an ARP request from inside its receive handler
 * would re-enter the sender's `transmit` mid-frame. Why not
 * `queueMicrotask`: that is a scheduler of its own, invisible to the
 * discrete-event simulator, which must decide when a frame arrives (after
 * the link's delay, ordered with its other events) and must be able to run
 * to completion synchronously. `drain()` lets each runtime choose, and
 * `onQueued` tells it when there is something to drain.
 */
export class InProcessCable {
  readonly a: CableEnd;
  readonly b: CableEnd;
  /**
   * Frames in send order, a ring of `#frames.length` (a power of two) slots
   * from `#head`; `#to` holds each one's receiving end (0 = a, 1 = b). A ring,
   * not an array of `{ to, frame }`: no object per frame, no array per drain.
   */
  #frames: (Uint8Array | null)[] = new Array<Uint8Array | null>(64).fill(null);
  #to = new Uint8Array(64);
  #head = 0;
  #count = 0;
  readonly #ends: [InProcessEnd, InProcessEnd];
  readonly #onQueued: (() => void) | null;

  constructor(opts: InProcessCableOptions = {}) {
    this.#onQueued = opts.onQueued ?? null;
    const a = new InProcessEnd(this, 0);
    const b = new InProcessEnd(this, 1);
    this.#ends = [a, b];
    this.a = a;
    this.b = b;
  }

  /** Frames waiting for `drain()`. */
  get pending(): number {
    return this.#count;
  }

  /**
   * Delivers the frames queued before this call, in send order, and returns
   * how many were handed to a handler. Frames sent by handlers during the
   * drain wait for the next call, so two chatty ports cannot loop forever
   * inside one drain.
   */
  drain(): number {
    let delivered = 0;
    for (let stop = this.#count; stop > 0; stop--) {
      const i = this.#head;
      const frame = this.#frames[i]!;
      this.#frames[i] = null;
      this.#head = (i + 1) & (this.#frames.length - 1);
      this.#count--;
      if (this.#ends[this.#to[i]!]!.deliver(frame)) delivered++;
    }
    return delivered;
  }

  /** @internal */
  enqueue(from: 0 | 1, frame: Uint8Array): void {
    const wasEmpty = this.#count === 0;
    let cap = this.#frames.length;
    if (this.#count === cap) {
      // Full: double the ring, the queued frames first in order.
      const frames = new Array<Uint8Array | null>(cap * 2).fill(null);
      const to = new Uint8Array(cap * 2);
      for (let k = 0; k < cap; k++) {
        const j = (this.#head + k) & (cap - 1);
        frames[k] = this.#frames[j]!;
        to[k] = this.#to[j]!;
      }
      this.#frames = frames;
      this.#to = to;
      this.#head = 0;
      cap *= 2;
    }
    const i = (this.#head + this.#count) & (cap - 1);
    this.#frames[i] = frame;
    this.#to[i] = from === 0 ? 1 : 0;
    this.#count++;
    if (wasEmpty && this.#onQueued) this.#onQueued();
  }

  /** @internal Closing either end cuts the cable: frames still queued are dropped at their receiver. */
  closeBoth(): void {
    this.#ends[0].markClosed();
    this.#ends[1].markClosed();
  }
}

class InProcessEnd implements CableEnd {
  readonly #cable: InProcessCable;
  readonly #side: 0 | 1;
  readonly #s = newStats();
  #handler: FrameHandler | null = null;
  #closed = false;

  constructor(cable: InProcessCable, side: 0 | 1) {
    this.#cable = cable;
    this.#side = side;
  }

  send(frame: Uint8Array): void {
    if (this.#closed) {
      this.#s.framesDropped++;
      return;
    }
    this.#s.framesSent++;
    this.#s.bytesSent += frame.length;
    this.#cable.enqueue(this.#side, frame.slice());
  }

  sendOwned(frame: Uint8Array): void {
    if (this.#closed) {
      this.#s.framesDropped++;
      return;
    }
    this.#s.framesSent++;
    this.#s.bytesSent += frame.length;
    this.#cable.enqueue(this.#side, frame);
  }

  onReceive(handler: FrameHandler | null): void {
    this.#handler = handler;
  }

  close(): void {
    this.#cable.closeBoth();
  }

  get stats(): CableStats {
    return { ...this.#s };
  }

  /** @internal */
  markClosed(): void {
    this.#closed = true;
  }

  /** @internal */
  deliver(frame: Uint8Array): boolean {
    const h = this.#handler;
    if (this.#closed || !h) {
      this.#s.framesDropped++;
      return false;
    }
    this.#s.framesReceived++;
    this.#s.bytesReceived += frame.length;
    h(frame);
    return true;
  }
}
