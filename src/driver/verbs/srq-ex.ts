/**
 * ibv_create_srq_ex and ibv_get_srq_num. A basic SRQ (no type, or
 * IBV_SRQT_BASIC) with a PD is the SRQ of ibv_create_srq; XRC and
 * tag-matching SRQs are not modelled (EOPNOTSUPP). ibv_get_srq_num answers
 * only for XRC SRQs in libibverbs (EOPNOTSUPP for the others), so here it is
 * always EOPNOTSUPP.
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
  if (!isObj(attr)) throw new VerbsError(errno.EINVAL, 'ibv_create_srq_ex: no attributes');
  const mask = attr.comp_mask;
  if (typeof mask !== 'number' || mask >>> 0 !== mask || mask & ~(IBV_SRQ_INIT_ATTR_RESERVED - 1))
    throw new VerbsError(errno.EINVAL, `ibv_create_srq_ex: bad comp_mask ${String(mask)}`);
  const type = mask & IBV_SRQ_INIT_ATTR_TYPE ? attr.srq_type : IBV_SRQT_BASIC;
  if (type === IBV_SRQT_XRC || type === IBV_SRQT_TM || mask & (IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM)) {
    throw new VerbsError(errno.EOPNOTSUPP, 'ibv_create_srq_ex: XRC and tag-matching SRQs are not modelled');
  }
  if (type !== IBV_SRQT_BASIC) throw new VerbsError(errno.EINVAL, `ibv_create_srq_ex: unknown srq_type ${String(type)}`);
  if (!(mask & IBV_SRQ_INIT_ATTR_PD) || !isObj(attr.pd))
    throw new VerbsError(errno.EINVAL, 'ibv_create_srq_ex: a basic SRQ needs IBV_SRQ_INIT_ATTR_PD and a pd');
  if (attr.pd.context !== context) throw new VerbsError(errno.EINVAL, 'ibv_create_srq_ex: the pd is not of this context');
  return o.create_srq(attr.pd, { srq_context: attr.srq_context, attr: attr.attr });
}

/** C: `int ibv_get_srq_num(srq, uint32_t *srq_num)`; `out.srq_num` would receive it. */
export function ibv_get_srq_num(srq: ibv_srq, _out: { srq_num: number }): number {
  return objOps(srq) ? errno.EOPNOTSUPP : errno.EINVAL;
}
