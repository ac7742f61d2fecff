/**
 * The small verbs, end to end: a UD reply through ibv_create_ah_from_wc
 * (the address from the received GRH bytes), ibv_init_ah_from_wc's fields,
 * the fork verbs, and every verb of what the model does not model
 * answering EOPNOTSUPP (EINVAL for a non-object) as rdma-core's dummy ops
 * do, so a program can probe.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IBV_FORK_UNNEEDED,
  IBV_QPT_RC,
  IBV_QPT_UD,
  IBV_SRQ_INIT_ATTR_PD,
  IBV_SRQ_INIT_ATTR_TYPE,
  IBV_SRQT_BASIC,
  IBV_SRQT_XRC,
  ibv_create_srq_ex,
  ibv_destroy_srq,
  ibv_get_srq_num,
  ibv_post_srq_recv,
  IBV_WC_GRH,
  IBV_WC_SUCCESS,
  errno,
  ibv_alloc_dm,
  ibv_alloc_parent_domain,
  ibv_attach_counters_point_flow,
  ibv_create_ah_from_wc,
  ibv_create_counters,
  ibv_create_flow,
  ibv_create_rwq_ind_table,
  ibv_create_wq,
  ibv_destroy_ah,
  ibv_destroy_counters,
  ibv_destroy_flow,
  ibv_destroy_rwq_ind_table,
  ibv_destroy_wq,
  ibv_fork_init,
  ibv_free_dm,
  ibv_import_device,
  ibv_import_dm,
  ibv_import_mr,
  ibv_import_pd,
  ibv_init_ah_from_wc,
  ibv_is_fork_initialized,
  ibv_memcpy_from_dm,
  ibv_memcpy_to_dm,
  ibv_modify_wq,
  ibv_query_ece,
  ibv_read_counters,
  ibv_reg_dm_mr,
  ibv_set_ece,
  newAhAttr,
} from '../../src/driver/verbs/index.js';
import * as H from './harness.js';

describe('ibv_create_ah_from_wc, fork, and the verbs of what is not modelled', () => {
  let f: H.Fabric;
  beforeAll(async () => {
    f = await H.openFabric(H.twoDeviceConfig(1));
  });
  afterAll(async () => {
    await f?.close();
  });

  it('a UD server answers the sender with the AH built from the completion and its GRH bytes', async () => {
    const p = H.makePair(f, IBV_QPT_UD);
    const ah = H.createAh(f.a, f.b);
    const sa = H.region(f.a, 1024, H.ALL_ACCESS, { fill: (i) => i * 3 });
    const rb = H.region(f.b, 1024);
    const ra = H.region(f.a, 1024);
    H.postRecv(p.b, H.recvWr(1n, [rb.sge(0, 40 + 256)]));
    H.postRecv(p.a, H.recvWr(2n, [ra.sge(0, 40 + 256)]));
    H.postSend(p.a, H.wrSend({ wrId: 10n, sge: [sa.sge(0, 100)], ud: { ah, qpn: p.b.qp.qp_num, qkey: H.QKEY } }));
    const w = await H.poll1(p.b.rcq, 'the request');
    expect(w.status).toBe(IBV_WC_SUCCESS);
    expect(w.wc_flags & IBV_WC_GRH).toBe(IBV_WC_GRH);
    const attr = newAhAttr();
    expect(ibv_init_ah_from_wc(f.b.ctx, H.PORT, w, rb.data.subarray(0, 40), attr)).toBe(0);
    expect(attr.is_global).toBe(1);
    expect(Array.from(attr.grh.dgid.raw), 'the reply goes to the sender GID').toEqual(Array.from(f.a.gid.raw));
    expect(attr.grh.sgid_index, 'from the GID the request was sent to (RoCE v2)').toBe(H.GID_V2_IPV4);
    expect(attr.grh.hop_limit).toBe(0xff);
    expect(attr.port_num).toBe(H.PORT);
    const reply = ibv_create_ah_from_wc(f.b.pd, w, rb.data.subarray(0, 40), H.PORT);
    f.b.cleanup.push(() => void ibv_destroy_ah(reply));
    H.postSend(p.b, H.wrSend({ wrId: 11n, sge: [rb.sge(40, 100)], ud: { ah: reply, qpn: w.src_qp, qkey: H.QKEY } }));
    expect((await H.poll1(p.b.scq, 'the reply sent')).status).toBe(IBV_WC_SUCCESS);
    const r = await H.poll1(p.a.rcq, 'the reply');
    expect([r.status, r.byte_len, r.src_qp]).toEqual([IBV_WC_SUCCESS, 140, p.b.qp.qp_num]);
    H.expectBytes(ra.data.subarray(40, 140), sa.data.subarray(0, 100), 'the echoed payload');
    // Without IBV_WC_GRH there is no global route; a GRH to a GID this port lacks is EINVAL; short GRH bytes are EINVAL.
    const plain = newAhAttr();
    expect(ibv_init_ah_from_wc(f.b.ctx, H.PORT, { ...w, wc_flags: 0 }, rb.data.subarray(0, 40), plain)).toBe(0);
    expect(plain.is_global).toBe(0);
    const foreign = Uint8Array.from(rb.data.subarray(0, 40));
    foreign[39] ^= 0x55; // the IPv4 destination's last byte
    expect(ibv_init_ah_from_wc(f.b.ctx, H.PORT, w, foreign, newAhAttr())).toBe(errno.EINVAL);
    expect(ibv_init_ah_from_wc(f.b.ctx, H.PORT, w, rb.data.subarray(0, 20), newAhAttr())).toBe(errno.EINVAL);
    expect(() => ibv_create_ah_from_wc(f.b.pd, w, foreign, H.PORT)).toThrow(expect.objectContaining({ code: 'EINVAL' }));
  });

  it('ibv_create_srq_ex: a basic SRQ takes the receives of an RC QP; XRC without an xrcd EINVAL, a missing PD EINVAL', async () => {
    const srq = ibv_create_srq_ex(f.b.ctx, {
      comp_mask: IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD,
      srq_type: IBV_SRQT_BASIC,
      pd: f.b.pd,
      attr: { max_wr: 16, max_sge: 1, srq_limit: 0 },
    });
    f.b.cleanup.push(() => void ibv_destroy_srq(srq));
    const p = H.makePair(f, IBV_QPT_RC, { qpB: { srq } });
    const s = H.region(f.a, 64, H.ALL_ACCESS, { fill: (i) => i + 9 });
    const d = H.region(f.b, 64);
    expect(ibv_post_srq_recv(srq, H.recvWr(77n, [d.sge(0, 64)]))).toBe(0);
    H.postSend(p.a, H.wrSend({ wrId: 1n, sge: [s.sge(0, 32)] }));
    const w = await H.poll1(p.b.rcq, 'the receive through the SRQ');
    expect([w.status, Number(w.wr_id), w.byte_len]).toEqual([IBV_WC_SUCCESS, 77, 32]);
    H.expectBytes(d.data.subarray(0, 32), s.data.subarray(0, 32), 'the SRQ receive');
    expect(ibv_get_srq_num(srq, { srq_num: 0 }), 'libibverbs has an SRQ number only for XRC SRQs').toBe(errno.EOPNOTSUPP);
    expect(ibv_get_srq_num(null as never, { srq_num: 0 })).toBe(errno.EINVAL);
    const attr = { max_wr: 4, max_sge: 1, srq_limit: 0 };
    expect(
      () => ibv_create_srq_ex(f.b.ctx, { comp_mask: IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD, srq_type: IBV_SRQT_XRC, pd: f.b.pd, attr }),
      'an XRC SRQ without its xrcd and cq (test/e2e/xrc.test.ts has the XRC SRQs)',
    ).toThrow(expect.objectContaining({ code: 'EINVAL' }));
    expect(() => ibv_create_srq_ex(f.b.ctx, { comp_mask: 0, attr }), 'no PD').toThrow(expect.objectContaining({ code: 'EINVAL' }));
    expect(() => ibv_create_srq_ex(f.b.ctx, { comp_mask: IBV_SRQ_INIT_ATTR_PD, pd: f.a.pd, attr }), 'a PD of another context').toThrow(
      expect.objectContaining({ code: 'EINVAL' }),
    );
    expect(() => ibv_create_srq_ex(f.b.ctx, { comp_mask: 1 << 9, attr }), 'unknown comp_mask').toThrow(expect.objectContaining({ code: 'EINVAL' }));
  });

  it('fork: ibv_fork_init succeeds and fork protection is unneeded, as on a modern kernel', () => {
    expect(ibv_fork_init()).toBe(0);
    expect(ibv_is_fork_initialized()).toBe(IBV_FORK_UNNEEDED);
  });

  it('every verb of what is not modelled: EOPNOTSUPP for real objects, EINVAL for non-objects', () => {
    const { ctx, pd } = f.a;
    const qp = H.createQp(f.a, IBV_QPT_UD).qp;
    const ints: [string, (x: never) => number, unknown][] = [
      ['ibv_destroy_flow', ibv_destroy_flow as never, {}],
      ['ibv_modify_wq', (w: never) => ibv_modify_wq(w, {}), { context: ctx }],
      ['ibv_destroy_wq', ibv_destroy_wq as never, { context: ctx }],
      ['ibv_destroy_rwq_ind_table', ibv_destroy_rwq_ind_table as never, { context: ctx }],
      ['ibv_destroy_counters', ibv_destroy_counters as never, { context: ctx }],
      ['ibv_attach_counters_point_flow', (c: never) => ibv_attach_counters_point_flow(c, {}, {}), { context: ctx }],
      ['ibv_read_counters', (c: never) => ibv_read_counters(c, [], 0, 0), { context: ctx }],
      ['ibv_free_dm', ibv_free_dm as never, { context: ctx }],
      ['ibv_memcpy_to_dm', (d: never) => ibv_memcpy_to_dm(d, 0, null, 0), { context: ctx }],
      ['ibv_memcpy_from_dm', (d: never) => ibv_memcpy_from_dm(null, d, 0, 0), { context: ctx }],
      ['ibv_query_ece', (q: never) => ibv_query_ece(q, {}), qp],
      ['ibv_set_ece', (q: never) => ibv_set_ece(q, {}), qp],
    ];
    for (const [name, call, good] of ints) {
      expect(call(good as never), name).toBe(errno.EOPNOTSUPP);
      if (name !== 'ibv_destroy_flow') expect(call(null as never), `${name}(null)`).toBe(errno.EINVAL);
    }
    const ptrs: [string, (x: never) => unknown, unknown][] = [
      ['ibv_create_flow', (q: never) => ibv_create_flow(q, {}), qp],
      ['ibv_create_wq', (c: never) => ibv_create_wq(c, {}), ctx],
      ['ibv_create_rwq_ind_table', (c: never) => ibv_create_rwq_ind_table(c, {}), ctx],
      ['ibv_create_counters', (c: never) => ibv_create_counters(c, {}), ctx],
      ['ibv_alloc_parent_domain', (c: never) => ibv_alloc_parent_domain(c, {}), ctx],
      ['ibv_import_pd', (c: never) => ibv_import_pd(c, 1), ctx],
      ['ibv_import_mr', (p: never) => ibv_import_mr(p, 1), pd],
      ['ibv_import_dm', (c: never) => ibv_import_dm(c, 1), ctx],
      ['ibv_alloc_dm', (c: never) => ibv_alloc_dm(c, {}), ctx],
      ['ibv_reg_dm_mr', (p: never) => ibv_reg_dm_mr(p, {}, 0, 8, 0), pd],
    ];
    for (const [name, call, good] of ptrs) {
      expect(() => call(good as never), name).toThrow(expect.objectContaining({ code: 'EOPNOTSUPP' }));
      expect(() => call(5 as never), `${name}(5)`).toThrow(expect.objectContaining({ code: 'EINVAL' }));
    }
    expect(() => ibv_import_device(3)).toThrow(expect.objectContaining({ code: 'EOPNOTSUPP' }));
  });
});
