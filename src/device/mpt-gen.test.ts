/**
 * ContextTables.mptGen: a WRITE's later packets skip the key check while
 * it is unchanged (pipeline/responder.ts), so every change to any byte of
 * the MPT must bump it. Seeded random MR and window operations (commands
 * and the pipeline's own binds, invalidations and QP releases), each
 * checked against a snapshot of the whole MPT.
 */
import { describe, expect, it } from 'vitest';
import { IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_MW_BIND, IBV_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_WRITE, IBV_MW_TYPE_1, IBV_MW_TYPE_2 } from './abi/constants.js';
import { Cmd, CmdStatus, ReregFlag } from './commands.js';
import { ContextTables, MPT } from './contexts.js';
import { mwBind, mwInvalidate, mwReleaseQp } from './mw.js';
import { createTestbed } from './testbed.js';

function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

describe('ContextTables.mptGen', () => {
  it('changes whenever an MPT byte changes, over 6,000 seeded MR and window operations', () => {
    const tb = createTestbed({
      config: { device: { maxQp: 14, maxCq: 8, maxMr: 8, maxMw: 8, maxPd: 4, maxSrq: 4, maxEq: 4, maxQpWr: 256, maxCqe: 255, maxSrqWr: 64 } },
      memBytes: 1 << 20,
    });
    const t = tb.fw.tables;
    // Entries 1.. (entry 0 holds the count itself).
    const mpt = () => t.u8.slice(t.mptBase + MPT.size, t.mptBase + t.mrCount * MPT.size);
    const pds = [tb.cmd.exec(Cmd.ALLOC_PD).out['pdn'] as number, tb.cmd.exec(Cmd.ALLOC_PD).out['pdn'] as number];
    const buf = tb.mem.alloc(1 << 16).addrNum;
    const mrs: number[] = [];
    const mws: number[] = [];
    const r = rng(9);
    const pick = <T>(a: T[]): T | undefined => a[Math.floor(r() * a.length)];
    let changed = 0;
    let unchanged = 0;
    for (let i = 0; i < 6000; i++) {
      const before = mpt();
      const gen = t.mptGen;
      const op = Math.floor(r() * 8);
      const access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | (r() < 0.7 ? IBV_ACCESS_MW_BIND : 0);
      const off = Math.floor(r() * 8) * 4096;
      if (op === 0) {
        const x = tb.cmd.exec(Cmd.REG_MR, { pdn: pick(pds)!, access, hostAddr: buf + off, length: 4096 + Math.floor(r() * 4096), iova: 0x1000_0000 + off });
        if (x.status === CmdStatus.OK) mrs.push(x.out['lkey'] as number);
      } else if (op === 1 && mrs.length > 0) {
        const k = pick(mrs)!;
        if (tb.cmd.exec(Cmd.DEREG_MR, { key: k }).status === CmdStatus.OK) mrs.splice(mrs.indexOf(k), 1);
      } else if (op === 2 && mrs.length > 0) {
        const flags = 1 + Math.floor(r() * 7);
        tb.cmd.exec(Cmd.REREG_MR, {
          key: pick(mrs)!,
          flags: flags & (ReregFlag.TRANSLATION | ReregFlag.PD | ReregFlag.ACCESS),
          pdn: pick(pds)!,
          access,
          hostAddr: BigInt(buf + off),
          length: 4096n,
          iova: BigInt(0x2000_0000 + off),
        });
      } else if (op === 3) {
        const x = tb.cmd.exec(Cmd.ALLOC_MW, { pdn: pick(pds)!, type: r() < 0.5 ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2 });
        if (x.status === CmdStatus.OK) mws.push(x.out['rkey'] as number);
      } else if (op === 4 && mws.length > 0) {
        const k = pick(mws)!;
        if (tb.cmd.exec(Cmd.DEALLOC_MW, { key: k }).status === CmdStatus.OK) mws.splice(mws.indexOf(k), 1);
      } else if (op === 5 && mws.length > 0 && mrs.length > 0) {
        // The pipeline's BIND_MW: a window over part of an MR (valid or not), for QP 2 or 3.
        const k = pick(mws)!;
        const newKey = ((k & ~0xff) | Math.floor(r() * 256)) >>> 0;
        const mr = pick(mrs)!;
        const length = r() < 0.2 ? 0 : Math.floor(r() * 2048);
        if (
          mwBind(
            t,
            { mwKey: k, newKey, mrLkey: mr, addr: 0x1000_0000 + off + Math.floor(r() * 1024), length, access: IBV_ACCESS_REMOTE_WRITE },
            2 + Math.floor(r() * 2),
            pick(pds)!,
          ) === 0
        )
          mws[mws.indexOf(k)] = newKey;
      } else if (op === 6 && mws.length > 0) {
        mwInvalidate(t, pick(mws)!, 2 + Math.floor(r() * 2), pick(pds)!, r() < 0.5);
      } else if (op === 7 && mws.length > 0) {
        mwReleaseQp(t, t.mptOff(pick(mws)! >>> 8), 2 + Math.floor(r() * 2));
      }
      const after = mpt();
      if (after.some((b, j) => b !== before[j])) {
        expect(t.mptGen, `op ${op} at step ${i} changed the MPT`).not.toBe(gen);
        changed++;
      } else unchanged++;
    }
    // The run must exercise both: changes, and operations refused before they change anything.
    expect(changed).toBeGreaterThan(1500);
    expect(unchanged).toBeGreaterThan(300);
  });

  it('is seen by every view of the same tables (it lives in MPT entry 0, which no key names)', () => {
    const tb = createTestbed({ memBytes: 1 << 20 });
    const t = tb.fw.tables;
    const other = ContextTables.attach(t.descriptor);
    const pd = tb.cmd.exec(Cmd.ALLOC_PD).out['pdn'] as number;
    const before = other.mptGen;
    const key = tb.cmd.exec(Cmd.REG_MR, { pdn: pd, access: IBV_ACCESS_LOCAL_WRITE, hostAddr: tb.mem.alloc(4096).addrNum, length: 4096, iova: 0x1000 }).out[
      'lkey'
    ] as number;
    expect(other.mptGen).not.toBe(before);
    expect(t.mptOff(0)).toBe(-1);
    expect(t.mrByKey(0)).toBe(-1);
    expect(t.mrByKey(key)).toBeGreaterThan(t.mptBase);
  });
});
