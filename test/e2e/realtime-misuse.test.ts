/**
 * The realtime runtime misused while traffic flows, with the devices in the
 * application's thread (workers 0), on one worker (1) and on two (2):
 * objects destroyed and MRs deregistered under WRITEs in flight, a device
 * closed with work outstanding, the model stopped with traffic in flight and
 * started again. Each step must return an errno or succeed (never throw or
 * hang), what completes must complete with a status the IBTA allows, no byte
 * outside a registered buffer may change, and a model started again must
 * carry traffic as if nothing had happened.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { currentModel, stopModel } from '../../src/boot.js';
import {
  ibv_close_device,
  ibv_create_comp_channel,
  ibv_create_cq,
  ibv_get_async_event,
  ibv_get_cq_event,
  ibv_req_notify_cq,
  IBV_EVENT_DEVICE_FATAL,
  ibv_destroy_cq,
  ibv_destroy_qp,
  IBV_QPT_RC,
  IBV_WC_REM_ACCESS_ERR,
  IBV_WC_RETRY_EXC_ERR,
  IBV_WC_SUCCESS,
  IBV_WC_WR_FLUSH_ERR,
  ibv_poll_cq,
  newWc,
} from '../../src/driver/verbs/index.js';
import { PATIENT_QP_TIMEOUT } from '../examples/scenarios.js';
import * as H from './harness.js';

const MSG = 16 * 1024;
const N = 32;
const HANG_MS = 60_000;

/** Polls `cq` until `n` completions or nothing more arrives for `quietMs` (wall). */
async function drain(cq: Parameters<typeof ibv_poll_cq>[0], n: number, quietMs: number): Promise<number[]> {
  const out: number[] = [];
  const wc = Array.from({ length: 16 }, () => newWc());
  let last = Date.now();
  while (out.length < n && Date.now() - last < quietMs) {
    const k = ibv_poll_cq(cq, 16, wc);
    expect(k, 'ibv_poll_cq').toBeGreaterThanOrEqual(0);
    for (let i = 0; i < k; i++) out.push(wc[i]!.status);
    if (k > 0) last = Date.now();
    else await new Promise((r) => setTimeout(r, 1));
  }
  return out;
}

describe.each([0, 1, 2])('workers: %i', (workers) => {
  let f: H.Fabric | null = null;
  afterAll(async () => {
    await f?.close();
  });

  it('misuse under traffic, then stop and start: errnos, allowed statuses, guards intact, traffic after the restart', { timeout: 6 * HANG_MS }, async () => {
    f = await H.openFabric(H.twoDeviceConfig(workers));
    const opts = { timeout: 8, retryCnt: 1, maxSendWr: 64, maxRecvWr: 64 };
    const src = H.region(f.a, N * MSG);
    src.data.set(H.pattern(N * MSG, workers + 3));

    // 1. The responder's MR deregistered with WRITEs in flight: each WRITE lands whole or is refused
    //    (REM_ACCESS_ERR, then the rest flushed); nothing lands outside the buffer.
    {
      const { a } = H.makePair(f, IBV_QPT_RC, opts);
      const dst = H.region(f.b, N * MSG);
      for (let i = 0; i < N; i++)
        H.postSend(a, H.wrWrite({ wrId: BigInt(i), sge: [src.sge(i * MSG, MSG)], remote: { addr: dst.at(i * MSG), rkey: dst.rkey } }));
      dst.dereg();
      const st = await drain(a.scq, N, 20_000);
      expect(st.length, 'every WRITE completes').toBe(N);
      const firstBad = st.findIndex((s) => s !== IBV_WC_SUCCESS);
      if (firstBad >= 0) {
        expect([IBV_WC_REM_ACCESS_ERR, IBV_WC_RETRY_EXC_ERR]).toContain(st[firstBad]);
        expect(
          st.slice(firstBad + 1).every((s) => s === IBV_WC_WR_FLUSH_ERR),
          `after the error: ${st.slice(firstBad + 1)}`,
        ).toBe(true);
      }
      dst.checkGuards('deregistered under traffic');
    }

    // 2. The responder's QP destroyed with WRITEs in flight: the requester ends in RETRY_EXC_ERR
    //    (retry_cnt 1, timeout 8 = 1 ms) and flushes the rest; the destroy itself is 0.
    {
      const { a, b } = H.makePair(f, IBV_QPT_RC, opts);
      const dst = H.region(f.b, N * MSG);
      for (let i = 0; i < N; i++)
        H.postSend(a, H.wrWrite({ wrId: BigInt(i), sge: [src.sge(i * MSG, MSG)], remote: { addr: dst.at(i * MSG), rkey: dst.rkey } }));
      expect(ibv_destroy_qp(b.qp), 'destroy the responder QP under traffic').toBe(0);
      const st = await drain(a.scq, N, 30_000);
      expect(st.length, 'every WRITE completes').toBe(N);
      const firstBad = st.findIndex((s) => s !== IBV_WC_SUCCESS);
      if (firstBad >= 0) {
        expect(st[firstBad]).toBe(IBV_WC_RETRY_EXC_ERR);
        expect(st.slice(firstBad + 1).every((s) => s === IBV_WC_WR_FLUSH_ERR)).toBe(true);
      }
      dst.checkGuards('responder QP destroyed under traffic');
      expect(ibv_destroy_qp(b.qp), 'a second destroy').not.toBe(0);
    }

    // 3. The requester's QP destroyed with WRITEs outstanding, then its CQ: both 0 (a CQ in use is EBUSY).
    {
      const cq = H.createCq(f.a, 128);
      const a = H.createQp(f.a, IBV_QPT_RC, { ...opts, sendCq: cq, recvCq: cq });
      const b = H.createQp(f.b, IBV_QPT_RC, opts);
      H.connect(a, b, { timeout: PATIENT_QP_TIMEOUT });
      const dst = H.region(f.b, N * MSG);
      for (let i = 0; i < N; i++)
        H.postSend(a, H.wrWrite({ wrId: BigInt(i), sge: [src.sge(i * MSG, MSG)], remote: { addr: dst.at(i * MSG), rkey: dst.rkey } }));
      expect(ibv_destroy_cq(cq), 'a CQ with a QP on it').not.toBe(0);
      expect(ibv_destroy_qp(a.qp), 'destroy the requester QP with WRITEs outstanding').toBe(0);
      expect(ibv_destroy_cq(cq), 'then its CQ').toBe(0);
      dst.checkGuards('requester destroyed under traffic');
    }

    // 4. A device closed with QPs, CQs, MRs and WRITEs outstanding, then the model stopped with the
    //    other device's traffic in flight.
    {
      const { a } = H.makePair(f, IBV_QPT_RC, { ...opts, timeout: PATIENT_QP_TIMEOUT });
      const dst = H.region(f.b, N * MSG);
      for (let i = 0; i < N; i++)
        H.postSend(a, H.wrWrite({ wrId: BigInt(i), sge: [src.sge(i * MSG, MSG)], remote: { addr: dst.at(i * MSG), rkey: dst.rkey } }));
      expect(ibv_close_device(f.b.ctx), 'close a device with everything on it').toBe(0);
      f.b.cleanup.length = 0;
      // Waiters on the other device: a completion event and an async event nobody will raise.
      const ch = ibv_create_comp_channel(f.a.ctx);
      const cq = ibv_create_cq(f.a.ctx, 4, null, ch, 0);
      expect(ibv_req_notify_cq(cq, 0)).toBe(0);
      const outcome = (p: Promise<unknown>) =>
        p.then(
          (v) => `event ${(v as { event_type?: number }).event_type ?? 'cq'}`,
          (e: Error & { code?: string }) => `${e.name} ${e.code}`,
        );
      const waits = Promise.all([outcome(ibv_get_cq_event(ch)), outcome(ibv_get_async_event(f.a.ctx))]);
      await stopModel();
      expect(currentModel()).toBeNull();
      // Stopping the model ends every wait on its devices, as a disassociated uverbs device does:
      // the completion channel's read fails (EIO), the async fd gives one DEVICE_FATAL, then EIO.
      const within = <T>(p: Promise<T>) => Promise.race([p, new Promise<string>((r) => setTimeout(() => r('still waiting'), 10_000))]);
      expect(await within(waits)).toEqual(['VerbsError EIO', `event ${IBV_EVENT_DEVICE_FATAL}`]);
      expect(await within(outcome(ibv_get_async_event(f.a.ctx)))).toBe('VerbsError EIO');
      expect(await within(outcome(ibv_get_cq_event(ch)))).toBe('VerbsError EIO');
      f.a.cleanup.length = 0;
      await stopModel(); // a second stop is harmless
    }

    // 5. Started again: traffic as usual.
    f = await H.openFabric(H.twoDeviceConfig(workers));
    const { a, b } = H.makePair(f, IBV_QPT_RC, { ...opts, timeout: PATIENT_QP_TIMEOUT });
    const s2 = H.region(f.a, N * MSG);
    s2.data.set(H.pattern(N * MSG, 99));
    const d2 = H.region(f.b, N * MSG);
    for (let i = 0; i < N; i++) H.postSend(a, H.wrWrite({ wrId: BigInt(i), sge: [s2.sge(i * MSG, MSG)], remote: { addr: d2.at(i * MSG), rkey: d2.rkey } }));
    const wcs = await H.pollN(a.scq, N, 'WRITEs after the restart', HANG_MS);
    expect(wcs.map((w) => w.status)).toEqual(Array(N).fill(IBV_WC_SUCCESS));
    H.expectBytes(d2.data, s2.data, 'after the restart');
    d2.checkGuards('after the restart');
    void b;
  });
});
