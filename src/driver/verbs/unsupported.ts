/**
 * Verbs for what the model does not model, present so that a program can
 * probe for them and get what rdma-core's dummy ops (libibverbs/dummy_ops.c)
 * give a provider without them: EOPNOTSUPP, returned by int verbs and
 * thrown as a VerbsError by pointer verbs. An argument that is not an
 * object at all is EINVAL first, as everywhere else.
 *
 * Not modelled: flow steering (ibv_create_flow), receive work queues and
 * RSS indirection tables (ibv_create_wq, ibv_create_rwq_ind_table),
 * counters objects (ibv_create_counters), parent domains, importing objects
 * from another process, device memory (ibv_alloc_dm), ECE (ibv_query_ece,
 * as rxe), on-demand paging
 * (ibv_advise_mr), dma-buf memory (ibv_reg_dmabuf_mr), thread domains
 * (ibv_alloc_td, as rxe), IPsec flow actions and tag matching
 * (ibv_post_srq_ops).
 */
import { errno } from '../../device/abi/constants.js';
import { isObj, objOps, opsOrNull } from './dispatch.js';
import { VerbsError } from './errno-error.js';

const NOT = (verb: string, why: string) => new VerbsError(errno.EOPNOTSUPP, `${verb}: ${why}`);

/** A pointer verb on an object (or context) that is not modelled: EINVAL for a non-object, else EOPNOTSUPP. */
function ptr(verb: string, why: string, owner: unknown, isContext = false): never {
  const ok = isContext ? opsOrNull(owner) : objOps(owner);
  if (!ok) throw new VerbsError(errno.EINVAL, `${verb}: not an ${isContext ? 'open ibv_context' : 'object of an open context'}`);
  throw NOT(verb, why);
}
function int(owner: unknown, isContext = false): number {
  return (isContext ? opsOrNull(owner) : objOps(owner)) ? errno.EOPNOTSUPP : errno.EINVAL;
}

const FLOW = 'flow steering is not modelled';
const WQ = 'receive work queues and RSS are not modelled';
const COUNTERS = 'counters objects are not modelled (rnic_read_counters reads the port counters)';
const IMPORT = 'importing objects of another process is not modelled';
const DM = 'the device has no device memory (max_dm_size 0)';

export const ibv_create_flow = (qp: unknown, _flow_attr: unknown): never => ptr('ibv_create_flow', FLOW, qp);
export const ibv_destroy_flow = (flow_id: unknown): number => (isObj(flow_id) ? errno.EOPNOTSUPP : errno.EINVAL);
export const ibv_create_wq = (context: unknown, _attr: unknown): never => ptr('ibv_create_wq', WQ, context, true);
export const ibv_modify_wq = (wq: unknown, _attr: unknown): number => int(wq);
export const ibv_destroy_wq = (wq: unknown): number => int(wq);
export const ibv_create_rwq_ind_table = (context: unknown, _attr: unknown): never => ptr('ibv_create_rwq_ind_table', WQ, context, true);
export const ibv_destroy_rwq_ind_table = (table: unknown): number => int(table);
export const ibv_create_counters = (context: unknown, _attr: unknown): never => ptr('ibv_create_counters', COUNTERS, context, true);
export const ibv_destroy_counters = (counters: unknown): number => int(counters);
export const ibv_attach_counters_point_flow = (counters: unknown, _attr: unknown, _flow: unknown): number => int(counters);
export const ibv_read_counters = (counters: unknown, _values: unknown, _n: unknown, _flags: unknown): number => int(counters);
export const ibv_alloc_parent_domain = (context: unknown, _attr: unknown): never =>
  ptr('ibv_alloc_parent_domain', 'parent domains are not modelled', context, true);
export const ibv_import_device = (_cmd_fd: unknown): never => {
  throw NOT('ibv_import_device', IMPORT);
};
export const ibv_import_pd = (context: unknown, _handle: unknown): never => ptr('ibv_import_pd', IMPORT, context, true);
export const ibv_import_mr = (pd: unknown, _handle: unknown): never => ptr('ibv_import_mr', IMPORT, pd);
export const ibv_import_dm = (context: unknown, _handle: unknown): never => ptr('ibv_import_dm', IMPORT, context, true);
export const ibv_alloc_dm = (context: unknown, _attr: unknown): never => ptr('ibv_alloc_dm', DM, context, true);
export const ibv_free_dm = (dm: unknown): number => int(dm);
export const ibv_reg_dm_mr = (pd: unknown, _dm: unknown, _offset: unknown, _length: unknown, _access: unknown): never => ptr('ibv_reg_dm_mr', DM, pd);
export const ibv_memcpy_to_dm = (dm: unknown, _offset: unknown, _host: unknown, _length: unknown): number => int(dm);
export const ibv_memcpy_from_dm = (_host: unknown, dm: unknown, _offset: unknown, _length: unknown): number => int(dm);
/** ibv_advise_mr (prefetch of ODP memory): the device has no on-demand paging (odp_caps 0). */
export const ibv_advise_mr = (pd: unknown, _advice: unknown, _flags: unknown, _sg_list: unknown, _num_sge: unknown): number => int(pd);
export const ibv_reg_dmabuf_mr = (pd: unknown, _offset: unknown, _length: unknown, _iova: unknown, _fd: unknown, _access: unknown): never =>
  ptr('ibv_reg_dmabuf_mr', 'dma-buf memory is not modelled (host memory only)', pd);
export const ibv_alloc_td = (context: unknown, _init_attr: unknown): never => ptr('ibv_alloc_td', 'thread domains are not modelled', context, true);
export const ibv_dealloc_td = (td: unknown): number => int(td);
const ESP = 'IPsec flow actions are not modelled';
export const ibv_create_flow_action_esp = (context: unknown, _esp: unknown): never => ptr('ibv_create_flow_action_esp', ESP, context, true);
export const ibv_modify_flow_action_esp = (action: unknown, _esp: unknown): number => int(action);
export const ibv_destroy_flow_action = (action: unknown): number => int(action);
/** Tag-matching operations on an SRQ (tm_caps 0): EOPNOTSUPP, with `bad_op.op` set to the first one as libibverbs' dummy op does. */
export function ibv_post_srq_ops(srq: unknown, op: unknown, bad_op?: { op: unknown }): number {
  if (bad_op && typeof bad_op === 'object') bad_op.op = op;
  return int(srq);
}
/** No work queue can be created (ibv_create_wq): every argument is no WQ of an open context. */
export function ibv_post_wq_recv(wq: unknown, wr: unknown, bad_wr?: { wr: unknown }): number {
  if (bad_wr && typeof bad_wr === 'object') bad_wr.wr = wr;
  return int(wq);
}
/** Nothing is ever imported (ibv_import_*), so there is nothing to unimport; void in C. */
export function ibv_unimport_pd(_pd: unknown): void {}
export function ibv_unimport_mr(_mr: unknown): void {}
export function ibv_unimport_dm(_dm: unknown): void {}
export const ibv_query_ece = (qp: unknown, _ece: unknown): number => int(qp);
export const ibv_set_ece = (qp: unknown, _ece: unknown): number => int(qp);

/** ibv_fork_init: nothing to do on a kernel with copy-on-fork for pinned pages (Linux ≥ 5.13), where libibverbs returns 0. */
export function ibv_fork_init(): number {
  return 0;
}

/** IBV_FORK_DISABLED / IBV_FORK_ENABLED / IBV_FORK_UNNEEDED (enum ibv_fork_status). */
export const IBV_FORK_DISABLED = 0;
export const IBV_FORK_ENABLED = 1;
export const IBV_FORK_UNNEEDED = 2;

/** As on a modern kernel: fork protection is unneeded. */
export function ibv_is_fork_initialized(): number {
  return IBV_FORK_UNNEEDED;
}
