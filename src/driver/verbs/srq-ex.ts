/**
 * ibv_create_srq_ex and ibv_get_srq_num. A basic SRQ (no type, or
 * IBV_SRQT_BASIC) with a PD is the SRQ of ibv_create_srq. An XRC SRQ
 * (IBV_SRQT_XRC) needs IBV_SRQ_INIT_ATTR_PD, _XRCD and _CQ, as
 * ibv_cmd_create_srq_ex does (EINVAL without them); its receives complete
 * on that CQ. Tag-matching SRQs are not modelled (EOPNOTSUPP).
 * ibv_get_srq_num answers for XRC SRQs only (EOPNOTSUPP for the others, as
 * libibverbs).
 */
import {
  errno,
  IBV_SRQ_INIT_ATTR_CQ,
  IBV_SRQ_INIT_ATTR_PD,
  IBV_SRQ_INIT_ATTR_RESERVED,
  IBV_SRQ_INIT_ATTR_TM,
  IBV_SRQ_INIT_ATTR_TYPE,
  IBV_SRQ_INIT_ATTR_XRCD,
  IBV_SRQT_BASIC,
  IBV_SRQT_TM,
  IBV_SRQT_XRC,
} from '../../device/abi/constants.js';
import { isObj, objOps, ops } from './dispatch.js';
import { VerbsError } from './errno-error.js';
import type { ibv_context, ibv_srq, ibv_srq_init_attr_ex } from './types.js';

export function ibv_create_srq_ex(context: ibv_context, attr: ibv_srq_init_attr_ex): ibv_srq {
  const o = ops(context, 'ibv_create_srq_ex');
  const fail = (why: string, n: number = errno.EINVAL): never => {
    throw new VerbsError(n, `ibv_create_srq_ex: ${why}`);
  };
  if (!isObj(attr)) fail('no attributes');
  const mask = attr.comp_mask;
  if (typeof mask !== 'number' || mask >>> 0 !== mask || mask & ~(IBV_SRQ_INIT_ATTR_RESERVED - 1)) fail(`bad comp_mask ${String(mask)}`);
  const type = mask & IBV_SRQ_INIT_ATTR_TYPE ? attr.srq_type : IBV_SRQT_BASIC;
  if (type === IBV_SRQT_TM || mask & IBV_SRQ_INIT_ATTR_TM) fail('tag-matching SRQs are not modelled', errno.EOPNOTSUPP);
  if (type !== IBV_SRQT_BASIC && type !== IBV_SRQT_XRC) fail(`unknown srq_type ${String(type)}`);
  if (!(mask & IBV_SRQ_INIT_ATTR_PD) || !isObj(attr.pd)) fail('an SRQ needs IBV_SRQ_INIT_ATTR_PD and a pd');
  if (attr.pd!.context !== context) fail('the pd is not of this context');
  const init = { srq_context: attr.srq_context, attr: attr.attr };
  if (type === IBV_SRQT_BASIC) return o.create_srq(attr.pd!, init);
  if (!(mask & IBV_SRQ_INIT_ATTR_XRCD) || !isObj(attr.xrcd)) fail('an XRC SRQ needs IBV_SRQ_INIT_ATTR_XRCD and an xrcd');
  if (!(mask & IBV_SRQ_INIT_ATTR_CQ) || !isObj(attr.cq)) fail('an XRC SRQ needs IBV_SRQ_INIT_ATTR_CQ and a cq');
  return o.create_srq_xrc(attr.pd!, attr.xrcd!, attr.cq!, init);
}

/** C: `int ibv_get_srq_num(srq, uint32_t *srq_num)`: 0 with `out.srq_num` set for an XRC SRQ; EOPNOTSUPP for another SRQ, EINVAL for a non-SRQ. */
export function ibv_get_srq_num(srq: ibv_srq, out: { srq_num: number }): number {
  const o = objOps(srq);
  return o ? o.get_srq_num(srq, out) : errno.EINVAL;
}
