/**
 * UD multicast: ibv_attach_mcast / ibv_detach_mcast. The provider attaches
 * a UD QP to the group of a multicast GID; the device delivers a UD message
 * sent to that GID with destination QPN 0xFFFFFF to every attached QP.
 */
import { errno } from '../../device/abi/constants.js';
import { isObj, objOps } from './dispatch.js';
import type { ibv_gid, ibv_qp } from './types.js';

/** 0 or an errno (EINVAL: not a UD QP or not a multicast GID; ENOMEM: the group limits). */
export function ibv_attach_mcast(qp: ibv_qp, gid: ibv_gid, lid: number): number {
  const o = objOps(qp);
  if (!o || !isObj(gid) || typeof lid !== 'number') return errno.EINVAL;
  return o.attach_mcast(qp, gid, lid);
}

/** 0 or an errno (EINVAL: the QP is not attached to the group). */
export function ibv_detach_mcast(qp: ibv_qp, gid: ibv_gid, lid: number): number {
  const o = objOps(qp);
  if (!o || !isObj(gid) || typeof lid !== 'number') return errno.EINVAL;
  return o.detach_mcast(qp, gid, lid);
}
