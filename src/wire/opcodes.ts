/**
 * The one opcode table. Encoder, decoder, the sample generator and the
 * pipeline all read it; nothing else says which headers an opcode carries.
 *
 * Values: IBTA vol. 1 §9.2 / Linux include/rdma/ib_pack.h. Header sets and
 * order: IBTA Table 38 as tabulated in rxe_opcode.c (SPEC-DIGEST §1.5, §2).
 */

/** Transport service, the top three bits of the opcode. */
export const enum Transport {
  RC = 0,
  UC = 1,
  RD = 2,
  UD = 3,
  CNP = 4,
  XRC = 5,
}

export const TRANSPORT_NAMES = ['RC', 'UC', 'RD', 'UD', 'CNP', 'XRC', 'RESERVED', 'MANUFACTURER'] as const;

/** Extension headers after the BTH, as bits. */
export const enum Hdr {
  RDETH = 1 << 0,
  DETH = 1 << 1,
  XRCETH = 1 << 2,
  RETH = 1 << 3,
  ATOMIC_ETH = 1 << 4,
  AETH = 1 << 5,
  ATOMIC_ACK_ETH = 1 << 6,
  IMMDT = 1 << 7,
  IETH = 1 << 8,
  FETH = 1 << 9,
  CNP_PAD = 1 << 10,
}

/** Sizes in bytes (IBTA §9.3–9.8). */
export const enum HdrLen {
  BTH = 12,
  RDETH = 4,
  DETH = 8,
  XRCETH = 4,
  RETH = 16,
  ATOMIC_ETH = 28,
  AETH = 4,
  ATOMIC_ACK_ETH = 8,
  IMMDT = 4,
  IETH = 4,
  FETH = 4,
  CNP_PAD = 16,
  ICRC = 4,
  VCRC = 2,
}

/** Where a packet sits in its message. */
export const enum Position {
  FIRST = 0,
  MIDDLE = 1,
  LAST = 2,
  ONLY = 3,
  /** Not part of a segmented message (ACKs, atomics, CNP). */
  SINGLE = 4,
}

export type OpKind = 'send' | 'write' | 'read-request' | 'read-response' | 'ack' | 'atomic' | 'atomic-ack' | 'flush' | 'atomic-write' | 'cnp';

export interface OpcodeInfo {
  readonly code: number;
  /** ib_pack.h spelling without the prefix, e.g. 'RC_SEND_FIRST'. */
  readonly name: string;
  readonly transport: Transport;
  /** Low five bits: the operation. */
  readonly op: number;
  readonly kind: OpKind;
  readonly position: Position;
  /** Bitmask of Hdr. */
  readonly headers: number;
  /** BTH through the last extension header, in bytes. */
  readonly headerLength: number;
  /** Offsets from the start of the BTH; -1 when absent. */
  readonly offsets: Readonly<Record<'rdeth' | 'deth' | 'xrceth' | 'reth' | 'atomicEth' | 'aeth' | 'atomicAckEth' | 'immDt' | 'ieth' | 'feth', number>>;
  /** May carry payload bytes. */
  readonly payload: boolean;
  /** Sent by the requester (false: a response — ACK, read response, atomic ACK). */
  readonly isRequest: boolean;
  /** Consumes a receive WQE at the responder when the message completes. */
  readonly consumesRecvWqe: boolean;
  readonly hasImmediate: boolean;
  readonly hasInvalidate: boolean;
  /** Implemented by the model's pipeline (RD is decoded only). */
  readonly modelSupported: boolean;
}

interface OperationDef {
  op: number;
  base: string;
  kind: OpKind;
  position: Position;
  headers: number;
  payload: boolean;
  isRequest: boolean;
  consumesRecvWqe?: boolean;
}

// The operations of IBTA Table 38, without the transport-specific headers.
const OPERATIONS: readonly OperationDef[] = [
  { op: 0x00, base: 'SEND_FIRST', kind: 'send', position: Position.FIRST, headers: 0, payload: true, isRequest: true },
  { op: 0x01, base: 'SEND_MIDDLE', kind: 'send', position: Position.MIDDLE, headers: 0, payload: true, isRequest: true },
  { op: 0x02, base: 'SEND_LAST', kind: 'send', position: Position.LAST, headers: 0, payload: true, isRequest: true, consumesRecvWqe: true },
  {
    op: 0x03,
    base: 'SEND_LAST_WITH_IMMEDIATE',
    kind: 'send',
    position: Position.LAST,
    headers: Hdr.IMMDT,
    payload: true,
    isRequest: true,
    consumesRecvWqe: true,
  },
  { op: 0x04, base: 'SEND_ONLY', kind: 'send', position: Position.ONLY, headers: 0, payload: true, isRequest: true, consumesRecvWqe: true },
  {
    op: 0x05,
    base: 'SEND_ONLY_WITH_IMMEDIATE',
    kind: 'send',
    position: Position.ONLY,
    headers: Hdr.IMMDT,
    payload: true,
    isRequest: true,
    consumesRecvWqe: true,
  },
  { op: 0x06, base: 'RDMA_WRITE_FIRST', kind: 'write', position: Position.FIRST, headers: Hdr.RETH, payload: true, isRequest: true },
  { op: 0x07, base: 'RDMA_WRITE_MIDDLE', kind: 'write', position: Position.MIDDLE, headers: 0, payload: true, isRequest: true },
  { op: 0x08, base: 'RDMA_WRITE_LAST', kind: 'write', position: Position.LAST, headers: 0, payload: true, isRequest: true },
  {
    op: 0x09,
    base: 'RDMA_WRITE_LAST_WITH_IMMEDIATE',
    kind: 'write',
    position: Position.LAST,
    headers: Hdr.IMMDT,
    payload: true,
    isRequest: true,
    consumesRecvWqe: true,
  },
  { op: 0x0a, base: 'RDMA_WRITE_ONLY', kind: 'write', position: Position.ONLY, headers: Hdr.RETH, payload: true, isRequest: true },
  {
    op: 0x0b,
    base: 'RDMA_WRITE_ONLY_WITH_IMMEDIATE',
    kind: 'write',
    position: Position.ONLY,
    headers: Hdr.RETH | Hdr.IMMDT,
    payload: true,
    isRequest: true,
    consumesRecvWqe: true,
  },
  { op: 0x0c, base: 'RDMA_READ_REQUEST', kind: 'read-request', position: Position.SINGLE, headers: Hdr.RETH, payload: false, isRequest: true },
  { op: 0x0d, base: 'RDMA_READ_RESPONSE_FIRST', kind: 'read-response', position: Position.FIRST, headers: Hdr.AETH, payload: true, isRequest: false },
  { op: 0x0e, base: 'RDMA_READ_RESPONSE_MIDDLE', kind: 'read-response', position: Position.MIDDLE, headers: 0, payload: true, isRequest: false },
  { op: 0x0f, base: 'RDMA_READ_RESPONSE_LAST', kind: 'read-response', position: Position.LAST, headers: Hdr.AETH, payload: true, isRequest: false },
  { op: 0x10, base: 'RDMA_READ_RESPONSE_ONLY', kind: 'read-response', position: Position.ONLY, headers: Hdr.AETH, payload: true, isRequest: false },
  { op: 0x11, base: 'ACKNOWLEDGE', kind: 'ack', position: Position.SINGLE, headers: Hdr.AETH, payload: false, isRequest: false },
  {
    op: 0x12,
    base: 'ATOMIC_ACKNOWLEDGE',
    kind: 'atomic-ack',
    position: Position.SINGLE,
    headers: Hdr.AETH | Hdr.ATOMIC_ACK_ETH,
    payload: false,
    isRequest: false,
  },
  { op: 0x13, base: 'COMPARE_SWAP', kind: 'atomic', position: Position.SINGLE, headers: Hdr.ATOMIC_ETH, payload: false, isRequest: true },
  { op: 0x14, base: 'FETCH_ADD', kind: 'atomic', position: Position.SINGLE, headers: Hdr.ATOMIC_ETH, payload: false, isRequest: true },
  {
    op: 0x16,
    base: 'SEND_LAST_WITH_INVALIDATE',
    kind: 'send',
    position: Position.LAST,
    headers: Hdr.IETH,
    payload: true,
    isRequest: true,
    consumesRecvWqe: true,
  },
  {
    op: 0x17,
    base: 'SEND_ONLY_WITH_INVALIDATE',
    kind: 'send',
    position: Position.ONLY,
    headers: Hdr.IETH,
    payload: true,
    isRequest: true,
    consumesRecvWqe: true,
  },
  { op: 0x1c, base: 'FLUSH', kind: 'flush', position: Position.SINGLE, headers: Hdr.FETH | Hdr.RETH, payload: false, isRequest: true },
  { op: 0x1d, base: 'ATOMIC_WRITE', kind: 'atomic-write', position: Position.SINGLE, headers: Hdr.RETH, payload: true, isRequest: true },
];

// Which operations each transport defines (IBTA Table 38; FLUSH and
// ATOMIC_WRITE from IBA 1.5 for RC, FLUSH for RD).
const TRANSPORT_OPS: Record<number, (op: number) => boolean> = {
  [Transport.RC]: () => true,
  [Transport.UC]: (op) => op <= 0x0b,
  [Transport.RD]: (op) => op <= 0x14 || op === 0x1c,
  [Transport.UD]: (op) => op === 0x04 || op === 0x05,
  [Transport.XRC]: (op) => op !== 0x1c && op !== 0x1d,
};

// Order of headers after the BTH (IBTA §9.2): RDETH, DETH, XRCETH,
// then RETH/AtomicETH/FETH (FETH before RETH), AETH, AtomicAckETH,
// then ImmDt/IETH.
const ORDER: readonly [Hdr, number, keyof OpcodeInfo['offsets'] | null][] = [
  [Hdr.RDETH, HdrLen.RDETH, 'rdeth'],
  [Hdr.DETH, HdrLen.DETH, 'deth'],
  [Hdr.XRCETH, HdrLen.XRCETH, 'xrceth'],
  [Hdr.FETH, HdrLen.FETH, 'feth'],
  [Hdr.RETH, HdrLen.RETH, 'reth'],
  [Hdr.ATOMIC_ETH, HdrLen.ATOMIC_ETH, 'atomicEth'],
  [Hdr.AETH, HdrLen.AETH, 'aeth'],
  [Hdr.ATOMIC_ACK_ETH, HdrLen.ATOMIC_ACK_ETH, 'atomicAckEth'],
  [Hdr.IMMDT, HdrLen.IMMDT, 'immDt'],
  [Hdr.IETH, HdrLen.IETH, 'ieth'],
  [Hdr.CNP_PAD, HdrLen.CNP_PAD, null],
];

function transportHeaders(t: Transport, def: OperationDef): number {
  switch (t) {
    case Transport.UD:
      return Hdr.DETH;
    case Transport.RD:
      // RD requests carry RDETH + DETH; RD responses RDETH only.
      return def.isRequest ? Hdr.RDETH | Hdr.DETH : Hdr.RDETH;
    case Transport.XRC:
      return def.isRequest ? Hdr.XRCETH : 0;
    default:
      return 0;
  }
}

function makeInfo(code: number, name: string, t: Transport, def: OperationDef, headers: number): OpcodeInfo {
  const offsets: Record<string, number> = {
    rdeth: -1,
    deth: -1,
    xrceth: -1,
    reth: -1,
    atomicEth: -1,
    aeth: -1,
    atomicAckEth: -1,
    immDt: -1,
    ieth: -1,
    feth: -1,
  };
  let off: number = HdrLen.BTH;
  for (const [bit, len, key] of ORDER) {
    if (headers & bit) {
      if (key) offsets[key] = off;
      off += len;
    }
  }
  return Object.freeze({
    code,
    name,
    transport: t,
    op: def.op,
    kind: def.kind,
    position: def.position,
    headers,
    headerLength: off,
    offsets: Object.freeze(offsets) as OpcodeInfo['offsets'],
    payload: def.payload,
    isRequest: def.isRequest,
    consumesRecvWqe: def.consumesRecvWqe === true,
    hasImmediate: (headers & Hdr.IMMDT) !== 0,
    hasInvalidate: (headers & Hdr.IETH) !== 0,
    modelSupported: t === Transport.RC || t === Transport.UC || t === Transport.UD || t === Transport.XRC || t === Transport.CNP,
  });
}

function buildTable(): (OpcodeInfo | undefined)[] {
  const table: (OpcodeInfo | undefined)[] = new Array(256).fill(undefined);
  for (const t of [Transport.RC, Transport.UC, Transport.RD, Transport.UD, Transport.XRC]) {
    for (const def of OPERATIONS) {
      if (!TRANSPORT_OPS[t]!(def.op)) continue;
      const code = (t << 5) | def.op;
      table[code] = makeInfo(code, `${TRANSPORT_NAMES[t]}_${def.base}`, t, def, def.headers | transportHeaders(t, def));
    }
  }
  const cnp: OperationDef = { op: 0x01, base: 'CNP', kind: 'cnp', position: Position.SINGLE, headers: Hdr.CNP_PAD, payload: false, isRequest: false };
  table[0x81] = makeInfo(0x81, 'CNP', Transport.CNP, cnp, Hdr.CNP_PAD);
  return table;
}

/** Indexed by opcode byte; undefined for reserved and manufacturer codes. */
// Not frozen: a frozen array can fall off V8's fast element path; entries are frozen.
export const OPCODES: readonly (OpcodeInfo | undefined)[] = buildTable();

/** Hot-path copies: header length per opcode (0 = unknown). */
export const OPCODE_HEADER_LENGTH: Uint8Array = Uint8Array.from(OPCODES, (i) => i?.headerLength ?? 0);

export function opcodeInfo(code: number): OpcodeInfo | undefined {
  return OPCODES[code & 0xff];
}

export function opcodeName(code: number): string {
  return OPCODES[code & 0xff]?.name ?? `UNKNOWN_0x${(code & 0xff).toString(16).padStart(2, '0')}`;
}

/** The opcode byte for a name such as 'RC_SEND_FIRST' (throws on a typo). */
export function opcodeByName(name: string): number {
  const info = OPCODES.find((i) => i?.name === name);
  if (!info) throw new Error(`no opcode named ${name}`);
  return info.code;
}

/** Named codes the pipeline uses; values equal ib_pack.h's IB_OPCODE_*. */
export const enum Op {
  RC_SEND_FIRST = 0x00,
  RC_SEND_MIDDLE = 0x01,
  RC_SEND_LAST = 0x02,
  RC_SEND_LAST_WITH_IMMEDIATE = 0x03,
  RC_SEND_ONLY = 0x04,
  RC_SEND_ONLY_WITH_IMMEDIATE = 0x05,
  RC_RDMA_WRITE_FIRST = 0x06,
  RC_RDMA_WRITE_MIDDLE = 0x07,
  RC_RDMA_WRITE_LAST = 0x08,
  RC_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x09,
  RC_RDMA_WRITE_ONLY = 0x0a,
  RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x0b,
  RC_RDMA_READ_REQUEST = 0x0c,
  RC_RDMA_READ_RESPONSE_FIRST = 0x0d,
  RC_RDMA_READ_RESPONSE_MIDDLE = 0x0e,
  RC_RDMA_READ_RESPONSE_LAST = 0x0f,
  RC_RDMA_READ_RESPONSE_ONLY = 0x10,
  RC_ACKNOWLEDGE = 0x11,
  RC_ATOMIC_ACKNOWLEDGE = 0x12,
  RC_COMPARE_SWAP = 0x13,
  RC_FETCH_ADD = 0x14,
  RC_SEND_LAST_WITH_INVALIDATE = 0x16,
  RC_SEND_ONLY_WITH_INVALIDATE = 0x17,
  RC_FLUSH = 0x1c,
  RC_ATOMIC_WRITE = 0x1d,
  UC_SEND_FIRST = 0x20,
  UC_SEND_MIDDLE = 0x21,
  UC_SEND_LAST = 0x22,
  UC_SEND_LAST_WITH_IMMEDIATE = 0x23,
  UC_SEND_ONLY = 0x24,
  UC_SEND_ONLY_WITH_IMMEDIATE = 0x25,
  UC_RDMA_WRITE_FIRST = 0x26,
  UC_RDMA_WRITE_MIDDLE = 0x27,
  UC_RDMA_WRITE_LAST = 0x28,
  UC_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x29,
  UC_RDMA_WRITE_ONLY = 0x2a,
  UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x2b,
  UD_SEND_ONLY = 0x64,
  UD_SEND_ONLY_WITH_IMMEDIATE = 0x65,
  CNP = 0x81,
}
