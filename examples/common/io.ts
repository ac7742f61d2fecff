/**
 * What the ported programs need from their surroundings: where their stdout
 * and stderr go, and how to wait when a completion queue is empty.
 *
 * The C programs spin on ibv_poll_cq(). Here a device may be driven by the
 * same thread's event loop (the simulator, a software provider), so an
 * unbounded busy loop would starve it: an empty poll yields, a microtask
 * while a completion is expected soon and a whole event-loop turn after
 * that (PollWait).
 */

export interface Io {
  /** C's stdout. */
  out(text: string): void;
  /** C's stderr. */
  err(text: string): void;
}

export const processIo: Io = {
  out: (t) => {
    process.stdout.write(t);
  },
  err: (t) => {
    process.stderr.write(t);
  },
};

/** An Io that keeps what is written, for tests and for callers that want the text. */
export class BufferIo implements Io {
  stdout = '';
  stderr = '';
  out(t: string): void {
    this.stdout += t;
  }
  err(t: string): void {
    this.stderr += t;
  }
}

/** One turn of the event loop: what an empty poll waits for once the spin is spent. */
export function idle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Empty polls after a completion that are answered without an event-loop
 * turn: RNIC_POLL_SPIN (0..65536), else 16 (docs/pipeline.md, "Choosing the
 * thread layout"). 0 takes a turn on every empty poll.
 */
export function pollSpin(env: NodeJS.ProcessEnv = process.env): number {
  const v = env.RNIC_POLL_SPIN;
  if (v === undefined || v === '') return DEFAULT_POLL_SPIN;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 0 || n > MAX_POLL_SPIN) {
    throw new RangeError(`RNIC_POLL_SPIN: ${JSON.stringify(v)} is not a whole number of polls from 0 to ${MAX_POLL_SPIN}`);
  }
  return n;
}

export const DEFAULT_POLL_SPIN = 16;

/** The spin stays bounded: this many polls without an event-loop turn is already milliseconds. */
export const MAX_POLL_SPIN = 65536;

/**
 * The wait between empty polls of a CQ. A turn of the event loop
 * (setImmediate) costs microseconds, half of a half round trip with the
 * devices in this thread; a completion that is due (the device is on a
 * worker, or runs inside the next poll) is seen sooner by polling again.
 * So the first `spin` empty polls after progress wait only for a
 * microtask (other async work of this thread, such as the other side of
 * a loopback test, still runs between them); later ones take a whole
 * turn each, so timers, sockets and a device driven by the event loop
 * keep going, and a long wait costs no more than it did.
 */
export class PollWait {
  private empty = 0;
  constructor(
    readonly spin: number = pollSpin(),
    private readonly turn: () => Promise<void> = idle,
  ) {}
  /** A completion came: the next empty polls spin again. */
  progressed(): void {
    this.empty = 0;
  }
  /** True when the next wait() is a whole event-loop turn. */
  get turnDue(): boolean {
    return this.empty >= this.spin;
  }
  /** Resolves after a microtask while the spin lasts, after an event-loop turn once it is spent. */
  wait(): Promise<void> {
    if (this.empty < this.spin) {
      this.empty++;
      return RESOLVED;
    }
    return this.turn();
  }
}

const RESOLVED = Promise.resolve();

/** The message of a thrown verbs error, as "ENOMEM: ..." (VerbsError has an errno name in `code`). */
export function errText(e: unknown): string {
  const err = e as { code?: unknown; message?: unknown };
  const msg = typeof err?.message === 'string' ? err.message : String(e);
  return typeof err?.code === 'string' ? `${err.code}: ${msg}` : msg;
}
