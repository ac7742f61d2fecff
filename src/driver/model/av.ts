/**
 * ibv_ah_attr ↔ the device's address vector (AV layout): for UD address
 * handles (encoded once, copied into every UD WQE) and for the primary and
 * alternate paths of MODIFY_QP / QUERY_QP (the qp-attr block's `ah*` and
 * `altAh*` fields). The destination MAC is resolved here when the driver
 * knows it (neigh.ts); otherwise it stays zero and the device's port
 * resolves it.
 */
import { errno, IBV_LINK_LAYER_ETHERNET } from '../../device/abi/constants.js';
import { AV } from '../../device/av.js';
import { encodeStruct } from '../../device/layout.js';
import { newAhAttr } from '../verbs/structs.js';
import type { ibv_ah_attr, ibv_context } from '../verbs/types.js';
import { ModelContext, model_neigh_source } from './context.js';
import { neighResolve } from './neigh.js';

const ZERO_MAC = new Uint8Array(6);

/** The AV fields of `ah` (without the prefix), or an errno. `portNum` is the port the AV leaves from. */
export function avValues(ctx: ModelContext, ah: ibv_ah_attr | undefined, portNum: number): Record<string, unknown> | number {
  if (!ah || typeof ah !== 'object') return errno.EINVAL;
  const grh = ah.grh;
  const dgid = grh?.dgid?.raw;
  if (ah.is_global && !(dgid instanceof Uint8Array && dgid.length === 16)) return errno.EINVAL;
  const gid = dgid instanceof Uint8Array && dgid.length === 16 ? dgid : new Uint8Array(16);
  // A destination the driver cannot resolve keeps dmac = 0: the device's
  // port then resolves it itself (ARP / neighbour discovery) before sending.
  let dmac: Uint8Array = ZERO_MAC;
  const port = typeof portNum === 'number' ? ctx.ports[portNum - 1] : undefined;
  if (port && port.linkLayer === IBV_LINK_LAYER_ETHERNET && ah.is_global) {
    dmac = neighResolve(model_neigh_source(ctx, portNum), portNum, gid) ?? ZERO_MAC;
  }
  // A field left out is 0 (a zeroed struct); any other non-number (null, NaN, a bigint)
  // goes on to encodeStruct, whose range check refuses it.
  const z = (x: unknown) => (x === undefined ? 0 : x);
  return {
    dgid: gid,
    dmac,
    dlid: z(ah.dlid),
    flowLabel: z(grh?.flow_label),
    sl: z(ah.sl),
    trafficClass: z(grh?.traffic_class),
    hopLimit: z(grh?.hop_limit),
    sgidIndex: z(grh?.sgid_index),
    portNum: z(ah.port_num),
    staticRate: z(ah.static_rate),
    srcPathBits: z(ah.src_path_bits),
    isGlobal: ah.is_global ? 1 : 0,
  };
}

/** Prefix AV field names: ('ah', {dgid}) → {ahDgid}. */
export function prefixed(prefix: string, v: Record<string, unknown>): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (const k in v) o[prefix + k[0]!.toUpperCase() + k.slice(1)] = v[k];
  return o;
}

/** Encode AV values into a fresh 40-byte address vector; an errno if a value does not fit its field. */
export function encodeAv(values: Record<string, unknown>): Uint8Array | number {
  const b = new Uint8Array(AV.size);
  try {
    encodeStruct(AV, new DataView(b.buffer), 0, values);
  } catch {
    return errno.EINVAL;
  }
  return b;
}

/** An ibv_ah_attr from the `prefix` AV fields of a decoded QUERY_QP output, filled into `into`. */
export function ahAttrFrom(o: Record<string, unknown>, prefix: string, into: ibv_ah_attr | undefined): ibv_ah_attr {
  const ah = into ?? newAhAttr();
  const g = (k: string) => o[prefix + k] as number;
  const dgid = o[prefix + 'Dgid'] as Uint8Array;
  if (!ah.grh) ah.grh = newAhAttr().grh;
  if (ah.grh.dgid?.raw instanceof Uint8Array && ah.grh.dgid.raw.length === 16) ah.grh.dgid.raw.set(dgid);
  else ah.grh.dgid = { raw: dgid.slice() };
  ah.grh.flow_label = g('FlowLabel');
  ah.grh.sgid_index = g('SgidIndex');
  ah.grh.hop_limit = g('HopLimit');
  ah.grh.traffic_class = g('TrafficClass');
  ah.dlid = g('Dlid');
  ah.sl = g('Sl');
  ah.src_path_bits = g('SrcPathBits');
  ah.static_rate = g('StaticRate');
  ah.is_global = g('IsGlobal');
  ah.port_num = g('PortNum');
  return ah;
}

/**
 * ibv_resolve_eth_l2_from_gid's device part (verbs/eth-l2.ts checked the
 * arguments and the source GID): the next hop of the AV's destination GID
 * out of its port, by the same lookups an address handle's MAC takes.
 */
export function model_resolve_eth_l2(ibctx: ibv_context, attr: ibv_ah_attr, mac: Uint8Array, vid: { vid: number }): number {
  const ctx = ibctx as ModelContext;
  if (!(ctx instanceof ModelContext) || ctx.closed) return -errno.EINVAL;
  const portNum = attr.port_num;
  const port = typeof portNum === 'number' ? ctx.ports[portNum - 1] : undefined;
  if (!port || port.linkLayer !== IBV_LINK_LAYER_ETHERNET) return -errno.EINVAL;
  const dgid = attr.grh?.dgid?.raw;
  if (!(dgid instanceof Uint8Array) || dgid.length !== 16) return -errno.EINVAL;
  const next = neighResolve(model_neigh_source(ctx, portNum), portNum, dgid);
  if (!next) return -errno.EHOSTUNREACH;
  mac.set(next.subarray(0, 6));
  vid.vid = 0xffff;
  return 0;
}
