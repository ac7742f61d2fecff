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

export interface LoopTuning {
  /** Idle passes before yielding to the event loop. */
  spinPasses: number;
  /** Event-loop turns before sleeping. */
  yieldTurns: number;
  /** Longest sleep, ms: ring cables from other threads are checked this often when idle. */
  maxSleepMs: number;
}

export const DEFAULT_TUNING: LoopTuning = Object.freeze({ spinPasses: 20_000, yieldTurns: 8, maxSleepMs: 50 });

type WaitAsync = (a: Int32Array, i: number, v: number, t?: number) => { async: boolean; value: Promise<string> | string };
const waitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync;

const turn = () => new Promise<void>((r) => setImmediate(r));

export async function runDeviceLoop(host: DeviceHost, bars: Bar[], stop: Int32Array, tuning: LoopTuning = DEFAULT_TUNING): Promise<void> {
  let idle = 0;
  let sinceTurn = 0;
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
    idle++;
    if (idle < tuning.spinPasses) continue;
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
      const waits: Promise<unknown>[] = [host.kicked(), ...host.ringWaits(ms)];
      for (let i = 0; i < bars.length; i++) {
        const r = waitAsync(bars[i]!.i32, Reg.DB_SEQ, seen[i]!, ms);
        if (!r.async) {
          waits.length = 0;
          break;
        }
        waits.push(r.value as Promise<string>);
      }
      if (waits.length > 0) await Promise.race(waits);
    }
    for (const b of bars) Atomics.store(b.i32, Reg.DEVICE_SLEEPING, 0);
    idle = tuning.spinPasses; // after a sleep, go back to polling without a long spin
  }
  await host.drain();
}

/** Monotonic nanoseconds since `t0`, as a number (exact for ~104 days). */
export function monotonicClock(): { now(): number } {
  const t0 = process.hrtime.bigint();
  return { now: () => Number(process.hrtime.bigint() - t0) };
}
