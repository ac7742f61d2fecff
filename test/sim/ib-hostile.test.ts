/**
 * Bad native InfiniBand packets, on the simulator: thousands of seeded
 * mutations of a real LRH-only RDMA WRITE (a wrong VCRC, a wrong ICRC, a
 * DLID outside the port's LID range, a wrong LRH PktLen, LVer or LNH,
 * truncation, random bytes, an unknown QP) injected at rnic1's IB port
 * beside a live RC QP. Nothing throws; each kind moves exactly the counters
 * docs/pipeline.md names for it; the live QP keeps completing its WRITEs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimModel, stopModel } from '../../src/boot.js';
import { IBV_QPT_RC, IBV_WC_SUCCESS, rnic_read_counters } from '../../src/driver/verbs/index.js';
import { Random } from '../../src/runtime/sim/random.js';
import type { SimModel } from '../../src/runtime/sim/sim-model.js';
import { decodePacket, encodePacket, LINKTYPE_INFINIBAND, type Packet, payloadOffset, vcrc, writeVcrc } from '../../src/wire/index.js';
import { closeDev, connect, createQp, type Dev, type Ep, openDev, pattern, pollN, postSend, type Region, region, wrWrite } from '../e2e/harness.js';
import { captureWriteTemplate } from './helpers.js';
import { ibConfig, LID_B } from '../helpers/ib.js';

const DROP_COUNTERS = ['port_rcv_errors', 'rx_vcrc_errors', 'rx_icrc_encapsulated', 'rx_dlid_mismatch', 'rx_unknown_qp', 'rx_unknown_opcode'] as const;
type DropCounter = (typeof DROP_COUNTERS)[number];

let sim: SimModel;
let a: Dev;
let b: Dev;
let live: { a: Ep; b: Ep };
let src: Region;
let dst: Region;

const counters = (d: Dev): Record<string, number> => Object.fromEntries(Object.entries(rnic_read_counters(d.ctx, 1)).map(([k, v]) => [k, Number(v)]));
const decodeIb = (f: Uint8Array) => decodePacket(f, LINKTYPE_INFINIBAND);

beforeAll(async () => {
  sim = await startSimModel({ ...ibConfig(0), seed: 'ib-hostile' });
  a = openDev('rnic0', 0);
  b = openDev('rnic1', 0);
  live = { a: createQp(a, IBV_QPT_RC), b: createQp(b, IBV_QPT_RC) };
  connect(live.a, live.b, { ib: { global: false } });
  src = region(a, 4096, undefined, { fill: (i) => (i * 7) & 0xff });
  dst = region(b, 4096);
});

afterAll(async () => {
  closeDev(a);
  closeDev(b);
  await stopModel();
});

/** One RDMA WRITE of the live QP as it left rnic0: the packet the flood is cut from. */
const captureTemplate = (): Promise<Uint8Array> => captureWriteTemplate(sim, live.a, src, dst, LINKTYPE_INFINIBAND);

function reencode(template: Uint8Array, edit: (p: Packet) => void): Uint8Array {
  const d = decodeIb(template);
  if (!d.ok) throw new Error('template does not decode');
  edit(d.packet);
  return encodePacket(d.packet);
}

/** The VCRC recomputed after an edit of the LRH (so only the edited field is wrong). */
function resealVcrc(f: Uint8Array): Uint8Array {
  writeVcrc(f, f.length - 2, vcrc(f, 0, f.length - 2));
  return f;
}

const KINDS = ['vcrc', 'icrc', 'dlid', 'pktlen', 'lver', 'lnh', 'truncate', 'garbage', 'no-qp', 'bad-opcode'] as const;
type Kind = (typeof KINDS)[number];

/** A bad packet of `kind` and the drop counters it must move. */
function hostile(kind: Kind, rnd: Random, template: Uint8Array): { frame: Uint8Array; expect: DropCounter[] } {
  const f = template.slice();
  switch (kind) {
    case 'vcrc':
      f[f.length - 2 + rnd.int(2)]! ^= 1 + rnd.int(255);
      return { frame: f, expect: ['port_rcv_errors', 'rx_vcrc_errors'] };
    case 'icrc': {
      // A byte under the ICRC (payload or ICRC), the VCRC made good again: the link passes it, the ICRC fails.
      const d = decodeIb(template);
      const start = d.ok ? payloadOffset(d.packet) : 20;
      f[start + rnd.int(f.length - 2 - start)]! ^= 1 + rnd.int(255);
      return { frame: resealVcrc(f), expect: ['port_rcv_errors', 'rx_icrc_encapsulated'] };
    }
    case 'dlid': {
      // Any LID but rnic1's (LMC 0: it owns LID_B alone), both CRCs good.
      let dlid = 1 + rnd.int(0xbffe);
      if (dlid === LID_B) dlid++;
      return {
        frame: reencode(template, (p) => {
          p.lrh!.dlid = dlid;
        }),
        expect: ['rx_dlid_mismatch'],
      };
    }
    case 'pktlen': {
      const words = (f.length - 2) / 4;
      let w = rnd.int(0x800);
      if (w === words) w = (w + 1) & 0x7ff;
      f[4] = (f[4]! & 0xf8) | (w >>> 8);
      f[5] = w & 0xff;
      return { frame: resealVcrc(f), expect: ['port_rcv_errors'] };
    }
    case 'lver':
      f[0] = (f[0]! & 0xf0) | (1 + rnd.int(15));
      return { frame: resealVcrc(f), expect: ['port_rcv_errors'] };
    case 'lnh':
      f[1] = (f[1]! & 0xfc) | rnd.int(2); // raw or IPv6 non-IBA
      return { frame: resealVcrc(f), expect: ['port_rcv_errors'] };
    case 'truncate':
      return { frame: template.slice(0, rnd.int(template.length)), expect: ['port_rcv_errors'] };
    case 'garbage': {
      const g = new Uint8Array(1 + rnd.int(1500));
      for (let i = 0; i < g.length; i++) g[i] = rnd.int(256);
      return { frame: g, expect: ['port_rcv_errors'] };
    }
    case 'no-qp':
      return {
        frame: reencode(template, (p) => {
          p.bth.destQp = 0x100000 + rnd.int(0xeffff);
        }),
        expect: ['rx_unknown_qp'],
      };
    case 'bad-opcode': {
      f[8] = 0x1e + rnd.int(2); // reserved RC opcodes (LRH only: the BTH is at 8)
      return { frame: resealVcrc(f), expect: ['port_rcv_errors', 'rx_unknown_opcode'] };
    }
  }
}

describe('bad InfiniBand packets at rnic1:1 beside a live RC QP (LRH only)', () => {
  it('drops and counts every one by its fault, and the live QP keeps working', async () => {
    const template = await captureTemplate();
    const rnd = new Random('ib-hostile').fork('flood');
    const before = counters(b);
    const want: Record<string, number> = Object.fromEntries(DROP_COUNTERS.map((k) => [k, 0]));
    const drawn: Record<string, number> = {};
    const cases = 5000;
    let injected = 0;
    let writes = 0;
    const payload = pattern(4096, 5);
    src.data.set(payload);
    while (injected < cases) {
      for (let i = 0; i < 250 && injected < cases; i++, injected++) {
        const kind = KINDS[rnd.int(KINDS.length)]!;
        drawn[kind] = (drawn[kind] ?? 0) + 1;
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
    const got = Object.fromEntries(DROP_COUNTERS.map((k) => [k, after[k]! - before[k]!]));
    expect(got).toEqual(want);
    expect(Math.min(...KINDS.map((k) => drawn[k] ?? 0))).toBeGreaterThan(350);
    expect(after['out_of_seq_request']! - before['out_of_seq_request']!).toBe(0);
    expect(after['duplicate_request']! - before['duplicate_request']!).toBe(0);
  });
});
