/**
 * post_send / post_recv / post_srq_recv: the WQEs are read back from host
 * memory with the device's own layouts, the doorbell record and the BAR
 * doorbell are checked, and every post-time error path is exercised.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  errno,
  IBV_ACCESS_LOCAL_WRITE,
  IBV_ACCESS_REMOTE_ATOMIC,
  IBV_ACCESS_REMOTE_READ,
  IBV_ACCESS_REMOTE_WRITE,
  IBV_QP_STATE,
  IBV_QPS_ERR,
  IBV_QPS_RESET,
  IBV_QPS_RTR,
  IBV_QPS_RTS,
  IBV_QPS_SQD,
  IBV_QPT_RC,
  IBV_QPT_UC,
  IBV_QPT_UD,
  IBV_SEND_FENCE,
  IBV_SEND_INLINE,
  IBV_SEND_SIGNALED,
  IBV_SEND_SOLICITED,
  IBV_WC_RDMA_WRITE,
  IBV_WC_RECV,
  IBV_WC_SEND,
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
  IBV_WR_TSO,
} from '../../device/abi/constants.js';
import { QPC, SRQC } from '../../device/contexts.js';
import { decodeStruct } from '../../device/layout.js';
import { DbKind, QP_DBREC, SRQ_DBREC } from '../../device/registers.js';
import { SMALL_DEVICE } from '../../device/testbed.js';
import { ATOMIC_SEG, DATA_SEG, INLINE_HDR, RADDR_SEG, RECV_WQE_HDR, SEND_CTRL, SRQ_WQE_HDR, UD_SEG } from '../../device/wqe.js';
import type { BadWr } from '../verbs/ops.js';
import { newAhAttr, newGid, newRecvWr, newSendWr, newWcArray } from '../verbs/structs.js';
import type { ibv_ah, ibv_cq, ibv_mr, ibv_pd, ibv_qp, ibv_recv_wr, ibv_send_wr, ibv_srq } from '../verbs/types.js';
import {
  ibv_alloc_pd,
  ibv_create_ah,
  ibv_create_cq,
  ibv_create_qp,
  ibv_create_srq,
  ibv_modify_qp,
  ibv_poll_cq,
  ibv_post_recv,
  ibv_post_send,
  ibv_post_srq_recv,
  ibv_query_gid,
  ibv_reg_mr,
  rnic_alloc_buf,
} from '../verbs/verbs.js';
import { openHarness, rcConnect, rcToInit, ucConnect, udConnect, type Harness } from './harness.js';

let h: Harness;
let pd: ibv_pd;
let cq: ibv_cq;
let buf: Uint8Array;
let mr: ibv_mr;
let rc: ibv_qp;

const ALL = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

function gid(index: number) {
  const g = newGid();
  expect(ibv_query_gid(h.ctx, 1, index, g)).toBe(0);
  return g;
}

function makeQp(
  type: number,
  cap: Partial<{ max_send_wr: number; max_recv_wr: number; max_send_sge: number; max_recv_sge: number; max_inline_data: number }> = {},
  srq: ibv_srq | null = null,
): ibv_qp {
  return ibv_create_qp(pd, {
    send_cq: cq,
    recv_cq: cq,
    srq,
    cap: { max_send_wr: 8, max_recv_wr: 8, max_send_sge: 4, max_recv_sge: 4, max_inline_data: 100, ...cap },
    qp_type: type,
    sq_sig_all: 0,
  });
}

function rts(qp: ibv_qp): void {
  if (qp.qp_type === IBV_QPT_UD) expect(udConnect(qp)).toEqual([0, 0, 0]);
  else if (qp.qp_type === IBV_QPT_UC) expect(ucConnect(qp, 99, gid(1), 1)).toEqual([0, 0, 0]);
  else {
    expect(rcToInit(qp)).toBe(0);
    expect(rcConnect(qp, 99, gid(1), 1)).toEqual([0, 0]);
  }
  expect(qp.state).toBe(IBV_QPS_RTS);
}

/** Host-memory byte offset of send WQE number n of a QP, from the device's context. */
function sendSlot(qp: ibv_qp, n: number): number {
  const t = h.fake.tb.fw.tables;
  const c = decodeStruct(QPC, t.dv, t.qpByNumber(qp.qp_num));
  return Number(c.sqRingAddr) - h.fake.tb.mem.baseNum + ((n & ((1 << c.sqLogSize) - 1)) << c.sqLogStride);
}

function recvSlot(qp: ibv_qp, n: number): number {
  const t = h.fake.tb.fw.tables;
  const c = decodeStruct(QPC, t.dv, t.qpByNumber(qp.qp_num));
  return Number(c.rqRingAddr) - h.fake.tb.mem.baseNum + ((n & ((1 << c.rqLogSize) - 1)) << c.rqLogStride);
}

function dbrec(qp: ibv_qp) {
  const t = h.fake.tb.fw.tables;
  const rec = Number(QPC.f.dbrecAddr.get(t.dv, t.qpByNumber(qp.qp_num))) - h.fake.tb.mem.baseNum;
  return decodeStruct(QP_DBREC, h.fake.tb.mem.dv, rec);
}

function barSlot(kind: DbKind, n: number): number {
  const bar = h.fake.tb.bar;
  return Atomics.load(bar.i32, bar.slotBase[kind]! + n) >>> 0;
}

const dv = () => h.fake.tb.mem.dv;

function sge(off: number, length: number, lkey = mr.lkey) {
  return { addr: mr.addr + BigInt(off), length, lkey };
}

function sendWr(opcode: number, over: Partial<ibv_send_wr> = {}): ibv_send_wr {
  return { ...newSendWr(), opcode, ...over };
}

beforeEach(() => {
  h = openHarness({ config: SMALL_DEVICE });
  pd = ibv_alloc_pd(h.ctx);
  cq = ibv_create_cq(h.ctx, 63, null, null, 0);
  buf = rnic_alloc_buf(h.ctx, 65536, 4096);
  mr = ibv_reg_mr(pd, buf, ALL);
  rc = makeQp(IBV_QPT_RC);
  rts(rc);
});
afterEach(() => h.close());

describe('post_send writes the WQE the device reads', () => {
  it('RDMA WRITE: control, remote address and data segments; record; doorbell', () => {
    const wr = sendWr(IBV_WR_RDMA_WRITE, {
      wr_id: 0x1122334455667788n,
      sg_list: [sge(0, 100), sge(4096, 200, 0xdead)],
      num_sge: 2,
      send_flags: IBV_SEND_SIGNALED | IBV_SEND_FENCE,
      wr: { rdma: { remote_addr: 0xfedcba9876543210n, rkey: 0xabcd1234 } },
    });
    const bad: BadWr<ibv_send_wr> = { wr: wr };
    expect(ibv_post_send(rc, wr, bad)).toBe(0);
    expect(bad.wr).toBeNull();
    const off = sendSlot(rc, 0);
    expect(decodeStruct(SEND_CTRL, dv(), off)).toEqual({
      wrId: 0x1122334455667788n,
      opcode: IBV_WR_RDMA_WRITE,
      sendFlags: IBV_SEND_SIGNALED | IBV_SEND_FENCE,
      wqeIndex: 0,
      immData: 0,
      numDataSegs: 2,
      flushType: 0,
      flushLevel: 0,
      xrcSrqn: 0,
    });
    const reservedCtrl = h.fake.tb.mem.u8.subarray(off + 0x11, off + 0x20);
    expect(reservedCtrl.every((b) => b === 0)).toBe(true);
    expect(decodeStruct(RADDR_SEG, dv(), off + 0x20)).toEqual({ remoteAddr: 0xfedcba9876543210n, rkey: 0xabcd1234, length: 0 });
    expect(decodeStruct(DATA_SEG, dv(), off + 0x40)).toEqual({ addr: mr.addr, length: 100, lkey: mr.lkey });
    // A bad lkey is not a post-time error: the device reports it.
    expect(decodeStruct(DATA_SEG, dv(), off + 0x50)).toEqual({ addr: mr.addr + 4096n, length: 200, lkey: 0xdead });
    expect(dbrec(rc)).toEqual({ rqPi: 0, sqPi: 1 });
    expect(h.fake.sqDoorbells).toEqual([[rc.qp_num, 1]]);
    expect(barSlot(DbKind.SQ, rc.qp_num)).toBe(1);
  });

  it('every RC opcode: immediate, invalidate, read, atomics, local invalidate', () => {
    const wrs = [
      sendWr(IBV_WR_RDMA_WRITE_WITH_IMM, {
        wr_id: 1n,
        imm_data: 0x01020304,
        sg_list: [sge(0, 8)],
        num_sge: 1,
        wr: { rdma: { remote_addr: 0x1000n, rkey: 5 } },
      }),
      sendWr(IBV_WR_SEND_WITH_IMM, { wr_id: 2n, imm_data: 0xa0b0c0d0, sg_list: [sge(8, 8)], num_sge: 1, send_flags: IBV_SEND_SOLICITED }),
      sendWr(IBV_WR_SEND_WITH_INV, { wr_id: 3n, invalidate_rkey: 0x777, sg_list: [sge(16, 8)], num_sge: 1 }),
      sendWr(IBV_WR_RDMA_READ, { wr_id: 4n, sg_list: [sge(24, 64), sge(100, 64)], num_sge: 2, wr: { rdma: { remote_addr: 0x2000n, rkey: 6 } } }),
      sendWr(IBV_WR_ATOMIC_CMP_AND_SWP, {
        wr_id: 5n,
        sg_list: [sge(200, 8)],
        num_sge: 1,
        wr: { atomic: { remote_addr: 0x3008n, compare_add: 11n, swap: 22n, rkey: 7 } },
      }),
      sendWr(IBV_WR_ATOMIC_FETCH_AND_ADD, {
        wr_id: 6n,
        sg_list: [sge(208, 8)],
        num_sge: 1,
        wr: { atomic: { remote_addr: 0x4000n, compare_add: 0xffffffffffffffffn, swap: 99n, rkey: 8 } },
      }),
      sendWr(IBV_WR_LOCAL_INV, { wr_id: 7n, invalidate_rkey: 0x888 }),
    ];
    for (let i = 0; i < wrs.length - 1; i++) wrs[i]!.next = wrs[i + 1]!;
    expect(ibv_post_send(rc, wrs[0]!)).toBe(0);
    const ctrl = (n: number) => decodeStruct(SEND_CTRL, dv(), sendSlot(rc, n));
    expect(wrs.map((_, n) => [ctrl(n).wrId, ctrl(n).opcode, ctrl(n).wqeIndex])).toEqual(wrs.map((w, n) => [w.wr_id, w.opcode, n]));
    expect(ctrl(0).immData).toBe(0x01020304);
    expect(ctrl(1).immData).toBe(0xa0b0c0d0);
    expect(ctrl(1).sendFlags).toBe(IBV_SEND_SOLICITED);
    expect(ctrl(2).immData).toBe(0x777);
    expect(ctrl(6).immData).toBe(0x888);
    expect(ctrl(3).numDataSegs).toBe(2);
    expect(decodeStruct(RADDR_SEG, dv(), sendSlot(rc, 3) + 0x20)).toEqual({ remoteAddr: 0x2000n, rkey: 6, length: 0 });
    expect(decodeStruct(DATA_SEG, dv(), sendSlot(rc, 3) + 0x50)).toEqual({ addr: mr.addr + 100n, length: 64, lkey: mr.lkey });
    expect(decodeStruct(RADDR_SEG, dv(), sendSlot(rc, 4) + 0x20)).toEqual({ remoteAddr: 0x3008n, rkey: 7, length: 0 });
    expect(decodeStruct(ATOMIC_SEG, dv(), sendSlot(rc, 4) + 0x30)).toEqual({ swapAdd: 22n, compare: 11n });
    expect(decodeStruct(ATOMIC_SEG, dv(), sendSlot(rc, 5) + 0x30)).toEqual({ swapAdd: 0xffffffffffffffffn, compare: 0n });
    expect(decodeStruct(DATA_SEG, dv(), sendSlot(rc, 5) + 0x40)).toEqual({ addr: mr.addr + 208n, length: 8, lkey: mr.lkey });
    expect(ctrl(6).numDataSegs).toBe(0);
    expect(dbrec(rc).sqPi).toBe(7);
    expect(h.fake.sqDoorbells).toEqual([[rc.qp_num, 7]]); // one doorbell per call
  });

  it('inline data is copied into the WQE at post time', () => {
    buf.set([1, 2, 3, 4, 5], 0);
    buf.set([6, 7, 8], 1000);
    const wr = sendWr(IBV_WR_SEND, { wr_id: 9n, sg_list: [sge(0, 5, 0), sge(1000, 3, 0)], num_sge: 2, send_flags: IBV_SEND_INLINE | IBV_SEND_SIGNALED });
    expect(ibv_post_send(rc, wr)).toBe(0);
    buf.fill(0, 0, 2000); // changing the buffer afterwards does not matter
    const off = sendSlot(rc, 0);
    const c = decodeStruct(SEND_CTRL, dv(), off);
    expect(c.sendFlags).toBe(IBV_SEND_INLINE | IBV_SEND_SIGNALED);
    expect(c.numDataSegs).toBe(0);
    expect(decodeStruct(INLINE_HDR, dv(), off + 0x40).byteCount).toBe(8);
    expect(Array.from(h.fake.tb.mem.u8.subarray(off + 0x44, off + 0x4c))).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('UD: the AH address vector, remote QPN and Q_Key travel in the WQE', () => {
    const ud = makeQp(IBV_QPT_UD);
    rts(ud);
    const a = newAhAttr();
    a.is_global = 1;
    a.port_num = 1;
    a.sl = 3;
    a.static_rate = 0;
    a.grh.dgid = gid(1);
    a.grh.sgid_index = 1;
    a.grh.hop_limit = 64;
    a.grh.traffic_class = 0x68;
    a.grh.flow_label = 0xabcde;
    const ah: ibv_ah = ibv_create_ah(pd, a);
    buf.set([42, 43], 0);
    const wr = sendWr(IBV_WR_SEND_WITH_IMM, {
      wr_id: 77n,
      imm_data: 0x55,
      sg_list: [sge(0, 2)],
      num_sge: 1,
      send_flags: IBV_SEND_SIGNALED | IBV_SEND_INLINE,
      wr: { ud: { ah, remote_qpn: 0x1abcdef, remote_qkey: 0x80000000 } },
    });
    expect(ibv_post_send(ud, wr)).toBe(0);
    const off = sendSlot(ud, 0);
    expect(decodeStruct(SEND_CTRL, dv(), off)).toMatchObject({ wrId: 77n, opcode: IBV_WR_SEND_WITH_IMM, immData: 0x55, numDataSegs: 0 });
    const u = decodeStruct(UD_SEG, dv(), off + 0x20);
    expect(u.remoteQpn).toBe(0xabcdef);
    expect(h.fake.tb.mem.u8[off + 0x23]).toBe(0);
    expect(u.qkey).toBe(0x80000000);
    expect(Array.from(u.avDgid)).toEqual(Array.from(a.grh.dgid.raw));
    expect(Array.from(u.avDmac)).toEqual([2, 0, 0, 0, 0, 1]);
    expect([u.avSl, u.avHopLimit, u.avTrafficClass, u.avFlowLabel, u.avSgidIndex, u.avPortNum, u.avIsGlobal, u.avStaticRate, u.avDlid]).toEqual([
      3, 64, 0x68, 0xabcde, 1, 1, 1, 0, 0,
    ]);
    expect(decodeStruct(INLINE_HDR, dv(), off + 0x50).byteCount).toBe(2);
    expect(Array.from(h.fake.tb.mem.u8.subarray(off + 0x54, off + 0x56))).toEqual([42, 43]);
  });

  it('post_recv writes receive WQEs and the record, then rings the RQ doorbell (a QP in ERR flushes them)', () => {
    const wr1: ibv_recv_wr = { ...newRecvWr(), wr_id: 5n, sg_list: [sge(0, 1000), sge(2000, 24)], num_sge: 2 };
    const wr2: ibv_recv_wr = { ...newRecvWr(), wr_id: 6n, sg_list: [sge(3000, 10)], num_sge: 1 };
    wr1.next = wr2;
    expect(ibv_post_recv(rc, wr1)).toBe(0);
    expect(decodeStruct(RECV_WQE_HDR, dv(), recvSlot(rc, 0))).toEqual({ wrId: 5n, numDataSegs: 2 });
    expect(decodeStruct(DATA_SEG, dv(), recvSlot(rc, 0) + 0x10)).toEqual({ addr: mr.addr, length: 1000, lkey: mr.lkey });
    expect(decodeStruct(DATA_SEG, dv(), recvSlot(rc, 0) + 0x20)).toEqual({ addr: mr.addr + 2000n, length: 24, lkey: mr.lkey });
    expect(decodeStruct(RECV_WQE_HDR, dv(), recvSlot(rc, 1))).toEqual({ wrId: 6n, numDataSegs: 1 });
    expect(dbrec(rc)).toEqual({ rqPi: 2, sqPi: 0 });
    expect(barSlot(DbKind.RQ, rc.qp_num)).toBe(2);
  });
});

describe('post-time errors: errno, bad_wr, earlier WRs stay posted', () => {
  function postChain(qp: ibv_qp, wrs: ibv_send_wr[]): [number, ibv_send_wr | null | undefined] {
    for (let i = 0; i < wrs.length - 1; i++) wrs[i]!.next = wrs[i + 1]!;
    const bad: BadWr<ibv_send_wr> = {};
    return [ibv_post_send(qp, wrs[0]!, bad), bad.wr];
  }
  const good = (id: bigint) => sendWr(IBV_WR_SEND, { wr_id: id, sg_list: [sge(0, 4)], num_sge: 1 });

  it('an opcode the QP type does not have', () => {
    const wr = sendWr(IBV_WR_RDMA_READ, { wr_id: 2n, wr: { rdma: { remote_addr: 0n, rkey: 0 } } });
    const ud = makeQp(IBV_QPT_UD);
    rts(ud);
    const uc = makeQp(IBV_QPT_UC);
    rts(uc);
    expect(postChain(uc, [good(1n), wr, good(3n)])).toEqual([errno.EINVAL, wr]);
    expect(dbrec(uc).sqPi).toBe(1);
    expect(h.fake.sqDoorbells.at(-1)).toEqual([uc.qp_num, 1]);
    const atomic = sendWr(IBV_WR_ATOMIC_FETCH_AND_ADD, {
      sg_list: [sge(0, 8)],
      num_sge: 1,
      wr: { atomic: { remote_addr: 0n, compare_add: 1n, swap: 0n, rkey: 0 } },
    });
    expect(postChain(uc, [atomic])).toEqual([errno.EINVAL, atomic]);
    const inv = sendWr(IBV_WR_SEND_WITH_INV, { invalidate_rkey: 1 });
    expect(postChain(uc, [inv])).toEqual([errno.EINVAL, inv]);
    const write = sendWr(IBV_WR_RDMA_WRITE, { wr: { rdma: { remote_addr: 0n, rkey: 0 } } });
    expect(postChain(ud, [write])).toEqual([errno.EINVAL, write]);
    for (const op of [IBV_WR_BIND_MW, IBV_WR_TSO, 12, 14, 15, 99, -1]) {
      const w = sendWr(op);
      expect(postChain(rc, [w])).toEqual([errno.EINVAL, w]);
    }
    expect(dbrec(rc).sqPi).toBe(0);
    expect(dbrec(uc).sqPi).toBe(1);
    expect(dbrec(ud).sqPi).toBe(0);
  });

  it('too many SGEs, oversized inline, malformed atomics, missing segments', () => {
    const cap = makeQp(IBV_QPT_RC, { max_send_sge: 1, max_inline_data: 16 });
    rts(cap);
    // The QP reports what its stride holds: 4 SGEs and 60 inline bytes in 128 bytes.
    const five = sendWr(IBV_WR_SEND, { sg_list: [0, 1, 2, 3, 4].map((i) => sge(i * 8, 8)), num_sge: 5 });
    expect(postChain(cap, [good(1n), five])).toEqual([errno.EINVAL, five]);
    const four = sendWr(IBV_WR_SEND, { sg_list: [0, 1, 2, 3].map((i) => sge(i * 8, 8)), num_sge: 4 });
    expect(postChain(cap, [four])).toEqual([0, null]);
    const big = sendWr(IBV_WR_SEND, { sg_list: [sge(0, 61)], num_sge: 1, send_flags: IBV_SEND_INLINE });
    expect(postChain(cap, [big])).toEqual([errno.EINVAL, big]);
    const fits = sendWr(IBV_WR_SEND, { sg_list: [sge(0, 30), sge(100, 30)], num_sge: 2, send_flags: IBV_SEND_INLINE });
    expect(postChain(cap, [fits])).toEqual([0, null]);
    const outside = sendWr(IBV_WR_SEND, { sg_list: [{ addr: 0x10n, length: 4, lkey: 0 }], num_sge: 1, send_flags: IBV_SEND_INLINE });
    expect(postChain(cap, [outside])).toEqual([errno.EFAULT, outside]);
    const shortList = sendWr(IBV_WR_SEND, { sg_list: [sge(0, 1)], num_sge: 2 });
    expect(postChain(cap, [shortList])).toEqual([errno.EINVAL, shortList]);
    const at = (sg: ReturnType<typeof sge>[], remote = 0x1000n) =>
      sendWr(IBV_WR_ATOMIC_CMP_AND_SWP, { sg_list: sg, num_sge: sg.length, wr: { atomic: { remote_addr: remote, compare_add: 1n, swap: 2n, rkey: 3 } } });
    for (const w of [at([sge(0, 4)]), at([sge(0, 8), sge(8, 8)]), at([]), at([sge(0, 8)], 0x1004n)]) {
      expect(postChain(rc, [w])).toEqual([errno.EINVAL, w]);
    }
    const noRdma = sendWr(IBV_WR_RDMA_WRITE, { sg_list: [sge(0, 4)], num_sge: 1 });
    expect(postChain(rc, [noRdma])).toEqual([errno.EINVAL, noRdma]);
    const numberId = sendWr(IBV_WR_SEND, { wr_id: 5 as unknown as bigint });
    expect(postChain(rc, [numberId])).toEqual([errno.EINVAL, numberId]);
    const ud = makeQp(IBV_QPT_UD);
    rts(ud);
    const noAh = sendWr(IBV_WR_SEND, { wr: { ud: { ah: null, remote_qpn: 1, remote_qkey: 1 } } });
    expect(postChain(ud, [noAh])).toEqual([errno.EINVAL, noAh]);
    expect(dbrec(cap).sqPi).toBe(3);
    expect(dbrec(rc).sqPi).toBe(0);
  });

  it('QP state: sends need RTS or later, receives anything but RESET', () => {
    const qp = makeQp(IBV_QPT_RC);
    const recv: ibv_recv_wr = { ...newRecvWr(), wr_id: 1n, sg_list: [sge(0, 4)], num_sge: 1 };
    const bad: BadWr<ibv_recv_wr> = {};
    expect(ibv_post_recv(qp, recv, bad)).toBe(errno.EINVAL);
    expect(bad.wr).toBe(recv);
    const s = good(1n);
    expect(postChain(qp, [s])).toEqual([errno.EINVAL, s]);
    expect(rcToInit(qp)).toBe(0);
    expect(ibv_post_recv(qp, recv)).toBe(0);
    expect(postChain(qp, [s])).toEqual([errno.EINVAL, s]);
    expect(rcConnect(qp, 5, gid(1), 1, { rtrOnly: true })).toEqual([0, 0]);
    expect(qp.state).toBe(IBV_QPS_RTR);
    // RTR: still no sends.
    expect(postChain(qp, [s]).slice(0, 1)).toEqual([errno.EINVAL]);
    expect(dbrec(qp)).toEqual({ rqPi: 1, sqPi: 0 });
    // SQD and ERR accept posts (flushed by the device in ERR).
    expect(ibv_modify_qp(rc, { qp_state: IBV_QPS_SQD }, IBV_QP_STATE)).toBe(0);
    expect(postChain(rc, [good(2n)])).toEqual([0, null]);
    expect(ibv_modify_qp(rc, { qp_state: IBV_QPS_ERR }, IBV_QP_STATE)).toBe(0);
    expect(postChain(rc, [good(3n)])).toEqual([0, null]);
    expect(ibv_post_recv(rc, { ...recv, next: null })).toBe(0);
    expect(ibv_modify_qp(rc, { qp_state: IBV_QPS_RESET }, IBV_QP_STATE)).toBe(0);
    expect(ibv_post_recv(rc, { ...recv, next: null })).toBe(errno.EINVAL);
  });

  it('a full queue is ENOMEM; polling the completion frees the slots', () => {
    const qp = makeQp(IBV_QPT_RC, { max_send_wr: 4, max_recv_wr: 2 });
    rts(qp);
    const wrs = [1n, 2n, 3n, 4n, 5n].map(good);
    expect(postChain(qp, wrs)).toEqual([errno.ENOMEM, wrs[4]]);
    expect(dbrec(qp).sqPi).toBe(4);
    const one = good(6n);
    expect(postChain(qp, [one])).toEqual([errno.ENOMEM, one]);
    // The device completes WQE 1 (signalled); WQEs 0 and 1 are retired.
    h.fake.complete(cq.handle, { wrId: 2n, qpNum: qp.qp_num, wqeCounter: 1, opcode: IBV_WC_SEND });
    expect(ibv_poll_cq(cq, 4, newWcArray(4))).toBe(1);
    const two = [7n, 8n, 9n].map(good);
    expect(postChain(qp, two)).toEqual([errno.ENOMEM, two[2]]);
    expect(dbrec(qp).sqPi).toBe(6);
    expect(decodeStruct(SEND_CTRL, dv(), sendSlot(qp, 4)).wrId).toBe(7n);
    expect(decodeStruct(SEND_CTRL, dv(), sendSlot(qp, 5)).wqeIndex).toBe(5);
    // Receive queue of 2.
    const r = (id: bigint): ibv_recv_wr => ({ ...newRecvWr(), wr_id: id, sg_list: [sge(0, 4)], num_sge: 1 });
    const rs = [r(1n), r(2n), r(3n)];
    rs[0]!.next = rs[1]!;
    rs[1]!.next = rs[2]!;
    const bad: BadWr<ibv_recv_wr> = {};
    expect(ibv_post_recv(qp, rs[0]!, bad)).toBe(errno.ENOMEM);
    expect(bad.wr).toBe(rs[2]);
    h.fake.complete(cq.handle, { wrId: 1n, qpNum: qp.qp_num, wqeCounter: 0, opcode: IBV_WC_RECV });
    expect(ibv_poll_cq(cq, 4, newWcArray(4))).toBe(1);
    expect(ibv_post_recv(qp, rs[2]!)).toBe(0);
    expect(dbrec(qp).rqPi).toBe(3);
    // A receive completion does not free send slots...
    h.fake.complete(cq.handle, { wrId: 2n, qpNum: qp.qp_num, wqeCounter: 1, opcode: IBV_WC_RECV });
    expect(ibv_poll_cq(cq, 4, newWcArray(4))).toBe(1);
    expect(postChain(qp, [good(10n)])[0]).toBe(errno.ENOMEM);
    // ...a send completion (any send opcode) does.
    h.fake.complete(cq.handle, { wrId: 8n, qpNum: qp.qp_num, wqeCounter: 5, opcode: IBV_WC_RDMA_WRITE });
    expect(ibv_poll_cq(cq, 4, newWcArray(4))).toBe(1);
    expect(postChain(qp, [good(10n), good(11n), good(12n), good(13n), good(14n)])[0]).toBe(errno.ENOMEM);
    expect(dbrec(qp).sqPi).toBe(10);
  });

  it('too many receive SGEs; a QP with an SRQ takes no receives', () => {
    // max_recv_sge 4 gives a 128-byte receive WQE: 7 SGEs.
    const r: ibv_recv_wr = { ...newRecvWr(), sg_list: [0, 1, 2, 3, 4, 5, 6, 7].map((i) => sge(i, 1)), num_sge: 8 };
    const bad: BadWr<ibv_recv_wr> = {};
    expect(ibv_post_recv(rc, r, bad)).toBe(errno.EINVAL);
    expect(bad.wr).toBe(r);
    const srq = ibv_create_srq(pd, { attr: { max_wr: 4, max_sge: 1, srq_limit: 0 } });
    const qp = makeQp(IBV_QPT_RC, {}, srq);
    rts(qp);
    expect(ibv_post_recv(qp, { ...r, num_sge: 1 })).toBe(errno.EINVAL);
  });
});

describe('post_srq_recv and the SRQ free list', () => {
  it('fills entries along the free list, keeps nextWqeIndex, holds size − 1, relinks polled entries', () => {
    const attr = { max_wr: 3, max_sge: 2, srq_limit: 0 };
    const srq = ibv_create_srq(pd, { attr });
    expect(attr.max_wr).toBe(3); // 4 entries, one sentinel
    const qp = makeQp(IBV_QPT_RC, {}, srq);
    rts(qp);
    const t = h.fake.tb.fw.tables;
    const c = decodeStruct(SRQC, t.dv, t.srqByNumber(srq.handle));
    const base = Number(c.ringAddr) - h.fake.tb.mem.baseNum;
    const entry = (i: number) => decodeStruct(SRQ_WQE_HDR, dv(), base + (i << c.logStride));
    const recRec = () => decodeStruct(SRQ_DBREC, dv(), Number(c.dbrecAddr) - h.fake.tb.mem.baseNum);
    expect([0, 1, 2, 3].map((i) => entry(i).nextWqeIndex)).toEqual([1, 2, 3, 0]);
    const r = (id: bigint): ibv_recv_wr => ({ ...newRecvWr(), wr_id: id, sg_list: [sge(Number(id) * 64, 64)], num_sge: 1 });
    const rs = [r(1n), r(2n), r(3n), r(4n)];
    for (let i = 0; i < 3; i++) rs[i]!.next = rs[i + 1]!;
    const bad: BadWr<ibv_recv_wr> = {};
    expect(ibv_post_srq_recv(srq, rs[0]!, bad)).toBe(errno.ENOMEM);
    expect(bad.wr).toBe(rs[3]);
    expect([0, 1, 2].map((i) => [entry(i).wrId, entry(i).numDataSegs, entry(i).nextWqeIndex])).toEqual([
      [1n, 1, 1],
      [2n, 1, 2],
      [3n, 1, 3],
    ]);
    expect(decodeStruct(DATA_SEG, dv(), base + (1 << c.logStride) + 0x10)).toEqual({ addr: mr.addr + 128n, length: 64, lkey: mr.lkey });
    expect(recRec().pi).toBe(3);
    // The device consumed entry 1 (out of order): the driver links it after the tail (3).
    h.fake.complete(cq.handle, { wrId: 2n, qpNum: qp.qp_num, wqeCounter: 1, opcode: IBV_WC_RECV, byteLen: 10 });
    expect(ibv_poll_cq(cq, 2, newWcArray(2))).toBe(1);
    expect(entry(3).nextWqeIndex).toBe(1);
    // Entry 3 (the old sentinel) is posted next; entry 1 becomes the sentinel.
    expect(ibv_post_srq_recv(srq, { ...r(5n), next: null })).toBe(0);
    expect(entry(3).wrId).toBe(5n);
    expect(entry(3).nextWqeIndex).toBe(1);
    expect(ibv_post_srq_recv(srq, { ...r(6n), next: null })).toBe(errno.ENOMEM);
    expect(recRec().pi).toBe(4);
    const tooMany: ibv_recv_wr = { ...newRecvWr(), sg_list: [sge(0, 1), sge(1, 1), sge(2, 1), sge(3, 1)], num_sge: 4 };
    expect(ibv_post_srq_recv(srq, tooMany)).toBe(errno.EINVAL);
  });
});
