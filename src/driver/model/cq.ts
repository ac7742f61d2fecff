/**
 * Completion queues and completion channels (section 7 of the device
 * manual).
 *
 * Ring: 2^k entries of 64 bytes, k the smallest with 2^k ≥ cqe + 1; the CQ
 * reports cqe = 2^k − 1, as mlx5 does. poll_cq reads entry C (the driver's
 * consumer counter) when its owner byte, loaded with Atomics, has the
 * phase ((C >> k) & 1) ^ 1; it fills the caller's ibv_wc objects in place,
 * then stores C into the CQ doorbell record once per call.
 *
 * Each polled CQE also retires work-queue slots: a send completion frees
 * its WQE and every older one of that SQ (unsignalled WQEs complete
 * silently), a receive completion frees its RQ slot, or links its SRQ entry
 * back into the SRQ free list (mlx5's scheme; wqeCounter is the ring index).
 * Receive and send completions are told apart by the IBV_WC_RECV bit of the
 * CQE opcode, which the driver relies on for every status.
 *
 * Events: req_notify_cq stores C into the record and arms the CQ through its
 * BAR doorbell (armCq); the device then writes one completion EQE to the
 * context's EQ. get_cq_event drains the EQ into the channels (eq.ts) and
 * resolves with the first CQ queued on its channel.
 */
import {
  errno,
  IBV_CQ_ATTR_MODERATE,
  IBV_CQ_INIT_ATTR_MASK_FLAGS,
  IBV_CQ_INIT_ATTR_MASK_PD,
  IBV_CREATE_CQ_ATTR_SINGLE_THREADED,
  IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
  IBV_WC_RECV,
  IBV_WC_STANDARD_FLAGS,
} from '../../device/abi/constants.js';
import { Cmd } from '../../device/commands.js';
import { CQE, CQE_OWNER_OFFSET, CQE_SIZE } from '../../device/cqe.js';
import { ringAlign } from '../../device/host-memory.js';
import { armCq, encodeCqArm } from '../../device/registers.js';
import { SRQ_WQE_HDR } from '../../device/wqe.js';
import { VerbsError } from '../verbs/errno-error.js';
import { newWc } from '../verbs/structs.js';
import type { ibv_comp_channel, ibv_context, ibv_cq, ibv_cq_init_attr_ex, ibv_modify_cq_attr, ibv_wc, ibv_wc_ex } from '../verbs/types.js';
import { model_cmd } from './cmd.js';
import { model_live, type ModelContext } from './context.js';
import { model_drop_async_events } from './async.js';
import { model_eq_drain, model_eq_wait } from './eq.js';
import { ModelCompChannel, ModelCq, type ModelQp, type ModelSrq } from './objects.js';
import { isU32 } from './check.js';

// CQE fields, hoisted (module load) for the poll loop.
const WR_ID = CQE.f.wrId.decl.offset;
const BYTE_LEN = CQE.f.byteLen;
const IMM = CQE.f.immData;
const QP_NUM = CQE.f.qpNum;
const SRC_QP = CQE.f.srcQp;
const VENDOR_ERR = CQE.f.vendorErr;
const WC_FLAGS = CQE.f.wcFlags;
const PKEY_INDEX = CQE.f.pkeyIndex;
const SLID = CQE.f.slid;
const WQE_COUNTER = CQE.f.wqeCounter;
const CQE_SRQN = CQE.f.srqn;
const STATUS = CQE.f.status;
const OPCODE = CQE.f.opcode;
const SL = CQE.f.sl;
const DLID_PATH_BITS = CQE.f.dlidPathBits;
const TIMESTAMP = CQE.f.timestamp.decl.offset;
const SRQ_NEXT = SRQ_WQE_HDR.f.nextWqeIndex;
/** wc_flags of ibv_create_cq_ex the model's CQE carries (no VLAN, flow tag, tag matching or wall clock). */
/** cq_mod_caps: the MODIFY_CQ fields are 16 bits. */
export const MODEL_CQ_MOD_MAX = 0xffff;
const MODEL_WC_FLAGS = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
const CQ_ARM_WORD = 1; // the record's armCmd word (informational)

function nextLog2(n: number): number {
  return n <= 1 ? 0 : 32 - Math.clz32(n - 1);
}

// ---------------------------------------------------------------------------
// Completion channels
// ---------------------------------------------------------------------------

let nextChannelFd = 1000;

export function model_create_comp_channel(ibctx: ibv_context): ibv_comp_channel {
  const ctx = ibctx as ModelContext;
  model_live(ctx, 'ibv_create_comp_channel');
  const ch = new ModelCompChannel(ctx, nextChannelFd++);
  ctx.channels.add(ch);
  return ch;
}

export function model_destroy_comp_channel(ibch: ibv_comp_channel): number {
  const ch = ibch as ModelCompChannel;
  if (!(ch instanceof ModelCompChannel) || ch.destroyed) return errno.EINVAL;
  if (ch.refcnt > 0) return errno.EBUSY;
  ch.destroyed = true;
  ch.events.length = 0;
  ch.context.channels.delete(ch);
  ch.markGone();
  return 0;
}

// ---------------------------------------------------------------------------
// Create / destroy
// ---------------------------------------------------------------------------

export function model_create_cq(ibctx: ibv_context, cqe: number, cq_context: unknown, channel: ibv_comp_channel | null, comp_vector: number): ibv_cq {
  const ctx = ibctx as ModelContext;
  model_live(ctx, 'ibv_create_cq');
  if (typeof cqe !== 'number' || !Number.isInteger(cqe) || cqe < 1 || cqe > ctx.limits.maxCqe) {
    throw new VerbsError(errno.EINVAL, `ibv_create_cq: cqe ${String(cqe)} not in 1..${ctx.limits.maxCqe}`);
  }
  if (typeof comp_vector !== 'number' || !Number.isInteger(comp_vector) || comp_vector < 0 || comp_vector >= ctx.num_comp_vectors) {
    throw new VerbsError(errno.EINVAL, `ibv_create_cq: no completion vector ${String(comp_vector)}`);
  }
  const ch = channel as ModelCompChannel | null;
  if (ch !== null && (!(ch instanceof ModelCompChannel) || ch.context !== ctx || ch.destroyed))
    throw new VerbsError(errno.EINVAL, 'ibv_create_cq: the channel is not of this context');
  const logSize = nextLog2(cqe + 1);
  const mem = ctx.mem;
  let ring;
  let rec;
  try {
    ring = mem.alloc(CQE_SIZE << logSize, ringAlign(CQE_SIZE << logSize));
  } catch (e) {
    throw new VerbsError(errno.ENOMEM, `ibv_create_cq: ${(e as Error).message}`);
  }
  try {
    rec = mem.alloc(8, 64);
  } catch (e) {
    mem.free(ring.addrNum);
    throw new VerbsError(errno.ENOMEM, `ibv_create_cq: ${(e as Error).message}`);
  }
  const r = model_cmd(ctx, Cmd.CREATE_CQ, { ringAddr: ring.addr, dbrecAddr: rec.addr, eqn: ctx.eqn, logSize });
  if (r.errno) {
    mem.free(ring.addrNum);
    mem.free(rec.addrNum);
    throw new VerbsError(r.errno, `ibv_create_cq: ${r.what}`);
  }
  const cq = new ModelCq(ctx, ch, cq_context, r.out['cqn'] as number, (1 << logSize) - 1, logSize, ring.addrNum, rec.addrNum);
  if (ch) ch.refcnt++;
  ctx.cqs.set(cq.cqn, cq);
  return cq;
}

/**
 * ibv_create_cq_ex: the same CQ as ibv_create_cq (every CQE carries every
 * field and the timestamp), after the checks rxe / mlx5 make: wc_flags the
 * CQE cannot carry (CVLAN, FLOW_TAG, TM_INFO, WALLCLOCK) and creation flags
 * other than SINGLE_THREADED (a hint) are EOPNOTSUPP; parent domains are
 * not modelled (EOPNOTSUPP).
 */
export function model_create_cq_ex(ibctx: ibv_context, attr: ibv_cq_init_attr_ex): ibv_cq {
  const mask = attr.comp_mask ?? 0;
  if (!isU32(attr.wc_flags) || !isU32(mask)) throw new VerbsError(errno.EINVAL, 'ibv_create_cq_ex: wc_flags and comp_mask are unsigned integers');
  if (attr.wc_flags & ~MODEL_WC_FLAGS) {
    throw new VerbsError(
      errno.EOPNOTSUPP,
      `ibv_create_cq_ex: wc_flags 0x${(attr.wc_flags & ~MODEL_WC_FLAGS).toString(16)} are not supported (supported: 0x${MODEL_WC_FLAGS.toString(16)})`,
    );
  }
  if (mask & IBV_CQ_INIT_ATTR_MASK_PD) throw new VerbsError(errno.EOPNOTSUPP, 'ibv_create_cq_ex: parent domains are not modelled');
  if (mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) {
    const fl = attr.flags ?? 0;
    if (!isU32(fl) || fl & ~IBV_CREATE_CQ_ATTR_SINGLE_THREADED)
      throw new VerbsError(errno.EOPNOTSUPP, `ibv_create_cq_ex: creation flags 0x${Number(fl).toString(16)} are not supported (only SINGLE_THREADED)`);
  }
  return model_create_cq(ibctx, attr.cqe, attr.cq_context, attr.channel ?? null, attr.comp_vector ?? 0);
}

/**
 * ibv_resize_cq: a new ring of the smallest power of two above `cqe`,
 * RESIZE_CQ (the device copies the CQEs not yet polled), then the old ring
 * is freed. The same size is a no-op, as in mlx5. Fewer entries than
 * completions waiting to be polled: EINVAL (the device's BAD_PARAM).
 */
export function model_resize_cq(ibcq: ibv_cq, cqe: number): number {
  const cq = ibcq as ModelCq;
  if (!(cq instanceof ModelCq) || cq.destroyed || cq.context.closed) return errno.EINVAL;
  const ctx = cq.context;
  if (typeof cqe !== 'number' || !Number.isInteger(cqe) || cqe < 1 || cqe > ctx.limits.maxCqe) return errno.EINVAL;
  const logSize = nextLog2(cqe + 1);
  if (logSize === cq.logSize) return 0;
  let ring;
  try {
    ring = ctx.mem.alloc(CQE_SIZE << logSize, ringAlign(CQE_SIZE << logSize));
  } catch {
    return errno.ENOMEM;
  }
  // The device reads the consumer counter from the record: publish what was polled.
  Atomics.store(ctx.mem.i32, cq.ciWord, cq.ci | 0);
  const r = model_cmd(ctx, Cmd.RESIZE_CQ, { cqn: cq.cqn, ringAddr: ring.addr, logSize });
  if (r.errno) {
    ctx.mem.free(ring.addrNum);
    return r.errno;
  }
  ctx.mem.free(cq.ringAddr);
  cq.moveRing(ring.addrNum, logSize);
  return 0;
}

/**
 * ibv_modify_cq with IBV_CQ_ATTR_MODERATE: cq_count and cq_period within
 * the device's cq_mod_caps (65535 each), else EINVAL.
 */
export function model_modify_cq(ibcq: ibv_cq, attr: ibv_modify_cq_attr): number {
  const cq = ibcq as ModelCq;
  if (!(cq instanceof ModelCq) || cq.destroyed || cq.context.closed) return errno.EINVAL;
  if (typeof attr !== 'object' || attr === null || !isU32(attr.attr_mask)) return errno.EINVAL;
  if (attr.attr_mask & ~IBV_CQ_ATTR_MODERATE) return errno.EINVAL;
  if (!(attr.attr_mask & IBV_CQ_ATTR_MODERATE)) return 0;
  const m = attr.moderate;
  if (typeof m !== 'object' || m === null) return errno.EINVAL;
  if (!isU32(m.cq_count) || m.cq_count > MODEL_CQ_MOD_MAX || !isU32(m.cq_period) || m.cq_period > MODEL_CQ_MOD_MAX) return errno.EINVAL;
  const r = model_cmd(cq.context, Cmd.MODIFY_CQ, { cqn: cq.cqn, cqCount: m.cq_count, cqPeriod: m.cq_period });
  return r.errno;
}

/**
 * ibv_destroy_cq. libibverbs blocks until every event it reported has been
 * acknowledged; a JavaScript caller cannot be blocked for its own acks, so
 * unacknowledged events give EBUSY instead.
 */
export function model_destroy_cq(ibcq: ibv_cq): number {
  const cq = ibcq as ModelCq;
  if (!(cq instanceof ModelCq)) return errno.EINVAL;
  const ctx = cq.context;
  if (cq.destroyed || ctx.closed) return errno.EINVAL;
  if (cq.compEventsReported !== cq.compEventsAcked || cq.asyncEventsReported !== cq.asyncEventsAcked) return errno.EBUSY;
  const r = model_cmd(ctx, Cmd.DESTROY_CQ, { cqn: cq.cqn });
  if (r.errno) return r.errno;
  cq.destroyed = true;
  ctx.cqs.delete(cq.cqn);
  ctx.mem.free(cq.ringAddr);
  ctx.mem.free(cq.dbrecAddr);
  const ch = cq.channel as ModelCompChannel | null;
  if (ch) {
    ch.refcnt--;
    removeAll(ch.events, cq);
  }
  model_drop_async_events(ctx, 'cq', cq.cqn);
  return 0;
}

function removeAll<T>(a: T[], x: T): void {
  let j = 0;
  for (let i = 0; i < a.length; i++) if (a[i] !== x) a[j++] = a[i]!;
  a.length = j;
}

// ---------------------------------------------------------------------------
// Poll
// ---------------------------------------------------------------------------

/** An SRQ entry a polled CQE completed goes back on the SRQ's free list. */
function retireSrq(srq: ModelSrq, wqeCounter: number, dv: DataView): void {
  if (srq.destroyed) return;
  const idx = wqeCounter & srq.mask;
  SRQ_NEXT.set(dv, srq.ringOff + (srq.tail << srq.logStride), idx);
  srq.tail = idx;
}

/** Free the work queue slots a polled CQE completes. */
function retire(qp: ModelQp, opcode: number, wqeCounter: number, dv: DataView): void {
  if (opcode & IBV_WC_RECV) {
    const srq = qp.srq;
    if (srq) {
      retireSrq(srq, wqeCounter, dv);
      return;
    }
    const out = (qp.rqPi - qp.rqCi) >>> 0;
    const d = (wqeCounter - qp.rqCi) & 0xffff;
    if (d < out) qp.rqCi = (qp.rqCi + d + 1) >>> 0;
    return;
  }
  const out = (qp.sqPi - qp.sqCi) >>> 0;
  const d = (wqeCounter - qp.sqCi) & 0xffff;
  if (d < out) qp.sqCi = (qp.sqCi + d + 1) >>> 0;
}

/**
 * ibv_poll_cq: up to `num_entries` completions into wc[0..n), in CQ order.
 * Reuses the caller's ibv_wc objects; creates one only where the array is
 * short. Returns n, or a negative errno.
 */
export function model_poll_cq(ibcq: ibv_cq, num_entries: number, wc: ibv_wc[]): number {
  const cq = ibcq as ModelCq;
  if (!(cq instanceof ModelCq) || cq.destroyed || cq.context.closed) return -errno.EINVAL;
  if (typeof num_entries !== 'number' || (num_entries | 0) !== num_entries || num_entries < 0 || !Array.isArray(wc)) return -errno.EINVAL;
  return pollService(cq, num_entries, wc, false);
}

/** poll_cq_ex: poll_cq that also reads the CQE timestamp into completion_ts. */
export function model_poll_cq_ex(ibcq: ibv_cq, num_entries: number, wc: ibv_wc_ex[]): number {
  const cq = ibcq as ModelCq;
  if (!(cq instanceof ModelCq) || cq.destroyed || cq.context.closed) return -errno.EINVAL;
  if (typeof num_entries !== 'number' || (num_entries | 0) !== num_entries || num_entries < 0 || !Array.isArray(wc)) return -errno.EINVAL;
  return pollService(cq, num_entries, wc, true);
}

function pollService(cq: ModelCq, num_entries: number, wc: ibv_wc[], withTs: boolean): number {
  const n = pollOnce(cq, num_entries, wc, withTs);
  const service = cq.context.handle.serviceInline;
  if (n > 0 || !service) return n;
  // A device on this thread only advances when we let it: an empty poll is its chance.
  service();
  return pollOnce(cq, num_entries, wc, withTs);
}

function pollOnce(cq: ModelCq, num_entries: number, wc: ibv_wc[], withTs: boolean): number {
  const ctx = cq.context;
  const mem = ctx.mem;
  const u8 = mem.u8;
  const dv = mem.dv;
  const logSize = cq.logSize;
  const mask = cq.mask;
  const ringOff = cq.ringOff;
  const qps = ctx.qps;
  let ci = cq.ci;
  let n = 0;
  for (; n < num_entries; n++) {
    const off = ringOff + (ci & mask) * CQE_SIZE;
    if ((Atomics.load(u8, off + CQE_OWNER_OFFSET) & 1) !== (((ci >>> logSize) & 1) ^ 1)) break;
    let w = wc[n];
    if (w === undefined) {
      w = withTs ? ({ ...newWc(), completion_ts: 0n } as ibv_wc_ex) : newWc();
      wc[n] = w;
    }
    const qpNum = QP_NUM.get(dv, off);
    const opcode = OPCODE.get(dv, off);
    const imm = IMM.get(dv, off);
    w.wr_id = dv.getBigUint64(off + WR_ID, true);
    w.status = STATUS.get(dv, off);
    w.opcode = opcode;
    w.vendor_err = VENDOR_ERR.get(dv, off);
    w.byte_len = BYTE_LEN.get(dv, off);
    w.imm_data = imm;
    w.invalidated_rkey = imm;
    w.qp_num = qpNum;
    w.src_qp = SRC_QP.get(dv, off);
    w.wc_flags = WC_FLAGS.get(dv, off);
    w.pkey_index = PKEY_INDEX.get(dv, off);
    w.slid = SLID.get(dv, off);
    w.sl = SL.get(dv, off);
    w.dlid_path_bits = DLID_PATH_BITS.get(dv, off);
    if (withTs) (w as ibv_wc_ex).completion_ts = dv.getBigUint64(off + TIMESTAMP, true);
    // An XRC receive names its SRQ (the QP, an XRC receive QP, has none); the SRQ's CQ is in its context.
    const srqn = CQE_SRQN.get(dv, off);
    if (srqn !== 0 && opcode & IBV_WC_RECV) {
      const srq = ctx.srqs.get(srqn);
      if (srq !== undefined) retireSrq(srq, WQE_COUNTER.get(dv, off), dv);
    } else {
      const qp = qps.get(qpNum);
      if (qp !== undefined) retire(qp, opcode, WQE_COUNTER.get(dv, off), dv);
    }
    ci = (ci + 1) >>> 0;
  }
  if (n > 0) {
    cq.ci = ci;
    Atomics.store(mem.i32, cq.ciWord, ci | 0);
  }
  return n;
}

// ---------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------

export function model_req_notify_cq(ibcq: ibv_cq, solicited_only: number): number {
  const cq = ibcq as ModelCq;
  if (!(cq instanceof ModelCq)) return errno.EINVAL;
  const ctx = cq.context;
  if (cq.destroyed || ctx.closed) return errno.EINVAL;
  const sol = !!solicited_only;
  const i32 = ctx.mem.i32;
  Atomics.store(i32, cq.ciWord, cq.ci | 0);
  Atomics.store(i32, cq.ciWord + CQ_ARM_WORD, encodeCqArm(cq.ci, sol));
  armCq(ctx.bar, cq.cqn, cq.ci, sol);
  ctx.handle.serviceInline?.();
  return 0;
}

/** ibv_get_cq_event: the next CQ with a completion event on `channel` (C blocks in read()). */
export async function model_get_cq_event(ibch: ibv_comp_channel): Promise<{ cq: ibv_cq; cq_context: unknown }> {
  const ch = ibch as ModelCompChannel;
  if (!(ch instanceof ModelCompChannel)) throw new VerbsError(errno.EINVAL, 'ibv_get_cq_event: not a completion channel of the model provider');
  const ctx = ch.context;
  for (;;) {
    if (ch.destroyed || ctx.closed) throw new VerbsError(errno.EBADF, 'ibv_get_cq_event: the channel is closed');
    if (!ctx.device.present) {
      const cq = ch.events.shift();
      if (cq) {
        cq.compEventsReported++;
        return { cq, cq_context: cq.cq_context };
      }
      throw new VerbsError(errno.EIO, `ibv_get_cq_event: ${ctx.device.name} was removed`);
    }
    model_eq_drain(ctx);
    const cq = ch.events.shift();
    if (cq) {
      cq.compEventsReported++;
      return { cq, cq_context: cq.cq_context };
    }
    await model_eq_wait(ctx, ch.gone);
  }
}

export function model_ack_cq_events(ibcq: ibv_cq, nevents: number): void {
  const cq = ibcq as ModelCq;
  if (!(cq instanceof ModelCq) || cq.destroyed) throw new VerbsError(errno.EINVAL, 'ibv_ack_cq_events: not a live CQ of the model provider');
  if (!Number.isInteger(nevents) || nevents < 0 || nevents > cq.compEventsReported - cq.compEventsAcked) {
    throw new VerbsError(errno.EINVAL, `ibv_ack_cq_events: ${String(nevents)} events, ${cq.compEventsReported - cq.compEventsAcked} unacknowledged`);
  }
  cq.compEventsAcked += nevents;
}
