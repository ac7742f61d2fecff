/**
 * RoCE v2 over IPv4 headers as prebuilt bytes. A QP's packets share their
 * Ethernet, IPv4 and UDP headers but for three fields (IP total length and
 * identification, UDP length) and the IP checksum that follows from them:
 * built once per path and copied, then patched, the routing headers cost a
 * 42-byte copy per packet instead of a field-by-field encode. The bytes are
 * exactly `encodePacket`'s (header-template.test.ts checks that).
 */
import { ETH_MIN_FRAME, ethHeaderLength, writeEthernet } from './ethernet.js';
import { writeIcrc, icrcRoceV2 } from './icrc.js';
import { IPV4_HEADER_LENGTH, writeIpv4 } from './ip.js';
import { markIcrcPending } from './lazy-icrc.js';
import { Hdr, HdrLen, type OpcodeInfo } from './opcodes.js';
import { type Packet, writeExtensionHeaders } from './packet.js';
import { writeBthFull, write32 } from './transport.js';
import { UDP_HEADER_LENGTH, writeUdp } from './udp.js';

/** The RETH as numbers (a VA below 2^64 as a double, as the WQE holds it): no BigInt per packet. */
export interface RethFields {
  va: number;
  rkey: number;
  dmaLength: number;
}

export class Ipv4RoutingTemplate {
  /** Ethernet + IPv4 + UDP with zero lengths, id and checksum. */
  private readonly bytes: Uint8Array;
  /** Offset of the IPv4 header (after the Ethernet header and any VLAN tag). */
  readonly ipOff: number;
  /** Offset of the BTH. */
  readonly bthOff: number;
  /** One's-complement sum of the IPv4 header's fixed words (lengths, id and checksum zero). */
  private readonly ipSum: number;

  /** True when `p` can use a template: RoCE v2 over IPv4 without IP options. */
  static fits(p: Packet): boolean {
    return p.framing === 'roce-v2' && p.eth !== null && p.ipv4 !== null && p.ipv4.ihl === 5 && p.udp !== null;
  }

  /** Builds the bytes from `p`'s routing headers (which must `fit`); rebuild after changing them. */
  constructor(p: Packet) {
    const eth = p.eth!;
    const ip = p.ipv4!;
    this.ipOff = ethHeaderLength(eth);
    this.bthOff = this.ipOff + IPV4_HEADER_LENGTH + UDP_HEADER_LENGTH;
    const b = new Uint8Array(this.bthOff);
    writeEthernet(b, 0, eth);
    const id = ip.id;
    ip.id = 0;
    writeIpv4(b, this.ipOff, ip, 0);
    ip.id = id;
    writeUdp(b, this.ipOff + IPV4_HEADER_LENGTH, p.udp!, 0);
    b[this.ipOff + 10] = 0;
    b[this.ipOff + 11] = 0;
    let sum = 0;
    for (let i = this.ipOff; i < this.ipOff + IPV4_HEADER_LENGTH; i += 2) sum += (b[i]! << 8) | b[i + 1]!;
    this.ipSum = sum;
    this.bytes = b;
  }

  /**
   * Encodes `p` (its BTH and extension headers; the routing headers are
   * this template's; `p.payload` is not read) into `frame`, whose `payLen`
   * bytes of payload are already in place at `bthOff + info.headerLength`. The RETH, when the opcode has one, comes
   * from `reth`. Returns `frame`, or null when a length would not fit its
   * field (the caller falls back to `encodePacket`, which says so).
   */
  encode(frame: Uint8Array, p: Packet, info: OpcodeInfo, payLen: number, reth: RethFields, ipId: number, deferIcrc: boolean): Uint8Array | null {
    const pad = -payLen & 3;
    const tlen = info.headerLength + payLen + pad + HdrLen.ICRC;
    const ipLen = IPV4_HEADER_LENGTH + UDP_HEADER_LENGTH + tlen;
    if (ipLen > 0xffff) return null;
    const b = this.bytes;
    const bthOff = this.bthOff;
    frame.set(b); // one memmove: ~3x a byte loop over 42 bytes
    const ipOff = this.ipOff;
    const id = ipId & 0xffff;
    frame[ipOff + 2] = ipLen >>> 8;
    frame[ipOff + 3] = ipLen & 0xff;
    frame[ipOff + 4] = id >>> 8;
    frame[ipOff + 5] = id & 0xff;
    let sum = this.ipSum + ipLen + id;
    sum = (sum & 0xffff) + (sum >>> 16);
    sum = (sum & 0xffff) + (sum >>> 16);
    sum = ~sum & 0xffff;
    frame[ipOff + 10] = sum >>> 8;
    frame[ipOff + 11] = sum & 0xff;
    const udpOff = ipOff + IPV4_HEADER_LENGTH;
    const udpLen = UDP_HEADER_LENGTH + tlen;
    frame[udpOff + 4] = udpLen >>> 8;
    frame[udpOff + 5] = udpLen & 0xff;
    writeBthFull(frame, bthOff, p.bth);
    frame[bthOff + 1] = (frame[bthOff + 1]! & 0xcf) | (pad << 4);
    const h = info.headers;
    if (h & Hdr.RETH) {
      const o = bthOff + info.offsets.reth;
      write32(frame, o, Math.floor(reth.va / 0x100000000) >>> 0);
      write32(frame, o + 4, reth.va >>> 0);
      write32(frame, o + 8, reth.rkey);
      write32(frame, o + 12, reth.dmaLength);
    }
    if (h & ~Hdr.RETH) writeExtensionHeaders(frame, bthOff, p, info, Hdr.RETH);
    let q = bthOff + info.headerLength + payLen;
    for (let i = 0; i < pad; i++) frame[q + i] = 0;
    q += pad;
    if (deferIcrc) {
      writeIcrc(frame, q, 0);
      markIcrcPending(frame, false, ipOff, bthOff, q);
    } else writeIcrc(frame, q, icrcRoceV2(frame, ipOff, bthOff, q));
    q += HdrLen.ICRC;
    if (q < ETH_MIN_FRAME) frame.fill(0, q, ETH_MIN_FRAME);
    return frame;
  }
}
