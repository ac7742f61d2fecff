import { describe, expect, it } from 'vitest';
import { DecodeScratch, decodePacket, type Packet, rethVaNumber, ScratchPacket, ScratchReth } from './packet.js';
import { LINKTYPE_ETHERNET, LINKTYPE_INFINIBAND } from './pcap.js';
import { sampleFrames } from './sample.js';
import { ScratchEth, ScratchIpv4, ScratchIpv6 } from './scratch-headers.js';

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
  // The routing headers' addresses are getters too (copied from the frame when first read).
  if (v instanceof ScratchEth) return plain({ dst: v.dst, src: v.src, vlan: v.vlan, etherType: v.etherType });
  if (v instanceof ScratchIpv4) {
    const { ihl, dscp, ecn, totalLength, id, flags, fragmentOffset, ttl, protocol, checksum, src, dst, options } = v;
    return plain({ ihl, dscp, ecn, totalLength, id, flags, fragmentOffset, ttl, protocol, checksum, src, dst, options });
  }
  if (v instanceof ScratchIpv6) {
    const { trafficClass, flowLabel, payloadLength, nextHeader, hopLimit, src, dst } = v;
    return plain({ trafficClass, flowLabel, payloadLength, nextHeader, hopLimit, src, dst });
  }
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

  it('copies the addresses of the frame decoded last, when first read, into arrays it owns', () => {
    // Seeded: decode a random sequence of sample frames, reading the addresses after some decodes only.
    const eth = frames.filter((f) => f.linktype === LINKTYPE_ETHERNET && decodePacket(f.frame).ok);
    expect(eth.length).toBeGreaterThan(10);
    let x = 12345;
    let reads = 0;
    for (let i = 0; i < 4000; i++) {
      x = (x * 1103515245 + 12345) >>> 0;
      const f = eth[x % eth.length]!.frame.slice();
      const d = decodePacket(f, LINKTYPE_ETHERNET, {}, scratch);
      if (!d.ok || ((x >>> 8) & 3) !== 0) continue;
      const want = decodePacket(f, LINKTYPE_ETHERNET);
      if (!want.ok) throw new Error('eager decode failed');
      const p = d.packet;
      // Read in a random order, then change the frame: the copies stay.
      const order = (x >>> 12) & 1;
      const macs = order ? [p.eth!.src, p.eth!.dst] : [p.eth!.dst, p.eth!.src];
      expect(Array.from(order ? macs[1]! : macs[0]!)).toEqual(Array.from(want.packet.eth!.dst));
      expect(Array.from(order ? macs[0]! : macs[1]!)).toEqual(Array.from(want.packet.eth!.src));
      const ip = p.ipv4 ?? p.ipv6;
      const wip = want.packet.ipv4 ?? want.packet.ipv6;
      if (ip && wip) {
        expect(Array.from(ip.src)).toEqual(Array.from(wip.src));
        expect(Array.from(ip.dst)).toEqual(Array.from(wip.dst));
        expect(ip.src.buffer).not.toBe(f.buffer);
      }
      expect(p.eth!.dst.buffer).not.toBe(f.buffer);
      const src = Array.from(want.packet.eth!.src); // the eager decode's are views of the frame
      const ipDst = wip ? Array.from(wip.dst) : [];
      f.fill(0xee);
      expect(Array.from(p.eth!.src)).toEqual(src);
      if (ip) expect(Array.from(ip.dst)).toEqual(ipDst);
      reads++;
    }
    expect(reads).toBeGreaterThan(500);
  });

  it('keeps an address set on a scratch header, and the other one of the pair as decoded', () => {
    const f = frames.find((s) => {
      const d = decodePacket(s.frame);
      return s.linktype === LINKTYPE_ETHERNET && d.ok && d.packet.ipv4 !== null;
    })!.frame;
    const want = decodePacket(f);
    if (!want.ok) throw new Error('eager decode failed');
    const d = decodePacket(f, LINKTYPE_ETHERNET, {}, scratch);
    if (!d.ok) throw new Error('scratch decode failed');
    const mac = Uint8Array.of(2, 0, 0, 0, 0, 9);
    d.packet.eth!.dst = mac;
    expect(d.packet.eth!.dst).toBe(mac);
    expect(Array.from(d.packet.eth!.src)).toEqual(Array.from(want.packet.eth!.src));
    const ip = Uint8Array.of(10, 0, 0, 1);
    d.packet.ipv4!.src = ip;
    expect(d.packet.ipv4!.src).toBe(ip);
    expect(Array.from(d.packet.ipv4!.dst)).toEqual(Array.from(want.packet.ipv4!.dst));
  });
});
