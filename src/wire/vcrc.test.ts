import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../test/seeded.js';
import { vcrc } from './icrc.js';

/** The VCRC bit by bit from its definition (CRC-16, reflected polynomial 0xD008, init and final XOR 0xFFFF): no tables. */
function vcrcBitwise(b: Uint8Array, start: number, end: number): number {
  let c = 0xffff;
  for (let i = start; i < end; i++) {
    c ^= b[i]!;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xd008 : c >>> 1;
  }
  return (c ^ 0xffff) & 0xffff;
}

describe('vcrc (slicing-by-8)', () => {
  it('equals the bitwise CRC on 3,000 seeded spans of every length 0..90 and start offset', () => {
    const rnd = seededRandom(0x5c1);
    for (let n = 0; n < 3000; n++) {
      const b = Uint8Array.from({ length: 100 }, () => Math.floor(rnd() * 256));
      const start = n % 9;
      const end = start + (n % 91);
      expect(vcrc(b, start, end), `span [${start}, ${end})`).toBe(vcrcBitwise(b, start, end));
    }
  });
});
