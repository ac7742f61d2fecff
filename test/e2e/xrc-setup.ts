/**
 * XRC building blocks for the tests: domains, XRC SRQs, XRC send and
 * receive QPs, and the connection of a send QP to a receive QP (as
 * rdma-core's tests/test_xrc.py and ibv_xsrq_pingpong bring them up: the
 * send QP to RTS, the receive QP to RTR, each pointing at the other).
 */
import {
  IBV_ACCESS_LOCAL_WRITE,
  IBV_ACCESS_REMOTE_ATOMIC,
  IBV_ACCESS_REMOTE_READ,
  IBV_ACCESS_REMOTE_WRITE,
  IBV_MTU_1024,
  IBV_QP_ACCESS_FLAGS,
  IBV_QP_AV,
  IBV_QP_DEST_QPN,
  IBV_QP_INIT_ATTR_PD,
  IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
  IBV_QP_INIT_ATTR_XRCD,
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
  IBV_QPT_XRC_RECV,
  IBV_QPT_XRC_SEND,
  IBV_SRQ_INIT_ATTR_CQ,
  IBV_SRQ_INIT_ATTR_PD,
  IBV_SRQ_INIT_ATTR_TYPE,
  IBV_SRQ_INIT_ATTR_XRCD,
  IBV_SRQT_XRC,
  IBV_XRCD_INIT_ATTR_FD,
  IBV_XRCD_INIT_ATTR_OFLAGS,
  ibv_close_xrcd,
  ibv_create_qp_ex,
  ibv_create_srq_ex,
  ibv_destroy_qp,
  ibv_destroy_srq,
  ibv_get_srq_num,
  ibv_open_xrcd,
  newQpAttr,
  newQpCap,
} from '../../src/driver/verbs/index.js';
import type { ibv_cq, ibv_qp, ibv_srq, ibv_xrcd } from '../../src/driver/verbs/index.js';
import * as H from './harness.js';

export const XRC_SRQ_MASK = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
export const ACCESS = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

/** A private XRC domain (fd -1), closed at the device's cleanup. */
export function openXrcd(d: H.Dev): ibv_xrcd {
  const x = ibv_open_xrcd(d.ctx, { comp_mask: IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS, fd: -1, oflags: 0 });
  d.cleanup.push(() => void ibv_close_xrcd(x));
  return x;
}

export interface XrcSrq {
  readonly srq: ibv_srq;
  /** What a sender names in the XRCETH (ibv_get_srq_num). */
  readonly num: number;
}

export function xrcSrq(d: H.Dev, xrcd: ibv_xrcd, cq: ibv_cq, maxWr = 64, pd = d.pd): XrcSrq {
  const srq = ibv_create_srq_ex(d.ctx, {
    comp_mask: XRC_SRQ_MASK,
    srq_type: IBV_SRQT_XRC,
    pd,
    xrcd,
    cq,
    srq_context: null,
    attr: { max_wr: maxWr, max_sge: 2, srq_limit: 0 },
  });
  d.cleanup.push(() => void ibv_destroy_srq(srq));
  const out = { srq_num: 0 };
  if (ibv_get_srq_num(srq, out) !== 0) throw new Error('ibv_get_srq_num failed');
  return { srq, num: out.srq_num };
}

export function xrcRecvQp(d: H.Dev, xrcd: ibv_xrcd): ibv_qp {
  const qp = ibv_create_qp_ex(d.ctx, {
    comp_mask: IBV_QP_INIT_ATTR_XRCD,
    xrcd,
    qp_type: IBV_QPT_XRC_RECV,
    send_cq: null,
    recv_cq: null,
    cap: newQpCap(),
    sq_sig_all: 0,
  });
  d.cleanup.push(() => void ibv_destroy_qp(qp));
  return qp;
}

export function xrcSendQp(d: H.Dev, scq: ibv_cq, sendOps = 0): ibv_qp {
  const cap = newQpCap();
  cap.max_send_wr = 128;
  cap.max_send_sge = 2;
  cap.max_inline_data = 64;
  const qp = ibv_create_qp_ex(d.ctx, {
    comp_mask: IBV_QP_INIT_ATTR_PD | (sendOps ? IBV_QP_INIT_ATTR_SEND_OPS_FLAGS : 0),
    pd: d.pd,
    send_ops_flags: sendOps,
    qp_type: IBV_QPT_XRC_SEND,
    send_cq: scq,
    recv_cq: null,
    cap,
    sq_sig_all: 0,
  });
  d.cleanup.push(() => void ibv_destroy_qp(qp));
  return qp;
}

export interface XrcConnOpts {
  psn?: number;
  timeout?: number;
  retryCnt?: number;
  rnrRetry?: number;
  mtu?: number;
}

/** Send QP on `sd` → RTS, receive QP on `rd` → RTR, pointing at each other. */
export function connectXrc(sd: H.Dev, send: ibv_qp, rd: H.Dev, recv: ibv_qp, o: XrcConnOpts = {}): void {
  const psn = o.psn ?? 0x3000;
  const mtu = o.mtu ?? IBV_MTU_1024;
  for (const qp of [send, recv]) {
    const a = newQpAttr();
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = H.PORT;
    a.qp_access_flags = ACCESS;
    H.modifyOk(qp, a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 'XRC RESET→INIT');
  }
  const rtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
  const r = newQpAttr();
  r.qp_state = IBV_QPS_RTR;
  r.path_mtu = mtu;
  r.dest_qp_num = send.qp_num;
  r.rq_psn = psn;
  r.ah_attr = H.avTo(rd, sd);
  r.max_dest_rd_atomic = 16;
  r.min_rnr_timer = 1;
  H.modifyOk(recv, r, rtrMask | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER, 'XRC_RECV INIT→RTR');
  const s = newQpAttr();
  s.qp_state = IBV_QPS_RTR;
  s.path_mtu = mtu;
  s.dest_qp_num = recv.qp_num;
  s.rq_psn = 0;
  s.ah_attr = H.avTo(sd, rd);
  H.modifyOk(send, s, rtrMask, 'XRC_SEND INIT→RTR');
  const t = newQpAttr();
  t.qp_state = IBV_QPS_RTS;
  t.sq_psn = psn;
  t.timeout = o.timeout ?? 17;
  t.retry_cnt = o.retryCnt ?? 7;
  t.rnr_retry = o.rnrRetry ?? 7;
  t.max_rd_atomic = 16;
  H.modifyOk(send, t, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC, 'XRC_SEND RTR→RTS');
}

/** An XRC send WR: `wr` with the remote SRQ number. */
export function toSrq<T extends { qp_type?: { xrc?: { remote_srqn: number } } }>(wr: T, srqn: number): T {
  wr.qp_type = { xrc: { remote_srqn: srqn } };
  return wr;
}
