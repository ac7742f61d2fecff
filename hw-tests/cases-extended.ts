/**
 * hw-tests of the extended verbs (cases.ts runs them with the others, on
 * the model and on rxe0): extended queries, the extended CQ's poll API,
 * resize and moderation, the extended QP's ibv_wr_* batches, memory beyond
 * ibv_reg_mr, UD multicast, the QP rate limit and XRC domains. Names start
 * with "ex-" (`npm run hw-test -- ex-`). Where a device answers
 * differently, the case asserts each provider's answer and
 * EXTENDED_DIFFERENCES says why.
 */
import {
  errno,
  IB_UVERBS_DEVICE_ATOMIC_WRITE,
  IBV_ACCESS_LOCAL_WRITE,
  IBV_QP_EX_WITH_ATOMIC_WRITE,
  IBV_WC_ATOMIC_WRITE,
  IBV_WC_LOC_QP_OP_ERR,
  ibv_wr_atomic_write,
  IBV_ACCESS_MW_BIND,
  IBV_ACCESS_REMOTE_WRITE,
  IBV_MW_TYPE_2,
  IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
  IBV_QP_EX_WITH_BIND_MW,
  IBV_QP_EX_WITH_LOCAL_INV,
  IBV_QP_EX_WITH_SEND_WITH_INV,
  IBV_WC_BIND_MW,
  IBV_WC_COMP_SWAP,
  IBV_WC_LOCAL_INV,
  IBV_WC_REM_ACCESS_ERR,
  IBV_WC_WITH_INV,
  ibv_alloc_mw,
  ibv_dealloc_mw,
  ibv_inc_rkey,
  ibv_wr_atomic_cmp_swp,
  ibv_wr_bind_mw,
  ibv_wr_send_inv,
  IBV_CQ_ATTR_MODERATE,
  IBV_GID_TYPE_ROCE_V1,
  IBV_GID_TYPE_ROCE_V2,
  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
  IBV_QP_EX_WITH_RDMA_READ,
  IBV_QP_EX_WITH_RDMA_WRITE,
  IBV_QP_EX_WITH_SEND,
  IBV_QP_EX_WITH_SEND_WITH_IMM,
  IBV_QP_INIT_ATTR_PD,
  IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
  IBV_QPT_RC,
  IBV_QPT_UD,
  IBV_REREG_MR_CHANGE_ACCESS,
  IBV_REREG_MR_CHANGE_TRANSLATION,
  IBV_REREG_MR_ERR_CMD,
  IBV_REREG_MR_ERR_INPUT,
  IBV_SEND_SIGNALED,
  IBV_SRQ_INIT_ATTR_CQ,
  IBV_SRQ_INIT_ATTR_PD,
  IBV_SRQ_INIT_ATTR_TYPE,
  IBV_SRQ_INIT_ATTR_XRCD,
  IBV_SRQT_XRC,
  IBV_VALUES_MASK_RAW_CLOCK,
  IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
  IBV_WC_FETCH_ADD,
  IBV_WC_RDMA_READ,
  IBV_WC_RDMA_WRITE,
  IBV_WC_RECV,
  IBV_WC_RECV_RDMA_WITH_IMM,
  IBV_WC_SEND,
  IBV_WC_STANDARD_FLAGS,
  IBV_WC_WITH_IMM,
  IBV_WR_RDMA_WRITE,
  IBV_WR_RDMA_WRITE_WITH_IMM,
  IBV_WR_SEND,
  IBV_WR_SEND_WITH_IMM,
  IBV_XRCD_INIT_ATTR_FD,
  IBV_XRCD_INIT_ATTR_OFLAGS,
  O_CREAT,
  ibv_attach_mcast,
  ibv_close_xrcd,
  ibv_cq_ex_to_cq,
  ibv_create_ah,
  ibv_create_cq,
  ibv_create_cq_ex,
  ibv_create_qp,
  ibv_create_qp_ex,
  ibv_create_srq_ex,
  ibv_dereg_mr,
  ibv_destroy_srq,
  ibv_detach_mcast,
  ibv_end_poll,
  ibv_get_srq_num,
  ibv_modify_cq,
  ibv_modify_qp_rate_limit,
  ibv_next_poll,
  ibv_open_xrcd,
  ibv_poll_cq,
  ibv_qp_to_qp_ex,
  ibv_query_device,
  ibv_query_device_ex,
  ibv_get_device_index,
  ibv_query_gid_ex,
  ibv_query_gid_table,
  ibv_query_port,
  ibv_query_rt_values_ex,
  ibv_reg_mr,
  ibv_reg_mr_iova,
  ibv_rereg_mr,
  ibv_resize_cq,
  ibv_start_poll,
  ibv_wc_read_byte_len,
  ibv_wc_read_completion_ts,
  ibv_wc_read_imm_data,
  ibv_wc_read_opcode,
  ibv_wc_read_qp_num,
  ibv_wc_read_wc_flags,
  ibv_wr_abort,
  ibv_wr_atomic_fetch_add,
  ibv_wr_complete,
  ibv_wr_local_inv,
  ibv_wr_rdma_read,
  ibv_wr_rdma_write,
  ibv_wr_send,
  ibv_wr_send_imm,
  ibv_wr_set_inline_data,
  ibv_wr_set_sge,
  ibv_wr_set_sge_list,
  ibv_wr_set_ud_addr,
  ibv_wr_start,
  newDeviceAttr,
  newDeviceAttrEx,
  newGidEntry,
  newGidEntryArray,
  newPortAttr,
  newValuesEx,
  newWcArray,
  rnic_alloc_buf,
  rnic_errno,
  type ibv_cq_ex,
} from '../src/driver/verbs/index.js';
import type { ibv_gid } from '../src/driver/verbs/index.js';
import type { Case } from './cases.js';
import {
  ALL_ACCESS,
  check,
  connectedPair,
  type Dev,
  type End,
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
} from './pair.js';

export const EXTENDED_DIFFERENCES: Record<string, Partial<Record<'model' | 'rxe' | 'other', string>>> = {
  'ex-query-device-gid-clock': {
    rxe: 'rxe has no device clock: ibv_query_rt_values_ex is EOPNOTSUPP (libibverbs: the provider has no query_rt_values) and hca_core_clock 0; the model reports its 1 GHz clock. rxe lists an IP address as a RoCE v2 GID only (its port is RoCE UDP encapsulation only); the model lists it as RoCE v1 and v2',
  },
  'ex-qp-wr-batches': {
    rxe: "rdma-core 44's rxe provider (wr_set_sge_list) sets a request's length to the first SGE's length times num_sge, and (wr_set_inline_data_list) never adds up the inline lengths: a SEND of SGEs of 50 and 70 bytes arrives as 100 bytes, an inline SEND of 40 as 0 (the SGE list is fixed upstream, rdma-core PR #1744); the model sends what the request names",
  },
  'ex-cq-poll-api-resize-moderate': {
    rxe: 'rxe has no completion timestamps (ibv_create_cq_ex with IBV_WC_EX_WITH_COMPLETION_TIMESTAMP: EOPNOTSUPP) and no CQ moderation (ibv_modify_cq: EOPNOTSUPP); the model has both',
  },
  'ex-qp-wr-mw-atomics': {
    rxe: "rxe (Linux 6.1) identifies a type 2 window in a bind by the key in ibv_mw.rkey and checks it against the window's current key, so rebinding needs the key of the last bind there (with the allocation key: IBV_WC_MW_BIND_ERR, seen on rxe0); the model finds the window by the key's index (its upper 24 bits) and takes either. It also reports the SEND_WITH_INV receive with the kernel's IB_WC_WITH_INVALIDATE bit (1 << 2), as in mw-type2-bind-send-inv",
  },
  'ex-atomic-write': {
    rxe: 'Linux 6.1 rxe has no ATOMIC_WRITE (IB_UVERBS_DEVICE_ATOMIC_WRITE clear; it came with 6.2): rdma-core 44 creates the QP with IBV_QP_EX_WITH_ATOMIC_WRITE and posts the request, which completes IBV_WC_LOC_QP_OP_ERR with nothing written; the model executes it (IBA 1.5, as rxe 6.2+)',
  },
  'ex-mr-iova-rereg': {
    rxe: 'rxe (Linux 6.1) has no ibv_rereg_mr: IBV_REREG_MR_ERR_CMD with EOPNOTSUPP for CHANGE_ACCESS and for CHANGE_TRANSLATION; the model changes the access and moves the MR to the new buffer',
  },
  'ex-mcast-attach-loopback': {
    rxe: 'rxe (Linux 6.1) sends a multicast message out of its netdev and does not deliver it to QPs of its own device (its attach joins only the link-layer group, so the looped-back IP packet is not received); the model, like mlx5, delivers it to every attached QP of the sending device too',
  },
  'ex-rate-limit-xrc': {
    rxe: 'rxe has no packet pacing (ibv_modify_qp_rate_limit: EOPNOTSUPP) and no XRC (ibv_open_xrcd: EOPNOTSUPP); the model has both',
  },
};

const code = (f: () => unknown): string => {
  try {
    f();
    return 'ok';
  } catch (e) {
    return (e as { code?: string }).code ?? String(e);
  }
};

/** Every completion of an extended CQ within the deadline, read through the poll API. */
async function pollEx(
  cq: ibv_cq_ex,
  n: number,
  what: string,
  withTs: boolean,
): Promise<{ op: number; len: number; imm: number; qp: number; flags: number; id: bigint; status: number; ts: bigint }[]> {
  const out: { op: number; len: number; imm: number; qp: number; flags: number; id: bigint; status: number; ts: bigint }[] = [];
  const t0 = Date.now();
  while (out.length < n) {
    let r = ibv_start_poll(cq, { comp_mask: 0 });
    if (r === 0) {
      while (r === 0) {
        out.push({
          op: ibv_wc_read_opcode(cq),
          len: ibv_wc_read_byte_len(cq),
          imm: ibv_wc_read_imm_data(cq),
          qp: ibv_wc_read_qp_num(cq),
          flags: ibv_wc_read_wc_flags(cq),
          id: cq.wr_id,
          status: cq.status,
          ts: withTs ? ibv_wc_read_completion_ts(cq) : 0n,
        });
        r = ibv_next_poll(cq);
      }
      ibv_end_poll(cq);
      eq(r, errno.ENOENT, 'ibv_next_poll ends with ENOENT');
    } else eq(r, errno.ENOENT, 'ibv_start_poll on an empty CQ is ENOENT');
    if (out.length < n) {
      if (Date.now() - t0 > 15_000) throw new Fail(`${what}: ${out.length} of ${n} completions`);
      await new Promise((res) => setTimeout(res, 1));
    }
  }
  return out;
}

export const EXTENDED_CASES: Case[] = [
  {
    name: 'ex-query-device-gid-clock',
    async run({ behaviour, a }) {
      const da = newDeviceAttr();
      eq(ibv_query_device(a.ctx, da), 0, 'ibv_query_device');
      const x = newDeviceAttrEx();
      eq(ibv_query_device_ex(a.ctx, null, x), 0, 'ibv_query_device_ex');
      eq(x.orig_attr.max_qp, da.max_qp, 'orig_attr.max_qp');
      eq(x.orig_attr.node_guid, da.node_guid, 'orig_attr.node_guid');
      eq(x.orig_attr.fw_ver, da.fw_ver, 'orig_attr.fw_ver');
      eq(x.device_cap_flags_ex & 0xffffffffn, BigInt(da.device_cap_flags >>> 0), 'the low 32 bits of device_cap_flags_ex');
      eq(typeof x.hca_core_clock, 'bigint', 'hca_core_clock is a bigint');
      eq(ibv_query_device_ex(a.ctx, { comp_mask: 1 }, x), errno.EINVAL, 'input.comp_mask 1 is EINVAL');
      const index = ibv_get_device_index(a.ctx.device);
      check(Number.isInteger(index) && index >= 0, `ibv_get_device_index: ${index} (a kernel with the netlink device query has one)`);
      // GIDs: the entry of the RoCE v2 IPv4 GID, an empty entry, one past the table.
      const e = newGidEntry();
      eq(ibv_query_gid_ex(a.ctx, PORT, a.gidIndex, e, 0), 0, 'ibv_query_gid_ex');
      sameBytes(e.gid.raw, a.gid.raw, 'the entry GID is ibv_query_gid');
      check(e.gid_type === IBV_GID_TYPE_ROCE_V1 || e.gid_type === IBV_GID_TYPE_ROCE_V2, `gid_type ${e.gid_type}`);
      eq(e.gid_index, a.gidIndex, 'gid_index');
      eq(e.port_num, PORT, 'port_num');
      eq(ibv_query_gid_ex(a.ctx, PORT, a.gidIndex, e, 1), errno.EINVAL, 'flags 1 is EINVAL');
      const pa = newPortAttr();
      eq(ibv_query_port(a.ctx, PORT, pa), 0, 'ibv_query_port');
      eq(ibv_query_gid_ex(a.ctx, PORT, pa.gid_tbl_len - 1, e, 0), errno.ENODATA, 'the last entry of the table is empty: ENODATA');
      eq(ibv_query_gid_ex(a.ctx, PORT, pa.gid_tbl_len, e, 0), errno.EINVAL, 'one past the table: EINVAL');
      const table = newGidEntryArray(pa.gid_tbl_len);
      const n = ibv_query_gid_table(a.ctx, table, table.length, 0);
      check(n >= 1, `ibv_query_gid_table: ${n}`);
      const same = table.slice(0, n).filter((t) => t.gid.raw.every((b, i) => b === a.gid.raw[i]));
      check(
        same.some((t) => t.gid_index === a.gidIndex && t.gid_type === e.gid_type),
        'the table lists the entry',
      );
      // The model's port lists an IP address twice, as a RoCE v1 and a RoCE v2 GID; rxe only as RoCE v2.
      const types = behaviour === 'rxe' ? `${IBV_GID_TYPE_ROCE_V2}` : `${IBV_GID_TYPE_ROCE_V1},${IBV_GID_TYPE_ROCE_V2}`;
      const listed = same.map((t) => t.gid_type).sort();
      eq(listed.join(','), types, `the IPv4 GID's types (${behaviour})`);
      // The device clock.
      const v0 = newValuesEx();
      v0.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
      const rc = ibv_query_rt_values_ex(a.ctx, v0);
      if (behaviour === 'rxe') {
        eq(rc, errno.EOPNOTSUPP, 'rxe: ibv_query_rt_values_ex');
        eq(x.hca_core_clock, 0n, 'rxe: hca_core_clock');
        return;
      }
      eq(rc, 0, 'ibv_query_rt_values_ex');
      check(x.hca_core_clock > 0n, `hca_core_clock ${x.hca_core_clock} kHz`);
      await new Promise((r) => setTimeout(r, 5));
      const v1 = newValuesEx();
      v1.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
      eq(ibv_query_rt_values_ex(a.ctx, v1), 0, 'ibv_query_rt_values_ex again');
      check(v1.raw_clock.tv_nsec > v0.raw_clock.tv_nsec, `the clock advances (${v0.raw_clock.tv_nsec} -> ${v1.raw_clock.tv_nsec})`);
    },
  },
  {
    name: 'ex-cq-poll-api-resize-moderate',
    async run({ behaviour, a, b }) {
      const rxe = behaviour === 'rxe';
      if (rxe) {
        const c = code(() => ibv_create_cq_ex(b.ctx, { cqe: 8, wc_flags: IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP }));
        eq(c, 'EOPNOTSUPP', 'rxe: ibv_create_cq_ex with completion timestamps');
      }
      const withTs = !rxe;
      const cqx = ibv_create_cq_ex(b.ctx, { cqe: 16, wc_flags: IBV_WC_STANDARD_FLAGS | (withTs ? IBV_WC_EX_WITH_COMPLETION_TIMESTAMP : 0) });
      const cq = ibv_cq_ex_to_cq(cqx);
      const qp = ibv_create_qp(b.pd, {
        send_cq: cq,
        recv_cq: cq,
        qp_type: IBV_QPT_RC,
        sq_sig_all: 0,
        cap: { max_send_wr: 16, max_recv_wr: 16, max_send_sge: 2, max_recv_sge: 2, max_inline_data: 0 },
      });
      const y: End = { dev: b, cq, qp };
      const x = end(a);
      toInit(x);
      toInit(y);
      toRts(x, y);
      toRts(y, x);
      eq(ibv_start_poll(cqx, { comp_mask: 0 }), errno.ENOENT, 'ibv_start_poll on an empty CQ');
      const src = mem(a, 4096);
      const dst = mem(b, 4096);
      fill(src.buf, 21);
      for (let i = 0; i < 3; i++) postRecv(y, dst, i * 1024, 1024, BigInt(10 + i));
      post(x, sendWr(IBV_WR_SEND, src, 0, 100, 1n));
      post(x, sendWr(IBV_WR_SEND_WITH_IMM, src, 100, 200, 2n, { imm_data: 0x11223344 }));
      post(
        x,
        sendWr(IBV_WR_RDMA_WRITE_WITH_IMM, src, 300, 300, 3n, { imm_data: 0x55667788, wr: { rdma: { remote_addr: dst.mr.addr + 3072n, rkey: dst.mr.rkey } } }),
      );
      const got = await pollEx(cqx, 3, 'the receives', withTs);
      got.forEach((w, i) => eq(w.status, 0, `receive ${i} status`));
      eq(got.map((w) => w.id).join(), '10,11,12', 'wr_ids in order');
      eq(got[0]!.op, IBV_WC_RECV, 'first opcode');
      eq(got[0]!.len, 100, 'first byte_len');
      eq(got[1]!.imm, 0x11223344, 'second imm_data');
      check(got[1]!.flags & IBV_WC_WITH_IMM, 'second IBV_WC_WITH_IMM');
      eq(got[2]!.op, IBV_WC_RECV_RDMA_WITH_IMM, 'third opcode');
      eq(got[2]!.imm, 0x55667788, 'third imm_data');
      eq(got[2]!.len, 300, 'third byte_len');
      got.forEach((w, i) => eq(w.qp, qp.qp_num, `receive ${i} qp_num`));
      sameBytes(dst.buf.subarray(1024, 1224), src.buf.subarray(100, 300), 'the second SEND');
      sameBytes(dst.buf.subarray(3072, 3372), src.buf.subarray(300, 600), 'the WRITE');
      if (withTs) check(got[0]!.ts > 0n && got[0]!.ts <= got[1]!.ts && got[1]!.ts <= got[2]!.ts, `timestamps ${got.map((w) => w.ts).join(' ')}`);
      (await pollN(x.cq, 3, 'the sends')).forEach((w) => wcOk(w, 'send'));
      // Resize with completions waiting: they survive, in order.
      postRecv(y, dst, 0, 64, 20n);
      postRecv(y, dst, 64, 64, 21n);
      post(x, sendWr(IBV_WR_SEND, src, 0, 8, 4n));
      post(x, sendWr(IBV_WR_SEND, src, 0, 16, 5n));
      await pollN(x.cq, 2, 'two more sends');
      await new Promise((r) => setTimeout(r, 100));
      eq(ibv_resize_cq(cq, 64), 0, 'ibv_resize_cq to 64');
      check(cq.cqe >= 64, `cq.cqe ${cq.cqe} after the resize`);
      const after = await pollEx(cqx, 2, 'the receives across the resize', withTs);
      eq(after.map((w) => `${w.id}:${w.len}`).join(), '20:8,21:16', 'completions across the resize');
      eq(ibv_resize_cq(cq, 0), errno.EINVAL, 'ibv_resize_cq to 0');
      // Classic poll of an extended CQ.
      postRecv(y, dst, 0, 64, 22n);
      post(x, sendWr(IBV_WR_SEND, src, 0, 24, 6n));
      const [c] = await pollN(cq, 1, 'ibv_poll_cq of the extended CQ');
      wcOk(c!, 'classic poll');
      eq(c!.byte_len, 24, 'classic byte_len');
      // Moderation.
      const m = ibv_modify_cq(cq, { attr_mask: IBV_CQ_ATTR_MODERATE, moderate: { cq_count: 4, cq_period: 10 } });
      eq(m, rxe ? errno.EOPNOTSUPP : 0, `ibv_modify_cq (${behaviour})`);
      wcOk((await pollN(x.cq, 1, 'the last send'))[0]!, 'last send');
    },
  },
  {
    name: 'ex-qp-wr-batches',
    async run({ behaviour, a, b }) {
      const rxe = behaviour === 'rxe';
      const ops =
        IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
      const scq = ibv_create_cq(a.ctx, 32, null, null, 0);
      const qp = ibv_create_qp_ex(a.ctx, {
        comp_mask: IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
        pd: a.pd,
        send_cq: scq,
        recv_cq: scq,
        qp_type: IBV_QPT_RC,
        sq_sig_all: 0,
        cap: { max_send_wr: 16, max_recv_wr: 16, max_send_sge: 2, max_recv_sge: 2, max_inline_data: 64 },
        send_ops_flags: ops,
      });
      const x: End = { dev: a, cq: scq, qp };
      const y = end(b);
      toInit(x);
      toInit(y);
      toRts(x, y);
      toRts(y, x);
      const qpx = ibv_qp_to_qp_ex(qp);
      const src = mem(a, 8192);
      const dst = mem(b, 8192);
      fill(src.buf, 31);
      const rv = new DataView(dst.buf.buffer, dst.buf.byteOffset);
      rv.setBigUint64(4096, 7000n, true);
      postRecv(y, dst, 6000, 1000, 50n);
      postRecv(y, dst, 7000, 1000, 51n);
      ibv_wr_start(qpx);
      qpx.wr_flags = IBV_SEND_SIGNALED;
      qpx.wr_id = 1n;
      ibv_wr_rdma_write(qpx, dst.mr.rkey, dst.mr.addr + 100n);
      ibv_wr_set_sge(qpx, src.mr.lkey, src.mr.addr, 1000);
      qpx.wr_id = 2n;
      ibv_wr_send_imm(qpx, 0x0a0b0c0d);
      ibv_wr_set_sge_list(qpx, 2, [
        { addr: src.mr.addr + 2000n, length: 50, lkey: src.mr.lkey },
        { addr: src.mr.addr + 3000n, length: 70, lkey: src.mr.lkey },
      ]);
      qpx.wr_id = 3n;
      ibv_wr_rdma_read(qpx, dst.mr.rkey, dst.mr.addr + 100n);
      ibv_wr_set_sge(qpx, src.mr.lkey, src.mr.addr + 4096n, 1000);
      qpx.wr_id = 4n;
      ibv_wr_atomic_fetch_add(qpx, dst.mr.rkey, dst.mr.addr + 4096n, 11n);
      ibv_wr_set_sge(qpx, src.mr.lkey, src.mr.addr + 5120n, 8);
      qpx.wr_id = 5n;
      ibv_wr_send(qpx);
      ibv_wr_set_inline_data(qpx, src.mr.addr + 6000n, 40);
      eq(ibv_wr_complete(qpx), 0, 'ibv_wr_complete of five requests');
      src.buf.fill(0, 6000, 6040); // inline: copied at complete
      const s = await pollN(x.cq, 5, 'the batch');
      s.forEach((w) => wcOk(w, `batch wr ${w.wr_id}`));
      eq(s.map((w) => w.wr_id).join(), '1,2,3,4,5', 'completion order');
      eq(s.map((w) => w.opcode).join(), [IBV_WC_RDMA_WRITE, IBV_WC_SEND, IBV_WC_RDMA_READ, IBV_WC_FETCH_ADD, IBV_WC_SEND].join(), 'opcodes');
      sameBytes(dst.buf.subarray(100, 1100), src.buf.subarray(0, 1000), 'the WRITE');
      sameBytes(src.buf.subarray(4096, 5096), src.buf.subarray(0, 1000), 'the READ of what was written');
      eq(new DataView(src.buf.buffer, src.buf.byteOffset).getBigUint64(5120, true), 7000n, 'fetched value');
      eq(rv.getBigUint64(4096, true), 7011n, 'added value');
      const r = await pollN(y.cq, 2, 'the receives');
      r.forEach((w) => wcOk(w, 'receive'));
      eq(r[0]!.imm_data, 0x0a0b0c0d, 'imm_data');
      sameBytes(dst.buf.subarray(6000, 6050), src.buf.subarray(2000, 2050), 'first SGE');
      const full = new Uint8Array(8192);
      fill(full, 31);
      if (rxe) {
        // rdma-core 44's rxe sums the first SGE's length num_sge times, and never sums the inline lengths.
        eq(r[0]!.byte_len, 100, 'rxe: SEND_WITH_IMM of SGEs of 50 and 70 bytes: byte_len 2 x 50');
        sameBytes(dst.buf.subarray(6050, 6100), src.buf.subarray(3000, 3050), 'rxe: the first 50 bytes of the second SGE');
        eq(r[1]!.byte_len, 0, 'rxe: the inline SEND: byte_len 0');
      } else {
        eq(r[0]!.byte_len, 120, 'SEND_WITH_IMM of two SGEs: byte_len');
        sameBytes(dst.buf.subarray(6050, 6120), src.buf.subarray(3000, 3070), 'second SGE');
        eq(r[1]!.byte_len, 40, 'inline SEND byte_len');
        sameBytes(dst.buf.subarray(7000, 7040), full.subarray(6000, 6040), 'the inline bytes as they were at complete');
      }
      // A batch with a builder the QP was not created with posts nothing; an aborted one neither.
      postRecv(y, dst, 0, 64, 52n);
      ibv_wr_start(qpx);
      qpx.wr_id = 6n;
      ibv_wr_send(qpx);
      ibv_wr_set_sge(qpx, src.mr.lkey, src.mr.addr, 8);
      qpx.wr_id = 7n;
      ibv_wr_local_inv(qpx, 0x1234);
      eq(ibv_wr_complete(qpx), errno.EINVAL, 'a batch with LOCAL_INV (not in send_ops_flags)');
      ibv_wr_start(qpx);
      qpx.wr_id = 8n;
      ibv_wr_send(qpx);
      ibv_wr_set_sge(qpx, src.mr.lkey, src.mr.addr, 8);
      ibv_wr_abort(qpx);
      await new Promise((res) => setTimeout(res, 300));
      eq(ibv_poll_cq(x.cq, 4, newWcArray(4)), 0, 'nothing was posted by either');
      ibv_wr_start(qpx);
      qpx.wr_id = 9n;
      ibv_wr_send(qpx);
      ibv_wr_set_sge(qpx, src.mr.lkey, src.mr.addr, 8);
      eq(ibv_wr_complete(qpx), 0, 'the queue is usable after them');
      const [ok] = await pollN(x.cq, 1, 'the next batch');
      eq(ok!.wr_id, 9n, 'its wr_id');
      wcOk((await pollN(y.cq, 1, 'its receive'))[0]!, 'receive');
      // UD: a QP type without RDMA WRITE refuses the builder at creation.
      const c = code(() =>
        ibv_create_qp_ex(a.ctx, {
          comp_mask: IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
          pd: a.pd,
          send_cq: scq,
          recv_cq: scq,
          qp_type: IBV_QPT_UD,
          sq_sig_all: 0,
          cap: { max_send_wr: 4, max_recv_wr: 4, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 },
          send_ops_flags: IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE,
        }),
      );
      eq(c, 'EOPNOTSUPP', 'UD with IBV_QP_EX_WITH_RDMA_WRITE');
    },
  },
  {
    name: 'ex-qp-wr-mw-atomics',
    async run({ behaviour, a, b }) {
      const qpEx = (d: Dev, ops: number): End => {
        const cq = ibv_create_cq(d.ctx, 32, null, null, 0);
        const qp = ibv_create_qp_ex(d.ctx, {
          comp_mask: IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
          pd: d.pd,
          send_cq: cq,
          recv_cq: cq,
          qp_type: IBV_QPT_RC,
          sq_sig_all: 0,
          cap: { max_send_wr: 16, max_recv_wr: 16, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 },
          send_ops_flags: ops,
        });
        return { dev: d, cq, qp };
      };
      const x = qpEx(a, IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP);
      const y = qpEx(b, IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV);
      toInit(x);
      toInit(y);
      toRts(x, y);
      toRts(y, x);
      const qx = ibv_qp_to_qp_ex(x.qp);
      const qy = ibv_qp_to_qp_ex(y.qp);
      const src = mem(a, 4096);
      const dst = mem(b, 4096, ALL_ACCESS | IBV_ACCESS_MW_BIND);
      const atom = mem(b, 4096);
      const rbuf = mem(b, 4096);
      fill(src.buf, 81);
      const one = async (q: typeof qx, e: End, what: string, build: () => void) => {
        ibv_wr_start(q);
        q.wr_flags = IBV_SEND_SIGNALED;
        build();
        eq(ibv_wr_complete(q), 0, `ibv_wr_complete: ${what}`);
        const [w] = await pollN(e.cq, 1, what);
        return w!;
      };
      // A type 2 window bound through ibv_wr_bind_mw on the responder's QP.
      const mw = ibv_alloc_mw(b.pd, IBV_MW_TYPE_2);
      const k1 = ibv_inc_rkey(mw.rkey);
      const bind = (rkey: number) => () => {
        qy.wr_id = BigInt(rkey);
        ibv_wr_bind_mw(qy, mw, rkey, { mr: dst.mr, addr: dst.mr.addr + 512n, length: 1024n, mw_access_flags: IBV_ACCESS_REMOTE_WRITE });
      };
      const bw = await one(qy, y, 'bind', bind(k1));
      wcOk(bw, 'bind');
      eq(bw.opcode, IBV_WC_BIND_MW, 'bind opcode');
      const wr = await one(qx, x, 'write through the window', () => {
        qx.wr_id = 1n;
        ibv_wr_rdma_write(qx, k1, dst.mr.addr + 600n);
        ibv_wr_set_sge(qx, src.mr.lkey, src.mr.addr, 300);
      });
      wcOk(wr, 'write through the window');
      sameBytes(dst.buf.subarray(600, 900), src.buf.subarray(0, 300), 'bytes through the window');
      // Compare-and-swap: equal, then not.
      const av = new DataView(atom.buf.buffer, atom.buf.byteOffset);
      const lv = new DataView(src.buf.buffer, src.buf.byteOffset);
      av.setBigUint64(64, 77n, true);
      for (const [cmp, after] of [
        [77n, 0xfeedn],
        [77n, 0xfeedn],
      ] as const) {
        const c = await one(qx, x, 'cmp-swap', () => {
          qx.wr_id = 2n;
          ibv_wr_atomic_cmp_swp(qx, atom.mr.rkey, atom.mr.addr + 64n, cmp, 0xfeedn);
          ibv_wr_set_sge(qx, src.mr.lkey, src.mr.addr + 2048n, 8);
        });
        wcOk(c, 'cmp-swap');
        eq(c.opcode, IBV_WC_COMP_SWAP, 'cmp-swap opcode');
        eq(av.getBigUint64(64, true), after, 'the remote value');
      }
      eq(lv.getBigUint64(2048, true), 0xfeedn, 'the second cmp-swap fetched the swapped value (no swap)');
      // SEND_WITH_INV invalidates the window at the responder.
      postRecv(y, rbuf, 0, 64, 90n);
      const si = await one(qx, x, 'SEND_WITH_INV', () => {
        qx.wr_id = 3n;
        ibv_wr_send_inv(qx, k1);
        ibv_wr_set_sge(qx, src.mr.lkey, src.mr.addr, 16);
      });
      wcOk(si, 'SEND_WITH_INV');
      const [r] = await pollN(y.cq, 1, 'its receive');
      wcOk(r!, 'receive of SEND_WITH_INV');
      const withInv = behaviour === 'rxe' ? 1 << 2 : IBV_WC_WITH_INV;
      eq(r!.wc_flags & withInv, withInv, 'the invalidation flag (rxe: the kernel IB_WC_WITH_INVALIDATE bit, as in mw-type2-bind-send-inv)');
      eq(r!.invalidated_rkey >>> 0, k1, 'invalidated_rkey');
      // Bind again with the next key, invalidate it locally through ibv_wr_local_inv. rxe finds a type 2
      // window by the key in ibv_mw.rkey and requires the window's current key there (a rebind naming the
      // allocation key failed with IBV_WC_MW_BIND_ERR on rxe0): the program keeps the key it bound, as it must.
      (mw as { rkey: number }).rkey = k1;
      const k2 = ibv_inc_rkey(k1);
      wcOk(await one(qy, y, 'rebind', bind(k2)), 'rebind');
      const li = await one(qy, y, 'LOCAL_INV', () => {
        qy.wr_id = 4n;
        ibv_wr_local_inv(qy, k2);
      });
      wcOk(li, 'LOCAL_INV');
      eq(li.opcode, IBV_WC_LOCAL_INV, 'LOCAL_INV opcode');
      const e = await one(qx, x, 'write with the invalidated key', () => {
        qx.wr_id = 5n;
        ibv_wr_rdma_write(qx, k2, dst.mr.addr + 600n);
        ibv_wr_set_sge(qx, src.mr.lkey, src.mr.addr, 8);
      });
      eq(e.status, IBV_WC_REM_ACCESS_ERR, 'the key LOCAL_INV retired is refused');
      eq(ibv_dealloc_mw(mw), 0, 'ibv_dealloc_mw');
    },
  },
  {
    name: 'ex-atomic-write',
    async run({ behaviour, a, b }) {
      const rxe = behaviour === 'rxe';
      const x0 = newDeviceAttrEx();
      eq(ibv_query_device_ex(a.ctx, null, x0), 0, 'ibv_query_device_ex');
      eq((x0.device_cap_flags_ex & IB_UVERBS_DEVICE_ATOMIC_WRITE) !== 0n, !rxe, `IB_UVERBS_DEVICE_ATOMIC_WRITE (${behaviour})`);
      const cq = ibv_create_cq(a.ctx, 8, null, null, 0);
      const qp = ibv_create_qp_ex(a.ctx, {
        comp_mask: IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
        pd: a.pd,
        send_cq: cq,
        recv_cq: cq,
        qp_type: IBV_QPT_RC,
        sq_sig_all: 0,
        cap: { max_send_wr: 8, max_recv_wr: 8, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 },
        send_ops_flags: IBV_QP_EX_WITH_ATOMIC_WRITE,
      });
      const x: End = { dev: a, cq, qp };
      const y = end(b);
      toInit(x);
      toInit(y);
      toRts(x, y);
      toRts(y, x);
      const dst = mem(b, 4096);
      dst.buf.fill(0xee, 0, 32);
      const q = ibv_qp_to_qp_ex(qp);
      ibv_wr_start(q);
      q.wr_flags = IBV_SEND_SIGNALED;
      q.wr_id = 1n;
      ibv_wr_atomic_write(q, dst.mr.rkey, dst.mr.addr + 8n, Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8));
      eq(ibv_wr_complete(q), 0, 'ibv_wr_complete');
      const [w] = await pollN(cq, 1, 'the ATOMIC_WRITE');
      if (rxe) {
        // Without the capability the provider library posts it and the kernel refuses the opcode.
        eq(w!.status, IBV_WC_LOC_QP_OP_ERR, 'rxe: the ATOMIC_WRITE completes LOC_QP_OP_ERR');
        check(
          dst.buf.subarray(0, 32).every((v) => v === 0xee),
          'rxe: nothing written',
        );
        return;
      }
      wcOk(w!, 'ATOMIC_WRITE');
      eq(w!.opcode, IBV_WC_ATOMIC_WRITE, 'opcode');
      sameBytes(dst.buf.subarray(8, 16), Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8), 'the 8 bytes in wire order');
      check(dst.buf.subarray(0, 8).every((v) => v === 0xee) && dst.buf.subarray(16, 32).every((v) => v === 0xee), 'around them untouched');
    },
  },
  {
    name: 'ex-ud-wr-batch',
    async run({ a, b }) {
      const scq = ibv_create_cq(a.ctx, 16, null, null, 0);
      const qp = ibv_create_qp_ex(a.ctx, {
        comp_mask: IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
        pd: a.pd,
        send_cq: scq,
        recv_cq: scq,
        qp_type: IBV_QPT_UD,
        sq_sig_all: 1,
        cap: { max_send_wr: 8, max_recv_wr: 8, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 },
        send_ops_flags: IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM,
      });
      const x: End = { dev: a, cq: scq, qp };
      const y = end(b, IBV_QPT_UD);
      toInit(x);
      toInit(y);
      toRts(x, y);
      toRts(y, x);
      const src = mem(a, 4096);
      const dst = mem(b, 4096);
      fill(src.buf, 41);
      postRecv(y, dst, 0, 40 + 512, 60n);
      postRecv(y, dst, 1024, 40 + 512, 61n);
      const ah = ibv_create_ah(a.pd, {
        is_global: 1,
        port_num: PORT,
        dlid: 0,
        sl: 0,
        src_path_bits: 0,
        static_rate: 0,
        grh: { dgid: b.gid, sgid_index: a.gidIndex, hop_limit: 64, flow_label: 0, traffic_class: 0 },
      });
      const qpx = ibv_qp_to_qp_ex(qp);
      ibv_wr_start(qpx);
      qpx.wr_id = 1n;
      ibv_wr_send(qpx);
      ibv_wr_set_ud_addr(qpx, ah, y.qp.qp_num, QKEY);
      ibv_wr_set_sge(qpx, src.mr.lkey, src.mr.addr, 300);
      qpx.wr_id = 2n;
      ibv_wr_send_imm(qpx, 0x01020304);
      ibv_wr_set_ud_addr(qpx, ah, y.qp.qp_num, QKEY);
      ibv_wr_set_sge(qpx, src.mr.lkey, src.mr.addr + 300n, 200);
      eq(ibv_wr_complete(qpx), 0, 'ibv_wr_complete (UD)');
      (await pollN(x.cq, 2, 'UD sends')).forEach((w) => wcOk(w, 'UD send'));
      const [r1, r2] = await pollN(y.cq, 2, 'UD receives');
      wcOk(r1!, 'UD recv');
      eq(r1!.byte_len, 340, 'GRH + 300');
      eq(r1!.src_qp, qp.qp_num, 'src_qp');
      sameBytes(dst.buf.subarray(40, 340), src.buf.subarray(0, 300), 'first payload');
      wcOk(r2!, 'UD recv with imm');
      eq(r2!.imm_data, 0x01020304, 'imm_data');
      sameBytes(dst.buf.subarray(1064, 1264), src.buf.subarray(300, 500), 'second payload');
    },
  },
  {
    name: 'ex-mr-iova-rereg',
    async run({ behaviour, a, b }) {
      const [x] = connectedPair(a, b);
      const src = mem(a, 4096);
      fill(src.buf, 51);
      // ibv_reg_mr_iova: the peer addresses the bytes from the iova.
      const buf = rnic_alloc_buf(b.ctx, 8192, 4096);
      const iova = 0x4000_0000n;
      const mr = ibv_reg_mr_iova(b.pd, buf, iova, ALL_ACCESS);
      post(x, sendWr(IBV_WR_RDMA_WRITE, src, 0, 500, 1n, { wr: { rdma: { remote_addr: iova + 64n, rkey: mr.rkey } } }));
      wcOk((await pollN(x.cq, 1, 'write by iova'))[0]!, 'write by iova');
      sameBytes(buf.subarray(64, 564), src.buf.subarray(0, 500), 'the bytes at iova + 64');
      check(
        buf.subarray(0, 64).every((v) => v === 0),
        'before them untouched',
      );
      eq(ibv_dereg_mr(mr), 0, 'ibv_dereg_mr');
      // ibv_rereg_mr: access (local only -> remote write), then the translation.
      const m2buf = rnic_alloc_buf(b.ctx, 4096, 4096);
      const m2 = ibv_reg_mr(b.pd, m2buf, IBV_ACCESS_LOCAL_WRITE);
      const nbuf = rnic_alloc_buf(b.ctx, 4096, 4096);
      eq(ibv_rereg_mr(m2, IBV_REREG_MR_CHANGE_TRANSLATION, null, nbuf, ALL_ACCESS), IBV_REREG_MR_ERR_INPUT, 'access flags without CHANGE_ACCESS');
      eq(rnic_errno(), errno.EINVAL, 'their errno');
      if (behaviour === 'rxe') {
        for (const [flags, what] of [
          [IBV_REREG_MR_CHANGE_ACCESS, 'CHANGE_ACCESS'],
          [IBV_REREG_MR_CHANGE_TRANSLATION, 'CHANGE_TRANSLATION'],
        ] as const) {
          const access = flags === IBV_REREG_MR_CHANGE_ACCESS ? ALL_ACCESS : 0;
          eq(ibv_rereg_mr(m2, flags, null, nbuf, access), IBV_REREG_MR_ERR_CMD, `rxe: ibv_rereg_mr ${what}`);
          eq(rnic_errno(), errno.EOPNOTSUPP, `rxe: ibv_rereg_mr ${what}: errno`);
        }
      } else {
        eq(ibv_rereg_mr(m2, IBV_REREG_MR_CHANGE_ACCESS, null, null, ALL_ACCESS), 0, 'ibv_rereg_mr CHANGE_ACCESS');
        post(x, sendWr(IBV_WR_RDMA_WRITE, src, 0, 100, 2n, { wr: { rdma: { remote_addr: m2.addr, rkey: m2.rkey } } }));
        wcOk((await pollN(x.cq, 1, 'write after the access change'))[0]!, 'write after CHANGE_ACCESS');
        sameBytes(m2buf.subarray(0, 100), src.buf.subarray(0, 100), 'written bytes');
        eq(ibv_rereg_mr(m2, IBV_REREG_MR_CHANGE_TRANSLATION, null, nbuf, 0), 0, 'ibv_rereg_mr CHANGE_TRANSLATION');
        post(x, sendWr(IBV_WR_RDMA_WRITE, src, 200, 100, 3n, { wr: { rdma: { remote_addr: m2.addr, rkey: m2.rkey } } }));
        wcOk((await pollN(x.cq, 1, 'write after the translation change'))[0]!, 'write after CHANGE_TRANSLATION');
        sameBytes(nbuf.subarray(0, 100), src.buf.subarray(200, 300), 'the bytes land in the new buffer');
      }
      eq(ibv_dereg_mr(m2), 0, 'ibv_dereg_mr');
      eq(
        code(() => ibv_reg_mr_iova(b.pd, buf, -1n, ALL_ACCESS)),
        'EINVAL',
        'a negative iova',
      );
    },
  },
  {
    name: 'ex-mcast-attach-loopback',
    async run({ behaviour, a, b }) {
      // Sender and one member on a, another member on b (on rxe0 all three are one device).
      const x = end(a, IBV_QPT_UD);
      const z = end(a, IBV_QPT_UD);
      const y = end(b, IBV_QPT_UD);
      for (const e of [x, y, z]) toInit(e);
      toRts(x, y);
      toRts(y, x);
      toRts(z, x);
      const group: ibv_gid = { raw: Uint8Array.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 1, 2, 3]) };
      const unicast: ibv_gid = { raw: Uint8Array.from(a.gid.raw) };
      eq(ibv_attach_mcast(y.qp, group, 0), 0, 'attach (b)');
      eq(ibv_attach_mcast(z.qp, group, 0), 0, 'attach (a, the sender side)');
      eq(ibv_attach_mcast(y.qp, unicast, 0), errno.EINVAL, 'attach to a unicast GID');
      const [rc] = connectedPair(a, b);
      eq(ibv_attach_mcast(rc.qp, group, 0), errno.EINVAL, 'attach an RC QP');
      const src = mem(a, 4096);
      const dy = mem(b, 4096);
      const dz = mem(a, 4096);
      fill(src.buf, 61);
      postRecv(y, dy, 0, 40 + 256, 70n);
      postRecv(z, dz, 0, 40 + 256, 71n);
      const ah = ibv_create_ah(a.pd, {
        is_global: 1,
        port_num: PORT,
        dlid: 0xc000,
        sl: 0,
        src_path_bits: 0,
        static_rate: 0,
        grh: { dgid: group, sgid_index: a.gidIndex, hop_limit: 64, flow_label: 0, traffic_class: 0 },
      });
      post(x, sendWr(IBV_WR_SEND, src, 0, 200, 1n, { wr: { ud: { ah, remote_qpn: 0xffffff, remote_qkey: QKEY } } }));
      wcOk((await pollN(x.cq, 1, 'multicast send'))[0]!, 'multicast send');
      if (behaviour === 'rxe') {
        await new Promise((r) => setTimeout(r, 1000));
        eq(ibv_poll_cq(y.cq, 1, newWcArray(1)) + ibv_poll_cq(z.cq, 1, newWcArray(1)), 0, 'rxe: no member on the sending device receives it');
      } else {
        for (const [e, d, who] of [
          [y, dy, 'the member on the other device'],
          [z, dz, 'the member on the sending device (loopback)'],
        ] as const) {
          const [r] = await pollN(e.cq, 1, who);
          wcOk(r!, who);
          eq(r!.byte_len, 240, `${who}: GRH + 200`);
          eq(r!.src_qp, x.qp.qp_num, `${who}: src_qp`);
          sameBytes(d.buf.subarray(40, 240), src.buf.subarray(0, 200), `${who}: payload`);
        }
      }
      eq(ibv_detach_mcast(y.qp, group, 0), 0, 'detach');
      eq(ibv_detach_mcast(y.qp, group, 0), errno.EINVAL, 'detach again');
      eq(ibv_detach_mcast(z.qp, group, 0), 0, 'detach (a)');
    },
  },
  {
    name: 'ex-rate-limit-xrc',
    async run({ behaviour, a, b }) {
      const rxe = behaviour === 'rxe';
      const [x] = connectedPair(a, b);
      const limit = { rate_limit: 1_000_000, max_burst_sz: 0, typical_pkt_sz: 0, comp_mask: 0 };
      eq(ibv_modify_qp_rate_limit(x.qp, limit), rxe ? errno.EOPNOTSUPP : 0, `ibv_modify_qp_rate_limit 1 Gb/s (${behaviour})`);
      if (!rxe) {
        const src = mem(a, 4096);
        const dst = mem(b, 4096);
        fill(src.buf, 71);
        post(x, sendWr(IBV_WR_RDMA_WRITE, src, 0, 4096, 1n, { wr: { rdma: { remote_addr: dst.mr.addr, rkey: dst.mr.rkey } } }));
        wcOk((await pollN(x.cq, 1, 'a paced write'))[0]!, 'paced write');
        sameBytes(dst.buf, src.buf, 'paced bytes');
        eq(ibv_modify_qp_rate_limit(x.qp, { ...limit, rate_limit: 0 }), 0, 'rate 0 lifts the limit');
      }
      const attr = { comp_mask: IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS, fd: -1, oflags: O_CREAT };
      if (rxe) {
        eq(
          code(() => ibv_open_xrcd(b.ctx, attr)),
          'EOPNOTSUPP',
          'rxe: ibv_open_xrcd',
        );
        return;
      }
      const xrcd = ibv_open_xrcd(b.ctx, attr);
      const cq = ibv_create_cq(b.ctx, 8, null, null, 0);
      const srq = ibv_create_srq_ex(b.ctx, {
        comp_mask: IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
        srq_type: IBV_SRQT_XRC,
        pd: b.pd,
        xrcd,
        cq,
        attr: { max_wr: 8, max_sge: 1, srq_limit: 0 },
      });
      const out = { srq_num: 0 };
      eq(ibv_get_srq_num(srq, out), 0, 'ibv_get_srq_num');
      check(out.srq_num > 0 && out.srq_num < 1 << 24, `srq_num ${out.srq_num}`);
      eq(ibv_close_xrcd(xrcd), errno.EBUSY, 'closing the domain of a live XRC SRQ');
      eq(ibv_destroy_srq(srq), 0, 'destroy the XRC SRQ');
      eq(ibv_close_xrcd(xrcd), 0, 'ibv_close_xrcd');
      eq(ibv_close_xrcd(xrcd), errno.EINVAL, 'ibv_close_xrcd again');
    },
  },
];
