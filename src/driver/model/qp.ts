/**
 * Queue pairs: CREATE_QP / MODIFY_QP / QUERY_QP / DESTROY_QP.
 *
 * Create: each ring has 2^k entries, the smallest power of two ≥ the
 * requested max_*_wr; strides come from sendWqeStride / recvWqeStride; one
 * 8-byte doorbell record holds both producer counters. What a stride really
 * holds (sendWqeCaps / recvWqeMaxSge, capped by the device limits) is given
 * to the device and reported back in init_attr.cap, as mlx5 reports its
 * larger caps. A QP with an SRQ has no receive ring.
 *
 * Modify: every ibv_qp_attr field whose mask bit is set goes into the
 * MODIFY_QP block (PSNs and QPNs masked to 24 bits); the device enforces the
 * state machine and the ranges and changes nothing on failure. Address
 * vectors get their destination MAC here. On success the driver updates its
 * cached `qp.state` (as libibverbs does), and on entering RESET zeroes its
 * producer counters and the doorbell record, as the manual requires.
 */
import {
  errno,
  IBV_QP_ACCESS_FLAGS,
  IBV_QP_ALT_PATH,
  IBV_QP_AV,
  IBV_QP_CAP,
  IBV_QP_CUR_STATE,
  IBV_QP_DEST_QPN,
  IBV_QP_EN_SQD_ASYNC_NOTIFY,
  IBV_QP_MAX_DEST_RD_ATOMIC,
  IBV_QP_MAX_QP_RD_ATOMIC,
  IBV_QP_MIN_RNR_TIMER,
  IBV_QP_PATH_MIG_STATE,
  IBV_QP_PATH_MTU,
  IBV_QP_PKEY_INDEX,
  IBV_QP_PORT,
  IBV_QP_QKEY,
  IBV_QP_RATE_LIMIT,
  IBV_QP_RETRY_CNT,
  IBV_QP_RNR_RETRY,
  IBV_QP_RQ_PSN,
  IBV_QP_SQ_PSN,
  IBV_QP_STATE,
  IBV_QP_TIMEOUT,
  IBV_QPS_RESET,
  IBV_QPT_RC,
  IBV_QPT_UC,
  IBV_QPT_UD,
  IBV_QPT_XRC_RECV,
  IBV_QPT_XRC_SEND,
  IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
  IBV_QP_EX_WITH_ATOMIC_WRITE,
  IBV_QP_EX_WITH_FLUSH,
  IBV_WR_ATOMIC_WRITE,
  IBV_WR_FLUSH,
  IBV_QP_EX_WITH_RDMA_READ,
  IBV_QP_EX_WITH_RDMA_WRITE,
  IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
  IBV_QP_EX_WITH_SEND,
  IBV_QP_EX_WITH_SEND_WITH_IMM,
  IBV_QP_EX_WITH_LOCAL_INV,
  IBV_QP_EX_WITH_BIND_MW,
  IBV_QP_EX_WITH_SEND_WITH_INV,
  IBV_QP_INIT_ATTR_CREATE_FLAGS,
  IBV_QP_CREATE_BLOCK_SELF_MCAST_LB,
  IBV_QP_INIT_ATTR_IND_TABLE,
  IBV_QP_INIT_ATTR_MAX_TSO_HEADER,
  IBV_QP_INIT_ATTR_PD,
  IBV_QP_INIT_ATTR_RX_HASH,
  IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
  IBV_QP_INIT_ATTR_XRCD,
  IBV_WR_ATOMIC_CMP_AND_SWP,
  IBV_WR_ATOMIC_FETCH_AND_ADD,
  IBV_WR_BIND_MW,
  IBV_WR_LOCAL_INV,
  IBV_WR_RDMA_READ,
  IBV_WR_RDMA_WRITE,
  IBV_WR_RDMA_WRITE_WITH_IMM,
  IBV_WR_SEND,
  IBV_WR_SEND_WITH_IMM,
  IBV_WR_SEND_WITH_INV,
} from '../../device/abi/constants.js';
import { Cmd, CreateQpFlag, QP_RATE_LIMIT_MAX_KBPS, QP_RATE_LIMIT_MIN_KBPS } from '../../device/commands.js';
import { ringAlign } from '../../device/host-memory.js';
import { log2, recvWqeMaxSge, recvWqeStride, sendWqeCaps, sendWqeDataOffset, sendWqeStride, MAX_WQE_STRIDE } from '../../device/wqe.js';
import { VerbsError } from '../verbs/errno-error.js';
import { newQpCap } from '../verbs/structs.js';
import type { ibv_context, ibv_gid, ibv_pd, ibv_qp, ibv_qp_attr, ibv_qp_init_attr, ibv_qp_init_attr_ex, ibv_qp_rate_limit_attr } from '../verbs/types.js';
import { isU32 } from './check.js';
import { model_drop_async_events } from './async.js';
import { ahAttrFrom, avValues, prefixed } from './av.js';
import { model_cmd } from './cmd.js';
import { model_live, type ModelContext } from './context.js';
import { ModelCq, ModelPd, ModelQp, ModelSrq } from './objects.js';
import { model_create_xrc_recv_qp, releaseXrcRecv } from './xrc-qp.js';

const bit = (op: number) => 1 << op;

/** IBV_WR opcodes valid per QP type (device manual, table of section 6.1). */
const OPCODES_UD = bit(IBV_WR_SEND) | bit(IBV_WR_SEND_WITH_IMM);
const OPCODES_UC = OPCODES_UD | bit(IBV_WR_RDMA_WRITE) | bit(IBV_WR_RDMA_WRITE_WITH_IMM) | bit(IBV_WR_LOCAL_INV) | bit(IBV_WR_BIND_MW);
const OPCODES_RC =
  OPCODES_UC |
  bit(IBV_WR_RDMA_READ) |
  bit(IBV_WR_ATOMIC_CMP_AND_SWP) |
  bit(IBV_WR_ATOMIC_FETCH_AND_ADD) |
  bit(IBV_WR_SEND_WITH_INV) |
  bit(IBV_WR_ATOMIC_WRITE) |
  bit(IBV_WR_FLUSH);

/** XRC has every RC operation but ATOMIC_WRITE and FLUSH (IBTA Table 38 gives XRC no codes for them). */
const OPCODES_XRC = OPCODES_RC & ~(bit(IBV_WR_ATOMIC_WRITE) | bit(IBV_WR_FLUSH));

export function opcodeMask(qpType: number): number {
  switch (qpType) {
    case IBV_QPT_RC:
      return OPCODES_RC;
    case IBV_QPT_XRC_SEND:
      return OPCODES_XRC;
    case IBV_QPT_UC:
      return OPCODES_UC;
    case IBV_QPT_UD:
      return OPCODES_UD;
    default:
      return 0;
  }
}

function nextPow2(n: number): number {
  return n <= 1 ? 1 : 2 ** Math.ceil(Math.log2(n));
}

function isCount(v: unknown, max: number): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= max;
}

/** IBV_QP_EX_WITH_* the model's QP types have (the ibv_wr_* builders of section 6.1's opcodes). */
const SEND_OPS_UD = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
const SEND_OPS_UC = SEND_OPS_UD | IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW;
const SEND_OPS_RC =
  SEND_OPS_UC |
  IBV_QP_EX_WITH_RDMA_READ |
  IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
  IBV_QP_EX_WITH_SEND_WITH_INV |
  IBV_QP_EX_WITH_ATOMIC_WRITE |
  IBV_QP_EX_WITH_FLUSH;

const SEND_OPS_XRC = SEND_OPS_RC & ~(IBV_QP_EX_WITH_ATOMIC_WRITE | IBV_QP_EX_WITH_FLUSH);

export function sendOpsMask(qpType: number): number {
  switch (qpType) {
    case IBV_QPT_RC:
      return SEND_OPS_RC;
    case IBV_QPT_XRC_SEND:
      return SEND_OPS_XRC;
    case IBV_QPT_UC:
      return SEND_OPS_UC;
    case IBV_QPT_UD:
      return SEND_OPS_UD;
    default:
      return 0;
  }
}

/**
 * ibv_create_qp_ex: the QP of ibv_create_qp after the checks rxe makes of
 * the extended attributes: a PD is required (IBV_QP_INIT_ATTR_PD) but for
 * an XRC receive QP, which needs an XRC domain (IBV_QP_INIT_ATTR_XRCD) and
 * nothing else (xrc-qp.ts); creation flags, TSO headers, RSS tables and
 * hashes are not modelled (EOPNOTSUPP); send_ops_flags naming a builder the
 * QP type does not have is EOPNOTSUPP.
 */
export function model_create_qp_ex(ibctx: ibv_context, init: ibv_qp_init_attr_ex): ibv_qp {
  const fail = (n: number, why: string): never => {
    throw new VerbsError(n, `ibv_create_qp_ex: ${why}`);
  };
  const mask = init.comp_mask;
  if (!isU32(mask)) fail(errno.EINVAL, `comp_mask ${String(mask)} is not a uint32_t`);
  const unsupported = IBV_QP_INIT_ATTR_MAX_TSO_HEADER | IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH;
  if (mask & unsupported) fail(errno.EOPNOTSUPP, `comp_mask 0x${(mask & unsupported).toString(16)}: TSO and RSS are not modelled`);
  if (mask & ~(unsupported | IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS | IBV_QP_INIT_ATTR_CREATE_FLAGS))
    fail(errno.EINVAL, `unknown comp_mask bits 0x${mask.toString(16)}`);
  // Of the creation flags only multicast loopback blocking is modelled (UD): the others are other hardware's.
  const createFlags = mask & IBV_QP_INIT_ATTR_CREATE_FLAGS ? init.create_flags : 0;
  if (!isU32(createFlags)) fail(errno.EINVAL, `create_flags ${String(createFlags)} is not a uint32_t`);
  if (createFlags! & ~IBV_QP_CREATE_BLOCK_SELF_MCAST_LB)
    fail(
      errno.EOPNOTSUPP,
      `create_flags 0x${(createFlags! & ~IBV_QP_CREATE_BLOCK_SELF_MCAST_LB).toString(16)} are not modelled (only IBV_QP_CREATE_BLOCK_SELF_MCAST_LB)`,
    );
  if (createFlags && init.qp_type !== IBV_QPT_UD) fail(errno.EINVAL, 'IBV_QP_CREATE_BLOCK_SELF_MCAST_LB is for UD QPs');
  if (init.qp_type === IBV_QPT_XRC_RECV) {
    if (!(mask & IBV_QP_INIT_ATTR_XRCD) || !init.xrcd) fail(errno.EINVAL, 'an XRC receive QP needs IBV_QP_INIT_ATTR_XRCD and an xrcd');
    if (mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS && init.send_ops_flags !== 0) fail(errno.EOPNOTSUPP, 'an XRC receive QP has no send queue (send_ops_flags)');
    const ctx = ibctx as ModelContext;
    model_live(ctx, 'ibv_create_qp_ex');
    return model_create_xrc_recv_qp(ctx, init);
  }
  if (!(mask & IBV_QP_INIT_ATTR_PD) || !init.pd) fail(errno.EINVAL, 'IBV_QP_INIT_ATTR_PD and a pd are required');
  const pd = init.pd as ModelPd;
  if (!(pd instanceof ModelPd) || pd.context !== ibctx) fail(errno.EINVAL, 'pd is not a PD of this context');
  if (mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
    const ops = init.send_ops_flags;
    if (!isU32(ops)) fail(errno.EINVAL, `send_ops_flags ${String(ops)} is not a uint32_t`);
    const have = sendOpsMask(init.qp_type);
    if (ops! & ~have)
      fail(
        errno.EOPNOTSUPP,
        `send_ops_flags 0x${(ops! & ~have).toString(16)} are not supported on QP type ${String(init.qp_type)} (supported: 0x${have.toString(16)})`,
      );
  }
  return model_create_qp(pd, init, createFlags!);
}

/** `createFlags`: IBV_QP_CREATE_* from ibv_create_qp_ex (checked there); ibv_create_qp has none. */
export function model_create_qp(ibpd: ibv_pd, init: ibv_qp_init_attr, createFlags = 0): ibv_qp {
  const pd = ibpd as ModelPd;
  if (!(pd instanceof ModelPd)) throw new VerbsError(errno.EINVAL, 'ibv_create_qp: not an ibv_pd of the model provider');
  const ctx = pd.context;
  model_live(ctx, 'ibv_create_qp');
  const fail = (n: number, why: string): never => {
    throw new VerbsError(n, `ibv_create_qp: ${why}`);
  };
  if (pd.destroyed) fail(errno.EINVAL, 'the PD was deallocated');
  const type = init.qp_type;
  if (type === IBV_QPT_XRC_RECV) fail(errno.EINVAL, 'an XRC receive QP needs an XRC domain: create it with ibv_create_qp_ex and IBV_QP_INIT_ATTR_XRCD');
  if (type !== IBV_QPT_RC && type !== IBV_QPT_UC && type !== IBV_QPT_UD && type !== IBV_QPT_XRC_SEND) {
    fail(Number.isInteger(type) ? errno.EOPNOTSUPP : errno.EINVAL, `QP type ${String(type)} is not supported (RC, UC, UD, XRC_SEND, XRC_RECV)`);
  }
  // An XRC send QP has no receive side: the kernel ignores recv_cq, srq and the receive caps (uverbs create_qp).
  const xrcSend = type === IBV_QPT_XRC_SEND;
  const scq = init.send_cq as ModelCq | null;
  const rcq = xrcSend ? null : (init.recv_cq as ModelCq | null);
  if (!(scq instanceof ModelCq) || scq.context !== ctx || scq.destroyed) fail(errno.EINVAL, 'send_cq is not a CQ of this context');
  if (!xrcSend && (!(rcq instanceof ModelCq) || rcq.context !== ctx || rcq.destroyed)) fail(errno.EINVAL, 'recv_cq is not a CQ of this context');
  const srq = xrcSend ? null : ((init.srq ?? null) as ModelSrq | null);
  if (srq !== null && (!(srq instanceof ModelSrq) || srq.context !== ctx || srq.destroyed)) fail(errno.EINVAL, 'srq is not an SRQ of this context');
  // The kernel's uverbs create_qp: an XRC SRQ takes only XRC receive QPs' requests (their XRCETH names it).
  if (srq?.xrc) fail(errno.EINVAL, 'srq is an XRC SRQ: only XRC receive QPs deliver into it');
  const cap = init.cap ?? newQpCap();
  if (typeof cap !== 'object') fail(errno.EINVAL, 'cap is not an ibv_qp_cap');
  const L = ctx.limits;
  if (!isCount(cap.max_send_wr, L.maxQpWr)) fail(errno.EINVAL, `max_send_wr ${String(cap.max_send_wr)} > ${L.maxQpWr}`);
  if (!isCount(cap.max_send_sge, L.maxSge)) fail(errno.EINVAL, `max_send_sge ${String(cap.max_send_sge)} > ${L.maxSge}`);
  if (!isCount(cap.max_inline_data, L.maxInlineData)) fail(errno.EINVAL, `max_inline_data ${String(cap.max_inline_data)} > ${L.maxInlineData}`);
  if (!srq && !xrcSend) {
    if (!isCount(cap.max_recv_wr, L.maxQpWr)) fail(errno.EINVAL, `max_recv_wr ${String(cap.max_recv_wr)} > ${L.maxQpWr}`);
    if (!isCount(cap.max_recv_sge, L.maxSge)) fail(errno.EINVAL, `max_recv_sge ${String(cap.max_recv_sge)} > ${L.maxSge}`);
  }

  // Send queue geometry.
  let sqSize = 0;
  let sqLogStride = 0;
  let maxSendSge = cap.max_send_sge;
  let maxInline = cap.max_inline_data;
  if (cap.max_send_wr > 0) {
    sqSize = nextPow2(cap.max_send_wr);
    const stride = sendWqeStride(type, cap.max_send_sge, cap.max_inline_data);
    if (stride > MAX_WQE_STRIDE) fail(errno.EINVAL, `a send WQE of ${stride} bytes exceeds ${MAX_WQE_STRIDE}`);
    sqLogStride = log2(stride);
    const held = sendWqeCaps(type, stride);
    maxSendSge = Math.min(held.maxSendSge, L.maxSge);
    maxInline = Math.min(held.maxInlineData, L.maxInlineData);
  }
  // Receive queue geometry.
  let rqSize = 0;
  let rqLogStride = 0;
  let maxRecvSge = srq || xrcSend ? 0 : cap.max_recv_sge;
  if (!srq && !xrcSend && cap.max_recv_wr > 0) {
    rqSize = nextPow2(cap.max_recv_wr);
    const stride = recvWqeStride(cap.max_recv_sge);
    if (stride > MAX_WQE_STRIDE) fail(errno.EINVAL, `a receive WQE of ${stride} bytes exceeds ${MAX_WQE_STRIDE}`);
    rqLogStride = log2(stride);
    maxRecvSge = Math.min(recvWqeMaxSge(stride), L.maxSge);
  }

  const mem = ctx.mem;
  const allocations: number[] = [];
  const alloc = (len: number, align: number) => {
    try {
      const b = mem.alloc(len, align);
      allocations.push(b.addrNum);
      return b;
    } catch (e) {
      for (const a of allocations) mem.free(a);
      return fail(errno.ENOMEM, (e as Error).message);
    }
  };
  const sqRing = sqSize ? alloc(sqSize << sqLogStride, ringAlign(sqSize << sqLogStride)) : null;
  const rqRing = rqSize ? alloc(rqSize << rqLogStride, ringAlign(rqSize << rqLogStride)) : null;
  const rec = alloc(8, 64);
  const r = model_cmd(ctx, Cmd.CREATE_QP, {
    qpType: type,
    flags:
      (init.sq_sig_all ? CreateQpFlag.SQ_SIG_ALL : 0) |
      (srq ? CreateQpFlag.HAS_SRQ : 0) |
      (createFlags & IBV_QP_CREATE_BLOCK_SELF_MCAST_LB ? CreateQpFlag.BLOCK_SELF_MCAST_LB : 0),
    pdn: pd.pdn,
    sendCqn: scq!.cqn,
    recvCqn: rcq ? rcq.cqn : 0,
    srqn: srq ? srq.srqn : 0,
    xrcdn: 0,
    sqRingAddr: sqRing ? sqRing.addr : 0n,
    rqRingAddr: rqRing ? rqRing.addr : 0n,
    dbrecAddr: rec.addr,
    sqLogSize: sqSize ? log2(sqSize) : 0,
    sqLogStride,
    rqLogSize: rqSize ? log2(rqSize) : 0,
    rqLogStride,
    maxSendSge,
    maxRecvSge,
    maxInlineData: maxInline,
  });
  if (r.errno) {
    for (const a of allocations) mem.free(a);
    fail(r.errno, r.what);
  }
  const qp = new ModelQp(
    ctx,
    init.qp_context,
    pd,
    scq!,
    rcq,
    srq,
    r.out['qpn'] as number,
    type,
    init.sq_sig_all ? 1 : 0,
    {
      size: sqSize,
      logStride: sqLogStride,
      ringAddr: sqRing ? sqRing.addrNum : mem.baseNum,
      maxSge: maxSendSge,
      maxInline,
      dataOff: sendWqeDataOffset(type),
      opMask: opcodeMask(type),
    },
    { size: rqSize, logStride: rqLogStride, ringAddr: rqRing ? rqRing.addrNum : mem.baseNum, maxSge: maxRecvSge },
    rec.addrNum,
    allocations,
  );
  qp.state = IBV_QPS_RESET;
  // ibv_create_qp reports the actual capabilities back in init_attr.cap.
  if (init.cap) {
    init.cap.max_send_wr = sqSize;
    init.cap.max_send_sge = maxSendSge;
    init.cap.max_inline_data = maxInline;
    init.cap.max_recv_wr = rqSize;
    init.cap.max_recv_sge = maxRecvSge;
  }
  ctx.qps.set(qp.qp_num, qp);
  return qp;
}

/** ibv_destroy_qp (EBUSY while reported async events are unacknowledged). */
export function model_destroy_qp(ibqp: ibv_qp): number {
  const qp = ibqp as ModelQp;
  if (!(qp instanceof ModelQp)) return errno.EINVAL;
  const ctx = qp.context;
  if (qp.destroyed || ctx.closed) return errno.EINVAL;
  if (qp.asyncEventsReported !== qp.asyncEventsAcked) return errno.EBUSY;
  if (qp.xrcShare) return releaseXrcRecv(qp, qp.xrcShare);
  const r = model_cmd(ctx, Cmd.DESTROY_QP, { qpn: qp.qp_num });
  if (r.errno) return r.errno;
  // The QP stays in ctx.qps until its number is reused: CQEs of it still in a
  // CQ must free their SRQ entries when polled (mlx5 cleans the CQ instead).
  qp.destroyed = true;
  for (const a of qp.allocations) ctx.mem.free(a);
  model_drop_async_events(ctx, 'qp', qp.qp_num);
  return 0;
}

/** The MODIFY_QP input for (attr, mask), or an errno. */
function modifyInput(ctx: ModelContext, qp: ModelQp, attr: Partial<ibv_qp_attr>, mask: number): Record<string, unknown> | number {
  const v: Record<string, unknown> = { qpn: qp.qp_num, attrMask: mask >>> 0 };
  const num = (x: unknown) => (x === undefined ? 0 : x);
  // Whole numbers are cut to their C width (a PSN to 24 bits, as the kernel does); anything else
  // (NaN, 1.5, a bigint, a string) goes to the device as it is and fails its field's range check.
  const whole = (x: unknown): x is number => typeof x === 'number' && Number.isInteger(x);
  if (mask & IBV_QP_STATE) v['qpState'] = num(attr.qp_state);
  if (mask & IBV_QP_CUR_STATE) v['curQpState'] = num(attr.cur_qp_state);
  if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY) v['enSqdAsyncNotify'] = attr.en_sqd_async_notify ? 1 : 0;
  if (mask & IBV_QP_ACCESS_FLAGS) v['qpAccessFlags'] = whole(attr.qp_access_flags) ? attr.qp_access_flags >>> 0 : num(attr.qp_access_flags);
  if (mask & IBV_QP_PKEY_INDEX) v['pkeyIndex'] = num(attr.pkey_index);
  if (mask & IBV_QP_PORT) v['portNum'] = num(attr.port_num);
  if (mask & IBV_QP_QKEY) v['qkey'] = whole(attr.qkey) ? attr.qkey >>> 0 : num(attr.qkey);
  if (mask & IBV_QP_PATH_MTU) v['pathMtu'] = num(attr.path_mtu);
  if (mask & IBV_QP_TIMEOUT) v['timeout'] = num(attr.timeout);
  if (mask & IBV_QP_RETRY_CNT) v['retryCnt'] = num(attr.retry_cnt);
  if (mask & IBV_QP_RNR_RETRY) v['rnrRetry'] = num(attr.rnr_retry);
  if (mask & IBV_QP_RQ_PSN) v['rqPsn'] = whole(attr.rq_psn) ? attr.rq_psn & 0xffffff : num(attr.rq_psn);
  if (mask & IBV_QP_SQ_PSN) v['sqPsn'] = whole(attr.sq_psn) ? attr.sq_psn & 0xffffff : num(attr.sq_psn);
  if (mask & IBV_QP_MAX_QP_RD_ATOMIC) v['maxRdAtomic'] = num(attr.max_rd_atomic);
  if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) v['maxDestRdAtomic'] = num(attr.max_dest_rd_atomic);
  if (mask & IBV_QP_MIN_RNR_TIMER) v['minRnrTimer'] = num(attr.min_rnr_timer);
  if (mask & IBV_QP_PATH_MIG_STATE) v['pathMigState'] = num(attr.path_mig_state);
  if (mask & IBV_QP_DEST_QPN) v['destQpNum'] = whole(attr.dest_qp_num) ? attr.dest_qp_num & 0xffffff : num(attr.dest_qp_num);
  if (mask & IBV_QP_RATE_LIMIT) v['rateLimit'] = num(attr.rate_limit);
  if (mask & IBV_QP_CAP) {
    if (attr.cap !== undefined && (typeof attr.cap !== 'object' || attr.cap === null)) return errno.EINVAL;
    const c = attr.cap ?? newQpCap();
    v['capMaxSendWr'] = num(c.max_send_wr);
    v['capMaxRecvWr'] = num(c.max_recv_wr);
    v['capMaxSendSge'] = num(c.max_send_sge);
    v['capMaxRecvSge'] = num(c.max_recv_sge);
    v['capMaxInlineData'] = num(c.max_inline_data);
  }
  // The port an AV leaves from: its own port_num, else the QP's (new) port.
  const qpPort = mask & IBV_QP_PORT ? (attr.port_num ?? 0) : qp.portNum;
  if (mask & IBV_QP_AV) {
    const av = avValues(ctx, attr.ah_attr, attr.ah_attr?.port_num || qpPort);
    if (typeof av === 'number') return av;
    Object.assign(v, prefixed('ah', av));
  }
  if (mask & IBV_QP_ALT_PATH) {
    v['altPortNum'] = num(attr.alt_port_num);
    v['altTimeout'] = num(attr.alt_timeout);
    v['altPkeyIndex'] = num(attr.alt_pkey_index);
    const av = avValues(ctx, attr.alt_ah_attr, attr.alt_ah_attr?.port_num || attr.alt_port_num || 0);
    if (typeof av === 'number') return av;
    Object.assign(v, prefixed('altAh', av));
  }
  return v;
}

/**
 * ibv_modify_qp_rate_limit: the device paces the QP's requests at
 * rate_limit kbit/s (MODIFY_QP_RATE_LIMIT), packet by packet, in any state.
 * As a provider without burst support: comp_mask, max_burst_sz and
 * typical_pkt_sz must be 0, a rate outside packet_pacing_caps is EINVAL,
 * a QP type outside supported_qpts EOPNOTSUPP.
 */
export function model_modify_qp_rate_limit(ibqp: ibv_qp, attr: ibv_qp_rate_limit_attr): number {
  const qp = ibqp as ModelQp;
  if (!(qp instanceof ModelQp) || qp.destroyed || qp.context.closed || typeof attr !== 'object' || attr === null) return errno.EINVAL;
  const { rate_limit, max_burst_sz, typical_pkt_sz, comp_mask } = attr;
  if (![rate_limit, max_burst_sz, typical_pkt_sz, comp_mask].every((v) => Number.isInteger(v) && v >= 0 && v <= 0xffffffff)) return errno.EINVAL;
  if (comp_mask !== 0 || max_burst_sz !== 0 || typical_pkt_sz !== 0) return errno.EINVAL;
  if (rate_limit !== 0 && (rate_limit < QP_RATE_LIMIT_MIN_KBPS || rate_limit > QP_RATE_LIMIT_MAX_KBPS)) return errno.EINVAL;
  if (qp.qp_type !== IBV_QPT_RC && qp.qp_type !== IBV_QPT_UC && qp.qp_type !== IBV_QPT_UD) return errno.EOPNOTSUPP;
  return model_cmd(qp.context, Cmd.MODIFY_QP_RATE_LIMIT, { qpn: qp.qp_num, rateLimit: rate_limit, maxBurstSz: 0, typicalPktSz: 0 }).errno;
}

/** ibv_modify_qp: 0 or a positive errno; nothing changes on failure. */
export function model_modify_qp(ibqp: ibv_qp, attr: Partial<ibv_qp_attr>, mask: number): number {
  const qp = ibqp as ModelQp;
  if (!(qp instanceof ModelQp)) return errno.EINVAL;
  const ctx = qp.context;
  // attr_mask is a C int of IBV_QP_* bits: a number that is not a 32-bit pattern is no mask.
  if (qp.destroyed || ctx.closed || !attr || typeof attr !== 'object' || typeof mask !== 'number' || (mask >>> 0 !== mask && (mask | 0) !== mask))
    return errno.EINVAL;
  const input = modifyInput(ctx, qp, attr, mask);
  if (typeof input === 'number') return input;
  const r = model_cmd(ctx, Cmd.MODIFY_QP, input);
  if (r.errno) return r.errno;
  if (mask & IBV_QP_PORT) qp.portNum = attr.port_num ?? 0;
  if (mask & IBV_QP_STATE) {
    qp.state = attr.qp_state ?? 0;
    if (qp.state === IBV_QPS_RESET) {
      // The device zeroed its consumer counters: restart the rings.
      qp.sqPi = qp.sqCi = qp.rqPi = qp.rqCi = 0;
      qp.portNum = 0;
      Atomics.store(ctx.mem.i32, qp.rqPiWord, 0);
      Atomics.store(ctx.mem.i32, qp.sqPiWord, 0);
    }
  }
  return 0;
}

/**
 * ibv_query_qp: every ibv_qp_attr field (whatever the mask, as the kernel
 * fills the whole structure) and the creation attributes.
 */
export function model_query_qp(ibqp: ibv_qp, attr: ibv_qp_attr, mask: number, init: ibv_qp_init_attr): number {
  const qp = ibqp as ModelQp;
  if (!(qp instanceof ModelQp)) return errno.EINVAL;
  const ctx = qp.context;
  if (qp.destroyed || ctx.closed) return errno.EINVAL;
  const r = model_cmd(ctx, Cmd.QUERY_QP, { qpn: qp.qp_num });
  if (r.errno) return r.errno;
  const o = r.out;
  const n = (k: string) => o[k] as number;
  if (attr) {
    attr.qp_state = n('qpState');
    attr.cur_qp_state = n('curQpState');
    attr.path_mtu = n('pathMtu');
    attr.path_mig_state = n('pathMigState');
    attr.qkey = n('qkey');
    attr.rq_psn = n('rqPsn');
    attr.sq_psn = n('sqPsn');
    attr.dest_qp_num = n('destQpNum');
    attr.qp_access_flags = n('qpAccessFlags');
    attr.cap = attr.cap ?? newQpCap();
    attr.cap.max_send_wr = n('capMaxSendWr');
    attr.cap.max_recv_wr = n('capMaxRecvWr');
    attr.cap.max_send_sge = n('capMaxSendSge');
    attr.cap.max_recv_sge = n('capMaxRecvSge');
    attr.cap.max_inline_data = n('capMaxInlineData');
    attr.ah_attr = ahAttrFrom(o, 'ah', attr.ah_attr);
    attr.alt_ah_attr = ahAttrFrom(o, 'altAh', attr.alt_ah_attr);
    attr.pkey_index = n('pkeyIndex');
    attr.alt_pkey_index = n('altPkeyIndex');
    attr.en_sqd_async_notify = n('enSqdAsyncNotify');
    attr.sq_draining = n('sqDraining');
    attr.max_rd_atomic = n('maxRdAtomic');
    attr.max_dest_rd_atomic = n('maxDestRdAtomic');
    attr.min_rnr_timer = n('minRnrTimer');
    attr.port_num = n('portNum');
    attr.timeout = n('timeout');
    attr.retry_cnt = n('retryCnt');
    attr.rnr_retry = n('rnrRetry');
    attr.alt_port_num = n('altPortNum');
    attr.alt_timeout = n('altTimeout');
    attr.rate_limit = n('rateLimit');
  }
  if (init) {
    init.qp_context = qp.qp_context;
    init.send_cq = qp.send_cq;
    init.recv_cq = qp.recv_cq;
    init.srq = qp.srq;
    init.cap = init.cap ?? newQpCap();
    init.cap.max_send_wr = n('capMaxSendWr');
    init.cap.max_recv_wr = n('capMaxRecvWr');
    init.cap.max_send_sge = n('capMaxSendSge');
    init.cap.max_recv_sge = n('capMaxRecvSge');
    init.cap.max_inline_data = n('capMaxInlineData');
    init.qp_type = n('qpType');
    init.sq_sig_all = n('sqSigAll');
  }
  // libibverbs: a query that asks for the state refreshes the cached one.
  if (mask & IBV_QP_STATE) qp.state = n('qpState');
  return 0;
}

/**
 * ibv_attach_mcast / ibv_detach_mcast: ATTACH_MCAST / DETACH_MCAST. A UD QP
 * of this provider and a 16-byte multicast GID (ff00::/8, or IPv4-mapped
 * 224.0.0.0/4); `lid` is ignored on RoCE, as in rxe. EINVAL for anything
 * else (the device's BAD_PARAM); ENOMEM past the group limits.
 */
export function model_attach_mcast(ibqp: ibv_qp, gid: ibv_gid, _lid: number): number {
  return mcast(ibqp, gid, Cmd.ATTACH_MCAST);
}
export function model_detach_mcast(ibqp: ibv_qp, gid: ibv_gid, _lid: number): number {
  return mcast(ibqp, gid, Cmd.DETACH_MCAST);
}
function mcast(ibqp: ibv_qp, gid: ibv_gid, cmd: Cmd): number {
  const qp = ibqp as ModelQp;
  if (!(qp instanceof ModelQp) || qp.destroyed || qp.context.closed) return errno.EINVAL;
  if (typeof gid !== 'object' || gid === null || !(gid.raw instanceof Uint8Array) || gid.raw.length !== 16) return errno.EINVAL;
  return model_cmd(qp.context, cmd, { qpn: qp.qp_num, mgid: Uint8Array.from(gid.raw) }).errno;
}
