/**
 * With the devices in the application's thread (workers: 0), an empty poll
 * of a CQ skips the device pass when nothing can have changed
 * (DeviceHost.quiet: no doorbell, no frame on a wire, nothing waiting to
 * go, no timer due). What that must not lose: transport timers that only
 * empty polls drive (RNR and ACK timeouts, counted exactly), and any
 * doorbell, whichever call rang it — a seeded random mix of posts, empty
 * polls of the other side, CQ arming, firmware queries and event-loop
 * turns, where every completion must arrive in order with its bytes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IBV_QP_STATE,
  IBV_QPS_RESET,
  IBV_QPT_RC,
  IBV_WC_RDMA_WRITE,
  IBV_WC_RECV,
  IBV_WC_RETRY_EXC_ERR,
  IBV_WC_RNR_RETRY_EXC_ERR,
  IBV_WC_SEND,
  IBV_WC_SUCCESS,
  ibv_modify_qp,
  ibv_query_port,
  ibv_req_notify_cq,
  newPortAttr,
} from '../../src/driver/verbs/index.js';
import { Random } from '../../src/runtime/sim/random.js';
import * as H from './harness.js';

let f: H.Fabric;
beforeAll(async () => {
  f = await H.openFabric(H.twoDeviceConfig(0));
});
afterAll(async () => {
  await f?.close();
});

describe('workers: 0, passes skipped while quiet', () => {
  it('RNR timer driven by empty polls alone: exactly three RNR NAKs, then RNR_RETRY_EXC_ERR', async () => {
    const { a } = H.makePair(f, IBV_QPT_RC, { rnrRetry: 2, minRnrTimer: 1 });
    const src = H.region(f.a, 64);
    const ca = H.counters(f.a);
    H.postSend(a, H.wrSend({ wrId: 1n, sge: [src.sge()] }));
    H.expectWc(await H.poll1(a.scq, 'RNR retry exceeded'), { wr_id: 1n, status: IBV_WC_RNR_RETRY_EXC_ERR }, 'send');
    const da = H.counterDelta(ca, H.counters(f.a));
    expect(da['rcvd_rnr_err'], 'RNR NAKs received').toBe(3n);
    expect(da['retry_rnr_exceeded_err']).toBe(1n);
  });

  it('ACK timer driven by empty polls alone: the peer QP in RESET, retry_cnt 2: two retries, then RETRY_EXC_ERR on the third expiry', async () => {
    const { a, b } = H.makePair(f, IBV_QPT_RC, { timeout: 8, retryCnt: 2 });
    expect(ibv_modify_qp(b.qp, { qp_state: IBV_QPS_RESET }, IBV_QP_STATE)).toBe(0);
    const src = H.region(f.a, 64);
    const ca = H.counters(f.a);
    H.postSend(a, H.wrSend({ wrId: 2n, sge: [src.sge()] }));
    H.expectWc(await H.poll1(a.scq, 'retry exceeded'), { wr_id: 2n, status: IBV_WC_RETRY_EXC_ERR }, 'send');
    const da = H.counterDelta(ca, H.counters(f.a));
    expect(da['local_ack_timeout_err'], 'expiries within the retry limit').toBe(2n);
    expect(da['retry_exceeded_err'], 'the expiry past it').toBe(1n);
    expect(da['sent_pkts'], 'the request and its two retries').toBe(3n);
  });

  it('a seeded random mix of posts, empty polls, CQ arming, queries and turns: every completion, in order, with its bytes', async () => {
    const rnd = new Random(9);
    const SLOT = 256;
    const SLOTS = 64;
    const { a, b } = H.makePair(f, IBV_QPT_RC, { maxSendWr: 64, maxRecvWr: 64 });
    const src = H.region(f.a, SLOT * SLOTS);
    const dst = H.region(f.b, SLOT * SLOTS);
    const rbuf = H.region(f.b, SLOT * SLOTS);
    let ops = 0;
    for (let round = 0; round < 250; round++) {
      const n = 1 + rnd.int(8);
      const kinds: ('write' | 'send')[] = [];
      const lens: number[] = [];
      for (let i = 0; i < n; i++) {
        const slot = ops % SLOTS;
        const len = 1 + rnd.int(SLOT);
        for (let k = 0; k < len; k++) src.data[slot * SLOT + k] = rnd.int(256);
        const send = rnd.int(2) === 0;
        kinds.push(send ? 'send' : 'write');
        lens.push(len);
        if (send) {
          H.postRecv(b, H.recvWr(BigInt(ops), [rbuf.sge(slot * SLOT, SLOT)]));
          H.postSend(a, H.wrSend({ wrId: BigInt(ops), sge: [src.sge(slot * SLOT, len)] }));
        } else {
          H.postSend(a, H.wrWrite({ wrId: BigInt(ops), sge: [src.sge(slot * SLOT, len)], remote: { addr: dst.at(slot * SLOT), rkey: dst.rkey } }));
        }
        // Between posts, the things that ask for a pass some other way (or none).
        const between = rnd.int(5);
        if (between === 0) expect(H.pollNow(a.rcq)).toEqual([]);
        else if (between === 1) expect(ibv_req_notify_cq(b.scq, 0)).toBe(0);
        else if (between === 2) expect(ibv_query_port(f.b.ctx, 1, newPortAttr())).toBe(0);
        else if (between === 3) await new Promise<void>((r) => setImmediate(r));
        ops++;
      }
      const wcs = await H.pollN(a.scq, n, `round ${round}`);
      const first = ops - n;
      wcs.forEach((w, i) =>
        H.expectWc(w, { wr_id: BigInt(first + i), status: IBV_WC_SUCCESS, opcode: kinds[i] === 'send' ? IBV_WC_SEND : IBV_WC_RDMA_WRITE }, `op ${first + i}`),
      );
      const sends = kinds.filter((k) => k === 'send').length;
      const recvs = sends > 0 ? await H.pollN(b.rcq, sends, `receives of round ${round}`) : [];
      let r = 0;
      for (let i = 0; i < n; i++) {
        const op = first + i;
        const slot = op % SLOTS;
        const want = src.data.subarray(slot * SLOT, slot * SLOT + lens[i]!);
        if (kinds[i] === 'send') {
          const w = recvs[r++]!;
          H.expectWc(w, { wr_id: BigInt(op), status: IBV_WC_SUCCESS, opcode: IBV_WC_RECV, byte_len: want.length }, `receive ${op}`);
          H.expectBytes(rbuf.data.subarray(slot * SLOT, slot * SLOT + want.length), want, `SEND ${op}`);
        } else {
          H.expectBytes(dst.data.subarray(slot * SLOT, slot * SLOT + want.length), want, `WRITE ${op}`);
        }
      }
    }
    expect(ops).toBeGreaterThan(1000);
    dst.checkGuards('WRITE targets');
  });
});
