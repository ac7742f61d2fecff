/**
 * The memory verbs beyond ibv_reg_mr, end to end (the intent of rdma-core's
 * tests/test_mr.py): an MR registered at an iova that is not its address,
 * used locally and remotely by iova; ibv_rereg_mr changing access,
 * translation and PD, each proven by the traffic that then succeeds or
 * fails with the WC status rxe gives; the error returns.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IBV_ACCESS_LOCAL_WRITE,
  IBV_ACCESS_REMOTE_READ,
  IBV_ACCESS_REMOTE_WRITE,
  IBV_QPT_RC,
  IBV_REREG_MR_CHANGE_ACCESS,
  IBV_REREG_MR_CHANGE_PD,
  IBV_REREG_MR_CHANGE_TRANSLATION,
  IBV_REREG_MR_ERR_CMD,
  IBV_REREG_MR_ERR_INPUT,
  IBV_WC_REM_ACCESS_ERR,
  IBV_WC_SUCCESS,
  errno,
  ibv_alloc_null_mr,
  ibv_alloc_pd,
  ibv_dealloc_pd,
  ibv_dereg_mr,
  ibv_reg_mr_iova,
  ibv_reg_mr_iova2,
  ibv_rereg_mr,
  rnic_alloc_buf,
  rnic_errno,
} from '../../src/driver/verbs/index.js';
import * as H from './harness.js';

describe('memory registration beyond ibv_reg_mr', () => {
  let f: H.Fabric;
  beforeAll(async () => {
    f = await H.openFabric(H.twoDeviceConfig(1));
  });
  afterAll(async () => {
    await f?.close();
  });

  it('ibv_reg_mr_iova: local SGEs and remote RETHs name the bytes by iova; beyond it is an access error', async () => {
    const p = H.makePair(f, IBV_QPT_RC);
    const src = H.region(f.a, 256, H.ALL_ACCESS, { fill: (i) => i + 1 });
    const buf = rnic_alloc_buf(f.b.ctx, 1024);
    const IOVA = 0x7000_0000_0000n;
    const mr = ibv_reg_mr_iova(f.b.pd, buf, IOVA, H.ALL_ACCESS);
    f.b.cleanup.push(() => void ibv_dereg_mr(mr));
    expect(mr.length).toBe(1024);
    H.postSend(p.a, H.wrWrite({ wrId: 1n, sge: [src.sge(0, 200)], remote: { addr: IOVA + 100n, rkey: mr.rkey } }));
    expect((await H.poll1(p.a.scq, 'WRITE by iova')).status).toBe(IBV_WC_SUCCESS);
    H.expectBytes(buf.subarray(100, 300), src.data.subarray(0, 200), 'bytes at iova + 100');
    expect(buf.subarray(0, 100).every((x) => x === 0) && buf.subarray(300).every((x) => x === 0)).toBe(true);
    // The buffer's own address is not in the MR's iova space.
    H.postSend(p.a, H.wrWrite({ wrId: 2n, sge: [src.sge(0, 8)], remote: { addr: mr.addr, rkey: mr.rkey } }));
    expect((await H.poll1(p.a.scq, 'WRITE by host address')).status).toBe(IBV_WC_REM_ACCESS_ERR);
    // A local SGE by iova (ibv_reg_mr_iova2 on the requester side): the READ lands at iova + 16.
    const q = H.makePair(f, IBV_QPT_RC);
    const lbuf = rnic_alloc_buf(f.a.ctx, 512);
    const lmr = ibv_reg_mr_iova2(f.a.pd, lbuf, 0x1000n, H.ALL_ACCESS);
    f.a.cleanup.push(() => void ibv_dereg_mr(lmr));
    H.postSend(q.a, H.wrRead({ wrId: 3n, sge: [{ addr: 0x1000n + 16n, length: 200, lkey: lmr.lkey }], remote: { addr: IOVA + 100n, rkey: mr.rkey } }));
    expect((await H.poll1(q.a.scq, 'READ into iova')).status).toBe(IBV_WC_SUCCESS);
    H.expectBytes(lbuf.subarray(16, 216), src.data.subarray(0, 200), 'READ into the iova MR');
    expect(() => ibv_reg_mr_iova(f.a.pd, lbuf, -1n, 1)).toThrow(expect.objectContaining({ code: 'EINVAL' }));
    expect(() => ibv_reg_mr_iova(f.a.pd, lbuf, 2n ** 60n, 1), 'iova + length beyond 2^53').toThrow(expect.objectContaining({ code: 'EINVAL' }));
  });

  it('ibv_rereg_mr: access, translation and PD change in place with the same keys; traffic follows', async () => {
    const p = H.makePair(f, IBV_QPT_RC);
    const src = H.region(f.a, 256, H.ALL_ACCESS, { fill: (i) => 255 - i });
    const dst = H.region(f.b, 256);
    const write = async (addr: bigint, id: bigint) => {
      H.postSend(p.a, H.wrWrite({ wrId: id, sge: [src.sge(0, 64)], remote: { addr, rkey: dst.rkey } }));
      return (await H.poll1(p.a.scq, `WRITE ${id}`)).status;
    };
    const keys = [dst.mr.lkey, dst.mr.rkey];
    // Access: read-only, then a WRITE is refused; back to writable, it lands.
    expect(ibv_rereg_mr(dst.mr, IBV_REREG_MR_CHANGE_ACCESS, null, null, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ)).toBe(0);
    expect(await write(dst.addr, 1n)).toBe(IBV_WC_REM_ACCESS_ERR);
    // The QP went to ERR with the access error: a fresh pair for the rest.
    const p2 = H.makePair(f, IBV_QPT_RC);
    const write2 = async (addr: bigint, id: bigint) => {
      H.postSend(p2.a, H.wrWrite({ wrId: id, sge: [src.sge(0, 64)], remote: { addr, rkey: dst.rkey } }));
      return (await H.poll1(p2.a.scq, `WRITE ${id}`)).status;
    };
    expect(ibv_rereg_mr(dst.mr, IBV_REREG_MR_CHANGE_ACCESS, null, null, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)).toBe(0);
    expect(await write2(dst.addr, 2n)).toBe(IBV_WC_SUCCESS);
    H.expectBytes(dst.data.subarray(0, 64), src.data.subarray(0, 64), 'after the access change');
    // Translation: a new buffer; the same rkey now reaches it, at its address.
    const nbuf = rnic_alloc_buf(f.b.ctx, 128);
    expect(ibv_rereg_mr(dst.mr, IBV_REREG_MR_CHANGE_TRANSLATION, null, nbuf, 0)).toBe(0);
    expect([dst.mr.lkey, dst.mr.rkey]).toEqual(keys);
    expect(dst.mr.length).toBe(128);
    expect(await write2(dst.mr.addr + 8n, 3n)).toBe(IBV_WC_SUCCESS);
    H.expectBytes(nbuf.subarray(8, 72), src.data.subarray(0, 64), 'the new translation');
    // PD: the MR moves to another PD; the responder QP's PD no longer matches.
    const pd2 = ibv_alloc_pd(f.b.ctx);
    expect(ibv_rereg_mr(dst.mr, IBV_REREG_MR_CHANGE_PD, pd2, null, 0)).toBe(0);
    expect(dst.mr.pd).toBe(pd2);
    expect(ibv_dealloc_pd(pd2), 'the PD holds the MR').toBe(errno.EBUSY);
    expect(await write2(dst.mr.addr, 4n)).toBe(IBV_WC_REM_ACCESS_ERR);
    expect(ibv_rereg_mr(dst.mr, IBV_REREG_MR_CHANGE_PD, f.b.pd, null, 0)).toBe(0);
    expect(ibv_dealloc_pd(pd2)).toBe(0);
  });

  it('ibv_rereg_mr errors: IBV_REREG_MR_ERR_INPUT / _CMD with errno, the MR unchanged; ibv_alloc_null_mr is EOPNOTSUPP', () => {
    const r = H.region(f.a, 64);
    const before = { addr: r.mr.addr, length: r.mr.length, pd: r.mr.pd };
    expect(ibv_rereg_mr(r.mr, 0, null, null, 0), 'no flag').toBe(IBV_REREG_MR_ERR_INPUT);
    expect(rnic_errno()).toBe(errno.EINVAL);
    expect(ibv_rereg_mr(r.mr, 1 << 3, null, null, 0), 'unknown flag').toBe(IBV_REREG_MR_ERR_INPUT);
    expect(ibv_rereg_mr(r.mr, IBV_REREG_MR_CHANGE_PD, null, null, 0), 'no PD').toBe(IBV_REREG_MR_ERR_INPUT);
    expect(ibv_rereg_mr(r.mr, IBV_REREG_MR_CHANGE_PD, f.a.pd, null, IBV_ACCESS_LOCAL_WRITE), 'access flags without CHANGE_ACCESS (libibverbs)').toBe(
      IBV_REREG_MR_ERR_INPUT,
    );
    expect(ibv_rereg_mr(r.mr, IBV_REREG_MR_CHANGE_PD, f.b.pd, null, 0), 'a PD of another context').toBe(IBV_REREG_MR_ERR_INPUT);
    expect(ibv_rereg_mr(r.mr, IBV_REREG_MR_CHANGE_TRANSLATION, null, new Uint8Array(8), 0), 'not device memory').toBe(IBV_REREG_MR_ERR_INPUT);
    expect(ibv_rereg_mr(null as never, IBV_REREG_MR_CHANGE_ACCESS, null, null, 0)).toBe(IBV_REREG_MR_ERR_INPUT);
    // The device refuses REMOTE_WRITE without LOCAL_WRITE, as REG_MR does.
    expect(ibv_rereg_mr(r.mr, IBV_REREG_MR_CHANGE_ACCESS, null, null, IBV_ACCESS_REMOTE_WRITE), 'REMOTE_WRITE without LOCAL_WRITE').toBe(IBV_REREG_MR_ERR_CMD);
    expect(rnic_errno()).toBe(errno.EINVAL);
    expect({ addr: r.mr.addr, length: r.mr.length, pd: r.mr.pd }).toEqual(before);
    r.dereg();
    expect(ibv_rereg_mr(r.mr, IBV_REREG_MR_CHANGE_ACCESS, null, null, 1), 'a deregistered MR').toBe(IBV_REREG_MR_ERR_INPUT);
    expect(() => ibv_alloc_null_mr(f.a.pd)).toThrow(expect.objectContaining({ code: 'EOPNOTSUPP' }));
  });
});
