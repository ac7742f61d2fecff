/**
 * XRC send and receive QPs end to end, porting the intent of rdma-core's
 * tests/test_xrc.py: several XRC send QPs, each connected to an XRC
 * receive QP of one domain, send to several XRC SRQs of that domain by
 * naming them in the XRCETH; every SRQ's CQ gets its messages with
 * wc.qp_num = the receive QP and wc.src_qp = the send QP. RDMA WRITE, READ
 * and atomics over XRC check their rkeys against the SRQ's PD. The error
 * paths: an SRQ number that is no SRQ, an SRQ of another domain (the
 * requester completes with REM_INV_REQ_ERR, the receive QP goes to ERR), a
 * destroyed receive QP (retries exhausted), posts that XRC QPs do not take,
 * ibv_open_qp and the shared lifetime of a receive QP.
 */
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  errno,
  O_CREAT,
  IBV_XRCD_INIT_ATTR_OFLAGS,
  IBV_XRCD_INIT_ATTR_FD,
  IBV_QP_CUR_STATE,
  IBV_QP_INIT_ATTR_PD,
  IBV_QP_INIT_ATTR_XRCD,
  IBV_QP_OPEN_ATTR_CONTEXT,
  IBV_QP_OPEN_ATTR_NUM,
  IBV_QP_OPEN_ATTR_TYPE,
  IBV_QP_OPEN_ATTR_XRCD,
  IBV_QP_EX_WITH_SEND,
  IBV_QP_EX_WITH_SEND_WITH_IMM,
  IBV_QP_EX_WITH_FLUSH,
  IBV_QP_ACCESS_FLAGS,
  IBV_QP_PKEY_INDEX,
  IBV_QP_PORT,
  IBV_QP_QKEY,
  IBV_QP_RETRY_CNT,
  IBV_QP_SQ_PSN,
  IBV_QP_AV,
  IBV_QP_PATH_MTU,
  IBV_QP_DEST_QPN,
  IBV_QP_RQ_PSN,
  IBV_QP_MAX_DEST_RD_ATOMIC,
  IBV_QP_MIN_RNR_TIMER,
  IBV_QP_RNR_RETRY,
  IBV_QP_MAX_QP_RD_ATOMIC,
  IBV_QP_STATE,
  IBV_QP_TIMEOUT,
  IBV_QPS_ERR,
  IBV_QPS_INIT,
  IBV_QPS_RTR,
  IBV_QPS_RTS,
  IBV_QPT_RC,
  IBV_QPT_XRC_RECV,
  IBV_QPT_XRC_SEND,
  IBV_SEND_SIGNALED,
  IBV_WC_COMP_SWAP,
  IBV_WC_FETCH_ADD,
  IBV_WC_RDMA_READ,
  IBV_WC_RDMA_WRITE,
  IBV_WC_RECV,
  IBV_WC_RECV_RDMA_WITH_IMM,
  IBV_WC_REM_ACCESS_ERR,
  IBV_WC_REM_INV_REQ_ERR,
  IBV_WC_RETRY_EXC_ERR,
  IBV_WC_SEND,
  IBV_WC_SUCCESS,
  IBV_WC_WITH_IMM,
  IBV_WR_RDMA_WRITE_WITH_IMM,
  ibv_alloc_pd,
  ibv_close_xrcd,
  ibv_create_qp,
  ibv_create_qp_ex,
  ibv_create_srq,
  ibv_dealloc_pd,
  ibv_destroy_srq,
  ibv_destroy_qp,
  ibv_modify_qp,
  ibv_open_qp,
  ibv_destroy_cq,
  ibv_create_cq,
  ibv_open_xrcd,
  ibv_post_recv,
  ibv_post_send,
  ibv_query_device,
  ibv_query_qp,
  newDeviceAttr,
  IBV_DEVICE_XRC,
  ibv_post_srq_recv,
  ibv_qp_to_qp_ex,
  ibv_wr_complete,
  ibv_wr_send,
  ibv_wr_send_imm,
  ibv_wr_set_sge,
  ibv_wr_set_xrc_srqn,
  ibv_wr_start,
  newQpAttr,
  newQpCap,
} from '../../src/driver/verbs/index.js';
import type { ibv_qp } from '../../src/driver/verbs/index.js';
import * as H from './harness.js';
import { ACCESS, connectXrc, openXrcd, toSrq, xrcRecvQp, xrcSendQp, xrcSrq } from './xrc-setup.js';

// Workers 0: the devices run in this thread; 1: on worker threads (the realtime runtime).
describe.each([0, 1])('XRC QPs (workers %i)', (workers) => {
  let f: H.Fabric;
  beforeAll(async () => {
    f = await H.openFabric(H.twoDeviceConfig(workers));
  });
  afterAll(async () => {
    await f?.close();
  });

  it('the device reports XRC (IBV_DEVICE_XRC in device_cap_flags)', () => {
    const attr = newDeviceAttr();
    expect(ibv_query_device(f.a.ctx, attr)).toBe(0);
    expect(attr.device_cap_flags & IBV_DEVICE_XRC).toBe(IBV_DEVICE_XRC);
  });

  it('two send QPs to three SRQs through two receive QPs: data and every WC field', async () => {
    const xrcd = openXrcd(f.b);
    const cqs = [0, 1, 2].map(() => H.createCq(f.b));
    const srqs = cqs.map((cq) => xrcSrq(f.b, xrcd, cq));
    const recvQps = [xrcRecvQp(f.b, xrcd), xrcRecvQp(f.b, xrcd)];
    const scq = H.createCq(f.a);
    const sendQps = recvQps.map(() => xrcSendQp(f.a, scq));
    sendQps.forEach((s, i) => connectXrc(f.a, s, f.b, recvQps[i]!, { psn: 0x100 + i * 0x1000 }));
    const LEN = 3000; // three packets at MTU 1024: FIRST / MIDDLE / LAST all carry the XRCETH
    const src = H.region(f.a, LEN * 6);
    const dst = H.region(f.b, LEN * 6);
    for (let k = 0; k < 6; k++) src.data.set(H.pattern(LEN, k + 1), k * LEN);
    // Receives: SRQ j gets two buffers (one per send QP).
    srqs.forEach((s, j) => {
      for (let i = 0; i < 2; i++) expect(ibv_post_srq_recv(s.srq, H.recvWr(BigInt(j * 10 + i), [dst.sge((j * 2 + i) * LEN, LEN)]))).toBe(0);
    });
    // Send QP i sends message (i, j) to SRQ j, with immediate i·16 + j.
    for (let i = 0; i < 2; i++) {
      for (let j = 0; j < 3; j++) {
        const k = i * 3 + j;
        H.postSend({ qp: sendQps[i]! } as H.Ep, toSrq(H.wrSend({ wrId: BigInt(k), sge: [src.sge(k * LEN, LEN)], imm: i * 16 + j }), srqs[j]!.num));
      }
    }
    const sends = await H.pollN(scq, 6, 'send completions');
    for (const w of sends) H.expectWc(w, { status: IBV_WC_SUCCESS, opcode: IBV_WC_SEND }, 'XRC send');
    for (let j = 0; j < 3; j++) {
      const wcs = await H.pollN(cqs[j]!, 2, `SRQ ${j} completions`);
      const bySender = new Map(wcs.map((w) => [w.src_qp, w]));
      for (let i = 0; i < 2; i++) {
        const w = bySender.get(sendQps[i]!.qp_num);
        expect(w, `SRQ ${j}: a receive from send QP ${i}`).toBeDefined();
        H.expectWc(
          w!,
          { status: IBV_WC_SUCCESS, opcode: IBV_WC_RECV, byte_len: LEN, qp_num: recvQps[i]!.qp_num, imm_data: i * 16 + j, wc_flags: IBV_WC_WITH_IMM },
          `SRQ ${j} from send QP ${i}`,
        );
        const slot = Number(w!.wr_id) - j * 10;
        H.expectBytes(dst.data.subarray((j * 2 + slot) * LEN, (j * 2 + slot + 1) * LEN), H.pattern(LEN, i * 3 + j + 1), `SRQ ${j} message from send QP ${i}`);
      }
    }
    dst.checkGuards();
    // The SRQ entries came back: each SRQ takes two more receives and more traffic.
    srqs.forEach((s, j) => expect(ibv_post_srq_recv(s.srq, H.recvWr(100n + BigInt(j), [dst.sge(0, LEN)])), `repost on SRQ ${j}`).toBe(0));
  });

  it('RDMA WRITE with immediate, READ and atomics over XRC; the rkey is checked against the PD of the SRQ named', async () => {
    const xrcd = openXrcd(f.b);
    const cq = H.createCq(f.b);
    const otherPd = ibv_alloc_pd(f.b.ctx);
    const srq = xrcSrq(f.b, xrcd, cq);
    const srqOtherPd = xrcSrq(f.b, xrcd, cq, 16, otherPd);
    const recv = xrcRecvQp(f.b, xrcd);
    const scq = H.createCq(f.a);
    const send = xrcSendQp(f.a, scq);
    connectXrc(f.a, send, f.b, recv);
    const ep = { qp: send } as H.Ep;
    const local = H.region(f.a, 4096);
    const remote = H.region(f.b, 4096, ACCESS, { fill: (i) => i * 7 });
    local.data.set(H.pattern(2000, 9));
    expect(ibv_post_srq_recv(srq.srq, H.recvWr(77n, [remote.sge(0, 0)]))).toBe(0);
    H.postSend(
      ep,
      toSrq(
        H.sendWr(IBV_WR_RDMA_WRITE_WITH_IMM, { wrId: 1n, sge: [local.sge(0, 2000)], imm: 0x1234, remote: { addr: remote.at(2048), rkey: remote.rkey } }),
        srq.num,
      ),
    );
    H.expectWc(await H.poll1(scq, 'write'), { wr_id: 1n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_WRITE }, 'XRC WRITE_WITH_IMM');
    H.expectWc(
      await H.poll1(cq, 'write imm receive'),
      { wr_id: 77n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RECV_RDMA_WITH_IMM, byte_len: 2000, imm_data: 0x1234, qp_num: recv.qp_num, src_qp: send.qp_num },
      'XRC WRITE_WITH_IMM receive',
    );
    H.expectBytes(remote.data.subarray(2048, 4048), H.pattern(2000, 9), 'written bytes');
    // READ 1500 bytes back (two response packets).
    H.postSend(ep, toSrq(H.wrRead({ wrId: 2n, sge: [local.sge(2048, 1500)], remote: { addr: remote.at(0), rkey: remote.rkey } }), srq.num));
    H.expectWc(await H.poll1(scq, 'read'), { wr_id: 2n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_READ, byte_len: 1500 }, 'XRC READ');
    H.expectBytes(local.data.subarray(2048, 3548), remote.data.subarray(0, 1500), 'read bytes');
    // Atomics: fetch-add then compare-swap on the 8 bytes at 4088.
    const view = new DataView(remote.data.buffer, remote.data.byteOffset + 4088, 8);
    view.setBigUint64(0, 40n, true);
    H.postSend(ep, toSrq(H.wrFaa({ wrId: 3n, sge: [local.sge(0, 8)], atomic: { addr: remote.at(4088), rkey: remote.rkey, compareAdd: 2n } }), srq.num));
    H.expectWc(await H.poll1(scq, 'faa'), { wr_id: 3n, status: IBV_WC_SUCCESS, opcode: IBV_WC_FETCH_ADD }, 'XRC FETCH_ADD');
    H.postSend(
      ep,
      toSrq(H.wrCas({ wrId: 4n, sge: [local.sge(8, 8)], atomic: { addr: remote.at(4088), rkey: remote.rkey, compareAdd: 42n, swap: 99n } }), srq.num),
    );
    H.expectWc(await H.poll1(scq, 'cas'), { wr_id: 4n, status: IBV_WC_SUCCESS, opcode: IBV_WC_COMP_SWAP }, 'XRC CMP_SWAP');
    const lv = new DataView(local.data.buffer, local.data.byteOffset, 16);
    expect([lv.getBigUint64(0, true), lv.getBigUint64(8, true), view.getBigUint64(0, true)]).toEqual([40n, 42n, 99n]);
    // The same rkey through an SRQ of another PD: a remote access error, the receive QP to ERR.
    H.postSend(ep, toSrq(H.wrRead({ wrId: 5n, sge: [local.sge(0, 64)], remote: { addr: remote.at(0), rkey: remote.rkey } }), srqOtherPd.num));
    H.expectWc(await H.poll1(scq, 'read through another PD'), { wr_id: 5n, status: IBV_WC_REM_ACCESS_ERR }, 'XRC READ, SRQ of another PD');
    H.expectQpState(recv, IBV_QPS_ERR, 'receive QP after the access error');
    H.expectQpState(send, IBV_QPS_ERR, 'send QP after the error completion');
    expect(ibv_destroy_qp(send)).toBe(0);
    expect(ibv_destroy_qp(recv)).toBe(0);
    for (const s of [srq, srqOtherPd]) expect(ibv_destroy_srq(s.srq)).toBe(0);
    expect(ibv_dealloc_pd(otherPd)).toBe(0);
  });

  for (const [name, pick] of [
    ['an SRQ number that is no SRQ', () => 0xabcde],
    ['an XRC SRQ of another domain', 'other'],
    ['a basic SRQ', 'basic'],
  ] as const) {
    it(`a request naming ${name}: REM_INV_REQ_ERR, the receive QP in ERR`, async () => {
      const xrcd = openXrcd(f.b);
      const other = openXrcd(f.b);
      const cq = H.createCq(f.b);
      const foreign = xrcSrq(f.b, other, cq);
      const basic = ibv_create_srq(f.b.pd, { srq_context: null, attr: { max_wr: 4, max_sge: 1, srq_limit: 0 } });
      f.b.cleanup.push(() => void ibv_destroy_srq(basic));
      const recv = xrcRecvQp(f.b, xrcd);
      const scq = H.createCq(f.a);
      const send = xrcSendQp(f.a, scq);
      connectXrc(f.a, send, f.b, recv);
      expect(ibv_post_srq_recv(foreign.srq, H.recvWr(1n, [H.region(f.b, 64).sge()]))).toBe(0);
      const srqn = typeof pick === 'function' ? pick() : pick === 'other' ? foreign.num : basic.handle;
      const src = H.region(f.a, 64);
      H.postSend({ qp: send } as H.Ep, toSrq(H.wrSend({ wrId: 9n, sge: [src.sge()] }), srqn));
      H.expectWc(await H.poll1(scq, 'send'), { wr_id: 9n, status: IBV_WC_REM_INV_REQ_ERR }, `send to ${name}`);
      H.expectQpState(recv, IBV_QPS_ERR, 'receive QP');
      expect(H.pollNow(cq), 'nothing delivered to the foreign SRQ').toEqual([]);
    });
  }

  it('an SRQ with no receive posted: RNR NAK, and the SEND lands once a receive is posted', async () => {
    const xrcd = openXrcd(f.b);
    const cq = H.createCq(f.b);
    const srq = xrcSrq(f.b, xrcd, cq);
    const recv = xrcRecvQp(f.b, xrcd);
    const scq = H.createCq(f.a);
    const send = xrcSendQp(f.a, scq);
    connectXrc(f.a, send, f.b, recv);
    const before = { a: H.counters(f.a), b: H.counters(f.b) };
    const src = H.region(f.a, 256, ACCESS, { fill: (i) => i ^ 0x5a });
    const dst = H.region(f.b, 256);
    H.postSend({ qp: send } as H.Ep, toSrq(H.wrSend({ wrId: 8n, sge: [src.sge()] }), srq.num));
    // rnr_retry 7 retries for ever: nothing completes while the SRQ is empty.
    await H.expectNoCqe(scq, 50, 'the SEND while the SRQ is empty');
    const mid = { a: H.counters(f.a), b: H.counters(f.b) };
    expect(Number(mid.b['send_rnr_err']! - before.b['send_rnr_err']!), 'RNR NAKs sent by the receive side').toBeGreaterThan(0);
    expect(Number(mid.a['rcvd_rnr_err']! - before.a['rcvd_rnr_err']!), 'RNR NAKs seen by the send QP').toBeGreaterThan(0);
    expect(ibv_post_srq_recv(srq.srq, H.recvWr(9n, [dst.sge()]))).toBe(0);
    H.expectWc(await H.poll1(scq, 'the SEND after the receive'), { wr_id: 8n, status: IBV_WC_SUCCESS }, 'send');
    H.expectWc(await H.poll1(cq, 'the receive'), { wr_id: 9n, status: IBV_WC_SUCCESS, byte_len: 256, qp_num: recv.qp_num }, 'receive');
    H.expectBytes(dst.data, src.data, 'received bytes');
  });

  it('a destroyed receive QP: the send QP retries and completes with RETRY_EXC_ERR', async () => {
    const xrcd = openXrcd(f.b);
    const cq = H.createCq(f.b);
    const srq = xrcSrq(f.b, xrcd, cq);
    const recv = xrcRecvQp(f.b, xrcd);
    const scq = H.createCq(f.a);
    const send = xrcSendQp(f.a, scq);
    connectXrc(f.a, send, f.b, recv, { timeout: 8, retryCnt: 1 });
    expect(ibv_destroy_qp(recv)).toBe(0);
    const src = H.region(f.a, 64);
    H.postSend({ qp: send } as H.Ep, toSrq(H.wrSend({ wrId: 3n, sge: [src.sge()] }), srq.num));
    H.expectWc(await H.poll1(scq, 'send to a destroyed QP'), { wr_id: 3n, status: IBV_WC_RETRY_EXC_ERR }, 'send');
    expect(H.pollNow(cq)).toEqual([]);
  });

  it('the new post API: ibv_wr_set_xrc_srqn names the SRQ; a WR without one is EINVAL', async () => {
    const xrcd = openXrcd(f.b);
    const cq = H.createCq(f.b);
    const s1 = xrcSrq(f.b, xrcd, cq);
    const s2 = xrcSrq(f.b, xrcd, cq);
    const recv = xrcRecvQp(f.b, xrcd);
    const scq = H.createCq(f.a);
    const send = xrcSendQp(f.a, scq, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM);
    connectXrc(f.a, send, f.b, recv);
    const dst = H.region(f.b, 256);
    expect(ibv_post_srq_recv(s1.srq, H.recvWr(1n, [dst.sge(0, 128)]))).toBe(0);
    expect(ibv_post_srq_recv(s2.srq, H.recvWr(2n, [dst.sge(128, 128)]))).toBe(0);
    const src = H.region(f.a, 64, ACCESS, { fill: (i) => i + 1 });
    const x = ibv_qp_to_qp_ex(send);
    ibv_wr_start(x);
    x.wr_id = 10n;
    x.wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_send(x);
    ibv_wr_set_xrc_srqn(x, s2.num);
    ibv_wr_set_sge(x, src.lkey, src.addr, 64);
    x.wr_id = 11n;
    ibv_wr_send_imm(x, 0x55);
    ibv_wr_set_xrc_srqn(x, s1.num);
    ibv_wr_set_sge(x, src.lkey, src.addr, 32);
    expect(ibv_wr_complete(x)).toBe(0);
    await H.pollN(scq, 2, 'sends');
    const wcs = await H.pollN(cq, 2, 'receives');
    const byId = new Map(wcs.map((w) => [w.wr_id, w]));
    H.expectWc(byId.get(2n)!, { status: IBV_WC_SUCCESS, byte_len: 64, qp_num: recv.qp_num, src_qp: send.qp_num }, 'to SRQ 2');
    H.expectWc(byId.get(1n)!, { status: IBV_WC_SUCCESS, byte_len: 32, imm_data: 0x55 }, 'to SRQ 1');
    // A legacy WR without qp_type.xrc.remote_srqn is refused at post time.
    const bad = { ...H.wrSend({ wrId: 12n, sge: [src.sge()] }) };
    expect(ibv_post_send(send, bad)).toBe(errno.EINVAL);
  });

  it('what XRC QPs do not take: receives on either, sends on a receive QP, FLUSH builders, a receive QP without a domain', () => {
    const xrcd = openXrcd(f.b);
    const recv = xrcRecvQp(f.b, xrcd);
    const scq = H.createCq(f.b);
    const send = xrcSendQp(f.b, scq);
    const buf = H.region(f.b, 64);
    for (const qp of [send, recv]) {
      const a = newQpAttr();
      a.qp_state = IBV_QPS_INIT;
      a.pkey_index = 0;
      a.port_num = H.PORT;
      a.qp_access_flags = ACCESS;
      H.modifyOk(qp, a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 'INIT');
      expect(ibv_post_recv(qp, H.recvWr(1n, [buf.sge()])), `post_recv on QP type ${qp.qp_type}`).toBe(errno.EINVAL);
    }
    expect(ibv_post_send(recv, toSrq(H.wrSend({ sge: [buf.sge()] }), 1))).toBe(errno.EINVAL);
    // The kernel's table: an XRC QP takes no Q_Key, and IBV_QP_CUR_STATE only from RTR on.
    const q = newQpAttr();
    q.qp_state = IBV_QPS_INIT;
    q.qkey = 1;
    expect(ibv_modify_qp(recv, q, IBV_QP_STATE | IBV_QP_QKEY)).toBe(errno.EINVAL);
    q.cur_qp_state = IBV_QPS_INIT;
    expect(ibv_modify_qp(send, q, IBV_QP_STATE | IBV_QP_CUR_STATE)).toBe(errno.EINVAL);
    // Creation: FLUSH has no XRC opcode; a receive QP needs its domain and not ibv_create_qp.
    expect(() => xrcSendQp(f.b, scq, IBV_QP_EX_WITH_FLUSH)).toThrow(expect.objectContaining({ code: 'EOPNOTSUPP' }));
    const init = { qp_type: IBV_QPT_XRC_RECV, send_cq: null, recv_cq: null, cap: newQpCap(), sq_sig_all: 0 };
    expect(() => ibv_create_qp_ex(f.b.ctx, { ...init, comp_mask: IBV_QP_INIT_ATTR_PD, pd: f.b.pd })).toThrow(expect.objectContaining({ code: 'EINVAL' }));
    expect(() => ibv_create_qp_ex(f.b.ctx, { ...init, comp_mask: IBV_QP_INIT_ATTR_XRCD, xrcd: null })).toThrow(expect.objectContaining({ code: 'EINVAL' }));
    expect(() => ibv_create_qp(f.b.pd, init)).toThrow(expect.objectContaining({ code: 'EINVAL' }));
    const otherCtxXrcd = openXrcd(f.a);
    expect(() => ibv_create_qp_ex(f.b.ctx, { ...init, comp_mask: IBV_QP_INIT_ATTR_XRCD, xrcd: otherCtxXrcd })).toThrow(
      expect.objectContaining({ code: 'EINVAL' }),
    );
    // An XRC SRQ takes no RC QP (the kernel's uverbs create_qp: EINVAL).
    const xsrq = xrcSrq(f.b, xrcd, scq);
    const rcCap = newQpCap();
    rcCap.max_send_wr = 4;
    expect(() => ibv_create_qp(f.b.pd, { qp_type: IBV_QPT_RC, send_cq: scq, recv_cq: scq, srq: xsrq.srq, cap: rcCap, sq_sig_all: 0 })).toThrow(
      expect.objectContaining({ code: 'EINVAL' }),
    );
    // An XRC send QP made by the classic verb, its receive side ignored as the kernel ignores it.
    const cap = newQpCap();
    cap.max_send_wr = 4;
    cap.max_recv_wr = 16;
    const legacy = ibv_create_qp(f.b.pd, { qp_type: IBV_QPT_XRC_SEND, send_cq: scq, recv_cq: scq, cap, sq_sig_all: 0 });
    expect([legacy.qp_type, cap.max_recv_wr, legacy.recv_cq]).toEqual([IBV_QPT_XRC_SEND, 0, null]);
    expect(ibv_destroy_qp(legacy)).toBe(0);
    expect(recv.pd).toBeNull();
    // ibv_query_qp of a receive QP: its type, no queues, no CQs.
    const attr = newQpAttr();
    const qinit = { send_cq: null, recv_cq: null, cap: newQpCap(), qp_type: 0, sq_sig_all: 0 };
    expect(ibv_query_qp(recv, attr, IBV_QP_STATE, qinit)).toBe(0);
    expect([qinit.qp_type, attr.qp_state, qinit.send_cq, qinit.recv_cq, attr.cap.max_send_wr, attr.cap.max_recv_wr]).toEqual([
      IBV_QPT_XRC_RECV,
      IBV_QPS_INIT,
      null,
      null,
      0,
      0,
    ]);
  });

  it('ibv_open_qp: handles on one receive QP; it lives until the last goes, and the domain stays busy until then', async () => {
    const xrcd = openXrcd(f.b);
    const cq = H.createCq(f.b);
    const srq = xrcSrq(f.b, xrcd, cq);
    const created = ibv_create_qp_ex(f.b.ctx, {
      comp_mask: IBV_QP_INIT_ATTR_XRCD,
      xrcd,
      qp_type: IBV_QPT_XRC_RECV,
      send_cq: null,
      recv_cq: null,
      cap: newQpCap(),
      sq_sig_all: 0,
    });
    const MASK = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;
    const open = (o: Partial<Parameters<typeof ibv_open_qp>[1]> = {}): ibv_qp =>
      ibv_open_qp(f.b.ctx, { comp_mask: MASK, qp_num: created.qp_num, xrcd, qp_type: IBV_QPT_XRC_RECV, ...o });
    const opened = open({ comp_mask: MASK | IBV_QP_OPEN_ATTR_CONTEXT, qp_context: 'mine' });
    expect([opened.qp_num, opened.qp_type, opened.qp_context]).toEqual([created.qp_num, IBV_QPT_XRC_RECV, 'mine']);
    // The errors: the kernel's EINVAL for everything but unknown mask bits.
    const other = openXrcd(f.b);
    const rc = H.createQp(f.b, IBV_QPT_RC);
    for (const [what, o, code] of [
      ['another domain', { xrcd: other }, 'EINVAL'],
      ['no such QP', { qp_num: 0xfffff }, 'EINVAL'],
      ['an RC QP', { qp_num: rc.qp.qp_num }, 'EINVAL'],
      ['qp_type XRC_SEND', { qp_type: IBV_QPT_XRC_SEND }, 'EINVAL'],
      ['a mask without TYPE', { comp_mask: IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD }, 'EINVAL'],
      ['unknown mask bits', { comp_mask: MASK | 0x20 }, 'EOPNOTSUPP'],
      ['no xrcd', { xrcd: null }, 'EINVAL'],
    ] as const) {
      expect(() => open(o as never), what).toThrow(expect.objectContaining({ code }));
    }
    // The creator's handle goes; the opened one still receives.
    expect(ibv_destroy_qp(created)).toBe(0);
    expect(ibv_destroy_qp(created)).toBe(errno.EINVAL);
    const scq = H.createCq(f.a);
    const send = xrcSendQp(f.a, scq);
    connectXrc(f.a, send, f.b, opened);
    const dst = H.region(f.b, 64);
    expect(ibv_post_srq_recv(srq.srq, H.recvWr(5n, [dst.sge()]))).toBe(0);
    const src = H.region(f.a, 64, ACCESS, { fill: (i) => 255 - i });
    H.postSend({ qp: send } as H.Ep, toSrq(H.wrSend({ wrId: 6n, sge: [src.sge()] }), srq.num));
    H.expectWc(await H.poll1(scq, 'send'), { status: IBV_WC_SUCCESS }, 'send through the opened handle');
    H.expectWc(await H.poll1(cq, 'recv'), { wr_id: 5n, status: IBV_WC_SUCCESS, qp_num: opened.qp_num }, 'receive');
    H.expectBytes(dst.data, src.data, 'received bytes');
    // A second open, then both go: the QP number is gone and the domain can close.
    const again = open({ qp_num: opened.qp_num });
    expect(ibv_destroy_qp(opened)).toBe(0);
    expect(ibv_destroy_srq(srq.srq)).toBe(0);
    expect(ibv_close_xrcd(xrcd), 'the domain is busy while a handle holds its receive QP').toBe(errno.EBUSY);
    expect(ibv_destroy_qp(again)).toBe(0);
    expect(() => open({ qp_num: again.qp_num }), 'the QP is gone with its last handle').toThrow(expect.objectContaining({ code: 'EINVAL' }));
    expect(ibv_close_xrcd(xrcd)).toBe(0);
  });

  it("each transition's required attributes, as the kernel's qp_state_table XRC_INI / XRC_TGT columns list them: one missing is EINVAL", () => {
    const xrcd = openXrcd(f.b);
    const scq = H.createCq(f.b);
    // The kernel's required masks (drivers/infiniband/core/verbs.c), typed here, not read from src/.
    const INIT = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
    const RTR_INI = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    const RTR_TGT = RTR_INI | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    const RTS_INI = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
    const RTS_TGT = IBV_QP_TIMEOUT | IBV_QP_SQ_PSN;
    const attr = () => {
      const a = newQpAttr();
      a.pkey_index = 0;
      a.port_num = H.PORT;
      a.qp_access_flags = ACCESS;
      a.path_mtu = 3;
      a.dest_qp_num = 0x1234;
      a.rq_psn = 1;
      a.sq_psn = 1;
      a.ah_attr = H.avTo(f.b, f.a);
      a.max_dest_rd_atomic = 4;
      a.min_rnr_timer = 1;
      a.timeout = 14;
      a.retry_cnt = 7;
      a.rnr_retry = 7;
      a.max_rd_atomic = 4;
      return a;
    };
    for (const [qp, steps] of [
      [
        xrcSendQp(f.b, scq),
        [
          [IBV_QPS_INIT, INIT],
          [IBV_QPS_RTR, RTR_INI],
          [IBV_QPS_RTS, RTS_INI],
        ],
      ],
      [
        xrcRecvQp(f.b, xrcd),
        [
          [IBV_QPS_INIT, INIT],
          [IBV_QPS_RTR, RTR_TGT],
          [IBV_QPS_RTS, RTS_TGT],
        ],
      ],
    ] as const) {
      for (const [state, req] of steps) {
        const a = attr();
        a.qp_state = state;
        for (let bit = 1; bit < 1 << 21; bit <<= 1) {
          if (!(req & bit)) continue;
          expect(ibv_modify_qp(qp, a, IBV_QP_STATE | (req & ~bit)), `QP type ${qp.qp_type} to state ${state} without mask bit 0x${bit.toString(16)}`).toBe(
            errno.EINVAL,
          );
        }
        expect(ibv_modify_qp(qp, a, IBV_QP_STATE | req), `QP type ${qp.qp_type} to state ${state} with the required attributes`).toBe(0);
      }
      H.expectQpState(qp, IBV_QPS_RTS, `QP type ${qp.qp_type}`);
    }
  });

  it('ibv_open_qp from a second context sharing the domain through a file: it keeps the QP after its creator context closes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rnic-xrc-ctx-'));
    const fd = openSync(join(dir, 'domain'), 'a+');
    const b2 = H.openDev(f.b.name);
    try {
      const MASK = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
      const x1 = ibv_open_xrcd(f.b.ctx, { comp_mask: MASK, fd, oflags: O_CREAT });
      const x2 = ibv_open_xrcd(b2.ctx, { comp_mask: MASK, fd, oflags: 0 });
      const creator = H.openDev(f.b.name);
      const x0 = ibv_open_xrcd(creator.ctx, { comp_mask: MASK, fd, oflags: 0 });
      const created = ibv_create_qp_ex(creator.ctx, {
        comp_mask: IBV_QP_INIT_ATTR_XRCD,
        xrcd: x0,
        qp_type: IBV_QPT_XRC_RECV,
        send_cq: null,
        recv_cq: null,
        cap: newQpCap(),
        sq_sig_all: 0,
      });
      const opened = ibv_open_qp(b2.ctx, {
        comp_mask: IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE,
        qp_num: created.qp_num,
        xrcd: x2,
        qp_type: IBV_QPT_XRC_RECV,
      });
      // The creator's context closes (its handle with it); the QP lives on in the other context.
      H.closeDev(creator);
      const cq = ibv_create_cq(f.b.ctx, 8, null, null, 0);
      const srq = xrcSrq(f.b, x1, cq);
      const scq = H.createCq(f.a);
      const send = xrcSendQp(f.a, scq);
      connectXrc(f.a, send, b2, opened);
      const dst = H.region(f.b, 64);
      expect(ibv_post_srq_recv(srq.srq, H.recvWr(3n, [dst.sge()]))).toBe(0);
      const src = H.region(f.a, 64, ACCESS, { fill: (i) => i * 3 });
      H.postSend({ qp: send } as H.Ep, toSrq(H.wrSend({ wrId: 4n, sge: [src.sge()] }), srq.num));
      H.expectWc(await H.poll1(scq, 'send'), { status: IBV_WC_SUCCESS }, 'send into the shared domain');
      H.expectWc(await H.poll1(cq, 'receive'), { wr_id: 3n, status: IBV_WC_SUCCESS, qp_num: opened.qp_num }, 'receive on the first context');
      H.expectBytes(dst.data, src.data, 'bytes');
      expect(ibv_destroy_qp(opened)).toBe(0);
      expect(ibv_destroy_srq(srq.srq)).toBe(0);
      expect(ibv_destroy_cq(cq)).toBe(0);
      expect(ibv_close_xrcd(x2)).toBe(0);
      expect(ibv_close_xrcd(x1)).toBe(0);
    } finally {
      H.closeDev(b2);
      closeSync(fd);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the state machine of XRC QPs is the kernel table: a receive QP goes to RTS with timeout and sq_psn only', () => {
    const xrcd = openXrcd(f.b);
    const recv = xrcRecvQp(f.b, xrcd);
    const scq = H.createCq(f.a);
    const send = xrcSendQp(f.a, scq);
    connectXrc(f.a, send, f.b, recv);
    const a = newQpAttr();
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.sq_psn = 5;
    a.retry_cnt = 7;
    expect(ibv_modify_qp(recv, a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN | IBV_QP_RETRY_CNT), 'RTR→RTS with retry_cnt (not allowed)').toBe(errno.EINVAL);
    expect(ibv_modify_qp(recv, a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN)).toBe(0);
    H.expectQpState(recv, IBV_QPS_RTS, 'receive QP');
    H.expectQpState(send, IBV_QPS_RTS, 'send QP');
  });
});
