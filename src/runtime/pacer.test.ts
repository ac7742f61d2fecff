import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../fabric/faults/random.js';
import { Pacer } from './pacer.js';

/** Seeded (the fault dice's mulberry32), so a failing case can be replayed. */
function rng(seed: number): () => number {
  const r = mulberry32(seed);
  return () => r.next();
}

describe('Pacer (fake clock, ns)', () => {
  it('lets a burst go at once, then spaces frames at the rate', () => {
    // 8 Mb/s = 1 byte/µs; burst 3000 B.
    const p = new Pacer({ rate: 8_000_000, burstBytes: 3000 }, 0);
    expect(p.take(1000, 0)).toBe(0);
    expect(p.take(1000, 0)).toBe(0);
    expect(p.take(1000, 0)).toBe(0);
    // Empty: 1000 B needs 1000 µs.
    expect(p.take(1000, 0)).toBe(1_000_000);
    expect(p.take(1000, 400_000)).toBe(600_000);
    expect(p.take(1000, 1_000_000)).toBe(0);
  });

  it('never holds more than the burst after an idle spell', () => {
    const p = new Pacer({ rate: 8_000_000, burstBytes: 2000 }, 0);
    expect(p.take(2000, 10e9)).toBe(0);
    expect(p.take(1, 10e9)).toBe(1000); // 1 byte at 1 byte/µs
  });

  it('a frame larger than the burst goes when the bucket is full and leaves it in debt', () => {
    const p = new Pacer({ rate: 8_000_000, burstBytes: 1000 }, 0);
    expect(p.take(5000, 0)).toBe(0); // full bucket
    // -4000 tokens: the next 100 B waits for 4100 µs.
    expect(p.take(100, 0)).toBe(4_100_000);
  });

  it('refuses a nonsense rate or burst with a clear error', () => {
    expect(() => new Pacer({ rate: 0, burstBytes: 1 }, 0)).toThrow('pacer rate 0 must be a positive number of bits/s');
    expect(() => new Pacer({ rate: Number.NaN, burstBytes: 1 }, 0)).toThrow('pacer rate NaN');
    expect(() => new Pacer({ rate: 1e9, burstBytes: 0 }, 0)).toThrow('pacer burstBytes 0 must be at least 1');
  });

  it('2,000 seeded runs: bytes sent by any time t never exceed burst + rate·t (+ one frame of debt), whatever the frame sizes and timer lateness', () => {
    for (let seed = 1; seed <= 2000; seed++) {
      const r = rng(seed);
      const rate = Math.floor(1e6 + r() * 10e9);
      const burst = Math.floor(1500 + r() * 200_000);
      const p = new Pacer({ rate, burstBytes: burst }, 0);
      const bytesPerNs = rate / 8e9;
      let now = 0;
      let sent = 0;
      let largest = 0;
      for (let i = 0; i < 300; i++) {
        const len = 14 + Math.floor(r() * 9004);
        largest = Math.max(largest, len);
        // A sender with a coarse timer: it wakes late by up to 1.5 ms.
        for (;;) {
          const w = p.take(len, now);
          if (w === 0) break;
          expect(w).toBeGreaterThan(0);
          now += w + Math.floor(r() * 1.5e6);
        }
        sent += len;
        // The bound: a frame may exceed what was left (debt), by at most one frame.
        expect(sent).toBeLessThanOrEqual(burst + bytesPerNs * now + largest + 1e-6 * sent);
        if (r() < 0.1) now += Math.floor(r() * 5e6); // idle spells
      }
    }
  });

  it('a sender that waits exactly as told sends at the rate (within one burst)', () => {
    const rate = 1e9;
    const p = new Pacer({ rate, burstBytes: 65536 }, 0);
    let now = 0;
    let sent = 0;
    while (sent < 100e6) {
      const w = p.take(4154, now);
      if (w > 0) now += w;
      else sent += 4154;
    }
    const expected = (now * rate) / 8e9;
    expect(sent).toBeGreaterThan(expected);
    expect(sent).toBeLessThanOrEqual(expected + 65536 + 4154);
  });
});
