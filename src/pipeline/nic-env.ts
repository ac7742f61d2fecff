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
  /** Named differences from the IBTA (see docs/device-behaviours.md). */
  readonly quirks: Quirks;
  /** QoS and congestion control (cc-params.ts); DEFAULT_CC_PARAMS when absent. */
  readonly cc?: CcParams;
}

/**
 * Where real devices differ from the IBTA text, the model follows the IBTA
 * unless a quirk says otherwise, so it can mimic a given device.
 */
export interface Quirks {
  /** Linux rxe: retry_cnt 7 means retry forever (IBTA: 7 retries). */
  readonly rxeRetryCnt7Infinite: boolean;
  /**
   * Linux rxe: an RC SEND longer than the receive buffer completes the
   * responder's receive with REM_INV_REQ_ERR (IBTA: LOC_LEN_ERR). The
   * requester gets REM_INV_REQ_ERR (NAK invalid request) either way.
   */
  readonly rxeRecvOverflowRemInvReq: boolean;
}

export const IBTA_QUIRKS: Quirks = Object.freeze({ rxeRetryCnt7Infinite: false, rxeRecvOverflowRemInvReq: false });

/** Names of the device behaviours a configuration may switch on. */
export const QUIRK_NAMES: readonly (keyof Quirks)[] = Object.freeze(Object.keys(IBTA_QUIRKS) as (keyof Quirks)[]);
