import { describe, expect, it } from 'vitest';
import { psnAdd, psnCompare, psnDistance } from './psn.js';
import { localAckTimeoutNs, rnrTimerNs } from './timer-tables.js';

describe('PSN arithmetic', () => {
  it('wraps at 2^24', () => {
    expect(psnAdd(0xffffff, 1)).toBe(0);
    expect(psnAdd(0xfffffe, 5)).toBe(3);
    expect(psnDistance(2, 0xfffffe)).toBe(4);
  });
  it('compares across the wrap with half the space each way', () => {
    expect(psnCompare(0, 0xffffff)).toBeGreaterThan(0);
    expect(psnCompare(0xffffff, 0)).toBeLessThan(0);
    expect(psnCompare(5, 5)).toBe(0);
    expect(psnCompare(0x7fffff, 0)).toBeGreaterThan(0);
    expect(psnCompare(0x800000, 0)).toBeLessThan(0); // 2^23 ahead counts as behind
  });
});

describe('timer tables', () => {
  it('local ACK timeout is 4.096 µs × 2^n, 0 = none', () => {
    expect(localAckTimeoutNs(0)).toBe(Infinity);
    expect(localAckTimeoutNs(1)).toBe(8192);
    expect(localAckTimeoutNs(14)).toBeCloseTo(67.108864e6, 0);
  });
  it('RNR timer codes follow the IBTA table', () => {
    expect(rnrTimerNs(0)).toBe(655.36e6);
    expect(rnrTimerNs(1)).toBe(10_000);
    expect(rnrTimerNs(14)).toBe(1.28e6);
    expect(rnrTimerNs(25)).toBe(61.44e6);
    expect(rnrTimerNs(31)).toBe(491.52e6);
  });
});
