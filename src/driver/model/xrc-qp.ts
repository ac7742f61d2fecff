/**
 * XRC receive QPs: created in an XRC domain (ibv_create_qp_ex with
 * IBV_QP_INIT_ATTR_XRCD), opened by number from any context of the device
 * that has the domain open (ibv_open_qp), and destroyed when the last handle
 * goes, as the kernel's shared XRC TGT QPs are (ib_open_qp / ib_close_qp:
 * each handle holds the real QP; destroying one handle closes it).
 *
 * An XRC receive QP has no PD, no CQs, no send or receive queue: every
 * request names an XRC SRQ of the domain in its XRCETH, and the receive
 * completes on that SRQ's CQ. Errors are the kernel's: EINVAL for a missing
 * or foreign domain, a QP number that is not an XRC receive QP of that
 * domain, or an open of another QP type; EOPNOTSUPP for open attribute bits
 * libibverbs does not know.
 */
import {
  errno,
  IBV_QP_OPEN_ATTR_CONTEXT,
  IBV_QP_OPEN_ATTR_NUM,
  IBV_QP_OPEN_ATTR_RESERVED,
  IBV_QP_OPEN_ATTR_TYPE,
  IBV_QP_OPEN_ATTR_XRCD,
  IBV_QPS_RESET,
  IBV_QPT_XRC_RECV,
} from '../../device/abi/constants.js';
import { Cmd } from '../../device/commands.js';
import { VerbsError } from '../verbs/errno-error.js';
import { newQpCap } from '../verbs/structs.js';
import type { ibv_context, ibv_qp, ibv_qp_init_attr_ex, ibv_qp_open_attr } from '../verbs/types.js';
import { isU32 } from './check.js';
import { model_cmd } from './cmd.js';
import { model_live, type ModelContext } from './context.js';
import type { ModelDeviceHandle } from './handle.js';
import { ModelQp, ModelXrcd, XrcRecvShare } from './objects.js';

/** Per device: its XRC receive QPs by number, with their handles (the kernel's xrcd tgt_qps). */
const byDevice = new WeakMap<ModelDeviceHandle, Map<number, XrcRecvShare>>();

function sharesOf(ctx: ModelContext): Map<number, XrcRecvShare> {
  let m = byDevice.get(ctx.handle);
  if (!m) byDevice.set(ctx.handle, (m = new Map()));
  return m;
}

function liveXrcd(ctx: ModelContext, x: unknown, verb: string): ModelXrcd {
  if (!(x instanceof ModelXrcd) || x.destroyed || x.context !== ctx)
    throw new VerbsError(errno.EINVAL, `${verb}: xrcd is not an open XRC domain of this context`);
  return x;
}

/** A handle object on the shared QP (the creator's and every opener's). */
function handleOn(ctx: ModelContext, share: XrcRecvShare, qpContext: unknown): ModelQp {
  const none = { size: 0, logStride: 0, ringAddr: ctx.mem.baseNum, maxSge: 0 };
  const qp = new ModelQp(
    ctx,
    qpContext,
    null,
    null,
    null,
    null,
    share.qpn,
    IBV_QPT_XRC_RECV,
    0,
    { ...none, maxInline: 0, dataOff: 0, opMask: 0 },
    none,
    share.dbrecAddr,
    [],
  );
  qp.xrcShare = share;
  qp.state = IBV_QPS_RESET;
  share.handles++;
  ctx.qps.set(qp.qp_num, qp);
  return qp;
}

/** ibv_create_qp_ex of an IBV_QPT_XRC_RECV QP (the comp_mask has been checked). */
export function model_create_xrc_recv_qp(ctx: ModelContext, init: ibv_qp_init_attr_ex): ibv_qp {
  const xrcd = liveXrcd(ctx, init.xrcd, 'ibv_create_qp_ex');
  // Only the doorbell record: the device never reads a ring of this QP.
  let rec: { addr: bigint; addrNum: number };
  try {
    rec = ctx.mem.alloc(8, 64);
  } catch (e) {
    throw new VerbsError(errno.ENOMEM, `ibv_create_qp_ex: ${(e as Error).message}`);
  }
  const r = model_cmd(ctx, Cmd.CREATE_QP, {
    qpType: IBV_QPT_XRC_RECV,
    flags: 0,
    pdn: 0,
    sendCqn: 0,
    recvCqn: 0,
    srqn: 0,
    xrcdn: xrcd.xrcdn,
    sqRingAddr: 0n,
    rqRingAddr: 0n,
    dbrecAddr: rec.addr,
    sqLogSize: 0,
    sqLogStride: 0,
    rqLogSize: 0,
    rqLogStride: 0,
    maxSendSge: 0,
    maxRecvSge: 0,
    maxInlineData: 0,
  });
  if (r.errno) {
    ctx.mem.free(rec.addrNum);
    throw new VerbsError(r.errno, `ibv_create_qp_ex: ${r.what}`);
  }
  const share = new XrcRecvShare(r.out['qpn'] as number, xrcd.xrcdn, rec.addrNum);
  sharesOf(ctx).set(share.qpn, share);
  // No queues: the kernel reports zero capabilities for an XRC receive QP.
  if (init.cap) Object.assign(init.cap, newQpCap());
  return handleOn(ctx, share, init.qp_context);
}

/** ibv_open_qp: another handle on an XRC receive QP of a domain this context has open. */
export function model_open_qp(ibctx: ibv_context, attr: ibv_qp_open_attr): ibv_qp {
  const ctx = ibctx as ModelContext;
  model_live(ctx, 'ibv_open_qp');
  const fail = (n: number, why: string): never => {
    throw new VerbsError(n, `ibv_open_qp: ${why}`);
  };
  if (typeof attr !== 'object' || attr === null) fail(errno.EINVAL, 'qp_open_attr is not an object');
  const mask = attr.comp_mask;
  if (!isU32(mask)) fail(errno.EINVAL, `comp_mask ${String(mask)} is not a uint32_t`);
  if (mask >= IBV_QP_OPEN_ATTR_RESERVED) fail(errno.EOPNOTSUPP, `unknown comp_mask bits 0x${(mask & ~(IBV_QP_OPEN_ATTR_RESERVED - 1)).toString(16)}`);
  const need = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;
  if ((mask & need) !== need) fail(errno.EINVAL, 'comp_mask needs IBV_QP_OPEN_ATTR_NUM, IBV_QP_OPEN_ATTR_XRCD and IBV_QP_OPEN_ATTR_TYPE');
  const xrcd = liveXrcd(ctx, attr.xrcd, 'ibv_open_qp');
  if (attr.qp_type !== IBV_QPT_XRC_RECV) fail(errno.EINVAL, `qp_type ${String(attr.qp_type)}: only XRC receive QPs (IBV_QPT_XRC_RECV) can be opened`);
  const share = isU32(attr.qp_num) ? sharesOf(ctx).get(attr.qp_num) : undefined;
  if (!share || share.handles === 0 || share.xrcdn !== xrcd.xrcdn) fail(errno.EINVAL, `no XRC receive QP ${String(attr.qp_num)} in XRC domain ${xrcd.xrcdn}`);
  return handleOn(ctx, share!, mask & IBV_QP_OPEN_ATTR_CONTEXT ? attr.qp_context : undefined);
}

/**
 * Destroying one handle of an XRC receive QP: the last one destroys the
 * device QP (DESTROY_QP) and frees its record; the others only close.
 */
export function releaseXrcRecv(qp: ModelQp, share: XrcRecvShare): number {
  const ctx = qp.context;
  if (share.handles === 1) {
    const r = model_cmd(ctx, Cmd.DESTROY_QP, { qpn: qp.qp_num });
    if (r.errno) return r.errno;
    ctx.mem.free(share.dbrecAddr);
    sharesOf(ctx).delete(share.qpn);
  }
  share.handles--;
  qp.destroyed = true;
  return 0;
}
