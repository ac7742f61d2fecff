import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../test/seeded.js';
import { newPacket } from './build.js';
import { Ipv4RoutingTemplate, type RethFields } from './header-template.js';
import { parseIpv6 } from './ip.js';
import { icrcPending, sealIcrc } from './lazy-icrc.js';
import { OPCODES } from './opcodes.js';
import { encodePacket, type Packet, payloadOffset } from './packet.js';

const CODES = OPCODES.flatMap((info, code) => (info ? [code] : []));

/** A RoCE v2 / IPv4 packet with every field drawn from `r`, and its RETH as numbers. */
function randomPacket(r: () => number, vlan: boolean): { p: Packet; reth: RethFields } {
  const n = (k: number) => Math.floor(r() * k);
  const opcode = CODES[n(CODES.length)]!;
  const info = OPCODES[opcode]!;
  // Mostly small payloads (the 8 B path), some up to an MTU of 4096.
  const len = info.payload ? (r() < 0.9 ? n(300) : n(4097)) : 0;
  const p = newPacket('roce-v2', opcode, {
    srcMac: Uint8Array.from({ length: 6 }, () => n(256)),
    dstMac: Uint8Array.from({ length: 6 }, () => n(256)),
    vlan: vlan ? { pcp: n(8), dei: n(2), vid: n(4096) } : null,
    srcIp: Uint8Array.from({ length: 4 }, () => n(256)),
    dstIp: Uint8Array.from({ length: 4 }, () => n(256)),
    dscp: n(64),
    ecn: n(4),
    hopLimit: n(256),
    udpSrcPort: n(65536),
    psn: n(1 << 24),
    destQp: n(1 << 24),
    ackReq: n(2),
    se: n(2),
    pkey: n(65536),
    migReq: n(2),
    fecn: n(2),
    becn: n(2),
    payload: Uint8Array.from({ length: len }, () => n(256)),
  });
  p.bth.tver = n(16);
  p.bth.resv6a = n(64);
  p.bth.resv7 = n(128);
  p.ipv4!.flags = n(8);
  p.ipv4!.fragmentOffset = n(8192);
  p.udp!.checksum = n(65536);
  // VAs across the whole 64-bit range a double holds exactly (multiples of 2^11 above 2^53).
  const va = r() < 0.5 ? n(2 ** 32) * 2 ** 21 + n(2 ** 21) : n(2 ** 32) * 2 ** 32 - n(2 ** 11) * 2 ** 11;
  const reth = { va: Math.max(0, va), rkey: n(2 ** 32), dmaLength: n(2 ** 32) };
  if (p.reth) p.reth = { va: BigInt(reth.va), rkey: reth.rkey, dmaLength: reth.dmaLength };
  if (p.aeth) p.aeth = { syndrome: n(256), msn: n(1 << 24) };
  if (p.deth) p.deth = { qkey: n(2 ** 32), resv8: n(256), srcQp: n(1 << 24) };
  if (p.xrceth) p.xrceth = { resv8: n(256), xrcSrq: n(1 << 24) };
  if (p.immDt !== null) p.immDt = n(2 ** 32);
  if (p.ieth !== null) p.ieth = n(2 ** 32);
  if (p.feth) p.feth = { raw: n(2 ** 32) };
  if (p.atomicEth) p.atomicEth = { va: BigInt(reth.va), rkey: n(2 ** 32), swapAdd: BigInt(n(2 ** 32)) << 20n, compare: BigInt(n(2 ** 32)) };
  if (p.atomicAckEth) p.atomicAckEth = { origData: BigInt(n(2 ** 32)) << 31n };
  return { p, reth };
}

/** What a packet builder does: the payload gathered into place first, then the template fills the rest. */
function viaTemplate(p: Packet, reth: RethFields, ipId: number, defer: boolean, len: number): Uint8Array {
  const frame = new Uint8Array(len).fill(0xa5); // stale bytes of a recycled buffer
  const off = payloadOffset(p);
  frame.set(p.payload, off);
  const t = new Ipv4RoutingTemplate(p);
  const built = t.encode(frame, { ...p, payload: new Uint8Array(0) }, OPCODES[p.bth.opcode]!, p.payload.length, reth, ipId, defer);
  expect(built).toBe(frame);
  return frame;
}

describe('Ipv4RoutingTemplate: the prebuilt RoCE v2 / IPv4 headers', () => {
  it('gives exactly encodePacket bytes for every opcode, seeded random fields (4000 cases)', () => {
    const r = seededRandom(9);
    for (let i = 0; i < 4000; i++) {
      const { p, reth } = randomPacket(r, i % 5 === 0);
      const ipId = Math.floor(r() * 0x20000); // above 16 bits too: the field keeps the low 16
      expect(Ipv4RoutingTemplate.fits(p)).toBe(true);
      p.ipv4!.id = ipId & 0xffff;
      const want = encodePacket(p);
      const defer = i % 2 === 1;
      const got = viaTemplate(p, reth, ipId, defer, want.length);
      expect(icrcPending(got)).toBe(defer);
      sealIcrc(got);
      if (!Buffer.from(got).equals(Buffer.from(want))) expect(Array.from(got)).toEqual(Array.from(want));
    }
  });

  it('pads a short frame to 60 bytes with zeros over stale bytes', () => {
    const p = newPacket('roce-v2', 0x11 /* RC ACK */, { payload: new Uint8Array(0) });
    p.aeth = { syndrome: 0, msn: 7 };
    const want = encodePacket(p);
    expect(want.length).toBeGreaterThanOrEqual(60);
    const got = viaTemplate(p, { va: 0, rkey: 0, dmaLength: 0 }, 0, false, want.length);
    expect(Array.from(got)).toEqual(Array.from(want));
  });

  it('fits only RoCE v2 over IPv4 without IP options', () => {
    expect(Ipv4RoutingTemplate.fits(newPacket('roce-v2', 0x04))).toBe(true);
    expect(Ipv4RoutingTemplate.fits(newPacket('roce-v2', 0x04, { ipVersion: 6, srcIp: parseIpv6('2001:db8::1'), dstIp: parseIpv6('2001:db8::2') }))).toBe(
      false,
    );
    expect(Ipv4RoutingTemplate.fits(newPacket('roce-v1', 0x04))).toBe(false);
    expect(Ipv4RoutingTemplate.fits(newPacket('ib', 0x04))).toBe(false);
    const opts = newPacket('roce-v2', 0x04);
    opts.ipv4!.ihl = 6;
    opts.ipv4!.options = new Uint8Array(4);
    expect(Ipv4RoutingTemplate.fits(opts)).toBe(false);
  });
});
