/**
 * The shared-memory protocol across two real threads: a worker_thread runs
 * the firmware and a toy send engine over the shared BAR, host memory and
 * context tables; the main thread is the driver. It issues mailbox
 * commands (blocking in Atomics.wait on CMD_STATUS), posts send WQEs, rings
 * doorbells, waits for the interrupt and polls CQEs by their owner bit.
 *
 * Node 20 cannot load .ts in a worker, so the test first transpiles
 * src/device (with src/params and the one src/wire file it imports) to a temporary folder.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IBV_QP_ACCESS_FLAGS,
  IBV_QP_AV,
  IBV_QP_DEST_QPN,
  IBV_QP_MAX_DEST_RD_ATOMIC,
  IBV_QP_MAX_QP_RD_ATOMIC,
  IBV_QP_MIN_RNR_TIMER,
  IBV_QP_PATH_MTU,
  IBV_QP_PKEY_INDEX,
  IBV_QP_PORT,
  IBV_QP_RETRY_CNT,
  IBV_QP_RNR_RETRY,
  IBV_QP_RQ_PSN,
  IBV_QP_SQ_PSN,
  IBV_QP_TIMEOUT,
  IBV_QPS_INIT,
  IBV_QPS_RTR,
  IBV_MTU_1024,
  IBV_QP_STATE,
  IBV_QPS_RTS,
  IBV_QPT_RC,
  IBV_WC_RDMA_WRITE,
  IBV_WR_RDMA_WRITE,
} from './abi/constants.js';
import { resolveCapabilities } from './capabilities.js';
import { Cmd, CmdStatus } from './commands.js';
import { ContextTables } from './contexts.js';
import { CQE, cqeOffset, cqeReady } from './cqe.js';
import { EQE, EQE_TYPE_COMPLETION, eqeOffset, eqeReady } from './eqe.js';
import { HostMemory } from './host-memory.js';
import { decodeStruct } from './layout.js';
import { CommandChannel } from './mailbox.js';
import { armCq, Bar, irqCount, QP_DBREC, Reg, ringKind, ringSqDoorbell, storeDbrec, updateEqCi, waitIrq, DbKind } from './registers.js';
import { SMALL_DEVICE } from './testbed.js';
import { log2, recvWqeStride, SEND_CTRL, sendWqeStride, ringEntryAddr } from './wqe.js';

const here = dirname(fileURLToPath(import.meta.url));
const srcRoot = join(here, '..');
let outDir = '';

function transpileTree(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rnic-device-'));
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
  const files: string[] = [];
  const walk = (d: string) => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      if (statSync(p).isDirectory()) walk(p);
      else if (p.endsWith('.ts') && !p.endsWith('.test.ts')) files.push(p);
    }
  };
  // src/device and what its project may import (src/device/tsconfig.json: params, and wire's errors).
  walk(join(srcRoot, 'device'));
  walk(join(srcRoot, 'params'));
  files.push(join(srcRoot, 'wire', 'errors.ts'));
  for (const f of files) {
    const js = ts.transpileModule(readFileSync(f, 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022, preserveConstEnums: true },
      fileName: f,
    }).outputText;
    const out = join(dir, 'src', relative(srcRoot, f)).replace(/\.ts$/, '.js');
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, js);
  }
  writeFileSync(join(dir, 'device-worker.js'), WORKER_SOURCE);
  return dir;
}

/** The device thread: firmware + a toy send engine (every send WQE completes as RDMA_WRITE / SUCCESS). */
const WORKER_SOURCE = `
import { workerData, parentPort } from 'node:worker_threads';
import * as D from './src/device/index.js';
const { memDesc, barSab, tablesDesc, config, stopSab } = workerData;
const caps = D.resolveCapabilities(config);
const mem = D.HostMemory.attach(memDesc);
const bar = D.Bar.attach(barSab);
const tables = D.ContextTables.attach(tablesDesc);
const fw = new D.Firmware({ caps, mem, bar, tables });
const stop = new Int32Array(stopSab);
const pairs = new Int32Array(64);
const cqe = new D.CqeFields();
let commands = 0, wqes = 0;

function completion(cq, cqn) {
  const r = D.cqPush(mem, tables, cq, cqe);
  if (r & D.CqPush.EVENT) D.eqPush(mem, tables, bar, D.CQC.f.eqn.get(tables.dv, cq), D.EQE_TYPE_COMPLETION, cqn);
}

function sendEngine(qpn) {
  const qp = tables.qpByNumber(qpn);
  if (qp < 0 || tables.qpState(qp) !== 3 /* RTS */) return;
  const dv = tables.dv;
  const ring = D.QPC.f.sqRingAddr.getNum(dv, qp);
  const logSize = D.QPC.f.sqLogSize.get(dv, qp), logStride = D.QPC.f.sqLogStride.get(dv, qp);
  const pi = D.loadDbrec(mem, D.QPC.f.dbrecAddr.getNum(dv, qp) + 4);
  const cqn = D.QPC.f.sendCqn.get(dv, qp);
  const cq = tables.cqByNumber(cqn);
  let ci = D.QPC.f.sqConsumed.get(dv, qp);
  for (; ci !== pi; ci = (ci + 1) >>> 0) {
    const off = D.ringEntryAddr(ring, ci, logSize, logStride) - mem.baseNum;
    cqe.reset().wrIdFrom(mem.dv, off);
    cqe.opcode = 1; /* IBV_WC_RDMA_WRITE */
    cqe.qpNum = qpn;
    cqe.wqeCounter = ci & 0xffff;
    completion(cq, cqn);
    wqes++;
  }
  D.QPC.f.sqConsumed.set(dv, qp, ci);
}

D.setDeviceStatus(bar, 1 /* READY */);
Atomics.notify(bar.i32, 2 /* DEVICE_STATUS */);
for (;;) {
  const seq = Atomics.load(bar.i32, 32 /* DB_SEQ */);
  const kinds = D.takeSummary(bar);
  if (kinds & (1 << 5)) { if (D.serviceCommandDoorbell(fw, bar)) commands++; }
  if (kinds & (1 << 0)) {
    const n = D.drainDoorbells(bar, 0, pairs);
    for (let i = 0; i < n; i++) sendEngine(pairs[2 * i]);
  }
  if (kinds & (1 << 3)) {
    const n = D.drainDoorbells(bar, 3, pairs);
    for (let i = 0; i < n; i++) {
      const cq = tables.cqByNumber(pairs[2 * i]);
      if (cq >= 0 && D.cqArm(tables, cq, pairs[2 * i + 1])) {
        D.eqPush(mem, tables, bar, D.CQC.f.eqn.get(tables.dv, cq), D.EQE_TYPE_COMPLETION, pairs[2 * i]);
      }
    }
  }
  if (kinds & (1 << 4)) {
    const n = D.drainDoorbells(bar, 4, pairs);
    for (let i = 0; i < n; i++) D.eqDoorbell(tables, bar, pairs[2 * i], pairs[2 * i + 1]);
  }
  if (Atomics.load(stop, 0)) break;
  D.waitForDoorbell(bar, seq, 200);
}
parentPort.postMessage({ commands, wqes });
`;

beforeAll(() => {
  outDir = transpileTree();
});
afterAll(() => {
  if (outDir) rmSync(outDir, { recursive: true, force: true });
});

describe('driver and device on two threads', () => {
  it('mailbox commands, doorbells, CQEs and an interrupt through shared memory only', async () => {
    const caps = resolveCapabilities(SMALL_DEVICE);
    const mem = HostMemory.create({ size: 1 << 20 });
    const bar = Bar.create(caps);
    const tables = ContextTables.create(caps);
    const stopSab = new SharedArrayBuffer(4);
    const worker = new Worker(join(outDir, 'device-worker.js'), {
      workerData: { memDesc: mem.descriptor, barSab: bar.sab, tablesDesc: tables.descriptor, config: SMALL_DEVICE, stopSab },
    });
    const done = new Promise<{ commands: number; wqes: number }>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    try {
      // Wait for the firmware to come up (DEVICE_STATUS.READY).
      for (let i = 0; i < 100 && bar.read(Reg.DEVICE_STATUS) === 0; i++) Atomics.wait(bar.i32, Reg.DEVICE_STATUS, 0, 50);
      expect(bar.read(Reg.DEVICE_STATUS) & 1).toBe(1);

      const cmd = new CommandChannel(mem, bar, undefined, 5000); // blocks in Atomics.wait
      const ok = (op: number, v: Record<string, unknown> = {}) => {
        const r = cmd.exec(op, v);
        expect(r.status).toBe(CmdStatus.OK);
        return r.out;
      };
      expect(ok(Cmd.QUERY_DEVICE)['maxQp']).toBe(14);
      const pdn = ok(Cmd.ALLOC_PD)['pdn'];
      const eqRing = mem.alloc(32 * 16, 32).addrNum;
      const eqn = ok(Cmd.CREATE_EQ, { ringAddr: eqRing, logSize: 4, intVector: 0 })['eqn'] as number;
      updateEqCi(bar, eqn, 0, true);
      const cqRing = mem.alloc(64 * 16, 64).addrNum;
      const cqRec = mem.alloc(8, 8).addrNum;
      const cqn = ok(Cmd.CREATE_CQ, { ringAddr: cqRing, dbrecAddr: cqRec, eqn, logSize: 4 })['cqn'] as number;
      // A bad command is answered too, and changes nothing.
      expect(cmd.exec(Cmd.CREATE_CQ, { ringAddr: cqRing, dbrecAddr: cqRec, eqn: 3, logSize: 4 }).status).toBe(CmdStatus.BAD_RESOURCE);

      const stride = sendWqeStride(IBV_QPT_RC, 1, 0);
      const sq = mem.alloc(16 * stride, 64).addrNum;
      const qpRec = mem.alloc(8, 8).addrNum;
      const qpn = ok(Cmd.CREATE_QP, {
        qpType: IBV_QPT_RC,
        pdn,
        sendCqn: cqn,
        recvCqn: cqn,
        sqRingAddr: sq,
        rqRingAddr: mem.alloc(16 * 64, 64).addrNum,
        dbrecAddr: qpRec,
        sqLogSize: 4,
        sqLogStride: log2(stride),
        rqLogSize: 4,
        rqLogStride: log2(recvWqeStride(1)),
        maxSendSge: 1,
        maxRecvSge: 1,
      })['qpn'] as number;
      // Drive the QP to RTS (RESET→INIT→RTR→RTS) with the usual attributes.
      ok(Cmd.MODIFY_QP, { qpn, attrMask: IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT, qpState: IBV_QPS_INIT, portNum: 1 });
      ok(Cmd.MODIFY_QP, {
        qpn,
        attrMask: IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
        qpState: IBV_QPS_RTR,
        pathMtu: IBV_MTU_1024,
        destQpNum: 9,
        ahIsGlobal: 1,
        ahSgidIndex: 1,
        ahPortNum: 1,
      });
      ok(Cmd.MODIFY_QP, {
        qpn,
        attrMask: IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
        qpState: IBV_QPS_RTS,
        timeout: 14,
        retryCnt: 7,
        rnrRetry: 7,
      });
      // The driver thread sees the device's context tables through the same SharedArrayBuffer.
      expect(tables.qpState(tables.qpByNumber(qpn))).toBe(IBV_QPS_RTS);

      // Arm the CQ, post three WQEs, publish the producer index, ring the doorbell.
      armCq(bar, cqn, 0, false);
      for (let i = 0; i < 3; i++) {
        const off = ringEntryAddr(sq, i, 4, log2(stride)) - mem.baseNum;
        SEND_CTRL.f.wrId.set(mem.dv, off, 0x1000n + BigInt(i));
        SEND_CTRL.f.opcode.set(mem.dv, off, IBV_WR_RDMA_WRITE);
        SEND_CTRL.f.wqeIndex.set(mem.dv, off, i);
      }
      const irq0 = irqCount(bar, 0);
      storeDbrec(mem, qpRec + QP_DBREC.f.sqPi.decl.offset, 3);
      ringSqDoorbell(bar, qpn, 3);

      // Block until the interrupt, then find the completion event and the CQEs by their owner bits.
      let irq = irq0;
      for (let i = 0; i < 50 && irq === irq0; i++) irq = waitIrq(bar, 0, irq0, 100);
      expect(irq).toBe(irq0 + 1);
      const eqOff = eqRing - mem.baseNum;
      expect(eqeReady(mem, eqOff, 0, 4)).toBe(true);
      const eqe = decodeStruct(EQE, mem.dv, eqeOffset(eqOff, 0, 4));
      expect([eqe.type, eqe.resource]).toEqual([EQE_TYPE_COMPLETION, cqn]);
      const cqOff = cqRing - mem.baseNum;
      const wrIds: bigint[] = [];
      for (let ci = 0, spins = 0; wrIds.length < 3 && spins < 1e7; spins++) {
        if (!cqeReady(mem, cqOff, ci, 4)) continue;
        const c = decodeStruct(CQE, mem.dv, cqeOffset(cqOff, ci, 4));
        expect([c.qpNum, c.opcode, c.status, c.wqeCounter]).toEqual([qpn, IBV_WC_RDMA_WRITE, 0, ci]);
        wrIds.push(c.wrId);
        ci++;
        storeDbrec(mem, cqRec, ci);
      }
      expect(wrIds).toEqual([0x1000n, 0x1001n, 0x1002n]);
      expect(cqeReady(mem, cqOff, 3, 4)).toBe(false);
      ok(Cmd.DESTROY_QP, { qpn });
    } finally {
      Atomics.store(new Int32Array(stopSab), 0, 1);
      ringKind(bar, DbKind.CMD);
    }
    const stats = await Promise.race([done, new Promise<never>((_, rej) => setTimeout(() => rej(new Error('worker did not stop')), 5000))]);
    await worker.terminate();
    expect(stats.wqes).toBe(3);
    expect(stats.commands).toBe(10);
  }, 30_000);
});
