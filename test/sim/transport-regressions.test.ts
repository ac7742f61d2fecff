/**
 * Regressions of the reliable transport, each built from the repro of a
 * failure a random-fault campaign found, run on the simulator through the
 * verbs API with a fault rule on the cable:
 * - a starting send PSN in the upper half of the 24-bit space (the
 *   cumulative-ACK mark must start just behind sq_psn);
 * - a lost response between a READ and an atomic is an implied NAK (retry),
 *   not a bad response;
 * - every receive-consuming request gets RNR NAK while no receive is posted,
 *   its retry included (single-packet WRITE with immediate);
 * - the ACK leaves with the receive completion (the responder may destroy
 *   its QP right after it);
 * - progress restores the retry budgets (retry_cnt and rnr_retry count
 *   consecutive attempts);
 * - the transport timer stops when nothing is outstanding, so the next
 *   packet gets a whole timeout.
 */
import { simFabric } from './helpers.js';
import { afterEach, describe, expect, it } from 'vitest';
import { stopModel } from '../../src/boot.js';
import { localAckTimeoutNs } from '../../src/pipeline/timer-tables.js';
import { decodePacket, Op } from '../../src/wire/index.js';
import type { FaultRule } from '../../src/fabric/faults/rules.js';
import {
  IBV_MTU_1024,
  IBV_QPT_RC,
  IBV_SEND_SIGNALED,
  IBV_WC_COMP_SWAP,
  IBV_WC_FETCH_ADD,
  IBV_WC_RDMA_READ,
  IBV_WC_RECV,
  IBV_WC_RECV_RDMA_WITH_IMM,
  IBV_WC_RNR_RETRY_EXC_ERR,
  IBV_WC_SEND,
  IBV_WC_SUCCESS,
  IBV_WC_RDMA_WRITE,
  ibv_destroy_qp,
  type ibv_wc,
} from '../../src/driver/verbs/index.js';
import {
  counters,
  expectBytes,
  expectWc,
  makePair,
  poll1,
  pollN,
  postRecv,
  postSend,
  recvWr,
  region,
  wrCas,
  wrFaa,
  wrRead,
  wrSend,
  wrWrite,
  type Dev,
  type Region,
} from '../e2e/harness.js';

afterEach(async () => {
  await stopModel();
});

const drop = (match: Record<string, unknown>, direction?: string): FaultRule => ({ action: 'drop', match, ...(direction ? { direction } : {}) }) as FaultRule;
const dv = (r: Region) => new DataView(r.data.buffer, r.data.byteOffset, r.data.byteLength);
const ctr = (d: Dev, name: string) => Number(counters(d)[name] ?? 0n);

describe('a starting send PSN anywhere in the 24-bit space', () => {
  for (const psn of [0, 0x7fffff, 0x800000, 12_000_000, 0xfffffe, 0xffffff]) {
    it(`psn ${psn}: a 3000-byte SEND at MTU 1024 whose two middle packets are lost completes, bytes intact`, async () => {
      const f = await simFabric([drop({ opcode: 'RC_SEND_MIDDLE', count: 2 })]);
      const { a, b } = makePair(f, IBV_QPT_RC, { mtu: IBV_MTU_1024, psnA: psn, psnB: (psn + 0x400000) & 0xffffff, timeout: 6, retryCnt: 3 });
      const src = region(f.a, 3000, undefined, { fill: (i) => (i * 7 + psn) & 0xff });
      const dst = region(f.b, 4096);
      postRecv(b, recvWr(1n, [dst.sge(0, 4096)]));
      postRecv(b, recvWr(4n, [dst.sge(0, 4096)]));
      // The middle packet is lost, NAK-sequence, and its resend is lost too: the timer must resend it.
      postSend(a, wrSend({ wrId: 2n, sge: [src.sge(0, 3000)] }));
      expectWc(await poll1(a.scq, 'the first SEND'), { wr_id: 2n, status: IBV_WC_SUCCESS, opcode: IBV_WC_SEND }, 'SEND 0');
      postSend(a, wrSend({ wrId: 3n, sge: [src.sge(0, 3000)] }));
      const sends = [{ wr_id: 2n, status: IBV_WC_SUCCESS, opcode: IBV_WC_SEND } as ibv_wc, await poll1(a.scq, 'the second SEND')];
      for (const [i, w] of sends.entries()) expectWc(w, { wr_id: BigInt(2 + i), status: IBV_WC_SUCCESS, opcode: IBV_WC_SEND }, `SEND ${i}`);
      const recvs = await pollN(b.rcq, 2, 'the two receives');
      for (const w of recvs) expectWc(w, { status: IBV_WC_SUCCESS, opcode: IBV_WC_RECV, byte_len: 3000 }, 'receive');
      expectBytes(dst.data.subarray(0, 0 + 3000), src.data.subarray(0, 0 + 3000), 'received bytes');
      dst.checkGuards();
      expect(ctr(f.a, 'retry_exceeded_err')).toBe(0);
      expect(ctr(f.a, 'local_ack_timeout_err')).toBe(1);
    });
  }
});

describe('a lost response between a READ and an atomic is an implied NAK', () => {
  it('CAS then READ, the atomic ACK lost: the READ response past it makes the CAS retried; both succeed, the CAS executed once', async () => {
    const f = await simFabric([drop({ opcode: 'RC_ATOMIC_ACKNOWLEDGE', count: 1 })]);
    const { a } = makePair(f, IBV_QPT_RC, { mtu: IBV_MTU_1024, timeout: 10, retryCnt: 2 });
    const local = region(f.a, 3008);
    const remote = region(f.b, 3008, undefined, { fill: (i) => (i * 13) & 0xff });
    dv(remote).setBigUint64(0, 5n, true);
    const expectedRead = remote.data.subarray(8, 8 + 3000).slice();
    postSend(a, [
      wrCas({ wrId: 1n, sge: [local.sge(0, 8)], atomic: { addr: remote.at(0), rkey: remote.rkey, compareAdd: 5n, swap: 9n } }),
      wrRead({ wrId: 2n, sge: [local.sge(8, 3000)], remote: { addr: remote.at(8), rkey: remote.rkey } }),
    ]);
    const [cas, read] = await pollN(a.scq, 2, 'CAS and READ');
    expectWc(cas!, { wr_id: 1n, status: IBV_WC_SUCCESS, opcode: IBV_WC_COMP_SWAP }, 'CAS');
    expectWc(read!, { wr_id: 2n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_READ, byte_len: 3000 }, 'READ');
    // The original value came back (the replayed atomic, not a second execution), and memory holds the swap.
    expect(dv(local).getBigUint64(0, true)).toBe(5n);
    expect(dv(remote).getBigUint64(0, true)).toBe(9n);
    expectBytes(local.data.subarray(8, 8 + 3000), expectedRead, 'READ data');
    local.checkGuards();
    expect(ctr(f.a, 'implied_nak_seq_err')).toBeGreaterThanOrEqual(1);
  });

  it('READ (3000 B) then FAA, the last READ response lost: the atomic ACK past it makes the READ re-requested from what is missing', async () => {
    const f = await simFabric([drop({ opcode: 'RC_RDMA_READ_RESPONSE_LAST', count: 1 })]);
    const { a } = makePair(f, IBV_QPT_RC, { mtu: IBV_MTU_1024, timeout: 10, retryCnt: 2 });
    const local = region(f.a, 3008);
    const remote = region(f.b, 3008, undefined, { fill: (i) => (i * 29 + 3) & 0xff });
    dv(remote).setBigUint64(3000, 40n, true);
    const expectedRead = remote.data.subarray(0, 0 + 3000).slice();
    postSend(a, [
      wrRead({ wrId: 1n, sge: [local.sge(0, 3000)], remote: { addr: remote.at(0), rkey: remote.rkey } }),
      wrFaa({ wrId: 2n, sge: [local.sge(3000, 8)], atomic: { addr: remote.at(3000), rkey: remote.rkey, compareAdd: 2n } }),
    ]);
    const [read, faa] = await pollN(a.scq, 2, 'READ and FAA');
    expectWc(read!, { wr_id: 1n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_READ, byte_len: 3000 }, 'READ');
    expectWc(faa!, { wr_id: 2n, status: IBV_WC_SUCCESS, opcode: IBV_WC_FETCH_ADD }, 'FAA');
    expectBytes(local.data.subarray(0, 0 + 3000), expectedRead, 'READ data');
    expect(dv(local).getBigUint64(3000, true)).toBe(40n);
    expect(dv(remote).getBigUint64(3000, true)).toBe(42n); // added once
    local.checkGuards();
    remote.checkGuards();
  });
});

describe('RNR NAK for every receive-consuming request, retries included', () => {
  it('3 × 100-byte WRITE with immediate, receives posted 20 µs late: RNR NAK, then all succeed', async () => {
    const f = await simFabric([]);
    const { a, b } = makePair(f, IBV_QPT_RC, { mtu: IBV_MTU_1024, minRnrTimer: 1, rnrRetry: 7 });
    const src = region(f.a, 300, undefined, { fill: (i) => i & 0xff });
    const dst = region(f.b, 300);
    postSend(
      a,
      [0, 1, 2].map((i) => wrWrite({ wrId: BigInt(i), imm: 0x100 + i, sge: [src.sge(i * 100, 100)], remote: { addr: dst.at(i * 100), rkey: dst.rkey } })),
    );
    await f.sim.sleep(20_000);
    const scratch = region(f.b, 64);
    postRecv(
      b,
      [0, 1, 2].map((i) => recvWr(BigInt(10 + i), [scratch.sge(0, 64)])),
    );
    const w = await pollN(a.scq, 3, 'the WRITEs');
    for (const [i, x] of w.entries()) expectWc(x, { wr_id: BigInt(i), status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_WRITE }, `WRITE ${i}`);
    const r = await pollN(b.rcq, 3, 'the receives');
    for (const [i, x] of r.entries())
      expectWc(x, { wr_id: BigInt(10 + i), status: IBV_WC_SUCCESS, opcode: IBV_WC_RECV_RDMA_WITH_IMM, imm_data: 0x100 + i, byte_len: 100 }, `receive ${i}`);
    expectBytes(dst.data.subarray(0, 0 + 300), src.data.subarray(0, 0 + 300), 'written bytes');
    expect(ctr(f.b, 'send_rnr_err')).toBeGreaterThanOrEqual(1);
    expect(ctr(f.a, 'rcvd_rnr_err')).toBeGreaterThanOrEqual(1);
  });

  it('rnr_retry 1: three SENDs, each meeting an empty receive queue once, all succeed (progress restores the RNR budget)', async () => {
    const f = await simFabric([]);
    const { a, b } = makePair(f, IBV_QPT_RC, { mtu: IBV_MTU_1024, minRnrTimer: 1, rnrRetry: 1 });
    const src = region(f.a, 64);
    const dst = region(f.b, 64);
    for (let i = 0; i < 3; i++) {
      postSend(a, wrSend({ wrId: BigInt(i), sge: [src.sge(0, 64)] }));
      // Long enough for the first attempt to find no receive; the RNR timer (min_rnr_timer 1: 10 µs) then finds one.
      await f.sim.sleep(5_000);
      postRecv(b, recvWr(BigInt(i), [dst.sge(0, 64)]));
      expectWc(await poll1(a.scq, `SEND ${i}`), { wr_id: BigInt(i), status: IBV_WC_SUCCESS }, `SEND ${i}`);
      expectWc(await poll1(b.rcq, `receive ${i}`), { wr_id: BigInt(i), status: IBV_WC_SUCCESS, byte_len: 64 }, `receive ${i}`);
    }
    expect(ctr(f.a, 'rcvd_rnr_err')).toBe(3);
    expect(ctr(f.a, 'retry_rnr_exceeded_err')).toBe(0);
  });
});

describe('an RNR NAK past a READ still waiting for its response', () => {
  it('rnr_retry 0: the READ is asked again (implied NAK) and succeeds; only the SEND that never finds a receive fails, with RNR_RETRY_EXC_ERR', async () => {
    // Campaign seed 50884 (rnrRetry [0,7]): the RNR NAK of a later SEND used up the RNR budget and
    // failed the READ at the head with RNR_RETRY_EXC_ERR, though a READ consumes no receive.
    const f = await simFabric([drop({ opcode: 'RC_RDMA_READ_RESPONSE_LAST', count: 1 })]);
    const { a } = makePair(f, IBV_QPT_RC, { mtu: IBV_MTU_1024, timeout: 10, retryCnt: 2, rnrRetry: 0, minRnrTimer: 1 });
    const local = region(f.a, 3064);
    const remote = region(f.b, 3000, undefined, { fill: (i) => (i * 11 + 5) & 0xff });
    postSend(a, [
      wrRead({ wrId: 1n, sge: [local.sge(0, 3000)], remote: { addr: remote.at(0), rkey: remote.rkey } }),
      wrSend({ wrId: 2n, sge: [local.sge(3000, 64)] }),
    ]);
    const [read, send] = await pollN(a.scq, 2, 'READ and SEND');
    expectWc(read!, { wr_id: 1n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_READ, byte_len: 3000 }, 'READ');
    expectWc(send!, { wr_id: 2n, status: IBV_WC_RNR_RETRY_EXC_ERR }, 'SEND');
    expectBytes(local.data.subarray(0, 3000), remote.data.subarray(0, 3000), 'READ data');
    local.checkGuards();
    expect(ctr(f.a, 'implied_nak_seq_err')).toBeGreaterThanOrEqual(1);
    expect(ctr(f.a, 'retry_rnr_exceeded_err')).toBe(1);
  });
});

describe('the ACK leaves with the receive completion', () => {
  it('the responder destroys its QP as soon as the receive completes: the requester still gets its ACK', async () => {
    const f = await simFabric([]);
    // retry_cnt 0: a missing ACK would end in RETRY_EXC_ERR after one timeout.
    const { a, b } = makePair(f, IBV_QPT_RC, { mtu: IBV_MTU_1024, timeout: 8, retryCnt: 0 });
    const src = region(f.a, 512);
    const dst = region(f.b, 512);
    postRecv(b, recvWr(1n, [dst.sge(0, 512)]));
    postSend(a, wrSend({ wrId: 2n, sge: [src.sge(0, 512)], flags: IBV_SEND_SIGNALED }));
    expectWc(await poll1(b.rcq, 'the receive'), { status: IBV_WC_SUCCESS, byte_len: 512 }, 'receive');
    expect(ibv_destroy_qp(b.qp)).toBe(0);
    f.b.cleanup.splice(
      f.b.cleanup.findIndex((fn) => fn.toString().includes('ibv_destroy_qp')),
      0,
    );
    expectWc(await poll1(a.scq, 'the SEND'), { wr_id: 2n, status: IBV_WC_SUCCESS }, 'SEND');
  });
});

describe('progress restores the transport retry budget', () => {
  it('retry_cnt 1, 12 WRITEs one at a time with every 3rd packet lost: each loss costs one timeout retry, none exhausts the budget', async () => {
    const f = await simFabric([drop({ opcode: 'write', every: 3 }, 'a->b')]);
    const { a } = makePair(f, IBV_QPT_RC, { mtu: IBV_MTU_1024, timeout: 8, retryCnt: 1 });
    const src = region(f.a, 12 * 1024, undefined, { fill: (i) => (i * 31 + 7) & 0xff });
    const dst = region(f.b, 12 * 1024);
    for (let i = 0; i < 12; i++) {
      postSend(a, wrWrite({ wrId: BigInt(i), sge: [src.sge(i * 1024, 1024)], remote: { addr: dst.at(i * 1024), rkey: dst.rkey } }));
      expectWc(await poll1(a.scq, `WRITE ${i}`), { wr_id: BigInt(i), status: IBV_WC_SUCCESS }, `WRITE ${i}`);
    }
    expectBytes(dst.data, src.data, 'written bytes');
    expect(ctr(f.a, 'retry_exceeded_err')).toBe(0);
    // Every third WRITE packet on the wire is lost, resends included: 17 sent, 5 lost, each recovered by one timeout.
    expect(ctr(f.a, 'local_ack_timeout_err')).toBe(5);
  });
});

describe('the transport timer stops when nothing is outstanding', () => {
  it("a READ's late response retires the SEND behind it too: the next WRITE's lost packet is resent a whole timeout after it went out", async () => {
    // READ then SEND; the READ's response is lost, the SEND's ACK past it is an implied NAK, the READ is
    // asked again, and its response retires both. Then a WRITE whose only packet is lost once: the
    // timer must run from that packet's send (IBTA 9.7.6.1.3), not from the READ response (which
    // restarted it while the SEND was still in the window). Fabric campaign seed 304477.
    const timeout = 10;
    const f = await simFabric([drop({ opcode: 'RC_RDMA_READ_RESPONSE_ONLY', count: 1 }), drop({ opcode: 'RC_RDMA_WRITE_ONLY', count: 1 }, 'a->b')]);
    const writes: number[] = [];
    f.sim.observeHeaders((e) => {
      if (e.dir !== 'tx' || e.device !== 'rnic0') return;
      const d = decodePacket(e.frame);
      if (d.ok && d.packet.bth.opcode === Op.RC_RDMA_WRITE_ONLY) writes.push(e.ns);
    });
    const { a, b } = makePair(f, IBV_QPT_RC, { mtu: IBV_MTU_1024, timeout, retryCnt: 3 });
    const local = region(f.a, 4096, undefined, { fill: (i) => (i * 11 + 1) & 0xff });
    const remote = region(f.b, 4096, undefined, { fill: (i) => (i * 5 + 9) & 0xff });
    const expectedRead = remote.data.subarray(0, 512).slice();
    postRecv(b, recvWr(7n, [remote.sge(2048, 1024)]));
    postSend(a, [
      wrRead({ wrId: 1n, sge: [local.sge(0, 512)], remote: { addr: remote.at(0), rkey: remote.rkey } }),
      wrSend({ wrId: 2n, sge: [local.sge(1024, 1024)] }),
    ]);
    const [read, send] = await pollN(a.scq, 2, 'READ and SEND');
    expectWc(read!, { wr_id: 1n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_READ, byte_len: 512 }, 'READ');
    expectWc(send!, { wr_id: 2n, status: IBV_WC_SUCCESS, opcode: IBV_WC_SEND }, 'SEND');
    expect(ctr(f.a, 'implied_nak_seq_err')).toBe(1);
    expectBytes(local.data.subarray(0, 512), expectedRead, 'READ data');
    postSend(a, wrWrite({ wrId: 3n, sge: [local.sge(1024, 256)], remote: { addr: remote.at(3072), rkey: remote.rkey } }));
    expectWc(await poll1(a.scq, 'the WRITE'), { wr_id: 3n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_WRITE }, 'WRITE');
    expectBytes(remote.data.subarray(3072, 3072 + 256), local.data.subarray(1024, 1024 + 256), 'written bytes');
    expect(writes.length).toBe(2);
    expect(writes[1]! - writes[0]!).toBeGreaterThanOrEqual(localAckTimeoutNs(timeout));
    expect(ctr(f.a, 'local_ack_timeout_err')).toBe(1);
    expect(ctr(f.a, 'retry_exceeded_err')).toBe(0);
  });
});
