import { describe, expect, it } from 'vitest';
import { IBV_EVENT_SRQ_LIMIT_REACHED, IBV_QPT_RC, IBV_SRQ_LIMIT } from './abi/constants.js';
import { Cmd, CmdStatus } from './commands.js';
import { rqAdvance, rqPeek, sqAdvance, sqPeek, sqPending, srqAdvance, srqAvailable, srqHead, srqPeek } from './queues.js';
import { QP_DBREC, SRQ_DBREC, storeDbrec } from './registers.js';
import { createTestbed, SMALL_DEVICE } from './testbed.js';
import { log2, recvWqeStride, ringEntryAddr, RECV_WQE_HDR, SEND_CTRL, sendWqeStride, SRQ_WQE_HDR } from './wqe.js';

describe('work queue consumption', () => {
  it('SQ and RQ: peek / advance against the producer counters in the record', () => {
    const tb = createTestbed({ config: SMALL_DEVICE, memBytes: 1 << 20 });
    const ok = (op: number, v: Record<string, unknown>) => {
      const r = tb.cmd.exec(op, v);
      expect(r.status, tb.fw.lastError).toBe(CmdStatus.OK);
      return r.out;
    };
    const pdn = ok(Cmd.ALLOC_PD, {})['pdn'];
    const eqn = ok(Cmd.CREATE_EQ, { ringAddr: tb.mem.alloc(512, 32).addrNum, logSize: 4, intVector: 0 })['eqn'];
    const cqn = ok(Cmd.CREATE_CQ, { ringAddr: tb.mem.alloc(1024, 64).addrNum, dbrecAddr: tb.mem.alloc(8, 8).addrNum, eqn, logSize: 4 })['cqn'];
    const sqStride = sendWqeStride(IBV_QPT_RC, 1, 0);
    const sq = tb.mem.alloc(4 * sqStride, 64).addrNum;
    const rq = tb.mem.alloc(4 * 64, 64).addrNum;
    const rec = tb.mem.alloc(8, 8).addrNum;
    const qpn = ok(Cmd.CREATE_QP, {
      qpType: IBV_QPT_RC,
      pdn,
      sendCqn: cqn,
      recvCqn: cqn,
      sqRingAddr: sq,
      rqRingAddr: rq,
      dbrecAddr: rec,
      sqLogSize: 2,
      sqLogStride: log2(sqStride),
      rqLogSize: 2,
      rqLogStride: log2(recvWqeStride(1)),
      maxSendSge: 1,
      maxRecvSge: 1,
    })['qpn'] as number;
    const t = tb.fw.tables;
    const qp = t.qpByNumber(qpn);
    expect(sqPeek(tb.mem, t, qp)).toBe(-1);
    expect(rqPeek(tb.mem, t, qp)).toBe(-1);
    // Post 6 sends over two laps of a 4-entry ring, consuming as we go.
    for (let n = 0; n < 6; n++) {
      const at = ringEntryAddr(sq, n, 2, log2(sqStride));
      SEND_CTRL.f.wrId.setNum(tb.mem.dv, at - tb.mem.baseNum, 100 + n);
      storeDbrec(tb.mem, rec + QP_DBREC.f.sqPi.decl.offset, n + 1);
      expect(sqPending(tb.mem, t, qp)).toBe(1);
      const w = sqPeek(tb.mem, t, qp);
      expect(w).toBe(at);
      expect(SEND_CTRL.f.wrId.getNum(tb.mem.dv, w - tb.mem.baseNum)).toBe(100 + n);
      expect(sqAdvance(t, qp)).toBe(n);
    }
    RECV_WQE_HDR.f.wrId.setNum(tb.mem.dv, rq - tb.mem.baseNum, 7);
    storeDbrec(tb.mem, rec + QP_DBREC.f.rqPi.decl.offset, 1);
    expect(rqPeek(tb.mem, t, qp)).toBe(rq);
    expect(rqAdvance(t, qp)).toBe(0);
    expect(rqPeek(tb.mem, t, qp)).toBe(-1);
  });

  it('SRQ: the driver free list and the device walk agree under out-of-order completion; limit event', () => {
    const tb = createTestbed({ config: SMALL_DEVICE, memBytes: 1 << 20 });
    const pdn = tb.cmd.exec(Cmd.ALLOC_PD).out['pdn'];
    const size = 8;
    const stride = recvWqeStride(1);
    const ring = tb.mem.alloc(size * stride, 64).addrNum;
    const rec = tb.mem.alloc(8, 8).addrNum;
    const r = tb.cmd.exec(Cmd.CREATE_SRQ, { pdn, limit: 0, ringAddr: ring, dbrecAddr: rec, logSize: 3, logStride: log2(stride), maxSge: 1 });
    expect(r.status).toBe(CmdStatus.OK);
    const srqn = r.out['srqn'] as number;
    const t = tb.fw.tables;
    const srq = t.srqByNumber(srqn);
    const off = (i: number) => ring + i * stride - tb.mem.baseNum;
    const dv = tb.mem.dv;

    // Driver side (mlx5 scheme): link i -> i+1, head = 0, tail = size-1.
    for (let i = 0; i < size; i++) SRQ_WQE_HDR.f.nextWqeIndex.set(dv, off(i), (i + 1) % size);
    let head = 0;
    let tail = size - 1;
    let pi = 0;
    let nextWrId = 1000;
    const post = () => {
      SRQ_WQE_HDR.f.wrId.setNum(dv, off(head), nextWrId++);
      head = SRQ_WQE_HDR.f.nextWqeIndex.get(dv, off(head));
      storeDbrec(tb.mem, rec + SRQ_DBREC.f.pi.decl.offset, ++pi);
    };
    const free = (index: number) => {
      SRQ_WQE_HDR.f.nextWqeIndex.set(dv, off(tail), index);
      tail = index;
    };
    // Device side: take one, report (ring index, wr_id).
    const take = () => {
      const at = srqPeek(tb.mem, t, srq);
      if (at < 0) return null;
      const index = srqHead(t, srq);
      const wrId = SRQ_WQE_HDR.f.wrId.getNum(dv, at - tb.mem.baseNum);
      const ev = srqAdvance(tb.mem, t, srq);
      return { index, wrId, ev };
    };

    for (let i = 0; i < 7; i++) post(); // size - 1 posted: the driver keeps one spare, as mlx5 does
    const a = take()!;
    const b = take()!;
    const c = take()!;
    expect([a.index, b.index, c.index]).toEqual([0, 1, 2]);
    expect([a.wrId, b.wrId, c.wrId]).toEqual([1000, 1001, 1002]);
    // Completions come back out of order (different QPs): free 2, then 0; 1 stays in use.
    free(c.index);
    free(a.index);
    post();
    post();
    expect(srqAvailable(tb.mem, t, srq)).toBe(6);
    const seen = [];
    for (let x = take(); x; x = take()) seen.push(x);
    expect(seen.map((x) => x.wrId)).toEqual([1003, 1004, 1005, 1006, 1007, 1008]);
    expect(seen.map((x) => x.index)).toEqual([3, 4, 5, 6, 7, 2]);
    expect(new Set([b.index, ...seen.map((x) => x.index)]).size).toBe(7); // no slot handed out twice

    // Limit: arm at 3; the event fires once when fewer than 3 remain.
    for (const x of seen) free(x.index);
    for (let i = 0; i < 4; i++) post();
    expect(tb.cmd.exec(Cmd.MODIFY_SRQ, { srqn, attrMask: IBV_SRQ_LIMIT, limit: 3 }).status).toBe(CmdStatus.OK);
    expect(take()!.ev).toBe(-1); // 3 left
    expect(take()!.ev).toBe(IBV_EVENT_SRQ_LIMIT_REACHED); // 2 left
    expect(take()!.ev).toBe(-1); // disarmed
    expect(tb.cmd.exec(Cmd.QUERY_SRQ, { srqn }).out['limit']).toBe(0);
  });
});
