/**
 * What a switch reads from and writes into a frame on its fast path,
 * by offset, without decoding the whole packet: the Ethernet type (past
 * one VLAN tag), the VLAN PCP, the IP version, DSCP and ECN, the
 * destination address, the 5-tuple for ECMP, and the ECN rewrite to CE
 * (IPv4 with its header checksum; IPv6 has none). The RoCE v2 ICRC masks
 * the TOS / traffic class byte and the IPv4 checksum (SPEC-DIGEST §3), so
 * marking keeps the ICRC valid.
 */
import { EtherType } from '../../wire/ethernet.js';
import { Ecn, IP_PROTO_UDP } from '../../wire/ip.js';

const TPID_8021Q = 0x8100;
const TPID_8021AD = 0x88a8;

/** Offset of the EtherType field (12, or 16 past one VLAN tag), and the PCP (-1 untagged). */
export interface L2Info {
  etherType: number;
  /** Offset of the L3 header. */
  l3: number;
  pcp: number;
}

/** Reads the L2 header into `out`; false when the frame is too short. */
export function readL2(f: Uint8Array, out: L2Info): boolean {
  if (f.length < 14) return false;
  let t = (f[12]! << 8) | f[13]!;
  if (t === TPID_8021Q || t === TPID_8021AD) {
    if (f.length < 18) return false;
    out.pcp = f[14]! >>> 5;
    t = (f[16]! << 8) | f[17]!;
    out.etherType = t;
    out.l3 = 18;
    return true;
  }
  out.pcp = -1;
  out.etherType = t;
  out.l3 = 14;
  return true;
}

/** The DSCP of an IPv4 or IPv6 header at `l3` (the frame was checked long enough). */
export function dscpAt(f: Uint8Array, l3: number, etherType: number): number {
  if (etherType === EtherType.IPV4) return f[l3 + 1]! >>> 2;
  return ((f[l3]! & 0x0f) << 2) | (f[l3 + 1]! >>> 6);
}

/** The ECN codepoint at `l3`. */
export function ecnAt(f: Uint8Array, l3: number, etherType: number): number {
  if (etherType === EtherType.IPV4) return f[l3 + 1]! & 3;
  return (f[l3 + 1]! >>> 4) & 3;
}

/** True for ECT(0) and ECT(1): a sender that understands CE. */
export function isEct(ecn: number): boolean {
  return ecn === Ecn.ECT0 || ecn === Ecn.ECT1;
}

/**
 * Sets the ECN field at `l3` to CE. IPv4: the header checksum is updated
 * incrementally (RFC 1624: HC' = ~(~HC + ~m + m')), so a header that was
 * valid stays valid.
 */
export function markCe(f: Uint8Array, l3: number, etherType: number): void {
  if (etherType === EtherType.IPV4) {
    const oldWord = (f[l3]! << 8) | f[l3 + 1]!;
    f[l3 + 1] = f[l3 + 1]! | Ecn.CE;
    const newWord = (f[l3]! << 8) | f[l3 + 1]!;
    const hc = (f[l3 + 10]! << 8) | f[l3 + 11]!;
    let sum = (~hc & 0xffff) + (~oldWord & 0xffff) + newWord;
    sum = (sum & 0xffff) + (sum >>> 16);
    sum = (sum & 0xffff) + (sum >>> 16);
    const out = ~sum & 0xffff;
    f[l3 + 10] = out >>> 8;
    f[l3 + 11] = out & 0xff;
  } else {
    f[l3 + 1] = f[l3 + 1]! | (Ecn.CE << 4);
  }
}

/** Minimum L3 bytes the fast path reads: an IPv4 header with its UDP ports, or an IPv6 header. */
export function l3Long(f: Uint8Array, l3: number, etherType: number): boolean {
  if (etherType === EtherType.IPV4) return f.length >= l3 + 20 && f.length >= l3 + ((f[l3]! & 0x0f) << 2);
  return f.length >= l3 + 40;
}

/** A u32 mix (a 32-bit integer hash with good avalanche: xor-shift, multiply, twice). */
function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b);
  h ^= h >>> 16;
  return h >>> 0;
}

function word(f: Uint8Array, o: number): number {
  return ((f[o]! << 24) | (f[o + 1]! << 16) | (f[o + 2]! << 8) | f[o + 3]!) >>> 0;
}

/**
 * The ECMP hash of a packet's 5-tuple (source and destination address,
 * protocol, UDP/TCP ports), seeded per switch. For RoCE v2 the UDP source
 * port is the flow's entropy (rxe and mlx5 derive it from the QPs).
 */
export function flowHash(f: Uint8Array, l3: number, etherType: number, seed: number): number {
  let h = mix(seed ^ 0x9e3779b9);
  let proto: number;
  let l4: number;
  if (etherType === EtherType.IPV4) {
    proto = f[l3 + 9]!;
    l4 = l3 + ((f[l3]! & 0x0f) << 2);
    h = mix(h ^ word(f, l3 + 12));
    h = mix(h ^ word(f, l3 + 16));
  } else {
    proto = f[l3 + 6]!;
    l4 = l3 + 40;
    for (let o = 8; o < 40; o += 4) h = mix(h ^ word(f, l3 + o));
  }
  h = mix(h ^ proto);
  if ((proto === IP_PROTO_UDP || proto === 6) && f.length >= l4 + 4) h = mix(h ^ word(f, l4));
  return h;
}

/** Key of an IPv4 address (a number) or IPv6 address (hex text; v4-mapped keys as its IPv4). */
export function addrKey(a: Uint8Array, off: number, len: 4 | 16): number | string {
  if (len === 16) {
    let mapped = a[off + 10] === 0xff && a[off + 11] === 0xff;
    for (let i = 0; i < 10 && mapped; i++) if (a[off + i] !== 0) mapped = false;
    if (!mapped) {
      let s = '';
      for (let i = 0; i < 16; i += 4)
        s += word(a, off + i)
          .toString(16)
          .padStart(8, '0');
      return s;
    }
    off += 12;
  }
  return word(a, off);
}

/** Key of the destination address of the IP header at `l3`. */
export function dstKey(f: Uint8Array, l3: number, etherType: number): number | string {
  return etherType === EtherType.IPV4 ? word(f, l3 + 16) : addrKey(f, l3 + 24, 16);
}

/** Key of the source address of the IP header at `l3`. */
export function srcKey(f: Uint8Array, l3: number, etherType: number): number | string {
  return etherType === EtherType.IPV4 ? word(f, l3 + 12) : addrKey(f, l3 + 8, 16);
}
