/**
 * Every verb, misused: a seeded run of thousands of calls, each with at
 * least one argument that is wrong (null, undefined, the wrong type, NaN,
 * negative, huge, a bigint for a number or a number for a bigint, an object
 * that only looks like the right one, a destroyed object, an object of
 * another context or of a closed one, a QP in the wrong state), the other
 * arguments good. Each call must fail the way its kind of verb fails:
 *
 *   int verbs      return a positive errno (EINVAL, EBUSY, ENOMEM, ...)
 *   -1 verbs       return -1 and set errno (rnic_errno): ibv_query_gid, ibv_query_pkey, ibv_get_pkey_index
 *   ibv_poll_cq    returns a negative errno (as do ibv_query_gid_table)
 *   pointer verbs  throw a VerbsError whose `code` is the errno's name
 *   void verbs     throw a VerbsError (never a TypeError)
 *   waiting verbs  reject with a VerbsError (never wait for an event)
 *
 * never a TypeError or RangeError, never a hang. And never silently wrong
 * data: after the run, the QPs the misuse was aimed at carry exactly the
 * work requests that were accepted (the good heads of mixed chains), in
 * order, the bytes arrive intact, and the guard bytes around every buffer
 * are untouched.
 *
 * RNIC_FUZZ_SEED and RNIC_FUZZ_CASES change the run (the seed is in every
 * failure message).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IBV_QPS_INIT,
  IBV_QPS_RTR,
  IBV_QPS_RTS,
  IBV_QPT_RAW_PACKET,
  IBV_QPT_RC,
  IBV_MW_TYPE_1,
  IBV_MW_TYPE_2,
  IBV_ACCESS_ZERO_BASED,
  IBV_QPT_UD,
  IBV_QP_ACCESS_FLAGS,
  IBV_QP_AV,
  IBV_QP_CAP,
  IBV_QP_DEST_QPN,
  IBV_QP_MAX_DEST_RD_ATOMIC,
  IBV_QP_MAX_QP_RD_ATOMIC,
  IBV_QP_MIN_RNR_TIMER,
  IBV_QP_PATH_MIG_STATE,
  IBV_QP_PATH_MTU,
  IBV_QP_PKEY_INDEX,
  IBV_QP_PORT,
  IBV_QP_QKEY,
  IBV_QP_RETRY_CNT,
  IBV_QP_RNR_RETRY,
  IBV_QP_RQ_PSN,
  IBV_QP_SQ_PSN,
  IBV_QP_STATE,
  IBV_QP_TIMEOUT,
  IBV_SEND_INLINE,
  IBV_SEND_SIGNALED,
  IBV_SRQ_LIMIT,
  IBV_SRQ_MAX_WR,
  IBV_WC_SUCCESS,
  IBV_WR_ATOMIC_CMP_AND_SWP,
  IBV_WR_BIND_MW,
  IBV_WR_RDMA_WRITE,
  IBV_WR_RDMA_WRITE_WITH_IMM,
  IBV_WR_SEND,
  IBV_CQ_ATTR_MODERATE,
  IBV_QP_EX_WITH_BIND_MW,
  IBV_QP_EX_WITH_RDMA_WRITE,
  IBV_QP_INIT_ATTR_PD,
  IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
  IBV_QP_INIT_ATTR_XRCD,
  IBV_VALUES_MASK_RAW_CLOCK,
  IBV_WC_EX_WITH_CVLAN,
  IBV_WC_STANDARD_FLAGS,
  VerbsError,
  errno,
  errnoName,
  ibv_alloc_null_mr,
  ibv_alloc_mw,
  ibv_bind_mw,
  ibv_dealloc_mw,
  ibv_attach_mcast,
  ibv_detach_mcast,
  ibv_cq_ex_to_cq,
  ibv_reg_mr_iova,
  ibv_create_cq_ex,
  ibv_create_qp_ex,
  ibv_end_poll,
  ibv_get_pkey_index,
  ibv_modify_cq,
  ibv_next_poll,
  ibv_qp_to_qp_ex,
  ibv_query_device_ex,
  ibv_query_gid_ex,
  ibv_query_gid_table,
  ibv_query_rt_values_ex,
  ibv_resize_cq,
  ibv_start_poll,
  ibv_wc_read_completion_ts,
  ibv_wc_read_opcode,
  ibv_wr_abort,
  ibv_wr_complete,
  ibv_wr_rdma_write,
  ibv_wr_set_sge,
  ibv_wr_set_ud_addr,
  ibv_wr_start,
  newDeviceAttrEx,
  newGidEntry,
  newGidEntryArray,
  rnic_errno,
  type ibv_qp_init_attr_ex,
  ibv_ack_async_event,
  ibv_ack_cq_events,
  ibv_alloc_pd,
  ibv_close_device,
  ibv_create_ah,
  ibv_create_comp_channel,
  ibv_create_cq,
  ibv_create_qp,
  ibv_create_srq,
  ibv_dealloc_pd,
  ibv_dereg_mr,
  ibv_destroy_ah,
  ibv_destroy_comp_channel,
  ibv_destroy_cq,
  ibv_destroy_qp,
  ibv_destroy_srq,
  ibv_get_async_event,
  ibv_get_cq_event,
  ibv_get_device_guid,
  ibv_get_device_list,
  ibv_get_device_name,
  ibv_modify_qp,
  ibv_modify_srq,
  ibv_open_device,
  ibv_poll_cq,
  ibv_post_recv,
  ibv_post_send,
  ibv_post_srq_recv,
  ibv_query_device,
  ibv_query_gid,
  ibv_query_pkey,
  ibv_query_port,
  ibv_query_qp,
  ibv_query_srq,
  ibv_reg_mr,
  ibv_req_notify_cq,
  newDeviceAttr,
  newGid,
  newPortAttr,
  newQpAttr,
  newSrqAttr,
  newWcArray,
  rnic_alloc_buf,
  rnic_free_buf,
  rnic_read_counters,
  type ibv_ah,
  type ibv_comp_channel,
  type ibv_context,
  type ibv_cq,
  type ibv_mr,
  type ibv_pd,
  type ibv_qp,
  type ibv_recv_wr,
  type ibv_send_wr,
  type ibv_srq,
} from '../../src/driver/verbs/index.js';
import * as H from './harness.js';
import { seededRandom } from '../seeded.js';

const SEED = Number(process.env.RNIC_FUZZ_SEED ?? 0x5eed8);
const CASES = Number(process.env.RNIC_FUZZ_CASES ?? 6000);

const prng = seededRandom;

function show(v: unknown, depth = 0): string {
  if (typeof v === 'symbol') return 'Symbol()';
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'function') return 'function';
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v !== 'object' || v === null) return String(v);
  if (v instanceof Uint8Array) return `Uint8Array(${v.length})`;
  const name = v.constructor?.name ?? 'Object';
  if (name.startsWith('Model'))
    return `${name}#${typeof (v as { handle?: unknown }).handle === 'number' ? (v as { handle: number }).handle : ''}${(v as { destroyed?: boolean; closed?: boolean }).destroyed || (v as { closed?: boolean }).closed ? '(dead)' : ''}`;
  if (depth > 1) return name;
  if (Array.isArray(v)) return `[${v.map((x) => show(x, depth + 1)).join(', ')}]`;
  const keys = Object.keys(v).slice(0, 8);
  return `${name === 'Object' ? '' : name}{${keys.map((k) => `${k}: ${show((v as Record<string, unknown>)[k], depth + 1)}`).join(', ')}}`;
}

// ---------------------------------------------------------------------------
// Values that are never right for a field of that kind
// ---------------------------------------------------------------------------

const SYM = Symbol('junk');
/** Not an object at all. */
const NOT_OBJECT: unknown[] = [undefined, null, 0, 1, -1, NaN, 'x', '', 1n, true, SYM, () => 0];
/** Not a C unsigned/int number (for fields that must be numbers). */
const BAD_U32: unknown[] = [undefined, null, NaN, -1, 1.5, Infinity, -Infinity, 2 ** 32, 2 ** 53, '1', 1n, true, {}, [], SYM];
/** Not a count: the above plus what is a number but not a count. */
const BAD_COUNT: unknown[] = [...BAD_U32.filter((v) => v !== undefined), -5, 2 ** 31];
/** Not a uint64_t bigint. */
const BAD_U64: unknown[] = [undefined, null, 0, 1, NaN, -1n, 2n ** 64n, '1', {}, SYM, true];

type Kind = 'int' | 'poll' | 'ptr' | 'void' | 'async' | 'minus1';
interface Arg {
  good: () => unknown;
  bad: () => unknown[];
}
interface Spec {
  name: string;
  kind: Kind;
  args: Arg[];
  call: (...a: never[]) => unknown;
  /** Errnos this misuse may give; default EINVAL only. */
  errnos?: number[];
}

describe('verbs misuse fuzz', () => {
  let f: H.Fabric;
  const failures: string[] = [];
  const perVerb = new Map<string, number>();
  // What the targets of misuse were really given.
  const sentWrIds: bigint[] = [];
  const recvWrIds: bigint[] = [];

  beforeAll(async () => {
    f = await H.openFabric(H.twoDeviceConfig(0));
  }, 60_000);
  afterAll(async () => {
    await f?.close();
  }, 60_000);

  it(`${CASES} seeded misuse cases over every verb (seed ${SEED}): errno or VerbsError, nothing accepted that should not be`, async () => {
    const a = f.a;
    const b = f.b;
    // The targets: an RC pair in RTS, a UD QP with an AH, an SRQ, QPs in each early state.
    const rc = H.makePair(f, IBV_QPT_RC, { maxInline: 64 });
    const ud = H.makePair(f, IBV_QPT_UD);
    const ah = H.createAh(a, b);
    const src = H.region(a, 4096, H.ALL_ACCESS, { fill: (i) => i * 7 + 1 });
    const dst = H.region(b, 4096);
    const rbuf = H.region(a, 4096);
    const srq = ibv_create_srq(a.pd, { srq_context: null, attr: { max_wr: 64, max_sge: 2, srq_limit: 0 } });
    a.cleanup.push(() => void ibv_destroy_srq(srq));
    const qpSrq = H.createQp(a, IBV_QPT_RC, { srq });
    const qpReset = H.createQp(a, IBV_QPT_RC);
    const qpInit = H.createQp(a, IBV_QPT_RC);
    H.toInit(qpInit);
    const qpRtr = H.createQp(a, IBV_QPT_RC);
    H.toInit(qpRtr);
    H.toRtr(qpRtr, rc.b, 0x3000);
    const ch = ibv_create_comp_channel(a.ctx);
    // A CQ on `ch` (destroying the channel is EBUSY) that a QP uses (destroying the CQ is EBUSY).
    a.cleanup.push(() => void ibv_destroy_comp_channel(ch));
    const cqOnCh = H.createCq(a, 4, ch);
    H.createQp(a, IBV_QPT_RC, { sendCq: cqOnCh, recvCq: cqOnCh });
    const bufA = rnic_alloc_buf(a.ctx, 256);
    a.cleanup.push(() => rnic_free_buf(a.ctx, bufA));

    // Of another context (device b).
    const chB = ibv_create_comp_channel(b.ctx);
    b.cleanup.push(() => void ibv_destroy_comp_channel(chB));
    const cqB = H.createCq(b, 4);
    const ahB = H.createAh(b, a);
    const srqB = ibv_create_srq(b.pd, { srq_context: null, attr: { max_wr: 4, max_sge: 1, srq_limit: 0 } });
    b.cleanup.push(() => void ibv_destroy_srq(srqB));

    // Destroyed objects, of a live context.
    const devA = ibv_get_device_list().find((d) => ibv_get_device_name(d) === a.name)!;
    const pdD = ibv_alloc_pd(a.ctx);
    const bufD = rnic_alloc_buf(a.ctx, 64);
    const mrD = ibv_reg_mr(pdD, bufD, 1);
    expect(ibv_dereg_mr(mrD)).toBe(0);
    const chD = ibv_create_comp_channel(a.ctx);
    expect(ibv_destroy_comp_channel(chD)).toBe(0);
    const cqD = ibv_create_cq(a.ctx, 4, null, null, 0);
    const qpD = ibv_create_qp(pdD, {
      send_cq: cqD,
      recv_cq: cqD,
      srq: null,
      qp_type: IBV_QPT_RC,
      sq_sig_all: 0,
      cap: { max_send_wr: 1, max_recv_wr: 1, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 },
    });
    expect(ibv_destroy_qp(qpD)).toBe(0);
    expect(ibv_destroy_cq(cqD)).toBe(0);
    const srqD = ibv_create_srq(pdD, { srq_context: null, attr: { max_wr: 4, max_sge: 1, srq_limit: 0 } });
    expect(ibv_destroy_srq(srqD)).toBe(0);
    const ahD = ibv_create_ah(pdD, H.avTo(a, b));
    expect(ibv_destroy_ah(ahD)).toBe(0);
    expect(ibv_dealloc_pd(pdD)).toBe(0);

    // Everything of a closed context.
    const ctxC = ibv_open_device(devA);
    const pdC = ibv_alloc_pd(ctxC);
    const bufC = rnic_alloc_buf(ctxC, 64);
    const mrC = ibv_reg_mr(pdC, bufC, 1);
    const chC = ibv_create_comp_channel(ctxC);
    const cqC = ibv_create_cq(ctxC, 4, null, chC, 0);
    const qpC = ibv_create_qp(pdC, {
      send_cq: cqC,
      recv_cq: cqC,
      srq: null,
      qp_type: IBV_QPT_RC,
      sq_sig_all: 0,
      cap: { max_send_wr: 1, max_recv_wr: 1, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 },
    });
    const srqC = ibv_create_srq(pdC, { srq_context: null, attr: { max_wr: 4, max_sge: 1, srq_limit: 0 } });
    const ahC = ibv_create_ah(pdC, H.avTo(a, b));
    const mwC = ibv_alloc_mw(pdC, IBV_MW_TYPE_1);
    expect(ibv_close_device(ctxC)).toBe(0);
    rnic_free_buf(a.ctx, bufD); // after ctxC took its buffers: none of them has bufD's address

    /** Look-alikes: the right fields, not the provider's object. */
    const fake = <T extends object>(o: T): unknown[] => [{ ...o }, { context: a.ctx }, { context: EMPTY_OPS_CTX }, Object.freeze({ context: null })];
    const badCtx = (): unknown[] => [...NOT_OBJECT, ...fake(a.ctx), ctxC, { ops: null }, EMPTY_OPS_CTX];
    const badPd = (): unknown[] => [...NOT_OBJECT, ...fake(a.pd), pdD, pdC];
    const badCq = (): unknown[] => [...NOT_OBJECT, ...fake(rc.a.scq), cqD, cqC];
    const badCh = (): unknown[] => [...NOT_OBJECT.filter((v) => v !== undefined && v !== null), ...fake(ch), chD, chC];
    const badSrq = (): unknown[] => [...NOT_OBJECT, ...fake(srq), srqD, srqC];
    const badMr = (): unknown[] => [...NOT_OBJECT, ...fake(src.mr), mrD, mrC];
    const badAh = (): unknown[] => [...NOT_OBJECT, ...fake(ah), ahD, ahC];
    const badQp = (): unknown[] => [...NOT_OBJECT, ...fake(rc.a.qp), qpD, qpC];
    // Memory windows: a live type 1 window of a.pd, a deallocated one, a type 2 one (not for ibv_bind_mw).
    const mwA = ibv_alloc_mw(a.pd, IBV_MW_TYPE_1);
    a.cleanup.push(() => void ibv_dealloc_mw(mwA));
    const mw2 = ibv_alloc_mw(a.pd, IBV_MW_TYPE_2);
    a.cleanup.push(() => void ibv_dealloc_mw(mw2));
    const mwD = ibv_alloc_mw(a.pd, IBV_MW_TYPE_1);
    expect(ibv_dealloc_mw(mwD)).toBe(0);
    const badMw = (): unknown[] => [...NOT_OBJECT, ...fake(mwA), mwD, mwC];
    const goodBind = () => ({ wr_id: 1n, send_flags: 0, bind_info: { mr: null, addr: 0n, length: 0n, mw_access_flags: 0 } });
    const badBinds = (): unknown[] => [
      ...NOT_OBJECT,
      {},
      { wr_id: 1n, send_flags: 0, bind_info: null },
      { ...goodBind(), wr_id: -1n },
      { ...goodBind(), wr_id: 1 },
      { ...goodBind(), send_flags: -1 },
      { ...goodBind(), bind_info: { mr: null, addr: 8n, length: 0n, mw_access_flags: 0 } },
      { ...goodBind(), bind_info: { mr: 5, addr: 0n, length: 8n, mw_access_flags: 0 } },
      { ...goodBind(), bind_info: { mr: mrD, addr: 0n, length: 8n, mw_access_flags: 0 } },
      { ...goodBind(), bind_info: { mr: src.mr, addr: src.mr.addr, length: 8n, mw_access_flags: IBV_ACCESS_ZERO_BASED } },
      { ...goodBind(), bind_info: { mr: src.mr, addr: src.mr.addr, length: 8n, mw_access_flags: 1.5 } },
      { ...goodBind(), bind_info: { mr: dst.mr, addr: dst.mr.addr, length: 8n, mw_access_flags: 0 } },
    ];

    // A good send WR to RC: a 64-byte signaled RDMA WRITE into `dst`, a fresh wr_id each time.
    let nextId = 1n;
    const goodSend = (): ibv_send_wr => ({
      wr_id: nextId++,
      next: null,
      sg_list: [{ addr: src.addr, length: 64, lkey: src.lkey }],
      num_sge: 1,
      opcode: IBV_WR_RDMA_WRITE,
      send_flags: IBV_SEND_SIGNALED,
      wr: { rdma: { remote_addr: dst.addr, rkey: dst.rkey } },
    });
    const goodRecv = (): ibv_recv_wr => ({
      wr_id: 1_000_000n + nextId++,
      next: null,
      sg_list: [{ addr: rbuf.addr, length: 4096, lkey: rbuf.lkey }],
      num_sge: 1,
    });
    const withField =
      <T extends object>(make: () => T, patch: (w: T) => void) =>
      () => {
        const w = make();
        patch(w);
        return w;
      };

    /** Send WRs with one field wrong; each must be refused (EINVAL unless noted by its errno). */
    const badSends = (): { wr: unknown; errno?: number }[] => {
      const out: { wr: unknown; errno?: number }[] = NOT_OBJECT.filter((v) => v !== 0 && v !== 1 && v !== -1).map((wr) => ({ wr }));
      const vary = (patch: (w: ibv_send_wr & Record<string, unknown>) => void, e?: number) =>
        out.push({ wr: withField(goodSend, patch as (w: ibv_send_wr) => void)(), errno: e });
      for (const v of BAD_U64) vary((w) => (w.wr_id = v as bigint));
      for (const v of [...BAD_U32, 16, 99, IBV_WR_BIND_MW]) vary((w) => (w.opcode = v as number));
      for (const v of [...BAD_COUNT.filter((x) => x !== undefined), 2, 255]) vary((w) => (w.num_sge = v as number));
      for (const v of [null, 5, 'x', {}, [null], [5], [{}], [SYM]]) vary((w) => (w.sg_list = v as never));
      for (const v of BAD_U64) vary((w) => (w.sg_list![0]!.addr = v as bigint));
      for (const v of BAD_U32) vary((w) => (w.sg_list![0]!.length = v as number));
      for (const v of BAD_U32) vary((w) => (w.sg_list![0]!.lkey = v as number));
      for (const v of BAD_U32.filter((x) => x !== undefined)) vary((w) => (w.send_flags = v as number));
      for (const v of [null, 5, {}, { rdma: null }, { rdma: 5 }]) vary((w) => (w.wr = v as never));
      for (const v of BAD_U64) vary((w) => (w.wr!.rdma!.remote_addr = v as bigint));
      for (const v of BAD_U32) vary((w) => (w.wr!.rdma!.rkey = v as number));
      for (const v of [NaN, 1.5, '1', 1n, 2 ** 32, -(2 ** 31) - 1, SYM, {}, null])
        vary((w) => {
          w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
          w.imm_data = v as number;
        });
      // Inline: too long, or bytes that are not host memory.
      vary((w) => {
        w.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
        w.sg_list![0]!.length = rc.a.initCap.max_inline_data + 1;
      });
      vary((w) => {
        w.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
        w.sg_list![0]!.addr = 8n;
      }, errno.EFAULT);
      // Atomics: one 8-byte SGE, an aligned address, bigint operands.
      const atomic = (patch: (w: ibv_send_wr & Record<string, unknown>) => void) =>
        vary((w) => {
          w.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
          w.sg_list![0]!.length = 8;
          w.wr = { atomic: { remote_addr: dst.addr, rkey: dst.rkey, compare_add: 0n, swap: 1n } };
          patch(w);
        });
      for (const v of BAD_U64) atomic((w) => (w.wr!.atomic!.compare_add = v as bigint));
      for (const v of BAD_U64) atomic((w) => (w.wr!.atomic!.swap = v as bigint));
      for (const v of [...BAD_U64, dst.addr + 3n]) atomic((w) => (w.wr!.atomic!.remote_addr = v as bigint));
      for (const v of BAD_U32) atomic((w) => (w.wr!.atomic!.rkey = v as number));
      for (const v of [4, 16, 0]) atomic((w) => (w.sg_list![0]!.length = v));
      atomic((w) => (w.wr = { rdma: { remote_addr: dst.addr, rkey: dst.rkey } }));
      return out;
    };
    const badUdSends = (): unknown[] => {
      const good = (): ibv_send_wr => ({ ...goodSend(), opcode: IBV_WR_SEND, wr: { ud: { ah, remote_qpn: ud.b.qp.qp_num, remote_qkey: H.QKEY } } });
      const out: unknown[] = [];
      for (const v of [...NOT_OBJECT, ahD, ahC, ahB, { ...ah }]) out.push(withField(good, (w) => (w.wr!.ud!.ah = v as ibv_ah))());
      for (const v of BAD_U32) out.push(withField(good, (w) => (w.wr!.ud!.remote_qpn = v as number))());
      for (const v of BAD_U32) out.push(withField(good, (w) => (w.wr!.ud!.remote_qkey = v as number))());
      for (const v of [null, 5, {}, { ud: null }]) out.push(withField(good, (w) => (w.wr = v as never))());
      out.push(withField(good, (w) => (w.opcode = IBV_WR_RDMA_WRITE))());
      return out;
    };
    const badRecvs = (): unknown[] => {
      const out: unknown[] = NOT_OBJECT.filter((v) => v !== 0 && v !== 1 && v !== -1);
      for (const v of BAD_U64) out.push(withField(goodRecv, (w) => (w.wr_id = v as bigint))());
      for (const v of [...BAD_COUNT.filter((x) => x !== undefined), 2, 255]) out.push(withField(goodRecv, (w) => (w.num_sge = v as number))());
      for (const v of [null, 5, 'x', {}, [null], [5], [{}]]) out.push(withField(goodRecv, (w) => (w.sg_list = v as never))());
      for (const v of BAD_U64) out.push(withField(goodRecv, (w) => (w.sg_list![0]!.addr = v as bigint))());
      for (const v of BAD_U32) out.push(withField(goodRecv, (w) => (w.sg_list![0]!.length = v as number))());
      for (const v of BAD_U32) out.push(withField(goodRecv, (w) => (w.sg_list![0]!.lkey = v as number))());
      return out;
    };
    const badBadWr = (): unknown[] => [5, 'x', 1n, SYM, true];

    const goodAh = () => H.avTo(a, b);
    const badAhAttrs = (): unknown[] => {
      const out: unknown[] = [...NOT_OBJECT];
      const vary = (patch: (x: ReturnType<typeof goodAh> & Record<string, unknown>) => void) => out.push(withField(goodAh, patch as never)());
      for (const v of [...BAD_U32, 0, 2, 255]) vary((x) => (x.port_num = v as number));
      vary((x) => (x.is_global = 0));
      for (const v of [null, 5, 'x', SYM]) vary((x) => (x.grh = v as never));
      for (const v of [...BAD_U32, 9999]) vary((x) => (x.grh.sgid_index = v as number));
      for (const v of [null, 5, {}, { raw: new Uint8Array(15) }, { raw: 'x' }]) vary((x) => (x.grh.dgid = v as never));
      for (const v of [...BAD_U32.filter((x) => x !== undefined), 300]) vary((x) => (x.grh.hop_limit = v as number));
      for (const v of [...BAD_U32.filter((x) => x !== undefined), 16]) vary((x) => (x.sl = v as number));
      for (const v of [...BAD_U32.filter((x) => x !== undefined), 99]) vary((x) => (x.static_rate = v as number));
      for (const v of [...BAD_U32.filter((x) => x !== undefined), 2 ** 16]) vary((x) => (x.dlid = v as number));
      return out;
    };

    const goodQpInit = () => ({
      send_cq: rc.a.scq,
      recv_cq: rc.a.rcq,
      srq: null as ibv_srq | null,
      qp_type: IBV_QPT_RC,
      sq_sig_all: 0,
      cap: { max_send_wr: 4, max_recv_wr: 4, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 },
    });
    const badQpInits = (): { v: unknown; errno?: number }[] => {
      const out: { v: unknown; errno?: number }[] = NOT_OBJECT.map((v) => ({ v }));
      const vary = (patch: (x: ReturnType<typeof goodQpInit> & Record<string, unknown>) => void, e?: number) =>
        out.push({ v: withField(goodQpInit, patch as never)(), errno: e });
      for (const v of [...NOT_OBJECT, ...fake(rc.a.scq), cqD, cqC, cqB]) vary((x) => (x.send_cq = v as ibv_cq));
      for (const v of [...NOT_OBJECT, cqD, cqC, cqB]) vary((x) => (x.recv_cq = v as ibv_cq));
      for (const v of [...NOT_OBJECT.filter((x) => x !== undefined && x !== null && x !== 0), { ...srq }, srqD, srqC, srqB])
        vary((x) => (x.srq = v as ibv_srq));
      for (const v of [...BAD_U32, 99]) vary((x) => (x.qp_type = v as number));
      vary((x) => (x.qp_type = IBV_QPT_RAW_PACKET), errno.EOPNOTSUPP);
      for (const v of [5, 'x', SYM, 1n]) vary((x) => (x.cap = v as never));
      for (const k of ['max_send_wr', 'max_recv_wr', 'max_send_sge', 'max_recv_sge', 'max_inline_data'] as const) {
        for (const v of [...BAD_COUNT, 1 << 30]) vary((x) => ((x.cap as Record<string, unknown>)[k] = v));
      }
      return out;
    };

    const badSrqInits = (): unknown[] => {
      const good = () => ({ srq_context: null, attr: { max_wr: 4, max_sge: 1, srq_limit: 0 } });
      const out: unknown[] = [...NOT_OBJECT, { attr: null }, { attr: 5 }, { attr: SYM }];
      for (const k of ['max_wr', 'max_sge', 'srq_limit'] as const)
        for (const v of [...BAD_COUNT, 1 << 30]) out.push(withField(good, (x) => ((x.attr as Record<string, unknown>)[k] = v))());
      out.push(withField(good, (x) => (x.attr.max_wr = 0))());
      out.push(withField(good, (x) => (x.attr.srq_limit = 5))());
      return out;
    };

    const badMasks = (): unknown[] => [undefined, null, NaN, 1.5, Infinity, 2 ** 32, 2 ** 40, '1', 1n, {}, SYM];
    /** QP attributes that are wrong with mask STATE | SQ_PSN on the RC QP in RTS. */
    const badQpAttrs = (): unknown[] => {
      const out: unknown[] = [...NOT_OBJECT];
      for (const v of [...BAD_U32.filter((x) => x !== undefined), IBV_QPS_INIT, IBV_QPS_RTR, 99]) out.push({ ...newQpAttr(), qp_state: v, sq_psn: 1 });
      for (const v of [NaN, 1.5, '1', 1n, SYM, {}, null, Infinity]) out.push({ ...newQpAttr(), qp_state: IBV_QPS_RTS, sq_psn: v });
      return out;
    };

    /** One QP attribute wrong, with its mask bit set: on the RC QP in RTS each must be refused. */
    const badQpFields = (): { attr: unknown; mask: number }[] => {
      const fields: [string, number][] = [
        ['path_mtu', IBV_QP_PATH_MTU],
        ['timeout', IBV_QP_TIMEOUT],
        ['retry_cnt', IBV_QP_RETRY_CNT],
        ['rnr_retry', IBV_QP_RNR_RETRY],
        ['min_rnr_timer', IBV_QP_MIN_RNR_TIMER],
        ['max_rd_atomic', IBV_QP_MAX_QP_RD_ATOMIC],
        ['max_dest_rd_atomic', IBV_QP_MAX_DEST_RD_ATOMIC],
        ['pkey_index', IBV_QP_PKEY_INDEX],
        ['port_num', IBV_QP_PORT],
        ['qp_access_flags', IBV_QP_ACCESS_FLAGS],
        ['dest_qp_num', IBV_QP_DEST_QPN],
        ['rq_psn', IBV_QP_RQ_PSN],
        ['sq_psn', IBV_QP_SQ_PSN],
        ['qkey', IBV_QP_QKEY],
        ['path_mig_state', IBV_QP_PATH_MIG_STATE],
      ];
      const out: { attr: unknown; mask: number }[] = [];
      for (const [k, bit] of fields)
        for (const v of [NaN, 1.5, '1', 1n, null, SYM, {}, Infinity])
          out.push({ attr: { ...newQpAttr(), qp_state: IBV_QPS_RTS, [k]: v }, mask: IBV_QP_STATE | bit });
      for (const v of [null, 5, 'x', { ...H.avTo(a, b), grh: null }, { ...H.avTo(a, b), sl: NaN }])
        out.push({ attr: { ...newQpAttr(), qp_state: IBV_QPS_RTS, ah_attr: v }, mask: IBV_QP_STATE | IBV_QP_AV });
      for (const v of [5, 'x', { max_send_wr: NaN }]) out.push({ attr: { ...newQpAttr(), qp_state: IBV_QPS_RTS, cap: v }, mask: IBV_QP_STATE | IBV_QP_CAP });
      return out;
    };

    // Extended-verb targets: an extended CQ (empty: polls find nothing), a CQ to resize, an RC QP with an ibv_qp_ex.
    const cqx = ibv_create_cq_ex(a.ctx, { cqe: 8, wc_flags: IBV_WC_STANDARD_FLAGS });
    a.cleanup.push(() => void ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)));
    const cqR = H.createCq(a, 8);
    const goodQpEx = (): ibv_qp_init_attr_ex => ({
      send_cq: cqR,
      recv_cq: cqR,
      srq: null,
      qp_type: IBV_QPT_RC,
      sq_sig_all: 0,
      cap: { max_send_wr: 4, max_recv_wr: 4, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 },
      comp_mask: IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
      pd: a.pd,
      send_ops_flags: IBV_QP_EX_WITH_RDMA_WRITE,
    });
    const qpxBase = ibv_create_qp_ex(a.ctx, goodQpEx());
    a.cleanup.push(() => void ibv_destroy_qp(qpxBase));
    const qpx = ibv_qp_to_qp_ex(qpxBase);

    const specs: Spec[] = [
      { name: 'ibv_get_device_name', kind: 'ptr', args: [{ good: () => devA, bad: () => [...NOT_OBJECT, {}, { name: 5 }] }], call: ibv_get_device_name },
      {
        name: 'ibv_get_device_guid',
        kind: 'ptr',
        args: [{ good: () => devA, bad: () => [...NOT_OBJECT, {}, { provider: 5 }, { provider: {} }] }],
        call: ibv_get_device_guid,
      },
      {
        name: 'ibv_open_device',
        kind: 'ptr',
        args: [{ good: () => devA, bad: () => [...NOT_OBJECT, {}, { name: 'rnic0' }, { provider: 5 }, { provider: {} }] }],
        call: ibv_open_device,
      },
      { name: 'ibv_close_device', kind: 'int', args: [{ good: () => a.ctx, bad: badCtx }], call: ibv_close_device },
      {
        name: 'ibv_query_device',
        kind: 'int',
        args: [
          { good: () => a.ctx, bad: badCtx },
          { good: newDeviceAttr, bad: () => NOT_OBJECT },
        ],
        call: ibv_query_device,
      },
      {
        name: 'ibv_query_port',
        kind: 'int',
        args: [
          { good: () => a.ctx, bad: badCtx },
          { good: () => 1, bad: () => [...BAD_U32, 0, 2, 255] },
          { good: newPortAttr, bad: () => NOT_OBJECT },
        ],
        call: ibv_query_port,
      },
      {
        name: 'ibv_query_gid',
        kind: 'minus1',
        args: [
          { good: () => a.ctx, bad: badCtx },
          { good: () => 1, bad: () => [...BAD_U32, 0, 2] },
          { good: () => 0, bad: () => [...BAD_U32, 9999] },
          { good: newGid, bad: () => NOT_OBJECT },
        ],
        call: ibv_query_gid,
      },
      {
        name: 'ibv_query_pkey',
        kind: 'minus1',
        args: [
          { good: () => a.ctx, bad: badCtx },
          { good: () => 1, bad: () => [...BAD_U32, 0, 2] },
          { good: () => 0, bad: () => [...BAD_U32, 9999] },
          { good: () => ({ pkey: 0 }), bad: () => NOT_OBJECT },
        ],
        call: ibv_query_pkey,
      },
      { name: 'ibv_alloc_pd', kind: 'ptr', args: [{ good: () => a.ctx, bad: badCtx }], call: ibv_alloc_pd },
      { name: 'ibv_dealloc_pd', kind: 'int', args: [{ good: () => a.pd, bad: badPd }], call: ibv_dealloc_pd },
      {
        name: 'ibv_reg_mr',
        kind: 'ptr',
        args: [
          { good: () => a.pd, bad: badPd },
          { good: () => bufA, bad: () => [...NOT_OBJECT, new Uint8Array(64), dst.data, [1, 2, 3], new Uint16Array(bufA.buffer, bufA.byteOffset, 4)] },
          { good: () => 1, bad: () => BAD_U32 },
        ],
        call: ibv_reg_mr,
      },
      { name: 'ibv_dereg_mr', kind: 'int', args: [{ good: () => src.mr, bad: badMr }], call: ibv_dereg_mr },
      {
        name: 'rnic_alloc_buf',
        kind: 'ptr',
        args: [
          { good: () => a.ctx, bad: badCtx },
          { good: () => 64, bad: () => [...BAD_U32.filter((x) => x !== 2 ** 32 && x !== 2 ** 53), 2 ** 60] },
          { good: () => 64, bad: () => [0, 3, -1, NaN, 1.5, '64', 64n, 2 ** 31, null, SYM] },
        ],
        call: rnic_alloc_buf,
        errnos: [errno.EINVAL, errno.ENOMEM],
      },
      {
        name: 'rnic_free_buf',
        kind: 'void',
        args: [
          { good: () => a.ctx, bad: () => [...badCtx(), b.ctx] },
          { good: () => bufA, bad: () => [...NOT_OBJECT, new Uint8Array(8), bufA.subarray(1), src.full.subarray(8), bufD] },
        ],
        call: rnic_free_buf,
      },
      { name: 'ibv_create_comp_channel', kind: 'ptr', args: [{ good: () => a.ctx, bad: badCtx }], call: ibv_create_comp_channel },
      {
        name: 'ibv_destroy_comp_channel',
        kind: 'int',
        args: [{ good: () => ch, bad: () => [...badCh(), undefined, null, ch] }],
        call: ibv_destroy_comp_channel,
        errnos: [errno.EINVAL, errno.EBUSY],
      },
      {
        name: 'ibv_create_cq',
        kind: 'ptr',
        args: [
          { good: () => a.ctx, bad: badCtx },
          { good: () => 4, bad: () => [...BAD_COUNT, 0, 1 << 30] },
          { good: () => null, bad: () => [] },
          { good: () => null, bad: () => [...badCh(), chB] },
          { good: () => 0, bad: () => [...BAD_U32, 99] },
        ],
        call: ibv_create_cq,
      },
      {
        name: 'ibv_destroy_cq',
        kind: 'int',
        args: [{ good: () => rc.a.scq, bad: () => [...badCq(), rc.a.scq, cqOnCh] }],
        call: ibv_destroy_cq,
        errnos: [errno.EINVAL, errno.EBUSY],
      },
      {
        name: 'ibv_req_notify_cq',
        kind: 'int',
        args: [
          { good: () => rc.a.scq, bad: badCq },
          { good: () => 0, bad: () => [undefined, null, '1', 1n, SYM, {}] },
        ],
        call: ibv_req_notify_cq,
      },
      { name: 'ibv_get_cq_event', kind: 'async', args: [{ good: () => ch, bad: badCh }], call: ibv_get_cq_event, errnos: [errno.EINVAL, errno.EBADF] },
      {
        name: 'ibv_ack_cq_events',
        kind: 'void',
        args: [
          { good: () => cqOnCh, bad: badCq },
          { good: () => 0, bad: () => [...BAD_COUNT, 1, 5] },
        ],
        call: ibv_ack_cq_events,
      },
      {
        name: 'ibv_poll_cq',
        kind: 'poll',
        args: [
          { good: () => cqB, bad: badCq },
          { good: () => 4, bad: () => [...BAD_COUNT.filter((x) => x !== 2 ** 31), Infinity] },
          { good: () => newWcArray(4), bad: () => [undefined, null, 5, 'x', {}, SYM, 1n] },
        ],
        call: ibv_poll_cq,
      },
      {
        name: 'ibv_create_srq',
        kind: 'ptr',
        args: [
          { good: () => a.pd, bad: badPd },
          { good: () => ({ srq_context: null, attr: { max_wr: 4, max_sge: 1, srq_limit: 0 } }), bad: badSrqInits },
        ],
        call: ibv_create_srq,
      },
      {
        name: 'ibv_modify_srq',
        kind: 'int',
        args: [
          { good: () => srq, bad: badSrq },
          {
            good: () => ({ max_wr: 0, max_sge: 0, srq_limit: 1 }),
            bad: () => [...NOT_OBJECT, ...[NaN, -1, 1.5, '1', 1n, 1000].map((v) => ({ max_wr: 0, max_sge: 0, srq_limit: v }))],
          },
          { good: () => IBV_SRQ_LIMIT, bad: () => [...badMasks(), IBV_SRQ_MAX_WR] },
        ],
        call: ibv_modify_srq,
      },
      {
        name: 'ibv_query_srq',
        kind: 'int',
        args: [
          { good: () => srq, bad: badSrq },
          { good: newSrqAttr, bad: () => NOT_OBJECT },
        ],
        call: ibv_query_srq,
      },
      {
        name: 'ibv_destroy_srq',
        kind: 'int',
        args: [{ good: () => srq, bad: () => [...badSrq(), srq] }],
        call: ibv_destroy_srq,
        errnos: [errno.EINVAL, errno.EBUSY],
      },
      {
        name: 'ibv_post_srq_recv',
        kind: 'int',
        args: [
          { good: () => srqB, bad: badSrq },
          { good: () => ({ wr_id: 1n, next: null, sg_list: [], num_sge: 0 }), bad: badRecvs },
          { good: () => ({}), bad: badBadWr },
        ],
        call: ibv_post_srq_recv,
      },
      {
        name: 'ibv_create_qp',
        kind: 'ptr',
        args: [
          { good: () => a.pd, bad: badPd },
          { good: goodQpInit, bad: () => badQpInits().map((x) => x.v) },
        ],
        call: ibv_create_qp,
        errnos: [errno.EINVAL, errno.EOPNOTSUPP],
      },
      {
        name: 'ibv_modify_qp',
        kind: 'int',
        args: [
          { good: () => rc.a.qp, bad: () => [...badQp(), qpReset.qp] },
          { good: () => ({ ...newQpAttr(), qp_state: IBV_QPS_RTS, sq_psn: 0x1000 }), bad: badQpAttrs },
          { good: () => IBV_QP_STATE | IBV_QP_SQ_PSN, bad: badMasks },
        ],
        call: ibv_modify_qp,
      },
      {
        name: 'ibv_modify_qp(field)',
        kind: 'int',
        args: [
          { good: () => rc.a.qp, bad: () => [] },
          { good: () => null, bad: badQpFields },
        ],
        call: ((qp: ibv_qp, t: { attr: never; mask: number }) => ibv_modify_qp(qp, t.attr, t.mask)) as Spec['call'],
      },
      {
        name: 'ibv_query_qp',
        kind: 'int',
        args: [
          { good: () => rc.a.qp, bad: badQp },
          { good: newQpAttr, bad: () => NOT_OBJECT },
          { good: () => IBV_QP_STATE, bad: () => [undefined, null, '1', 1n, SYM, {}] },
          { good: () => ({}), bad: () => NOT_OBJECT },
        ],
        call: ibv_query_qp,
      },
      { name: 'ibv_destroy_qp', kind: 'int', args: [{ good: () => rc.a.qp, bad: badQp }], call: ibv_destroy_qp },
      {
        name: 'ibv_post_send',
        kind: 'int',
        args: [
          { good: () => rc.a.qp, bad: () => [...badQp(), qpReset.qp, qpInit.qp, qpRtr.qp] },
          { good: goodSend, bad: () => badSends().map((x) => x.wr) },
          { good: () => ({}), bad: badBadWr },
        ],
        call: ibv_post_send,
        errnos: [errno.EINVAL, errno.EFAULT],
      },
      {
        name: 'ibv_post_send(UD)',
        kind: 'int',
        args: [
          { good: () => ud.a.qp, bad: () => [] },
          { good: () => null, bad: badUdSends },
        ],
        call: ibv_post_send,
      },
      {
        name: 'ibv_post_recv',
        kind: 'int',
        args: [
          { good: () => rc.a.qp, bad: () => [...badQp(), qpReset.qp, qpSrq.qp] },
          { good: goodRecv, bad: badRecvs },
          { good: () => ({}), bad: badBadWr },
        ],
        call: ibv_post_recv,
      },
      {
        name: 'ibv_create_ah',
        kind: 'ptr',
        args: [
          { good: () => a.pd, bad: badPd },
          { good: goodAh, bad: badAhAttrs },
        ],
        call: ibv_create_ah,
      },
      { name: 'ibv_destroy_ah', kind: 'int', args: [{ good: () => ah, bad: badAh }], call: ibv_destroy_ah },
      {
        name: 'ibv_get_async_event',
        kind: 'async',
        args: [{ good: () => a.ctx, bad: badCtx }],
        call: ibv_get_async_event,
        errnos: [errno.EINVAL, errno.EBADF],
      },
      {
        name: 'ibv_ack_async_event',
        kind: 'void',
        args: [
          {
            good: () => null,
            bad: () => [
              ...NOT_OBJECT,
              {},
              { element: null },
              { element: 5 },
              { element: { qp: rc.a.qp }, event_type: 1 },
              { element: { cq: rc.a.scq }, event_type: 1 },
              { element: { srq }, event_type: 1 },
              { element: { qp: { ...rc.a.qp } } },
            ],
          },
        ],
        call: ibv_ack_async_event,
      },
      {
        name: 'rnic_read_counters',
        kind: 'ptr',
        args: [
          { good: () => a.ctx, bad: badCtx },
          { good: () => 1, bad: () => [...BAD_U32.filter((x) => x !== undefined), 0, 2] },
        ],
        call: rnic_read_counters,
      },
      // The extended verbs.
      {
        name: 'ibv_query_device_ex',
        kind: 'int',
        args: [
          { good: () => a.ctx, bad: badCtx },
          { good: () => null, bad: () => [{ comp_mask: 1 }, { comp_mask: NaN }, 5, 'x'] },
          { good: newDeviceAttrEx, bad: () => [...NOT_OBJECT, {}, { orig_attr: null }] },
        ],
        call: ibv_query_device_ex,
      },
      {
        name: 'ibv_query_gid_ex',
        kind: 'int',
        args: [
          { good: () => a.ctx, bad: badCtx },
          { good: () => 1, bad: () => [...BAD_U32, 0, 2] },
          { good: () => 0, bad: () => [...BAD_U32, 9999] },
          { good: newGidEntry, bad: () => NOT_OBJECT },
          { good: () => 0, bad: () => [1, NaN, undefined, '0', 0n] },
        ],
        call: ibv_query_gid_ex,
      },
      {
        name: 'ibv_query_gid_table',
        kind: 'poll',
        args: [
          { good: () => a.ctx, bad: badCtx },
          { good: () => newGidEntryArray(16), bad: () => [...NOT_OBJECT, {}] },
          { good: () => 16, bad: () => [...BAD_COUNT, 17, 1000, 0.5] },
          { good: () => 0, bad: () => [1, NaN, undefined, '0', 0n] },
        ],
        call: ibv_query_gid_table,
      },
      {
        name: 'ibv_get_pkey_index',
        kind: 'minus1',
        args: [
          { good: () => a.ctx, bad: badCtx },
          { good: () => 1, bad: () => [...BAD_U32, 0, 2] },
          { good: () => 0xffff, bad: () => [undefined, null, '1', 1n, {}, 0x12345, -1, NaN, 1.5, 0x7fff] },
        ],
        call: ibv_get_pkey_index,
      },
      {
        name: 'ibv_query_rt_values_ex',
        kind: 'int',
        args: [
          { good: () => a.ctx, bad: badCtx },
          { good: () => ({ comp_mask: IBV_VALUES_MASK_RAW_CLOCK }), bad: () => [...NOT_OBJECT, { comp_mask: 2 }, { comp_mask: -1 }, { comp_mask: NaN }] },
        ],
        call: ibv_query_rt_values_ex,
      },
      {
        name: 'ibv_create_cq_ex',
        kind: 'ptr',
        args: [
          { good: () => a.ctx, bad: badCtx },
          {
            good: () => ({ cqe: 4, wc_flags: 0 }),
            bad: () => [
              ...NOT_OBJECT,
              { cqe: 0, wc_flags: 0 },
              { cqe: NaN, wc_flags: 0 },
              { cqe: 4, wc_flags: -1 },
              { cqe: 4, wc_flags: IBV_WC_EX_WITH_CVLAN },
              { cqe: 4, wc_flags: 0, comp_mask: 4 },
              { cqe: 4, wc_flags: 0, channel: 5 },
              { cqe: 4, wc_flags: 0, comp_vector: 999 },
            ],
          },
        ],
        call: ibv_create_cq_ex,
        errnos: [errno.EINVAL, errno.EOPNOTSUPP],
      },
      { name: 'ibv_cq_ex_to_cq', kind: 'ptr', args: [{ good: () => cqx, bad: () => [...NOT_OBJECT, ...badCq(), { cq: rc.a.scq }] }], call: ibv_cq_ex_to_cq },
      {
        name: 'ibv_start_poll',
        kind: 'int',
        args: [
          { good: () => cqx, bad: () => [...NOT_OBJECT, ...badCq()] },
          { good: () => ({ comp_mask: 0 }), bad: () => [...NOT_OBJECT, { comp_mask: 1 }, {}] },
        ],
        call: ibv_start_poll,
      },
      { name: 'ibv_next_poll', kind: 'int', args: [{ good: () => cqx, bad: () => [...NOT_OBJECT, ...badCq(), cqx] }], call: ibv_next_poll },
      { name: 'ibv_end_poll', kind: 'void', args: [{ good: () => cqx, bad: () => [...NOT_OBJECT, ...badCq(), cqx] }], call: ibv_end_poll },
      { name: 'ibv_wc_read_opcode', kind: 'void', args: [{ good: () => cqx, bad: () => [...NOT_OBJECT, ...badCq(), cqx] }], call: ibv_wc_read_opcode },
      {
        name: 'ibv_wc_read_completion_ts',
        kind: 'void',
        args: [{ good: () => cqx, bad: () => [...NOT_OBJECT, ...badCq(), cqx] }],
        call: ibv_wc_read_completion_ts,
      },
      {
        name: 'ibv_resize_cq',
        kind: 'int',
        args: [
          { good: () => cqR, bad: badCq },
          { good: () => 8, bad: () => [...BAD_COUNT, 0, 1 << 30] },
        ],
        call: ibv_resize_cq,
      },
      {
        name: 'ibv_modify_cq',
        kind: 'int',
        args: [
          { good: () => cqR, bad: badCq },
          {
            good: () => ({ attr_mask: IBV_CQ_ATTR_MODERATE, moderate: { cq_count: 1, cq_period: 0 } }),
            bad: () => [
              ...NOT_OBJECT,
              { attr_mask: 2, moderate: { cq_count: 1, cq_period: 0 } },
              { attr_mask: IBV_CQ_ATTR_MODERATE, moderate: null },
              { attr_mask: IBV_CQ_ATTR_MODERATE, moderate: { cq_count: 0x10000, cq_period: 0 } },
              { attr_mask: IBV_CQ_ATTR_MODERATE, moderate: { cq_count: 1, cq_period: -1 } },
              { attr_mask: NaN },
            ],
          },
        ],
        call: ibv_modify_cq,
      },
      {
        name: 'ibv_create_qp_ex',
        kind: 'ptr',
        args: [
          { good: () => a.ctx, bad: badCtx },
          {
            good: goodQpEx,
            bad: () => [
              ...NOT_OBJECT,
              { ...goodQpEx(), comp_mask: 1 << 20 },
              { ...goodQpEx(), pd: null },
              { ...goodQpEx(), pd: b.pd },
              { ...goodQpEx(), pd: pdD },
              { ...goodQpEx(), send_ops_flags: IBV_QP_EX_WITH_BIND_MW },
              { ...goodQpEx(), qp_type: 99 },
              { ...goodQpEx(), comp_mask: IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD },
              { ...goodQpEx(), send_cq: cqB },
              { ...goodQpEx(), send_ops_flags: -1 },
            ],
          },
        ],
        call: ibv_create_qp_ex,
        errnos: [errno.EINVAL, errno.EOPNOTSUPP],
      },
      { name: 'ibv_qp_to_qp_ex', kind: 'ptr', args: [{ good: () => qpx.qp_base, bad: () => [...badQp(), rc.a.qp] }], call: ibv_qp_to_qp_ex },
      { name: 'ibv_wr_start', kind: 'void', args: [{ good: () => qpx, bad: () => [...NOT_OBJECT, ...badQp(), rc.a.qp] }], call: ibv_wr_start },
      { name: 'ibv_wr_complete', kind: 'void', args: [{ good: () => qpx, bad: () => [...NOT_OBJECT, ...badQp(), qpx] }], call: ibv_wr_complete },
      { name: 'ibv_wr_abort', kind: 'void', args: [{ good: () => qpx, bad: () => [...NOT_OBJECT, ...badQp(), qpx] }], call: ibv_wr_abort },
      {
        name: 'ibv_wr_rdma_write',
        kind: 'void',
        args: [
          { good: () => qpx, bad: () => [...NOT_OBJECT, ...badQp(), qpx] },
          { good: () => dst.rkey, bad: () => [] },
          { good: () => dst.addr, bad: () => [] },
        ],
        call: ibv_wr_rdma_write,
      },
      {
        name: 'ibv_wr_set_sge',
        kind: 'void',
        args: [
          { good: () => qpx, bad: () => [...NOT_OBJECT, ...badQp(), qpx] },
          { good: () => src.lkey, bad: () => [] },
          { good: () => src.addr, bad: () => [] },
          { good: () => 8, bad: () => [] },
        ],
        call: ibv_wr_set_sge,
      },
      {
        name: 'ibv_reg_mr_iova',
        kind: 'ptr',
        args: [
          { good: () => a.pd, bad: badPd },
          { good: () => bufA, bad: () => [...NOT_OBJECT, new Uint8Array(8), {}] },
          { good: () => 0x1000n, bad: () => BAD_U64 },
          // 1 << 6 is ON_DEMAND, not modelled (1 << 20, relaxed ordering, is an optional bit the device ignores).
          { good: () => 1, bad: () => [...BAD_U32, 1 << 6] },
        ],
        call: ibv_reg_mr_iova,
      },
      {
        name: 'ibv_attach_mcast',
        kind: 'int',
        args: [
          { good: () => ud.a.qp, bad: () => [...badQp(), rc.a.qp] },
          {
            good: () => ({ raw: Uint8Array.of(0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1) }),
            bad: () => [...NOT_OBJECT, {}, { raw: new Uint8Array(4) }, newGid(), { raw: 5 }],
          },
          { good: () => 0, bad: () => [undefined, '0', 0n, {}] },
        ],
        call: ibv_attach_mcast,
      },
      {
        name: 'ibv_detach_mcast',
        kind: 'int',
        args: [
          { good: () => ud.a.qp, bad: () => [...badQp(), rc.a.qp] },
          {
            good: () => ({ raw: Uint8Array.of(0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2) }),
            bad: () => [...NOT_OBJECT, {}, { raw: new Uint8Array(4) }, newGid()],
          },
          { good: () => 0, bad: () => [undefined, '0', 0n, {}] },
        ],
        call: ibv_detach_mcast,
      },
      { name: 'ibv_alloc_null_mr', kind: 'ptr', args: [{ good: () => a.pd, bad: badPd }], call: ibv_alloc_null_mr },
      {
        name: 'ibv_alloc_mw',
        kind: 'ptr',
        args: [
          { good: () => a.pd, bad: badPd },
          { good: () => IBV_MW_TYPE_1, bad: () => [0, 3, -1, NaN, 1.5, '1', 1n, null, undefined, {}] },
        ],
        call: ibv_alloc_mw,
      },
      { name: 'ibv_dealloc_mw', kind: 'int', args: [{ good: () => mwA, bad: badMw }], call: ibv_dealloc_mw },
      {
        name: 'ibv_bind_mw',
        kind: 'int',
        args: [
          { good: () => rc.a.qp, bad: badQp },
          { good: () => mwA, bad: () => [...badMw(), mw2] },
          { good: goodBind, bad: badBinds },
        ],
        call: ibv_bind_mw,
        // An MR of another PD than the window's: EPERM, libibverbs' own check.
        errnos: [errno.EINVAL, errno.EPERM],
      },
      {
        name: 'ibv_wr_set_ud_addr',
        kind: 'void',
        args: [
          { good: () => qpx, bad: () => [...NOT_OBJECT, ...badQp(), qpx] },
          { good: () => ah, bad: () => [] },
          { good: () => 1, bad: () => [] },
          { good: () => 1, bad: () => [] },
        ],
        call: ibv_wr_set_ud_addr,
      },
    ];

    // RNIC_FUZZ_ONLY=ibv_post_send,ibv_poll_cq narrows a run to some verbs (to chase a failure).
    const only = process.env.RNIC_FUZZ_ONLY?.split(',');
    if (only) specs.splice(0, specs.length, ...specs.filter((x) => only.includes(x.name)));
    const rand = prng(SEED);
    const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)]!;
    const fail = (i: number, spec: Spec, args: unknown[], what: string) => {
      if (failures.length < 40) failures.push(`case ${i} (seed ${SEED}): ${spec.name}(${args.map((x) => show(x)).join(', ')}) ${what}`);
    };

    const postSendSpec = specs.find((s) => s.name === 'ibv_post_send');
    const postRecvSpec = specs.find((s) => s.name === 'ibv_post_recv');
    let outstandingSends = 0;

    for (let i = 0; i < CASES; i++) {
      const spec = specs[i % specs.length]!;
      // Corrupt each argument with probability 1/2, at least one; the rest good.
      const corruptible = spec.args.map((x, k) => (x.bad().length > 0 ? k : -1)).filter((k) => k >= 0);
      const must = pick(corruptible);
      const args = spec.args.map((x, k) => (k === must || (corruptible.includes(k) && rand() < 0.5) ? pick(x.bad()) : x.good()));
      // Mixed chains: a good head, a bad second WR. The head is posted, the call fails at the second.
      let head: ibv_send_wr | ibv_recv_wr | null = null;
      // (Only where the QP and bad_wr are good: a bad QP or bad_wr refuses the whole call; and
      // `next: undefined` ends a list, as null does.)
      if (
        (spec === postSendSpec || spec === postRecvSpec) &&
        args[0] === rc.a.qp &&
        isObject(args[2]) &&
        args[1] !== undefined &&
        args[1] !== null &&
        rand() < 0.25
      ) {
        head = spec === postSendSpec ? goodSend() : goodRecv();
        head.next = args[1] as never;
        args[1] = head;
      }
      const badWr = isObject(args[2]) ? (args[2] as { wr?: unknown }) : null;
      perVerb.set(spec.name, (perVerb.get(spec.name) ?? 0) + 1);
      const allowed = [...(spec.errnos ?? [errno.EINVAL])];
      // A context whose provider has no ops at all: libibverbs' dummy ops say EOPNOTSUPP.
      if (args.some((x) => x === EMPTY_OPS_CTX || (isObject(x) && (x as { context?: unknown }).context === EMPTY_OPS_CTX))) allowed.push(errno.EOPNOTSUPP);
      let value: unknown;
      let thrown: unknown;
      let threw = false;
      try {
        value = (spec.call as (...x: unknown[]) => unknown)(...args);
        if (spec.kind === 'async') {
          try {
            value = await (value as Promise<unknown>);
          } catch (e) {
            threw = true;
            thrown = e;
          }
        }
      } catch (e) {
        threw = true;
        thrown = e;
      }
      if (spec.kind === 'minus1') {
        if (threw) fail(i, spec, args, `threw ${(thrown as Error)?.name}: ${(thrown as Error)?.message}`);
        else if (value !== -1) fail(i, spec, args, `returned ${show(value)}, not -1`);
        else if (!allowed.includes(rnic_errno())) fail(i, spec, args, `errno ${errnoName(rnic_errno())}, expected ${allowed.map(errnoName).join(' or ')}`);
      } else if (spec.kind === 'int' || spec.kind === 'poll') {
        if (threw) fail(i, spec, args, `threw ${(thrown as Error)?.name}: ${(thrown as Error)?.message}`);
        else if (typeof value !== 'number' || !Number.isInteger(value)) fail(i, spec, args, `returned ${show(value)}, not an int`);
        else {
          const e = spec.kind === 'poll' ? -value : value;
          if (e <= 0) fail(i, spec, args, `returned ${value}: accepted`);
          else if (!allowed.includes(e)) fail(i, spec, args, `returned ${errnoName(e)} (${e}), expected ${allowed.map(errnoName).join(' or ')}`);
        }
      } else {
        if (!threw) fail(i, spec, args, `${spec.kind === 'async' ? 'resolved' : 'returned'} ${show(value)}: accepted`);
        else if (!(thrown instanceof VerbsError))
          fail(i, spec, args, `threw ${(thrown as Error)?.name ?? typeof thrown}: ${(thrown as Error)?.message ?? String(thrown)}`);
        else if (thrown.code !== errnoName(thrown.errno)) fail(i, spec, args, `threw code ${thrown.code} for errno ${thrown.errno}`);
        else if (!allowed.includes(thrown.errno))
          fail(i, spec, args, `threw ${thrown.code}: ${thrown.message}; expected ${allowed.map(errnoName).join(' or ')}`);
      }
      // bad_wr names the first WR not posted; a good head was posted.
      if (head && typeof value === 'number' && value !== 0) {
        if (badWr && !Object.is(badWr.wr, head.next)) fail(i, spec, args, `bad_wr.wr is ${show(badWr.wr)}, not the second WR`);
        if (spec === postSendSpec) {
          sentWrIds.push(head.wr_id);
          outstandingSends++;
        } else recvWrIds.push(head.wr_id);
      }
      if (outstandingSends >= 32) {
        await expectSends(outstandingSends);
        outstandingSends = 0;
      }
      if (recvWrIds.length >= 48) await consumeRecvs();
    }
    await expectSends(outstandingSends);
    await consumeRecvs();

    /** The accepted sends, and nothing else, complete on the send CQ, in order and successfully. */
    async function expectSends(n: number): Promise<void> {
      expect(failures, failures.join('\n')).toEqual([]);
      const wcs = n ? await H.pollN(rc.a.scq, n, `${n} accepted WRITEs`) : [];
      const ids = sentWrIds.splice(0, n);
      expect(
        wcs.map((w) => w.wr_id),
        'send completions are the accepted WRs',
      ).toEqual(ids);
      for (const w of wcs) expect(w.status, H.wcText(w)).toBe(IBV_WC_SUCCESS);
      expect(H.pollNow(rc.a.scq), 'no completion of a WR that was refused').toEqual([]);
    }
    /** The accepted receives, and nothing else, take the peer's SENDs, in order. */
    async function consumeRecvs(): Promise<void> {
      expect(failures, failures.join('\n')).toEqual([]);
      const marker = goodRecv();
      H.postRecv(rc.a, marker);
      const want = [...recvWrIds.splice(0), marker.wr_id];
      for (let k = 0; k < want.length; k++) H.postSend(rc.b, H.wrSend({ wrId: BigInt(k), sge: [H.region(b, 64, H.ALL_ACCESS, { fill: (j) => j + k }).sge()] }));
      const got = await H.pollN(rc.a.rcq, want.length, `${want.length} receives`);
      expect(
        got.map((w) => w.wr_id),
        'receive completions are the accepted receives',
      ).toEqual(want);
      for (const w of got) expect(w.status, H.wcText(w)).toBe(IBV_WC_SUCCESS);
      await H.pollN(rc.b.scq, want.length, 'the SENDs');
    }

    expect(failures, failures.join('\n')).toEqual([]);

    // Nothing was harmed: the targets still work, and the bytes are exact.
    H.expectQpState(rc.a.qp, IBV_QPS_RTS, 'the RC QP misuse was aimed at');
    dst.data.fill(0);
    H.postSend(rc.a, H.wrWrite({ wrId: 77n, sge: [src.sge(0, 4096)], remote: { addr: dst.addr, rkey: dst.rkey } }));
    expect((await H.poll1(rc.a.scq, 'the final WRITE')).status).toBe(IBV_WC_SUCCESS);
    H.expectBytes(dst.data, src.data, 'WRITE after the fuzz');
    for (const r of [src, dst, rbuf]) r.checkGuards();
    expect(ibv_post_send(ud.a.qp, { ...goodSend(), opcode: IBV_WR_SEND, wr: { ud: { ah, remote_qpn: ud.b.qp.qp_num, remote_qkey: H.QKEY } } }, {})).toBe(0);
    expect((await H.poll1(ud.a.scq, 'a UD SEND after the fuzz')).status).toBe(IBV_WC_SUCCESS);
    for (const s of specs) expect(perVerb.get(s.name) ?? 0, `cases for ${s.name}`).toBeGreaterThan(CASES / specs.length / 2);
  }, 300_000);
});

/** A context of a provider that implements nothing. */
const EMPTY_OPS_CTX = Object.freeze({ ops: Object.freeze({}) });

function isObject(v: unknown): v is object {
  return typeof v === 'object' && v !== null;
}

/** The cases of issue 8, each with its exact answer. */
describe('verbs misuse: the reported cases', () => {
  let f: H.Fabric;
  beforeAll(async () => {
    f = await H.openFabric(H.twoDeviceConfig(0));
  }, 60_000);
  afterAll(async () => {
    await f?.close();
  }, 60_000);

  it('ibv_reg_mr(null, …) throws VerbsError EINVAL, not a TypeError', () => {
    const buf = rnic_alloc_buf(f.a.ctx, 64);
    for (const pd of [null, undefined, 5, {}] as unknown as ibv_pd[]) {
      const e = catchErr(() => ibv_reg_mr(pd, buf, 1));
      expect(e).toBeInstanceOf(VerbsError);
      expect((e as VerbsError).code).toBe('EINVAL');
    }
    rnic_free_buf(f.a.ctx, buf);
  });

  it('ibv_post_send: an SGE length of NaN or -1 and a null WR are EINVAL; a refused WR is bad_wr', async () => {
    const p = H.makePair(f, IBV_QPT_RC);
    const r = H.region(f.a, 64);
    for (const length of [NaN, -1, 1.5, 2 ** 32]) {
      const wr = H.wrSend({ sge: [{ ...r.sge(), length }] });
      const bad: { wr?: ibv_send_wr | null } = {};
      expect(ibv_post_send(p.a.qp, wr, bad), `length ${length}`).toBe(errno.EINVAL);
      expect(bad.wr).toBe(wr);
    }
    expect(ibv_post_send(p.a.qp, null as unknown as ibv_send_wr, {})).toBe(errno.EINVAL);
    expect(ibv_post_recv(p.a.qp, null as unknown as ibv_recv_wr, {})).toBe(errno.EINVAL);
    expect(H.pollNow(p.a.scq)).toEqual([]);
  });

  it('ibv_poll_cq(cq, -1) is -EINVAL, as are NaN, 1.5 and a missing wc array; 0 entries is 0', () => {
    const cq = H.createCq(f.a, 4);
    for (const n of [-1, NaN, 1.5, Infinity]) expect(ibv_poll_cq(cq, n, newWcArray(1)), `num_entries ${n}`).toBe(-errno.EINVAL);
    expect(ibv_poll_cq(cq, 1, null as never)).toBe(-errno.EINVAL);
    expect(ibv_poll_cq(null as never, 1, newWcArray(1))).toBe(-errno.EINVAL);
    expect(ibv_poll_cq(cq, 0, [])).toBe(0);
  });

  it('a destroyed or foreign object is EINVAL everywhere, never a TypeError', () => {
    const cq = ibv_create_cq(f.a.ctx, 4, null, null, 0);
    expect(ibv_destroy_cq(cq)).toBe(0);
    expect(ibv_destroy_cq(cq)).toBe(errno.EINVAL);
    expect(ibv_poll_cq(cq, 1, newWcArray(1))).toBe(-errno.EINVAL);
    expect(ibv_req_notify_cq(cq, 0)).toBe(errno.EINVAL);
    expect(catchErr(() => ibv_ack_cq_events(cq, 1))).toBeInstanceOf(VerbsError);
    expect(ibv_destroy_qp({ context: f.a.ctx } as unknown as ibv_qp)).toBe(errno.EINVAL);
    expect(ibv_dereg_mr({ context: f.a.ctx, lkey: 1 } as unknown as ibv_mr)).toBe(errno.EINVAL);
  });

  it('a waiting verb given a look-alike rejects at once instead of waiting forever', async () => {
    await expect(ibv_get_cq_event({ context: f.a.ctx } as unknown as ibv_comp_channel)).rejects.toMatchObject({ code: 'EINVAL' });
    await expect(ibv_get_async_event({ ops: null } as unknown as ibv_context)).rejects.toMatchObject({ code: 'EINVAL' });
    // A provider without the op: libibverbs' dummy_ops answer EOPNOTSUPP.
    await expect(ibv_get_async_event({ ops: {} } as unknown as ibv_context)).rejects.toMatchObject({ code: 'EOPNOTSUPP' });
    await expect(ibv_get_cq_event(null as unknown as ibv_comp_channel)).rejects.toBeInstanceOf(VerbsError);
  });
});

function catchErr(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  return undefined;
}
