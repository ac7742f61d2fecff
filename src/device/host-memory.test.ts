import { describe, expect, it } from 'vitest';
import { DEFAULT_HOST_BASE, HostMemory } from './host-memory.js';

describe('HostMemory', () => {
  it('maps at a non-zero base; addresses are exact numbers and bigints', () => {
    const m = HostMemory.create({ size: 1 << 20 });
    expect(m.base).toBe(DEFAULT_HOST_BASE);
    expect(m.baseNum).toBe(0x1_0000_0000);
    const b = m.alloc(100);
    expect(b.addr).toBe(BigInt(b.addrNum));
    expect(b.addrNum).toBeGreaterThanOrEqual(m.baseNum);
    expect(m.addrOf(b.view)).toBe(b.addr);
    expect(m.addrOf(b.view.subarray(10))).toBe(b.addr + 10n);
  });

  it('allocates first-fit with alignment, zeroed, and coalesces on free', () => {
    const m = HostMemory.create({ size: 64 * 1024 });
    const a = m.alloc(10, 8);
    const b = m.alloc(100, 4096);
    expect(b.addrNum % 4096).toBe(0);
    const c = m.alloc(8, 8);
    expect(c.addrNum).toBe(a.addrNum + 16); // fills the hole before b (first fit)
    b.view.fill(0xaa);
    m.free(b.addr);
    const b2 = m.alloc(100, 4096);
    expect(b2.addrNum).toBe(b.addrNum);
    expect(b2.view.every((x) => x === 0)).toBe(true);
    m.free(a.addr);
    m.free(c.addrNum);
    m.free(b2.addr);
    expect(m.bytesFree).toBe(64 * 1024);
    expect(m.allocationCount).toBe(0);
    // After full coalescing one allocation can take everything.
    expect(m.alloc(64 * 1024, 4096).addrNum).toBe(m.baseNum);
  });

  it('reports typed errors', () => {
    const m = HostMemory.create({ size: 8192 });
    expect(() => m.alloc(10, 3)).toThrowError(expect.objectContaining({ code: 'DEV_ERR_BAD_ALIGN' }));
    expect(() => m.alloc(16384)).toThrowError(expect.objectContaining({ code: 'DEV_ERR_NO_MEMORY' }));
    expect(() => m.free(m.base + 8n)).toThrowError(expect.objectContaining({ code: 'DEV_ERR_BAD_FREE' }));
    expect(() => m.addrOf(new Uint8Array(4))).toThrowError(expect.objectContaining({ code: 'DEV_ERR_NOT_HOST_MEMORY' }));
    expect(() => m.dmaView(m.base - 1n, 4)).toThrowError(expect.objectContaining({ code: 'DEV_ERR_DMA_OUT_OF_RANGE' }));
    expect(() => m.dmaView(m.base + 8190n, 4)).toThrowError(expect.objectContaining({ code: 'DEV_ERR_DMA_OUT_OF_RANGE' }));
    expect(() => m.dmaView(0n, 1)).toThrowError(expect.objectContaining({ code: 'DEV_ERR_DMA_OUT_OF_RANGE' }));
    expect(() => HostMemory.create({ size: 4096, base: 0n })).toThrowError(expect.objectContaining({ code: 'DEV_ERR_BAD_CONFIG' }));
    expect(() => HostMemory.create({ size: 1000 })).toThrowError(expect.objectContaining({ code: 'DEV_ERR_BAD_CONFIG' }));
  });

  it('DMA views alias the same bytes (no copy) and attached memories share them', () => {
    const m = HostMemory.create({ size: 8192 });
    const b = m.alloc(16);
    const dev = HostMemory.attach(m.descriptor);
    const v = dev.dmaView(b.addr, 16);
    v[3] = 7;
    expect(b.view[3]).toBe(7);
    expect(dev.offsetN(b.addrNum, 16)).toBe(b.addrNum - m.baseNum);
    expect(dev.offsetN(b.addrNum, 1e9)).toBe(-1);
    expect(dev.offsetN(NaN, 1)).toBe(-1);
    expect(dev.inRangeN(m.endNum - 4, 4)).toBe(true);
    expect(dev.inRangeN(m.endNum - 4, 5)).toBe(false);
    expect(() => dev.alloc(8)).toThrowError(expect.objectContaining({ code: 'DEV_ERR_NO_ALLOCATOR' }));
  });
});
