import { beforeEach, describe, expect, it } from 'vitest';
import {
  IBV_ACCESS_LOCAL_WRITE,
  IBV_ACCESS_MW_BIND,
  IBV_ACCESS_ON_DEMAND,
  IBV_ACCESS_REMOTE_WRITE,
  IBV_MTU_1024,
  IBV_MW_TYPE_1,
  IBV_MW_TYPE_2,
  IBV_MTU_256,
  IBV_MTU_4096,
  IBV_QP_ACCESS_FLAGS,
  IBV_QP_AV,
  IBV_QP_CAP,
  IBV_QP_CUR_STATE,
  IBV_QP_DEST_QPN,
  IBV_QP_MAX_DEST_RD_ATOMIC,
  IBV_QP_MAX_QP_RD_ATOMIC,
  IBV_QP_MIN_RNR_TIMER,
  IBV_QP_PATH_MTU,
  IBV_QP_PKEY_INDEX,
  IBV_QP_PORT,
  IBV_QP_QKEY,
  IBV_QP_RETRY_CNT,
  IBV_QP_RNR_RETRY,
  IBV_QP_RQ_PSN,
  IBV_QP_SQ_PSN,
  IBV_QP_STATE,
  IBV_QP_TIMEOUT,
  IBV_QPS_ERR,
  IBV_QPS_INIT,
  IBV_QPS_RESET,
  IBV_QPS_RTR,
  IBV_QPS_RTS,
  IBV_QPT_RAW_PACKET,
  IBV_QPT_RC,
  IBV_QPT_UD,
  IBV_SRQ_LIMIT,
  IBV_SRQ_MAX_WR,
} from './abi/constants.js';
import { Cmd, CmdStatus, cmdStatusToErrno, commandByOpcode, COMMANDS, REG_MR_IN, syndromeField } from './commands.js';
import { CQC, MPT, MwState, QPC, QpFlag } from './contexts.js';
import { MwFault, mwBind, mwByKey, mwInvalidate } from './mw.js';
import { Ctr } from './counters.js';
import { CommandChannel, MAILBOX_HDR, MAILBOX_IN_OFFSET, executeCommand, serviceCommandDoorbell, writeCommand } from './mailbox.js';
import { createTestbed, SMALL_DEVICE, type Testbed } from './testbed.js';
import { log2, recvWqeStride, sendWqeStride } from './wqe.js';

let tb: Testbed;
beforeEach(() => {
  tb = createTestbed({ config: SMALL_DEVICE, memBytes: 4 << 20 });
});

function ok(opcode: number, values: Record<string, unknown> = {}): Record<string, unknown> {
  const r = tb.cmd.exec(opcode, values);
  expect(r.status, `${commandByOpcode(opcode)?.name ?? opcode}: ${tb.fw.lastError}`).toBe(CmdStatus.OK);
  return r.out;
}

/** Run a command that must fail with `status`, and check that nothing changed. Returns the offending field name. */
function fails(opcode: number, values: Record<string, unknown>, status: CmdStatus): string {
  const before = snapshot();
  const r = tb.cmd.exec(opcode, values);
  expect(r.status, `expected ${status}, got ${r.status} (${tb.fw.lastError})`).toBe(status);
  expect(tb.fw.lastError.length).toBeGreaterThan(0);
  expect(snapshot()).toEqual(before);
  const def = COMMANDS.find((c) => c.opcode === opcode)!;
  return syndromeField(def.input, r.syndrome);
}

function snapshot() {
  const fw = tb.fw;
  return {
    tables: Buffer.from(fw.tables.u8).toString('base64'),
    pools: [fw.pds, fw.qps, fw.cqs, fw.eqs, fw.srqs, fw.mrs].map((p) => p.inUse),
    refs: [fw.pdRefs, fw.cqRefs, fw.eqRefs, fw.srqRefs].map((a) => Array.from(a)),
    variants: Array.from(fw.mrVariant),
  };
}

const ring = (bytes: number, align = 64) => tb.mem.alloc(bytes, align).addrNum;

function mkEq(): number {
  return ok(Cmd.CREATE_EQ, { ringAddr: ring(32 * 16), logSize: 4, intVector: 0 })['eqn'] as number;
}
function mkCq(eqn: number, logSize = 4): number {
  return ok(Cmd.CREATE_CQ, { ringAddr: ring(64 << logSize), dbrecAddr: ring(8, 8), eqn, logSize })['cqn'] as number;
}
function mkPd(): number {
  return ok(Cmd.ALLOC_PD)['pdn'] as number;
}
function qpInput(pdn: number, cqn: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const sqStride = sendWqeStride(IBV_QPT_RC, 2, 64);
  const rqStride = recvWqeStride(2);
  return {
    qpType: IBV_QPT_RC,
    pdn,
    sendCqn: cqn,
    recvCqn: cqn,
    sqRingAddr: ring(16 * sqStride),
    rqRingAddr: ring(16 * rqStride),
    dbrecAddr: ring(8, 8),
    sqLogSize: 4,
    sqLogStride: log2(sqStride),
    rqLogSize: 4,
    rqLogStride: log2(rqStride),
    maxSendSge: 2,
    maxRecvSge: 2,
    maxInlineData: 64,
    ...extra,
  };
}

/** PD, EQ, CQ and an RC QP in RESET. */
function mkQp(extra: Record<string, unknown> = {}) {
  const pdn = mkPd();
  const eqn = mkEq();
  const cqn = mkCq(eqn);
  const qpn = ok(Cmd.CREATE_QP, qpInput(pdn, cqn, extra))['qpn'] as number;
  return { pdn, eqn, cqn, qpn };
}

const AV_OK = { ahIsGlobal: 1, ahSgidIndex: 1, ahPortNum: 1, ahHopLimit: 64, ahDgid: new Uint8Array(16).fill(1), ahDmac: [2, 0, 0, 0, 0, 2] };
const TO_INIT = {
  attrMask: IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
  qpState: IBV_QPS_INIT,
  portNum: 1,
  qpAccessFlags: IBV_ACCESS_REMOTE_WRITE,
};
const RTR_MASK = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
const TO_RTR = {
  attrMask: RTR_MASK,
  qpState: IBV_QPS_RTR,
  pathMtu: IBV_MTU_1024,
  destQpNum: 0x123,
  rqPsn: 0xabcdef,
  maxDestRdAtomic: 16,
  minRnrTimer: 12,
  ...AV_OK,
};
const RTS_MASK = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
const TO_RTS = { attrMask: RTS_MASK, qpState: IBV_QPS_RTS, timeout: 14, retryCnt: 7, rnrRetry: 7, sqPsn: 0x10, maxRdAtomic: 16 };

function toRts(qpn: number): void {
  ok(Cmd.MODIFY_QP, { qpn, ...TO_INIT });
  ok(Cmd.MODIFY_QP, { qpn, ...TO_RTR });
  ok(Cmd.MODIFY_QP, { qpn, ...TO_RTS });
}

describe('command dispatch', () => {
  it('unknown opcode → BAD_OPCODE; short input → BAD_INPUT_LEN; status maps to errno', () => {
    expect(tb.cmd.exec(Cmd.QUERY_DEVICE).status).toBe(CmdStatus.OK);
    const page = tb.mem.alloc(4096, 4096).view;
    writeCommand(page, 0x7777, 1, COMMANDS[0]!.input, {});
    expect(executeCommand(tb.fw, page).status).toBe(CmdStatus.BAD_OPCODE);
    writeCommand(page, Cmd.QUERY_PORT, 2, COMMANDS[1]!.input, { portNum: 1 });
    const dv = new DataView(page.buffer, page.byteOffset);
    MAILBOX_HDR.f.inputLength.set(dv, 0, 2);
    expect(executeCommand(tb.fw, page).status).toBe(CmdStatus.BAD_INPUT_LEN);
    expect(cmdStatusToErrno(CmdStatus.BAD_PARAM)).toBe(22);
    expect(cmdStatusToErrno(CmdStatus.NO_RESOURCES)).toBe(12);
    expect(cmdStatusToErrno(CmdStatus.BUSY)).toBe(16);
    expect(cmdStatusToErrno(CmdStatus.BAD_OPCODE)).toBe(95);
    expect(MAILBOX_IN_OFFSET).toBe(0x40);
    // A second channel (another driver context) continues the token sequence: never a repeat the device would ignore.
    const second = new CommandChannel(tb.mem, tb.bar, () => serviceCommandDoorbell(tb.fw, tb.bar));
    expect(second.exec(Cmd.ALLOC_PD).out['pdn']).toBe(1);
    expect(tb.cmd.exec(Cmd.ALLOC_PD).out['pdn']).toBe(2);
    second.close();
  });

  it('every command has unique opcode, input and documented failures', () => {
    expect(new Set(COMMANDS.map((c) => c.opcode)).size).toBe(COMMANDS.length);
    for (const c of COMMANDS) expect(c.doc.length, c.name).toBeGreaterThan(10);
  });
});

describe('queries', () => {
  it('QUERY_DEVICE reports the capabilities', () => {
    const out = ok(Cmd.QUERY_DEVICE);
    expect(out['maxQp']).toBe(14);
    expect(out['maxQpRdAtom']).toBe(128);
    expect(out['maxMrSize']).toBe((1n << 64n) - 1n);
    expect(out['physPortCnt']).toBe(1);
    expect(
      Buffer.from(out['fwVer'] as Uint8Array)
        .toString('latin1')
        .replace(/\0+$/, ''),
    ).toBe('1.0.0');
  });

  it('QUERY_PORT: MTU enums and counters; bad port → BAD_PARAM', () => {
    tb.fw.counters.lane(1)[Ctr.QKEY_VIOL_CNTR] = 3;
    const out = ok(Cmd.QUERY_PORT, { portNum: 1 });
    expect(out['activeMtu']).toBe(IBV_MTU_4096);
    expect(out['maxMsgSz']).toBe(0x800000);
    expect(out['qkeyViolCntr']).toBe(3);
    expect(fails(Cmd.QUERY_PORT, { portNum: 2 }, CmdStatus.BAD_PARAM)).toBe('portNum');
    expect(fails(Cmd.QUERY_PORT, { portNum: 0 }, CmdStatus.BAD_PARAM)).toBe('portNum');
  });

  it('QUERY_GID / QUERY_PKEY', () => {
    const g = ok(Cmd.QUERY_GID, { portNum: 1, index: 3 });
    expect(Buffer.from(g['gid'] as Uint8Array).toString('hex')).toBe('00000000000000000000ffffc0000201');
    expect(g['gidType']).toBe(2);
    expect((ok(Cmd.QUERY_GID, { portNum: 1, index: 100 })['gid'] as Uint8Array).every((x) => x === 0)).toBe(true);
    expect(fails(Cmd.QUERY_GID, { portNum: 1, index: 1024 }, CmdStatus.BAD_PARAM)).toBe('index');
    expect(ok(Cmd.QUERY_PKEY, { portNum: 1, index: 0 })['pkey']).toBe(0xffff);
    expect(ok(Cmd.QUERY_PKEY, { portNum: 1, index: 1 })['pkey']).toBe(0);
    expect(fails(Cmd.QUERY_PKEY, { portNum: 1, index: 64 }, CmdStatus.BAD_PARAM)).toBe('index');
  });
});

describe('PDs and MRs', () => {
  it('ALLOC_PD until the table is full; DEALLOC_PD', () => {
    const pds = [mkPd(), mkPd(), mkPd(), mkPd()];
    expect(pds).toEqual([1, 2, 3, 4]);
    fails(Cmd.ALLOC_PD, {}, CmdStatus.NO_RESOURCES);
    ok(Cmd.DEALLOC_PD, { pdn: 2 });
    expect(fails(Cmd.DEALLOC_PD, { pdn: 2 }, CmdStatus.BAD_RESOURCE)).toBe('pdn');
    expect(mkPd()).toBe(2);
  });

  it('REG_MR / DEREG_MR: keys, PD references, stale keys, bad inputs', () => {
    const pdn = mkPd();
    const buf = tb.mem.alloc(4096);
    const mr = ok(Cmd.REG_MR, { pdn, access: IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, hostAddr: buf.addr, length: 4096, iova: buf.addr });
    const key = mr['lkey'] as number;
    expect(mr['rkey']).toBe(key);
    expect(key >>> 8).toBe(1);
    expect(tb.fw.tables.mrByKey(key)).toBeGreaterThan(0);
    expect(MPT.f.pdn.get(tb.fw.tables.dv, tb.fw.tables.mrByKey(key))).toBe(pdn);
    expect(fails(Cmd.DEALLOC_PD, { pdn }, CmdStatus.BUSY)).toBe('pdn');

    const base = { pdn, access: IBV_ACCESS_LOCAL_WRITE, hostAddr: buf.addr, length: 4096, iova: buf.addr };
    expect(fails(Cmd.REG_MR, { ...base, pdn: 3 }, CmdStatus.BAD_RESOURCE)).toBe('pdn');
    expect(fails(Cmd.REG_MR, { ...base, access: IBV_ACCESS_REMOTE_WRITE }, CmdStatus.BAD_PARAM)).toBe('access');
    // MW_BIND is supported (memory windows); on-demand paging is not.
    expect(fails(Cmd.REG_MR, { ...base, access: IBV_ACCESS_ON_DEMAND }, CmdStatus.BAD_PARAM)).toBe('access');
    expect(fails(Cmd.REG_MR, { ...base, length: 0 }, CmdStatus.BAD_PARAM)).toBe('length');
    expect(fails(Cmd.REG_MR, { ...base, hostAddr: 0x1000 }, CmdStatus.BAD_PARAM)).toBe('hostAddr');
    expect(fails(Cmd.REG_MR, { ...base, length: 8 << 20 }, CmdStatus.BAD_PARAM)).toBe('hostAddr');
    expect(fails(Cmd.REG_MR, { ...base, iova: 2n ** 60n }, CmdStatus.BAD_PARAM)).toBe('iova');
    expect(syndromeField(REG_MR_IN, 0)).toBe('');

    ok(Cmd.DEREG_MR, { key });
    expect(tb.fw.tables.mrByKey(key)).toBe(-1);
    expect(fails(Cmd.DEREG_MR, { key }, CmdStatus.BAD_RESOURCE)).toBe('key');
    // Fill the table: 16 MRs; the index of the first one comes back last (FIFO), with a new variant.
    const keys: number[] = [];
    for (let i = 0; i < 16; i++) keys.push(ok(Cmd.REG_MR, base)['lkey'] as number);
    fails(Cmd.REG_MR, base, CmdStatus.NO_RESOURCES);
    const reused = keys.find((k) => k >>> 8 === 1)!;
    expect(reused).not.toBe(key);
    expect(reused & 0xff).toBe((key & 0xff) + 1);
    expect(fails(Cmd.DEREG_MR, { key }, CmdStatus.BAD_RESOURCE)).toBe('key');
  });
});

describe('EQs, CQs, SRQs', () => {
  it('CREATE_EQ / CREATE_CQ / DESTROY_* with references', () => {
    const eqn = mkEq();
    fails(Cmd.CREATE_EQ, { ringAddr: ring(32 * 16), logSize: 4, intVector: 8 }, CmdStatus.BAD_PARAM);
    expect(fails(Cmd.CREATE_EQ, { ringAddr: ring(32 * 16), logSize: 0, intVector: 0 }, CmdStatus.BAD_PARAM)).toBe('logSize');
    expect(fails(Cmd.CREATE_EQ, { ringAddr: 0x1000, logSize: 4, intVector: 0 }, CmdStatus.BAD_PARAM)).toBe('ringAddr');
    const cqn = mkCq(eqn);
    expect(CQC.f.eqn.get(tb.fw.tables.dv, tb.fw.tables.cqByNumber(cqn))).toBe(eqn);
    const cqIn = { ringAddr: ring(64 * 16), dbrecAddr: ring(8, 8), eqn, logSize: 4 };
    expect(fails(Cmd.CREATE_CQ, { ...cqIn, eqn: 3 }, CmdStatus.BAD_RESOURCE)).toBe('eqn');
    expect(fails(Cmd.CREATE_CQ, { ...cqIn, logSize: 9 }, CmdStatus.BAD_PARAM)).toBe('logSize');
    expect(fails(Cmd.CREATE_CQ, { ...cqIn, ringAddr: cqIn.ringAddr + 8 }, CmdStatus.BAD_PARAM)).toBe('ringAddr');
    expect(fails(Cmd.CREATE_CQ, { ...cqIn, dbrecAddr: cqIn.dbrecAddr + 4 }, CmdStatus.BAD_PARAM)).toBe('dbrecAddr');
    expect(fails(Cmd.DESTROY_EQ, { eqn }, CmdStatus.BUSY)).toBe('eqn');
    expect(fails(Cmd.DESTROY_CQ, { cqn: 7 }, CmdStatus.BAD_RESOURCE)).toBe('cqn');
    ok(Cmd.DESTROY_CQ, { cqn });
    ok(Cmd.DESTROY_EQ, { eqn });
    fails(Cmd.DESTROY_EQ, { eqn }, CmdStatus.BAD_RESOURCE);
  });

  it('CREATE_SRQ / MODIFY_SRQ / QUERY_SRQ / DESTROY_SRQ', () => {
    const pdn = mkPd();
    const stride = recvWqeStride(2);
    const srqIn = { pdn, limit: 4, ringAddr: ring(32 * stride), dbrecAddr: ring(8, 8), logSize: 5, logStride: log2(stride), maxSge: 2 };
    const srqn = ok(Cmd.CREATE_SRQ, srqIn)['srqn'] as number;
    expect(ok(Cmd.QUERY_SRQ, { srqn })).toEqual({ maxWr: 32, maxSge: 2, limit: 4 });
    expect(fails(Cmd.CREATE_SRQ, { ...srqIn, pdn: 4 }, CmdStatus.BAD_RESOURCE)).toBe('pdn');
    expect(fails(Cmd.CREATE_SRQ, { ...srqIn, maxSge: 28 }, CmdStatus.BAD_PARAM)).toBe('maxSge');
    expect(fails(Cmd.CREATE_SRQ, { ...srqIn, logStride: 4 }, CmdStatus.BAD_PARAM)).toBe('logStride');
    expect(fails(Cmd.CREATE_SRQ, { ...srqIn, limit: 33 }, CmdStatus.BAD_PARAM)).toBe('limit');
    expect(fails(Cmd.CREATE_SRQ, { ...srqIn, logSize: 7 }, CmdStatus.BAD_PARAM)).toBe('logSize');
    ok(Cmd.MODIFY_SRQ, { srqn, attrMask: IBV_SRQ_LIMIT, limit: 0 });
    expect(ok(Cmd.QUERY_SRQ, { srqn })['limit']).toBe(0);
    ok(Cmd.MODIFY_SRQ, { srqn, attrMask: IBV_SRQ_LIMIT, limit: 8 });
    expect(ok(Cmd.QUERY_SRQ, { srqn })['limit']).toBe(8);
    expect(fails(Cmd.MODIFY_SRQ, { srqn, attrMask: IBV_SRQ_MAX_WR, maxWr: 64 }, CmdStatus.BAD_PARAM)).toBe('attrMask');
    expect(fails(Cmd.MODIFY_SRQ, { srqn, attrMask: IBV_SRQ_LIMIT, limit: 64 }, CmdStatus.BAD_PARAM)).toBe('limit');
    expect(fails(Cmd.MODIFY_SRQ, { srqn: 3, attrMask: IBV_SRQ_LIMIT }, CmdStatus.BAD_RESOURCE)).toBe('srqn');
    // A QP on the SRQ pins it.
    const eqn = mkEq();
    const cqn = mkCq(eqn);
    expect(fails(Cmd.CREATE_QP, qpInput(pdn, cqn, { flags: 2, srqn }), CmdStatus.BAD_PARAM)).toBe('rqRingAddr');
    const qpn = ok(Cmd.CREATE_QP, qpInput(pdn, cqn, { flags: 2, srqn, rqRingAddr: 0 }))['qpn'] as number;
    expect(fails(Cmd.DESTROY_SRQ, { srqn }, CmdStatus.BUSY)).toBe('srqn');
    ok(Cmd.DESTROY_QP, { qpn });
    ok(Cmd.DESTROY_SRQ, { srqn });
    ok(Cmd.DEALLOC_PD, { pdn });
  });
});

describe('QPs', () => {
  it('CREATE_QP: good and bad inputs; QPNs start at 2; the CQ is pinned', () => {
    const { pdn, cqn, qpn } = mkQp();
    expect(qpn).toBe(2);
    const t = tb.fw.tables;
    const qp = t.qpByNumber(qpn);
    expect(t.qpState(qp)).toBe(IBV_QPS_RESET);
    expect(QPC.f.pathMtu.get(t.dv, qp)).toBe(IBV_MTU_256);
    const good = qpInput(pdn, cqn);
    expect(fails(Cmd.CREATE_QP, { ...good, qpType: IBV_QPT_RAW_PACKET }, CmdStatus.BAD_PARAM)).toBe('qpType');
    expect(fails(Cmd.CREATE_QP, { ...good, flags: 4 }, CmdStatus.BAD_PARAM)).toBe('flags');
    expect(fails(Cmd.CREATE_QP, { ...good, pdn: 4 }, CmdStatus.BAD_RESOURCE)).toBe('pdn');
    expect(fails(Cmd.CREATE_QP, { ...good, sendCqn: 5 }, CmdStatus.BAD_RESOURCE)).toBe('sendCqn');
    expect(fails(Cmd.CREATE_QP, { ...good, recvCqn: 0 }, CmdStatus.BAD_RESOURCE)).toBe('recvCqn');
    expect(fails(Cmd.CREATE_QP, { ...good, flags: 2, srqn: 1, rqRingAddr: 0 }, CmdStatus.BAD_RESOURCE)).toBe('srqn');
    expect(fails(Cmd.CREATE_QP, { ...good, sqLogStride: 6 }, CmdStatus.BAD_PARAM)).toBe('sqLogStride');
    expect(fails(Cmd.CREATE_QP, { ...good, maxSendSge: 33 }, CmdStatus.BAD_PARAM)).toBe('maxSendSge');
    expect(fails(Cmd.CREATE_QP, { ...good, maxInlineData: 401 }, CmdStatus.BAD_PARAM)).toBe('maxInlineData');
    expect(fails(Cmd.CREATE_QP, { ...good, sqLogSize: 9 }, CmdStatus.BAD_PARAM)).toBe('sqLogSize');
    expect(fails(Cmd.CREATE_QP, { ...good, sqRingAddr: tb.mem.endNum - 64 }, CmdStatus.BAD_PARAM)).toBe('sqRingAddr');
    expect(fails(Cmd.CREATE_QP, { ...good, dbrecAddr: 8 }, CmdStatus.BAD_PARAM)).toBe('dbrecAddr');
    expect(fails(Cmd.DESTROY_CQ, { cqn }, CmdStatus.BUSY)).toBe('cqn');
    // A UD QP with no send ring needs no stride.
    const ud = ok(Cmd.CREATE_QP, { ...qpInput(pdn, cqn), qpType: IBV_QPT_UD, sqRingAddr: 0, sqLogStride: 0 })['qpn'];
    expect(ud).toBe(3);
    expect(sendWqeStride(IBV_QPT_UD, 1, 0)).toBe(128);
  });

  it('MODIFY_QP: RESET → INIT → RTR → RTS, visible in the context and in QUERY_QP', () => {
    const { qpn } = mkQp();
    const t = tb.fw.tables;
    const qp = t.qpByNumber(qpn);
    const seq0 = QPC.f.modifySeq.get(t.dv, qp);
    toRts(qpn);
    expect(t.qpState(qp)).toBe(IBV_QPS_RTS);
    expect(QPC.f.modifySeq.get(t.dv, qp)).toBe(seq0 + 3);
    expect(QPC.f.timeout.get(t.dv, qp)).toBe(14);
    expect(QPC.f.rqPsn.get(t.dv, qp)).toBe(0xabcdef);
    expect(QPC.f.avHopLimit.get(t.dv, qp)).toBe(64);
    expect(Array.from(QPC.f.avDmac.get(t.dv, qp))).toEqual([2, 0, 0, 0, 0, 2]);
    const q = ok(Cmd.QUERY_QP, { qpn });
    expect(q).toMatchObject({
      qpState: IBV_QPS_RTS,
      pathMtu: IBV_MTU_1024,
      destQpNum: 0x123,
      sqPsn: 0x10,
      rqPsn: 0xabcdef,
      timeout: 14,
      retryCnt: 7,
      rnrRetry: 7,
      minRnrTimer: 12,
      maxRdAtomic: 16,
      maxDestRdAtomic: 16,
      qpAccessFlags: IBV_ACCESS_REMOTE_WRITE,
      capMaxSendWr: 16,
      capMaxRecvSge: 2,
      ahSgidIndex: 1,
      qpType: IBV_QPT_RC,
    });
    // RTS → RTS with an optional attribute.
    ok(Cmd.MODIFY_QP, { qpn, attrMask: IBV_QP_MIN_RNR_TIMER, minRnrTimer: 3 });
    expect(QPC.f.minRnrTimer.get(t.dv, qp)).toBe(3);
  });

  it('MODIFY_QP rejects wrong transitions, masks and ranges without changing anything', () => {
    const { qpn } = mkQp();
    expect(fails(Cmd.MODIFY_QP, { qpn: 9, ...TO_INIT }, CmdStatus.BAD_RESOURCE)).toBe('qpn');
    expect(fails(Cmd.MODIFY_QP, { qpn, ...TO_RTR }, CmdStatus.BAD_STATE)).toBe('attrMask');
    expect(fails(Cmd.MODIFY_QP, { qpn, ...TO_INIT, attrMask: IBV_QP_STATE | IBV_QP_PORT }, CmdStatus.BAD_PARAM)).toBe('attrMask');
    expect(fails(Cmd.MODIFY_QP, { qpn, ...TO_INIT, attrMask: TO_INIT.attrMask | IBV_QP_QKEY }, CmdStatus.BAD_PARAM)).toBe('attrMask');
    expect(fails(Cmd.MODIFY_QP, { qpn, ...TO_INIT, attrMask: TO_INIT.attrMask | (1 << 30) }, CmdStatus.BAD_PARAM)).toBe('attrMask');
    expect(fails(Cmd.MODIFY_QP, { qpn, ...TO_INIT, portNum: 2 }, CmdStatus.BAD_PARAM)).toBe('portNum');
    expect(fails(Cmd.MODIFY_QP, { qpn, ...TO_INIT, pkeyIndex: 64 }, CmdStatus.BAD_PARAM)).toBe('pkeyIndex');
    expect(fails(Cmd.MODIFY_QP, { qpn, ...TO_INIT, qpAccessFlags: IBV_ACCESS_MW_BIND }, CmdStatus.BAD_PARAM)).toBe('qpAccessFlags');
    expect(fails(Cmd.MODIFY_QP, { qpn, ...TO_INIT, qpState: 9 }, CmdStatus.BAD_PARAM)).toBe('qpState');
    ok(Cmd.MODIFY_QP, { qpn, ...TO_INIT });
    expect(fails(Cmd.MODIFY_QP, { qpn, ...TO_RTR, pathMtu: 6 }, CmdStatus.BAD_PARAM)).toBe('pathMtu');
    expect(fails(Cmd.MODIFY_QP, { qpn, ...TO_RTR, pathMtu: 0 }, CmdStatus.BAD_PARAM)).toBe('pathMtu');
    expect(fails(Cmd.MODIFY_QP, { qpn, ...TO_RTR, maxDestRdAtomic: 129 }, CmdStatus.BAD_PARAM)).toBe('maxDestRdAtomic');
    expect(fails(Cmd.MODIFY_QP, { qpn, ...TO_RTR, minRnrTimer: 32 }, CmdStatus.BAD_PARAM)).toBe('minRnrTimer');
    expect(fails(Cmd.MODIFY_QP, { qpn, ...TO_RTR, ahIsGlobal: 0 }, CmdStatus.BAD_PARAM)).toBe('ahIsGlobal');
    expect(fails(Cmd.MODIFY_QP, { qpn, ...TO_RTR, ahSgidIndex: 4 }, CmdStatus.BAD_PARAM)).toBe('ahSgidIndex');
    expect(fails(Cmd.MODIFY_QP, { qpn, ...TO_RTR, ahPortNum: 3 }, CmdStatus.BAD_PARAM)).toBe('ahPortNum');
    expect(fails(Cmd.MODIFY_QP, { qpn, ...TO_RTR, ahStaticRate: 99 }, CmdStatus.BAD_PARAM)).toBe('ahStaticRate');
    expect(fails(Cmd.MODIFY_QP, { qpn, ...TO_RTR, attrMask: RTR_MASK & ~IBV_QP_DEST_QPN }, CmdStatus.BAD_PARAM)).toBe('attrMask');
    ok(Cmd.MODIFY_QP, { qpn, ...TO_RTR });
    expect(fails(Cmd.MODIFY_QP, { qpn, ...TO_RTS, timeout: 32 }, CmdStatus.BAD_PARAM)).toBe('timeout');
    expect(fails(Cmd.MODIFY_QP, { qpn, ...TO_RTS, retryCnt: 8 }, CmdStatus.BAD_PARAM)).toBe('retryCnt');
    expect(fails(Cmd.MODIFY_QP, { qpn, ...TO_RTS, rnrRetry: 8 }, CmdStatus.BAD_PARAM)).toBe('rnrRetry');
    expect(fails(Cmd.MODIFY_QP, { qpn, ...TO_RTS, maxRdAtomic: 200 }, CmdStatus.BAD_PARAM)).toBe('maxRdAtomic');
    expect(fails(Cmd.MODIFY_QP, { qpn, ...TO_RTS, attrMask: RTS_MASK | IBV_QP_CAP }, CmdStatus.BAD_PARAM)).toBe('attrMask');
    expect(fails(Cmd.MODIFY_QP, { qpn, ...TO_RTS, attrMask: RTS_MASK | IBV_QP_CUR_STATE, curQpState: IBV_QPS_INIT }, CmdStatus.BAD_STATE)).toBe('curQpState');
    ok(Cmd.MODIFY_QP, { qpn, ...TO_RTS, attrMask: RTS_MASK | IBV_QP_CUR_STATE, curQpState: IBV_QPS_RTR });
    expect(fails(Cmd.MODIFY_QP, { qpn, ...TO_INIT }, CmdStatus.BAD_STATE)).toBe('attrMask');
  });

  it('ERR and RESET are flagged for the pipeline; RESET restores defaults; DESTROY_QP releases', () => {
    const { qpn, cqn, pdn, eqn } = mkQp();
    toRts(qpn);
    const t = tb.fw.tables;
    const qp = t.qpByNumber(qpn);
    QPC.f.sqConsumed.set(t.dv, qp, 5);
    ok(Cmd.MODIFY_QP, { qpn, attrMask: IBV_QP_STATE, qpState: IBV_QPS_ERR });
    expect(t.qpState(qp)).toBe(IBV_QPS_ERR);
    expect(t.qpFlags(qp) & QpFlag.FLUSH_PENDING).toBeTruthy();
    t.qpClearFlags(qp, QpFlag.FLUSH_PENDING); // the pipeline flushed
    expect(t.qpSetError(qp)).toBe(false); // already in ERR
    ok(Cmd.MODIFY_QP, { qpn, attrMask: IBV_QP_STATE, qpState: IBV_QPS_RESET });
    expect(t.qpState(qp)).toBe(IBV_QPS_RESET);
    expect(t.qpFlags(qp) & QpFlag.RESET_PENDING).toBeTruthy();
    expect(QPC.f.sqConsumed.get(t.dv, qp)).toBe(0);
    expect(QPC.f.timeout.get(t.dv, qp)).toBe(0);
    expect(QPC.f.pathMtu.get(t.dv, qp)).toBe(IBV_MTU_256);
    expect(QPC.f.avHopLimit.get(t.dv, qp)).toBe(0);
    expect(QPC.f.sendCqn.get(t.dv, qp)).toBe(cqn); // creation attributes stay
    // The pipeline's own error path.
    toRts(qpn);
    expect(t.qpSetError(qp)).toBe(true);
    expect(t.qpState(qp)).toBe(IBV_QPS_ERR);
    const seq = QPC.f.modifySeq.get(t.dv, qp);
    ok(Cmd.DESTROY_QP, { qpn });
    expect(t.qpByNumber(qpn)).toBe(-1);
    expect(QPC.f.modifySeq.get(t.dv, qp)).toBe(seq + 1);
    fails(Cmd.DESTROY_QP, { qpn }, CmdStatus.BAD_RESOURCE);
    fails(Cmd.QUERY_QP, { qpn }, CmdStatus.BAD_RESOURCE);
    ok(Cmd.DESTROY_CQ, { cqn });
    ok(Cmd.DESTROY_EQ, { eqn });
    ok(Cmd.DEALLOC_PD, { pdn });
    // QPNs are reused least-recently-freed first.
    const again = mkQp();
    expect(again.qpn).toBe(3);
  });
});

describe('memory windows (ALLOC_MW / DEALLOC_MW, and the MR side of binds)', () => {
  beforeEach(() => {
    tb = createTestbed({ config: { device: { ...SMALL_DEVICE.device, maxMw: 2 } }, memBytes: 4 << 20 });
  });

  it('two windows of the PD, then NO_RESOURCES; bad type BAD_PARAM; DEALLOC twice BAD_RESOURCE; the PD is pinned', () => {
    const pdn = ok(Cmd.ALLOC_PD)['pdn'] as number;
    expect(fails(Cmd.ALLOC_MW, { pdn, type: 3 }, CmdStatus.BAD_PARAM)).toBe('type');
    expect(fails(Cmd.ALLOC_MW, { pdn: 3, type: IBV_MW_TYPE_1 }, CmdStatus.BAD_RESOURCE)).toBe('pdn');
    const k1 = ok(Cmd.ALLOC_MW, { pdn, type: IBV_MW_TYPE_1 })['rkey'] as number;
    const k2 = ok(Cmd.ALLOC_MW, { pdn, type: IBV_MW_TYPE_2 })['rkey'] as number;
    fails(Cmd.ALLOC_MW, { pdn, type: IBV_MW_TYPE_2 }, CmdStatus.NO_RESOURCES);
    const t = tb.fw.tables;
    expect([mwByKey(t, k1) > 0, mwByKey(t, k2) > 0, t.mrByKey(k1), t.mrByLkey(k2)]).toEqual([true, true, -1, -1]);
    expect(MPT.f.mwState.get(t.dv, mwByKey(t, k1))).toBe(MwState.VALID);
    expect(MPT.f.mwState.get(t.dv, mwByKey(t, k2))).toBe(MwState.FREE);
    fails(Cmd.DEALLOC_PD, { pdn }, CmdStatus.BUSY);
    expect(fails(Cmd.DEREG_MR, { key: k1 }, CmdStatus.BAD_RESOURCE), 'a window key is not an MR').toBe('key');
    ok(Cmd.DEALLOC_MW, { key: k1 });
    expect(fails(Cmd.DEALLOC_MW, { key: k1 }, CmdStatus.BAD_RESOURCE)).toBe('key');
    ok(Cmd.DEALLOC_MW, { key: k2 });
    ok(Cmd.DEALLOC_PD, { pdn });
  });

  it('a bound window pins its MR: DEREG_MR and REREG_MR are BUSY until it is unbound or freed', () => {
    const pdn = ok(Cmd.ALLOC_PD)['pdn'] as number;
    const buf = tb.mem.alloc(4096, 64);
    const lkey = ok(Cmd.REG_MR, { pdn, access: IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND, hostAddr: buf.addr, length: 4096, iova: buf.addr })[
      'lkey'
    ] as number;
    const key = ok(Cmd.ALLOC_MW, { pdn, type: IBV_MW_TYPE_1 })['rkey'] as number;
    const t = tb.fw.tables;
    const bind = { mwKey: key, newKey: key + 1, mrLkey: lkey, addr: Number(buf.addr) + 64, length: 128, access: IBV_ACCESS_REMOTE_WRITE };
    expect(mwBind(t, bind, 2, pdn)).toBe(MwFault.OK);
    expect(t.mrByRkey(key), 'the old key byte').toBe(-1);
    const win = t.mrByRkey(key + 1);
    expect(MPT.f.length.get(t.dv, win)).toBe(128n);
    expect(MPT.f.mwCount.get(t.dv, t.mrByLkey(lkey))).toBe(1);
    fails(Cmd.DEREG_MR, { key: lkey }, CmdStatus.BUSY);
    fails(Cmd.REREG_MR, { key: lkey, flags: 4, access: IBV_ACCESS_LOCAL_WRITE }, CmdStatus.BUSY);
    // Type 1 windows are not invalidated; a zero-length bind unbinds.
    expect(mwInvalidate(t, key + 1, 2, pdn, false)).toBe(MwFault.TYPE_1_INVALIDATE);
    expect(mwBind(t, { ...bind, mwKey: key + 1, newKey: key + 2, length: 0 }, 2, pdn)).toBe(MwFault.OK);
    expect(MPT.f.mwCount.get(t.dv, t.mrByLkey(lkey))).toBe(0);
    expect(mwBind(t, { ...bind, newKey: key + 3 }, 2, pdn)).toBe(MwFault.OK);
    ok(Cmd.DEALLOC_MW, { key: key + 3 });
    ok(Cmd.DEREG_MR, { key: lkey });
  });
});
