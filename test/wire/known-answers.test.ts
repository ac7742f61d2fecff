/**
 * Known-answer vectors for the wire layer, and what the ICRC must and must
 * not cover.
 *
 *  - SPEC-DIGEST §3.1 vector A: the RoCE v2 CNP captured from a ConnectX-4 Lx
 *    (full frame from scapy's test/contrib/roce.uts), ICRC 0x2A00FD82,
 *    wire bytes 82 fd 00 2a, IPv4 header checksum 0x9161.
 *  - SPEC-DIGEST §3.1 vector B: scapy's UC SEND_ONLY (M=1, Pad=2), ICRC
 *    0xF353F378, wire bytes 78 f3 53 f3, IPv4 header checksum 0xB4D5.
 *  - RFC 1071 / textbook IPv4 header checksums.
 *  - UDP source-port hashing (SPEC-DIGEST §1.1) and the ports Linux rxe
 *    actually used in shared/captures/rxe-pair-roce.pcap.
 *  - Flipping any single bit of an ICRC-covered byte is caught (by the ICRC,
 *    or by an earlier, more specific check: the region table below says which
 *    codes each byte may give); changing a masked ("variant") field is not,
 *    for RoCE v2 over IPv4 and IPv6, and RoCE v1. Flips are tried raw and
 *    with the IPv4 header checksum / IPv6 UDP checksum repaired, so that the
 *    ICRC alone has to catch them. Native IB gets the same with the VCRC repaired.
 *  - The IPv6 UDP checksum the encoder writes (RFC 8200 §8.1), against the
 *    test's own computation and tshark's udp.check_checksum.
 *
 * The ICRCs are also recomputed here with node:zlib's crc32 from the masking
 * rules of SPEC-DIGEST §3.1 alone, so the test does not trust icrc.ts.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  calcFlowLabel,
  decodePacket,
  encodePacket,
  flowLabelToUdpSport,
  icrcRoceV2,
  internetChecksum,
  LINKTYPE_ETHERNET,
  LINKTYPE_INFINIBAND,
  newPacket,
  type Packet,
  type PacketOptions,
  roceUdpSport,
  rxeInitialUdpSport,
  vcrc,
  type WireErrorCode,
} from '../../src/wire/index.js';

// ---------------------------------------------------------------------------
// Helpers independent of src/wire

const TSHARK = ['/usr/bin/tshark', '/usr/local/bin/tshark'].find((p) => existsSync(p)) ?? null;

/** A classic little-endian pcap (µs, LINKTYPE_ETHERNET), written out here. */
function pcapOf(frames: Uint8Array[]): Uint8Array {
  const parts: Buffer[] = [];
  const g = Buffer.alloc(24);
  g.writeUInt32LE(0xa1b2c3d4, 0);
  g.writeUInt16LE(2, 4);
  g.writeUInt16LE(4, 6);
  g.writeUInt32LE(262144, 16);
  g.writeUInt32LE(1, 20);
  parts.push(g);
  frames.forEach((f, i) => {
    const r = Buffer.alloc(16);
    r.writeUInt32LE(1_700_000_000 + i, 0);
    r.writeUInt32LE(f.length, 8);
    r.writeUInt32LE(f.length, 12);
    parts.push(r, Buffer.from(f));
  });
  return Buffer.concat(parts);
}

const fromHex = (s: string): Uint8Array => Uint8Array.from(Buffer.from(s.replace(/[\s:]/g, ''), 'hex'));
const toHex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
const be16 = (b: Uint8Array, o: number): number => (b[o]! << 8) | b[o + 1]!;
const le32 = (b: Uint8Array, o: number): number => (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) >>> 0;

/** RFC 1071 one's-complement checksum, written out here (not ip.ts's). */
function rfc1071(b: Uint8Array): number {
  let sum = 0;
  for (let i = 0; i < b.length; i += 2) sum += (b[i]! << 8) | (b[i + 1] ?? 0);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}

/** Recomputes the IPv4 header checksum in place (header at `ip`). */
function fixIpv4Checksum(f: Uint8Array, ip: number): void {
  const hl = (f[ip]! & 0x0f) * 4;
  f[ip + 10] = 0;
  f[ip + 11] = 0;
  const c = rfc1071(f.subarray(ip, ip + hl));
  f[ip + 10] = c >>> 8;
  f[ip + 11] = c & 0xff;
}

/** Where the parts of an Ethernet frame are, parsed here without src/wire. */
interface EthLayout {
  l3: number; // IP header or GRH
  kind: 'v4' | 'v6' | 'v1';
  udp: number; // -1 for RoCE v1
  bth: number;
  icrc: number;
  end: number; // end of the RoCE packet (before any Ethernet padding)
}

function layout(f: Uint8Array): EthLayout {
  let o = 12;
  let type = be16(f, o);
  if (type === 0x8100) {
    o += 4;
    type = be16(f, o);
  }
  const l3 = o + 2;
  if (type === 0x0800) {
    const hl = (f[l3]! & 0x0f) * 4;
    const end = l3 + be16(f, l3 + 2);
    return { l3, kind: 'v4', udp: l3 + hl, bth: l3 + hl + 8, icrc: end - 4, end };
  }
  if (type === 0x86dd) {
    const end = l3 + 40 + be16(f, l3 + 4);
    return { l3, kind: 'v6', udp: l3 + 40, bth: l3 + 48, icrc: end - 4, end };
  }
  if (type === 0x8915) {
    const end = l3 + 40 + be16(f, l3 + 4);
    return { l3, kind: 'v1', udp: -1, bth: l3 + 40, icrc: end - 4, end };
  }
  throw new Error(`ethertype 0x${type.toString(16)}`);
}

/**
 * ICRC per SPEC-DIGEST §3.1 (RoCE v2) and §3.2/§8 item 4 (RoCE v1): eight
 * 0xFF bytes; IPv4 TOS, TTL, checksum -> ones; IPv6/GRH traffic class, flow
 * label, hop limit -> ones; UDP checksum -> ones; BTH byte 4 -> ones.
 */
function zlibIcrc(frame: Uint8Array): number {
  const L = layout(frame);
  const m = Buffer.from(frame.subarray(L.l3, L.icrc));
  if (L.kind === 'v4') {
    m[1] = 0xff;
    m[8] = 0xff;
    m[10] = 0xff;
    m[11] = 0xff;
  } else {
    m[0]! |= 0x0f;
    m[1] = 0xff;
    m[2] = 0xff;
    m[3] = 0xff;
    m[7] = 0xff;
  }
  if (L.udp >= 0) {
    m[L.udp - L.l3 + 6] = 0xff;
    m[L.udp - L.l3 + 7] = 0xff;
  }
  m[L.bth - L.l3 + 4] = 0xff;
  return crc32(Buffer.concat([Buffer.alloc(8, 0xff), m])) >>> 0;
}

function decodeOk(frame: Uint8Array, linktype = LINKTYPE_ETHERNET): Packet {
  const r = decodePacket(frame, linktype);
  if (!r.ok) throw new Error(`expected ok, got ${r.error.code}: ${r.error.message}`);
  return r.packet;
}

function codeOf(frame: Uint8Array, linktype = LINKTYPE_ETHERNET): WireErrorCode | 'ok' {
  const r = decodePacket(frame, linktype);
  return r.ok ? 'ok' : r.error.code;
}

// ---------------------------------------------------------------------------
// Vector A: CNP captured from a ConnectX-4 Lx (scapy test/contrib/roce.uts)

const VECTOR_A = fromHex(`
  e41d2dab2bc2 7cfe90643b32 0800
  45c2 003c 718c 4000 4011 9161 0a001101 0a001201
  0000 12b7 0028 0000
  8100ffff 40000118 00000000
  00000000000000000000000000000000
  82fd002a`);

describe('vector A: ConnectX-4 Lx CNP (SPEC-DIGEST §1.7, §3.1)', () => {
  it('the hand-built frame decodes with the captured ICRC 0x2A00FD82', () => {
    expect(VECTOR_A.length).toBe(74);
    const p = decodeOk(VECTOR_A);
    expect(p.framing).toBe('roce-v2');
    expect(p.icrc).toBe(0x2a00fd82);
    expect(p.ipv4).toMatchObject({ dscp: 48, ecn: 2, totalLength: 60, id: 0x718c, flags: 2, fragmentOffset: 0, ttl: 64, protocol: 17, checksum: 0x9161 });
    expect(Array.from(p.ipv4!.src)).toEqual([10, 0, 17, 1]);
    expect(Array.from(p.ipv4!.dst)).toEqual([10, 0, 18, 1]);
    expect(p.udp).toEqual({ srcPort: 0, dstPort: 4791, length: 40, checksum: 0 });
    expect(p.bth).toEqual({
      opcode: 0x81,
      se: 0,
      migReq: 0,
      padCnt: 0,
      tver: 0,
      pkey: 0xffff,
      fecn: 0,
      becn: 1,
      resv6a: 0,
      destQp: 0x118,
      ackReq: 0,
      resv7: 0,
      psn: 0,
    });
    expect(p.payload.length).toBe(0);
  });

  it('zlib crc32 over the masked headers gives 0x2A00FD82, and so does icrcRoceV2', () => {
    expect(zlibIcrc(VECTOR_A)).toBe(0x2a00fd82);
    expect(icrcRoceV2(VECTOR_A, 14, 42, 70)).toBe(0x2a00fd82);
    expect(le32(VECTOR_A, 70)).toBe(0x2a00fd82);
  });

  it("newPacket('roce-v2', 0x81, …) + encodePacket rebuilds the captured frame byte for byte", () => {
    const p = newPacket('roce-v2', 0x81, {
      dstMac: fromHex('e41d2dab2bc2'),
      srcMac: fromHex('7cfe90643b32'),
      srcIp: Uint8Array.of(10, 0, 17, 1),
      dstIp: Uint8Array.of(10, 0, 18, 1),
      dscp: 48,
      ecn: 2,
      ipId: 0x718c,
      hopLimit: 64,
      udpSrcPort: 0,
      destQp: 0x118,
    });
    const out = encodePacket(p);
    expect(toHex(out)).toBe(toHex(VECTOR_A));
    expect(toHex(out.subarray(70))).toBe('82fd002a');
  });

  it('the IPv4 header checksum 0x9161 is a known answer for internetChecksum', () => {
    const hdr = VECTOR_A.slice(14, 34);
    expect(internetChecksum(hdr, 0, 20)).toBe(0); // correct checksum included
    hdr[10] = 0;
    hdr[11] = 0;
    expect(internetChecksum(hdr, 0, 20)).toBe(0x9161);
  });
});

// ---------------------------------------------------------------------------
// Vector B: UC SEND_ONLY, M=1, Pad=2 (scapy test/contrib/roce.uts)

const B_PAYLOAD_AND_PAD = fromHex('4630818be28935d90e9a95505401be885e500000');
function vectorB(udpChecksum: number): Uint8Array {
  return fromHex(`
    248a07a8fa22 248a07a8fa22 0800
    4501 0040 0478 4000 4011 b4d5 c0a80007 c0a80007
    c000 12b7 002c ${udpChecksum.toString(16).padStart(4, '0')}
    2460ffff 000000d3 00cf1710
    ${toHex(B_PAYLOAD_AND_PAD)}
    78f353f3`);
}

describe('vector B: UC SEND_ONLY with M=1, Pad=2 (SPEC-DIGEST §3.1)', () => {
  it('the hand-built frame decodes with ICRC 0xF353F378 (wire 78 f3 53 f3)', () => {
    const f = vectorB(0);
    expect(f.length).toBe(78);
    const p = decodeOk(f);
    expect(p.icrc).toBe(0xf353f378);
    expect(p.bth).toMatchObject({ opcode: 0x24, se: 0, migReq: 1, padCnt: 2, tver: 0, pkey: 0xffff, destQp: 211, psn: 13571856 });
    expect(p.ipv4).toMatchObject({ dscp: 0, ecn: 1, id: 1144, flags: 2, ttl: 64, totalLength: 64, checksum: 0xb4d5 });
    expect(p.udp).toMatchObject({ srcPort: 49152, dstPort: 4791, length: 44 });
    expect(toHex(p.payload)).toBe(toHex(B_PAYLOAD_AND_PAD.subarray(0, 18)));
    expect(zlibIcrc(f)).toBe(0xf353f378);
  });

  it("scapy's frame carries UDP checksum 0xACA2: masked, so the same ICRC still verifies", () => {
    const f = vectorB(0xaca2);
    expect(decodeOk(f).icrc).toBe(0xf353f378);
    expect(decodeOk(f).udp!.checksum).toBe(0xaca2);
    expect(zlibIcrc(f)).toBe(0xf353f378);
  });

  it('newPacket + encodePacket rebuilds it byte for byte (pad count and zero pad computed)', () => {
    const p = newPacket('roce-v2', 0x24, {
      dstMac: fromHex('248a07a8fa22'),
      srcMac: fromHex('248a07a8fa22'),
      srcIp: Uint8Array.of(192, 168, 0, 7),
      dstIp: Uint8Array.of(192, 168, 0, 7),
      dscp: 0,
      ecn: 1,
      ipId: 1144,
      hopLimit: 64,
      udpSrcPort: 49152,
      migReq: 1,
      pkey: 0xffff,
      destQp: 211,
      psn: 13571856,
      payload: B_PAYLOAD_AND_PAD.slice(0, 18),
    });
    const out = encodePacket(p);
    expect(toHex(out)).toBe(toHex(vectorB(0)));
    expect(toHex(out.subarray(74))).toBe('78f353f3');
    expect(be16(out, 24)).toBe(0xb4d5); // IPv4 header checksum as a known answer
  });
});

// ---------------------------------------------------------------------------
// IPv4 header checksum

describe('internetChecksum known answers (RFC 1071)', () => {
  const cases: [string, string, number][] = [
    ['textbook header (Wikipedia "IPv4 header checksum")', '4500 0073 0000 4000 4011 0000 c0a8 0001 c0a8 00c7', 0xb861],
    ['textbook TCP/IPv4 header 172.16.10.99 -> 172.16.10.12', '4500 003c 1c46 4000 4006 0000 ac10 0a63 ac10 0a0c', 0xb1e6],
    ['vector A, ConnectX-4 Lx CNP', '45c2 003c 718c 4000 4011 0000 0a00 1101 0a00 1201', 0x9161],
    ['vector B, scapy UC SEND_ONLY', '4501 0040 0478 4000 4011 0000 c0a8 0007 c0a8 0007', 0xb4d5],
    ['RFC 1071 §3 example bytes (sum 0xddf2)', '0001 f203 f4f5 f6f7', 0x220d],
  ];
  for (const [name, h, want] of cases) {
    it(`${name} -> 0x${want.toString(16)}`, () => {
      const b = fromHex(h);
      expect(internetChecksum(b, 0, b.length)).toBe(want);
      expect(rfc1071(b)).toBe(want); // the test's own checksum agrees
      if (b.length === 20) {
        b[10] = want >>> 8;
        b[11] = want & 0xff;
        expect(internetChecksum(b, 0, 20)).toBe(0); // a header with a correct checksum sums to 0
      }
    });
  }

  it('works at an offset inside a larger buffer, and pads an odd length with a zero byte', () => {
    const hdr = fromHex('4500 0073 0000 4000 4011 0000 c0a8 0001 c0a8 00c7');
    const buf = new Uint8Array(64).fill(0x5a);
    buf.set(hdr, 23);
    expect(internetChecksum(buf, 23, 20)).toBe(0xb861);
    expect(internetChecksum(buf.subarray(10), 13, 20)).toBe(0xb861);
    expect(internetChecksum(Uint8Array.of(0x01), 0, 1)).toBe(0xfeff);
    expect(internetChecksum(Uint8Array.of(0x00, 0x01, 0xf2), 0, 3)).toBe(rfc1071(Uint8Array.of(0x00, 0x01, 0xf2)));
    expect(internetChecksum(new Uint8Array(0), 0, 0)).toBe(0xffff);
  });

  it('encodePacket writes the header checksum the test computes by hand (total length varies with the payload)', () => {
    for (const len of [0, 1, 2, 3, 100, 1024]) {
      const f = encodePacket(newPacket('roce-v2', 0x04, { ipId: 0x1234 + len, dscp: 26, ecn: 3, hopLimit: 7, payload: new Uint8Array(len).fill(len & 0xff) }));
      const hdr = f.slice(14, 34);
      expect(internetChecksum(hdr, 0, 20)).toBe(0);
      const got = be16(hdr, 10);
      hdr[10] = 0;
      hdr[11] = 0;
      expect(got).toBe(rfc1071(hdr));
    }
  });
});

// ---------------------------------------------------------------------------
// UDP source ports

describe('RoCE v2 UDP source port (SPEC-DIGEST §1.1)', () => {
  it('rxe at QP creation: 0xC000 + hash_32(qpn, 14); QPN 0x11 -> 0xDF94', () => {
    expect(rxeInitialUdpSport(0x11)).toBe(0xdf94);
  });

  it('rdma_get_udp_sport with flow label 0: symmetric; (0x11, 0x12) -> fl 0x132 -> 0xC132', () => {
    expect(calcFlowLabel(0x11, 0x12)).toBe(0x132);
    expect(calcFlowLabel(0x12, 0x11)).toBe(0x132);
    expect(roceUdpSport(0, 0x11, 0x12)).toBe(0xc132);
    expect(roceUdpSport(0, 0x12, 0x11)).toBe(0xc132);
  });

  it('a non-zero flow label is used as given: 0x12345 -> 0xC000 | (0x2345 ^ 0x4) = 0xE341', () => {
    expect(flowLabelToUdpSport(0x12345)).toBe(0xe341);
    expect(roceUdpSport(0x12345, 0x11, 0x12)).toBe(0xe341);
    expect(flowLabelToUdpSport(0xfffff)).toBe(0xc000 | (0x3fff ^ 0x3f));
  });

  it('large QPNs: the 64-bit product and both folds (no 32-bit overflow)', () => {
    // v = 0xFFFFFF * 0xFFFFFE = 0xFFFFFD000002; v ^= v >> 20; v ^= v >> 40; & 0xFFFFF
    let v = 0xffffffn * 0xfffffen;
    v ^= v >> 20n;
    v ^= v >> 40n;
    expect(calcFlowLabel(0xffffff, 0xfffffe)).toBe(Number(v & 0xfffffn));
    const h = Number((BigInt(0xffffff) * 0x61c88647n) & 0xffffffffn) >>> 18;
    expect(rxeInitialUdpSport(0xffffff)).toBe(0xc000 + h);
  });

  it('the ports Linux rxe used in rxe-pair-roce.pcap', () => {
    // UD QPs (and QP1 for the RDMA CM MADs) keep the port from QP creation.
    expect(rxeInitialUdpSport(0x12)).toBe(0xf806);
    expect(rxeInitialUdpSport(0x13)).toBe(0xd078);
    expect(rxeInitialUdpSport(0x01)).toBe(0xd872);
    // Connected QPs get the symmetric flow-label port on modify_qp (RTR).
    expect(roceUdpSport(0, 0x11, 0x11)).toBe(0xc121); // ibv_rc_pingpong
    expect(roceUdpSport(0, 0x13, 0x15)).toBe(0xc18f); // ibv_uc_pingpong
    expect(roceUdpSport(0, 0x15, 0x13)).toBe(0xc18f);
  });
});

// ---------------------------------------------------------------------------
// What the ICRC covers: single-bit flips and masked fields

type Expect = WireErrorCode | 'ok';

/**
 * The IPv6 UDP checksum (RFC 8200 §8.1), written out here: pseudo-header of
 * source and destination address, upper-layer length and next header 17, then
 * the UDP header (checksum taken as 0) and data; a result of 0 is sent as 0xFFFF.
 */
function udp6Checksum(f: Uint8Array): number {
  const L = layout(f);
  const udpLen = be16(f, L.udp + 4);
  const pseudo = new Uint8Array(40);
  pseudo.set(f.subarray(L.l3 + 8, L.l3 + 40), 0);
  pseudo[32] = udpLen >>> 24;
  pseudo[33] = (udpLen >>> 16) & 0xff;
  pseudo[34] = (udpLen >>> 8) & 0xff;
  pseudo[35] = udpLen & 0xff;
  pseudo[39] = 17;
  const seg = f.slice(L.udp, Math.min(L.udp + udpLen, f.length));
  seg[6] = 0;
  seg[7] = 0;
  const all = new Uint8Array(40 + seg.length);
  all.set(pseudo, 0);
  all.set(seg, 40);
  const c = rfc1071(all);
  return c === 0 ? 0xffff : c;
}

const hasUdp6Checksum = (f: Uint8Array): boolean => {
  const L = layout(f);
  return L.kind === 'v6' && be16(f, L.udp + 6) !== 0;
};

function fixUdp6Checksum(f: Uint8Array): void {
  const L = layout(f);
  const c = udp6Checksum(f);
  f[L.udp + 6] = c >>> 8;
  f[L.udp + 7] = c & 0xff;
}

interface Region {
  name: string;
  from: number;
  to: number;
  /** Acceptable results of a single-bit flip, per bit (0 = LSB). */
  raw: (bit: number) => readonly Expect[];
  /**
   * Acceptable results when the flip is followed by a repair of the checksum
   * that would otherwise catch it first (IPv4 header checksum, IPv6 UDP
   * checksum): then the ICRC alone must catch covered fields.
   */
  repaired: (bit: number) => readonly Expect[];
}

const LEN_ERRS: readonly Expect[] = ['WIRE_TRUNCATED', 'WIRE_LENGTH_MISMATCH'];
const OPCODE_ERRS: readonly Expect[] = ['WIRE_BAD_ICRC', 'WIRE_UNKNOWN_OPCODE', 'WIRE_OPCODE_NOT_ALLOWED', 'WIRE_TRUNCATED', 'WIRE_LENGTH_MISMATCH'];
const always = (x: readonly Expect[]) => () => x;

/** BTH byte 1, bit by bit: SE and M are covered, PadCnt is covered (or breaks the length), TVer must be 0. */
const bthByte1 = (bit: number): readonly Expect[] =>
  bit >= 6 ? ['WIRE_BAD_ICRC'] : bit >= 4 ? ['WIRE_BAD_ICRC', 'WIRE_LENGTH_MISMATCH'] : ['WIRE_BAD_VERSION'];

/** The byte regions of a valid frame and what a single-bit flip in each may give. */
function regionsOf(f: Uint8Array): Region[] {
  const L = layout(f);
  const csum6 = hasUdp6Checksum(f);
  const region = (name: string, from: number, to: number, raw: (bit: number) => readonly Expect[], repaired = raw): Region => ({
    name,
    from,
    to,
    raw,
    repaired,
  });
  /** Covered by the IPv6 UDP checksum (when present) and by the ICRC. */
  const transport = (name: string, from: number, to: number, codes: (bit: number) => readonly Expect[]): Region =>
    region(name, from, to, csum6 ? always(['WIRE_BAD_CHECKSUM']) : codes, codes);
  const rs: Region[] = [region('Ethernet MACs (not covered)', 0, 12, always(['ok']))];
  if (L.l3 === 18) {
    rs.push(region('802.1Q TPID', 12, 14, always(['WIRE_NOT_RDMA'])));
    rs.push(region('802.1Q TCI (not covered)', 14, 16, always(['ok'])));
  }
  rs.push(region('ethertype', L.l3 - 2, L.l3, always(['WIRE_NOT_RDMA'])));
  const ip = L.l3;
  if (L.kind === 'v4') {
    const hl = L.udp - ip;
    const V4_ANY = always(['WIRE_BAD_VERSION', 'WIRE_BAD_FIELD', 'WIRE_TRUNCATED', 'WIRE_LENGTH_MISMATCH', 'WIRE_BAD_CHECKSUM', 'WIRE_NOT_RDMA']);
    const csum = always(['WIRE_BAD_CHECKSUM']);
    rs.push(
      region('IPv4 version/IHL', ip, ip + 1, V4_ANY),
      region('IPv4 TOS (masked)', ip + 1, ip + 2, csum, always(['ok'])),
      region('IPv4 total length', ip + 2, ip + 4, always(['WIRE_BAD_CHECKSUM', ...LEN_ERRS]), always(LEN_ERRS)),
      region('IPv4 ID', ip + 4, ip + 6, csum, always(['WIRE_BAD_ICRC'])),
      // Byte 6: bit 7 reserved and bit 6 DF are covered; bit 5 MF and the offset make it a fragment.
      region('IPv4 flags/fragment offset', ip + 6, ip + 7, csum, (bit) => (bit >= 6 ? ['WIRE_BAD_ICRC'] : ['WIRE_NOT_RDMA'])),
      region('IPv4 fragment offset (low byte)', ip + 7, ip + 8, csum, always(['WIRE_NOT_RDMA'])),
      region('IPv4 TTL (masked)', ip + 8, ip + 9, csum, always(['ok'])),
      region('IPv4 protocol', ip + 9, ip + 10, csum, always(['WIRE_NOT_RDMA'])),
      region('IPv4 header checksum', ip + 10, ip + 12, csum),
      region('IPv4 addresses', ip + 12, ip + 20, csum, always(['WIRE_BAD_ICRC'])),
    );
    if (hl > 20) rs.push(region('IPv4 options', ip + 20, ip + hl, csum, always(['WIRE_BAD_ICRC'])));
  } else {
    // IPv6 header or the GRH of RoCE v1: the same layout.
    rs.push(
      // High nibble: the version; low nibble: the top of the traffic class (masked).
      region('IP version / TC high nibble', ip, ip + 1, (bit) => (bit >= 4 ? ['WIRE_BAD_VERSION'] : ['ok'])),
      region('traffic class / flow label (masked)', ip + 1, ip + 4, always(['ok'])),
      region('payload length', ip + 4, ip + 6, always(L.kind === 'v6' ? LEN_ERRS : [...LEN_ERRS, 'WIRE_BAD_ICRC'])),
      region('next header', ip + 6, ip + 7, always(['WIRE_NOT_RDMA'])),
      region('hop limit (masked)', ip + 7, ip + 8, always(['ok'])),
      // The addresses are in the UDP checksum's pseudo-header.
      transport('source/destination address or GID', ip + 8, ip + 40, always(['WIRE_BAD_ICRC'])),
    );
  }
  if (L.udp >= 0) {
    rs.push(
      transport('UDP source port', L.udp, L.udp + 2, always(['WIRE_BAD_ICRC'])),
      region('UDP destination port', L.udp + 2, L.udp + 4, always(['WIRE_NOT_RDMA'])),
      region('UDP length', L.udp + 4, L.udp + 6, always(['WIRE_LENGTH_MISMATCH'])),
      // Masked in the ICRC. IPv4: not verified (0 means none). IPv6: verified
      // (RFC 8200 forbids 0, and a flip of 0 makes a non-zero wrong value).
      region('UDP checksum (masked)', L.udp + 6, L.udp + 8, always(L.kind === 'v6' ? ['WIRE_BAD_CHECKSUM'] : ['ok'])),
    );
  }
  const b = L.bth;
  rs.push(
    transport('BTH opcode', b, b + 1, always(OPCODE_ERRS)),
    transport('BTH SE/M/PadCnt/TVer', b + 1, b + 2, bthByte1),
    transport('BTH P_Key', b + 2, b + 4, always(['WIRE_BAD_ICRC'])),
    transport('BTH FECN/BECN/resv6a (masked)', b + 4, b + 5, always(['ok'])),
    transport('BTH DestQP, A, resv7, PSN', b + 5, b + 12, always(['WIRE_BAD_ICRC'])),
    transport('extension headers, payload, pad', b + 12, L.icrc, always(['WIRE_BAD_ICRC'])),
    transport('ICRC', L.icrc, L.icrc + 4, always(['WIRE_BAD_ICRC'])),
  );
  if (L.end < f.length) rs.push(region('Ethernet padding (not covered)', L.end, f.length, always(['ok'])));
  // Sanity: the regions tile the frame.
  rs.sort((x, y) => x.from - y.from);
  let at = 0;
  for (const r of rs) {
    if (r.from !== at) throw new Error(`regions leave a gap or overlap at byte ${at} (${r.name} starts at ${r.from})`);
    at = r.to;
  }
  if (at !== f.length) throw new Error(`regions end at ${at}, frame has ${f.length} bytes`);
  return rs;
}

interface FlipFailure {
  frame: string;
  byte: number;
  bit: number;
  region: string;
  got: Expect;
  allowed: string;
  why?: string;
}

/** Re-encodes a decoded packet the way the frame was made (IPv6 UDP checksum or none). */
function reencode(p: Packet): Uint8Array {
  return encodePacket(p, undefined, 0, { ipv6UdpChecksum: p.ipv6 !== null && p.udp!.checksum !== 0 });
}

function flipAll(name: string, frame: Uint8Array, repair: boolean): FlipFailure[] {
  const L = layout(frame);
  const csum6 = hasUdp6Checksum(frame);
  const orig = decodeOk(frame);
  const failures: FlipFailure[] = [];
  for (const r of regionsOf(frame)) {
    for (let i = r.from; i < r.to; i++) {
      for (let bit = 0; bit < 8; bit++) {
        const allowed = repair ? r.repaired(bit) : r.raw(bit);
        const f = frame.slice();
        f[i]! ^= 1 << bit;
        if (repair && L.kind === 'v4' && i >= L.l3 && i < L.udp && i !== L.l3 + 10 && i !== L.l3 + 11) fixIpv4Checksum(f, L.l3);
        // IPv6: repair the UDP checksum for everything it covers but itself and the lengths.
        const lengthField = (i >= L.l3 + 4 && i < L.l3 + 6) || (L.udp >= 0 && i >= L.udp + 4 && i < L.udp + 6);
        if (repair && csum6 && i >= L.l3 + 8 && i < L.end && !lengthField && i !== L.udp + 6 && i !== L.udp + 7) fixUdp6Checksum(f);
        const before = toHex(f);
        const res = decodePacket(f, LINKTYPE_ETHERNET);
        const got: Expect = res.ok ? 'ok' : res.error.code;
        let why: string | undefined;
        if (!allowed.includes(got)) why = 'unexpected result';
        else if (res.ok) {
          // A masked or uncovered change: same ICRC, and the frame re-encodes to itself.
          if (res.packet.icrc !== orig.icrc) why = 'ICRC changed';
          else if (toHex(reencode(res.packet).subarray(0, L.end)) !== toHex(f.subarray(0, L.end))) why = 're-encode differs';
        } else if (got === 'WIRE_BAD_ICRC' && !lengthField && res.error.offset !== L.icrc) {
          why = `BAD_ICRC reported at offset ${res.error.offset}, ICRC is at ${L.icrc}`;
        }
        if (toHex(f) !== before) why = 'decodePacket modified its input';
        if (why) failures.push({ frame: name, byte: i, bit, region: r.name, got, allowed: allowed.join('|'), why });
      }
    }
  }
  return failures;
}

const SRC6 = fromHex('fe80000000000000025056fffe000001');
const DST6 = fromHex('20010db8000000000000000000000042');

function build(framing: 'roce-v2' | 'roce-v1', opcode: number, payloadLen: number, o: PacketOptions = {}, ipv6UdpChecksum = true): Uint8Array {
  const payload = Uint8Array.from({ length: payloadLen }, (_, i) => (i * 37 + 11) & 0xff);
  const p = newPacket(framing, opcode, {
    psn: 0x123456,
    destQp: 0xabcdef,
    pkey: 0x8001,
    ipId: 0x4242,
    hopLimit: 33,
    dscp: 26,
    ecn: 2,
    flowLabel: 0x54321,
    udpSrcPort: 0xc121,
    ackReq: 1,
    ...o,
    payload,
  });
  // Non-zero extension header fields, so flips there are visible.
  if (p.reth) Object.assign(p.reth, { va: 0x0000556f4b568000n, rkey: 0x8b2, dmaLength: 0x2000 });
  if (p.atomicEth) Object.assign(p.atomicEth, { va: 0x7f0011223344n, rkey: 0x1234, swapAdd: 0x0102030405060708n, compare: 0xfffefdfcn });
  if (p.aeth) Object.assign(p.aeth, { syndrome: 0x1f, msn: 0x0a0b0c });
  if (p.atomicAckEth) p.atomicAckEth.origData = 0xb53d4967dfbb4388n;
  if (p.deth) Object.assign(p.deth, { qkey: 0x80010000, srcQp: 1 });
  if (p.immDt !== null) p.immDt = 0xdeadbeef;
  if (p.ieth !== null) p.ieth = 0x0badcafe;
  return encodePacket(p, undefined, 0, { ipv6UdpChecksum });
}

const IPV4_FRAMES: [string, Uint8Array][] = [
  ['RC SEND_ONLY, 13-byte payload (pad 3)', build('roce-v2', 0x04, 13)],
  ['RC RDMA_WRITE_ONLY_WITH_IMMEDIATE, 6 bytes', build('roce-v2', 0x0b, 6)],
  ['RC ATOMIC_ACKNOWLEDGE', build('roce-v2', 0x12, 0)],
  ['RC FETCH_ADD', build('roce-v2', 0x14, 0)],
  ['RC ACKNOWLEDGE (Ethernet-padded to 60)', build('roce-v2', 0x11, 0)],
  ['UD SEND_ONLY_WITH_IMMEDIATE, 33 bytes', build('roce-v2', 0x65, 33)],
  ['CNP', build('roce-v2', 0x81, 0, { becn: 1, ackReq: 0 })],
  ['RC SEND_ONLY_WITH_INVALIDATE, 2 bytes, VLAN-tagged', build('roce-v2', 0x17, 2, { vlan: { pcp: 3, dei: 0, vid: 100 } })],
  ['vector A (captured CNP)', VECTOR_A],
  ['vector B (UC SEND_ONLY, M=1, Pad=2)', vectorB(0)],
];

const V6 = { ipVersion: 6, srcIp: SRC6, dstIp: DST6 } as const;
const IPV6_FRAMES: [string, Uint8Array][] = [
  ['IPv6 RC SEND_ONLY, 5 bytes', build('roce-v2', 0x04, 5, V6)],
  ['IPv6 RC RDMA_READ_REQUEST', build('roce-v2', 0x0c, 0, V6)],
  ['IPv6 UD SEND_ONLY, 40 bytes, VLAN', build('roce-v2', 0x64, 40, { ...V6, vlan: { pcp: 5, dei: 1, vid: 7 } })],
  ['IPv6 CNP', build('roce-v2', 0x81, 0, V6)],
  ['IPv6 RC SEND_ONLY, 5 bytes, UDP checksum 0', build('roce-v2', 0x04, 5, V6, false)],
  ['IPv6 RC ATOMIC_ACKNOWLEDGE, UDP checksum 0', build('roce-v2', 0x12, 0, V6, false)],
];

const V1_FRAMES: [string, Uint8Array][] = [
  ['RoCE v1 RC SEND_ONLY, 7 bytes', build('roce-v1', 0x04, 7, { srcIp: SRC6, dstIp: DST6 })],
  ['RoCE v1 RC ACKNOWLEDGE', build('roce-v1', 0x11, 0)],
  ['RoCE v1 UC RDMA_WRITE_FIRST, 16 bytes, VLAN', build('roce-v1', 0x26, 16, { vlan: { pcp: 3, dei: 0, vid: 4095 } })],
];

function failureReport(fs: FlipFailure[]): string {
  return `${fs.length} unexpected result(s); first 20:\n  ${fs
    .slice(0, 20)
    .map((x) => `${x.frame}: byte ${x.byte} bit ${x.bit} (${x.region}) gave ${x.got}, allowed ${x.allowed}: ${x.why}`)
    .join('\n  ')}`;
}

describe('ICRC coverage: every single-bit flip of a covered byte is caught', () => {
  it('the frames under test are valid and their ICRCs (and IPv6 UDP checksums) match independent computations', () => {
    for (const [name, f] of [...IPV4_FRAMES, ...IPV6_FRAMES, ...V1_FRAMES]) {
      const p = decodeOk(f);
      expect(p.icrc, name).toBe(zlibIcrc(f));
      expect(le32(f, layout(f).icrc), name).toBe(p.icrc);
      if (p.ipv6) expect(p.udp!.checksum, name).toBe(name.endsWith('UDP checksum 0') ? 0 : udp6Checksum(f));
    }
  });

  it('RoCE v2 / IPv4: raw flips (the IPv4 header checksum catches header changes first)', () => {
    const failures = IPV4_FRAMES.flatMap(([n, f]) => flipAll(n, f, false));
    expect(failures, failureReport(failures)).toEqual([]);
  });

  it('RoCE v2 / IPv4: flips with the IPv4 checksum repaired (the ICRC alone must catch covered fields)', () => {
    const failures = IPV4_FRAMES.flatMap(([n, f]) => flipAll(n, f, true));
    expect(failures, failureReport(failures)).toEqual([]);
  });

  it('RoCE v2 / IPv6: raw flips (the UDP checksum, when present, catches transport changes first)', () => {
    const failures = IPV6_FRAMES.flatMap(([n, f]) => flipAll(n, f, false));
    expect(failures, failureReport(failures)).toEqual([]);
  });

  it('RoCE v2 / IPv6: flips with the UDP checksum repaired (the ICRC alone must catch covered fields)', () => {
    const failures = IPV6_FRAMES.flatMap(([n, f]) => flipAll(n, f, true));
    expect(failures, failureReport(failures)).toEqual([]);
  });

  it('RoCE v1 (GRH)', () => {
    const failures = V1_FRAMES.flatMap(([n, f]) => flipAll(n, f, false));
    expect(failures, failureReport(failures)).toEqual([]);
  });

  it('with verifyIcrc: false, a covered-field flip decodes and shows the flipped value', () => {
    const f = IPV4_FRAMES[0]![1].slice();
    const L = layout(f);
    f[L.bth + 11]! ^= 0x01; // PSN low bit
    expect(codeOf(f)).toBe('WIRE_BAD_ICRC');
    const r = decodePacket(f, LINKTYPE_ETHERNET, { verifyIcrc: false });
    expect(r.ok && r.packet.bth.psn).toBe(0x123457);
  });
});

describe('ICRC invariance: masked (variant) fields may change in flight', () => {
  it('RoCE v2 / IPv4: every TOS (DSCP+ECN) and TTL value, IPv4 checksum recomputed', () => {
    for (const [name, frame] of IPV4_FRAMES) {
      const L = layout(frame);
      const icrc = decodeOk(frame).icrc;
      for (let v = 0; v < 256; v++) {
        const a = frame.slice();
        a[L.l3 + 1] = v;
        fixIpv4Checksum(a, L.l3);
        const pa = decodeOk(a);
        expect([pa.icrc, pa.ipv4!.dscp, pa.ipv4!.ecn], `${name} TOS ${v}`).toEqual([icrc, v >>> 2, v & 3]);
        expect(zlibIcrc(a)).toBe(icrc);
        const b = frame.slice();
        b[L.l3 + 8] = v;
        fixIpv4Checksum(b, L.l3);
        const pb = decodeOk(b);
        expect([pb.icrc, pb.ipv4!.ttl], `${name} TTL ${v}`).toEqual([icrc, v]);
      }
    }
  });

  it('RoCE v2 / IPv4: a router setting ECN to CE (TOS |= 3) and decrementing TTL keeps the ICRC', () => {
    for (const [name, frame] of IPV4_FRAMES) {
      const L = layout(frame);
      const f = frame.slice();
      f[L.l3 + 1]! |= 3;
      f[L.l3 + 8]! -= 1;
      fixIpv4Checksum(f, L.l3);
      const p = decodeOk(f);
      expect(p.ipv4!.ecn, name).toBe(3);
      expect(p.icrc, name).toBe(decodeOk(frame).icrc);
    }
  });

  it('BTH byte 4 (FECN, BECN, resv6a): all 256 values keep the ICRC, in every framing', () => {
    for (const [name, frame] of [...IPV4_FRAMES, ...IPV6_FRAMES, ...V1_FRAMES]) {
      const L = layout(frame);
      const icrc = decodeOk(frame).icrc;
      const csum6 = hasUdp6Checksum(frame);
      for (let v = 0; v < 256; v++) {
        const f = frame.slice();
        f[L.bth + 4] = v;
        // Over IPv6 the BTH is inside the UDP checksum: a marking hop must update it.
        if (csum6) {
          if (v !== frame[L.bth + 4]) expect(codeOf(f), `${name} byte4=${v} without UDP checksum update`).toBe('WIRE_BAD_CHECKSUM');
          fixUdp6Checksum(f);
        }
        const p = decodeOk(f);
        expect([p.icrc, p.bth.fecn, p.bth.becn, p.bth.resv6a], `${name} byte4=${v}`).toEqual([icrc, v >>> 7, (v >>> 6) & 1, v & 0x3f]);
      }
    }
  });

  it('UDP checksum: masked from the ICRC; over IPv4 any value decodes, over IPv6 0 or the right one', () => {
    for (const [name, frame] of [...IPV4_FRAMES, ...IPV6_FRAMES]) {
      const L = layout(frame);
      const icrc = decodeOk(frame).icrc;
      for (const v of [0x0000, 0xffff, 0xaca2, 0x1234]) {
        const f = frame.slice();
        f[L.udp + 6] = v >>> 8;
        f[L.udp + 7] = v & 0xff;
        if (L.kind === 'v6' && v !== 0 && v !== udp6Checksum(f)) {
          expect(codeOf(f), `${name} UDP checksum ${v}`).toBe('WIRE_BAD_CHECKSUM');
          const r = decodePacket(f, LINKTYPE_ETHERNET, { verifyIpChecksum: false });
          expect(r.ok && r.packet.icrc, `${name} UDP checksum ${v}, not verified`).toBe(icrc);
          continue;
        }
        const p = decodeOk(f);
        expect([p.icrc, p.udp!.checksum], name).toEqual([icrc, v]);
      }
    }
  });

  it('IPv6 and RoCE v1 GRH: traffic class, flow label and hop limit keep the ICRC (and the IPv6 UDP checksum)', () => {
    for (const [name, frame] of [...IPV6_FRAMES, ...V1_FRAMES]) {
      const L = layout(frame);
      const icrc = decodeOk(frame).icrc;
      for (const [tc, fl, hl] of [
        [0, 0, 0],
        [0xff, 0xfffff, 0xff],
        [0x8a, 0x12345, 1],
        [0x03, 0x00001, 64],
        [0xb8, 0xabcde, 254],
      ] as const) {
        const f = frame.slice();
        f[L.l3] = 0x60 | (tc >>> 4);
        f[L.l3 + 1] = ((tc & 0xf) << 4) | (fl >>> 16);
        f[L.l3 + 2] = (fl >>> 8) & 0xff;
        f[L.l3 + 3] = fl & 0xff;
        f[L.l3 + 7] = hl;
        const p = decodeOk(f);
        const tcfl = p.ipv6 ?? p.grh!;
        const hop = p.ipv6 ? p.ipv6.hopLimit : p.grh!.hopLimit;
        expect([p.icrc, tcfl.trafficClass, tcfl.flowLabel, hop], `${name} tc=${tc} fl=${fl} hl=${hl}`).toEqual([icrc, tc, fl, hl]);
        expect(zlibIcrc(f)).toBe(icrc);
      }
    }
  });

  it('Ethernet MACs and the 802.1Q tag are not covered', () => {
    const f = IPV4_FRAMES[7]![1].slice(); // VLAN-tagged
    const icrc = decodeOk(f).icrc;
    f.fill(0x77, 0, 12);
    f[14] = 0xef; // PCP 7, DEI 0, VID 0xfff
    f[15] = 0xff;
    const p = decodeOk(f);
    expect(p.icrc).toBe(icrc);
    expect(p.eth!.vlan).toEqual({ pcp: 7, dei: 0, vid: 0xfff });
  });
});

describe('IPv6 UDP checksum (RFC 8200 §8.1)', () => {
  it('encodePacket computes what the test computes by hand, for many payload lengths (odd ones too)', () => {
    for (let len = 0; len < 40; len++) {
      const f = build('roce-v2', 0x04, len, { ...V6, psn: len });
      expect(be16(f, layout(f).udp + 6), `len ${len}`).toBe(udp6Checksum(f));
    }
  });

  it.skipIf(!TSHARK)('tshark (udp.check_checksum on) finds every IPv6 UDP checksum good', () => {
    const frames = Array.from({ length: 12 }, (_, len) => build('roce-v2', len % 2 ? 0x04 : 0x0a, len * 7, { ...V6, psn: len }));
    frames.push(...IPV6_FRAMES.filter(([n]) => !n.endsWith('UDP checksum 0')).map(([, f]) => f));
    const dir = mkdtempSync(join(tmpdir(), 'rnic-ka-'));
    try {
      const file = join(dir, 'v6.pcap');
      writeFileSync(file, pcapOf(frames));
      const out = execFileSync(
        TSHARK!,
        [
          '-n',
          '-r',
          file,
          '--disable-protocol',
          'rpcordma',
          '-o',
          'udp.check_checksum:TRUE',
          '-T',
          'fields',
          '-E',
          'occurrence=f',
          '-e',
          'udp.checksum',
          '-e',
          'udp.checksum.status',
          '-e',
          'infiniband.bth.opcode',
        ],
        { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, stdio: ['ignore', 'pipe', 'ignore'] },
      );
      const rows = out
        .trim()
        .split('\n')
        .map((l) => l.split('\t'));
      expect(rows).toHaveLength(frames.length);
      rows.forEach((r, i) => {
        expect(Number(r[0]), `frame ${i}`).toBe(be16(frames[i]!, layout(frames[i]!).udp + 6));
        expect(r[1], `frame ${i}: udp.checksum.status (1 = good)`).toBe('1');
        expect(r[2], `frame ${i}`).not.toBe('');
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("ipv6UdpChecksum: false sends the packet's own value (0 = none) and decodes", () => {
    const f = build('roce-v2', 0x04, 9, V6, false);
    expect(be16(f, layout(f).udp + 6)).toBe(0);
    expect(codeOf(f)).toBe('ok');
  });
});

describe('ICRC over IPv4 options and VLAN tags (independent zlib check)', () => {
  it('IHL 6..15: the options are covered as transmitted', () => {
    for (let ihl = 6; ihl <= 15; ihl++) {
      const p = newPacket('roce-v2', 0x0a, { payload: Uint8Array.of(1, 2, 3, 4, 5), psn: ihl, dscp: 10, ecn: 1 });
      p.ipv4!.ihl = ihl;
      p.ipv4!.options = Uint8Array.from({ length: (ihl - 5) * 4 }, (_, i) => (i === 0 ? 0x01 : (i * 13 + ihl) & 0xff));
      const f = encodePacket(p);
      const q = decodeOk(f);
      expect(q.ipv4!.ihl, `ihl ${ihl}`).toBe(ihl);
      expect(q.icrc, `ihl ${ihl}`).toBe(zlibIcrc(f));
      expect(toHex(q.ipv4!.options!)).toBe(toHex(p.ipv4!.options));
      // A flip inside the options, checksum repaired: the ICRC catches it.
      const g = f.slice();
      g[14 + 20 + 1]! ^= 0x10;
      fixIpv4Checksum(g, 14);
      expect(codeOf(g), `ihl ${ihl}`).toBe('WIRE_BAD_ICRC');
      // A TOS change with the checksum repaired: still valid.
      const h = f.slice();
      h[15] = 0xfe;
      fixIpv4Checksum(h, 14);
      expect(codeOf(h), `ihl ${ihl}`).toBe('ok');
    }
  });
});

// ---------------------------------------------------------------------------
// Native IB: the VCRC covers everything; with it repaired, the ICRC covers all but VL and the variant GRH fields

describe('native IB: VCRC and ICRC coverage', () => {
  function ibFrame(global: boolean, opcode: number, len: number): Uint8Array {
    const p = newPacket('ib', opcode, {
      global,
      slid: 0x0102,
      dlid: 0xc003,
      sl: 5,
      vl: 2,
      psn: 0x00ff00,
      destQp: 0x000abc,
      srcIp: SRC6,
      dstIp: DST6,
      dscp: 4,
      flowLabel: 0x1234,
      hopLimit: 9,
      payload: Uint8Array.from({ length: len }, (_, i) => i ^ 0x5a),
    });
    return encodePacket(p);
  }
  const FRAMES: [string, Uint8Array][] = [
    ['IB local RC SEND_ONLY, 9 bytes', ibFrame(false, 0x04, 9)],
    ['IB global UD SEND_ONLY, 24 bytes', ibFrame(true, 0x64, 24)],
  ];
  const fixVcrc = (f: Uint8Array) => {
    const end = f.length - 2;
    const v = vcrc(f, 0, end);
    f[end] = v & 0xff;
    f[end + 1] = v >>> 8;
  };

  it('any single-bit flip without VCRC repair is rejected', () => {
    const bad: string[] = [];
    for (const [name, frame] of FRAMES) {
      for (let i = 0; i < frame.length; i++) {
        for (let bit = 0; bit < 8; bit++) {
          const f = frame.slice();
          f[i]! ^= 1 << bit;
          const got = codeOf(f, LINKTYPE_INFINIBAND);
          if (got === 'ok' || got === 'WIRE_BAD_ICRC') bad.push(`${name} byte ${i} bit ${bit}: ${got}`);
        }
      }
    }
    expect(bad, bad.slice(0, 20).join('\n')).toEqual([]);
  });

  it('VL (LRH) and the GRH traffic class / flow label / hop limit are masked from the ICRC', () => {
    for (const [name, frame] of FRAMES) {
      const icrc = decodeOk(frame, LINKTYPE_INFINIBAND).icrc;
      for (let vl = 0; vl < 16; vl++) {
        const f = frame.slice();
        f[0] = (vl << 4) | (f[0]! & 0x0f);
        fixVcrc(f);
        const p = decodeOk(f, LINKTYPE_INFINIBAND);
        expect([p.lrh!.vl, p.icrc], `${name} VL ${vl}`).toEqual([vl, icrc]);
      }
      if ((frame[1]! & 3) === 3) {
        const f = frame.slice();
        f[8]! |= 0x0f;
        f[9] = 0xff;
        f[10] = 0xff;
        f[11] = 0xff;
        f[15] = 0x01;
        fixVcrc(f);
        expect(decodeOk(f, LINKTYPE_INFINIBAND).icrc, name).toBe(icrc);
      }
    }
  });

  it('with the VCRC repaired, flips of the covered LRH fields, SLID/DLID, GIDs, BTH and payload fail the ICRC or earlier', () => {
    const bad: string[] = [];
    for (const [name, frame] of FRAMES) {
      const global = (frame[1]! & 3) === 3;
      const bth = global ? 48 : 8;
      const masked = (i: number, bit: number) =>
        (i === 0 && bit >= 4) || // VL
        (global && ((i === 8 && bit < 4) || i === 9 || i === 10 || i === 11 || i === 15)) || // GRH TC/FL/HL
        i === bth + 4; // BTH byte 4
      for (let i = 0; i < frame.length - 2; i++) {
        for (let bit = 0; bit < 8; bit++) {
          const f = frame.slice();
          f[i]! ^= 1 << bit;
          fixVcrc(f);
          const got = codeOf(f, LINKTYPE_INFINIBAND);
          if (masked(i, bit)) {
            if (got !== 'ok') bad.push(`${name} byte ${i} bit ${bit} (masked): ${got}`);
          } else if (got === 'ok') {
            bad.push(`${name} byte ${i} bit ${bit}: flip not detected`);
          }
        }
      }
    }
    expect(bad, bad.slice(0, 20).join('\n')).toEqual([]);
  });
});
