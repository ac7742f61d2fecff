/**
 * The libibverbs API. Each verb checks what libibverbs checks and hands the
 * call to the context's provider. Verbs that return an int in C return the
 * same int (0 or an errno value; ibv_poll_cq a count, negative on error);
 * verbs that return a pointer in C throw a VerbsError where C returns NULL.
 */
import { errno } from '../../device/abi/constants.js';
import { providers } from '../providers.js';
import { VerbsError } from './errno-error.js';
import type { BadWr, ProviderDevice, VerbsContextOps } from './ops.js';
import type {
  ibv_ah, ibv_ah_attr, ibv_async_event, ibv_comp_channel, ibv_context, ibv_cq, ibv_device, ibv_device_attr, ibv_gid, ibv_mr,
  ibv_pd, ibv_port_attr, ibv_qp, ibv_qp_attr, ibv_qp_init_attr, ibv_recv_wr, ibv_send_wr, ibv_srq, ibv_srq_attr,
  ibv_srq_init_attr, ibv_wc,
} from './types.js';

type OpsContext = ibv_context & { ops: VerbsContextOps };

function ops(ctx: ibv_context): VerbsContextOps {
  const o = (ctx as Partial<OpsContext>).ops;
  if (!o) throw new VerbsError(errno.EINVAL, 'not an open ibv_context');
  return o;
}

/** All devices of every provider (C: ibv_get_device_list(&num)). */
export function ibv_get_device_list(): ibv_device[] {
  return providers().flatMap((p) => p.devices());
}

export function ibv_free_device_list(_list: ibv_device[]): void {
  // Nothing to free: the list is garbage-collected.
}

export function ibv_get_device_name(device: ibv_device): string {
  return device.name;
}

export function ibv_get_device_guid(device: ibv_device): bigint {
  const d = device as ProviderDevice;
  if (!d.provider) throw new VerbsError(errno.EINVAL, 'not a device from ibv_get_device_list');
  return d.provider.guid(d);
}

export function ibv_open_device(device: ibv_device): ibv_context {
  const d = device as ProviderDevice;
  if (!d || !d.provider) throw new VerbsError(errno.EINVAL, 'ibv_open_device: not a device from ibv_get_device_list');
  return d.provider.open(d);
}

export function ibv_close_device(context: ibv_context): number {
  return ops(context).close_device(context);
}

export function ibv_query_device(context: ibv_context, device_attr: ibv_device_attr): number {
  return ops(context).query_device(context, device_attr);
}

export function ibv_query_port(context: ibv_context, port_num: number, port_attr: ibv_port_attr): number {
  return ops(context).query_port(context, port_num, port_attr);
}

export function ibv_query_gid(context: ibv_context, port_num: number, index: number, gid: ibv_gid): number {
  return ops(context).query_gid(context, port_num, index, gid);
}

/** Returns the P_Key, or throws (C returns it through a pointer). */
export function ibv_query_pkey(context: ibv_context, port_num: number, index: number): number {
  return ops(context).query_pkey(context, port_num, index);
}

export function ibv_alloc_pd(context: ibv_context): ibv_pd {
  return ops(context).alloc_pd(context);
}

export function ibv_dealloc_pd(pd: ibv_pd): number {
  return ops(pd.context).dealloc_pd(pd);
}

/**
 * Registers `buf`, which must lie in memory the device reaches (from
 * rnic_alloc_buf, or any view of it). The MR's `addr` is the device address
 * the peer puts in RETHs; lkey and rkey are the keys.
 */
export function ibv_reg_mr(pd: ibv_pd, buf: Uint8Array, access: number): ibv_mr {
  if (!(buf instanceof Uint8Array)) throw new VerbsError(errno.EINVAL, 'ibv_reg_mr: buf must be a Uint8Array');
  return ops(pd.context).reg_mr(pd, buf, access);
}

export function ibv_dereg_mr(mr: ibv_mr): number {
  return ops(mr.context).dereg_mr(mr);
}

/**
 * Memory the device can reach by DMA (the model's host memory; with
 * rdma-core, ordinary memory). In C, any malloc'd buffer qualifies; here
 * buffers come from this call.
 */
export function rnic_alloc_buf(context: ibv_context, length: number, align = 64): Uint8Array {
  if (!Number.isInteger(length) || length < 0) throw new VerbsError(errno.EINVAL, `rnic_alloc_buf: bad length ${length}`);
  return ops(context).alloc_buf(context, length, align);
}

export function rnic_free_buf(context: ibv_context, buf: Uint8Array): void {
  ops(context).free_buf(context, buf);
}

export function ibv_create_comp_channel(context: ibv_context): ibv_comp_channel {
  return ops(context).create_comp_channel(context);
}

export function ibv_destroy_comp_channel(channel: ibv_comp_channel): number {
  return ops(channel.context).destroy_comp_channel(channel);
}

export function ibv_create_cq(context: ibv_context, cqe: number, cq_context: unknown, channel: ibv_comp_channel | null, comp_vector: number): ibv_cq {
  return ops(context).create_cq(context, cqe, cq_context, channel, comp_vector);
}

export function ibv_destroy_cq(cq: ibv_cq): number {
  return ops(cq.context).destroy_cq(cq);
}

export function ibv_req_notify_cq(cq: ibv_cq, solicited_only: number): number {
  return ops(cq.context).req_notify_cq(cq, solicited_only);
}

/** Resolves with the CQ that has an event (C blocks in read() on the channel fd). */
export function ibv_get_cq_event(channel: ibv_comp_channel): Promise<{ cq: ibv_cq; cq_context: unknown }> {
  return ops(channel.context).get_cq_event(channel);
}

export function ibv_ack_cq_events(cq: ibv_cq, nevents: number): void {
  ops(cq.context).ack_cq_events(cq, nevents);
}

/** Fills wc[0..n) and returns n, or a negative errno. `wc` entries are reused if present. */
export function ibv_poll_cq(cq: ibv_cq, num_entries: number, wc: ibv_wc[]): number {
  return ops(cq.context).poll_cq(cq, num_entries, wc);
}

export function ibv_create_srq(pd: ibv_pd, srq_init_attr: ibv_srq_init_attr): ibv_srq {
  return ops(pd.context).create_srq(pd, srq_init_attr);
}

export function ibv_modify_srq(srq: ibv_srq, srq_attr: ibv_srq_attr, srq_attr_mask: number): number {
  return ops(srq.context).modify_srq(srq, srq_attr, srq_attr_mask);
}

export function ibv_query_srq(srq: ibv_srq, srq_attr: ibv_srq_attr): number {
  return ops(srq.context).query_srq(srq, srq_attr);
}

export function ibv_destroy_srq(srq: ibv_srq): number {
  return ops(srq.context).destroy_srq(srq);
}

export function ibv_post_srq_recv(srq: ibv_srq, recv_wr: ibv_recv_wr, bad_recv_wr?: BadWr<ibv_recv_wr>): number {
  return ops(srq.context).post_srq_recv(srq, recv_wr, bad_recv_wr);
}

export function ibv_create_qp(pd: ibv_pd, qp_init_attr: ibv_qp_init_attr): ibv_qp {
  return ops(pd.context).create_qp(pd, qp_init_attr);
}

export function ibv_modify_qp(qp: ibv_qp, attr: Partial<ibv_qp_attr>, attr_mask: number): number {
  return ops(qp.context).modify_qp(qp, attr, attr_mask);
}

export function ibv_query_qp(qp: ibv_qp, attr: ibv_qp_attr, attr_mask: number, init_attr: ibv_qp_init_attr): number {
  return ops(qp.context).query_qp(qp, attr, attr_mask, init_attr);
}

export function ibv_destroy_qp(qp: ibv_qp): number {
  return ops(qp.context).destroy_qp(qp);
}

export function ibv_post_send(qp: ibv_qp, wr: ibv_send_wr, bad_wr?: BadWr<ibv_send_wr>): number {
  return ops(qp.context).post_send(qp, wr, bad_wr);
}

export function ibv_post_recv(qp: ibv_qp, wr: ibv_recv_wr, bad_wr?: BadWr<ibv_recv_wr>): number {
  return ops(qp.context).post_recv(qp, wr, bad_wr);
}

export function ibv_create_ah(pd: ibv_pd, attr: ibv_ah_attr): ibv_ah {
  return ops(pd.context).create_ah(pd, attr);
}

export function ibv_destroy_ah(ah: ibv_ah): number {
  return ops(ah.context).destroy_ah(ah);
}

export function ibv_get_async_event(context: ibv_context): Promise<ibv_async_event> {
  return ops(context).get_async_event(context);
}

export function ibv_ack_async_event(event: ibv_async_event): void {
  const ctx = event.element.qp?.context ?? event.element.cq?.context ?? event.element.srq?.context;
  if (ctx) ops(ctx).ack_async_event(event);
}

/** Hardware counters of a port, by the names Linux drivers use. */
export function rnic_read_counters(context: ibv_context, port_num = 1): Record<string, bigint> {
  return ops(context).read_counters(context, port_num);
}
