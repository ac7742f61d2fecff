/**
 * The realtime device loop: poll while there is work; when idle, spin a
 * bounded number of passes (a spinning reader sees a doorbell in well under
 * a microsecond, a sleeping one in ~50 µs), then yield to the event loop
 * (worker messages, fault-delay timers), then sleep on the doorbell
 * sequence words of its devices and on its ring cables until a doorbell, a
 * frame or the next transport timer. Frames from other threads and from
 * UDP sockets (their own I/O thread) arrive in shared-memory rings that
 * every pass polls: they never wait for the event loop. When told to stop,
 * the loop drains: what the pipeline still has to send goes out first.
 */
import { Reg, type Bar } from '../device/registers.js';
import type { DeviceHost } from './device-host.js';
import { WordWaiter } from './ring-end.js';

export interface LoopTuning {
  /**
   * How long an idle loop keeps polling before it yields and sleeps, ns.
   * Short on purpose: a sleeping loop wakes in tens of µs (a doorbell or a
   * ring's notify), while a spinning one takes a core that, on a machine
   * with fewer cores than busy threads, the thread with work is waiting for
   * (docs/pipeline.md, "Threads").
   */
  spinNs: number;
  /** At most this many idle passes before yielding, whatever the time. */
  spinPasses: number;
  /** Event-loop turns before sleeping. */
  yieldTurns: number;
  /** Longest sleep, ms: ring cables from other threads are checked this often when idle. */
  maxSleepMs: number;
}

export const DEFAULT_TUNING: LoopTuning = Object.freeze({ spinNs: 50_000, spinPasses: 20_000, yieldTurns: 8, maxSleepMs: 50 });

const turn = () => new Promise<void>((r) => setImmediate(r));

function sleepMs(ms: number): { promise: Promise<void>; cancel(): void } {
  let t: NodeJS.Timeout | null = null;
  const promise = new Promise<void>((r) => (t = setTimeout(r, ms)));
  return { promise, cancel: () => clearTimeout(t!) };
}

export async function runDeviceLoop(host: DeviceHost, bars: Bar[], stop: Int32Array, tuning: LoopTuning = DEFAULT_TUNING): Promise<void> {
  let idle = 0;
  let sinceTurn = 0;
  let idleSince = 0;
  const dbWaiters = bars.map(() => new WordWaiter());
  while (Atomics.load(stop, 0) === 0) {
    const work = host.poll();
    if (work > 0) {
      idle = 0;
      // Busy: still let the event loop in now and then (sockets, messages).
      if (++sinceTurn >= 2048) {
        sinceTurn = 0;
        await turn();
      }
      continue;
    }
    if (idle++ === 0) idleSince = host.clock.now();
    if (idle < tuning.spinPasses) {
      if ((idle & 15) !== 0 || host.clock.now() - idleSince < tuning.spinNs) continue;
      idle = tuning.spinPasses;
    }
    if (idle < tuning.spinPasses + tuning.yieldTurns) {
      await turn();
      continue;
    }
    const deadline = host.nextDeadline();
    const ms = Math.max(0, Math.min(tuning.maxSleepMs, (deadline - host.clock.now()) / 1e6));
    if (bars.length === 0 || ms === 0) {
      await turn();
      continue;
    }
    // Sleep until a doorbell on any of our devices, a frame from a socket
    // (the host's kick), or the next timer. Sequence: announce sleeping,
    // read the sequence words, poll once more, then wait.
    for (const b of bars) Atomics.store(b.i32, Reg.DEVICE_SLEEPING, 1);
    const seen = bars.map((b) => Atomics.load(b.i32, Reg.DB_SEQ));
    if (host.poll() === 0) {
      // One waiter per word, reused across sleeps (WordWaiter), and one timer.
      const timer = sleepMs(ms);
      const waits: Promise<unknown>[] = [timer.promise, host.kicked(), ...host.ringWaits()];
      for (let i = 0; i < bars.length; i++) waits.push(dbWaiters[i]!.wait({ array: bars[i]!.i32, index: Reg.DB_SEQ, value: seen[i]! }));
      await Promise.race(waits);
      timer.cancel();
    }
    for (const b of bars) Atomics.store(b.i32, Reg.DEVICE_SLEEPING, 0);
    idle = tuning.spinPasses; // after a sleep, go back to polling without a long spin
  }
  await host.drain();
}

/**
 * Monotonic whole nanoseconds since the clock was made, as a Number. Read
 * from performance.now() (a double of ms, sub-µs resolution): no BigInt and
 * no object per read, which an idle loop polling the clock every pass turned
 * into most of its garbage-collection time (issue 9).
 */
export function monotonicClock(): { now(): number } {
  const t0 = performance.now();
  return { now: () => Math.floor((performance.now() - t0) * 1e6) };
}
