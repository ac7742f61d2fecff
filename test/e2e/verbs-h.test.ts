/**
 * The verbs API has every function of libibverbs' <infiniband/verbs.h>
 * (the list in test/fixtures/libibverbs-44-verbs-h.txt), and the last ones
 * added behave as libibverbs gives them: ibv_get_device_index,
 * ibv_flow_label_to_udp_sport, ibv_resolve_eth_l2_from_gid,
 * ibv_query_qp_data_in_order, and the probes of what is not modelled
 * (ODP prefetch, dma-buf, thread domains, IPsec flow actions, tag
 * matching, work queues, unimport, TSO).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as verbs from '../../src/driver/verbs/index.js';
import {
  errno,
  IBV_QP_EX_WITH_SEND,
  IBV_QP_INIT_ATTR_PD,
  IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
  IBV_QPT_RC,
  IBV_QPT_UD,
  IBV_WR_RDMA_WRITE,
  ibv_advise_mr,
  ibv_alloc_td,
  ibv_create_flow_action_esp,
  ibv_create_qp_ex,
  ibv_dealloc_td,
  ibv_destroy_flow_action,
  ibv_destroy_qp,
  ibv_flow_label_to_udp_sport,
  ibv_get_device_index,
  ibv_get_device_list,
  ibv_get_device_name,
  ibv_modify_flow_action_esp,
  ibv_post_srq_ops,
  ibv_post_wq_recv,
  ibv_qp_to_qp_ex,
  ibv_query_gid,
  ibv_query_qp_data_in_order,
  ibv_reg_dmabuf_mr,
  ibv_resolve_eth_l2_from_gid,
  ibv_wr_complete,
  ibv_wr_send_tso,
  ibv_wr_start,
  newAhAttr,
  newGid,
  rnic_errno,
} from '../../src/driver/verbs/index.js';
import * as H from './harness.js';

const FIXTURE = join(import.meta.dirname, '../fixtures/libibverbs-44-verbs-h.txt');
const HEADER = '/usr/include/infiniband/verbs.h';
/** Names the header has that are no verb of this API, and why. */
const NOT_VERBS: Record<string, string> = {
  ibv_wc_opcode: 'an enum, matched by the function-pointer member "enum ibv_wc_opcode (*read_opcode)"',
  ibv_static_providers: 'links statically built provider libraries into a C program: nothing to link here',
};

const names = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));

describe('<infiniband/verbs.h> (libibverbs 44)', () => {
  it('every function of the header is a function of the verbs API', () => {
    const list = names(readFileSync(FIXTURE, 'utf8'));
    expect(list.length).toBe(156);
    const api = verbs as unknown as Record<string, unknown>;
    const missing = list.filter((n) => !(n in NOT_VERBS) && typeof api[n] !== 'function');
    expect(missing, 'functions of verbs.h that src/driver/verbs does not export').toEqual([]);
  });

  it.runIf(existsSync(HEADER))("the fixture lists what this machine's verbs.h declares", () => {
    const found = [...new Set(readFileSync(HEADER, 'utf8').match(/\bibv_[a-z0-9_]+(?=\s*\()/g) ?? [])].sort();
    const list = names(readFileSync(FIXTURE, 'utf8'));
    // A newer header may add functions: they are listed here, to be added to the fixture and the API.
    expect(
      found.filter((n) => !list.includes(n)),
      'in verbs.h, not in the fixture',
    ).toEqual([]);
  });

  it('ibv_flow_label_to_udp_sport: 0xC000 | (low 14 bits xor the high 6), as the header computes it', () => {
    expect(ibv_flow_label_to_udp_sport(0)).toBe(0xc000);
    expect(ibv_flow_label_to_udp_sport(0x00001)).toBe(0xc001);
    expect(ibv_flow_label_to_udp_sport(0x04000)).toBe(0xc001); // bit 14 folds onto bit 0
    expect(ibv_flow_label_to_udp_sport(0xfffff)).toBe(0xc000 | (0x3fff ^ 0x3f));
    expect(ibv_flow_label_to_udp_sport(0x12345)).toBe(0xc000 | ((0x12345 & 0x3fff) ^ (0x12345 >>> 14)));
    expect(ibv_flow_label_to_udp_sport(0x1fffff), 'bits above the 20-bit label are ignored').toBe(ibv_flow_label_to_udp_sport(0xfffff));
  });
});

describe('the last verbs of verbs.h, on the model', () => {
  let f: H.Fabric;
  beforeAll(async () => {
    f = await H.openFabric(H.twoDeviceConfig(1));
  }, 60_000);
  afterAll(async () => {
    await f?.close();
  }, 60_000);

  it('ibv_get_device_index: a distinct index per model device, -1 for what is no device', () => {
    const idx = ibv_get_device_list()
      .filter((d) => ['rnic0', 'rnic1'].includes(ibv_get_device_name(d)))
      .map(ibv_get_device_index);
    expect(idx).toHaveLength(2);
    for (const i of idx) expect(Number.isInteger(i) && i >= 0).toBe(true);
    expect(new Set(idx).size).toBe(2);
    expect(ibv_get_device_index({} as never)).toBe(-1);
    expect(ibv_get_device_index(null as never)).toBe(-1);
  });

  it('ibv_resolve_eth_l2_from_gid: the peer GID gives the peer MAC (the one its link-local GID carries), no VLAN', () => {
    // b's link-local GID (index 0) is fe80::/64 with b's MAC as a modified EUI-64 interface id.
    const ll = newGid();
    expect(ibv_query_gid(f.b.ctx, H.PORT, 0, ll)).toBe(0);
    const r = ll.raw;
    expect([r[0], r[1], r[11], r[12]]).toEqual([0xfe, 0x80, 0xff, 0xfe]);
    const bMac = [r[8]! ^ 0x02, r[9], r[10], r[13], r[14], r[15]];
    const attr = newAhAttr();
    attr.is_global = 1;
    attr.port_num = H.PORT;
    attr.grh.sgid_index = H.GID_V2_IPV4;
    attr.grh.dgid = { raw: f.b.gid.raw.slice() };
    const mac = new Uint8Array(6);
    const vid = { vid: 0 };
    expect(ibv_resolve_eth_l2_from_gid(f.a.ctx, attr, mac, vid)).toBe(0);
    expect(Array.from(mac)).toEqual(bMac);
    expect(vid.vid).toBe(0xffff);
  });

  it('ibv_resolve_eth_l2_from_gid: the errors libibverbs returns', () => {
    const attr = newAhAttr();
    attr.is_global = 1;
    attr.port_num = H.PORT;
    attr.grh.sgid_index = H.GID_V2_IPV4;
    // An IPv4 address no device and no neighbour has: unreachable.
    attr.grh.dgid = { raw: Uint8Array.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 51, 100, 77]) };
    const mac = new Uint8Array(6);
    expect(ibv_resolve_eth_l2_from_gid(f.a.ctx, attr, mac, { vid: 0 })).toBe(-errno.EHOSTUNREACH);
    expect(Array.from(mac), 'nothing written on failure').toEqual([0, 0, 0, 0, 0, 0]);
    // A source GID index past the table: ibv_query_gid's failure, returned as it is (-1, errno EINVAL).
    attr.grh.sgid_index = 100_000;
    attr.grh.dgid = { raw: f.b.gid.raw.slice() };
    expect(ibv_resolve_eth_l2_from_gid(f.a.ctx, attr, mac, { vid: 0 })).toBe(-1);
    expect(rnic_errno()).toBe(errno.EINVAL);
    attr.grh.sgid_index = H.GID_V2_IPV4;
    attr.port_num = 9;
    expect(ibv_resolve_eth_l2_from_gid(f.a.ctx, attr, mac, { vid: 0 }), 'no such port').toBeLessThan(0);
    attr.port_num = H.PORT;
    expect(ibv_resolve_eth_l2_from_gid(null as never, attr, mac, { vid: 0 })).toBe(-errno.EINVAL);
    expect(ibv_resolve_eth_l2_from_gid(f.a.ctx, attr, new Uint8Array(4), { vid: 0 }), 'a MAC buffer under 6 bytes').toBe(-errno.EINVAL);
    expect(ibv_resolve_eth_l2_from_gid(f.a.ctx, { ...attr, grh: undefined } as never, mac, { vid: 0 })).toBe(-errno.EINVAL);
  });

  it('ibv_query_qp_data_in_order: 1 for a model QP on x86 (flags 0), 0 for reserved flags and for no QP', () => {
    const ep = H.createQp(f.a, IBV_QPT_RC);
    const x86 = process.arch === 'x64' || process.arch === 'ia32';
    expect(ibv_query_qp_data_in_order(ep.qp, IBV_WR_RDMA_WRITE, 0)).toBe(x86 ? 1 : 0);
    expect(ibv_query_qp_data_in_order(ep.qp, IBV_WR_RDMA_WRITE, 1)).toBe(0);
    expect(ibv_query_qp_data_in_order(null as never, IBV_WR_RDMA_WRITE, 0)).toBe(0);
    expect(ibv_destroy_qp(ep.qp)).toBe(0);
    expect(ibv_query_qp_data_in_order(ep.qp, IBV_WR_RDMA_WRITE, 0), 'a destroyed QP').toBe(0);
  });

  it('what is not modelled answers EOPNOTSUPP for real objects, EINVAL for non-objects', () => {
    const { ctx, pd } = f.a;
    expect(ibv_advise_mr(pd, 0, 0, [], 0)).toBe(errno.EOPNOTSUPP);
    expect(ibv_advise_mr(null, 0, 0, [], 0)).toBe(errno.EINVAL);
    for (const [name, call, good] of [
      ['ibv_reg_dmabuf_mr', (p: unknown) => ibv_reg_dmabuf_mr(p, 0, 4096, 0n, 3, 0), pd],
      ['ibv_alloc_td', (c: unknown) => ibv_alloc_td(c, { comp_mask: 0 }), ctx],
      ['ibv_create_flow_action_esp', (c: unknown) => ibv_create_flow_action_esp(c, {}), ctx],
    ] as const) {
      expect(() => call(good), name).toThrow(expect.objectContaining({ code: 'EOPNOTSUPP' }));
      expect(() => call(7), `${name}(7)`).toThrow(expect.objectContaining({ code: 'EINVAL' }));
    }
    const fake = { context: ctx };
    for (const [name, call] of [
      ['ibv_dealloc_td', (x: unknown) => ibv_dealloc_td(x)],
      ['ibv_modify_flow_action_esp', (x: unknown) => ibv_modify_flow_action_esp(x, {})],
      ['ibv_destroy_flow_action', (x: unknown) => ibv_destroy_flow_action(x)],
    ] as const) {
      expect(call(fake), name).toBe(errno.EOPNOTSUPP);
      expect(call(null), `${name}(null)`).toBe(errno.EINVAL);
    }
    const op = { wr_id: 1n };
    const bad = { op: null as unknown };
    expect(ibv_post_srq_ops(fake, op, bad)).toBe(errno.EOPNOTSUPP);
    expect(bad.op, 'bad_op: the first op').toBe(op);
    const wr = { wr_id: 2n };
    const badWr = { wr: null as unknown };
    expect(ibv_post_wq_recv(null, wr, badWr)).toBe(errno.EINVAL);
    expect(badWr.wr).toBe(wr);
    expect(verbs.ibv_unimport_pd(pd)).toBeUndefined();
  });

  it('ibv_wr_send_tso on a model QP: a bad request, ibv_wr_complete returns EINVAL and posts nothing', () => {
    const scq = H.createCq(f.a);
    const qp = ibv_create_qp_ex(f.a.ctx, {
      qp_type: IBV_QPT_UD,
      send_cq: scq,
      recv_cq: scq,
      cap: { max_send_wr: 4, max_recv_wr: 4, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 },
      sq_sig_all: 0,
      comp_mask: IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
      pd: f.a.pd,
      send_ops_flags: IBV_QP_EX_WITH_SEND,
    } as never);
    const qpx = ibv_qp_to_qp_ex(qp);
    ibv_wr_start(qpx);
    ibv_wr_send_tso(qpx, new Uint8Array(54), 54, 1460);
    expect(ibv_wr_complete(qpx)).toBe(errno.EINVAL);
    expect(ibv_destroy_qp(qp)).toBe(0);
  });
});
