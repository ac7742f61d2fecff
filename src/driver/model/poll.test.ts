/**
 * poll_cq against CQEs written by the device-side CQE writer (cqPush): exact
 * ibv_wc fields, order, the phase bit across ring wraps, the consumer
 * counter in the CQ doorbell record, reuse of the caller's ibv_wc objects.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  errno,
  IBV_WC_GRH,
  IBV_WC_RDMA_READ,
  IBV_WC_RECV,
  IBV_WC_RECV_RDMA_WITH_IMM,
  IBV_WC_SEND,
  IBV_WC_SUCCESS,
  IBV_WC_WITH_IMM,
  IBV_WC_WITH_INV,
  IBV_WC_WR_FLUSH_ERR,
} from '../../device/abi/constants.js';
import { CQC } from '../../device/contexts.js';
import { CqPush } from '../../device/cqe.js';
import { decodeStruct } from '../../device/layout.js';
import { CQ_DBREC } from '../../device/registers.js';
import { SMALL_DEVICE } from '../../device/testbed.js';
import { newWc, newWcArray } from '../verbs/structs.js';
import type { ibv_cq, ibv_wc } from '../verbs/types.js';
import { ibv_create_cq, ibv_destroy_cq, ibv_poll_cq } from '../verbs/verbs.js';
import type { FakeCqe } from './fake-device.js';
import { openHarness, type Harness } from './harness.js';

let h: Harness;
beforeEach(() => {
  h = openHarness({ config: SMALL_DEVICE });
});
afterEach(() => h.close());

function ciOf(cq: ibv_cq): number {
  const t = h.fake.tb.fw.tables;
  const rec = Number(CQC.f.dbrecAddr.get(t.dv, t.cqByNumber(cq.handle))) - h.fake.tb.mem.baseNum;
  return decodeStruct(CQ_DBREC, h.fake.tb.mem.dv, rec).ci;
}

describe('poll_cq', () => {
  it('returns every ibv_wc field exactly, in order, filling the caller’s objects in place', () => {
    const cq = ibv_create_cq(h.ctx, 7, null, null, 0);
    const cqes: FakeCqe[] = [
      { wrId: 0xffffffffffffffffn, qpNum: 0x123456, status: IBV_WC_SUCCESS, opcode: IBV_WC_SEND, byteLen: 0, wqeCounter: 0 },
      {
        wrId: 0x8000000000000001n,
        qpNum: 7,
        srcQp: 0xabcdef,
        byteLen: 4096 + 40,
        immData: 0xdeadbeef,
        wcFlags: IBV_WC_GRH | IBV_WC_WITH_IMM,
        pkeyIndex: 3,
        slid: 0x1234,
        sl: 5,
        dlidPathBits: 0x55,
        opcode: IBV_WC_RECV,
        wqeCounter: 9,
      },
      { wrId: 3n, qpNum: 7, immData: 0x4321, wcFlags: IBV_WC_WITH_INV, opcode: IBV_WC_RECV, byteLen: 8 },
      { wrId: 4n, qpNum: 9, status: IBV_WC_WR_FLUSH_ERR, vendorErr: 0x99, opcode: IBV_WC_RDMA_READ },
      { wrId: 5n, qpNum: 9, opcode: IBV_WC_RECV_RDMA_WITH_IMM, immData: 1, wcFlags: IBV_WC_WITH_IMM, byteLen: 12 },
    ];
    for (const c of cqes) expect(h.fake.complete(cq.handle, c)).toBe(CqPush.WRITTEN);
    const wc = newWcArray(2);
    const [w0, w1] = wc;
    expect(ibv_poll_cq(cq, 2, wc)).toBe(2);
    expect(wc[0]).toBe(w0);
    expect(wc[1]).toBe(w1);
    expect(wc[0]).toEqual({
      ...newWc(),
      wr_id: 0xffffffffffffffffn,
      qp_num: 0x123456,
      status: IBV_WC_SUCCESS,
      opcode: IBV_WC_SEND,
    });
    expect(wc[1]).toEqual({
      wr_id: 0x8000000000000001n,
      status: IBV_WC_SUCCESS,
      opcode: IBV_WC_RECV,
      vendor_err: 0,
      byte_len: 4136,
      imm_data: 0xdeadbeef,
      invalidated_rkey: 0xdeadbeef,
      qp_num: 7,
      src_qp: 0xabcdef,
      wc_flags: IBV_WC_GRH | IBV_WC_WITH_IMM,
      pkey_index: 3,
      slid: 0x1234,
      sl: 5,
      dlid_path_bits: 0x55,
    });
    expect(ciOf(cq)).toBe(2);
    // A short array grows: entries are created where it has none.
    const more: ibv_wc[] = [];
    expect(ibv_poll_cq(cq, 10, more)).toBe(3);
    expect(more).toHaveLength(3);
    expect(more.map((w) => w.wr_id)).toEqual([3n, 4n, 5n]);
    expect(more[0]!.invalidated_rkey).toBe(0x4321);
    expect(more[0]!.wc_flags).toBe(IBV_WC_WITH_INV);
    expect([more[1]!.status, more[1]!.vendor_err, more[1]!.qp_num]).toEqual([IBV_WC_WR_FLUSH_ERR, 0x99, 9]);
    expect([more[2]!.opcode, more[2]!.imm_data, more[2]!.byte_len]).toEqual([IBV_WC_RECV_RDMA_WITH_IMM, 1, 12]);
    expect(ibv_poll_cq(cq, 10, more)).toBe(0);
    expect(ibv_poll_cq(cq, 0, more)).toBe(0);
    expect(ciOf(cq)).toBe(5);
  });

  it('follows the phase bit across many ring wraps', () => {
    const cq = ibv_create_cq(h.ctx, 3, null, null, 0); // 4 entries
    expect(cq.cqe).toBe(3);
    const wc = newWcArray(4);
    let id = 0n;
    let polled = 0n;
    for (let round = 0; round < 25; round++) {
      const k = 1 + (round % 4);
      for (let i = 0; i < k; i++) expect(h.fake.complete(cq.handle, { wrId: id++, opcode: IBV_WC_SEND }) & CqPush.WRITTEN).toBeTruthy();
      // Poll in two bites to cross the wrap inside a call and between calls.
      let got = ibv_poll_cq(cq, 1, wc);
      expect(got).toBe(1);
      expect(wc[0]!.wr_id).toBe(polled++);
      got = ibv_poll_cq(cq, 4, wc);
      expect(got).toBe(k - 1);
      for (let i = 0; i < got; i++) expect(wc[i]!.wr_id).toBe(polled++);
      expect(ibv_poll_cq(cq, 4, wc)).toBe(0);
    }
    expect(ciOf(cq)).toBe(Number(id));
  });

  it('the device sees the consumer counter: a full ring overflows only when not polled', () => {
    const cq = ibv_create_cq(h.ctx, 1, null, null, 0); // 2 entries
    const wc = newWcArray(2);
    for (let i = 0; i < 10; i++) {
      expect(h.fake.complete(cq.handle, { wrId: BigInt(i) })).toBe(CqPush.WRITTEN);
      expect(ibv_poll_cq(cq, 2, wc)).toBe(1);
    }
    h.fake.complete(cq.handle, { wrId: 10n });
    h.fake.complete(cq.handle, { wrId: 11n });
    expect(h.fake.complete(cq.handle, { wrId: 12n })).toBe(CqPush.OVERFLOW);
    expect(ibv_poll_cq(cq, 2, wc)).toBe(2);
    expect(wc.map((w) => w.wr_id)).toEqual([10n, 11n]);
  });

  it('a destroyed CQ polls as -EINVAL', () => {
    const cq = ibv_create_cq(h.ctx, 1, null, null, 0);
    expect(ibv_destroy_cq(cq)).toBe(0);
    expect(ibv_poll_cq(cq, 1, newWcArray(1))).toBe(-errno.EINVAL);
  });
});
