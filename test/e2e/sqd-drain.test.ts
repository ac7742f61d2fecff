/**
 * The SQD state (IBTA 10.3.1, "Send Queue Drain"), end to end: RTS → SQD
 * with en_sqd_async_notify while 64 KiB WRITEs are on the wire. The
 * messages the requester had begun complete (every byte lands), the ones
 * it had not begun, and the WRs posted during SQD, wait; IBV_EVENT_SQ_DRAINED
 * comes once, with sq_draining 0 after it; SQD → RTS sends the rest, in
 * order. Without en_sqd_async_notify the drain ends with no event. Devices
 * on a worker thread and in this thread.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IBV_EVENT_SQ_DRAINED,
  IBV_QP_EN_SQD_ASYNC_NOTIFY,
  IBV_QP_STATE,
  IBV_QPS_RTS,
  IBV_QPS_SQD,
  IBV_QPT_RC,
  IBV_SEND_SIGNALED,
  IBV_WC_RDMA_WRITE,
  IBV_WC_SUCCESS,
  IBV_WR_RDMA_WRITE,
  ibv_ack_async_event,
  ibv_get_async_event,
  type ibv_async_event,
} from '../../src/driver/verbs/index.js';
import * as H from './harness.js';

const MSG = 64 * 1024;
const FIRST = 32;
const DURING = 4;

describe.each([1, 0])('SQD drain, devices on %i worker thread(s)', (workers) => {
  let f: H.Fabric;
  beforeAll(async () => {
    f = await H.openFabric(H.twoDeviceConfig(workers));
  });
  afterAll(async () => {
    await f?.close();
  });

  async function run(notify: boolean): Promise<void> {
    const { a, b } = H.makePair(f, IBV_QPT_RC);
    const n = FIRST + DURING;
    const src = H.region(a.dev, n * MSG, undefined, { fill: (i) => (i * 7 + 3) & 0xff });
    const dst = H.region(b.dev, n * MSG);
    const write = (k: number) =>
      H.sendWr(IBV_WR_RDMA_WRITE, {
        wrId: BigInt(k),
        flags: IBV_SEND_SIGNALED,
        sge: [src.sge(k * MSG, MSG)],
        remote: { addr: dst.addr + BigInt(k * MSG), rkey: dst.rkey },
      });
    const events: ibv_async_event[] = [];
    const watching = (async () => {
      for (;;) {
        const e = await ibv_get_async_event(a.dev.ctx).catch(() => null);
        if (!e) return;
        events.push(e);
        ibv_ack_async_event(e);
      }
    })();

    H.postSend(
      a,
      Array.from({ length: FIRST }, (_, k) => write(k)),
    );
    // Into SQD once the stream is under way (the first completion seen).
    const begun = [(await H.poll1(a.scq, 'the first WRITE')).wr_id];
    H.modifyOk(a.qp, { qp_state: IBV_QPS_SQD, en_sqd_async_notify: notify ? 1 : 0 }, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY, 'RTS → SQD');
    H.expectQpState(a.qp, IBV_QPS_SQD, 'in SQD');
    H.postSend(
      a,
      Array.from({ length: DURING }, (_, k) => write(FIRST + k)),
    );

    // What was begun completes, in order; nothing else does while the QP stays in SQD.
    const deadline = Date.now() + 30_000;
    while (H.queryQp(a.qp).sq_draining !== 0) {
      if (Date.now() > deadline) throw new Error(`the drain did not end (${begun.length} WRITEs completed)`);
      await H.sleep(1);
    }
    begun.push(...(await H.drain(a.scq)).map((w) => w.wr_id));
    expect(begun.length, 'WRITEs completed by the end of the drain').toBeLessThanOrEqual(FIRST);
    expect(begun, 'in posting order').toEqual(begun.map((_, k) => BigInt(k)));
    await H.expectNoCqe(a.scq, 50, 'nothing more in SQD');
    for (let k = 0; k < begun.length; k++) H.expectBytes(dst.data.subarray(k * MSG, (k + 1) * MSG), src.data.subarray(k * MSG, (k + 1) * MSG), `WRITE ${k}`);
    for (let k = begun.length; k < n; k++)
      expect(
        dst.data.subarray(k * MSG, (k + 1) * MSG).some((x) => x !== 0),
        `WRITE ${k} not begun in SQD`,
      ).toBe(false);
    await H.sleep(20);
    const drained = events.filter((e) => e.event_type === IBV_EVENT_SQ_DRAINED);
    if (notify) {
      expect(drained.length, 'one SQ_DRAINED event').toBe(1);
      expect(drained[0]!.element.qp, 'about this QP').toBe(a.qp);
    } else expect(drained.length, 'no SQ_DRAINED event without en_sqd_async_notify').toBe(0);

    // SQD → RTS: the rest goes, in order, and every byte lands.
    H.modifyOk(a.qp, { qp_state: IBV_QPS_RTS }, IBV_QP_STATE, 'SQD → RTS');
    const rest = await H.pollN(a.scq, n - begun.length, 'the WRITEs held in SQD');
    expect(rest.map((w) => w.wr_id)).toEqual(rest.map((_, k) => BigInt(begun.length + k)));
    for (const w of rest) H.expectWc(w, { status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_WRITE }, 'a WRITE after SQD');
    H.expectBytes(dst.data, src.data, 'every WRITE');
    void watching;
  }

  it('RTS → SQD with en_sqd_async_notify: begun WRITEs finish, one SQ_DRAINED, the rest after SQD → RTS', async () => {
    await run(true);
  });

  it('without en_sqd_async_notify: the same drain, no event', async () => {
    await run(false);
  });
});
