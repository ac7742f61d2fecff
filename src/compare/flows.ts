/**
 * A capture cut into flows: one direction of one QP, requests or responses
 * (an RC QP receives both: its peer's requests and the answers to its own).
 * Within a flow every packet gets a PSN relative to the flow's first (two
 * runs start at different PSNs), its transmission count (1 = first, 2 =
 * the first retransmission, …) and, for a retransmission, the time since
 * that PSN last went out: the timer that fired.
 */
import { OPCODES, opcodeName, type Packet, roceUdpSport, rxeInitialUdpSport } from '../wire/index.js';
import type { CapturedPacket } from './types.js';

const PSN_MASK = 0xffffff;
const relPsn = (psn: number, first: number): number => (psn - first) & PSN_MASK;

export type FlowClass = 'requests' | 'responses';

export interface FlowPacket {
  readonly index: number;
  readonly ns: number;
  readonly opcode: string;
  readonly psn: number;
  readonly relPsn: number;
  /** 1 for the first time this opcode and PSN appear in the flow. */
  readonly transmission: number;
  /** Time since the previous transmission of the same opcode and PSN; null on the first. */
  readonly sincePreviousNs: number | null;
  /** The previous packet of the flow was not a retransmission: this one starts a retry. */
  readonly startsRetry: boolean;
  /**
   * A retry the peer asked for: a NAK (PSN sequence error) came back between
   * the previous transmission and this one. Its wait is a round trip, not
   * a timer, so it is not compared as one.
   */
  nakDriven: boolean;
  /** The UDP source port as sent (fields.udpSrcPort says which rule gave it). */
  readonly udpSrcPortRaw: number | null;
  fields: PacketFields;
}

export interface PacketFields {
  readonly opcode: string;
  readonly ackReq: boolean;
  readonly solicited: boolean;
  /** AETH syndrome (ACK, NAK, RNR NAK); null without an AETH. */
  readonly syndrome: number | null;
  readonly msn: number | null;
  /** Payload bytes. */
  readonly length: number;
  /** RETH DMA length; null without a RETH. */
  readonly dmaLength: number | null;
  /**
   * Which rule gave the UDP source port: `qpn-pair` (rdma_get_udp_sport of
   * the connected QPN pair), `flow-label` (UD, rdma_get_udp_sport with no
   * flow label), `rxe-qpn-hash` (UD, rxe's per-QP hash); else the port in
   * hex. The QPNs differ between runs, so the rule is what compares.
   */
  readonly udpSrcPort: string | null;
  /** IPv4 TTL or IPv6 hop limit. */
  readonly ttl: number | null;
  readonly ecn: number | null;
  readonly dscp: number | null;
}

export interface Flow {
  /** `requests 192.0.2.1 → 192.0.2.2 QP 0x000011`. */
  readonly name: string;
  readonly cls: FlowClass;
  readonly src: string;
  readonly dst: string;
  readonly destQp: number;
  /** UD (DETH) traffic: its source port is a profile choice. */
  readonly ud: boolean;
  readonly firstPsn: number;
  readonly firstIndex: number;
  readonly packets: FlowPacket[];
}

function address(p: Packet, src: boolean): string {
  if (p.ipv4) return Array.from(src ? p.ipv4.src : p.ipv4.dst).join('.');
  if (p.ipv6) {
    const b = src ? p.ipv6.src : p.ipv6.dst;
    const words: string[] = [];
    for (let i = 0; i < 16; i += 2) words.push(((b[i]! << 8) | b[i + 1]!).toString(16));
    return words.join(':');
  }
  return 'ib';
}

function classOf(opcode: number): FlowClass {
  const k = OPCODES[opcode]?.kind;
  return k === 'ack' || k === 'read-response' || k === 'atomic-ack' ? 'responses' : 'requests';
}

export function fieldsOf(p: Packet): PacketFields {
  return {
    opcode: opcodeName(p.bth.opcode),
    ackReq: p.bth.ackReq !== 0,
    solicited: p.bth.se !== 0,
    syndrome: p.aeth ? p.aeth.syndrome : null,
    msn: p.aeth ? p.aeth.msn : null,
    length: p.payload.length,
    dmaLength: p.reth ? p.reth.dmaLength : null,
    udpSrcPort: p.udp ? `0x${p.udp.srcPort.toString(16)}` : null,
    ttl: p.ipv4 ? p.ipv4.ttl : p.ipv6 ? p.ipv6.hopLimit : null,
    ecn: p.ipv4 ? p.ipv4.ecn : p.ipv6 ? p.ipv6.trafficClass & 3 : null,
    dscp: p.ipv4 ? p.ipv4.dscp : p.ipv6 ? p.ipv6.trafficClass >>> 2 : null,
  };
}

/** The flows of a capture, in the order their first packet appears. CNPs (no PSN sequence) are left out. */
export function flowsOf(packets: readonly CapturedPacket[]): Flow[] {
  const byKey = new Map<string, Flow & { seen: Map<string, { n: number; ns: number }> }>();
  const flows: (Flow & { seen: Map<string, { n: number; ns: number }> })[] = [];
  for (const c of packets) {
    const p = c.packet;
    if (OPCODES[p.bth.opcode]?.kind === 'cnp') continue;
    const cls = classOf(p.bth.opcode);
    const key = `${cls}|${address(p, true)}|${address(p, false)}|${p.bth.destQp}`;
    let f = byKey.get(key);
    if (!f) {
      const qp = `0x${p.bth.destQp.toString(16).padStart(6, '0')}`;
      f = {
        name: `${cls} ${address(p, true)} → ${address(p, false)} QP ${qp}`,
        cls,
        src: address(p, true),
        dst: address(p, false),
        destQp: p.bth.destQp,
        ud: p.deth !== null,
        firstPsn: p.bth.psn,
        firstIndex: c.index,
        packets: [],
        seen: new Map(),
      };
      byKey.set(key, f);
      flows.push(f);
    }
    const fields = fieldsOf(p);
    const id = `${fields.opcode}:${p.bth.psn}`;
    const before = f.seen.get(id);
    const transmission = (before?.n ?? 0) + 1;
    f.seen.set(id, { n: transmission, ns: c.ns });
    const prev = f.packets[f.packets.length - 1];
    f.packets.push({
      index: c.index,
      ns: c.ns,
      opcode: fields.opcode,
      psn: p.bth.psn,
      relPsn: relPsn(p.bth.psn, f.firstPsn),
      transmission,
      sincePreviousNs: before ? c.ns - before.ns : null,
      startsRetry: transmission > 1 && (prev === undefined || prev.transmission === 1),
      udpSrcPortRaw: p.udp ? p.udp.srcPort : null,
      nakDriven: false,
      fields: { ...fields, udpSrcPort: udRule(p) ?? fields.udpSrcPort },
    });
  }
  const out = flows.map(({ seen: _, ...f }) => f);
  for (const f of out) {
    if (f.ud) continue;
    const back = reverseOf(f, out);
    if (back) {
      nameConnectedPorts(f, back);
      markNakDriven(f, back);
    }
  }
  return out;
}

/** A UD datagram's source-port rule: its source QPN is in the DETH. */
function udRule(p: Packet): string | undefined {
  if (!p.udp || !p.deth) return undefined;
  if (p.udp.srcPort === rxeInitialUdpSport(p.deth.srcQp)) return 'rxe-qpn-hash';
  if (p.udp.srcPort === roceUdpSport(0, p.deth.srcQp, 0)) return 'flow-label';
  return undefined;
}

/**
 * The flow coming back on the same connection: the reverse addresses, the
 * other class, the same symmetric UDP port (rdma_get_udp_sport).
 */
function reverseOf(f: Flow, all: readonly Flow[]): Flow | undefined {
  const port = f.packets[0]?.udpSrcPortRaw;
  if (port === null || port === undefined) return undefined;
  return all.find((g) => !g.ud && g.cls !== f.cls && g.src === f.dst && g.dst === f.src && g.packets[0]?.udpSrcPortRaw === port);
}

/** Retries of a request flow that follow a NAK PSN sequence error of its response flow. */
function markNakDriven(f: Flow, back: Flow): void {
  if (f.cls !== 'requests') return;
  const naks = back.packets.filter((p) => p.fields.syndrome !== null && p.fields.syndrome >>> 5 === 3).map((p) => p.ns);
  if (naks.length === 0) return;
  for (const p of f.packets) {
    if (p.sincePreviousNs === null) continue;
    const from = p.ns - p.sincePreviousNs;
    p.nakDriven = naks.some((t) => t >= from && t <= p.ns);
  }
}

/** A connected flow's ports: its source QPN is the destination QP of the flow coming back. */
function nameConnectedPorts(f: Flow, back: Flow): void {
  const pair = roceUdpSport(0, back.destQp, f.destQp);
  for (const p of f.packets) if (p.udpSrcPortRaw === pair) p.fields = { ...p.fields, udpSrcPort: 'qpn-pair' };
}

/** Retransmitted packets (transmission > 1) over all flows. */
export function retransmissions(flows: readonly Flow[]): number {
  let n = 0;
  for (const f of flows) for (const p of f.packets) if (p.transmission > 1) n++;
  return n;
}
