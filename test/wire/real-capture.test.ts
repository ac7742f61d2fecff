/**
 * The real-world judge: 571 RoCE v2 frames captured between two Linux
 * Soft-RoCE (rdma_rxe) hosts (test/fixtures/README.md).
 *
 *  1. every frame decodes, with ICRC and IPv4-checksum verification on;
 *  2. every ICRC is also recomputed here, independently of src/wire/icrc.ts,
 *     with node:zlib's crc32 over the masked headers (SPEC-DIGEST §3.1);
 *  3. encodePacket(decodePacket(frame)) gives back exactly the same bytes;
 *  4. every header field agrees with Wireshark's reading of the same frame
 *     (tshark run once over the whole file), and tshark flags no frame as
 *     malformed and raises no error-severity expert item;
 *  5. the UDP source ports are what rxeInitialUdpSport / roceUdpSport give
 *     for the QPNs seen (RDMA-CM-connected QPs excepted, see below).
 *
 * Mismatches are collected over all frames and reported together.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { crc32 } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  decodePacket,
  encodePacket,
  LINKTYPE_ETHERNET,
  OPCODES,
  readPcap,
  roceUdpSport,
  rxeInitialUdpSport,
  type Packet,
  type PcapRecord,
} from '../../src/wire/index.js';
import { RXE_PAIR_CAPTURE } from '../fixtures/fixtures.js';

/** A checked-in fixture: missing is a failure, never a skip. */
const CAPTURE = RXE_PAIR_CAPTURE;
const TSHARK = ['/usr/bin/tshark', '/usr/local/bin/tshark'].find((p) => fs.existsSync(p)) ?? '/usr/bin/tshark';
const EXPECTED_FRAMES = 571;

// ---------------------------------------------------------------------------
// Helpers independent of src/wire

const hex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
const be16 = (b: Uint8Array, o: number): number => (b[o]! << 8) | b[o + 1]!;
const be32 = (b: Uint8Array, o: number): number => ((b[o]! << 24) | (b[o + 1]! << 16) | (b[o + 2]! << 8) | b[o + 3]!) >>> 0;
const le32 = (b: Uint8Array, o: number): number => (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) >>> 0;
const bswap32 = (v: number): number => (((v & 0xff) << 24) | ((v & 0xff00) << 8) | ((v >>> 8) & 0xff00) | (v >>> 24)) >>> 0;
const macText = (b: Uint8Array): string => Array.from(b.subarray(0, 6), (x) => x.toString(16).padStart(2, '0')).join(':');
const ipv4Text = (b: Uint8Array): string => Array.from(b.subarray(0, 4)).join('.');

/**
 * The RoCE v2 ICRC computed from the raw frame, following SPEC-DIGEST §3.1
 * literally: eight 0xFF bytes, then the IP header with TOS, TTL and header
 * checksum set to ones, the UDP header with its checksum set to ones, the
 * BTH with byte 4 set to ones, then the rest up to the ICRC field.
 * Returns the CRC (zlib convention) and the value read LSB-first from the wire.
 */
function independentIcrc(frame: Uint8Array): { computed: number; onWire: number } {
  let o = 12;
  let type = be16(frame, o);
  if (type === 0x8100) {
    o += 4;
    type = be16(frame, o);
  }
  o += 2;
  if (type !== 0x0800) throw new Error(`frame is not IPv4 (ethertype 0x${type.toString(16)})`);
  const ihl = (frame[o]! & 0x0f) * 4;
  const totalLength = be16(frame, o + 2);
  const ipEnd = o + totalLength;
  const masked = Buffer.from(frame.subarray(o, ipEnd - 4)); // a copy: IP header through pad
  masked[1] = 0xff; // TOS (DSCP + ECN)
  masked[8] = 0xff; // TTL
  masked[10] = 0xff; // header checksum
  masked[11] = 0xff;
  masked[ihl + 6] = 0xff; // UDP checksum
  masked[ihl + 7] = 0xff;
  masked[ihl + 8 + 4] = 0xff; // BTH byte 4: FECN, BECN, resv6a
  const computed = crc32(Buffer.concat([Buffer.alloc(8, 0xff), masked])) >>> 0;
  return { computed, onWire: le32(frame, ipEnd - 4) };
}

// ---------------------------------------------------------------------------
// Load the capture

let records: PcapRecord[] = [];
let linktype = -1;

beforeAll(() => {
  if (!fs.existsSync(CAPTURE)) {
    throw new Error(`the reference capture ${CAPTURE} is missing: it is a checked-in fixture (test/fixtures/README.md)`);
  }
  const file = readPcap(new Uint8Array(fs.readFileSync(CAPTURE)));
  records = file.records;
  linktype = file.linktype;
});

function report(problems: string[]): string {
  return `${problems.length} mismatch(es); first ${Math.min(20, problems.length)}:\n  ${problems.slice(0, 20).join('\n  ')}`;
}

describe('real capture: rxe-pair-roce.pcap (two Linux Soft-RoCE hosts)', () => {
  it('holds 571 Ethernet frames', () => {
    expect(linktype).toBe(LINKTYPE_ETHERNET);
    expect(records).toHaveLength(EXPECTED_FRAMES);
    for (const r of records) expect(r.data.length).toBe(r.originalLength);
  });

  it('every frame decodes with ICRC and IPv4 checksum verification on', () => {
    const problems: string[] = [];
    for (const [i, r] of records.entries()) {
      const res = decodePacket(r.data, linktype, { verifyIcrc: true, verifyIpChecksum: true });
      if (!res.ok) {
        problems.push(`frame ${i + 1}: ${res.error.code} ${res.error.message} (offset ${res.error.offset})`);
        continue;
      }
      const p = res.packet;
      if (p.framing !== 'roce-v2' || !p.ipv4 || !p.udp) problems.push(`frame ${i + 1}: not decoded as RoCE v2 over IPv4`);
      if (!OPCODES[p.bth.opcode]) problems.push(`frame ${i + 1}: opcode 0x${p.bth.opcode.toString(16)} not in OPCODES`);
    }
    expect(problems, report(problems)).toEqual([]);
  });

  it('every ICRC verifies when recomputed independently with zlib crc32 (SPEC-DIGEST §3.1)', () => {
    const problems: string[] = [];
    for (const [i, r] of records.entries()) {
      const { computed, onWire } = independentIcrc(r.data);
      if (computed !== onWire) {
        problems.push(`frame ${i + 1}: zlib ICRC 0x${computed.toString(16)} but wire holds 0x${onWire.toString(16)} (LSB first)`);
      }
      const res = decodePacket(r.data, linktype);
      if (res.ok && res.packet.icrc !== computed) {
        problems.push(`frame ${i + 1}: decoder reports icrc 0x${res.packet.icrc.toString(16)}, zlib gives 0x${computed.toString(16)}`);
      }
    }
    expect(problems, report(problems)).toEqual([]);
  });

  it('re-encoding every decoded frame gives back exactly the same bytes', () => {
    const problems: string[] = [];
    for (const [i, r] of records.entries()) {
      const res = decodePacket(r.data, linktype);
      if (!res.ok) {
        problems.push(`frame ${i + 1}: does not decode (${res.error.code})`);
        continue;
      }
      let out: Uint8Array;
      try {
        out = encodePacket(res.packet);
      } catch (e) {
        problems.push(`frame ${i + 1}: encodePacket threw ${(e as Error).message}`);
        continue;
      }
      if (out.length !== r.data.length) {
        problems.push(`frame ${i + 1}: re-encoded ${out.length} bytes, captured ${r.data.length}`);
        continue;
      }
      const first = out.findIndex((b, k) => b !== r.data[k]);
      if (first >= 0) {
        problems.push(`frame ${i + 1}: first difference at byte ${first}: got 0x${out[first]!.toString(16)}, captured 0x${r.data[first]!.toString(16)}`);
      }
      // Also encoding into a caller's buffer at an offset.
      const big = new Uint8Array(out.length + 37).fill(0xa5);
      const into = encodePacket(res.packet, big, 17);
      if (into.byteOffset !== 17 || hex(into) !== hex(r.data)) problems.push(`frame ${i + 1}: encodePacket(p, out, 17) differs`);
      if (big[16] !== 0xa5 || big[17 + out.length] !== 0xa5) problems.push(`frame ${i + 1}: encodePacket(p, out, 17) wrote outside its frame`);
    }
    expect(problems, report(problems)).toEqual([]);
  });

  it('UDP source ports are the ones Linux rxe computes (rxeInitialUdpSport / roceUdpSport)', () => {
    const problems: string[] = [];
    const decoded = records.map((r) => decodePacket(r.data, linktype)).flatMap((r) => (r.ok ? [r.packet] : []));
    const ip = (a: Uint8Array) => ipv4Text(a);
    // QPs connected through the RDMA CM (ib_send_bw -R): their port follows
    // the CM's flow label, which SPEC-DIGEST §1.1 gives no formula for (the
    // first REQ carries flow label 0x13f, yet both sides send from 0xff18). Find
    // them from the CM REQ (Local QPN at MAD byte 56) and REP (byte 36).
    const cmQpns = new Set<number>();
    for (const p of decoded) {
      if (p.bth.destQp !== 1 || p.payload.length < 256 || p.payload[1] !== 0x07) continue; // GSI, CM class
      const attr = be16(p.payload, 16);
      const at = attr === 0x0010 ? 56 : attr === 0x0013 ? 36 : -1;
      if (at >= 0) cmQpns.add((p.payload[at]! << 16) | (p.payload[at + 1]! << 8) | p.payload[at + 2]!);
    }
    expect([...cmQpns].sort((a, b) => a - b)).toEqual([0x19, 0x1a, 0x1b, 0x1c]);
    for (const [i, p] of decoded.entries()) {
      const sport = p.udp!.srcPort;
      if (p.deth) {
        // UD (and QP1 for the CM MADs): the port set at QP creation from the source QPN.
        const want = rxeInitialUdpSport(p.deth.srcQp);
        if (sport !== want)
          problems.push(
            `frame ${i + 1}: UD from QP 0x${p.deth.srcQp.toString(16)} uses port 0x${sport.toString(16)}, rxeInitialUdpSport gives 0x${want.toString(16)}`,
          );
        continue;
      }
      // Connected QPs: the symmetric flow-label port of (local QPN, remote QPN).
      // The local QPN is the DestQP of the same flow seen in the other direction.
      const back = decoded.find((q) => q.udp!.srcPort === sport && ip(q.ipv4!.src) === ip(p.ipv4!.dst) && ip(q.ipv4!.dst) === ip(p.ipv4!.src));
      if (!back) {
        problems.push(`frame ${i + 1}: no frame of the same flow in the other direction`);
        continue;
      }
      if (cmQpns.has(back.bth.destQp) && cmQpns.has(p.bth.destQp)) continue; // same port both ways, checked by find()
      const want = roceUdpSport(0, back.bth.destQp, p.bth.destQp);
      if (sport !== want)
        problems.push(
          `frame ${i + 1}: QP 0x${back.bth.destQp.toString(16)} -> 0x${p.bth.destQp.toString(16)} uses port 0x${sport.toString(16)}, roceUdpSport gives 0x${want.toString(16)}`,
        );
    }
    expect(decoded).toHaveLength(EXPECTED_FRAMES);
    expect(problems, report(problems)).toEqual([]);
  });

  it('the capture covers the opcodes its README lists', () => {
    const seen = new Set<number>();
    for (const r of records) {
      const res = decodePacket(r.data, linktype);
      if (res.ok) seen.add(res.packet.bth.opcode);
    }
    // RC Send F/M/L/Only, Write F/M/L/Only, Read Req, Read Resp F/M/L, Fetch&Add, ACK, Atomic ACK, UC Send F/L, UD Send Only.
    const expected = [0x00, 0x01, 0x02, 0x04, 0x06, 0x07, 0x08, 0x0a, 0x0c, 0x0d, 0x0e, 0x0f, 0x14, 0x11, 0x12, 0x20, 0x22, 0x64];
    expect([...seen].sort((a, b) => a - b)).toEqual(expected.sort((a, b) => a - b));
  });
});

// ---------------------------------------------------------------------------
// Field-by-field comparison with Wireshark

type Kind = 'int' | 'bool' | 'mac' | 'ipv4' | 'bytes';

interface FieldCheck {
  /** tshark field name (tshark 4.0: `tshark -G fields`). */
  ts: string;
  kind: Kind;
  /** Our value; undefined when our decode has no such field for this frame. */
  ours: (p: Packet, frame: Uint8Array) => bigint | number | string | undefined;
  /**
   * Which occurrence to compare (default 0). Some names repeat in a frame:
   * `infiniband.reserved` is BTH byte 4 first, then DETH's reserved byte.
   */
  occurrence?: number;
}

const big = (v: number | bigint | undefined | null): bigint | undefined => (v === undefined || v === null ? undefined : BigInt(v));

/**
 * The fields compared. Names are those of tshark 4.0.17; notes on names that
 * differ from the obvious guess:
 *  - FECN/BECN have no fields of their own in 4.0: BTH byte 4 (FECN, BECN,
 *    resv6a) is shown as the first `infiniband.reserved` (FT_BYTES).
 *  - AtomicETH's VA and R_Key reuse `infiniband.reth.va` / `infiniband.reth.r_key`.
 *  - `infiniband.invariant.crc` is the four wire bytes read big-endian; our
 *    `icrc` is the CRC value, which goes on the wire LSB first.
 */
const FIELDS: FieldCheck[] = [
  { ts: 'eth.dst', kind: 'mac', ours: (p) => (p.eth ? macText(p.eth.dst) : undefined) },
  { ts: 'eth.src', kind: 'mac', ours: (p) => (p.eth ? macText(p.eth.src) : undefined) },
  { ts: 'eth.type', kind: 'int', ours: (p) => p.eth?.etherType },
  { ts: 'ip.version', kind: 'int', ours: (p) => (p.ipv4 ? 4 : undefined) },
  { ts: 'ip.hdr_len', kind: 'int', ours: (p) => (p.ipv4 ? p.ipv4.ihl * 4 : undefined) },
  { ts: 'ip.src', kind: 'ipv4', ours: (p) => (p.ipv4 ? ipv4Text(p.ipv4.src) : undefined) },
  { ts: 'ip.dst', kind: 'ipv4', ours: (p) => (p.ipv4 ? ipv4Text(p.ipv4.dst) : undefined) },
  { ts: 'ip.ttl', kind: 'int', ours: (p) => p.ipv4?.ttl },
  { ts: 'ip.id', kind: 'int', ours: (p) => p.ipv4?.id },
  { ts: 'ip.dsfield.dscp', kind: 'int', ours: (p) => p.ipv4?.dscp },
  { ts: 'ip.dsfield.ecn', kind: 'int', ours: (p) => p.ipv4?.ecn },
  { ts: 'ip.len', kind: 'int', ours: (p) => p.ipv4?.totalLength },
  { ts: 'ip.flags', kind: 'int', ours: (p) => p.ipv4?.flags },
  { ts: 'ip.flags.df', kind: 'bool', ours: (p) => (p.ipv4 ? (p.ipv4.flags >>> 1) & 1 : undefined) },
  { ts: 'ip.flags.mf', kind: 'bool', ours: (p) => (p.ipv4 ? p.ipv4.flags & 1 : undefined) },
  { ts: 'ip.frag_offset', kind: 'int', ours: (p) => p.ipv4?.fragmentOffset },
  { ts: 'ip.proto', kind: 'int', ours: (p) => p.ipv4?.protocol },
  { ts: 'ip.checksum', kind: 'int', ours: (p) => p.ipv4?.checksum },
  { ts: 'udp.srcport', kind: 'int', ours: (p) => p.udp?.srcPort },
  { ts: 'udp.dstport', kind: 'int', ours: (p) => p.udp?.dstPort },
  { ts: 'udp.length', kind: 'int', ours: (p) => p.udp?.length },
  { ts: 'udp.checksum', kind: 'int', ours: (p) => p.udp?.checksum },
  { ts: 'infiniband.bth.opcode', kind: 'int', ours: (p) => p.bth.opcode },
  { ts: 'infiniband.bth.se', kind: 'bool', ours: (p) => p.bth.se },
  { ts: 'infiniband.bth.m', kind: 'bool', ours: (p) => p.bth.migReq },
  { ts: 'infiniband.bth.padcnt', kind: 'int', ours: (p) => p.bth.padCnt },
  { ts: 'infiniband.bth.tver', kind: 'int', ours: (p) => p.bth.tver },
  { ts: 'infiniband.bth.p_key', kind: 'int', ours: (p) => p.bth.pkey },
  {
    ts: 'infiniband.reserved',
    kind: 'bytes',
    occurrence: 0,
    ours: (p) => ((p.bth.fecn << 7) | (p.bth.becn << 6) | p.bth.resv6a).toString(16).padStart(2, '0'),
  },
  { ts: 'infiniband.bth.destqp', kind: 'int', ours: (p) => p.bth.destQp },
  { ts: 'infiniband.bth.a', kind: 'bool', ours: (p) => p.bth.ackReq },
  { ts: 'infiniband.bth.reserved7', kind: 'int', ours: (p) => p.bth.resv7 },
  { ts: 'infiniband.bth.psn', kind: 'int', ours: (p) => p.bth.psn },
  { ts: 'infiniband.reth.va', kind: 'int', ours: (p) => p.reth?.va ?? p.atomicEth?.va },
  { ts: 'infiniband.reth.r_key', kind: 'int', ours: (p) => p.reth?.rkey ?? p.atomicEth?.rkey },
  { ts: 'infiniband.reth.dmalen', kind: 'int', ours: (p) => p.reth?.dmaLength },
  { ts: 'infiniband.aeth.syndrome', kind: 'int', ours: (p) => p.aeth?.syndrome },
  { ts: 'infiniband.aeth.msn', kind: 'int', ours: (p) => p.aeth?.msn },
  { ts: 'infiniband.deth.q_key', kind: 'int', ours: (p) => p.deth?.qkey },
  { ts: 'infiniband.deth.srcqp', kind: 'int', ours: (p) => p.deth?.srcQp },
  {
    ts: 'infiniband.reserved',
    kind: 'bytes',
    occurrence: 1,
    ours: (p) => (p.deth ? p.deth.resv8.toString(16).padStart(2, '0') : undefined),
  },
  { ts: 'infiniband.rdeth.eecnxt', kind: 'int', ours: (p) => p.rdeth?.eeCtx },
  { ts: 'infiniband.atomiceth.swapdt', kind: 'int', ours: (p) => p.atomicEth?.swapAdd },
  { ts: 'infiniband.atomiceth.cmpdt', kind: 'int', ours: (p) => p.atomicEth?.compare },
  { ts: 'infiniband.atomicacketh.origremdt', kind: 'int', ours: (p) => p.atomicAckEth?.origData },
  {
    ts: 'infiniband.immdt',
    kind: 'bytes',
    ours: (p) => (p.immDt === null ? undefined : p.immDt.toString(16).padStart(8, '0')),
  },
  {
    ts: 'infiniband.ieth',
    kind: 'bytes',
    ours: (p) => (p.ieth === null ? undefined : p.ieth.toString(16).padStart(8, '0')),
  },
  { ts: 'infiniband.invariant.crc', kind: 'int', ours: (p) => bswap32(p.icrc) },
  { ts: 'frame.len', kind: 'int', ours: (_p, f) => f.length },
];

/** Fields asked of tshark beyond FIELDS. */
const EXTRA_FIELDS = ['frame.number', '_ws.malformed', '_ws.expert.severity', '_ws.expert.message', 'data.data', 'infiniband.mad', '_ws.col.Info'];

/** PI_ERROR in Wireshark's expert.h. */
const PI_ERROR = 0x00800000;

function normalize(kind: Kind, v: string): string {
  switch (kind) {
    case 'int': {
      const tok = v.trim().split(/\s+/)[0]!; // BASE_DEC_HEX may print "8192 (0x2000)"
      return BigInt(tok).toString();
    }
    case 'bool':
      return /^(1|true)$/i.test(v.trim()) ? '1' : /^(0|false)$/i.test(v.trim()) ? '0' : `?${v}`;
    case 'mac':
      return v.trim().toLowerCase();
    case 'ipv4':
      return v.trim();
    case 'bytes':
      return v.replace(/[:\s]/g, '').toLowerCase();
  }
}

function ourText(kind: Kind, v: bigint | number | string): string {
  if (kind === 'int' || kind === 'bool') return big(v as number | bigint)!.toString();
  return String(v).toLowerCase();
}

type Layers = Record<string, string[] | undefined>;

describe.skipIf(!fs.existsSync(TSHARK))('real capture: every field agrees with tshark', () => {
  let frames: Layers[] = [];

  beforeAll(() => {
    if (!fs.existsSync(CAPTURE)) throw new Error(`the reference capture ${CAPTURE} is missing: it is a checked-in fixture (test/fixtures/README.md)`);
    const names = [...new Set([...FIELDS.map((f) => f.ts), ...EXTRA_FIELDS])];
    const args = [
      '-r',
      CAPTURE,
      '-n', // no name resolution
      // The RPC-over-RDMA heuristic misreads perftest SEND payloads as RPCoRDMA
      // and marks them malformed; it is not part of the RoCE dissection.
      '--disable-protocol',
      'rpcordma',
      '-T',
      'json',
      ...names.flatMap((n) => ['-e', n]),
    ];
    const out = execFileSync(TSHARK, args, {
      encoding: 'utf8',
      maxBuffer: 512 * 1024 * 1024,
      stdio: ['ignore', 'pipe', 'ignore'], // tshark warns about running as root on stderr
    });
    const json = JSON.parse(out) as { _source: { layers: Layers } }[];
    frames = json.map((f) => f._source.layers);
  }, 120_000);

  it('tshark dissects all 571 frames as RoCE v2 InfiniBand, none malformed, no error-level expert info', () => {
    expect(frames).toHaveLength(records.length);
    const problems: string[] = [];
    for (const [i, l] of frames.entries()) {
      if (l['frame.number']?.[0] !== String(i + 1)) problems.push(`row ${i}: frame.number ${l['frame.number']?.[0]}`);
      if (l['_ws.malformed']) problems.push(`frame ${i + 1}: tshark flags it malformed: ${l['_ws.expert.message']?.join('; ')}`);
      const sev = (l['_ws.expert.severity'] ?? []).map(Number);
      sev.forEach((s, k) => {
        if (s >= PI_ERROR) problems.push(`frame ${i + 1}: expert error: ${l['_ws.expert.message']?.[k]}`);
      });
      if (!l['infiniband.bth.opcode']) problems.push(`frame ${i + 1}: tshark found no BTH (${l['_ws.col.Info']?.[0]})`);
    }
    expect(problems, report(problems)).toEqual([]);
  });

  it('every listed field of every frame agrees', () => {
    expect(frames).toHaveLength(records.length);
    const problems: string[] = [];
    let compared = 0;
    for (const [i, r] of records.entries()) {
      const res = decodePacket(r.data, linktype);
      if (!res.ok) {
        problems.push(`frame ${i + 1}: we fail to decode (${res.error.code})`);
        continue;
      }
      const p = res.packet;
      const l = frames[i]!;
      for (const f of FIELDS) {
        const theirsRaw = l[f.ts]?.[f.occurrence ?? 0];
        const oursRaw = f.ours(p, r.data);
        // For CM MADs tshark dissects further; later occurrences of a repeated
        // name (e.g. infiniband.reserved) may then come from the MAD. Compare
        // the DETH reserved byte only when the frame has a DETH.
        if (f.ts === 'infiniband.reserved' && f.occurrence === 1 && oursRaw === undefined) continue;
        if (theirsRaw === undefined && oursRaw === undefined) continue;
        if (theirsRaw === undefined) {
          problems.push(`frame ${i + 1} ${f.ts}: tshark has no such field, we decode ${String(oursRaw)}`);
          continue;
        }
        if (oursRaw === undefined) {
          problems.push(`frame ${i + 1} ${f.ts}: tshark shows ${theirsRaw}, our decode has no such field`);
          continue;
        }
        const a = normalize(f.kind, theirsRaw);
        const b = ourText(f.kind, oursRaw);
        compared++;
        if (a !== b) problems.push(`frame ${i + 1} ${f.ts}: tshark ${theirsRaw} (${a}) vs ours ${b}`);
      }
      // Payload: tshark shows it as data.data, or for CM MADs as infiniband.mad.
      // tshark's data.data includes the pad bytes; our payload excludes them,
      // and the pad bytes follow it in the frame.
      const data = l['data.data']?.[0];
      const mad = l['infiniband.mad']?.[0];
      const ourPayload = hex(p.payload);
      const padEnd = p.payload.byteOffset - r.data.byteOffset + p.payload.length + p.bth.padCnt;
      const ourPayloadAndPad = hex(r.data.subarray(p.payload.byteOffset - r.data.byteOffset, padEnd));
      if (data !== undefined) {
        compared++;
        if (normalize('bytes', data) !== ourPayloadAndPad)
          problems.push(
            `frame ${i + 1} data.data: ${normalize('bytes', data).length / 2} bytes differ from our ${p.payload.length}-byte payload + ${p.bth.padCnt} pad`,
          );
        if (!ourPayloadAndPad.startsWith(ourPayload)) problems.push(`frame ${i + 1}: payload view is not where the frame holds it`);
      } else if (mad !== undefined) {
        compared++;
        if (!ourPayload.startsWith(normalize('bytes', mad))) problems.push(`frame ${i + 1} infiniband.mad is not a prefix of our payload`);
      } else if (p.payload.length !== 0) {
        problems.push(`frame ${i + 1}: we decode a ${p.payload.length}-byte payload, tshark shows none`);
      }
    }
    expect(problems, report(problems)).toEqual([]);
    // Sanity: the comparison did compare (about 40 fields per frame).
    expect(compared).toBeGreaterThan(records.length * 30);
  });

  it('tshark reads the ICRC bytes as the same four bytes we carry (LSB first)', () => {
    const problems: string[] = [];
    for (const [i, r] of records.entries()) {
      const ts = frames[i]?.['infiniband.invariant.crc']?.[0];
      const res = decodePacket(r.data, linktype);
      if (!ts || !res.ok) continue;
      const udpEnd = 14 + res.packet.ipv4!.totalLength;
      if (BigInt(ts) !== BigInt(be32(r.data, udpEnd - 4))) problems.push(`frame ${i + 1}: tshark ${ts} is not the ICRC field`);
    }
    expect(problems, report(problems)).toEqual([]);
  });
});
