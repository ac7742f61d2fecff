/**
 * Native InfiniBand misconfiguration and misuse: a clear error naming what
 * is wrong, never a hang. Config files (a missing or misaligned LID, IB keys
 * on an Ethernet port, IP addresses on an IB port, an Ethernet port cabled
 * to an IB one, a UDP cable on an IB port), the same mixed wire built in code
 * for both runtimes, and the verbs an IB port refuses (DLID 0, the
 * permissive LID, a GRH from an empty GID index); RoCE still needs its GRH.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restartModel, startSimModel, stopModel } from '../../src/boot.js';
import {
  errno,
  IBV_QPT_RC,
  IBV_QPS_RTR,
  IBV_QP_AV,
  IBV_QP_DEST_QPN,
  IBV_QP_PATH_MTU,
  IBV_QP_RQ_PSN,
  IBV_QP_STATE,
  IBV_QP_MAX_DEST_RD_ATOMIC,
  IBV_QP_MIN_RNR_TIMER,
  IBV_MTU_1024,
  ibv_create_ah,
  ibv_modify_qp,
  newQpAttr,
} from '../../src/driver/verbs/index.js';
import { type ModelConfig, parseConfig } from '../../src/runtime/config.js';
import { ibConfig, LID_B } from '../helpers/ib.js';
import * as H from './harness.js';

const ibPort = (mac: string, extra: Record<string, unknown> = {}) => ({ mac, linkLayer: 'infiniband', lid: 4, ...extra });
const two = (a: Record<string, unknown>, b: Record<string, unknown>, cables: unknown[] = [{ kind: 'wire', a: 'x:1', b: 'y:1' }]) => ({
  devices: [
    { name: 'x', ports: [a] },
    { name: 'y', ports: [b] },
  ],
  cables,
});

describe('IB port configuration errors', () => {
  it.each([
    ['no LID', two({ mac: '02:00:00:00:00:01', linkLayer: 'infiniband' }, ibPort('02:00:00:00:00:02')), /ports\[0\]\.lid: an InfiniBand port needs its LID/],
    [
      'a base LID not a multiple of 2^lmc',
      two(ibPort('02:00:00:00:00:01', { lid: 6, lmc: 2 }), ibPort('02:00:00:00:00:02')),
      /base LID 6 is not a multiple of 2\^lmc = 4/,
    ],
    ['a LID past the unicast range', two(ibPort('02:00:00:00:00:01', { lid: 0xc000 }), ibPort('02:00:00:00:00:02')), /lid/],
    [
      'a LID on an Ethernet port',
      two({ mac: '02:00:00:00:00:01', ipv4: ['192.0.2.1'], lid: 3 }, { mac: '02:00:00:00:00:02' }),
      /lid and sl2vl are for linkLayer 'infiniband' ports/,
    ],
    [
      'IP addresses on an IB port',
      two(ibPort('02:00:00:00:00:01', { ipv4: ['192.0.2.1'] }), ibPort('02:00:00:00:00:02')),
      /an InfiniBand port has no IP addresses/,
    ],
    ['an SL2VL table of 15 entries', two(ibPort('02:00:00:00:00:01', { sl2vl: Array(15).fill(0) }), ibPort('02:00:00:00:00:02')), /16 entries/],
    ['VL 15 in the SL2VL table', two(ibPort('02:00:00:00:00:01', { sl2vl: Array(16).fill(15) }), ibPort('02:00:00:00:00:02')), /sl2vl/],
    [
      'an Ethernet port wired to an IB port',
      two({ mac: '02:00:00:00:00:01', ipv4: ['192.0.2.1'] }, ibPort('02:00:00:00:00:02')),
      /cables\[0\]: a wire joins ports of one link layer: x:1 is Ethernet, y:1 is InfiniBand/,
    ],
    [
      'a UDP cable on an IB port',
      two(ibPort('02:00:00:00:00:01'), ibPort('02:00:00:00:00:02', { lid: 8 }), [
        { kind: 'udp', port: 'x:1', local: '127.0.0.1:0', remote: '127.0.0.1:47999' },
      ]),
      /x:1 is an InfiniBand port: a UDP cable carries RoCE v2/,
    ],
  ])('%s', (_, raw, message) => {
    expect(() => parseConfig(raw, 'ib.json')).toThrow(message);
  });

  it('a good IB file resolves its LIDs and an identity SL2VL (SL 15 to VL 14)', () => {
    const c = parseConfig(two(ibPort('02:00:00:00:00:01', { lid: 8, lmc: 3, smLid: 9 }), ibPort('02:00:00:00:00:02', { lid: 16 })));
    expect(c.devices[0]!.ports[0]!.ib).toEqual({ lid: 8, lmc: 3, smLid: 9, sl2vl: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 14] });
    expect(c.devices[1]!.ports[0]!.ib?.lmc).toBe(0);
  });
});

describe('a mixed wire built in code (no parseConfig) is refused by both runtimes', () => {
  const mixed = (): ModelConfig => {
    const c = ibConfig(0);
    const eth = parseConfig(two({ mac: '02:00:00:00:00:05', ipv4: ['192.0.2.5'] }, { mac: '02:00:00:00:00:06', ipv4: ['192.0.2.6'] }));
    return { ...c, devices: [c.devices[0]!, { ...eth.devices[1]!, name: 'rnic1' }] };
  };
  afterAll(async () => {
    await stopModel();
  });
  it('the simulator', async () => {
    await expect(startSimModel({ ...mixed(), seed: 1 })).rejects.toThrow(
      /cables\[0\]: a wire joins ports of one link layer: rnic0:1 is InfiniBand, rnic1:1 is Ethernet/,
    );
  });
  it('the realtime runtime', async () => {
    await expect(restartModel(mixed())).rejects.toThrow(/a wire joins ports of one link layer: rnic0:1 is InfiniBand, rnic1:1 is Ethernet/);
  });
});

describe('verbs an IB port refuses', () => {
  let f: H.Fabric;
  beforeAll(async () => {
    await startSimModel({ ...ibConfig(0), seed: 2 });
    const a = H.openDev('rnic0', 0);
    const b = H.openDev('rnic1', 0);
    f = { a, b, config: ibConfig(0), close: async () => {} };
  });
  afterAll(async () => {
    H.closeDev(f.a);
    H.closeDev(f.b);
    await stopModel();
  });

  it.each([
    ['DLID 0 (reserved)', { dlid: 0 }, /bad dlid 0/],
    ['the permissive LID', { dlid: 0xffff }, /bad dlid 65535/],
  ])('ibv_create_ah: %s is EINVAL', (_, ib, message) => {
    expect(() => ibv_create_ah(f.a.pd, H.avTo(f.a, f.b, 0, f.b.gid, ib))).toThrow(message);
  });

  it('ibv_create_ah: a GRH from an empty GID index is EINVAL; LRH only needs none', () => {
    expect(() => ibv_create_ah(f.a.pd, H.avTo(f.a, f.b, 1, f.b.gid, { global: true }))).toThrow(/GID index 1 is empty/);
    expect(() => ibv_create_ah(f.a.pd, H.avTo(f.a, f.b, 1, f.b.gid, { global: false }))).not.toThrow();
  });

  it('modify_qp to RTR with DLID 0 is EINVAL and leaves the QP in INIT; with the peer LID it goes', () => {
    const ep = H.createQp(f.a, IBV_QPT_RC);
    H.toInit(ep);
    const attr = newQpAttr();
    attr.qp_state = IBV_QPS_RTR;
    attr.path_mtu = IBV_MTU_1024;
    attr.dest_qp_num = 5;
    attr.rq_psn = 0;
    attr.max_dest_rd_atomic = 1;
    attr.min_rnr_timer = 1;
    const mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    attr.ah_attr = H.avTo(f.a, null, 0, f.b.gid, { global: false, dlid: 0 });
    expect(ibv_modify_qp(ep.qp, attr, mask)).toBe(errno.EINVAL);
    attr.ah_attr = H.avTo(f.a, null, 0, f.b.gid, { global: false, dlid: LID_B });
    expect(ibv_modify_qp(ep.qp, attr, mask)).toBe(0);
    H.expectQpState(ep.qp, IBV_QPS_RTR);
  });
});
