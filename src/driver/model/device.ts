/**
 * One model device in the provider's list: the `ibv_device` that
 * ibv_get_device_list returns, and the per-device state every context of it
 * shares (what a kernel driver keeps per ib_device).
 */
import { IBV_NODE_CA, IBV_TRANSPORT_IB } from '../../device/abi/constants.js';
import type { ProviderDevice, VerbsProvider } from '../verbs/ops.js';
import type { ModelDeviceHandle } from './handle.js';

export class ModelIbvDevice implements ProviderDevice {
  readonly node_type = IBV_NODE_CA;
  /** RoCE devices report the IB transport, as rxe and mlx5 do. */
  readonly transport_type = IBV_TRANSPORT_IB;
  readonly name: string;
  readonly dev_name: string;
  readonly dev_path: string;
  readonly ibdev_path: string;
  /** Address handles of all contexts (the device's maxAh is enforced per device). */
  ahCount = 0;
  /** Contexts opened so far (spreads the contexts' EQs over the interrupt vectors). */
  opened = 0;
  /** Cleared by removeModelDevice: the device can no longer be opened. */
  present = true;
  /** Resolves when the device is removed (the model stopped): wakes every waiter of its contexts. */
  readonly removed: Promise<void>;
  private markRemoved!: () => void;

  constructor(
    readonly provider: VerbsProvider,
    readonly handle: ModelDeviceHandle,
    /** The device's index (ibv_get_device_index): the order the runtime added devices in, from 0. */
    readonly index: number,
  ) {
    this.name = handle.name;
    this.dev_name = `uverbs${index}`;
    this.dev_path = `/sys/class/infiniband_verbs/uverbs${index}`;
    this.ibdev_path = `/sys/class/infiniband/${handle.name}`;
    this.removed = new Promise((r) => (this.markRemoved = r));
  }

  /** removeModelDevice: no more opens, and every wait on it ends. */
  remove(): void {
    this.present = false;
    this.markRemoved();
  }
}
