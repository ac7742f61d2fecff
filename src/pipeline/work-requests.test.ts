import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../test/seeded.js';
import { IBV_QPT_RC, IBV_WR_RDMA_WRITE, IBV_WR_SEND } from '../device/abi/constants.js';
import { HostMemory } from '../device/host-memory.js';
import { DATA_SEG, RADDR_SEG, SEND_CTRL, WqeOff } from '../device/wqe.js';
import { readSendWqe, releaseSendWqe, SendWqe } from './work-requests.js';

describe('SendWqe reuse', () => {
  it('reset() gives back every field a new WQE has', () => {
    const fresh = new SendWqe();
    const w = new SendWqe();
    // Dirty every own field, whatever its type.
    for (const k of Object.keys(w) as (keyof SendWqe)[]) {
      const v = w[k];
      (w as unknown as Record<string, unknown>)[k] =
        typeof v === 'number' ? 7 : typeof v === 'bigint' ? 7n : typeof v === 'boolean' ? !v : v === null ? { dirty: true } : [{ addr: 1, length: 2, lkey: 3 }];
    }
    w.reset();
    expect({ ...w }).toEqual({ ...fresh });
    expect(Object.keys(w)).toEqual(Object.keys(fresh));
  });

  it('a released WQE read again carries only the new WQE (seeded, 2,000 posts of 0-3 SGEs)', () => {
    const mem = HostMemory.create({ size: 1 << 16 });
    const slot = mem.alloc(256, 64).addrNum;
    const o = slot - mem.baseNum;
    const r = seededRandom(5);
    const n = (k: number) => Math.floor(r() * k);
    let last: SendWqe | null = null;
    let reused = 0;
    for (let i = 0; i < 2000; i++) {
      const op = n(2) === 0 ? IBV_WR_SEND : IBV_WR_RDMA_WRITE;
      const nsge = n(4);
      const sges = Array.from({ length: nsge }, () => ({ addr: n(2 ** 40), length: n(2 ** 20), lkey: n(2 ** 32) }));
      const raddr = n(2 ** 48);
      mem.u8.fill(0, o, o + 256);
      SEND_CTRL.f.wrId.setNum(mem.dv, o, i);
      SEND_CTRL.f.opcode.set(mem.dv, o, op);
      SEND_CTRL.f.sendFlags.set(mem.dv, o, n(8) & ~8);
      SEND_CTRL.f.numDataSegs.set(mem.dv, o, nsge);
      RADDR_SEG.f.remoteAddr.setNum(mem.dv, o + WqeOff.RADDR, raddr);
      RADDR_SEG.f.rkey.set(mem.dv, o + WqeOff.RADDR, i);
      sges.forEach((s, j) => {
        const d = o + WqeOff.RC_DATA + j * DATA_SEG.size;
        DATA_SEG.f.addr.setNum(mem.dv, d, s.addr);
        DATA_SEG.f.length.set(mem.dv, d, s.length);
        DATA_SEG.f.lkey.set(mem.dv, d, s.lkey);
      });
      const w = readSendWqe(mem, o, IBV_QPT_RC, i, 4, 64)!;
      if (w === last) reused++;
      expect(w.wrIdLo).toBe(i);
      expect(w.counter).toBe(i);
      expect(w.opcode).toBe(op);
      expect(w.remoteAddr).toBe(raddr);
      expect(w.rkey).toBe(i);
      expect(w.sges.map((s) => ({ ...s }))).toEqual(sges);
      expect(w.length).toBe(sges.reduce((a, s) => a + s.length, 0));
      // What the last use left behind is gone.
      expect(w.sentPkts).toBe(0);
      expect(w.firstPsn).toBe(0);
      expect(w.hostAlign).toBe(-2);
      expect(w.inline).toBe(null);
      w.sentPkts = 3;
      w.firstPsn = 99;
      w.hostAlign = 5;
      releaseSendWqe(w);
      last = w;
    }
    expect(reused).toBe(1999);
  });
});
