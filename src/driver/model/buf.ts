/**
 * rnic_alloc_buf / rnic_free_buf: memory the device can reach by DMA, i.e.
 * an allocation in the handle's host memory. In C any malloc'd buffer can
 * be registered; here the device sees only host memory, so a ported
 * program takes its buffers from here. A context frees the buffers it
 * still holds when it is closed.
 */
import { errno } from '../../device/abi/constants.js';
import { VerbsError } from '../verbs/errno-error.js';
import type { ibv_context } from '../verbs/types.js';
import { model_live, ModelContext } from './context.js';

export function model_alloc_buf(ibctx: ibv_context, length: number, align: number): Uint8Array {
  const ctx = ibctx as ModelContext;
  model_live(ctx, 'rnic_alloc_buf');
  if (!Number.isInteger(align) || align < 1 || (align & (align - 1)) !== 0 || align > 2 ** 30) {
    throw new VerbsError(errno.EINVAL, `rnic_alloc_buf: alignment ${String(align)} is not a power of two`);
  }
  if (!Number.isInteger(length) || length < 0) throw new VerbsError(errno.EINVAL, `rnic_alloc_buf: bad length ${String(length)}`);
  let b;
  try {
    b = ctx.mem.alloc(Math.max(length, 1), align);
  } catch (e) {
    throw new VerbsError(errno.ENOMEM, `rnic_alloc_buf: ${(e as Error).message}`);
  }
  ctx.buffers.add(b.addrNum);
  return b.view.subarray(0, length);
}

export function model_free_buf(ibctx: ibv_context, buf: Uint8Array): void {
  const ctx = ibctx as ModelContext;
  if (!(ctx instanceof ModelContext)) throw new VerbsError(errno.EINVAL, 'rnic_free_buf: not an ibv_context of the model provider');
  if (!(buf instanceof Uint8Array) || buf.buffer !== ctx.mem.sab) throw new VerbsError(errno.EINVAL, 'rnic_free_buf: not a buffer of this device');
  const addr = ctx.mem.addrOfN(buf);
  if (!ctx.buffers.has(addr)) throw new VerbsError(errno.EINVAL, 'rnic_free_buf: not a buffer from rnic_alloc_buf of this context');
  ctx.buffers.delete(addr);
  if (ctx.closed) return; // freed by ibv_close_device
  ctx.mem.free(addr);
}
