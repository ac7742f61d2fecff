/**
 * RoCE layer-2 helpers of libibverbs: the UDP source port a flow label
 * gives (ibv_flow_label_to_udp_sport, the rule the device itself uses for
 * its RoCE v2 frames: wire/udp.ts) and the next hop's MAC and VLAN for an
 * address vector (ibv_resolve_eth_l2_from_gid).
 */
import { errno } from '../../device/abi/constants.js';
import { flowLabelToUdpSport } from '../../wire/udp.js';
import { isObj, opsOrNull } from './dispatch.js';
import type { ibv_ah_attr, ibv_context } from './types.js';
import { ibv_query_gid } from './verbs.js';

/** The UDP source port for a 20-bit flow label (libibverbs' static inline; bits above 20 are ignored). */
export function ibv_flow_label_to_udp_sport(fl: number): number {
  return flowLabelToUdpSport(fl >>> 0);
}

/**
 * C: `int ibv_resolve_eth_l2_from_gid(ctx, attr, uint8_t eth_mac[6], uint16_t *vid)`.
 * 0 with the next hop's MAC in `eth_mac` and the VLAN id in `vid.vid`
 * (0xffff: none; the model has no VLANs), else a negative errno as
 * libibverbs returns it: -EINVAL for bad arguments or an unusable GID,
 * -EHOSTUNREACH when the destination does not resolve; the result of
 * ibv_query_gid (-1, errno set) when the source GID index is wrong.
 */
export function ibv_resolve_eth_l2_from_gid(context: ibv_context, attr: ibv_ah_attr, eth_mac: Uint8Array, vid: { vid: number }): number {
  const o = opsOrNull(context);
  if (!o || !isObj(attr) || !isObj(attr.grh) || !(eth_mac instanceof Uint8Array) || eth_mac.length < 6 || !isObj(vid)) return -errno.EINVAL;
  if (!o.resolve_eth_l2) return -errno.ENOSYS; // as libibverbs built without neighbour resolution
  // As libibverbs: the source GID first (its failure is returned as it is: -1, errno set).
  const rc = ibv_query_gid(context, attr.port_num, attr.grh.sgid_index, { raw: new Uint8Array(16) });
  if (rc !== 0) return rc;
  return o.resolve_eth_l2(context, attr, eth_mac, vid);
}
