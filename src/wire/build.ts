/**
 * Filling in a Packet with sensible defaults, so tests, tools and the
 * packet builder name only the fields they care about.
 */
import { EtherType, type VlanTag } from './ethernet.js';
import { GRH_NEXT_HEADER_IBA, Lnh } from './ib-routing.js';
import { Ecn, IP_PROTO_UDP, ipv4MappedGid } from './ip.js';
import { Hdr, OPCODES } from './opcodes.js';
import type { Framing, Packet } from './packet.js';
import { WireError } from './errors.js';
import { ROCE_V2_UDP_PORT } from './udp.js';

export interface PacketOptions {
  /** RoCE v2 only (default 4). */
  ipVersion?: 4 | 6;
  srcMac?: Uint8Array;
  dstMac?: Uint8Array;
  vlan?: VlanTag | null;
  /** 4 bytes for IPv4, 16 for IPv6 / GIDs. */
  srcIp?: Uint8Array;
  dstIp?: Uint8Array;
  udpSrcPort?: number;
  dscp?: number;
  ecn?: number;
  /** IPv4 TTL, IPv6 / GRH hop limit. */
  hopLimit?: number;
  ipId?: number;
  flowLabel?: number;
  /** Native IB. */
  slid?: number;
  dlid?: number;
  sl?: number;
  vl?: number;
  /** Native IB: carry a GRH (default false). */
  global?: boolean;
  psn?: number;
  destQp?: number;
  ackReq?: number;
  se?: number;
  pkey?: number;
  migReq?: number;
  fecn?: number;
  becn?: number;
  payload?: Uint8Array;
}

const DEFAULT_SRC_MAC = Uint8Array.of(0x02, 0x00, 0x00, 0x00, 0x00, 0x01);
const DEFAULT_DST_MAC = Uint8Array.of(0x02, 0x00, 0x00, 0x00, 0x00, 0x02);
const DEFAULT_SRC_V4 = Uint8Array.of(192, 0, 2, 1);
const DEFAULT_DST_V4 = Uint8Array.of(192, 0, 2, 2);

function gidOf(ip: Uint8Array | undefined, fallback: Uint8Array): Uint8Array {
  const a = ip ?? fallback;
  return a.length === 4 ? ipv4MappedGid(a) : a;
}

/** A complete Packet for `opcode` in `framing`; extension headers present and zeroed. */
export function newPacket(framing: Framing, opcode: number, o: PacketOptions = {}): Packet {
  const info = OPCODES[opcode & 0xff];
  if (!info) throw new WireError('WIRE_UNKNOWN_OPCODE', `unknown opcode 0x${opcode.toString(16)}`);
  const v6 = framing === 'roce-v2' && o.ipVersion === 6;
  const tclass = ((o.dscp ?? 0) << 2) | (o.ecn ?? (framing === 'roce-v2' ? Ecn.ECT0 : 0));
  const hop = o.hopLimit ?? 64;
  const eth =
    framing === 'ib'
      ? null
      : {
          dst: o.dstMac ?? DEFAULT_DST_MAC,
          src: o.srcMac ?? DEFAULT_SRC_MAC,
          vlan: o.vlan ?? null,
          etherType: framing === 'roce-v1' ? EtherType.ROCE : v6 ? EtherType.IPV6 : EtherType.IPV4,
        };
  const grh =
    framing === 'roce-v1' || (framing === 'ib' && o.global)
      ? {
          ipVer: 6,
          trafficClass: tclass,
          flowLabel: o.flowLabel ?? 0,
          payLen: 0,
          nextHeader: GRH_NEXT_HEADER_IBA,
          hopLimit: hop,
          sgid: gidOf(o.srcIp, DEFAULT_SRC_V4),
          dgid: gidOf(o.dstIp, DEFAULT_DST_V4),
        }
      : null;
  const h = info.headers;
  return {
    framing,
    eth,
    ipv4:
      framing === 'roce-v2' && !v6
        ? {
            ihl: 5,
            dscp: o.dscp ?? 0,
            ecn: o.ecn ?? Ecn.ECT0,
            totalLength: 0,
            id: o.ipId ?? 0,
            flags: 2 /* DF */,
            fragmentOffset: 0,
            ttl: hop,
            protocol: IP_PROTO_UDP,
            checksum: 0,
            src: o.srcIp ?? DEFAULT_SRC_V4,
            dst: o.dstIp ?? DEFAULT_DST_V4,
            options: null,
          }
        : null,
    ipv6: v6
      ? {
          trafficClass: tclass,
          flowLabel: o.flowLabel ?? 0,
          payloadLength: 0,
          nextHeader: IP_PROTO_UDP,
          hopLimit: hop,
          src: gidOf(o.srcIp, DEFAULT_SRC_V4),
          dst: gidOf(o.dstIp, DEFAULT_DST_V4),
        }
      : null,
    udp: framing === 'roce-v2' ? { srcPort: o.udpSrcPort ?? 0xc000, dstPort: ROCE_V2_UDP_PORT, length: 0, checksum: 0 } : null,
    lrh:
      framing === 'ib'
        ? {
            vl: o.vl ?? 0,
            lver: 0,
            sl: o.sl ?? 0,
            resv2: 0,
            lnh: grh ? Lnh.IBA_GLOBAL : Lnh.IBA_LOCAL,
            dlid: o.dlid ?? 2,
            resv5: 0,
            pktLen: 0,
            slid: o.slid ?? 1,
          }
        : null,
    grh,
    bth: {
      opcode: info.code,
      se: o.se ?? 0,
      migReq: o.migReq ?? 0,
      padCnt: 0,
      tver: 0,
      pkey: o.pkey ?? 0xffff,
      fecn: o.fecn ?? 0,
      becn: o.becn ?? (info.code === 0x81 ? 1 : 0),
      resv6a: 0,
      destQp: o.destQp ?? 0,
      ackReq: o.ackReq ?? 0,
      resv7: 0,
      psn: o.psn ?? 0,
    },
    rdeth: h & Hdr.RDETH ? { resv8: 0, eeCtx: 0 } : null,
    deth: h & Hdr.DETH ? { qkey: 0, resv8: 0, srcQp: 0 } : null,
    xrceth: h & Hdr.XRCETH ? { resv8: 0, xrcSrq: 0 } : null,
    reth: h & Hdr.RETH ? { va: 0n, rkey: 0, dmaLength: 0 } : null,
    atomicEth: h & Hdr.ATOMIC_ETH ? { va: 0n, rkey: 0, swapAdd: 0n, compare: 0n } : null,
    aeth: h & Hdr.AETH ? { syndrome: 0x1f, msn: 0 } : null,
    atomicAckEth: h & Hdr.ATOMIC_ACK_ETH ? { origData: 0n } : null,
    immDt: h & Hdr.IMMDT ? 0 : null,
    ieth: h & Hdr.IETH ? 0 : null,
    feth: h & Hdr.FETH ? { raw: 0 } : null,
    payload: o.payload ?? new Uint8Array(0),
    icrc: 0,
    vcrc: framing === 'ib' ? 0 : null,
  };
}
