import { describe, expect, it } from 'vitest';
import { DecodeScratch, decodePacket, type Packet, rethVaNumber, ScratchPacket, ScratchReth } from './packet.js';
import { LINKTYPE_ETHERNET, LINKTYPE_INFINIBAND } from './pcap.js';
import { sampleFrames } from './sample.js';

const PACKET_FIELDS: readonly (keyof Packet)[] = [
  'framing',
  'eth',
  'ipv4',
  'ipv6',
  'udp',
  'lrh',
  'grh',
  'bth',
  'rdeth',
  'deth',
  'xrceth',
  'reth',
  'atomicEth',
  'aeth',
  'atomicAckEth',
  'immDt',
  'ieth',
  'feth',
  'payload',
  'icrc',
  'vcrc',
];

/** A decode result as plain data (views and copies compare by their bytes). */
function plain(v: unknown): unknown {
  if (v instanceof Uint8Array) return Array.from(v);
  if (typeof v === 'bigint') return `${v}n`;
  if (v === null || typeof v !== 'object') return v;
  if (v instanceof Error) return { code: (v as unknown as { code: string }).code, message: v.message };
  // The scratch packet's payload and RETH VA are getters: compare what a reader of a Packet sees.
  if (v instanceof ScratchPacket) return plain(Object.fromEntries(PACKET_FIELDS.map((k) => [k, v[k]])));
  if (v instanceof ScratchReth) return plain({ va: v.va, rkey: v.rkey, dmaLength: v.dmaLength });
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

  it("reads a RETH's VA as Number(va) does, without a bigint, at every edge of 2^32 and 2^53", () => {
    const r = new ScratchReth();
    const edges = [0n, 1n, 0xffff_ffffn, 0x1_0000_0000n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n, 2n ** 53n + 3n, 2n ** 63n, 2n ** 64n - 1n];
    let x = 0x9e3779b97f4a7c15n;
    const vas = [...edges];
    for (let i = 0; i < 2000; i++) {
      x = (x * 6364136223846793005n + 1442695040888963407n) & (2n ** 64n - 1n);
      vas.push(x >> BigInt(i % 64));
    }
    for (const va of vas) {
      r.va = va;
      expect(r.va).toBe(va);
      expect(rethVaNumber(r)).toBe(Number(va));
      expect(rethVaNumber({ va, rkey: 0, dmaLength: 0 })).toBe(Number(va));
    }
  });

  it('says where the payload lies in the frame, and makes the same view when asked', () => {
    let n = 0;
    for (const s of frames) {
      const want = decodePacket(s.frame, s.linktype);
      if (!want.ok || s.linktype !== LINKTYPE_ETHERNET) continue;
      const d = decodePacket(s.frame, s.linktype, {}, scratch);
      expect(d.ok && d.packet).toBe(scratch.packet);
      const p = scratch.packet;
      expect(p.payloadBytes).toBe(s.frame);
      expect(Array.from(s.frame.subarray(p.payloadAt, p.payloadAt + p.payloadLength))).toEqual(Array.from(want.packet.payload));
      expect(p.payload.byteOffset - s.frame.byteOffset).toBe(p.payloadAt);
      expect(p.payload).toBe(p.payload);
      n++;
    }
    expect(n).toBeGreaterThan(20);
  });
});
