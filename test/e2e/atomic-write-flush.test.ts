/**
 * IBA 1.5's ATOMIC_WRITE and FLUSH end to end (opcodes 0x1D and 0x1C,
 * RETH / FETH + RETH), as rxe implements them: posted with ibv_post_send and
 * with ibv_wr_atomic_write / ibv_wr_flush, the bytes that land, the one
 * zero-length READ response each gets, the completions (IBV_WC_ATOMIC_WRITE,
 * IBV_WC_FLUSH), and the errors: misaligned (post-time EINVAL), no
 * REMOTE_WRITE on the QP (NAK invalid request), an MR without the access
 * asked (NAK remote access), a range outside the MR.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IB_UVERBS_DEVICE_ATOMIC_WRITE,
  IB_UVERBS_DEVICE_FLUSH_GLOBAL,
  IBV_ACCESS_FLUSH_GLOBAL,
  IBV_ACCESS_FLUSH_PERSISTENT,
  IBV_ACCESS_LOCAL_WRITE,
  IBV_ACCESS_REMOTE_READ,
  IBV_ACCESS_REMOTE_WRITE,
  IBV_FLUSH_GLOBAL,
  IBV_FLUSH_MR,
  IBV_FLUSH_PERSISTENT,
  IBV_FLUSH_RANGE,
  IBV_QP_EX_WITH_ATOMIC_WRITE,
  IBV_QP_EX_WITH_FLUSH,
  IBV_QP_EX_WITH_RDMA_WRITE,
  IBV_QP_INIT_ATTR_PD,
  IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
  IBV_QPT_RC,
  IBV_SEND_SIGNALED,
  IBV_WC_ATOMIC_WRITE,
  IBV_WC_FLUSH,
  IBV_WC_REM_ACCESS_ERR,
  IBV_WC_REM_INV_REQ_ERR,
  IBV_WC_SUCCESS,
  IBV_WR_ATOMIC_WRITE,
  IBV_WR_FLUSH,
  errno,
  ibv_create_qp_ex,
  ibv_destroy_qp,
  ibv_post_send,
  ibv_qp_to_qp_ex,
  ibv_query_device_ex,
  ibv_wr_atomic_write,
  ibv_wr_complete,
  ibv_wr_flush,
  ibv_wr_rdma_write,
  ibv_wr_set_sge,
  ibv_wr_start,
  newDeviceAttrEx,
  newQpCap,
} from '../../src/driver/verbs/index.js';
import type { ibv_send_wr } from '../../src/driver/verbs/index.js';
import * as H from './harness.js';

const MODES = process.env.E2E_WORKERS !== undefined ? [Number(process.env.E2E_WORKERS)] : [1, 0];
const FLUSHABLE = H.ALL_ACCESS | IBV_ACCESS_FLUSH_GLOBAL | IBV_ACCESS_FLUSH_PERSISTENT;

function flushWr(id: bigint, addr: bigint, rkey: number, len: number, type = IBV_FLUSH_GLOBAL, level = IBV_FLUSH_RANGE): ibv_send_wr {
  return {
    wr_id: id,
    next: null,
    sg_list: null,
    num_sge: 0,
    opcode: IBV_WR_FLUSH,
    send_flags: IBV_SEND_SIGNALED,
    wr: { rdma: { remote_addr: addr, rkey } },
    flush: { len, type, level },
  };
}

describe.each(MODES)('ATOMIC_WRITE and FLUSH, devices on %i worker thread(s)', (workers) => {
  let f: H.Fabric;
  beforeAll(async () => {
    f = await H.openFabric(H.twoDeviceConfig(workers));
  });
  afterAll(async () => {
    await f?.close();
  });

  it('the device reports both in device_cap_flags_ex', () => {
    const x = newDeviceAttrEx();
    expect(ibv_query_device_ex(f.a.ctx, null, x)).toBe(0);
    expect(x.device_cap_flags_ex & IB_UVERBS_DEVICE_ATOMIC_WRITE).toBe(IB_UVERBS_DEVICE_ATOMIC_WRITE);
    expect(x.device_cap_flags_ex & IB_UVERBS_DEVICE_FLUSH_GLOBAL).toBe(IB_UVERBS_DEVICE_FLUSH_GLOBAL);
  });

  it('ibv_post_send: ATOMIC_WRITE puts the 8 bytes of its SGE at the aligned address, one request and one zero-length READ response', async () => {
    const p = H.makePair(f, IBV_QPT_RC);
    const src = H.region(f.a, 64, H.ALL_ACCESS, { fill: (i) => 0xa0 + i });
    const dst = H.region(f.b, 64, FLUSHABLE, { fill: () => 0x11 });
    const a0 = H.counters(f.a);
    const b0 = H.counters(f.b);
    const wr: ibv_send_wr = { ...H.sendWr(IBV_WR_ATOMIC_WRITE, { wrId: 5n, sge: [src.sge(8, 8)], remote: { addr: dst.at(16), rkey: dst.rkey } }) };
    expect(ibv_post_send(p.a.qp, wr, {})).toBe(0);
    const w = await H.poll1(p.a.scq, 'ATOMIC_WRITE');
    expect([w.status, w.opcode, Number(w.wr_id)]).toEqual([IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE, 5]);
    const want = new Uint8Array(64).fill(0x11);
    want.set(src.data.subarray(8, 16), 16);
    H.expectBytes(dst.data, want, 'the atomically written bytes');
    dst.checkGuards();
    await H.sleep(20);
    const da = H.counterDelta(a0, H.counters(f.a));
    const db = H.counterDelta(b0, H.counters(f.b));
    expect(da['sent_pkts'], 'one ATOMIC_WRITE request').toBe(1n);
    expect(db['sent_pkts'], 'one READ response').toBe(1n);
    expect(db['rx_write_requests']).toBe(1n);
    // Request frame: Eth 14 + IPv4 20 + UDP 8 + BTH 12 + RETH 16 + 8 payload + ICRC 4 = 82 bytes; response: ... + AETH 4 = 62.
    expect(da['port_xmit_data']).toBe(BigInt(Math.floor(82 / 4)));
    expect(db['port_xmit_data']).toBe(BigInt(Math.floor(62 / 4)));
    // Misaligned, or without exactly one 8-byte SGE: refused at post.
    expect(ibv_post_send(p.a.qp, H.sendWr(IBV_WR_ATOMIC_WRITE, { sge: [src.sge(0, 8)], remote: { addr: dst.at(4), rkey: dst.rkey } }), {})).toBe(errno.EINVAL);
    expect(ibv_post_send(p.a.qp, H.sendWr(IBV_WR_ATOMIC_WRITE, { sge: [src.sge(0, 4)], remote: { addr: dst.at(8), rkey: dst.rkey } }), {})).toBe(errno.EINVAL);
    expect(ibv_post_send(p.a.qp, H.sendWr(IBV_WR_ATOMIC_WRITE, { sge: [src.sge(0, 8)] }), {}), 'no wr.rdma').toBe(errno.EINVAL);
  });

  it('the new post API: rdma_write, atomic_write and flush in one batch; the flush completes after the data it covers', async () => {
    const cq = H.createCq(f.a);
    const cap = newQpCap();
    Object.assign(cap, { max_send_wr: 16, max_recv_wr: 4, max_send_sge: 2, max_recv_sge: 1, max_inline_data: 0 });
    const qp = ibv_create_qp_ex(f.a.ctx, {
      send_cq: cq,
      recv_cq: cq,
      cap,
      qp_type: IBV_QPT_RC,
      sq_sig_all: 0,
      comp_mask: IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
      pd: f.a.pd,
      send_ops_flags: IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_ATOMIC_WRITE | IBV_QP_EX_WITH_FLUSH,
    });
    f.a.cleanup.push(() => void ibv_destroy_qp(qp));
    const ep: H.Ep = { dev: f.a, qp, type: IBV_QPT_RC, scq: cq, rcq: cq, initCap: cap };
    const peer = H.createQp(f.b, IBV_QPT_RC);
    H.connect(ep, peer);
    const src = H.region(f.a, 4096, H.ALL_ACCESS, { fill: (i) => i * 5 });
    const dst = H.region(f.b, 4096, FLUSHABLE);
    const q = ibv_qp_to_qp_ex(qp);
    ibv_wr_start(q);
    q.wr_flags = IBV_SEND_SIGNALED;
    q.wr_id = 1n;
    ibv_wr_rdma_write(q, dst.rkey, dst.at(0));
    ibv_wr_set_sge(q, src.lkey, src.at(0), 3000);
    q.wr_id = 2n;
    ibv_wr_atomic_write(q, dst.rkey, dst.at(3000), Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8));
    q.wr_id = 3n;
    ibv_wr_flush(q, dst.rkey, dst.at(0), 3008, IBV_FLUSH_GLOBAL | IBV_FLUSH_PERSISTENT, IBV_FLUSH_RANGE);
    q.wr_id = 4n;
    ibv_wr_flush(q, dst.rkey, 0n, 0, IBV_FLUSH_PERSISTENT, IBV_FLUSH_MR);
    expect(ibv_wr_complete(q)).toBe(0);
    const ws = await H.pollN(cq, 4, 'the batch');
    expect(ws.map((w) => [Number(w.wr_id), w.status, w.opcode])).toEqual([
      [1, 0, 1],
      [2, 0, IBV_WC_ATOMIC_WRITE],
      [3, 0, IBV_WC_FLUSH],
      [4, 0, IBV_WC_FLUSH],
    ]);
    H.expectBytes(dst.data.subarray(0, 3000), src.data.subarray(0, 3000), 'the WRITE before the flush');
    expect(Array.from(dst.data.subarray(3000, 3008))).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    // Bad FLUSH arguments are refused at ibv_wr_complete: placement 0, selectivity 2.
    ibv_wr_start(q);
    ibv_wr_flush(q, dst.rkey, dst.at(0), 8, 0, IBV_FLUSH_RANGE);
    expect(ibv_wr_complete(q)).toBe(errno.EINVAL);
    ibv_wr_start(q);
    ibv_wr_flush(q, dst.rkey, dst.at(0), 8, IBV_FLUSH_GLOBAL, 2);
    expect(ibv_wr_complete(q)).toBe(errno.EINVAL);
    ibv_wr_start(q);
    ibv_wr_atomic_write(q, dst.rkey, dst.at(0), new Uint8Array(4));
    expect(ibv_wr_complete(q), 'atomic_wire of 4 bytes').toBe(errno.EINVAL);
  });

  it('FLUSH without the MR access it asks for, or outside the MR: REM_ACCESS_ERR', async () => {
    const onlyGlobal = H.region(f.b, 256, H.ALL_ACCESS | IBV_ACCESS_FLUSH_GLOBAL);
    for (const [what, wr] of [
      ['persistence from an MR with FLUSH_GLOBAL only', flushWr(1n, onlyGlobal.at(0), onlyGlobal.rkey, 64, IBV_FLUSH_PERSISTENT)],
      ['a range past the MR', flushWr(2n, onlyGlobal.at(200), onlyGlobal.rkey, 100)],
      ['a bad rkey', flushWr(3n, onlyGlobal.at(0), onlyGlobal.rkey ^ 0x80, 8)],
    ] as const) {
      const p = H.makePair(f, IBV_QPT_RC);
      expect(ibv_post_send(p.a.qp, wr, {})).toBe(0);
      expect((await H.poll1(p.a.scq, what)).status, what).toBe(IBV_WC_REM_ACCESS_ERR);
    }
    const p = H.makePair(f, IBV_QPT_RC);
    expect(ibv_post_send(p.a.qp, flushWr(4n, onlyGlobal.at(0), onlyGlobal.rkey, 0, IBV_FLUSH_GLOBAL, IBV_FLUSH_MR), {})).toBe(0);
    expect((await H.poll1(p.a.scq, 'a whole-MR global flush')).status).toBe(IBV_WC_SUCCESS);
  });

  it('ATOMIC_WRITE to a QP without REMOTE_WRITE is REM_INV_REQ_ERR; to an MR without it REM_ACCESS_ERR', async () => {
    const src = H.region(f.a, 64);
    const ro = H.region(f.b, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
    const rw = H.region(f.b, 64);
    const noWrite = H.makePair(f, IBV_QPT_RC, { access: IBV_ACCESS_REMOTE_READ });
    H.postSend(noWrite.a, H.sendWr(IBV_WR_ATOMIC_WRITE, { sge: [src.sge(0, 8)], remote: { addr: rw.at(0), rkey: rw.rkey } }));
    expect((await H.poll1(noWrite.a.scq, 'QP without REMOTE_WRITE')).status).toBe(IBV_WC_REM_INV_REQ_ERR);
    const p = H.makePair(f, IBV_QPT_RC);
    H.postSend(p.a, H.sendWr(IBV_WR_ATOMIC_WRITE, { sge: [src.sge(0, 8)], remote: { addr: ro.at(0), rkey: ro.rkey } }));
    expect((await H.poll1(p.a.scq, 'MR without REMOTE_WRITE')).status).toBe(IBV_WC_REM_ACCESS_ERR);
    expect(IBV_ACCESS_REMOTE_WRITE).toBeGreaterThan(0);
  });
});
