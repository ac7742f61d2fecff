/**
 * What the injector needs to know about a frame (is it RoCE, opcode, dest
 * QP, PSN, where its parts are), read with the project's decoder, and the
 * bit flip of `corrupt`.
 */
import { decodePacket, routingLength } from '../../wire/packet.js';
import { LINKTYPE_ETHERNET } from '../../wire/pcap.js';
import { IPV6_HEADER_LENGTH } from '../../wire/ip.js';
import { udpChecksumIpv6 } from '../../wire/udp.js';
import { ETH_HEADER_LENGTH, ethHeaderLength } from '../../wire/ethernet.js';
import type { CorruptTarget } from './rules.js';
import type { RandomSource } from './random.js';

/** One frame, classified. The injector keeps one and refills it per frame. */
export interface FrameClass {
  /** A RoCE v2 or v1 (or native IB) packet the decoder could read (ICRC not checked). */
  roce: boolean;
  opcode: number;
  destQp: number;
  psn: number;
  /** Offsets in the frame; -1 when not RoCE. */
  bthOff: number;
  /** End of the BTH and extension headers: where the payload starts. */
  payloadOff: number;
  payloadEnd: number;
  icrcOff: number;
  /** RoCE v2 over IPv6: where the IPv6 and UDP headers start, for the UDP checksum; else -1. */
  ipv6Off: number;
  udpOff: number;
}

export function newFrameClass(): FrameClass {
  return { roce: false, opcode: -1, destQp: -1, psn: -1, bthOff: -1, payloadOff: -1, payloadEnd: -1, icrcOff: -1, ipv6Off: -1, udpOff: -1 };
}

const DECODE_FAST = { verifyIcrc: false, verifyIpChecksum: false } as const;

/**
 * Fills `out` from `frame` (of `linktype`: a native IB link's packets decode
 * as LRH ... VCRC). Anything the decoder refuses (ARP, ND, PFC, a malformed
 * frame) is not RDMA.
 */
export function classifyFrame(frame: Uint8Array, out: FrameClass, linktype = LINKTYPE_ETHERNET): FrameClass {
  const r = decodePacket(frame, linktype, DECODE_FAST);
  if (!r.ok) {
    out.roce = false;
    out.opcode = out.destQp = out.psn = -1;
    out.bthOff = out.payloadOff = out.payloadEnd = out.icrcOff = out.ipv6Off = out.udpOff = -1;
    return out;
  }
  const p = r.packet;
  out.roce = true;
  out.opcode = p.bth.opcode;
  out.destQp = p.bth.destQp;
  out.psn = p.bth.psn;
  out.bthOff = routingLength(p);
  out.payloadOff = p.payload.byteOffset - frame.byteOffset;
  out.payloadEnd = out.payloadOff + p.payload.length;
  out.icrcOff = out.payloadEnd + p.bth.padCnt;
  if (p.ipv6 && p.udp) {
    out.ipv6Off = ethHeaderLength(p.eth!);
    out.udpOff = out.ipv6Off + IPV6_HEADER_LENGTH;
  } else {
    out.ipv6Off = out.udpOff = -1;
  }
  return out;
}

/** Byte ranges [start, end) a corrupt may flip a bit in. */
type Ranges = number[];

/**
 * Bytes whose flip the decoder notices only as a bad ICRC. Not BTH byte 0
 * (opcode) or 1 (SE, M, PadCnt, TVer): those fail earlier checks. Not BTH
 * byte 4 (FECN, BECN): the ICRC masks it. Nothing before the BTH: the IP
 * and UDP fields the ICRC covers are also checked first by their own checksums.
 */
function corruptRanges(c: FrameClass, target: CorruptTarget): Ranges {
  const header = [c.bthOff + 2, c.bthOff + 4, c.bthOff + 5, c.payloadOff];
  const payload = c.payloadEnd > c.payloadOff ? [c.payloadOff, c.payloadEnd] : [];
  const icrc = [c.icrcOff, c.icrcOff + 4];
  switch (target) {
    case 'header':
      return header;
    case 'payload':
      return payload.length ? payload : header;
    case 'icrc':
      return icrc;
    case 'any':
      return [...header, ...payload, ...icrc];
  }
}

/** Where `corruptFrame` flipped its bit. */
export interface BitFlip {
  readonly byte: number;
  /** 0 = least significant. */
  readonly bit: number;
}

/**
 * A copy of `frame` with one bit flipped, chosen with `rnd` among the bits
 * `target` allows. The ICRC is never fixed up, so the receiver sees
 * WIRE_BAD_ICRC. For RoCE v2 over IPv6 with a UDP checksum, the checksum
 * (masked out of the ICRC) is recomputed so that the bad ICRC, not the UDP
 * checksum, is what the receiver finds. A non-RoCE frame gets a bit flipped
 * after its Ethernet header (the model carries no FCS to catch it).
 */
export function corruptClassified(frame: Uint8Array, c: FrameClass, target: CorruptTarget, rnd: RandomSource): { frame: Uint8Array; flip: BitFlip } {
  const out = frame.slice();
  const ranges: Ranges = c.roce ? corruptRanges(c, target) : frame.length > ETH_HEADER_LENGTH ? [ETH_HEADER_LENGTH, frame.length] : [0, frame.length];
  let bytes = 0;
  for (let i = 0; i < ranges.length; i += 2) bytes += ranges[i + 1]! - ranges[i]!;
  if (bytes === 0) return { frame: out, flip: { byte: -1, bit: 0 } };
  let k = Math.min(Math.floor(rnd.next() * bytes * 8), bytes * 8 - 1);
  const bit = k & 7;
  k >>>= 3;
  let byte = -1;
  for (let i = 0; i < ranges.length; i += 2) {
    const len = ranges[i + 1]! - ranges[i]!;
    if (k < len) {
      byte = ranges[i]! + k;
      break;
    }
    k -= len;
  }
  out[byte] = out[byte]! ^ (1 << bit);
  if (c.roce && c.udpOff >= 0 && (out[c.udpOff + 6]! | out[c.udpOff + 7]!) !== 0) {
    const udpLen = (out[c.udpOff + 4]! << 8) | out[c.udpOff + 5]!;
    const sum = udpChecksumIpv6(out, c.ipv6Off, c.udpOff, udpLen);
    out[c.udpOff + 6] = sum >>> 8;
    out[c.udpOff + 7] = sum & 0xff;
  }
  return { frame: out, flip: { byte, bit } };
}

/** `corruptClassified` for a frame not yet classified: a copy of `frame` with one bit flipped. */
export function corruptFrame(frame: Uint8Array, rnd: RandomSource, target: CorruptTarget = 'any'): { frame: Uint8Array; flip: BitFlip } {
  return corruptClassified(frame, classifyFrame(frame, newFrameClass()), target, rnd);
}
