/**
 * Two model devices on the default in-process wire, with their passes run
 * by the test: time is a number the test sets, and what a driver call runs
 * (no pass, one, or until nothing is left) is the test's choice. It stands
 * for a device thread that the OS may deschedule at any point between two
 * passes, made repeatable: the same choices give the same run. Interrupts
 * (what ibv_get_cq_event waits for) are delivered when the test says.
 */
import { DbKind, Reg } from '../../src/device/registers.js';
import { addModelDevice, removeModelDevice } from '../../src/driver/model/provider.js';
import { DEFAULT_CONFIG } from '../../src/runtime/config.js';
import { DeviceHost } from '../../src/runtime/device-host.js';
import { createDevice } from '../../src/runtime/device-resources.js';
import type { DeviceHandle } from '../../src/runtime/model.js';

/** What one driver call (post, poll, arm) runs: a number of passes, or 'settle' (until quiet, as the inline runtime). */
export type ServicePolicy = () => number | 'settle';

export interface HandTurnedHost {
  readonly host: DeviceHost;
  /** Virtual time in ns; the devices read it, nothing moves it but the test. */
  readonly clock: { t: number; now(): number };
  /** Replaced at will; a command always runs at least one pass (its caller reads the status right after). */
  policy: ServicePolicy;
  /** Runs passes until nothing is left (or `max`). */
  settle(max?: number): void;
  /**
   * Resolves the interrupt waits (a driver's ibv_get_cq_event) whose vector
   * has fired since they began; the test calls it between its steps.
   * Returns how many are still waiting.
   */
  deliverInterrupts(): number;
  close(): Promise<void>;
}

export async function handTurnedHost(memoryBytes = 8 << 20): Promise<HandTurnedHost> {
  const clock = { t: 1_000, now: () => clock.t };
  const made = DEFAULT_CONFIG.devices.map((d) => createDevice({ ...d, memoryBytes }));
  const host = new DeviceHost(
    made.map((d) => d.resources),
    clock,
  );
  await host.cable(DEFAULT_CONFIG.cables);
  const settle = (max = 256) => {
    host.poll();
    for (let i = 1; i < max && !host.quiet(); i++) host.poll();
  };
  const waits: { word: Int32Array; index: number; seen: number; resolve(now: number): void }[] = [];
  const t: HandTurnedHost = {
    host,
    clock,
    policy: () => 'settle',
    settle,
    deliverInterrupts() {
      for (let i = waits.length - 1; i >= 0; i--) {
        const w = waits[i]!;
        const now = Atomics.load(w.word, w.index);
        if (now !== w.seen) {
          waits.splice(i, 1);
          w.resolve(now);
        }
      }
      return waits.length;
    },
    async close() {
      for (const d of made) removeModelDevice(d.resources.name);
      await host.close();
    },
  };
  for (const d of made) {
    const handle: DeviceHandle = {
      name: d.resources.name,
      nodeGuid: d.nodeGuid,
      mem: d.mem,
      bar: d.bar,
      counters: d.counters,
      serviceInline: () => {
        const p = t.policy();
        if (p === 'settle') return settle();
        const command = (Atomics.load(d.bar.i32, Reg.DB_SUMMARY) & (1 << DbKind.CMD)) !== 0;
        for (let i = 0; i < Math.max(p, command ? 1 : 0); i++) host.poll();
      },
      waitIrq: (v, seen) => new Promise<number>((resolve) => waits.push({ word: d.bar.i32, index: d.bar.irqBase + v, seen, resolve })),
    };
    addModelDevice(handle);
  }
  return t;
}
