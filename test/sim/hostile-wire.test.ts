/**
 * A hostile wire, on the simulator: thousands of seeded forged, mutated and
 * truncated frames injected at a model port while a live RC QP moves data
 * through the same port. Nothing throws, every dropped frame moves exactly
 * the counter docs/pipeline.md names for it, the neighbour table stays
 * within its bound, and the live QP's WRITEs and SENDs all complete, during
 * and after the flood.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimModel, stopModel } from '../../src/boot.js';
import { ibv_destroy_qp, IBV_QPT_RC, IBV_QPT_UD, IBV_WC_SUCCESS, rnic_read_counters } from '../../src/driver/verbs/index.js';
import type { SimModel } from '../../src/runtime/sim/sim-model.js';
import { Random } from '../../src/runtime/sim/random.js';
import { decodePacket, encodePacket, OPCODES, payloadOffset, type Packet } from '../../src/wire/index.js';
import {
  closeDev,
  connect,
  createQp,
  openDev,
  pattern,
  pollN,
  postRecv,
  postSend,
  recvWr,
  region,
  toInit,
  twoDeviceConfig,
  wrSend,
  wrWrite,
  type Dev,
  type Ep,
  type Region,
} from '../e2e/harness.js';
import { captureWriteTemplate } from './helpers.js';

const DROP_COUNTERS = [
  'port_rcv_errors',
  'rx_icrc_encapsulated',
  'rx_unknown_opcode',
  'rx_unknown_qp',
  'rx_qp_type_mismatch',
  'rx_qp_state_drop',
  'bad_pkey_cntr',
] as const;

let sim: SimModel;
let a: Dev;
let b: Dev;
let live: { a: Ep; b: Ep };
let ud: Ep;
let initQp: Ep;
let goneQpn: number;
let src: Region;
let dst: Region;

function counters(d: Dev): Record<string, number> {
  const c = rnic_read_counters(d.ctx, 1);
  return Object.fromEntries(Object.entries(c).map(([k, v]) => [k, Number(v)]));
}

beforeAll(async () => {
  sim = await startSimModel({ ...twoDeviceConfig(0), seed: 'hostile-wire' });
  a = openDev('rnic0');
  b = openDev('rnic1');
  live = { a: createQp(a, IBV_QPT_RC), b: createQp(b, IBV_QPT_RC) };
  connect(live.a, live.b);
  ud = createQp(b, IBV_QPT_UD);
  connect(ud, createQp(a, IBV_QPT_UD), { qkey: 0x11111111 });
  initQp = createQp(b, IBV_QPT_RC);
  toInit(initQp);
  const gone = createQp(b, IBV_QPT_RC);
  goneQpn = gone.qp.qp_num;
  expect(ibv_destroy_qp(gone.qp)).toBe(0);
  b.cleanup.splice(b.cleanup.length - 1, 1); // already destroyed
  src = region(a, 4096, undefined, { fill: (i) => (i * 7) & 0xff });
  dst = region(b, 4096);
});

afterAll(async () => {
  closeDev(a);
  closeDev(b);
  await stopModel();
});

/** One RDMA WRITE of the live QP as it left rnic0: the packet the flood is cut from. */
const captureTemplate = (): Promise<Uint8Array> => captureWriteTemplate(sim, live.a, src, dst);

type Kind = 'flip' | 'truncate' | 'no-qp' | 'gone-qp' | 'wrong-type' | 'wrong-state' | 'bad-opcode' | 'forged-source' | 'bad-pkey' | 'garbage';
const KINDS: Kind[] = ['flip', 'truncate', 'no-qp', 'gone-qp', 'wrong-type', 'wrong-state', 'bad-opcode', 'forged-source', 'bad-pkey', 'garbage'];

function reencode(template: Uint8Array, edit: (p: Packet) => void): Uint8Array {
  const d = decodePacket(template);
  if (!d.ok) throw new Error('template does not decode');
  edit(d.packet);
  return encodePacket(d.packet);
}

/** A hostile frame of `kind`, and the drop counter it must move (null: none of the RDMA ones). */
function hostile(kind: Kind, rnd: Random, template: Uint8Array): { frame: Uint8Array; expect: (typeof DROP_COUNTERS)[number][] } {
  const reserved = Array.from({ length: 256 }, (_, i) => i).filter((op) => !OPCODES[op]);
  switch (kind) {
    case 'flip': {
      // Bytes under the ICRC only (payload, ICRC): the port passes it, the ICRC fails.
      const d = decodePacket(template);
      const start = d.ok ? payloadOffset(d.packet) : 60;
      const f = template.slice();
      const n = 1 + rnd.int(4);
      for (let i = 0; i < n; i++) f[start + rnd.int(f.length - start)]! ^= 1 + rnd.int(255);
      return { frame: f, expect: ['port_rcv_errors', 'rx_icrc_encapsulated'] };
    }
    case 'truncate':
      // Past the UDP header (so the port hands it on), short of the end.
      return { frame: template.slice(0, 42 + rnd.int(template.length - 42)), expect: ['port_rcv_errors'] };
    case 'no-qp':
      return {
        frame: reencode(template, (p) => {
          p.bth.destQp = 0x100000 + rnd.int(0xeffff);
        }),
        expect: ['rx_unknown_qp'],
      };
    case 'gone-qp':
      return {
        frame: reencode(template, (p) => {
          p.bth.destQp = goneQpn;
        }),
        expect: ['rx_unknown_qp'],
      };
    case 'wrong-type':
      return {
        frame: reencode(template, (p) => {
          p.bth.destQp = ud.qp.qp_num;
        }),
        expect: ['rx_qp_type_mismatch'],
      };
    case 'wrong-state':
      return {
        frame: reencode(template, (p) => {
          p.bth.destQp = initQp.qp.qp_num;
        }),
        expect: ['rx_qp_state_drop'],
      };
    case 'bad-opcode': {
      const f = template.slice();
      f[42] = reserved[rnd.int(reserved.length)]!; // BTH opcode (RoCE v2 over IPv4: 14 + 20 + 8)
      return { frame: f, expect: ['port_rcv_errors', 'rx_unknown_opcode'] };
    }
    case 'forged-source':
      // A new source address every time (neighbour learning), to a QP that does not exist.
      return {
        frame: reencode(template, (p) => {
          p.ipv4!.src = Uint8Array.of(10, rnd.int(256), rnd.int(256), 1 + rnd.int(250));
          p.bth.destQp = 0x200000 + rnd.int(0xfffff);
        }),
        expect: ['rx_unknown_qp'],
      };
    case 'bad-pkey':
      return {
        frame: reencode(template, (p) => {
          p.bth.pkey = 0x1234;
        }),
        expect: ['bad_pkey_cntr'],
      };
    case 'garbage': {
      // Random bytes: the MAC filter drops them (a 2^-48 chance of our address aside).
      const f = new Uint8Array(1 + rnd.int(1500));
      for (let i = 0; i < f.length; i++) f[i] = rnd.int(256);
      f[0] = (f[0]! & 0xfe) | 0x02; // locally administered unicast, never ours
      f[1] = 0xee;
      return { frame: f, expect: [] };
    }
  }
}

describe('hostile wire: a seeded flood at rnic1:1 beside a live RC QP', () => {
  it('drops and counts every hostile frame, keeps the neighbour table bounded, and the live QP keeps working', async () => {
    const template = await captureTemplate();
    const rnd = new Random('hostile-wire').fork('flood');
    const before = counters(b);
    const portBefore = sim.portCounters('rnic1:1');
    const want: Record<string, number> = Object.fromEntries(DROP_COUNTERS.map((k) => [k, 0]));
    const cases = 6000;
    let injected = 0;
    let writes = 0;
    const payload = pattern(4096, 11);
    src.data.set(payload);
    // Interleave: a batch of hostile frames, a live WRITE, poll (virtual time moves).
    while (injected < cases) {
      for (let i = 0; i < 200 && injected < cases; i++, injected++) {
        const kind = KINDS[rnd.int(KINDS.length)]!;
        const h = hostile(kind, rnd, template);
        for (const k of h.expect) want[k]!++;
        expect(() => sim.injectFrame('rnic1:1', h.frame)).not.toThrow();
      }
      const off = (writes % 8) * 512;
      postSend(live.a, wrWrite({ sge: [src.sge(off, 512)], remote: { addr: dst.at(off), rkey: dst.rkey }, wrId: BigInt(100 + writes) }));
      const [wc] = await pollN(live.a.scq, 1, `live WRITE ${writes} during the flood`);
      expect(wc!.status, `live WRITE ${writes}`).toBe(IBV_WC_SUCCESS);
      writes++;
    }
    expect(Buffer.from(dst.data)).toEqual(Buffer.from(payload));
    dst.checkGuards('after the flood');

    const after = counters(b);
    for (const k of DROP_COUNTERS) expect(after[k]! - before[k]!, k).toBe(want[k]);
    // Every hostile kind was drawn many times.
    expect(Math.min(...Object.values(want).filter((_, i) => DROP_COUNTERS[i] !== 'bad_pkey_cntr'))).toBeGreaterThan(300);
    // The live QP's traffic was never taken for a hostile frame's.
    expect(after['out_of_seq_request']! - before['out_of_seq_request']!).toBe(0);
    expect(after['duplicate_request']! - before['duplicate_request']!).toBe(0);

    // Bounded: ~600 forged sources against a table of 1024 would fit, so the
    // bound is checked on the count: entries ≤ capacity, and every forged
    // source learned or counted.
    const port = sim.portCounters('rnic1:1');
    expect(port['neighbors']).toBeLessThanOrEqual(1024);
    expect(port['neigh_evictions']! - portBefore['neigh_evictions']!).toBe(0);

    // After the flood: a SEND / RECV round on the live QP.
    postRecv(live.b, recvWr(7n, [dst.sge(0, 256)]));
    postSend(live.a, wrSend({ sge: [src.sge(0, 256)], wrId: 8n }));
    const [r] = await pollN(live.b.rcq, 1, 'receive after the flood');
    const [s] = await pollN(live.a.scq, 1, 'send after the flood');
    expect([r!.status, s!.status]).toEqual([IBV_WC_SUCCESS, IBV_WC_SUCCESS]);
    expect(r!.byte_len).toBe(256);
  });

  it('a flood of forged sources fills the neighbour table to its bound and no further; known neighbours stay', async () => {
    const template = await captureTemplate();
    const rnd = new Random('hostile-wire').fork('sources');
    const peerBefore = sim.portCounters('rnic1:1');
    for (let i = 0; i < 3000; i++) sim.injectFrame('rnic1:1', hostile('forged-source', rnd, template).frame);
    sim.advance(1_000_000); // the receive stage takes them in virtual time
    const port = sim.portCounters('rnic1:1');
    expect(port['neighbors']).toBe(1024);
    expect(port['neigh_learn_dropped']! - peerBefore['neigh_learn_dropped']!).toBeGreaterThan(3000 - 1024);
    expect(port['neigh_evictions']).toBe(peerBefore['neigh_evictions']);
    // rnic0 is still known: the live QP still works (its path re-resolves nothing).
    const off = 1024;
    postSend(live.a, wrWrite({ sge: [src.sge(off, 64)], remote: { addr: dst.at(off), rkey: dst.rkey }, wrId: 9n }));
    const [wc] = await pollN(live.a.scq, 1, 'WRITE after the source flood');
    expect(wc!.status).toBe(IBV_WC_SUCCESS);
  });
});
