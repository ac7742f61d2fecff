/**
 * Hostile requests inside a live QP's own window, on the simulator: seeded
 * forged RC requests with a good ICRC, addressed to a connected RC QP at its
 * expected PSN (or just outside its window), each one wrong in one way: a
 * RETH length that disagrees with the payload, a payload above the path MTU,
 * an R_Key or address range the MR does not grant, a MIDDLE with no FIRST, a
 * UD opcode, a misaligned atomic, a READ past the MR, a PSN ahead of or
 * behind the window. What hostile-wire.test.ts does not reach: these pass
 * every header check and meet the responder itself.
 *
 * Each case gets a fresh QP pair. Nothing may throw; no byte of the target
 * MR, of the other MR beside it or of the guard bytes around either changes
 * (none of the requests is one the responder may execute); the victim QP
 * ends where the IBTA puts it (class C errors: ERR, after a NAK; a PSN out of
 * its window: RTS, the request ignored or answered as a duplicate); and the
 * counter that names the case moves by exactly one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimModel, stopModel } from '../../src/boot.js';
import { ibv_destroy_qp, IBV_QPS_ERR, IBV_QPS_RTS, IBV_QPT_RC, IBV_QPT_UC, IBV_WC_SUCCESS, rnic_read_counters } from '../../src/driver/verbs/index.js';
import type { SimModel } from '../../src/runtime/sim/sim-model.js';
import { Random } from '../../src/runtime/sim/random.js';
import { decodePacket, encodePacket, Op, type Packet } from '../../src/wire/index.js';
import {
  closeDev,
  connect,
  createCq,
  createQp,
  openDev,
  pollN,
  postSend,
  qpState,
  region,
  twoDeviceConfig,
  wrWrite,
  type Dev,
  type Region,
} from '../e2e/harness.js';

const MTU = 1024; // the harness's default path MTU
const KINDS = [
  'reth-longer',
  'reth-shorter',
  'over-mtu',
  'bad-rkey',
  'past-mr-end',
  'middle-alone',
  'ud-opcode',
  'misaligned-atomic',
  'read-past-mr',
  'psn-ahead',
  'psn-behind',
] as const;
type Kind = (typeof KINDS)[number];

/** Where the victim must end, and the counter of the responder's device that must move by one (null: none in particular). */
const EXPECT: Record<Kind, { state: number; counter: string | null }> = {
  'reth-longer': { state: IBV_QPS_ERR, counter: null },
  'reth-shorter': { state: IBV_QPS_ERR, counter: null },
  'over-mtu': { state: IBV_QPS_ERR, counter: null },
  'bad-rkey': { state: IBV_QPS_ERR, counter: null },
  'past-mr-end': { state: IBV_QPS_ERR, counter: null },
  'middle-alone': { state: IBV_QPS_ERR, counter: null },
  'ud-opcode': { state: IBV_QPS_RTS, counter: 'rx_qp_type_mismatch' },
  'misaligned-atomic': { state: IBV_QPS_ERR, counter: null },
  'read-past-mr': { state: IBV_QPS_ERR, counter: null },
  'psn-ahead': { state: IBV_QPS_RTS, counter: 'out_of_seq_request' },
  'psn-behind': { state: IBV_QPS_RTS, counter: 'duplicate_request' },
};

let sim: SimModel;
let a: Dev;
let b: Dev;
let target: Region;
let beside: Region;
let template: Packet;

const counters = (d: Dev): Record<string, number> => Object.fromEntries(Object.entries(rnic_read_counters(d.ctx, 1)).map(([k, v]) => [k, Number(v)]));

beforeAll(async () => {
  sim = await startSimModel({ ...twoDeviceConfig(0), seed: 'hostile-requests' });
  a = openDev('rnic0');
  b = openDev('rnic1');
  target = region(b, 8192, undefined, { fill: (i) => (i * 13 + 5) & 0xff });
  beside = region(b, 8192, undefined, { fill: (i) => (i * 29 + 1) & 0xff });
  // One real WRITE_ONLY of 512 bytes: every forged request is cut from it.
  const src = region(a, 4096, undefined, { fill: (i) => i & 0xff });
  const qa = createQp(a, IBV_QPT_RC);
  const qb = createQp(b, IBV_QPT_RC);
  connect(qa, qb);
  let frame: Uint8Array | null = null;
  const off = sim.observe((e) => {
    if (frame || e.dir !== 'tx' || e.device !== 'rnic0') return;
    const d = decodePacket(e.frame);
    if (d.ok && d.packet.bth.opcode === Op.RC_RDMA_WRITE_ONLY) frame = e.frame.slice();
  });
  const scratch = region(b, 4096);
  postSend(qa, wrWrite({ sge: [src.sge(0, 512)], remote: { addr: scratch.at(0), rkey: scratch.rkey }, wrId: 1n }));
  const [wc] = await pollN(qa.scq, 1, 'template WRITE');
  off();
  expect(wc!.status).toBe(IBV_WC_SUCCESS);
  const d = decodePacket(frame!);
  if (!d.ok) throw new Error('template does not decode');
  template = d.packet;
});

afterAll(async () => {
  closeDev(a);
  closeDev(b);
  await stopModel();
});

/** The forged request of `kind` for a victim expecting `epsn` at QPN `qpn`. */
function forge(kind: Kind, rnd: Random, qpn: number, epsn: number): Uint8Array {
  const p: Packet = structuredClone(template);
  p.bth.destQp = qpn;
  p.bth.psn = epsn;
  p.bth.ackReq = 1;
  const len = 1 + rnd.int(MTU);
  const va = target.addr + BigInt(rnd.int(4096));
  p.reth = { va, rkey: target.rkey, dmaLength: len };
  p.payload = new Uint8Array(len).fill(0xee);
  switch (kind) {
    case 'reth-longer':
      p.reth.dmaLength = len + 1 + rnd.int(4096);
      break;
    case 'reth-shorter':
      p.payload = new Uint8Array(len + 1 + rnd.int(MTU - 1)).fill(0xee);
      break;
    case 'over-mtu': {
      const n = MTU + 4 * (1 + rnd.int(256));
      p.payload = new Uint8Array(n).fill(0xee);
      p.reth.dmaLength = n;
      break;
    }
    case 'bad-rkey':
      p.reth.rkey = (target.rkey ^ (1 + rnd.int(0xffffff))) >>> 0;
      if (p.reth.rkey === beside.rkey) p.reth.rkey ^= 0x100;
      break;
    case 'past-mr-end':
      // Starts inside, ends past the last byte by 1 to len bytes.
      p.reth.va = target.addr + BigInt(target.length - len + 1 + rnd.int(len));
      break;
    case 'middle-alone':
      p.bth.opcode = Op.RC_RDMA_WRITE_MIDDLE;
      p.reth = null;
      p.payload = new Uint8Array(MTU).fill(0xee);
      break;
    case 'ud-opcode':
      p.bth.opcode = Op.UD_SEND_ONLY;
      p.reth = null;
      p.deth = { qkey: 0x11111111, resv8: 0, srcQp: 0x99 };
      break;
    case 'misaligned-atomic':
      p.bth.opcode = rnd.bernoulli(0.5) ? Op.RC_COMPARE_SWAP : Op.RC_FETCH_ADD;
      p.reth = null;
      p.payload = new Uint8Array(0);
      p.atomicEth = { va: target.addr + BigInt(8 * rnd.int(512) + 1 + rnd.int(7)), rkey: target.rkey, swapAdd: 0xeeeeeeeen, compare: 0n };
      break;
    case 'read-past-mr':
      p.bth.opcode = Op.RC_RDMA_READ_REQUEST;
      p.payload = new Uint8Array(0);
      p.reth.va = target.addr + BigInt(rnd.int(4096));
      p.reth.dmaLength = target.length + 1 + rnd.int(1 << 20);
      break;
    case 'psn-ahead':
      // Beyond the expected PSN, inside the half of the PSN space ahead of it.
      p.bth.psn = (epsn + 1 + rnd.int(0x7fffff)) & 0xffffff;
      break;
    case 'psn-behind':
      // A duplicate: behind the expected PSN by up to half the space. Never executed again.
      p.bth.psn = (epsn - 1 - rnd.int(0x7fffff)) & 0xffffff;
      break;
  }
  return encodePacket(p);
}

describe('hostile requests in a live QP window', () => {
  it('1,100 seeded forged requests: no byte outside what the rules allow changes, the victim ends where the IBTA puts it, one counter moves', async () => {
    const rnd = new Random('hostile-requests').fork('cases');
    const before = { target: target.data.slice(), beside: beside.data.slice() };
    const cqA = createCq(a, 64);
    const cqB = createCq(b, 64);
    const seen: Record<string, number> = {};
    for (let i = 0; i < 1100; i++) {
      const kind = KINDS[i % KINDS.length]!;
      const what = `case ${i} (${kind})`;
      const va = createQp(a, IBV_QPT_RC, { sendCq: cqA, recvCq: cqA });
      const vb = createQp(b, IBV_QPT_RC, { sendCq: cqB, recvCq: cqB });
      const epsn = rnd.int(0x1000000);
      connect(va, vb, { psnA: epsn, psnB: rnd.int(0x1000000) });
      const c0 = counters(b);
      expect(() => sim.injectFrame('rnic1:1', forge(kind, rnd, vb.qp.qp_num, epsn)), what).not.toThrow();
      await sim.sleep(50_000);
      const c1 = counters(b);
      const want = EXPECT[kind];
      const moved = Object.entries(c1)
        .filter(([k, v]) => v !== c0[k])
        .map(([k, v]) => `${k}+${v - c0[k]!}`)
        .join(' ');
      expect(qpState(vb.qp), `${what}: victim state (counters moved: ${moved})`).toBe(want.state);
      // The requester never sent anything: a NAK for its next PSN is a ghost it ignores.
      expect(qpState(va.qp), `${what}: the victim's peer`).toBe(IBV_QPS_RTS);
      if (want.counter) expect(c1[want.counter]! - c0[want.counter]!, `${what}: ${want.counter}`).toBe(1);
      expect(c1['port_rcv_errors']! - c0['port_rcv_errors']!, `${what}: port_rcv_errors (the frame is well formed)`).toBe(0);
      expect(ibv_destroy_qp(va.qp), what).toBe(0);
      expect(ibv_destroy_qp(vb.qp), what).toBe(0);
      seen[kind] = (seen[kind] ?? 0) + 1;
    }
    expect(Buffer.from(target.data).equals(Buffer.from(before.target)), 'target MR bytes').toBe(true);
    expect(Buffer.from(beside.data).equals(Buffer.from(before.beside)), 'the MR beside it').toBe(true);
    target.checkGuards('target MR');
    beside.checkGuards('the MR beside it');
    expect(Object.keys(seen).length).toBe(KINDS.length);
  });

  it('UC: 400 WRITEs that do not fit (payload above the MTU, a RETH length against the payload, a MIDDLE alone, a bad R_Key) are dropped; the QP stays in RTS, memory unchanged', async () => {
    const rnd = new Random('hostile-requests').fork('uc');
    const before = target.data.slice();
    const cqA = createCq(a, 64);
    const cqB = createCq(b, 64);
    const kinds: Kind[] = ['over-mtu', 'reth-longer', 'reth-shorter', 'middle-alone', 'bad-rkey', 'past-mr-end'];
    for (let i = 0; i < 400; i++) {
      const kind = kinds[i % kinds.length]!;
      const va = createQp(a, IBV_QPT_UC, { sendCq: cqA, recvCq: cqA });
      const vb = createQp(b, IBV_QPT_UC, { sendCq: cqB, recvCq: cqB });
      const epsn = rnd.int(0x1000000);
      connect(va, vb, { psnA: epsn, psnB: rnd.int(0x1000000) });
      const d = decodePacket(forge(kind, rnd, vb.qp.qp_num, epsn));
      if (!d.ok) throw new Error('forged frame does not decode');
      // The RC opcode's UC twin (same operation bits, transport 0x20).
      d.packet.bth.opcode = d.packet.bth.opcode === Op.RC_RDMA_WRITE_MIDDLE ? Op.UC_RDMA_WRITE_MIDDLE : Op.UC_RDMA_WRITE_ONLY;
      expect(() => sim.injectFrame('rnic1:1', encodePacket(d.packet)), `UC case ${i} (${kind})`).not.toThrow();
      await sim.sleep(20_000);
      expect(qpState(vb.qp), `UC case ${i} (${kind})`).toBe(IBV_QPS_RTS);
      expect(ibv_destroy_qp(va.qp)).toBe(0);
      expect(ibv_destroy_qp(vb.qp)).toBe(0);
    }
    expect(Buffer.from(target.data).equals(Buffer.from(before)), 'target MR bytes').toBe(true);
    target.checkGuards('target MR (UC)');
  });
});
