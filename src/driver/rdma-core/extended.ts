/**
 * The rdma-core provider's extended verbs (native/extended.cc), with the
 * model provider's conventions: extended queries, the extended CQ and its
 * poll API, CQ resize and moderation, the extended QP and ibv_wr_complete,
 * memory beyond ibv_reg_mr, multicast, the QP rate limit, XRC domains and
 * SRQs. What the device's provider library lacks comes back as its own
 * answer (EOPNOTSUPP from libibverbs); what this provider checks first is
 * what would be undefined in C (a poll reader or builder the object was
 * not created with, memory it does not hold).
 */
import {
  errno,
  IBV_CQ_ATTR_MODERATE,
  IBV_CQ_INIT_ATTR_MASK_FLAGS,
  IBV_CQ_INIT_ATTR_MASK_PD,
  IBV_QP_INIT_ATTR_CREATE_FLAGS,
  IBV_QP_INIT_ATTR_IND_TABLE,
  IBV_QP_INIT_ATTR_MAX_TSO_HEADER,
  IBV_QP_INIT_ATTR_PD,
  IBV_QP_INIT_ATTR_RX_HASH,
  IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
  IBV_QP_INIT_ATTR_XRCD,
  IBV_QPT_UD,
  IBV_REREG_MR_CHANGE_ACCESS,
  IBV_REREG_MR_CHANGE_PD,
  IBV_REREG_MR_CHANGE_TRANSLATION,
  IBV_REREG_MR_ERR_INPUT,
} from '../../device/abi/constants.js';
import type { BadWr, VerbsContextOps } from '../verbs/ops.js';
import type {
  ibv_context,
  ibv_cq,
  ibv_cq_init_attr_ex,
  ibv_device_attr_ex,
  ibv_gid,
  ibv_gid_entry,
  ibv_modify_cq_attr,
  ibv_mr,
  ibv_pd,
  ibv_qp,
  ibv_qp_init_attr_ex,
  ibv_qp_rate_limit_attr,
  ibv_send_wr,
  ibv_srq,
  ibv_srq_init_attr,
  ibv_values_ex,
  ibv_wc_ex,
  ibv_xrcd,
  ibv_xrcd_init_attr,
} from '../verbs/types.js';
import { A, capOf, fail, isNum, live, liveCtx, RcChannel, type RcContext, RcCq, RcMr, RcPd, RcQp, RcSrq, RcXrcd } from './objects.js';
import { decodeWc, encodeSend, newWc, scratch, wcMem } from './scratch.js';

const isU32 = (x: unknown): x is number => isNum(x) && x >= 0 && x <= 0xffffffff;
const WCX_REC = 56;
const WCX_MAX = Math.floor(wcMem.byteLength / WCX_REC);

// ------------------------------------------------------------------ queries

function rc_query_device_ex(ibctx: ibv_context, attr: ibv_device_attr_ex): number {
  const ctx = liveCtx(ibctx);
  if (!ctx || typeof attr !== 'object' || attr === null) return errno.EINVAL;
  const r = A().queryDeviceEx(ctx.ptr);
  if (typeof r === 'number') return r;
  const { orig_attr, ...rest } = r;
  if (typeof attr.orig_attr === 'object' && attr.orig_attr !== null) Object.assign(attr.orig_attr, orig_attr);
  else attr.orig_attr = orig_attr as never;
  Object.assign(attr, rest);
  return 0;
}

function rc_query_gid_ex(ibctx: ibv_context, port: number, index: number, entry: ibv_gid_entry, flags: number): number {
  const ctx = liveCtx(ibctx);
  if (!ctx || typeof entry !== 'object' || entry === null) return errno.EINVAL;
  if (!isU32(port) || !isU32(index) || !isU32(flags)) return errno.EINVAL;
  const r = A().queryGidEx(ctx.ptr, port, index, flags);
  if (typeof r === 'number') return r;
  entry.gid = { raw: r.gid };
  entry.gid_index = r.gid_index;
  entry.port_num = r.port_num;
  entry.gid_type = r.gid_type;
  entry.ndev_ifindex = r.ndev_ifindex;
  return 0;
}

function rc_query_rt_values(ibctx: ibv_context, values: ibv_values_ex): number {
  const ctx = liveCtx(ibctx);
  if (!ctx || typeof values !== 'object' || values === null || !isU32(values.comp_mask)) return errno.EINVAL;
  const r = A().queryRtValuesEx(ctx.ptr, values.comp_mask);
  if (typeof r === 'number') return r;
  values.comp_mask = r.comp_mask;
  values.raw_clock = { tv_sec: r.tv_sec, tv_nsec: r.tv_nsec };
  return 0;
}

// ------------------------------------------------------------------ extended CQ

function rc_create_cq_ex(ibctx: ibv_context, attr: ibv_cq_init_attr_ex): ibv_cq {
  const verb = 'ibv_create_cq_ex';
  const ctx = liveCtx(ibctx);
  if (!ctx) fail(errno.EINVAL, verb, 'not an open ibv_context of the rdma-core provider');
  const ch = attr.channel === null || attr.channel === undefined ? null : live(attr.channel, RcChannel);
  if (attr.channel && (!ch || ch.context !== ctx)) fail(errno.EINVAL, verb, 'the channel is not a live channel of this context');
  const mask = attr.comp_mask ?? 0;
  const vector = attr.comp_vector ?? 0;
  const flags = mask & IBV_CQ_INIT_ATTR_MASK_FLAGS ? (attr.flags ?? 0) : 0;
  if (!isNum(attr.cqe) || attr.cqe < 1) fail(errno.EINVAL, verb, `bad cqe ${String(attr.cqe)}`);
  if (!isU32(attr.wc_flags) || !isU32(mask) || !isU32(vector) || !isU32(flags))
    fail(errno.EINVAL, verb, 'wc_flags, comp_mask, comp_vector and flags are unsigned integers');
  if (mask & IBV_CQ_INIT_ATTR_MASK_PD) fail(errno.EOPNOTSUPP, verb, 'parent domains: the rdma-core addon does not bind them');
  const r = A().createCqEx(ctx.ptr, attr.cqe, ch ? ch.ptr : 0, vector, attr.wc_flags, mask, flags);
  if (typeof r === 'number') fail(r, verb, `${attr.cqe} entries, wc_flags 0x${attr.wc_flags.toString(16)}`);
  const cq = new RcCq(ctx, r.ptr, ch, attr.cq_context, r.handle, r.cqe, true);
  if (ch) ch.refcnt++;
  ctx.cqs.set(r.ptr, cq);
  return cq;
}

/** The extended CQ's iterator (ibv_start_poll .. ibv_end_poll in the addon), reading only the CQ's wc_flags. */
function rc_poll_cq_ex(ibcq: ibv_cq, num: number, wc: ibv_wc_ex[]): number {
  const cq = live(ibcq, RcCq);
  if (!cq?.ex || !isNum(num) || num < 0 || !Array.isArray(wc)) return -errno.EINVAL;
  const a = A();
  scratch(a);
  let done = 0;
  while (done < num) {
    const want = Math.min(num - done, WCX_MAX);
    const got = a.pollCqEx(cq.ptr, want);
    if (got < 0) return done > 0 ? done : got;
    for (let i = 0; i < got; i++) decodeWc((wc[done + i] ??= { ...newWc(), completion_ts: 0n }), i, WCX_REC);
    done += got;
    if (got < want) break;
  }
  return done;
}

function rc_resize_cq(ibcq: ibv_cq, cqe: number): number {
  const cq = live(ibcq, RcCq);
  if (!cq || !isNum(cqe) || cqe < 1) return errno.EINVAL;
  const [rc, now] = A().resizeCq(cq.ptr, cqe);
  if (rc === 0) cq.cqe = now;
  return rc;
}

function rc_modify_cq(ibcq: ibv_cq, attr: ibv_modify_cq_attr): number {
  const cq = live(ibcq, RcCq);
  if (!cq || typeof attr !== 'object' || attr === null || !isU32(attr.attr_mask)) return errno.EINVAL;
  const m = attr.attr_mask & IBV_CQ_ATTR_MODERATE ? attr.moderate : { cq_count: 0, cq_period: 0 };
  // struct ibv_moderate_cq holds 16-bit fields: a larger value would be cut, not refused.
  if (typeof m !== 'object' || m === null || !isU32(m.cq_count) || m.cq_count > 0xffff || !isU32(m.cq_period) || m.cq_period > 0xffff) return errno.EINVAL;
  return A().modifyCq(cq.ptr, attr.attr_mask, m.cq_count, m.cq_period);
}

// ------------------------------------------------------------------ extended QP

function rc_create_qp_ex(ibctx: ibv_context, init: ibv_qp_init_attr_ex): ibv_qp {
  const verb = 'ibv_create_qp_ex';
  const ctx = liveCtx(ibctx);
  if (!ctx) fail(errno.EINVAL, verb, 'not an open ibv_context of the rdma-core provider');
  const mask = init.comp_mask;
  if (!isU32(mask)) fail(errno.EINVAL, verb, `comp_mask ${String(mask)} is not a uint32_t`);
  const unbound = IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_MAX_TSO_HEADER | IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH;
  if (mask & unbound) fail(errno.EOPNOTSUPP, verb, `comp_mask 0x${(mask & unbound).toString(16)}: the rdma-core addon does not bind XRC, TSO or RSS QPs`);
  if (mask & ~(unbound | IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
    fail(errno.EINVAL, verb, `unknown comp_mask bits 0x${mask.toString(16)}`);
  const pd = mask & IBV_QP_INIT_ATTR_PD ? live(init.pd, RcPd) : null;
  if (!pd || pd.context !== ctx) fail(errno.EINVAL, verb, 'IBV_QP_INIT_ATTR_PD and a live pd of this context are required');
  const scq = live(init.send_cq, RcCq);
  const rcq = live(init.recv_cq, RcCq);
  const srq = init.srq === null || init.srq === undefined ? null : live(init.srq, RcSrq);
  if (!scq || scq.context !== ctx) fail(errno.EINVAL, verb, 'send_cq is not a live CQ of this context');
  if (!rcq || rcq.context !== ctx) fail(errno.EINVAL, verb, 'recv_cq is not a live CQ of this context');
  if (init.srq && (!srq || srq.context !== ctx)) fail(errno.EINVAL, verb, 'srq is not a live SRQ of this context');
  const c = init.cap;
  if (typeof c !== 'object' || c === null) fail(errno.EINVAL, verb, 'no cap');
  const nums = [c.max_send_wr, c.max_recv_wr, c.max_send_sge, c.max_recv_sge, c.max_inline_data ?? 0];
  if (!nums.every(isU32) || !isU32(init.qp_type)) fail(errno.EINVAL, verb, 'bad cap or qp_type');
  const createFlags = mask & IBV_QP_INIT_ATTR_CREATE_FLAGS ? (init.create_flags ?? 0) : 0;
  const sendOps = mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS ? (init.send_ops_flags ?? 0) : 0;
  if (!isU32(createFlags) || !isU32(sendOps)) fail(errno.EINVAL, verb, 'create_flags and send_ops_flags are unsigned integers');
  const r = A().createQpEx(
    ctx.ptr,
    pd.ptr,
    scq.ptr,
    rcq.ptr,
    srq ? srq.ptr : 0,
    init.qp_type,
    init.sq_sig_all ? 1 : 0,
    ...(nums as [number, number, number, number, number]),
    mask,
    createFlags,
    sendOps,
  );
  if (typeof r === 'number') fail(r, verb, `type ${init.qp_type}, comp_mask 0x${mask.toString(16)}, send_ops_flags 0x${sendOps.toString(16)}`);
  Object.assign(init.cap, capOf(r.cap));
  const qp = new RcQp(ctx, pd, r.ptr, init.qp_context, scq, rcq, srq, r.handle, r.qp_num, init.qp_type, init.sq_sig_all ? 1 : 0, r.ex);
  ctx.qps.set(r.ptr, qp);
  return qp;
}

/**
 * ibv_wr_complete: the whole batch through ibv_wr_start .. ibv_wr_complete
 * in one native call, or nothing. A batch must fit the scratch (64 WRs,
 * 512 SGEs, 64 KiB of records): a larger one is ENOMEM, nothing posted.
 */
function rc_post_send_all(ibqp: ibv_qp, wr: ibv_send_wr, bad?: BadWr<ibv_send_wr>): number {
  const qp = live(ibqp, RcQp);
  if (bad) bad.wr = null;
  if (!qp?.ex) return errno.EINVAL;
  if (typeof wr !== 'object' || wr === null) return errno.EINVAL;
  const a = A();
  scratch(a);
  const e = encodeSend(wr, qp.qp_type === IBV_QPT_UD, qp.context);
  const r = e.bad ? errno.EINVAL : e.rest !== null || e.n === 0 ? errno.ENOMEM : a.postSendEx(qp.ptr, e.n);
  if (r !== 0 && bad) bad.wr = e.bad ?? wr;
  return r;
}

// ------------------------------------------------------------------ multicast, rate limit

function mcast(ibqp: ibv_qp, gid: ibv_gid, lid: number, attach: boolean): number {
  const qp = live(ibqp, RcQp);
  if (!qp || typeof gid !== 'object' || gid === null || !(gid.raw instanceof Uint8Array) || gid.raw.length !== 16) return errno.EINVAL;
  if (!isNum(lid) || lid < 0 || lid > 0xffff) return errno.EINVAL;
  const a = A();
  return attach ? a.attachMcast(qp.ptr, gid.raw, lid) : a.detachMcast(qp.ptr, gid.raw, lid);
}

function rc_modify_qp_rate_limit(ibqp: ibv_qp, attr: ibv_qp_rate_limit_attr): number {
  const qp = live(ibqp, RcQp);
  if (!qp || typeof attr !== 'object' || attr === null) return errno.EINVAL;
  const { rate_limit, max_burst_sz, typical_pkt_sz, comp_mask } = attr;
  if (![rate_limit, max_burst_sz, comp_mask].every(isU32) || !isU32(typical_pkt_sz) || typical_pkt_sz > 0xffff) return errno.EINVAL;
  return A().modifyQpRateLimit(qp.ptr, rate_limit, max_burst_sz, typical_pkt_sz, comp_mask);
}

// ------------------------------------------------------------------ memory

function rc_reg_mr_iova(ibpd: ibv_pd, buf: Uint8Array, iova: bigint, access: number): ibv_mr {
  const verb = 'ibv_reg_mr_iova';
  const pd = live(ibpd, RcPd);
  if (!pd) fail(errno.EINVAL, verb, 'not a live ibv_pd of the rdma-core provider');
  if (!(buf instanceof Uint8Array) || buf.byteLength === 0) fail(errno.EINVAL, verb, 'buf must be a non-empty Uint8Array');
  if (typeof iova !== 'bigint' || iova < 0n || iova >= 1n << 64n) fail(errno.EINVAL, verb, `iova ${String(iova)} is not a uint64_t bigint`);
  if (!isU32(access)) fail(errno.EINVAL, verb, `bad access flags ${String(access)}`);
  const r = A().regMrIova(pd.ptr, buf, iova, access);
  if (typeof r === 'number') fail(r, verb, `${buf.byteLength} bytes at iova 0x${iova.toString(16)}, access 0x${access.toString(16)}`);
  const mr = new RcMr(pd.context, pd, r.ptr, r.addr, r.length, r.handle, r.lkey, r.rkey, buf);
  pd.context.mrs.add(mr);
  return mr;
}

function rc_alloc_null_mr(ibpd: ibv_pd): ibv_mr {
  const pd = live(ibpd, RcPd);
  if (!pd) fail(errno.EINVAL, 'ibv_alloc_null_mr', 'not a live ibv_pd of the rdma-core provider');
  const r = A().allocNullMr(pd.ptr);
  if (typeof r === 'number') fail(r, 'ibv_alloc_null_mr', 'the device refused');
  const mr = new RcMr(pd.context, pd, r.ptr, r.addr, r.length, r.handle, r.lkey, r.rkey, null);
  pd.context.mrs.add(mr);
  return mr;
}

function rc_rereg_mr(ibmr: ibv_mr, flags: number, ibpd: ibv_pd | null, buf: Uint8Array | null, access: number): { rc: number; errno: number } {
  const input = { rc: IBV_REREG_MR_ERR_INPUT, errno: errno.EINVAL };
  const mr = live(ibmr, RcMr);
  if (!mr || !isU32(flags)) return input;
  const pd = flags & IBV_REREG_MR_CHANGE_PD ? live(ibpd, RcPd) : null;
  if (flags & IBV_REREG_MR_CHANGE_PD && (!pd || pd.context !== mr.context)) return input;
  if (flags & IBV_REREG_MR_CHANGE_TRANSLATION && (!(buf instanceof Uint8Array) || buf.byteLength === 0)) return input;
  if (flags & IBV_REREG_MR_CHANGE_ACCESS && !isU32(access)) return input;
  const r = A().reregMr(mr.ptr, flags, pd ? pd.ptr : 0, flags & IBV_REREG_MR_CHANGE_TRANSLATION ? buf : null, isU32(access) ? access : 0);
  if (r.rc !== 0 || !r.mr) return { rc: r.rc, errno: r.errno };
  // libibverbs updated the MR in place: so does its object here.
  Object.assign(mr, { addr: r.mr.addr, length: r.mr.length, lkey: r.mr.lkey, rkey: r.mr.rkey });
  if (pd) mr.pd = pd;
  if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) mr.buf = buf; // the new memory is held now, the old let go
  return { rc: 0, errno: 0 };
}

// ------------------------------------------------------------------ XRC

function rc_open_xrcd(ibctx: ibv_context, attr: ibv_xrcd_init_attr): ibv_xrcd {
  const ctx = liveCtx(ibctx);
  if (!ctx) fail(errno.EINVAL, 'ibv_open_xrcd', 'not an open ibv_context of the rdma-core provider');
  if (typeof attr !== 'object' || attr === null || !isU32(attr.comp_mask) || !isNum(attr.fd) || !isNum(attr.oflags))
    fail(errno.EINVAL, 'ibv_open_xrcd', 'attr needs comp_mask, fd and oflags');
  const r = A().openXrcd(ctx.ptr, attr.comp_mask, attr.fd, attr.oflags);
  if (typeof r === 'number') fail(r, 'ibv_open_xrcd', `fd ${attr.fd}, oflags 0x${attr.oflags.toString(16)}`);
  const x = new RcXrcd(ctx, r.ptr);
  ctx.xrcds.add(x);
  return x;
}

function rc_close_xrcd(ibxrcd: ibv_xrcd): number {
  const x = live(ibxrcd, RcXrcd);
  if (!x) return errno.EINVAL;
  const r = A().closeXrcd(x.ptr);
  if (r === 0) {
    x.ptr = 0;
    x.context.xrcds.delete(x);
  }
  return r;
}

function rc_create_srq_xrc(ibpd: ibv_pd, ibxrcd: ibv_xrcd, ibcq: ibv_cq, init: ibv_srq_init_attr): ibv_srq {
  const verb = 'ibv_create_srq_ex';
  const pd = live(ibpd, RcPd);
  if (!pd) fail(errno.EINVAL, verb, 'not a live ibv_pd of the rdma-core provider');
  const ctx: RcContext = pd.context;
  const xrcd = live(ibxrcd, RcXrcd);
  const cq = live(ibcq, RcCq);
  if (!xrcd || xrcd.context !== ctx) fail(errno.EINVAL, verb, 'xrcd is not a live XRC domain of this context');
  if (!cq || cq.context !== ctx) fail(errno.EINVAL, verb, 'cq is not a live CQ of this context');
  const at = init.attr;
  if (typeof at !== 'object' || at === null || !isU32(at.max_wr) || !isU32(at.max_sge) || !isU32(at.srq_limit ?? 0)) fail(errno.EINVAL, verb, 'bad attr');
  const r = A().createSrqXrc(ctx.ptr, pd.ptr, xrcd.ptr, cq.ptr, at.max_wr, at.max_sge, at.srq_limit ?? 0);
  if (typeof r === 'number') fail(r, verb, `XRC SRQ, max_wr ${at.max_wr} max_sge ${at.max_sge}`);
  at.max_wr = r.max_wr;
  at.max_sge = r.max_sge;
  const srq = new RcSrq(ctx, pd, r.ptr, init.srq_context, r.handle, { xrcd, cq });
  ctx.srqs.set(r.ptr, srq);
  return srq;
}

function rc_get_srq_num(ibsrq: ibv_srq, out: { srq_num: number }): number {
  const srq = live(ibsrq, RcSrq);
  if (!srq || typeof out !== 'object' || out === null) return errno.EINVAL;
  const [rc, num] = A().getSrqNum(srq.ptr);
  if (rc === 0) out.srq_num = num;
  return rc;
}

export const rc_extended_ops = {
  query_device_ex: rc_query_device_ex,
  query_gid_ex: rc_query_gid_ex,
  query_rt_values: rc_query_rt_values,
  create_cq_ex: rc_create_cq_ex,
  poll_cq_ex: rc_poll_cq_ex,
  resize_cq: rc_resize_cq,
  modify_cq: rc_modify_cq,
  create_qp_ex: rc_create_qp_ex,
  post_send_all: rc_post_send_all,
  attach_mcast: (qp: ibv_qp, gid: ibv_gid, lid: number) => mcast(qp, gid, lid, true),
  detach_mcast: (qp: ibv_qp, gid: ibv_gid, lid: number) => mcast(qp, gid, lid, false),
  modify_qp_rate_limit: rc_modify_qp_rate_limit,
  reg_mr_iova: rc_reg_mr_iova,
  alloc_null_mr: rc_alloc_null_mr,
  rereg_mr: rc_rereg_mr,
  open_xrcd: rc_open_xrcd,
  close_xrcd: rc_close_xrcd,
  create_srq_xrc: rc_create_srq_xrc,
  get_srq_num: rc_get_srq_num,
} satisfies Partial<VerbsContextOps>;
