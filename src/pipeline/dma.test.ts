import { describe, expect, it } from 'vitest';
import { HostMemory } from '../device/host-memory.js';
import { copyBytes, copyFromHost, copyToHost } from './dma.js';
import { seededRandom } from '../../test/seeded.js';

function filled(buf: ArrayBufferLike, seed: number): Uint8Array {
  const u = new Uint8Array(buf);
  for (let i = 0; i < u.length; i++) u[i] = (i * 31 + seed) & 0xff;
  return u;
}

describe('copyBytes', () => {
  it('copies exactly n bytes between shared and unshared views at every relative alignment', () => {
    const kinds = [(n: number) => new ArrayBuffer(n), (n: number) => new SharedArrayBuffer(n)];
    for (const mkSrc of kinds) {
      for (const mkDst of kinds) {
        for (const n of [0, 1, 63, 64, 100, 4096, 20_000]) {
          for (let sa = 0; sa < 8; sa++) {
            for (let da = 0; da < 8; da += 3) {
              const src = filled(mkSrc(n + 32), 7).subarray(1); // a view with a byteOffset
              const dst = new Uint8Array(mkDst(n + 32));
              dst.fill(0xee);
              copyBytes(dst, da, src, sa, n);
              for (let i = 0; i < da; i++) expect(dst[i]).toBe(0xee);
              expect(Buffer.compare(dst.subarray(da, da + n), src.subarray(sa, sa + n))).toBe(0);
              for (let i = da + n; i < dst.length; i++) expect(dst[i]).toBe(0xee);
            }
          }
        }
      }
    }
  });
});

describe('copyFromHost / copyToHost', () => {
  it('5,000 seeded small and large copies each way at any offset: exactly the n bytes, nothing either side', () => {
    const mem = HostMemory.create({ size: 8192 });
    const pattern = new Uint8Array(2 * mem.size);
    for (let i = 0; i < pattern.length; i++) pattern[i] = (i * 131 + (i >>> 8) * 7) & 0xff;
    const next = seededRandom(0x9e3779b9);
    const rnd = (m: number) => Math.floor(next() * m);
    for (let k = 0; k < 5000; k++) {
      const n = k % 4 === 0 ? rnd(200) : rnd(41); // around SMALL_COPY and the 4-byte steps, and beyond
      const host = rnd(mem.size - n - 16) + 8;
      const frame = new Uint8Array(n + 16);
      const off = rnd(9);
      mem.u8.set(pattern.subarray(k % mem.size, (k % mem.size) + mem.size)); // every byte differs from its neighbours
      const before = Uint8Array.from(mem.u8);
      for (let i = 0; i < frame.length; i++) frame[i] = rnd(256);
      const framed = Uint8Array.from(frame);
      copyFromHost(mem, host, frame, off, n);
      expect(Buffer.compare(frame.subarray(off, off + n), before.subarray(host, host + n)), `from host: n ${n} host ${host} off ${off}`).toBe(0);
      expect(Buffer.compare(frame.subarray(0, off), framed.subarray(0, off))).toBe(0);
      expect(Buffer.compare(frame.subarray(off + n), framed.subarray(off + n))).toBe(0);
      for (let i = 0; i < frame.length; i++) frame[i] = rnd(256);
      copyToHost(mem, host, frame, off, n);
      expect(Buffer.compare(mem.u8.subarray(host, host + n), frame.subarray(off, off + n)), `to host: n ${n} host ${host} off ${off}`).toBe(0);
      expect(Buffer.compare(mem.u8.subarray(host - 8, host), before.subarray(host - 8, host))).toBe(0);
      expect(Buffer.compare(mem.u8.subarray(host + n, host + n + 8), before.subarray(host + n, host + n + 8))).toBe(0);
    }
  });
});
