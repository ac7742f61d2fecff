import { describe, expect, it } from 'vitest';
import { QpChangeList } from './firmware.js';

describe('QpChangeList (firmware → pipeline: the QPs a command changed)', () => {
  it('hands over each changed QPN once, in order, and empties', () => {
    const l = new QpChangeList(4);
    const out = new Int32Array(4);
    l.note(7);
    l.note(9);
    l.note(7);
    expect(l.pending).toBe(2);
    expect(l.take(out)).toBe(2);
    expect([...out.subarray(0, 2)]).toEqual([7, 9]);
    expect(l.take(out)).toBe(0);
  });

  it('says "overflowed" (-1: scan every QP) when more changes pile up than it holds, then starts over', () => {
    const l = new QpChangeList(2);
    const out = new Int32Array(2);
    l.note(2);
    l.note(3);
    l.note(4);
    l.note(5);
    expect(l.pending).toBe(-1);
    expect(l.take(out)).toBe(-1);
    l.note(6);
    expect(l.take(out)).toBe(1);
    expect(out[0]).toBe(6);
  });
});
