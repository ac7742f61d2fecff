import { describe, expect, it } from 'vitest';
import { FrameRing } from './frame-ring.js';

const frame = (i: number, len: number) => Uint8Array.from({ length: len }, (_, k) => (i * 31 + k * 7) & 0xff);

describe('FrameRing (one thread)', () => {
  it('keeps order and content across many wraps, with and without a receive buffer', () => {
    const ring = FrameRing.create(256);
    const into = new Uint8Array(300);
    let pushed = 0;
    let popped = 0;
    let seed = 3;
    const lens: number[] = [];
    while (popped < 5000) {
      // Push a random burst until full, then pop a random number.
      for (;;) {
        const len = (seed = (seed * 1103515245 + 12345) >>> 0) % 200;
        if (pushed >= 5000 || !ring.push(frame(pushed, len))) break;
        lens.push(len);
        pushed++;
      }
      const n = 1 + ((seed >>> 8) % 4);
      for (let k = 0; k < n && popped < pushed; k++) {
        expect(ring.peekLength()).toBe(lens[popped]);
        const f = popped % 2 ? ring.pop(into) : ring.pop();
        expect(f).not.toBeNull();
        expect(f!).toEqual(frame(popped, lens[popped]!));
        popped++;
      }
    }
    expect(ring.pop()).toBeNull();
    expect(ring.peekLength()).toBe(-1);
    expect(ring.usedBytes).toBe(0);
  });

  it('says full with false, and a frame as large as the ring still gets through', () => {
    const ring = FrameRing.create(64);
    expect(ring.maxFrameLength).toBe(60);
    expect(ring.push(frame(1, 20))).toBe(true); // 24 bytes at 0
    expect(ring.push(frame(2, 20))).toBe(true); // 24 bytes at 24
    expect(ring.push(frame(3, 20))).toBe(false); // 16 left
    expect(ring.pop()).toEqual(frame(1, 20));
    // 40 free but only 16 to the end: the gap is published, the frame waits.
    expect(ring.push(frame(4, 36))).toBe(false);
    expect(ring.pop()).toEqual(frame(2, 20));
    expect(ring.pop()).toBeNull(); // consumes the lone gap
    expect(ring.usedBytes).toBe(0);
    expect(ring.push(frame(4, 60))).toBe(true);
    expect(ring.push(new Uint8Array(0))).toBe(false);
    expect(ring.pop()).toEqual(frame(4, 60));
    expect(ring.push(new Uint8Array(0))).toBe(true);
    expect(ring.pop()).toEqual(new Uint8Array(0));
    expect(() => ring.push(new Uint8Array(61))).toThrow(expect.objectContaining({ code: 'FABRIC_FRAME_TOO_LARGE' }));
  });

  it('leaves the frame in place when the receive buffer is too small', () => {
    const ring = FrameRing.create(128);
    ring.push(frame(9, 50));
    expect(() => ring.pop(new Uint8Array(49))).toThrow(expect.objectContaining({ code: 'FABRIC_BUFFER_TOO_SMALL' }));
    expect(ring.pop(new Uint8Array(50))).toEqual(frame(9, 50));
  });

  it('attaches to the same memory and rejects what is not a ring', () => {
    const ring = FrameRing.create(1024);
    const other = FrameRing.attach(ring.buffer);
    ring.push(frame(5, 10));
    expect(other.pop()).toEqual(frame(5, 10));
    expect(() => FrameRing.create(1000)).toThrow(expect.objectContaining({ code: 'FABRIC_BAD_CONFIG' }));
    expect(() => FrameRing.attach(new SharedArrayBuffer(4096))).toThrow(expect.objectContaining({ code: 'FABRIC_BAD_RING' }));
    expect(() => FrameRing.attach(new ArrayBuffer(4096) as unknown as SharedArrayBuffer)).toThrow(expect.objectContaining({ code: 'FABRIC_BAD_RING' }));
  });

  it('wait words: none needed when there is data / space, a timeout otherwise', () => {
    const ring = FrameRing.create(64);
    expect(ring.waitForData(1)).toBe('timed-out');
    ring.push(frame(1, 10));
    expect(ring.dataWaitWord()).toBeNull();
    expect(ring.waitForData(1)).toBe('not-equal');
    while (ring.push(frame(1, 10)));
    expect(ring.waitForSpace(1)).toBe('timed-out');
    ring.pop();
    expect(ring.waitForSpace(1)).toBe('not-equal');
  });

  it('waitForDataAsync resolves on push', async () => {
    const ring = FrameRing.create(64);
    const p = ring.waitForDataAsync(5000);
    setTimeout(() => ring.push(frame(1, 3)), 5);
    expect(await p).toBe('ok');
    expect(await ring.waitForDataAsync(0)).toBe('not-equal');
  });
});
