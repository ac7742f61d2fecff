/**
 * The notification point's CNP: a RoCE v2 packet, BTH opcode 0x81, back to
 * where a CE-marked packet came from (addresses swapped), to the QP that
 * sent it, in the shape a ConnectX sends (SPEC-DIGEST §1.7): BECN 1, PSN
 * 0, P_Key 0xFFFF, 16 zero reserved bytes, the ICRC; UDP source port 0;
 * DSCP `cnp_dscp`, ECT(0) when the device marks ECN.
 */
import { Ecn, encodePacket, internetChecksum, markIcrcPending, newPacket, type Packet } from '../wire/index.js';
import { acquireFrame } from './packet-builder.js';

/** Its ICRC left pending for the runtime to seal (NicEnv.deferIcrc, wire/lazy-icrc.ts). */
const DEFERRED = { deferIcrc: true } as const;

/**
 * The CNP answering the CE-marked packet `rx` (read now: a reused decode), from `srcMac` to QP `destQp`.
 * `deferIcrc`: the runtime seals frames before anything reads them (NicEnv.deferIcrc).
 */
export function buildCnp(rx: Packet, srcMac: Uint8Array, destQp: number, dscp: number, ect: boolean, ipId: number, deferIcrc = false): Uint8Array {
  const v6 = rx.ipv6 !== null;
  const p = newPacket('roce-v2', 0x81, {
    ipVersion: v6 ? 6 : 4,
    srcMac,
    dstMac: rx.eth!.src.slice(),
    srcIp: (v6 ? rx.ipv6!.dst : rx.ipv4!.dst).slice(),
    dstIp: (v6 ? rx.ipv6!.src : rx.ipv4!.src).slice(),
    dscp,
    ecn: ect ? Ecn.ECT0 : Ecn.NOT_ECT,
    udpSrcPort: 0,
    destQp,
    ipId,
    becn: 1,
  });
  return deferIcrc ? encodePacket(p, undefined, 0, DEFERRED) : encodePacket(p);
}

/** A RoCE v2 / IPv4 CNP's layout: Ethernet, a 20-byte IPv4 header, UDP, BTH, 16 reserved bytes, the ICRC. */
const IP_OFF = 14;
const BTH_OFF = IP_OFF + 20 + 8;
const ICRC_OFF = BTH_OFF + 12 + 16;
const CNP_V4_BYTES = ICRC_OFF + 4;

/**
 * buildCnp for one NIC, for the frames it defers the ICRC of (the
 * simulator's): an IPv4 CNP is a copy of the last one the same local QP
 * sent, its IP identification and header checksum patched, when every
 * other field (addresses, destination QP, DSCP, ECN) matches; the encoder runs only for a
 * QP's first CNP or when a field changed. Same bytes as buildCnp
 * (cnp.test.ts). An incast sends thousands of CNPs; the encoder's packet
 * objects made them the device model's largest cost there.
 */
export class CnpBuilder {
  /** Per local QP number, its last IPv4 CNP (no mark, ICRC field zero). */
  readonly #last = new Map<number, Uint8Array>();
  #encoded = 0;

  /** CNPs that went through the encoder (the rest were patched copies). */
  get encoded(): number {
    return this.#encoded;
  }

  /** buildCnp(rx, srcMac, ...) for a packet that reached local QP `qpn`. */
  build(qpn: number, rx: Packet, srcMac: Uint8Array, destQp: number, dscp: number, ect: boolean, ipId: number, deferIcrc: boolean): Uint8Array {
    this.#encoded++;
    if (!deferIcrc || rx.ipv4 === null || rx.eth === null) return buildCnp(rx, srcMac, destQp, dscp, ect, ipId, deferIcrc);
    const t = this.#last.get(qpn);
    if (t !== undefined && sameFields(t, rx, srcMac, destQp, dscp, ect)) {
      // A pooled frame like every other the NIC sends (the receiver recycles it): no allocation per CNP.
      const f = acquireFrame(t.length);
      f.set(t);
      f[IP_OFF + 4] = (ipId >>> 8) & 0xff;
      f[IP_OFF + 5] = ipId & 0xff;
      f[IP_OFF + 10] = 0;
      f[IP_OFF + 11] = 0;
      const sum = internetChecksum(f, IP_OFF, 20);
      f[IP_OFF + 10] = sum >>> 8;
      f[IP_OFF + 11] = sum & 0xff;
      markIcrcPending(f, false, IP_OFF, BTH_OFF, ICRC_OFF);
      this.#encoded--;
      return f;
    }
    const f = buildCnp(rx, srcMac, destQp, dscp, ect, ipId, true);
    // A copy carries no mark (wire/lazy-icrc.ts) and keeps its zero ICRC field.
    if (f.length === CNP_V4_BYTES && (f[IP_OFF]! & 0x0f) === 5) this.#last.set(qpn, f.slice());
    return f;
  }
}

/** Whether CNP `t` has the addresses, destination QP, DSCP and ECN of a CNP answering `rx` (IPv4). */
function sameFields(t: Uint8Array, rx: Packet, srcMac: Uint8Array, destQp: number, dscp: number, ect: boolean): boolean {
  const peerMac = rx.eth!.src;
  const ip = rx.ipv4!;
  for (let i = 0; i < 6; i++) if (t[i] !== peerMac[i] || t[6 + i] !== srcMac[i]) return false;
  for (let i = 0; i < 4; i++) if (t[IP_OFF + 12 + i] !== ip.dst[i] || t[IP_OFF + 16 + i] !== ip.src[i]) return false;
  if (((t[BTH_OFF + 5]! << 16) | (t[BTH_OFF + 6]! << 8) | t[BTH_OFF + 7]!) !== (destQp & 0xffffff)) return false;
  return t[IP_OFF + 1] === (((dscp & 0x3f) << 2) | (ect ? Ecn.ECT0 : Ecn.NOT_ECT));
}

/** The IP ECN field of a decoded RoCE v2 packet (Not-ECT for other framings). */
export function ecnOf(p: Packet): number {
  if (p.ipv4 !== null) return p.ipv4.ecn;
  if (p.ipv6 !== null) return p.ipv6.trafficClass & 3;
  return Ecn.NOT_ECT;
}
