/**
 * The DMA engine: gathers message bytes from host memory and scatters them
 * into it, through the memory protection table. Every access is checked
 * (key, protection domain, access right, bounds) before a byte moves, so no
 * memory outside a registered region is ever read or written.
 */
import { checkAccess, checkRemote, MrCheck, type ContextTables } from '../device/contexts.js';
import type { HostMemory } from '../device/host-memory.js';
import type { Sge } from './work-requests.js';

/**
 * An unshared buffer for copies between views that are not mutually
 * word-aligned (see copyBytes); grown on demand, one per thread.
 */
let scratch = new Uint8Array(new ArrayBuffer(16 * 1024 + 8));

/** Copies up to this many bytes go byte by byte. */
const SMALL_COPY = 32;

/**
 * dst[dstOff, dstOff+n) = src[srcOff, srcOff+n). The copy is a plain
 * `Uint8Array.set` unless one side lives in a SharedArrayBuffer (host
 * memory does) and the two addresses differ modulo 8: V8 copies to or from
 * shared memory with a relaxed-atomic memcpy that moves words only when
 * both sides are equally aligned and single bytes otherwise, about 15x
 * slower (4 KiB: ~0.9 µs against ~0.06 µs unshared, ~0.16 µs aligned). A
 * frame's payload sits at an odd offset (58 after RoCE v2/IPv4 + RETH)
 * while buffers are usually page-aligned, so that was the common case. Then
 * the bytes go through `scratch`, placed at the shared side's alignment:
 * one aligned shared copy and one plain memcpy.
 */
export function copyBytes(dst: Uint8Array, dstOff: number, src: Uint8Array, srcOff: number, n: number): void {
  if (n <= SMALL_COPY && dst.buffer !== src.buffer) {
    // A few bytes (an 8 B WRITE): a loop, not a subarray view (~100 bytes of garbage) per copy;
    // within one buffer `set` keeps its memmove semantics for overlapping ranges.
    for (let i = 0; i < n; i++) dst[dstOff + i] = src[srcOff + i]!;
    return;
  }
  const d = dst.byteOffset + dstOff;
  const s = src.byteOffset + srcOff;
  if (n >= 64 && ((d - s) & 7) !== 0) {
    const dShared = dst.buffer instanceof SharedArrayBuffer;
    const sShared = src.buffer instanceof SharedArrayBuffer;
    if (dShared !== sShared) {
      if (scratch.length < n + 8) scratch = new Uint8Array(new ArrayBuffer(n + 8));
      const k = (dShared ? d : s) & 7;
      scratch.set(src.subarray(srcOff, srcOff + n), k);
      dst.set(scratch.subarray(k, k + n), dstOff);
      return;
    }
    if (dShared && src.buffer !== dst.buffer) {
      // Host memory to host memory (a simulator payload read from the sender's memory,
      // wire/lazy-icrc.ts deferPayload): in at the source's alignment, moved to the
      // destination's within the scratch (unshared: any alignment), out aligned.
      if (scratch.length < n + 16) scratch = new Uint8Array(new ArrayBuffer(n + 16));
      const ks = s & 7;
      const kd = 8 + (d & 7);
      scratch.set(src.subarray(srcOff, srcOff + n), ks);
      scratch.copyWithin(kd, ks, ks + n);
      dst.set(scratch.subarray(kd, kd + n), dstOff);
      return;
    }
  }
  dst.set(src.subarray(srcOff, srcOff + n), dstOff);
}

/**
 * copyBytes between host memory and a buffer that is not host memory (a
 * frame), one function per direction: the two never overlap, so a few bytes
 * go without copyBytes' overlap check (reading a SharedArrayBuffer view's
 * `.buffer` costs ~20 ns), four at a time through host memory's DataView:
 * one 32-bit access of shared memory instead of four byte accesses (an
 * 8-byte gather plus scatter: ~35-50 ns by a byte loop, ~23 ns so, in a loop).
 */
/** Host memory at offset `host` → `dst[dstOff..]` (not host memory), `n` bytes. */
export function copyFromHost(mem: HostMemory, host: number, dst: Uint8Array, dstOff: number, n: number): void {
  if (n > SMALL_COPY) {
    copyBytes(dst, dstOff, mem.u8, host, n);
    return;
  }
  const dv = mem.dv;
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const v = dv.getUint32(host + i, true);
    dst[dstOff + i] = v;
    dst[dstOff + i + 1] = v >>> 8;
    dst[dstOff + i + 2] = v >>> 16;
    dst[dstOff + i + 3] = v >>> 24;
  }
  for (; i < n; i++) dst[dstOff + i] = mem.u8[host + i]!;
}

/** `src[srcOff..]` (not host memory) → host memory at offset `host`, `n` bytes. */
export function copyToHost(mem: HostMemory, host: number, src: Uint8Array, srcOff: number, n: number): void {
  if (n > SMALL_COPY) {
    copyBytes(mem.u8, host, src, srcOff, n);
    return;
  }
  const dv = mem.dv;
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const o = srcOff + i;
    dv.setUint32(host + i, src[o]! | (src[o + 1]! << 8) | (src[o + 2]! << 16) | (src[o + 3]! << 24), true);
  }
  for (; i < n; i++) mem.u8[host + i] = src[srcOff + i]!;
}

/**
 * Copies `len` bytes of the message described by `sges`, starting `offset`
 * bytes into it, to `dst[dstOff..]`, which is not host memory (a frame).
 * `needed` is the access right the local keys must grant (0 for a local
 * read). Returns MrCheck.OK or the fault.
 */
export function gather(
  mem: HostMemory,
  t: ContextTables,
  pdn: number,
  sges: readonly Sge[],
  offset: number,
  len: number,
  dst: Uint8Array,
  dstOff: number,
  needed = 0,
): MrCheck {
  let skip = offset;
  let left = len;
  for (let i = 0; i < sges.length && left > 0; i++) {
    const s = sges[i]!;
    if (skip >= s.length) {
      skip -= s.length;
      continue;
    }
    const n = Math.min(s.length - skip, left);
    const mr = t.mrByLkey(s.lkey);
    const st = checkAccess(t, mr, pdn, s.addr + skip, n, needed);
    if (st !== MrCheck.OK) return st;
    const host = t.mrTranslate(mr, s.addr + skip) - mem.baseNum;
    copyFromHost(mem, host, dst, dstOff, n);
    dstOff += n;
    left -= n;
    skip = 0;
  }
  return left === 0 ? MrCheck.OK : MrCheck.OUT_OF_BOUNDS;
}

/**
 * For a payload the receiver will read from the sender's memory (the
 * simulator's deferred payload, wire/lazy-icrc.ts): the host-memory offset
 * of message bytes [offset, offset + len) of `sges` when they lie in one
 * SGE whose key grants `needed`, else -1 (then `gather`, which also reports
 * any fault). Checks exactly what gather checks, moves nothing.
 */
export function gatherSource(mem: HostMemory, t: ContextTables, pdn: number, sges: readonly Sge[], offset: number, len: number, needed = 0): number {
  let skip = offset;
  for (let i = 0; i < sges.length; i++) {
    const s = sges[i]!;
    if (skip >= s.length) {
      skip -= s.length;
      continue;
    }
    if (s.length - skip < len) return -1;
    const mr = t.mrByLkey(s.lkey);
    if (checkAccess(t, mr, pdn, s.addr + skip, len, needed) !== MrCheck.OK) return -1;
    return t.mrTranslate(mr, s.addr + skip) - mem.baseNum;
  }
  return -1;
}

/**
 * The alignment mod 8 (byte offset within `mem.u8`'s buffer) of the host
 * byte a gather of `sges` from `offset` reads first, or -1 when its key
 * does not name an MR (the gather itself reports the fault): a frame whose
 * payload is placed to match gets one word-wise copy (copyBytes).
 */
export function gatherAlign(mem: HostMemory, t: ContextTables, sges: readonly Sge[], offset: number): number {
  let skip = offset;
  for (let i = 0; i < sges.length; i++) {
    const s = sges[i]!;
    if (skip >= s.length) {
      skip -= s.length;
      continue;
    }
    const mr = t.mrByLkey(s.lkey);
    if (mr < 0) return -1;
    return (mem.u8.byteOffset + t.mrTranslate(mr, s.addr + skip) - mem.baseNum) & 7;
  }
  return -1;
}

/**
 * Writes `src[srcOff, srcOff + len)` (not host memory: a frame, a
 * response's bytes) into the buffers described by `sges`, starting
 * `offset` bytes in. The keys must grant LOCAL_WRITE (pass it as
 * `needed`). Returns OUT_OF_BOUNDS when the SGEs are too short (the caller
 * reports a length error when the total is known to be too small before
 * calling).
 */
export function scatter(
  mem: HostMemory,
  t: ContextTables,
  pdn: number,
  sges: readonly Sge[],
  offset: number,
  src: Uint8Array,
  srcOff: number,
  len: number,
  needed: number,
): MrCheck {
  let skip = offset;
  let pos = 0;
  for (let i = 0; i < sges.length && pos < len; i++) {
    const s = sges[i]!;
    if (skip >= s.length) {
      skip -= s.length;
      continue;
    }
    const n = Math.min(s.length - skip, len - pos);
    const mr = t.mrByLkey(s.lkey);
    const st = checkAccess(t, mr, pdn, s.addr + skip, n, needed);
    if (st !== MrCheck.OK) return st;
    const host = t.mrTranslate(mr, s.addr + skip) - mem.baseNum;
    copyToHost(mem, host, src, srcOff + pos, n);
    pos += n;
    skip = 0;
  }
  return pos === len ? MrCheck.OK : MrCheck.OUT_OF_BOUNDS;
}

/** Checks every SGE of a local buffer up front (for the whole message). */
export function checkSges(t: ContextTables, pdn: number, sges: readonly Sge[], needed: number): MrCheck {
  for (const s of sges) {
    if (s.length === 0) continue;
    const st = checkAccess(t, t.mrByLkey(s.lkey), pdn, s.addr, s.length, needed);
    if (st !== MrCheck.OK) return st;
  }
  return MrCheck.OK;
}

/**
 * A remote access (RETH / AtomicETH) by QP `qpn` of PD `pdn`: the
 * host-memory offset of `va` when rkey (an MR's, or a bound window's)
 * grants `needed` over [va, va+len), else -1 - MrCheck.
 */
export function remoteOffset(mem: HostMemory, t: ContextTables, pdn: number, qpn: number, rkey: number, va: number, len: number, needed: number): number {
  const mr = checkRemote(t, rkey, pdn, qpn, va, len, needed);
  if (mr < 0) return mr;
  return t.mrTranslate(mr, va) - mem.baseNum;
}
