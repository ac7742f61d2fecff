/**
 * Whole RDMA packets in the three framings:
 *  - RoCE v2: Ethernet [802.1Q] | IPv4 or IPv6 | UDP (dst 4791) | BTH ... | ICRC
 *  - RoCE v1: Ethernet [802.1Q] (type 0x8915) | GRH | BTH ... | ICRC
 *  - native IB: LRH [GRH] | BTH ... | ICRC | VCRC
 * `encodePacket` fills in every length, the IPv4 checksum, the pad count,
 * the ICRC and the VCRC; `decodePacket` checks all of them and never throws.
 */
import { EtherType, ETH_MIN_FRAME, type EthernetHeader, ethHeaderLength, readEthernet, writeEthernet } from './ethernet.js';
import { WireError } from './errors.js';
import { icrcIb, icrcRoceV1, icrcRoceV2, readIcrc, readVcrc, vcrc, writeIcrc, writeVcrc } from './icrc.js';
import { markIcrcPending, materializePayload, payloadSource, payloadSourceAt } from './lazy-icrc.js';
import { GRH_LENGTH, GRH_NEXT_HEADER_IBA, type Grh, LRH_LENGTH, Lnh, type Lrh, readGrh, readLrh, writeGrh, writeLrh } from './ib-routing.js';
import {
  internetChecksum,
  IP_PROTO_UDP,
  IPV4_HEADER_LENGTH,
  IPV6_HEADER_LENGTH,
  type Ipv4Header,
  type Ipv6Header,
  readIpv4,
  readIpv6,
  writeIpv4,
  writeIpv6,
} from './ip.js';
import { Hdr, HdrLen, type OpcodeInfo, OPCODES, Transport } from './opcodes.js';
import {
  type Aeth,
  type AtomicAckEth,
  type AtomicEth,
  type Bth,
  type Deth,
  type Feth,
  type Rdeth,
  type Reth,
  type Xrceth,
  read24,
  read32,
  read64,
  readAeth,
  readAtomicEth,
  readBth,
  readDeth,
  readRdeth,
  readReth,
  readXrceth,
  write32,
  write64,
  writeAeth,
  writeAtomicEth,
  writeBthFull,
  writeDeth,
  writeRdeth,
  writeReth,
  writeXrceth,
} from './transport.js';
import { LINKTYPE_ETHERNET, LINKTYPE_INFINIBAND } from './pcap.js';
import { ScratchEth, ScratchIpv4, ScratchIpv6 } from './scratch-headers.js';
import { readUdp, ROCE_V2_UDP_PORT, UDP_HEADER_LENGTH, udpChecksumIpv6, type UdpHeader, writeUdp } from './udp.js';

export type Framing = 'roce-v2' | 'roce-v1' | 'ib';

export interface Packet {
  framing: Framing;
  /** RoCE framings only. */
  eth: EthernetHeader | null;
  /** RoCE v2: exactly one of ipv4/ipv6, and udp. */
  ipv4: Ipv4Header | null;
  ipv6: Ipv6Header | null;
  udp: UdpHeader | null;
  /** Native IB only. */
  lrh: Lrh | null;
  /** RoCE v1 always; native IB when LNH = 3. */
  grh: Grh | null;
  bth: Bth;
  rdeth: Rdeth | null;
  deth: Deth | null;
  xrceth: Xrceth | null;
  reth: Reth | null;
  atomicEth: AtomicEth | null;
  aeth: Aeth | null;
  atomicAckEth: AtomicAckEth | null;
  immDt: number | null;
  /** The R_Key to invalidate. */
  ieth: number | null;
  feth: Feth | null;
  payload: Uint8Array;
  /** As carried on the wire; the encoder writes the computed value. */
  icrc: number;
  /** Native IB only. */
  vcrc: number | null;
}

export type DecodeResult = { ok: true; packet: Packet } | { ok: false; error: WireError };

const NO_OPTIONS: DecodeOptions = Object.freeze({});

export interface DecodeOptions {
  /** Check the ICRC, and for native IB the VCRC (default true). */
  verifyIcrc?: boolean;
  /** Check the IPv4 header checksum and a non-zero IPv6 UDP checksum (default true). */
  verifyIpChecksum?: boolean;
  /** UDP destination port that marks RoCE v2 (default 4791). */
  roceV2Port?: number;
}

/**
 * Reusable objects for `decodePacket(frame, linktype, opts, scratch)`: a
 * receive path that decodes one packet at a time passes the same scratch
 * every time and the decode allocates nothing but the payload view (and a
 * BigInt for a RETH or AtomicETH address). The packet it returns, its
 * header objects and their address fields (copies, not views, here) are
 * the scratch's own and valid only until the next decode with it: a caller
 * copies what it keeps. Without a scratch every decode builds fresh objects
 * with views into the frame, as documented above. State-free otherwise: the
 * scratch holds no information between decodes.
 */
/**
 * The scratch decoder's RETH: the VA kept as its two 32-bit halves, a
 * bigint made only when `va` is read. The pipeline reads the VA as a number
 * (`rethVaNumber`), so a decoded WRITE or READ costs no bigint.
 */
export class ScratchReth implements Reth {
  vaHi = 0;
  vaLo = 0;
  rkey = 0;
  dmaLength = 0;
  get va(): bigint {
    return (BigInt(this.vaHi) << 32n) | BigInt(this.vaLo);
  }
  set va(v: bigint) {
    this.vaHi = Number(BigInt.asUintN(64, v) >> 32n);
    this.vaLo = Number(BigInt.asUintN(32, v));
  }
}

/**
 * A RETH's VA as a number: `Number(r.va)` (one rounding above 2^53; the
 * sum of the halves rounds the same way), without the bigint when `r` came
 * from a scratch decode.
 */
export function rethVaNumber(r: Reth): number {
  return r instanceof ScratchReth ? r.vaHi * 0x1_0000_0000 + r.vaLo : Number(r.va);
}

const NO_BYTES = new Uint8Array(0);

/**
 * A packet decoded into a DecodeScratch. Its payload is `payloadLength`
 * bytes of `payloadBytes` (the frame) from `payloadAt`: the pipeline copies
 * it from there, so a received packet costs no view; `payload` makes the
 * view when first read.
 */
export class ScratchPacket implements Packet {
  framing: Framing = 'roce-v2';
  eth: EthernetHeader | null = null;
  ipv4: Ipv4Header | null = null;
  ipv6: Ipv6Header | null = null;
  udp: UdpHeader | null = null;
  lrh: Lrh | null = null;
  grh: Grh | null = null;
  bth: Bth;
  rdeth: Rdeth | null = null;
  deth: Deth | null = null;
  xrceth: Xrceth | null = null;
  reth: Reth | null = null;
  atomicEth: AtomicEth | null = null;
  aeth: Aeth | null = null;
  atomicAckEth: AtomicAckEth | null = null;
  immDt: number | null = null;
  ieth: number | null = null;
  feth: Feth | null = null;
  icrc = 0;
  vcrc: number | null = null;
  payloadBytes: Uint8Array = NO_BYTES;
  payloadAt = 0;
  payloadLength = 0;
  #view: Uint8Array | null = NO_BYTES;

  constructor(bth: Bth) {
    this.bth = bth;
  }

  get payload(): Uint8Array {
    if (this.#view === null) this.#view = this.payloadBytes.subarray(this.payloadAt, this.payloadAt + this.payloadLength);
    return this.#view;
  }

  set payload(v: Uint8Array) {
    this.setPayload(v, 0, v.length);
    this.#view = v;
  }

  /** The payload is `bytes[at, at + length)`. */
  setPayload(bytes: Uint8Array, at: number, length: number): void {
    this.payloadBytes = bytes;
    this.payloadAt = at;
    this.payloadLength = length;
    this.#view = null;
  }
}

export class DecodeScratch {
  /** @internal */ readonly eth = new ScratchEth();
  /** @internal */ readonly vlan = { pcp: 0, dei: 0, vid: 0 };
  /** @internal */ readonly ipv4 = new ScratchIpv4();
  /** @internal */ readonly ipv6 = new ScratchIpv6();
  /** @internal */ readonly udp: UdpHeader = { srcPort: 0, dstPort: 0, length: 0, checksum: 0 };
  /** @internal */ readonly routing: Routing = { framing: 'roce-v2', eth: null, ipv4: null, ipv6: null, udp: null, lrh: null, grh: null, vcrc: null };
  /** @internal */ readonly bth: Bth = {
    opcode: 0,
    se: 0,
    migReq: 0,
    padCnt: 0,
    tver: 0,
    pkey: 0,
    fecn: 0,
    becn: 0,
    resv6a: 0,
    destQp: 0,
    ackReq: 0,
    resv7: 0,
    psn: 0,
  };
  /** @internal */ readonly reth = new ScratchReth();
  /** @internal */ readonly aeth: Aeth = { syndrome: 0, msn: 0 };
  /** @internal */ readonly deth: Deth = { qkey: 0, resv8: 0, srcQp: 0 };
  /** The packet of the last decode that succeeded with this scratch (the one its result names). */
  readonly packet = new ScratchPacket(this.bth);
  /** @internal */ readonly ok: { ok: true; packet: Packet } = { ok: true, packet: this.packet };
}

function readEthernetInto(buf: Uint8Array, sc: DecodeScratch): number {
  const e = sc.eth;
  e.macsAt(buf);
  let type = (buf[12]! << 8) | buf[13]!;
  e.vlan = null;
  if (type === EtherType.VLAN) {
    const tci = (buf[14]! << 8) | buf[15]!;
    const v = sc.vlan;
    v.pcp = tci >>> 13;
    v.dei = (tci >>> 12) & 1;
    v.vid = tci & 0xfff;
    e.vlan = v;
    type = (buf[16]! << 8) | buf[17]!;
  }
  e.etherType = type;
  return e.vlan ? 18 : 14;
}

function readIpv4Into(buf: Uint8Array, off: number, h: ScratchIpv4): Ipv4Header {
  const ihl = buf[off]! & 0xf;
  const ff = (buf[off + 6]! << 8) | buf[off + 7]!;
  h.ihl = ihl;
  h.dscp = buf[off + 1]! >>> 2;
  h.ecn = buf[off + 1]! & 3;
  h.totalLength = (buf[off + 2]! << 8) | buf[off + 3]!;
  h.id = (buf[off + 4]! << 8) | buf[off + 5]!;
  h.flags = ff >>> 13;
  h.fragmentOffset = ff & 0x1fff;
  h.ttl = buf[off + 8]!;
  h.protocol = buf[off + 9]!;
  h.checksum = (buf[off + 10]! << 8) | buf[off + 11]!;
  h.addrsAt(buf, off + 12);
  h.options = ihl > 5 ? buf.slice(off + 20, off + ihl * 4) : null;
  return h;
}

function readIpv6Into(buf: Uint8Array, off: number, h: ScratchIpv6): Ipv6Header {
  h.trafficClass = ((buf[off]! & 0xf) << 4) | (buf[off + 1]! >>> 4);
  h.flowLabel = ((buf[off + 1]! & 0xf) << 16) | (buf[off + 2]! << 8) | buf[off + 3]!;
  h.payloadLength = (buf[off + 4]! << 8) | buf[off + 5]!;
  h.nextHeader = buf[off + 6]!;
  h.hopLimit = buf[off + 7]!;
  h.addrsAt(buf, off + 8);
  return h;
}

function readUdpInto(buf: Uint8Array, off: number, h: UdpHeader): UdpHeader {
  h.srcPort = (buf[off]! << 8) | buf[off + 1]!;
  h.dstPort = (buf[off + 2]! << 8) | buf[off + 3]!;
  h.length = (buf[off + 4]! << 8) | buf[off + 5]!;
  h.checksum = (buf[off + 6]! << 8) | buf[off + 7]!;
  return h;
}

function readBthInto(buf: Uint8Array, off: number, h: Bth): Bth {
  const b1 = buf[off + 1]!;
  const b4 = buf[off + 4]!;
  h.opcode = buf[off]!;
  h.se = b1 >>> 7;
  h.migReq = (b1 >>> 6) & 1;
  h.padCnt = (b1 >>> 4) & 3;
  h.tver = b1 & 0xf;
  h.pkey = (buf[off + 2]! << 8) | buf[off + 3]!;
  h.fecn = b4 >>> 7;
  h.becn = (b4 >>> 6) & 1;
  h.resv6a = b4 & 0x3f;
  h.destQp = read24(buf, off + 5);
  h.ackReq = buf[off + 8]! >>> 7;
  h.resv7 = buf[off + 8]! & 0x7f;
  h.psn = read24(buf, off + 9);
  return h;
}

/**
 * A decode failure is a value, never thrown: it carries no stack trace,
 * which would cost ~4 µs per malformed frame (7× a good frame's decode) —
 * what a flood of bad frames must not cost.
 */
function fail(code: ConstructorParameters<typeof WireError>[0], msg: string, off: number): DecodeResult {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return { ok: false, error: new WireError(code, msg, off) };
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/** Bytes from the BTH through the ICRC. */
export function transportLength(p: Packet, info: OpcodeInfo): number {
  const pay = p.payload.length;
  return info.headerLength + pay + (-pay & 3) + HdrLen.ICRC;
}

/** Bytes before the BTH. */
export function routingLength(p: Packet): number {
  switch (p.framing) {
    case 'roce-v2':
      return ethHeaderLength(p.eth!) + (p.ipv4 ? p.ipv4.ihl * 4 : IPV6_HEADER_LENGTH) + UDP_HEADER_LENGTH;
    case 'roce-v1':
      return ethHeaderLength(p.eth!) + GRH_LENGTH;
    case 'ib':
      return LRH_LENGTH + (p.grh ? GRH_LENGTH : 0);
  }
}

/**
 * Where `encodePacket(p, out, offset)` puts the payload, relative to `offset`:
 * a packet builder can DMA the payload there first and pass a view of it as
 * `p.payload`, and the encoder will not copy it.
 */
export function payloadOffset(p: Packet): number {
  return routingLength(p) + OPCODES[p.bth.opcode]!.headerLength;
}

/** Frame length `encodePacket` produces (Ethernet frames padded to 60 bytes, no FCS). */
export function encodedLength(p: Packet): number {
  const info = OPCODES[p.bth.opcode];
  if (!info) throw new WireError('WIRE_UNKNOWN_OPCODE', `cannot encode unknown opcode 0x${p.bth.opcode.toString(16)}`);
  const n = routingLength(p) + transportLength(p, info) + (p.framing === 'ib' ? HdrLen.VCRC : 0);
  return p.framing === 'ib' ? n : Math.max(n, ETH_MIN_FRAME);
}

function requireHeader<T>(h: T | null, name: string, info: OpcodeInfo): T {
  if (h === null || h === undefined) throw new WireError('WIRE_BAD_FIELD', `${info.name} needs a ${name} header`);
  return h;
}

/**
 * Encodes `p` into `out` at `offset` (or a new buffer) and returns the frame.
 * Length fields, the IPv4 checksum, the IPv6 UDP checksum, PadCnt, ICRC and
 * VCRC are computed; the values in `p` for those fields are ignored.
 */
export interface EncodeOptions {
  /** RoCE v2 over IPv6: compute the UDP checksum (default true); false sends p.udp.checksum as is. */
  ipv6UdpChecksum?: boolean;
  /**
   * The caller vouches that no view in `p` overlaps `out` other than a
   * payload already at its final place (a packet builder's templates): skips
   * the aliasing check.
   */
  viewsDisjoint?: boolean;
  /**
   * RoCE only: leave the ICRC "not yet computed" (zeros, marked pending)
   * for `sealIcrc` to fill in when something reads the bytes (lazy-icrc.ts).
   * Native IB frames (their VCRC covers the ICRC) and RoCE v2 over IPv6
   * with a UDP checksum (it covers the ICRC too) are always complete.
   */
  deferIcrc?: boolean;
}

export function encodePacket(p: Packet, out?: Uint8Array, offset = 0, opts: EncodeOptions = {}): Uint8Array {
  const info = OPCODES[p.bth.opcode];
  if (!info) throw new WireError('WIRE_UNKNOWN_OPCODE', `cannot encode unknown opcode 0x${p.bth.opcode.toString(16)}`);
  if (!info.payload && p.payload.length > 0) {
    throw new WireError('WIRE_LENGTH_MISMATCH', `${info.name} carries no payload, got ${p.payload.length} bytes`);
  }
  const tlen = transportLength(p, info);
  checkLengthFields(p, tlen);
  const routed = routingLength(p) + tlen;
  const total = p.framing === 'ib' ? routed + HdrLen.VCRC : Math.max(routed, ETH_MIN_FRAME);
  const buf = !out ? new Uint8Array(total) : offset === 0 && out.length === total ? out : out.subarray(offset, offset + total);
  if (buf.length < total) throw new WireError('WIRE_TRUNCATED', `output buffer too small: need ${total} bytes`);
  if (out && !opts.viewsDisjoint) p = detachFrom(p, buf, routed - tlen + info.headerLength);
  let o = 0;
  let ipOff = -1;
  if (p.framing !== 'ib') o = writeEthernet(buf, 0, requireHeader(p.eth, 'Ethernet', info));
  if (p.framing === 'roce-v2') {
    ipOff = o;
    const udpLen = UDP_HEADER_LENGTH + tlen;
    if (p.ipv4) o = writeIpv4(buf, o, p.ipv4, p.ipv4.ihl * 4 + udpLen);
    else o = writeIpv6(buf, o, requireHeader(p.ipv6, 'IP', info), udpLen);
    o = writeUdp(buf, o, requireHeader(p.udp, 'UDP', info), udpLen);
  } else if (p.framing === 'roce-v1') {
    ipOff = o;
    o = writeGrh(buf, o, requireHeader(p.grh, 'GRH', info), tlen);
  } else {
    const lrh = requireHeader(p.lrh, 'LRH', info);
    const words = (LRH_LENGTH + (p.grh ? GRH_LENGTH : 0) + tlen) / 4;
    o = writeLrh(buf, 0, { ...lrh, lnh: p.grh ? Lnh.IBA_GLOBAL : Lnh.IBA_LOCAL }, words);
    if (p.grh) o = writeGrh(buf, o, p.grh, tlen);
  }
  const bthOff = o;
  const pad = -p.payload.length & 3;
  writeBthFull(buf, bthOff, p.bth);
  buf[bthOff + 1] = (buf[bthOff + 1]! & 0xcf) | (pad << 4);
  writeExtensionHeaders(buf, bthOff, p, info);
  let q = bthOff + info.headerLength;
  // A builder that gathered the payload straight into place saves the copy.
  if (p.payload.buffer !== buf.buffer || p.payload.byteOffset !== buf.byteOffset + q) buf.set(p.payload, q);
  q += p.payload.length;
  buf.fill(0, q, q + pad);
  q += pad;
  // An IPv6 UDP checksum covers the ICRC bytes: such a frame is sealed at once.
  if (opts.deferIcrc && p.framing !== 'ib' && !(p.ipv6 && (opts.ipv6UdpChecksum ?? true))) {
    writeIcrc(buf, q, 0);
    markIcrcPending(buf, p.framing === 'roce-v1', ipOff, bthOff, q);
  } else {
    const crc = p.framing === 'roce-v2' ? icrcRoceV2(buf, ipOff, bthOff, q) : p.framing === 'roce-v1' ? icrcRoceV1(buf, ipOff, q) : icrcIb(buf, 0, bthOff, q);
    writeIcrc(buf, q, crc);
  }
  q += HdrLen.ICRC;
  if (p.framing === 'ib') {
    writeVcrc(buf, q, vcrc(buf, 0, q));
    q += HdrLen.VCRC;
  } else if (q < total) {
    buf.fill(0, q, total);
  }
  // IPv6 forbids a zero UDP checksum outside tunnels (RFC 8200 §8.1), so
  // RoCE v2 over IPv6 carries a real one unless the caller asks for none.
  // The ICRC masks this field, so computing it last is fine.
  if (p.ipv6 && (opts.ipv6UdpChecksum ?? true)) {
    const udpOff = ipOff + IPV6_HEADER_LENGTH;
    const c = udpChecksumIpv6(buf, ipOff, udpOff, UDP_HEADER_LENGTH + tlen);
    buf[udpOff + 6] = c >>> 8;
    buf[udpOff + 7] = c & 0xff;
  }
  return buf;
}

/** Lengths that would not fit their header fields: refuse rather than wrap. */
function checkLengthFields(p: Packet, tlen: number): void {
  const tooLong = (what: string, v: number, max: number) => {
    if (v > max) throw new WireError('WIRE_LENGTH_MISMATCH', `${what} would be ${v}, more than the field holds (${max})`);
  };
  if (p.ipv4) tooLong('IPv4 total length', p.ipv4.ihl * 4 + UDP_HEADER_LENGTH + tlen, 0xffff);
  if (p.ipv6) tooLong('IPv6 payload length', UDP_HEADER_LENGTH + tlen, 0xffff);
  if (p.grh) tooLong('GRH PayLen', tlen, 0xffff);
  if (p.lrh) tooLong('LRH PktLen (words)', (LRH_LENGTH + (p.grh ? GRH_LENGTH : 0) + tlen) / 4, 0x7ff);
}

/**
 * When the packet's views (payload, addresses) point into the output buffer
 * somewhere other than where they will be written, the header writes could
 * overwrite them before they are read: copy those views first. A payload
 * already at its final offset (the zero-copy path) is left alone.
 */
function detachFrom(p: Packet, buf: Uint8Array, payloadAt: number): Packet {
  const b = buf.buffer;
  const payloadMoves = p.payload.buffer === b && p.payload.byteOffset !== buf.byteOffset + payloadAt;
  // Header views are small: compare their buffers directly (no closure per call).
  const e = p.eth;
  const v4 = p.ipv4;
  const v6 = p.ipv6;
  const g = p.grh;
  const viewsInBuf =
    (e !== null && (e.src.buffer === b || e.dst.buffer === b)) ||
    (v4 !== null && (v4.src.buffer === b || v4.dst.buffer === b || (v4.options !== null && v4.options.buffer === b))) ||
    (v6 !== null && (v6.src.buffer === b || v6.dst.buffer === b)) ||
    (g !== null && (g.sgid.buffer === b || g.dgid.buffer === b));
  if (!payloadMoves && !viewsInBuf) return p;
  const copy = (v: Uint8Array) => (v.buffer === b ? v.slice() : v);
  return {
    ...p,
    eth: e && { ...e, src: copy(e.src), dst: copy(e.dst) },
    ipv4: v4 && { ...v4, src: copy(v4.src), dst: copy(v4.dst), options: v4.options && copy(v4.options) },
    ipv6: v6 && { ...v6, src: copy(v6.src), dst: copy(v6.dst) },
    grh: g && { ...g, sgid: copy(g.sgid), dgid: copy(g.dgid) },
    payload: payloadMoves ? p.payload.slice() : p.payload,
  };
}

/** @internal Writes the opcode's extension headers after the BTH at `bthOff`, but those in `skip` (Hdr bits: written by the caller). */
export function writeExtensionHeaders(buf: Uint8Array, bthOff: number, p: Packet, info: OpcodeInfo, skip = 0): void {
  const o = info.offsets;
  const h = info.headers & ~skip;
  if (h & Hdr.RDETH) {
    const x = requireHeader(p.rdeth, 'RDETH', info);
    writeRdeth(buf, bthOff + o.rdeth, x.eeCtx, x.resv8);
  }
  if (h & Hdr.DETH) {
    const x = requireHeader(p.deth, 'DETH', info);
    writeDeth(buf, bthOff + o.deth, x.qkey, x.srcQp, x.resv8);
  }
  if (h & Hdr.XRCETH) {
    const x = requireHeader(p.xrceth, 'XRCETH', info);
    writeXrceth(buf, bthOff + o.xrceth, x.xrcSrq, x.resv8);
  }
  if (h & Hdr.FETH) write32(buf, bthOff + o.feth, requireHeader(p.feth, 'FETH', info).raw);
  if (h & Hdr.RETH) {
    const x = requireHeader(p.reth, 'RETH', info);
    writeReth(buf, bthOff + o.reth, x.va, x.rkey, x.dmaLength);
  }
  if (h & Hdr.ATOMIC_ETH) {
    const x = requireHeader(p.atomicEth, 'AtomicETH', info);
    writeAtomicEth(buf, bthOff + o.atomicEth, x.va, x.rkey, x.swapAdd, x.compare);
  }
  if (h & Hdr.AETH) {
    const x = requireHeader(p.aeth, 'AETH', info);
    writeAeth(buf, bthOff + o.aeth, x.syndrome, x.msn);
  }
  if (h & Hdr.ATOMIC_ACK_ETH) write64(buf, bthOff + o.atomicAckEth, requireHeader(p.atomicAckEth, 'AtomicAckETH', info).origData);
  if (h & Hdr.IMMDT) write32(buf, bthOff + o.immDt, requireHeader(p.immDt, 'ImmDt', info));
  if (h & Hdr.IETH) write32(buf, bthOff + o.ieth, requireHeader(p.ieth, 'IETH', info));
  if (h & Hdr.CNP_PAD) buf.fill(0, bthOff + HdrLen.BTH, bthOff + HdrLen.BTH + HdrLen.CNP_PAD);
}

/**
 * Decodes one frame. Never throws and never reads outside `frame`: a
 * malformed frame gives `{ok: false, error}` with a code naming the fault.
 * Header objects hold views into `frame` (MACs, addresses, payload).
 */
export function decodePacket(
  frame: Uint8Array,
  linktype = LINKTYPE_ETHERNET,
  opts: DecodeOptions = NO_OPTIONS,
  scratch: DecodeScratch | null = null,
): DecodeResult {
  if (linktype === LINKTYPE_INFINIBAND) return decodeIb(frame, opts, scratch);
  if (linktype !== LINKTYPE_ETHERNET) return fail('WIRE_NOT_RDMA', `unsupported link type ${linktype}`, 0);
  // Only a receiving device's decode (scratch, ICRC known) reads a deferred payload where it is (lazy-icrc.ts).
  if (scratch === null || opts.verifyIcrc !== false) materializePayload(frame);
  let eth: EthernetHeader;
  let o: number;
  if (scratch !== null) {
    const vlanTagged = frame.length >= 14 && ((frame[12]! << 8) | frame[13]!) === EtherType.VLAN;
    if (frame.length < (vlanTagged ? 18 : 14)) return fail('WIRE_TRUNCATED', `Ethernet header needs 14 bytes (18 with 802.1Q), frame has ${frame.length}`, 0);
    o = readEthernetInto(frame, scratch);
    eth = scratch.eth;
  } else {
    const e = readEthernet(frame, 0);
    if (!e) return fail('WIRE_TRUNCATED', `Ethernet header needs 14 bytes (18 with 802.1Q), frame has ${frame.length}`, 0);
    eth = e.eth;
    o = e.next;
  }
  if (eth.etherType === EtherType.ROCE) {
    if (frame.length < o + GRH_LENGTH) return fail('WIRE_TRUNCATED', 'frame ends inside the GRH', o);
    const grh = readGrh(frame, o);
    if (grh.ipVer !== 6) return fail('WIRE_BAD_VERSION', `GRH IPVer is ${grh.ipVer}, must be 6`, o);
    if (grh.nextHeader !== GRH_NEXT_HEADER_IBA)
      return fail('WIRE_NOT_RDMA', `GRH next header 0x${grh.nextHeader.toString(16)} is not IBA transport (0x1b)`, o + 6);
    const end = o + GRH_LENGTH + grh.payLen;
    if (end > frame.length) return fail('WIRE_TRUNCATED', `GRH PayLen ${grh.payLen} runs past the frame end`, o + 4);
    return decodeTransport(
      frame,
      o + GRH_LENGTH,
      end,
      opts,
      {
        framing: 'roce-v1',
        eth,
        ipv4: null,
        ipv6: null,
        udp: null,
        lrh: null,
        grh,
        vcrc: null,
      },
      o,
      scratch,
    );
  }
  let ipv4: Ipv4Header | null = null;
  let ipv6: Ipv6Header | null = null;
  let ipEnd: number;
  const ipOff = o;
  if (eth.etherType === EtherType.IPV4) {
    if (frame.length < o + IPV4_HEADER_LENGTH) return fail('WIRE_TRUNCATED', 'frame ends inside the IPv4 header', o);
    if (frame[o]! >>> 4 !== 4) return fail('WIRE_BAD_VERSION', `IP version ${frame[o]! >>> 4} under ethertype 0x0800`, o);
    ipv4 = scratch !== null ? readIpv4Into(frame, o, scratch.ipv4) : readIpv4(frame, o);
    const hl = ipv4.ihl * 4;
    if (ipv4.ihl < 5) return fail('WIRE_BAD_FIELD', `IPv4 IHL ${ipv4.ihl} is below 5`, o);
    if (frame.length < o + hl) return fail('WIRE_TRUNCATED', 'frame ends inside the IPv4 options', o);
    if (ipv4.totalLength < hl) return fail('WIRE_LENGTH_MISMATCH', `IPv4 total length ${ipv4.totalLength} is shorter than its header`, o + 2);
    if (o + ipv4.totalLength > frame.length) return fail('WIRE_TRUNCATED', `IPv4 total length ${ipv4.totalLength} runs past the frame end`, o + 2);
    if (opts.verifyIpChecksum !== false && internetChecksum(frame, o, hl) !== 0) {
      return fail('WIRE_BAD_CHECKSUM', `IPv4 header checksum 0x${ipv4.checksum.toString(16).padStart(4, '0')} is wrong`, o + 10);
    }
    if ((ipv4.flags & 1) !== 0 || ipv4.fragmentOffset !== 0) return fail('WIRE_NOT_RDMA', 'IPv4 fragment: RoCE v2 is never fragmented', o + 6);
    if (ipv4.protocol !== IP_PROTO_UDP) return fail('WIRE_NOT_RDMA', `IP protocol ${ipv4.protocol} is not UDP`, o + 9);
    ipEnd = o + ipv4.totalLength;
    o += hl;
  } else if (eth.etherType === EtherType.IPV6) {
    if (frame.length < o + IPV6_HEADER_LENGTH) return fail('WIRE_TRUNCATED', 'frame ends inside the IPv6 header', o);
    if (frame[o]! >>> 4 !== 6) return fail('WIRE_BAD_VERSION', `IP version ${frame[o]! >>> 4} under ethertype 0x86dd`, o);
    ipv6 = scratch !== null ? readIpv6Into(frame, o, scratch.ipv6) : readIpv6(frame, o);
    if (ipv6.nextHeader !== IP_PROTO_UDP) return fail('WIRE_NOT_RDMA', `IPv6 next header ${ipv6.nextHeader} is not UDP`, o + 6);
    ipEnd = o + IPV6_HEADER_LENGTH + ipv6.payloadLength;
    if (ipEnd > frame.length) return fail('WIRE_TRUNCATED', `IPv6 payload length ${ipv6.payloadLength} runs past the frame end`, o + 4);
    o += IPV6_HEADER_LENGTH;
  } else {
    return fail('WIRE_NOT_RDMA', `ethertype 0x${eth.etherType.toString(16).padStart(4, '0')} does not carry RDMA`, o - 2);
  }
  if (ipEnd < o + UDP_HEADER_LENGTH) return fail('WIRE_TRUNCATED', 'IP payload ends inside the UDP header', o);
  const udp = scratch !== null ? readUdpInto(frame, o, scratch.udp) : readUdp(frame, o);
  if (udp.dstPort !== (opts.roceV2Port ?? ROCE_V2_UDP_PORT)) return fail('WIRE_NOT_RDMA', `UDP destination port ${udp.dstPort} is not RoCE v2`, o + 2);
  if (udp.length !== ipEnd - o) return fail('WIRE_LENGTH_MISMATCH', `UDP length ${udp.length} disagrees with the IP length (${ipEnd - o})`, o + 4);
  if (ipv6 && udp.checksum !== 0 && opts.verifyIpChecksum !== false) {
    const want = udpChecksumIpv6(frame, ipOff, o, udp.length);
    if (want !== udp.checksum)
      return fail('WIRE_BAD_CHECKSUM', `UDP checksum 0x${udp.checksum.toString(16).padStart(4, '0')} should be 0x${want.toString(16).padStart(4, '0')}`, o + 6);
  }
  if (scratch !== null) {
    const r = scratch.routing;
    r.framing = 'roce-v2';
    r.eth = eth;
    r.ipv4 = ipv4;
    r.ipv6 = ipv6;
    r.udp = udp;
    r.lrh = null;
    r.grh = null;
    r.vcrc = null;
    return decodeTransport(frame, o + UDP_HEADER_LENGTH, ipEnd, opts, r, ipOff, scratch);
  }
  return decodeTransport(
    frame,
    o + UDP_HEADER_LENGTH,
    ipEnd,
    opts,
    {
      framing: 'roce-v2',
      eth,
      ipv4,
      ipv6,
      udp,
      lrh: null,
      grh: null,
      vcrc: null,
    },
    ipOff,
    null,
  );
}

function decodeIb(frame: Uint8Array, opts: DecodeOptions, scratch: DecodeScratch | null): DecodeResult {
  if (frame.length < LRH_LENGTH) return fail('WIRE_TRUNCATED', `LRH needs 8 bytes, frame has ${frame.length}`, 0);
  const lrh = readLrh(frame, 0);
  if (lrh.lver !== 0) return fail('WIRE_BAD_VERSION', `LRH LVer is ${lrh.lver}, must be 0`, 0);
  if (lrh.lnh !== Lnh.IBA_LOCAL && lrh.lnh !== Lnh.IBA_GLOBAL) return fail('WIRE_NOT_RDMA', `LRH LNH ${lrh.lnh} is not IBA transport`, 1);
  const end = lrh.pktLen * 4;
  if (end + HdrLen.VCRC > frame.length)
    return fail('WIRE_TRUNCATED', `LRH PktLen ${lrh.pktLen} words (+VCRC) runs past the frame end (${frame.length} bytes)`, 4);
  if (end + HdrLen.VCRC < frame.length) return fail('WIRE_LENGTH_MISMATCH', `frame has ${frame.length - end - HdrLen.VCRC} bytes after the VCRC`, end);
  let o = LRH_LENGTH;
  let grh: Grh | null = null;
  if (lrh.lnh === Lnh.IBA_GLOBAL) {
    if (end < o + GRH_LENGTH) return fail('WIRE_TRUNCATED', 'packet ends inside the GRH', o);
    grh = readGrh(frame, o);
    if (grh.ipVer !== 6) return fail('WIRE_BAD_VERSION', `GRH IPVer is ${grh.ipVer}, must be 6`, o);
    if (grh.nextHeader !== GRH_NEXT_HEADER_IBA) return fail('WIRE_NOT_RDMA', `GRH next header 0x${grh.nextHeader.toString(16)} is not IBA transport`, o + 6);
    if (grh.payLen !== end - o - GRH_LENGTH) return fail('WIRE_LENGTH_MISMATCH', `GRH PayLen ${grh.payLen} disagrees with LRH PktLen`, o + 4);
    o += GRH_LENGTH;
  }
  const got = readVcrc(frame, end);
  // Computed only when checked: a runtime that knows the bytes are as built skips both CRCs.
  const want = opts.verifyIcrc !== false ? vcrc(frame, 0, end) : got;
  if (got !== want) {
    return fail('WIRE_BAD_VCRC', `VCRC 0x${got.toString(16).padStart(4, '0')} should be 0x${want.toString(16).padStart(4, '0')}`, end);
  }
  const bthOff = o;
  return decodeTransport(
    frame,
    bthOff,
    end,
    opts,
    {
      framing: 'ib',
      eth: null,
      ipv4: null,
      ipv6: null,
      udp: null,
      lrh,
      grh,
      vcrc: got,
    },
    0,
    scratch,
  );
}

type Routing = Pick<Packet, 'framing' | 'eth' | 'ipv4' | 'ipv6' | 'udp' | 'lrh' | 'grh' | 'vcrc'>;

function icrcFor(frame: Uint8Array, r: Routing, routeOff: number, bthOff: number, icrcOff: number): number {
  switch (r.framing) {
    case 'roce-v2':
      return icrcRoceV2(frame, routeOff, bthOff, icrcOff);
    case 'roce-v1':
      return icrcRoceV1(frame, routeOff, icrcOff);
    case 'ib':
      return icrcIb(frame, routeOff, bthOff, icrcOff);
  }
}

/**
 * BTH at `o`; the transport part (BTH..ICRC) ends at `end`; `routeOff` is
 * where the IP header, GRH (RoCE v1) or LRH starts, for the ICRC.
 */
function decodeTransport(
  frame: Uint8Array,
  o: number,
  end: number,
  opts: DecodeOptions,
  r: Routing,
  routeOff: number,
  scratch: DecodeScratch | null,
): DecodeResult {
  if (end - o < HdrLen.BTH + HdrLen.ICRC) return fail('WIRE_TRUNCATED', `transport part is ${end - o} bytes, the BTH and ICRC alone need 16`, o);
  const bth = scratch !== null ? readBthInto(frame, o, scratch.bth) : readBth(frame, o);
  if (bth.tver !== 0) return fail('WIRE_BAD_VERSION', `BTH TVer is ${bth.tver}, must be 0`, o + 1);
  const info = OPCODES[bth.opcode];
  if (!info) return fail('WIRE_UNKNOWN_OPCODE', `opcode 0x${bth.opcode.toString(16).padStart(2, '0')} is reserved or vendor-specific`, o);
  if (info.transport === Transport.CNP && r.framing !== 'roce-v2') return fail('WIRE_OPCODE_NOT_ALLOWED', 'a CNP is only defined for RoCE v2', o);
  const icrcOff = end - HdrLen.ICRC;
  const payEnd = icrcOff - bth.padCnt;
  const payStart = o + info.headerLength;
  if (payStart > icrcOff) return fail('WIRE_TRUNCATED', `${info.name} needs ${info.headerLength} header bytes, ${icrcOff - o} present`, o);
  if (payEnd < payStart) return fail('WIRE_LENGTH_MISMATCH', `PadCnt ${bth.padCnt} is larger than the ${icrcOff - payStart} bytes after the headers`, o + 1);
  if (!info.payload && icrcOff !== payStart)
    return fail('WIRE_LENGTH_MISMATCH', `${info.name} carries no payload, found ${icrcOff - payStart} bytes`, payStart);
  if (((icrcOff - payStart) & 3) !== 0) return fail('WIRE_LENGTH_MISMATCH', `payload+pad is ${icrcOff - payStart} bytes, not a multiple of 4`, payStart);
  const icrc = readIcrc(frame, icrcOff);
  if (opts.verifyIcrc !== false) {
    const want = icrcFor(frame, r, routeOff, o, icrcOff);
    if (icrc !== want) return fail('WIRE_BAD_ICRC', `ICRC 0x${icrc.toString(16).padStart(8, '0')} should be 0x${want.toString(16).padStart(8, '0')}`, icrcOff);
  }
  const off = info.offsets;
  const h = info.headers;
  if (scratch !== null) {
    const p = scratch.packet;
    p.framing = r.framing;
    p.eth = r.eth;
    p.ipv4 = r.ipv4;
    p.ipv6 = r.ipv6;
    p.udp = r.udp;
    p.lrh = r.lrh;
    p.grh = r.grh;
    p.bth = bth;
    p.rdeth = h & Hdr.RDETH ? readRdeth(frame, o + off.rdeth) : null;
    if (h & Hdr.DETH) {
      const d = scratch.deth;
      d.qkey = read32(frame, o + off.deth);
      d.resv8 = frame[o + off.deth + 4]!;
      d.srcQp = read24(frame, o + off.deth + 5);
      p.deth = d;
    } else p.deth = null;
    p.xrceth = h & Hdr.XRCETH ? readXrceth(frame, o + off.xrceth) : null;
    if (h & Hdr.RETH) {
      const x = scratch.reth;
      x.vaHi = read32(frame, o + off.reth);
      x.vaLo = read32(frame, o + off.reth + 4);
      x.rkey = read32(frame, o + off.reth + 8);
      x.dmaLength = read32(frame, o + off.reth + 12);
      p.reth = x;
    } else p.reth = null;
    p.atomicEth = h & Hdr.ATOMIC_ETH ? readAtomicEth(frame, o + off.atomicEth) : null;
    if (h & Hdr.AETH) {
      const a = scratch.aeth;
      a.syndrome = frame[o + off.aeth]!;
      a.msn = read24(frame, o + off.aeth + 1);
      p.aeth = a;
    } else p.aeth = null;
    p.atomicAckEth = h & Hdr.ATOMIC_ACK_ETH ? { origData: read64(frame, o + off.atomicAckEth) } : null;
    p.immDt = h & Hdr.IMMDT ? read32(frame, o + off.immDt) : null;
    p.ieth = h & Hdr.IETH ? read32(frame, o + off.ieth) : null;
    p.feth = h & Hdr.FETH ? { raw: read32(frame, o + off.feth) } : null;
    // A simulator frame may have left its payload in the sender's memory (lazy-icrc.ts deferPayload).
    const src = payloadSource(frame, payStart, payEnd - payStart);
    if (src === null) p.setPayload(frame, payStart, payEnd - payStart);
    else p.setPayload(src, payloadSourceAt(frame), payEnd - payStart);
    p.icrc = icrc;
    p.vcrc = r.vcrc;
    return scratch.ok;
  }
  // One object shape for every packet (no spread): keeps property access monomorphic.
  const packet: Packet = {
    framing: r.framing,
    eth: r.eth,
    ipv4: r.ipv4,
    ipv6: r.ipv6,
    udp: r.udp,
    lrh: r.lrh,
    grh: r.grh,
    bth,
    rdeth: h & Hdr.RDETH ? readRdeth(frame, o + off.rdeth) : null,
    deth: h & Hdr.DETH ? readDeth(frame, o + off.deth) : null,
    xrceth: h & Hdr.XRCETH ? readXrceth(frame, o + off.xrceth) : null,
    reth: h & Hdr.RETH ? readReth(frame, o + off.reth) : null,
    atomicEth: h & Hdr.ATOMIC_ETH ? readAtomicEth(frame, o + off.atomicEth) : null,
    aeth: h & Hdr.AETH ? readAeth(frame, o + off.aeth) : null,
    atomicAckEth: h & Hdr.ATOMIC_ACK_ETH ? { origData: read64(frame, o + off.atomicAckEth) } : null,
    immDt: h & Hdr.IMMDT ? read32(frame, o + off.immDt) : null,
    ieth: h & Hdr.IETH ? read32(frame, o + off.ieth) : null,
    feth: h & Hdr.FETH ? { raw: read32(frame, o + off.feth) } : null,
    payload: frame.subarray(payStart, payEnd),
    icrc,
    vcrc: r.vcrc,
  };
  return { ok: true, packet };
}
