/**
 * XRC on the wire, judged by Wireshark: rnic0's port captures an XRC send
 * QP's 3-packet SEND to one SRQ, a SEND with immediate to another, a
 * 3-packet WRITE, a 2-packet READ and a FETCH&ADD; tshark must decode every
 * frame as InfiniBand (no malformed or error flag) with the XRC opcodes
 * (0xA0 + the RC operation) for the requests and for the receive QP's
 * ACKs, READ responses and atomic ACK. Wireshark 4.0 stops at the BTH of an
 * XRC packet (the rest is "vendor specific data" to it), so the bytes it
 * shows there are checked against IBTA's layout: the XRCETH first on every
 * request, then the RETH / ImmDt / AtomicETH; the AETH first on responses.
 * src/wire decodes the same frames with their ICRCs checked. Skipped where
 * tshark is not installed.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopModel } from '../../src/boot.js';
import { IBV_MTU_1024, IBV_WC_SUCCESS, ibv_post_srq_recv } from '../../src/driver/verbs/index.js';
import { decodePacket, OPCODES, readPcap } from '../../src/wire/index.js';
import { TSHARK, tsharkFields } from '../helpers/tshark.js';
import * as H from './harness.js';
import { connectXrc, openXrcd, toSrq, xrcRecvQp, xrcSendQp, xrcSrq } from './xrc-setup.js';

const XRC = 0xa0;
const MTU = H.pathMtuBytes(IBV_MTU_1024);
const PSN = 0x000500;

describe.skipIf(!TSHARK)('XRC capture on rnic0:1 judged by tshark', () => {
  let dir: string;
  let pcap: string;
  const ids = { send: 0, recv: 0, srq1: 0, srq2: 0, rkey: 0, va: 0n };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rnic-xrc-cap-'));
    pcap = join(dir, 'rnic0.pcap');
    const f = await H.openFabric(
      H.twoDeviceConfig(1, (c) => {
        c.devices[0]!.ports[0]!.capture = pcap;
      }),
    );
    try {
      const xrcd = openXrcd(f.b);
      const cq = H.createCq(f.b);
      const s1 = xrcSrq(f.b, xrcd, cq);
      const s2 = xrcSrq(f.b, xrcd, cq);
      const recv = xrcRecvQp(f.b, xrcd);
      const scq = H.createCq(f.a);
      const send = xrcSendQp(f.a, scq);
      connectXrc(f.a, send, f.b, recv, { psn: PSN });
      Object.assign(ids, { send: send.qp_num, recv: recv.qp_num, srq1: s1.num, srq2: s2.num });
      const src = H.region(f.a, 4 * MTU, H.ALL_ACCESS, { fill: (i) => i * 3 });
      const dst = H.region(f.b, 4 * MTU, H.ALL_ACCESS, { fill: (i) => i * 5 });
      ids.rkey = dst.rkey;
      ids.va = dst.addr;
      expect(ibv_post_srq_recv(s1.srq, H.recvWr(1n, [dst.sge(0, 3 * MTU)]))).toBe(0);
      expect(ibv_post_srq_recv(s2.srq, H.recvWr(2n, [dst.sge(0, 64)]))).toBe(0);
      const ep = { qp: send } as H.Ep;
      const step = async (wr: Parameters<typeof H.postSend>[1], what: string) => {
        H.postSend(ep, wr);
        H.expectWc(await H.poll1(scq, what), { status: IBV_WC_SUCCESS }, what);
      };
      await step(toSrq(H.wrSend({ wrId: 1n, sge: [src.sge(0, 2 * MTU + 100)] }), s1.num), 'XRC SEND 3 packets');
      await step(toSrq(H.wrSend({ wrId: 2n, sge: [src.sge(0, 16)], imm: 0x11223344 }), s2.num), 'XRC SEND with immediate');
      await step(toSrq(H.wrWrite({ wrId: 3n, sge: [src.sge(0, 3 * MTU)], remote: { addr: dst.addr, rkey: dst.rkey } }), s1.num), 'XRC WRITE');
      await step(toSrq(H.wrRead({ wrId: 4n, sge: [src.sge(0, 2000)], remote: { addr: dst.addr, rkey: dst.rkey } }), s1.num), 'XRC READ');
      await step(
        toSrq(H.wrFaa({ wrId: 5n, sge: [src.sge(3 * MTU, 8)], atomic: { addr: dst.at(3 * MTU), rkey: dst.rkey, compareAdd: 5n } }), s2.num),
        'XRC FETCH&ADD',
      );
      await H.pollN(cq, 2, 'both receives');
    } finally {
      await f.close();
      await stopModel();
    }
  });

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const FIELDS = [
    'frame.number',
    'ip.src',
    'infiniband.bth.opcode',
    'infiniband.bth.destqp',
    'infiniband.bth.psn',
    'infiniband.vendor',
    '_ws.malformed',
    '_ws.expert.severity',
  ] as const;

  const hex = (n: number | bigint, bytes: number) => n.toString(16).padStart(bytes * 2, '0');

  it('the XRC opcodes, PSNs and QPNs are what the verbs did; the bytes after the BTH are XRCETH then the RC headers', () => {
    // The last occurrence of the vendor data: Wireshark shows the first 4 bytes after an XRC BTH alone, then all of them again.
    const rows = tsharkFields(pcap, FIELDS, [], 'l').filter((r) => r['infiniband.bth.opcode'] !== '');
    for (const r of rows) {
      expect(r['_ws.malformed'], `frame ${r['frame.number']}: malformed`).toBe('');
      expect(Number(r['_ws.expert.severity'] || '0'), `frame ${r['frame.number']}: expert severity`).toBeLessThan(6291456);
    }
    const A = '192.0.2.1';
    const B = '192.0.2.2';
    const req = (op: number, psn: number) => [A, XRC + op, ids.recv, psn];
    const rsp = (op: number, psn: number) => [B, XRC + op, ids.send, psn];
    const seq = rows.map((r) => [r['ip.src'], Number(r['infiniband.bth.opcode']), Number(r['infiniband.bth.destqp']), Number(r['infiniband.bth.psn'])]);
    const X = PSN;
    expect(seq).toEqual([
      req(0x00, X),
      req(0x01, X + 1),
      req(0x02, X + 2),
      rsp(0x11, X + 2),
      req(0x05, X + 3),
      rsp(0x11, X + 3),
      req(0x06, X + 4),
      req(0x07, X + 5),
      req(0x08, X + 6),
      rsp(0x11, X + 6),
      req(0x0c, X + 7),
      rsp(0x0d, X + 7),
      rsp(0x0f, X + 8),
      req(0x14, X + 9),
      rsp(0x12, X + 9),
    ]);
    // Wireshark 4.0 names the XRC opcodes but dissects nothing after their BTH: it shows those bytes as
    // "Unknown/Vendor Specific Data". They must be what IBTA 9.2 puts there: the XRCETH (reserved byte,
    // 24-bit XRC SRQ) first on a request, then the RC headers (RETH, ImmDt, AtomicETH); a response has
    // no XRCETH and starts with its AETH (syndrome, MSN).
    const after = (i: number) => rows[i]!['infiniband.vendor']!.replace(/:/g, '');
    const xrceth = (srq: number) => `00${hex(srq, 3)}`;
    for (const i of [0, 1, 2, 6, 7, 8, 10]) expect(after(i).slice(0, 8), `frame ${i}: XRCETH`).toBe(xrceth(ids.srq1));
    for (const i of [4, 13]) expect(after(i).slice(0, 8), `frame ${i}: XRCETH`).toBe(xrceth(ids.srq2));
    expect(after(6).slice(8, 40), 'WRITE FIRST: RETH after the XRCETH').toBe(hex(ids.va, 8) + hex(ids.rkey, 4) + hex(3 * MTU, 4));
    expect(after(10).slice(8, 40), 'READ request: RETH after the XRCETH').toBe(hex(ids.va, 8) + hex(ids.rkey, 4) + hex(2000, 4));
    expect(after(4).slice(8, 16), 'SEND with immediate: ImmDt after the XRCETH').toBe('44332211');
    expect(after(13).slice(8, 64), 'FETCH&ADD: AtomicETH after the XRCETH').toBe(hex(ids.va + BigInt(3 * MTU), 8) + hex(ids.rkey, 4) + hex(5, 8) + hex(0, 8));
    // The receive QP's ACKs: syndrome ACK, MSN counting the messages (SEND 1, SEND 2, WRITE 3, READ 4, F&A 5).
    expect([3, 5, 9, 11, 14].map((i) => after(i).slice(0, 8))).toEqual(['1f000001', '1f000002', '1f000003', '1f000004', '1f000005']);
  });

  it('every request carries the XRCETH with the SRQ it named; responses carry none; ICRCs good', () => {
    const file = readPcap(readFileSync(pcap));
    const srqs: number[] = [];
    for (const rec of file.records) {
      if (rec.data[12] !== 0x08 || rec.data[13] !== 0x00) continue;
      const d = decodePacket(rec.data, file.linktype, { verifyIcrc: true, verifyIpChecksum: true });
      expect(d.ok ? 'ok' : d.error.code).toBe('ok');
      if (!d.ok) continue;
      const p = d.packet;
      if (OPCODES[p.bth.opcode]!.isRequest) srqs.push(p.xrceth?.xrcSrq ?? -1);
      else expect(p.xrceth, 'a response has no XRCETH').toBeNull();
    }
    const [s1, s2] = [ids.srq1, ids.srq2];
    expect(srqs).toEqual([s1, s1, s1, s2, s1, s1, s1, s1, s2]);
  });
});
