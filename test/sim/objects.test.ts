/**
 * Many objects on the simulated model: thousands of QPs are created and
 * destroyed, destroyed QPs' host memory and QPNs are reused (a reused QPN
 * starts with fresh pipeline state), and a modify to ERR / RESET among
 * thousands of QPs flushes exactly the QP it names (the firmware's change
 * list, not a scan of the QP table, tells the pipeline which QP changed).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startSimModel, stopModel } from '../../src/boot.js';
import {
  ibv_create_qp,
  ibv_destroy_qp,
  ibv_modify_qp,
  IBV_QP_STATE,
  IBV_QPS_ERR,
  IBV_QPS_RESET,
  IBV_QPT_RC,
  IBV_WC_SUCCESS,
  IBV_WC_WR_FLUSH_ERR,
  newQpAttr,
  newQpCap,
  type ibv_qp,
} from '../../src/driver/verbs/index.js';
import {
  closeDev,
  connect,
  createCq,
  createQp,
  openDev,
  pollN,
  pollNow,
  postRecv,
  postSend,
  recvWr,
  region,
  toInit,
  twoDeviceConfig,
  wrWrite,
  type Dev,
} from '../e2e/harness.js';

let devs: Dev[] = [];

afterEach(async () => {
  for (const d of devs) closeDev(d);
  devs = [];
  await stopModel();
});

async function open(patch?: Parameters<typeof twoDeviceConfig>[1]): Promise<[Dev, Dev]> {
  await startSimModel({ ...twoDeviceConfig(0, patch), seed: 3 });
  devs = [openDev('rnic0'), openDev('rnic1')];
  return devs as [Dev, Dev];
}

function bareQp(d: Dev, cq: ReturnType<typeof createCq>): ibv_qp {
  const cap = newQpCap();
  cap.max_send_wr = 16;
  cap.max_recv_wr = 16;
  cap.max_send_sge = 1;
  cap.max_recv_sge = 1;
  return ibv_create_qp(d.pd, { send_cq: cq, recv_cq: cq, srq: null, cap, qp_type: IBV_QPT_RC, sq_sig_all: 0 });
}

describe('many QPs', () => {
  it('creates 5,000 QPs with distinct numbers; destroying them frees their host memory for the next 5,000 (4 rounds in 16 MiB)', async () => {
    // 5,000 QPs of 3 KiB of rings each need ~15 MiB: a second round fits only if the first one's memory came back.
    const [a] = await open((c) => {
      c.devices[0]!.memoryBytes = 16 << 20;
    });
    const cq = createCq(a, 64);
    for (let round = 0; round < 4; round++) {
      const qps: ibv_qp[] = [];
      for (let i = 0; i < 5000; i++) qps.push(bareQp(a, cq));
      expect(new Set(qps.map((q) => q.qp_num)).size).toBe(5000);
      for (const q of qps) expect(ibv_destroy_qp(q)).toBe(0);
    }
  });

  it("reuses a destroyed QP's number with fresh transport state: the new QP connects and moves data", async () => {
    const [a, b] = await open((c) => {
      for (const d of c.devices) d.caps = { maxQp: 2 };
    });
    const src = region(a, 4096, undefined, { fill: (i) => i & 0xff });
    const dst = region(b, 4096);
    for (let round = 0; round < 3; round++) {
      const qa = createQp(a, IBV_QPT_RC);
      const qb = createQp(b, IBV_QPT_RC);
      connect(qa, qb, { psnA: 0x1000 * (round + 1), psnB: 0x20000 * (round + 1) });
      postSend(qa, wrWrite({ sge: [src.sge(0, 3000)], remote: { addr: dst.at(0), rkey: dst.rkey }, wrId: BigInt(round) }));
      const [wc] = await pollN(qa.scq, 1, `WRITE in round ${round}`);
      expect(wc!.status).toBe(IBV_WC_SUCCESS);
      // Only two QPNs exist per device: rounds 1 and 2 run on numbers used before.
      expect(qa.qp.qp_num).toBeGreaterThanOrEqual(2);
      expect(qa.qp.qp_num).toBeLessThanOrEqual(3);
      expect(ibv_destroy_qp(qa.qp)).toBe(0);
      expect(ibv_destroy_qp(qb.qp)).toBe(0);
    }
    expect(Buffer.from(dst.data.subarray(0, 3000))).toEqual(Buffer.from(src.data.subarray(0, 3000)));
  });

  it('among 2,000 QPs, ERR flushes exactly the QP modified, and RESET → INIT → ERR again flushes nothing left over', async () => {
    const [a] = await open();
    const cq = createCq(a, 64);
    const others: ibv_qp[] = [];
    for (let i = 0; i < 2000; i++) others.push(bareQp(a, cq));
    const target = createQp(a, IBV_QPT_RC);
    const bystander = createQp(a, IBV_QPT_RC);
    const buf = region(a, 4096);
    for (const ep of [target, bystander]) {
      toInit(ep);
      for (let i = 0; i < 3; i++) postRecv(ep, recvWr(BigInt(i), [buf.sge(i * 64, 64)]));
    }
    const err = newQpAttr();
    err.qp_state = IBV_QPS_ERR;
    expect(ibv_modify_qp(target.qp, err, IBV_QP_STATE)).toBe(0);
    const flushed = await pollN(target.rcq, 3, 'three flushed receives');
    expect(flushed.map((w) => [w.status, w.wr_id, w.qp_num])).toEqual([0n, 1n, 2n].map((id) => [IBV_WC_WR_FLUSH_ERR, id, target.qp.qp_num]));
    expect(pollNow(bystander.rcq)).toEqual([]);
    const reset = newQpAttr();
    reset.qp_state = IBV_QPS_RESET;
    expect(ibv_modify_qp(target.qp, reset, IBV_QP_STATE)).toBe(0);
    toInit(target);
    expect(ibv_modify_qp(target.qp, err, IBV_QP_STATE)).toBe(0);
    expect(pollNow(target.rcq)).toEqual([]);
    expect(pollNow(bystander.rcq)).toEqual([]);
    for (const q of others) expect(ibv_destroy_qp(q)).toBe(0);
  });
});
