/**
 * Two connected RC QPs on two model devices, through the verbs API only:
 * what the verbs benchmarks measure with. Modeled on rc_pingpong's setup.
 */
import {
  IBV_ACCESS_LOCAL_WRITE,
  IBV_ACCESS_REMOTE_READ,
  IBV_ACCESS_REMOTE_WRITE,
  IBV_MTU_4096,
  IBV_QP_ACCESS_FLAGS,
  IBV_QP_AV,
  IBV_QP_DEST_QPN,
  IBV_QP_MAX_DEST_RD_ATOMIC,
  IBV_QP_MAX_QP_RD_ATOMIC,
  IBV_QP_MIN_RNR_TIMER,
  IBV_QP_PATH_MTU,
  IBV_QP_PKEY_INDEX,
  IBV_QP_PORT,
  IBV_QP_RETRY_CNT,
  IBV_QP_RNR_RETRY,
  IBV_QP_RQ_PSN,
  IBV_QP_SQ_PSN,
  IBV_QP_STATE,
  IBV_QP_TIMEOUT,
  IBV_QPS_INIT,
  IBV_QPS_RTR,
  IBV_QPS_RTS,
  IBV_QPT_RC,
  ibv_alloc_pd,
  ibv_create_comp_channel,
  ibv_create_cq,
  ibv_create_qp,
  ibv_get_device_list,
  ibv_modify_qp,
  ibv_open_device,
  ibv_query_gid,
  ibv_reg_mr,
  newGid,
  newQpAttr,
  rnic_alloc_buf,
  type ibv_comp_channel,
  type ibv_context,
  type ibv_cq,
  type ibv_mr,
  type ibv_qp,
} from '../src/index.js';

export interface Side {
  ctx: ibv_context;
  cq: ibv_cq;
  /** The CQ's completion channel, when rcPair was asked for one. */
  channel: ibv_comp_channel | null;
  qp: ibv_qp;
  buf: Uint8Array;
  mr: ibv_mr;
}

function check(rc: number, what: string): void {
  if (rc !== 0) throw new Error(`${what} failed: ${rc}`);
}

/** GID index 3: ::ffff:192.0.2.x, RoCE v2 (see the default GID table). */
const GID_INDEX = 3;

/**
 * `access`: more IBV_ACCESS_* flags for the MRs and the QPs (IBV_ACCESS_REMOTE_ATOMIC for atomics);
 * `channel`: each CQ gets a completion channel (for ibv_req_notify_cq / ibv_get_cq_event).
 */
export function rcPair(bufBytes: number, depth: number, access = 0, channel = false): [Side, Side] {
  const devs = ibv_get_device_list();
  if (devs.length < 2) throw new Error('need two model devices');
  const sides = [0, 1].map((i): Side => {
    const ctx = ibv_open_device(devs[i]!);
    const pd = ibv_alloc_pd(ctx);
    const ch = channel ? ibv_create_comp_channel(ctx) : null;
    const cq = ibv_create_cq(ctx, depth * 2, null, ch, 0);
    const qp = ibv_create_qp(pd, {
      send_cq: cq,
      recv_cq: cq,
      qp_type: IBV_QPT_RC,
      sq_sig_all: 0,
      cap: { max_send_wr: depth, max_recv_wr: depth, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 64 },
    });
    const buf = rnic_alloc_buf(ctx, bufBytes);
    const mr = ibv_reg_mr(pd, buf, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | access);
    const a = newQpAttr();
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | access;
    check(ibv_modify_qp(qp, a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 'INIT');
    return { ctx, cq, channel: ch, qp, buf, mr };
  }) as [Side, Side];
  for (const [me, peer] of [
    [sides[0], sides[1]],
    [sides[1], sides[0]],
  ] as const) {
    const gid = newGid();
    check(ibv_query_gid(peer.ctx, 1, GID_INDEX, gid), 'query_gid');
    const a = newQpAttr();
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_4096;
    a.dest_qp_num = peer.qp.qp_num;
    a.rq_psn = 0;
    a.max_dest_rd_atomic = 16;
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = gid;
    a.ah_attr.grh.sgid_index = GID_INDEX;
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.port_num = 1;
    check(
      ibv_modify_qp(me.qp, a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
      'RTR',
    );
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.sq_psn = 0;
    a.max_rd_atomic = 16;
    check(ibv_modify_qp(me.qp, a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC), 'RTS');
  }
  return sides;
}
