/**
 * The one error base of rnic-model. Callers switch on `code`, never on
 * `instanceof`: structured clone drops prototypes at worker boundaries.
 */
export class RnicError<C extends string = string> extends Error {
  readonly code: C;
  constructor(code: C, message: string) {
    super(message);
    this.code = code;
    this.name = 'RnicError';
  }
}

/** What can be wrong with bytes off the wire. */
export type WireErrorCode =
  | 'WIRE_TRUNCATED'
  | 'WIRE_BAD_VERSION'
  | 'WIRE_BAD_CHECKSUM'
  | 'WIRE_BAD_ICRC'
  | 'WIRE_BAD_VCRC'
  | 'WIRE_UNKNOWN_OPCODE'
  | 'WIRE_LENGTH_MISMATCH'
  | 'WIRE_OPCODE_NOT_ALLOWED'
  | 'WIRE_NOT_RDMA'
  | 'WIRE_BAD_FIELD'
  | 'WIRE_BAD_PCAP';

export class WireError extends RnicError<WireErrorCode> {
  /** Byte offset in the frame where the problem was found. */
  readonly offset: number;
  constructor(code: WireErrorCode, message: string, offset = -1) {
    super(code, message);
    this.name = 'WireError';
    this.offset = offset;
  }
}
