import { describe, expect, it } from 'vitest';
import { copyBytes } from './dma.js';

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
