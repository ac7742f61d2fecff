/**
 * XRC SRQs (ibv_create_srq_ex with IBV_SRQT_XRC, ibv_get_srq_num), porting
 * the SRQ part of rdma-core's tests/test_xrc.py: an XRC SRQ lives in an XRC
 * domain with the CQ its receives complete on; its number is what a sender
 * names in the XRCETH. Checked: the attributes libibverbs requires (PD,
 * XRCD and CQ: EINVAL without one), objects of another context (EINVAL),
 * the references the device keeps (the last close of the domain and the
 * destroy of the CQ are EBUSY while the SRQ lives), receives posted to it,
 * and a context close that cleans everything up.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IBV_SRQ_INIT_ATTR_CQ,
  IBV_SRQ_INIT_ATTR_PD,
  IBV_SRQ_INIT_ATTR_TYPE,
  IBV_SRQ_INIT_ATTR_XRCD,
  IBV_SRQT_XRC,
  IBV_XRCD_INIT_ATTR_FD,
  IBV_XRCD_INIT_ATTR_OFLAGS,
  errno,
  ibv_close_xrcd,
  ibv_create_cq,
  ibv_create_srq,
  ibv_create_srq_ex,
  ibv_destroy_cq,
  ibv_destroy_srq,
  ibv_get_srq_num,
  ibv_open_xrcd,
  ibv_post_srq_recv,
  ibv_query_srq,
  newSrqAttr,
} from '../../src/driver/verbs/index.js';
import type { ibv_cq, ibv_pd, ibv_srq_init_attr_ex, ibv_xrcd } from '../../src/driver/verbs/index.js';
import * as H from './harness.js';

const XRC_MASK = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;

describe('XRC SRQs', () => {
  let f: H.Fabric;
  beforeAll(async () => {
    f = await H.openFabric(H.twoDeviceConfig(0));
  });
  afterAll(async () => {
    await f?.close();
  });

  const openXrcd = (d: H.Dev): ibv_xrcd => ibv_open_xrcd(d.ctx, { comp_mask: IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS, fd: -1, oflags: 0 });
  const xattr = (pd: ibv_pd, xrcd: ibv_xrcd | null, cq: ibv_cq | null, comp_mask = XRC_MASK): ibv_srq_init_attr_ex => ({
    comp_mask,
    srq_type: IBV_SRQT_XRC,
    pd,
    xrcd,
    cq,
    srq_context: null,
    attr: { max_wr: 8, max_sge: 2, srq_limit: 0 },
  });

  it('creates XRC SRQs with numbers of their own; ibv_get_srq_num gives them, a basic SRQ has none', () => {
    const xrcd = openXrcd(f.b);
    const cq = ibv_create_cq(f.b.ctx, 16, null, null, 0);
    const s1 = ibv_create_srq_ex(f.b.ctx, xattr(f.b.pd, xrcd, cq));
    const s2 = ibv_create_srq_ex(f.b.ctx, xattr(f.b.pd, xrcd, cq));
    const basic = ibv_create_srq(f.b.pd, { srq_context: null, attr: { max_wr: 4, max_sge: 1, srq_limit: 0 } });
    const n1 = { srq_num: -1 };
    const n2 = { srq_num: -1 };
    expect(ibv_get_srq_num(s1, n1)).toBe(0);
    expect(ibv_get_srq_num(s2, n2)).toBe(0);
    expect(n1.srq_num).toBe(s1.handle);
    expect(n2.srq_num).not.toBe(n1.srq_num);
    expect(n1.srq_num).toBeGreaterThan(0);
    expect(ibv_get_srq_num(basic, { srq_num: 0 })).toBe(errno.EOPNOTSUPP);
    expect(ibv_get_srq_num(s1, null as never)).toBe(errno.EINVAL);
    // The attributes the driver rounded up, and receives posted to it.
    const q = newSrqAttr();
    expect(ibv_query_srq(s1, q)).toBe(0);
    expect(q.max_wr).toBeGreaterThanOrEqual(8);
    const d = H.region(f.b, 64);
    expect(ibv_post_srq_recv(s1, H.recvWr(5n, [d.sge(0, 64)]))).toBe(0);
    for (const s of [s1, s2, basic]) expect(ibv_destroy_srq(s)).toBe(0);
    expect(ibv_get_srq_num(s1, n1)).toBe(errno.EINVAL);
    expect(ibv_destroy_cq(cq)).toBe(0);
    expect(ibv_close_xrcd(xrcd)).toBe(0);
  });

  it('what libibverbs requires: PD, XRCD and CQ (EINVAL without one); objects of another context or closed ones are EINVAL', () => {
    const xrcd = openXrcd(f.b);
    const cq = ibv_create_cq(f.b.ctx, 16, null, null, 0);
    const otherCq = ibv_create_cq(f.a.ctx, 16, null, null, 0);
    const otherXrcd = openXrcd(f.a);
    const code = (a: ibv_srq_init_attr_ex) => {
      try {
        ibv_destroy_srq(ibv_create_srq_ex(f.b.ctx, a));
        return 'ok';
      } catch (e) {
        return (e as { code?: string }).code;
      }
    };
    expect(code(xattr(f.b.pd, xrcd, cq, XRC_MASK & ~IBV_SRQ_INIT_ATTR_XRCD)), 'no XRCD bit').toBe('EINVAL');
    expect(code(xattr(f.b.pd, xrcd, cq, XRC_MASK & ~IBV_SRQ_INIT_ATTR_CQ)), 'no CQ bit').toBe('EINVAL');
    expect(code(xattr(f.b.pd, xrcd, cq, XRC_MASK & ~IBV_SRQ_INIT_ATTR_PD)), 'no PD bit').toBe('EINVAL');
    expect(code(xattr(f.b.pd, null, cq)), 'xrcd null').toBe('EINVAL');
    expect(code(xattr(f.b.pd, xrcd, null)), 'cq null').toBe('EINVAL');
    expect(code(xattr(f.b.pd, otherXrcd, cq)), 'an xrcd of another context').toBe('EINVAL');
    expect(code(xattr(f.b.pd, xrcd, otherCq)), 'a cq of another context').toBe('EINVAL');
    expect(code(xattr(f.b.pd, xrcd, cq)), 'all there').toBe('ok');
    const gone = openXrcd(f.b);
    expect(ibv_close_xrcd(gone)).toBe(0);
    expect(code(xattr(f.b.pd, gone, cq)), 'a closed xrcd').toBe('EINVAL');
    expect(ibv_destroy_cq(otherCq)).toBe(0);
    expect(ibv_close_xrcd(otherXrcd)).toBe(0);
    expect(ibv_destroy_cq(cq)).toBe(0);
    expect(ibv_close_xrcd(xrcd)).toBe(0);
  });

  it('the SRQ holds its domain and CQ: closing the domain and destroying the CQ are EBUSY until it is destroyed', () => {
    const xrcd = openXrcd(f.b);
    const cq = ibv_create_cq(f.b.ctx, 16, null, null, 0);
    const srq = ibv_create_srq_ex(f.b.ctx, xattr(f.b.pd, xrcd, cq));
    expect(ibv_close_xrcd(xrcd)).toBe(errno.EBUSY);
    expect(ibv_destroy_cq(cq)).toBe(errno.EBUSY);
    expect(ibv_destroy_srq(srq)).toBe(0);
    expect(ibv_destroy_cq(cq)).toBe(0);
    expect(ibv_close_xrcd(xrcd)).toBe(0);
    expect(ibv_close_xrcd(xrcd)).toBe(errno.EINVAL);
  });

  it('a context closed with XRC SRQs, their CQ and domain still open cleans up, and the device has room again', () => {
    const ctxDev = H.openDev('rnic1');
    const xrcd = openXrcd(ctxDev);
    const cq = ibv_create_cq(ctxDev.ctx, 16, null, null, 0);
    for (let i = 0; i < 3; i++) ibv_create_srq_ex(ctxDev.ctx, xattr(ctxDev.pd, xrcd, cq));
    ctxDev.cleanup.length = 0;
    H.closeDev(ctxDev);
    // The device's SRQs, CQ and domain are free: the same again on the other context works.
    const x2 = openXrcd(f.b);
    const cq2 = ibv_create_cq(f.b.ctx, 16, null, null, 0);
    const s = ibv_create_srq_ex(f.b.ctx, xattr(f.b.pd, x2, cq2));
    expect(ibv_destroy_srq(s)).toBe(0);
    expect(ibv_destroy_cq(cq2)).toBe(0);
    expect(ibv_close_xrcd(x2)).toBe(0);
  });
});

describe('XRC domains, XRC SRQs and CQs: seeded random misuse against a reference model', () => {
  const SEED = Number(process.env.RNIC_XRC_FUZZ_SEED ?? 0x5eed13);
  const CASES = Number(process.env.RNIC_XRC_FUZZ_CASES ?? 1500);
  let f: H.Fabric;
  beforeAll(async () => {
    f = await H.openFabric(H.twoDeviceConfig(0));
  });
  afterAll(async () => {
    await f?.close();
  });

  it(`${CASES} random opens, closes, SRQ creates / destroys and CQ destroys: every result as the reference says`, () => {
    let s = SEED >>> 0;
    const rnd = (n: number) => {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      return (s >>> 8) % n;
    };
    interface X {
      x: ibv_xrcd;
      open: boolean;
      srqs: number;
    }
    interface C {
      cq: ibv_cq;
      live: boolean;
      srqs: number;
    }
    interface S {
      srq: ReturnType<typeof ibv_create_srq_ex>;
      x: X;
      c: C;
      live: boolean;
    }
    const xs: X[] = [];
    const cs: C[] = [];
    const ss: S[] = [];
    const ctx = f.b.ctx;
    const pick = <T>(a: T[]): T | undefined => (a.length ? a[rnd(a.length)] : undefined);
    const errOf = (fn: () => unknown): string => {
      try {
        fn();
        return 'ok';
      } catch (e) {
        return (e as { code?: string }).code ?? String(e);
      }
    };
    const name = (n: number) => (n === 0 ? 'ok' : Object.entries(errno).find(([, v]) => v === n)![0]);
    try {
      for (let i = 0; i < CASES; i++) {
        const what = `seed 0x${SEED.toString(16)} case ${i}`;
        const op = rnd(7);
        if (op === 0) {
          xs.push({ x: ibv_open_xrcd(ctx, { comp_mask: IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS, fd: -1, oflags: 0 }), open: true, srqs: 0 });
        } else if (op === 1) {
          cs.push({ cq: ibv_create_cq(ctx, 8, null, null, 0), live: true, srqs: 0 });
        } else if (op === 2) {
          const x = pick(xs);
          const c = pick(cs);
          if (!x || !c) continue;
          const want = x.open && c.live ? 'ok' : 'EINVAL';
          let srq: S['srq'] | null = null;
          const got = errOf(() => (srq = ibv_create_srq_ex(ctx, xattrOf(f.b.pd, x.x, c.cq))));
          expect(got, `${what}: create SRQ (xrcd open ${x.open}, cq live ${c.live})`).toBe(want);
          if (srq) {
            ss.push({ srq, x, c, live: true });
            x.srqs++;
            c.srqs++;
          }
        } else if (op === 3) {
          const e = pick(ss);
          if (!e) continue;
          expect(name(ibv_destroy_srq(e.srq)), `${what}: destroy SRQ`).toBe(e.live ? 'ok' : 'EINVAL');
          if (e.live) {
            e.live = false;
            e.x.srqs--;
            e.c.srqs--;
            const n = { srq_num: 0 };
            expect(ibv_get_srq_num(e.srq, n), `${what}: srq_num of a destroyed SRQ`).toBe(errno.EINVAL);
          }
        } else if (op === 4) {
          const x = pick(xs);
          if (!x) continue;
          const want = !x.open ? 'EINVAL' : x.srqs > 0 ? 'EBUSY' : 'ok';
          expect(name(ibv_close_xrcd(x.x)), `${what}: close xrcd (${x.srqs} SRQs)`).toBe(want);
          if (want === 'ok') x.open = false;
        } else if (op === 5) {
          const c = pick(cs);
          if (!c) continue;
          const want = !c.live ? 'EINVAL' : c.srqs > 0 ? 'EBUSY' : 'ok';
          expect(name(ibv_destroy_cq(c.cq)), `${what}: destroy CQ (${c.srqs} SRQs)`).toBe(want);
          if (want === 'ok') c.live = false;
        } else {
          const e = pick(ss.filter((q) => q.live));
          if (!e) continue;
          const n = { srq_num: 0 };
          expect(ibv_get_srq_num(e.srq, n), `${what}: srq_num`).toBe(0);
          expect(n.srq_num, `${what}: srq_num is the SRQ's`).toBe(e.srq.handle);
        }
      }
      const nums = ss.filter((q) => q.live).map((q) => q.srq.handle);
      expect(new Set(nums).size, 'live XRC SRQs have distinct numbers').toBe(nums.length);
    } finally {
      for (const e of ss) if (e.live) ibv_destroy_srq(e.srq);
      for (const c of cs) if (c.live) ibv_destroy_cq(c.cq);
      for (const x of xs) if (x.open) ibv_close_xrcd(x.x);
    }
  });
});

function xattrOf(pd: ibv_pd, xrcd: ibv_xrcd, cq: ibv_cq): ibv_srq_init_attr_ex {
  return { comp_mask: XRC_MASK, srq_type: IBV_SRQT_XRC, pd, xrcd, cq, srq_context: null, attr: { max_wr: 4, max_sge: 1, srq_limit: 0 } };
}
