import { beforeAll, describe, expect, it } from 'vitest';
import { IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_ATOMIC, IBV_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_WRITE } from './abi/constants.js';
import { Cmd, CmdStatus } from './commands.js';
import { checkAccess, checkKey, CtxOff, MPT, MrCheck } from './contexts.js';
import { createTestbed, SMALL_DEVICE, type Testbed } from './testbed.js';

let tb: Testbed;
let pd1: number;
let pd2: number;
let key: number;
let bufAddr: number;
const IOVA = 0x7000_0000;

beforeAll(() => {
  tb = createTestbed({ config: SMALL_DEVICE, memBytes: 1 << 20 });
  pd1 = tb.cmd.exec(Cmd.ALLOC_PD).out['pdn'] as number;
  pd2 = tb.cmd.exec(Cmd.ALLOC_PD).out['pdn'] as number;
  bufAddr = tb.mem.alloc(8192).addrNum;
  const r = tb.cmd.exec(Cmd.REG_MR, {
    pdn: pd1,
    access: IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
    hostAddr: bufAddr,
    length: 4096,
    iova: IOVA,
  });
  expect(r.status).toBe(CmdStatus.OK);
  key = r.out['lkey'] as number;
});

describe('MR key checks (checkAccess)', () => {
  it('accepts in-bounds access with the rights the MR has, and translates iova → host', () => {
    const t = tb.fw.tables;
    const mr = t.mrByLkey(key);
    expect(mr).toBe(t.mrByRkey(key));
    expect(checkAccess(t, mr, pd1, IOVA, 4096, 0)).toBe(MrCheck.OK);
    expect(checkAccess(t, mr, pd1, IOVA + 100, 8, IBV_ACCESS_LOCAL_WRITE)).toBe(MrCheck.OK);
    expect(checkAccess(t, mr, pd1, IOVA + 4096, 0, IBV_ACCESS_REMOTE_READ)).toBe(MrCheck.OK);
    expect(t.mrTranslate(mr, IOVA + 100)).toBe(bufAddr + 100);
    expect(MPT.f.key.decl.offset).toBe(CtxOff.MPT_KEY);
    expect(MPT.f.hostAddr.decl.offset).toBe(CtxOff.MPT_HOST);
  });

  it('bad key, wrong PD, out of bounds, missing access', () => {
    const t = tb.fw.tables;
    expect(checkKey(t, key ^ 1, pd1, IOVA, 8, 0)).toBe(MrCheck.BAD_KEY); // wrong variant
    expect(checkKey(t, key + 0x100, pd1, IOVA, 8, 0)).toBe(MrCheck.BAD_KEY); // unused index
    expect(checkKey(t, 0, pd1, IOVA, 8, 0)).toBe(MrCheck.BAD_KEY);
    expect(checkKey(t, 0xffffffff, pd1, IOVA, 8, 0)).toBe(MrCheck.BAD_KEY);
    expect(checkKey(t, key, pd2, IOVA, 8, 0)).toBe(MrCheck.BAD_PD);
    expect(checkKey(t, key, pd1, IOVA - 1, 8, 0)).toBe(MrCheck.OUT_OF_BOUNDS);
    expect(checkKey(t, key, pd1, IOVA + 4090, 8, 0)).toBe(MrCheck.OUT_OF_BOUNDS);
    expect(checkKey(t, key, pd1, NaN, 8, 0)).toBe(MrCheck.OUT_OF_BOUNDS);
    expect(checkKey(t, key, pd1, IOVA, -1, 0)).toBe(MrCheck.OUT_OF_BOUNDS);
    expect(checkKey(t, key, pd1, IOVA, 8, IBV_ACCESS_REMOTE_WRITE)).toBe(MrCheck.NO_ACCESS);
    expect(checkKey(t, key, pd1, IOVA, 8, IBV_ACCESS_REMOTE_ATOMIC)).toBe(MrCheck.NO_ACCESS);
    // Order of checks: PD before access before bounds.
    expect(checkKey(t, key, pd2, IOVA - 1, 8, IBV_ACCESS_REMOTE_WRITE)).toBe(MrCheck.BAD_PD);
    expect(checkKey(t, key, pd1, IOVA - 1, 8, IBV_ACCESS_REMOTE_WRITE)).toBe(MrCheck.NO_ACCESS);
  });

  it('a deregistered key fails, and so does it after its index is registered again', () => {
    const t = tb.fw.tables;
    const base = { pdn: pd1, access: IBV_ACCESS_LOCAL_WRITE, hostAddr: bufAddr, length: 8192, iova: bufAddr };
    const k2 = tb.cmd.exec(Cmd.REG_MR, base).out['lkey'] as number;
    expect(checkKey(t, k2, pd1, bufAddr, 8192, IBV_ACCESS_LOCAL_WRITE)).toBe(MrCheck.OK);
    expect(tb.cmd.exec(Cmd.DEREG_MR, { key: k2 }).status).toBe(CmdStatus.OK);
    expect(checkKey(t, k2, pd1, bufAddr, 8, 0)).toBe(MrCheck.BAD_KEY);
    // Cycle the pool until index (k2 >> 8) is handed out again.
    const keys: number[] = [];
    let k3 = 0;
    while (k3 >>> 8 !== k2 >>> 8) {
      k3 = tb.cmd.exec(Cmd.REG_MR, base).out['lkey'] as number;
      keys.push(k3);
    }
    expect(k3).not.toBe(k2);
    expect(checkKey(t, k2, pd1, bufAddr, 8, 0)).toBe(MrCheck.BAD_KEY);
    expect(checkKey(t, k3, pd1, bufAddr, 8, 0)).toBe(MrCheck.OK);
    for (const k of keys) tb.cmd.exec(Cmd.DEREG_MR, { key: k });
  });
});
