/**
 * Completion events and asynchronous events through the context's EQ: the
 * test plays the device (CQ arm doorbells → cqArm, completion EQEs with
 * eqPush, the interrupt), the driver arms, waits and sorts.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  errno,
  IBV_EVENT_COMM_EST,
  IBV_EVENT_CQ_ERR,
  IBV_EVENT_GID_CHANGE,
  IBV_EVENT_PORT_ACTIVE,
  IBV_EVENT_QP_FATAL,
  IBV_EVENT_SRQ_LIMIT_REACHED,
  IBV_QPT_RC,
  IBV_WC_SEND,
  IBV_WC_WR_FLUSH_ERR,
} from '../../device/abi/constants.js';
import { CqPush } from '../../device/cqe.js';
import { DbKind } from '../../device/registers.js';
import { SMALL_DEVICE } from '../../device/testbed.js';
import { newWcArray } from '../verbs/structs.js';
import type { ibv_async_event, ibv_comp_channel, ibv_cq } from '../verbs/types.js';
import {
  ibv_ack_async_event,
  ibv_ack_cq_events,
  ibv_alloc_pd,
  ibv_close_device,
  ibv_create_comp_channel,
  ibv_create_cq,
  ibv_create_qp,
  ibv_create_srq,
  ibv_destroy_comp_channel,
  ibv_destroy_cq,
  ibv_destroy_qp,
  ibv_destroy_srq,
  ibv_get_async_event,
  ibv_get_cq_event,
  ibv_poll_cq,
  ibv_req_notify_cq,
} from '../verbs/verbs.js';
import type { VerbsError } from '../verbs/errno-error.js';
import type { ModelContext } from './context.js';
import { flush, openHarness, type Harness } from './harness.js';

let h: Harness;
let ch: ibv_comp_channel;
beforeEach(() => {
  h = openHarness({ config: SMALL_DEVICE });
  ch = ibv_create_comp_channel(h.ctx);
});
afterEach(() => h.close());

/** A promise whose settlement can be checked synchronously. */
function watch<T>(p: Promise<T>) {
  const s: { done: boolean; value?: T; error?: unknown } = { done: false };
  p.then(
    (v) => {
      s.done = true;
      s.value = v;
    },
    (e) => {
      s.done = true;
      s.error = e;
    },
  );
  return s;
}

const eqn = () => (h.ctx as ModelContext).eqn;

describe('completion events', () => {
  it('resolves only after req_notify_cq and a completion, with the right CQ', async () => {
    const a = ibv_create_cq(h.ctx, 4, 'A', ch, 0);
    const b = ibv_create_cq(h.ctx, 4, 'B', ch, 1);
    const ev = watch(ibv_get_cq_event(ch));
    await flush();
    expect(ev.done).toBe(false);
    // A completion on an unarmed CQ raises no event.
    h.fake.complete(a.handle, { wrId: 1n });
    await flush();
    expect(ev.done).toBe(false);
    expect(ibv_poll_cq(a, 4, newWcArray(4))).toBe(1);
    // Arm B; a completion on A still does nothing.
    expect(ibv_req_notify_cq(b, 0)).toBe(0);
    expect(h.fake.cqArms.at(-1)).toEqual([b.handle, (0x80000000 | 0) >>> 0]);
    h.fake.complete(a.handle, { wrId: 2n });
    await flush();
    expect(ev.done).toBe(false);
    // A completion on B fires.
    expect(h.fake.complete(b.handle, { wrId: 3n })).toBe(CqPush.WRITTEN | CqPush.EVENT);
    await flush();
    expect(ev.done).toBe(true);
    expect(ev.value).toEqual({ cq: b, cq_context: 'B' });
    // One event per arm.
    expect(h.fake.complete(b.handle, { wrId: 4n })).toBe(CqPush.WRITTEN);
    ibv_ack_cq_events(b, 1);
    // The driver reported its EQ consumer index to the device.
    const bar = h.fake.tb.bar;
    expect(Atomics.load(bar.i32, bar.slotBase[DbKind.EQ]! + eqn()) & 0xffffff).toBe(1);
  });

  it('arming with unpolled CQEs fires at once (the poll / arm race)', async () => {
    const a = ibv_create_cq(h.ctx, 4, null, ch, 0);
    h.fake.complete(a.handle, { wrId: 1n, opcode: IBV_WC_SEND });
    expect(ibv_req_notify_cq(a, 0)).toBe(0);
    const got = await ibv_get_cq_event(ch);
    expect(got.cq).toBe(a);
    ibv_ack_cq_events(a, 1);
  });

  it('several CQs on one channel: events in the order they happened; other channels stay quiet', async () => {
    const a = ibv_create_cq(h.ctx, 4, 'A', ch, 0);
    const b = ibv_create_cq(h.ctx, 4, 'B', ch, 0);
    const ch2 = ibv_create_comp_channel(h.ctx);
    const c = ibv_create_cq(h.ctx, 4, 'C', ch2, 0);
    const other = watch(ibv_get_cq_event(ch2));
    for (const cq of [a, b, c]) expect(ibv_req_notify_cq(cq, 0)).toBe(0);
    h.fake.complete(b.handle, { wrId: 1n });
    h.fake.complete(a.handle, { wrId: 2n });
    const first = await ibv_get_cq_event(ch);
    const second = await ibv_get_cq_event(ch);
    expect([first.cq_context, second.cq_context]).toEqual(['B', 'A']);
    await flush();
    expect(other.done).toBe(false);
    h.fake.complete(c.handle, { wrId: 3n });
    await flush();
    expect(other.done).toBe(true);
    expect(other.value?.cq).toBe(c);
    ibv_ack_cq_events(a, 1);
    ibv_ack_cq_events(b, 1);
    ibv_ack_cq_events(c, 1);
  });

  it('solicited-only arms fire on solicited or error completions', async () => {
    const a = ibv_create_cq(h.ctx, 8, null, ch, 0);
    const ev = watch(ibv_get_cq_event(ch));
    expect(ibv_req_notify_cq(a, 1)).toBe(0);
    expect(h.fake.cqArms.at(-1)![1] & 0x40000000).toBe(0x40000000);
    expect(h.fake.complete(a.handle, { wrId: 1n })).toBe(CqPush.WRITTEN);
    await flush();
    expect(ev.done).toBe(false);
    expect(h.fake.complete(a.handle, { wrId: 2n, solicited: true })).toBe(CqPush.WRITTEN | CqPush.EVENT);
    await flush();
    expect(ev.value?.cq).toBe(a);
    expect(ibv_poll_cq(a, 8, newWcArray(8))).toBe(2);
    expect(ibv_req_notify_cq(a, 1)).toBe(0);
    expect(h.fake.complete(a.handle, { wrId: 3n, status: IBV_WC_WR_FLUSH_ERR })).toBe(CqPush.WRITTEN | CqPush.EVENT);
    expect((await ibv_get_cq_event(ch)).cq).toBe(a);
    ibv_ack_cq_events(a, 2);
  });

  it('ack counting: destroy_cq is EBUSY until every reported event is acknowledged', async () => {
    const a = ibv_create_cq(h.ctx, 4, null, ch, 0);
    for (let i = 0; i < 3; i++) {
      expect(ibv_req_notify_cq(a, 0)).toBe(0);
      h.fake.complete(a.handle, { wrId: BigInt(i) });
      expect((await ibv_get_cq_event(ch)).cq).toBe(a);
      expect(ibv_poll_cq(a, 4, newWcArray(4))).toBe(1);
    }
    expect(ibv_destroy_cq(a)).toBe(errno.EBUSY);
    ibv_ack_cq_events(a, 2);
    expect(ibv_destroy_cq(a)).toBe(errno.EBUSY);
    expect(ibv_destroy_comp_channel(ch)).toBe(errno.EBUSY);
    ibv_ack_cq_events(a, 1);
    expect(ibv_destroy_cq(a)).toBe(0);
    expect(ibv_destroy_comp_channel(ch)).toBe(0);
  });

  it('an event queued for a CQ destroyed before it was read is dropped', async () => {
    const a = ibv_create_cq(h.ctx, 4, 'A', ch, 0);
    const b = ibv_create_cq(h.ctx, 4, 'B', ch, 0);
    ibv_req_notify_cq(a, 0);
    ibv_req_notify_cq(b, 0);
    h.fake.complete(a.handle, { wrId: 1n });
    expect(ibv_destroy_cq(a)).toBe(0);
    h.fake.complete(b.handle, { wrId: 2n });
    expect((await ibv_get_cq_event(ch)).cq).toBe(b);
    ibv_ack_cq_events(b, 1);
  });

  it('destroying the channel or closing the context wakes the waiters with an error', async () => {
    const ev = watch(ibv_get_cq_event(ch));
    await flush();
    expect(ibv_destroy_comp_channel(ch)).toBe(0);
    await flush();
    expect(ev.done).toBe(true);
    expect((ev.error as VerbsError).errno).toBe(errno.EBADF);
    const ch2 = ibv_create_comp_channel(h.ctx);
    const ev2 = watch(ibv_get_cq_event(ch2));
    const aev = watch(ibv_get_async_event(h.ctx));
    await flush();
    expect(ibv_close_device(h.ctx)).toBe(0);
    await flush();
    expect((ev2.error as VerbsError).code).toBe('EBADF');
    expect((aev.error as VerbsError).code).toBe('EBADF');
  });
});

describe('asynchronous events', () => {
  it('QP, CQ, SRQ and port events become ibv_async_event with the object', async () => {
    const pd = ibv_alloc_pd(h.ctx);
    const cq: ibv_cq = ibv_create_cq(h.ctx, 1, null, null, 0);
    const srq = ibv_create_srq(pd, { attr: { max_wr: 4, max_sge: 1, srq_limit: 0 } });
    const qp = ibv_create_qp(pd, {
      send_cq: cq,
      recv_cq: cq,
      cap: { max_send_wr: 1, max_recv_wr: 1, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 },
      qp_type: IBV_QPT_RC,
      sq_sig_all: 0,
    });
    const pending = watch(ibv_get_async_event(h.ctx));
    await flush();
    expect(pending.done).toBe(false);
    h.fake.event(eqn(), IBV_EVENT_COMM_EST, qp.qp_num);
    await flush();
    expect(pending.value).toEqual({ element: { qp }, event_type: IBV_EVENT_COMM_EST });
    h.fake.event(eqn(), IBV_EVENT_QP_FATAL, 0x7777); // no such QP: dropped
    h.fake.event(eqn(), IBV_EVENT_SRQ_LIMIT_REACHED, srq.handle);
    h.fake.event(eqn(), IBV_EVENT_PORT_ACTIVE, 1);
    const e2 = await ibv_get_async_event(h.ctx);
    expect(e2).toEqual({ element: { srq }, event_type: IBV_EVENT_SRQ_LIMIT_REACHED });
    const e3 = await ibv_get_async_event(h.ctx);
    expect(e3).toEqual({ element: { port_num: 1 }, event_type: IBV_EVENT_PORT_ACTIVE });
    // A CQ overflow raises CQ_ERR on the CQ's EQ.
    h.fake.complete(cq.handle, { wrId: 1n });
    h.fake.complete(cq.handle, { wrId: 2n });
    expect(h.fake.complete(cq.handle, { wrId: 3n })).toBe(CqPush.OVERFLOW);
    const e4 = await ibv_get_async_event(h.ctx);
    expect(e4).toEqual({ element: { cq }, event_type: IBV_EVENT_CQ_ERR });
    // Destroy waits for the acks.
    expect(ibv_destroy_qp(qp)).toBe(errno.EBUSY);
    ibv_ack_async_event(pending.value as ibv_async_event);
    expect(ibv_destroy_qp(qp)).toBe(0);
    expect(ibv_destroy_srq(srq)).toBe(errno.EBUSY);
    ibv_ack_async_event(e2);
    expect(ibv_destroy_srq(srq)).toBe(0);
    expect(ibv_destroy_cq(cq)).toBe(errno.EBUSY);
    ibv_ack_async_event(e4);
    expect(ibv_destroy_cq(cq)).toBe(0);
  });

  it('completion and async events share the EQ without losing each other', async () => {
    const a = ibv_create_cq(h.ctx, 4, null, ch, 0);
    ibv_req_notify_cq(a, 0);
    h.fake.event(eqn(), IBV_EVENT_PORT_ACTIVE, 1);
    h.fake.complete(a.handle, { wrId: 1n });
    h.fake.event(eqn(), IBV_EVENT_GID_CHANGE, 1);
    expect((await ibv_get_cq_event(ch)).cq).toBe(a);
    expect((await ibv_get_async_event(h.ctx)).event_type).toBe(IBV_EVENT_PORT_ACTIVE);
    expect((await ibv_get_async_event(h.ctx)).event_type).toBe(IBV_EVENT_GID_CHANGE);
    expect((h.ctx as ModelContext).ports[0]!.gidsValid).toBe(false);
    ibv_ack_cq_events(a, 1);
  });

  it('survives many more events than the EQ holds when they are read as they come', async () => {
    const a = ibv_create_cq(h.ctx, 4, null, ch, 0);
    const n = (1 << (h.ctx as ModelContext).eqLogSize) + 100;
    for (let i = 0; i < n; i++) {
      expect(ibv_req_notify_cq(a, 0)).toBe(0);
      h.fake.complete(a.handle, { wrId: BigInt(i) });
      expect((await ibv_get_cq_event(ch)).cq).toBe(a);
      expect(ibv_poll_cq(a, 4, newWcArray(4))).toBe(1);
    }
    ibv_ack_cq_events(a, n);
    expect(ibv_destroy_cq(a)).toBe(0);
    expect(h.fake.pendingWaiters()).toBeLessThanOrEqual(1);
  });
});
