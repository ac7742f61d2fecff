/**
 * Memory windows end to end, porting the intent of rdma-core's
 * tests/test_mw.py: allocation of both types, type 1 bound with
 * ibv_bind_mw and type 2 with IBV_WR_BIND_MW (and ibv_wr_bind_mw), RDMA
 * through the window's rkey (bytes land inside the window only), the key
 * byte that changes on every bind, local invalidation (IBV_WR_LOCAL_INV) and
 * remote invalidation (SEND_WITH_INV: IBV_WC_WITH_INV and invalidated_rkey
 * at the responder), then the invalidated key refused with a remote access
 * error NAK; and the IBTA's checks, each with the status or errno rxe gives.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IBV_ACCESS_LOCAL_WRITE,
  IBV_ACCESS_MW_BIND,
  IBV_ACCESS_REMOTE_READ,
  IBV_ACCESS_REMOTE_WRITE,
  IBV_ACCESS_ZERO_BASED,
  IBV_DEVICE_MEM_WINDOW,
  IBV_DEVICE_MEM_WINDOW_TYPE_2B,
  IBV_MW_TYPE_1,
  IBV_MW_TYPE_2,
  IBV_QP_EX_WITH_BIND_MW,
  IBV_QP_EX_WITH_LOCAL_INV,
  IBV_QP_EX_WITH_RDMA_WRITE,
  IBV_QP_EX_WITH_SEND_WITH_INV,
  IBV_QP_INIT_ATTR_PD,
  IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
  IBV_QPS_ERR,
  IBV_QPT_RC,
  IBV_QPT_UC,
  IBV_QPT_UD,
  IBV_SEND_SIGNALED,
  IBV_WC_BIND_MW,
  IBV_WC_LOC_PROT_ERR,
  IBV_WC_LOC_QP_OP_ERR,
  IBV_WC_LOCAL_INV,
  IBV_WC_MW_BIND_ERR,
  IBV_WC_RDMA_READ,
  IBV_WC_RDMA_WRITE,
  IBV_WC_RECV,
  IBV_WC_REM_ACCESS_ERR,
  IBV_WC_REM_INV_REQ_ERR,
  IBV_WC_SEND,
  IBV_WC_SUCCESS,
  IBV_WC_WITH_INV,
  IBV_WR_BIND_MW,
  IBV_WR_LOCAL_INV,
  IBV_WR_SEND_WITH_INV,
  errno,
  ibv_alloc_mw,
  ibv_alloc_pd,
  ibv_bind_mw,
  ibv_create_qp_ex,
  ibv_dealloc_mw,
  ibv_dealloc_pd,
  ibv_dereg_mr,
  ibv_destroy_qp,
  ibv_inc_rkey,
  ibv_post_send,
  ibv_qp_to_qp_ex,
  ibv_query_device,
  ibv_reg_mr,
  ibv_wr_bind_mw,
  ibv_wr_complete,
  ibv_wr_local_inv,
  ibv_wr_rdma_write,
  ibv_wr_send_inv,
  ibv_wr_set_sge,
  ibv_wr_start,
  newDeviceAttr,
  newQpCap,
  rnic_alloc_buf,
  VerbsError,
} from '../../src/driver/verbs/index.js';
import type { ibv_mr, ibv_mw, ibv_send_wr } from '../../src/driver/verbs/index.js';
import * as H from './harness.js';

const MODES = process.env.E2E_WORKERS !== undefined ? [Number(process.env.E2E_WORKERS)] : [0, 1];
const BINDABLE = H.ALL_ACCESS | IBV_ACCESS_MW_BIND;
const RW = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;

/** A type 2 bind WR for ibv_post_send. */
function bindWr(mw: ibv_mw, rkey: number, mr: ibv_mr | null, addr: bigint, length: bigint, access: number, wrId = 7n): ibv_send_wr {
  return {
    wr_id: wrId,
    next: null,
    sg_list: null,
    num_sge: 0,
    opcode: IBV_WR_BIND_MW,
    send_flags: IBV_SEND_SIGNALED,
    bind_mw: { mw, rkey, bind_info: { mr, addr, length, mw_access_flags: access } },
  };
}

function invWr(opcode: number, rkey: number, wrId = 8n, sge: H.Region | null = null): ibv_send_wr {
  const sg = sge ? [sge.sge(0, 16)] : [];
  return { wr_id: wrId, next: null, sg_list: sg, num_sge: sg.length, opcode, send_flags: IBV_SEND_SIGNALED, invalidate_rkey: rkey };
}

describe.each(MODES)('memory windows, devices on %i worker thread(s)', (workers) => {
  let f: H.Fabric;
  beforeAll(async () => {
    f = await H.openFabric(H.twoDeviceConfig(workers));
  });
  afterAll(async () => {
    await f?.close();
  });

  /** A's WRITE of `len` bytes to `addr` through `rkey` on B: the completion. */
  async function write(p: H.Pair, src: H.Region, rkey: number, addr: bigint, len: number, what: string) {
    H.postSend(p.a, H.wrWrite({ wrId: 1n, sge: [src.sge(0, len)], remote: { addr, rkey } }));
    return H.poll1(p.a.scq, what);
  }

  it('the device has windows: max_mw, MEM_WINDOW and MEM_WINDOW_TYPE_2B', () => {
    const attr = newDeviceAttr();
    expect(ibv_query_device(f.a.ctx, attr)).toBe(0);
    expect(attr.max_mw).toBeGreaterThan(0);
    expect(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW).toBe(IBV_DEVICE_MEM_WINDOW);
    expect(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B).toBe(IBV_DEVICE_MEM_WINDOW_TYPE_2B);
  });

  it('ibv_alloc_mw / ibv_dealloc_mw: both types, a bad type EINVAL, a second dealloc EINVAL, keys of their own', () => {
    const m1 = ibv_alloc_mw(f.b.pd, IBV_MW_TYPE_1);
    const m2 = ibv_alloc_mw(f.b.pd, IBV_MW_TYPE_2);
    expect([m1.type, m2.type, m1.pd, m1.context]).toEqual([IBV_MW_TYPE_1, IBV_MW_TYPE_2, f.b.pd, f.b.ctx]);
    expect(m1.rkey >>> 8).not.toBe(m2.rkey >>> 8);
    expect(() => ibv_alloc_mw(f.b.pd, 3)).toThrow(expect.objectContaining({ code: 'EINVAL' }));
    expect(() => ibv_alloc_mw(null as never, IBV_MW_TYPE_1)).toThrow(VerbsError);
    expect(ibv_dealloc_mw(m1)).toBe(0);
    expect(ibv_dealloc_mw(m1)).toBe(errno.EINVAL);
    expect(ibv_dealloc_mw(m2)).toBe(0);
    expect(ibv_dealloc_mw({} as never)).toBe(errno.EINVAL);
  });

  it('type 1: ibv_bind_mw gives the window a new key byte; WRITE and READ through it land inside it; outside is REM_ACCESS_ERR', async () => {
    const p = H.makePair(f, IBV_QPT_RC);
    const mem = H.region(f.b, 4096, BINDABLE);
    const src = H.region(f.a, 256, H.ALL_ACCESS, { fill: (i) => i ^ 0x5a });
    const mw = ibv_alloc_mw(f.b.pd, IBV_MW_TYPE_1);
    const before = mw.rkey;
    expect(
      ibv_bind_mw(p.b.qp, mw, { wr_id: 3n, send_flags: IBV_SEND_SIGNALED, bind_info: { mr: mem.mr, addr: mem.at(1024), length: 512n, mw_access_flags: RW } }),
    ).toBe(0);
    expect(mw.rkey).toBe(ibv_inc_rkey(before));
    H.expectWc(await H.poll1(p.b.scq, 'bind'), { wr_id: 3n, status: IBV_WC_SUCCESS, opcode: IBV_WC_BIND_MW }, 'type 1 bind');
    H.expectWc(await write(p, src, mw.rkey, mem.at(1024 + 100), 200, 'WRITE'), { status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_WRITE }, 'WRITE in the window');
    const want = new Uint8Array(4096);
    want.set(src.data.subarray(0, 200), 1124);
    H.expectBytes(mem.data, want, 'the MR after the WRITE');
    mem.checkGuards();
    const back = H.region(f.a, 256);
    H.postSend(p.a, H.wrRead({ wrId: 2n, sge: [back.sge(0, 200)], remote: { addr: mem.at(1124), rkey: mw.rkey } }));
    H.expectWc(await H.poll1(p.a.scq, 'READ'), { status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_READ }, 'READ in the window');
    H.expectBytes(back.data.subarray(0, 200), src.data.subarray(0, 200), 'READ back');
    // One byte past the window, inside the MR: refused.
    H.expectWc(await write(p, src, mw.rkey, mem.at(1024 + 500), 13, 'past the window'), { status: IBV_WC_REM_ACCESS_ERR }, 'beyond the window');
    H.expectQpState(p.a.qp, IBV_QPS_ERR);
    expect(mem.data[1024 + 500]).toBe(0);
    expect(ibv_dealloc_mw(mw)).toBe(0);
  });

  it('type 1: a rebind changes the key (the old one is refused); a zero-length bind unbinds', async () => {
    const mem = H.region(f.b, 1024, BINDABLE);
    const src = H.region(f.a, 64, H.ALL_ACCESS, { fill: (i) => i + 1 });
    const mw = ibv_alloc_mw(f.b.pd, IBV_MW_TYPE_1);
    const p = H.makePair(f, IBV_QPT_RC);
    const bind = (length: bigint, mr: ibv_mr | null) =>
      ibv_bind_mw(p.b.qp, mw, { wr_id: 1n, send_flags: IBV_SEND_SIGNALED, bind_info: { mr, addr: mr ? mem.at(0) : 0n, length, mw_access_flags: RW } });
    expect(bind(1024n, mem.mr)).toBe(0);
    const first = mw.rkey;
    expect(bind(512n, mem.mr)).toBe(0);
    expect(mw.rkey).toBe(ibv_inc_rkey(first));
    expect((await H.pollN(p.b.scq, 2, 'two binds')).map((w) => [w.status, w.opcode])).toEqual([
      [IBV_WC_SUCCESS, IBV_WC_BIND_MW],
      [IBV_WC_SUCCESS, IBV_WC_BIND_MW],
    ]);
    expect((await write(p, src, mw.rkey, mem.at(0), 64, 'new key')).status).toBe(IBV_WC_SUCCESS);
    expect((await write(p, src, first, mem.at(0), 64, 'old key')).status, 'the key before the rebind').toBe(IBV_WC_REM_ACCESS_ERR);
    const q = H.makePair(f, IBV_QPT_RC);
    expect(ibv_bind_mw(q.b.qp, mw, { wr_id: 1n, send_flags: IBV_SEND_SIGNALED, bind_info: { mr: null, addr: 0n, length: 0n, mw_access_flags: 0 } })).toBe(0);
    expect((await H.poll1(q.b.scq, 'unbind')).status).toBe(IBV_WC_SUCCESS);
    expect((await write(q, src, mw.rkey, mem.at(0), 8, 'unbound')).status, 'an unbound type 1 window').toBe(IBV_WC_REM_ACCESS_ERR);
    expect(ibv_dealloc_mw(mw)).toBe(0);
  });

  it("ibv_bind_mw's own checks: a type 2 window EINVAL, an MR of another PD EPERM, a range without MR EINVAL, zero-based EINVAL", () => {
    const p = H.makePair(f, IBV_QPT_RC);
    const mem = H.region(f.b, 256, BINDABLE);
    const m2 = ibv_alloc_mw(f.b.pd, IBV_MW_TYPE_2);
    const m1 = ibv_alloc_mw(f.b.pd, IBV_MW_TYPE_1);
    const pd2 = ibv_alloc_pd(f.b.ctx);
    const buf = rnic_alloc_buf(f.b.ctx, 256, 64);
    const other = ibv_reg_mr(pd2, buf, BINDABLE);
    const info = (mr: ibv_mr | null, access = RW, length = 64n) => ({
      wr_id: 1n,
      send_flags: 0,
      bind_info: { mr, addr: mr ? mr.addr : 8n, length, mw_access_flags: access },
    });
    expect(ibv_bind_mw(p.b.qp, m2, info(mem.mr))).toBe(errno.EINVAL);
    expect(ibv_bind_mw(p.b.qp, m1, info(other))).toBe(errno.EPERM);
    expect(ibv_bind_mw(p.b.qp, m1, info(null))).toBe(errno.EINVAL);
    expect(ibv_bind_mw(p.b.qp, m1, info(mem.mr, RW | IBV_ACCESS_ZERO_BASED))).toBe(errno.EINVAL);
    const key = m1.rkey;
    expect(key, 'a refused bind leaves the key').toBe(m1.rkey);
    expect(ibv_dereg_mr(other)).toBe(0);
    expect(ibv_dealloc_pd(pd2)).toBe(0);
    expect(ibv_dealloc_mw(m1)).toBe(0);
    expect(ibv_dealloc_mw(m2)).toBe(0);
  });

  it('type 2: IBV_WR_BIND_MW, WRITE through it, then SEND_WITH_INV invalidates it at the responder (WITH_INV, invalidated_rkey) and the key is refused', async () => {
    const p = H.makePair(f, IBV_QPT_RC);
    const mem = H.region(f.b, 2048, BINDABLE);
    const src = H.region(f.a, 256, H.ALL_ACCESS, { fill: (i) => 255 - i });
    const rbuf = H.region(f.b, 256);
    const mw = ibv_alloc_mw(f.b.pd, IBV_MW_TYPE_2);
    const rkey = ibv_inc_rkey(mw.rkey);
    H.postSend(p.b, bindWr(mw, rkey, mem.mr, mem.at(256), 1024n, RW));
    H.expectWc(await H.poll1(p.b.scq, 'bind'), { wr_id: 7n, status: IBV_WC_SUCCESS, opcode: IBV_WC_BIND_MW }, 'type 2 bind');
    expect((await write(p, src, rkey, mem.at(256), 256, 'WRITE')).status).toBe(IBV_WC_SUCCESS);
    H.expectBytes(mem.data.subarray(256, 512), src.data, 'the window bytes');
    expect(mem.data[255]).toBe(0);
    H.postRecv(p.b, H.recvWr(20n, [rbuf.sge(0, 256)]));
    H.postSend(p.a, invWr(IBV_WR_SEND_WITH_INV, rkey, 9n, src));
    H.expectWc(await H.poll1(p.a.scq, 'SEND_WITH_INV'), { wr_id: 9n, status: IBV_WC_SUCCESS, opcode: IBV_WC_SEND }, 'requester');
    const r = await H.poll1(p.b.rcq, 'the receive');
    H.expectWc(r, { wr_id: 20n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RECV, byte_len: 16, wc_flags: IBV_WC_WITH_INV }, 'responder');
    expect(r.invalidated_rkey >>> 0).toBe(rkey);
    H.expectWc(await write(p, src, rkey, mem.at(256), 8, 'after invalidation'), { status: IBV_WC_REM_ACCESS_ERR }, 'invalidated key');
    expect(mem.data[256]).toBe(src.data[0]);
    // FREE again: it binds anew (on a fresh QP; its old QP is in ERR).
    const q = H.makePair(f, IBV_QPT_RC);
    const rkey2 = ibv_inc_rkey(rkey);
    H.postSend(q.b, bindWr(mw, rkey2, mem.mr, mem.at(0), 64n, IBV_ACCESS_REMOTE_WRITE));
    expect((await H.poll1(q.b.scq, 'rebind')).status).toBe(IBV_WC_SUCCESS);
    expect((await write(q, src, rkey2, mem.at(0), 64, 'rebound')).status).toBe(IBV_WC_SUCCESS);
    // Deregistering the MR while a window is bound: EBUSY; after the window is gone: 0.
    expect(ibv_dereg_mr(mem.mr)).toBe(errno.EBUSY);
    expect(ibv_dealloc_mw(mw)).toBe(0);
    mem.dereg();
  });

  it('type 2: LOCAL_INV (IBV_WC_LOCAL_INV) stops the key; a type 2 window works only through the QP it is bound to', async () => {
    const p = H.makePair(f, IBV_QPT_RC);
    const other = H.makePair(f, IBV_QPT_RC);
    const mem = H.region(f.b, 512, BINDABLE);
    const src = H.region(f.a, 64, H.ALL_ACCESS, { fill: (i) => i * 3 });
    const mw = ibv_alloc_mw(f.b.pd, IBV_MW_TYPE_2);
    const rkey = ibv_inc_rkey(mw.rkey);
    H.postSend(p.b, bindWr(mw, rkey, mem.mr, mem.at(0), 512n, RW));
    expect((await H.poll1(p.b.scq, 'bind')).status).toBe(IBV_WC_SUCCESS);
    expect((await write(other, src, rkey, mem.at(0), 8, 'another QP')).status, 'through a QP it is not bound to').toBe(IBV_WC_REM_ACCESS_ERR);
    expect(mem.data[0]).toBe(0);
    expect((await write(p, src, rkey, mem.at(0), 8, 'its QP')).status).toBe(IBV_WC_SUCCESS);
    H.postSend(p.b, invWr(IBV_WR_LOCAL_INV, rkey, 11n));
    H.expectWc(await H.poll1(p.b.scq, 'LOCAL_INV'), { wr_id: 11n, status: IBV_WC_SUCCESS, opcode: IBV_WC_LOCAL_INV }, 'local invalidate');
    expect((await write(p, src, rkey, mem.at(0), 8, 'invalidated')).status).toBe(IBV_WC_REM_ACCESS_ERR);
    // A second LOCAL_INV of the same (now FREE) window fails: LOC_QP_OP_ERR.
    const q = H.makePair(f, IBV_QPT_RC);
    H.postSend(q.b, invWr(IBV_WR_LOCAL_INV, rkey, 12n));
    expect((await H.poll1(q.b.scq, 'LOCAL_INV again')).status).toBe(IBV_WC_LOC_QP_OP_ERR);
    expect(ibv_dealloc_mw(mw)).toBe(0);
  });

  it('bind errors complete with IBV_WC_MW_BIND_ERR and move the QP to ERR', async () => {
    const noBind = H.region(f.b, 256, H.ALL_ACCESS);
    const noLocalWrite = H.region(f.b, 256, IBV_ACCESS_MW_BIND | IBV_ACCESS_REMOTE_READ);
    const ok = H.region(f.b, 256, BINDABLE);
    const cases: [string, number, ibv_mr | null, bigint, bigint, number][] = [
      ['an MR without IBV_ACCESS_MW_BIND', IBV_MW_TYPE_2, noBind.mr, noBind.at(0), 64n, RW],
      ['a window past the MR', IBV_MW_TYPE_2, ok.mr, ok.at(200), 64n, RW],
      ['a window before the MR', IBV_MW_TYPE_2, ok.mr, ok.at(0) - 1n, 16n, RW],
      ['remote write on an MR without local write', IBV_MW_TYPE_2, noLocalWrite.mr, noLocalWrite.at(0), 64n, IBV_ACCESS_REMOTE_WRITE],
      ['a type 2 bind of length 0', IBV_MW_TYPE_2, ok.mr, ok.at(0), 0n, RW],
      ['an access bit a window cannot have', IBV_MW_TYPE_2, ok.mr, ok.at(0), 64n, IBV_ACCESS_LOCAL_WRITE],
    ];
    for (const [what, type, mr, addr, len, access] of cases) {
      const p = H.makePair(f, IBV_QPT_RC);
      const mw = ibv_alloc_mw(f.b.pd, type);
      H.postSend(p.b, bindWr(mw, ibv_inc_rkey(mw.rkey), mr, addr, len, access));
      H.expectWc(await H.poll1(p.b.scq, what), { status: IBV_WC_MW_BIND_ERR }, what);
      H.expectQpState(p.b.qp, IBV_QPS_ERR, what);
      expect(ibv_dealloc_mw(mw)).toBe(0);
    }
    // A type 2 window of another PD than the QP's; a second bind of a bound type 2 window (not FREE).
    const pd2 = ibv_alloc_pd(f.b.ctx);
    const mwOther = ibv_alloc_mw(pd2, IBV_MW_TYPE_2);
    const p = H.makePair(f, IBV_QPT_RC);
    H.postSend(p.b, bindWr(mwOther, ibv_inc_rkey(mwOther.rkey), ok.mr, ok.at(0), 64n, RW));
    expect((await H.poll1(p.b.scq, 'PD')).status, 'a window of another PD').toBe(IBV_WC_MW_BIND_ERR);
    expect(ibv_dealloc_pd(pd2), 'a PD with a window').toBe(errno.EBUSY);
    expect(ibv_dealloc_mw(mwOther)).toBe(0);
    expect(ibv_dealloc_pd(pd2)).toBe(0);
    const q = H.makePair(f, IBV_QPT_RC);
    const mw = ibv_alloc_mw(f.b.pd, IBV_MW_TYPE_2);
    H.postSend(q.b, [
      bindWr(mw, ibv_inc_rkey(mw.rkey), ok.mr, ok.at(0), 64n, RW, 1n),
      bindWr(mw, ibv_inc_rkey(ibv_inc_rkey(mw.rkey)), ok.mr, ok.at(0), 64n, RW, 2n),
    ]);
    expect((await H.pollN(q.b.scq, 2, 'two binds')).map((w) => [Number(w.wr_id), w.status])).toEqual([
      [1, IBV_WC_SUCCESS],
      [2, IBV_WC_MW_BIND_ERR],
    ]);
    expect(ibv_dealloc_mw(mw)).toBe(0);
  });

  it('SEND_WITH_INV of a type 1 window is REM_INV_REQ_ERR at both ends (o10-37.2.26); of an MR key too', async () => {
    const mem = H.region(f.b, 256, BINDABLE);
    const src = H.region(f.a, 64);
    const rbuf = H.region(f.b, 64);
    const m1 = ibv_alloc_mw(f.b.pd, IBV_MW_TYPE_1);
    for (const [what, key] of [
      ['a type 1 window', () => m1.rkey],
      ['an MR', () => mem.rkey],
    ] as const) {
      const p = H.makePair(f, IBV_QPT_RC);
      if (what === 'a type 1 window') {
        expect(ibv_bind_mw(p.b.qp, m1, { wr_id: 1n, send_flags: 0, bind_info: { mr: mem.mr, addr: mem.at(0), length: 64n, mw_access_flags: RW } })).toBe(0);
      }
      H.postRecv(p.b, H.recvWr(5n, [rbuf.sge(0, 64)]));
      H.postSend(p.a, invWr(IBV_WR_SEND_WITH_INV, key(), 6n, src));
      H.expectWc(await H.poll1(p.a.scq, what), { wr_id: 6n, status: IBV_WC_REM_INV_REQ_ERR }, `requester, ${what}`);
      H.expectWc(await H.poll1(p.b.rcq, what), { wr_id: 5n, status: IBV_WC_REM_INV_REQ_ERR }, `responder, ${what}`);
      H.expectQpState(p.b.qp, IBV_QPS_ERR, what);
    }
    expect(ibv_dealloc_mw(m1)).toBe(0);
  });

  it('a window key is not a local key (LOC_PROT_ERR); zero-based type 2 windows address from 0', async () => {
    const p = H.makePair(f, IBV_QPT_RC);
    const mem = H.region(f.b, 1024, BINDABLE);
    const src = H.region(f.a, 64, H.ALL_ACCESS, { fill: (i) => 0x80 | i });
    const mw = ibv_alloc_mw(f.b.pd, IBV_MW_TYPE_2);
    const rkey = ibv_inc_rkey(mw.rkey);
    H.postSend(p.b, bindWr(mw, rkey, mem.mr, mem.at(300), 100n, RW | IBV_ACCESS_ZERO_BASED));
    expect((await H.poll1(p.b.scq, 'zero-based bind')).status).toBe(IBV_WC_SUCCESS);
    expect((await write(p, src, rkey, 10n, 64, 'zero-based')).status).toBe(IBV_WC_SUCCESS);
    H.expectBytes(mem.data.subarray(310, 374), src.data, 'window offset 10 = MR offset 310');
    expect((await write(p, src, rkey, 50n, 64, 'past a zero-based window')).status).toBe(IBV_WC_REM_ACCESS_ERR);
    const q = H.makePair(f, IBV_QPT_RC);
    H.postSend(q.b, H.wrSend({ wrId: 4n, sge: [{ addr: mem.at(300), length: 8, lkey: rkey }] }));
    expect((await H.poll1(q.b.scq, 'window key as lkey')).status).toBe(IBV_WC_LOC_PROT_ERR);
    expect(ibv_dealloc_mw(mw)).toBe(0);
  });

  it('the new post API: ibv_wr_bind_mw, ibv_wr_rdma_write through it, ibv_wr_send_inv, ibv_wr_local_inv', async () => {
    const mk = (dev: H.Dev) => {
      const cq = H.createCq(dev);
      const cap = newQpCap();
      Object.assign(cap, { max_send_wr: 16, max_recv_wr: 16, max_send_sge: 2, max_recv_sge: 2, max_inline_data: 0 });
      const qp = ibv_create_qp_ex(dev.ctx, {
        send_cq: cq,
        recv_cq: cq,
        cap,
        qp_type: IBV_QPT_RC,
        sq_sig_all: 0,
        comp_mask: IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
        pd: dev.pd,
        send_ops_flags: IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_RDMA_WRITE,
      });
      dev.cleanup.push(() => void ibv_destroy_qp(qp));
      return { dev, qp, type: IBV_QPT_RC, scq: cq, rcq: cq, initCap: cap } as H.Ep;
    };
    const a = mk(f.a);
    const b = mk(f.b);
    H.connect(a, b);
    const mem = H.region(f.b, 256, BINDABLE);
    const src = H.region(f.a, 64, H.ALL_ACCESS, { fill: (i) => i + 7 });
    const rbuf = H.region(f.b, 64);
    const m1 = ibv_alloc_mw(f.b.pd, IBV_MW_TYPE_2);
    const m2 = ibv_alloc_mw(f.b.pd, IBV_MW_TYPE_2);
    const k1 = ibv_inc_rkey(m1.rkey);
    const k2 = ibv_inc_rkey(m2.rkey);
    const qb = ibv_qp_to_qp_ex(b.qp);
    ibv_wr_start(qb);
    qb.wr_flags = IBV_SEND_SIGNALED;
    qb.wr_id = 1n;
    ibv_wr_bind_mw(qb, m1, k1, { mr: mem.mr, addr: mem.at(0), length: 128n, mw_access_flags: RW });
    qb.wr_id = 2n;
    ibv_wr_bind_mw(qb, m2, k2, { mr: mem.mr, addr: mem.at(128), length: 128n, mw_access_flags: RW });
    expect(ibv_wr_complete(qb)).toBe(0);
    expect((await H.pollN(b.scq, 2, 'binds')).map((w) => [Number(w.wr_id), w.status, w.opcode])).toEqual([
      [1, IBV_WC_SUCCESS, IBV_WC_BIND_MW],
      [2, IBV_WC_SUCCESS, IBV_WC_BIND_MW],
    ]);
    H.postRecv(b, H.recvWr(9n, [rbuf.sge(0, 64)]));
    const qa = ibv_qp_to_qp_ex(a.qp);
    ibv_wr_start(qa);
    qa.wr_flags = IBV_SEND_SIGNALED;
    qa.wr_id = 3n;
    ibv_wr_rdma_write(qa, k2, mem.at(128));
    ibv_wr_set_sge(qa, src.lkey, src.at(0), 64);
    qa.wr_id = 4n;
    ibv_wr_send_inv(qa, k1);
    ibv_wr_set_sge(qa, src.lkey, src.at(0), 8);
    expect(ibv_wr_complete(qa)).toBe(0);
    expect((await H.pollN(a.scq, 2, 'write and send_inv')).map((w) => [Number(w.wr_id), w.status])).toEqual([
      [3, IBV_WC_SUCCESS],
      [4, IBV_WC_SUCCESS],
    ]);
    const r = await H.poll1(b.rcq, 'recv');
    expect([r.status, r.wc_flags & IBV_WC_WITH_INV, r.invalidated_rkey >>> 0]).toEqual([IBV_WC_SUCCESS, IBV_WC_WITH_INV, k1]);
    H.expectBytes(mem.data.subarray(128, 192), src.data, 'window 2');
    ibv_wr_start(qb);
    qb.wr_flags = IBV_SEND_SIGNALED;
    qb.wr_id = 5n;
    ibv_wr_local_inv(qb, k2);
    expect(ibv_wr_complete(qb)).toBe(0);
    H.expectWc(await H.poll1(b.scq, 'local_inv'), { wr_id: 5n, status: IBV_WC_SUCCESS, opcode: IBV_WC_LOCAL_INV }, 'ibv_wr_local_inv');
    expect(ibv_dealloc_mw(m1)).toBe(0);
    expect(ibv_dealloc_mw(m2)).toBe(0);
  });

  it('type 2 on UC: bind, WRITE through it, LOCAL_INV; destroying the QP a window is bound to frees the window', async () => {
    const uc = H.makePair(f, IBV_QPT_UC);
    const mem = H.region(f.b, 512, BINDABLE);
    const src = H.region(f.a, 64, H.ALL_ACCESS, { fill: (i) => 0x40 + i });
    const mw = ibv_alloc_mw(f.b.pd, IBV_MW_TYPE_2);
    const k1 = ibv_inc_rkey(mw.rkey);
    H.postSend(uc.b, bindWr(mw, k1, mem.mr, mem.at(0), 256n, IBV_ACCESS_REMOTE_WRITE));
    H.expectWc(await H.poll1(uc.b.scq, 'UC bind'), { status: IBV_WC_SUCCESS, opcode: IBV_WC_BIND_MW }, 'UC bind');
    H.postSend(uc.a, H.wrWrite({ wrId: 1n, sge: [src.sge(0, 64)], remote: { addr: mem.at(32), rkey: k1 } }));
    expect((await H.poll1(uc.a.scq, 'UC write')).status).toBe(IBV_WC_SUCCESS);
    // UC completes once sent: wait (bounded) for the bytes to land.
    for (let i = 0; i < 5000 && mem.data[95] !== src.data[63]; i++) await H.sleep(1);
    H.expectBytes(mem.data.subarray(32, 96), src.data, 'UC WRITE through the window');
    H.postSend(uc.b, invWr(IBV_WR_LOCAL_INV, k1, 2n));
    H.expectWc(await H.poll1(uc.b.scq, 'UC local inv'), { status: IBV_WC_SUCCESS, opcode: IBV_WC_LOCAL_INV }, 'UC LOCAL_INV');
    // Bound to an RC QP that is then destroyed: FREE again, its key dead, bindable on another QP.
    const p = H.makePair(f, IBV_QPT_RC);
    const k2 = ibv_inc_rkey(k1);
    H.postSend(p.b, bindWr(mw, k2, mem.mr, mem.at(0), 256n, RW));
    expect((await H.poll1(p.b.scq, 'bind')).status).toBe(IBV_WC_SUCCESS);
    expect(ibv_dereg_mr(mem.mr), 'bound').toBe(errno.EBUSY);
    expect(ibv_destroy_qp(p.b.qp)).toBe(0);
    const q = H.makePair(f, IBV_QPT_RC);
    expect((await write(q, src, k2, mem.at(0), 8, 'through the destroyed QP binding')).status).toBe(IBV_WC_REM_ACCESS_ERR);
    const r = H.makePair(f, IBV_QPT_RC);
    const k3 = ibv_inc_rkey(k2);
    H.postSend(r.b, bindWr(mw, k3, mem.mr, mem.at(0), 64n, RW));
    expect((await H.poll1(r.b.scq, 'rebind after destroy')).status, 'FREE again').toBe(IBV_WC_SUCCESS);
    expect((await write(r, src, k3, mem.at(0), 8, 'rebound')).status).toBe(IBV_WC_SUCCESS);
    expect(ibv_dealloc_mw(mw)).toBe(0);
    mem.dereg();
  });

  it('post-time checks: BIND_MW on UD, a bind WR without bind_mw or with a dead window: EINVAL', () => {
    const ud = H.makePair(f, IBV_QPT_UD);
    const rc = H.makePair(f, IBV_QPT_RC);
    const mem = H.region(f.b, 64, BINDABLE);
    const mw = ibv_alloc_mw(f.b.pd, IBV_MW_TYPE_2);
    expect(ibv_post_send(ud.b.qp, bindWr(mw, 1, mem.mr, mem.at(0), 8n, RW), {})).toBe(errno.EINVAL);
    expect(ibv_post_send(rc.b.qp, { ...bindWr(mw, 1, mem.mr, mem.at(0), 8n, RW), bind_mw: undefined }, {})).toBe(errno.EINVAL);
    expect(ibv_post_send(rc.b.qp, bindWr(mw, 1, mem.mr, -1n, 8n, RW), {})).toBe(errno.EINVAL);
    expect(ibv_dealloc_mw(mw)).toBe(0);
    expect(ibv_post_send(rc.b.qp, bindWr(mw, 1, mem.mr, mem.at(0), 8n, RW), {}), 'a deallocated window').toBe(errno.EINVAL);
  });
});
