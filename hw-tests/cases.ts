/**
 * The hw-tests: verbs end-to-end programs that run unchanged on the model
 * (rnic0 + rnic1, cabled) and on a real device through rdma-core (rxe0 in
 * the guest, two QPs on the one device looping back). Each returns nothing
 * when it passes and throws Fail otherwise. Where rxe and the model differ
 * by design, the test asserts each provider's behaviour and names it in
 * DEVICE_DIFFERENCES (the report prints it as "difference").
 */
import {
  IBV_EVENT_SRQ_LIMIT_REACHED,
  IBV_LINK_LAYER_ETHERNET,
  IBV_PORT_ACTIVE,
  IBV_QP_STATE,
  IBV_QPS_ERR,
  IBV_QPS_INIT,
  IBV_QPS_RESET,
  IBV_QPS_RTR,
  IBV_QPT_RC,
  IBV_QPT_UC,
  IBV_QPT_UD,
  IBV_SRQ_LIMIT,
  IBV_ACCESS_MW_BIND,
  IBV_ACCESS_REMOTE_READ,
  IBV_ACCESS_REMOTE_WRITE,
  IBV_MW_TYPE_1,
  IBV_MW_TYPE_2,
  IBV_WC_BIND_MW,
  IBV_WC_WITH_INV,
  IBV_WR_BIND_MW,
  IBV_WR_SEND_WITH_INV,
  IBV_WC_COMP_SWAP,
  IBV_WC_FETCH_ADD,
  IBV_WC_LOC_LEN_ERR,
  IBV_WC_RDMA_READ,
  IBV_WC_RDMA_WRITE,
  IBV_WC_RECV,
  IBV_WC_RECV_RDMA_WITH_IMM,
  IBV_WC_REM_ACCESS_ERR,
  IBV_WC_REM_INV_REQ_ERR,
  IBV_WC_REM_OP_ERR,
  IBV_WC_LOC_QP_OP_ERR,
  IBV_WC_RNR_RETRY_EXC_ERR,
  IBV_WC_SEND,
  IBV_WC_WITH_IMM,
  IBV_WC_GRH,
  IBV_SEND_INLINE,
  IBV_SEND_SIGNALED,
  IBV_WC_WR_FLUSH_ERR,
  IBV_WR_ATOMIC_CMP_AND_SWP,
  IBV_WR_ATOMIC_FETCH_AND_ADD,
  IBV_WR_RDMA_READ,
  IBV_WR_RDMA_WRITE,
  IBV_WR_RDMA_WRITE_WITH_IMM,
  IBV_WR_SEND,
  IBV_WR_SEND_WITH_IMM,
  ibv_ack_async_event,
  ibv_alloc_mw,
  ibv_bind_mw,
  ibv_dealloc_mw,
  ibv_inc_rkey,
  ibv_ack_cq_events,
  ibv_close_device,
  ibv_destroy_qp,
  ibv_destroy_srq,
  ibv_create_ah,
  ibv_create_comp_channel,
  ibv_create_srq,
  ibv_get_async_event,
  ibv_get_cq_event,
  ibv_get_device_guid,
  ibv_get_device_list,
  ibv_modify_qp,
  ibv_modify_srq,
  ibv_post_send,
  ibv_post_srq_recv,
  ibv_poll_cq,
  ibv_query_device,
  ibv_query_pkey,
  ibv_query_port,
  ibv_query_qp,
  ibv_req_notify_cq,
  ibv_wc_status_str,
  newDeviceAttr,
  newPortAttr,
  newQpAttr,
  newWcArray,
  ibv_dereg_mr,
  ibv_reg_mr,
  rnic_alloc_buf,
  rnic_free_buf,
} from '../src/driver/verbs/index.js';
import { errno } from '../src/device/abi/constants.js';
import type { BadWr, ibv_mr, ibv_qp_init_attr, ibv_send_wr } from '../src/driver/verbs/index.js';
import { EXTENDED_CASES, EXTENDED_DIFFERENCES } from './cases-extended.js';
import {
  ALL_ACCESS,
  check,
  connectedPair,
  end,
  eq,
  Fail,
  fill,
  mem,
  PORT,
  pollN,
  post,
  postRecv,
  QKEY,
  sameBytes,
  sendWr,
  toInit,
  toRts,
  wcOk,
  type Dev,
} from './pair.js';

export interface Target {
  provider: string;
  /** Whose behaviour to expect where devices differ: the model's, Linux rxe's, or another real device's. */
  behaviour: 'model' | 'rxe' | 'other';
  a: Dev;
  b: Dev;
}

export interface Case {
  name: string;
  run(t: Target): Promise<void>;
}

/** Named device behaviours a test asserts per provider (the model follows the IBTA unless a quirk is set). */
export const DEVICE_DIFFERENCES: Record<string, Partial<Record<Target['behaviour'], string>>> = {
  'rc-recv-overflow': {
    rxe: 'rxe (Linux 6.1) answers a SEND longer than the receive buffer with NAK remote operational error: sender REM_OP_ERR, receiver LOC_QP_OP_ERR (IBTA and the model: NAK invalid request, REM_INV_REQ_ERR and LOC_LEN_ERR)',
  },
  'mw-type1-bind-write-rebind': {
    rxe: 'rxe (Linux 6.1) refuses ibv_dereg_mr of an MR with bound windows with EINVAL (rxe_dereg_mr, "see IBA 10.6.7.2.6"); the model says EBUSY (the IBTA requires the refusal, not the errno)',
  },
  'mw-type2-bind-send-inv': {
    rxe: "rxe (Linux 6.1) reports the receive of a SEND_WITH_INV with wc_flags 5: IBV_WC_GRH and bit 2, the kernel's IB_WC_WITH_INVALIDATE, which libibverbs reads as IBV_WC_IP_CSUM_OK; the model sets IBV_WC_WITH_INV (1 << 3) as libibverbs defines it. invalidated_rkey and the invalidation itself agree",
  },
  'rc-rem-access-error-flush': {
    rxe: 'rxe (Linux 6.1) moves the responder QP to ERR but never completes a receive posted to it afterwards (the IBTA and the model flush it with WR_FLUSH_ERR)',
  },
  ...EXTENDED_DIFFERENCES,
};

const withTimeout = <T>(p: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([p, new Promise<never>((_, rej) => setTimeout(() => rej(new Fail(`${what}: nothing in ${ms} ms`)), ms).unref())]);

export const CASES: Case[] = [
  {
    name: 'device-query',
    async run({ a }) {
      const dev = ibv_get_device_list().find((d) => d.name === a.name)!;
      const da = newDeviceAttr();
      eq(ibv_query_device(a.ctx, da), 0, 'ibv_query_device');
      check(da.max_qp > 0 && da.max_cqe > 0 && da.max_mr > 0, `max_qp ${da.max_qp} max_cqe ${da.max_cqe} max_mr ${da.max_mr}`);
      check(da.phys_port_cnt >= 1, `phys_port_cnt ${da.phys_port_cnt}`);
      eq(typeof da.node_guid, 'bigint', 'node_guid is a bigint');
      eq(da.node_guid, ibv_get_device_guid(dev), 'node_guid == ibv_get_device_guid');
      const pa = newPortAttr();
      eq(ibv_query_port(a.ctx, PORT, pa), 0, 'ibv_query_port');
      eq(pa.state, IBV_PORT_ACTIVE, 'port state');
      eq(pa.link_layer, IBV_LINK_LAYER_ETHERNET, 'link layer');
      const pk = { pkey: 0 };
      eq(ibv_query_pkey(a.ctx, PORT, 0, pk), 0, 'ibv_query_pkey');
      eq(pk.pkey, 0xffff, 'P_Key 0');
      check(a.gid.raw[10] === 0xff && a.gid.raw[11] === 0xff, `an IPv4 RoCE v2 GID (index ${a.gidIndex})`);
      eq(ibv_query_port(a.ctx, 99, pa), 22, 'ibv_query_port of port 99 is EINVAL');
    },
  },
  {
    name: 'rc-send',
    async run({ a, b }) {
      const [x, y] = connectedPair(a, b);
      const src = mem(a, 8192);
      const dst = mem(b, 8192);
      fill(src.buf, 1);
      postRecv(y, dst, 0, 8192, 7n);
      post(x, sendWr(IBV_WR_SEND, src, 0, 5000, 1n));
      const [s] = await pollN(x.cq, 1, 'send completion');
      wcOk(s!, 'send');
      eq(s!.opcode, IBV_WC_SEND, 'sender opcode');
      eq(s!.wr_id, 1n, 'sender wr_id');
      const [r] = await pollN(y.cq, 1, 'recv completion');
      wcOk(r!, 'recv');
      eq(r!.opcode, IBV_WC_RECV, 'receiver opcode');
      eq(r!.byte_len, 5000, 'byte_len');
      eq(r!.wr_id, 7n, 'receiver wr_id');
      eq(r!.qp_num, y.qp.qp_num, 'wc.qp_num');
      sameBytes(dst.buf.subarray(0, 5000), src.buf.subarray(0, 5000), 'payload');
    },
  },
  {
    name: 'rc-send-imm-gather',
    async run({ a, b }) {
      const [x, y] = connectedPair(a, b);
      const src = mem(a, 4096);
      const dst = mem(b, 4096);
      fill(src.buf, 2);
      postRecv(y, dst, 0, 4096, 9n);
      const wr = sendWr(IBV_WR_SEND_WITH_IMM, src, 0, 100, 3n, { imm_data: 0x12345678 });
      wr.sg_list!.push({ addr: src.mr.addr + 1000n, length: 200, lkey: src.mr.lkey });
      wr.num_sge = 2;
      post(x, wr);
      wcOk((await pollN(x.cq, 1, 'send'))[0]!, 'send');
      const [r] = await pollN(y.cq, 1, 'recv');
      wcOk(r!, 'recv');
      eq(r!.byte_len, 300, 'byte_len (two SGEs)');
      check(r!.wc_flags & IBV_WC_WITH_IMM, 'IBV_WC_WITH_IMM');
      eq(r!.imm_data, 0x12345678, 'imm_data (32 bits unchanged)');
      sameBytes(dst.buf.subarray(0, 100), src.buf.subarray(0, 100), 'first SGE');
      sameBytes(dst.buf.subarray(100, 300), src.buf.subarray(1000, 1200), 'second SGE');
    },
  },
  {
    name: 'rc-write',
    async run({ a, b }) {
      const [x] = connectedPair(a, b);
      const src = mem(a, 16384);
      const dst = mem(b, 16384);
      fill(src.buf, 3);
      post(x, sendWr(IBV_WR_RDMA_WRITE, src, 0, 10000, 4n, { wr: { rdma: { remote_addr: dst.mr.addr + 64n, rkey: dst.mr.rkey } } }));
      const [s] = await pollN(x.cq, 1, 'write completion');
      wcOk(s!, 'write');
      eq(s!.opcode, IBV_WC_RDMA_WRITE, 'opcode');
      sameBytes(dst.buf.subarray(64, 10064), src.buf.subarray(0, 10000), 'written bytes');
      check(dst.buf.subarray(0, 64).every((v) => v === 0) && dst.buf.subarray(10064).every((v) => v === 0), 'bytes around the write untouched');
    },
  },
  {
    name: 'rc-write-imm',
    async run({ a, b }) {
      const [x, y] = connectedPair(a, b);
      const src = mem(a, 4096);
      const dst = mem(b, 4096);
      fill(src.buf, 4);
      postRecv(y, dst, 0, 0, 11n);
      post(x, sendWr(IBV_WR_RDMA_WRITE_WITH_IMM, src, 0, 2048, 5n, { imm_data: 0xa1b2c3d4, wr: { rdma: { remote_addr: dst.mr.addr, rkey: dst.mr.rkey } } }));
      wcOk((await pollN(x.cq, 1, 'write'))[0]!, 'write');
      const [r] = await pollN(y.cq, 1, 'recv');
      wcOk(r!, 'recv');
      eq(r!.opcode, IBV_WC_RECV_RDMA_WITH_IMM, 'opcode');
      eq(r!.imm_data, 0xa1b2c3d4, 'imm_data');
      eq(r!.byte_len, 2048, 'byte_len');
      sameBytes(dst.buf.subarray(0, 2048), src.buf.subarray(0, 2048), 'written bytes');
    },
  },
  {
    name: 'rc-read',
    async run({ a, b }) {
      const [x] = connectedPair(a, b);
      const local = mem(a, 16384);
      const remote = mem(b, 16384);
      fill(remote.buf, 5);
      post(x, sendWr(IBV_WR_RDMA_READ, local, 0, 9000, 6n, { wr: { rdma: { remote_addr: remote.mr.addr + 100n, rkey: remote.mr.rkey } } }));
      const [s] = await pollN(x.cq, 1, 'read completion');
      wcOk(s!, 'read');
      eq(s!.opcode, IBV_WC_RDMA_READ, 'opcode');
      eq(s!.byte_len, 9000, 'byte_len');
      sameBytes(local.buf.subarray(0, 9000), remote.buf.subarray(100, 9100), 'read bytes');
    },
  },
  {
    name: 'rc-atomics',
    async run({ a, b }) {
      const [x] = connectedPair(a, b);
      const local = mem(a, 4096);
      const remote = mem(b, 4096);
      const rv = new DataView(remote.buf.buffer, remote.buf.byteOffset);
      const lv = new DataView(local.buf.buffer, local.buf.byteOffset);
      rv.setBigUint64(8, 1000n, true);
      post(
        x,
        sendWr(IBV_WR_ATOMIC_FETCH_AND_ADD, local, 0, 8, 1n, {
          wr: { atomic: { remote_addr: remote.mr.addr + 8n, rkey: remote.mr.rkey, compare_add: 5n, swap: 0n } },
        }),
      );
      const [f] = await pollN(x.cq, 1, 'fetch-add');
      wcOk(f!, 'fetch-add');
      eq(f!.opcode, IBV_WC_FETCH_ADD, 'opcode');
      eq(lv.getBigUint64(0, true), 1000n, 'fetched value');
      eq(rv.getBigUint64(8, true), 1005n, 'added value');
      post(
        x,
        sendWr(IBV_WR_ATOMIC_CMP_AND_SWP, local, 16, 8, 2n, {
          wr: { atomic: { remote_addr: remote.mr.addr + 8n, rkey: remote.mr.rkey, compare_add: 1005n, swap: 0xdeadbeefcafen } },
        }),
      );
      const [c] = await pollN(x.cq, 1, 'cmp-swap');
      wcOk(c!, 'cmp-swap');
      eq(c!.opcode, IBV_WC_COMP_SWAP, 'opcode');
      eq(lv.getBigUint64(16, true), 1005n, 'compared value');
      eq(rv.getBigUint64(8, true), 0xdeadbeefcafen, 'swapped value');
    },
  },
  {
    name: 'uc-write',
    async run({ a, b }) {
      const [x] = connectedPair(a, b, IBV_QPT_UC);
      const src = mem(a, 8192);
      const dst = mem(b, 8192);
      fill(src.buf, 6);
      post(x, sendWr(IBV_WR_RDMA_WRITE, src, 0, 3000, 8n, { wr: { rdma: { remote_addr: dst.mr.addr, rkey: dst.mr.rkey } } }));
      wcOk((await pollN(x.cq, 1, 'UC write'))[0]!, 'UC write');
      const t0 = Date.now();
      while (dst.buf[2999] !== src.buf[2999] && Date.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 2));
      sameBytes(dst.buf.subarray(0, 3000), src.buf.subarray(0, 3000), 'written bytes');
    },
  },
  {
    name: 'uc-send-and-write-imm',
    async run({ a, b }) {
      const [x, y] = connectedPair(a, b, IBV_QPT_UC);
      const src = mem(a, 8192);
      const dst = mem(b, 8192);
      fill(src.buf, 10);
      postRecv(y, dst, 0, 4096, 31n);
      postRecv(y, dst, 4096, 0, 32n);
      post(x, sendWr(IBV_WR_SEND, src, 0, 2500, 1n));
      post(
        x,
        sendWr(IBV_WR_RDMA_WRITE_WITH_IMM, src, 3000, 1000, 2n, {
          imm_data: 0x0badf00d,
          wr: { rdma: { remote_addr: dst.mr.addr + 5000n, rkey: dst.mr.rkey } },
        }),
      );
      (await pollN(x.cq, 2, 'UC sends')).forEach((w) => wcOk(w, 'UC send'));
      const [r1, r2] = await pollN(y.cq, 2, 'UC receives');
      wcOk(r1!, 'UC recv');
      eq(r1!.opcode, IBV_WC_RECV, 'first: RECV');
      eq(r1!.byte_len, 2500, 'first byte_len');
      wcOk(r2!, 'UC write-imm');
      eq(r2!.opcode, IBV_WC_RECV_RDMA_WITH_IMM, 'second: RECV_RDMA_WITH_IMM');
      eq(r2!.imm_data, 0x0badf00d, 'imm_data');
      sameBytes(dst.buf.subarray(0, 2500), src.buf.subarray(0, 2500), 'sent bytes');
      sameBytes(dst.buf.subarray(5000, 6000), src.buf.subarray(3000, 4000), 'written bytes');
    },
  },
  {
    name: 'rc-send-inline',
    async run({ a, b }) {
      const x = end(a, IBV_QPT_RC, { inline: 64 });
      const y = end(b);
      toInit(x);
      toInit(y);
      toRts(x, y);
      toRts(y, x);
      const src = mem(a, 4096);
      const dst = mem(b, 4096);
      fill(src.buf, 11);
      postRecv(y, dst, 0, 64, 1n);
      post(x, sendWr(IBV_WR_SEND, src, 0, 48, 2n, { send_flags: IBV_SEND_SIGNALED | IBV_SEND_INLINE }));
      src.buf.fill(0, 0, 48); // inline: the bytes were copied at post time
      wcOk((await pollN(x.cq, 1, 'inline send'))[0]!, 'inline send');
      const [r] = await pollN(y.cq, 1, 'recv');
      wcOk(r!, 'recv');
      eq(r!.byte_len, 48, 'byte_len');
      const want = new Uint8Array(48);
      fill(want, 11);
      sameBytes(dst.buf.subarray(0, 48), want, 'the bytes as they were at post time');
    },
  },
  {
    name: 'ud-send',
    async run({ a, b }) {
      const x = end(a, IBV_QPT_UD);
      const y = end(b, IBV_QPT_UD);
      toInit(x);
      toInit(y);
      toRts(x, y);
      toRts(y, x);
      const src = mem(a, 4096);
      const dst = mem(b, 4096);
      fill(src.buf, 7);
      postRecv(y, dst, 0, 40 + 1024, 21n);
      const ah = ibv_create_ah(a.pd, {
        is_global: 1,
        port_num: PORT,
        dlid: 0,
        sl: 0,
        src_path_bits: 0,
        static_rate: 0,
        grh: { dgid: b.gid, sgid_index: a.gidIndex, hop_limit: 64, flow_label: 0, traffic_class: 0 },
      });
      postRecv(y, dst, 2048, 40 + 1024, 23n);
      post(x, sendWr(IBV_WR_SEND, src, 0, 1000, 22n, { wr: { ud: { ah, remote_qpn: y.qp.qp_num, remote_qkey: QKEY } } }));
      post(x, sendWr(IBV_WR_SEND_WITH_IMM, src, 0, 10, 24n, { imm_data: 0x01020304, wr: { ud: { ah, remote_qpn: y.qp.qp_num, remote_qkey: QKEY } } }));
      (await pollN(x.cq, 2, 'UD sends')).forEach((w) => wcOk(w, 'UD send'));
      const [r, r2] = await pollN(y.cq, 2, 'UD recvs');
      wcOk(r!, 'UD recv');
      eq(r!.byte_len, 1040, 'byte_len (GRH + payload)');
      eq(r!.src_qp, x.qp.qp_num, 'src_qp');
      check(r!.wc_flags & IBV_WC_GRH, 'IBV_WC_GRH');
      sameBytes(dst.buf.subarray(40, 1040), src.buf.subarray(0, 1000), 'payload after the 40-byte GRH');
      wcOk(r2!, 'UD recv with imm');
      eq(r2!.byte_len, 50, 'byte_len');
      check(r2!.wc_flags & IBV_WC_WITH_IMM, 'IBV_WC_WITH_IMM');
      eq(r2!.imm_data, 0x01020304, 'imm_data');
    },
  },
  {
    name: 'srq-recv-and-limit-event',
    async run({ a, b }) {
      const srq = ibv_create_srq(b.pd, { attr: { max_wr: 16, max_sge: 1, srq_limit: 0 } });
      const x = end(a);
      const y = end(b, IBV_QPT_RC, { srq });
      toInit(x);
      toInit(y);
      toRts(x, y);
      toRts(y, x);
      const src = mem(a, 4096);
      const dst = mem(b, 4096);
      fill(src.buf, 8);
      for (let i = 0; i < 4; i++) {
        eq(
          ibv_post_srq_recv(srq, {
            wr_id: BigInt(100 + i),
            next: null,
            num_sge: 1,
            sg_list: [{ addr: dst.mr.addr + BigInt(i * 1024), length: 1024, lkey: dst.mr.lkey }],
          }),
          0,
          'ibv_post_srq_recv',
        );
      }
      eq(ibv_modify_srq(srq, { max_wr: 0, max_sge: 0, srq_limit: 3 }, IBV_SRQ_LIMIT), 0, 'arm srq_limit 3');
      const ev = ibv_get_async_event(b.ctx);
      for (let i = 0; i < 2; i++) post(x, sendWr(IBV_WR_SEND, src, i * 100, 100, BigInt(i)));
      const s = await pollN(x.cq, 2, 'sends');
      s.forEach((w) => wcOk(w, 'send'));
      const r = await pollN(y.cq, 2, 'SRQ receives');
      r.forEach((w) => wcOk(w, 'SRQ recv'));
      eq(r[0]!.wr_id, 100n, 'first SRQ WR consumed first');
      sameBytes(dst.buf.subarray(1024, 1124), src.buf.subarray(100, 200), 'second message in the second SRQ buffer');
      const e = await withTimeout(ev, 10_000, 'IBV_EVENT_SRQ_LIMIT_REACHED');
      eq(e.event_type, IBV_EVENT_SRQ_LIMIT_REACHED, 'async event type');
      eq(e.element.srq, srq, 'event element');
      eq(ibv_destroy_qp(y.qp), 0, "destroy the SRQ's QP");
      eq(ibv_destroy_srq(srq), errno.EBUSY, 'destroy the SRQ before its event is acknowledged: EBUSY (libibverbs would block)');
      ibv_ack_async_event(e);
      eq(ibv_destroy_srq(srq), 0, 'destroy the SRQ after the acknowledgement');
    },
  },
  {
    name: 'mw-type1-bind-write-rebind',
    async run({ behaviour, a, b }) {
      const [x, y] = connectedPair(a, b);
      const src = mem(a, 4096);
      const dst = mem(b, 4096, ALL_ACCESS | IBV_ACCESS_MW_BIND);
      fill(src.buf, 9);
      const mw = ibv_alloc_mw(b.pd, IBV_MW_TYPE_1);
      eq(mw.type, IBV_MW_TYPE_1, 'window type');
      const bind = (length: bigint, wr_id: bigint) =>
        ibv_bind_mw(y.qp, mw, {
          wr_id,
          send_flags: IBV_SEND_SIGNALED,
          bind_info: { mr: dst.mr, addr: dst.mr.addr + 1024n, length, mw_access_flags: IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ },
        });
      const k0 = mw.rkey;
      eq(bind(512n, 21n), 0, 'ibv_bind_mw');
      eq(mw.rkey, ibv_inc_rkey(k0), 'the window key after the bind (ibv_inc_rkey)');
      const [bw] = await pollN(y.cq, 1, 'bind completion');
      wcOk(bw!, 'bind');
      eq(bw!.opcode, IBV_WC_BIND_MW, 'bind opcode');
      eq(bw!.wr_id, 21n, 'bind wr_id');
      post(x, sendWr(IBV_WR_RDMA_WRITE, src, 0, 200, 22n, { wr: { rdma: { remote_addr: dst.mr.addr + 1100n, rkey: mw.rkey } } }));
      wcOk((await pollN(x.cq, 1, 'write through the window'))[0]!, 'write through the window');
      sameBytes(dst.buf.subarray(1100, 1300), src.buf.subarray(0, 200), 'bytes through the window');
      check(
        dst.buf.subarray(0, 1100).every((v) => v === 0),
        'bytes before the write untouched',
      );
      const rc = ibv_dereg_mr(dst.mr);
      eq(rc, behaviour === 'rxe' ? errno.EINVAL : errno.EBUSY, 'ibv_dereg_mr of an MR with a bound window');
      const k1 = mw.rkey;
      eq(bind(256n, 23n), 0, 'rebind');
      wcOk((await pollN(y.cq, 1, 'rebind'))[0]!, 'rebind');
      eq(mw.rkey, ibv_inc_rkey(k1), 'the key after the rebind');
      post(x, sendWr(IBV_WR_RDMA_WRITE, src, 0, 8, 24n, { wr: { rdma: { remote_addr: dst.mr.addr + 1024n, rkey: k1 } } }));
      const [e] = await pollN(x.cq, 1, 'write with the old key');
      eq(ibv_wc_status_str(e!.status), ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR), 'the key before the rebind is refused');
      eq(ibv_dealloc_mw(mw), 0, 'ibv_dealloc_mw');
      eq(ibv_dereg_mr(dst.mr), 0, 'ibv_dereg_mr once the window is gone');
    },
  },
  {
    name: 'mw-type2-bind-send-inv',
    async run({ behaviour, a, b }) {
      const [x, y] = connectedPair(a, b);
      const src = mem(a, 4096);
      const dst = mem(b, 4096, ALL_ACCESS | IBV_ACCESS_MW_BIND);
      const rbuf = mem(b, 4096);
      fill(src.buf, 11);
      const mw = ibv_alloc_mw(b.pd, IBV_MW_TYPE_2);
      eq(mw.type, IBV_MW_TYPE_2, 'window type');
      const rkey = ibv_inc_rkey(mw.rkey);
      const bind: ibv_send_wr = {
        wr_id: 31n,
        next: null,
        sg_list: [],
        num_sge: 0,
        opcode: IBV_WR_BIND_MW,
        send_flags: IBV_SEND_SIGNALED,
        bind_mw: { mw, rkey, bind_info: { mr: dst.mr, addr: dst.mr.addr + 512n, length: 1024n, mw_access_flags: IBV_ACCESS_REMOTE_WRITE } },
      };
      post(y, bind);
      const [bw] = await pollN(y.cq, 1, 'type 2 bind');
      wcOk(bw!, 'type 2 bind');
      eq(bw!.opcode, IBV_WC_BIND_MW, 'bind opcode');
      post(x, sendWr(IBV_WR_RDMA_WRITE, src, 0, 300, 32n, { wr: { rdma: { remote_addr: dst.mr.addr + 600n, rkey } } }));
      wcOk((await pollN(x.cq, 1, 'write through the window'))[0]!, 'write through the window');
      sameBytes(dst.buf.subarray(600, 900), src.buf.subarray(0, 300), 'bytes through the window');
      postRecv(y, rbuf, 0, 64, 33n);
      post(x, sendWr(IBV_WR_SEND_WITH_INV, src, 0, 16, 34n, { invalidate_rkey: rkey }));
      wcOk((await pollN(x.cq, 1, 'SEND_WITH_INV'))[0]!, 'SEND_WITH_INV');
      const [r] = await pollN(y.cq, 1, 'its receive');
      wcOk(r!, 'receive of SEND_WITH_INV');
      // rxe hands up the kernel's IB_WC_WITH_INVALIDATE (1 << 2), which libibverbs calls IBV_WC_IP_CSUM_OK; IBV_WC_WITH_INV is 1 << 3.
      const withInv = behaviour === 'rxe' ? 1 << 2 : IBV_WC_WITH_INV;
      eq(r!.wc_flags & withInv, withInv, behaviour === 'rxe' ? 'rxe: the kernel IB_WC_WITH_INVALIDATE bit' : 'IBV_WC_WITH_INV');
      eq(r!.invalidated_rkey >>> 0, rkey, 'invalidated_rkey');
      post(x, sendWr(IBV_WR_RDMA_WRITE, src, 0, 8, 35n, { wr: { rdma: { remote_addr: dst.mr.addr + 600n, rkey } } }));
      const [e] = await pollN(x.cq, 1, 'write with the invalidated key');
      eq(ibv_wc_status_str(e!.status), ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR), 'the invalidated key is refused');
      eq(ibv_dealloc_mw(mw), 0, 'ibv_dealloc_mw');
    },
  },
  {
    name: 'rc-rem-access-error-flush',
    async run({ behaviour, a, b }) {
      const [x, y] = connectedPair(a, b);
      const src = mem(a, 4096);
      const dst = mem(b, 4096);
      post(x, sendWr(IBV_WR_RDMA_WRITE, src, 0, 100, 1n, { wr: { rdma: { remote_addr: dst.mr.addr, rkey: dst.mr.rkey ^ 0x5a5a00 } } }));
      post(x, sendWr(IBV_WR_SEND, src, 0, 10, 2n));
      const [e, f] = await pollN(x.cq, 2, 'error and flush');
      eq(ibv_wc_status_str(e!.status), ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR), 'bad rkey status');
      eq(e!.wr_id, 1n, 'errored wr_id');
      eq(ibv_wc_status_str(f!.status), ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR), 'next WR flushed');
      eq(f!.wr_id, 2n, 'flushed wr_id');
      const qa = newQpAttr();
      const init = {} as ibv_qp_init_attr;
      eq(ibv_query_qp(x.qp, qa, IBV_QP_STATE, init), 0, 'ibv_query_qp');
      eq(qa.qp_state, IBV_QPS_ERR, 'requester QP state');
      await new Promise((r) => setTimeout(r, 100));
      eq(ibv_query_qp(y.qp, qa, IBV_QP_STATE, init), 0, 'ibv_query_qp (responder)');
      eq(qa.qp_state, IBV_QPS_ERR, 'responder QP state');
      postRecv(y, dst, 0, 10, 3n); // the responder QP is in error too: its receive is flushed
      if (behaviour === 'rxe') {
        const n = ibv_poll_cq(y.cq, 1, newWcArray(1));
        await new Promise((r) => setTimeout(r, 1000));
        eq(n + ibv_poll_cq(y.cq, 1, newWcArray(1)), 0, 'rxe: no flush completion for a receive posted in ERR');
      } else {
        const [g] = await pollN(y.cq, 1, 'responder flush');
        eq(ibv_wc_status_str(g!.status), ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR), 'responder receive flushed');
      }
    },
  },
  {
    name: 'rc-rnr-retry-exceeded',
    async run({ a, b }) {
      const [x] = connectedPair(a, b, IBV_QPT_RC, { rnrRetry: 0 });
      const src = mem(a, 4096);
      post(x, sendWr(IBV_WR_SEND, src, 0, 10, 1n));
      const [e] = await pollN(x.cq, 1, 'RNR');
      eq(ibv_wc_status_str(e!.status), ibv_wc_status_str(IBV_WC_RNR_RETRY_EXC_ERR), 'status');
    },
  },
  {
    name: 'rc-recv-overflow',
    async run({ behaviour, a, b }) {
      const [x, y] = connectedPair(a, b);
      const src = mem(a, 4096);
      const dst = mem(b, 4096);
      postRecv(y, dst, 0, 100, 5n);
      post(x, sendWr(IBV_WR_SEND, src, 0, 500, 1n));
      const rxe = behaviour === 'rxe';
      const [s] = await pollN(x.cq, 1, 'sender');
      eq(ibv_wc_status_str(s!.status), ibv_wc_status_str(rxe ? IBV_WC_REM_OP_ERR : IBV_WC_REM_INV_REQ_ERR), `sender status (${behaviour})`);
      const [r] = await pollN(y.cq, 1, 'receiver');
      eq(ibv_wc_status_str(r!.status), ibv_wc_status_str(rxe ? IBV_WC_LOC_QP_OP_ERR : IBV_WC_LOC_LEN_ERR), `receiver status (${behaviour})`);
    },
  },
  {
    name: 'completion-event',
    async run({ a, b }) {
      const ch = ibv_create_comp_channel(b.ctx);
      const x = end(a);
      const y = end(b, IBV_QPT_RC, { channel: ch });
      toInit(x);
      toInit(y);
      toRts(x, y);
      toRts(y, x);
      const src = mem(a, 4096);
      const dst = mem(b, 4096);
      postRecv(y, dst, 0, 64, 1n);
      eq(ibv_req_notify_cq(y.cq, 0), 0, 'ibv_req_notify_cq');
      const ev = ibv_get_cq_event(ch);
      let settled = false;
      void ev.then(
        () => (settled = true),
        () => (settled = true),
      );
      await new Promise((r) => setTimeout(r, 20));
      check(!settled, 'no event before anything completes');
      post(x, sendWr(IBV_WR_SEND, src, 0, 64, 2n));
      const got = await withTimeout(ev, 10_000, 'ibv_get_cq_event');
      eq(got.cq, y.cq, 'the event names the CQ');
      ibv_ack_cq_events(y.cq, 1);
      wcOk((await pollN(y.cq, 1, 'recv after the event'))[0]!, 'recv');
      wcOk((await pollN(x.cq, 1, 'send'))[0]!, 'send');
    },
  },
  {
    name: 'close-with-events-unacknowledged',
    async run({ a, b }) {
      const ch = ibv_create_comp_channel(b.ctx);
      const srq = ibv_create_srq(b.pd, { attr: { max_wr: 8, max_sge: 1, srq_limit: 0 } });
      const x = end(a);
      const y = end(b, IBV_QPT_RC, { srq, channel: ch });
      toInit(x);
      toInit(y);
      toRts(x, y);
      toRts(y, x);
      const src = mem(a, 4096);
      const dst = mem(b, 4096);
      for (let i = 0; i < 3; i++) {
        eq(
          ibv_post_srq_recv(srq, {
            wr_id: BigInt(i),
            next: null,
            num_sge: 1,
            sg_list: [{ addr: dst.mr.addr + BigInt(i * 64), length: 64, lkey: dst.mr.lkey }],
          }),
          0,
          'ibv_post_srq_recv',
        );
      }
      eq(ibv_modify_srq(srq, { max_wr: 0, max_sge: 0, srq_limit: 3 }, IBV_SRQ_LIMIT), 0, 'arm srq_limit');
      eq(ibv_req_notify_cq(y.cq, 0), 0, 'ibv_req_notify_cq');
      const asyncEv = ibv_get_async_event(b.ctx);
      const cqEv = ibv_get_cq_event(ch);
      post(x, sendWr(IBV_WR_SEND, src, 0, 16, 1n));
      await withTimeout(asyncEv, 10_000, 'the SRQ limit event');
      await withTimeout(cqEv, 10_000, 'the completion event');
      // Neither acknowledged: libibverbs' destroy would wait for them for ever.
      const t0 = Date.now();
      eq(ibv_close_device(b.ctx), 0, 'ibv_close_device');
      check(Date.now() - t0 < 5000, 'close returned promptly');
    },
  },
  {
    name: 'pending-event-waits-end-at-close',
    async run({ a }) {
      const ch = ibv_create_comp_channel(a.ctx);
      const cqEv = ibv_get_cq_event(ch);
      const asyncEv = ibv_get_async_event(a.ctx);
      const outcome = (p: Promise<unknown>) =>
        p.then(
          () => 'resolved',
          (e: { code?: string }) => e.code ?? String(e),
        );
      const both = Promise.all([outcome(cqEv), outcome(asyncEv)]);
      await new Promise((r) => setTimeout(r, 20));
      eq(ibv_close_device(a.ctx), 0, 'ibv_close_device with waits pending');
      const [c, e] = await withTimeout(both, 5000, 'the pending waits');
      eq(c, 'EBADF', 'ibv_get_cq_event after close');
      eq(e, 'EBADF', 'ibv_get_async_event after close');
    },
  },
  {
    name: 'registered-buffer-outlives-js-refs',
    async run({ provider, a, b }) {
      const gc = (globalThis as { gc?: () => void }).gc;
      check(gc, 'run with node --expose-gc');
      const [x] = connectedPair(a, b);
      const local = mem(a, 8192);
      let collected = false;
      const reg = new FinalizationRegistry(() => (collected = true));
      let mr: ibv_mr | null = null;
      (() => {
        const buf = rnic_alloc_buf(b.ctx, 8192, 4096);
        mr = ibv_reg_mr(b.pd, buf, ALL_ACCESS);
        reg.register(buf.buffer, 'remote buffer');
        if (provider === 'rdma-core') rnic_free_buf(b.ctx, buf); // only the MR holds it now
      })();
      const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
      for (let i = 0; i < 3; i++) {
        gc();
        await sleep(10);
      }
      check(!collected, 'the registered memory was collected while registered');
      const m = mr!;
      fill(local.buf, 9);
      post(x, sendWr(IBV_WR_RDMA_WRITE, local, 0, 4096, 1n, { wr: { rdma: { remote_addr: m.addr, rkey: m.rkey } } }));
      wcOk((await pollN(x.cq, 1, 'write into it'))[0]!, 'write');
      post(x, sendWr(IBV_WR_RDMA_READ, local, 4096, 4096, 2n, { wr: { rdma: { remote_addr: m.addr, rkey: m.rkey } } }));
      wcOk((await pollN(x.cq, 1, 'read it back'))[0]!, 'read');
      sameBytes(local.buf.subarray(4096), local.buf.subarray(0, 4096), 'bytes read back');
      eq(ibv_dereg_mr(m), 0, 'ibv_dereg_mr');
      mr = null;
      if (provider === 'rdma-core') {
        for (let i = 0; i < 20 && !collected; i++) {
          gc();
          await sleep(20);
        }
        check(collected, 'the memory is released once deregistered and unreferenced');
      }
    },
  },
  {
    name: 'qp-state-machine',
    async run({ a }) {
      const x = end(a);
      const qa = newQpAttr();
      const init = {} as ibv_qp_init_attr;
      eq(ibv_query_qp(x.qp, qa, IBV_QP_STATE, init), 0, 'query');
      eq(qa.qp_state, IBV_QPS_RESET, 'new QP state');
      eq(init.cap.max_send_wr >= 16, true, 'init_attr.cap.max_send_wr >= requested');
      const r = newQpAttr();
      r.qp_state = IBV_QPS_RTR;
      eq(ibv_modify_qp(x.qp, r, IBV_QP_STATE), 22, 'RESET -> RTR is EINVAL');
      toInit(x);
      eq(ibv_query_qp(x.qp, qa, IBV_QP_STATE, init), 0, 'query');
      eq(qa.qp_state, IBV_QPS_INIT, 'state after INIT');
      eq(x.qp.state, IBV_QPS_INIT, 'ibv_qp.state cached');
      const e = newQpAttr();
      e.qp_state = IBV_QPS_ERR;
      eq(ibv_modify_qp(x.qp, e, IBV_QP_STATE), 0, 'INIT -> ERR');
      e.qp_state = IBV_QPS_RESET;
      eq(ibv_modify_qp(x.qp, e, IBV_QP_STATE), 0, 'ERR -> RESET');
      eq(ibv_query_qp(x.qp, qa, IBV_QP_STATE, init), 0, 'query');
      eq(qa.qp_state, IBV_QPS_RESET, 'back in RESET');
    },
  },
  {
    name: 'post-send-bad-wr',
    async run({ a, b }) {
      const [x] = connectedPair(a, b);
      const src = mem(a, 4096);
      const dst = mem(b, 4096);
      const w1 = sendWr(IBV_WR_RDMA_WRITE, src, 0, 8, 1n, { wr: { rdma: { remote_addr: dst.mr.addr, rkey: dst.mr.rkey } } });
      const w2 = sendWr(IBV_WR_RDMA_WRITE, src, 0, 8, 2n, { wr: { rdma: { remote_addr: dst.mr.addr, rkey: dst.mr.rkey } } });
      const qa = newQpAttr();
      const init = {} as ibv_qp_init_attr;
      eq(ibv_query_qp(x.qp, qa, IBV_QP_STATE, init), 0, 'query');
      const over = init.cap.max_send_sge + 1; // one SGE over what the QP has
      w2.sg_list = Array.from({ length: over }, () => ({ ...w1.sg_list![0]! }));
      w2.num_sge = over;
      w1.next = w2;
      const bad: BadWr<ibv_send_wr> = {};
      eq(ibv_post_send(x.qp, w1, bad), 22, 'EINVAL');
      eq(bad.wr, w2, 'bad_wr is the second WR');
      const [c] = await pollN(x.cq, 1, 'the first WR still runs');
      wcOk(c!, 'first WR');
      eq(c!.wr_id, 1n, 'wr_id');
    },
  },
  ...EXTENDED_CASES,
];
