/**
 * Host memory: the RAM the driver allocates rings, buffers, doorbell
 * records and mailbox pages in, and the only memory the device reaches (by
 * DMA). It is one SharedArrayBuffer mapped at a device-visible 64-bit base
 * address, so both threads of the realtime runtime see the same bytes.
 *
 * Addresses. A device address is `base + byteOffset`. The base is non-zero
 * (default 0x1_0000_0000), so address 0 is never valid and can mean "none"
 * in commands. base + size stays below 2^53, so every address is also an
 * exact JavaScript number: hot paths use the `...N` number variants and
 * never touch bigint.
 *
 * Ownership. The allocator belongs to the thread that created the memory
 * (the driver). Other threads `attach` to the descriptor and only get DMA
 * access (views, offsets, bounds checks).
 *
 * Ordering. Plain typed-array writes are not ordered across threads; the
 * interface always publishes data with an Atomics store that the other side
 * reads with Atomics.load (a producer index, an owner bit, a status
 * register). `i32` (Int32Array over the whole memory) is the view for those.
 */
import { DeviceError } from './errors.js';
import { fillBytes } from './fill-bytes.js';

export const DEFAULT_HOST_MEMORY_BYTES = 64 * 1024 * 1024;
export const DEFAULT_HOST_BASE = 0x1_0000_0000n;
export const HOST_PAGE_SIZE = 4096;

/**
 * The alignment a driver gives a ring of `bytes` (a power of two): natural
 * up to a page, at least the 64 bytes the device requires. A small ring
 * then never crosses a page and never pads a page of its own (16 WQEs of
 * 64 B take 1 KiB, not 4 KiB): host memory per QP stays close to its ring bytes.
 */
export function ringAlign(bytes: number): number {
  return bytes >= HOST_PAGE_SIZE ? HOST_PAGE_SIZE : bytes <= 64 ? 64 : 2 ** Math.ceil(Math.log2(bytes));
}

/** What another thread needs to attach to the same memory (structured-cloneable). */
export interface HostMemoryDescriptor {
  readonly sab: SharedArrayBuffer;
  readonly base: bigint;
}

/** One allocation: its device address (bigint and number) and a view of its bytes. */
export interface HostBuffer {
  readonly addr: bigint;
  readonly addrNum: number;
  readonly view: Uint8Array;
}

interface Extent {
  off: number;
  len: number;
  /** Index of the size bin it is in (floor(log2(len))), and its place in that bin's stack. */
  bin: number;
  at: number;
}

/** floor(log2(n)) for n ≥ 1 (exact up to 2^53). */
function log2Floor(n: number): number {
  return n < 2 ** 31 ? 31 - Math.clz32(n) : Math.floor(Math.log2(n));
}

const BINS = 54;
/** Extents tried per bin that may or may not fit, before a sure one is split. */
const PROBES = 8;

/**
 * Segregated-fit allocator over byte offsets, with coalescing free: free
 * extents sit in bins by size class (2^k ≤ len < 2^(k+1)) and in two maps by
 * start and end, so allocation, free and coalescing cost O(number of bins),
 * not O(number of free extents) — creating 100,000 QPs does not slow down
 * as memory fragments. An allocation first tries a few extents of the bins
 * that may hold it (small fragments are reused), then takes the most
 * recently freed extent of the smallest bin whose every extent is sure to
 * fit (length plus the worst alignment padding); when neither works it
 * searches every extent that might, so it fails only when none can hold it.
 * Deterministic: the same calls give the same addresses.
 */
class BinnedAllocator {
  /** Per bin, a stack of free extents (removal swaps the last one in: O(1)). */
  private readonly bins: Extent[][] = Array.from({ length: BINS }, () => []);
  /** Bit k set: bins[k] is not empty (k < 32), bits of bins 32.. in nonEmptyHi. */
  private nonEmptyLo = 0;
  private nonEmptyHi = 0;
  /**
   * Free extents by start and by end offset / 8. Dictionary objects, not
   * Maps: under this allocator's insert/delete churn V8's Map costs ~10× more
   * per operation at 10^4..10^5 entries (measured).
   */
  private readonly byStart: Record<number, Extent | undefined> = Object.create(null) as Record<number, Extent | undefined>;
  private readonly byEnd: Record<number, Extent | undefined> = Object.create(null) as Record<number, Extent | undefined>;
  private extents = 0;
  /** Live allocations: offset -> length. */
  private readonly live = new Map<number, number>();
  private freeBytes = 0;

  constructor(
    size: number,
    private readonly baseNum: number,
  ) {
    this.insert(0, size);
  }

  private insert(off: number, len: number): void {
    const bin = log2Floor(len);
    const stack = this.bins[bin]!;
    const e: Extent = { off, len, bin, at: stack.length };
    stack.push(e);
    if (bin < 32) this.nonEmptyLo |= 1 << bin;
    else this.nonEmptyHi |= 1 << (bin - 32);
    this.byStart[off / 8] = e;
    this.byEnd[(off + len) / 8] = e;
    this.extents++;
    this.freeBytes += len;
  }

  private remove(e: Extent): void {
    const stack = this.bins[e.bin]!;
    const last = stack.pop()!;
    if (last !== e) {
      stack[e.at] = last;
      last.at = e.at;
    }
    if (stack.length === 0) {
      if (e.bin < 32) this.nonEmptyLo &= ~(1 << e.bin);
      else this.nonEmptyHi &= ~(1 << (e.bin - 32));
    }
    delete this.byStart[e.off / 8];
    delete this.byEnd[(e.off + e.len) / 8];
    this.extents--;
    this.freeBytes -= e.len;
  }

  /** Lowest non-empty bin ≥ k, or -1. */
  private firstBinFrom(k: number): number {
    if (k < 32) {
      const m = this.nonEmptyLo & (k === 0 ? -1 : ~((1 << k) - 1));
      if (m !== 0) return 31 - Math.clz32(m & -m);
      k = 32;
    }
    const j = k - 32;
    if (j >= 32) return -1;
    const m = this.nonEmptyHi & (j === 0 ? -1 : ~((1 << j) - 1));
    return m !== 0 ? 63 - Math.clz32(m & -m) : -1;
  }

  private startOf(e: Extent, align: number): number {
    return Math.ceil((this.baseNum + e.off) / align) * align - this.baseNum;
  }

  alloc(len: number, align: number): number {
    // Offsets and lengths are multiples of 8: padding to `align` is at most align - 8.
    const worst = len + (align > 8 ? align - 8 : 0);
    const sure = log2Floor(worst) + (2 ** log2Floor(worst) === worst ? 0 : 1);
    const first = log2Floor(len);
    const top = Math.min(sure, BINS);
    // Fragments that may fit (a few from the top of each bin): reuse them before splitting a larger extent.
    for (let b = first; b < top; b++) {
      const stack = this.bins[b]!;
      for (let i = stack.length - 1, n = 0; i >= 0 && n < PROBES; i--, n++) {
        const e = stack[i]!;
        const start = this.startOf(e, align);
        if (start + len <= e.off + e.len) return this.carve(e, start, len);
      }
    }
    const k = sure < BINS ? this.firstBinFrom(sure) : -1;
    if (k >= 0) {
      const stack = this.bins[k]!;
      const e = stack[stack.length - 1]!;
      return this.carve(e, this.startOf(e, align), len);
    }
    // Last resort (memory nearly full): every extent that might fit.
    for (let b = first; b < top; b++) {
      for (const e of this.bins[b]!) {
        const start = this.startOf(e, align);
        if (start + len <= e.off + e.len) return this.carve(e, start, len);
      }
    }
    return -1;
  }

  private carve(e: Extent, start: number, len: number): number {
    const { off, len: total } = e;
    this.remove(e);
    if (start > off) this.insert(off, start - off);
    const tail = off + total - (start + len);
    if (tail > 0) this.insert(start + len, tail);
    this.live.set(start, len);
    return start;
  }

  release(off: number): boolean {
    const len = this.live.get(off);
    if (len === undefined) return false;
    this.live.delete(off);
    let start = off;
    let end = off + len;
    const prev = this.byEnd[start / 8];
    if (prev) {
      this.remove(prev);
      start = prev.off;
    }
    const next = this.byStart[end / 8];
    if (next) {
      this.remove(next);
      end = next.off + next.len;
    }
    this.insert(start, end - start);
    return true;
  }

  get bytesFree(): number {
    return this.freeBytes;
  }

  get liveCount(): number {
    return this.live.size;
  }

  /** Free extents (diagnostics and tests: fragmentation). */
  get freeExtents(): number {
    return this.extents;
  }
}

/** True when typed arrays are little-endian here, as the device layouts are (every platform Node runs on in practice). */
export const HOST_LITTLE_ENDIAN = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;

export class HostMemory {
  readonly sab: SharedArrayBuffer;
  /** Size in bytes. */
  readonly size: number;
  /** Device address of byte 0. */
  readonly base: bigint;
  /** The same, as a number (exact). */
  readonly baseNum: number;
  /** First address past the end, as a number. */
  readonly endNum: number;
  readonly u8: Uint8Array;
  readonly dv: DataView;
  /** For Atomics on 4-byte aligned words (doorbell records, mailbox status). */
  readonly i32: Int32Array;
  /**
   * 8-byte aligned 64-bit words in the host's byte order: on a little-endian
   * host (`HOST_LITTLE_ENDIAN`, the layouts' order) a store here is ~4x
   * cheaper than `dv.setBigUint64`.
   */
  readonly u64: BigUint64Array;
  private readonly allocator: BinnedAllocator | null;

  private constructor(desc: HostMemoryDescriptor, withAllocator: boolean) {
    const { sab, base } = desc;
    const size = sab.byteLength;
    if (size === 0 || size % HOST_PAGE_SIZE !== 0) {
      throw new DeviceError('DEV_ERR_BAD_CONFIG', `host memory size ${size} must be a non-zero multiple of 4096`);
    }
    if (base <= 0n || base % BigInt(HOST_PAGE_SIZE) !== 0n) {
      throw new DeviceError('DEV_ERR_BAD_CONFIG', `host memory base 0x${base.toString(16)} must be non-zero and page aligned`);
    }
    if (base + BigInt(size) > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new DeviceError('DEV_ERR_BAD_CONFIG', 'host memory must end below 2^53');
    }
    this.sab = sab;
    this.size = size;
    this.base = base;
    this.baseNum = Number(base);
    this.endNum = this.baseNum + size;
    this.u8 = new Uint8Array(sab);
    this.dv = new DataView(sab);
    this.i32 = new Int32Array(sab);
    this.u64 = new BigUint64Array(sab);
    this.allocator = withAllocator ? new BinnedAllocator(size, this.baseNum) : null;
  }

  /** New memory, owned (and allocated from) by the calling thread: the driver. */
  static create(opts: { size?: number; base?: bigint } = {}): HostMemory {
    const size = opts.size ?? DEFAULT_HOST_MEMORY_BYTES;
    return new HostMemory({ sab: new SharedArrayBuffer(size), base: opts.base ?? DEFAULT_HOST_BASE }, true);
  }

  /** Attach to memory created elsewhere (the device side): DMA access only, no allocator. */
  static attach(desc: HostMemoryDescriptor): HostMemory {
    return new HostMemory(desc, false);
  }

  get descriptor(): HostMemoryDescriptor {
    return { sab: this.sab, base: this.base };
  }

  // -------------------------------------------------------------------------
  // Driver side: allocation
  // -------------------------------------------------------------------------

  /**
   * Allocate `len` bytes at an address that is a multiple of `align` (a
   * power of two). The bytes are zeroed, like calloc: a new CQ or EQ ring is
   * therefore "all entries owned by the device". Throws DEV_ERR_NO_MEMORY.
   */
  alloc(len: number, align = 64): HostBuffer {
    if (!this.allocator) throw new DeviceError('DEV_ERR_NO_ALLOCATOR', 'this HostMemory was attached, not created: it has no allocator');
    if (!Number.isInteger(align) || align < 1 || (align & (align - 1)) !== 0 || align > 2 ** 30) {
      throw new DeviceError('DEV_ERR_BAD_ALIGN', `alignment ${align} is not a power of two ≤ 2^30`);
    }
    if (!Number.isInteger(len) || len <= 0) throw new DeviceError('DEV_ERR_NO_MEMORY', `bad allocation length ${len}`);
    const rounded = Math.ceil(len / 8) * 8;
    const off = this.allocator.alloc(rounded, align);
    if (off < 0) {
      throw new DeviceError('DEV_ERR_NO_MEMORY', `no free extent of ${rounded} bytes aligned to ${align} (${this.allocator.bytesFree} bytes free)`);
    }
    fillBytes(this.u8, 0, off, off + rounded);
    const addrNum = this.baseNum + off;
    return { addr: BigInt(addrNum), addrNum, view: this.u8.subarray(off, off + len) };
  }

  /** Free an allocation by its address. Throws DEV_ERR_BAD_FREE if it is not one. */
  free(addr: bigint | number): void {
    if (!this.allocator) throw new DeviceError('DEV_ERR_NO_ALLOCATOR', 'this HostMemory has no allocator');
    const off = Number(addr) - this.baseNum;
    if (!this.allocator.release(off)) {
      throw new DeviceError('DEV_ERR_BAD_FREE', `0x${addr.toString(16)} is not the start of a live allocation`);
    }
  }

  /** Free extents of the allocator (fragmentation; driver side diagnostics). */
  get freeExtentCount(): number {
    return this.allocator ? this.allocator.freeExtents : 0;
  }

  /** Bytes not allocated (driver side diagnostics). */
  get bytesFree(): number {
    return this.allocator ? this.allocator.bytesFree : 0;
  }

  /** Number of live allocations (driver side diagnostics, leak tests). */
  get allocationCount(): number {
    return this.allocator ? this.allocator.liveCount : 0;
  }

  /** Device address of the first byte of `view`, which must be a view of this memory. */
  addrOf(view: Uint8Array): bigint {
    return BigInt(this.addrOfN(view));
  }

  /** addrOf as a number. */
  addrOfN(view: Uint8Array): number {
    if (view.buffer !== this.sab) {
      throw new DeviceError('DEV_ERR_NOT_HOST_MEMORY', 'the view is not over this host memory');
    }
    return this.baseNum + view.byteOffset;
  }

  // -------------------------------------------------------------------------
  // Device side: DMA. Number variants are the hot path.
  // -------------------------------------------------------------------------

  /** Is [addr, addr + len) inside host memory? (NaN and negative lengths are not.) */
  inRangeN(addr: number, len: number): boolean {
    return addr >= this.baseNum && len >= 0 && addr + len <= this.endNum;
  }

  /**
   * Byte offset of `addr` into `u8`/`dv`/`i32` if [addr, addr + len) is
   * inside host memory, else -1. Allocates nothing.
   */
  offsetN(addr: number, len: number): number {
    return addr >= this.baseNum && len >= 0 && addr + len <= this.endNum ? addr - this.baseNum : -1;
  }

  /** offsetN for a bigint address; throws DEV_ERR_DMA_OUT_OF_RANGE. */
  offsetOf(addr: bigint, len: number): number {
    const off = this.offsetN(Number(addr), len);
    if (off < 0 || addr > BigInt(Number.MAX_SAFE_INTEGER)) this.outOfRange(addr, len);
    return off;
  }

  /** A view (no copy) of [addr, addr + len); throws DEV_ERR_DMA_OUT_OF_RANGE outside memory. */
  dmaView(addr: bigint, len: number): Uint8Array {
    const off = this.offsetOf(addr, len);
    return this.u8.subarray(off, off + len);
  }

  /** dmaView with a number address. */
  dmaViewN(addr: number, len: number): Uint8Array {
    const off = this.offsetN(addr, len);
    if (off < 0) this.outOfRange(addr, len);
    return this.u8.subarray(off, off + len);
  }

  private outOfRange(addr: bigint | number, len: number): never {
    throw new DeviceError(
      'DEV_ERR_DMA_OUT_OF_RANGE',
      `DMA [0x${addr.toString(16)}, +${len}) is outside host memory [0x${this.base.toString(16)}, 0x${this.endNum.toString(16)})`,
    );
  }
}
