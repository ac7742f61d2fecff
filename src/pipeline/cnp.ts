/**
 * The notification point's CNP: a RoCE v2 packet, BTH opcode 0x81, back to
 * where a CE-marked packet came from (addresses swapped), to the QP that
 * sent it, in the shape a ConnectX sends (SPEC-DIGEST §1.7): BECN 1, PSN
 * 0, P_Key 0xFFFF, 16 zero reserved bytes, the ICRC; UDP source port 0;
 * DSCP `cnp_dscp`, ECT(0) when the device marks ECN.
 */
import { Ecn, encodePacket, newPacket, type Packet } from '../wire/index.js';

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

/** The IP ECN field of a decoded RoCE v2 packet (Not-ECT for other framings). */
export function ecnOf(p: Packet): number {
  if (p.ipv4 !== null) return p.ipv4.ecn;
  if (p.ipv6 !== null) return p.ipv6.trafficClass & 3;
  return Ecn.NOT_ECT;
}
