/**
 * The rdma-core provider where no RDMA device exists: its ops table covers
 * the model's, it checks its objects, it hides itself on request, and the
 * addon's parts that need no device (page-aligned buffers, fd readiness
 * through uv_poll) work. On a real device: npm run hw-test.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { errno } from '../../device/abi/constants.js';
import { model_ctx_ops } from '../model/ops.js';
import { providers } from '../providers.js';
import { newDeviceAttr, newWcArray } from '../verbs/structs.js';
import type { ibv_context } from '../verbs/types.js';
import { rdmaCoreAddon, rdmaCoreUnavailable } from './addon.js';
import { rdma_core_ctx_ops, rdmaCoreProvider, syncRdmaCoreProvider } from './provider.js';

const addon = rdmaCoreAddon();
const fake = { device: {}, cmd_fd: -1, async_fd: -1, num_comp_vectors: 0 } as unknown as ibv_context;

describe('rdma-core provider', () => {
  afterEach(() => {
    delete process.env['RNIC_NO_RDMA_CORE'];
  });

  it('has every op the model provider has', () => {
    expect(Object.keys(rdma_core_ctx_ops).sort()).toEqual(Object.keys(model_ctx_ops).sort());
  });

  it('refuses objects that are not its own, in the way of each verb', () => {
    expect(rdma_core_ctx_ops.query_device(fake, newDeviceAttr())).toBe(errno.EINVAL);
    expect(rdma_core_ctx_ops.poll_cq({ context: fake } as never, 1, newWcArray(1))).toBe(-errno.EINVAL);
    expect(rdma_core_ctx_ops.dealloc_pd({ context: fake, handle: 0 } as never)).toBe(errno.EINVAL);
    expect(() => rdma_core_ctx_ops.alloc_pd(fake)).toThrow(expect.objectContaining({ code: 'EINVAL' }));
    expect(() => rdmaCoreProvider.open({ name: 'x' } as never)).toThrow(expect.objectContaining({ code: 'EINVAL' }));
    return expect(rdma_core_ctx_ops.get_cq_event({ context: fake } as never)).rejects.toMatchObject({ code: 'EINVAL' });
  });

  it('is listed after a sync unless RNIC_NO_RDMA_CORE=1, and only when the addon loads', () => {
    process.env['RNIC_NO_RDMA_CORE'] = '1';
    syncRdmaCoreProvider();
    expect(providers()).not.toContain(rdmaCoreProvider); // providers() runs boot's hook if loaded: it syncs again, still hidden
    delete process.env['RNIC_NO_RDMA_CORE'];
    syncRdmaCoreProvider();
    expect(providers().includes(rdmaCoreProvider)).toBe(addon !== null);
    expect(rdmaCoreUnavailable() === null).toBe(addon !== null);
  });

  it('lists exactly the devices libibverbs lists (none in a kernel without RDMA)', () => {
    if (!addon) return expect(rdmaCoreProvider.devices()).toEqual([]);
    const native = addon.getDeviceList();
    expect(rdmaCoreProvider.devices().map((d) => d.name)).toEqual(typeof native === 'number' ? [] : native.map((d) => d.name));
  });
});

describe.skipIf(!addon)('rdma-core addon without a device', () => {
  it('allocates page-aligned, zeroed memory of the asked length', () => {
    for (const len of [1, 100, 4096, 70_000]) {
      const ab = addon!.allocBuf(len, 64);
      expect(ab).toBeInstanceOf(ArrayBuffer);
      const u = new Uint8Array(ab as ArrayBuffer);
      expect(u.length).toBe(len);
      expect(addon!.addrOf(u) % 4096n).toBe(0n);
      expect(u.every((b) => b === 0)).toBe(true);
    }
    const big = new Uint8Array(addon!.allocBuf(10, 1 << 16) as ArrayBuffer);
    expect(addon!.addrOf(big) % 65536n).toBe(0n);
  });

  it('calls back through libuv when an fd becomes readable, and not before', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rnic-fifo-'));
    const fifo = join(dir, 'f');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    const fd = openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK);
    try {
      let fired = -1;
      const done = new Promise<void>((r) => {
        expect(
          addon!.watchFd(fd, (s) => {
            fired = s;
            r();
          }),
        ).toBeGreaterThan(0);
      });
      await new Promise((r) => setTimeout(r, 30));
      expect(fired).toBe(-1);
      writeSync(fd, 'x');
      await done;
      expect(fired).toBe(0);
      // unwatchFd: the callback never runs
      let late = false;
      const id = addon!.watchFd(fd, () => (late = true));
      addon!.unwatchFd(id);
      await new Promise((r) => setTimeout(r, 30));
      expect(late).toBe(false);
    } finally {
      closeSync(fd);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
