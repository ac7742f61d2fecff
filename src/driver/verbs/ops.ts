/**
 * What a provider supplies (rdma-core's verbs_context_ops / verbs_device_ops).
 * A provider gives a Partial; every missing op fails with EOPNOTSUPP, as
 * libibverbs' dummy_ops do.
 */
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
  ibv_mw,
  ibv_mw_bind,
  ibv_pd,
  ibv_port_attr,
  ibv_qp,
  ibv_qp_attr,
  ibv_qp_init_attr,
  ibv_recv_wr,
  ibv_send_wr,
  ibv_srq,
  ibv_srq_attr,
  ibv_srq_init_attr,
  ibv_wc,
  ibv_cq_init_attr_ex,
  ibv_wc_ex,
  ibv_modify_cq_attr,
  ibv_qp_rate_limit_attr,
  ibv_qp_init_attr_ex,
  ibv_device_attr_ex,
  ibv_gid_entry,
  ibv_values_ex,
  ibv_qp_open_attr,
  ibv_xrcd,
  ibv_xrcd_init_attr,
} from './types.js';

/** Where a failed post leaves the first WR that was not accepted (C's `bad_wr`). */
export interface BadWr<T> {
  wr?: T | null;
}

export interface VerbsContextOps {
  query_device(ctx: ibv_context, attr: ibv_device_attr): number;
  query_port(ctx: ibv_context, port_num: number, attr: ibv_port_attr): number;
  query_gid(ctx: ibv_context, port_num: number, index: number, gid: ibv_gid): number;
  query_pkey(ctx: ibv_context, port_num: number, index: number): number;
  query_device_ex(ctx: ibv_context, attr: ibv_device_attr_ex): number;
  /** 0, or EINVAL (no such entry) / ENODATA (an empty entry). */
  query_gid_ex(ctx: ibv_context, port_num: number, index: number, entry: ibv_gid_entry, flags: number): number;
  query_rt_values(ctx: ibv_context, values: ibv_values_ex): number;
  close_device(ctx: ibv_context): number;
  alloc_pd(ctx: ibv_context): ibv_pd;
  dealloc_pd(pd: ibv_pd): number;
  reg_mr(pd: ibv_pd, buf: Uint8Array, access: number): ibv_mr;
  reg_mr_iova(pd: ibv_pd, buf: Uint8Array, iova: bigint, access: number): ibv_mr;
  /** rc: 0 or an IBV_REREG_MR_ERR_* code; errno: why (C's errno). */
  rereg_mr(mr: ibv_mr, flags: number, pd: ibv_pd | null, buf: Uint8Array | null, access: number): { rc: number; errno: number };
  alloc_null_mr(pd: ibv_pd): ibv_mr;
  dereg_mr(mr: ibv_mr): number;
  alloc_mw(pd: ibv_pd, type: number): ibv_mw;
  open_xrcd(ctx: ibv_context, attr: ibv_xrcd_init_attr): ibv_xrcd;
  close_xrcd(xrcd: ibv_xrcd): number;
  dealloc_mw(mw: ibv_mw): number;
  /** Type 1: post the bind WR; on success the provider sets mw.rkey to the new key. */
  bind_mw(qp: ibv_qp, mw: ibv_mw, mw_bind: ibv_mw_bind): number;
  alloc_buf(ctx: ibv_context, length: number, align: number): Uint8Array;
  free_buf(ctx: ibv_context, buf: Uint8Array): void;
  create_comp_channel(ctx: ibv_context): ibv_comp_channel;
  destroy_comp_channel(ch: ibv_comp_channel): number;
  create_cq(ctx: ibv_context, cqe: number, cq_context: unknown, channel: ibv_comp_channel | null, comp_vector: number): ibv_cq;
  destroy_cq(cq: ibv_cq): number;
  req_notify_cq(cq: ibv_cq, solicited_only: number): number;
  get_cq_event(ch: ibv_comp_channel): Promise<{ cq: ibv_cq; cq_context: unknown }>;
  ack_cq_events(cq: ibv_cq, nevents: number): void;
  poll_cq(cq: ibv_cq, num_entries: number, wc: ibv_wc[]): number;
  /** ibv_create_cq_ex: the provider CQ the ibv_cq_ex wraps. */
  create_cq_ex(ctx: ibv_context, attr: ibv_cq_init_attr_ex): ibv_cq;
  /** poll_cq that also fills completion_ts (the extended CQ's iterator). */
  poll_cq_ex(cq: ibv_cq, num_entries: number, wc: ibv_wc_ex[]): number;
  resize_cq(cq: ibv_cq, cqe: number): number;
  modify_cq(cq: ibv_cq, attr: ibv_modify_cq_attr): number;
  create_srq(pd: ibv_pd, attr: ibv_srq_init_attr): ibv_srq;
  /** ibv_create_srq_ex with IBV_SRQT_XRC (the verb has checked the comp_mask). */
  create_srq_xrc(pd: ibv_pd, xrcd: ibv_xrcd, cq: ibv_cq, attr: ibv_srq_init_attr): ibv_srq;
  get_srq_num(srq: ibv_srq, out: { srq_num: number }): number;
  modify_srq(srq: ibv_srq, attr: ibv_srq_attr, mask: number): number;
  query_srq(srq: ibv_srq, attr: ibv_srq_attr): number;
  destroy_srq(srq: ibv_srq): number;
  post_srq_recv(srq: ibv_srq, wr: ibv_recv_wr, bad_wr?: BadWr<ibv_recv_wr>): number;
  create_qp(pd: ibv_pd, attr: ibv_qp_init_attr): ibv_qp;
  modify_qp(qp: ibv_qp, attr: Partial<ibv_qp_attr>, mask: number): number;
  query_qp(qp: ibv_qp, attr: ibv_qp_attr, mask: number, init_attr: ibv_qp_init_attr): number;
  /** ibv_query_qp_data_in_order; absent: 0 (not guaranteed), as libibverbs' dummy op. */
  query_qp_data_in_order?(qp: ibv_qp, op: number, flags: number): number;
  /** ibv_resolve_eth_l2_from_gid: 0 with `mac` and `vid.vid` filled, or a negative errno. */
  resolve_eth_l2?(ctx: ibv_context, attr: ibv_ah_attr, mac: Uint8Array, vid: { vid: number }): number;
  /** ibv_modify_qp_rate_limit; absent: EOPNOTSUPP (the provider has no packet pacing). */
  modify_qp_rate_limit?(qp: ibv_qp, attr: ibv_qp_rate_limit_attr): number;
  destroy_qp(qp: ibv_qp): number;
  post_send(qp: ibv_qp, wr: ibv_send_wr, bad_wr?: BadWr<ibv_send_wr>): number;
  /** ibv_wr_complete: post the whole list, or nothing (the errno of the first WR refused). */
  post_send_all(qp: ibv_qp, wr: ibv_send_wr, bad_wr?: BadWr<ibv_send_wr>): number;
  create_qp_ex(ctx: ibv_context, attr: ibv_qp_init_attr_ex): ibv_qp;
  /** ibv_open_qp: another handle on an XRC receive QP of the domain. */
  open_qp(ctx: ibv_context, attr: ibv_qp_open_attr): ibv_qp;
  attach_mcast(qp: ibv_qp, gid: ibv_gid, lid: number): number;
  detach_mcast(qp: ibv_qp, gid: ibv_gid, lid: number): number;
  post_recv(qp: ibv_qp, wr: ibv_recv_wr, bad_wr?: BadWr<ibv_recv_wr>): number;
  create_ah(pd: ibv_pd, attr: ibv_ah_attr): ibv_ah;
  destroy_ah(ah: ibv_ah): number;
  get_async_event(ctx: ibv_context): Promise<ibv_async_event>;
  ack_async_event(event: ibv_async_event): void;
  /** Hardware counters by their Linux names (rxe/mlx5 hw_counters). */
  read_counters(ctx: ibv_context, port_num: number): Record<string, bigint>;
}

/** A device a provider can open. */
export interface ProviderDevice extends ibv_device {
  readonly provider: VerbsProvider;
}

export interface VerbsProvider {
  /** 'model' or 'rdma-core'. */
  readonly name: string;
  devices(): ProviderDevice[];
  guid(dev: ProviderDevice): bigint;
  /** ibv_get_device_index: the kernel's device index, or -1 where the provider cannot tell. */
  index(dev: ProviderDevice): number;
  open(dev: ProviderDevice): ibv_context & { ops: VerbsContextOps };
}
