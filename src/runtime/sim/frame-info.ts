/**
 * Just enough of a frame for the sim runtime's timing model and its
 * observers: where the BTH is, the opcode, and the payload length. Reads a
 * handful of bytes; allocates nothing. Anything that is not RoCE (ARP, ND,
 * PFC) has `bthOffset` -1. The full decoder (src/wire) stays the authority:
 * this only has to agree with what the pipeline itself builds.
 */
import { OPCODE_HEADER_LENGTH, OPCODES, Position } from '../../wire/index.js';

const ETH_HEADER = 14;
const VLAN_TAG = 4;
const ETHERTYPE_VLAN = 0x8100;
const ETHERTYPE_IPV4 = 0x0800;
const ETHERTYPE_IPV6 = 0x86dd;
const ETHERTYPE_ROCE_V1 = 0x8915;
const IP_PROTO_UDP = 17;
const UDP_HEADER = 8;
const ROCE_V2_PORT = 4791;
const GRH_OR_IPV6 = 40;
const BTH = 12;
const ICRC = 4;

const LRH = 8;

/**
 * Byte offset of the BTH in an Ethernet frame, or -1 when the frame is not
 * RoCE (v1 or v2); with `ib`, in a native InfiniBand packet (after the LRH,
 * and the GRH when LNH says 3), -1 for LNH 0 / 1.
 */
export function bthOffset(f: Uint8Array, ib = false): number {
  if (ib) {
    const lnh = f.length >= LRH ? f[1]! & 3 : 0;
    const off = lnh === 2 ? LRH : lnh === 3 ? LRH + GRH_OR_IPV6 : -1;
    return off >= 0 && off + BTH <= f.length ? off : -1;
  }
  if (f.length < ETH_HEADER + BTH) return -1;
  let off = ETH_HEADER;
  let type = (f[12]! << 8) | f[13]!;
  if (type === ETHERTYPE_VLAN) {
    type = (f[16]! << 8) | f[17]!;
    off += VLAN_TAG;
  }
  if (type === ETHERTYPE_IPV4) {
    const ihl = (f[off]! & 0x0f) * 4;
    if (f[off + 9] !== IP_PROTO_UDP) return -1;
    const udp = off + ihl;
    if (((f[udp + 2]! << 8) | f[udp + 3]!) !== ROCE_V2_PORT) return -1;
    off = udp + UDP_HEADER;
  } else if (type === ETHERTYPE_IPV6) {
    if (f[off + 6] !== IP_PROTO_UDP) return -1;
    const udp = off + GRH_OR_IPV6;
    if (((f[udp + 2]! << 8) | f[udp + 3]!) !== ROCE_V2_PORT) return -1;
    off = udp + UDP_HEADER;
  } else if (type === ETHERTYPE_ROCE_V1) {
    off += GRH_OR_IPV6;
  } else {
    return -1;
  }
  return off + BTH <= f.length ? off : -1;
}

/** Payload bytes of the RoCE packet whose BTH is at `bth` (headers, pad and ICRC excluded). */
export function payloadLength(f: Uint8Array, bth: number): number {
  const headerLength = OPCODE_HEADER_LENGTH[f[bth]!]!;
  if (headerLength === 0) return 0;
  const pad = (f[bth + 1]! >> 4) & 3;
  const n = f.length - bth - headerLength - pad - ICRC;
  return n > 0 ? n : 0;
}

/** The 24-bit PSN of the BTH at `bth`. */
export function bthPsn(f: Uint8Array, bth: number): number {
  return (f[bth + 9]! << 16) | (f[bth + 10]! << 8) | f[bth + 11]!;
}

/** The 24-bit destination QP of the BTH at `bth`. */
export function bthDestQp(f: Uint8Array, bth: number): number {
  return (f[bth + 5]! << 16) | (f[bth + 6]! << 8) | f[bth + 7]!;
}

/** What the transmit path's DMA model does for a frame of each BTH opcode (TX_DMA_CLASS). */
export const enum TxDma {
  /** Not a request, a read response or an atomic ACK (ACKs, NAKs, unknown opcodes): no DMA. */
  NONE = 0,
  /** A request opening a message (FIRST, ONLY): the WQE is fetched first. */
  REQUEST_FIRST = 1,
  /** A later request packet of a message: after the message's WQE. */
  REQUEST_LATER = 2,
  READ_RESPONSE = 3,
  ATOMIC_ACK = 4,
  /** Or-ed in: the opcode may carry payload (gathered by DMA). */
  PAYLOAD = 8,
}

/** TxDma per opcode byte: one load per frame instead of the opcode table's object. */
export const TX_DMA_CLASS: Uint8Array = Uint8Array.from({ length: 256 }, (_, code) => {
  const info = OPCODES[code];
  if (info === undefined) return TxDma.NONE;
  const payload = info.payload ? TxDma.PAYLOAD : 0;
  if (info.isRequest) {
    const first = info.position === Position.FIRST || info.position === Position.ONLY || info.position === Position.SINGLE;
    return (first ? TxDma.REQUEST_FIRST : TxDma.REQUEST_LATER) | payload;
  }
  if (info.kind === 'read-response') return TxDma.READ_RESPONSE | payload;
  if (info.kind === 'atomic-ack') return TxDma.ATOMIC_ACK | payload;
  return TxDma.NONE;
});
