import { describe, expect, it } from 'vitest';
import { parseMac } from './ethernet.js';
import { formatIpv6, internetChecksum, parseIpv6 } from './ip.js';
import {
  ALL_NODES_ADDRESS,
  decodeNdFrame,
  encodeNdFrame,
  encodeNeighborAdvertisement,
  encodeNeighborSolicitation,
  icmpv6Checksum,
  Icmpv6Type,
  ipv6MulticastMac,
  ndMessageType,
  solicitedNodeAddress,
  UNSPECIFIED_ADDRESS,
} from './ndp.js';

const MAC_A = parseMac('02:00:00:00:00:0a');
const MAC_B = parseMac('02:00:00:00:00:0b');
const IP_A = parseIpv6('2001:db8::a');
const IP_B = parseIpv6('2001:db8::12:3456');

/** An independent check: the RFC 1071 sum over pseudo-header + message, checksum included, is zero. */
function pseudoHeaderSumIsZero(frame: Uint8Array, ipOff = 14): boolean {
  const len = (frame[ipOff + 4]! << 8) | frame[ipOff + 5]!;
  const ph = new Uint8Array(40 + len);
  ph.set(frame.subarray(ipOff + 8, ipOff + 40), 0);
  ph[32] = len >>> 24;
  ph[33] = (len >>> 16) & 0xff;
  ph[34] = (len >>> 8) & 0xff;
  ph[35] = len & 0xff;
  ph[39] = 58;
  ph.set(frame.subarray(ipOff + 40, ipOff + 40 + len), 40);
  return internetChecksum(ph, 0, ph.length) === 0;
}

describe('solicited-node multicast', () => {
  it('maps an address to ff02::1:ffXX:XXXX and 33:33:ff:XX:XX:XX', () => {
    const g = solicitedNodeAddress(IP_B);
    expect(formatIpv6(g)).toBe('ff02::1:ff12:3456');
    expect(Array.from(ipv6MulticastMac(g))).toEqual([0x33, 0x33, 0xff, 0x12, 0x34, 0x56]);
    expect(Array.from(ipv6MulticastMac(ALL_NODES_ADDRESS))).toEqual([0x33, 0x33, 0, 0, 0, 1]);
  });
});

describe('Neighbor Solicitation', () => {
  const ns = encodeNeighborSolicitation(MAC_A, IP_A, IP_B);

  it('has the RFC 4861 layout', () => {
    expect(ns.length).toBe(14 + 40 + 24 + 8);
    // Ethernet to the solicited-node group MAC, IPv6, next header 58, hop limit 255.
    expect(Array.from(ns.subarray(0, 6))).toEqual([0x33, 0x33, 0xff, 0x12, 0x34, 0x56]);
    expect((ns[12]! << 8) | ns[13]!).toBe(0x86dd);
    expect(ns[14 + 6]).toBe(58);
    expect(ns[14 + 7]).toBe(255);
    expect(formatIpv6(ns.subarray(14 + 24, 14 + 40))).toBe('ff02::1:ff12:3456');
    expect(ns[54]).toBe(135);
    expect(ns[55]).toBe(0);
    expect(Array.from(ns.subarray(56 + 2, 56 + 6))).toEqual([0, 0, 0, 0]);
    expect(formatIpv6(ns.subarray(62, 78))).toBe('2001:db8::12:3456');
    expect(Array.from(ns.subarray(78, 86))).toEqual([1, 1, ...MAC_A]);
    expect(pseudoHeaderSumIsZero(ns)).toBe(true);
    expect(ndMessageType(ns)).toBe(135);
  });

  it('round-trips', () => {
    const r = decodeNdFrame(ns);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.frame.message).toEqual({ type: Icmpv6Type.NEIGHBOR_SOLICITATION, target: IP_B, sourceLinkAddr: MAC_A });
    expect(r.frame.ipv6.src).toEqual(IP_A);
    expect(r.frame.checksum).toBe(icmpv6Checksum(ns, 14, 54, 32));
  });

  it('a DAD probe has no source link-layer option and passes validation', () => {
    const dad = encodeNeighborSolicitation(MAC_A, UNSPECIFIED_ADDRESS, IP_A);
    const r = decodeNdFrame(dad);
    expect(r.ok && r.frame.message).toEqual({ type: Icmpv6Type.NEIGHBOR_SOLICITATION, target: IP_A, sourceLinkAddr: null });
    expect(pseudoHeaderSumIsZero(dad)).toBe(true);
  });

  it('unicast, with an 802.1Q tag', () => {
    const f = encodeNeighborSolicitation(MAC_A, IP_A, IP_B, { unicast: { mac: MAC_B, ip: IP_B }, vlan: { pcp: 5, dei: 0, vid: 7 } });
    const r = decodeNdFrame(f);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.frame.eth.vlan).toEqual({ pcp: 5, dei: 0, vid: 7 });
    expect(r.frame.eth.dst).toEqual(MAC_B);
    expect(r.frame.ipv6.dst).toEqual(IP_B);
    expect(pseudoHeaderSumIsZero(f, 18)).toBe(true);
  });
});

describe('Neighbor Advertisement', () => {
  it('round-trips with flags and the target link-layer option', () => {
    const na = encodeNeighborAdvertisement(MAC_B, IP_B, MAC_A, IP_A, { solicited: true, override: true, router: false });
    expect(na[54]).toBe(136);
    expect(na[58]).toBe(0x60);
    expect(pseudoHeaderSumIsZero(na)).toBe(true);
    const r = decodeNdFrame(na);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.frame.message).toEqual({
      type: Icmpv6Type.NEIGHBOR_ADVERTISEMENT,
      router: false,
      solicited: true,
      override: true,
      target: IP_B,
      targetLinkAddr: MAC_B,
    });
    expect(r.frame.ipv6.src).toEqual(IP_B);
  });

  it('without options', () => {
    const na = encodeNdFrame(
      { srcMac: MAC_B, dstMac: MAC_A, srcIp: IP_B, dstIp: IP_A },
      {
        type: Icmpv6Type.NEIGHBOR_ADVERTISEMENT,
        router: true,
        solicited: true,
        override: false,
        target: IP_B,
        targetLinkAddr: null,
      },
    );
    expect(na.length).toBe(14 + 40 + 24);
    const r = decodeNdFrame(na);
    expect(r.ok && r.frame.message).toMatchObject({ router: true, solicited: true, override: false, targetLinkAddr: null });
  });
});

describe('ND validation (RFC 4861 §7.1)', () => {
  const ns = encodeNeighborSolicitation(MAC_A, IP_A, IP_B);
  const code = (f: Uint8Array) => {
    const r = decodeNdFrame(f);
    return r.ok ? 'ok' : r.error.code;
  };
  const patched = (f: Uint8Array, at: number, v: number, fixChecksum = true) => {
    const g = f.slice();
    g[at] = v;
    if (fixChecksum) {
      const len = (g[18]! << 8) | g[19]!;
      const c = icmpv6Checksum(g, 14, 54, len);
      g[56] = c >>> 8;
      g[57] = c & 0xff;
    }
    return g;
  };

  it('checks checksum, hop limit, code, target, option length', () => {
    expect(code(patched(ns, 70, 0x99, false))).toBe('WIRE_BAD_CHECKSUM');
    expect(code(patched(ns, 21, 64))).toBe('WIRE_BAD_FIELD'); // hop limit
    expect(code(patched(ns, 55, 1))).toBe('WIRE_BAD_FIELD'); // code
    expect(code(patched(ns, 62, 0xff))).toBe('WIRE_BAD_FIELD'); // multicast target
    expect(code(patched(ns, 79, 0))).toBe('WIRE_BAD_FIELD'); // option length 0
    expect(code(patched(ns, 79, 2))).toBe('WIRE_TRUNCATED'); // option past the end
    expect(code(patched(ns, 20, 17))).toBe('WIRE_BAD_FIELD'); // next header UDP
    expect(code(patched(ns, 54, 128))).toBe('WIRE_BAD_FIELD'); // echo request
  });

  it('rejects a solicited NA to a multicast address', () => {
    const na = encodeNeighborAdvertisement(MAC_B, IP_B, ipv6MulticastMac(ALL_NODES_ADDRESS), ALL_NODES_ADDRESS, { solicited: true });
    expect(code(na)).toBe('WIRE_BAD_FIELD');
    const ok = encodeNeighborAdvertisement(MAC_B, IP_B, ipv6MulticastMac(ALL_NODES_ADDRESS), ALL_NODES_ADDRESS, { solicited: false });
    expect(code(ok)).toBe('ok');
  });

  it('every truncation is a typed error; random bytes never throw', () => {
    for (let n = 0; n < ns.length; n++) expect(code(ns.subarray(0, n))).not.toBe('ok');
    let seed = 11;
    for (let i = 0; i < 3000; i++) {
      const f = ns.slice(0, 14 + 40 + (i % 60));
      for (let k = 54; k < f.length; k++) f[k] = (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24;
      f[18] = 0;
      f[19] = i % 80;
      expect(() => decodeNdFrame(f)).not.toThrow();
      expect(() => ndMessageType(f)).not.toThrow();
    }
  });
});
