/**
 * The extended queries end to end (the intent of rdma-core's
 * tests/test_device.py): ibv_query_device_ex against ibv_query_device,
 * ibv_query_gid_ex / ibv_query_gid_table against ibv_query_gid, P_Keys
 * through the out-argument and ibv_get_pkey_index, the device clock of
 * ibv_query_rt_values_ex against the CQE timestamps it must bracket, and
 * the libibverbs return conventions of each error (-1 with errno where C
 * sets errno).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IBV_GID_TYPE_ROCE_V1,
  IBV_GID_TYPE_ROCE_V2,
  IBV_QPT_RC,
  IBV_VALUES_MASK_RAW_CLOCK,
  IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
  IBV_WC_SUCCESS,
  errno,
  ibv_cq_ex_to_cq,
  ibv_create_cq_ex,
  ibv_destroy_cq,
  ibv_end_poll,
  ibv_get_pkey_index,
  ibv_query_device,
  ibv_query_device_ex,
  ibv_query_gid,
  ibv_query_gid_ex,
  ibv_query_gid_table,
  ibv_query_pkey,
  ibv_query_port,
  ibv_query_rt_values_ex,
  ibv_start_poll,
  ibv_wc_read_completion_ts,
  newDeviceAttr,
  newDeviceAttrEx,
  newGid,
  newGidEntry,
  newGidEntryArray,
  newPortAttr,
  newValuesEx,
  rnic_errno,
} from '../../src/driver/verbs/index.js';
import * as H from './harness.js';

const MODES = process.env.E2E_WORKERS !== undefined ? [Number(process.env.E2E_WORKERS)] : [1, 0];

describe.each(MODES)('extended queries, devices on %i worker thread(s)', (workers) => {
  let f: H.Fabric;
  beforeAll(async () => {
    f = await H.openFabric(H.twoDeviceConfig(workers));
  });
  afterAll(async () => {
    await f?.close();
  });

  it("ibv_query_device_ex: orig_attr is ibv_query_device; the clock, moderation and port count are filled; vendor_id is rxe's", () => {
    const ctx = f.a.ctx;
    const attr = newDeviceAttr();
    expect(ibv_query_device(ctx, attr)).toBe(0);
    const ex = newDeviceAttrEx();
    expect(ibv_query_device_ex(ctx, null, ex)).toBe(0);
    expect(ex.orig_attr).toEqual(attr);
    expect(ibv_query_device_ex(ctx, { comp_mask: 0 }, newDeviceAttrEx())).toBe(0);
    expect(attr.vendor_id, 'pyverbs asserts a vendor_id').toBe(0xffffff);
    expect(ex.hca_core_clock).toBe(1_000_000n);
    expect(ex.completion_timestamp_mask).toBe(0xffff_ffff_ffff_ffffn);
    expect(ex.cq_mod_caps).toEqual({ max_cq_count: 0xffff, max_cq_period: 0xffff });
    expect(ex.phys_port_cnt_ex).toBe(attr.phys_port_cnt);
    expect(ex.device_cap_flags_ex & 0xffff_ffffn).toBe(BigInt(attr.device_cap_flags >>> 0));
    expect(ex.odp_caps.general_caps).toBe(0n);
    expect(ex.max_dm_size).toBe(0n);
    expect(ibv_query_device_ex(ctx, { comp_mask: 1 }, newDeviceAttrEx()), 'input comp_mask').toBe(errno.EINVAL);
    expect(ibv_query_device_ex(ctx, null, {} as never)).toBe(errno.EINVAL);
  });

  it('ibv_query_gid_ex and ibv_query_gid_table agree with ibv_query_gid; empty entries are ENODATA; types are RoCE v1 / v2', () => {
    const ctx = f.a.ctx;
    const port = newPortAttr();
    expect(ibv_query_port(ctx, H.PORT, port)).toBe(0);
    const populated: { index: number; raw: number[]; type: number }[] = [];
    for (let i = 0; i < port.gid_tbl_len; i++) {
      const e = newGidEntry();
      const rc = ibv_query_gid_ex(ctx, H.PORT, i, e, 0);
      const g = newGid();
      expect(ibv_query_gid(ctx, H.PORT, i, g)).toBe(0);
      if (rc === errno.ENODATA) {
        expect(
          g.raw.every((b) => b === 0),
          `empty GID ${i} reads as zero through ibv_query_gid`,
        ).toBe(true);
        continue;
      }
      expect(rc, `ibv_query_gid_ex(${i})`).toBe(0);
      expect(Array.from(e.gid.raw)).toEqual(Array.from(g.raw));
      expect([e.gid_index, e.port_num]).toEqual([i, H.PORT]);
      expect([IBV_GID_TYPE_ROCE_V1, IBV_GID_TYPE_ROCE_V2]).toContain(e.gid_type);
      populated.push({ index: i, raw: Array.from(e.gid.raw), type: e.gid_type });
    }
    expect(populated.length).toBeGreaterThanOrEqual(2);
    // The RoCE v2 IPv4 GID the harness uses is a v2 entry with the ::ffff: prefix.
    const v2 = populated.find((p) => p.index === H.GID_V2_IPV4)!;
    expect(v2.type).toBe(IBV_GID_TYPE_ROCE_V2);
    expect(v2.raw.slice(10, 12)).toEqual([0xff, 0xff]);
    expect(ibv_query_gid_ex(ctx, H.PORT, port.gid_tbl_len, newGidEntry(), 0), 'index beyond the table').toBe(errno.EINVAL);
    expect(ibv_query_gid_ex(ctx, 2, 0, newGidEntry(), 0), 'no port 2').toBe(errno.EINVAL);
    expect(ibv_query_gid_ex(ctx, H.PORT, 0, newGidEntry(), 1), 'flags').toBe(errno.EINVAL);

    const table = newGidEntryArray(populated.length + 3);
    const n = ibv_query_gid_table(ctx, table, table.length, 0);
    expect(n).toBe(populated.length);
    expect(table.slice(0, n).map((e) => ({ index: e.gid_index, raw: Array.from(e.gid.raw), type: e.gid_type }))).toEqual(populated);
    expect(ibv_query_gid_table(ctx, newGidEntryArray(populated.length), populated.length, 0), 'exactly enough room').toBe(populated.length);
    expect(ibv_query_gid_table(ctx, table, populated.length - 1, 0), 'too little room').toBe(-errno.EINVAL);
    expect(ibv_query_gid_table(ctx, table, table.length + 1, 0), 'max_entries beyond the array').toBe(-errno.EINVAL);
  });

  it('ibv_query_gid beyond the table and ibv_query_pkey / ibv_get_pkey_index: -1 with errno, the P_Key through its out-argument', () => {
    const ctx = f.a.ctx;
    const port = newPortAttr();
    expect(ibv_query_port(ctx, H.PORT, port)).toBe(0);
    expect(ibv_query_gid(ctx, H.PORT, port.gid_tbl_len, newGid())).toBe(-1);
    expect(rnic_errno()).toBe(errno.EINVAL);
    const pk = { pkey: 0 };
    expect(ibv_query_pkey(ctx, H.PORT, 0, pk)).toBe(0);
    expect(pk.pkey).toBe(0xffff);
    expect(ibv_query_pkey(ctx, H.PORT, port.pkey_tbl_len, pk)).toBe(-1);
    expect(rnic_errno()).toBe(errno.EINVAL);
    expect(ibv_query_pkey(ctx, H.PORT, 0, null as never)).toBe(-1);
    expect(ibv_get_pkey_index(ctx, H.PORT, 0xffff)).toBe(0);
    expect(ibv_get_pkey_index(ctx, H.PORT, 0x8001), 'a P_Key not in the table').toBe(-1);
    expect(rnic_errno()).toBe(errno.EINVAL);
    expect(ibv_get_pkey_index(ctx, H.PORT, 0x10000)).toBe(-1);
  });

  it('ibv_query_rt_values_ex: the device clock runs, and brackets the timestamp of a CQE written between two readings', async () => {
    const ctx = f.a.ctx;
    const read = () => {
      const v = newValuesEx();
      v.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
      expect(ibv_query_rt_values_ex(ctx, v)).toBe(0);
      expect(v.comp_mask).toBe(IBV_VALUES_MASK_RAW_CLOCK);
      expect(v.raw_clock.tv_sec).toBe(0n);
      return v.raw_clock.tv_nsec;
    };
    const cq = ibv_create_cq_ex(ctx, { cqe: 16, wc_flags: IBV_WC_EX_WITH_COMPLETION_TIMESTAMP });
    f.a.cleanup.push(() => void ibv_destroy_cq(ibv_cq_ex_to_cq(cq)));
    const p = H.makePair(f, IBV_QPT_RC, { sendCq: ibv_cq_ex_to_cq(cq), qpB: { sendCq: H.createCq(f.b) } });
    const src = H.region(f.a, 64);
    const dst = H.region(f.b, 64);
    const t0 = read();
    H.postSend(p.a, H.wrWrite({ wrId: 1n, sge: [src.sge(0, 8)], remote: { addr: dst.addr, rkey: dst.rkey } }));
    const start = Date.now();
    let rc: number;
    while ((rc = ibv_start_poll(cq, { comp_mask: 0 })) === errno.ENOENT && Date.now() - start < H.POLL_TIMEOUT_MS) await H.sleep(1);
    expect(rc).toBe(0);
    expect(cq.status).toBe(IBV_WC_SUCCESS);
    const ts = ibv_wc_read_completion_ts(cq);
    ibv_end_poll(cq);
    const t1 = read();
    expect(t0 <= ts && ts <= t1, `clock ${t0} ≤ CQE timestamp ${ts} ≤ clock ${t1}`).toBe(true);
    expect(t1 > t0).toBe(true);
    // No RAW_CLOCK asked: nothing read, 0. Unknown bits: EINVAL.
    const none = newValuesEx();
    expect(ibv_query_rt_values_ex(ctx, none)).toBe(0);
    expect(none.raw_clock.tv_nsec).toBe(0n);
    expect(ibv_query_rt_values_ex(ctx, { comp_mask: 2, raw_clock: { tv_sec: 0n, tv_nsec: 0n } })).toBe(errno.EINVAL);
  });
});
