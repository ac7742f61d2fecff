/**
 * The rdma-core provider: real RDMA devices through libibverbs (the native
 * addon of native/rdma_core.cc and native/extended.cc), behind the same VerbsContextOps as the
 * model provider and with its conventions: int verbs return the errno,
 * pointer verbs throw a VerbsError named by the errno, 64-bit fields are
 * bigint, and ibv_get_cq_event / ibv_get_async_event are Promises that wait
 * on the completion-channel / async fds through libuv (never a blocking
 * read on the event loop).
 *
 * Memory: rnic_alloc_buf returns page-aligned memory the addon allocates
 * (an external ArrayBuffer, freed by the garbage collector). A registered
 * buffer is held by its MR (and the context) until ibv_dereg_mr, so it can
 * not be freed while the HCA may reach it. ibv_reg_mr also accepts any
 * Uint8Array, as C accepts any memory; mr.addr is its virtual address.
 *
 * Objects are checked as the model provider checks its own: a destroyed
 * object, an object of another provider or of a closed context is EINVAL.
 * ibv_destroy_cq / ibv_destroy_qp / ibv_destroy_srq with events not yet
 * acknowledged return EBUSY (libibverbs would block the thread forever in
 * pthread_cond_wait; here that thread is the event loop).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { errno, IBV_MW_TYPE_1, IBV_MW_TYPE_2, IBV_QP_STATE, IBV_QPT_UD, IBV_SRQ_LIMIT, IBV_SRQ_MAX_WR } from '../../device/abi/constants.js';
import { registerProvider, unregisterProvider } from '../providers.js';
import { VerbsError } from '../verbs/errno-error.js';
import type { BadWr, ProviderDevice, VerbsContextOps, VerbsProvider } from '../verbs/ops.js';
import type {
  ibv_ah,
  ibv_ah_attr,
  ibv_async_event,
  ibv_comp_channel,
  ibv_context,
  ibv_cq,
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
} from '../verbs/types.js';
import { rdmaCoreAddon, rdmaCoreUnavailable } from './addon.js';
import { rc_extended_ops } from './extended.js';
import {
  A,
  bufAddr,
  capOf,
  fail,
  isNum,
  live,
  liveCtx,
  RcAh,
  RcChannel,
  RcContext,
  RcCq,
  RcDevice,
  RcMr,
  RcMw,
  RcPd,
  RcQp,
  RcSrq,
  type Waiter,
} from './objects.js';
import { decodeWc, encodeSend, MAX_SGE, MAX_WR, newWc, nth, scratch, WC_MAX, WC_REC, WR_BYTES, wr32, wr64 } from './scratch.js';
import { rc_unbound_ops } from './unbound.js';

/** Waits until fd is readable (uv_poll in the addon); rejected when the context closes or the object goes. */
function readable(ctx: RcContext, fd: number): Promise<void> {
  const a = A();
  return new Promise<void>((resolve, reject) => {
    const w: Waiter = { id: 0, fd, reject };
    w.id = a.watchFd(fd, (status) => {
      ctx.waiters.delete(w);
      if (status < 0) reject(new VerbsError(errno.EIO, `waiting on fd ${fd}: libuv status ${status}`));
      else resolve();
    });
    if (w.id < 0) {
      reject(new VerbsError(errno.EBADF, `waiting on fd ${fd}: libuv status ${w.id}`));
      return;
    }
    ctx.waiters.add(w);
  });
}

/** Rejects the waits on `fd` (every wait of the context when fd is omitted) with EBADF. */
function cancelWaiters(ctx: RcContext, why: string, fd?: number): void {
  const a = rdmaCoreAddon();
  for (const w of [...ctx.waiters]) {
    if (fd !== undefined && w.fd !== fd) continue;
    a?.unwatchFd(w.id);
    ctx.waiters.delete(w);
    w.reject(new VerbsError(errno.EBADF, why));
  }
}

// ------------------------------------------------------------------ device, query

function rc_query_device(ibctx: ibv_context, attr: ibv_device_attr): number {
  const ctx = liveCtx(ibctx);
  if (!ctx) return errno.EINVAL;
  const r = A().queryDevice(ctx.ptr);
  if (typeof r === 'number') return r;
  Object.assign(attr, r);
  return 0;
}

function rc_query_port(ibctx: ibv_context, port: number, attr: ibv_port_attr): number {
  const ctx = liveCtx(ibctx);
  if (!ctx || !isNum(port) || port < 0 || port > 255) return errno.EINVAL;
  const r = A().queryPort(ctx.ptr, port);
  if (typeof r === 'number') return r;
  Object.assign(attr, r);
  return 0;
}

function rc_query_gid(ibctx: ibv_context, port: number, index: number, gid: ibv_gid): number {
  const ctx = liveCtx(ibctx);
  if (!ctx || !isNum(port) || !isNum(index) || port < 0 || port > 255 || index < 0) return errno.EINVAL;
  const r = A().queryGid(ctx.ptr, port, index);
  if (typeof r === 'number') return r;
  if (gid.raw instanceof Uint8Array && gid.raw.length === 16) gid.raw.set(r);
  else gid.raw = r;
  return 0;
}

function rc_query_pkey(ibctx: ibv_context, port: number, index: number): number {
  const ctx = liveCtx(ibctx);
  if (!ctx) fail(errno.EINVAL, 'ibv_query_pkey', 'not an open ibv_context of the rdma-core provider');
  if (!isNum(port) || !isNum(index) || port < 0 || port > 255 || index < 0) fail(errno.EINVAL, 'ibv_query_pkey', 'bad port or index');
  const r = A().queryPkey(ctx.ptr, port, index);
  if (r < 0) fail(-r, 'ibv_query_pkey', `port ${port} index ${index}`);
  return r;
}

function rc_close_device(ibctx: ibv_context): number {
  const ctx = liveCtx(ibctx);
  if (!ctx) return errno.EINVAL;
  const a = A();
  // As the model does (and the kernel does when the fd closes): everything
  // still open goes with the context, in dependency order.
  cancelWaiters(ctx, 'the context is closed');
  // libibverbs' destroy waits (pthread_cond_wait) until every event of the
  // object is acknowledged: acknowledge what the application did not.
  for (const o of [...ctx.qps.values(), ...ctx.srqs.values(), ...ctx.cqs.values()]) {
    if (o.ptr) for (const p of o.pendingAsync.splice(0)) a.ackAsyncEvent(p.type, p.kind, p.ptr);
  }
  for (const qp of ctx.qps.values())
    if (qp.ptr) {
      a.destroyQp(qp.ptr);
      qp.ptr = 0;
    }
  for (const ah of ctx.ahs)
    if (ah.ptr) {
      a.destroyAh(ah.ptr);
      ah.ptr = 0;
    }
  for (const srq of ctx.srqs.values())
    if (srq.ptr) {
      a.destroySrq(srq.ptr);
      srq.ptr = 0;
    }
  for (const cq of ctx.cqs.values()) {
    if (!cq.ptr) continue;
    if (cq.compReported > cq.compAcked) a.ackCqEvents(cq.ptr, cq.compReported - cq.compAcked);
    a.destroyCq(cq.ptr);
    cq.ptr = 0;
  }
  for (const ch of ctx.channels)
    if (ch.ptr) {
      a.destroyCompChannel(ch.ptr);
      ch.ptr = 0;
    }
  // Windows before MRs: an MR with bound windows cannot be deregistered.
  for (const mw of ctx.mws)
    if (mw.ptr) {
      a.deallocMw(mw.ptr);
      mw.ptr = 0;
    }
  for (const mr of ctx.mrs)
    if (mr.ptr) {
      a.deregMr(mr.ptr);
      mr.ptr = 0;
      mr.buf = null;
    }
  // XRC domains after their SRQs (above).
  for (const x of ctx.xrcds)
    if (x.ptr) {
      a.closeXrcd(x.ptr);
      x.ptr = 0;
    }
  for (const pd of ctx.pds)
    if (pd.ptr) {
      a.deallocPd(pd.ptr);
      pd.ptr = 0;
    }
  const r = a.closeDevice(ctx.ptr);
  ctx.closed = true;
  ctx.buffers.clear();
  return r;
}

// ------------------------------------------------------------------ pd, mr, buffers

function rc_alloc_pd(ibctx: ibv_context): ibv_pd {
  const ctx = liveCtx(ibctx);
  if (!ctx) fail(errno.EINVAL, 'ibv_alloc_pd', 'not an open ibv_context of the rdma-core provider');
  const r = A().allocPd(ctx.ptr);
  if (typeof r === 'number') fail(r, 'ibv_alloc_pd', 'libibverbs refused');
  const pd = new RcPd(ctx, r.ptr, r.handle);
  ctx.pds.add(pd);
  return pd;
}

function rc_dealloc_pd(ibpd: ibv_pd): number {
  const pd = live(ibpd, RcPd);
  if (!pd) return errno.EINVAL;
  const r = A().deallocPd(pd.ptr);
  if (r === 0) {
    pd.ptr = 0;
    pd.context.pds.delete(pd);
  }
  return r;
}

function rc_reg_mr(ibpd: ibv_pd, buf: Uint8Array, access: number): ibv_mr {
  const pd = live(ibpd, RcPd);
  if (!pd) fail(errno.EINVAL, 'ibv_reg_mr', 'not a live ibv_pd of the rdma-core provider');
  if (buf.byteLength === 0) fail(errno.EINVAL, 'ibv_reg_mr', 'an empty buffer');
  const r = A().regMr(pd.ptr, buf, access);
  if (typeof r === 'number') fail(r, 'ibv_reg_mr', `${buf.byteLength} bytes, access 0x${access.toString(16)}`);
  const mr = new RcMr(pd.context, pd, r.ptr, r.addr, r.length, r.handle, r.lkey, r.rkey, buf);
  pd.context.mrs.add(mr);
  return mr;
}

function rc_dereg_mr(ibmr: ibv_mr): number {
  const mr = live(ibmr, RcMr);
  if (!mr) return errno.EINVAL;
  const r = A().deregMr(mr.ptr);
  if (r === 0) {
    mr.ptr = 0;
    mr.buf = null;
    mr.context.mrs.delete(mr);
  }
  return r;
}

function rc_alloc_mw(ibpd: ibv_pd, type: number): ibv_mw {
  const pd = live(ibpd, RcPd);
  if (!pd) fail(errno.EINVAL, 'ibv_alloc_mw', 'not a live ibv_pd of the rdma-core provider');
  if (type !== IBV_MW_TYPE_1 && type !== IBV_MW_TYPE_2) fail(errno.EINVAL, 'ibv_alloc_mw', `type ${String(type)} (IBV_MW_TYPE_1 or IBV_MW_TYPE_2)`);
  const r = A().allocMw(pd.ptr, type);
  if (typeof r === 'number') fail(r, 'ibv_alloc_mw', 'libibverbs refused');
  const mw = new RcMw(pd.context, pd, r.ptr, r.rkey >>> 0, r.handle, type);
  pd.context.mws.add(mw);
  return mw;
}

function rc_dealloc_mw(ibmw: ibv_mw): number {
  const mw = live(ibmw, RcMw);
  if (!mw) return errno.EINVAL;
  const r = A().deallocMw(mw.ptr);
  if (r === 0) {
    mw.ptr = 0;
    mw.context.mws.delete(mw);
  }
  return r;
}

/** ibv_bind_mw (type 1) through libibverbs' own inline ibv_bind_mw (type 2 windows are bound by IBV_WR_BIND_MW through ibv_post_send). */
function rc_bind_mw(ibqp: ibv_qp, ibmw: ibv_mw, bind: ibv_mw_bind): number {
  const qp = live(ibqp, RcQp);
  const mw = live(ibmw, RcMw);
  if (!qp || !mw || mw.context !== qp.context) return errno.EINVAL;
  const b = bind.bind_info;
  const mr = b.mr === null ? null : live(b.mr, RcMr);
  if (b.mr !== null && !mr) return errno.EINVAL;
  if (typeof bind.wr_id !== 'bigint' || typeof b.addr !== 'bigint' || typeof b.length !== 'bigint' || !isNum(bind.send_flags) || !isNum(b.mw_access_flags))
    return errno.EINVAL;
  const [rc, rkey] = A().bindMw(qp.ptr, mw.ptr, mr ? mr.ptr : 0, bind.wr_id, bind.send_flags, b.addr, b.length, b.mw_access_flags);
  if (rc === 0) mw.rkey = rkey >>> 0;
  return rc;
}

function rc_alloc_buf(ibctx: ibv_context, length: number, align: number): Uint8Array {
  const ctx = liveCtx(ibctx);
  if (!ctx) fail(errno.EINVAL, 'rnic_alloc_buf', 'not an open ibv_context of the rdma-core provider');
  if (!Number.isInteger(align) || align < 1 || (align & (align - 1)) !== 0 || align > 2 ** 30) {
    fail(errno.EINVAL, 'rnic_alloc_buf', `alignment ${String(align)} is not a power of two`);
  }
  if (!Number.isSafeInteger(length) || length < 0) fail(errno.EINVAL, 'rnic_alloc_buf', `bad length ${String(length)}`);
  const a = A();
  const r = a.allocBuf(length, align);
  if (typeof r === 'number') fail(r === errno.EINVAL ? errno.EINVAL : errno.ENOMEM, 'rnic_alloc_buf', `${length} bytes`);
  ctx.buffers.add(r);
  const u = new Uint8Array(r);
  bufAddr.set(r, a.addrOf(u));
  return u;
}

function rc_free_buf(ibctx: ibv_context, buf: Uint8Array): void {
  if (!(ibctx instanceof RcContext)) fail(errno.EINVAL, 'rnic_free_buf', 'not an ibv_context of the rdma-core provider');
  const ab = buf.buffer as ArrayBuffer;
  if (!ibctx.buffers.has(ab)) {
    if (ibctx.closed) return; // released by ibv_close_device
    fail(errno.EINVAL, 'rnic_free_buf', 'not a buffer from rnic_alloc_buf of this context');
  }
  // The memory is freed when no view of it is left (the addon's finalizer):
  // an MR still holding it keeps it, so the HCA never writes freed memory.
  ibctx.buffers.delete(ab);
}

// ------------------------------------------------------------------ channels, cqs

function rc_create_comp_channel(ibctx: ibv_context): ibv_comp_channel {
  const ctx = liveCtx(ibctx);
  if (!ctx) fail(errno.EINVAL, 'ibv_create_comp_channel', 'not an open ibv_context of the rdma-core provider');
  const r = A().createCompChannel(ctx.ptr);
  if (typeof r === 'number') fail(r, 'ibv_create_comp_channel', 'libibverbs refused');
  const ch = new RcChannel(ctx, r.ptr, r.fd);
  ctx.channels.add(ch);
  return ch;
}

function rc_destroy_comp_channel(ibch: ibv_comp_channel): number {
  const ch = live(ibch, RcChannel);
  if (!ch) return errno.EINVAL;
  if (ch.refcnt > 0) return errno.EBUSY;
  cancelWaiters(ch.context, 'ibv_get_cq_event: the channel is destroyed', ch.fd);
  const r = A().destroyCompChannel(ch.ptr);
  if (r === 0) {
    ch.ptr = 0;
    ch.context.channels.delete(ch);
  }
  return r;
}

function rc_create_cq(ibctx: ibv_context, cqe: number, cq_context: unknown, channel: ibv_comp_channel | null, vector: number): ibv_cq {
  const ctx = liveCtx(ibctx);
  if (!ctx) fail(errno.EINVAL, 'ibv_create_cq', 'not an open ibv_context of the rdma-core provider');
  const ch = channel === null ? null : live(channel, RcChannel);
  if (channel !== null && (!ch || ch.context !== ctx)) fail(errno.EINVAL, 'ibv_create_cq', 'the channel is not a live channel of this context');
  if (!isNum(cqe) || cqe < 1) fail(errno.EINVAL, 'ibv_create_cq', `bad cqe ${String(cqe)}`);
  if (!isNum(vector) || vector < 0) fail(errno.EINVAL, 'ibv_create_cq', `bad comp_vector ${String(vector)}`);
  const r = A().createCq(ctx.ptr, cqe, ch ? ch.ptr : 0, vector);
  if (typeof r === 'number') fail(r, 'ibv_create_cq', `${cqe} entries`);
  const cq = new RcCq(ctx, r.ptr, ch, cq_context, r.handle, r.cqe);
  if (ch) ch.refcnt++;
  ctx.cqs.set(r.ptr, cq);
  return cq;
}

function rc_destroy_cq(ibcq: ibv_cq): number {
  const cq = live(ibcq, RcCq);
  if (!cq) return errno.EINVAL;
  if (cq.compReported !== cq.compAcked || cq.asyncReported !== cq.asyncAcked) return errno.EBUSY;
  const r = A().destroyCq(cq.ptr);
  if (r === 0) {
    cq.context.cqs.delete(cq.ptr);
    cq.ptr = 0;
    if (cq.channel) cq.channel.refcnt--;
  }
  return r;
}

function rc_req_notify_cq(ibcq: ibv_cq, solicited: number): number {
  const cq = live(ibcq, RcCq);
  if (!cq) return errno.EINVAL;
  return A().reqNotifyCq(cq.ptr, solicited ? 1 : 0);
}

async function rc_get_cq_event(ibch: ibv_comp_channel): Promise<{ cq: ibv_cq; cq_context: unknown }> {
  const ch = ibch instanceof RcChannel ? ibch : null;
  if (!ch) throw new VerbsError(errno.EINVAL, 'ibv_get_cq_event: not a completion channel of the rdma-core provider');
  const a = A();
  for (;;) {
    if (!ch.ptr || ch.context.closed) throw new VerbsError(errno.EBADF, 'ibv_get_cq_event: the channel is closed');
    const r = a.getCqEvent(ch.ptr);
    if (r > 0) {
      const cq = ch.context.cqs.get(r);
      if (!cq) throw new VerbsError(errno.EIO, 'ibv_get_cq_event: an event for a CQ this provider does not know');
      cq.compReported++;
      return { cq, cq_context: cq.cq_context };
    }
    if (r !== -errno.EAGAIN) throw new VerbsError(-r, 'ibv_get_cq_event: read of the channel failed');
    await readable(ch.context, ch.fd);
  }
}

function rc_ack_cq_events(ibcq: ibv_cq, n: number): void {
  const cq = live(ibcq, RcCq);
  if (!cq) fail(errno.EINVAL, 'ibv_ack_cq_events', 'not a live CQ of the rdma-core provider');
  if (!isNum(n) || n < 0 || n > cq.compReported - cq.compAcked) {
    fail(errno.EINVAL, 'ibv_ack_cq_events', `${String(n)} events, ${cq.compReported - cq.compAcked} unacknowledged`);
  }
  A().ackCqEvents(cq.ptr, n);
  cq.compAcked += n;
}

function rc_poll_cq(ibcq: ibv_cq, num: number, wc: ibv_wc[]): number {
  const cq = live(ibcq, RcCq);
  if (!cq) return -errno.EINVAL;
  const a = A();
  scratch(a);
  let done = 0;
  while (done < num) {
    const want = Math.min(num - done, WC_MAX);
    const got = a.pollCq(cq.ptr, want);
    if (got < 0) return done > 0 ? done : got;
    for (let i = 0; i < got; i++) decodeWc((wc[done + i] ??= newWc()), i, WC_REC);
    done += got;
    if (got < want) break;
  }
  return done;
}

// ------------------------------------------------------------------ srq

function rc_create_srq(ibpd: ibv_pd, init: ibv_srq_init_attr): ibv_srq {
  const pd = live(ibpd, RcPd);
  if (!pd) fail(errno.EINVAL, 'ibv_create_srq', 'not a live ibv_pd of the rdma-core provider');
  const at = init.attr;
  if (typeof at !== 'object' || at === null || !isNum(at.max_wr) || !isNum(at.max_sge) || !isNum(at.srq_limit ?? 0)) {
    fail(errno.EINVAL, 'ibv_create_srq', 'bad attr');
  }
  const r = A().createSrq(pd.ptr, at.max_wr, at.max_sge, at.srq_limit ?? 0);
  if (typeof r === 'number') fail(r, 'ibv_create_srq', `max_wr ${at.max_wr} max_sge ${at.max_sge}`);
  at.max_wr = r.max_wr;
  at.max_sge = r.max_sge;
  const srq = new RcSrq(pd.context, pd, r.ptr, init.srq_context, r.handle);
  pd.context.srqs.set(r.ptr, srq);
  return srq;
}

function rc_modify_srq(ibsrq: ibv_srq, attr: ibv_srq_attr, mask: number): number {
  const srq = live(ibsrq, RcSrq);
  if (!srq) return errno.EINVAL;
  if ((mask & IBV_SRQ_MAX_WR && !isNum(attr.max_wr)) || (mask & IBV_SRQ_LIMIT && !isNum(attr.srq_limit))) return errno.EINVAL;
  return A().modifySrq(srq.ptr, attr.max_wr ?? 0, attr.max_sge ?? 0, attr.srq_limit ?? 0, mask);
}

function rc_query_srq(ibsrq: ibv_srq, attr: ibv_srq_attr): number {
  const srq = live(ibsrq, RcSrq);
  if (!srq) return errno.EINVAL;
  const r = A().querySrq(srq.ptr);
  if (typeof r === 'number') return r;
  [attr.max_wr, attr.max_sge, attr.srq_limit] = r;
  return 0;
}

function rc_destroy_srq(ibsrq: ibv_srq): number {
  const srq = live(ibsrq, RcSrq);
  if (!srq) return errno.EINVAL;
  if (srq.asyncReported !== srq.asyncAcked) return errno.EBUSY;
  for (const qp of srq.context.qps.values()) if (qp.ptr && qp.srq === srq) return errno.EBUSY;
  const r = A().destroySrq(srq.ptr);
  if (r === 0) {
    srq.context.srqs.delete(srq.ptr);
    srq.ptr = 0;
  }
  return r;
}

// ------------------------------------------------------------------ qp

function rc_create_qp(ibpd: ibv_pd, init: ibv_qp_init_attr): ibv_qp {
  const pd = live(ibpd, RcPd);
  if (!pd) fail(errno.EINVAL, 'ibv_create_qp', 'not a live ibv_pd of the rdma-core provider');
  const ctx = pd.context;
  const scq = init.send_cq === null ? null : live(init.send_cq, RcCq);
  const rcq = init.recv_cq === null ? null : live(init.recv_cq, RcCq);
  const srq = init.srq === null || init.srq === undefined ? null : live(init.srq, RcSrq);
  if (!scq || scq.context !== ctx) fail(errno.EINVAL, 'ibv_create_qp', 'send_cq is not a live CQ of this context');
  if (!rcq || rcq.context !== ctx) fail(errno.EINVAL, 'ibv_create_qp', 'recv_cq is not a live CQ of this context');
  if (init.srq && (!srq || srq.context !== ctx)) fail(errno.EINVAL, 'ibv_create_qp', 'srq is not a live SRQ of this context');
  const c = init.cap;
  if (typeof c !== 'object' || c === null) fail(errno.EINVAL, 'ibv_create_qp', 'no cap');
  const nums = [c.max_send_wr, c.max_recv_wr, c.max_send_sge, c.max_recv_sge, c.max_inline_data ?? 0];
  if (!nums.every((x) => isNum(x) && x >= 0) || !isNum(init.qp_type)) fail(errno.EINVAL, 'ibv_create_qp', 'bad cap or qp_type');
  const r = A().createQp(
    pd.ptr,
    scq.ptr,
    rcq.ptr,
    srq ? srq.ptr : 0,
    init.qp_type,
    init.sq_sig_all ? 1 : 0,
    ...(nums as [number, number, number, number, number]),
  );
  if (typeof r === 'number') fail(r, 'ibv_create_qp', `type ${init.qp_type}, cap ${JSON.stringify(c)}`);
  Object.assign(init.cap, capOf(r.cap)); // C writes the actual capabilities back
  const qp = new RcQp(ctx, pd, r.ptr, init.qp_context, scq, rcq, srq, r.handle, r.qp_num, init.qp_type, init.sq_sig_all ? 1 : 0);
  ctx.qps.set(r.ptr, qp);
  return qp;
}

function rc_modify_qp(ibqp: ibv_qp, attr: Partial<ibv_qp_attr>, mask: number): number {
  const qp = live(ibqp, RcQp);
  if (!qp) return errno.EINVAL;
  const r = A().modifyQp(qp.ptr, attr, mask);
  if (r === 0 && mask & IBV_QP_STATE) qp.state = attr.qp_state!;
  return r;
}

function rc_query_qp(ibqp: ibv_qp, attr: ibv_qp_attr, mask: number, init: ibv_qp_init_attr): number {
  const qp = live(ibqp, RcQp);
  if (!qp) return errno.EINVAL;
  const r = A().queryQp(qp.ptr, mask);
  if (typeof r === 'number') return r;
  const { cap, ...rest } = r.attr;
  Object.assign(attr, rest);
  attr.cap = capOf(cap as Record<string, unknown>);
  qp.state = attr.qp_state;
  init.cap = capOf(r.init['cap'] as Record<string, unknown>);
  init.qp_type = qp.qp_type;
  init.sq_sig_all = qp.sq_sig_all;
  init.send_cq = qp.send_cq;
  init.recv_cq = qp.recv_cq;
  init.srq = qp.srq;
  init.qp_context = qp.qp_context;
  return 0;
}

function rc_destroy_qp(ibqp: ibv_qp): number {
  const qp = live(ibqp, RcQp);
  if (!qp) return errno.EINVAL;
  if (qp.asyncReported !== qp.asyncAcked) return errno.EBUSY;
  const r = A().destroyQp(qp.ptr);
  if (r === 0) {
    qp.context.qps.delete(qp.ptr);
    qp.ptr = 0;
  }
  return r;
}

function rc_post_send(ibqp: ibv_qp, wr: ibv_send_wr, bad?: BadWr<ibv_send_wr>): number {
  const qp = live(ibqp, RcQp);
  if (!qp) return errno.EINVAL;
  if (typeof wr !== 'object' || wr === null) {
    if (bad) bad.wr = wr;
    return errno.EINVAL;
  }
  const a = A();
  scratch(a);
  const ud = qp.qp_type === IBV_QPT_UD;
  let w: ibv_send_wr | null = wr;
  while (w) {
    const e = encodeSend(w, ud, qp.context);
    if (e.n === 0 && e.bad === null) {
      if (bad) bad.wr = w;
      return errno.ENOMEM; // a single WR larger than the scratch
    }
    if (e.n > 0) {
      const r = a.postSend(qp.ptr, e.n);
      if (r !== 0) {
        if (bad) bad.wr = nth(w, wr32[0]!);
        return r;
      }
    }
    if (e.bad) {
      if (bad) bad.wr = e.bad;
      return errno.EINVAL;
    }
    w = e.rest;
  }
  if (bad) bad.wr = null;
  return 0;
}

function encodeRecv(first: ibv_recv_wr): { n: number; rest: ibv_recv_wr | null; bad: ibv_recv_wr | null } {
  let w: ibv_recv_wr | null = first;
  let n = 0;
  let off = 8;
  let sges = 0;
  while (w && n < MAX_WR) {
    if (typeof w !== 'object') return { n: -1, rest: null, bad: w };
    const ns = w.num_sge;
    const list = w.sg_list;
    if (!isNum(ns) || ns < 0 || (ns > 0 && (!Array.isArray(list) || list.length < ns)) || typeof w.wr_id !== 'bigint') return { n: -1, rest: null, bad: w };
    if (off + 16 + 16 * ns > WR_BYTES || sges + ns > MAX_SGE) break;
    wr64[off >> 3] = BigInt.asUintN(64, w.wr_id);
    wr32[(off >> 2) + 2] = ns;
    off += 16;
    for (let j = 0; j < ns; j++, off += 16) {
      const s = list![j]!;
      if (typeof s !== 'object' || s === null || typeof s.addr !== 'bigint' || !isNum(s.length) || !isNum(s.lkey)) return { n: -1, rest: null, bad: w };
      wr64[off >> 3] = BigInt.asUintN(64, s.addr);
      wr32[(off >> 2) + 2] = s.length;
      wr32[(off >> 2) + 3] = s.lkey;
    }
    sges += ns;
    n++;
    w = w.next ?? null;
  }
  return { n, rest: w, bad: null };
}

function postRecvChain(ptr: number, srq: boolean, wr: ibv_recv_wr, bad?: BadWr<ibv_recv_wr>): number {
  if (typeof wr !== 'object' || wr === null) {
    if (bad) bad.wr = wr;
    return errno.EINVAL;
  }
  const a = A();
  scratch(a);
  let w: ibv_recv_wr | null = wr;
  while (w) {
    const e = encodeRecv(w);
    if (e.n === 0 && e.bad === null) {
      if (bad) bad.wr = w;
      return errno.ENOMEM;
    }
    if (e.n > 0) {
      const r = a.postRecv(ptr, e.n, srq);
      if (r !== 0) {
        if (bad) bad.wr = nth(w, wr32[0]!);
        return r;
      }
    }
    if (e.bad) {
      if (bad) bad.wr = e.bad;
      return errno.EINVAL;
    }
    w = e.rest;
  }
  if (bad) bad.wr = null;
  return 0;
}

function rc_post_recv(ibqp: ibv_qp, wr: ibv_recv_wr, bad?: BadWr<ibv_recv_wr>): number {
  const qp = live(ibqp, RcQp);
  if (!qp) return errno.EINVAL;
  return postRecvChain(qp.ptr, false, wr, bad);
}

function rc_post_srq_recv(ibsrq: ibv_srq, wr: ibv_recv_wr, bad?: BadWr<ibv_recv_wr>): number {
  const srq = live(ibsrq, RcSrq);
  if (!srq) return errno.EINVAL;
  return postRecvChain(srq.ptr, true, wr, bad);
}

// ------------------------------------------------------------------ ah

function rc_create_ah(ibpd: ibv_pd, attr: ibv_ah_attr): ibv_ah {
  const pd = live(ibpd, RcPd);
  if (!pd) fail(errno.EINVAL, 'ibv_create_ah', 'not a live ibv_pd of the rdma-core provider');
  const r = A().createAh(pd.ptr, attr);
  if (typeof r === 'number') fail(r, 'ibv_create_ah', 'libibverbs refused the address');
  const ah = new RcAh(pd.context, pd, r.ptr, r.handle);
  pd.context.ahs.add(ah);
  return ah;
}

function rc_destroy_ah(ibah: ibv_ah): number {
  const ah = live(ibah, RcAh);
  if (!ah) return errno.EINVAL;
  const r = A().destroyAh(ah.ptr);
  if (r === 0) {
    ah.context.ahs.delete(ah);
    ah.ptr = 0;
  }
  return r;
}

// ------------------------------------------------------------------ async events

/** What an acknowledgement needs to rebuild the C event. */
const asyncNative = new WeakMap<ibv_async_event, { kind: string; ptr: number; acked: boolean }>();

async function rc_get_async_event(ibctx: ibv_context): Promise<ibv_async_event> {
  const ctx = ibctx instanceof RcContext ? ibctx : null;
  if (!ctx) throw new VerbsError(errno.EINVAL, 'ibv_get_async_event: not an ibv_context of the rdma-core provider');
  const a = A();
  for (;;) {
    if (ctx.closed) throw new VerbsError(errno.EBADF, 'ibv_get_async_event: the context is closed');
    const r = a.getAsyncEvent(ctx.ptr);
    if (typeof r === 'number') {
      if (r !== -errno.EAGAIN) throw new VerbsError(-r, 'ibv_get_async_event: read of the async fd failed');
      await readable(ctx, ctx.async_fd);
      continue;
    }
    const ev: ibv_async_event = { element: {}, event_type: r.event_type };
    let ptr = r.ptr ?? r.port_num ?? 0;
    if (r.kind === 'cq') {
      const cq = ctx.cqs.get(r.ptr!);
      if (cq) {
        ev.element.cq = cq;
        cq.asyncReported++;
      }
    } else if (r.kind === 'qp') {
      const qp = ctx.qps.get(r.ptr!);
      if (qp) {
        ev.element.qp = qp;
        qp.asyncReported++;
      }
    } else if (r.kind === 'srq') {
      const srq = ctx.srqs.get(r.ptr!);
      if (srq) {
        ev.element.srq = srq;
        srq.asyncReported++;
      }
    } else if (r.kind === 'port') {
      ev.element.port_num = r.port_num!;
      ptr = r.port_num!;
    }
    asyncNative.set(ev, { kind: r.kind, ptr, acked: false });
    const owner = (ev.element.qp ?? ev.element.cq ?? ev.element.srq) as RcQp | RcCq | RcSrq | undefined;
    owner?.pendingAsync.push({ type: r.event_type, kind: r.kind, ptr });
    // Port and device events hold nothing (the verbs layer does not pass
    // them to ack_async_event): acknowledge them in libibverbs now.
    if (r.kind === 'port' || r.kind === 'device' || r.kind === 'wq') {
      a.ackAsyncEvent(r.event_type, r.kind, ptr);
      asyncNative.get(ev)!.acked = true;
    }
    return ev;
  }
}

function rc_ack_async_event(ev: ibv_async_event): void {
  const n = asyncNative.get(ev);
  if (!n) fail(errno.EINVAL, 'ibv_ack_async_event', 'not an event from ibv_get_async_event of the rdma-core provider');
  if (n.acked) fail(errno.EINVAL, 'ibv_ack_async_event', 'the event is already acknowledged');
  const owner = (ev.element.qp ?? ev.element.cq ?? ev.element.srq) as RcQp | RcCq | RcSrq | undefined;
  if (owner?.ptr) {
    A().ackAsyncEvent(ev.event_type, n.kind, n.ptr);
    owner.asyncAcked++;
    const i = owner.pendingAsync.findIndex((p) => p.type === ev.event_type && p.ptr === n.ptr);
    if (i >= 0) owner.pendingAsync.splice(i, 1);
  }
  n.acked = true;
}

// ------------------------------------------------------------------ counters

/** The port's hw_counters (and counters) from sysfs, as rdma statistic shows them. */
function rc_read_counters(ibctx: ibv_context, port: number): Record<string, bigint> {
  const ctx = liveCtx(ibctx);
  if (!ctx) fail(errno.EINVAL, 'rnic_read_counters', 'not an open ibv_context of the rdma-core provider');
  const out: Record<string, bigint> = {};
  const base = join(ctx.device.ibdev_path, 'ports', String(port));
  for (const sub of ['hw_counters', 'counters']) {
    let names: string[];
    try {
      names = readdirSync(join(base, sub));
    } catch {
      continue;
    }
    for (const name of names) {
      try {
        const v = readFileSync(join(base, sub, name), 'utf8').trim();
        if (/^\d+$/.test(v) && !(name in out)) out[name] = BigInt(v);
      } catch {
        // unreadable counter (permissions): left out
      }
    }
  }
  if (Object.keys(out).length === 0) fail(errno.ENOENT, 'rnic_read_counters', `no counters under ${base}`);
  return out;
}

// ------------------------------------------------------------------ ops and provider

export const rdma_core_ctx_ops: VerbsContextOps = Object.freeze({
  ...rc_unbound_ops,
  ...rc_extended_ops,
  query_device: rc_query_device,
  query_port: rc_query_port,
  query_gid: rc_query_gid,
  query_pkey: rc_query_pkey,
  close_device: rc_close_device,
  alloc_pd: rc_alloc_pd,
  alloc_mw: rc_alloc_mw,
  dealloc_mw: rc_dealloc_mw,
  bind_mw: rc_bind_mw,
  dealloc_pd: rc_dealloc_pd,
  reg_mr: rc_reg_mr,
  dereg_mr: rc_dereg_mr,
  alloc_buf: rc_alloc_buf,
  free_buf: rc_free_buf,
  create_comp_channel: rc_create_comp_channel,
  destroy_comp_channel: rc_destroy_comp_channel,
  create_cq: rc_create_cq,
  destroy_cq: rc_destroy_cq,
  req_notify_cq: rc_req_notify_cq,
  get_cq_event: rc_get_cq_event,
  ack_cq_events: rc_ack_cq_events,
  poll_cq: rc_poll_cq,
  create_srq: rc_create_srq,
  modify_srq: rc_modify_srq,
  query_srq: rc_query_srq,
  destroy_srq: rc_destroy_srq,
  post_srq_recv: rc_post_srq_recv,
  create_qp: rc_create_qp,
  modify_qp: rc_modify_qp,
  query_qp: rc_query_qp,
  destroy_qp: rc_destroy_qp,
  post_send: rc_post_send,
  post_recv: rc_post_recv,
  create_ah: rc_create_ah,
  destroy_ah: rc_destroy_ah,
  get_async_event: rc_get_async_event,
  ack_async_event: rc_ack_async_event,
  read_counters: rc_read_counters,
});

const known = new Map<string, RcDevice>();

export const rdmaCoreProvider: VerbsProvider = Object.freeze({
  name: 'rdma-core',
  devices(): ProviderDevice[] {
    const a = rdmaCoreAddon();
    if (!a) return [];
    const list = a.getDeviceList();
    if (typeof list === 'number') return []; // ENOSYS: no RDMA in this kernel
    return list.map((d) => {
      let dev = known.get(d.name);
      if (!dev || dev.ptr !== d.ptr) {
        dev = new RcDevice(rdmaCoreProvider, d.ptr, d, d.guid);
        known.set(d.name, dev);
      }
      return dev;
    });
  },
  guid(dev: ProviderDevice): bigint {
    return (dev as RcDevice).nodeGuid;
  },
  index(dev: ProviderDevice): number {
    return (dev as RcDevice).index;
  },
  open(dev: ProviderDevice): ibv_context & { ops: VerbsContextOps } {
    if (!(dev instanceof RcDevice)) throw new VerbsError(errno.EINVAL, 'ibv_open_device: not an rdma-core device');
    const r = A().openDevice(dev.name);
    if (typeof r === 'number') throw new VerbsError(r, `ibv_open_device: ${dev.name}`);
    return new RcContext(rdma_core_ctx_ops, dev, r.ptr, r.cmd_fd, r.async_fd, r.num_comp_vectors);
  },
});

/**
 * Lists the real devices after the model's (called before every device
 * listing, from boot.ts). RNIC_NO_RDMA_CORE=1 hides them; without the
 * addon the provider lists nothing (rdmaCoreUnavailable() says why).
 */
export function syncRdmaCoreProvider(): void {
  if (process.env['RNIC_NO_RDMA_CORE'] === '1' || !rdmaCoreAddon()) unregisterProvider(rdmaCoreProvider);
  else registerProvider(rdmaCoreProvider);
}

export { rdmaCoreUnavailable };
