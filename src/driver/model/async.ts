/**
 * Asynchronous events (ibv_get_async_event / ibv_ack_async_event). The
 * device writes them to the context's EQ with the ibv_event_type as the EQE
 * type and the QPN, CQN, SRQN or port number as the resource; eq.ts moves
 * them onto the context's list, and get_async_event turns the resource into
 * the verbs object. Events for objects that no longer exist are dropped.
 *
 * As for CQ events, libibverbs makes destroy_qp / destroy_cq / destroy_srq
 * wait until every reported event is acknowledged; here those verbs return
 * EBUSY while events are unacknowledged.
 */
import {
  errno,
  IBV_EVENT_CLIENT_REREGISTER,
  IBV_EVENT_COMM_EST,
  IBV_EVENT_CQ_ERR,
  IBV_EVENT_DEVICE_FATAL,
  IBV_EVENT_GID_CHANGE,
  IBV_EVENT_LID_CHANGE,
  IBV_EVENT_PATH_MIG,
  IBV_EVENT_PATH_MIG_ERR,
  IBV_EVENT_PKEY_CHANGE,
  IBV_EVENT_PORT_ACTIVE,
  IBV_EVENT_PORT_ERR,
  IBV_EVENT_QP_ACCESS_ERR,
  IBV_EVENT_QP_FATAL,
  IBV_EVENT_QP_LAST_WQE_REACHED,
  IBV_EVENT_QP_REQ_ERR,
  IBV_EVENT_SM_CHANGE,
  IBV_EVENT_SQ_DRAINED,
  IBV_EVENT_SRQ_ERR,
  IBV_EVENT_SRQ_LIMIT_REACHED,
} from '../../device/abi/constants.js';
import { VerbsError } from '../verbs/errno-error.js';
import type { ibv_async_event, ibv_context } from '../verbs/types.js';
import { ModelContext } from './context.js';
import { model_eq_drain, model_eq_wait } from './eq.js';
import { ModelCq, ModelQp, ModelSrq } from './objects.js';

export type AsyncEventKind = 'qp' | 'cq' | 'srq' | 'port' | 'device' | 'other';

/** What an event's resource number names. */
export function asyncEventKind(type: number): AsyncEventKind {
  switch (type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
      return 'qp';
    case IBV_EVENT_CQ_ERR:
      return 'cq';
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
      return 'srq';
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_SM_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER:
    case IBV_EVENT_GID_CHANGE:
      return 'port';
    case IBV_EVENT_DEVICE_FATAL:
      return 'device';
    default:
      return 'other';
  }
}

/** Forget queued events of an object being destroyed. */
export function model_drop_async_events(ctx: ModelContext, kind: 'qp' | 'cq' | 'srq', resource: number): void {
  const q = ctx.asyncEvents;
  let j = 0;
  for (let i = 0; i < q.length; i++) {
    const e = q[i]!;
    if (e.resource === resource && asyncEventKind(e.type) === kind) continue;
    q[j++] = e;
  }
  q.length = j;
}

/** The next queued event whose object still exists, as an ibv_async_event; null if none. */
function nextEvent(ctx: ModelContext): ibv_async_event | null {
  for (;;) {
    const e = ctx.asyncEvents.shift();
    if (!e) return null;
    const event_type = e.type;
    switch (asyncEventKind(e.type)) {
      case 'qp': {
        const qp = ctx.qps.get(e.resource);
        if (!qp || qp.destroyed) continue;
        qp.asyncEventsReported++;
        return { element: { qp }, event_type };
      }
      case 'cq': {
        const cq = ctx.cqs.get(e.resource);
        if (!cq || cq.destroyed) continue;
        cq.asyncEventsReported++;
        return { element: { cq }, event_type };
      }
      case 'srq': {
        const srq = ctx.srqs.get(e.resource);
        if (!srq || srq.destroyed) continue;
        srq.asyncEventsReported++;
        return { element: { srq }, event_type };
      }
      case 'port':
        return { element: { port_num: e.resource }, event_type };
      case 'device':
        return { element: {}, event_type };
      default:
        continue; // WQ_FATAL and unknown types: no object of this provider
    }
  }
}

/** ibv_get_async_event: resolves with the next event of the context (C blocks in read() on async_fd). */
export async function model_get_async_event(ibctx: ibv_context): Promise<ibv_async_event> {
  const ctx = ibctx as ModelContext;
  if (!(ctx instanceof ModelContext)) throw new VerbsError(errno.EINVAL, 'ibv_get_async_event: not an ibv_context of the model provider');
  for (;;) {
    if (ctx.closed) throw new VerbsError(errno.EBADF, 'ibv_get_async_event: the context is closed');
    if (!ctx.device.present) {
      // What was queued, then one DEVICE_FATAL, then EIO: what a disassociated uverbs device gives.
      const ev = nextEvent(ctx);
      if (ev) return ev;
      if (!ctx.fatalReported) {
        ctx.fatalReported = true;
        return { element: {}, event_type: IBV_EVENT_DEVICE_FATAL };
      }
      throw new VerbsError(errno.EIO, `ibv_get_async_event: ${ctx.device.name} was removed`);
    }
    model_eq_drain(ctx);
    const ev = nextEvent(ctx);
    if (ev) return ev;
    await model_eq_wait(ctx, ctx.gone);
  }
}

export function model_ack_async_event(event: ibv_async_event): void {
  const el = event.element;
  const owner = el.qp ?? el.cq ?? el.srq;
  if (!(owner instanceof ModelQp || owner instanceof ModelCq || owner instanceof ModelSrq)) {
    throw new VerbsError(errno.EINVAL, 'ibv_ack_async_event: not an event of the model provider');
  }
  if (owner.asyncEventsAcked >= owner.asyncEventsReported) throw new VerbsError(errno.EINVAL, 'ibv_ack_async_event: no unacknowledged event of this object');
  owner.asyncEventsAcked++;
}
