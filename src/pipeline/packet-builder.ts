/**
 * The packet builder: turns (opcode, PSN, headers, payload length) into a
 * frame, with the routing headers of a path (an address vector and the
 * port's GID table) prepared once per path. The payload is gathered by the
 * caller straight into the frame (zero copy); the encoder fills lengths,
 * checksums and the ICRC.
 */
import { IBV_GID_TYPE_ROCE_V1 } from '../device/abi/constants.js';
import type { PortAttrs } from '../device/capabilities.js';
import {
  clearIcrcMark,
  encodePacket,
  EtherType,
  Hdr,
  IP_PROTO_UDP,
  Ipv4RoutingTemplate,
  isIpv4MappedGid,
  newPacket,
  OPCODES,
  routingLength,
  type RethFields,
  type Aeth,
  type AtomicEth,
  type Deth,
  type Packet,
  type Reth,
  Op,
  type Framing,
} from '../wire/index.js';
import type { EthPort, IbLink } from './eth-port.js';
import type { AddressVector } from './work-requests.js';

export interface PathInfo {
  framing: Framing;
  v6: boolean;
  sgid: Uint8Array;
  dgid: Uint8Array;
  /** Native InfiniBand: the LRH fields (null on RoCE). */
  lrh: IbLrhFields | null;
}

/** What a native IB path puts in its LRH; the GRH is carried when `global`. */
export interface IbLrhFields {
  slid: number;
  dlid: number;
  sl: number;
  vl: number;
  global: boolean;
}

const NO_GID = new Uint8Array(16);

/**
 * Picks the framing and source GID for an address vector (sgid_index into
 * the port's GID table). On an InfiniBand port: LRH from the AV (SLID =
 * base LID | path bits within the LMC, VL = SL2VL[SL]), the GRH only when
 * the AV is global. Null for an AV the port cannot send.
 */
export function pathFor(port: PortAttrs, av: AddressVector, ib: IbLink | null = null): PathInfo | null {
  if (ib !== null) {
    if (av.dlid === 0 || av.dlid === 0xffff) return null;
    const lrh = { slid: ib.lid | (av.srcPathBits & ((1 << ib.lmc) - 1)), dlid: av.dlid, sl: av.sl, vl: ib.sl2vl[av.sl] ?? 0, global: av.isGlobal };
    if (!av.isGlobal) return { framing: 'ib', v6: false, sgid: NO_GID, dgid: NO_GID, lrh };
    const g = port.gidTable[av.sgidIndex];
    return g ? { framing: 'ib', v6: false, sgid: g.gid, dgid: av.dgid, lrh } : null;
  }
  const e = port.gidTable[av.sgidIndex];
  if (!e) return null;
  const v1 = e.type === IBV_GID_TYPE_ROCE_V1;
  const v4 = isIpv4MappedGid(e.gid);
  if (!v1 && v4 !== isIpv4MappedGid(av.dgid)) return null;
  return { framing: v1 ? 'roce-v1' : 'roce-v2', v6: !v1 && !v4, sgid: e.gid, dgid: av.dgid, lrh: null };
}

const EMPTY = new Uint8Array(0);

/**
 * Frame buffers, recycled per thread. A frame is built in one, given to the
 * port; a cable that takes ownership (the in-process wire) hands it to the
 * receiving NIC, which releases it once the packet is processed; otherwise
 * it is released as soon as the cable has copied it. No allocation and no
 * zero-fill per packet in steady state.
 *
 * Two sizes: frames up to 2 KiB (ACKs, CNPs, MTU 1024 data) in 2 KiB
 * buffers, the rest in 9 KiB ones. When frames pile up faster than they
 * are released (a switch queue in an incast holds thousands), new buffers
 * are allocated and zero-filled: 2 KiB instead of 9 KiB for a 1 KiB
 * frame is a quarter of that work and of the external memory that drives
 * the garbage collector.
 *
 * A frame may start up to 7 bytes into its buffer (`start`): placed so
 * that its payload has the host buffer's alignment mod 8, the gather from
 * shared host memory is one word-wise copy instead of two (dma.ts
 * copyBytes), and so is the receiver's scatter when its buffer is aligned
 * like the sender's.
 */
const POOL_FRAME_BYTES = 9216;
const SMALL_FRAME_BYTES = 2048;
/** Room for the start offset. */
const SLACK = 8;
/** Templates own their header views; only the payload lives in the frame, already in place. */
const DISJOINT = { viewsDisjoint: true } as const;
/** The same, the ICRC left for the runtime to seal when something reads the bytes (wire/lazy-icrc.ts). */
const DISJOINT_DEFERRED = { viewsDisjoint: true, deferIcrc: true } as const;
/**
 * Released frame views (not just their buffers): a view that fits the next
 * frame (same start and length: every packet of a steady stream) is reused,
 * sparing a typed-array view (~100 B of garbage) per packet.
 */
const pool: Uint8Array[] = [];
const smallPool: Uint8Array[] = [];

/** A frame of `len` bytes starting `start` (0..7) bytes into a pooled buffer (at 0 when unpooled). */
export function acquireFrame(len: number, start = 0): Uint8Array {
  if (len > POOL_FRAME_BYTES) return new Uint8Array(len);
  const v = len <= SMALL_FRAME_BYTES ? smallPool.pop() : pool.pop();
  if (v === undefined) return new Uint8Array(new ArrayBuffer(len <= SMALL_FRAME_BYTES ? SMALL_FRAME_BYTES + SLACK : POOL_FRAME_BYTES + SLACK), start, len);
  // Cleared first: a view replaced by one of another shape must not keep a deferred payload aimed at the buffer.
  clearIcrcMark(v);
  if (v.byteOffset !== start || v.length !== len) return new Uint8Array(v.buffer, start, len);
  return v;
}

/**
 * Gives a frame back (the caller and everyone it handed the frame to are
 * done with it: the view itself may be the next frame); frames not from
 * the pool are left to the GC.
 */
export function releaseFrame(frame: Uint8Array): void {
  const b = frame.buffer;
  if (b instanceof SharedArrayBuffer) return;
  if (b.byteLength === SMALL_FRAME_BYTES + SLACK) {
    if (smallPool.length < 8192) smallPool.push(frame);
  } else if (b.byteLength === POOL_FRAME_BYTES + SLACK && pool.length < 4096) pool.push(frame);
}

function isZeroMac(m: Uint8Array): boolean {
  for (let i = 0; i < 6; i++) if (m[i] !== 0) return false;
  return true;
}

/** What `PathTemplate.begin` gives: the frame, and where its payload goes. */
export class Begun {
  frame: Uint8Array = EMPTY;
  payloadOff = 0;
  payloadLen = 0;
  /** A view of the payload's place (a new view per call: the hot path gathers into `frame` at `payloadOff`). */
  get payload(): Uint8Array {
    return this.frame.subarray(this.payloadOff, this.payloadOff + this.payloadLen);
  }
}

/**
 * Headers for one path from one QP: a Packet reused for every frame on it,
 * whose per-packet fields (opcode, PSN, flags, extension headers, payload)
 * are set just before encoding.
 */
export class PathTemplate {
  readonly pkt: Packet;
  private readonly reth: Reth = { va: 0n, rkey: 0, dmaLength: 0 };
  private readonly aeth: Aeth = { syndrome: 0, msn: 0 };
  private readonly atomicEth: AtomicEth = { va: 0n, rkey: 0, swapAdd: 0n, compare: 0n };
  private readonly atomicAck = { origData: 0n };
  private readonly deth: Deth = { qkey: 0, resv8: 0, srcQp: 0 };
  private macResolved: boolean;
  /** The routing headers as prebuilt bytes (RoCE v2 over IPv4 with the MAC known), else null: encodePacket. */
  private routing: Ipv4RoutingTemplate | null = null;
  /** Bytes before the BTH (the routing headers do not change per packet). */
  private readonly routedLen: number;
  /** The RETH as numbers; copied into `reth` (BigInt VA) only for encodePacket. */
  private readonly rethNum: RethFields = { va: 0, rkey: 0, dmaLength: 0 };

  constructor(
    readonly path: PathInfo,
    readonly av: AddressVector,
    readonly srcMac: Uint8Array,
    destQpn: number,
    /** The IP header's TTL / hop limit, and the UDP source port (the device profile decides both: paths.ts). */
    ip: { readonly hopLimit: number; readonly udpSrcPort: number },
    /** RoCE v2: send ECN-capable, ECT(0), whatever the traffic class's low bits say. */
    ect = false,
    /** Leave each frame's ICRC pending (NicEnv.deferIcrc). */
    private readonly deferIcrc = false,
  ) {
    const full = path.v6 || path.framing !== 'roce-v2';
    const src = full ? path.sgid : path.sgid.subarray(12, 16);
    const dst = full ? path.dgid : path.dgid.subarray(12, 16);
    const lrh = path.lrh;
    this.pkt = newPacket(path.framing, Op.RC_SEND_ONLY, {
      ipVersion: path.v6 ? 6 : 4,
      srcMac,
      dstMac: av.dmac,
      srcIp: src,
      dstIp: dst,
      dscp: av.trafficClass >>> 2,
      ecn: ect && path.framing === 'roce-v2' ? 2 : av.trafficClass & 3,
      hopLimit: ip.hopLimit,
      flowLabel: av.flowLabel,
      udpSrcPort: ip.udpSrcPort,
      destQp: destQpn,
      ...(lrh === null ? {} : { slid: lrh.slid, dlid: lrh.dlid, sl: lrh.sl, vl: lrh.vl, global: lrh.global }),
    });
    if (this.pkt.eth) this.pkt.eth.etherType = path.framing === 'roce-v1' ? EtherType.ROCE : path.v6 ? EtherType.IPV6 : EtherType.IPV4;
    if (this.pkt.ipv6) this.pkt.ipv6.nextHeader = IP_PROTO_UDP;
    // Native IB has no MAC: the LRH's DLID is the next hop.
    this.macResolved = lrh !== null || !isZeroMac(av.dmac);
    this.routedLen = routingLength(this.pkt);
    this.#prebuild();
  }

  #prebuild(): void {
    this.routing = this.macResolved && Ipv4RoutingTemplate.fits(this.pkt) ? new Ipv4RoutingTemplate(this.pkt) : null;
  }

  /** The destination MAC is known (given in the AV or resolved). */
  get resolved(): boolean {
    return this.macResolved;
  }

  /** The destination MAC, resolving through the port when the AV left it zero; false while unknown. */
  resolveMac(port: EthPort): boolean {
    if (this.macResolved) return true;
    const mac = port.resolve(this.path.dgid);
    if (!mac) return false;
    this.pkt.eth!.dst = mac;
    this.macResolved = true;
    this.#prebuild();
    return true;
  }

  /**
   * Starts a frame: sets the BTH and the opcode's extension headers and
   * returns the frame buffer and where in it the caller gathers the payload
   * (`payloadOff`; `payload` makes a view of that place on request). Call
   * `finish` after filling the payload. `payloadAlign`: the alignment mod 8
   * (byte offset in its buffer) of what the payload will be copied from, to
   * give the payload the same; -1 for none.
   */
  begin(opcode: number, psn: number, destQp: number, ackReq: number, se: number, payloadLen: number, payloadAlign = -1): Begun {
    const p = this.pkt;
    const info = OPCODES[opcode]!;
    const h = info.headers;
    p.bth.opcode = opcode;
    p.bth.psn = psn;
    p.bth.destQp = destQp;
    p.bth.ackReq = ackReq;
    p.bth.se = se;
    p.reth = h & Hdr.RETH ? this.reth : null;
    p.aeth = h & Hdr.AETH ? this.aeth : null;
    p.atomicEth = h & Hdr.ATOMIC_ETH ? this.atomicEth : null;
    p.atomicAckEth = h & Hdr.ATOMIC_ACK_ETH ? this.atomicAck : null;
    p.deth = h & Hdr.DETH ? this.deth : null;
    p.immDt = h & Hdr.IMMDT ? 0 : null;
    p.ieth = h & Hdr.IETH ? 0 : null;
    p.feth = null;
    p.rdeth = null;
    p.xrceth = null;
    p.payload = EMPTY;
    const off = this.routedLen + info.headerLength;
    const routed = off + payloadLen + (-payloadLen & 3) + 4;
    // One result object per template, refilled: callers use it before the next begin.
    const b = this.begun;
    // Ethernet pads to its 60-byte minimum; an IB packet is exactly LRH .. ICRC + the 2-byte VCRC.
    const len = p.framing === 'ib' ? routed + 2 : Math.max(routed, 60);
    b.frame = acquireFrame(len, payloadAlign < 0 ? 0 : (payloadAlign - off) & 7);
    b.payloadOff = off;
    b.payloadLen = payloadLen;
    return b;
  }

  private readonly begun = new Begun();

  setReth(va: number, rkey: number, len: number): void {
    const r = this.rethNum;
    r.va = va;
    r.rkey = rkey;
    r.dmaLength = len;
  }
  setAeth(syndrome: number, msn: number): void {
    this.aeth.syndrome = syndrome;
    this.aeth.msn = msn;
  }
  setAtomic(va: number, rkey: number, swapAdd: bigint, compare: bigint): void {
    this.atomicEth.va = BigInt(va);
    this.atomicEth.rkey = rkey;
    this.atomicEth.swapAdd = swapAdd;
    this.atomicEth.compare = compare;
  }
  setAtomicAck(orig: bigint): void {
    this.atomicAck.origData = orig;
  }
  setDeth(qkey: number, srcQp: number): void {
    this.deth.qkey = qkey;
    this.deth.srcQp = srcQp;
  }
  setImm(imm: number): void {
    this.pkt.immDt = imm >>> 0;
  }
  setIeth(rkey: number): void {
    this.pkt.ieth = rkey >>> 0;
  }
  /** XRC requests: the XRCETH's remote SRQ number; after begin. */
  setXrceth(srqn: number): void {
    this.xrceth.xrcSrq = srqn & 0xffffff;
    this.pkt.xrceth = this.xrceth;
  }
  private readonly xrceth = { resv8: 0, xrcSrq: 0 };

  /** FLUSH: the FETH word (placement type bits 3..0, selectivity bits 5..4); after begin. */
  setFeth(raw: number): void {
    this.feth.raw = raw >>> 0;
    this.pkt.feth = this.feth;
  }
  private readonly feth = { raw: 0 };

  /**
   * True when `finish` leaves the frame's ICRC pending and reads no payload
   * byte (RoCE v2 over IPv4 with NicEnv.deferIcrc): the payload may then
   * stay in host memory (NicEnv.payloads).
   */
  get leavesIcrcPending(): boolean {
    return this.deferIcrc && this.pkt.framing === 'roce-v2' && this.pkt.ipv4 !== null;
  }

  /** Encodes into the frame from `begin` (the payload is already in place). */
  finish(frame: Uint8Array, ipId: number): Uint8Array {
    const p = this.pkt;
    const b = this.begun;
    if (this.routing) {
      const built = this.routing.encode(frame, p, OPCODES[p.bth.opcode]!, b.payloadLen, this.rethNum, ipId, this.deferIcrc);
      if (built) return built;
    }
    p.payload = frame.subarray(b.payloadOff, b.payloadOff + b.payloadLen);
    if (p.ipv4) p.ipv4.id = ipId & 0xffff;
    if (p.reth) {
      this.reth.va = BigInt(this.rethNum.va);
      this.reth.rkey = this.rethNum.rkey;
      this.reth.dmaLength = this.rethNum.dmaLength;
    }
    return encodePacket(p, frame, 0, this.deferIcrc ? DISJOINT_DEFERRED : DISJOINT);
  }
}
