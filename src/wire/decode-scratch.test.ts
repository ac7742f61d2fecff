import { describe, expect, it } from 'vitest';
import { DecodeScratch, decodePacket } from './packet.js';
import { LINKTYPE_ETHERNET, LINKTYPE_INFINIBAND } from './pcap.js';
import { sampleFrames } from './sample.js';

/** A decode result as plain data (views and copies compare by their bytes). */
function plain(v: unknown): unknown {
  if (v instanceof Uint8Array) return Array.from(v);
  if (typeof v === 'bigint') return `${v}n`;
  if (v === null || typeof v !== 'object') return v;
  if (v instanceof Error) return { code: (v as unknown as { code: string }).code, message: v.message };
  return Object.fromEntries(Object.entries(v as object).map(([k, x]) => [k, plain(x)]));
}

describe('decodePacket with a DecodeScratch', () => {
  const scratch = new DecodeScratch();
  const frames = sampleFrames().map((s) => ({ frame: s.bytes, linktype: s.framing === 'ib' ? LINKTYPE_INFINIBAND : LINKTYPE_ETHERNET }));

  it('decodes every sample frame (every opcode, every framing) exactly as without one', () => {
    expect(frames.length).toBeGreaterThan(20);
    for (const s of frames) {
      const want = plain(decodePacket(s.frame, s.linktype));
      expect(plain(decodePacket(s.frame, s.linktype, {}, scratch))).toEqual(want);
    }
  });

  it('gives the same verdict on truncated and mutated frames', () => {
    let n = 0;
    for (const s of frames) {
      for (let cut = 0; cut < s.frame.length; cut += 7) {
        const f = s.frame.slice(0, cut);
        expect(plain(decodePacket(f, s.linktype, {}, scratch))).toEqual(plain(decodePacket(f, s.linktype)));
        n++;
      }
      for (let i = 0; i < Math.min(s.frame.length, 80); i++) {
        const f = s.frame.slice();
        f[i] ^= 0x41;
        expect(plain(decodePacket(f, s.linktype, {}, scratch))).toEqual(plain(decodePacket(f, s.linktype)));
        n++;
      }
    }
    expect(n).toBeGreaterThan(1000);
  });
});
