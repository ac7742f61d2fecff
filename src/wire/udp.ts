/** UDP (RFC 768) and the RoCE v2 port conventions. */
import { IP_PROTO_UDP, ipv6PseudoChecksum } from './ip.js';

export const UDP_HEADER_LENGTH = 8;
/** IANA port for RoCE v2 (Linux ROCE_V2_UDP_DPORT, Wireshark DEFAULT_RROCE_UDP_PORT). */
export const ROCE_V2_UDP_PORT = 4791;

export interface UdpHeader {
  srcPort: number;
  dstPort: number;
  /** Filled by the encoder. */
  length: number;
  /** RoCE v2 senders leave it 0 over IPv4 (Linux rxe, ConnectX CNPs). */
  checksum: number;
}

export function writeUdp(buf: Uint8Array, off: number, h: UdpHeader, length: number): number {
  buf[off] = h.srcPort >>> 8;
  buf[off + 1] = h.srcPort & 0xff;
  buf[off + 2] = h.dstPort >>> 8;
  buf[off + 3] = h.dstPort & 0xff;
  buf[off + 4] = length >>> 8;
  buf[off + 5] = length & 0xff;
  buf[off + 6] = h.checksum >>> 8;
  buf[off + 7] = h.checksum & 0xff;
  return off + UDP_HEADER_LENGTH;
}

export function readUdp(buf: Uint8Array, off: number): UdpHeader {
  return {
    srcPort: (buf[off]! << 8) | buf[off + 1]!,
    dstPort: (buf[off + 2]! << 8) | buf[off + 3]!,
    length: (buf[off + 4]! << 8) | buf[off + 5]!,
    checksum: (buf[off + 6]! << 8) | buf[off + 7]!,
  };
}

/**
 * Flow label of a QP pair when the application gave none: symmetric in the
 * two QPNs so both directions hash alike (Linux rdma_calc_flow_label).
 */
export function calcFlowLabel(localQpn: number, remoteQpn: number): number {
  let v = BigInt(localQpn >>> 0) * BigInt(remoteQpn >>> 0);
  v ^= v >> 20n;
  v ^= v >> 40n;
  return Number(v & 0xfffffn);
}

/** UDP source port from a flow label (Linux rdma_flow_label_to_udp_sport). */
export function flowLabelToUdpSport(flowLabel: number): number {
  const fl = flowLabel & 0xfffff;
  return 0xc000 | ((fl & 0x3fff) ^ ((fl & 0xfc000) >>> 14));
}

/** The source port Linux gives a connected QP (rdma_get_udp_sport). */
export function roceUdpSport(flowLabel: number, localQpn: number, remoteQpn: number): number {
  return flowLabelToUdpSport(flowLabel !== 0 ? flowLabel : calcFlowLabel(localQpn, remoteQpn));
}

/** The source port rxe sets at QP creation: 0xC000 + hash_32(qpn, 14). */
export function rxeInitialUdpSport(qpn: number): number {
  const h = Math.imul(qpn >>> 0, 0x61c88647) >>> 0;
  return 0xc000 + ((h >>> (32 - 14)) & 0x3fff);
}

/**
 * UDP checksum over IPv6 (RFC 8200 §8.1): the pseudo-header (addresses,
 * upper-layer length, next header 17) plus the UDP header and data. A
 * computed 0 is sent as 0xFFFF. `ipOff` is the IPv6 header, `udpOff` the UDP
 * header whose checksum field is taken as zero.
 */
export function udpChecksumIpv6(buf: Uint8Array, ipOff: number, udpOff: number, udpLen: number): number {
  const c = ipv6PseudoChecksum(buf, ipOff, udpOff, udpLen, IP_PROTO_UDP, 6);
  return c === 0 ? 0xffff : c;
}
