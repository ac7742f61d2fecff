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
/** CRC-32 state after the eight 0xFF bytes that stand for the LRH. */
const SEED_AFTER_LRH_STANDIN = crc32(ONES8);

// One scratch area for the masked headers: at most IPv6 (40) + UDP (8) + BTH (12),
// or LRH (8) + GRH (40) + BTH (12). Module state is per thread, and the
// functions below do not re-enter.
const scratch = new Uint8Array(64);

function maskBthInScratch(p: number): number {
  scratch[p + 4] = 0xff;
  return p + 12;
}

/**
 * ICRC of a RoCE v2 packet. `ipOff` is where the IP header starts, `bthOff`
 * where the BTH starts, `icrcOff` where the ICRC field starts.
 */
export function icrcRoceV2(buf: Uint8Array, ipOff: number, bthOff: number, icrcOff: number): number {
  const hdrLen = bthOff + 12 - ipOff;
  if (hdrLen > scratch.length) return icrcSlow(buf, ipOff, bthOff, icrcOff);
  scratch.set(buf.subarray(ipOff, bthOff + 12), 0);
  const udpOff = bthOff - ipOff - 8;
  if ((scratch[0]! >>> 4) === 4) {
    scratch[1] = 0xff; // TOS
    scratch[8] = 0xff; // TTL
    scratch[10] = 0xff; // header checksum
    scratch[11] = 0xff;
  } else {
    scratch[0]! |= 0x0f; // traffic class (high nibble)
    scratch[1] = 0xff; // traffic class (low nibble) + flow label
    scratch[2] = 0xff;
    scratch[3] = 0xff;
    scratch[7] = 0xff; // hop limit
  }
  scratch[udpOff + 6] = 0xff; // UDP checksum
  scratch[udpOff + 7] = 0xff;
  maskBthInScratch(bthOff - ipOff);
  let crc = crc32(scratch.subarray(0, hdrLen), SEED_AFTER_LRH_STANDIN);
  crc = crc32(buf.subarray(bthOff + 12, icrcOff), crc);
  return crc >>> 0;
}

// IPv4 with options: larger than the scratch; rare, so a plain copy.
function icrcSlow(buf: Uint8Array, ipOff: number, bthOff: number, icrcOff: number): number {
  const copy = buf.slice(ipOff, bthOff + 12);
  const udpOff = bthOff - ipOff - 8;
  copy[1] = 0xff;
  copy[8] = 0xff;
  copy[10] = 0xff;
  copy[11] = 0xff;
  copy[udpOff + 6] = 0xff;
  copy[udpOff + 7] = 0xff;
  copy[bthOff - ipOff + 4] = 0xff;
  let crc = crc32(copy, SEED_AFTER_LRH_STANDIN);
  crc = crc32(buf.subarray(bthOff + 12, icrcOff), crc);
  return crc >>> 0;
}

function maskGrhInScratch(p: number): void {
  scratch[p]! |= 0x0f;
  scratch[p + 1] = 0xff;
  scratch[p + 2] = 0xff;
  scratch[p + 3] = 0xff;
  scratch[p + 7] = 0xff;
}

/** ICRC of a RoCE v1 packet: GRH at `grhOff`, BTH right after it. */
export function icrcRoceV1(buf: Uint8Array, grhOff: number, icrcOff: number): number {
  scratch.set(buf.subarray(grhOff, grhOff + 52), 0);
  maskGrhInScratch(0);
  maskBthInScratch(40);
  let crc = crc32(scratch.subarray(0, 52), SEED_AFTER_LRH_STANDIN);
  crc = crc32(buf.subarray(grhOff + 52, icrcOff), crc);
  return crc >>> 0;
}

/** ICRC of a native IB packet: LRH at `lrhOff`, optional GRH, then the BTH at `bthOff`. */
export function icrcIb(buf: Uint8Array, lrhOff: number, bthOff: number, icrcOff: number): number {
  const hdrLen = bthOff + 12 - lrhOff;
  scratch.set(buf.subarray(lrhOff, bthOff + 12), 0);
  scratch[0]! |= 0xf0; // VL
  if (bthOff - lrhOff > 8) maskGrhInScratch(8);
  maskBthInScratch(bthOff - lrhOff);
  let crc = crc32(scratch.subarray(0, hdrLen));
  crc = crc32(buf.subarray(bthOff + 12, icrcOff), crc);
  return crc >>> 0;
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
const VCRC_TABLE = (() => {
  const t = new Uint16Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xd008 : c >>> 1;
    t[n] = c;
  }
  return t;
})();

/** VCRC over buf[start, end): LRH through ICRC, nothing masked. */
export function vcrc(buf: Uint8Array, start: number, end: number): number {
  let c = 0xffff;
  for (let i = start; i < end; i++) c = (c >>> 8) ^ VCRC_TABLE[(c ^ buf[i]!) & 0xff]!;
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
