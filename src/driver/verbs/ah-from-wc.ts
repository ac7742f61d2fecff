/**
 * ibv_init_ah_from_wc / ibv_create_ah_from_wc: the address handle that
 * answers a received UD message, from its work completion and the 40 bytes
 * at the start of its receive buffer.
 *
 * The 40 bytes are an IB/RoCE v1 GRH or, for RoCE v2 over IPv4, 20 zero
 * bytes then the IPv4 header (Linux's layout, which the model writes). The
 * reply goes to the sender's GID (the GRH's SGID, or ::ffff:<IPv4 source>),
 * from the local GID the message was sent to (its DGID), preferring a RoCE
 * v2 entry; traffic_class and flow_label are the message's, hop_limit 0xFF,
 * as libibverbs sets them. No local GID equal to the DGID: EINVAL.
 */
import { errno, IBV_GID_TYPE_ROCE_V2, IBV_WC_GRH } from '../../device/abi/constants.js';
import { isObj, objOps, opsOrNull } from './dispatch.js';
import { VerbsError } from './errno-error.js';
import { newAhAttr, newGidEntry, newPortAttr } from './structs.js';
import type { ibv_ah, ibv_ah_attr, ibv_context, ibv_pd, ibv_wc } from './types.js';

const GRH_BYTES = 40;

/** sgid, dgid, traffic class and flow label of the 40 GRH bytes. */
function parseGrh(b: Uint8Array): { sgid: Uint8Array; dgid: Uint8Array; tclass: number; flow: number } {
  const ipv4 = b.subarray(0, 20).every((x) => x === 0) && b[20]! >> 4 === 4;
  if (ipv4) {
    const mapped = (at: number) => Uint8Array.of(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, b[at]!, b[at + 1]!, b[at + 2]!, b[at + 3]!);
    return { sgid: mapped(20 + 12), dgid: mapped(20 + 16), tclass: b[21]!, flow: 0 };
  }
  const vtf = ((b[0]! << 24) | (b[1]! << 16) | (b[2]! << 8) | b[3]!) >>> 0;
  return { sgid: b.slice(8, 24), dgid: b.slice(24, 40), tclass: (vtf >>> 20) & 0xff, flow: vtf & 0xfffff };
}

/** 0 with `ah_attr` filled, or an errno. `grh`: the first 40 bytes of the receive buffer. */
export function ibv_init_ah_from_wc(context: ibv_context, port_num: number, wc: ibv_wc, grh: Uint8Array, ah_attr: ibv_ah_attr): number {
  const o = opsOrNull(context);
  if (!o || !isObj(wc) || !isObj(ah_attr) || typeof port_num !== 'number') return errno.EINVAL;
  Object.assign(ah_attr, newAhAttr());
  ah_attr.port_num = port_num;
  ah_attr.dlid = wc.slid;
  ah_attr.sl = wc.sl;
  ah_attr.src_path_bits = wc.dlid_path_bits;
  if (!(wc.wc_flags & IBV_WC_GRH)) return 0;
  if (!(grh instanceof Uint8Array) || grh.length < GRH_BYTES) return errno.EINVAL;
  const g = parseGrh(grh);
  const port = newPortAttr();
  const rc = o.query_port(context, port_num, port);
  if (rc) return rc;
  let index = -1;
  for (let i = 0; i < port.gid_tbl_len; i++) {
    const e = newGidEntry();
    if (o.query_gid_ex(context, port_num, i, e, 0) !== 0) continue;
    if (!e.gid.raw.every((x, k) => x === g.dgid[k])) continue;
    if (index < 0 || e.gid_type === IBV_GID_TYPE_ROCE_V2) index = i;
    if (e.gid_type === IBV_GID_TYPE_ROCE_V2) break;
  }
  if (index < 0) return errno.EINVAL;
  ah_attr.is_global = 1;
  ah_attr.grh.dgid = { raw: g.sgid };
  ah_attr.grh.sgid_index = index;
  ah_attr.grh.flow_label = g.flow;
  ah_attr.grh.traffic_class = g.tclass;
  ah_attr.grh.hop_limit = 0xff;
  return 0;
}

/** The reply AH (ibv_init_ah_from_wc, then ibv_create_ah); throws as ibv_create_ah does. */
export function ibv_create_ah_from_wc(pd: ibv_pd, wc: ibv_wc, grh: Uint8Array, port_num: number): ibv_ah {
  const o = objOps(pd);
  if (!o) throw new VerbsError(errno.EINVAL, 'ibv_create_ah_from_wc: not an ibv_pd');
  const attr = newAhAttr();
  const rc = ibv_init_ah_from_wc(pd.context, port_num, wc, grh, attr);
  if (rc)
    throw new VerbsError(
      rc,
      `ibv_create_ah_from_wc: no address for the completion (${rc === errno.EINVAL ? 'no GRH bytes, or no local GID is its destination' : 'port query failed'})`,
    );
  return o.create_ah(pd, attr);
}
