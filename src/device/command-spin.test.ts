/**
 * The driver's adaptive spin before it sleeps on CMD_STATUS (CommandSpin,
 * waitCommand): the policy's exact sequence, and a real second thread that
 * answers at once (the spin finds it), late (the spin gives up and the
 * sleep finds it) or never (the timeout says so).
 */
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { DeviceError } from './errors.js';
import { CommandSpin, waitCommand } from './mailbox.js';
import { Reg, type Bar } from './registers.js';

describe('CommandSpin', () => {
  it('spins until a spin misses, then sleeps for 1, 2, 4 ... up to 64 commands before the next try', () => {
    const s = new CommandSpin();
    const pattern: string[] = [];
    // Every spin misses: spin, skip 1, spin, skip 2, spin, skip 4, ...
    for (let i = 0; i < 260; i++) {
      if (s.shouldSpin()) {
        pattern.push('S');
        s.missed();
      } else pattern.push('.');
    }
    const gaps = pattern
      .join('')
      .split('S')
      .slice(1, -1)
      .map((g) => g.length);
    expect(gaps).toEqual([1, 2, 4, 8, 16, 32, 64, 64]);
  });

  it('a spin that finds the result resets the back-off', () => {
    const s = new CommandSpin();
    expect(s.shouldSpin()).toBe(true);
    s.missed(); // skip 1, next back-off 2
    expect(s.shouldSpin()).toBe(false);
    expect(s.shouldSpin()).toBe(true);
    s.missed(); // skip 2, next back-off 4
    expect([s.shouldSpin(), s.shouldSpin(), s.shouldSpin()]).toEqual([false, false, true]);
    s.found(); // back-off 1 again
    expect(s.shouldSpin()).toBe(true);
    s.missed();
    expect([s.shouldSpin(), s.shouldSpin()]).toEqual([false, true]);
  });
});

describe('waitCommand across threads', () => {
  let worker: Worker | null = null;
  afterEach(async () => {
    await worker?.terminate();
    worker = null;
  });

  /** A thread that stores (token << 8) | status into CMD_STATUS after `delayMs` and notifies. */
  function answerLater(i32: Int32Array, token: number, status: number, delayMs: number): Promise<void> {
    const code = `
      const { workerData, parentPort } = require('node:worker_threads');
      const i32 = new Int32Array(workerData.sab);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, workerData.delayMs);
      Atomics.store(i32, workerData.index, (workerData.token << 8) | workerData.status);
      Atomics.notify(i32, workerData.index);
      parentPort.postMessage('done');`;
    worker = new Worker(code, { eval: true, workerData: { sab: i32.buffer, index: Reg.CMD_STATUS, token, status, delayMs } });
    return new Promise((resolve) => worker!.once('message', () => resolve()));
  }

  const barOf = (i32: Int32Array) => ({ i32 }) as unknown as Bar;

  it('returns a status already there, and the spin counts as found', () => {
    const i32 = new Int32Array(new SharedArrayBuffer(4096));
    Atomics.store(i32, Reg.CMD_STATUS, (7 << 8) | 3);
    const s = new CommandSpin();
    expect(waitCommand(barOf(i32), 7, 1000, s)).toBe(3);
    expect(s.shouldSpin()).toBe(true); // nothing missed: no skip
  });

  it('a late answer (past the spin) is still returned, by the sleep, and the next command skips the spin', async () => {
    const i32 = new Int32Array(new SharedArrayBuffer(4096));
    const answered = answerLater(i32, 5, 0, 200); // 200 ms: far past the 40 µs spin
    const s = new CommandSpin();
    expect(waitCommand(barOf(i32), 5, 10_000, s)).toBe(0);
    await answered;
    expect(s.shouldSpin()).toBe(false);
  });

  it('a stale status (another token) is not taken for the answer', async () => {
    const i32 = new Int32Array(new SharedArrayBuffer(4096));
    Atomics.store(i32, Reg.CMD_STATUS, (4 << 8) | 1);
    const answered = answerLater(i32, 5, 2, 5);
    expect(waitCommand(barOf(i32), 5, 10_000, new CommandSpin())).toBe(2);
    await answered;
  });

  it('no answer ends in DEV_ERR_CMD_TIMEOUT, spin or not', () => {
    const i32 = new Int32Array(new SharedArrayBuffer(4096));
    for (const spin of [new CommandSpin(), undefined]) {
      let err: unknown;
      try {
        waitCommand(barOf(i32), 9, 30, spin);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(DeviceError);
      expect((err as DeviceError).code).toBe('DEV_ERR_CMD_TIMEOUT');
    }
  });
});
