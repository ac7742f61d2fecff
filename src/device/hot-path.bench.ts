/**
 * Hot-path micro-benchmarks of the device interface (STYLE §8):
 *   npx vitest bench --run src/device
 * Each iteration does 1000 operations.
 */
import { bench, describe } from 'vitest';
import { IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_WRITE } from './abi/constants.js';
import { Cmd } from './commands.js';
import { checkKey } from './contexts.js';
import { CqeFields, cqeReady, cqPush } from './cqe.js';
import { DbKind, drainDoorbells, ringSqDoorbell, storeDbrec, takeSummary } from './registers.js';
import { createTestbed, SMALL_DEVICE } from './testbed.js';
import { SEND_CTRL } from './wqe.js';

const tb = createTestbed({ config: SMALL_DEVICE, memBytes: 4 << 20 });
const t = tb.fw.tables;
const pdn = tb.cmd.exec(Cmd.ALLOC_PD).out['pdn'] as number;
const buf = tb.mem.alloc(1 << 16);
const key = tb.cmd.exec(Cmd.REG_MR, {
  pdn,
  access: IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
  hostAddr: buf.addr,
  length: 1 << 16,
  iova: buf.addr,
}).out['rkey'] as number;
const eqn = tb.cmd.exec(Cmd.CREATE_EQ, { ringAddr: tb.mem.alloc(32 * 16, 32).addrNum, logSize: 4, intVector: 0 }).out['eqn'];
const cqRing = tb.mem.alloc(64 * 1024, 64).addrNum;
const cqRec = tb.mem.alloc(8, 8).addrNum;
const cqn = tb.cmd.exec(Cmd.CREATE_CQ, { ringAddr: cqRing, dbrecAddr: cqRec, eqn, logSize: 8 }).out['cqn'] as number;
const cq = t.cqByNumber(cqn);
const f = new CqeFields();
let ci = 0;
const pairs = new Int32Array(64);
const opcode = SEND_CTRL.f.opcode;
let sink = 0;

describe('device hot paths (×1000)', () => {
  bench('rkey lookup + checkAccess', () => {
    for (let i = 0; i < 1000; i++) sink += checkKey(t, key, pdn, buf.addrNum + (i & 1023), 64, IBV_ACCESS_REMOTE_WRITE);
  });
  bench('cqPush + driver poll', () => {
    const ringOff = cqRing - tb.mem.baseNum;
    for (let i = 0; i < 1000; i++) {
      f.wrIdLo = i;
      cqPush(tb.mem, t, cq, f);
      if (cqeReady(tb.mem, ringOff, ci, 8)) ci++;
      storeDbrec(tb.mem, cqRec, ci);
    }
  });
  bench('layout accessor get (8-bit field)', () => {
    for (let i = 0; i < 1000; i++) sink += opcode.get(tb.mem.dv, (i & 63) * 64);
  });
  bench('ring + drain SQ doorbell', () => {
    for (let i = 0; i < 1000; i++) {
      ringSqDoorbell(tb.bar, 2 + (i & 7), i);
      if ((i & 7) === 7) {
        takeSummary(tb.bar);
        sink += drainDoorbells(tb.bar, DbKind.SQ, pairs);
      }
    }
  });
});
void sink;
