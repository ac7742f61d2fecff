/**
 * The libibverbs API. Each verb checks what libibverbs checks and hands the
 * call to the context's provider. Verbs that return an int in C return the
 * same int (0 or an errno value; ibv_poll_cq a count, negative on error);
 * verbs that return a pointer in C throw a VerbsError where C returns NULL.
 */
import { errno } from '../../device/abi/constants.js';
import { providers } from '../providers.js';
import { VerbsError } from './errno-error.js';
import type { BadWr, ProviderDevice } from './ops.js';
import { getErrno, isObj, objOps, ops, opsOfObj, opsOrNull, rejected, setErrno } from './dispatch.js';
import type {
  ibv_ah,
  ibv_ah_attr,
  ibv_async_event,
  ibv_comp_channel,
  ibv_context,
  ibv_cq,
  ibv_device,
  ibv_device_attr,
  ibv_gid,
  ibv_mr,
  ibv_pd,
  ibv_port_attr,
  ibv_qp,
  ibv_qp_attr,
  ibv_qp_init_attr,
  ibv_qp_rate_limit_attr,
  ibv_recv_wr,
  ibv_send_wr,
  ibv_srq,
  ibv_srq_attr,
  ibv_srq_init_attr,
  ibv_wc,
  ibv_modify_cq_attr,
  ibv_pkey_out,
} from './types.js';

/** All devices of every provider (C: ibv_get_device_list(&num)). */
export function ibv_get_device_list(): ibv_device[] {
  return providers().flatMap((p) => p.devices());
}

export function ibv_free_device_list(_list: ibv_device[]): void {
  // Nothing to free: the list is garbage-collected.
}

export function ibv_get_device_name(device: ibv_device): string {
  if (!isObj(device) || typeof device.name !== 'string') throw new VerbsError(errno.EINVAL, 'ibv_get_device_name: not a device from ibv_get_device_list');
  return device.name;
}

/** The kernel's index of the device (the model: the order its devices were added, from 0), or -1 where the provider cannot tell. */
export function ibv_get_device_index(device: ibv_device): number {
  const d = device as ProviderDevice;
  if (!isObj(d) || !isObj(d.provider) || typeof d.provider.index !== 'function') return -1;
  return d.provider.index(d);
}

export function ibv_get_device_guid(device: ibv_device): bigint {
  const d = device as ProviderDevice;
  if (!isObj(d) || !isObj(d.provider) || typeof d.provider.guid !== 'function') throw new VerbsError(errno.EINVAL, 'not a device from ibv_get_device_list');
  return d.provider.guid(d);
}

export function ibv_open_device(device: ibv_device): ibv_context {
  const d = device as ProviderDevice;
  if (!isObj(d) || !isObj(d.provider) || typeof d.provider.open !== 'function')
    throw new VerbsError(errno.EINVAL, 'ibv_open_device: not a device from ibv_get_device_list');
  return d.provider.open(d);
}

export function ibv_close_device(context: ibv_context): number {
  const o = opsOrNull(context);
  return o ? o.close_device(context) : errno.EINVAL;
}

export function ibv_query_device(context: ibv_context, device_attr: ibv_device_attr): number {
  const o = opsOrNull(context);
  if (!o || !isObj(device_attr)) return errno.EINVAL;
  return o.query_device(context, device_attr);
}

export function ibv_query_port(context: ibv_context, port_num: number, port_attr: ibv_port_attr): number {
  const o = opsOrNull(context);
  if (!o || !isObj(port_attr) || typeof port_num !== 'number') return errno.EINVAL;
  return o.query_port(context, port_num, port_attr);
}

/**
 * The errno of the last verb that returned -1 (C's `errno` after
 * ibv_query_gid, ibv_query_pkey, ibv_get_pkey_index).
 */
export function rnic_errno(): number {
  return getErrno();
}

/** 0, or -1 with rnic_errno() set (EINVAL for a port or index beyond the table), as libibverbs returns. */
export function ibv_query_gid(context: ibv_context, port_num: number, index: number, gid: ibv_gid): number {
  const o = opsOrNull(context);
  if (!o || !isObj(gid) || typeof port_num !== 'number' || typeof index !== 'number') return setErrno(errno.EINVAL);
  const rc = o.query_gid(context, port_num, index, gid);
  return rc === 0 ? 0 : setErrno(rc);
}

/**
 * C: `int ibv_query_pkey(ctx, port_num, index, __be16 *pkey)`: 0 with the
 * P_Key written to `pkey.pkey` (its numeric value, 0xffff for the default
 * P_Key), or -1 with rnic_errno() set.
 */
export function ibv_query_pkey(context: ibv_context, port_num: number, index: number, pkey: ibv_pkey_out): number {
  const o = opsOrNull(context);
  if (!o || !isObj(pkey) || typeof port_num !== 'number' || typeof index !== 'number') return setErrno(errno.EINVAL);
  try {
    pkey.pkey = o.query_pkey(context, port_num, index);
  } catch (e) {
    return setErrno(e instanceof VerbsError ? e.errno : errno.EINVAL);
  }
  return 0;
}

export function ibv_alloc_pd(context: ibv_context): ibv_pd {
  return ops(context, 'ibv_alloc_pd').alloc_pd(context);
}

export function ibv_dealloc_pd(pd: ibv_pd): number {
  const o = objOps(pd);
  return o ? o.dealloc_pd(pd) : errno.EINVAL;
}

/**
 * Registers `buf`, which must lie in memory the device reaches (from
 * rnic_alloc_buf, or any view of it). The MR's `addr` is the device address
 * the peer puts in RETHs; lkey and rkey are the keys.
 */
export function ibv_reg_mr(pd: ibv_pd, buf: Uint8Array, access: number): ibv_mr {
  const o = opsOfObj(pd, 'ibv_reg_mr', 'ibv_pd');
  if (!(buf instanceof Uint8Array)) throw new VerbsError(errno.EINVAL, 'ibv_reg_mr: buf must be a Uint8Array');
  if (typeof access !== 'number' || !Number.isInteger(access) || access < 0 || access > 0xffffffff)
    throw new VerbsError(errno.EINVAL, `ibv_reg_mr: bad access flags ${String(access)}`);
  return o.reg_mr(pd, buf, access);
}

export function ibv_dereg_mr(mr: ibv_mr): number {
  const o = objOps(mr);
  return o ? o.dereg_mr(mr) : errno.EINVAL;
}

/**
 * Memory the device can reach by DMA (the model's host memory; with
 * rdma-core, ordinary memory). In C, any malloc'd buffer qualifies; here
 * buffers come from this call.
 */
export function rnic_alloc_buf(context: ibv_context, length: number, align = 64): Uint8Array {
  const o = ops(context, 'rnic_alloc_buf');
  if (typeof length !== 'number' || !Number.isSafeInteger(length) || length < 0)
    throw new VerbsError(errno.EINVAL, `rnic_alloc_buf: bad length ${String(length)}`);
  if (typeof align !== 'number') throw new VerbsError(errno.EINVAL, `rnic_alloc_buf: bad alignment ${String(align)}`);
  return o.alloc_buf(context, length, align);
}

export function rnic_free_buf(context: ibv_context, buf: Uint8Array): void {
  const o = ops(context, 'rnic_free_buf');
  if (!(buf instanceof Uint8Array)) throw new VerbsError(errno.EINVAL, 'rnic_free_buf: buf must be a Uint8Array from rnic_alloc_buf');
  o.free_buf(context, buf);
}

export function ibv_create_comp_channel(context: ibv_context): ibv_comp_channel {
  return ops(context, 'ibv_create_comp_channel').create_comp_channel(context);
}

export function ibv_destroy_comp_channel(channel: ibv_comp_channel): number {
  const o = objOps(channel);
  return o ? o.destroy_comp_channel(channel) : errno.EINVAL;
}

export function ibv_create_cq(context: ibv_context, cqe: number, cq_context: unknown, channel: ibv_comp_channel | null, comp_vector: number): ibv_cq {
  const o = ops(context, 'ibv_create_cq');
  if (channel !== null && channel !== undefined && !objOps(channel)) throw new VerbsError(errno.EINVAL, 'ibv_create_cq: channel is not an ibv_comp_channel');
  return o.create_cq(context, cqe, cq_context, channel ?? null, comp_vector);
}

export function ibv_destroy_cq(cq: ibv_cq): number {
  const o = objOps(cq);
  return o ? o.destroy_cq(cq) : errno.EINVAL;
}

export function ibv_req_notify_cq(cq: ibv_cq, solicited_only: number): number {
  const o = objOps(cq);
  if (!o || typeof solicited_only !== 'number') return errno.EINVAL;
  return o.req_notify_cq(cq, solicited_only);
}

/** Resolves with the CQ that has an event (C blocks in read() on the channel fd). */
export function ibv_get_cq_event(channel: ibv_comp_channel): Promise<{ cq: ibv_cq; cq_context: unknown }> {
  const o = objOps(channel);
  return o ? o.get_cq_event(channel) : rejected('ibv_get_cq_event', 'ibv_comp_channel');
}

export function ibv_ack_cq_events(cq: ibv_cq, nevents: number): void {
  const o = opsOfObj(cq, 'ibv_ack_cq_events', 'ibv_cq');
  if (typeof nevents !== 'number' || !Number.isInteger(nevents) || nevents < 0)
    throw new VerbsError(errno.EINVAL, `ibv_ack_cq_events: bad nevents ${String(nevents)}`);
  o.ack_cq_events(cq, nevents);
}

/** Fills wc[0..n) and returns n, or a negative errno. `wc` entries are reused if present. */
export function ibv_poll_cq(cq: ibv_cq, num_entries: number, wc: ibv_wc[]): number {
  const o = objOps(cq);
  // C's `int num_entries`: a negative count is a mistake, not "poll nothing".
  if (!o || typeof num_entries !== 'number' || (num_entries | 0) !== num_entries || num_entries < 0 || !Array.isArray(wc)) return -errno.EINVAL;
  return o.poll_cq(cq, num_entries, wc);
}

/** ibv_resize_cq: 0 or an errno; `cq.cqe` then holds the new size. */
export function ibv_resize_cq(cq: ibv_cq, cqe: number): number {
  const o = objOps(cq);
  if (!o || typeof cqe !== 'number') return errno.EINVAL;
  return o.resize_cq(cq, cqe);
}

/** ibv_modify_cq (CQ moderation). */
export function ibv_modify_cq(cq: ibv_cq, attr: ibv_modify_cq_attr): number {
  const o = objOps(cq);
  if (!o || !isObj(attr)) return errno.EINVAL;
  return o.modify_cq(cq, attr);
}

export function ibv_create_srq(pd: ibv_pd, srq_init_attr: ibv_srq_init_attr): ibv_srq {
  const o = opsOfObj(pd, 'ibv_create_srq', 'ibv_pd');
  if (!isObj(srq_init_attr)) throw new VerbsError(errno.EINVAL, 'ibv_create_srq: no attributes');
  return o.create_srq(pd, srq_init_attr);
}

export function ibv_modify_srq(srq: ibv_srq, srq_attr: ibv_srq_attr, srq_attr_mask: number): number {
  const o = objOps(srq);
  if (!o || !isObj(srq_attr) || typeof srq_attr_mask !== 'number') return errno.EINVAL;
  return o.modify_srq(srq, srq_attr, srq_attr_mask);
}

export function ibv_query_srq(srq: ibv_srq, srq_attr: ibv_srq_attr): number {
  const o = objOps(srq);
  if (!o || !isObj(srq_attr)) return errno.EINVAL;
  return o.query_srq(srq, srq_attr);
}

export function ibv_destroy_srq(srq: ibv_srq): number {
  const o = objOps(srq);
  return o ? o.destroy_srq(srq) : errno.EINVAL;
}

export function ibv_post_srq_recv(srq: ibv_srq, recv_wr: ibv_recv_wr, bad_recv_wr?: BadWr<ibv_recv_wr>): number {
  const o = objOps(srq);
  if (!o || (bad_recv_wr !== undefined && bad_recv_wr !== null && !isObj(bad_recv_wr))) return errno.EINVAL;
  return o.post_srq_recv(srq, recv_wr, bad_recv_wr ?? undefined);
}

export function ibv_create_qp(pd: ibv_pd, qp_init_attr: ibv_qp_init_attr): ibv_qp {
  const o = opsOfObj(pd, 'ibv_create_qp', 'ibv_pd');
  if (!isObj(qp_init_attr)) throw new VerbsError(errno.EINVAL, 'ibv_create_qp: no attributes');
  return o.create_qp(pd, qp_init_attr);
}

export function ibv_modify_qp(qp: ibv_qp, attr: Partial<ibv_qp_attr>, attr_mask: number): number {
  const o = objOps(qp);
  if (!o || !isObj(attr) || typeof attr_mask !== 'number') return errno.EINVAL;
  return o.modify_qp(qp, attr, attr_mask);
}

/**
 * 1 if the bytes of a message of opcode `op` land in memory in order (a
 * poller of the last byte sees all before it), else 0; `flags` must be 0.
 * libibverbs asks the provider only on x86; a provider without the op: 0.
 */
export function ibv_query_qp_data_in_order(qp: ibv_qp, op: number, flags: number): number {
  const o = objOps(qp);
  if (!o || !o.query_qp_data_in_order) return 0;
  return o.query_qp_data_in_order(qp, op, flags);
}

/** ibv_modify_qp_rate_limit: 0 or a positive errno; EOPNOTSUPP from a provider without packet pacing. */
export function ibv_modify_qp_rate_limit(qp: ibv_qp, attr: ibv_qp_rate_limit_attr): number {
  const o = objOps(qp);
  if (!o || !isObj(attr)) return errno.EINVAL;
  return o.modify_qp_rate_limit ? o.modify_qp_rate_limit(qp, attr) : errno.EOPNOTSUPP;
}

export function ibv_query_qp(qp: ibv_qp, attr: ibv_qp_attr, attr_mask: number, init_attr: ibv_qp_init_attr): number {
  const o = objOps(qp);
  if (!o || !isObj(attr) || !isObj(init_attr) || typeof attr_mask !== 'number') return errno.EINVAL;
  return o.query_qp(qp, attr, attr_mask, init_attr);
}

export function ibv_destroy_qp(qp: ibv_qp): number {
  const o = objOps(qp);
  return o ? o.destroy_qp(qp) : errno.EINVAL;
}

export function ibv_post_send(qp: ibv_qp, wr: ibv_send_wr, bad_wr?: BadWr<ibv_send_wr>): number {
  const o = objOps(qp);
  if (!o || (bad_wr !== undefined && bad_wr !== null && !isObj(bad_wr))) return errno.EINVAL;
  return o.post_send(qp, wr, bad_wr ?? undefined);
}

export function ibv_post_recv(qp: ibv_qp, wr: ibv_recv_wr, bad_wr?: BadWr<ibv_recv_wr>): number {
  const o = objOps(qp);
  if (!o || (bad_wr !== undefined && bad_wr !== null && !isObj(bad_wr))) return errno.EINVAL;
  return o.post_recv(qp, wr, bad_wr ?? undefined);
}

export function ibv_create_ah(pd: ibv_pd, attr: ibv_ah_attr): ibv_ah {
  const o = opsOfObj(pd, 'ibv_create_ah', 'ibv_pd');
  if (!isObj(attr)) throw new VerbsError(errno.EINVAL, 'ibv_create_ah: no attributes');
  return o.create_ah(pd, attr);
}

export function ibv_destroy_ah(ah: ibv_ah): number {
  const o = objOps(ah);
  return o ? o.destroy_ah(ah) : errno.EINVAL;
}

export function ibv_get_async_event(context: ibv_context): Promise<ibv_async_event> {
  const o = opsOrNull(context);
  return o ? o.get_async_event(context) : rejected('ibv_get_async_event', 'open ibv_context');
}

export function ibv_ack_async_event(event: ibv_async_event): void {
  const el = isObj(event) && isObj(event.element) ? event.element : null;
  if (!el) throw new VerbsError(errno.EINVAL, 'ibv_ack_async_event: not an event from ibv_get_async_event');
  const owner = el.qp ?? el.cq ?? el.srq;
  if (owner === undefined || owner === null) return; // port and device events hold nothing to release
  opsOfObj(owner, 'ibv_ack_async_event', 'event from ibv_get_async_event').ack_async_event(event);
}

/** Hardware counters of a port, by the names Linux drivers use. */
export function rnic_read_counters(context: ibv_context, port_num = 1): Record<string, bigint> {
  return ops(context, 'rnic_read_counters').read_counters(context, port_num);
}
