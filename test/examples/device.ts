/**
 * The one place that decides whether the end-to-end example tests can run:
 * they need an RDMA device in ibv_get_device_list(). Until the model
 * provider registers its devices this list is empty and those tests are
 * skipped; they turn on by themselves once devices appear. If the provider
 * ever needs starting (rather than registering itself on import), start it
 * here and every end-to-end test follows.
 */
import '../../src/boot.js';
import { ibv_get_device_list, ibv_get_device_name } from '../../src/driver/verbs/index.js';

export const rdmaDevices: readonly string[] = ibv_get_device_list().map((d) => ibv_get_device_name(d));

/** For `it.skipIf(noRdmaDevice)`. */
export const noRdmaDevice = rdmaDevices.length === 0;
