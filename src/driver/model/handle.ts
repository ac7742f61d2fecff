/**
 * What the model provider receives for each model device: exactly what a
 * driver has of real silicon — host memory it owns, the BAR it maps, and a
 * read-only window on the hardware counters (Linux reads these through
 * sysfs). Nothing of the pipeline or the runtime crosses this line.
 */
import type { Bar } from '../../device/registers.js';
import type { HostMemory } from '../../device/host-memory.js';
import type { HwCounters } from '../../device/counters.js';

export interface ModelDeviceHandle {
  /** Device name as ibv_get_device_name reports it, e.g. 'rnic0'. */
  readonly name: string;
  readonly nodeGuid: bigint;
  /** Host memory with its allocator: the driver's to manage. */
  readonly mem: HostMemory;
  /** The device's register window. */
  readonly bar: Bar;
  readonly counters: HwCounters;
  /**
   * Set by a runtime whose device runs on the driver's own thread (the
   * simulator, tests): called after every doorbell and command so the device
   * can act. Unset in the realtime runtime, where the device polls the BAR.
   */
  readonly serviceInline?: () => void;
  /**
   * Set by a runtime whose device runs on the driver's thread and may take
   * a WQE doorbell a little later (the realtime runtime with `workers: 0`:
   * at the driver's next call that services the device, or the next turn of
   * the event loop, whichever is first): called instead of `serviceInline`
   * after a send or receive doorbell. Posting a list of WRs then polling
   * costs one device pass, not one per post.
   */
  readonly serviceSoon?: () => void;
  /**
   * Wait until the interrupt counter of `vector` differs from `seen`; resolves
   * with the new count. The realtime runtime uses Atomics.waitAsync on the
   * BAR; the simulator advances virtual time.
   */
  waitIrq(vector: number, seen: number): Promise<number>;
  /**
   * Optional neighbour lookup (the host's ARP / ND table): the next-hop MAC
   * for `dgid` leaving port `portNum`, or null if unknown. The device does
   * no neighbour resolution (UD address vectors and QP paths carry the
   * destination MAC), so the driver fills dmac itself, as the Linux RoCE
   * core does with ib_resolve_eth_dmac. Without it the driver still
   * resolves its own GIDs (loopback), the GIDs of every model device opened
   * in this process, link-local EUI-64 GIDs and multicast GIDs.
   */
  resolveMac?(portNum: number, dgid: Uint8Array): Uint8Array | null;
}
