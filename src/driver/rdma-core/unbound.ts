/**
 * Verbs that exist in libibverbs but that the native addon does not bind.
 * Each one fails in the way of its verb as libibverbs answers for a
 * provider without it (EOPNOTSUPP from its dummy ops, or its documented
 * fallback), so a program probing for them behaves as on a device that
 * lacks the feature. Binding one is a matter of adding it to native/
 * (extended.cc) and replacing its entry here. The extended verbs are bound
 * in extended.ts; XRC QPs (ibv_create_qp_ex with IBV_QP_INIT_ATTR_XRCD, and
 * ibv_open_qp below) are not.
 */
import { errno } from '../../device/abi/constants.js';
import { VerbsError } from '../verbs/errno-error.js';
import type { VerbsContextOps } from '../verbs/ops.js';

const why = (verb: string) => `${verb}: the rdma-core addon does not bind this verb (see docs/verbs.md)`;
const thrower = (verb: string) => () => {
  throw new VerbsError(errno.EOPNOTSUPP, why(verb));
};

export const rc_unbound_ops = {
  open_qp: thrower('ibv_open_qp'),
  // libibverbs' own answers where a provider lacks them (0: not guaranteed;
  // -ENOSYS: built without neighbour resolution).
  query_qp_data_in_order: () => 0,
  resolve_eth_l2: () => -errno.ENOSYS,
} satisfies Partial<VerbsContextOps>;
