import { beforeEach, describe, expect, it } from 'vitest';
import { IBV_EVENT_CQ_ERR, IBV_WC_RECV, IBV_WC_REM_ACCESS_ERR, IBV_WC_SUCCESS } from './abi/constants.js';
import { Cmd, CmdStatus } from './commands.js';
import { CqFlag, EqFlag } from './contexts.js';
import { CQE, cqArm, cqeOffset, CqeFields, cqeReady, CqPush, cqPush, ringPhase } from './cqe.js';
import { EQE, eqDoorbell, eqeOffset, eqeReady, eqPush, EQE_TYPE_COMPLETION } from './eqe.js';
import { decodeStruct } from './layout.js';
import { DbKind, drainDoorbells, encodeCqArm, encodeEqDoorbell, irqCount, storeDbrec, takeSummary, updateEqCi } from './registers.js';
import { createTestbed, SMALL_DEVICE, type Testbed } from './testbed.js';

let tb: Testbed;
let eqn: number;
let eqRing: number;
let cqn: number;
let cqRing: number;
let cqDbrec: number;
const LOG = 2; // 4-entry rings: wraps quickly

beforeEach(() => {
  tb = createTestbed({ config: SMALL_DEVICE, memBytes: 1 << 20 });
  eqRing = tb.mem.alloc(32 << LOG, 32).addrNum;
  eqn = tb.cmd.exec(Cmd.CREATE_EQ, { ringAddr: eqRing, logSize: LOG, intVector: 1 }).out['eqn'] as number;
  cqRing = tb.mem.alloc(64 << LOG, 64).addrNum;
  cqDbrec = tb.mem.alloc(8, 8).addrNum;
  const r = tb.cmd.exec(Cmd.CREATE_CQ, { ringAddr: cqRing, dbrecAddr: cqDbrec, eqn, logSize: LOG });
  expect(r.status).toBe(CmdStatus.OK);
  cqn = r.out['cqn'] as number;
});

/** The driver's poll loop over the CQ: returns decoded CQEs and advances ci. */
function pollCq(state: { ci: number }, max: number) {
  const out = [];
  const ringOff = cqRing - tb.mem.baseNum;
  while (out.length < max && cqeReady(tb.mem, ringOff, state.ci, LOG)) {
    out.push(decodeStruct(CQE, tb.mem.dv, cqeOffset(ringOff, state.ci, LOG)));
    state.ci = (state.ci + 1) >>> 0;
  }
  storeDbrec(tb.mem, cqDbrec, state.ci);
  return out;
}

describe('CQ ring ownership', () => {
  it('phase starts at 1 and flips every lap; the driver sees each CQE exactly once across wraps', () => {
    expect([0, 3, 4, 7, 8].map((n) => ringPhase(n, LOG))).toEqual([1, 1, 0, 0, 1]);
    expect(ringPhase(0xffffffff, LOG)).toBe(0);
    const t = tb.fw.tables;
    const cq = t.cqByNumber(cqn);
    const f = new CqeFields();
    const st = { ci: 0 };
    expect(pollCq(st, 10)).toEqual([]); // zeroed ring: nothing valid
    let next = 0;
    for (let lap = 0; lap < 5; lap++) {
      for (let i = 0; i < 3; i++) {
        f.reset();
        f.wrIdLo = next++;
        f.opcode = IBV_WC_RECV;
        f.byteLen = 100 + i;
        expect(cqPush(tb.mem, t, cq, f)).toBe(CqPush.WRITTEN);
      }
      const got = pollCq(st, 10);
      expect(got.map((c) => Number(c.wrId))).toEqual([next - 3, next - 2, next - 1]);
      expect(got.every((c) => c.status === IBV_WC_SUCCESS && c.opcode === IBV_WC_RECV)).toBe(true);
    }
    expect(st.ci).toBe(15);
  });

  it('overflow puts the CQ in error and drops CQEs', () => {
    const t = tb.fw.tables;
    const cq = t.cqByNumber(cqn);
    const f = new CqeFields();
    for (let i = 0; i < 4; i++) expect(cqPush(tb.mem, t, cq, f)).toBe(CqPush.WRITTEN);
    expect(cqPush(tb.mem, t, cq, f)).toBe(CqPush.OVERFLOW);
    expect(Atomics.load(t.i32, cq >> 2) & CqFlag.ERROR).toBeTruthy();
    expect(cqPush(tb.mem, t, cq, f)).toBe(CqPush.DROPPED);
    // The caller raises the CQ error event.
    expect(eqPush(tb.mem, t, tb.bar, eqn, IBV_EVENT_CQ_ERR, cqn)).toBe(true);
  });

  it('arming: next CQE fires once; solicited-only waits for SE or an error; arming behind the producer fires at once', () => {
    const t = tb.fw.tables;
    const cq = t.cqByNumber(cqn);
    const f = new CqeFields();
    const st = { ci: 0 };
    expect(cqArm(t, cq, encodeCqArm(0, false))).toBe(false);
    expect(cqPush(tb.mem, t, cq, f)).toBe(CqPush.WRITTEN | CqPush.EVENT);
    expect(cqPush(tb.mem, t, cq, f)).toBe(CqPush.WRITTEN); // disarmed after one event
    pollCq(st, 10);
    expect(cqArm(t, cq, encodeCqArm(st.ci, true))).toBe(false);
    expect(cqPush(tb.mem, t, cq, f)).toBe(CqPush.WRITTEN);
    f.solicited = true;
    expect(cqPush(tb.mem, t, cq, f)).toBe(CqPush.WRITTEN | CqPush.EVENT);
    pollCq(st, 10);
    f.solicited = false;
    expect(cqArm(t, cq, encodeCqArm(st.ci, true))).toBe(false);
    f.status = IBV_WC_REM_ACCESS_ERR;
    expect(cqPush(tb.mem, t, cq, f)).toBe(CqPush.WRITTEN | CqPush.EVENT); // errors always notify
    // Arm with a stale consumer index: a CQE is already waiting.
    expect(cqArm(t, cq, encodeCqArm(st.ci, false))).toBe(true);
    expect(Atomics.load(t.i32, cq >> 2) & CqFlag.ARMED).toBe(0);
  });
});

describe('EQ ring and interrupts', () => {
  it('EQEs carry type and resource; an armed EQ fires its vector once; overflow drops', () => {
    const t = tb.fw.tables;
    const ringOff = eqRing - tb.mem.baseNum;
    expect(irqCount(tb.bar, 1)).toBe(0);
    expect(eqPush(tb.mem, t, tb.bar, eqn, EQE_TYPE_COMPLETION, cqn)).toBe(true);
    expect(irqCount(tb.bar, 1)).toBe(0); // not armed yet
    // Driver arms with ci = 0: an EQE is already there, so it fires at once.
    updateEqCi(tb.bar, eqn, 0, true);
    expect(takeSummary(tb.bar) & (1 << DbKind.EQ)).toBeTruthy();
    const pairs = new Int32Array(8);
    expect(drainDoorbells(tb.bar, DbKind.EQ, pairs)).toBe(1);
    expect(pairs[0]).toBe(eqn);
    expect(eqDoorbell(t, tb.bar, eqn, pairs[1]!)).toBe(true);
    expect(irqCount(tb.bar, 1)).toBe(1);
    expect(eqeReady(tb.mem, ringOff, 0, LOG)).toBe(true);
    const e = decodeStruct(EQE, tb.mem.dv, eqeOffset(ringOff, 0, LOG));
    expect(e.type).toBe(EQE_TYPE_COMPLETION);
    expect(e.resource).toBe(cqn);
    // Consume it, re-arm with the right ci: no immediate interrupt; the next EQE fires.
    expect(eqDoorbell(t, tb.bar, eqn, encodeEqDoorbell(1, true))).toBe(false);
    Atomics.store(tb.bar.i32, tb.bar.slotBase[DbKind.EQ]! + eqn, encodeEqDoorbell(1, true));
    expect(eqPush(tb.mem, t, tb.bar, eqn, IBV_EVENT_CQ_ERR, cqn)).toBe(true);
    expect(irqCount(tb.bar, 1)).toBe(2);
    expect(eqPush(tb.mem, t, tb.bar, eqn, IBV_EVENT_CQ_ERR, cqn)).toBe(true);
    expect(irqCount(tb.bar, 1)).toBe(2); // one interrupt per arm
    expect(eqPush(tb.mem, t, tb.bar, eqn, IBV_EVENT_CQ_ERR, cqn)).toBe(true);
    expect(eqPush(tb.mem, t, tb.bar, eqn, IBV_EVENT_CQ_ERR, cqn)).toBe(true); // 4 unconsumed after ci = 1
    expect(eqPush(tb.mem, t, tb.bar, eqn, IBV_EVENT_CQ_ERR, cqn)).toBe(false);
    expect(t.i32[t.eqByNumber(eqn) >> 2]! & EqFlag.OVERFLOW).toBeTruthy();
    expect(eqPush(tb.mem, t, tb.bar, 99, IBV_EVENT_CQ_ERR, cqn)).toBe(false);
  });
});
