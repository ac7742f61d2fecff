/**
 * XRC traffic on the simulator under loss, duplication and reordering,
 * seeded: two XRC send QPs, each connected to an XRC receive QP of one
 * domain, send random messages (1 B .. 3 KiB, with immediates) to three
 * XRC SRQs. Whatever the faults do, every message arrives exactly once, at
 * the SRQ its sender named, with its bytes, its immediate, the receive QP
 * as wc.qp_num and the send QP as wc.src_qp; every send succeeds.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { stopModel } from '../../src/boot.js';
import type { FaultRule } from '../../src/fabric/faults/rules.js';
import {
  IBV_QP_STATE,
  IBV_QPS_ERR,
  IBV_WC_RECV,
  IBV_WC_RETRY_EXC_ERR,
  IBV_WC_SEND,
  IBV_WC_SUCCESS,
  IBV_WC_WITH_IMM,
  IBV_WC_WR_FLUSH_ERR,
  ibv_post_srq_recv,
  newQpAttr,
} from '../../src/driver/verbs/index.js';
import * as H from '../e2e/harness.js';
import { connectXrc, openXrcd, toSrq, xrcRecvQp, xrcSendQp, xrcSrq } from '../e2e/xrc-setup.js';
import { seededRandom } from '../seeded.js';
import { simFabric } from './helpers.js';

afterEach(async () => {
  await stopModel();
});

const MESSAGES = 48;
const MAX_LEN = 3000;

const FAULTS: FaultRule[] = [
  { action: 'drop', probability: 0.04 },
  { action: 'duplicate', probability: 0.04 },
  { action: 'reorder', probability: 0.04, reorderDepth: 2 },
];

describe('XRC under faults (simulator)', () => {
  for (const seed of [1, 2, 3, 4]) {
    it(`seed ${seed}: ${MESSAGES} random messages to three SRQs, each delivered exactly once where it was sent`, async () => {
      const f = await simFabric(FAULTS, seed);
      const rnd = seededRandom(seed * 7919);
      const xrcd = openXrcd(f.b);
      const cqs = [0, 1, 2].map(() => H.createCq(f.b));
      const srqs = cqs.map((cq) => xrcSrq(f.b, xrcd, cq, 64));
      const recvQps = [xrcRecvQp(f.b, xrcd), xrcRecvQp(f.b, xrcd)];
      const scq = H.createCq(f.a);
      const sendQps = recvQps.map(() => xrcSendQp(f.a, scq));
      sendQps.forEach((s, i) => connectXrc(f.a, s, f.b, recvQps[i]!, { psn: Math.floor(rnd() * 0xffffff), timeout: 8, retryCnt: 7 }));
      const src = H.region(f.a, MESSAGES * MAX_LEN);
      const dst = H.region(f.b, MESSAGES * MAX_LEN);
      // One receive buffer per message in every SRQ (receives are consumed in SRQ order, not per message).
      srqs.forEach((s, j) => {
        for (let k = 0; k < MESSAGES; k++) expect(ibv_post_srq_recv(s.srq, H.recvWr(BigInt(j * 1000 + k), [dst.sge(0, MAX_LEN)]))).toBe(0);
      });
      const plan = Array.from({ length: MESSAGES }, (_, k) => ({
        k,
        qp: Math.floor(rnd() * 2),
        srq: Math.floor(rnd() * 3),
        len: 1 + Math.floor(rnd() * MAX_LEN),
      }));
      for (const m of plan) src.data.set(H.pattern(m.len, seed * 100 + m.k), m.k * MAX_LEN);
      for (const m of plan) {
        H.postSend({ qp: sendQps[m.qp]! } as H.Ep, toSrq(H.wrSend({ wrId: BigInt(m.k), sge: [src.sge(m.k * MAX_LEN, m.len)], imm: m.k }), srqs[m.srq]!.num));
      }
      const sends = await H.pollN(scq, MESSAGES, 'sends');
      for (const w of sends) H.expectWc(w, { status: IBV_WC_SUCCESS, opcode: IBV_WC_SEND }, `send ${w.wr_id}`);
      // Every receive, checked against the plan: right SRQ, right sender, right bytes, once.
      const seen = new Set<number>();
      for (let j = 0; j < 3; j++) {
        const want = plan.filter((m) => m.srq === j);
        const wcs = await H.pollN(cqs[j]!, want.length, `SRQ ${j}`);
        for (const w of wcs) {
          const m = plan[w.imm_data]!;
          expect(seen.has(m.k), `message ${m.k} delivered twice`).toBe(false);
          seen.add(m.k);
          H.expectWc(
            w,
            {
              status: IBV_WC_SUCCESS,
              opcode: IBV_WC_RECV,
              wc_flags: IBV_WC_WITH_IMM,
              byte_len: m.len,
              qp_num: recvQps[m.qp]!.qp_num,
              src_qp: sendQps[m.qp]!.qp_num,
            },
            `message ${m.k} on SRQ ${j}`,
          );
          expect(m.srq, `message ${m.k} on the SRQ it was sent to`).toBe(j);
        }
        // Nothing more arrives: let virtual time run a while.
        await H.expectNoCqe(cqs[j]!, 20, `SRQ ${j} after its ${want.length} messages`);
      }
      expect(seen.size).toBe(MESSAGES);
      // The faults did fire: the responder saw duplicates or gaps, and recovered from them.
      const c = H.counters(f.b);
      expect(Number(c['duplicate_request'] ?? 0n) + Number(c['out_of_sequence'] ?? 0n), 'faulted packets seen by the responder').toBeGreaterThan(0);
      dst.checkGuards();
      await f.close();
    });
  }

  it('a receive QP moved to ERR mid-message flushes its receive to the SRQ it came from, and the SRQ gets the entry back', async () => {
    // Every SEND_LAST is lost: the receive QP holds the WQE of a message that never ends.
    const f = await simFabric([{ action: 'drop', match: { opcode: 'XRC_SEND_LAST' } }], 5);
    const xrcd = openXrcd(f.b);
    const cq = H.createCq(f.b);
    const srq = xrcSrq(f.b, xrcd, cq, 4);
    const twin = xrcSrq(f.b, xrcd, cq, 4);
    const recv = xrcRecvQp(f.b, xrcd);
    const scq = H.createCq(f.a);
    const send = xrcSendQp(f.a, scq);
    connectXrc(f.a, send, f.b, recv, { timeout: 10, retryCnt: 1 });
    const buf = H.region(f.b, 4096);
    expect(ibv_post_srq_recv(srq.srq, H.recvWr(42n, [buf.sge(0, 4096)]))).toBe(0);
    const src = H.region(f.a, 3000);
    H.postSend({ qp: send } as H.Ep, toSrq(H.wrSend({ wrId: 1n, sge: [src.sge()] }), srq.num));
    H.expectWc(await H.poll1(scq, 'the send, its last packet always lost'), { wr_id: 1n, status: IBV_WC_RETRY_EXC_ERR }, 'send');
    const a = newQpAttr();
    a.qp_state = IBV_QPS_ERR;
    H.modifyOk(recv, a, IBV_QP_STATE, 'receive QP to ERR');
    H.expectWc(await H.poll1(cq, 'the flushed receive'), { wr_id: 42n, status: IBV_WC_WR_FLUSH_ERR, qp_num: recv.qp_num }, 'flush');
    // Posting until the SRQ is full: as many as into its untouched twin, so the flushed entry came back.
    const fill = (s: typeof srq) => {
      let n = 0;
      while (ibv_post_srq_recv(s.srq, H.recvWr(BigInt(n), [buf.sge(0, 64)])) === 0) n++;
      return n;
    };
    expect(fill(srq)).toBe(fill(twin));
    await f.close();
  });

  it('ECN-marked XRC requests: the receive QP sends CNPs to the send QP, whose reaction point takes them', async () => {
    const f = await simFabric([{ action: 'ecn-mark', direction: 'a->b', match: { opcode: 'send' } }], 6);
    const xrcd = openXrcd(f.b);
    const cq = H.createCq(f.b);
    const srq = xrcSrq(f.b, xrcd, cq, 64);
    const recv = xrcRecvQp(f.b, xrcd);
    const scq = H.createCq(f.a);
    const send = xrcSendQp(f.a, scq);
    connectXrc(f.a, send, f.b, recv);
    const buf = H.region(f.b, 4096);
    const src = H.region(f.a, 4096);
    for (let k = 0; k < 20; k++) expect(ibv_post_srq_recv(srq.srq, H.recvWr(BigInt(k), [buf.sge()]))).toBe(0);
    for (let k = 0; k < 20; k++) H.postSend({ qp: send } as H.Ep, toSrq(H.wrSend({ wrId: BigInt(k), sge: [src.sge(0, 4096)] }), srq.num));
    await H.pollN(scq, 20, 'sends');
    await H.pollN(cq, 20, 'receives');
    const [ca, cb] = [H.counters(f.a), H.counters(f.b)];
    expect(Number(cb['np_cnp_sent'] ?? 0n), 'CNPs sent by the receiving device').toBeGreaterThan(0);
    expect(Number(ca['rp_cnp_handled'] ?? 0n), 'CNPs the send QP reacted to').toBeGreaterThan(0);
    expect(Number(ca['rp_cnp_ignored'] ?? 0n), 'CNPs ignored').toBe(0);
    await f.close();
  });

  it('the bytes arrive intact: one message per SRQ buffer, checked byte by byte under the same faults', async () => {
    const f = await simFabric(FAULTS, 9);
    const xrcd = openXrcd(f.b);
    const cq = H.createCq(f.b);
    const srq = xrcSrq(f.b, xrcd, cq, 64);
    const recv = xrcRecvQp(f.b, xrcd);
    const scq = H.createCq(f.a);
    const send = xrcSendQp(f.a, scq);
    connectXrc(f.a, send, f.b, recv, { timeout: 8 });
    const N = 24;
    const src = H.region(f.a, N * MAX_LEN);
    const dst = H.region(f.b, N * MAX_LEN);
    for (let k = 0; k < N; k++) {
      src.data.set(H.pattern(MAX_LEN, k + 50), k * MAX_LEN);
      expect(ibv_post_srq_recv(srq.srq, H.recvWr(BigInt(k), [dst.sge(k * MAX_LEN, MAX_LEN)]))).toBe(0);
    }
    for (let k = 0; k < N; k++) H.postSend({ qp: send } as H.Ep, toSrq(H.wrSend({ wrId: BigInt(k), sge: [src.sge(k * MAX_LEN, MAX_LEN)], imm: k }), srq.num));
    await H.pollN(scq, N, 'sends');
    const wcs = await H.pollN(cq, N, 'receives');
    // Receives complete in order; the k-th receive buffer holds the k-th message.
    expect(wcs.map((w) => [Number(w.wr_id), w.imm_data])).toEqual(Array.from({ length: N }, (_, k) => [k, k]));
    H.expectBytes(dst.data, src.data, 'every byte of every message');
    await f.close();
  });
});
