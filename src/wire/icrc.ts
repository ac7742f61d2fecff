/**
 * ICRC and VCRC (IBTA vol. 1 §7.8; RoCE annexes A16/A17; SPEC-DIGEST §3).
 *
 * The ICRC is the Ethernet CRC-32 (zlib's crc32) over the packet with the
 * fields that routers may change ("variant" fields) replaced by ones:
 *  - RoCE v2 / RoCE v1: eight 0xFF bytes stand for the absent LRH;
 *  - IPv4: TOS, TTL, header checksum; IPv6 and GRH: traffic class, flow
 *    label, hop limit; UDP: checksum; LRH: VL; BTH: byte 4 (FECN, BECN, resv6a).
 * The 32-bit result goes on the wire least significant byte first.
 */
import { crc32 } from 'node:zlib';

const ONES8 = new Uint8Array(8).fill(0xff);

// Table-driven CRC-32 for short spans: below a few hundred bytes the call
// into zlib (argument checks, a view per call) costs more than the loop.
// Slicing-by-8: eight tables, eight bytes per step (table k is the CRC of a
// byte followed by k zero bytes), a quarter of the byte loop's steps.
const CRC_TABLES = (() => {
  const t = new Int32Array(8 * 256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c;
  }
  for (let k = 1; k < 8; k++) {
    for (let n = 0; n < 256; n++) {
      const prev = t[(k - 1) * 256 + n]!;
      t[k * 256 + n] = t[prev & 0xff]! ^ (prev >>> 8);
    }
  }
  return t;
})();
const SHORT_SPAN = 192;

/** zlib.crc32(buf[start, end), seed) with the same result, without a view or a native call for short spans. */
function crcSpan(buf: Uint8Array, start: number, end: number, seed: number): number {
  if (end - start >= SHORT_SPAN) return crc32(buf.subarray(start, end), seed);
  const t = CRC_TABLES;
  let c = ~seed;
  let i = start;
  for (; i + 8 <= end; i += 8) {
    const a = c ^ (buf[i]! | (buf[i + 1]! << 8) | (buf[i + 2]! << 16) | (buf[i + 3]! << 24));
    c =
      t[1792 + (a & 0xff)]! ^
      t[1536 + ((a >>> 8) & 0xff)]! ^
      t[1280 + ((a >>> 16) & 0xff)]! ^
      t[1024 + (a >>> 24)]! ^
      t[768 + buf[i + 4]!]! ^
      t[512 + buf[i + 5]!]! ^
      t[256 + buf[i + 6]!]! ^
      t[buf[i + 7]!]!;
  }
  for (; i < end; i++) c = t[(c ^ buf[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}
/** CRC-32 state after the eight 0xFF bytes that stand for the LRH. */
const SEED_AFTER_LRH_STANDIN = crc32(ONES8);

// The variant fields are masked in place, the CRC taken in one pass over
// the contiguous bytes, and the fields restored: one zlib call per packet and
// no copy. The buffer is briefly modified, so a caller must not let another
// thread read it during the call (packets are owned by one stage at a time).
const saved = new Uint8Array(16);

function maskRoceV2(buf: Uint8Array, ipOff: number, bthOff: number): void {
  const udp = bthOff - 8;
  if (buf[ipOff]! >>> 4 === 4) {
    saved[0] = buf[ipOff + 1]!;
    buf[ipOff + 1] = 0xff; // TOS
    saved[1] = buf[ipOff + 8]!;
    buf[ipOff + 8] = 0xff; // TTL
    saved[2] = buf[ipOff + 10]!;
    buf[ipOff + 10] = 0xff; // header checksum
    saved[3] = buf[ipOff + 11]!;
    buf[ipOff + 11] = 0xff;
  } else {
    maskGrhLike(buf, ipOff);
  }
  saved[8] = buf[udp + 6]!;
  buf[udp + 6] = 0xff; // UDP checksum
  saved[9] = buf[udp + 7]!;
  buf[udp + 7] = 0xff;
  saved[10] = buf[bthOff + 4]!;
  buf[bthOff + 4] = 0xff; // FECN, BECN, resv6a
}

function unmaskRoceV2(buf: Uint8Array, ipOff: number, bthOff: number): void {
  const udp = bthOff - 8;
  if (buf[ipOff]! >>> 4 === 4) {
    buf[ipOff + 1] = saved[0]!;
    buf[ipOff + 8] = saved[1]!;
    buf[ipOff + 10] = saved[2]!;
    buf[ipOff + 11] = saved[3]!;
  } else {
    unmaskGrhLike(buf, ipOff);
  }
  buf[udp + 6] = saved[8]!;
  buf[udp + 7] = saved[9]!;
  buf[bthOff + 4] = saved[10]!;
}

/** IPv6 header or GRH: traffic class, flow label, hop limit (saved[0..4]). */
function maskGrhLike(buf: Uint8Array, o: number): void {
  saved[0] = buf[o]!;
  buf[o] = buf[o]! | 0x0f;
  saved[1] = buf[o + 1]!;
  buf[o + 1] = 0xff;
  saved[2] = buf[o + 2]!;
  buf[o + 2] = 0xff;
  saved[3] = buf[o + 3]!;
  buf[o + 3] = 0xff;
  saved[4] = buf[o + 7]!;
  buf[o + 7] = 0xff;
}

function unmaskGrhLike(buf: Uint8Array, o: number): void {
  buf[o] = saved[0]!;
  buf[o + 1] = saved[1]!;
  buf[o + 2] = saved[2]!;
  buf[o + 3] = saved[3]!;
  buf[o + 7] = saved[4]!;
}

/**
 * ICRC of a RoCE v2 packet. `ipOff` is where the IP header starts, `bthOff`
 * where the BTH starts, `icrcOff` where the ICRC field starts.
 */
export function icrcRoceV2(buf: Uint8Array, ipOff: number, bthOff: number, icrcOff: number): number {
  maskRoceV2(buf, ipOff, bthOff);
  try {
    return crcSpan(buf, ipOff, icrcOff, SEED_AFTER_LRH_STANDIN);
  } finally {
    unmaskRoceV2(buf, ipOff, bthOff);
  }
}

/** ICRC of a RoCE v1 packet: GRH at `grhOff`, BTH right after it. */
export function icrcRoceV1(buf: Uint8Array, grhOff: number, icrcOff: number): number {
  const bth4 = grhOff + 40 + 4;
  maskGrhLike(buf, grhOff);
  saved[10] = buf[bth4]!;
  buf[bth4] = 0xff;
  try {
    return crcSpan(buf, grhOff, icrcOff, SEED_AFTER_LRH_STANDIN);
  } finally {
    unmaskGrhLike(buf, grhOff);
    buf[bth4] = saved[10]!;
  }
}

/** ICRC of a native IB packet: LRH at `lrhOff`, optional GRH, then the BTH at `bthOff`. */
export function icrcIb(buf: Uint8Array, lrhOff: number, bthOff: number, icrcOff: number): number {
  const hasGrh = bthOff - lrhOff > 8;
  saved[11] = buf[lrhOff]!;
  buf[lrhOff] = buf[lrhOff]! | 0xf0; // VL
  if (hasGrh) maskGrhLike(buf, lrhOff + 8);
  saved[10] = buf[bthOff + 4]!;
  buf[bthOff + 4] = 0xff;
  try {
    return crcSpan(buf, lrhOff, icrcOff, 0);
  } finally {
    buf[lrhOff] = saved[11]!;
    if (hasGrh) unmaskGrhLike(buf, lrhOff + 8);
    buf[bthOff + 4] = saved[10]!;
  }
}

export function readIcrc(buf: Uint8Array, off: number): number {
  return (buf[off]! | (buf[off + 1]! << 8) | (buf[off + 2]! << 16) | (buf[off + 3]! << 24)) >>> 0;
}

export function writeIcrc(buf: Uint8Array, off: number, crc: number): void {
  buf[off] = crc & 0xff;
  buf[off + 1] = (crc >>> 8) & 0xff;
  buf[off + 2] = (crc >>> 16) & 0xff;
  buf[off + 3] = (crc >>> 24) & 0xff;
}

// VCRC: CRC-16, polynomial 0x100B, reflected (table constant 0xD008),
// initial 0xFFFF, final XOR 0xFFFF (Endace dagcrc; SPEC-DIGEST §3.2).
// Eight tables (slicing-by-8): table k is the CRC of a byte followed by k
// zero bytes, so eight bytes fold in with eight lookups and no loop-carried
// shift per byte (~4x the byte loop; a 4 KiB packet is checked twice).
const VCRC_TABLES = (() => {
  const t = new Uint16Array(8 * 256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xd008 : c >>> 1;
    t[n] = c;
  }
  for (let k = 1; k < 8; k++) for (let n = 0; n < 256; n++) t[k * 256 + n] = (t[(k - 1) * 256 + n]! >>> 8) ^ t[t[(k - 1) * 256 + n]! & 0xff]!;
  return t;
})();

/** VCRC over buf[start, end): LRH through ICRC, nothing masked. */
export function vcrc(buf: Uint8Array, start: number, end: number): number {
  const t = VCRC_TABLES;
  let c = 0xffff;
  let i = start;
  for (; i + 8 <= end; i += 8) {
    const x = c ^ (buf[i]! | (buf[i + 1]! << 8));
    c =
      t[1792 + (x & 0xff)]! ^
      t[1536 + (x >>> 8)]! ^
      t[1280 + buf[i + 2]!]! ^
      t[1024 + buf[i + 3]!]! ^
      t[768 + buf[i + 4]!]! ^
      t[512 + buf[i + 5]!]! ^
      t[256 + buf[i + 6]!]! ^
      t[buf[i + 7]!]!;
  }
  for (; i < end; i++) c = (c >>> 8) ^ t[(c ^ buf[i]!) & 0xff]!;
  return (c ^ 0xffff) & 0xffff;
}

/**
 * The VCRC goes least significant byte first, the convention of the
 * reflected CRCs on IB links (the ICRC above, the Ethernet FCS). No capture
 * confirms it (SPEC-DIGEST §8 item 5).
 */
export function writeVcrc(buf: Uint8Array, off: number, v: number): void {
  buf[off] = v & 0xff;
  buf[off + 1] = (v >>> 8) & 0xff;
}

export function readVcrc(buf: Uint8Array, off: number): number {
  return buf[off]! | (buf[off + 1]! << 8);
}
