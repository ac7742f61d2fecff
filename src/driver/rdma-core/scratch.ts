/**
 * The scratch buffers the addon reads work requests from and writes work
 * completions to (record layouts: native/rdma_core.cc PostSend / PollCq,
 * native/extended.cc PollCqEx), and their encoders and decoders.
 */
import { IBV_SEND_INLINE, IBV_WR_ATOMIC_WRITE, IBV_WR_BIND_MW } from '../../device/abi/constants.js';
import type { ibv_send_wr, ibv_wc, ibv_wc_ex } from '../verbs/types.js';
import type { RdmaCoreAddon } from './addon.js';
import { heldRange, isNum, live, RcAh, RcMr, RcMw, type RcContext } from './objects.js';

export const WR_BYTES = 64 * 1024;
export const WC_REC = 48;
export const WC_MAX = 64;
export const MAX_WR = 64;
export const MAX_SGE = 512;
export const wrMem = new ArrayBuffer(WR_BYTES);
export const wr8 = new Uint8Array(wrMem);
export const wr32 = new Uint32Array(wrMem);
export const wr64 = new BigUint64Array(wrMem);
export const wcMem = new ArrayBuffer(WC_REC * WC_MAX);
export const wc8 = new Uint8Array(wcMem);
export const wc32 = new Uint32Array(wcMem);
export const wc16 = new Uint16Array(wcMem);
export const wc64 = new BigUint64Array(wcMem);
let scratchSet = false;
export function scratch(a: RdmaCoreAddon): void {
  if (!scratchSet) {
    a.setScratch(wr8, wc8);
    scratchSet = true;
  }
}

/**
 * Encodes WRs from `w` into the scratch (layout: rdma_core.cc PostSend),
 * at most MAX_WR and what fits. Returns the count, the WR after the last
 * one encoded, or the first malformed WR (count -1). Inline data must lie
 * in memory the context holds (heldRange); ATOMIC_WRITE's 8 bytes go in
 * the compare slot.
 */
export function encodeSend(first: ibv_send_wr, ud: boolean, ctx: RcContext): { n: number; rest: ibv_send_wr | null; bad: ibv_send_wr | null } {
  let w: ibv_send_wr | null = first;
  let n = 0;
  let off = 8; // bytes: the header holds the bad WR index
  let sges = 0;
  while (w && n < MAX_WR) {
    if (typeof w !== 'object') return { n: -1, rest: null, bad: w };
    const ns = w.num_sge;
    const list = w.sg_list;
    if (!isNum(ns) || ns < 0 || (ns > 0 && (!Array.isArray(list) || list.length < ns))) return { n: -1, rest: null, bad: w };
    if (off + 72 + 16 * ns > WR_BYTES || sges + ns > MAX_SGE) break;
    if (typeof w.wr_id !== 'bigint' || !isNum(w.opcode) || !isNum(w.send_flags)) return { n: -1, rest: null, bad: w };
    const q = off >> 2;
    wr64[q >> 1] = BigInt.asUintN(64, w.wr_id);
    wr32[q + 2] = w.opcode;
    wr32[q + 3] = w.send_flags;
    wr32[q + 4] = ns;
    wr32[q + 5] = w.imm_data ?? w.invalidate_rkey ?? 0;
    const u = w.wr;
    if (ud) {
      const x = u?.ud;
      const ah = x ? live(x.ah, RcAh) : null;
      if (!x || !ah) return { n: -1, rest: null, bad: w };
      wr64[(q >> 1) + 3] = 0n;
      wr32[q + 8] = 0;
      wr32[q + 9] = x.remote_qpn;
      wr32[q + 10] = x.remote_qkey;
      wr64[(q >> 1) + 8] = BigInt(ah.ptr);
    } else if (w.opcode === IBV_WR_BIND_MW) {
      const bm = w.bind_mw;
      const mw = bm ? live(bm.mw, RcMw) : null;
      const info = bm?.bind_info;
      const mr = info && info.mr !== null ? live(info.mr, RcMr) : null;
      if (
        !bm ||
        !mw ||
        !info ||
        (info.mr !== null && !mr) ||
        !isNum(bm.rkey) ||
        typeof info.addr !== 'bigint' ||
        typeof info.length !== 'bigint' ||
        !isNum(info.mw_access_flags)
      )
        return { n: -1, rest: null, bad: w };
      wr64[(q >> 1) + 3] = BigInt.asUintN(64, info.addr);
      wr32[q + 8] = bm.rkey;
      wr32[q + 9] = info.mw_access_flags;
      wr32[q + 10] = mw.rkey; // ibv_mw.rkey as the program holds it: the provider names the window by it
      wr64[(q >> 1) + 6] = BigInt(mr ? mr.ptr : 0);
      wr64[(q >> 1) + 7] = BigInt.asUintN(64, info.length);
      wr64[(q >> 1) + 8] = BigInt(mw.ptr);
    } else {
      const at = u?.atomic;
      const rd = u?.rdma;
      wr64[(q >> 1) + 3] = BigInt.asUintN(64, at?.remote_addr ?? rd?.remote_addr ?? 0n);
      wr32[q + 8] = at?.rkey ?? rd?.rkey ?? 0;
      wr64[(q >> 1) + 6] = BigInt.asUintN(64, at?.compare_add ?? 0n);
      wr64[(q >> 1) + 7] = BigInt.asUintN(64, at?.swap ?? 0n);
      if (w.opcode === IBV_WR_ATOMIC_WRITE) {
        const b = w.atomic_wire;
        if (!(b instanceof Uint8Array) || b.length !== 8) return { n: -1, rest: null, bad: w };
        wr8.set(b, off + 48);
      }
    }
    off += 72;
    for (let j = 0; j < ns; j++, off += 16) {
      const s = list![j]!;
      if (typeof s !== 'object' || s === null || typeof s.addr !== 'bigint' || !isNum(s.length) || !isNum(s.lkey)) return { n: -1, rest: null, bad: w };
      if (w.send_flags & IBV_SEND_INLINE && !heldRange(ctx, s.addr, s.length)) return { n: -1, rest: null, bad: w };
      wr64[off >> 3] = BigInt.asUintN(64, s.addr);
      wr32[(off >> 2) + 2] = s.length;
      wr32[(off >> 2) + 3] = s.lkey;
    }
    sges += ns;
    n++;
    w = w.next ?? null;
  }
  return { n, rest: w, bad: null };
}

export function nth<T extends { next: T | null }>(w: T, i: number): T {
  let x = w;
  for (let k = 0; k < i; k++) x = x.next!;
  return x;
}

export function newWc(): ibv_wc {
  return {
    wr_id: 0n,
    status: 0,
    opcode: 0,
    vendor_err: 0,
    byte_len: 0,
    imm_data: 0,
    invalidated_rkey: 0,
    qp_num: 0,
    src_qp: 0,
    wc_flags: 0,
    pkey_index: 0,
    slid: 0,
    sl: 0,
    dlid_path_bits: 0,
  };
}

/**
 * Fills `w` from the `i`th wc record of `rec` bytes (48: PollCq, 56:
 * PollCqEx, whose last 8 bytes are the completion timestamp).
 */
export function decodeWc(w: ibv_wc, i: number, rec: number): void {
  const b = (i * rec) >> 2;
  w.wr_id = wc64[b >> 1]!;
  w.status = wc32[b + 2]!;
  w.opcode = wc32[b + 3]!;
  w.vendor_err = wc32[b + 4]!;
  w.byte_len = wc32[b + 5]!;
  w.imm_data = wc32[b + 6]!;
  w.invalidated_rkey = w.imm_data;
  w.qp_num = wc32[b + 7]!;
  w.src_qp = wc32[b + 8]!;
  w.wc_flags = wc32[b + 9]!;
  w.pkey_index = wc16[(b + 10) * 2]!;
  w.slid = wc16[(b + 10) * 2 + 1]!;
  w.sl = wc8[i * rec + 44]!;
  w.dlid_path_bits = wc8[i * rec + 45]!;
  if (rec > WC_REC) (w as ibv_wc_ex).completion_ts = wc64[(b >> 1) + 6]!;
}
