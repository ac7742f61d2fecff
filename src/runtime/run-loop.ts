/**
 * The realtime device loop: poll while there is work; when idle, spin a
 * bounded number of passes (a spinning reader sees a doorbell in well under
 * a microsecond, a sleeping one in ~50 µs), then yield to the event loop
 * (UDP cables deliver there), then sleep on the first device's doorbell
 * sequence word until a doorbell or the next transport timer.
 */
import { Reg, type Bar } from '../device/registers.js';
import type { DeviceHost } from './device-host.js';

export interface LoopTuning {
  /** Idle passes before yielding to the event loop. */
  spinPasses: number;
  /** Event-loop turns before sleeping. */
  yieldTurns: number;
  /** Longest sleep, ms: other devices on this thread and ring cables are checked this often when idle. */
  maxSleepMs: number;
}

export const DEFAULT_TUNING: LoopTuning = Object.freeze({ spinPasses: 20_000, yieldTurns: 8, maxSleepMs: 1 });

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
    const bar = bars[0];
    if (!bar || ms === 0) {
      await turn();
      continue;
    }
    for (const b of bars) Atomics.store(b.i32, Reg.DEVICE_SLEEPING, 1);
    const seen = Atomics.load(bar.i32, Reg.DB_SEQ);
    if (host.poll() === 0) {
      const r = waitAsync(bar.i32, Reg.DB_SEQ, seen, ms);
      if (r.async) await r.value;
    }
    for (const b of bars) Atomics.store(b.i32, Reg.DEVICE_SLEEPING, 0);
    idle = tuning.spinPasses; // after a sleep, go back to polling without a long spin
  }
}

/** Monotonic nanoseconds since `t0`, as a number (exact for ~104 days). */
export function monotonicClock(): { now(): number } {
  const t0 = process.hrtime.bigint();
  return { now: () => Number(process.hrtime.bigint() - t0) };
}
