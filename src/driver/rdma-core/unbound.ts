/**
 * Verbs that exist in libibverbs but that the native addon does not bind
 * yet (extended CQs, the new post API, memory windows, XRC, ...). Each one
 * fails with EOPNOTSUPP in the way of its verb, as libibverbs' dummy ops do
 * for a provider without them, so a program probing for them behaves as on
 * a device that lacks the feature. Binding one is a matter of adding it to
 * native/ and replacing its entry here.
 */
import { errno, IBV_REREG_MR_ERR_INPUT } from '../../device/abi/constants.js';
import { VerbsError } from '../verbs/errno-error.js';
import type { VerbsContextOps } from '../verbs/ops.js';

const why = (verb: string) => `${verb}: the rdma-core addon does not bind this verb (see docs/verbs.md)`;
const int = (_verb: string) => () => errno.EOPNOTSUPP;
const negative = (_verb: string) => () => -errno.EOPNOTSUPP;
const thrower = (verb: string) => () => {
  throw new VerbsError(errno.EOPNOTSUPP, why(verb));
};

export const rc_unbound_ops = {
  create_cq_ex: thrower('ibv_create_cq_ex'),
  poll_cq_ex: negative('ibv_start_poll'),
  resize_cq: int('ibv_resize_cq'),
  modify_cq: int('ibv_modify_cq'),
  create_qp_ex: thrower('ibv_create_qp_ex'),
  post_send_all: int('ibv_wr_complete'),
  attach_mcast: int('ibv_attach_mcast'),
  detach_mcast: int('ibv_detach_mcast'),
  query_device_ex: int('ibv_query_device_ex'),
  query_gid_ex: int('ibv_query_gid_ex'),
  query_rt_values: int('ibv_query_rt_values_ex'),
  reg_mr_iova: thrower('ibv_reg_mr_iova'),
  alloc_null_mr: thrower('ibv_alloc_null_mr'),
  rereg_mr: () => ({ rc: IBV_REREG_MR_ERR_INPUT, errno: errno.EOPNOTSUPP }),
  open_xrcd: thrower('ibv_open_xrcd'),
  open_qp: thrower('ibv_open_qp'),
  close_xrcd: int('ibv_close_xrcd'),
  create_srq_xrc: thrower('ibv_create_srq_ex'),
  get_srq_num: int('ibv_get_srq_num'),
  modify_qp_rate_limit: int('ibv_modify_qp_rate_limit'),
  // Not bound yet: libibverbs' own answers where a provider lacks them (0: not guaranteed;
  // -ENOSYS: built without neighbour resolution).
  query_qp_data_in_order: () => 0,
  resolve_eth_l2: () => -errno.ENOSYS,
} satisfies Partial<VerbsContextOps>;
