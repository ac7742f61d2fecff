/**
 * A device on one thread, for tests and the simulator: host memory, BAR,
 * context tables, counters, firmware, and a command channel whose commands
 * execute inline (the device's serviceCommandDoorbell runs right after the
 * driver posts). Everything still goes through the mailbox page and the BAR.
 */
import { resolveCapabilities, type Capabilities, type CapabilitiesConfig } from './capabilities.js';
import { Firmware } from './firmware.js';
import { HostMemory } from './host-memory.js';
import { CommandChannel, serviceCommandDoorbell } from './mailbox.js';
import { Bar, DevStatus, setDeviceStatus } from './registers.js';

export interface Testbed {
  readonly caps: Capabilities;
  /** The driver's host memory (with allocator). */
  readonly mem: HostMemory;
  readonly bar: Bar;
  readonly fw: Firmware;
  /** Driver-side command channel (inline execution). */
  readonly cmd: CommandChannel;
}

export function createTestbed(opts: { config?: CapabilitiesConfig; memBytes?: number } = {}): Testbed {
  const caps = resolveCapabilities(opts.config);
  const mem = HostMemory.create(opts.memBytes === undefined ? {} : { size: opts.memBytes });
  const bar = Bar.create(caps);
  const fw = new Firmware({ caps, mem: HostMemory.attach(mem.descriptor), bar });
  setDeviceStatus(bar, DevStatus.READY);
  const cmd = new CommandChannel(mem, bar, () => {
    serviceCommandDoorbell(fw, bar);
  });
  return { caps, mem, bar, fw, cmd };
}

/**
 * Small capabilities for fast tests (tables of a few entries). No memory
 * windows, so the MPT holds exactly the 16 MRs (index reuse is exact).
 */
export const SMALL_DEVICE: CapabilitiesConfig = Object.freeze({
  device: { maxQp: 14, maxCq: 8, maxMr: 16, maxMw: 0, maxPd: 4, maxSrq: 4, maxEq: 4, maxQpWr: 256, maxCqe: 255, maxSrqWr: 64 },
});
