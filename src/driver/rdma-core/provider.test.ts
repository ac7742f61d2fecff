/**
 * The rdma-core provider where no RDMA device exists: its ops table covers
 * the model's, it checks its objects, it hides itself on request, and the
 * addon's parts that need no device (page-aligned buffers, fd readiness
 * through uv_poll) work, and the addon refuses pointers it did not make,
 * wrong types and short buffers with an errno instead of crashing. On a
 * real device: npm run hw-test.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { errno, IBV_QPT_RC, IBV_SEND_INLINE, IBV_WR_SEND } from '../../device/abi/constants.js';
import type { BadWr } from '../verbs/ops.js';
import { model_ctx_ops } from '../model/ops.js';
import { providers } from '../providers.js';
import { newDeviceAttr, newWcArray } from '../verbs/structs.js';
import type { ibv_context, ibv_send_wr, ibv_wc_ex } from '../verbs/types.js';
import { rdmaCoreAddon, rdmaCoreUnavailable } from './addon.js';
import { RcContext, RcCq, RcDevice, RcMr, RcPd, RcQp } from './objects.js';
import { rdma_core_ctx_ops, rdmaCoreProvider, syncRdmaCoreProvider } from './provider.js';
import { wc8 } from './scratch.js';

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
    // The extended verbs, each in the way of its verb.
    const o = rdma_core_ctx_ops;
    expect(o.query_device_ex(fake, {} as never)).toBe(errno.EINVAL);
    expect(o.query_gid_ex(fake, 1, 0, {} as never, 0)).toBe(errno.EINVAL);
    expect(o.query_rt_values(fake, { comp_mask: 1 } as never)).toBe(errno.EINVAL);
    expect(() => o.create_cq_ex(fake, { cqe: 4, wc_flags: 0 })).toThrow(expect.objectContaining({ code: 'EINVAL' }));
    expect(o.poll_cq_ex({ context: fake } as never, 1, [])).toBe(-errno.EINVAL);
    expect(o.resize_cq({ context: fake } as never, 8)).toBe(errno.EINVAL);
    expect(o.modify_cq({ context: fake } as never, { attr_mask: 1, moderate: { cq_count: 1, cq_period: 1 } })).toBe(errno.EINVAL);
    expect(() => o.create_qp_ex(fake, { comp_mask: 1 } as never)).toThrow(expect.objectContaining({ code: 'EINVAL' }));
    expect(o.post_send_all({ context: fake } as never, {} as never)).toBe(errno.EINVAL);
    expect(o.attach_mcast({ context: fake } as never, { raw: new Uint8Array(16) }, 0)).toBe(errno.EINVAL);
    expect(o.modify_qp_rate_limit!({ context: fake } as never, { rate_limit: 0, max_burst_sz: 0, typical_pkt_sz: 0, comp_mask: 0 })).toBe(errno.EINVAL);
    expect(() => o.reg_mr_iova({ context: fake } as never, new Uint8Array(8), 0n, 1)).toThrow(expect.objectContaining({ code: 'EINVAL' }));
    expect(() => o.alloc_null_mr({ context: fake } as never)).toThrow(expect.objectContaining({ code: 'EINVAL' }));
    expect(o.rereg_mr({ context: fake } as never, 4, null, null, 1)).toEqual({ rc: -1, errno: errno.EINVAL });
    expect(() => o.open_xrcd(fake, { comp_mask: 3, fd: -1, oflags: 0 })).toThrow(expect.objectContaining({ code: 'EINVAL' }));
    expect(o.close_xrcd({ context: fake } as never)).toBe(errno.EINVAL);
    expect(() => o.create_srq_xrc({ context: fake } as never, {} as never, {} as never, { attr: { max_wr: 1, max_sge: 1, srq_limit: 0 } })).toThrow(
      expect.objectContaining({ code: 'EINVAL' }),
    );
    expect(o.get_srq_num({ context: fake } as never, { srq_num: 0 })).toBe(errno.EINVAL);
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

describe.skipIf(!addon)('rdma-core addon: bad input is an errno, never a crash', () => {
  // Pointers it never handed out (or freed), of the wrong kind, or not numbers at all.
  const bogus: unknown[] = [0, 1, 0x1000, 2 ** 46, -1, 1.5, 'x', null, undefined, {}, 12n];
  const native = addon as unknown as Record<string, (...a: unknown[]) => unknown>;

  it('every verb that takes an object refuses one it does not know: EINVAL', () => {
    const EINVAL = errno.EINVAL;
    for (const p of bogus) {
      for (const f of [
        'closeDevice',
        'deallocPd',
        'deregMr',
        'deallocMw',
        'destroyCompChannel',
        'destroyCq',
        'reqNotifyCq',
        'destroySrq',
        'destroyQp',
        'destroyAh',
        'closeXrcd',
      ]) {
        expect(native[f]!(p, 0), `${f}(${String(p)})`).toBe(EINVAL);
      }
      for (const f of ['queryDevice', 'queryDeviceEx', 'allocPd', 'createCompChannel', 'openXrcd', 'queryRtValuesEx'])
        expect(native[f]!(p, 1, 1, 1), `${f}(${String(p)})`).toBe(EINVAL);
      expect(addon!.queryPort(p as number, 1)).toBe(EINVAL);
      expect(addon!.queryGid(p as number, 1, 0)).toBe(EINVAL);
      expect(addon!.queryGidEx(p as number, 1, 0, 0)).toBe(EINVAL);
      expect(addon!.queryPkey(p as number, 1, 0)).toBe(-EINVAL);
      expect(addon!.createCq(p as number, 4, 0, 0)).toBe(EINVAL);
      expect(addon!.createCqEx(p as number, 4, 0, 0, 0, 0, 0)).toBe(EINVAL);
      expect(addon!.pollCq(p as number, 1)).toBe(-EINVAL);
      expect(addon!.pollCqEx(p as number, 1)).toBe(-EINVAL);
      expect(addon!.getCqEvent(p as number)).toBe(-EINVAL);
      expect(addon!.resizeCq(p as number, 8)[0]).toBe(EINVAL);
      expect(addon!.modifyCq(p as number, 1, 1, 1)).toBe(EINVAL);
      expect(addon!.regMr(p as number, new Uint8Array(8), 1)).toBe(EINVAL);
      expect(addon!.regMrIova(p as number, new Uint8Array(8), 0n, 1)).toBe(EINVAL);
      expect(addon!.allocNullMr(p as number)).toBe(EINVAL);
      expect(addon!.reregMr(p as number, 4, 0, null, 1)).toMatchObject({ rc: -1, errno: EINVAL });
      expect(addon!.allocMw(p as number, 1)).toBe(EINVAL);
      expect(addon!.bindMw(p as number, p as number, 0, 1n, 0, 0n, 0n, 0)[0]).toBe(EINVAL);
      expect(addon!.createSrq(p as number, 4, 1, 0)).toBe(EINVAL);
      expect(addon!.createSrqXrc(p as number, p as number, p as number, p as number, 4, 1, 0)).toBe(EINVAL);
      expect(addon!.modifySrq(p as number, 4, 1, 0, 0)).toBe(EINVAL);
      expect(addon!.querySrq(p as number)).toBe(EINVAL);
      expect(addon!.getSrqNum(p as number)[0]).toBe(EINVAL);
      expect(addon!.createQp(p as number, p as number, p as number, 0, 2, 0, 1, 1, 1, 1, 0)).toBe(EINVAL);
      expect(addon!.createQpEx(p as number, p as number, p as number, p as number, 0, 2, 0, 1, 1, 1, 1, 0, 1, 0, 0)).toBe(EINVAL);
      expect(addon!.modifyQp(p as number, {}, 0)).toBe(EINVAL);
      expect(addon!.queryQp(p as number, 0)).toBe(EINVAL);
      expect(addon!.modifyQpRateLimit(p as number, 0, 0, 0, 0)).toBe(EINVAL);
      expect(addon!.postSend(p as number, 1)).toBe(EINVAL);
      expect(addon!.postSendEx(p as number, 1)).toBe(EINVAL);
      expect(addon!.postRecv(p as number, 1, false)).toBe(EINVAL);
      expect(addon!.postRecv(p as number, 1, true)).toBe(EINVAL);
      expect(addon!.attachMcast(p as number, new Uint8Array(16), 0)).toBe(EINVAL);
      expect(addon!.detachMcast(p as number, new Uint8Array(16), 0)).toBe(EINVAL);
      expect(addon!.createAh(p as number, {})).toBe(EINVAL);
      expect(addon!.getAsyncEvent(p as number)).toBe(-EINVAL);
      // Acknowledgements of events for objects it does not know are dropped (they would count on freed memory).
      for (const kind of ['cq', 'qp', 'srq', 'wq']) expect(addon!.ackAsyncEvent(1, kind, p as number)).toBeUndefined();
      expect(addon!.ackCqEvents(p as number, 1)).toBeUndefined();
    }
  });

  it('inline data must lie in memory the context holds: else EINVAL and bad_wr, and nothing reaches the addon', () => {
    const nd = { ptr: 1, name: 'fake0', dev_name: 'uverbs9', dev_path: '', ibdev_path: '', node_type: 1, transport_type: 0, guid: 0n, index: 0 };
    const ctx = new RcContext(rdma_core_ctx_ops, new RcDevice(rdmaCoreProvider, 1, nd, 0n), 1, -1, -1, 1);
    const pd = new RcPd(ctx, 2, 0);
    const cq = new RcCq(ctx, 3, null, null, 0, 16);
    const qp = new RcQp(ctx, pd, 4, null, cq, cq, null, 0, 1, IBV_QPT_RC, 0, true);
    const buf = new Uint8Array(addon!.allocBuf(4096, 4096) as ArrayBuffer);
    const base = addon!.addrOf(buf);
    ctx.mrs.add(new RcMr(ctx, pd, 5, base, 4096, 0, 7, 7, buf));
    const mutable = addon as unknown as Record<string, unknown>;
    const saved = { postSend: addon!.postSend, postSendEx: addon!.postSendEx };
    const calls: string[] = [];
    mutable['postSend'] = () => (calls.push('postSend'), 0);
    mutable['postSendEx'] = () => (calls.push('postSendEx'), 0);
    try {
      const wr = (addr: bigint, length: number): ibv_send_wr => ({
        wr_id: 1n,
        next: null,
        opcode: IBV_WR_SEND,
        send_flags: IBV_SEND_INLINE,
        num_sge: 1,
        sg_list: [{ addr, length, lkey: 0 }],
      });
      for (const [addr, len] of [
        [0x1234n, 8],
        [base - 1n, 8],
        [base + 4090n, 8],
        [base + 8192n, 1],
      ] as const) {
        const w = wr(addr, len);
        const bad: BadWr<ibv_send_wr> = {};
        expect(rdma_core_ctx_ops.post_send(qp, w, bad), `post_send inline at ${addr}`).toBe(errno.EINVAL);
        expect(bad.wr).toBe(w);
        expect(rdma_core_ctx_ops.post_send_all(qp, w, bad), `post_send_all inline at ${addr}`).toBe(errno.EINVAL);
      }
      expect(calls).toEqual([]);
      expect(rdma_core_ctx_ops.post_send(qp, wr(base + 100n, 64))).toBe(0);
      expect(rdma_core_ctx_ops.post_send_all(qp, wr(base, 4096))).toBe(0);
      expect(calls).toEqual(['postSend', 'postSendEx']);
      // A batch larger than one native call cannot be all-or-nothing here: ENOMEM, nothing posted.
      const chain = Array.from({ length: 65 }, () => wr(base, 8));
      chain.forEach((w, i) => (w.next = chain[i + 1] ?? null));
      expect(rdma_core_ctx_ops.post_send_all(qp, chain[0]!)).toBe(errno.ENOMEM);
      expect(calls.length).toBe(2);
    } finally {
      mutable['postSend'] = saved.postSend;
      mutable['postSendEx'] = saved.postSendEx;
    }
  });

  it('poll_cq_ex decodes the extended records (timestamp last) and refuses a classic CQ', () => {
    const nd = { ptr: 1, name: 'fake0', dev_name: 'uverbs9', dev_path: '', ibdev_path: '', node_type: 1, transport_type: 0, guid: 0n, index: 0 };
    const ctx = new RcContext(rdma_core_ctx_ops, new RcDevice(rdmaCoreProvider, 1, nd, 0n), 1, -1, -1, 1);
    const classic = new RcCq(ctx, 3, null, null, 0, 16);
    const ex = new RcCq(ctx, 4, null, null, 0, 16, true);
    const mutable = addon as unknown as Record<string, unknown>;
    const saved = addon!.pollCqEx;
    // The addon writes 56-byte records: PollCq's 48, then the u64 completion timestamp.
    mutable['pollCqEx'] = (_cq: number, n: number) => {
      const dv = new DataView(wc8.buffer);
      const k = Math.min(n, 2);
      for (let i = 0; i < k; i++) {
        const o = i * 56;
        dv.setBigUint64(o, 100n + BigInt(i), true);
        [0, 128, 0, 4096 + i, 0xdeadbeef, 77, 88, 2].forEach((v, j) => dv.setUint32(o + 8 + 4 * j, v, true));
        dv.setUint16(o + 42, 9, true);
        dv.setUint8(o + 44, 3);
        dv.setBigUint64(o + 48, 5_000_000_000n + BigInt(i), true);
      }
      return k;
    };
    try {
      const wc: ibv_wc_ex[] = [];
      expect(rdma_core_ctx_ops.poll_cq_ex(ex, 4, wc)).toBe(2);
      expect(wc.map((w) => [w.wr_id, w.opcode, w.byte_len, w.imm_data >>> 0, w.qp_num, w.src_qp, w.wc_flags, w.slid, w.sl, w.completion_ts])).toEqual([
        [100n, 128, 4096, 0xdeadbeef, 77, 88, 2, 9, 3, 5_000_000_000n],
        [101n, 128, 4097, 0xdeadbeef, 77, 88, 2, 9, 3, 5_000_000_001n],
      ]);
      expect(rdma_core_ctx_ops.poll_cq_ex(classic, 4, wc), 'the poll API on a classic CQ').toBe(-errno.EINVAL);
      expect(rdma_core_ctx_ops.poll_cq_ex(ex, -1, wc)).toBe(-errno.EINVAL);
    } finally {
      mutable['pollCqEx'] = saved;
    }
  });

  it('wrong value types and impossible sizes: an errno', () => {
    expect(addon!.openDevice(12 as never)).toBe(errno.EINVAL);
    expect(addon!.openDevice('no-such-device')).toBe(errno.ENODEV);
    expect(addon!.allocBuf(-1, 4096)).toBe(errno.EINVAL);
    expect(addon!.allocBuf(10, 3)).toBe(errno.EINVAL);
    expect(addon!.allocBuf('10' as never, 4096)).toBe(errno.EINVAL);
    expect(addon!.addrOf({} as never)).toBe(-errno.EINVAL);
    expect(addon!.addrOf(new Uint16Array(4) as never)).toBe(-errno.EINVAL);
    expect(addon!.setScratch({} as never, new Uint8Array(8))).toBe(errno.EINVAL);
    expect(addon!.watchFd('x' as never, () => {})).toBeLessThan(0);
    expect(addon!.watchFd(0, 'not a function' as never)).toBeLessThan(0);
  });
});
