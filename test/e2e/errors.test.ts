/**
 * Error paths end to end: each error's work completion on both sides, the
 * QP state afterwards (ibv_query_qp), the flush of what was still queued,
 * the counters, and that no byte outside a registered region (or inside a
 * region the failed operation had no right to touch) changed. Every test
 * uses a fresh connection; every region has guard bytes checked after the
 * test. Runs with the devices on a worker thread and in this thread
 * (E2E_WORKERS=n: only one).
 *
 * Expectations follow SPEC-DIGEST §4 (rxe) and IBTA where rxe is silent.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  IBV_ACCESS_LOCAL_WRITE,
  IBV_ACCESS_REMOTE_ATOMIC,
  IBV_ACCESS_REMOTE_READ,
  IBV_ACCESS_REMOTE_WRITE,
  IBV_MTU_1024,
  IBV_QP_ACCESS_FLAGS,
  IBV_QP_AV,
  IBV_QP_CUR_STATE,
  IBV_QP_DEST_QPN,
  IBV_QP_MAX_DEST_RD_ATOMIC,
  IBV_QP_MAX_QP_RD_ATOMIC,
  IBV_QP_MIN_RNR_TIMER,
  IBV_QP_PATH_MTU,
  IBV_QP_PKEY_INDEX,
  IBV_QP_PORT,
  IBV_QP_QKEY,
  IBV_QP_RETRY_CNT,
  IBV_QP_RNR_RETRY,
  IBV_QP_RQ_PSN,
  IBV_QP_SQ_PSN,
  IBV_QP_STATE,
  IBV_QP_TIMEOUT,
  IBV_QPS_ERR,
  IBV_QPS_INIT,
  IBV_QPS_RESET,
  IBV_QPS_RTR,
  IBV_QPS_RTS,
  IBV_QPT_RC,
  IBV_QPT_UC,
  IBV_QPT_UD,
  IBV_SEND_INLINE,
  IBV_SEND_SIGNALED,
  IBV_WC_LOC_LEN_ERR,
  IBV_WC_LOC_PROT_ERR,
  IBV_WC_LOC_QP_OP_ERR,
  IBV_WC_REM_ACCESS_ERR,
  IBV_WC_REM_INV_REQ_ERR,
  IBV_WC_REM_OP_ERR,
  IBV_WC_RNR_RETRY_EXC_ERR,
  IBV_WC_SUCCESS,
  IBV_WC_WR_FLUSH_ERR,
  errno,
  ibv_alloc_pd,
  ibv_dealloc_pd,
  ibv_modify_qp,
  ibv_post_recv,
  ibv_post_send,
  ibv_reg_mr,
  ibv_wc_status_str,
  newQpAttr,
  qpStateName,
} from '../../src/driver/verbs/index.js';
import type { BadWr, ibv_qp_attr, ibv_recv_wr, ibv_send_wr, ibv_wc } from '../../src/driver/verbs/index.js';
import * as H from './harness.js';

/** Device threads: 1 (a worker thread) and 0 (this thread), or only E2E_WORKERS. */
const MODES = process.env.E2E_WORKERS !== undefined ? [Number(process.env.E2E_WORKERS)] : [1, 0];
const MTU = H.pathMtuBytes(IBV_MTU_1024);

describe.each(MODES)('devices on %i worker thread(s)', (workers) => {
  let f: H.Fabric;
  beforeAll(async () => {
    f = await H.openFabric(H.twoDeviceConfig(workers));
  });
  afterAll(async () => {
    await f?.close();
  });

  /** Regions made in the current test: their guards are checked after it. */
  let made: H.Region[] = [];
  function R(dev: H.Dev, len: number, access = H.ALL_ACCESS, opts: Parameters<typeof H.region>[3] = {}): H.Region {
    const r = H.region(dev, len, access, opts);
    made.push(r);
    return r;
  }
  afterEach(() => {
    const list = made;
    made = [];
    for (const r of list) r.checkGuards('guard bytes after the test');
  });

  const statuses = (ws: ibv_wc[]) => ws.map((w) => `${w.wr_id}:${ibv_wc_status_str(w.status)}`);
  const fill = (seed: number) => (i: number) => (i * 29 + seed) & 0xff;

  /** The snapshot of a region's bytes, to prove an operation left them alone. */
  function snapshot(r: H.Region): Uint8Array {
    return r.data.slice();
  }
  function expectUnchanged(r: H.Region, before: Uint8Array, what: string): void {
    H.expectBytes(r.data, before, `${what}: the region must be unchanged`);
  }

  /** Moves a QP to ERR through ibv_modify_qp. */
  function toErr(ep: H.Ep): void {
    H.modifyOk(ep.qp, { qp_state: IBV_QPS_ERR }, IBV_QP_STATE, '→ERR');
  }

  /** The usual tail of a class-C error: both QPs in ERR, the receives on B flushed. */
  async function expectBothErrAndRecvFlushed(p: H.Pair, recvIds: bigint[], what: string): Promise<void> {
    await waitState(p.a, IBV_QPS_ERR, `${what}: requester`);
    await waitState(p.b, IBV_QPS_ERR, `${what}: responder`);
    if (recvIds.length) {
      const ws = await H.pollN(p.b.rcq, recvIds.length, `${what}: flush of ${recvIds.length} posted receives on the responder`);
      expect(statuses(ws), `${what}: responder receives`).toEqual(recvIds.map((id) => `${id}:${ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR)}`));
      for (const w of ws) expect(w.qp_num).toBe(p.b.qp.qp_num);
    }
  }

  /**
   * The state reaches `state` (the device moves it asynchronously). The bound
   * only turns a hang into a failure: it is generous, so a loaded machine is not one.
   */
  async function waitState(ep: H.Ep, state: number, what: string): Promise<void> {
    const end = Date.now() + 30_000;
    let s = H.qpState(ep.qp);
    while (s !== state && Date.now() < end) {
      await H.sleep(2);
      s = H.qpState(ep.qp);
    }
    expect(qpStateName(s), `${what}: QP ${ep.qp.qp_num} state`).toBe(qpStateName(state));
  }

  function pair(type = IBV_QPT_RC, o: Parameters<typeof H.makePair>[2] = {}): H.Pair {
    return H.makePair(f, type, o);
  }

  describe('local length errors', () => {
    it('receive buffer too small: requester REM_INV_REQ_ERR, responder LOC_LEN_ERR, both ERR, rest flushed', async () => {
      const p = pair();
      const src = R(f.a, 4096, H.ALL_ACCESS, { fill: fill(1) });
      const small = R(f.b, 1000);
      const big = R(f.b, 4096);
      const bigBefore = snapshot(big);
      H.postRecv(p.b, [H.recvWr(1n, [small.sge()]), H.recvWr(2n, [big.sge()])]);
      const ca = H.counters(f.a);
      const cb = H.counters(f.b);
      H.postSend(p.a, [H.wrSend({ wrId: 10n, sge: [src.sge(0, 2000)] }), H.wrSend({ wrId: 11n, sge: [src.sge(0, 10)] })]);
      const sw = await H.pollN(p.a.scq, 2, 'the failed SEND and the flushed one');
      expect(statuses(sw)).toEqual([`10:${ibv_wc_status_str(IBV_WC_REM_INV_REQ_ERR)}`, `11:${ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR)}`]);
      const rw = await H.pollN(p.b.rcq, 2, 'the short receive and the flushed one');
      expect(statuses(rw)).toEqual([`1:${ibv_wc_status_str(IBV_WC_LOC_LEN_ERR)}`, `2:${ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR)}`]);
      await waitState(p.a, IBV_QPS_ERR, 'requester');
      await waitState(p.b, IBV_QPS_ERR, 'responder');
      expectUnchanged(big, bigBefore, 'the second receive buffer');
      const da = await H.waitCounters(f.a, ca, (d) => (d['req_remote_invalid_request'] ?? 0n) >= 1n, 'req_remote_invalid_request');
      expect(da['req_remote_invalid_request']).toBe(1n);
      const db = await H.waitCounters(f.b, cb, (d) => (d['resp_local_length_error'] ?? 0n) >= 1n, 'resp_local_length_error');
      expect(db['resp_local_length_error']).toBe(1n);
    });

    it('WRITE_WITH_IMM needs no receive buffer space: a 0-SGE receive is enough', async () => {
      const p = pair();
      const src = R(f.a, 2 * MTU, H.ALL_ACCESS, { fill: fill(2) });
      const dst = R(f.b, 2 * MTU);
      H.postRecv(p.b, H.recvWr(1n, []));
      H.postSend(p.a, H.wrWrite({ wrId: 2n, sge: [src.sge()], remote: { addr: dst.addr, rkey: dst.rkey }, imm: 7 }));
      H.expectWc(await H.poll1(p.a.scq, 'WRITE_WITH_IMM'), { wr_id: 2n, status: IBV_WC_SUCCESS }, 'write');
      H.expectWc(await H.poll1(p.b.rcq, 'its receive'), { wr_id: 1n, status: IBV_WC_SUCCESS, byte_len: 2 * MTU }, 'recv');
      H.expectBytes(dst.data, src.data, 'written');
    });

    it('num_sge above max_send_sge / max_recv_sge is EINVAL at post time', () => {
      const p = pair(IBV_QPT_RC, { maxSendSge: 2, maxRecvSge: 2 });
      const src = R(f.a, 64);
      const n = p.a.initCap.max_send_sge + 1;
      const wr = H.wrSend({ wrId: 1n, sge: Array.from({ length: n }, (_, i) => src.sge(i, 1)) });
      const bad: BadWr<ibv_send_wr> = {};
      expect(ibv_post_send(p.a.qp, wr, bad)).toBe(errno.EINVAL);
      expect(bad.wr).toBe(wr);
      const rn = p.b.initCap.max_recv_sge + 1;
      const dst = R(f.b, 64);
      const rwr = H.recvWr(
        1n,
        Array.from({ length: rn }, (_, i) => dst.sge(i, 1)),
      );
      const rbad: BadWr<ibv_recv_wr> = {};
      expect(ibv_post_recv(p.b.qp, rwr, rbad)).toBe(errno.EINVAL);
      expect(rbad.wr).toBe(rwr);
      H.expectQpState(p.a.qp, IBV_QPS_RTS);
    });

    it('inline data above max_inline_data is EINVAL at post time', () => {
      const p = pair(IBV_QPT_RC, { maxInline: 32 });
      const src = R(f.a, 4096);
      const wr = H.wrSend({ wrId: 1n, sge: [src.sge(0, p.a.initCap.max_inline_data + 1)], flags: IBV_SEND_SIGNALED | IBV_SEND_INLINE });
      const bad: BadWr<ibv_send_wr> = {};
      expect(ibv_post_send(p.a.qp, wr, bad)).toBe(errno.EINVAL);
      expect(bad.wr).toBe(wr);
    });
  });

  describe('local protection errors', () => {
    it('bad lkey on a SEND: LOC_PROT_ERR even unsignaled, QP to ERR, queued WRs flushed; nothing reaches the peer', async () => {
      const p = pair();
      const src = R(f.a, 256, H.ALL_ACCESS, { fill: fill(3) });
      const dst = R(f.b, 256);
      const dstBefore = snapshot(dst);
      H.postRecv(p.b, H.recvWr(1n, [dst.sge()]));
      const badKey = { addr: src.addr, length: 16, lkey: (src.lkey ^ 0x5a5a00) >>> 0 };
      H.postSend(p.a, [
        H.wrSend({ wrId: 10n, sge: [badKey], flags: 0 }), // unsignaled: an error completes it anyway
        H.wrSend({ wrId: 11n, sge: [src.sge(0, 8)] }),
        H.wrWrite({ wrId: 12n, sge: [src.sge(0, 8)], remote: { addr: dst.addr, rkey: dst.rkey }, flags: 0 }),
      ]);
      const sw = await H.pollN(p.a.scq, 3, 'bad-lkey SEND and the two flushed WRs');
      expect(statuses(sw)).toEqual([
        `10:${ibv_wc_status_str(IBV_WC_LOC_PROT_ERR)}`,
        `11:${ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR)}`,
        `12:${ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR)}`,
      ]);
      await waitState(p.a, IBV_QPS_ERR, 'requester after LOC_PROT_ERR');
      await H.expectNoCqe(p.b.rcq, 50, 'the peer receives nothing');
      H.expectQpState(p.b.qp, IBV_QPS_RTS, 'the peer is not affected');
      expectUnchanged(dst, dstBefore, 'the peer receive buffer');
      // The posted receive flushes when the application moves the QP to ERR.
      toErr(p.b);
      H.expectWc(await H.poll1(p.b.rcq, 'receive flushed by modify to ERR'), { wr_id: 1n, status: IBV_WC_WR_FLUSH_ERR, qp_num: p.b.qp.qp_num }, 'flush');
    });

    it('WRs posted to a QP already in ERR complete with WR_FLUSH_ERR (send and receive)', async () => {
      const p = pair();
      const buf = R(f.a, 64);
      const rbuf = R(f.b, 64);
      toErr(p.a);
      toErr(p.b);
      await H.sleep(10);
      // ibv_post_send / ibv_post_recv accept WRs in ERR (rxe, mlx5); the device flushes them.
      H.postSend(p.a, [
        H.wrSend({ wrId: 13n, sge: [buf.sge(0, 8)] }),
        H.wrWrite({ wrId: 14n, sge: [buf.sge(0, 8)], remote: { addr: rbuf.addr, rkey: rbuf.rkey }, flags: 0 }),
      ]);
      H.postRecv(p.b, H.recvWr(2n, [rbuf.sge()]));
      const [s, r] = await Promise.all([
        H.pollN(p.a.scq, 2, 'two sends posted in ERR, flushed').catch((e: Error) => e),
        H.pollN(p.b.rcq, 1, 'a receive posted in ERR, flushed').catch((e: Error) => e),
      ]);
      if (s instanceof Error) throw s;
      if (r instanceof Error) throw r;
      expect(statuses(s)).toEqual([`13:${ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR)}`, `14:${ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR)}`]);
      expect(statuses(r)).toEqual([`2:${ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR)}`]);
    });

    it('SGE past the end of its MR (by one byte): LOC_PROT_ERR', async () => {
      const p = pair();
      const src = R(f.a, 100, H.ALL_ACCESS, { fill: fill(4) });
      const dst = R(f.b, 256);
      const dstBefore = snapshot(dst);
      H.postSend(p.a, H.wrWrite({ wrId: 20n, sge: [src.sge(50, 51)], remote: { addr: dst.addr, rkey: dst.rkey } }));
      H.expectWc(await H.poll1(p.a.scq, 'WRITE gathering past its MR'), { wr_id: 20n, status: IBV_WC_LOC_PROT_ERR }, 'write');
      await waitState(p.a, IBV_QPS_ERR, 'requester');
      expectUnchanged(dst, dstBefore, 'the WRITE target');
      // An SGE starting before the MR.
      const q = pair();
      H.postSend(q.a, H.wrSend({ wrId: 21n, sge: [{ addr: src.addr - 1n, length: 4, lkey: src.lkey }] }));
      H.expectWc(await H.poll1(q.a.scq, 'SEND from before its MR'), { wr_id: 21n, status: IBV_WC_LOC_PROT_ERR }, 'send');
    });

    it('READ into an MR without LOCAL_WRITE: LOC_PROT_ERR, local bytes unchanged', async () => {
      const p = pair();
      const ro = R(f.a, 64, IBV_ACCESS_REMOTE_READ, { fill: fill(5) });
      const roBefore = snapshot(ro);
      const remote = R(f.b, 64, H.ALL_ACCESS, { fill: fill(6) });
      H.postSend(p.a, H.wrRead({ wrId: 30n, sge: [ro.sge(0, 32)], remote: { addr: remote.addr, rkey: remote.rkey } }));
      H.expectWc(await H.poll1(p.a.scq, 'READ into a read-only MR'), { wr_id: 30n, status: IBV_WC_LOC_PROT_ERR }, 'read');
      await waitState(p.a, IBV_QPS_ERR, 'requester');
      expectUnchanged(ro, roBefore, 'the read-only MR');
    });

    it('receive SGE with a bad lkey: responder LOC_PROT_ERR (rxe: LOC_QP_OP_ERR), requester REM_OP_ERR', async () => {
      const p = pair();
      const src = R(f.a, 64, H.ALL_ACCESS, { fill: fill(7) });
      const dst = R(f.b, 64);
      const dstBefore = snapshot(dst);
      H.postRecv(p.b, [H.recvWr(1n, [{ addr: dst.addr, length: 64, lkey: (dst.lkey + 0x100) >>> 0 }]), H.recvWr(2n, [dst.sge()])]);
      H.postSend(p.a, H.wrSend({ wrId: 40n, sge: [src.sge()] }));
      H.expectWc(await H.poll1(p.a.scq, 'SEND into a bad receive SGE'), { wr_id: 40n, status: IBV_WC_REM_OP_ERR }, 'send');
      const rw = await H.pollN(p.b.rcq, 2, 'the bad receive and the flushed one');
      expect([IBV_WC_LOC_PROT_ERR, IBV_WC_LOC_QP_OP_ERR], `responder status ${ibv_wc_status_str(rw[0]!.status)}`).toContain(rw[0]!.status);
      expect(rw[0]!.wr_id).toBe(1n);
      H.expectWc(rw[1]!, { wr_id: 2n, status: IBV_WC_WR_FLUSH_ERR }, 'second receive');
      await waitState(p.a, IBV_QPS_ERR, 'requester');
      await waitState(p.b, IBV_QPS_ERR, 'responder');
      expectUnchanged(dst, dstBefore, 'receive buffer');
    });

    it('ibv_reg_mr: REMOTE_WRITE or REMOTE_ATOMIC without LOCAL_WRITE is EINVAL', () => {
      const buf = R(f.a, 64).data;
      for (const acc of [IBV_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_ATOMIC]) {
        let code = '';
        try {
          ibv_reg_mr(f.a.pd, buf, acc);
        } catch (e) {
          code = (e as { code?: string }).code ?? String(e);
        }
        expect(code, `ibv_reg_mr(access ${acc})`).toBe('EINVAL');
      }
    });
  });

  describe('remote access errors (REM_ACCESS_ERR, NAK 0x62)', () => {
    interface Case {
      name: string;
      /** Make the target and the WR; `target` must stay byte-for-byte unchanged. */
      setup(p: H.Pair, local: H.Region): { target: H.Region; wr: ibv_send_wr };
    }
    const write = (local: H.Region, addr: bigint, rkey: number, len = 16) => H.wrWrite({ wrId: 50n, sge: [local.sge(0, len)], remote: { addr, rkey } });
    const read = (local: H.Region, addr: bigint, rkey: number, len = 16) => H.wrRead({ wrId: 50n, sge: [local.sge(0, len)], remote: { addr, rkey } });
    const cases: Case[] = [
      {
        name: 'WRITE with a bad rkey',
        setup: (_p, l) => {
          const t = R(f.b, 256, H.ALL_ACCESS, { fill: fill(8) });
          return { target: t, wr: write(l, t.addr, (t.rkey ^ 0x7f00) >>> 0) };
        },
      },
      {
        name: 'READ with a bad rkey',
        setup: (_p, l) => {
          const t = R(f.b, 256, H.ALL_ACCESS, { fill: fill(9) });
          return { target: t, wr: read(l, t.addr, (t.rkey + 0x300) >>> 0) };
        },
      },
      {
        name: 'WRITE one byte past the end of the MR (2 packets, the first in range)',
        setup: (_p, l) => {
          const t = R(f.b, 2 * MTU, H.ALL_ACCESS, { fill: fill(10) });
          return { target: t, wr: write(l, t.addr + 1n, t.rkey, 2 * MTU) };
        },
      },
      {
        name: 'WRITE starting before the MR',
        setup: (_p, l) => {
          const t = R(f.b, 256, H.ALL_ACCESS, { fill: fill(11) });
          return { target: t, wr: write(l, t.addr - 8n, t.rkey, 16) };
        },
      },
      {
        name: 'READ one byte past the end of the MR',
        setup: (_p, l) => {
          const t = R(f.b, 256, H.ALL_ACCESS, { fill: fill(12) });
          return { target: t, wr: read(l, t.addr + 241n, t.rkey, 16) };
        },
      },
      {
        name: 'WRITE to an MR without REMOTE_WRITE',
        setup: (_p, l) => {
          const t = R(f.b, 256, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC, { fill: fill(13) });
          return { target: t, wr: write(l, t.addr, t.rkey) };
        },
      },
      {
        name: 'READ from an MR without REMOTE_READ',
        setup: (_p, l) => {
          const t = R(f.b, 256, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC, { fill: fill(14) });
          return { target: t, wr: read(l, t.addr, t.rkey) };
        },
      },
      {
        name: 'FETCH&ADD on an MR without REMOTE_ATOMIC',
        setup: (_p, l) => {
          const t = R(f.b, 256, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, { fill: fill(15) });
          return { target: t, wr: H.wrFaa({ wrId: 50n, sge: [l.sge(0, 8)], atomic: { addr: t.addr, rkey: t.rkey, compareAdd: 1n } }) };
        },
      },
      {
        name: 'CMP&SWP past the end of the MR',
        setup: (_p, l) => {
          const t = R(f.b, 64, H.ALL_ACCESS, { fill: fill(16) });
          return { target: t, wr: H.wrCas({ wrId: 50n, sge: [l.sge(0, 8)], atomic: { addr: t.addr + 64n, rkey: t.rkey, compareAdd: 0n, swap: 1n } }) };
        },
      },
      {
        name: 'WRITE to an MR of another PD',
        setup: (_p, l) => {
          const pd2 = ibv_alloc_pd(f.b.ctx);
          // Cleanup runs newest first: the MR is deregistered before its PD goes.
          f.b.cleanup.push(() => void ibv_dealloc_pd(pd2));
          const t = R(f.b, 256, H.ALL_ACCESS, { fill: fill(17), pd: pd2 });
          return { target: t, wr: write(l, t.addr, t.rkey) };
        },
      },
      {
        name: 'WRITE to a deregistered MR',
        setup: (_p, l) => {
          const t = R(f.b, 256, H.ALL_ACCESS, { fill: fill(18) });
          const rkey = t.rkey;
          t.dereg();
          return { target: t, wr: write(l, t.addr, rkey) };
        },
      },
    ];

    for (const c of cases) {
      it(c.name, async () => {
        const p = pair();
        const local = R(f.a, 4 * MTU, H.ALL_ACCESS, { fill: fill(19) });
        const { target, wr } = c.setup(p, local);
        const before = snapshot(target);
        const localBefore = snapshot(local);
        H.postRecv(p.b, H.recvWr(1n, [R(f.b, 64).sge()]));
        const ca = H.counters(f.a);
        const cb = H.counters(f.b);
        wr.wr_id = 50n;
        H.postSend(p.a, [
          wr,
          H.wrSend({ wrId: 51n, sge: [local.sge(0, 4)] }),
          H.wrWrite({ wrId: 52n, sge: [local.sge(0, 4)], remote: { addr: 0n, rkey: 0 }, flags: 0 }),
        ]);
        const sw = await H.pollN(p.a.scq, 3, `${c.name}: the error and two flushes`);
        expect(statuses(sw), c.name).toEqual([
          `50:${ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR)}`,
          `51:${ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR)}`,
          `52:${ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR)}`,
        ]);
        await expectBothErrAndRecvFlushed(p, [1n], c.name);
        try {
          expectUnchanged(target, before, c.name);
        } finally {
          if (target.data.length) target.checkGuards(`${c.name}: target guards`);
        }
        // A failed READ / atomic must not have written the local buffer either.
        expectUnchanged(local, localBefore, `${c.name}: local buffer`);
        const da = await H.waitCounters(f.a, ca, (d) => (d['req_remote_access_errors'] ?? 0n) >= 1n, 'req_remote_access_errors');
        expect(da['req_remote_access_errors']).toBe(1n);
        const db = await H.waitCounters(f.b, cb, (d) => (d['resp_remote_access_errors'] ?? 0n) >= 1n, 'resp_remote_access_errors');
        expect(db['resp_remote_access_errors']).toBe(1n);
      });
    }
  });

  describe('remote invalid request (REM_INV_REQ_ERR, NAK 0x61)', () => {
    const qpAccessCases: [string, number, (l: H.Region, t: H.Region) => ibv_send_wr][] = [
      [
        'READ to a QP without REMOTE_READ in qp_access_flags',
        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC,
        (l, t) => H.wrRead({ wrId: 60n, sge: [l.sge(0, 16)], remote: { addr: t.addr, rkey: t.rkey } }),
      ],
      [
        'WRITE to a QP without REMOTE_WRITE in qp_access_flags',
        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
        (l, t) => H.wrWrite({ wrId: 60n, sge: [l.sge(0, 16)], remote: { addr: t.addr, rkey: t.rkey } }),
      ],
      [
        'atomic to a QP without REMOTE_ATOMIC in qp_access_flags',
        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE,
        (l, t) => H.wrFaa({ wrId: 60n, sge: [l.sge(0, 8)], atomic: { addr: t.addr, rkey: t.rkey, compareAdd: 1n } }),
      ],
    ];
    for (const [name, access, mk] of qpAccessCases) {
      it(name, async () => {
        // Only the responder's QP lacks the right; the MR has every right.
        const a = H.createQp(f.a, IBV_QPT_RC);
        const b = H.createQp(f.b, IBV_QPT_RC);
        H.toInit(a);
        H.toInit(b, { access });
        H.toRtr(a, b, 0x2000);
        H.toRtr(b, a, 0x1000);
        H.toRts(a, 0x1000);
        H.toRts(b, 0x2000);
        const p = { a, b };
        const local = R(f.a, 64, H.ALL_ACCESS, { fill: fill(20) });
        const t = R(f.b, 64, H.ALL_ACCESS, { fill: fill(21) });
        const before = snapshot(t);
        const localBefore = snapshot(local);
        H.postRecv(b, H.recvWr(1n, [R(f.b, 64).sge()]));
        const ca = H.counters(f.a);
        H.postSend(a, [mk(local, t), H.wrSend({ wrId: 61n, sge: [local.sge(0, 4)] })]);
        const sw = await H.pollN(a.scq, 2, `${name}: error + flush`);
        expect(statuses(sw)).toEqual([`60:${ibv_wc_status_str(IBV_WC_REM_INV_REQ_ERR)}`, `61:${ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR)}`]);
        await expectBothErrAndRecvFlushed(p, [1n], name);
        expectUnchanged(t, before, name);
        expectUnchanged(local, localBefore, `${name}: local`);
        const da = await H.waitCounters(f.a, ca, (d) => (d['req_remote_invalid_request'] ?? 0n) >= 1n, 'req_remote_invalid_request');
        expect(da['req_remote_invalid_request']).toBe(1n);
      });
    }

    it('READ to a responder with max_dest_rd_atomic = 0', async () => {
      const p = pair(IBV_QPT_RC, { maxDestRdAtomic: 0 });
      const local = R(f.a, 64);
      const t = R(f.b, 64, H.ALL_ACCESS, { fill: fill(22) });
      H.postSend(p.a, H.wrRead({ wrId: 70n, sge: [local.sge(0, 8)], remote: { addr: t.addr, rkey: t.rkey } }));
      H.expectWc(await H.poll1(p.a.scq, 'READ with no responder resources'), { wr_id: 70n, status: IBV_WC_REM_INV_REQ_ERR }, 'read');
      await expectBothErrAndRecvFlushed(p, [], 'max_dest_rd_atomic 0');
    });

    it('a misaligned atomic is refused at post time (EINVAL, as rxe and mlx5 providers do); the QP stays usable', async () => {
      const p = pair();
      const local = R(f.a, 64);
      const t = R(f.b, 64, H.ALL_ACCESS, { fill: fill(23) });
      const before = snapshot(t);
      for (const wr of [
        H.wrFaa({ wrId: 80n, sge: [local.sge(0, 8)], atomic: { addr: t.addr + 4n, rkey: t.rkey, compareAdd: 1n } }),
        H.wrCas({ wrId: 81n, sge: [local.sge(0, 8)], atomic: { addr: t.addr + 1n, rkey: t.rkey, compareAdd: 0n, swap: 1n } }),
      ]) {
        const bad: BadWr<ibv_send_wr> = {};
        expect(ibv_post_send(p.a.qp, wr, bad), `misaligned atomic ${wr.wr_id}`).toBe(errno.EINVAL);
        expect(bad.wr).toBe(wr);
      }
      expectUnchanged(t, before, 'atomic target');
      H.postSend(p.a, H.wrFaa({ wrId: 82n, sge: [local.sge(0, 8)], atomic: { addr: t.addr + 8n, rkey: t.rkey, compareAdd: 1n } }));
      H.expectWc(await H.poll1(p.a.scq, 'aligned atomic after the refused ones'), { wr_id: 82n, status: IBV_WC_SUCCESS }, 'faa');
    });
  });

  describe('RNR', () => {
    it('no receive posted, rnr_retry 0: RNR_RETRY_EXC_ERR after one RNR NAK; responder unaffected', async () => {
      const p = pair(IBV_QPT_RC, { rnrRetry: 0 });
      const src = R(f.a, 64, H.ALL_ACCESS, { fill: fill(24) });
      const ca = H.counters(f.a);
      const cb = H.counters(f.b);
      H.postSend(p.a, [H.wrSend({ wrId: 90n, sge: [src.sge()] }), H.wrSend({ wrId: 91n, sge: [src.sge()] })]);
      const sw = await H.pollN(p.a.scq, 2, 'RNR retry exceeded + flush');
      expect(statuses(sw)).toEqual([`90:${ibv_wc_status_str(IBV_WC_RNR_RETRY_EXC_ERR)}`, `91:${ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR)}`]);
      await waitState(p.a, IBV_QPS_ERR, 'requester');
      H.expectQpState(p.b.qp, IBV_QPS_RTS, 'responder after sending an RNR NAK');
      const da = await H.waitCounters(f.a, ca, (d) => (d['retry_rnr_exceeded_err'] ?? 0n) >= 1n, 'retry_rnr_exceeded_err');
      expect(da['rcvd_rnr_err'], 'RNR NAKs received').toBe(1n);
      expect(da['retry_rnr_exceeded_err']).toBe(1n);
      const db = await H.waitCounters(f.b, cb, (d) => (d['send_rnr_err'] ?? 0n) >= 1n, 'send_rnr_err');
      expect(db['send_rnr_err'], 'RNR NAKs sent').toBe(1n);
    });

    it('rnr_retry 2: exactly three RNR NAKs, then RNR_RETRY_EXC_ERR', async () => {
      const p = pair(IBV_QPT_RC, { rnrRetry: 2, minRnrTimer: 1 });
      const src = R(f.a, 64, H.ALL_ACCESS, { fill: fill(25) });
      const ca = H.counters(f.a);
      const cb = H.counters(f.b);
      H.postSend(p.a, H.wrSend({ wrId: 92n, sge: [src.sge()] }));
      H.expectWc(await H.poll1(p.a.scq, 'RNR retry exceeded'), { wr_id: 92n, status: IBV_WC_RNR_RETRY_EXC_ERR }, 'send');
      const da = await H.waitCounters(f.a, ca, (d) => (d['retry_rnr_exceeded_err'] ?? 0n) >= 1n, 'retry_rnr_exceeded_err');
      expect(da['rcvd_rnr_err'], 'RNR NAKs received (1 + rnr_retry)').toBe(3n);
      const db = H.counterDelta(cb, H.counters(f.b));
      expect(db['send_rnr_err'], 'RNR NAKs sent').toBe(3n);
    });

    for (const len of [100, 3 * MTU]) {
      it(`rnr_retry 7 (infinite): a receive posted 100 ms later lets a ${len}-byte SEND complete`, async () => {
        const p = pair(IBV_QPT_RC, { rnrRetry: 7, minRnrTimer: 12 });
        const src = R(f.a, len, H.ALL_ACCESS, { fill: fill(26) });
        const dst = R(f.b, len);
        const ca = H.counters(f.a);
        H.postSend(p.a, H.wrSend({ wrId: 93n, sge: [src.sge()] }));
        // The application polls while it waits (with workers: 0 that is what runs the device).
        await H.expectNoCqe(p.a.scq, 100, 'no completion while the responder has no receive');
        H.postRecv(p.b, H.recvWr(3n, [dst.sge()]));
        H.expectWc(await H.poll1(p.a.scq, 'SEND after the receive was posted'), { wr_id: 93n, status: IBV_WC_SUCCESS }, 'send');
        H.expectWc(await H.poll1(p.b.rcq, 'the late receive'), { wr_id: 3n, status: IBV_WC_SUCCESS, byte_len: len }, 'recv');
        H.expectBytes(dst.data, src.data, 'payload after RNR retries');
        const da = H.counterDelta(ca, H.counters(f.a));
        expect(da['rcvd_rnr_err'] ?? 0n, 'RNR NAKs were received').toBeGreaterThanOrEqual(2n);
        expect(da['retry_rnr_exceeded_err'] ?? 0n).toBe(0n);
        H.expectQpState(p.a.qp, IBV_QPS_RTS);
      });
    }
  });

  describe('flush and recovery', () => {
    it('after an error every queued WR completes once with WR_FLUSH_ERR, in order, signaled or not', async () => {
      const p = pair();
      const local = R(f.a, 256, H.ALL_ACCESS, { fill: fill(27) });
      const t = R(f.b, 256);
      H.postRecv(p.b, [H.recvWr(1n, [t.sge(0, 64)]), H.recvWr(2n, [t.sge(64, 64)])]);
      H.postSend(p.a, [
        H.wrWrite({ wrId: 100n, sge: [local.sge(0, 8)], remote: { addr: t.at(128), rkey: t.rkey } }),
        H.wrWrite({ wrId: 101n, sge: [local.sge(0, 8)], remote: { addr: t.at(128), rkey: (t.rkey ^ 0x4400) >>> 0 } }),
        H.wrSend({ wrId: 102n, sge: [local.sge(0, 8)] }),
        H.wrRead({ wrId: 103n, sge: [local.sge(64, 8)], remote: { addr: t.addr, rkey: t.rkey }, flags: 0 }),
        H.wrFaa({ wrId: 104n, sge: [local.sge(72, 8)], atomic: { addr: t.addr, rkey: t.rkey, compareAdd: 1n } }),
      ]);
      const sw = await H.pollN(p.a.scq, 5, 'one success, one error, three flushes');
      const F = ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR);
      expect(statuses(sw)).toEqual([
        `100:${ibv_wc_status_str(IBV_WC_SUCCESS)}`,
        `101:${ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR)}`,
        `102:${F}`,
        `103:${F}`,
        `104:${F}`,
      ]);
      for (const w of sw) expect(w.qp_num).toBe(p.a.qp.qp_num);
      await expectBothErrAndRecvFlushed(p, [1n, 2n], 'after REM_ACCESS_ERR');
      await H.expectNoCqe(p.a.scq, 30, 'nothing completes twice');
    });

    it('a QP in ERR goes back through RESET→INIT→RTR→RTS and works again', async () => {
      const p = pair();
      const src = R(f.a, 64, H.ALL_ACCESS, { fill: fill(28) });
      const dst = R(f.b, 64);
      H.postSend(p.a, H.wrSend({ wrId: 1n, sge: [src.sge()] })); // no receive: RNR, then…
      toErr(p.a);
      toErr(p.b);
      H.expectWc(await H.poll1(p.a.scq, 'flush by modify to ERR'), { wr_id: 1n, status: IBV_WC_WR_FLUSH_ERR }, 'flush');
      for (const e of [p.a, p.b]) {
        H.modifyOk(e.qp, { qp_state: IBV_QPS_RESET }, IBV_QP_STATE, '→RESET');
        H.expectQpState(e.qp, IBV_QPS_RESET);
      }
      H.connect(p.a, p.b, { psnA: 0xfffffe, psnB: 0x10 });
      H.postRecv(p.b, H.recvWr(2n, [dst.sge()]));
      H.postSend(p.a, H.wrSend({ wrId: 3n, sge: [src.sge()] }));
      H.expectWc(await H.poll1(p.a.scq, 'SEND after reconnect'), { wr_id: 3n, status: IBV_WC_SUCCESS }, 'send');
      H.expectWc(await H.poll1(p.b.rcq, 'RECV after reconnect'), { wr_id: 2n, status: IBV_WC_SUCCESS, byte_len: 64 }, 'recv');
      H.expectBytes(dst.data, src.data, 'payload after reconnect');
    });
  });

  describe('QP state machine', () => {
    function mkRc() {
      return H.createQp(f.a, IBV_QPT_RC);
    }
    function expectRejected(ep: H.Ep, attr: Partial<ibv_qp_attr>, mask: number, state: number, what: string): void {
      expect(ibv_modify_qp(ep.qp, attr, mask), `${what}: ibv_modify_qp`).toBe(errno.EINVAL);
      H.expectQpState(ep.qp, state, `${what}: unchanged`);
    }
    const initAttr = (): Partial<ibv_qp_attr> => ({ qp_state: IBV_QPS_INIT, pkey_index: 0, port_num: 1, qp_access_flags: IBV_ACCESS_LOCAL_WRITE });
    const INIT_MASK = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
    function rtrAttr(peerQpn: number): Partial<ibv_qp_attr> {
      const a = newQpAttr();
      a.qp_state = IBV_QPS_RTR;
      a.path_mtu = IBV_MTU_1024;
      a.dest_qp_num = peerQpn;
      a.rq_psn = 0;
      a.max_dest_rd_atomic = 1;
      a.min_rnr_timer = 12;
      a.ah_attr = H.avTo(f.a, f.b);
      return a;
    }
    const RTR_MASK = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    const rtsAttr = (): Partial<ibv_qp_attr> => ({ qp_state: IBV_QPS_RTS, sq_psn: 0, timeout: 14, retry_cnt: 7, rnr_retry: 7, max_rd_atomic: 1 });
    const RTS_MASK = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;

    it('wrong transitions and wrong masks are EINVAL and leave the state alone', () => {
      const e = mkRc();
      const peer = H.createQp(f.b, IBV_QPT_RC);
      // RESET →
      expectRejected(e, rtrAttr(peer.qp.qp_num), RTR_MASK, IBV_QPS_RESET, 'RESET→RTR');
      expectRejected(e, rtsAttr(), RTS_MASK, IBV_QPS_RESET, 'RESET→RTS');
      expectRejected(e, initAttr(), IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS, IBV_QPS_RESET, 'RESET→INIT without PORT');
      expectRejected(e, { ...initAttr(), qkey: 1 }, INIT_MASK | IBV_QP_QKEY, IBV_QPS_RESET, 'RESET→INIT with QKEY on RC');
      expectRejected(e, { ...initAttr(), sq_psn: 1 }, INIT_MASK | IBV_QP_SQ_PSN, IBV_QPS_RESET, 'RESET→INIT with SQ_PSN');
      expectRejected(e, { ...initAttr(), port_num: 9 }, INIT_MASK, IBV_QPS_RESET, 'RESET→INIT on a port that does not exist');
      H.modifyOk(e.qp, initAttr(), INIT_MASK, 'RESET→INIT');
      // INIT →
      expectRejected(e, rtsAttr(), RTS_MASK, IBV_QPS_INIT, 'INIT→RTS');
      expectRejected(e, rtrAttr(peer.qp.qp_num), RTR_MASK & ~IBV_QP_DEST_QPN, IBV_QPS_INIT, 'INIT→RTR without DEST_QPN');
      expectRejected(e, rtrAttr(peer.qp.qp_num), RTR_MASK & ~IBV_QP_AV, IBV_QPS_INIT, 'INIT→RTR without AV');
      expectRejected(e, rtrAttr(peer.qp.qp_num), RTR_MASK & ~IBV_QP_MIN_RNR_TIMER, IBV_QPS_INIT, 'INIT→RTR (RC) without MIN_RNR_TIMER');
      expectRejected(e, { ...rtrAttr(peer.qp.qp_num), path_mtu: 6 }, RTR_MASK, IBV_QPS_INIT, 'INIT→RTR with path_mtu 6');
      expectRejected(e, { ...rtrAttr(peer.qp.qp_num), min_rnr_timer: 32 }, RTR_MASK, IBV_QPS_INIT, 'INIT→RTR with min_rnr_timer 32');
      expectRejected(
        e,
        { ...rtrAttr(peer.qp.qp_num), ah_attr: { ...H.avTo(f.a, f.b), grh: { ...H.avTo(f.a, f.b).grh, sgid_index: 200 } } },
        RTR_MASK,
        IBV_QPS_INIT,
        'INIT→RTR with an empty source GID index',
      );
      H.modifyOk(e.qp, rtrAttr(peer.qp.qp_num), RTR_MASK, 'INIT→RTR');
      // RTR →
      expectRejected(e, rtsAttr(), RTS_MASK & ~IBV_QP_RETRY_CNT, IBV_QPS_RTR, 'RTR→RTS without RETRY_CNT');
      expectRejected(e, rtsAttr(), RTS_MASK & ~IBV_QP_SQ_PSN, IBV_QPS_RTR, 'RTR→RTS without SQ_PSN');
      expectRejected(e, { ...rtsAttr(), timeout: 32 }, RTS_MASK, IBV_QPS_RTR, 'RTR→RTS with timeout 32');
      expectRejected(e, { ...rtsAttr(), retry_cnt: 8 }, RTS_MASK, IBV_QPS_RTR, 'RTR→RTS with retry_cnt 8');
      expectRejected(e, { ...rtsAttr(), rnr_retry: 8 }, RTS_MASK, IBV_QPS_RTR, 'RTR→RTS with rnr_retry 8');
      expectRejected(e, { ...rtsAttr(), cur_qp_state: IBV_QPS_INIT }, RTS_MASK | IBV_QP_CUR_STATE, IBV_QPS_RTR, 'RTR→RTS with a wrong cur_qp_state');
      expectRejected(e, { ...rtsAttr(), dest_qp_num: 5 }, RTS_MASK | IBV_QP_DEST_QPN, IBV_QPS_RTR, 'RTR→RTS with DEST_QPN (not allowed)');
      expectRejected(e, initAttr(), INIT_MASK, IBV_QPS_RTR, 'RTR→INIT');
      H.modifyOk(e.qp, rtsAttr(), RTS_MASK, 'RTR→RTS');
      // RTS →
      expectRejected(e, rtrAttr(peer.qp.qp_num), RTR_MASK, IBV_QPS_RTS, 'RTS→RTR');
      expectRejected(e, initAttr(), INIT_MASK, IBV_QPS_RTS, 'RTS→INIT');
      expectRejected(e, { qp_state: IBV_QPS_RTS, path_mtu: IBV_MTU_1024 }, IBV_QP_STATE | IBV_QP_PATH_MTU, IBV_QPS_RTS, 'RTS→RTS changing PATH_MTU');
      H.modifyOk(e.qp, { qp_state: IBV_QPS_RTS, min_rnr_timer: 3 }, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER, 'RTS→RTS with MIN_RNR_TIMER');
      expect(H.queryQp(e.qp).min_rnr_timer).toBe(3);
      // Anything → ERR → RESET.
      H.modifyOk(e.qp, { qp_state: IBV_QPS_ERR }, IBV_QP_STATE, 'RTS→ERR');
      H.expectQpState(e.qp, IBV_QPS_ERR);
      expectRejected(e, rtsAttr(), RTS_MASK, IBV_QPS_ERR, 'ERR→RTS');
      H.modifyOk(e.qp, { qp_state: IBV_QPS_RESET }, IBV_QP_STATE, 'ERR→RESET');
      H.expectQpState(e.qp, IBV_QPS_RESET);
    });

    it('UC and UD required attributes', () => {
      const uc = H.createQp(f.a, IBV_QPT_UC);
      H.modifyOk(uc.qp, initAttr(), INIT_MASK, 'UC RESET→INIT');
      const peer = H.createQp(f.b, IBV_QPT_UC);
      // UC has no MAX_DEST_RD_ATOMIC / MIN_RNR_TIMER.
      expectRejected(uc, rtrAttr(peer.qp.qp_num), RTR_MASK, IBV_QPS_INIT, 'UC INIT→RTR with RC-only attributes');
      H.modifyOk(uc.qp, rtrAttr(peer.qp.qp_num), IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN, 'UC INIT→RTR');
      expectRejected(uc, rtsAttr(), RTS_MASK, IBV_QPS_RTR, 'UC RTR→RTS with RC-only attributes');
      H.modifyOk(uc.qp, { qp_state: IBV_QPS_RTS, sq_psn: 5 }, IBV_QP_STATE | IBV_QP_SQ_PSN, 'UC RTR→RTS');
      const ud = H.createQp(f.a, IBV_QPT_UD);
      expectRejected(
        ud,
        { qp_state: IBV_QPS_INIT, pkey_index: 0, port_num: 1 },
        IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT,
        IBV_QPS_RESET,
        'UD RESET→INIT without QKEY',
      );
      expectRejected(ud, { ...initAttr(), qkey: 1 }, INIT_MASK | IBV_QP_QKEY, IBV_QPS_RESET, 'UD RESET→INIT with ACCESS_FLAGS');
      H.modifyOk(
        ud.qp,
        { qp_state: IBV_QPS_INIT, pkey_index: 0, port_num: 1, qkey: 1 },
        IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
        'UD RESET→INIT',
      );
      expectRejected(ud, rtrAttr(1), IBV_QP_STATE | IBV_QP_AV, IBV_QPS_INIT, 'UD INIT→RTR with an AV');
      H.modifyOk(ud.qp, { qp_state: IBV_QPS_RTR }, IBV_QP_STATE, 'UD INIT→RTR');
      expectRejected(ud, { qp_state: IBV_QPS_RTS }, IBV_QP_STATE, IBV_QPS_RTR, 'UD RTR→RTS without SQ_PSN');
      H.modifyOk(ud.qp, { qp_state: IBV_QPS_RTS, sq_psn: 1 }, IBV_QP_STATE | IBV_QP_SQ_PSN, 'UD RTR→RTS');
    });

    it('posting: sends need RTS (EINVAL before), receives anything but RESET', () => {
      const e = H.createQp(f.a, IBV_QPT_RC);
      const peer = H.createQp(f.b, IBV_QPT_RC);
      const buf = R(f.a, 64);
      const send = () => ibv_post_send(e.qp, H.wrSend({ wrId: 1n, sge: [buf.sge(0, 8)] }), {});
      const recv = () => ibv_post_recv(e.qp, H.recvWr(1n, [buf.sge(0, 8)]), {});
      expect(send(), 'send in RESET').toBe(errno.EINVAL);
      expect(recv(), 'recv in RESET').toBe(errno.EINVAL);
      H.toInit(e);
      expect(send(), 'send in INIT').toBe(errno.EINVAL);
      expect(recv(), 'recv in INIT').toBe(0);
      H.toRtr(e, peer, 0);
      expect(send(), 'send in RTR').toBe(errno.EINVAL);
      expect(recv(), 'recv in RTR').toBe(0);
    });
  });
});
