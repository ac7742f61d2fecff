/**
 * The FrameRing between two real worker threads: ~1e6 frames of random
 * sizes (0 .. 9018 bytes) through a small ring, so it wraps and fills
 * constantly and both sides block on Atomics.wait; every frame must arrive
 * in order with its bytes intact, and no wake-up may be lost.
 */
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { FrameRing } from '../../src/fabric/frame-ring.js';
import type { RingWorkerData, RingWorkerResult } from './frame-ring-worker.js';

const WORKER = new URL('./frame-ring-worker.ts', import.meta.url);
const REGISTER_TS = new URL('./register-ts.mjs', import.meta.url).href;

function run(data: RingWorkerData): Promise<RingWorkerResult> {
  return new Promise((resolve, reject) => {
    const w = new Worker(WORKER, { workerData: data, execArgv: ['--import', REGISTER_TS] });
    w.once('message', resolve);
    w.once('error', reject);
    w.once('exit', (code) => {
      if (code !== 0) reject(new Error(`${data.role} exited with ${code}`));
    });
  });
}

describe('FrameRing across worker threads', () => {
  for (const { count, capacity, maxLen } of [
    { count: 1_000_000, capacity: 1 << 16, maxLen: 9018 },
    { count: 200_000, capacity: 1 << 14, maxLen: 9018 },
  ]) {
    it(`${count} frames through a ${capacity >> 10} KiB ring`, async () => {
      const ring = FrameRing.create(capacity);
      const seed = 0x5eed + capacity;
      const t0 = performance.now();
      const [prod, cons] = await Promise.all([
        run({ sab: ring.buffer, role: 'producer', count, seed, maxLen }),
        run({ sab: ring.buffer, role: 'consumer', count, seed, maxLen }),
      ]);
      const ms = performance.now() - t0;
      console.log(
        `ring ${capacity >> 10} KiB: ${count} frames, ${(cons.bytes / 2 ** 20).toFixed(0)} MiB in ${ms.toFixed(0)} ms; ` +
          `producer waited ${prod.waits}x, consumer ${cons.waits}x, timeouts ${prod.timeouts}/${cons.timeouts}`,
      );
      expect(cons.errors).toEqual([]);
      expect(cons.frames).toBe(count);
      expect(prod.frames).toBe(count);
      expect(cons.bytes).toBe(prod.bytes);
      expect(prod.timeouts + cons.timeouts).toBe(0);
      expect(ring.usedBytes).toBe(0);
    });
  }

  it('a worker producer and an event-loop consumer (Atomics.waitAsync)', async () => {
    const ring = FrameRing.create(1 << 15);
    const count = 100_000;
    const producer = run({ sab: ring.buffer, role: 'producer', count, seed: 42, maxLen: 2048 });
    let frames = 0;
    let bytes = 0;
    let outOfOrder = 0;
    let waits = 0;
    let lostWakeUps = 0;
    let producerDone = false;
    void producer.then(
      () => {
        producerDone = true;
      },
      () => {
        producerDone = true;
      },
    );
    while (frames < count) {
      const f = ring.pop();
      if (!f) {
        // A producer that ended (or died) without filling the count: stop and let the checks below say so.
        if (producerDone && ring.usedBytes === 0) break;
        waits++;
        // A timeout is only a fault when the ring already held data (a lost
        // wake-up); with it empty, the worker is just slow to start on a loaded machine.
        if ((await ring.waitForDataAsync(2000)) === 'timed-out' && ring.usedBytes > 0) lostWakeUps++;
        continue;
      }
      if (f.length >= 4 && new DataView(f.buffer, f.byteOffset).getUint32(0, true) !== frames) outOfOrder++;
      frames++;
      bytes += f.length;
    }
    const prod = await producer;
    expect(frames).toBe(count);
    expect(lostWakeUps).toBe(0);
    expect(outOfOrder).toBe(0);
    expect(bytes).toBe(prod.bytes);
    expect(ring.pop()).toBeNull();
    console.log(`waitAsync consumer: ${count} frames, ${waits} waits`);
  });
});
