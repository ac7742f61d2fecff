/**
 * The DMA engine: gathers message bytes from host memory and scatters them
 * into it, through the memory protection table. Every access is checked
 * (key, protection domain, access right, bounds) before a byte moves, so no
 * memory outside a registered region is ever read or written.
 */
import { checkAccess, MrCheck, type ContextTables } from '../device/contexts.js';
import type { HostMemory } from '../device/host-memory.js';
import type { Sge } from './work-requests.js';

/**
 * Copies `len` bytes of the message described by `sges`, starting `offset`
 * bytes into it, to `dst[dstOff..]`. `needed` is the access right the local
 * keys must grant (0 for a local read). Returns MrCheck.OK or the fault.
 */
export function gather(mem: HostMemory, t: ContextTables, pdn: number, sges: readonly Sge[], offset: number, len: number, dst: Uint8Array, dstOff: number, needed = 0): MrCheck {
  let skip = offset;
  let left = len;
  for (let i = 0; i < sges.length && left > 0; i++) {
    const s = sges[i]!;
    if (skip >= s.length) {
      skip -= s.length;
      continue;
    }
    const n = Math.min(s.length - skip, left);
    const mr = t.mrByKey(s.lkey);
    const st = checkAccess(t, mr, pdn, s.addr + skip, n, needed);
    if (st !== MrCheck.OK) return st;
    const host = t.mrTranslate(mr, s.addr + skip) - mem.baseNum;
    dst.set(mem.u8.subarray(host, host + n), dstOff);
    dstOff += n;
    left -= n;
    skip = 0;
  }
  return left === 0 ? MrCheck.OK : MrCheck.OUT_OF_BOUNDS;
}

/**
 * Writes `src` into the buffers described by `sges`, starting `offset`
 * bytes in. The keys must grant LOCAL_WRITE (pass it as `needed`). Returns
 * OUT_OF_BOUNDS when the SGEs are too short (the caller reports a length
 * error when the total is known to be too small before calling).
 */
export function scatter(mem: HostMemory, t: ContextTables, pdn: number, sges: readonly Sge[], offset: number, src: Uint8Array, needed: number): MrCheck {
  let skip = offset;
  let pos = 0;
  for (let i = 0; i < sges.length && pos < src.length; i++) {
    const s = sges[i]!;
    if (skip >= s.length) {
      skip -= s.length;
      continue;
    }
    const n = Math.min(s.length - skip, src.length - pos);
    const mr = t.mrByKey(s.lkey);
    const st = checkAccess(t, mr, pdn, s.addr + skip, n, needed);
    if (st !== MrCheck.OK) return st;
    const host = t.mrTranslate(mr, s.addr + skip) - mem.baseNum;
    mem.u8.set(src.subarray(pos, pos + n), host);
    pos += n;
    skip = 0;
  }
  return pos === src.length ? MrCheck.OK : MrCheck.OUT_OF_BOUNDS;
}

/** Checks every SGE of a local buffer up front (for the whole message). */
export function checkSges(t: ContextTables, pdn: number, sges: readonly Sge[], needed: number): MrCheck {
  for (const s of sges) {
    if (s.length === 0) continue;
    const st = checkAccess(t, t.mrByKey(s.lkey), pdn, s.addr, s.length, needed);
    if (st !== MrCheck.OK) return st;
  }
  return MrCheck.OK;
}

/**
 * A remote access (RETH / AtomicETH): the host-memory offset of `va` when
 * rkey grants `needed` over [va, va+len), else -1 - MrCheck.
 */
export function remoteOffset(mem: HostMemory, t: ContextTables, pdn: number, rkey: number, va: number, len: number, needed: number): number {
  const mr = t.mrByKey(rkey);
  const st = checkAccess(t, mr, pdn, va, len, needed);
  if (st !== MrCheck.OK) return -1 - st;
  return t.mrTranslate(mr, va) - mem.baseNum;
}
