/**
 * Typed errors of the device interface. They are programming or
 * configuration errors (a view that is not host memory, a layout that
 * overlaps, a bad parameter file). Expected hardware outcomes are NOT
 * errors: a bad command returns a status in the mailbox, a bad WQE becomes
 * a CQE with a status, a failed key check returns an MrCheck value.
 */
import { RnicError } from '../wire/errors.js';

export type DeviceErrorCode =
  /** A layout declaration is inconsistent (overlap, gap, bad width, bad reserved name). */
  | 'DEV_ERR_LAYOUT'
  /** A value does not fit the field it is encoded into. */
  | 'DEV_ERR_FIELD_RANGE'
  /** A DMA address range falls (partly) outside host memory. */
  | 'DEV_ERR_DMA_OUT_OF_RANGE'
  /** A Uint8Array passed to addrOf is not a view of this host memory. */
  | 'DEV_ERR_NOT_HOST_MEMORY'
  /** The host memory allocator has no free extent large enough. */
  | 'DEV_ERR_NO_MEMORY'
  /** free() of an address that is not the start of a live allocation. */
  | 'DEV_ERR_BAD_FREE'
  /** Alignment is not a power of two, or an address is misaligned. */
  | 'DEV_ERR_BAD_ALIGN'
  /** A HostMemory attached without an allocator was asked to allocate. */
  | 'DEV_ERR_NO_ALLOCATOR'
  /** A capability / parameter value or configuration key is invalid. */
  | 'DEV_ERR_BAD_CONFIG'
  /** The command status register did not show our token in time. */
  | 'DEV_ERR_CMD_TIMEOUT'
  /** The BAR does not carry the expected device id / interface version. */
  | 'DEV_ERR_BAD_BAR';

export class DeviceError extends RnicError<DeviceErrorCode> {
  constructor(code: DeviceErrorCode, message: string) {
    super(code, message);
    this.name = 'DeviceError';
  }
}
