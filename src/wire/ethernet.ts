/** Ethernet II with an optional IEEE 802.1Q tag. */

export const enum EtherType {
  IPV4 = 0x0800,
  ARP = 0x0806,
  VLAN = 0x8100,
  IPV6 = 0x86dd,
  MAC_CONTROL = 0x8808,
  /** RoCE v1 (Wireshark etypes.h ETHERTYPE_ROCE). */
  ROCE = 0x8915,
}

export const ETH_HEADER_LENGTH = 14;
export const VLAN_TAG_LENGTH = 4;
/** Frames shorter than this (without FCS) are padded on the wire. */
export const ETH_MIN_FRAME = 60;

export interface VlanTag {
  /** Priority code point, 0..7 (the PFC priority). */
  pcp: number;
  /** Drop eligible indicator, 0..1. */
  dei: number;
  /** VLAN id, 0..4095. */
  vid: number;
}

export interface EthernetHeader {
  dst: Uint8Array;
  src: Uint8Array;
  vlan: VlanTag | null;
  etherType: number;
}

export function ethHeaderLength(eth: EthernetHeader): number {
  return eth.vlan ? ETH_HEADER_LENGTH + VLAN_TAG_LENGTH : ETH_HEADER_LENGTH;
}

/** Writes the header at `off`; returns the offset after it. */
export function writeEthernet(buf: Uint8Array, off: number, eth: EthernetHeader): number {
  // Byte loops, not set(subarray()): no view allocated per header.
  const d = eth.dst;
  const s = eth.src;
  for (let i = 0; i < 6; i++) {
    buf[off + i] = d[i]!;
    buf[off + 6 + i] = s[i]!;
  }
  off += 12;
  if (eth.vlan) {
    const tci = ((eth.vlan.pcp & 7) << 13) | ((eth.vlan.dei & 1) << 12) | (eth.vlan.vid & 0xfff);
    buf[off] = 0x81;
    buf[off + 1] = 0x00;
    buf[off + 2] = tci >>> 8;
    buf[off + 3] = tci & 0xff;
    off += 4;
  }
  buf[off] = eth.etherType >>> 8;
  buf[off + 1] = eth.etherType & 0xff;
  return off + 2;
}

/** Reads the header; returns null when `buf` is too short. Views, not copies. */
export function readEthernet(buf: Uint8Array, off: number): { eth: EthernetHeader; next: number } | null {
  if (buf.length - off < ETH_HEADER_LENGTH) return null;
  const dst = buf.subarray(off, off + 6);
  const src = buf.subarray(off + 6, off + 12);
  let p = off + 12;
  let type = (buf[p]! << 8) | buf[p + 1]!;
  let vlan: VlanTag | null = null;
  if (type === EtherType.VLAN) {
    if (buf.length - off < ETH_HEADER_LENGTH + VLAN_TAG_LENGTH) return null;
    const tci = (buf[p + 2]! << 8) | buf[p + 3]!;
    vlan = { pcp: tci >>> 13, dei: (tci >>> 12) & 1, vid: tci & 0xfff };
    p += 4;
    type = (buf[p]! << 8) | buf[p + 1]!;
  }
  return { eth: { dst, src, vlan, etherType: type }, next: p + 2 };
}

export function parseMac(text: string): Uint8Array {
  const parts = text.split(/[:-]/);
  if (parts.length !== 6 || parts.some((p) => !/^[0-9a-fA-F]{1,2}$/.test(p))) {
    throw new RangeError(`not a MAC address: ${JSON.stringify(text)}`);
  }
  return Uint8Array.from(parts, (p) => parseInt(p, 16));
}

export function formatMac(mac: Uint8Array): string {
  return Array.from(mac.subarray(0, 6), (b) => b.toString(16).padStart(2, '0')).join(':');
}
