/**
 * ARP for Ethernet and IPv4 (RFC 826): request and reply.
 *
 *   Ethernet [802.1Q] (type 0x0806) | htype 1 | ptype 0x0800 | hlen 6 | plen 4 |
 *   op | sender MAC | sender IPv4 | target MAC | target IPv4 | zero pad to 60
 *
 * The decoder never throws and never reads outside the frame; it returns
 * views into the frame (copy what you keep).
 */
import { EtherType, ETH_MIN_FRAME, type EthernetHeader, ethHeaderLength, readEthernet, type VlanTag, writeEthernet } from './ethernet.js';
import { WireError } from './errors.js';

/** Bytes of the ARP body for Ethernet / IPv4. */
export const ARP_LENGTH = 28;
export const ARP_HTYPE_ETHERNET = 1;
export const ARP_PTYPE_IPV4 = 0x0800;

export const enum ArpOp {
  REQUEST = 1,
  REPLY = 2,
}

export const BROADCAST_MAC: Uint8Array = Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0xff, 0xff);
const ZERO_MAC = new Uint8Array(6);

export interface ArpPacket {
  /** ArpOp.REQUEST or ArpOp.REPLY. */
  op: number;
  senderMac: Uint8Array;
  senderIp: Uint8Array;
  targetMac: Uint8Array;
  targetIp: Uint8Array;
}

export interface ArpFrame {
  eth: EthernetHeader;
  arp: ArpPacket;
}

export type ArpDecodeResult = { ok: true; frame: ArpFrame } | { ok: false; error: WireError };

function need(a: Uint8Array, n: number, what: string): void {
  if (a.length < n) throw new WireError('WIRE_BAD_FIELD', `ARP: ${what} needs ${n} bytes, got ${a.length}`);
}

/** Writes the 28-byte ARP body at `off`; returns the offset after it. */
export function writeArp(buf: Uint8Array, off: number, a: ArpPacket): number {
  need(a.senderMac, 6, 'sender MAC');
  need(a.targetMac, 6, 'target MAC');
  need(a.senderIp, 4, 'sender IPv4');
  need(a.targetIp, 4, 'target IPv4');
  buf[off] = 0;
  buf[off + 1] = ARP_HTYPE_ETHERNET;
  buf[off + 2] = ARP_PTYPE_IPV4 >>> 8;
  buf[off + 3] = ARP_PTYPE_IPV4 & 0xff;
  buf[off + 4] = 6;
  buf[off + 5] = 4;
  buf[off + 6] = (a.op >>> 8) & 0xff;
  buf[off + 7] = a.op & 0xff;
  for (let i = 0; i < 6; i++) {
    buf[off + 8 + i] = a.senderMac[i]!;
    buf[off + 18 + i] = a.targetMac[i]!;
  }
  for (let i = 0; i < 4; i++) {
    buf[off + 14 + i] = a.senderIp[i]!;
    buf[off + 24 + i] = a.targetIp[i]!;
  }
  return off + ARP_LENGTH;
}

/**
 * Reads the ARP body at `off`. Only Ethernet/IPv4 ARP with opcode request or
 * reply is accepted; anything else is a typed error, never an exception.
 */
export function readArp(buf: Uint8Array, off: number): { ok: true; arp: ArpPacket } | { ok: false; error: WireError } {
  if (off < 0 || buf.length - off < ARP_LENGTH) {
    return { ok: false, error: new WireError('WIRE_TRUNCATED', `ARP needs ${ARP_LENGTH} bytes, ${Math.max(0, buf.length - off)} left`, off) };
  }
  const htype = (buf[off]! << 8) | buf[off + 1]!;
  if (htype !== ARP_HTYPE_ETHERNET) return { ok: false, error: new WireError('WIRE_BAD_FIELD', `ARP hardware type ${htype} is not Ethernet (1)`, off) };
  const ptype = (buf[off + 2]! << 8) | buf[off + 3]!;
  if (ptype !== ARP_PTYPE_IPV4) {
    return { ok: false, error: new WireError('WIRE_BAD_FIELD', `ARP protocol type 0x${ptype.toString(16).padStart(4, '0')} is not IPv4`, off + 2) };
  }
  if (buf[off + 4] !== 6 || buf[off + 5] !== 4) {
    return { ok: false, error: new WireError('WIRE_BAD_FIELD', `ARP address lengths ${buf[off + 4]}/${buf[off + 5]} are not 6/4`, off + 4) };
  }
  const op = (buf[off + 6]! << 8) | buf[off + 7]!;
  if (op !== ArpOp.REQUEST && op !== ArpOp.REPLY) {
    return { ok: false, error: new WireError('WIRE_BAD_FIELD', `ARP opcode ${op} is neither request (1) nor reply (2)`, off + 6) };
  }
  return {
    ok: true,
    arp: {
      op,
      senderMac: buf.subarray(off + 8, off + 14),
      senderIp: buf.subarray(off + 14, off + 18),
      targetMac: buf.subarray(off + 18, off + 24),
      targetIp: buf.subarray(off + 24, off + 28),
    },
  };
}

/** A whole ARP frame, padded with zeros to the 60-byte Ethernet minimum (no FCS). */
export function encodeArpFrame(eth: Omit<EthernetHeader, 'etherType'>, arp: ArpPacket): Uint8Array {
  need(eth.dst, 6, 'Ethernet destination');
  need(eth.src, 6, 'Ethernet source');
  const header: EthernetHeader = { dst: eth.dst, src: eth.src, vlan: eth.vlan, etherType: EtherType.ARP };
  const len = ethHeaderLength(header) + ARP_LENGTH;
  const buf = new Uint8Array(Math.max(len, ETH_MIN_FRAME));
  writeArp(buf, writeEthernet(buf, 0, header), arp);
  return buf;
}

/** Who has `targetIp`? Tell `senderIp`. Broadcast, target MAC zero (RFC 826). */
export function encodeArpRequest(senderMac: Uint8Array, senderIp: Uint8Array, targetIp: Uint8Array, vlan: VlanTag | null = null): Uint8Array {
  return encodeArpFrame({ dst: BROADCAST_MAC, src: senderMac, vlan }, { op: ArpOp.REQUEST, senderMac, senderIp, targetMac: ZERO_MAC, targetIp });
}

/** `senderIp` is at `senderMac`: a unicast reply to the requester. */
export function encodeArpReply(
  senderMac: Uint8Array,
  senderIp: Uint8Array,
  targetMac: Uint8Array,
  targetIp: Uint8Array,
  vlan: VlanTag | null = null,
): Uint8Array {
  return encodeArpFrame({ dst: targetMac, src: senderMac, vlan }, { op: ArpOp.REPLY, senderMac, senderIp, targetMac, targetIp });
}

/**
 * Decodes an Ethernet frame carrying ARP. Never throws, never over-reads;
 * trailing bytes (padding) are ignored. Header fields are views into `frame`.
 */
export function decodeArpFrame(frame: Uint8Array): ArpDecodeResult {
  const e = readEthernet(frame, 0);
  if (!e) return { ok: false, error: new WireError('WIRE_TRUNCATED', `Ethernet header needs 14 bytes (18 with 802.1Q), frame has ${frame.length}`, 0) };
  if (e.eth.etherType !== EtherType.ARP) {
    return {
      ok: false,
      error: new WireError('WIRE_BAD_FIELD', `ethertype 0x${e.eth.etherType.toString(16).padStart(4, '0')} is not ARP (0x0806)`, e.next - 2),
    };
  }
  const r = readArp(frame, e.next);
  if (!r.ok) return r;
  return { ok: true, frame: { eth: e.eth, arp: r.arp } };
}
