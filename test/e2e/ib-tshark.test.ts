/**
 * tshark judges a native InfiniBand capture the model wrote: RC traffic with
 * and without the GRH at SL 3, and UD datagrams, on the simulator, rnic0's
 * port captured. tshark 4.0 does not map LINKTYPE_INFINIBAND (247) to its
 * dissector, so the file's link type is rewritten to DLT_USER0 with the
 * infiniband dissector assigned (docs/wire.md); the frames are unchanged.
 * Every frame: no malformed or expert error, the LRH (VL, SL, LNH, DLID,
 * SLID, PktLen), GRH, BTH and both CRCs as our decoder reads them.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startSimModel, stopModel } from '../../src/boot.js';
import { IBV_QPT_RC, IBV_QPT_UD, IBV_WC_SUCCESS } from '../../src/driver/verbs/index.js';
import { decodePacket, iteratePcap, LINKTYPE_INFINIBAND, readPcapHeader } from '../../src/wire/index.js';
import { ibConfig, LID_A, LID_B } from '../helpers/ib.js';
import { TSHARK, tsharkFields, tsharkInt } from '../helpers/tshark.js';
import * as H from './harness.js';

const DLT_USER0 = 147;
const USER_DLT_IB = ['-o', 'uat:user_dlts:"User 0 (DLT=147)","infiniband","0","","0",""'];
const FIELDS = [
  'frame.protocols',
  '_ws.malformed',
  '_ws.expert.severity',
  'infiniband.lrh.vl',
  'infiniband.lrh.sl',
  'infiniband.lrh.lnh',
  'infiniband.lrh.dlid',
  'infiniband.lrh.slid',
  'infiniband.lrh.pktlen',
  'infiniband.grh.paylen',
  'infiniband.bth.opcode',
  'infiniband.bth.psn',
  'infiniband.bth.destqp',
  'infiniband.invariant.crc',
  'infiniband.variant.crc',
] as const;

const dir = mkdtempSync(join(tmpdir(), 'rnic-ib-tshark-'));
afterAll(async () => {
  await stopModel();
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!TSHARK)('an InfiniBand capture of the model, judged by tshark', () => {
  it('every frame of RC (LRH only and LRH+GRH, SL 3) and UD traffic decodes in tshark as in our decoder', async () => {
    await startSimModel({ ...ibConfig(0, dir), seed: 3 });
    const a = H.openDev('rnic0', 0);
    const b = H.openDev('rnic1', 0);
    const f: H.Fabric = { a, b, config: ibConfig(0), close: async () => {} };
    for (const global of [false, true]) {
      const p = H.makePair(f, IBV_QPT_RC, { ib: { global }, sl: 3 });
      const src = H.region(a, 4096, H.ALL_ACCESS, { fill: (i) => i });
      const dst = H.region(b, 4096, H.ALL_ACCESS);
      H.postRecv(p.b, H.recvWr(1n, [dst.sge(0, 4096)]));
      H.postSend(p.a, H.wrSend({ wrId: 1n, sge: [src.sge(0, 2500)] }));
      H.postSend(p.a, H.wrRead({ wrId: 2n, sge: [src.sge(0, 1500)], remote: { addr: dst.at(0), rkey: dst.rkey } }));
      H.postSend(p.a, H.wrFaa({ wrId: 3n, sge: [src.sge(4000, 8)], atomic: { addr: dst.at(4088), rkey: dst.rkey, compareAdd: 1n } }));
      for (const w of await H.pollN(p.a.scq, 3, 'RC completions')) expect(w.status).toBe(IBV_WC_SUCCESS);
      const u = H.makePair(f, IBV_QPT_UD);
      const ah = H.createAh(a, b, 0, b.gid, { global });
      H.postRecv(u.b, H.recvWr(1n, [dst.sge(0, 4096)]));
      H.postSend(u.a, H.wrSend({ wrId: 4n, sge: [src.sge(0, 333)], ud: { ah, qpn: u.b.qp.qp_num, qkey: H.QKEY } }));
      expect((await H.poll1(u.b.rcq, 'UD receive')).status).toBe(IBV_WC_SUCCESS);
    }
    H.closeDev(a);
    H.closeDev(b);
    await stopModel();

    const pcap = readFileSync(join(dir, 'a.pcap'));
    expect(readPcapHeader(pcap).linktype).toBe(LINKTYPE_INFINIBAND);
    const frames = [...iteratePcap(pcap)].map((r) => r.data);
    const user0 = Uint8Array.from(pcap);
    new DataView(user0.buffer).setUint32(20, DLT_USER0, readPcapHeader(pcap).littleEndian);
    const path = join(dir, 'user0.pcap');
    writeFileSync(path, user0);
    const rows = tsharkFields(path, FIELDS, USER_DLT_IB);
    expect(rows.length).toBe(frames.length);
    expect(frames.length).toBeGreaterThanOrEqual(16);
    const problems: string[] = [];
    const lnhs = new Set<string>();
    frames.forEach((bytes, i) => {
      const t = rows[i]!;
      const d = decodePacket(bytes, LINKTYPE_INFINIBAND);
      if (!d.ok) return problems.push(`frame ${i}: ours: ${d.error.message}`);
      const p = d.packet;
      const want = (field: (typeof FIELDS)[number], ours: number | null) => {
        const got = tsharkInt(t[field]!);
        if (got !== (ours === null ? null : BigInt(ours))) problems.push(`frame ${i}: ${field} tshark=${got} ours=${ours}`);
      };
      if (t['_ws.malformed'] !== '') problems.push(`frame ${i}: tshark flags it malformed`);
      if (t['_ws.expert.severity'] !== '' && Number(t['_ws.expert.severity']) >= 0x00800000) problems.push(`frame ${i}: expert ${t['_ws.expert.severity']}`);
      const proto = t['frame.protocols']!;
      if (!/(^|:)infiniband(:|$)/.test(proto) || /(^|:)eth(:|$)/.test(proto)) problems.push(`frame ${i}: protocols ${proto}`);
      lnhs.add(String(tsharkInt(t['infiniband.lrh.lnh']!)));
      const lrh = p.lrh!;
      want('infiniband.lrh.vl', lrh.vl);
      want('infiniband.lrh.sl', lrh.sl);
      want('infiniband.lrh.lnh', lrh.lnh);
      want('infiniband.lrh.dlid', lrh.dlid);
      want('infiniband.lrh.slid', lrh.slid);
      want('infiniband.lrh.pktlen', (bytes.length - 2) / 4);
      want('infiniband.grh.paylen', p.grh ? p.grh.payLen : null);
      want('infiniband.bth.opcode', p.bth.opcode);
      want('infiniband.bth.psn', p.bth.psn);
      want('infiniband.bth.destqp', p.bth.destQp);
      // tshark shows the ICRC as its four wire bytes read big-endian; ours is the CRC value (sent LSB first).
      const icrcAt = bytes.length - 6;
      const le = (bytes[icrcAt]! | (bytes[icrcAt + 1]! << 8) | (bytes[icrcAt + 2]! << 16) | (bytes[icrcAt + 3]! << 24)) >>> 0;
      want('infiniband.invariant.crc', (((le & 0xff) << 24) | ((le & 0xff00) << 8) | ((le >>> 8) & 0xff00) | (le >>> 24)) >>> 0);
      want('infiniband.variant.crc', (bytes[bytes.length - 2]! << 8) | bytes[bytes.length - 1]!);
      // RC requests leave at SL 3 (VL 3 by the identity SL2VL); the LIDs are the two ports'.
      if ([lrh.slid, lrh.dlid].sort().join() !== [LID_A, LID_B].sort().join()) problems.push(`frame ${i}: LIDs ${lrh.slid} -> ${lrh.dlid}`);
      const rc = p.bth.opcode < 0x20;
      if (lrh.sl !== (rc ? 3 : 0) || lrh.vl !== lrh.sl) problems.push(`frame ${i}: ${rc ? 'RC' : 'UD'} at SL ${lrh.sl} VL ${lrh.vl}`);
      return undefined;
    });
    expect(problems.slice(0, 20)).toEqual([]);
    expect([...lnhs].sort(), 'LNH 2 (IBA local) and 3 (IBA global) both present').toEqual(['2', '3']);
  });
});
