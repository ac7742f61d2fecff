/**
 * Tearing objects down while traffic flows on them, with the devices in
 * this thread (workers 0), on one worker and on two: what rdma-core's
 * verbs return, what completes, and that no byte lands outside a live MR.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errno } from '../../src/device/abi/constants.js';
import {
  IBV_QPT_RC,
  IBV_WC_REM_ACCESS_ERR,
  IBV_WC_RETRY_EXC_ERR,
  IBV_WC_SUCCESS,
  IBV_WC_WR_FLUSH_ERR,
  ibv_close_device,
  ibv_dealloc_pd,
  ibv_destroy_cq,
  ibv_destroy_qp,
  ibv_rereg_mr,
  IBV_REREG_MR_CHANGE_TRANSLATION,
  rnic_alloc_buf,
  rnic_free_buf,
} from '../../src/driver/verbs/index.js';
import * as H from './harness.js';

const MSG = 64 * 1024;
const N = 32;
const HANG_MS = 60_000;
/**
 * The WR a burst stalls at: a WRITE with immediate to a QP with no receive
 * posted, RNR NAKed for as long as the responder lives (rnr_retry 7), so
 * it and every WR behind it are still in flight when the test tears the
 * responder down, however much the devices send per pass.
 */
const STALL = 4;

/** The burst's i-th WRITE: plain, but with immediate (and so needing a receive) at STALL. */
function burstWr(i: number, src: H.Region, dst: H.Region) {
  return H.wrWrite({
    wrId: BigInt(i),
    sge: [src.sge(i * MSG, MSG)],
    remote: { addr: dst.at(i * MSG), rkey: dst.rkey },
    ...(i === STALL ? { imm: 0x57a11 } : {}),
  });
}

describe.each([0, 1, 2])('workers: %i', (workers) => {
  let f: H.Fabric;
  beforeAll(async () => {
    f = await H.openFabric(H.twoDeviceConfig(workers));
  });
  afterAll(async () => {
    await f?.close();
  });

  /** A fresh pair still carries a WRITE end to end: the device is not wedged. */
  async function stillWorks(what: string): Promise<void> {
    const { a } = H.makePair(f, IBV_QPT_RC);
    const src = H.region(f.a, 4096, H.ALL_ACCESS, { fill: (i) => i * 7 });
    const dst = H.region(f.b, 4096);
    H.postSend(a, H.wrWrite({ wrId: 1n, sge: [src.sge()], remote: { addr: dst.at(0), rkey: dst.rkey } }));
    H.expectWc(await H.poll1(a.scq, `${what}: WRITE after`, HANG_MS), { wr_id: 1n, status: IBV_WC_SUCCESS }, `${what}: WRITE after`);
    H.expectBytes(dst.data, src.data, `${what}: WRITE after`);
  }

  it('destroy the requester QP with WRITEs in flight: 0, its CQ then destroys, the responder is unharmed', async () => {
    const { a } = H.makePair(f, IBV_QPT_RC, { maxSendWr: N });
    const src = H.region(f.a, N * MSG, H.ALL_ACCESS, { fill: (i) => i });
    const dst = H.region(f.b, N * MSG);
    for (let i = 0; i < N; i++) H.postSend(a, H.wrWrite({ wrId: BigInt(i), sge: [src.sge(i * MSG, MSG)], remote: { addr: dst.at(i * MSG), rkey: dst.rkey } }));
    await H.poll1(a.scq, 'first WRITE', HANG_MS);
    expect(ibv_destroy_cq(a.scq), 'destroy a CQ a QP still uses').toBe(errno.EBUSY);
    expect(ibv_dealloc_pd(f.a.pd), 'dealloc a PD with QPs and MRs').toBe(errno.EBUSY);
    expect(ibv_destroy_qp(a.qp)).toBe(0);
    expect(ibv_destroy_qp(a.qp)).toBe(errno.EINVAL);
    dst.checkGuards();
    await stillWorks('after destroy_qp');
  });

  it('destroy the responder QP with WRITEs in flight: the requester ends in RETRY_EXC_ERR, the rest flushed', async () => {
    const { a, b } = H.makePair(f, IBV_QPT_RC, { maxSendWr: N, timeout: 14, retryCnt: 3, rnrRetry: 7 });
    const src = H.region(f.a, N * MSG, H.ALL_ACCESS, { fill: (i) => i });
    const dst = H.region(f.b, N * MSG);
    for (let i = 0; i < N; i++) H.postSend(a, burstWr(i, src, dst));
    const done = await H.pollN(a.scq, STALL, 'the WRITEs before the stall', HANG_MS);
    for (const w of done) expect(w.status, H.wcText(w)).toBe(IBV_WC_SUCCESS);
    expect(H.pollNow(a.scq), 'nothing completes past the RNR-NAKed WRITE').toEqual([]);
    expect(ibv_destroy_qp(b.qp)).toBe(0);
    const snap = Uint8Array.from(dst.data);
    const wcs = await H.pollN(a.scq, N - STALL, 'the rest', HANG_MS);
    expect(wcs[0]!.wr_id, H.wcText(wcs[0]!)).toBe(BigInt(STALL));
    expect(wcs[0]!.status, H.wcText(wcs[0]!)).toBe(IBV_WC_RETRY_EXC_ERR);
    for (const w of wcs.slice(1)) expect(w.status, H.wcText(w)).toBe(IBV_WC_WR_FLUSH_ERR);
    H.expectBytes(dst.data, snap, 'nothing written after the responder QP was destroyed');
    dst.checkGuards();
    await stillWorks('after the responder went');
  });

  it('dereg the MR a peer is WRITEing into, mid-message: 0, then REM_ACCESS_ERR, and no byte lands after the dereg', async () => {
    // 1 MiB messages: 1,024 packets each, so the dereg falls inside one.
    const big = 1 << 20;
    const n = 6;
    const { a } = H.makePair(f, IBV_QPT_RC, { maxSendWr: n + 1 });
    const src = H.region(f.a, n * big, H.ALL_ACCESS, { fill: (i) => i + 1 });
    const dst = H.region(f.b, n * big);
    for (let i = 0; i < n; i++) H.postSend(a, H.wrWrite({ wrId: BigInt(i), sge: [src.sge(i * big, big)], remote: { addr: dst.at(i * big), rkey: dst.rkey } }));
    await H.poll1(a.scq, 'first WRITE', HANG_MS);
    dst.dereg();
    const snap = Uint8Array.from(dst.full);
    // One more after the dereg, which cannot succeed (in case the device was faster than the dereg).
    H.postSend(a, H.wrWrite({ wrId: BigInt(n), sge: [src.sge(0, big)], remote: { addr: dst.at(0), rkey: dst.rkey } }));
    const wcs = await H.pollN(a.scq, n, 'the rest', HANG_MS);
    const firstBad = wcs.findIndex((w) => w.status !== IBV_WC_SUCCESS);
    expect(firstBad, 'a WRITE after the dereg fails').toBeGreaterThanOrEqual(0);
    expect(wcs[firstBad]!.status, H.wcText(wcs[firstBad]!)).toBe(IBV_WC_REM_ACCESS_ERR);
    for (const w of wcs.slice(firstBad + 1)) expect(w.status, H.wcText(w)).toBe(IBV_WC_WR_FLUSH_ERR);
    H.expectBytes(dst.full, snap, 'the deregistered buffer after the dereg');
    await stillWorks('after dereg');
  });

  it('dereg the MR a peer is READing from, mid-response: what the buffer holds after the dereg never goes out', async () => {
    const big = 1 << 20;
    const n = 6;
    const { a } = H.makePair(f, IBV_QPT_RC, { maxSendWr: n + 1 });
    // The source never holds 0xee; the freed buffer is filled with it at once, as its next owner would.
    const srcB = H.region(f.b, n * big, H.ALL_ACCESS, { fill: (i) => i % 0xee });
    const back = H.region(f.a, n * big);
    for (let i = 0; i < n; i++)
      H.postSend(a, H.wrRead({ wrId: BigInt(i), sge: [back.sge(i * big, big)], remote: { addr: srcB.at(i * big), rkey: srcB.rkey } }));
    await H.poll1(a.scq, 'first READ', HANG_MS);
    srcB.dereg();
    srcB.data.fill(0xee);
    H.postSend(a, H.wrRead({ wrId: BigInt(n), sge: [back.sge(0, big)], remote: { addr: srcB.at(0), rkey: srcB.rkey } }));
    const wcs = await H.pollN(a.scq, n, 'the rest', HANG_MS);
    const firstBad = wcs.findIndex((w) => w.status !== IBV_WC_SUCCESS);
    expect(firstBad, 'a READ after the dereg fails').toBeGreaterThanOrEqual(0);
    expect(wcs[firstBad]!.status, H.wcText(wcs[firstBad]!)).toBe(IBV_WC_REM_ACCESS_ERR);
    for (const w of wcs.slice(firstBad + 1)) expect(w.status, H.wcText(w)).toBe(IBV_WC_WR_FLUSH_ERR);
    expect(back.data.indexOf(0xee), 'first byte READ from the buffer after its dereg').toBe(-1);
    back.checkGuards();
    await stillWorks('after dereg under READ');
  });

  it('rereg the MR a peer is READing from to other memory, mid-response: the old buffer is not read after the rereg', async () => {
    const big = 1 << 20;
    const n = 6;
    const { a } = H.makePair(f, IBV_QPT_RC, { maxSendWr: n });
    const srcB = H.region(f.b, n * big, H.ALL_ACCESS, { fill: (i) => i % 0xee });
    // The new memory holds the same bytes: every READ may complete, but none with a byte of the old buffer after the rereg.
    const moved = rnic_alloc_buf(f.b.ctx, n * big, 4096);
    moved.set(srcB.data);
    f.b.cleanup.push(() => rnic_free_buf(f.b.ctx, moved));
    const back = H.region(f.a, n * big);
    for (let i = 0; i < n; i++)
      H.postSend(a, H.wrRead({ wrId: BigInt(i), sge: [back.sge(i * big, big)], remote: { addr: srcB.at(i * big), rkey: srcB.rkey } }));
    await H.poll1(a.scq, 'first READ', HANG_MS);
    expect(ibv_rereg_mr(srcB.mr, IBV_REREG_MR_CHANGE_TRANSLATION, null, moved, 0)).toBe(0);
    srcB.data.fill(0xee);
    const wcs = await H.pollN(a.scq, n - 1, 'the rest', HANG_MS);
    const firstBad = wcs.findIndex((w) => w.status !== IBV_WC_SUCCESS);
    if (firstBad >= 0) for (const w of wcs.slice(firstBad + 1)) expect(w.status, H.wcText(w)).toBe(IBV_WC_WR_FLUSH_ERR);
    expect(back.data.indexOf(0xee), 'first byte READ from the old buffer after the rereg').toBe(-1);
    back.checkGuards();
  });

  it('ibv_close_device with READs outstanding: 0; nothing lands in memory the context had (now someone else’s)', async () => {
    const c = H.openDev(f.a.name);
    const remote = H.region(f.b, N * MSG, H.ALL_ACCESS, { fill: (i) => (i * 13) & 0xff });
    const cq = H.createCq(c, 256);
    const ep = H.createQp(c, IBV_QPT_RC, { sendCq: cq, recvCq: cq, maxSendWr: N });
    const peer = H.createQp(f.b, IBV_QPT_RC);
    H.connect(ep, peer);
    const local = H.region(c, N * MSG);
    for (let i = 0; i < N; i++)
      H.postSend(ep, H.wrRead({ wrId: BigInt(i), sge: [local.sge(i * MSG, MSG)], remote: { addr: remote.at(i * MSG), rkey: remote.rkey } }));
    c.cleanup.length = 0;
    expect(ibv_close_device(c.ctx)).toBe(0);
    // The freed memory goes to another context at once.
    const again = rnic_alloc_buf(f.a.ctx, N * MSG + 2 * H.GUARD + (1 << 20), 64);
    again.fill(0x5a);
    await new Promise((r) => setTimeout(r, 300));
    const bad = again.findIndex((x) => x !== 0x5a);
    expect(bad, 'first byte changed in memory reallocated after the close').toBe(-1);
    await stillWorks('after close_device');
  });

  it('ibv_close_device of a context whose MR a peer is WRITEing into: nothing lands in reallocated memory', async () => {
    const c = H.openDev(f.b.name);
    const dst = H.region(c, N * MSG);
    const a = H.createQp(f.a, IBV_QPT_RC, { maxSendWr: N });
    const peer = H.createQp(c, IBV_QPT_RC);
    H.connect(a, peer, { timeout: 12, retryCnt: 1, rnrRetry: 7 });
    const src = H.region(f.a, N * MSG, H.ALL_ACCESS, { fill: (i) => i | 1 });
    for (let i = 0; i < N; i++) H.postSend(a, burstWr(i, src, dst));
    const done = await H.pollN(a.scq, STALL, 'the WRITEs before the stall', HANG_MS);
    for (const w of done) expect(w.status, H.wcText(w)).toBe(IBV_WC_SUCCESS);
    c.cleanup.length = 0;
    expect(ibv_close_device(c.ctx)).toBe(0);
    const again = rnic_alloc_buf(f.b.ctx, N * MSG + 2 * H.GUARD + (1 << 20), 64);
    again.fill(0x5a);
    const wcs = await H.pollN(a.scq, N - STALL, 'the rest', HANG_MS);
    expect(wcs[0]!.wr_id, H.wcText(wcs[0]!)).toBe(BigInt(STALL));
    expect(wcs[0]!.status, H.wcText(wcs[0]!)).toBe(IBV_WC_RETRY_EXC_ERR);
    for (const w of wcs.slice(1)) expect(w.status, H.wcText(w)).toBe(IBV_WC_WR_FLUSH_ERR);
    const bad = again.findIndex((x) => x !== 0x5a);
    expect(bad, 'first byte changed in memory reallocated after the close').toBe(-1);
    await stillWorks('after the responder context closed');
  });
});
