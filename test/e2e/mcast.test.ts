/**
 * UD multicast end to end: UD QPs attached to a group (a RoCE v2 IPv4
 * group ::ffff:239.1.2.3 and an IPv6 one ff0e::1234:5678) each receive a
 * copy of a message sent to the group's GID with destination QPN 0xFFFFFF;
 * a detached QP receives nothing more; a group nobody joined drops the
 * packet (rx_unknown_qp); members on the sending device get a copy too
 * (multicast loopback, as an HCA does), the sending QP included when it
 * is attached; and the errors rxe gives for attach / detach.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IBV_QPT_RC,
  IBV_QPT_UD,
  IBV_WC_SUCCESS,
  errno,
  ibv_attach_mcast,
  ibv_destroy_qp,
  ibv_detach_mcast,
  ibv_query_device,
  newDeviceAttr,
} from '../../src/driver/verbs/index.js';
import type { ibv_gid } from '../../src/driver/verbs/index.js';
import { IBV_QP_CREATE_BLOCK_SELF_MCAST_LB } from '../../src/device/abi/constants.js';
import * as H from './harness.js';

const MCAST_QPN = 0xffffff;
const V4_GROUP: ibv_gid = { raw: Uint8Array.of(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 1, 2, 3) };
const V6_GROUP: ibv_gid = { raw: Uint8Array.of(0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34, 0x56, 0x78) };

describe('UD multicast', () => {
  let f: H.Fabric;
  beforeAll(async () => {
    f = await H.openFabric(H.twoDeviceConfig(1));
  });
  afterAll(async () => {
    await f?.close();
  });

  it('every attached UD QP of the receiving port gets a copy; a detached one does not; an unjoined group is dropped', async () => {
    const attr = newDeviceAttr();
    expect(ibv_query_device(f.b.ctx, attr)).toBe(0);
    expect([attr.max_mcast_grp, attr.max_mcast_qp_attach]).toEqual([8192, 56]);
    const sender = H.createQp(f.a, IBV_QPT_UD);
    const rx = [H.createQp(f.b, IBV_QPT_UD), H.createQp(f.b, IBV_QPT_UD), H.createQp(f.b, IBV_QPT_UD)];
    for (const e of [sender, ...rx]) {
      H.toInit(e);
      H.toRtr(e, { qpn: 0, gid: e.dev.gid }, 0);
      H.toRts(e, 0);
    }
    const src = H.region(f.a, 256, H.ALL_ACCESS, { fill: (i) => i ^ 0x3c });
    const bufs = rx.map(() => H.region(f.b, 1024));
    let wrId = 0n;
    const post = (e: H.Ep, k: number) => H.postRecv(e, H.recvWr(wrId++, [bufs[k]!.sge(0, 1024)]));
    rx.forEach(post);
    expect(ibv_attach_mcast(rx[0]!.qp, V4_GROUP, 0)).toBe(0);
    expect(ibv_attach_mcast(rx[1]!.qp, V4_GROUP, 0)).toBe(0);
    expect(ibv_attach_mcast(rx[1]!.qp, V4_GROUP, 0), 'attaching twice is a no-op').toBe(0);
    expect(ibv_attach_mcast(rx[2]!.qp, V6_GROUP, 0)).toBe(0);
    const ahV4 = H.createAh(f.a, f.b, H.GID_V2_IPV4, V4_GROUP);
    const send = async (ah: typeof ahV4, len: number, what: string) => {
      H.postSend(sender, H.wrSend({ wrId: 1n, sge: [src.sge(0, len)], ud: { ah, qpn: MCAST_QPN, qkey: H.QKEY } }));
      expect((await H.poll1(sender.scq, what)).status).toBe(IBV_WC_SUCCESS);
    };
    await send(ahV4, 100, 'the IPv4 group send');
    for (const k of [0, 1]) {
      const w = await H.poll1(rx[k]!.rcq, `copy ${k}`);
      expect([w.status, w.byte_len, w.src_qp, w.qp_num]).toEqual([IBV_WC_SUCCESS, 40 + 100, sender.qp.qp_num, rx[k]!.qp.qp_num]);
      H.expectBytes(bufs[k]!.data.subarray(40, 140), src.data.subarray(0, 100), `copy ${k}`);
    }
    await H.expectNoCqe(rx[2]!.rcq, 50, 'a QP of another group');
    // Detach one: the next message reaches only the other.
    expect(ibv_detach_mcast(rx[0]!.qp, V4_GROUP, 0)).toBe(0);
    post(rx[1]!, 1);
    const before = H.counters(f.b);
    await send(ahV4, 60, 'after the detach');
    expect((await H.poll1(rx[1]!.rcq, 'the one still attached')).byte_len).toBe(100);
    await H.expectNoCqe(rx[0]!.rcq, 50, 'the detached QP');
    // The IPv6 group (RoCE v2 over IPv6: sent from the IPv6 GID).
    const v6Index = 5;
    const ahV6 = H.createAh(f.a, f.b, v6Index, V6_GROUP);
    await send(ahV6, 33, 'the IPv6 group send');
    expect((await H.poll1(rx[2]!.rcq, 'the IPv6 group copy')).byte_len).toBe(40 + 33);
    // A group nobody joined: the packet arrives and is dropped, counted.
    const lonely = H.createAh(f.a, f.b, H.GID_V2_IPV4, { raw: Uint8Array.of(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 9, 9, 9) });
    await send(lonely, 8, 'to an unjoined group');
    await H.waitCounters(f.b, before, (d) => (d['rx_unknown_qp'] ?? 0n) >= 1n, 'the unjoined group dropped');
    // Destroying a QP leaves its groups.
    expect(ibv_destroy_qp(rx[1]!.qp)).toBe(0);
    expect(ibv_detach_mcast(rx[1]!.qp, V4_GROUP, 0), 'a destroyed QP').toBe(errno.EINVAL);
  });

  it('loopback: members on the sending device get a copy (the sender too, if attached), once; none there is no drop', async () => {
    const group: ibv_gid = { raw: Uint8Array.of(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 4, 5, 6) };
    const sender = H.createQp(f.a, IBV_QPT_UD);
    const local = H.createQp(f.a, IBV_QPT_UD);
    const remote = H.createQp(f.b, IBV_QPT_UD);
    const all = [sender, local, remote];
    for (const e of all) {
      H.toInit(e);
      H.toRtr(e, { qpn: 0, gid: e.dev.gid }, 0);
      H.toRts(e, 0);
    }
    const src = H.region(f.a, 256, H.ALL_ACCESS, { fill: (i) => (i * 7) & 0xff });
    const bufs = all.map((e) => H.region(e.dev, 1024));
    all.forEach((e, k) => H.postRecv(e, H.recvWr(BigInt(k), [bufs[k]!.sge(0, 1024)])));
    const ah = H.createAh(f.a, f.b, H.GID_V2_IPV4, group);
    const send = async (len: number, what: string) => {
      H.postSend(sender, H.wrSend({ wrId: 9n, sge: [src.sge(0, len)], ud: { ah, qpn: MCAST_QPN, qkey: H.QKEY } }));
      expect((await H.poll1(sender.scq, what)).status).toBe(IBV_WC_SUCCESS);
    };
    // Only the remote member: nothing is looped back, and the sending device counts no drop.
    expect(ibv_attach_mcast(remote.qp, group, 0)).toBe(0);
    const before = H.counters(f.a);
    await send(50, 'remote member only');
    expect((await H.poll1(remote.rcq, 'the remote copy')).byte_len).toBe(40 + 50);
    await H.expectNoCqe(local.rcq, 50, 'a local QP that did not join');
    expect(H.counters(f.a)['rx_unknown_qp'], 'no drop counted for the looped copy').toBe(before['rx_unknown_qp']);
    H.postRecv(remote, H.recvWr(3n, [bufs[2]!.sge(0, 1024)]));
    // A local member and the sender itself: one copy each, with the bytes, from the sender.
    expect(ibv_attach_mcast(local.qp, group, 0)).toBe(0);
    expect(ibv_attach_mcast(sender.qp, group, 0)).toBe(0);
    await send(120, 'three members');
    for (const [k, e] of [
      [0, sender],
      [1, local],
      [2, remote],
    ] as const) {
      const w = await H.poll1(e.rcq, `member ${k}`);
      expect([w.status, w.byte_len, w.src_qp, w.qp_num]).toEqual([IBV_WC_SUCCESS, 40 + 120, sender.qp.qp_num, e.qp.qp_num]);
      H.expectBytes(bufs[k]!.data.subarray(40, 160), src.data.subarray(0, 120), `member ${k}`);
    }
    await H.expectNoCqe(local.rcq, 50, 'exactly one copy locally');
    for (const e of all) expect(ibv_detach_mcast(e.qp, group, 0)).toBe(0);
  });

  it('IBV_QP_CREATE_BLOCK_SELF_MCAST_LB: what that QP sends reaches no member on its own device (itself included), the remote one still', async () => {
    const group: ibv_gid = { raw: Uint8Array.of(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 4, 5, 7) };
    const blocked = H.createQp(f.a, IBV_QPT_UD, { createFlags: IBV_QP_CREATE_BLOCK_SELF_MCAST_LB });
    const plain = H.createQp(f.a, IBV_QPT_UD);
    const local = H.createQp(f.a, IBV_QPT_UD);
    const remote = H.createQp(f.b, IBV_QPT_UD);
    const members = [blocked, local, remote];
    for (const e of [blocked, plain, local, remote]) {
      H.toInit(e);
      H.toRtr(e, { qpn: 0, gid: e.dev.gid }, 0);
      H.toRts(e, 0);
    }
    const src = H.region(f.a, 256, H.ALL_ACCESS, { fill: (i) => (i * 5) & 0xff });
    const bufs = members.map((e) => H.region(e.dev, 1024));
    const repost = () => members.forEach((e, k) => H.postRecv(e, H.recvWr(BigInt(k), [bufs[k]!.sge(0, 1024)])));
    repost();
    for (const e of members) expect(ibv_attach_mcast(e.qp, group, 0)).toBe(0);
    const ah = H.createAh(f.a, f.b, H.GID_V2_IPV4, group);
    const send = async (from: H.Ep, len: number, what: string) => {
      H.postSend(from, H.wrSend({ wrId: 9n, sge: [src.sge(0, len)], ud: { ah, qpn: MCAST_QPN, qkey: H.QKEY } }));
      expect((await H.poll1(from.scq, what)).status).toBe(IBV_WC_SUCCESS);
    };
    await send(blocked, 64, 'from the blocking QP');
    expect((await H.poll1(remote.rcq, 'the remote copy')).byte_len).toBe(40 + 64);
    await H.expectNoCqe(local.rcq, 50, 'a local member: blocked');
    await H.expectNoCqe(blocked.rcq, 50, 'the sender itself: blocked');
    // The flag belongs to the sending QP: another QP's multicast still loops back to every local member.
    H.postRecv(remote, H.recvWr(2n, [bufs[2]!.sge(0, 1024)]));
    await send(plain, 80, 'from a QP without the flag');
    for (const e of members) expect((await H.poll1(e.rcq, `member ${e.qp.qp_num}`)).byte_len).toBe(40 + 80);
    for (const e of members) expect(ibv_detach_mcast(e.qp, group, 0)).toBe(0);
    // Only UD QPs take it; other creation flags are not modelled.
    expect(() => H.createQp(f.a, IBV_QPT_RC, { createFlags: IBV_QP_CREATE_BLOCK_SELF_MCAST_LB })).toThrow(expect.objectContaining({ code: 'EINVAL' }));
    expect(() => H.createQp(f.a, IBV_QPT_UD, { createFlags: 1 << 8 })).toThrow(expect.objectContaining({ code: 'EOPNOTSUPP' }));
  });

  it('errors: a non-UD QP, a unicast GID, detaching what is not attached: EINVAL', () => {
    const ud = H.createQp(f.a, IBV_QPT_UD);
    const rc = H.createQp(f.a, IBV_QPT_RC);
    expect(ibv_attach_mcast(rc.qp, V4_GROUP, 0), 'an RC QP').toBe(errno.EINVAL);
    expect(ibv_attach_mcast(ud.qp, f.a.gid, 0), 'a unicast GID').toBe(errno.EINVAL);
    expect(ibv_attach_mcast(ud.qp, { raw: new Uint8Array(4) }, 0), 'a short GID').toBe(errno.EINVAL);
    expect(ibv_detach_mcast(ud.qp, V6_GROUP, 0), 'not attached').toBe(errno.EINVAL);
    expect(ibv_attach_mcast(null as never, V4_GROUP, 0)).toBe(errno.EINVAL);
    expect(ibv_attach_mcast(ud.qp, V6_GROUP, 0)).toBe(0);
    expect(ibv_detach_mcast(ud.qp, V6_GROUP, 0)).toBe(0);
  });
});
