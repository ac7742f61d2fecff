/**
 * A single-producer single-consumer ring of variable-length frames in a
 * SharedArrayBuffer: the wire between two worker threads.
 *
 * Layout (bytes):
 *
 *   0    header line 0: MAGIC, capacity, version           (written once)
 *   64   header line 1: TAIL, PRODUCER_WAITING              (producer writes TAIL)
 *   128  header line 2: HEAD, CONSUMER_WAITING              (consumer writes HEAD)
 *   192  data: `capacity` bytes, a power of two
 *
 * TAIL and HEAD sit on separate 64-byte lines so the two threads do not
 * false-share. Both are free-running unsigned 32-bit byte counters
 * (position = counter & (capacity - 1)); `(tail - head) >>> 0` is the bytes
 * in use, correct across the 2^32 wrap because capacity divides 2^32.
 *
 * A record is a 32-bit length (native byte order: both ends are threads of
 * one process) followed by the frame, padded to 4 bytes; records never
 * straddle the end of the data area. When one would, the producer writes a
 * WRAP marker (length 0xFFFFFFFF) in the gap and starts again at 0.
 *
 * Memory ordering. JavaScript Atomics are sequentially consistent, so an
 * Atomics.store is a release and an Atomics.load an acquire for the plain
 * accesses around them:
 *  - push: write length and bytes (plain), then Atomics.store(TAIL). A
 *    consumer whose Atomics.load(TAIL) sees the new value sees the bytes.
 *  - pop: Atomics.load(TAIL), read the record (plain), copy it out, then
 *    Atomics.store(HEAD). A producer whose Atomics.load(HEAD) sees the new
 *    value knows the bytes have been read and may overwrite them.
 *
 * Waiting (Atomics.wait / waitAsync on the index word of the other side):
 * the waiter stores 1 in its WAITING flag, re-reads the other side's
 * index, and waits only if it is unchanged; the other side, after storing
 * its index, loads the flag and notifies if it is set. Both sides store
 * then load (Dekker's pattern): under sequential consistency either the
 * waiter sees the new index, or the notifier sees the flag. Only the waiter
 * ever writes its flag: it clears it on its next successful pop / push. (A
 * notifier that cleared the flag could eat it between the waiter's check
 * and its wait, and the next wake-up would be lost.) So no wake-up is lost,
 * and a side that nobody waits on never pays for Atomics.notify.
 */
import { FabricError } from './cable.js';

const MAGIC = 0x52_4e_46_52; // 'RNFR'
const VERSION = 1;
const HEADER_BYTES = 192;
const WRAP = 0xffffffff;

/** Int32 word indices in the header. */
const enum W {
  MAGIC = 0,
  CAPACITY = 1,
  VERSION = 2,
  TAIL = 16,
  PRODUCER_WAITING = 17,
  HEAD = 32,
  CONSUMER_WAITING = 33,
}

export const FRAME_RING_MIN_CAPACITY = 64;
export const FRAME_RING_MAX_CAPACITY = 1 << 30;

/** Where to Atomics.wait / Atomics.waitAsync, and on which value. */
export interface RingWaitWord {
  readonly array: Int32Array;
  readonly index: number;
  readonly value: number;
}

export type RingWaitResult = 'ok' | 'not-equal' | 'timed-out';

const align4 = (n: number) => (n + 3) & ~3;

/** Atomics.waitAsync (Node 16+, ES2024): the project's lib is ES2023. */
const waitAsync = (
  Atomics as unknown as {
    waitAsync(
      a: Int32Array,
      i: number,
      v: number,
      t?: number,
    ): { async: false; value: 'not-equal' | 'timed-out' } | { async: true; value: Promise<'ok' | 'timed-out'> };
  }
).waitAsync;

export class FrameRing {
  /** The shared memory; post it to the other thread and `FrameRing.attach` it there. */
  readonly buffer: SharedArrayBuffer;
  /** Data area size in bytes. */
  readonly capacity: number;
  /** The header words (Atomics only). */
  readonly words: Int32Array;
  readonly #bytes: Uint8Array;
  readonly #u32: Uint32Array;
  readonly #mask: number;
  /** Producer: HEAD as the last push saw it (what `spaceWaitWord` compares against). */
  #sawHead = 0;

  /** A new, empty ring with a data area of `capacity` bytes (a power of two, 64 B .. 1 GiB). */
  static create(capacity: number): FrameRing {
    if (!Number.isInteger(capacity) || capacity < FRAME_RING_MIN_CAPACITY || capacity > FRAME_RING_MAX_CAPACITY || (capacity & (capacity - 1)) !== 0) {
      throw new FabricError(
        'FABRIC_BAD_CONFIG',
        `frame ring capacity ${capacity} must be a power of two in [${FRAME_RING_MIN_CAPACITY}, ${FRAME_RING_MAX_CAPACITY}]`,
      );
    }
    const sab = new SharedArrayBuffer(HEADER_BYTES + capacity);
    const w = new Int32Array(sab, 0, HEADER_BYTES / 4);
    w[W.CAPACITY] = capacity;
    w[W.VERSION] = VERSION;
    Atomics.store(w, W.MAGIC, MAGIC);
    return new FrameRing(sab);
  }

  /** The same ring, seen from another thread. */
  static attach(buffer: SharedArrayBuffer): FrameRing {
    return new FrameRing(buffer);
  }

  private constructor(buffer: SharedArrayBuffer) {
    if (!(buffer instanceof SharedArrayBuffer) || buffer.byteLength < HEADER_BYTES + FRAME_RING_MIN_CAPACITY) {
      throw new FabricError('FABRIC_BAD_RING', 'not a frame ring: expected a SharedArrayBuffer made by FrameRing.create');
    }
    const w = new Int32Array(buffer, 0, HEADER_BYTES / 4);
    const cap = w[W.CAPACITY]!;
    if (Atomics.load(w, W.MAGIC) !== MAGIC || w[W.VERSION] !== VERSION || buffer.byteLength !== HEADER_BYTES + cap || (cap & (cap - 1)) !== 0) {
      throw new FabricError('FABRIC_BAD_RING', 'not a frame ring: bad magic, version or size');
    }
    this.buffer = buffer;
    this.capacity = cap;
    this.words = w;
    this.#mask = cap - 1;
    this.#bytes = new Uint8Array(buffer, HEADER_BYTES, cap);
    this.#u32 = new Uint32Array(buffer, HEADER_BYTES, cap / 4);
  }

  /** The largest frame that can ever be pushed. */
  get maxFrameLength(): number {
    return this.capacity - 4;
  }

  /** Bytes in use (records, padding and wrap gaps). Exact only on an idle ring. */
  get usedBytes(): number {
    return (Atomics.load(this.words, W.TAIL) - Atomics.load(this.words, W.HEAD)) >>> 0;
  }

  // ---- producer side -------------------------------------------------------

  /**
   * Producer: appends a copy of `frame`. Returns false when there is no room
   * now (the consumer has not caught up): nothing was written, try again
   * later (see `waitForSpace`). Throws FABRIC_FRAME_TOO_LARGE for a frame
   * that could never fit.
   */
  push(frame: Uint8Array): boolean {
    const len = frame.length;
    const rec = align4(4 + len);
    if (rec > this.capacity) {
      throw new FabricError('FABRIC_FRAME_TOO_LARGE', `frame of ${len} bytes does not fit a ring of ${this.capacity} bytes (max ${this.maxFrameLength})`);
    }
    const w = this.words;
    let tail = Atomics.load(w, W.TAIL) >>> 0; // ours: only we store it
    const head = Atomics.load(w, W.HEAD) >>> 0; // acquire: the consumer is done with bytes before head
    this.#sawHead = head | 0;
    let free = this.capacity - ((tail - head) >>> 0);
    let pos = tail & this.#mask;
    const toEnd = this.capacity - pos;
    if (rec > toEnd) {
      // The record would straddle the end: fill the gap with a WRAP marker.
      // It is published on its own when there is room for the gap but not
      // yet for the record, so a frame larger than the space after the
      // current position still fits once the consumer has caught up.
      if (toEnd > free) return false;
      this.#u32[pos >>> 2] = WRAP;
      tail = (tail + toEnd) >>> 0;
      free -= toEnd;
      pos = 0;
      if (rec > free) {
        this.#publishTail(tail);
        return false;
      }
    } else if (rec > free) {
      return false;
    }
    this.#u32[pos >>> 2] = len;
    this.#bytes.set(frame, pos + 4);
    this.#publishTail((tail + rec) >>> 0);
    // Done waiting (if we were): stop asking the consumer for wake-ups.
    if (w[W.PRODUCER_WAITING] !== 0) Atomics.store(w, W.PRODUCER_WAITING, 0);
    return true;
  }

  #publishTail(tail: number): void {
    Atomics.store(this.words, W.TAIL, tail | 0); // release: the record bytes before the index
    if (Atomics.load(this.words, W.CONSUMER_WAITING) !== 0) Atomics.notify(this.words, W.TAIL);
  }

  /**
   * Producer: the word to wait on after `push` returned false, or null when
   * the consumer has moved since that push looked (push again now). Sets the
   * producer's waiting flag, so the consumer's next pop notifies. Pass the
   * result to Atomics.wait / Atomics.waitAsync.
   */
  spaceWaitWord(): RingWaitWord | null {
    Atomics.store(this.words, W.PRODUCER_WAITING, 1);
    const head = Atomics.load(this.words, W.HEAD);
    return head === this.#sawHead ? { array: this.words, index: W.HEAD, value: head } : null;
  }

  /** Producer, blocking (worker threads): after a refused push, waits until the consumer frees space. */
  waitForSpace(timeoutMs = Infinity): RingWaitResult {
    const ww = this.spaceWaitWord();
    return ww ? Atomics.wait(ww.array, ww.index, ww.value, timeoutMs) : 'not-equal';
  }

  // ---- consumer side -------------------------------------------------------

  /** Consumer: length of the next frame, or -1 when the ring is empty. */
  peekLength(): number {
    const w = this.words;
    let head = Atomics.load(w, W.HEAD) >>> 0;
    const tail = Atomics.load(w, W.TAIL) >>> 0;
    if (head === tail) return -1;
    let pos = head & this.#mask;
    if (this.#u32[pos >>> 2] === WRAP) {
      head = (head + this.capacity - pos) >>> 0;
      if (head === tail) return -1;
      pos = 0;
    }
    return this.#u32[pos >>> 2]!;
  }

  /**
   * Consumer: removes the next frame and returns a copy of it: in `into`
   * (a view of its first bytes) when given, else in a new array. Returns
   * null when the ring is empty. If `into` is too small nothing is removed
   * and FABRIC_BUFFER_TOO_SMALL is thrown (see `peekLength`).
   */
  pop(into?: Uint8Array): Uint8Array | null {
    const w = this.words;
    let head = Atomics.load(w, W.HEAD) >>> 0; // ours
    const tail = Atomics.load(w, W.TAIL) >>> 0; // acquire: the bytes before tail are written
    if (head === tail) return null;
    let pos = head & this.#mask;
    if (this.#u32[pos >>> 2] === WRAP) {
      head = (head + this.capacity - pos) >>> 0;
      pos = 0;
      if (head === tail) {
        // Only the gap was published: consume it so the producer can use the space.
        this.#publishHead(head);
        return null;
      }
    }
    const len = this.#u32[pos >>> 2]!;
    if (into && into.length < len) {
      if (head !== Atomics.load(w, W.HEAD) >>> 0) this.#publishHead(head);
      throw new FabricError('FABRIC_BUFFER_TOO_SMALL', `next frame is ${len} bytes, buffer has ${into.length}`);
    }
    const src = this.#bytes.subarray(pos + 4, pos + 4 + len);
    let out: Uint8Array;
    if (into) {
      into.set(src);
      out = into.length === len ? into : into.subarray(0, len);
    } else {
      out = src.slice();
    }
    this.#publishHead((head + align4(4 + len)) >>> 0); // release: after the copy
    // Done waiting (if we were): stop asking the producer for wake-ups.
    if (w[W.CONSUMER_WAITING] !== 0) Atomics.store(w, W.CONSUMER_WAITING, 0);
    return out;
  }

  #publishHead(head: number): void {
    Atomics.store(this.words, W.HEAD, head | 0);
    if (Atomics.load(this.words, W.PRODUCER_WAITING) !== 0) Atomics.notify(this.words, W.HEAD);
  }

  /**
   * Consumer: the word to wait on after `pop` returned null, or null when
   * something has been published since (pop again now). Sets the
   * consumer's waiting flag, so the producer's next push notifies. Use with
   * Atomics.wait (a worker) or Atomics.waitAsync (an event loop):
   *
   *   for (;;) {
   *     const f = ring.pop();
   *     if (f) { handle(f); continue; }
   *     const ww = ring.dataWaitWord();
   *     if (ww) await Atomics.waitAsync(ww.array, ww.index, ww.value).value;
   *   }
   */
  dataWaitWord(): RingWaitWord | null {
    Atomics.store(this.words, W.CONSUMER_WAITING, 1);
    const tail = Atomics.load(this.words, W.TAIL);
    // Anything published, even a lone wrap gap, means pop() first: pop
    // consumes the gap, which the producer may be waiting for.
    if (tail !== Atomics.load(this.words, W.HEAD)) return null;
    return { array: this.words, index: W.TAIL, value: tail };
  }

  /** Consumer, blocking (worker threads): waits until the producer pushes. */
  waitForData(timeoutMs = Infinity): RingWaitResult {
    const ww = this.dataWaitWord();
    return ww ? Atomics.wait(ww.array, ww.index, ww.value, timeoutMs) : 'not-equal';
  }

  /** Consumer, on an event loop: resolves when the producer pushes (or at the timeout). */
  async waitForDataAsync(timeoutMs = Infinity): Promise<RingWaitResult> {
    const ww = this.dataWaitWord();
    if (!ww) return 'not-equal';
    const r = waitAsync(ww.array, ww.index, ww.value, timeoutMs);
    return r.async ? await r.value : r.value;
  }
}
