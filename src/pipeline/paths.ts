/** The connected path of an RC/UC QP, and UD per-WQE paths, as packet templates. */
import { roceUdpSport, rxeInitialUdpSport } from '../wire/index.js';
import type { NicCore } from './core.js';
import { PathTemplate, pathFor } from './packet-builder.js';
import type { DeviceProfile } from './profiles.js';
import type { QpCtx } from './qp-ctx.js';
import type { AddressVector } from './work-requests.js';

/**
 * The QP's connected path with its MAC resolved, or null while the port is
 * still resolving the neighbour (the caller holds its packet) or the AV is
 * unusable (then `bad` is set).
 */
export function connectedPath(nic: NicCore, q: QpCtx): PathTemplate | null {
  if (!q.path) {
    const port = nic.env.caps.ports[q.portNum - 1];
    if (!port || !q.av) return null;
    const path = pathFor(port, q.av, nic.port(q.portNum).ib);
    if (!path) return null;
    q.path = new PathTemplate(
      path,
      q.av,
      nic.port(q.portNum).mac,
      q.destQpn,
      ipFields(nic.env.profile, q.av, roceUdpSport(q.av.flowLabel, q.qpn, q.destQpn)),
      ect(nic),
      nic.env.deferIcrc === true,
    );
  }
  return q.path.resolveMac(nic.port(q.portNum)) ? q.path : null;
}

/**
 * The IP hop limit a profile sends: the AV's GRH hop_limit (0 read as 64,
 * the Linux default route's), or the profile's fixed value.
 */
function ipFields(p: DeviceProfile, av: AddressVector, udpSrcPort: number): { hopLimit: number; udpSrcPort: number } {
  return { hopLimit: p.ipHopLimit ?? (av.hopLimit || 64), udpSrcPort };
}

/** Packets go out ECN-capable when congestion control has ECN on and the profile lets it mark (profiles.ts). */
const ect = (nic: NicCore): boolean => nic.cc.ecn && nic.env.profile.ectWithCongestionControl;

/** A UD datagram's UDP source port: from the AV's flow label (rdma_get_udp_sport), or rxe's per-QP hash. */
function udSourcePort(p: DeviceProfile, qpn: number, av: AddressVector): number {
  return p.udSourcePort === 'rxe-qpn-hash' ? rxeInitialUdpSport(qpn) : roceUdpSport(av.flowLabel, qpn, 0);
}

/** UD: a template per destination, cached by the AV's bytes. */
export function udPath(nic: NicCore, q: QpCtx, av: AddressVector, cache: Map<string, PathTemplate>): PathTemplate | null {
  const key = `${av.portNum}/${av.sgidIndex}/${av.dgid.join('.')}/${av.dmac.join('.')}/${av.trafficClass}/${av.hopLimit}/${av.flowLabel}/${av.dlid}/${av.sl}/${av.srcPathBits}/${av.isGlobal}`;
  let t = cache.get(key);
  if (!t) {
    const portNum = av.portNum || q.portNum;
    const port = nic.env.caps.ports[portNum - 1];
    if (!port) return null;
    const path = pathFor(port, av, nic.port(portNum).ib);
    if (!path) return null;
    t = new PathTemplate(
      path,
      av,
      nic.port(portNum).mac,
      0,
      ipFields(nic.env.profile, av, udSourcePort(nic.env.profile, q.qpn, av)),
      ect(nic),
      nic.env.deferIcrc === true,
    );
    if (cache.size > 256) cache.clear();
    cache.set(key, t);
  }
  return t.resolveMac(nic.port(av.portNum || q.portNum)) ? t : null;
}

/** Byte swap: ImmDt and IETH travel in the memory order of the WQE/CQE (little-endian numbers here). */
export function bswap32(v: number): number {
  return (((v & 0xff) << 24) | ((v & 0xff00) << 8) | ((v >>> 8) & 0xff00) | (v >>> 24)) >>> 0;
}
