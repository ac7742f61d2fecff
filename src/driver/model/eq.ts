/**
 * The context's event queue: the driver half of section 8 of the device
 * manual. What a kernel driver does in its EQ interrupt handler happens
 * here, on demand: whenever a verb looks for events (get_cq_event,
 * get_async_event) every ready EQE is consumed and sorted — a completion
 * event onto its CQ's completion channel, anything else onto the context's
 * async event list — and the consumer counter is reported to the device.
 *
 * Waiting: read the vector's interrupt count, re-arm the EQ with the
 * current consumer index (the device fires at once if EQEs beyond it
 * already exist), then await handle.waitIrq(vector, seen). Reading the count
 * before arming means no interrupt can be missed.
 */
import { IBV_EVENT_GID_CHANGE } from '../../device/abi/constants.js';
import { EQE, EQE_OWNER_OFFSET, EQE_SIZE, EQE_TYPE_COMPLETION } from '../../device/eqe.js';
import { irqCount, updateEqCi } from '../../device/registers.js';
import type { ModelContext } from './context.js';

const EQE_TYPE = EQE.f.type;
const EQE_RESOURCE = EQE.f.resource;

/** Consume every ready EQE of the context's EQ. Returns how many were consumed. */
export function model_eq_drain(ctx: ModelContext): number {
  if (ctx.closed) return 0;
  const mem = ctx.mem;
  const dv = mem.dv;
  const logSize = ctx.eqLogSize;
  const mask = (1 << logSize) - 1;
  let ci = ctx.eqCi;
  let n = 0;
  for (;;) {
    const off = ctx.eqRingOff + (ci & mask) * EQE_SIZE;
    if ((Atomics.load(mem.u8, off + EQE_OWNER_OFFSET) & 1) !== (((ci >>> logSize) & 1) ^ 1)) break;
    const type = EQE_TYPE.get(dv, off);
    const resource = EQE_RESOURCE.get(dv, off);
    if (type === EQE_TYPE_COMPLETION) {
      const cq = ctx.cqs.get(resource);
      const ch = cq?.channel;
      if (cq && ch && !cq.destroyed && !ch.destroyed) ch.events.push(cq);
    } else {
      if (type === IBV_EVENT_GID_CHANGE) {
        const port = ctx.ports[resource - 1];
        if (port) port.gidsValid = false;
      }
      ctx.asyncEvents.push({ type, resource });
    }
    ci = (ci + 1) >>> 0;
    n++;
  }
  if (n > 0) {
    ctx.eqCi = ci;
    updateEqCi(ctx.bar, ctx.eqn, ci, false);
    ctx.handle.serviceInline?.();
  }
  return n;
}

/**
 * Arm the EQ and wait for its interrupt (or for `cancel`). The caller
 * drains and checks its queue before and after.
 */
export async function model_eq_wait(ctx: ModelContext, cancel: Promise<void>): Promise<void> {
  const seen = irqCount(ctx.bar, ctx.vector);
  updateEqCi(ctx.bar, ctx.eqn, ctx.eqCi, true);
  ctx.handle.serviceInline?.();
  await Promise.race([ctx.handle.waitIrq(ctx.vector, seen), cancel, ctx.gone, ctx.device.removed]);
}
