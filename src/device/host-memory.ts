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

export const DEFAULT_HOST_MEMORY_BYTES = 64 * 1024 * 1024;
export const DEFAULT_HOST_BASE = 0x1_0000_0000n;
export const HOST_PAGE_SIZE = 4096;

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
}

/** First-fit allocator over byte offsets, with coalescing free. */
class FirstFitAllocator {
  /** Free extents sorted by offset, never adjacent (always coalesced). */
  private readonly free: Extent[];
  /** Live allocations: offset -> length. */
  private readonly live = new Map<number, number>();

  constructor(
    size: number,
    private readonly baseNum: number,
  ) {
    this.free = [{ off: 0, len: size }];
  }

  alloc(len: number, align: number): number {
    for (let i = 0; i < this.free.length; i++) {
      const e = this.free[i]!;
      const start = Math.ceil((this.baseNum + e.off) / align) * align - this.baseNum;
      const pad = start - e.off;
      if (pad + len > e.len) continue;
      const tail: Extent = { off: start + len, len: e.off + e.len - (start + len) };
      const pieces: Extent[] = [];
      if (pad > 0) pieces.push({ off: e.off, len: pad });
      if (tail.len > 0) pieces.push(tail);
      this.free.splice(i, 1, ...pieces);
      this.live.set(start, len);
      return start;
    }
    return -1;
  }

  release(off: number): boolean {
    const len = this.live.get(off);
    if (len === undefined) return false;
    this.live.delete(off);
    let i = 0;
    while (i < this.free.length && this.free[i]!.off < off) i++;
    this.free.splice(i, 0, { off, len });
    // Coalesce with the next, then with the previous extent.
    const cur = this.free[i]!;
    const next = this.free[i + 1];
    if (next && cur.off + cur.len === next.off) {
      cur.len += next.len;
      this.free.splice(i + 1, 1);
    }
    const prev = this.free[i - 1];
    if (prev && prev.off + prev.len === cur.off) {
      prev.len += cur.len;
      this.free.splice(i, 1);
    }
    return true;
  }

  get bytesFree(): number {
    return this.free.reduce((s, e) => s + e.len, 0);
  }

  get liveCount(): number {
    return this.live.size;
  }
}

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
  private readonly allocator: FirstFitAllocator | null;

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
    this.allocator = withAllocator ? new FirstFitAllocator(size, this.baseNum) : null;
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
    this.u8.fill(0, off, off + rounded);
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
