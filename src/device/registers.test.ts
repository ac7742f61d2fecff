import { describe, expect, it } from 'vitest';
import { DEFAULT_CAPABILITIES, resolveCapabilities } from './capabilities.js';
import { HostMemory } from './host-memory.js';
import {
  armCq,
  Bar,
  cqArmCi,
  cqArmSolicited,
  DbKind,
  DEVICE_ID_VALUE,
  drainDoorbells,
  eqDbArm,
  eqDbCi,
  loadDbrec,
  Reg,
  REGISTERS,
  ringSqDoorbell,
  ringRqDoorbell,
  storeDbrec,
  takeSummary,
  updateEqCi,
  waitForDoorbell,
  QP_DBREC,
} from './registers.js';
import { SMALL_DEVICE } from './testbed.js';

const caps = resolveCapabilities(SMALL_DEVICE);

describe('BAR', () => {
  it('publishes its geometry in read-only registers; attach validates the id', () => {
    const bar = Bar.create(caps);
    expect(bar.read(Reg.DEVICE_ID)).toBe(DEVICE_ID_VALUE);
    const other = Bar.attach(bar.sab);
    expect(Array.from(other.count)).toEqual([16, 16, 5, 9, 5]);
    expect(Array.from(other.slotBase)).toEqual(Array.from(bar.slotBase));
    expect(other.numIrq).toBe(8);
    expect(() => Bar.attach(new SharedArrayBuffer(8192))).toThrowError(expect.objectContaining({ code: 'DEV_ERR_BAD_BAR' }));
    // The default (rxe-sized) BAR stays small.
    expect(Bar.create(DEFAULT_CAPABILITIES).sab.byteLength).toBeLessThan(1 << 20);
    expect(new Set(REGISTERS.map((r) => r.offset)).size).toBe(REGISTERS.length);
    expect(REGISTERS.find((r) => r.name === 'CMD_STATUS')!.offset).toBe(Reg.CMD_STATUS * 4);
    expect(REGISTERS.find((r) => r.name === 'DB_SEQ')!.offset).toBe(Reg.DB_SEQ * 4);
  });

  it('doorbells: record first, then slot + pending bit + summary + sequence; drained once, coalesced', () => {
    const bar = Bar.create(caps);
    const mem = HostMemory.create({ size: 65536 });
    const rec = mem.alloc(8, 8).addrNum;
    const seq0 = bar.read(Reg.DB_SEQ);
    storeDbrec(mem, rec + QP_DBREC.f.sqPi.decl.offset, 1);
    ringSqDoorbell(bar, 5, 1);
    storeDbrec(mem, rec + QP_DBREC.f.sqPi.decl.offset, 2);
    ringSqDoorbell(bar, 5, 2); // coalesces with the first: its bit is still pending, so no new sequence
    expect(bar.read(Reg.DB_SEQ)).toBe(seq0 + 1);
    ringSqDoorbell(bar, 15, 7);
    ringRqDoorbell(bar, 3, 9);
    expect(bar.read(Reg.DB_SEQ)).toBe(seq0 + 3);
    const kinds = takeSummary(bar);
    expect(kinds).toBe((1 << DbKind.SQ) | (1 << DbKind.RQ));
    const out = new Int32Array(16);
    expect(drainDoorbells(bar, DbKind.SQ, out)).toBe(2);
    expect(Array.from(out.subarray(0, 4))).toEqual([5, 2, 15, 7]);
    expect(loadDbrec(mem, rec + 4)).toBe(2);
    expect(drainDoorbells(bar, DbKind.SQ, out)).toBe(0);
    expect(drainDoorbells(bar, DbKind.RQ, out)).toBe(1);
    expect(takeSummary(bar)).toBe(0);
  });

  it('drainDoorbells with a small buffer puts the rest back', () => {
    const bar = Bar.create(caps);
    for (const q of [2, 3, 4, 9]) ringSqDoorbell(bar, q, q * 10);
    takeSummary(bar);
    const out = new Int32Array(4); // two pairs
    expect(drainDoorbells(bar, DbKind.SQ, out)).toBe(2);
    expect(takeSummary(bar)).toBe(1 << DbKind.SQ);
    expect(drainDoorbells(bar, DbKind.SQ, out)).toBe(2);
    expect(Array.from(out)).toEqual([4, 40, 9, 90]);
  });

  it('3,000 seeded rounds at default caps: every queue rung is drained once with its last value, through pending, index and top words, whatever the buffer size', () => {
    const bar = Bar.create(DEFAULT_CAPABILITIES);
    const slots = bar.count[DbKind.SQ]!; // 65,538: 2,049 pending words, 65 index words, 3 top words
    let x = 0x9e3779b9;
    const rand = (n: number) => {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      return (x >>> 0) % n;
    };
    for (let round = 0; round < 3000; round++) {
      const want = new Map<number, number>();
      const rings = 1 + rand(40);
      for (let i = 0; i < rings; i++) {
        // Mostly anywhere, sometimes the edges (slot 0, the last slot, word and top-word boundaries).
        const edges = [0, 31, 32, 1023, 1024, 32767, 32768, slots - 1];
        const q = rand(4) === 0 ? edges[rand(edges.length)]! : rand(slots);
        const v = rand(1 << 30);
        ringSqDoorbell(bar, q, v);
        want.set(q, v);
      }
      expect(takeSummary(bar) & (1 << DbKind.SQ)).not.toBe(0);
      const out = new Int32Array(2 * (1 + rand(8)));
      const got = new Map<number, number>();
      for (let guard = 0; guard < 100; guard++) {
        const n = drainDoorbells(bar, DbKind.SQ, out);
        for (let i = 0; i < n; i++) {
          expect(got.has(out[2 * i]!)).toBe(false);
          got.set(out[2 * i]!, out[2 * i + 1]!);
        }
        if (n < out.length / 2) break;
      }
      expect(got).toEqual(want);
      takeSummary(bar);
      expect(drainDoorbells(bar, DbKind.SQ, out)).toBe(0);
    }
  });

  it('rings between partial drains (seeded, 2,000 rounds): a ring whose bit is still pending is never lost, and the device reads its value', () => {
    const bar = Bar.create(DEFAULT_CAPABILITIES);
    let x = 0x2545f491;
    const rand = (n: number) => {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      return (x >>> 0) % n;
    };
    const latest = new Map<number, number>();
    /** Rung since the device last reported the queue. */
    const owed = new Set<number>();
    const pass = (cap: number) => {
      if ((takeSummary(bar) & (1 << DbKind.SQ)) === 0) return;
      const out = new Int32Array(2 * cap);
      const n = drainDoorbells(bar, DbKind.SQ, out);
      for (let i = 0; i < n; i++) {
        expect(out[2 * i + 1]).toBe(latest.get(out[2 * i]!));
        owed.delete(out[2 * i]!);
      }
    };
    for (let round = 0; round < 2000; round++) {
      for (let step = 0, steps = 1 + rand(30); step < steps; step++) {
        if (rand(3) === 0) pass(1 + rand(4));
        else {
          const q = rand(6) * 1031; // few queues, so rings often find their bit still pending
          const v = rand(1 << 30);
          latest.set(q, v);
          owed.add(q);
          ringSqDoorbell(bar, q, v);
        }
      }
      // The device keeps passing while the summary says so: every ring is reported.
      for (let guard = 0; guard < 100 && (bar.read(Reg.DB_SUMMARY) & (1 << DbKind.SQ)) !== 0; guard++) pass(1 + rand(4));
      expect([...owed]).toEqual([]);
    }
  });

  it('CQ arm and EQ doorbell values encode consumer index and flags', () => {
    const bar = Bar.create(caps);
    armCq(bar, 3, 0x1234567, true);
    updateEqCi(bar, 2, 77, true);
    const out = new Int32Array(4);
    expect(drainDoorbells(bar, DbKind.CQ, out)).toBe(1);
    expect(cqArmCi(out[1]!)).toBe(0x234567);
    expect(cqArmSolicited(out[1]!)).toBe(true);
    expect(drainDoorbells(bar, DbKind.EQ, out)).toBe(1);
    expect([eqDbCi(out[1]!), eqDbArm(out[1]!)]).toEqual([77, true]);
  });

  it('waitForDoorbell returns at once when the sequence moved, else times out', () => {
    const bar = Bar.create(caps);
    const s = bar.read(Reg.DB_SEQ);
    ringSqDoorbell(bar, 2, 1);
    expect(waitForDoorbell(bar, s, 1000)).toBe(s + 1);
    const t0 = Date.now();
    expect(waitForDoorbell(bar, s + 1, 20)).toBe(s + 1);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(15);
    expect(bar.read(Reg.DEVICE_SLEEPING)).toBe(0);
  });
});
