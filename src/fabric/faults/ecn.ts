/**
 * What a congested switch does to an ECN-capable packet, for the
 * `ecn-mark` fault: the IP ECN field set to CE (11), the IPv4 header
 * checksum updated. The RoCE ICRC masks the traffic class, so the packet
 * stays valid. Not-ECT packets (and non-IP frames) are left alone.
 */
const ETHERTYPE_VLAN = 0x8100;
const ETHERTYPE_IPV4 = 0x0800;
const ETHERTYPE_IPV6 = 0x86dd;

/** Sets CE on `frame` in place if it is an ECT IPv4 / IPv6 packet; returns whether it did. */
export function markCe(frame: Uint8Array): boolean {
  if (frame.length < 14) return false;
  let p = 12;
  let type = (frame[12]! << 8) | frame[13]!;
  if (type === ETHERTYPE_VLAN && frame.length >= 18) {
    p = 16;
    type = (frame[16]! << 8) | frame[17]!;
  }
  const ip = p + 2;
  if (type === ETHERTYPE_IPV4 && frame.length >= ip + 20 && frame[ip]! >>> 4 === 4) {
    const tos = frame[ip + 1]!;
    if ((tos & 3) === 0 || (tos & 3) === 3) return false;
    // RFC 1624: HC' = ~(~HC + ~m + m'), over the 16-bit word holding the TOS byte.
    const oldWord = (frame[ip]! << 8) | tos;
    const newWord = (frame[ip]! << 8) | (tos | 3);
    const hc = (frame[ip + 10]! << 8) | frame[ip + 11]!;
    let sum = (~hc & 0xffff) + (~oldWord & 0xffff) + newWord;
    sum = (sum & 0xffff) + (sum >>> 16);
    sum = (sum & 0xffff) + (sum >>> 16);
    const out = ~sum & 0xffff;
    frame[ip + 1] = tos | 3;
    frame[ip + 10] = out >>> 8;
    frame[ip + 11] = out & 0xff;
    return true;
  }
  if (type === ETHERTYPE_IPV6 && frame.length >= ip + 40 && frame[ip]! >>> 4 === 6) {
    // Traffic class = low nibble of byte 0 and high nibble of byte 1: ECN is bits 5..4 of byte 1.
    const ecn = (frame[ip + 1]! >>> 4) & 3;
    if (ecn === 0 || ecn === 3) return false;
    frame[ip + 1]! |= 0x30;
    return true;
  }
  return false;
}
