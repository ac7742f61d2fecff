/**
 * The real Wireshark dissector judges the sample capture: every frame
 * decodes as the protocol and opcode we meant, no frame is malformed, and
 * every field tshark reads equals the value we encoded.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LINKTYPE_ETHERNET, OPCODES, sampleFrames, type SampleFrame, Transport } from '../../src/wire/index.js';
import { TSHARK, tsharkBytesU32, tsharkFields, tsharkInt } from '../helpers/tshark.js';
import { openPcapFile } from '../../src/runtime/pcap-file.js';

const FIELDS = [
  'frame.protocols',
  '_ws.malformed',
  '_ws.expert.severity',
  'infiniband.bth.opcode',
  'infiniband.bth.destqp',
  'infiniband.bth.psn',
  'infiniband.bth.se',
  'infiniband.bth.m',
  'infiniband.bth.padcnt',
  'infiniband.bth.tver',
  'infiniband.bth.p_key',
  'infiniband.bth.a',
  'infiniband.reth.va',
  'infiniband.reth.r_key',
  'infiniband.reth.dmalen',
  'infiniband.aeth.syndrome',
  'infiniband.aeth.msn',
  'infiniband.deth.q_key',
  'infiniband.deth.srcqp',
  'infiniband.atomiceth.swapdt',
  'infiniband.atomiceth.cmpdt',
  'infiniband.atomicacketh.origremdt',
  'infiniband.immdt',
  'infiniband.ieth',
  'infiniband.invariant.crc',
  'infiniband.variant.crc',
  'infiniband.lrh.dlid',
  'infiniband.lrh.slid',
  'infiniband.lrh.pktlen',
  'infiniband.grh.paylen',
  'infiniband.grh.dgid',
  'ip.dst',
  'ipv6.dst',
  'udp.dstport',
  'udp.srcport',
  'udp.length',
  'macc.opcode',
  'macc.cbfc.enbv',
  'macc.pause_time',
  ...Array.from({ length: 8 }, (_, i) => `macc.cbfc.pause_time.c${i}`),
] as const;

// tshark 4.0 predates these opcodes: it shows "Unknown OpCode" but still reads the BTH.
const TSHARK_UNKNOWN = new Set([0x1c, 0x1d, 0x81]);

const dir = mkdtempSync(join(tmpdir(), 'rnic-sample-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * tshark 4.0 does not map LINKTYPE_INFINIBAND (247) to its InfiniBand
 * dissector, so native IB frames go to it under DLT_USER0 with that
 * dissector assigned; the bytes are the same.
 */
const DLT_USER0 = 147;
const USER_DLT_IB = ['-o', 'uat:user_dlts:"User 0 (DLT=147)","infiniband","0","","0",""'];

function writeCapture(frames: SampleFrame[], linktype: number, name: string): string {
  const path = join(dir, name);
  const w = openPcapFile(path, { linktype });
  frames.forEach((f, i) => w.write(f.bytes, BigInt(i) * 1000n));
  w.close();
  return path;
}

const byteSwap32 = (v: number) => (((v & 0xff) << 24) | ((v & 0xff00) << 8) | ((v >>> 8) & 0xff00) | (v >>> 24)) >>> 0;

function compare(f: SampleFrame, t: Record<string, string>, problems: string[]): void {
  const want = (field: string, expected: bigint | number | null, got: bigint | null) => {
    const e = expected === null ? null : BigInt(expected);
    if (e !== got) problems.push(`${f.label}: ${field} tshark=${got} ours=${e}`);
  };
  if (t['_ws.malformed'] !== '') problems.push(`${f.label}: tshark flags it malformed`);
  if (t['_ws.expert.severity'] !== '' && Number(t['_ws.expert.severity']) >= 0x00800000)
    problems.push(`${f.label}: tshark expert error/warning ${t['_ws.expert.severity']}`);
  if (f.packet) {
    const p = f.packet;
    const proto = t['frame.protocols']!;
    if (!/(^|:)infiniband(:|$)/.test(proto)) problems.push(`${f.label}: tshark protocols ${proto} lack infiniband`);
    if (p.framing === 'roce-v2' && !proto.includes(':udp:infiniband')) problems.push(`${f.label}: not RoCE v2 over UDP (${proto})`);
    want('bth.opcode', p.bth.opcode, tsharkInt(t['infiniband.bth.opcode']!));
    want('bth.destqp', p.bth.destQp, tsharkInt(t['infiniband.bth.destqp']!));
    want('bth.psn', p.bth.psn, tsharkInt(t['infiniband.bth.psn']!));
    want('bth.p_key', p.bth.pkey, tsharkInt(t['infiniband.bth.p_key']!));
    if (TSHARK_UNKNOWN.has(p.bth.opcode)) return;
    want('bth.se', p.bth.se, tsharkInt(t['infiniband.bth.se']!));
    want('bth.m', p.bth.migReq, tsharkInt(t['infiniband.bth.m']!));
    want('bth.padcnt', -p.payload.length & 3, tsharkInt(t['infiniband.bth.padcnt']!));
    want('bth.tver', 0, tsharkInt(t['infiniband.bth.tver']!));
    want('bth.a', p.bth.ackReq, tsharkInt(t['infiniband.bth.a']!));
    // tshark files the AtomicETH VA and R_Key under the reth.* field names.
    want('reth.va', p.reth?.va ?? p.atomicEth?.va ?? null, tsharkInt(t['infiniband.reth.va']!));
    want('reth.r_key', p.reth?.rkey ?? p.atomicEth?.rkey ?? null, tsharkInt(t['infiniband.reth.r_key']!));
    want('reth.dmalen', p.reth?.dmaLength ?? null, tsharkInt(t['infiniband.reth.dmalen']!));
    want('aeth.syndrome', p.aeth?.syndrome ?? null, tsharkInt(t['infiniband.aeth.syndrome']!));
    want('aeth.msn', p.aeth?.msn ?? null, tsharkInt(t['infiniband.aeth.msn']!));
    want('deth.q_key', p.deth?.qkey ?? null, tsharkInt(t['infiniband.deth.q_key']!));
    want('deth.srcqp', p.deth?.srcQp ?? null, tsharkInt(t['infiniband.deth.srcqp']!));
    want('atomiceth.swapdt', p.atomicEth?.swapAdd ?? null, tsharkInt(t['infiniband.atomiceth.swapdt']!));
    want('atomiceth.cmpdt', p.atomicEth?.compare ?? null, tsharkInt(t['infiniband.atomiceth.cmpdt']!));
    want('atomicacketh.origremdt', p.atomicAckEth?.origData ?? null, tsharkInt(t['infiniband.atomicacketh.origremdt']!));
    want('immdt', p.immDt, tsharkBytesU32(t['infiniband.immdt']!));
    want('ieth', p.ieth, tsharkBytesU32(t['infiniband.ieth']!));
    // tshark shows the ICRC as the four wire bytes read big-endian; ours is the CRC value (sent LSB first).
    const b = f.bytes;
    const icrcOff = b.length - (p.framing === 'ib' ? 6 : 4) - trailer(f);
    want('invariant.crc', byteSwap32(readLe32(b, icrcOff)), tsharkInt(t['infiniband.invariant.crc']!));
    if (p.framing === 'ib') {
      want('variant.crc', (b[b.length - 2]! << 8) | b[b.length - 1]!, tsharkInt(t['infiniband.variant.crc']!));
      want('lrh.dlid', p.lrh!.dlid, tsharkInt(t['infiniband.lrh.dlid']!));
      want('lrh.slid', p.lrh!.slid, tsharkInt(t['infiniband.lrh.slid']!));
      want('lrh.pktlen', (b.length - 2) / 4, tsharkInt(t['infiniband.lrh.pktlen']!));
    }
    if (p.framing === 'roce-v2') {
      want('udp.dstport', 4791, tsharkInt(t['udp.dstport']!));
      want('udp.srcport', p.udp!.srcPort, tsharkInt(t['udp.srcport']!));
    }
  } else if (f.pfc) {
    want('macc.opcode', 0x0101, tsharkInt(t['macc.opcode']!));
    want('macc.cbfc.enbv', f.pfc.classEnable, tsharkInt(t['macc.cbfc.enbv']!));
    f.pfc.pauseTimes.forEach((q, i) => {
      // tshark shows a priority's time only when its enable bit is set.
      const got = tsharkInt(t[`macc.cbfc.pause_time.c${i}`]!);
      want(`pause_time.c${i}`, (f.pfc!.classEnable >> i) & 1 ? q : null, (f.pfc!.classEnable >> i) & 1 ? got : null);
    });
  } else {
    want('macc.opcode', 0x0001, tsharkInt(t['macc.opcode']!));
    want('macc.pause_time', f.pauseTime, tsharkInt(t['macc.pause_time']!));
  }
}

/** Ethernet minimum-size padding after the packet. */
function trailer(f: SampleFrame): number {
  const p = f.packet!;
  if (p.framing === 'ib') return 0;
  const ipEnd = p.ipv4
    ? 14 + (p.eth!.vlan ? 4 : 0) + readBe16(f.bytes, 16 + (p.eth!.vlan ? 4 : 0))
    : p.ipv6
      ? 14 + 40 + readBe16(f.bytes, 18)
      : 14 + 40 + readBe16(f.bytes, 18);
  return f.bytes.length - ipEnd;
}

function readBe16(b: Uint8Array, o: number): number {
  return (b[o]! << 8) | b[o + 1]!;
}

function readLe32(b: Uint8Array, o: number): number {
  return (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) >>> 0;
}

describe.skipIf(!TSHARK)('sample capture judged by tshark', () => {
  const all = sampleFrames();
  const eth = all.filter((f) => f.framing !== 'ib');
  const ib = all.filter((f) => f.framing === 'ib');

  it('covers every RC, UC and UD opcode in every framing, plus CNP, PFC and PAUSE', () => {
    const model = OPCODES.filter((i) => i?.modelSupported && i.kind !== 'cnp' && i.transport !== Transport.XRC).length;
    expect(all.filter((f) => f.packet).length).toBe(model * 4 + 2);
    expect(all.filter((f) => f.pfc).length).toBeGreaterThan(0);
    expect(all.filter((f) => f.pauseTime !== null).length).toBe(1);
  });

  for (const [name, frames, linktype, args] of [
    ['Ethernet', eth, LINKTYPE_ETHERNET, []],
    ['InfiniBand', ib, DLT_USER0, USER_DLT_IB],
  ] as const) {
    it(`${name} frames: tshark agrees field by field`, () => {
      const path = writeCapture(frames, linktype, `${name}.pcap`);
      const rows = tsharkFields(path, FIELDS, [...args]);
      expect(rows.length).toBe(frames.length);
      const problems: string[] = [];
      frames.forEach((f, i) => compare(f, rows[i]!, problems));
      expect(problems.slice(0, 30)).toEqual([]);
    });
  }

  it('the IPv6 UDP checksum we compute is one tshark accepts', () => {
    const frames = eth.filter((f) => f.packet?.ipv6);
    const path = writeCapture(frames, LINKTYPE_ETHERNET, 'v6.pcap');
    const rows = tsharkFields(path, ['udp.checksum.status'], ['-o', 'udp.check_checksum:TRUE']);
    expect(rows.map((r) => r['udp.checksum.status'])).toEqual(frames.map(() => '1'));
  });
});
