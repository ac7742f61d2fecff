/**
 * The model provider: the devices the runtime has started, as
 * ibv_get_device_list shows them. A runtime that brings up a model device
 * hands the driver exactly what silicon gives a driver (ModelDeviceHandle:
 * host memory, the BAR, the counter window, an interrupt wait) with
 * addModelDevice; the provider registers itself with the verbs layer on the
 * first device.
 */
import { errno } from '../../device/abi/constants.js';
import { registerProvider } from '../providers.js';
import { VerbsError } from '../verbs/errno-error.js';
import type { ProviderDevice, VerbsContextOps, VerbsProvider } from '../verbs/ops.js';
import type { ibv_context, ibv_device } from '../verbs/types.js';
import { model_open_device } from './context.js';
import { ModelIbvDevice } from './device.js';
import type { ModelDeviceHandle } from './handle.js';
import { neighForget } from './neigh.js';
import { model_ctx_ops } from './ops.js';

const devices: ModelIbvDevice[] = [];
let nextIndex = 0;

export const modelProvider: VerbsProvider = Object.freeze({
  name: 'model',
  devices(): ProviderDevice[] {
    return devices.slice();
  },
  guid(dev: ProviderDevice): bigint {
    return (dev as ModelIbvDevice).handle.nodeGuid;
  },
  index(dev: ProviderDevice): number {
    return (dev as ModelIbvDevice).index;
  },
  open(dev: ProviderDevice): ibv_context & { ops: VerbsContextOps } {
    if (!(dev instanceof ModelIbvDevice)) throw new VerbsError(errno.EINVAL, 'ibv_open_device: not a model device');
    const ctx = model_open_device(dev);
    ctx.ops = model_ctx_ops;
    return ctx;
  },
});

/**
 * Make a model device visible to ibv_get_device_list. Names are unique
 * (EEXIST otherwise). Returns the ibv_device.
 */
export function addModelDevice(handle: ModelDeviceHandle): ibv_device {
  if (devices.some((d) => d.name === handle.name)) {
    throw new VerbsError(errno.EEXIST, `addModelDevice: a device named ${handle.name} exists`);
  }
  const dev = new ModelIbvDevice(modelProvider, handle, nextIndex++);
  devices.push(dev);
  registerProvider(modelProvider);
  return dev;
}

/**
 * Remove a device from the list (hot unplug). Contexts already open keep
 * working until they are closed; it can no longer be opened. Returns
 * whether it was present.
 */
export function removeModelDevice(name: string): boolean {
  const i = devices.findIndex((d) => d.name === name);
  if (i < 0) return false;
  devices[i]!.remove();
  devices.splice(i, 1);
  neighForget(name);
  return true;
}

/** The handles of the devices in the list. */
export function modelDeviceHandles(): readonly ModelDeviceHandle[] {
  return devices.map((d) => d.handle);
}
