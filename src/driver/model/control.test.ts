/**
 * Control verbs of the model provider against a fake device whose firmware
 * is the real one (commands through the mailbox, executed inline).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  errno,
  IBV_ACCESS_LOCAL_WRITE,
  IBV_ACCESS_REMOTE_READ,
  IBV_ACCESS_REMOTE_WRITE,
  IBV_GID_TYPE_ROCE_V2,
  IBV_LINK_LAYER_ETHERNET,
  IBV_MTU_1024,
  IBV_MTU_256,
  IBV_MTU_4096,
  IBV_NODE_CA,
  IBV_PORT_ACTIVE,
  IBV_QP_ACCESS_FLAGS,
  IBV_QP_AV,
  IBV_QP_DEST_QPN,
  IBV_QP_PATH_MTU,
  IBV_QP_PKEY_INDEX,
  IBV_QP_PORT,
  IBV_QP_QKEY,
  IBV_QP_RQ_PSN,
  IBV_QP_STATE,
  IBV_QP_TIMEOUT,
  IBV_QPS_ERR,
  IBV_QPS_INIT,
  IBV_QPS_RESET,
  IBV_QPS_RTR,
  IBV_QPS_RTS,
  IBV_QPT_RAW_PACKET,
  IBV_QPT_RC,
  IBV_QPT_UC,
  IBV_QPT_UD,
  IBV_SRQ_LIMIT,
  IBV_SRQ_MAX_WR,
  IBV_TRANSPORT_IB,
  IBV_WR_SEND,
} from '../../device/abi/constants.js';
import { CQC, MPT, QPC, SRQC } from '../../device/contexts.js';
import { Ctr } from '../../device/counters.js';
import { decodeStruct } from '../../device/layout.js';
import { SMALL_DEVICE } from '../../device/testbed.js';
import { recvWqeStride, sendWqeStride } from '../../device/wqe.js';
import { newAhAttr, newDeviceAttr, newGid, newPortAttr, newQpAttr, newQpCap, newSendWr, newSrqAttr } from '../verbs/structs.js';
import type { ibv_context, ibv_cq, ibv_pd, ibv_qp_init_attr, ibv_srq } from '../verbs/types.js';
import {
  ibv_alloc_pd,
  ibv_close_device,
  ibv_create_ah,
  ibv_create_cq,
  ibv_create_qp,
  ibv_create_srq,
  ibv_dealloc_pd,
  ibv_dereg_mr,
  ibv_destroy_ah,
  ibv_destroy_cq,
  ibv_destroy_qp,
  ibv_destroy_srq,
  ibv_get_device_guid,
  ibv_get_device_list,
  ibv_get_device_name,
  ibv_modify_qp,
  ibv_modify_srq,
  ibv_open_device,
  ibv_post_send,
  ibv_query_device,
  ibv_query_gid,
  ibv_query_pkey,
  rnic_errno,
  ibv_query_port,
  ibv_query_qp,
  ibv_query_srq,
  ibv_reg_mr,
  rnic_alloc_buf,
  rnic_free_buf,
  rnic_read_counters,
} from '../verbs/verbs.js';
import { VerbsError } from '../verbs/errno-error.js';
import { createFakeDevice } from './fake-device.js';
import { openHarness, rcConnect, rcToInit, ucConnect, udConnect, type Harness } from './harness.js';
import { addModelDevice, modelProvider, removeModelDevice } from './provider.js';
import { providers } from '../providers.js';

let h: Harness;
let ctx: ibv_context;
beforeEach(() => {
  h = openHarness({ config: { device: { ...SMALL_DEVICE.device, maxAh: 3 } } });
  ctx = h.ctx;
});
afterEach(() => h.close());

function errnoOf(f: () => unknown): number {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(VerbsError);
    return (e as VerbsError).errno;
  }
  return 0;
}

function qpInit(_pd: ibv_pd, cq: ibv_cq, type: number, over: Partial<ibv_qp_init_attr> = {}): ibv_qp_init_attr {
  return {
    send_cq: cq,
    recv_cq: cq,
    cap: { max_send_wr: 10, max_recv_wr: 20, max_send_sge: 2, max_recv_sge: 3, max_inline_data: 32 },
    qp_type: type,
    sq_sig_all: 0,
    ...over,
  };
}

/** Bytes of a QP context, to show that a failed modify changed nothing. */
function qpcBytes(qpn: number): Uint8Array {
  const t = h.fake.tb.fw.tables;
  const off = t.qpByNumber(qpn);
  return t.u8.slice(off, off + QPC.size);
}

function ownGid(index = 1) {
  const g = newGid();
  expect(ibv_query_gid(ctx, 1, index, g)).toBe(0);
  return g;
}

describe('device list and contexts', () => {
  it('lists the device with its name and GUID, opens and closes contexts', () => {
    const list = ibv_get_device_list();
    expect(list).toContain(h.dev);
    expect(providers()).toContain(modelProvider);
    expect(ibv_get_device_name(h.dev)).toBe(h.fake.handle.name);
    expect(ibv_get_device_guid(h.dev)).toBe(h.fake.tb.caps.device.nodeGuid);
    expect(h.dev.node_type).toBe(IBV_NODE_CA);
    expect(h.dev.transport_type).toBe(IBV_TRANSPORT_IB);
    expect(h.dev.ibdev_path).toBe(`/sys/class/infiniband/${h.fake.handle.name}`);
    expect(ctx.num_comp_vectors).toBe(h.fake.tb.caps.device.numCompVectors);
    const eqs = h.fake.tb.fw.eqs.inUse;
    const ctx2 = ibv_open_device(h.dev);
    expect(h.fake.tb.fw.eqs.inUse).toBe(eqs + 1);
    expect(ibv_close_device(ctx2)).toBe(0);
    expect(h.fake.tb.fw.eqs.inUse).toBe(eqs);
    expect(ibv_close_device(ctx2)).toBe(errno.EINVAL);
  });

  it('refuses a duplicate name; a removed device cannot be opened', () => {
    const f = createFakeDevice({ name: h.fake.handle.name });
    expect(errnoOf(() => addModelDevice(f.handle))).toBe(errno.EEXIST);
    const g = createFakeDevice();
    const dev = addModelDevice(g.handle);
    expect(ibv_get_device_list()).toContain(dev);
    expect(removeModelDevice(g.handle.name)).toBe(true);
    expect(removeModelDevice(g.handle.name)).toBe(false);
    expect(ibv_get_device_list()).not.toContain(dev);
    expect(errnoOf(() => ibv_open_device(dev))).toBe(errno.ENODEV);
  });

  it('close destroys what the application left and frees every host allocation', () => {
    const g = createFakeDevice({ config: SMALL_DEVICE });
    const dev = addModelDevice(g.handle);
    const before = g.tb.mem.allocationCount;
    const c = ibv_open_device(dev);
    const pd = ibv_alloc_pd(c);
    const buf = rnic_alloc_buf(c, 4096, 4096);
    ibv_reg_mr(pd, buf, IBV_ACCESS_LOCAL_WRITE);
    const cq = ibv_create_cq(c, 16, null, null, 0);
    const srq = ibv_create_srq(pd, { attr: { max_wr: 7, max_sge: 1, srq_limit: 0 } });
    ibv_create_qp(pd, qpInit(pd, cq, IBV_QPT_RC));
    ibv_create_qp(pd, qpInit(pd, cq, IBV_QPT_UD, { srq }));
    expect(g.tb.fw.qps.inUse).toBe(2);
    expect(ibv_close_device(c)).toBe(0);
    const fw = g.tb.fw;
    expect([fw.qps.inUse, fw.cqs.inUse, fw.srqs.inUse, fw.mrs.inUse, fw.pds.inUse, fw.eqs.inUse]).toEqual([0, 0, 0, 0, 0, 0]);
    expect(g.tb.mem.allocationCount).toBe(before);
    rnic_free_buf(c, buf); // after close: already freed, no error
    removeModelDevice(g.handle.name);
  });

  it('a device that never becomes ready is not opened', () => {
    const g = createFakeDevice();
    Atomics.store(g.tb.bar.i32, 0x008 >> 2, 0); // DEVICE_STATUS: not READY
    const dev = addModelDevice(g.handle);
    expect(errnoOf(() => ibv_open_device(dev))).toBe(errno.ENODEV);
    removeModelDevice(g.handle.name);
  });
});

describe('queries', () => {
  it('query_device reports the capabilities', () => {
    const a = newDeviceAttr();
    expect(ibv_query_device(ctx, a)).toBe(0);
    const d = h.fake.tb.caps.device;
    expect(a.fw_ver).toBe(d.fwVer);
    expect(a.node_guid).toBe(d.nodeGuid);
    expect(a.sys_image_guid).toBe(d.sysImageGuid);
    expect(a.max_mr_size).toBe(d.maxMrSize);
    expect(a.page_size_cap).toBe(d.pageSizeCap);
    expect(a.max_qp).toBe(d.maxQp);
    expect(a.max_qp_wr).toBe(d.maxQpWr);
    expect(a.device_cap_flags).toBe(d.deviceCapFlags);
    expect(a.max_sge).toBe(d.maxSge);
    expect(a.max_sge_rd).toBe(d.maxSgeRd);
    expect(a.max_cq).toBe(d.maxCq);
    expect(a.max_cqe).toBe(d.maxCqe);
    expect(a.max_mr).toBe(d.maxMr);
    expect(a.max_pd).toBe(d.maxPd);
    expect(a.max_qp_rd_atom).toBe(d.maxQpRdAtom);
    expect(a.max_qp_init_rd_atom).toBe(d.maxQpInitRdAtom);
    expect(a.max_res_rd_atom).toBe(d.maxResRdAtom);
    expect(a.atomic_cap).toBe(d.atomicCap);
    expect(a.max_ah).toBe(3);
    expect(a.max_srq).toBe(d.maxSrq);
    expect(a.max_srq_wr).toBe(d.maxSrqWr);
    expect(a.max_srq_sge).toBe(d.maxSrqSge);
    expect(a.max_pkeys).toBe(d.maxPkeys);
    expect(a.local_ca_ack_delay).toBe(d.localCaAckDelay);
    expect(a.phys_port_cnt).toBe(1);
  });

  it('query_port reports the port attributes', () => {
    const a = newPortAttr();
    expect(ibv_query_port(ctx, 1, a)).toBe(0);
    const p = h.fake.tb.caps.ports[0]!;
    expect(a.state).toBe(IBV_PORT_ACTIVE);
    expect(a.max_mtu).toBe(IBV_MTU_4096);
    expect(a.active_mtu).toBe(IBV_MTU_4096);
    expect(a.gid_tbl_len).toBe(p.gidTblLen);
    expect(a.port_cap_flags).toBe(p.portCapFlags);
    expect(a.max_msg_sz).toBe(p.maxMsgSz);
    expect(a.pkey_tbl_len).toBe(p.pkeyTblLen);
    expect(a.link_layer).toBe(IBV_LINK_LAYER_ETHERNET);
    expect(a.active_width).toBe(p.activeWidth);
    expect(a.active_speed).toBe(p.activeSpeed);
    expect(a.phys_state).toBe(p.physState);
    expect(a.flags).toBe(p.flags);
    expect(ibv_query_port(ctx, 2, a)).toBe(errno.EINVAL);
  });

  it('query_gid returns the GID table in place, query_pkey the P_Keys', () => {
    const table = h.fake.tb.caps.ports[0]!.gidTable;
    for (let i = 0; i < table.length; i++) {
      const g = newGid();
      const raw = g.raw;
      expect(ibv_query_gid(ctx, 1, i, g)).toBe(0);
      expect(g.raw).toBe(raw);
      expect(Array.from(g.raw)).toEqual(Array.from(table[i]!.gid));
    }
    expect(table[1]!.type).toBe(IBV_GID_TYPE_ROCE_V2);
    const empty = newGid();
    empty.raw.fill(9);
    expect(ibv_query_gid(ctx, 1, table.length, empty)).toBe(0);
    expect(empty.raw.every((b) => b === 0)).toBe(true);
    // libibverbs: -1 with errno for an index beyond the table.
    expect(ibv_query_gid(ctx, 1, 5000, newGid())).toBe(-1);
    expect(rnic_errno()).toBe(errno.EINVAL);
    const pk = { pkey: -1 };
    expect(ibv_query_pkey(ctx, 1, 0, pk)).toBe(0);
    expect(pk.pkey).toBe(0xffff);
    expect(ibv_query_pkey(ctx, 1, 1, pk)).toBe(0);
    expect(pk.pkey).toBe(0);
    expect(ibv_query_pkey(ctx, 1, 1000, pk)).toBe(-1);
    expect(rnic_errno()).toBe(errno.EINVAL);
  });

  it('read_counters gives every counter by its Linux name', () => {
    h.fake.tb.fw.counters.lane(1)[Ctr.SENT_PKTS]! += 5;
    h.fake.tb.fw.counters.lane(1)[Ctr.NP_CNP_SENT]! += 2;
    const c = rnic_read_counters(ctx, 1);
    expect(c['sent_pkts']).toBe(5n);
    expect(c['np_cnp_sent']).toBe(2n);
    expect(c['qkey_viol_cntr']).toBe(0n);
    expect(Object.keys(c)).toHaveLength(Ctr.COUNT);
    expect(errnoOf(() => rnic_read_counters(ctx, 2))).toBe(errno.EINVAL);
  });
});

describe('PDs, MRs and buffers', () => {
  it('registers a buffer: keys, address, MPT entry; deregisters once', () => {
    const pd = ibv_alloc_pd(ctx);
    expect(pd.handle).toBeGreaterThan(0);
    const buf = rnic_alloc_buf(ctx, 8192, 4096);
    expect(buf.length).toBe(8192);
    expect(h.fake.tb.mem.addrOfN(buf) % 4096).toBe(0);
    const access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    const mr = ibv_reg_mr(pd, buf.subarray(100, 1100), access);
    expect(mr.lkey).toBe(mr.rkey);
    expect(mr.addr).toBe(h.fake.tb.mem.addrOf(buf) + 100n);
    expect(mr.length).toBe(1000);
    const t = h.fake.tb.fw.tables;
    const e = decodeStruct(MPT, t.dv, t.mrByKey(mr.lkey));
    expect(e.pdn).toBe(pd.handle);
    expect(e.access).toBe(access);
    expect(e.iova).toBe(mr.addr);
    expect(e.hostAddr).toBe(mr.addr);
    expect(e.length).toBe(1000n);
    expect(ibv_dealloc_pd(pd)).toBe(errno.EBUSY);
    expect(ibv_dereg_mr(mr)).toBe(0);
    expect(t.mrByKey(mr.lkey)).toBe(-1);
    expect(ibv_dereg_mr(mr)).toBe(errno.EINVAL);
    // The index is reused with a new key variant.
    const mr2 = ibv_reg_mr(pd, buf, IBV_ACCESS_LOCAL_WRITE);
    expect(mr2.lkey).not.toBe(mr.lkey);
    expect(ibv_dereg_mr(mr2)).toBe(0);
    expect(ibv_dealloc_pd(pd)).toBe(0);
    expect(ibv_dealloc_pd(pd)).toBe(errno.EINVAL);
    rnic_free_buf(ctx, buf);
    expect(errnoOf(() => rnic_free_buf(ctx, buf))).toBe(errno.EINVAL);
  });

  it('refuses memory the device cannot reach, bad access and zero length', () => {
    const pd = ibv_alloc_pd(ctx);
    expect(errnoOf(() => ibv_reg_mr(pd, new Uint8Array(64), IBV_ACCESS_LOCAL_WRITE))).toBe(errno.EINVAL);
    const buf = rnic_alloc_buf(ctx, 64);
    expect(errnoOf(() => ibv_reg_mr(pd, buf, IBV_ACCESS_REMOTE_WRITE))).toBe(errno.EINVAL); // needs LOCAL_WRITE
    expect(errnoOf(() => ibv_reg_mr(pd, buf.subarray(0, 0), 0))).toBe(errno.EINVAL);
    expect(errnoOf(() => rnic_alloc_buf(ctx, 64, 3))).toBe(errno.EINVAL);
    expect(errnoOf(() => rnic_alloc_buf(ctx, 1 << 30))).toBe(errno.ENOMEM);
    const zero = rnic_alloc_buf(ctx, 0);
    expect(zero.length).toBe(0);
    rnic_free_buf(ctx, zero);
  });

  it('ibv_dealloc_pd with an AH of the PD left is EBUSY (the kernel counts AHs as PD users), then 0 once it is destroyed', () => {
    const pd = ibv_alloc_pd(ctx);
    const other = ibv_alloc_pd(ctx);
    const attr = newAhAttr();
    attr.is_global = 1;
    attr.port_num = 1;
    attr.grh.dgid = ownGid(1);
    attr.grh.sgid_index = 1;
    const ah = ibv_create_ah(pd, attr);
    expect(ibv_dealloc_pd(pd)).toBe(errno.EBUSY);
    expect(ibv_dealloc_pd(other)).toBe(0);
    expect(ibv_destroy_ah(ah)).toBe(0);
    expect(ibv_dealloc_pd(pd)).toBe(0);
  });

  it('ibv_open_device with host memory full is ENOMEM naming the memory setting, as the other verbs (not a DeviceError)', () => {
    const bufs: Uint8Array[] = [];
    for (let size = 1 << 26; size >= 4096; ) {
      try {
        bufs.push(rnic_alloc_buf(ctx, size, 4096));
      } catch {
        size >>= 1;
      }
    }
    let err: unknown = null;
    try {
      ibv_close_device(ibv_open_device(h.dev));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(VerbsError);
    expect(err).toMatchObject({ errno: errno.ENOMEM, message: expect.stringMatching(/^ibv_open_device: .*its `memory` setting\)$/) });
    for (const b of bufs) rnic_free_buf(ctx, b);
    ibv_close_device(ibv_open_device(h.dev));
  });
});

describe('CQs', () => {
  it('rounds the ring up to a power of two and reports cqe = size − 1', () => {
    const cq = ibv_create_cq(ctx, 10, 'ctx!', null, 1);
    expect(cq.cqe).toBe(15);
    expect(cq.cq_context).toBe('ctx!');
    const t = h.fake.tb.fw.tables;
    const c = decodeStruct(CQC, t.dv, t.cqByNumber(cq.handle));
    expect(c.logSize).toBe(4);
    expect(c.eqn).toBe(h.fake.eqnOfCq(cq.handle));
    expect(ibv_create_cq(ctx, 15, null, null, 0).cqe).toBe(15);
    expect(ibv_create_cq(ctx, 16, null, null, 0).cqe).toBe(31);
    expect(ibv_create_cq(ctx, 1, null, null, 0).cqe).toBe(1);
    expect(ibv_destroy_cq(cq)).toBe(0);
    expect(t.cqByNumber(cq.handle)).toBe(-1);
    expect(ibv_destroy_cq(cq)).toBe(errno.EINVAL);
  });

  it('refuses a bad size or vector; a CQ in use is busy', () => {
    const max = h.fake.tb.caps.device.maxCqe;
    expect(errnoOf(() => ibv_create_cq(ctx, 0, null, null, 0))).toBe(errno.EINVAL);
    expect(errnoOf(() => ibv_create_cq(ctx, max + 1, null, null, 0))).toBe(errno.EINVAL);
    expect(errnoOf(() => ibv_create_cq(ctx, 4, null, null, ctx.num_comp_vectors))).toBe(errno.EINVAL);
    expect(ibv_create_cq(ctx, max, null, null, 0).cqe).toBe(max);
    const pd = ibv_alloc_pd(ctx);
    const cq = ibv_create_cq(ctx, 4, null, null, 0);
    const qp = ibv_create_qp(pd, qpInit(pd, cq, IBV_QPT_RC));
    expect(ibv_destroy_cq(cq)).toBe(errno.EBUSY);
    expect(ibv_destroy_qp(qp)).toBe(0);
    expect(ibv_destroy_cq(cq)).toBe(0);
  });
});

describe('QPs: create', () => {
  let pd: ibv_pd;
  let cq: ibv_cq;
  beforeEach(() => {
    pd = ibv_alloc_pd(ctx);
    cq = ibv_create_cq(ctx, 64, null, null, 0);
  });

  it('sizes rings as powers of two, strides from the formulas, and reports the caps', () => {
    const init = qpInit(pd, cq, IBV_QPT_RC, { sq_sig_all: 1, qp_context: 'qpc' });
    const qp = ibv_create_qp(pd, init);
    expect(qp.qp_num).toBeGreaterThanOrEqual(2);
    expect(qp.state).toBe(IBV_QPS_RESET);
    expect(qp.qp_type).toBe(IBV_QPT_RC);
    expect(qp.qp_context).toBe('qpc');
    const t = h.fake.tb.fw.tables;
    const c = decodeStruct(QPC, t.dv, t.qpByNumber(qp.qp_num));
    const sqStride = sendWqeStride(IBV_QPT_RC, 2, 32);
    expect(sqStride).toBe(128);
    expect([c.sqLogSize, 1 << c.sqLogStride]).toEqual([4, sqStride]);
    expect([c.rqLogSize, 1 << c.rqLogStride]).toEqual([5, recvWqeStride(3)]);
    expect(c.pdn).toBe(pd.handle);
    expect([c.sendCqn, c.recvCqn]).toEqual([cq.handle, cq.handle]);
    expect(c.flags & 8).toBe(8); // SQ_SIG_ALL
    // What a 128-byte RC WQE holds: 4 SGEs or 60 inline bytes; a 64-byte receive WQE 3 SGEs.
    expect(init.cap).toEqual({ max_send_wr: 16, max_recv_wr: 32, max_send_sge: 4, max_recv_sge: 3, max_inline_data: 60 });
    expect([c.maxSendSge, c.maxRecvSge, c.maxInlineData]).toEqual([4, 3, 60]);
    const attr = newQpAttr();
    const back: ibv_qp_init_attr = { send_cq: null, recv_cq: null, cap: newQpCap(), qp_type: 0, sq_sig_all: 0 };
    expect(ibv_query_qp(qp, attr, IBV_QP_STATE, back)).toBe(0);
    expect(back.cap).toEqual(init.cap);
    expect(back.qp_type).toBe(IBV_QPT_RC);
    expect(back.sq_sig_all).toBe(1);
    expect(back.send_cq).toBe(cq);
    expect(back.qp_context).toBe('qpc');
    expect(attr.cap).toEqual(init.cap);
    expect(attr.qp_state).toBe(IBV_QPS_RESET);
    expect(attr.path_mtu).toBe(IBV_MTU_256);
  });

  it('UD WQEs hold the address vector; a QP with an SRQ has no receive ring', () => {
    const srq = ibv_create_srq(pd, { attr: { max_wr: 10, max_sge: 1, srq_limit: 0 } });
    const init = qpInit(pd, cq, IBV_QPT_UD, { srq, cap: { max_send_wr: 1, max_recv_wr: 99, max_send_sge: 1, max_recv_sge: 9, max_inline_data: 0 } });
    const qp = ibv_create_qp(pd, init);
    const t = h.fake.tb.fw.tables;
    const c = decodeStruct(QPC, t.dv, t.qpByNumber(qp.qp_num));
    expect(1 << c.sqLogStride).toBe(sendWqeStride(IBV_QPT_UD, 1, 0));
    expect(c.rqRingAddr).toBe(0n);
    expect(c.srqn).toBe(srq.handle);
    expect(init.cap.max_recv_wr).toBe(0);
    expect(init.cap.max_send_wr).toBe(1);
    expect(qp.srq).toBe(srq);
  });

  it('refuses unsupported types, caps beyond the device, foreign CQs', () => {
    const d = h.fake.tb.caps.device;
    expect(errnoOf(() => ibv_create_qp(pd, qpInit(pd, cq, IBV_QPT_RAW_PACKET)))).toBe(errno.EOPNOTSUPP);
    const big = (cap: Partial<ibv_qp_init_attr['cap']>) => qpInit(pd, cq, IBV_QPT_RC, { cap: { ...qpInit(pd, cq, IBV_QPT_RC).cap, ...cap } });
    expect(errnoOf(() => ibv_create_qp(pd, big({ max_send_wr: d.maxQpWr + 1 })))).toBe(errno.EINVAL);
    expect(errnoOf(() => ibv_create_qp(pd, big({ max_recv_sge: d.maxSge + 1 })))).toBe(errno.EINVAL);
    expect(errnoOf(() => ibv_create_qp(pd, big({ max_inline_data: d.maxInlineData + 1 })))).toBe(errno.EINVAL);
    expect(errnoOf(() => ibv_create_qp(pd, qpInit(pd, cq, IBV_QPT_RC, { send_cq: null })))).toBe(errno.EINVAL);
    const other = openHarness();
    const foreign = ibv_create_cq(other.ctx, 4, null, null, 0);
    expect(errnoOf(() => ibv_create_qp(pd, qpInit(pd, cq, IBV_QPT_RC, { recv_cq: foreign })))).toBe(errno.EINVAL);
    other.close();
    expect(h.fake.tb.fw.qps.inUse).toBe(0);
  });
});

describe('QPs: modify and query', () => {
  let pd: ibv_pd;
  let cq: ibv_cq;
  beforeEach(() => {
    pd = ibv_alloc_pd(ctx);
    cq = ibv_create_cq(ctx, 64, null, null, 0);
  });

  it('RC: RESET → INIT → RTR → RTS with rc_pingpong attributes; query_qp returns them', () => {
    const qp = ibv_create_qp(pd, qpInit(pd, cq, IBV_QPT_RC));
    expect(rcToInit(qp)).toBe(0);
    expect(qp.state).toBe(IBV_QPS_INIT);
    const gid = ownGid(1);
    expect(rcConnect(qp, 0xabcdef, gid, 1, { psn: 0x1234567, destPsn: 0x654321 })).toEqual([0, 0]);
    expect(qp.state).toBe(IBV_QPS_RTS);
    const a = newQpAttr();
    const init: ibv_qp_init_attr = { send_cq: null, recv_cq: null, cap: newQpCap(), qp_type: 0, sq_sig_all: 0 };
    expect(ibv_query_qp(qp, a, IBV_QP_STATE, init)).toBe(0);
    expect(a.qp_state).toBe(IBV_QPS_RTS);
    expect(a.cur_qp_state).toBe(IBV_QPS_RTS);
    expect(a.path_mtu).toBe(IBV_MTU_1024);
    expect(a.dest_qp_num).toBe(0xabcdef);
    expect(a.rq_psn).toBe(0x654321);
    expect(a.sq_psn).toBe(0x234567); // masked to 24 bits
    expect(a.max_dest_rd_atomic).toBe(1);
    expect(a.max_rd_atomic).toBe(1);
    expect(a.min_rnr_timer).toBe(12);
    expect(a.timeout).toBe(14);
    expect(a.retry_cnt).toBe(7);
    expect(a.rnr_retry).toBe(7);
    expect(a.port_num).toBe(1);
    expect(a.pkey_index).toBe(0);
    expect(a.qp_access_flags).toBe(0);
    expect(a.ah_attr.is_global).toBe(1);
    expect(a.ah_attr.port_num).toBe(1);
    expect(a.ah_attr.grh.hop_limit).toBe(1);
    expect(a.ah_attr.grh.sgid_index).toBe(1);
    expect(Array.from(a.ah_attr.grh.dgid.raw)).toEqual(Array.from(gid.raw));
    // The driver resolved the destination MAC: its own GID, so its own MAC (loopback).
    const t = h.fake.tb.fw.tables;
    expect(Array.from(QPC.f.avDmac.get(t.dv, t.qpByNumber(qp.qp_num)))).toEqual([2, 0, 0, 0, 0, 1]);
  });

  it('UC: uc_pingpong sequence', () => {
    const qp = ibv_create_qp(pd, qpInit(pd, cq, IBV_QPT_UC));
    expect(ucConnect(qp, 77, ownGid(3), 3)).toEqual([0, 0, 0]);
    expect(qp.state).toBe(IBV_QPS_RTS);
    const a = newQpAttr();
    expect(ibv_query_qp(qp, a, 0, { send_cq: null, recv_cq: null, cap: newQpCap(), qp_type: 0, sq_sig_all: 0 })).toBe(0);
    expect([a.dest_qp_num, a.rq_psn, a.sq_psn]).toEqual([77, 0x111, 0x222]);
  });

  it('UD: ud_pingpong sequence', () => {
    const qp = ibv_create_qp(pd, qpInit(pd, cq, IBV_QPT_UD));
    expect(udConnect(qp)).toEqual([0, 0, 0]);
    expect(qp.state).toBe(IBV_QPS_RTS);
    const a = newQpAttr();
    expect(ibv_query_qp(qp, a, 0, { send_cq: null, recv_cq: null, cap: newQpCap(), qp_type: 0, sq_sig_all: 0 })).toBe(0);
    expect(a.qkey).toBe(0x11111111);
    expect(a.sq_psn).toBe(0x333);
  });

  it('bad transitions, masks and values are EINVAL and change nothing', () => {
    const qp = ibv_create_qp(pd, qpInit(pd, cq, IBV_QPT_RC));
    const before = qpcBytes(qp.qp_num);
    // RESET → INIT without the required ACCESS_FLAGS.
    expect(ibv_modify_qp(qp, { qp_state: IBV_QPS_INIT, port_num: 1 }, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT)).toBe(errno.EINVAL);
    // RESET → RTR: not a transition.
    expect(ibv_modify_qp(qp, { qp_state: IBV_QPS_RTR }, IBV_QP_STATE)).toBe(errno.EINVAL);
    // RESET → ERR: not a transition (the kernel's table).
    expect(ibv_modify_qp(qp, { qp_state: IBV_QPS_ERR }, IBV_QP_STATE)).toBe(errno.EINVAL);
    // A QKEY on RC RESET → INIT is not allowed.
    expect(
      ibv_modify_qp(qp, { qp_state: IBV_QPS_INIT, port_num: 1, qkey: 1 }, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS | IBV_QP_QKEY),
    ).toBe(errno.EINVAL);
    // Unknown mask bit; a state that does not fit its field.
    expect(ibv_modify_qp(qp, { qp_state: IBV_QPS_INIT }, IBV_QP_STATE | (1 << 30))).toBe(errno.EINVAL);
    expect(ibv_modify_qp(qp, { qp_state: 300 }, IBV_QP_STATE)).toBe(errno.EINVAL);
    expect(qp.state).toBe(IBV_QPS_RESET);
    expect(qpcBytes(qp.qp_num)).toEqual(before);

    expect(rcToInit(qp)).toBe(0);
    const init = qpcBytes(qp.qp_num);
    const gid = ownGid(1);
    const rtr = newQpAttr();
    rtr.qp_state = IBV_QPS_RTR;
    rtr.path_mtu = IBV_MTU_1024;
    rtr.dest_qp_num = 5;
    rtr.ah_attr.port_num = 1;
    rtr.ah_attr.grh.dgid = gid;
    rtr.ah_attr.grh.sgid_index = 1;
    const m = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | (1 << 17) | (1 << 15);
    // No GRH on a RoCE port.
    expect(ibv_modify_qp(qp, rtr, m)).toBe(errno.EINVAL);
    rtr.ah_attr.is_global = 1;
    // RTR with a TIMEOUT (an RTS attribute).
    expect(ibv_modify_qp(qp, { ...rtr, timeout: 3 }, m | IBV_QP_TIMEOUT)).toBe(errno.EINVAL);
    // An empty source GID.
    rtr.ah_attr.grh.sgid_index = 40;
    expect(ibv_modify_qp(qp, rtr, m)).toBe(errno.EINVAL);
    rtr.ah_attr.grh.sgid_index = 1;
    // path_mtu out of range.
    expect(ibv_modify_qp(qp, { ...rtr, path_mtu: 6 }, m)).toBe(errno.EINVAL);
    expect(qp.state).toBe(IBV_QPS_INIT);
    expect(qpcBytes(qp.qp_num)).toEqual(init);
    expect(ibv_modify_qp(qp, rtr, m)).toBe(0);
    expect(qp.state).toBe(IBV_QPS_RTR);
  });

  it('a destination the driver cannot resolve keeps dmac 0, for the device port to resolve', () => {
    const qp = ibv_create_qp(pd, qpInit(pd, cq, IBV_QPT_RC));
    expect(rcToInit(qp)).toBe(0);
    const far = newGid();
    far.raw.set([0x20, 0x01, 0x0d, 0xb8], 0);
    far.raw[15] = 9;
    expect(rcConnect(qp, 9, far, 1)).toEqual([0, 0]);
    const t = h.fake.tb.fw.tables;
    const off = t.qpByNumber(qp.qp_num);
    expect(Array.from(QPC.f.avDmac.get(t.dv, off))).toEqual([0, 0, 0, 0, 0, 0]);
    expect(Array.from(QPC.f.avDgid.get(t.dv, off))).toEqual(Array.from(far.raw));
  });

  it('the runtime neighbour table resolves MACs the driver cannot derive', () => {
    const g = createFakeDevice({ config: SMALL_DEVICE });
    const mac = Uint8Array.of(0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee);
    const seen: number[][] = [];
    const handle = {
      ...g.handle,
      resolveMac: (port: number, dgid: Uint8Array) => {
        seen.push([port, dgid[15]!]);
        return dgid[15] === 9 ? mac : null;
      },
    };
    const dev = addModelDevice(handle);
    const c = ibv_open_device(dev);
    const pd2 = ibv_alloc_pd(c);
    const cq2 = ibv_create_cq(c, 4, null, null, 0);
    const qp = ibv_create_qp(pd2, qpInit(pd2, cq2, IBV_QPT_RC));
    expect(rcToInit(qp)).toBe(0);
    const far = newGid();
    far.raw.set([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 9]);
    expect(rcConnect(qp, 9, far, 2)).toEqual([0, 0]);
    expect(seen).toEqual([[1, 9]]);
    const t = g.tb.fw.tables;
    expect(Array.from(QPC.f.avDmac.get(t.dv, t.qpByNumber(qp.qp_num)))).toEqual(Array.from(mac));
    ibv_close_device(c);
    removeModelDevice(g.handle.name);
  });

  it('the GIDs of other model devices in the process resolve to their MACs', () => {
    const g = createFakeDevice({ config: { ...SMALL_DEVICE, ports: [{ macAddress: '02:00:00:00:00:42', ipv4Addresses: ['192.0.2.42'] }] } });
    const dev = addModelDevice(g.handle);
    const peer = ibv_open_device(dev);
    const peerGid = newGid();
    expect(ibv_query_gid(peer, 1, 3, peerGid)).toBe(0); // ::ffff:192.0.2.42, RoCE v2
    const qp = ibv_create_qp(pd, qpInit(pd, cq, IBV_QPT_RC));
    expect(rcToInit(qp)).toBe(0);
    expect(rcConnect(qp, 9, peerGid, 3)).toEqual([0, 0]);
    const t = h.fake.tb.fw.tables;
    expect(Array.from(QPC.f.avDmac.get(t.dv, t.qpByNumber(qp.qp_num)))).toEqual([2, 0, 0, 0, 0, 0x42]);
    ibv_close_device(peer);
    removeModelDevice(g.handle.name);
  });

  it('RESET restarts the rings: producer counters and the doorbell record go back to 0', () => {
    const qp = ibv_create_qp(pd, qpInit(pd, cq, IBV_QPT_UD));
    expect(udConnect(qp)).toEqual([0, 0, 0]);
    const buf = rnic_alloc_buf(ctx, 64);
    const mr = ibv_reg_mr(pd, buf, IBV_ACCESS_LOCAL_WRITE);
    const ahAttr = newAhAttr();
    ahAttr.is_global = 1;
    ahAttr.port_num = 1;
    ahAttr.grh.dgid = ownGid(1);
    ahAttr.grh.sgid_index = 1;
    const ah = ibv_create_ah(pd, ahAttr);
    const wr = newSendWr();
    wr.opcode = IBV_WR_SEND;
    wr.sg_list = [{ addr: mr.addr, length: 8, lkey: mr.lkey }];
    wr.num_sge = 1;
    wr.wr = { ud: { ah, remote_qpn: 5, remote_qkey: 0x11111111 } };
    expect(ibv_post_send(qp, wr)).toBe(0);
    const t = h.fake.tb.fw.tables;
    const rec = Number(QPC.f.dbrecAddr.get(t.dv, t.qpByNumber(qp.qp_num)));
    const mem = h.fake.tb.mem;
    expect(mem.dv.getUint32(rec + 4 - mem.baseNum, true)).toBe(1);
    expect(ibv_modify_qp(qp, { qp_state: IBV_QPS_RESET }, IBV_QP_STATE)).toBe(0);
    expect(qp.state).toBe(IBV_QPS_RESET);
    expect(mem.dv.getUint32(rec + 4 - mem.baseNum, true)).toBe(0);
    expect(udConnect(qp)).toEqual([0, 0, 0]);
    expect(ibv_post_send(qp, wr)).toBe(0);
    expect(mem.dv.getUint32(rec + 4 - mem.baseNum, true)).toBe(1);
    expect(ibv_destroy_ah(ah)).toBe(0);
  });

  it('query_qp with IBV_QP_STATE refreshes the cached state (the pipeline may move a QP to ERR)', () => {
    const qp = ibv_create_qp(pd, qpInit(pd, cq, IBV_QPT_RC));
    expect(rcToInit(qp)).toBe(0);
    const t = h.fake.tb.fw.tables;
    t.qpSetError(t.qpByNumber(qp.qp_num));
    expect(qp.state).toBe(IBV_QPS_INIT);
    const a = newQpAttr();
    expect(ibv_query_qp(qp, a, IBV_QP_STATE, { send_cq: null, recv_cq: null, cap: newQpCap(), qp_type: 0, sq_sig_all: 0 })).toBe(0);
    expect(qp.state).toBe(IBV_QPS_ERR);
  });
});

describe('SRQs and AHs', () => {
  let pd: ibv_pd;
  beforeEach(() => {
    pd = ibv_alloc_pd(ctx);
  });

  it('SRQ: one sentinel entry, limit, query, no resize, busy while used', () => {
    const attr = { max_wr: 10, max_sge: 2, srq_limit: 3 };
    const srq: ibv_srq = ibv_create_srq(pd, { attr, srq_context: 7 });
    expect(attr.max_wr).toBe(15);
    expect(attr.max_sge).toBe(3);
    expect(srq.srq_context).toBe(7);
    const t = h.fake.tb.fw.tables;
    const c = decodeStruct(SRQC, t.dv, t.srqByNumber(srq.handle));
    expect([c.logSize, 1 << c.logStride, c.limit]).toEqual([4, recvWqeStride(2), 3]);
    const q = newSrqAttr();
    expect(ibv_query_srq(srq, q)).toBe(0);
    expect(q).toEqual({ max_wr: 15, max_sge: 3, srq_limit: 3 });
    expect(ibv_modify_srq(srq, { max_wr: 0, max_sge: 0, srq_limit: 5 }, IBV_SRQ_LIMIT)).toBe(0);
    expect(ibv_query_srq(srq, q)).toBe(0);
    expect(q.srq_limit).toBe(5);
    expect(ibv_modify_srq(srq, { max_wr: 100, max_sge: 0, srq_limit: 0 }, IBV_SRQ_MAX_WR)).toBe(errno.EINVAL);
    expect(ibv_modify_srq(srq, { max_wr: 0, max_sge: 0, srq_limit: 100 }, IBV_SRQ_LIMIT)).toBe(errno.EINVAL);
    const cq = ibv_create_cq(ctx, 4, null, null, 0);
    const qp = ibv_create_qp(pd, qpInit(pd, cq, IBV_QPT_RC, { srq }));
    expect(ibv_destroy_srq(srq)).toBe(errno.EBUSY);
    expect(ibv_destroy_qp(qp)).toBe(0);
    expect(ibv_destroy_srq(srq)).toBe(0);
    expect(t.srqByNumber(srq.handle)).toBe(-1);
    const d = h.fake.tb.caps.device;
    expect(errnoOf(() => ibv_create_srq(pd, { attr: { max_wr: d.maxSrqWr, max_sge: 1, srq_limit: 0 } }))).toBe(errno.EINVAL);
    expect(errnoOf(() => ibv_create_srq(pd, { attr: { max_wr: 4, max_sge: d.maxSrqSge + 1, srq_limit: 0 } }))).toBe(errno.EINVAL);
    expect(errnoOf(() => ibv_create_srq(pd, { attr: { max_wr: 0, max_sge: 1, srq_limit: 0 } }))).toBe(errno.EINVAL);
  });

  it('AH: checked like the device checks an AV, maxAh enforced per device', () => {
    const a = newAhAttr();
    a.port_num = 1;
    a.grh.dgid = ownGid(1);
    a.grh.sgid_index = 1;
    expect(errnoOf(() => ibv_create_ah(pd, a))).toBe(errno.EINVAL); // no GRH on RoCE
    a.is_global = 1;
    expect(errnoOf(() => ibv_create_ah(pd, { ...a, port_num: 2 }))).toBe(errno.EINVAL);
    expect(errnoOf(() => ibv_create_ah(pd, { ...a, grh: { ...a.grh, sgid_index: 30 } }))).toBe(errno.EINVAL);
    expect(errnoOf(() => ibv_create_ah(pd, { ...a, static_rate: 99 }))).toBe(errno.EINVAL);
    expect(errnoOf(() => ibv_create_ah(pd, { ...a, sl: 16 }))).toBe(errno.EINVAL);
    const ahs = [ibv_create_ah(pd, a), ibv_create_ah(pd, a)];
    const other = ibv_open_device(h.dev); // maxAh (3) counts every context of the device
    ahs.push(ibv_create_ah(ibv_alloc_pd(other), a));
    expect(errnoOf(() => ibv_create_ah(pd, a))).toBe(errno.ENOMEM);
    expect(ibv_destroy_ah(ahs[0]!)).toBe(0);
    expect(ibv_destroy_ah(ahs[0]!)).toBe(errno.EINVAL);
    ahs[0] = ibv_create_ah(pd, a);
    ibv_close_device(other); // frees its AH
    ibv_create_ah(pd, a);
  });

  it('UC and UD QPs reach RTS as in the examples, RC with its own GID', () => {
    const cq = ibv_create_cq(ctx, 4, null, null, 0);
    const rc = ibv_create_qp(pd, qpInit(pd, cq, IBV_QPT_RC));
    expect(rcToInit(rc)).toBe(0);
    expect(rcConnect(rc, rc.qp_num, ownGid(1), 1)).toEqual([0, 0]);
    expect(ibv_modify_qp(rc, { qp_state: IBV_QPS_ERR }, IBV_QP_STATE)).toBe(0);
    expect(rc.state).toBe(IBV_QPS_ERR);
    expect(ibv_modify_qp(rc, { qp_state: IBV_QPS_RESET }, IBV_QP_STATE)).toBe(0);
    expect(rc.state).toBe(IBV_QPS_RESET);
    const ud = ibv_create_qp(pd, qpInit(pd, cq, IBV_QPT_UD));
    expect(udConnect(ud)).toEqual([0, 0, 0]);
    const uc = ibv_create_qp(pd, qpInit(pd, cq, IBV_QPT_UC));
    expect(ucConnect(uc, 3, ownGid(0), 0)).toEqual([0, 0, 0]);
    expect([rc.state, ud.state, uc.state]).toEqual([IBV_QPS_RESET, IBV_QPS_RTS, IBV_QPS_RTS]);
  });
});
