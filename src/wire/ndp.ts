/**
 * IPv6 neighbour discovery (RFC 4861): ICMPv6 Neighbor Solicitation (135)
 * and Neighbor Advertisement (136) with the source / target link-layer
 * address options, over Ethernet.
 *
 *   Ethernet [802.1Q] (0x86dd) | IPv6 (next header 58, hop limit 255) |
 *   type | code 0 | checksum | NS: reserved(4) | NA: R S O flags, reserved(3) |
 *   target address (16) | options: type, length in 8-byte units, data
 *
 * The ICMPv6 checksum covers the IPv6 pseudo-header (RFC 8200 §8.1). The
 * decoder applies the validity checks of RFC 4861 §7.1.1 / §7.1.2, never
 * throws and never reads outside the frame; it returns views into the frame.
 */
import { EtherType, type EthernetHeader, ethHeaderLength, readEthernet, type VlanTag, writeEthernet } from './ethernet.js';
import { WireError } from './errors.js';
import { IPV6_HEADER_LENGTH, type Ipv6Header, ipv6PseudoChecksum, readIpv6, writeIpv6 } from './ip.js';

export const IP_PROTO_ICMPV6 = 58;
/** RFC 4861: every ND message is sent, and must arrive, with hop limit 255. */
export const ND_HOP_LIMIT = 255;
/** ICMPv6 header + reserved/flags + target address. */
export const ND_MIN_LENGTH = 24;
const LLA_OPTION_LENGTH = 8;

export const enum Icmpv6Type {
  NEIGHBOR_SOLICITATION = 135,
  NEIGHBOR_ADVERTISEMENT = 136,
}

export const enum NdOption {
  SOURCE_LINK_ADDR = 1,
  TARGET_LINK_ADDR = 2,
}

export const enum NaFlag {
  ROUTER = 0x80,
  SOLICITED = 0x40,
  OVERRIDE = 0x20,
}

/** ff02::1, the all-nodes multicast address. */
export const ALL_NODES_ADDRESS: Uint8Array = Uint8Array.of(0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1);
export const UNSPECIFIED_ADDRESS: Uint8Array = new Uint8Array(16);

export interface NeighborSolicitation {
  type: Icmpv6Type.NEIGHBOR_SOLICITATION;
  target: Uint8Array;
  /** The source link-layer address option (absent in DAD probes). */
  sourceLinkAddr: Uint8Array | null;
}

export interface NeighborAdvertisement {
  type: Icmpv6Type.NEIGHBOR_ADVERTISEMENT;
  router: boolean;
  solicited: boolean;
  override: boolean;
  target: Uint8Array;
  /** The target link-layer address option. */
  targetLinkAddr: Uint8Array | null;
}

export type NdMessage = NeighborSolicitation | NeighborAdvertisement;

export interface NdFrame {
  eth: EthernetHeader;
  ipv6: Ipv6Header;
  message: NdMessage;
  /** As carried (already verified). */
  checksum: number;
}

export type NdDecodeResult = { ok: true; frame: NdFrame } | { ok: false; error: WireError };

export function isIpv6Multicast(a: Uint8Array): boolean {
  return a[0] === 0xff;
}

export function isIpv6Unspecified(a: Uint8Array): boolean {
  for (let i = 0; i < 16; i++) if (a[i] !== 0) return false;
  return true;
}

/** ff02::1:ffXX:XXXX, from the low 24 bits of `ip` (RFC 4291 §2.7.1). */
export function solicitedNodeAddress(ip: Uint8Array): Uint8Array {
  const a = new Uint8Array(16);
  a[0] = 0xff;
  a[1] = 0x02;
  a[11] = 0x01;
  a[12] = 0xff;
  a[13] = ip[13]!;
  a[14] = ip[14]!;
  a[15] = ip[15]!;
  return a;
}

/** 33:33 and the low 32 bits of an IPv6 multicast address (RFC 2464 §7). */
export function ipv6MulticastMac(ip: Uint8Array): Uint8Array {
  return Uint8Array.of(0x33, 0x33, ip[12]!, ip[13]!, ip[14]!, ip[15]!);
}

/**
 * The ICMPv6 checksum of the message at buf[icmpOff, icmpOff+len), with the
 * pseudo-header taken from the IPv6 header at `ipOff` (source, destination,
 * upper-layer length, next header 58). The checksum field itself is taken
 * as zero, so this is the value to write, and to compare on receive.
 */
export function icmpv6Checksum(buf: Uint8Array, ipOff: number, icmpOff: number, len: number): number {
  return ipv6PseudoChecksum(buf, ipOff, icmpOff, len, IP_PROTO_ICMPV6, 2);
}

export interface NdAddressing {
  srcMac: Uint8Array;
  dstMac: Uint8Array;
  srcIp: Uint8Array;
  dstIp: Uint8Array;
  vlan?: VlanTag | null;
  /** Default 255; anything else makes receivers drop the message. */
  hopLimit?: number;
}

function need(a: Uint8Array | null, n: number, what: string): void {
  if (a && a.length < n) throw new WireError('WIRE_BAD_FIELD', `ND: ${what} needs ${n} bytes, got ${a.length}`);
}

/** Encodes a whole NS or NA frame, checksum computed. */
export function encodeNdFrame(addr: NdAddressing, m: NdMessage): Uint8Array {
  need(addr.srcMac, 6, 'source MAC');
  need(addr.dstMac, 6, 'destination MAC');
  need(addr.srcIp, 16, 'source IPv6');
  need(addr.dstIp, 16, 'destination IPv6');
  need(m.target, 16, 'target address');
  const lla = m.type === Icmpv6Type.NEIGHBOR_SOLICITATION ? m.sourceLinkAddr : m.targetLinkAddr;
  need(lla, 6, 'link-layer address option');
  const eth: EthernetHeader = { dst: addr.dstMac, src: addr.srcMac, vlan: addr.vlan ?? null, etherType: EtherType.IPV6 };
  const icmpLen = ND_MIN_LENGTH + (lla ? LLA_OPTION_LENGTH : 0);
  const buf = new Uint8Array(ethHeaderLength(eth) + IPV6_HEADER_LENGTH + icmpLen);
  const ipOff = writeEthernet(buf, 0, eth);
  const icmp = writeIpv6(
    buf,
    ipOff,
    {
      trafficClass: 0,
      flowLabel: 0,
      payloadLength: 0,
      nextHeader: IP_PROTO_ICMPV6,
      hopLimit: addr.hopLimit ?? ND_HOP_LIMIT,
      src: addr.srcIp,
      dst: addr.dstIp,
    },
    icmpLen,
  );
  buf[icmp] = m.type;
  buf[icmp + 1] = 0;
  if (m.type === Icmpv6Type.NEIGHBOR_ADVERTISEMENT) {
    buf[icmp + 4] = (m.router ? NaFlag.ROUTER : 0) | (m.solicited ? NaFlag.SOLICITED : 0) | (m.override ? NaFlag.OVERRIDE : 0);
  }
  buf.set(m.target.subarray(0, 16), icmp + 8);
  if (lla) {
    const o = icmp + ND_MIN_LENGTH;
    buf[o] = m.type === Icmpv6Type.NEIGHBOR_SOLICITATION ? NdOption.SOURCE_LINK_ADDR : NdOption.TARGET_LINK_ADDR;
    buf[o + 1] = 1;
    buf.set(lla.subarray(0, 6), o + 2);
  }
  const c = icmpv6Checksum(buf, ipOff, icmp, icmpLen);
  buf[icmp + 2] = c >>> 8;
  buf[icmp + 3] = c & 0xff;
  return buf;
}

/**
 * A solicitation for `target` from (`srcMac`, `srcIp`). By default multicast
 * to the target's solicited-node group; `unicast` sends it straight to a
 * known neighbour (reachability confirmation). An unspecified `srcIp` makes
 * a DAD probe, which carries no source link-layer option (RFC 4862 §5.4.2).
 */
export function encodeNeighborSolicitation(
  srcMac: Uint8Array,
  srcIp: Uint8Array,
  target: Uint8Array,
  opts: { unicast?: { mac: Uint8Array; ip: Uint8Array }; vlan?: VlanTag | null } = {},
): Uint8Array {
  const group = solicitedNodeAddress(target);
  return encodeNdFrame(
    {
      srcMac,
      srcIp,
      vlan: opts.vlan ?? null,
      dstMac: opts.unicast?.mac ?? ipv6MulticastMac(group),
      dstIp: opts.unicast?.ip ?? group,
    },
    { type: Icmpv6Type.NEIGHBOR_SOLICITATION, target, sourceLinkAddr: isIpv6Unspecified(srcIp) ? null : srcMac },
  );
}

/**
 * An advertisement that `target` is at `srcMac`, sent from `target` itself
 * to (`dstMac`, `dstIp`), with the target link-layer option.
 */
export function encodeNeighborAdvertisement(
  srcMac: Uint8Array,
  target: Uint8Array,
  dstMac: Uint8Array,
  dstIp: Uint8Array,
  flags: { router?: boolean; solicited?: boolean; override?: boolean } = {},
  vlan: VlanTag | null = null,
): Uint8Array {
  return encodeNdFrame(
    { srcMac, srcIp: target, dstMac, dstIp, vlan },
    {
      type: Icmpv6Type.NEIGHBOR_ADVERTISEMENT,
      target,
      targetLinkAddr: srcMac,
      router: flags.router ?? false,
      solicited: flags.solicited ?? false,
      override: flags.override ?? true,
    },
  );
}

/**
 * The ICMPv6 type of an Ethernet / IPv6 / ICMPv6 frame (no extension
 * headers), or -1 when the frame is not one. For classifying before decoding.
 */
export function ndMessageType(frame: Uint8Array): number {
  const e = readEthernet(frame, 0);
  if (!e || e.eth.etherType !== EtherType.IPV6) return -1;
  const ip = e.next;
  if (frame.length < ip + IPV6_HEADER_LENGTH + 1) return -1;
  if (frame[ip]! >>> 4 !== 6 || frame[ip + 6] !== IP_PROTO_ICMPV6) return -1;
  return frame[ip + IPV6_HEADER_LENGTH]!;
}

function fail(code: ConstructorParameters<typeof WireError>[0], msg: string, off: number): NdDecodeResult {
  return { ok: false, error: new WireError(code, `ND: ${msg}`, off) };
}

/** Decodes and validates an NS or NA frame (RFC 4861 §7.1). */
export function decodeNdFrame(frame: Uint8Array): NdDecodeResult {
  const e = readEthernet(frame, 0);
  if (!e) return fail('WIRE_TRUNCATED', `Ethernet header needs 14 bytes (18 with 802.1Q), frame has ${frame.length}`, 0);
  if (e.eth.etherType !== EtherType.IPV6) return fail('WIRE_BAD_FIELD', `ethertype 0x${e.eth.etherType.toString(16).padStart(4, '0')} is not IPv6`, e.next - 2);
  const ipOff = e.next;
  if (frame.length < ipOff + IPV6_HEADER_LENGTH) return fail('WIRE_TRUNCATED', 'frame ends inside the IPv6 header', ipOff);
  if (frame[ipOff]! >>> 4 !== 6) return fail('WIRE_BAD_VERSION', `IP version ${frame[ipOff]! >>> 4} under ethertype 0x86dd`, ipOff);
  const ipv6 = readIpv6(frame, ipOff);
  if (ipv6.nextHeader !== IP_PROTO_ICMPV6) return fail('WIRE_BAD_FIELD', `IPv6 next header ${ipv6.nextHeader} is not ICMPv6 (58)`, ipOff + 6);
  const icmp = ipOff + IPV6_HEADER_LENGTH;
  const len = ipv6.payloadLength;
  if (icmp + len > frame.length) return fail('WIRE_TRUNCATED', `IPv6 payload length ${len} runs past the frame end`, ipOff + 4);
  if (len < ND_MIN_LENGTH) return fail('WIRE_TRUNCATED', `ICMPv6 length ${len} is below the ND minimum ${ND_MIN_LENGTH}`, icmp);
  const type = frame[icmp]!;
  if (type !== Icmpv6Type.NEIGHBOR_SOLICITATION && type !== Icmpv6Type.NEIGHBOR_ADVERTISEMENT) {
    return fail('WIRE_BAD_FIELD', `ICMPv6 type ${type} is neither NS (135) nor NA (136)`, icmp);
  }
  if (ipv6.hopLimit !== ND_HOP_LIMIT) return fail('WIRE_BAD_FIELD', `hop limit ${ipv6.hopLimit} is not 255 (may have crossed a router)`, ipOff + 7);
  const checksum = (frame[icmp + 2]! << 8) | frame[icmp + 3]!;
  const want = icmpv6Checksum(frame, ipOff, icmp, len);
  // When the computed value is 0x0000, 0xffff (the other one's-complement zero) is as good.
  if (checksum !== want && !(want === 0 && checksum === 0xffff)) {
    return fail('WIRE_BAD_CHECKSUM', `ICMPv6 checksum 0x${checksum.toString(16).padStart(4, '0')} should be 0x${want.toString(16).padStart(4, '0')}`, icmp + 2);
  }
  if (frame[icmp + 1] !== 0) return fail('WIRE_BAD_FIELD', `ICMPv6 code ${frame[icmp + 1]} is not 0`, icmp + 1);
  const target = frame.subarray(icmp + 8, icmp + 24);
  if (isIpv6Multicast(target)) return fail('WIRE_BAD_FIELD', 'target address is multicast', icmp + 8);
  let sll: Uint8Array | null = null;
  let tll: Uint8Array | null = null;
  const end = icmp + len;
  for (let o = icmp + ND_MIN_LENGTH; o < end; ) {
    if (end - o < 2) return fail('WIRE_TRUNCATED', 'option header runs past the message end', o);
    const optType = frame[o]!;
    const optLen = frame[o + 1]! * 8;
    if (optLen === 0) return fail('WIRE_BAD_FIELD', `option ${optType} has length 0`, o + 1);
    if (o + optLen > end) return fail('WIRE_TRUNCATED', `option ${optType} runs past the message end`, o + 1);
    // Unknown options are skipped (RFC 4861 §4.6).
    if (optType === NdOption.SOURCE_LINK_ADDR) sll = frame.subarray(o + 2, o + 8);
    else if (optType === NdOption.TARGET_LINK_ADDR) tll = frame.subarray(o + 2, o + 8);
    o += optLen;
  }
  let message: NdMessage;
  if (type === Icmpv6Type.NEIGHBOR_SOLICITATION) {
    if (isIpv6Unspecified(ipv6.src)) {
      const group = solicitedNodeAddress(target);
      for (let i = 0; i < 16; i++) {
        if (ipv6.dst[i] !== group[i]) return fail('WIRE_BAD_FIELD', 'NS from the unspecified address must go to the solicited-node group', ipOff + 24);
      }
      if (sll) return fail('WIRE_BAD_FIELD', 'NS from the unspecified address carries a source link-layer option', icmp + ND_MIN_LENGTH);
    }
    message = { type: Icmpv6Type.NEIGHBOR_SOLICITATION, target, sourceLinkAddr: sll };
  } else {
    const flags = frame[icmp + 4]!;
    const solicited = (flags & NaFlag.SOLICITED) !== 0;
    if (solicited && isIpv6Multicast(ipv6.dst)) return fail('WIRE_BAD_FIELD', 'NA to a multicast address has the Solicited flag set', icmp + 4);
    message = {
      type: Icmpv6Type.NEIGHBOR_ADVERTISEMENT,
      target,
      targetLinkAddr: tll,
      solicited,
      router: (flags & NaFlag.ROUTER) !== 0,
      override: (flags & NaFlag.OVERRIDE) !== 0,
    };
  }
  return { ok: true, frame: { eth: e.eth, ipv6, message, checksum } };
}
