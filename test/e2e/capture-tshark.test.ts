/**
 * The wire, judged by Wireshark: rnic0's port captures to a pcap while a
 * mix of UD SEND, RC SEND, a 3-MTU WRITE, a 2-packet READ, FETCH&ADD,
 * CMP&SWP and SEND-with-immediate run through the verbs API; the model is
 * stopped (closing the file) and tshark reads it back. Every RoCE frame
 * must decode as InfiniBand over UDP 4791 without a malformed or error
 * flag, with a good ICRC (checked with src/wire), and the sequence of
 * opcodes / PSNs / QPNs must be exactly what the verbs did — including a
 * PSN wrap from 0xffffff to 0 inside the WRITE and one ACK per message.
 * The capture starts with the ARP request and reply that resolved the
 * peer. Skipped where tshark is not installed.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopModel } from '../../src/boot.js';
import { neighForget } from '../../src/driver/model/neigh.js';
import { IBV_MTU_1024, IBV_QPT_RC, IBV_QPT_UD, IBV_WC_SUCCESS } from '../../src/driver/verbs/index.js';
import { decodePacket, readPcap } from '../../src/wire/index.js';
import { TSHARK, tsharkFields } from '../helpers/tshark.js';
import * as H from './harness.js';

// BTH opcodes (IBTA table 38).
const OP = {
  SEND_ONLY: 0x04,
  SEND_ONLY_IMM: 0x05,
  WRITE_FIRST: 0x06,
  WRITE_MIDDLE: 0x07,
  WRITE_LAST: 0x08,
  READ_REQUEST: 0x0c,
  READ_RESPONSE_FIRST: 0x0d,
  READ_RESPONSE_LAST: 0x0f,
  ACK: 0x11,
  ATOMIC_ACK: 0x12,
  CMP_SWP: 0x13,
  FETCH_ADD: 0x14,
  UD_SEND_ONLY: 0x64,
} as const;

const MTU = H.pathMtuBytes(IBV_MTU_1024);
/** The requester's first PSN: the WRITE's three packets wrap from 0xffffff to 0. */
const PSN_A = 0xfffffd;
const PSN_B = 0x000123;
const mask = (p: number) => p & 0xffffff;

describe.skipIf(!TSHARK)('capture on rnic0:1 judged by tshark', () => {
  let dir: string;
  let pcap: string;
  const ids: { udA: number; udB: number; rcA: number; rcB: number } = { udA: 0, udB: 0, rcA: 0, rcB: 0 };
  let writeRkey = 0;
  let writeVa = 0n;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rnic-cap-'));
    pcap = join(dir, 'rnic0.pcap');
    const f = await H.openFabric(
      H.twoDeviceConfig(1, (c) => {
        c.devices[0]!.ports[0]!.capture = pcap;
      }),
    );
    // This host's neighbour cache does not know rnic1 (as when the peer is
    // another machine): the port resolves it with ARP before it sends.
    neighForget(f.b.name);
    try {
      // UD first: the datagram that triggers the ARP exchange.
      const ua = H.createQp(f.a, IBV_QPT_UD);
      const ub = H.createQp(f.b, IBV_QPT_UD);
      H.connect(ua, ub);
      ids.udA = ua.qp.qp_num;
      ids.udB = ub.qp.qp_num;
      const ah = H.createAh(f.a, f.b);
      const usrc = H.region(f.a, 100, H.ALL_ACCESS, { fill: (i) => i });
      const urcv = H.region(f.b, 140);
      H.postRecv(ub, H.recvWr(1n, [urcv.sge()]));
      H.postSend(ua, H.wrSend({ wrId: 1n, sge: [usrc.sge()], ud: { ah, qpn: ub.qp.qp_num, qkey: H.QKEY } }));
      H.expectWc(await H.poll1(ua.scq, 'UD SEND'), { status: IBV_WC_SUCCESS }, 'ud send');
      H.expectWc(await H.poll1(ub.rcq, 'UD RECV'), { status: IBV_WC_SUCCESS, byte_len: 140 }, 'ud recv');

      const p = H.makePair(f, IBV_QPT_RC, { psnA: PSN_A, psnB: PSN_B });
      ids.rcA = p.a.qp.qp_num;
      ids.rcB = p.b.qp.qp_num;
      const src = H.region(f.a, 4 * MTU, H.ALL_ACCESS, { fill: (i) => i * 3 });
      const dst = H.region(f.b, 4 * MTU, H.ALL_ACCESS, { fill: (i) => i * 5 });
      writeRkey = dst.rkey;
      writeVa = dst.addr;
      const step = async (wr: Parameters<typeof H.postSend>[1], what: string) => {
        H.postSend(p.a, wr);
        H.expectWc(await H.poll1(p.a.scq, what), { status: IBV_WC_SUCCESS }, what);
      };
      H.postRecv(p.b, [H.recvWr(1n, [dst.sge(0, 256)]), H.recvWr(2n, [dst.sge(256, 256)])]);
      await step(H.wrSend({ wrId: 10n, sge: [src.sge(0, 200)] }), 'RC SEND');
      await step(H.wrWrite({ wrId: 11n, sge: [src.sge(0, 3 * MTU)], remote: { addr: dst.addr, rkey: dst.rkey } }), 'RC WRITE 3 MTU');
      await step(H.wrRead({ wrId: 12n, sge: [src.sge(0, 2000)], remote: { addr: dst.addr, rkey: dst.rkey } }), 'RC READ 2000 B');
      await step(H.wrFaa({ wrId: 13n, sge: [src.sge(3 * MTU, 8)], atomic: { addr: dst.at(3 * MTU), rkey: dst.rkey, compareAdd: 5n } }), 'FETCH&ADD');
      await step(
        H.wrCas({ wrId: 14n, sge: [src.sge(3 * MTU + 8, 8)], atomic: { addr: dst.at(3 * MTU), rkey: dst.rkey, compareAdd: 0n, swap: 9n } }),
        'CMP&SWP',
      );
      await step(H.wrSend({ wrId: 15n, sge: [src.sge(0, 16)], imm: 0x11223344 }), 'SEND with immediate');
      await H.pollN(p.b.rcq, 2, 'both RC receives');
    } finally {
      await f.close(); // closes the devices and stops the model: the pcap is complete
      await stopModel();
    }
  });

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const FIELDS = [
    'frame.number',
    'frame.protocols',
    'eth.src',
    'arp.opcode',
    'arp.dst.proto_ipv4',
    'ip.src',
    'ip.dst',
    'ip.len',
    'udp.dstport',
    'infiniband.bth.opcode',
    'infiniband.bth.destqp',
    'infiniband.bth.psn',
    'infiniband.bth.a',
    'infiniband.reth.dmalen',
    'infiniband.reth.r_key',
    'infiniband.reth.va',
    'infiniband.aeth.syndrome',
    'infiniband.aeth.msn',
    'infiniband.deth.q_key',
    'infiniband.deth.srcqp',
    'infiniband.atomiceth.swapdt',
    'infiniband.atomicacketh.origremdt',
    'infiniband.immdt',
    '_ws.malformed',
    '_ws.expert.severity',
  ] as const;

  it('every frame is ARP or RoCE v2 decoded as InfiniBand, none malformed, ICRCs good', () => {
    const rows = tsharkFields(pcap, FIELDS);
    expect(rows.length).toBeGreaterThan(10);
    for (const r of rows) {
      const protos = r['frame.protocols']!;
      const what = `frame ${r['frame.number']} (${protos})`;
      expect(r['_ws.malformed'], `${what}: malformed`).toBe('');
      if (protos.includes('arp')) continue;
      expect(protos, `${what}: RoCE v2 over IPv4`).toMatch(/^eth:ethertype:ip:udp:infiniband/);
      expect(r['udp.dstport'], what).toBe('4791');
      // tshark's severity: 2097152 note? error is 0x00800000 (8388608); anything ≥ warning is a problem.
      const sev = Number(r['_ws.expert.severity'] || '0');
      expect(sev, `${what}: expert severity`).toBeLessThan(6291456);
    }
    // ICRC and IPv4 checksum of every RoCE frame, recomputed independently.
    const file = readPcap(readFileSync(pcap));
    let roce = 0;
    file.records.forEach((rec, i) => {
      if (rec.data[12] !== 0x08 || rec.data[13] !== 0x00) return; // not IPv4 (ARP)
      const d = decodePacket(rec.data, file.linktype, { verifyIcrc: true, verifyIpChecksum: true });
      expect(d.ok ? 'ok' : `${d.error.code}: ${d.error.message}`, `frame ${i + 1}: decode with ICRC check`).toBe('ok');
      roce++;
    });
    expect(roce).toBe(rows.filter((r) => !r['frame.protocols']!.includes('arp')).length);
  });

  it('starts with the ARP request for 192.0.2.2 and its reply', () => {
    const rows = tsharkFields(pcap, FIELDS);
    const [req, rep, next] = rows;
    expect({ op: req!['arp.opcode'], src: req!['eth.src'], target: req!['arp.dst.proto_ipv4'] }).toEqual({
      op: '1',
      src: '02:00:00:00:00:01',
      target: '192.0.2.2',
    });
    expect({ op: rep!['arp.opcode'], src: rep!['eth.src'] }).toEqual({ op: '2', src: '02:00:00:00:00:02' });
    expect(next!['frame.protocols']).toContain('infiniband');
    expect(rows.filter((r) => r['arp.opcode'] !== '').length, 'no further ARP').toBe(2);
  });

  it('the opcodes, PSNs and QPNs are what the verbs did', () => {
    const rows = tsharkFields(pcap, FIELDS).filter((r) => r['infiniband.bth.opcode'] !== '');
    const A = '192.0.2.1';
    const B = '192.0.2.2';
    const seq = rows.map((r) => [r['ip.src'], Number(r['infiniband.bth.opcode']), Number(r['infiniband.bth.destqp']), Number(r['infiniband.bth.psn'])]);
    const X = PSN_A;
    const req = (op: number, psn: number) => [A, op, ids.rcB, mask(psn)];
    const rsp = (op: number, psn: number) => [B, op, ids.rcA, mask(psn)];
    const expected = [
      [A, OP.UD_SEND_ONLY, ids.udB, rows[0] ? Number(rows[0]['infiniband.bth.psn']) : -1],
      req(OP.SEND_ONLY, X),
      rsp(OP.ACK, X),
      req(OP.WRITE_FIRST, X + 1),
      req(OP.WRITE_MIDDLE, X + 2),
      req(OP.WRITE_LAST, X + 3),
      rsp(OP.ACK, X + 3),
      req(OP.READ_REQUEST, X + 4),
      rsp(OP.READ_RESPONSE_FIRST, X + 4),
      rsp(OP.READ_RESPONSE_LAST, X + 5),
      req(OP.FETCH_ADD, X + 6),
      rsp(OP.ATOMIC_ACK, X + 6),
      req(OP.CMP_SWP, X + 7),
      rsp(OP.ATOMIC_ACK, X + 7),
      req(OP.SEND_ONLY_IMM, X + 8),
      rsp(OP.ACK, X + 8),
    ];
    expect(seq).toEqual(expected);

    const at = (i: number) => rows[i]!;
    // UD: the DETH carries the Q_Key and the source QP.
    expect(Number(at(0)['infiniband.deth.q_key'])).toBe(H.QKEY);
    expect(Number(at(0)['infiniband.deth.srcqp'])).toBe(ids.udA);
    // The WRITE: one RETH on FIRST with the whole length; A requested only on LAST; the PSN wraps.
    expect(Number(at(3)['infiniband.bth.psn'])).toBe(0xfffffe);
    expect(Number(at(5)['infiniband.bth.psn'])).toBe(0);
    expect(Number(at(3)['infiniband.reth.dmalen'])).toBe(3 * MTU);
    expect(Number(at(3)['infiniband.reth.r_key'])).toBe(writeRkey);
    expect(BigInt(at(3)['infiniband.reth.va']!)).toBe(writeVa);
    expect(at(4)['infiniband.reth.dmalen'], 'no RETH on MIDDLE').toBe('');
    expect([at(3), at(4), at(5)].map((r) => r['infiniband.bth.a'])).toEqual(['0', '0', '1']);
    expect(Number(at(3)['ip.len'])).toBe(20 + 8 + 12 + 16 + MTU + 4);
    expect(Number(at(4)['ip.len'])).toBe(20 + 8 + 12 + MTU + 4);
    // ACKs: syndrome ACK (top bits 000), MSN counts the messages.
    // MSN: the responder's count of completed messages (SEND 1, WRITE 2, READ 3, F&A 4, C&S 5, SEND 6).
    const msn = [2, 6, 8, 9, 11, 13, 15].map((i) => Number(at(i)['infiniband.aeth.msn']));
    expect(msn).toEqual([1, 2, 3, 3, 4, 5, 6]);
    for (const i of [2, 6, 15]) expect(Number(at(i)['infiniband.aeth.syndrome']) >> 5, `frame ${at(i)['frame.number']}: AETH is an ACK`).toBe(0);
    // READ: the request asks for 2000 bytes; the responses carry 1024 + 976 with an AETH.
    expect(Number(at(7)['infiniband.reth.dmalen'])).toBe(2000);
    expect(Number(at(8)['ip.len'])).toBe(20 + 8 + 12 + 4 + MTU + 4);
    expect(Number(at(9)['ip.len'])).toBe(20 + 8 + 12 + 4 + (2000 - MTU) + 4);
    // Atomics: the add value, and the original values returned (dst was i*5 at 3072..: the FETCH&ADD saw it, CMP&SWP saw +5).
    expect(BigInt(at(10)['infiniband.atomiceth.swapdt']!)).toBe(5n);
    const orig0 = BigInt(at(11)['infiniband.atomicacketh.origremdt']!);
    const orig1 = BigInt(at(13)['infiniband.atomicacketh.origremdt']!);
    expect(orig1, 'CMP&SWP saw the value after FETCH&ADD').toBe((orig0 + 5n) & 0xffffffffffffffffn);
    // SEND with immediate: the ImmDt is on the wire as written.
    // imm_data is the __be32 as stored in memory (types.ts): on this little-endian host, 0x11223344 goes out as 44 33 22 11.
    expect(at(14)['infiniband.immdt']!.replace(/:/g, '')).toBe('44332211');
  });
});
