/** The native InfiniBand routing headers: LRH and GRH (IBTA vol. 1 §7.7, §8.3). */

export const LRH_LENGTH = 8;
export const GRH_LENGTH = 40;
/** GRH NxtHdr value for IBA transport. */
export const GRH_NEXT_HEADER_IBA = 0x1b;

/** LRH LNH: what follows the LRH. */
export const enum Lnh {
  RAW = 0,
  IP_NON_IBA = 1,
  IBA_LOCAL = 2,
  IBA_GLOBAL = 3,
}

export interface Lrh {
  vl: number;
  lver: number;
  sl: number;
  /** Bits 3..2 of byte 1, reserved. */
  resv2: number;
  lnh: number;
  dlid: number;
  /** Bits 7..3 of byte 4, reserved. */
  resv5: number;
  /** In 4-byte words, LRH through ICRC (filled by the encoder). */
  pktLen: number;
  slid: number;
}

export interface Grh {
  ipVer: number;
  trafficClass: number;
  flowLabel: number;
  /** Bytes from the BTH through the ICRC (filled by the encoder). */
  payLen: number;
  nextHeader: number;
  hopLimit: number;
  sgid: Uint8Array;
  dgid: Uint8Array;
}

export function writeLrh(buf: Uint8Array, off: number, h: Lrh, pktLenWords: number): number {
  buf[off] = ((h.vl & 0xf) << 4) | (h.lver & 0xf);
  buf[off + 1] = ((h.sl & 0xf) << 4) | ((h.resv2 & 3) << 2) | (h.lnh & 3);
  buf[off + 2] = (h.dlid >>> 8) & 0xff;
  buf[off + 3] = h.dlid & 0xff;
  buf[off + 4] = ((h.resv5 & 0x1f) << 3) | ((pktLenWords >>> 8) & 7);
  buf[off + 5] = pktLenWords & 0xff;
  buf[off + 6] = (h.slid >>> 8) & 0xff;
  buf[off + 7] = h.slid & 0xff;
  return off + LRH_LENGTH;
}

export function readLrh(buf: Uint8Array, off: number): Lrh {
  return {
    vl: buf[off]! >>> 4,
    lver: buf[off]! & 0xf,
    sl: buf[off + 1]! >>> 4,
    resv2: (buf[off + 1]! >>> 2) & 3,
    lnh: buf[off + 1]! & 3,
    dlid: (buf[off + 2]! << 8) | buf[off + 3]!,
    resv5: buf[off + 4]! >>> 3,
    pktLen: ((buf[off + 4]! & 7) << 8) | buf[off + 5]!,
    slid: (buf[off + 6]! << 8) | buf[off + 7]!,
  };
}

export function writeGrh(buf: Uint8Array, off: number, h: Grh, payLen: number): number {
  const tc = h.trafficClass & 0xff;
  const fl = h.flowLabel & 0xfffff;
  buf[off] = ((h.ipVer & 0xf) << 4) | (tc >>> 4);
  buf[off + 1] = ((tc & 0xf) << 4) | (fl >>> 16);
  buf[off + 2] = (fl >>> 8) & 0xff;
  buf[off + 3] = fl & 0xff;
  buf[off + 4] = payLen >>> 8;
  buf[off + 5] = payLen & 0xff;
  buf[off + 6] = h.nextHeader & 0xff;
  buf[off + 7] = h.hopLimit & 0xff;
  buf.set(h.sgid.subarray(0, 16), off + 8);
  buf.set(h.dgid.subarray(0, 16), off + 24);
  return off + GRH_LENGTH;
}

export function readGrh(buf: Uint8Array, off: number): Grh {
  return {
    ipVer: buf[off]! >>> 4,
    trafficClass: ((buf[off]! & 0xf) << 4) | (buf[off + 1]! >>> 4),
    flowLabel: ((buf[off + 1]! & 0xf) << 16) | (buf[off + 2]! << 8) | buf[off + 3]!,
    payLen: (buf[off + 4]! << 8) | buf[off + 5]!,
    nextHeader: buf[off + 6]!,
    hopLimit: buf[off + 7]!,
    sgid: buf.subarray(off + 8, off + 24),
    dgid: buf.subarray(off + 24, off + 40),
  };
}
