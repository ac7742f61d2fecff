/** IPv4 and IPv6 headers as RoCE v2 carries them (RFC 791, RFC 8200). */

export const IPV4_HEADER_LENGTH = 20;
export const IPV6_HEADER_LENGTH = 40;
export const IP_PROTO_UDP = 17;

/** ECN codepoints, the low two bits of TOS / traffic class (RFC 3168). */
export const enum Ecn {
  NOT_ECT = 0,
  ECT1 = 1,
  ECT0 = 2,
  CE = 3,
}

export interface Ipv4Header {
  /** Header length in 32-bit words (5 without options). */
  ihl: number;
  dscp: number;
  ecn: number;
  /** Filled by the encoder. */
  totalLength: number;
  id: number;
  /** The three flag bits (bit 1 = DF). */
  flags: number;
  fragmentOffset: number;
  ttl: number;
  protocol: number;
  /** Filled by the encoder. */
  checksum: number;
  src: Uint8Array;
  dst: Uint8Array;
  /** Option bytes, when ihl > 5. */
  options: Uint8Array | null;
}

export interface Ipv6Header {
  trafficClass: number;
  flowLabel: number;
  /** Filled by the encoder. */
  payloadLength: number;
  nextHeader: number;
  hopLimit: number;
  src: Uint8Array;
  dst: Uint8Array;
}

/** The Internet checksum (RFC 1071) of buf[off, off+len), checksum field included as is. */
export function internetChecksum(buf: Uint8Array, off: number, len: number): number {
  let sum = 0;
  const end = off + (len & ~1);
  for (let i = off; i < end; i += 2) sum += (buf[i]! << 8) | buf[i + 1]!;
  if (len & 1) sum += buf[off + len - 1]! << 8;
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}

export function ipv4HeaderLength(h: Ipv4Header): number {
  return h.ihl * 4;
}

/** Writes the header with `totalLength` and a fresh checksum; returns the offset after it. */
export function writeIpv4(buf: Uint8Array, off: number, h: Ipv4Header, totalLength: number): number {
  const hl = h.ihl * 4;
  buf[off] = 0x40 | (h.ihl & 0xf);
  buf[off + 1] = ((h.dscp & 0x3f) << 2) | (h.ecn & 3);
  buf[off + 2] = totalLength >>> 8;
  buf[off + 3] = totalLength & 0xff;
  buf[off + 4] = (h.id >>> 8) & 0xff;
  buf[off + 5] = h.id & 0xff;
  const ff = ((h.flags & 7) << 13) | (h.fragmentOffset & 0x1fff);
  buf[off + 6] = ff >>> 8;
  buf[off + 7] = ff & 0xff;
  buf[off + 8] = h.ttl & 0xff;
  buf[off + 9] = h.protocol & 0xff;
  buf[off + 10] = 0;
  buf[off + 11] = 0;
  const s = h.src;
  const d = h.dst;
  for (let i = 0; i < 4; i++) {
    buf[off + 12 + i] = s[i]!;
    buf[off + 16 + i] = d[i]!;
  }
  if (hl > IPV4_HEADER_LENGTH) {
    const opt = h.options ?? new Uint8Array(0);
    buf.fill(0, off + 20, off + hl);
    buf.set(opt.subarray(0, hl - 20), off + 20);
  }
  const sum = internetChecksum(buf, off, hl);
  buf[off + 10] = sum >>> 8;
  buf[off + 11] = sum & 0xff;
  return off + hl;
}

/** Parses without validating; the caller checks version, lengths and checksum. */
export function readIpv4(buf: Uint8Array, off: number): Ipv4Header {
  const ihl = buf[off]! & 0xf;
  const ff = (buf[off + 6]! << 8) | buf[off + 7]!;
  return {
    ihl,
    dscp: buf[off + 1]! >>> 2,
    ecn: buf[off + 1]! & 3,
    totalLength: (buf[off + 2]! << 8) | buf[off + 3]!,
    id: (buf[off + 4]! << 8) | buf[off + 5]!,
    flags: ff >>> 13,
    fragmentOffset: ff & 0x1fff,
    ttl: buf[off + 8]!,
    protocol: buf[off + 9]!,
    checksum: (buf[off + 10]! << 8) | buf[off + 11]!,
    src: buf.subarray(off + 12, off + 16),
    dst: buf.subarray(off + 16, off + 20),
    options: ihl > 5 ? buf.subarray(off + 20, off + ihl * 4) : null,
  };
}

export function writeIpv6(buf: Uint8Array, off: number, h: Ipv6Header, payloadLength: number): number {
  const tc = h.trafficClass & 0xff;
  const fl = h.flowLabel & 0xfffff;
  buf[off] = 0x60 | (tc >>> 4);
  buf[off + 1] = ((tc & 0xf) << 4) | (fl >>> 16);
  buf[off + 2] = (fl >>> 8) & 0xff;
  buf[off + 3] = fl & 0xff;
  buf[off + 4] = payloadLength >>> 8;
  buf[off + 5] = payloadLength & 0xff;
  buf[off + 6] = h.nextHeader & 0xff;
  buf[off + 7] = h.hopLimit & 0xff;
  buf.set(h.src.subarray(0, 16), off + 8);
  buf.set(h.dst.subarray(0, 16), off + 24);
  return off + IPV6_HEADER_LENGTH;
}

export function readIpv6(buf: Uint8Array, off: number): Ipv6Header {
  return {
    trafficClass: ((buf[off]! & 0xf) << 4) | (buf[off + 1]! >>> 4),
    flowLabel: ((buf[off + 1]! & 0xf) << 16) | (buf[off + 2]! << 8) | buf[off + 3]!,
    payloadLength: (buf[off + 4]! << 8) | buf[off + 5]!,
    nextHeader: buf[off + 6]!,
    hopLimit: buf[off + 7]!,
    src: buf.subarray(off + 8, off + 24),
    dst: buf.subarray(off + 24, off + 40),
  };
}

export function parseIpv4(text: string): Uint8Array {
  const parts = text.split('.');
  if (parts.length !== 4 || parts.some((p) => !/^\d{1,3}$/.test(p) || Number(p) > 255)) {
    throw new RangeError(`not an IPv4 address: ${JSON.stringify(text)}`);
  }
  return Uint8Array.from(parts, Number);
}

export function formatIpv4(a: Uint8Array): string {
  return `${a[0]}.${a[1]}.${a[2]}.${a[3]}`;
}

/** Parses IPv6 text (with :: and an optional dotted IPv4 tail) into 16 bytes. */
export function parseIpv6(text: string): Uint8Array {
  const bad = () => new RangeError(`not an IPv6 address: ${JSON.stringify(text)}`);
  let s = text;
  const tail: number[] = [];
  const v4 = s.match(/^(.*:)(\d+\.\d+\.\d+\.\d+)$/);
  if (v4) {
    const b = parseIpv4(v4[2]!);
    tail.push((b[0]! << 8) | b[1]!, (b[2]! << 8) | b[3]!);
    s = v4[1]!.endsWith('::') ? v4[1]! : v4[1]!.slice(0, -1);
  }
  const halves = s.split('::');
  if (halves.length > 2) throw bad();
  const words = (part: string) =>
    part === ''
      ? []
      : part.split(':').map((w) => {
          if (!/^[0-9a-fA-F]{1,4}$/.test(w)) throw bad();
          return parseInt(w, 16);
        });
  const head = words(halves[0]!);
  const rest = halves.length === 2 ? words(halves[1]!) : [];
  const total = head.length + rest.length + tail.length;
  if (halves.length === 1 ? total !== 8 : total > 7) throw bad();
  const all = [...head, ...new Array(8 - total).fill(0), ...rest, ...tail];
  const out = new Uint8Array(16);
  all.forEach((w, i) => {
    out[2 * i] = w >>> 8;
    out[2 * i + 1] = w & 0xff;
  });
  return out;
}

/** RFC 5952 text form (as Wireshark prints it, including ::ffff:a.b.c.d). */
export function formatIpv6(a: Uint8Array): string {
  const w: number[] = [];
  for (let i = 0; i < 16; i += 2) w.push((a[i]! << 8) | a[i + 1]!);
  if (w.slice(0, 5).every((x) => x === 0) && w[5] === 0xffff) {
    return `::ffff:${a[12]}.${a[13]}.${a[14]}.${a[15]}`;
  }
  let bestStart = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (w[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && w[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = w.map((x) => x.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}

/** The IPv4-mapped IPv6 address (and RoCE GID) of an IPv4 address. */
export function ipv4MappedGid(v4: Uint8Array): Uint8Array {
  const g = new Uint8Array(16);
  g[10] = 0xff;
  g[11] = 0xff;
  g.set(v4.subarray(0, 4), 12);
  return g;
}

export function isIpv4MappedGid(g: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (g[i] !== 0) return false;
  return g[10] === 0xff && g[11] === 0xff;
}

/**
 * An upper-layer checksum over IPv6 (RFC 8200 §8.1): the pseudo-header
 * (addresses of the IPv6 header at `ipOff`, length, next header) plus
 * buf[off, off+len), with the 16-bit checksum field at off+`csumAt` taken as
 * zero. Returns the one's complement, not yet mapped for UDP's 0 → 0xFFFF.
 */
export function ipv6PseudoChecksum(buf: Uint8Array, ipOff: number, off: number, len: number, nextHeader: number, csumAt: number): number {
  let sum = (len >>> 16) + (len & 0xffff) + nextHeader;
  for (let i = ipOff + 8; i < ipOff + 40; i += 2) sum += (buf[i]! << 8) | buf[i + 1]!;
  const end = off + (len & ~1);
  const skip = off + csumAt;
  for (let i = off; i < end; i += 2) {
    if (i === skip) continue;
    sum += (buf[i]! << 8) | buf[i + 1]!;
    // Fold now and then so the sum stays a small integer.
    if (sum > 0x3fffffff) sum = (sum & 0xffff) + (sum >>> 16);
  }
  if (len & 1) sum += buf[off + len - 1]! << 8;
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}
