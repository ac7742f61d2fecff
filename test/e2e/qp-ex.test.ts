/**
 * The extended QP and the new post API end to end (the intent of
 * rdma-core's tests/test_qpex.py): QPs from ibv_create_qp_ex with
 * send_ops_flags, traffic posted with ibv_wr_start / ibv_wr_<opcode> /
 * ibv_wr_set_* / ibv_wr_complete on RC, UC and UD, the bytes that land and
 * the completions on both sides; then rdma-core's semantics: nothing posted
 * on ibv_wr_abort, nothing posted and the errno at ibv_wr_complete when a
 * request of the batch is bad, and the create-time errors.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
  IBV_QP_EX_WITH_BIND_MW,
  IBV_QP_EX_WITH_RDMA_READ,
  IBV_QP_EX_WITH_RDMA_WRITE,
  IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
  IBV_QP_EX_WITH_SEND,
  IBV_QP_EX_WITH_SEND_WITH_IMM,
  IBV_QP_INIT_ATTR_CREATE_FLAGS,
  IBV_QP_INIT_ATTR_PD,
  IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
  IBV_QP_INIT_ATTR_XRCD,
  IBV_QPT_RC,
  IBV_QPT_UC,
  IBV_QPT_UD,
  IBV_SEND_SIGNALED,
  IBV_WC_COMP_SWAP,
  IBV_WC_FETCH_ADD,
  IBV_WC_RDMA_READ,
  IBV_WC_RDMA_WRITE,
  IBV_WC_RECV,
  IBV_WC_RECV_RDMA_WITH_IMM,
  IBV_WC_SEND,
  IBV_WC_SUCCESS,
  IBV_WC_WITH_IMM,
  errno,
  ibv_create_qp_ex,
  ibv_destroy_qp,
  ibv_qp_to_qp_ex,
  ibv_wr_abort,
  ibv_wr_atomic_cmp_swp,
  ibv_wr_atomic_fetch_add,
  ibv_wr_complete,
  ibv_wr_rdma_read,
  ibv_wr_rdma_write,
  ibv_wr_rdma_write_imm,
  ibv_wr_send,
  ibv_wr_send_imm,
  ibv_wr_set_inline_data,
  ibv_wr_set_inline_data_list,
  ibv_wr_set_sge,
  ibv_wr_set_sge_list,
  ibv_wr_set_ud_addr,
  ibv_wr_start,
  newQpCap,
} from '../../src/driver/verbs/index.js';
import type { ibv_qp_ex, ibv_qp_init_attr_ex } from '../../src/driver/verbs/index.js';
import * as H from './harness.js';

const MODES = process.env.E2E_WORKERS !== undefined ? [Number(process.env.E2E_WORKERS)] : [1, 0];
const RC_OPS =
  IBV_QP_EX_WITH_SEND |
  IBV_QP_EX_WITH_SEND_WITH_IMM |
  IBV_QP_EX_WITH_RDMA_WRITE |
  IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
  IBV_QP_EX_WITH_RDMA_READ |
  IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
const OPS: Record<number, number> = {
  [IBV_QPT_RC]: RC_OPS,
  [IBV_QPT_UC]: IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
  [IBV_QPT_UD]: IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM,
};

function initEx(dev: H.Dev, type: number, sendOps: number, maxSendWr = 64): ibv_qp_init_attr_ex {
  const cap = newQpCap();
  Object.assign(cap, { max_send_wr: maxSendWr, max_recv_wr: 64, max_send_sge: 4, max_recv_sge: 4, max_inline_data: 128 });
  const cq = H.createCq(dev);
  return {
    send_cq: cq,
    recv_cq: cq,
    cap,
    qp_type: type,
    sq_sig_all: 0,
    comp_mask: IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
    pd: dev.pd,
    send_ops_flags: sendOps,
  };
}

function createEx(dev: H.Dev, type: number, sendOps = OPS[type]!, maxSendWr = 64): { ep: H.Ep; qpx: ibv_qp_ex } {
  const init = initEx(dev, type, sendOps, maxSendWr);
  const qp = ibv_create_qp_ex(dev.ctx, init);
  dev.cleanup.push(() => void ibv_destroy_qp(qp));
  return { ep: { dev, qp, type, scq: init.send_cq!, rcq: init.recv_cq!, initCap: init.cap }, qpx: ibv_qp_to_qp_ex(qp) };
}

const errnoOf = (f: () => unknown): number | undefined => {
  try {
    f();
  } catch (e) {
    return (e as { errno?: number }).errno;
  }
  return undefined;
};

describe.each(MODES)('extended QP, devices on %i worker thread(s)', (workers) => {
  let f: H.Fabric;
  beforeAll(async () => {
    f = await H.openFabric(H.twoDeviceConfig(workers));
  });
  afterAll(async () => {
    await f?.close();
  });

  it('RC: every ibv_wr_* opcode in one batch, one doorbell; bytes, atomics and completions checked', async () => {
    const a = createEx(f.a, IBV_QPT_RC);
    const b = createEx(f.b, IBV_QPT_RC);
    H.connect(a.ep, b.ep);
    const src = H.region(f.a, 8192, H.ALL_ACCESS, { fill: (i) => i * 13 + 1 });
    const dst = H.region(f.b, 8192, H.ALL_ACCESS, { fill: (i) => 255 - (i & 0xff) });
    const dv = new DataView(dst.data.buffer, dst.data.byteOffset);
    dv.setBigUint64(4096, 100n, true);
    dv.setBigUint64(4104, 0x1111n, true);
    const want = Uint8Array.from(dst.data);
    for (let i = 0; i < 4; i++) H.postRecv(b.ep, H.recvWr(BigInt(100 + i), [dst.sge(6000 + i * 512, 512)]));
    const q = a.qpx;
    ibv_wr_start(q);
    q.wr_flags = IBV_SEND_SIGNALED;
    q.wr_id = 1n;
    ibv_wr_send(q);
    ibv_wr_set_sge(q, src.lkey, src.at(0), 300);
    q.wr_id = 2n;
    ibv_wr_send_imm(q, 0x12345678);
    ibv_wr_set_sge_list(q, 2, [src.sge(10, 20), src.sge(1000, 30)]);
    q.wr_id = 3n;
    ibv_wr_rdma_write(q, dst.rkey, dst.at(128));
    ibv_wr_set_sge(q, src.lkey, src.at(2000), 1500);
    q.wr_id = 4n;
    ibv_wr_rdma_write_imm(q, dst.rkey, dst.at(3000), 0x0badcafe);
    ibv_wr_set_inline_data(q, src.at(50), 100);
    q.wr_id = 5n;
    ibv_wr_send(q);
    ibv_wr_set_inline_data_list(q, 2, [
      { addr: src.at(7), length: 5 },
      { addr: src.at(700), length: 9 },
    ]);
    q.wr_id = 6n;
    ibv_wr_rdma_read(q, dst.rkey, dst.at(500));
    ibv_wr_set_sge(q, src.lkey, src.at(5000), 64);
    q.wr_id = 7n;
    ibv_wr_atomic_fetch_add(q, dst.rkey, dst.at(4096), 5n);
    ibv_wr_set_sge(q, src.lkey, src.at(7000), 8);
    q.wr_id = 8n;
    ibv_wr_atomic_cmp_swp(q, dst.rkey, dst.at(4104), 0x1111n, 0x2222n);
    ibv_wr_set_sge(q, src.lkey, src.at(7008), 8);
    const srcBefore = Uint8Array.from(src.data);
    expect(ibv_wr_complete(q)).toBe(0);

    const sends = await H.pollN(a.ep.scq, 8, 'the 8 requests');
    expect(sends.map((w) => [Number(w.wr_id), w.status, w.opcode])).toEqual([
      [1, IBV_WC_SUCCESS, IBV_WC_SEND],
      [2, IBV_WC_SUCCESS, IBV_WC_SEND],
      [3, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE],
      [4, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE],
      [5, IBV_WC_SUCCESS, IBV_WC_SEND],
      [6, IBV_WC_SUCCESS, IBV_WC_RDMA_READ],
      [7, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD],
      [8, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP],
    ]);
    const recvs = await H.pollN(b.ep.rcq, 4, 'the 4 receives');
    expect(recvs.map((w) => [Number(w.wr_id), w.status, w.opcode, w.byte_len])).toEqual([
      [100, IBV_WC_SUCCESS, IBV_WC_RECV, 300],
      [101, IBV_WC_SUCCESS, IBV_WC_RECV, 50],
      [102, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, 100],
      [103, IBV_WC_SUCCESS, IBV_WC_RECV, 14],
    ]);
    expect(recvs[1]!.imm_data >>> 0).toBe(0x12345678);
    expect(recvs[1]!.wc_flags & IBV_WC_WITH_IMM).toBe(IBV_WC_WITH_IMM);
    expect(recvs[2]!.imm_data >>> 0).toBe(0x0badcafe);
    // The bytes: what each request should have moved, computed from the source.
    want.set(srcBefore.subarray(0, 300), 6000);
    want.set(srcBefore.subarray(10, 30), 6512);
    want.set(srcBefore.subarray(1000, 1030), 6532);
    want.set(srcBefore.subarray(2000, 3500), 128);
    want.set(srcBefore.subarray(50, 150), 3000);
    want.set(srcBefore.subarray(7, 12), 7536);
    want.set(srcBefore.subarray(700, 709), 7541);
    const wdv = new DataView(want.buffer);
    wdv.setBigUint64(4096, 105n, true);
    wdv.setBigUint64(4104, 0x2222n, true);
    H.expectBytes(dst.data, want, 'the responder memory');
    const sdv = new DataView(src.data.buffer, src.data.byteOffset);
    H.expectBytes(src.data.subarray(5000, 5064), want.subarray(500, 564), 'the RDMA READ');
    expect(sdv.getBigUint64(7000, true), 'fetch-add original').toBe(100n);
    expect(sdv.getBigUint64(7008, true), 'compare-swap original').toBe(0x1111n);
    src.checkGuards();
    dst.checkGuards();
  });

  it('UC and UD: the builders their types have, with ibv_wr_set_ud_addr', async () => {
    const ua = createEx(f.a, IBV_QPT_UC);
    const ub = createEx(f.b, IBV_QPT_UC);
    H.connect(ua.ep, ub.ep);
    const src = H.region(f.a, 4096, H.ALL_ACCESS, { fill: (i) => i ^ 0x5a });
    const dst = H.region(f.b, 4096);
    H.postRecv(ub.ep, H.recvWr(9n, [dst.sge(2048, 1024)]));
    ibv_wr_start(ua.qpx);
    ua.qpx.wr_flags = IBV_SEND_SIGNALED;
    ua.qpx.wr_id = 1n;
    ibv_wr_rdma_write(ua.qpx, dst.rkey, dst.at(0));
    ibv_wr_set_sge(ua.qpx, src.lkey, src.at(0), 1000);
    ua.qpx.wr_id = 2n;
    ibv_wr_send_imm(ua.qpx, 77);
    ibv_wr_set_sge(ua.qpx, src.lkey, src.at(100), 200);
    expect(ibv_wr_complete(ua.qpx)).toBe(0);
    expect((await H.pollN(ua.ep.scq, 2, 'UC sends')).map((w) => [Number(w.wr_id), w.status])).toEqual([
      [1, 0],
      [2, 0],
    ]);
    const r = await H.poll1(ub.ep.rcq, 'UC receive');
    expect([Number(r.wr_id), r.opcode, r.byte_len, r.imm_data]).toEqual([9, IBV_WC_RECV, 200, 77]);
    H.expectBytes(dst.data.subarray(0, 1000), src.data.subarray(0, 1000), 'UC write');
    H.expectBytes(dst.data.subarray(2048, 2248), src.data.subarray(100, 300), 'UC send');

    const da = createEx(f.a, IBV_QPT_UD);
    const db = createEx(f.b, IBV_QPT_UD);
    H.toInit(da.ep);
    H.toRtr(da.ep, db.ep, 0);
    H.toRts(da.ep, 0);
    H.toInit(db.ep);
    H.toRtr(db.ep, da.ep, 0);
    H.toRts(db.ep, 0);
    const ah = H.createAh(f.a, f.b);
    const ubuf = H.region(f.b, 2048);
    H.postRecv(db.ep, H.recvWr(50n, [ubuf.sge(0, 40 + 512)]));
    H.postRecv(db.ep, H.recvWr(51n, [ubuf.sge(1024, 40 + 512)]));
    ibv_wr_start(da.qpx);
    da.qpx.wr_flags = IBV_SEND_SIGNALED;
    da.qpx.wr_id = 5n;
    ibv_wr_send(da.qpx);
    ibv_wr_set_ud_addr(da.qpx, ah, db.ep.qp.qp_num, H.QKEY);
    ibv_wr_set_sge(da.qpx, src.lkey, src.at(0), 512);
    da.qpx.wr_id = 6n;
    ibv_wr_send_imm(da.qpx, 0x42);
    ibv_wr_set_inline_data(da.qpx, src.at(1000), 33);
    ibv_wr_set_ud_addr(da.qpx, ah, db.ep.qp.qp_num, H.QKEY);
    expect(ibv_wr_complete(da.qpx)).toBe(0);
    expect((await H.pollN(da.ep.scq, 2, 'UD sends')).map((w) => [Number(w.wr_id), w.status])).toEqual([
      [5, 0],
      [6, 0],
    ]);
    const ur = await H.pollN(db.ep.rcq, 2, 'UD receives');
    expect(ur.map((w) => [Number(w.wr_id), w.status, w.byte_len, w.src_qp])).toEqual([
      [50, 0, 40 + 512, da.ep.qp.qp_num],
      [51, 0, 40 + 33, da.ep.qp.qp_num],
    ]);
    expect(ur[1]!.imm_data).toBe(0x42);
    H.expectBytes(ubuf.data.subarray(40, 552), src.data.subarray(0, 512), 'UD payload');
    H.expectBytes(ubuf.data.subarray(1064, 1097), src.data.subarray(1000, 1033), 'UD inline payload');
  });

  it('ibv_wr_abort posts nothing; a bad request makes ibv_wr_complete post nothing and return its errno', async () => {
    const a = createEx(f.a, IBV_QPT_RC, RC_OPS, 8);
    const b = createEx(f.b, IBV_QPT_RC);
    H.connect(a.ep, b.ep);
    const src = H.region(f.a, 4096, H.ALL_ACCESS, { fill: (i) => i });
    const dst = H.region(f.b, 4096);
    const q = a.qpx;
    const write = (id: number, off: number) => {
      q.wr_id = BigInt(id);
      ibv_wr_rdma_write(q, dst.rkey, dst.at(off));
      ibv_wr_set_sge(q, src.lkey, src.at(off), 16);
    };
    q.wr_flags = IBV_SEND_SIGNALED;
    const before = H.counters(f.a);
    // Aborted: nothing.
    ibv_wr_start(q);
    write(1, 0);
    write(2, 16);
    ibv_wr_abort(q);
    // One bad request (an atomic with a misaligned address) among good ones: nothing, EINVAL.
    ibv_wr_start(q);
    write(3, 32);
    ibv_wr_atomic_fetch_add(q, dst.rkey, dst.at(3), 1n);
    ibv_wr_set_sge(q, src.lkey, src.at(512), 8);
    write(4, 48);
    expect(ibv_wr_complete(q)).toBe(errno.EINVAL);
    // Inline data beyond max_inline_data: EINVAL, nothing.
    ibv_wr_start(q);
    write(5, 64);
    q.wr_id = 6n;
    ibv_wr_send(q);
    ibv_wr_set_inline_data(q, src.at(0), 4000);
    expect(ibv_wr_complete(q)).toBe(errno.EINVAL);
    // More requests than the send queue holds (8): ENOMEM, nothing.
    ibv_wr_start(q);
    for (let i = 0; i < 9; i++) write(100 + i, 128 + i * 16);
    expect(ibv_wr_complete(q)).toBe(errno.ENOMEM);
    // An opcode not in send_ops_flags (the QP has no SEND_WITH_INV): EINVAL, nothing.
    const c = createEx(f.a, IBV_QPT_RC, IBV_QP_EX_WITH_RDMA_WRITE);
    ibv_wr_start(c.qpx);
    ibv_wr_send(c.qpx);
    expect(ibv_wr_complete(c.qpx)).toBe(errno.EINVAL);
    // An empty batch is fine.
    ibv_wr_start(q);
    expect(ibv_wr_complete(q)).toBe(0);
    // Nothing above reached the wire or the CQ.
    await H.expectNoCqe(a.ep.scq, 50, 'after the refused batches');
    expect(H.counterDelta(before, H.counters(f.a))['sent_pkts'] ?? 0n, 'packets sent by refused batches').toBe(0n);
    expect(dst.data.subarray(0, 256).every((x) => x === 0)).toBe(true);
    // Then a good batch goes, every request once.
    ibv_wr_start(q);
    write(7, 0);
    write(8, 16);
    expect(ibv_wr_complete(q)).toBe(0);
    expect((await H.pollN(a.ep.scq, 2, 'the good batch')).map((w) => [Number(w.wr_id), w.status])).toEqual([
      [7, 0],
      [8, 0],
    ]);
    H.expectBytes(dst.data.subarray(0, 32), src.data.subarray(0, 32), 'the good batch');
    expect(dst.data.subarray(32, 256).every((x) => x === 0)).toBe(true);
  });

  it('the API out of sequence throws EINVAL; create_qp_ex refuses what is not modelled', () => {
    const a = createEx(f.a, IBV_QPT_RC);
    const q = a.qpx;
    expect(
      errnoOf(() => ibv_wr_send(q)),
      'a builder outside a batch',
    ).toBe(errno.EINVAL);
    expect(
      errnoOf(() => ibv_wr_complete(q)),
      'complete without start',
    ).toBe(errno.EINVAL);
    ibv_wr_start(q);
    expect(
      errnoOf(() => ibv_wr_start(q)),
      'a second start',
    ).toBe(errno.EINVAL);
    expect(
      errnoOf(() => ibv_wr_set_sge(q, 0, 0n, 0)),
      'a setter before any builder',
    ).toBe(errno.EINVAL);
    ibv_wr_abort(q);
    expect(errnoOf(() => ibv_wr_start({} as ibv_qp_ex))).toBe(errno.EINVAL);
    // A QP from ibv_create_qp has no ibv_qp_ex.
    expect(errnoOf(() => ibv_qp_to_qp_ex(H.createQp(f.a, IBV_QPT_RC).qp))).toBe(errno.EINVAL);
    const create = (patch: Partial<ibv_qp_init_attr_ex>, type = IBV_QPT_RC) =>
      errnoOf(() => {
        const qp = ibv_create_qp_ex(f.a.ctx, { ...initEx(f.a, type, OPS[type]!), ...patch });
        ibv_destroy_qp(qp);
      });
    expect(create({ send_ops_flags: IBV_QP_EX_WITH_BIND_MW }), 'BIND_MW builder on RC (memory windows)').toBeUndefined();
    expect(create({ send_ops_flags: IBV_QP_EX_WITH_BIND_MW }, IBV_QPT_UD), 'BIND_MW builder on UD').toBe(errno.EOPNOTSUPP);
    expect(create({ send_ops_flags: IBV_QP_EX_WITH_RDMA_READ }, IBV_QPT_UD), 'READ on UD').toBe(errno.EOPNOTSUPP);
    expect(create({ send_ops_flags: IBV_QP_EX_WITH_RDMA_READ }, IBV_QPT_UC), 'READ on UC').toBe(errno.EOPNOTSUPP);
    expect(create({ comp_mask: IBV_QP_INIT_ATTR_SEND_OPS_FLAGS }), 'no PD').toBe(errno.EINVAL);
    // The kernel reads the XRC domain only for XRC receive QPs (test/e2e/xrc-qp.test.ts): on RC it is ignored.
    expect(create({ comp_mask: IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD }), 'XRCD on RC').toBeUndefined();
    expect(create({ comp_mask: IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS, create_flags: 2 }), 'BLOCK_SELF_MCAST_LB on RC').toBe(errno.EINVAL);
    expect(create({ comp_mask: IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS, create_flags: 1 << 8 }), 'other creation flags').toBe(errno.EOPNOTSUPP);
    expect(create({ comp_mask: IBV_QP_INIT_ATTR_PD | (1 << 20) }), 'unknown comp_mask').toBe(errno.EINVAL);
    expect(create({ qp_type: 99 }), 'unknown QP type').toBe(errno.EOPNOTSUPP);
    expect(create({ pd: f.b.pd }), 'a PD of another context').toBe(errno.EINVAL);
    expect(create({ comp_mask: IBV_QP_INIT_ATTR_PD }), 'no send_ops_flags: a QP without ibv_qp_ex').toBeUndefined();
  });
});
