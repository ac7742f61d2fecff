/**
 * The model provider's operations table (rdma-core's `rxe_ctx_ops`): every
 * VerbsContextOps entry, each a `model_*` function of this folder.
 */
import type { VerbsContextOps } from '../verbs/ops.js';
import { model_create_ah, model_destroy_ah } from './ah.js';
import { model_resolve_eth_l2 } from './av.js';
import { model_query_qp_data_in_order } from './data-order.js';
import { model_ack_async_event, model_get_async_event } from './async.js';
import { model_alloc_buf, model_free_buf } from './buf.js';
import { model_close_device } from './context.js';
import { model_read_counters } from './counters.js';
import {
  model_ack_cq_events,
  model_create_comp_channel,
  model_create_cq,
  model_create_cq_ex,
  model_modify_cq,
  model_poll_cq_ex,
  model_resize_cq,
  model_destroy_comp_channel,
  model_destroy_cq,
  model_get_cq_event,
  model_poll_cq,
  model_req_notify_cq,
} from './cq.js';
import { model_alloc_pd, model_dealloc_pd, model_dereg_mr, model_reg_mr, model_reg_mr_iova, model_rereg_mr, model_alloc_null_mr } from './pd-mr.js';
import { model_alloc_mw, model_bind_mw, model_dealloc_mw } from './mw.js';
import { model_post_recv, model_post_send, model_post_send_all, model_post_srq_recv } from './post.js';
import {
  model_attach_mcast,
  model_create_qp,
  model_create_qp_ex,
  model_destroy_qp,
  model_detach_mcast,
  model_modify_qp,
  model_modify_qp_rate_limit,
  model_query_qp,
} from './qp.js';
import {
  model_query_device,
  model_query_device_ex,
  model_query_gid,
  model_query_gid_ex,
  model_query_pkey,
  model_query_port,
  model_query_rt_values,
} from './query.js';
import { model_close_xrcd, model_open_xrcd } from './xrcd.js';
import { model_open_qp } from './xrc-qp.js';
import { model_create_srq, model_create_srq_xrc, model_destroy_srq, model_get_srq_num, model_modify_srq, model_query_srq } from './srq.js';

export const model_ctx_ops: VerbsContextOps = Object.freeze({
  query_device: model_query_device,
  query_port: model_query_port,
  query_gid: model_query_gid,
  query_pkey: model_query_pkey,
  query_device_ex: model_query_device_ex,
  query_gid_ex: model_query_gid_ex,
  query_rt_values: model_query_rt_values,
  close_device: model_close_device,
  alloc_pd: model_alloc_pd,
  dealloc_pd: model_dealloc_pd,
  reg_mr: model_reg_mr,
  reg_mr_iova: model_reg_mr_iova,
  rereg_mr: model_rereg_mr,
  alloc_null_mr: model_alloc_null_mr,
  dereg_mr: model_dereg_mr,
  alloc_mw: model_alloc_mw,
  dealloc_mw: model_dealloc_mw,
  bind_mw: model_bind_mw,
  open_xrcd: model_open_xrcd,
  create_srq_xrc: model_create_srq_xrc,
  get_srq_num: model_get_srq_num,
  close_xrcd: model_close_xrcd,
  alloc_buf: model_alloc_buf,
  free_buf: model_free_buf,
  create_comp_channel: model_create_comp_channel,
  destroy_comp_channel: model_destroy_comp_channel,
  create_cq: model_create_cq,
  destroy_cq: model_destroy_cq,
  req_notify_cq: model_req_notify_cq,
  get_cq_event: model_get_cq_event,
  ack_cq_events: model_ack_cq_events,
  poll_cq: model_poll_cq,
  create_cq_ex: model_create_cq_ex,
  poll_cq_ex: model_poll_cq_ex,
  resize_cq: model_resize_cq,
  modify_cq: model_modify_cq,
  create_srq: model_create_srq,
  modify_srq: model_modify_srq,
  query_srq: model_query_srq,
  destroy_srq: model_destroy_srq,
  post_srq_recv: model_post_srq_recv,
  create_qp: model_create_qp,
  modify_qp: model_modify_qp,
  modify_qp_rate_limit: model_modify_qp_rate_limit,
  query_qp_data_in_order: model_query_qp_data_in_order,
  resolve_eth_l2: model_resolve_eth_l2,
  query_qp: model_query_qp,
  destroy_qp: model_destroy_qp,
  post_send: model_post_send,
  post_send_all: model_post_send_all,
  create_qp_ex: model_create_qp_ex,
  open_qp: model_open_qp,
  attach_mcast: model_attach_mcast,
  detach_mcast: model_detach_mcast,
  post_recv: model_post_recv,
  create_ah: model_create_ah,
  destroy_ah: model_destroy_ah,
  get_async_event: model_get_async_event,
  ack_async_event: model_ack_async_event,
  read_counters: model_read_counters,
});
