/**
 * RoCE v2 over IPv4 headers as prebuilt bytes. A QP's packets share their
 * Ethernet, IPv4 and UDP headers but for three fields (IP total length and
 * identification, UDP length) and the IP checksum that follows from them:
 * built once per path and copied, then patched, the routing headers cost a
 * 42-byte copy per packet instead of a field-by-field encode. The bytes are
 * exactly `encodePacket`'s (header-template.test.ts checks that).
 */
import { ETH_MIN_FRAME, ethHeaderLength, writeEthernet } from './ethernet.js';
import { icrcRoceV2 } from './icrc.js';
import { IPV4_HEADER_LENGTH, writeIpv4 } from './ip.js';
import { markIcrcPending } from './lazy-icrc.js';
import { Hdr, HdrLen, type OpcodeInfo } from './opcodes.js';
import { type Packet, writeExtensionHeaders } from './packet.js';
import { UDP_HEADER_LENGTH, writeUdp } from './udp.js';

/** The RETH as numbers (a VA below 2^64 as a double, as the WQE holds it): no BigInt per packet. */
export interface RethFields {
  va: number;
  rkey: number;
  dmaLength: number;
}

/**
 * A frame's DataView, kept on the view (frames are pooled views,
 * pipeline/packet-builder.ts, so it is made once per view, not per packet):
 * the headers go in as 16- and 32-bit stores rather than byte by byte.
 */
const DV = Symbol('frameDataView');
type WithDv = Uint8Array & { [DV]?: DataView };

function frameDv(frame: Uint8Array): DataView {
  let dv = (frame as WithDv)[DV];
  if (dv === undefined) {
    dv = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
    (frame as WithDv)[DV] = dv;
  }
  return dv;
}

export class Ipv4RoutingTemplate {
  /** Ethernet + IPv4 + UDP with zero lengths, id and checksum. */
  private readonly bytes: Uint8Array;
  /** The same bytes as big-endian 32-bit words (the last `bthOff % 4` bytes are `bytes`' alone). */
  private readonly words: Uint32Array;
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
    const bv = new DataView(b.buffer);
    this.words = new Uint32Array(this.bthOff >>> 2);
    for (let i = 0; i < this.words.length; i++) this.words[i] = bv.getUint32(i * 4);
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
    const bthOff = this.bthOff;
    const dv = frameDv(frame);
    // The routing headers: whole words, then the bytes after the last one.
    const words = this.words;
    const nw = words.length;
    for (let i = 0; i < nw; i++) dv.setUint32(i * 4, words[i]!);
    const b = this.bytes;
    for (let i = nw * 4; i < bthOff; i++) frame[i] = b[i]!;
    const ipOff = this.ipOff;
    const id = ipId & 0xffff;
    dv.setUint16(ipOff + 2, ipLen);
    dv.setUint16(ipOff + 4, id);
    let sum = this.ipSum + ipLen + id;
    sum = (sum & 0xffff) + (sum >>> 16);
    sum = (sum & 0xffff) + (sum >>> 16);
    dv.setUint16(ipOff + 10, ~sum & 0xffff);
    dv.setUint16(ipOff + IPV4_HEADER_LENGTH + 4, UDP_HEADER_LENGTH + tlen);
    // The BTH as three words: writeBthFull's bytes, with this packet's pad count.
    const t = p.bth;
    const b1 = ((t.se & 1) << 7) | ((t.migReq & 1) << 6) | (pad << 4) | (t.tver & 0xf);
    dv.setUint32(bthOff, (((t.opcode & 0xff) << 24) | (b1 << 16) | (t.pkey & 0xffff)) >>> 0);
    const b4 = ((t.fecn & 1) << 7) | ((t.becn & 1) << 6) | (t.resv6a & 0x3f);
    dv.setUint32(bthOff + 4, ((b4 << 24) | (t.destQp & 0xffffff)) >>> 0);
    const b8 = ((t.ackReq & 1) << 7) | (t.resv7 & 0x7f);
    dv.setUint32(bthOff + 8, ((b8 << 24) | (t.psn & 0xffffff)) >>> 0);
    const h = info.headers;
    if (h & Hdr.RETH) {
      const o = bthOff + info.offsets.reth;
      const va = reth.va;
      const lo = va >>> 0;
      dv.setUint32(o, ((va - lo) / 0x100000000) >>> 0);
      dv.setUint32(o + 4, lo);
      dv.setUint32(o + 8, reth.rkey >>> 0);
      dv.setUint32(o + 12, reth.dmaLength >>> 0);
    }
    if (h & ~Hdr.RETH) writeExtensionHeaders(frame, bthOff, p, info, Hdr.RETH);
    let q = bthOff + info.headerLength + payLen;
    for (let i = 0; i < pad; i++) frame[q + i] = 0;
    q += pad;
    // The ICRC goes little-endian (writeIcrc's order).
    if (deferIcrc) {
      dv.setUint32(q, 0);
      markIcrcPending(frame, false, ipOff, bthOff, q);
    } else dv.setUint32(q, icrcRoceV2(frame, ipOff, bthOff, q), true);
    q += HdrLen.ICRC;
    if (q < ETH_MIN_FRAME) frame.fill(0, q, ETH_MIN_FRAME);
    return frame;
  }
}
