/**
 * The IBA transport headers: BTH and every extension header (IBTA vol. 1
 * §9.2–9.8; layouts in SPEC-DIGEST §1.4–1.5). Writers take primitives so the
 * packet builder allocates nothing per field.
 */

export interface Bth {
  opcode: number;
  /** Solicited event. */
  se: number;
  /** MigReq. */
  migReq: number;
  padCnt: number;
  tver: number;
  pkey: number;
  fecn: number;
  becn: number;
  /** The six reserved bits of byte 4 (masked out of the ICRC). */
  resv6a: number;
  destQp: number;
  ackReq: number;
  /** The seven reserved bits of byte 8. */
  resv7: number;
  psn: number;
}

export interface Deth {
  qkey: number;
  resv8: number;
  srcQp: number;
}
export interface Rdeth {
  resv8: number;
  eeCtx: number;
}
export interface Xrceth {
  resv8: number;
  xrcSrq: number;
}
export interface Reth {
  va: bigint;
  rkey: number;
  dmaLength: number;
}
export interface AtomicEth {
  va: bigint;
  rkey: number;
  swapAdd: bigint;
  compare: bigint;
}
export interface Aeth {
  syndrome: number;
  msn: number;
}
export interface AtomicAckEth {
  origData: bigint;
}
/** FLUSH extended transport header (IBA 1.5): placement type and selectivity level. */
export interface Feth {
  raw: number;
}

/** BTH, first three dwords. */
export function writeBth(
  buf: Uint8Array,
  off: number,
  opcode: number,
  se: number,
  migReq: number,
  padCnt: number,
  pkey: number,
  fecn: number,
  becn: number,
  destQp: number,
  ackReq: number,
  psn: number,
): number {
  buf[off] = opcode;
  buf[off + 1] = ((se & 1) << 7) | ((migReq & 1) << 6) | ((padCnt & 3) << 4);
  buf[off + 2] = (pkey >>> 8) & 0xff;
  buf[off + 3] = pkey & 0xff;
  buf[off + 4] = ((fecn & 1) << 7) | ((becn & 1) << 6);
  buf[off + 5] = (destQp >>> 16) & 0xff;
  buf[off + 6] = (destQp >>> 8) & 0xff;
  buf[off + 7] = destQp & 0xff;
  buf[off + 8] = (ackReq & 1) << 7;
  buf[off + 9] = (psn >>> 16) & 0xff;
  buf[off + 10] = (psn >>> 8) & 0xff;
  buf[off + 11] = psn & 0xff;
  return off + 12;
}

/** Writes every BTH field, reserved bits included (exact re-encoding). */
export function writeBthFull(buf: Uint8Array, off: number, b: Bth): number {
  writeBth(buf, off, b.opcode, b.se, b.migReq, b.padCnt, b.pkey, b.fecn, b.becn, b.destQp, b.ackReq, b.psn);
  buf[off + 1]! |= b.tver & 0xf;
  buf[off + 4]! |= b.resv6a & 0x3f;
  buf[off + 8]! |= b.resv7 & 0x7f;
  return off + 12;
}

export function readBth(buf: Uint8Array, off: number): Bth {
  const b1 = buf[off + 1]!;
  const b4 = buf[off + 4]!;
  return {
    opcode: buf[off]!,
    se: b1 >>> 7,
    migReq: (b1 >>> 6) & 1,
    padCnt: (b1 >>> 4) & 3,
    tver: b1 & 0xf,
    pkey: (buf[off + 2]! << 8) | buf[off + 3]!,
    fecn: b4 >>> 7,
    becn: (b4 >>> 6) & 1,
    resv6a: b4 & 0x3f,
    destQp: read24(buf, off + 5),
    ackReq: buf[off + 8]! >>> 7,
    resv7: buf[off + 8]! & 0x7f,
    psn: read24(buf, off + 9),
  };
}

export function read24(buf: Uint8Array, off: number): number {
  return (buf[off]! << 16) | (buf[off + 1]! << 8) | buf[off + 2]!;
}

export function write24(buf: Uint8Array, off: number, v: number): void {
  buf[off] = (v >>> 16) & 0xff;
  buf[off + 1] = (v >>> 8) & 0xff;
  buf[off + 2] = v & 0xff;
}

export function read32(buf: Uint8Array, off: number): number {
  return ((buf[off]! << 24) | (buf[off + 1]! << 16) | (buf[off + 2]! << 8) | buf[off + 3]!) >>> 0;
}

export function write32(buf: Uint8Array, off: number, v: number): void {
  buf[off] = (v >>> 24) & 0xff;
  buf[off + 1] = (v >>> 16) & 0xff;
  buf[off + 2] = (v >>> 8) & 0xff;
  buf[off + 3] = v & 0xff;
}

export function read64(buf: Uint8Array, off: number): bigint {
  return (BigInt(read32(buf, off)) << 32n) | BigInt(read32(buf, off + 4));
}

export function write64(buf: Uint8Array, off: number, v: bigint): void {
  write32(buf, off, Number((v >> 32n) & 0xffffffffn));
  write32(buf, off + 4, Number(v & 0xffffffffn));
}

/** Writes a 64-bit value given as two 32-bit halves (no bigint on the hot path). */
export function write64Split(buf: Uint8Array, off: number, hi: number, lo: number): void {
  write32(buf, off, hi);
  write32(buf, off + 4, lo);
}

export function writeDeth(buf: Uint8Array, off: number, qkey: number, srcQp: number, resv8 = 0): void {
  write32(buf, off, qkey);
  buf[off + 4] = resv8 & 0xff;
  write24(buf, off + 5, srcQp);
}

export function readDeth(buf: Uint8Array, off: number): Deth {
  return { qkey: read32(buf, off), resv8: buf[off + 4]!, srcQp: read24(buf, off + 5) };
}

export function writeRdeth(buf: Uint8Array, off: number, eeCtx: number, resv8 = 0): void {
  buf[off] = resv8 & 0xff;
  write24(buf, off + 1, eeCtx);
}

export function readRdeth(buf: Uint8Array, off: number): Rdeth {
  return { resv8: buf[off]!, eeCtx: read24(buf, off + 1) };
}

export function writeXrceth(buf: Uint8Array, off: number, xrcSrq: number, resv8 = 0): void {
  buf[off] = resv8 & 0xff;
  write24(buf, off + 1, xrcSrq);
}

export function readXrceth(buf: Uint8Array, off: number): Xrceth {
  return { resv8: buf[off]!, xrcSrq: read24(buf, off + 1) };
}

export function writeReth(buf: Uint8Array, off: number, va: bigint, rkey: number, dmaLength: number): void {
  write64(buf, off, va);
  write32(buf, off + 8, rkey);
  write32(buf, off + 12, dmaLength);
}

export function readReth(buf: Uint8Array, off: number): Reth {
  return { va: read64(buf, off), rkey: read32(buf, off + 8), dmaLength: read32(buf, off + 12) };
}

export function writeAtomicEth(buf: Uint8Array, off: number, va: bigint, rkey: number, swapAdd: bigint, compare: bigint): void {
  write64(buf, off, va);
  write32(buf, off + 8, rkey);
  write64(buf, off + 12, swapAdd);
  write64(buf, off + 20, compare);
}

export function readAtomicEth(buf: Uint8Array, off: number): AtomicEth {
  return { va: read64(buf, off), rkey: read32(buf, off + 8), swapAdd: read64(buf, off + 12), compare: read64(buf, off + 20) };
}

export function writeAeth(buf: Uint8Array, off: number, syndrome: number, msn: number): void {
  buf[off] = syndrome & 0xff;
  write24(buf, off + 1, msn);
}

export function readAeth(buf: Uint8Array, off: number): Aeth {
  return { syndrome: buf[off]!, msn: read24(buf, off + 1) };
}

/** AETH syndromes (IBTA §9.7.5.1; SPEC-DIGEST §1.6). */
export const enum Syndrome {
  /** ACK with "invalid" credit count: what rxe always sends. */
  ACK_UNLIMITED = 0x1f,
  RNR_NAK_BASE = 0x20,
  NAK_PSN_SEQ_ERR = 0x60,
  NAK_INVALID_REQUEST = 0x61,
  NAK_REMOTE_ACCESS = 0x62,
  NAK_REMOTE_OP = 0x63,
  NAK_INVALID_RD_REQUEST = 0x64,
}

export const enum AethType {
  ACK = 0,
  RNR_NAK = 1,
  RESERVED = 2,
  NAK = 3,
}

export function aethType(syndrome: number): AethType {
  return ((syndrome >>> 5) & 3) as AethType;
}

export function aethValue(syndrome: number): number {
  return syndrome & 0x1f;
}
