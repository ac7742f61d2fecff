/**
 * The extended CQ end to end (the intent of rdma-core's tests/test_cqex.py
 * and test_cq.py): ibv_create_cq_ex with its wc_flags, traffic polled with
 * ibv_start_poll / ibv_next_poll / ibv_end_poll and read with every
 * ibv_wc_read_*, completion timestamps from the device clock, ibv_resize_cq
 * with completions outstanding, and ibv_modify_cq moderation honoured by the
 * device's event generation. Each error path with the errno libibverbs /
 * rxe / mlx5 give.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IBV_CQ_ATTR_MODERATE,
  IBV_CQ_INIT_ATTR_MASK_FLAGS,
  IBV_CQ_INIT_ATTR_MASK_PD,
  IBV_CQ_INIT_ATTR_MASK_RESERVED,
  IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN,
  IBV_CREATE_CQ_ATTR_SINGLE_THREADED,
  IBV_QPT_RC,
  IBV_QPT_UD,
  IBV_WC_GRH,
  IBV_SEND_SIGNALED,
  IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
  IBV_WC_EX_WITH_CVLAN,
  IBV_WC_EX_WITH_FLOW_TAG,
  IBV_WC_EX_WITH_BYTE_LEN,
  IBV_WC_EX_WITH_QP_NUM,
  IBV_WC_RDMA_WRITE,
  IBV_WC_RECV,
  IBV_WC_RECV_RDMA_WITH_IMM,
  IBV_WC_SEND,
  IBV_WC_STANDARD_FLAGS,
  IBV_WC_SUCCESS,
  IBV_WC_WITH_IMM,
  errno,
  ibv_ack_cq_events,
  ibv_create_comp_channel,
  ibv_create_cq,
  ibv_create_cq_ex,
  ibv_cq_ex_to_cq,
  ibv_destroy_comp_channel,
  ibv_destroy_cq,
  ibv_end_poll,
  ibv_get_cq_event,
  ibv_modify_cq,
  ibv_next_poll,
  ibv_req_notify_cq,
  ibv_resize_cq,
  ibv_start_poll,
  ibv_wc_read_byte_len,
  ibv_wc_read_completion_ts,
  ibv_wc_read_dlid_path_bits,
  ibv_wc_read_imm_data,
  ibv_wc_read_opcode,
  ibv_wc_read_qp_num,
  ibv_wc_read_sl,
  ibv_wc_read_slid,
  ibv_wc_read_src_qp,
  ibv_wc_read_vendor_err,
  ibv_wc_read_wc_flags,
} from '../../src/driver/verbs/index.js';
import type { ibv_cq, ibv_cq_ex } from '../../src/driver/verbs/index.js';
import * as H from './harness.js';

const MODES = process.env.E2E_WORKERS !== undefined ? [Number(process.env.E2E_WORKERS)] : [1, 0];
const ALL = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;

interface ExWc {
  wr_id: bigint;
  status: number;
  opcode: number;
  vendor_err: number;
  byte_len: number;
  imm: number;
  qp_num: number;
  src_qp: number;
  wc_flags: number;
  slid: number;
  sl: number;
  dlid_path_bits: number;
  ts: bigint;
}

function readCurrent(cq: ibv_cq_ex): ExWc {
  return {
    wr_id: cq.wr_id,
    status: cq.status,
    opcode: ibv_wc_read_opcode(cq),
    vendor_err: ibv_wc_read_vendor_err(cq),
    byte_len: ibv_wc_read_byte_len(cq),
    imm: ibv_wc_read_imm_data(cq),
    qp_num: ibv_wc_read_qp_num(cq),
    src_qp: ibv_wc_read_src_qp(cq),
    wc_flags: ibv_wc_read_wc_flags(cq),
    slid: ibv_wc_read_slid(cq),
    sl: ibv_wc_read_sl(cq),
    dlid_path_bits: ibv_wc_read_dlid_path_bits(cq),
    ts: ibv_wc_read_completion_ts(cq),
  };
}

/** Polls `cq` with start/next/end until `n` completions arrived (fails after the harness deadline). */
async function pollEx(cq: ibv_cq_ex, n: number, what: string): Promise<ExWc[]> {
  const out: ExWc[] = [];
  const start = Date.now();
  while (out.length < n) {
    const rc = ibv_start_poll(cq, { comp_mask: 0 });
    if (rc === errno.ENOENT) {
      if (Date.now() - start > H.POLL_TIMEOUT_MS) throw new Error(`timed out waiting for ${what}: ${out.length} of ${n}`);
      await H.sleep(1);
      continue;
    }
    expect(rc, 'ibv_start_poll').toBe(0);
    out.push(readCurrent(cq));
    while (out.length < n) {
      const r = ibv_next_poll(cq);
      if (r === errno.ENOENT) break;
      expect(r, 'ibv_next_poll').toBe(0);
      out.push(readCurrent(cq));
    }
    ibv_end_poll(cq);
  }
  return out;
}

function cqEx(dev: H.Dev, wc_flags = ALL, cqe = 256): ibv_cq_ex {
  const cq = ibv_create_cq_ex(dev.ctx, { cqe, wc_flags, comp_mask: 0 });
  dev.cleanup.push(() => void ibv_destroy_cq(ibv_cq_ex_to_cq(cq)));
  return cq;
}

const errnoOf = (f: () => unknown): number | undefined => {
  try {
    f();
  } catch (e) {
    return (e as { errno?: number }).errno;
  }
  return undefined;
};

describe.each(MODES)('extended CQ, devices on %i worker thread(s)', (workers) => {
  let f: H.Fabric;
  beforeAll(async () => {
    f = await H.openFabric(H.twoDeviceConfig(workers));
  });
  afterAll(async () => {
    await f?.close();
  });

  it('RC traffic polled through start/next/end_poll: every field read, timestamps from the device clock in order', async () => {
    const ca = cqEx(f.a);
    const cb = cqEx(f.b);
    const p = H.makePair(f, IBV_QPT_RC, {
      sendCq: ibv_cq_ex_to_cq(ca),
      recvCq: ibv_cq_ex_to_cq(ca),
      qpB: { sendCq: ibv_cq_ex_to_cq(cb), recvCq: ibv_cq_ex_to_cq(cb) },
    });
    const src = H.region(f.a, 4096, H.ALL_ACCESS, { fill: (i) => i * 7 });
    const dst = H.region(f.b, 4096);
    const N = 40;
    for (let i = 0; i < N; i++) H.postRecv(p.b, H.recvWr(BigInt(1000 + i), [dst.sge(0, 4096)]));
    for (let i = 0; i < N; i++) {
      const len = 1 + ((i * 97) % 3000);
      if (i % 2 === 0) H.postSend(p.a, H.wrSend({ wrId: BigInt(i), sge: [src.sge(0, len)], imm: 0x01020300 + i }));
      else H.postSend(p.a, H.wrWrite({ wrId: BigInt(i), sge: [src.sge(0, len)], imm: 0x0a0b0c00 + i, remote: { addr: dst.addr, rkey: dst.rkey } }));
    }
    const sends = await pollEx(ca, N, 'requester completions');
    const recvs = await pollEx(cb, N, 'responder completions');
    for (let i = 0; i < N; i++) {
      const s = sends[i]!;
      expect(s.wr_id, `send ${i} wr_id`).toBe(BigInt(i));
      expect(s.status).toBe(IBV_WC_SUCCESS);
      expect(s.opcode).toBe(i % 2 === 0 ? IBV_WC_SEND : IBV_WC_RDMA_WRITE);
      expect(s.qp_num).toBe(p.a.qp.qp_num);
      const r = recvs[i]!;
      const len = 1 + ((i * 97) % 3000);
      expect(r.wr_id, `recv ${i} wr_id`).toBe(BigInt(1000 + i));
      expect(r.status).toBe(IBV_WC_SUCCESS);
      expect(r.opcode).toBe(i % 2 === 0 ? IBV_WC_RECV : IBV_WC_RECV_RDMA_WITH_IMM);
      expect(r.byte_len, `recv ${i} byte_len`).toBe(len);
      expect(r.imm >>> 0).toBe((i % 2 === 0 ? 0x01020300 : 0x0a0b0c00) + i);
      expect(r.wc_flags & IBV_WC_WITH_IMM).toBe(IBV_WC_WITH_IMM);
      expect(r.qp_num).toBe(p.b.qp.qp_num);
      expect(r.src_qp).toBe(p.a.qp.qp_num);
      expect(r.vendor_err).toBe(0);
      expect([r.slid, r.sl, r.dlid_path_bits]).toEqual([0, 0, 0]);
    }
    // One device clock per device: each CQ's timestamps never go back, and are not all zero.
    for (const list of [sends, recvs]) {
      for (let i = 1; i < list.length; i++) expect(list[i]!.ts >= list[i - 1]!.ts, `timestamp ${i} ≥ timestamp ${i - 1}`).toBe(true);
      expect(list[list.length - 1]!.ts > 0n).toBe(true);
    }
    // The first message's receive cannot complete before the sender's device had it: same clock source in one model.
    expect(recvs[0]!.ts > 0n).toBe(true);
  });

  it('UD through an extended CQ: src_qp, the GRH flag and byte_len (GRH + payload) read with ibv_wc_read_*', async () => {
    const cb = cqEx(f.b);
    const p = H.makePair(f, IBV_QPT_UD, { qpB: { recvCq: ibv_cq_ex_to_cq(cb) } });
    const ah = H.createAh(f.a, f.b);
    const src = H.region(f.a, 1024, H.ALL_ACCESS, { fill: (i) => i });
    const dst = H.region(f.b, 4096);
    for (let i = 0; i < 4; i++) H.postRecv(p.b, H.recvWr(BigInt(i), [dst.sge(i * 1024, 1024)]));
    for (let i = 0; i < 4; i++)
      H.postSend(p.a, H.wrSend({ wrId: BigInt(i), sge: [src.sge(0, 100 + i)], imm: i % 2 ? 0x55 : undefined, ud: { ah, qpn: p.b.qp.qp_num, qkey: H.QKEY } }));
    const got = await pollEx(cb, 4, 'UD receives');
    expect(got.map((w) => [Number(w.wr_id), w.status, w.opcode, w.byte_len, w.src_qp, w.qp_num])).toEqual(
      [0, 1, 2, 3].map((i) => [i, IBV_WC_SUCCESS, IBV_WC_RECV, 40 + 100 + i, p.a.qp.qp_num, p.b.qp.qp_num]),
    );
    expect(got.map((w) => w.wc_flags & (IBV_WC_GRH | IBV_WC_WITH_IMM))).toEqual([
      IBV_WC_GRH,
      IBV_WC_GRH | IBV_WC_WITH_IMM,
      IBV_WC_GRH,
      IBV_WC_GRH | IBV_WC_WITH_IMM,
    ]);
    expect(got[1]!.imm).toBe(0x55);
  });

  it('start_poll on an empty CQ is ENOENT; readers outside a poll or of unrequested fields throw EINVAL', () => {
    const cq = cqEx(f.a, IBV_WC_EX_WITH_QP_NUM);
    expect(ibv_start_poll(cq, { comp_mask: 0 })).toBe(errno.ENOENT);
    expect(ibv_next_poll(cq), 'next_poll without start_poll').toBe(errno.EINVAL);
    expect(
      errnoOf(() => ibv_end_poll(cq)),
      'end_poll after ENOENT',
    ).toBe(errno.EINVAL);
    expect(
      errnoOf(() => ibv_wc_read_opcode(cq)),
      'read outside a poll',
    ).toBe(errno.EINVAL);
    expect(ibv_start_poll(cq, { comp_mask: 1 }), 'poll attr comp_mask').toBe(errno.EINVAL);
    expect(ibv_start_poll({} as ibv_cq_ex, { comp_mask: 0 })).toBe(errno.EINVAL);
    expect(errnoOf(() => ibv_cq_ex_to_cq({} as ibv_cq_ex))).toBe(errno.EINVAL);
    expect(cq.cqe).toBeGreaterThanOrEqual(256);
    expect(cq.context).toBe(f.a.ctx);
  });

  it('a reader of a field the CQ was not created with throws EINVAL naming the flag', async () => {
    const ca = cqEx(f.a, IBV_WC_EX_WITH_QP_NUM);
    const p = H.makePair(f, IBV_QPT_RC, { sendCq: ibv_cq_ex_to_cq(ca), qpB: { sendCq: H.createCq(f.b) } });
    const src = H.region(f.a, 64);
    const dst = H.region(f.b, 64);
    H.postSend(p.a, H.wrWrite({ wrId: 5n, sge: [src.sge(0, 8)], remote: { addr: dst.addr, rkey: dst.rkey } }));
    const start = Date.now();
    let rc: number;
    while ((rc = ibv_start_poll(ca, { comp_mask: 0 })) === errno.ENOENT && Date.now() - start < H.POLL_TIMEOUT_MS) await H.sleep(1);
    expect(rc).toBe(0);
    expect(ca.wr_id).toBe(5n);
    expect(ibv_wc_read_qp_num(ca)).toBe(p.a.qp.qp_num);
    expect(() => ibv_wc_read_byte_len(ca)).toThrow(/IBV_WC_EX_WITH_BYTE_LEN/);
    expect(() => ibv_wc_read_completion_ts(ca)).toThrow(/IBV_WC_EX_WITH_COMPLETION_TIMESTAMP/);
    expect(ibv_start_poll(ca, { comp_mask: 0 }), 'start_poll twice').toBe(errno.EINVAL);
    ibv_end_poll(ca);
  });

  it('create_cq_ex refuses what the device cannot do: EOPNOTSUPP for CVLAN / FLOW_TAG / parent domain / IGNORE_OVERRUN, EINVAL for unknown comp_mask', () => {
    const c = f.a.ctx;
    const eno = (attr: Parameters<typeof ibv_create_cq_ex>[1]) => errnoOf(() => ibv_create_cq_ex(c, attr));
    expect(eno({ cqe: 16, wc_flags: IBV_WC_EX_WITH_CVLAN })).toBe(errno.EOPNOTSUPP);
    expect(eno({ cqe: 16, wc_flags: IBV_WC_EX_WITH_FLOW_TAG })).toBe(errno.EOPNOTSUPP);
    expect(eno({ cqe: 16, wc_flags: 0, comp_mask: IBV_CQ_INIT_ATTR_MASK_PD, parent_domain: f.a.pd })).toBe(errno.EOPNOTSUPP);
    expect(eno({ cqe: 16, wc_flags: 0, comp_mask: IBV_CQ_INIT_ATTR_MASK_FLAGS, flags: IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN })).toBe(errno.EOPNOTSUPP);
    expect(eno({ cqe: 16, wc_flags: 0, comp_mask: IBV_CQ_INIT_ATTR_MASK_RESERVED })).toBe(errno.EINVAL);
    expect(eno({ cqe: 0, wc_flags: 0 })).toBe(errno.EINVAL);
    expect(eno({ cqe: 16, wc_flags: -1 })).toBe(errno.EINVAL);
    expect(eno(null as never)).toBe(errno.EINVAL);
    const ok = ibv_create_cq_ex(c, {
      cqe: 16,
      wc_flags: IBV_WC_EX_WITH_BYTE_LEN,
      comp_mask: IBV_CQ_INIT_ATTR_MASK_FLAGS,
      flags: IBV_CREATE_CQ_ATTR_SINGLE_THREADED,
    });
    expect(ibv_destroy_cq(ibv_cq_ex_to_cq(ok))).toBe(0);
  });

  /*
   * The CQ under test is the responder's receive CQ: the responder writes a
   * receive CQE before it sends the ACK, so when the requester has its send
   * completions the receive CQEs are in the ring, not yet polled.
   */
  function sendPair(rcq: ibv_cq) {
    const p = H.makePair(f, IBV_QPT_RC, { maxSendWr: 64, qpB: { recvCq: rcq, maxRecvWr: 128 } });
    const src = H.region(f.a, 64);
    const dst = H.region(f.b, 64);
    for (let i = 0; i < 100; i++) H.postRecv(p.b, H.recvWr(BigInt(i), [dst.sge(0, 64)]));
    let next = 0;
    const send = async (n: number) => {
      for (let k = 0; k < n; k++, next++) H.postSend(p.a, H.wrSend({ wrId: BigInt(next), sge: [src.sge(0, 8)], flags: IBV_SEND_SIGNALED }));
      await H.pollN(p.a.scq, n, 'send completions (the receive CQEs are written before the ACK)');
    };
    return { p, send };
  }

  it('ibv_resize_cq keeps the completions not yet polled, in order, and the device writes to the new ring', async () => {
    const cq = ibv_create_cq(f.b.ctx, 4, null, null, 0);
    expect(cq.cqe).toBe(7);
    const { send } = sendPair(cq);
    f.b.cleanup.push(() => void ibv_destroy_cq(cq));
    await send(5);
    expect(ibv_resize_cq(cq, 3), 'smaller than the 5 outstanding').toBe(errno.EINVAL);
    expect(ibv_resize_cq(cq, 100)).toBe(0);
    expect(cq.cqe).toBe(127);
    expect(ibv_resize_cq(cq, 0)).toBe(errno.EINVAL);
    expect(ibv_resize_cq(cq, 1 << 30)).toBe(errno.EINVAL);
    expect(ibv_resize_cq({} as ibv_cq, 10)).toBe(errno.EINVAL);
    // 5 old + 20 new completions: more than the old ring held.
    await send(20);
    const got = await H.pollN(cq, 25, 'completions across the resize');
    expect(got.map((w) => Number(w.wr_id))).toEqual(Array.from({ length: 25 }, (_, i) => i));
    expect(got.every((w) => w.status === IBV_WC_SUCCESS && w.opcode === IBV_WC_RECV)).toBe(true);
    // Shrink with 3 outstanding, then wrap the small ring several times.
    await send(3);
    expect(ibv_resize_cq(cq, 10)).toBe(0);
    expect(cq.cqe).toBe(15);
    expect((await H.pollN(cq, 3, 'the 3 moved completions')).map((w) => Number(w.wr_id))).toEqual([25, 26, 27]);
    for (let r = 0; r < 6; r++) {
      await send(10);
      expect((await H.pollN(cq, 10, `round ${r}`)).map((w) => Number(w.wr_id))).toEqual(Array.from({ length: 10 }, (_, i) => 28 + r * 10 + i));
    }
  });

  it('ibv_modify_cq moderation: an armed CQ raises its event at the cq_count-th CQE, or after cq_period', async () => {
    const ch = ibv_create_comp_channel(f.b.ctx);
    const cq = ibv_create_cq(f.b.ctx, 64, null, ch, 0);
    const { send } = sendPair(cq);
    f.b.cleanup.push(() => {
      ibv_destroy_cq(cq);
      ibv_destroy_comp_channel(ch);
    });
    expect(ibv_modify_cq(cq, { attr_mask: IBV_CQ_ATTR_MODERATE, moderate: { cq_count: 4, cq_period: 0 } })).toBe(0);
    expect(ibv_req_notify_cq(cq, 0)).toBe(0);
    await send(3);
    // Three CQEs are in the ring and the CQ is armed, but moderation holds the event back.
    const waiting = ibv_get_cq_event(ch);
    expect(await H.within(waiting, 100), 'no event before the 4th CQE').toBe(H.TIMEOUT);
    await send(1);
    const ev = await H.orFail(waiting, 'the event at the 4th CQE');
    expect(ev.cq).toBe(cq);
    ibv_ack_cq_events(cq, 1);
    expect((await H.pollN(cq, 4, 'four completions')).map((w) => Number(w.wr_id))).toEqual([0, 1, 2, 3]);
    // Period: a count of 1000 is never reached; 2 ms after the first held CQE the event fires anyway.
    expect(ibv_modify_cq(cq, { attr_mask: IBV_CQ_ATTR_MODERATE, moderate: { cq_count: 1000, cq_period: 2000 } })).toBe(0);
    expect(ibv_req_notify_cq(cq, 0)).toBe(0);
    await send(1);
    const ev2 = await H.orFail(ibv_get_cq_event(ch), 'the event after cq_period');
    expect(ev2.cq).toBe(cq);
    ibv_ack_cq_events(cq, 1);
    expect(Number((await H.poll1(cq, 'the moderated completion')).wr_id)).toBe(4);
    // Errors: unknown attr_mask bits, values above cq_mod_caps, not a CQ.
    expect(ibv_modify_cq(cq, { attr_mask: 2, moderate: { cq_count: 1, cq_period: 1 } })).toBe(errno.EINVAL);
    expect(ibv_modify_cq(cq, { attr_mask: IBV_CQ_ATTR_MODERATE, moderate: { cq_count: 0x10000, cq_period: 1 } })).toBe(errno.EINVAL);
    expect(ibv_modify_cq({} as ibv_cq, { attr_mask: IBV_CQ_ATTR_MODERATE, moderate: { cq_count: 1, cq_period: 1 } })).toBe(errno.EINVAL);
    // Back to no moderation: the next CQE raises the event at once.
    expect(ibv_modify_cq(cq, { attr_mask: IBV_CQ_ATTR_MODERATE, moderate: { cq_count: 0, cq_period: 0 } })).toBe(0);
    expect(ibv_req_notify_cq(cq, 0)).toBe(0);
    await send(1);
    await H.orFail(ibv_get_cq_event(ch), 'the unmoderated event');
    ibv_ack_cq_events(cq, 1);
    await H.poll1(cq, 'the last completion');
  });
});
