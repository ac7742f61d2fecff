/**
 * Every operation end to end through the verbs API against the model
 * (rnic0 ↔ rnic1, RoCE v2 over IPv4, GID index 3): the bytes that land, the
 * work completions on both sides, and the packet counts on the wire.
 *
 * Runs everything twice: devices on a worker thread (workers: 1) and in
 * this thread (workers: 0); E2E_WORKERS=n runs only one of them.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  IBV_MTU_1024,
  IBV_QPS_ERR,
  IBV_QPS_RTS,
  IBV_QPS_SQE,
  IBV_QPT_RC,
  IBV_QPT_UC,
  IBV_QPT_UD,
  IBV_SEND_INLINE,
  IBV_SEND_SIGNALED,
  IBV_SEND_SOLICITED,
  IBV_WC_COMP_SWAP,
  IBV_WC_FETCH_ADD,
  IBV_WC_GRH,
  IBV_WC_LOC_LEN_ERR,
  IBV_WC_RDMA_READ,
  IBV_WC_RDMA_WRITE,
  IBV_WC_RECV,
  IBV_WC_RECV_RDMA_WITH_IMM,
  IBV_WC_SEND,
  IBV_WC_SUCCESS,
  IBV_WC_WITH_IMM,
  errno,
  ibv_ack_cq_events,
  ibv_create_comp_channel,
  ibv_create_srq,
  ibv_destroy_comp_channel,
  ibv_destroy_srq,
  ibv_get_cq_event,
  ibv_post_send,
  ibv_post_srq_recv,
  ibv_req_notify_cq,
} from '../../src/driver/verbs/index.js';
import type { BadWr, ibv_cq, ibv_send_wr, ibv_srq } from '../../src/driver/verbs/index.js';
import * as H from './harness.js';

/** Device threads: 1 (a worker thread) and 0 (this thread), or only E2E_WORKERS. */
const MODES = process.env.E2E_WORKERS !== undefined ? [Number(process.env.E2E_WORKERS)] : [1, 0];
const MTU = H.pathMtuBytes(IBV_MTU_1024);

/** Bytes of a little-endian u64 at data[off]. */
const u64 = (r: H.Region, off: number) => new DataView(r.data.buffer, r.data.byteOffset + off, 8).getBigUint64(0, true);
const setU64 = (r: H.Region, off: number, v: bigint) => new DataView(r.data.buffer, r.data.byteOffset + off, 8).setBigUint64(0, v, true);

/** Requests sent by `dev` (its sent_pkts) settle at exactly `n` more than `before`. */
async function expectSent(dev: H.Dev, before: Record<string, bigint>, n: number, what: string): Promise<void> {
  await H.waitCounters(dev, before, (d) => (d['sent_pkts'] ?? 0n) >= BigInt(n), `${what}: ${n} packets sent`);
  await H.sleep(20);
  expect(H.counterDelta(before, H.counters(dev))['sent_pkts'] ?? 0n, `${what}: packets ${dev.name} sent`).toBe(BigInt(n));
}

describe.each(MODES)('devices on %i worker thread(s)', (workers) => {
  let f: H.Fabric;
  beforeAll(async () => {
    f = await H.openFabric(H.twoDeviceConfig(workers));
  });
  afterAll(async () => {
    await f?.close();
  });

  describe('RC', () => {
    let p: H.Pair;
    let src: H.Region;
    let dst: H.Region;
    const BIG = 1 << 20;

    beforeAll(() => {
      src = H.region(f.a, BIG + 64, H.ALL_ACCESS, { fill: (i) => i * 131 + (i >> 8) });
      dst = H.region(f.b, BIG + 64, H.ALL_ACCESS);
    });
    // A fresh connection per test, so one failure does not leave completions for the next.
    beforeEach(() => {
      p = H.makePair(f, IBV_QPT_RC, { maxSendWr: 128, maxRecvWr: 128 });
    });

    async function sendRecv(len: number, o: { imm?: number; srcOff?: number } = {}) {
      dst.data.fill(0xee);
      const before = H.counters(f.a);
      H.postRecv(p.b, H.recvWr(100n + BigInt(len), [dst.sge(0, BIG + 64)]));
      H.postSend(p.a, H.wrSend({ wrId: BigInt(len), sge: len === 0 ? [] : [src.sge(o.srcOff ?? 0, len)], ...(o.imm !== undefined ? { imm: o.imm } : {}) }));
      const s = await H.poll1(p.a.scq, `SEND ${len} B completion`);
      const r = await H.poll1(p.b.rcq, `RECV of ${len} B`);
      H.expectWc(s, { wr_id: BigInt(len), status: IBV_WC_SUCCESS, opcode: IBV_WC_SEND, qp_num: p.a.qp.qp_num }, 'send completion');
      H.expectWc(
        r,
        {
          wr_id: 100n + BigInt(len),
          status: IBV_WC_SUCCESS,
          opcode: IBV_WC_RECV,
          byte_len: len,
          qp_num: p.b.qp.qp_num,
          wc_flags: o.imm !== undefined ? IBV_WC_WITH_IMM : 0,
        },
        'recv completion',
      );
      if (o.imm !== undefined) expect(r.imm_data >>> 0).toBe(o.imm >>> 0);
      const off = o.srcOff ?? 0;
      H.expectBytes(dst.data.subarray(0, len), src.data.subarray(off, off + len), `SEND ${len} B payload`);
      expect(dst.data[len], `the byte after a ${len}-byte SEND`).toBe(0xee);
      dst.checkGuards();
      return before;
    }

    it('SEND 0 B: one packet, byte_len 0', async () => {
      const before = await sendRecv(0);
      await expectSent(f.a, before, 1, 'SEND 0 B');
    });

    it('SEND 1 B', async () => {
      const before = await sendRecv(1, { srcOff: 77 });
      await expectSent(f.a, before, 1, 'SEND 1 B');
    });

    it('SEND exactly one MTU is one packet, MTU+1 is two', async () => {
      let before = await sendRecv(MTU);
      await expectSent(f.a, before, 1, 'SEND MTU');
      before = await sendRecv(MTU + 1, { srcOff: 3 });
      await expectSent(f.a, before, 2, 'SEND MTU+1');
    });

    it('SEND 1 MiB (1024 packets)', async () => {
      const before = await sendRecv(BIG, { srcOff: 5 });
      await expectSent(f.a, before, BIG / MTU, 'SEND 1 MiB');
      const rb = H.counterDelta(before, H.counters(f.a));
      expect(rb['rdma_sends'], 'rdma_sends for one message').toBe(1n);
    });

    it('SEND with immediate', async () => {
      await sendRecv(300, { imm: 0xdeadbeef });
    });

    it('SEND gathers 3 SGEs and scatters into 2 receive SGEs', async () => {
      const r1 = H.region(f.b, 100);
      const r2 = H.region(f.b, 400);
      r1.data.fill(0x11);
      r2.data.fill(0x22);
      // 50 + 70 + 30 = 150 bytes from three places.
      const parts: [number, number][] = [
        [1000, 50],
        [20, 70],
        [5000, 30],
      ];
      const expected = new Uint8Array(150);
      let k = 0;
      for (const [o, l] of parts) {
        expected.set(src.data.subarray(o, o + l), k);
        k += l;
      }
      H.postRecv(p.b, H.recvWr(7n, [r1.sge(0, 100), r2.sge(10, 390)]));
      H.postSend(p.a, H.wrSend({ wrId: 8n, sge: parts.map(([o, l]) => src.sge(o, l)) }));
      H.expectWc(await H.poll1(p.a.scq, 'gather SEND'), { wr_id: 8n, status: IBV_WC_SUCCESS }, 'send');
      H.expectWc(await H.poll1(p.b.rcq, 'scatter RECV'), { wr_id: 7n, status: IBV_WC_SUCCESS, byte_len: 150 }, 'recv');
      H.expectBytes(r1.data, expected.subarray(0, 100), 'first receive SGE');
      H.expectBytes(r2.data.subarray(10, 60), expected.subarray(100, 150), 'second receive SGE');
      expect(
        r2.data.subarray(0, 10).every((x) => x === 0x22),
        'bytes before the second SGE',
      ).toBe(true);
      expect(
        r2.data.subarray(60).every((x) => x === 0x22),
        'bytes after the scattered data',
      ).toBe(true);
      r1.checkGuards();
      r2.checkGuards();
    });

    it('inline SEND: the bytes are taken at post time (no lkey needed)', async () => {
      const stage = H.region(f.a, 64);
      const msg = H.pattern(48, 9);
      stage.data.set(msg);
      dst.data.fill(0);
      H.postRecv(p.b, H.recvWr(9n, [dst.sge(0, 64)]));
      expect(p.a.initCap.max_inline_data, 'max_inline_data').toBeGreaterThanOrEqual(48);
      H.postSend(p.a, H.wrSend({ wrId: 10n, sge: [{ addr: stage.addr, length: 48, lkey: 0 }], flags: IBV_SEND_SIGNALED | IBV_SEND_INLINE }));
      stage.data.fill(0x5a); // overwritten right after posting: the inline copy must not see it
      H.expectWc(await H.poll1(p.a.scq, 'inline SEND'), { wr_id: 10n, status: IBV_WC_SUCCESS, opcode: IBV_WC_SEND }, 'send');
      H.expectWc(await H.poll1(p.b.rcq, 'inline RECV'), { wr_id: 9n, status: IBV_WC_SUCCESS, byte_len: 48 }, 'recv');
      H.expectBytes(dst.data.subarray(0, 48), msg, 'inline payload');
    });

    it('RDMA WRITE 0 B needs no valid rkey or address', async () => {
      const before = H.counters(f.b);
      H.postSend(p.a, H.wrWrite({ wrId: 20n, sge: [], remote: { addr: 0n, rkey: 0x12345678 } }));
      H.expectWc(await H.poll1(p.a.scq, '0-byte WRITE'), { wr_id: 20n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_WRITE }, 'write');
      H.expectQpState(p.a.qp, IBV_QPS_RTS, 'requester after a 0-byte WRITE');
      H.expectQpState(p.b.qp, IBV_QPS_RTS, 'responder after a 0-byte WRITE');
      await H.waitCounters(f.b, before, (d) => (d['rx_write_requests'] ?? 0n) >= 1n, 'rx_write_requests');
    });

    it('RDMA WRITE multi-MTU at an offset', async () => {
      const len = 5 * MTU + 17;
      dst.data.fill(0x33);
      const before = H.counters(f.a);
      H.postSend(p.a, H.wrWrite({ wrId: 21n, sge: [src.sge(11, len)], remote: { addr: dst.at(101), rkey: dst.rkey } }));
      H.expectWc(await H.poll1(p.a.scq, 'multi-MTU WRITE'), { wr_id: 21n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_WRITE }, 'write');
      H.expectBytes(dst.data.subarray(101, 101 + len), src.data.subarray(11, 11 + len), 'written bytes');
      expect(dst.data[100]).toBe(0x33);
      expect(dst.data[101 + len]).toBe(0x33);
      await expectSent(f.a, before, 6, 'WRITE 5 MTU + 17');
      await H.expectNoCqe(p.b.rcq, 30, 'a WRITE consumes no receive');
    });

    it('RDMA WRITE with immediate consumes a receive (RECV_RDMA_WITH_IMM, byte_len = length)', async () => {
      const len = 2 * MTU + 5;
      const rbuf = H.region(f.b, 64);
      rbuf.data.fill(0x44);
      dst.data.fill(0);
      H.postRecv(p.b, H.recvWr(30n, [rbuf.sge()]));
      H.postSend(p.a, H.wrWrite({ wrId: 31n, sge: [src.sge(0, len)], remote: { addr: dst.at(8), rkey: dst.rkey }, imm: 0x01020304 }));
      H.expectWc(await H.poll1(p.a.scq, 'WRITE_WITH_IMM'), { wr_id: 31n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_WRITE }, 'write');
      const r = await H.poll1(p.b.rcq, 'RECV_RDMA_WITH_IMM');
      H.expectWc(
        r,
        { wr_id: 30n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RECV_RDMA_WITH_IMM, byte_len: len, imm_data: 0x01020304, wc_flags: IBV_WC_WITH_IMM },
        'recv',
      );
      H.expectBytes(dst.data.subarray(8, 8 + len), src.data.subarray(0, len), 'WRITE_WITH_IMM payload');
      expect(
        rbuf.data.every((x) => x === 0x44),
        'the receive buffer is not written by WRITE_WITH_IMM',
      ).toBe(true);
    });

    it('RDMA READ small and multi-MTU', async () => {
      const remote = H.region(f.b, 4 * MTU, H.ALL_ACCESS, { fill: (i) => i ^ 0x5c });
      const local = H.region(f.a, 4 * MTU);
      const before = H.counters(f.b);
      H.postSend(p.a, H.wrRead({ wrId: 40n, sge: [local.sge(0, 8)], remote: { addr: remote.at(3), rkey: remote.rkey } }));
      H.expectWc(await H.poll1(p.a.scq, 'small READ'), { wr_id: 40n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_READ, byte_len: 8 }, 'read');
      H.expectBytes(local.data.subarray(0, 8), remote.data.subarray(3, 11), 'READ 8 B');
      const len = 3 * MTU + 100;
      H.postSend(p.a, H.wrRead({ wrId: 41n, sge: [local.sge(16, len)], remote: { addr: remote.at(50), rkey: remote.rkey } }));
      H.expectWc(await H.poll1(p.a.scq, 'multi-MTU READ'), { wr_id: 41n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_READ, byte_len: len }, 'read');
      H.expectBytes(local.data.subarray(16, 16 + len), remote.data.subarray(50, 50 + len), `READ ${len} B`);
      local.checkGuards();
      // One request each; the multi-MTU one is answered with 4 response packets.
      const d = await H.waitCounters(f.b, before, (x) => (x['rx_read_requests'] ?? 0n) >= 2n, 'rx_read_requests');
      expect(d['rx_read_requests']).toBe(2n);
      await H.sleep(20);
      expect(H.counterDelta(before, H.counters(f.b))['sent_pkts'], 'read response packets').toBe(5n);
    });

    it('WRITE gathers 2 SGEs; READ scatters its response into 3 SGEs', async () => {
      const remote = H.region(f.b, 4 * MTU, H.ALL_ACCESS, { fill: (i) => i * 5 + 3 });
      const l1 = H.region(f.a, 700);
      const l2 = H.region(f.a, 1500);
      const l3 = H.region(f.a, 2000);
      // READ 700 + 1500 + 800 = 3000 bytes (3 response packets) into three MRs.
      H.postSend(p.a, H.wrRead({ wrId: 42n, sge: [l1.sge(), l2.sge(), l3.sge(0, 800)], remote: { addr: remote.at(0), rkey: remote.rkey } }));
      H.expectWc(await H.poll1(p.a.scq, 'scattered READ'), { wr_id: 42n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_READ, byte_len: 3000 }, 'read');
      H.expectBytes(l1.data, remote.data.subarray(0, 700), 'READ into SGE 1');
      H.expectBytes(l2.data, remote.data.subarray(700, 2200), 'READ into SGE 2');
      H.expectBytes(l3.data.subarray(0, 800), remote.data.subarray(2200, 3000), 'READ into SGE 3');
      expect(
        l3.data.subarray(800).every((x) => x === 0),
        'SGE 3 beyond the read',
      ).toBe(true);
      // WRITE back 1500 (l2) + 300 (l1) gathered to another place.
      H.postSend(p.a, H.wrWrite({ wrId: 43n, sge: [l2.sge(), l1.sge(0, 300)], remote: { addr: remote.at(2 * MTU), rkey: remote.rkey } }));
      H.expectWc(await H.poll1(p.a.scq, 'gathered WRITE'), { wr_id: 43n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_WRITE }, 'write');
      H.expectBytes(remote.data.subarray(2 * MTU, 2 * MTU + 1500), l2.data, 'gathered part 1');
      H.expectBytes(remote.data.subarray(2 * MTU + 1500, 2 * MTU + 1800), l1.data.subarray(0, 300), 'gathered part 2');
      for (const r of [remote, l1, l2, l3]) r.checkGuards();
    });

    it('CMP&SWP: swaps when equal, not otherwise; returns the original', async () => {
      const remote = H.region(f.b, 64);
      const local = H.region(f.a, 64);
      setU64(remote, 8, 0x1111222233334444n);
      H.postSend(
        p.a,
        H.wrCas({
          wrId: 50n,
          sge: [local.sge(0, 8)],
          atomic: { addr: remote.at(8), rkey: remote.rkey, compareAdd: 0x1111222233334444n, swap: 0xaaaabbbbccccddddn },
        }),
      );
      H.expectWc(await H.poll1(p.a.scq, 'CMP&SWP (equal)'), { wr_id: 50n, status: IBV_WC_SUCCESS, opcode: IBV_WC_COMP_SWAP, byte_len: 8 }, 'cas');
      expect(u64(local, 0), 'original returned').toBe(0x1111222233334444n);
      expect(u64(remote, 8), 'swapped').toBe(0xaaaabbbbccccddddn);
      H.postSend(
        p.a,
        H.wrCas({ wrId: 51n, sge: [local.sge(8, 8)], atomic: { addr: remote.at(8), rkey: remote.rkey, compareAdd: 0x1111222233334444n, swap: 0x5n } }),
      );
      H.expectWc(await H.poll1(p.a.scq, 'CMP&SWP (not equal)'), { wr_id: 51n, status: IBV_WC_SUCCESS, opcode: IBV_WC_COMP_SWAP }, 'cas');
      expect(u64(local, 8), 'original returned').toBe(0xaaaabbbbccccddddn);
      expect(u64(remote, 8), 'not swapped').toBe(0xaaaabbbbccccddddn);
      expect(u64(remote, 0)).toBe(0n);
      expect(u64(remote, 16)).toBe(0n);
      remote.checkGuards();
    });

    it('FETCH&ADD returns the original and adds, wrapping at 64 bits', async () => {
      const remote = H.region(f.b, 64);
      const local = H.region(f.a, 64);
      setU64(remote, 16, 1000n);
      const before = H.counters(f.b);
      H.postSend(p.a, H.wrFaa({ wrId: 60n, sge: [local.sge(0, 8)], atomic: { addr: remote.at(16), rkey: remote.rkey, compareAdd: 234n } }));
      H.expectWc(await H.poll1(p.a.scq, 'FETCH&ADD'), { wr_id: 60n, status: IBV_WC_SUCCESS, opcode: IBV_WC_FETCH_ADD, byte_len: 8 }, 'faa');
      expect(u64(local, 0)).toBe(1000n);
      expect(u64(remote, 16)).toBe(1234n);
      setU64(remote, 24, 0xfffffffffffffffen);
      H.postSend(p.a, H.wrFaa({ wrId: 61n, sge: [local.sge(8, 8)], atomic: { addr: remote.at(24), rkey: remote.rkey, compareAdd: 5n } }));
      H.expectWc(await H.poll1(p.a.scq, 'FETCH&ADD wrap'), { wr_id: 61n, status: IBV_WC_SUCCESS, opcode: IBV_WC_FETCH_ADD }, 'faa');
      expect(u64(local, 8)).toBe(0xfffffffffffffffen);
      expect(u64(remote, 24), '2^64 - 2 + 5 wraps to 3').toBe(3n);
      expect(u64(remote, 32), 'the next word is untouched (no carry)').toBe(0n);
      remote.checkGuards();
      await H.waitCounters(f.b, before, (d) => d['rx_atomic_requests'] === 2n, 'rx_atomic_requests = 2');
    });

    it('unsignaled WRs produce no CQE; a later signaled one completes them in order', async () => {
      const q = H.makePair(f, IBV_QPT_RC);
      const remote = H.region(f.b, 64);
      const local = H.region(f.a, 64);
      for (let i = 0; i < 4; i++) local.data[i] = i + 1;
      // Four writes of one byte each to the same place, unsignaled: the last wins.
      const wrs = [0, 1, 2, 3].map((i) =>
        H.wrWrite({ wrId: BigInt(200 + i), sge: [local.sge(i, 1)], remote: { addr: remote.at(0), rkey: remote.rkey }, flags: 0 }),
      );
      H.postSend(q.a, wrs);
      await H.expectNoCqe(q.a.scq, 100, 'unsignaled WRITEs');
      expect(remote.data[0], 'the last of the unsignaled writes wins').toBe(4);
      // A signaled READ of that byte: completes alone, sees the fourth write.
      H.postSend(q.a, H.wrRead({ wrId: 300n, sge: [local.sge(8, 1)], remote: { addr: remote.at(0), rkey: remote.rkey } }));
      H.expectWc(await H.poll1(q.a.scq, 'signaled READ after unsignaled WRITEs'), { wr_id: 300n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_READ }, 'read');
      expect(local.data[8]).toBe(4);
      await H.expectNoCqe(q.a.scq, 30, 'nothing more');
      // The queue's slots were freed: 3 × 64 more unsignaled+signaled rounds fit.
      for (let round = 0; round < 3; round++) {
        const batch = Array.from({ length: 63 }, (_, i) =>
          H.wrWrite({ wrId: BigInt(1000 + i), sge: [local.sge(0, 1)], remote: { addr: remote.at(1), rkey: remote.rkey }, flags: 0 }),
        );
        batch.push(H.wrWrite({ wrId: BigInt(5000 + round), sge: [local.sge(1, 1)], remote: { addr: remote.at(1), rkey: remote.rkey } }));
        H.postSend(q.a, batch);
        H.expectWc(await H.poll1(q.a.scq, `round ${round} signaled WRITE`), { wr_id: BigInt(5000 + round), status: IBV_WC_SUCCESS }, 'write');
      }
      expect(remote.data[1]).toBe(2);
    });

    it('max_rd_atomic 1: 8 READs and 8 atomics queued at once all complete, in order, with the right data', async () => {
      const q = H.makePair(f, IBV_QPT_RC, { maxRdAtomic: 1, maxDestRdAtomic: 1 });
      const remote = H.region(f.b, 8 * 2 * MTU + 64, H.ALL_ACCESS, { fill: (i) => i * 13 + 7 });
      const local = H.region(f.a, 8 * 2 * MTU + 128);
      setU64(remote, 8 * 2 * MTU, 100n);
      const wrs: ibv_send_wr[] = [];
      for (let i = 0; i < 8; i++) {
        wrs.push(
          H.wrRead({ wrId: BigInt(2 * i), sge: [local.sge(i * 2 * MTU, 2 * MTU - i)], remote: { addr: remote.at(i * 2 * MTU + i), rkey: remote.rkey } }),
        );
        wrs.push(
          H.wrFaa({
            wrId: BigInt(2 * i + 1),
            sge: [local.sge(8 * 2 * MTU + 8 * i, 8)],
            atomic: { addr: remote.at(8 * 2 * MTU), rkey: remote.rkey, compareAdd: 1n },
          }),
        );
      }
      H.postSend(q.a, wrs);
      const wcs = await H.pollN(q.a.scq, 16, '8 READs + 8 FETCH&ADDs with one outstanding at a time');
      expect(wcs.map((w) => w.wr_id)).toEqual(Array.from({ length: 16 }, (_, i) => BigInt(i)));
      for (const w of wcs) expect(w.status, H.wcText(w)).toBe(IBV_WC_SUCCESS);
      for (let i = 0; i < 8; i++) {
        H.expectBytes(local.data.subarray(i * 2 * MTU, (i + 1) * 2 * MTU - i), remote.data.subarray(i * 2 * MTU + i, (i + 1) * 2 * MTU), `READ ${i}`);
        expect(u64(local, 8 * 2 * MTU + 8 * i), `FETCH&ADD ${i} original`).toBe(100n + BigInt(i));
      }
      expect(u64(remote, 8 * 2 * MTU)).toBe(108n);
    });

    it('RDMA READ of 0 B (no valid rkey needed) and of 1 MiB', async () => {
      H.postSend(p.a, H.wrRead({ wrId: 44n, sge: [], remote: { addr: 0n, rkey: 0 } }));
      H.expectWc(await H.poll1(p.a.scq, 'a 0-byte READ'), { wr_id: 44n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_READ, byte_len: 0 }, 'read 0');
      H.expectQpState(p.b.qp, IBV_QPS_RTS, 'responder after a 0-byte READ');
      dst.data.set(src.data.subarray(7, 7 + BIG));
      const local = H.region(f.a, BIG);
      H.postSend(p.a, H.wrRead({ wrId: 45n, sge: [local.sge()], remote: { addr: dst.at(0), rkey: dst.rkey } }));
      H.expectWc(await H.poll1(p.a.scq, 'READ 1 MiB'), { wr_id: 45n, status: IBV_WC_SUCCESS, byte_len: BIG }, 'read');
      H.expectBytes(local.data, dst.data.subarray(0, BIG), 'READ 1 MiB');
      local.checkGuards();
    });

    it('8 RC connections in parallel, 64 SENDs each, interleaved: all arrive intact', async () => {
      const N = 8;
      const M = 64;
      const LEN = 1500;
      const pairs = Array.from({ length: N }, () => H.makePair(f, IBV_QPT_RC, { maxSendWr: M, maxRecvWr: M }));
      const sbuf = H.region(f.a, N * LEN, H.ALL_ACCESS, { fill: (i) => i * 17 + (i >> 11) });
      const rbuf = H.region(f.b, N * M * LEN);
      pairs.forEach((q, k) =>
        H.postRecv(
          q.b,
          Array.from({ length: M }, (_, j) => H.recvWr(BigInt(j), [rbuf.sge((k * M + j) * LEN, LEN)])),
        ),
      );
      for (let j = 0; j < M; j++)
        pairs.forEach((q, k) =>
          H.postSend(q.a, H.wrSend({ wrId: BigInt(j), sge: [sbuf.sge(k * LEN, LEN - (j % 7))], flags: j === M - 1 ? IBV_SEND_SIGNALED : 0 })),
        );
      for (const [k, q] of pairs.entries()) {
        H.expectWc(await H.poll1(q.a.scq, `connection ${k}: the last signaled SEND`), { wr_id: BigInt(M - 1), status: IBV_WC_SUCCESS }, `conn ${k}`);
        const r = await H.pollN(q.b.rcq, M, `connection ${k}: ${M} receives`);
        r.forEach((w, j) => {
          H.expectWc(w, { wr_id: BigInt(j), status: IBV_WC_SUCCESS, byte_len: LEN - (j % 7), qp_num: q.b.qp.qp_num }, `conn ${k} recv ${j}`);
          H.expectBytes(
            rbuf.data.subarray((k * M + j) * LEN, (k * M + j) * LEN + LEN - (j % 7)),
            sbuf.data.subarray(k * LEN, k * LEN + LEN - (j % 7)),
            `conn ${k} message ${j}`,
          );
        });
      }
    });

    it('500 SENDs through 64-deep queues complete exactly once, in order', async () => {
      const N = 500;
      const DEPTH = 64;
      const q = H.makePair(f, IBV_QPT_RC, { maxSendWr: DEPTH, maxRecvWr: DEPTH });
      const sbuf = H.region(f.a, N * 8);
      const rbuf = H.region(f.b, DEPTH * 16);
      const sdv = new DataView(sbuf.data.buffer, sbuf.data.byteOffset, sbuf.length);
      for (let i = 0; i < N; i++) {
        sdv.setUint32(i * 8, i, true);
        sdv.setUint32(i * 8 + 4, 0xc0ffee00 ^ i, true);
      }
      const rdv = new DataView(rbuf.data.buffer, rbuf.data.byteOffset, rbuf.length);
      for (let s = 0; s < DEPTH; s++) H.postRecv(q.b, H.recvWr(BigInt(s), [rbuf.sge(s * 16, 16)]));
      let posted = 0;
      let sent = 0;
      let recvd = 0;
      const deadline = Date.now() + 20_000;
      while (sent < N || recvd < N) {
        let progress = false;
        while (posted < N && posted - sent < DEPTH) {
          H.postSend(q.a, H.wrSend({ wrId: BigInt(posted), sge: [sbuf.sge(posted * 8, 8)] }));
          posted++;
          progress = true;
        }
        for (const w of H.pollNow(q.a.scq)) {
          H.expectWc(w, { wr_id: BigInt(sent), status: IBV_WC_SUCCESS, opcode: IBV_WC_SEND }, `send completion #${sent}`);
          sent++;
          progress = true;
        }
        for (const w of H.pollNow(q.b.rcq)) {
          H.expectWc(w, { status: IBV_WC_SUCCESS, opcode: IBV_WC_RECV, byte_len: 8 }, `recv completion #${recvd}`);
          const slot = Number(w.wr_id);
          expect(rdv.getUint32(slot * 16, true), `message in receive #${recvd}`).toBe(recvd);
          expect(rdv.getUint32(slot * 16 + 4, true)).toBe((0xc0ffee00 ^ recvd) >>> 0);
          rdv.setUint32(slot * 16, 0xffffffff, true);
          H.postRecv(q.b, H.recvWr(BigInt(slot), [rbuf.sge(slot * 16, 16)]));
          recvd++;
          progress = true;
        }
        if (Date.now() > deadline) throw new Error(`500 SENDs: stuck at posted ${posted}, send CQEs ${sent}, recv CQEs ${recvd}`);
        if (!progress) await new Promise((r) => setImmediate(r));
      }
      await H.expectNoCqe(q.a.scq, 30, 'no send completion beyond 500');
      await H.expectNoCqe(q.b.rcq, 0, 'no receive completion beyond 500');
    });
  });

  describe('UC', () => {
    let p: H.Pair;
    let src: H.Region;
    let dst: H.Region;
    beforeAll(() => {
      p = H.makePair(f, IBV_QPT_UC);
      src = H.region(f.a, 8 * MTU, H.ALL_ACCESS, { fill: (i) => i * 3 + 1 });
      dst = H.region(f.b, 8 * MTU);
    });

    it('SEND (multi-MTU)', async () => {
      const len = 3 * MTU + 3;
      H.postRecv(p.b, H.recvWr(1n, [dst.sge()]));
      H.postSend(p.a, H.wrSend({ wrId: 2n, sge: [src.sge(0, len)] }));
      H.expectWc(await H.poll1(p.a.scq, 'UC SEND'), { wr_id: 2n, status: IBV_WC_SUCCESS, opcode: IBV_WC_SEND }, 'send');
      H.expectWc(await H.poll1(p.b.rcq, 'UC RECV'), { wr_id: 1n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RECV, byte_len: len }, 'recv');
      H.expectBytes(dst.data.subarray(0, len), src.data.subarray(0, len), 'UC SEND payload');
    });

    it('RDMA WRITE and WRITE with immediate', async () => {
      dst.data.fill(0);
      const len = 2 * MTU + 9;
      H.postSend(p.a, H.wrWrite({ wrId: 3n, sge: [src.sge(1, len)], remote: { addr: dst.at(7), rkey: dst.rkey } }));
      H.expectWc(await H.poll1(p.a.scq, 'UC WRITE'), { wr_id: 3n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_WRITE }, 'write');
      // UC has no ACK: the send completion may come before the data lands. Wait for it.
      const end = Date.now() + 2000;
      while (dst.data[7 + len - 1] !== src.data[len] && Date.now() < end) await H.sleep(2);
      H.expectBytes(dst.data.subarray(7, 7 + len), src.data.subarray(1, 1 + len), 'UC WRITE payload');
      H.postRecv(p.b, H.recvWr(4n, [dst.sge(0, 16)]));
      H.postSend(p.a, H.wrWrite({ wrId: 5n, sge: [src.sge(0, 100)], remote: { addr: dst.at(4096), rkey: dst.rkey }, imm: 0xcafe }));
      H.expectWc(await H.poll1(p.a.scq, 'UC WRITE_WITH_IMM'), { wr_id: 5n, status: IBV_WC_SUCCESS }, 'write imm');
      H.expectWc(
        await H.poll1(p.b.rcq, 'UC RECV_RDMA_WITH_IMM'),
        { wr_id: 4n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RECV_RDMA_WITH_IMM, byte_len: 100, imm_data: 0xcafe, wc_flags: IBV_WC_WITH_IMM },
        'recv',
      );
      H.expectBytes(dst.data.subarray(4096, 4196), src.data.subarray(0, 100), 'UC WRITE_WITH_IMM payload');
    });

    it('READ and atomics are rejected at post time with EINVAL and bad_wr', async () => {
      const local = H.region(f.a, 64);
      const tries: [string, ibv_send_wr][] = [
        ['READ', H.wrRead({ wrId: 10n, sge: [local.sge(0, 8)], remote: { addr: dst.addr, rkey: dst.rkey } })],
        ['CMP&SWP', H.wrCas({ wrId: 11n, sge: [local.sge(0, 8)], atomic: { addr: dst.addr, rkey: dst.rkey, compareAdd: 0n, swap: 1n } })],
        ['FETCH&ADD', H.wrFaa({ wrId: 12n, sge: [local.sge(0, 8)], atomic: { addr: dst.addr, rkey: dst.rkey, compareAdd: 1n } })],
      ];
      for (const [name, wr] of tries) {
        const bad: BadWr<ibv_send_wr> = {};
        expect(ibv_post_send(p.a.qp, wr, bad), `UC ${name}`).toBe(errno.EINVAL);
        expect(bad.wr, `UC ${name}: bad_wr`).toBe(wr);
      }
      // In a chain, the WRs before the bad one are posted and complete.
      const ok = H.wrWrite({ wrId: 13n, sge: [local.sge(0, 8)], remote: { addr: dst.addr, rkey: dst.rkey } });
      const rd = H.wrRead({ wrId: 14n, sge: [local.sge(0, 8)], remote: { addr: dst.addr, rkey: dst.rkey } });
      ok.next = rd;
      const bad: BadWr<ibv_send_wr> = {};
      expect(ibv_post_send(p.a.qp, ok, bad)).toBe(errno.EINVAL);
      expect(bad.wr).toBe(rd);
      H.expectWc(await H.poll1(p.a.scq, 'the WRITE before the rejected READ'), { wr_id: 13n, status: IBV_WC_SUCCESS }, 'write');
      await H.expectNoCqe(p.a.scq, 30, 'nothing for the rejected WRs');
      H.expectQpState(p.a.qp, IBV_QPS_RTS, 'UC after post-time rejects');
    });
  });

  describe('UD', () => {
    let a: H.Ep;
    let b: H.Ep;
    beforeAll(() => {
      a = H.createQp(f.a, IBV_QPT_UD);
      b = H.createQp(f.b, IBV_QPT_UD);
      H.connect(a, b);
    });

    const ipv4Sum = (h: Uint8Array) => {
      let s = 0;
      for (let i = 0; i < 20; i += 2) s += (h[i]! << 8) | h[i + 1]!;
      while (s > 0xffff) s = (s & 0xffff) + (s >>> 16);
      return s;
    };

    it('SEND over IPv4: 40-byte GRH area holds the IPv4 header in its last 20 bytes; src_qp, IBV_WC_GRH', async () => {
      const len = 200;
      const src = H.region(f.a, len, H.ALL_ACCESS, { fill: (i) => 255 - i });
      const rbuf = H.region(f.b, 40 + 512);
      rbuf.data.fill(0x77);
      const ah = H.createAh(f.a, f.b);
      H.postRecv(b, H.recvWr(1n, [rbuf.sge()]));
      H.postSend(a, H.wrSend({ wrId: 2n, sge: [src.sge()], ud: { ah, qpn: b.qp.qp_num, qkey: H.QKEY } }));
      H.expectWc(await H.poll1(a.scq, 'UD SEND'), { wr_id: 2n, status: IBV_WC_SUCCESS, opcode: IBV_WC_SEND }, 'send');
      const r = await H.poll1(b.rcq, 'UD RECV');
      H.expectWc(r, { wr_id: 1n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RECV, byte_len: 40 + len, src_qp: a.qp.qp_num, qp_num: b.qp.qp_num }, 'recv');
      expect(r.wc_flags & IBV_WC_GRH, 'IBV_WC_GRH').toBe(IBV_WC_GRH);
      H.expectBytes(rbuf.data.subarray(40, 40 + len), src.data, 'UD payload after the GRH');
      const ip = rbuf.data.subarray(20, 40);
      expect(ip[0], 'IPv4 version/IHL').toBe(0x45);
      expect((ip[2]! << 8) | ip[3]!, 'IPv4 total length = IP 20 + UDP 8 + BTH 12 + DETH 8 + payload + ICRC 4').toBe(20 + 8 + 12 + 8 + len + 4);
      expect(ip[9], 'IPv4 protocol UDP').toBe(17);
      expect(Array.from(ip.subarray(12, 16)), 'source address').toEqual([192, 0, 2, 1]);
      expect(Array.from(ip.subarray(16, 20)), 'destination address').toEqual([192, 0, 2, 2]);
      expect(ipv4Sum(ip), 'IPv4 header checksum').toBe(0xffff);
      expect(rbuf.data[40 + len], 'after the payload').toBe(0x77);
      rbuf.checkGuards();
    });

    it('SEND over IPv6 (GID fd00::): the GRH area holds the IPv6 header', async () => {
      const len = 64;
      const src = H.region(f.a, len, H.ALL_ACCESS, { fill: (i) => i + 1 });
      const rbuf = H.region(f.b, 40 + 128);
      const ah = H.createAh(f.a, f.b, 5, H.gidAt(f.b, 5));
      H.postRecv(b, H.recvWr(3n, [rbuf.sge()]));
      H.postSend(a, H.wrSend({ wrId: 4n, sge: [src.sge()], ud: { ah, qpn: b.qp.qp_num, qkey: H.QKEY }, imm: 0x600d }));
      H.expectWc(await H.poll1(a.scq, 'UD SEND v6'), { wr_id: 4n, status: IBV_WC_SUCCESS }, 'send');
      const r = await H.poll1(b.rcq, 'UD RECV v6');
      H.expectWc(
        r,
        { wr_id: 3n, status: IBV_WC_SUCCESS, byte_len: 40 + len, src_qp: a.qp.qp_num, imm_data: 0x600d, wc_flags: IBV_WC_GRH | IBV_WC_WITH_IMM },
        'recv',
      );
      const g = rbuf.data.subarray(0, 40);
      expect(g[0]! >> 4, 'IPv6 version').toBe(6);
      expect((g[4]! << 8) | g[5]!, 'payload length = UDP 8 + BTH 12 + DETH 8 + ImmDt 4 + payload + ICRC 4').toBe(8 + 12 + 8 + 4 + len + 4);
      expect(g[6], 'next header UDP').toBe(17);
      H.expectBytes(g.subarray(8, 24), H.gidAt(f.a, 5).raw, 'GRH source GID');
      H.expectBytes(g.subarray(24, 40), H.gidAt(f.b, 5).raw, 'GRH destination GID');
      H.expectBytes(rbuf.data.subarray(40, 40 + len), src.data, 'payload');
    });

    it('a Q_Key mismatch is dropped: no completion, qkey_viol_cntr counts it', async () => {
      const src = H.region(f.a, 16, H.ALL_ACCESS, { fill: (i) => i });
      const rbuf = H.region(f.b, 40 + 16);
      const ah = H.createAh(f.a, f.b);
      const before = H.counters(f.b);
      H.postRecv(b, H.recvWr(5n, [rbuf.sge()]));
      H.postSend(a, H.wrSend({ wrId: 6n, sge: [src.sge()], ud: { ah, qpn: b.qp.qp_num, qkey: H.QKEY ^ 1 } }));
      H.expectWc(await H.poll1(a.scq, 'UD SEND with a wrong Q_Key'), { wr_id: 6n, status: IBV_WC_SUCCESS }, 'send');
      await H.expectNoCqe(b.rcq, 100, 'receive of a Q_Key-mismatched datagram');
      const d = await H.waitCounters(f.b, before, (x) => (x['qkey_viol_cntr'] ?? 0n) >= 1n, 'qkey_viol_cntr');
      expect(d['qkey_viol_cntr']).toBe(1n);
      // The receive is still there for the right Q_Key.
      H.postSend(a, H.wrSend({ wrId: 7n, sge: [src.sge()], ud: { ah, qpn: b.qp.qp_num, qkey: H.QKEY } }));
      await H.poll1(a.scq, 'UD SEND with the right Q_Key');
      H.expectWc(await H.poll1(b.rcq, 'receive after the mismatch'), { wr_id: 5n, status: IBV_WC_SUCCESS, byte_len: 56 }, 'recv');
    });

    it('a message larger than the path MTU completes with IBV_WC_LOC_LEN_ERR', async () => {
      const q = H.createQp(f.a, IBV_QPT_UD);
      const peer = H.createQp(f.b, IBV_QPT_UD);
      H.connect(q, peer);
      const mtu = H.pathMtuBytes(f.a.portAttr.active_mtu);
      const src = H.region(f.a, mtu + 1);
      const rbuf = H.region(f.b, mtu + 64);
      const ah = H.createAh(f.a, f.b);
      H.postRecv(peer, H.recvWr(8n, [rbuf.sge()]));
      H.postSend(q, H.wrSend({ wrId: 9n, sge: [src.sge()], ud: { ah, qpn: peer.qp.qp_num, qkey: H.QKEY } }));
      H.expectWc(await H.poll1(q.scq, 'UD SEND of MTU+1'), { wr_id: 9n, status: IBV_WC_LOC_LEN_ERR }, 'oversized UD send');
      await H.expectNoCqe(peer.rcq, 50, 'nothing arrives');
      expect([IBV_QPS_ERR, IBV_QPS_SQE], 'UD QP after a local error: SQE (IBTA) or ERR (rxe)').toContain(H.qpState(q.qp));
    });
  });

  describe('SRQ', () => {
    it('two QPs share one SRQ', async () => {
      const srq: ibv_srq = ibv_create_srq(f.b.pd, { attr: { max_wr: 16, max_sge: 2, srq_limit: 0 } });
      f.b.cleanup.push(() => void ibv_destroy_srq(srq));
      const rcq = H.createCq(f.b);
      const b1 = H.createQp(f.b, IBV_QPT_RC, { srq, recvCq: rcq });
      const b2 = H.createQp(f.b, IBV_QPT_RC, { srq, recvCq: rcq });
      const a1 = H.createQp(f.a, IBV_QPT_RC);
      const a2 = H.createQp(f.a, IBV_QPT_RC);
      H.connect(a1, b1);
      H.connect(a2, b2);
      const rbuf = H.region(f.b, 4 * 256);
      const sbuf = H.region(f.a, 4 * 100, H.ALL_ACCESS, { fill: (i) => Math.floor(i / 100) + 1 + (i % 7) });
      for (let i = 0; i < 4; i++) {
        const wr = H.recvWr(BigInt(i), [rbuf.sge(i * 256, 256)]);
        expect(ibv_post_srq_recv(srq, wr, {})).toBe(0);
      }
      H.postSend(a1, H.wrSend({ wrId: 0n, sge: [sbuf.sge(0, 100)] }));
      await H.poll1(a1.scq, 'SEND 1 from QP a1');
      H.postSend(a2, H.wrSend({ wrId: 1n, sge: [sbuf.sge(100, 90)] }));
      await H.poll1(a2.scq, 'SEND 1 from QP a2');
      H.postSend(a1, H.wrSend({ wrId: 2n, sge: [sbuf.sge(200, 80)] }));
      await H.poll1(a1.scq, 'SEND 2 from QP a1');
      H.postSend(a2, H.wrSend({ wrId: 3n, sge: [sbuf.sge(300, 70)] }));
      await H.poll1(a2.scq, 'SEND 2 from QP a2');
      const wcs = await H.pollN(rcq, 4, '4 receives from the SRQ');
      const lens = [100, 90, 80, 70];
      const qps = [b1, b2, b1, b2].map((e) => e.qp.qp_num);
      const used = new Set<bigint>();
      wcs.forEach((w, k) => {
        H.expectWc(w, { status: IBV_WC_SUCCESS, opcode: IBV_WC_RECV, byte_len: lens[k]!, qp_num: qps[k]! }, `SRQ receive #${k}`);
        used.add(w.wr_id);
        const slot = Number(w.wr_id);
        H.expectBytes(rbuf.data.subarray(slot * 256, slot * 256 + lens[k]!), sbuf.data.subarray(k * 100, k * 100 + lens[k]!), `message ${k}`);
      });
      expect(used.size, 'each SRQ receive used once').toBe(4);
    });
  });

  describe('completion channel', () => {
    it('ibv_req_notify_cq + ibv_get_cq_event resolve for the CQ that completed', async () => {
      const ch = ibv_create_comp_channel(f.b.ctx);
      f.b.cleanup.push(() => void ibv_destroy_comp_channel(ch));
      const cq1 = H.createCq(f.b, 64, ch);
      const cq2 = H.createCq(f.b, 64, ch);
      const b1 = H.createQp(f.b, IBV_QPT_RC, { recvCq: cq1 });
      const b2 = H.createQp(f.b, IBV_QPT_RC, { recvCq: cq2 });
      const a1 = H.createQp(f.a, IBV_QPT_RC);
      const a2 = H.createQp(f.a, IBV_QPT_RC);
      H.connect(a1, b1);
      H.connect(a2, b2);
      const rbuf = H.region(f.b, 256);
      const sbuf = H.region(f.a, 16);
      expect(ibv_req_notify_cq(cq1, 0)).toBe(0);
      expect(ibv_req_notify_cq(cq2, 0)).toBe(0);
      H.postRecv(b2, H.recvWr(1n, [rbuf.sge(0, 64)]));
      H.postSend(a2, H.wrSend({ wrId: 1n, sge: [sbuf.sge()] }));
      const ev = await H.orFail(ibv_get_cq_event(ch), 'a completion event for cq2');
      expect(ev.cq, 'the event names cq2').toBe(cq2);
      ibv_ack_cq_events(ev.cq, 1);
      H.expectWc(await H.poll1(cq2, 'cq2 receive'), { wr_id: 1n, status: IBV_WC_SUCCESS }, 'recv');
      expect(H.pollNow(cq1)).toEqual([]);
      // Now cq1 (still armed from before).
      H.postRecv(b1, H.recvWr(2n, [rbuf.sge(64, 64)]));
      H.postSend(a1, H.wrSend({ wrId: 2n, sge: [sbuf.sge()] }));
      const ev1 = await H.orFail(ibv_get_cq_event(ch), 'a completion event for cq1');
      expect(ev1.cq, 'the event names cq1').toBe(cq1);
      ibv_ack_cq_events(ev1.cq, 1);
      H.expectWc(await H.poll1(cq1, 'cq1 receive'), { wr_id: 2n, status: IBV_WC_SUCCESS }, 'recv');
      // cq2 is not armed any more: a completion there gives no event.
      H.postRecv(b2, H.recvWr(3n, [rbuf.sge(128, 64)]));
      H.postSend(a2, H.wrSend({ wrId: 3n, sge: [sbuf.sge()] }));
      await H.poll1(cq2, 'cq2 receive (unarmed)');
      expect(await H.within(ibv_get_cq_event(ch), 150), 'no event for an unarmed CQ').toBe(H.TIMEOUT);
    });

    it('a solicited-only arm ignores unsolicited completions', async () => {
      const ch = ibv_create_comp_channel(f.b.ctx);
      f.b.cleanup.push(() => void ibv_destroy_comp_channel(ch));
      const cq: ibv_cq = H.createCq(f.b, 64, ch);
      const b1 = H.createQp(f.b, IBV_QPT_RC, { recvCq: cq });
      const a1 = H.createQp(f.a, IBV_QPT_RC);
      H.connect(a1, b1);
      const rbuf = H.region(f.b, 256);
      const sbuf = H.region(f.a, 16);
      H.postRecv(b1, [H.recvWr(1n, [rbuf.sge(0, 64)]), H.recvWr(2n, [rbuf.sge(64, 64)])]);
      expect(ibv_req_notify_cq(cq, 1)).toBe(0);
      const evP = ibv_get_cq_event(ch);
      H.postSend(a1, H.wrSend({ wrId: 1n, sge: [sbuf.sge()] }));
      await H.poll1(a1.scq, 'unsolicited SEND');
      expect(await H.within(evP, 150), 'no event for an unsolicited completion').toBe(H.TIMEOUT);
      H.postSend(a1, H.wrSend({ wrId: 2n, sge: [sbuf.sge()], flags: IBV_SEND_SIGNALED | IBV_SEND_SOLICITED }));
      const ev = await H.orFail(evP, 'the event for a solicited SEND');
      expect(ev.cq).toBe(cq);
      ibv_ack_cq_events(cq, 1);
      const wcs = await H.pollN(cq, 2, 'both receives');
      expect(wcs.map((w) => w.wr_id)).toEqual([1n, 2n]);
    });
  });
});

describe('model lifecycle', () => {
  it('stopModel with a worker thread returns promptly (the engine exits when told to stop), and a new model starts', async () => {
    const f = await H.openFabric(H.twoDeviceConfig(1));
    const p = H.makePair(f, IBV_QPT_RC);
    const src = H.region(f.a, 64, H.ALL_ACCESS, { fill: (i) => i });
    const dst = H.region(f.b, 64);
    H.postSend(p.a, H.wrWrite({ wrId: 1n, sge: [src.sge()], remote: { addr: dst.addr, rkey: dst.rkey } }));
    await H.poll1(p.a.scq, 'a WRITE before stopping');
    const t = Date.now();
    await f.close();
    const ms = Date.now() - t;
    expect.soft(ms, 'closing the devices and stopModel() (ms)').toBeLessThan(1000);
    const g = await H.openFabric(H.twoDeviceConfig(1));
    try {
      const q = H.makePair(g, IBV_QPT_RC);
      const s2 = H.region(g.a, 64, H.ALL_ACCESS, { fill: (i) => 255 - i });
      const d2 = H.region(g.b, 64);
      H.postSend(q.a, H.wrWrite({ wrId: 2n, sge: [s2.sge()], remote: { addr: d2.addr, rkey: d2.rkey } }));
      H.expectWc(await H.poll1(q.a.scq, 'a WRITE on the restarted model'), { wr_id: 2n, status: IBV_WC_SUCCESS }, 'write');
      H.expectBytes(d2.data, s2.data, 'restarted model');
    } finally {
      await g.close();
    }
  });
});
