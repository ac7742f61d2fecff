/**
 * XRC domains: ibv_open_xrcd and ibv_close_xrcd. Opens of the same file
 * (its inode) on one device share a domain; fd -1 gives a private one.
 */
import { errno } from '../../device/abi/constants.js';
import { objOps, ops } from './dispatch.js';
import type { ibv_context, ibv_qp, ibv_qp_open_attr, ibv_xrcd, ibv_xrcd_init_attr } from './types.js';

/**
 * ibv_open_xrcd(context, xrcd_init_attr): the domain of `fd`'s file
 * (created with O_CREAT; O_EXCL refuses an existing one) or, for fd -1, a
 * new private domain. Throws a VerbsError: EINVAL (comp_mask without FD and
 * OFLAGS, O_EXCL on a file with a domain), EOPNOTSUPP (unknown comp_mask
 * bits), EBADF (fd not open), EAGAIN (no domain and no O_CREAT), ENOMEM.
 */
export function ibv_open_xrcd(context: ibv_context, xrcd_init_attr: ibv_xrcd_init_attr): ibv_xrcd {
  return ops(context, 'ibv_open_xrcd').open_xrcd(context, xrcd_init_attr);
}

/** ibv_close_xrcd: 0; EINVAL for something that is not an open XRC domain; EBUSY while its last open still has XRC SRQs or receive QPs. */
export function ibv_close_xrcd(xrcd: ibv_xrcd): number {
  const o = objOps(xrcd);
  return o ? o.close_xrcd(xrcd) : errno.EINVAL;
}

/**
 * ibv_open_qp(context, qp_open_attr): another handle on the XRC receive QP
 * `qp_num` of the XRC domain `xrcd` (comp_mask NUM | XRCD | TYPE, qp_type
 * IBV_QPT_XRC_RECV). The QP lives until its last handle is destroyed.
 * Throws a VerbsError: EINVAL (a mask without those bits, another type, no
 * such receive QP in that domain), EOPNOTSUPP (unknown comp_mask bits).
 */
export function ibv_open_qp(context: ibv_context, qp_open_attr: ibv_qp_open_attr): ibv_qp {
  return ops(context, 'ibv_open_qp').open_qp(context, qp_open_attr);
}
