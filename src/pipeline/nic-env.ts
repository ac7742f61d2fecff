/**
 * What every pipeline stage of one RNIC is handed: the device's side of
 * host memory, its BAR, context tables, counters and ports, and a clock.
 * Stages never look at wall time or threads; the runtime decides both.
 */
import type { Capabilities } from '../device/capabilities.js';
import type { ContextTables } from '../device/contexts.js';
import type { HwCounters } from '../device/counters.js';
import type { Firmware } from '../device/firmware.js';
import type { HostMemory } from '../device/host-memory.js';
import type { Bar } from '../device/registers.js';
import type { CcParams } from './cc-params.js';
import type { EthPort } from './eth-port.js';
import type { DeviceProfile } from './profiles.js';

export interface NicClock {
  /** Current time in nanoseconds (virtual in the simulator, monotonic wall time in realtime). */
  now(): number;
}

export interface NicEnv {
  readonly name: string;
  readonly caps: Capabilities;
  readonly fw: Firmware;
  readonly mem: HostMemory;
  readonly bar: Bar;
  readonly tables: ContextTables;
  readonly counters: HwCounters;
  /** ports[i] is port number i + 1. */
  readonly ports: readonly EthPort[];
  readonly clock: NicClock;
  /** Where this device's behaviour differs from the IBTA's (profiles.ts). */
  readonly profile: DeviceProfile;
  /** QoS and congestion control (cc-params.ts); DEFAULT_CC_PARAMS when absent. */
  readonly cc?: CcParams;
  /**
   * Frames this device builds leave with their ICRC pending (wire/lazy-icrc.ts):
   * the runtime promises to `sealIcrc` each before anything reads its bytes
   * (the simulator always; the realtime runtime for a device with a port on
   * an in-process wire to another model device, sealing at every other
   * cable end: runtime/device-host.ts `plug`).
   */
  readonly deferIcrc?: boolean;
  /**
   * The simulator's deferred payloads (wire/lazy-icrc.ts deferPayload): an
   * RC/XRC SEND or WRITE packet's payload stays in host memory and the
   * receiving device reads it from there, one copy instead of two. Absent:
   * every payload is gathered into its frame.
   */
  readonly payloads?: PayloadDeferral | null;
}

/** Who lets a frame leave with its payload still in host memory, and materializes it before that memory may change. */
export interface PayloadDeferral {
  /** Deferral allowed now (nothing on the way reads frames' bytes without materializing them). */
  readonly enabled: boolean;
  /** `frame[off, off + len)` is to hold `src[at, at + len)`: mark the frame (lazy-icrc.ts deferPayload) and keep track of it. */
  defer(frame: Uint8Array, off: number, len: number, src: Uint8Array, at: number): void;
}
