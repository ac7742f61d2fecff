/**
 * What the ported programs need from their surroundings: where their stdout
 * and stderr go, and how to wait when a completion queue is empty.
 *
 * The C programs spin on ibv_poll_cq(). Here a device may be driven by the
 * same thread's event loop (the simulator, a software provider), so a busy
 * loop would starve it: every empty poll yields to the event loop instead.
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

/** One turn of the event loop: what an empty poll waits for. */
export function idle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** The message of a thrown verbs error, as "ENOMEM: ..." (VerbsError has an errno name in `code`). */
export function errText(e: unknown): string {
  const err = e as { code?: unknown; message?: unknown };
  const msg = typeof err?.message === 'string' ? err.message : String(e);
  return typeof err?.code === 'string' ? `${err.code}: ${msg}` : msg;
}
