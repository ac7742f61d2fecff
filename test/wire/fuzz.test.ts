/**
 * Seeded fuzzing of decodePacket.
 *
 * Inputs: (a) random byte strings of random length 0..2000 under link type
 * 1 (Ethernet) or 247 (InfiniBand), plus random bytes behind a plausible
 * RoCE/IB header prefix so the decoder gets past the first checks; (b) valid
 * frames built with newPacket (random framing, opcode, fields, payload
 * length) and encodePacket, checked as valid, then mutated: bit flips, byte
 * overwrites, truncation (at every length for a few frames), extension,
 * splicing two frames.
 *
 * For every input, with the checks on and with them off (so random bytes get
 * past the ICRC into the header readers):
 *  - decodePacket never throws;
 *  - it never looks outside its frame: decoding the frame placed inside a
 *    larger buffer full of a sentinel gives exactly the result of decoding a
 *    standalone copy (a read through `frame.buffer` or a wrong byteOffset
 *    would see the sentinel), and no byte of the larger buffer changes;
 *  - it leaves its input unchanged (the ICRC masks in place and restores);
 *  - an ok result's views (payload, MACs, addresses, GIDs, IPv4 options) lie
 *    inside the frame, and re-encoding it gives back the frame's bytes; an
 *    Ethernet frame's result does not change when bytes are appended after
 *    the packet (Ethernet padding);
 *  - an error is a WireError with a `code` from WireErrorCode, a non-empty
 *    message and an offset inside the frame (or -1).
 *
 * Reproduce a failure with FUZZ_SEED=<seed printed>; run longer with
 * FUZZ_ITERATIONS=<n> (default 4000: the number of random inputs; the other
 * families scale with it).
 */
import { describe, expect, it } from 'vitest';
import {
  decodePacket,
  type DecodeOptions,
  type DecodeResult,
  encodePacket,
  LINKTYPE_ETHERNET,
  LINKTYPE_INFINIBAND,
  newPacket,
  OPCODES,
  type OpcodeInfo,
  type Packet,
  routingLength,
  transportLength,
  WireError,
  type WireErrorCode,
} from '../../src/wire/index.js';
import { seededRandom } from '../seeded.js';

const ITERATIONS = Math.max(1, Number(process.env['FUZZ_ITERATIONS'] ?? 4000) | 0);
const BASE_SEED = Number(process.env['FUZZ_SEED'] ?? 0x5eed_2026) >>> 0;

/** Every WireErrorCode (src/wire/errors.ts); a decode error must use one of these. */
const WIRE_ERROR_CODES: ReadonlySet<WireErrorCode> = new Set<WireErrorCode>([
  'WIRE_TRUNCATED',
  'WIRE_BAD_VERSION',
  'WIRE_BAD_CHECKSUM',
  'WIRE_BAD_ICRC',
  'WIRE_BAD_VCRC',
  'WIRE_UNKNOWN_OPCODE',
  'WIRE_LENGTH_MISMATCH',
  'WIRE_OPCODE_NOT_ALLOWED',
  'WIRE_NOT_RDMA',
  'WIRE_BAD_FIELD',
  'WIRE_BAD_PCAP',
]);

// ---------------------------------------------------------------------------
// PRNG

/** mulberry32: tiny, fast, good enough to fuzz with, and reproducible. */
class Rng {
  private readonly r: () => number;
  constructor(seed: number) {
    this.r = seededRandom(seed);
  }
  u32(): number {
    return this.r() * 4294967296; // exact: mulberry32's 32 bits over 2^32
  }
  /** Integer in [0, n). */
  int(n: number): number {
    return Math.floor((this.u32() / 4294967296) * n);
  }
  /** Integer in [lo, hi]. */
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }
  chance(p: number): boolean {
    return this.u32() / 4294967296 < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
  bytes(n: number): Uint8Array {
    const b = new Uint8Array(n);
    for (let i = 0; i < n; i++) b[i] = this.u32() & 0xff;
    return b;
  }
  u64(): bigint {
    return (BigInt(this.u32()) << 32n) | BigInt(this.u32());
  }
}

// ---------------------------------------------------------------------------
// Helpers

const toHex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
const SENTINEL = 0xa5;
const GUARD = 64;

/** A deterministic text form of a decode result, Uint8Array views as hex. */
function summarize(r: DecodeResult): string {
  if (!r.ok) return `ERR ${r.error.code} @${r.error.offset}: ${r.error.message}`;
  return `OK ${JSON.stringify(r.packet, (_k, v: unknown) =>
    v instanceof Uint8Array ? `hex:${toHex(v)}` : typeof v === 'bigint' ? `big:${v.toString(16)}` : v,
  )}`;
}

/** Every Uint8Array view an ok result holds, with a name. */
function views(p: Packet): [string, Uint8Array][] {
  const out: [string, Uint8Array][] = [['payload', p.payload]];
  if (p.eth) out.push(['eth.dst', p.eth.dst], ['eth.src', p.eth.src]);
  if (p.ipv4) {
    out.push(['ipv4.src', p.ipv4.src], ['ipv4.dst', p.ipv4.dst]);
    if (p.ipv4.options) out.push(['ipv4.options', p.ipv4.options]);
  }
  if (p.ipv6) out.push(['ipv6.src', p.ipv6.src], ['ipv6.dst', p.ipv6.dst]);
  if (p.grh) out.push(['grh.sgid', p.grh.sgid], ['grh.dgid', p.grh.dgid]);
  return out;
}

/** Where the packet ends inside the frame (Ethernet padding excluded). */
function packetEnd(p: Packet): number {
  const info = OPCODES[p.bth.opcode]!;
  return routingLength(p) + transportLength(p, info) + (p.framing === 'ib' ? 2 : 0);
}

function reencode(p: Packet): Uint8Array {
  return encodePacket(p, undefined, 0, { ipv6UdpChecksum: p.ipv6 !== null && p.udp !== null && p.udp.checksum !== 0 });
}

const OPTION_SETS: readonly DecodeOptions[] = [{}, { verifyIcrc: false, verifyIpChecksum: false }];

interface Stats {
  inputs: number;
  decodes: number;
  ok: number;
  codes: Map<string, number>;
}

class Fuzzer {
  readonly problems: string[] = [];
  readonly stats: Stats = { inputs: 0, decodes: 0, ok: 0, codes: new Map() };
  constructor(private readonly name: string) {}

  private problem(seed: number, what: string, input: Uint8Array, linktype: number, opts: DecodeOptions): void {
    if (this.problems.length < 50) {
      const h = toHex(input);
      this.problems.push(
        `[${this.name}] seed ${seed} linktype ${linktype} opts ${JSON.stringify(opts)}: ${what}\n    input (${input.length} bytes): ${h.length > 600 ? `${h.slice(0, 600)}…` : h}`,
      );
    }
  }

  /** Runs every check on one input; returns the results (checks on, checks off). */
  check(seed: number, input: Uint8Array, linktype: number): DecodeResult[] {
    this.stats.inputs++;
    const results: DecodeResult[] = [];
    for (const opts of OPTION_SETS) {
      const r = this.checkOne(seed, input, linktype, opts);
      if (r) results.push(r);
    }
    return results;
  }

  private decode(seed: number, frame: Uint8Array, linktype: number, opts: DecodeOptions, input: Uint8Array, where: string): DecodeResult | null {
    this.stats.decodes++;
    try {
      return decodePacket(frame, linktype, opts);
    } catch (e) {
      this.problem(seed, `decodePacket threw (${where}): ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`, input, linktype, opts);
      return null;
    }
  }

  private checkOne(seed: number, input: Uint8Array, linktype: number, opts: DecodeOptions): DecodeResult | null {
    const n = input.length;
    const want = toHex(input);
    // A standalone copy, exactly as long as the frame.
    const alone = input.slice();
    // The same bytes in the middle of a larger buffer full of a sentinel.
    const big = new Uint8Array(GUARD + n + GUARD).fill(SENTINEL);
    big.set(input, GUARD);
    const inside = big.subarray(GUARD, GUARD + n);

    const ra = this.decode(seed, alone, linktype, opts, input, 'standalone');
    const rb = this.decode(seed, inside, linktype, opts, input, 'inside a larger buffer');
    if (!ra || !rb) return null;

    if (toHex(alone) !== want) this.problem(seed, 'decodePacket modified its input (standalone)', input, linktype, opts);
    for (let i = 0; i < GUARD; i++) {
      if (big[i] !== SENTINEL || big[GUARD + n + i] !== SENTINEL) {
        this.problem(seed, `decodePacket wrote outside its frame (byte ${i < GUARD && big[i] !== SENTINEL ? i - GUARD : n + i})`, input, linktype, opts);
        break;
      }
    }
    if (toHex(inside) !== want) this.problem(seed, 'decodePacket modified its input (inside a larger buffer)', input, linktype, opts);

    const sa = summarize(ra);
    const sb = summarize(rb);
    if (sa !== sb)
      this.problem(
        seed,
        `result depends on bytes outside the frame:\n    standalone: ${sa.slice(0, 300)}\n    in buffer:  ${sb.slice(0, 300)}`,
        input,
        linktype,
        opts,
      );

    if (ra.ok) {
      this.stats.ok++;
      this.checkOk(seed, ra.packet, alone, input, linktype, opts);
      if (rb.ok) this.checkViews(seed, rb.packet, inside, input, linktype, opts);
    } else {
      this.stats.codes.set(ra.error.code, (this.stats.codes.get(ra.error.code) ?? 0) + 1);
      const e: unknown = ra.error;
      if (!(e instanceof WireError)) this.problem(seed, 'error is not a WireError', input, linktype, opts);
      if (!WIRE_ERROR_CODES.has(ra.error.code)) this.problem(seed, `error code ${String(ra.error.code)} is not a WireErrorCode`, input, linktype, opts);
      if (typeof ra.error.message !== 'string' || ra.error.message.trim() === '')
        this.problem(seed, `error ${ra.error.code} has an empty message`, input, linktype, opts);
      const off = ra.error.offset;
      if (!Number.isInteger(off) || off < -1 || off > n)
        this.problem(seed, `error ${ra.error.code} offset ${off} is outside the frame (${n} bytes)`, input, linktype, opts);
    }
    return ra;
  }

  private checkViews(seed: number, p: Packet, frame: Uint8Array, input: Uint8Array, linktype: number, opts: DecodeOptions): void {
    const lo = frame.byteOffset;
    const hi = frame.byteOffset + frame.length;
    for (const [name, v] of views(p)) {
      if (v.buffer !== frame.buffer || v.byteOffset < lo || v.byteOffset + v.length > hi) {
        this.problem(
          seed,
          `${name} view [${v.byteOffset - lo}, ${v.byteOffset - lo + v.length}) is not inside the frame [0, ${frame.length})`,
          input,
          linktype,
          opts,
        );
      }
    }
  }

  private checkOk(seed: number, p: Packet, frame: Uint8Array, input: Uint8Array, linktype: number, opts: DecodeOptions): void {
    this.checkViews(seed, p, frame, input, linktype, opts);
    // Re-encoding an ok result gives back the packet's bytes. With the
    // checks off the checksums/ICRC in the frame may be wrong and pad
    // bytes need not be zero; compare only when they verify.
    const payEnd = p.payload.byteOffset - frame.byteOffset + p.payload.length;
    const padZero = frame.subarray(payEnd, payEnd + p.bth.padCnt).every((b) => b === 0);
    if (opts.verifyIcrc !== false && padZero) {
      let enc: Uint8Array;
      try {
        enc = reencode(p);
      } catch (e) {
        this.problem(seed, `encodePacket threw on a decoded packet: ${(e as Error).message}`, input, linktype, opts);
        return;
      }
      const end = packetEnd(p);
      if (end > frame.length) this.problem(seed, `packet end ${end} is past the frame (${frame.length})`, input, linktype, opts);
      else if (toHex(enc.subarray(0, end)) !== toHex(frame.subarray(0, end)))
        this.problem(seed, 're-encoding the decoded packet gives other bytes', input, linktype, opts);
    }
    // Ethernet: bytes after the packet are padding and must not matter.
    if (linktype === LINKTYPE_ETHERNET) {
      const longer = new Uint8Array(frame.length + 9);
      longer.set(frame, 0);
      longer.fill(0xee, frame.length);
      const r = this.decode(seed, longer, linktype, opts, input, 'with 9 bytes appended');
      if (r && summarize(r).replaceAll(`hex:${toHex(longer)}`, '') !== summarize({ ok: true, packet: p }).replaceAll(`hex:${toHex(frame)}`, '')) {
        this.problem(seed, `appending bytes after the packet changes the result: ${summarize(r).slice(0, 200)}`, input, linktype, opts);
      }
    }
  }

  /** FUZZ_VERBOSE=1 prints how far the inputs got (error codes, ok count). */
  report(): void {
    if (!process.env['FUZZ_VERBOSE']) return;
    const codes = [...this.stats.codes.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([c, k]) => `${c}=${k}`)
      .join(' ');
    console.log(`[${this.name}] inputs=${this.stats.inputs} decodes=${this.stats.decodes} ok=${this.stats.ok} ${codes}`);
  }

  assertClean(): void {
    this.report();
    expect(this.problems, `${this.problems.length} problem(s):\n${this.problems.slice(0, 20).join('\n')}`).toEqual([]);
  }
}

// ---------------------------------------------------------------------------
// Valid frames

const DEFINED: readonly OpcodeInfo[] = OPCODES.filter((i): i is OpcodeInfo => i !== undefined);

type FramingChoice = 'v4' | 'v6' | 'v1' | 'ib' | 'ib-grh';
const FRAMINGS: readonly FramingChoice[] = ['v4', 'v4', 'v6', 'v1', 'ib', 'ib-grh'];

interface Built {
  packet: Packet;
  frame: Uint8Array;
  linktype: number;
  ipv6UdpChecksum: boolean;
}

function randomPacket(rng: Rng): Built {
  const choice = rng.pick(FRAMINGS);
  const framing = choice === 'v4' || choice === 'v6' ? 'roce-v2' : choice === 'v1' ? 'roce-v1' : 'ib';
  let info = rng.pick(DEFINED);
  while (info.code === 0x81 && framing !== 'roce-v2') info = rng.pick(DEFINED);
  const payloadLen = !info.payload ? 0 : rng.chance(0.1) ? rng.range(0, 1500) : rng.range(0, 72);
  const p = newPacket(framing, info.code, {
    ipVersion: choice === 'v6' ? 6 : 4,
    srcMac: rng.bytes(6),
    dstMac: rng.bytes(6),
    vlan: framing !== 'ib' && rng.chance(0.3) ? { pcp: rng.int(8), dei: rng.int(2), vid: rng.int(4096) } : null,
    srcIp: choice === 'v4' ? rng.bytes(4) : rng.bytes(16),
    dstIp: choice === 'v4' ? rng.bytes(4) : rng.bytes(16),
    udpSrcPort: rng.int(65536),
    dscp: rng.int(64),
    ecn: rng.int(4),
    hopLimit: rng.int(256),
    ipId: rng.int(65536),
    flowLabel: rng.int(1 << 20),
    slid: rng.int(65536),
    dlid: rng.int(65536),
    sl: rng.int(16),
    vl: rng.int(16),
    global: choice === 'ib-grh',
    psn: rng.int(1 << 24),
    destQp: rng.int(1 << 24),
    ackReq: rng.int(2),
    se: rng.int(2),
    pkey: rng.int(65536),
    migReq: rng.int(2),
    fecn: rng.int(2),
    becn: rng.int(2),
    payload: rng.bytes(payloadLen),
  });
  p.bth.resv6a = rng.chance(0.2) ? rng.int(64) : 0;
  p.bth.resv7 = rng.chance(0.2) ? rng.int(128) : 0;
  if (p.lrh && rng.chance(0.2)) Object.assign(p.lrh, { resv2: rng.int(4), resv5: rng.int(32) });
  if (p.ipv4 && rng.chance(0.1)) {
    p.ipv4.ihl = rng.range(6, 15);
    p.ipv4.options = rng.bytes((p.ipv4.ihl - 5) * 4);
  }
  if (p.rdeth) p.rdeth = { resv8: rng.int(256), eeCtx: rng.int(1 << 24) };
  if (p.deth) p.deth = { qkey: rng.u32(), resv8: rng.int(256), srcQp: rng.int(1 << 24) };
  if (p.xrceth) p.xrceth = { resv8: rng.int(256), xrcSrq: rng.int(1 << 24) };
  if (p.reth) p.reth = { va: rng.u64(), rkey: rng.u32(), dmaLength: rng.u32() };
  if (p.atomicEth) p.atomicEth = { va: rng.u64(), rkey: rng.u32(), swapAdd: rng.u64(), compare: rng.u64() };
  if (p.aeth) p.aeth = { syndrome: rng.int(256), msn: rng.int(1 << 24) };
  if (p.atomicAckEth) p.atomicAckEth = { origData: rng.u64() };
  if (p.immDt !== null) p.immDt = rng.u32();
  if (p.ieth !== null) p.ieth = rng.u32();
  if (p.feth) p.feth = { raw: rng.u32() };
  const ipv6UdpChecksum = rng.chance(0.8);
  const frame = encodePacket(p, undefined, 0, { ipv6UdpChecksum });
  return { packet: p, frame, linktype: framing === 'ib' ? LINKTYPE_INFINIBAND : LINKTYPE_ETHERNET, ipv6UdpChecksum };
}

/** The fields a decode must give back exactly as they were built. */
function builtFields(p: Packet): string {
  const pick = {
    framing: p.framing,
    bth: { ...p.bth, padCnt: -p.payload.length & 3 },
    rdeth: p.rdeth,
    deth: p.deth,
    xrceth: p.xrceth,
    reth: p.reth,
    atomicEth: p.atomicEth,
    aeth: p.aeth,
    atomicAckEth: p.atomicAckEth,
    immDt: p.immDt,
    ieth: p.ieth,
    feth: p.feth,
    payload: p.payload,
    eth: p.eth && { dst: p.eth.dst, src: p.eth.src, vlan: p.eth.vlan, etherType: p.eth.etherType },
    ipv4: p.ipv4 && {
      dscp: p.ipv4.dscp,
      ecn: p.ipv4.ecn,
      id: p.ipv4.id,
      flags: p.ipv4.flags,
      ttl: p.ipv4.ttl,
      src: p.ipv4.src,
      dst: p.ipv4.dst,
      ihl: p.ipv4.ihl,
      options: p.ipv4.options,
    },
    ipv6: p.ipv6 && { trafficClass: p.ipv6.trafficClass, flowLabel: p.ipv6.flowLabel, hopLimit: p.ipv6.hopLimit, src: p.ipv6.src, dst: p.ipv6.dst },
    udp: p.udp && { srcPort: p.udp.srcPort, dstPort: p.udp.dstPort },
    lrh: p.lrh && { vl: p.lrh.vl, sl: p.lrh.sl, dlid: p.lrh.dlid, slid: p.lrh.slid, resv2: p.lrh.resv2, resv5: p.lrh.resv5 },
    grh: p.grh && { trafficClass: p.grh.trafficClass, flowLabel: p.grh.flowLabel, hopLimit: p.grh.hopLimit, sgid: p.grh.sgid, dgid: p.grh.dgid },
  };
  return JSON.stringify(pick, (_k, v: unknown) => (v instanceof Uint8Array ? `hex:${toHex(v)}` : typeof v === 'bigint' ? `big:${v.toString(16)}` : v));
}

// ---------------------------------------------------------------------------
// Mutations

function flipBits(rng: Rng, f: Uint8Array): Uint8Array {
  const g = f.slice();
  const k = rng.range(1, 8);
  for (let i = 0; i < k && g.length > 0; i++) g[rng.int(g.length)]! ^= 1 << rng.int(8);
  return g;
}

function overwriteBytes(rng: Rng, f: Uint8Array): Uint8Array {
  const g = f.slice();
  const k = rng.range(1, 6);
  for (let i = 0; i < k && g.length > 0; i++) {
    // Headers are where the decisions are: aim there more often.
    const at = rng.chance(0.7) ? rng.int(Math.min(g.length, 80)) : rng.int(g.length);
    g[at] = rng.chance(0.3) ? rng.pick([0x00, 0xff, 0x7f, 0x80, 0x01]) : rng.int(256);
  }
  return g;
}

function truncate(rng: Rng, f: Uint8Array): Uint8Array {
  return f.slice(0, rng.int(f.length + 1));
}

function extend(rng: Rng, f: Uint8Array): Uint8Array {
  const g = new Uint8Array(f.length + rng.range(1, 64));
  g.set(f, 0);
  g.set(rng.chance(0.5) ? rng.bytes(g.length - f.length) : new Uint8Array(g.length - f.length), f.length);
  return g;
}

function splice(rng: Rng, a: Uint8Array, b: Uint8Array): Uint8Array {
  const cut = rng.int(a.length + 1);
  const from = rng.int(b.length + 1);
  const g = new Uint8Array(cut + (b.length - from));
  g.set(a.subarray(0, cut), 0);
  g.set(b.subarray(from), cut);
  return g;
}

/** Changes a length field (IPv4 total, IPv6 payload, GRH PayLen, UDP length, LRH PktLen) to a nearby or random value. */
function lengthFieldMutation(rng: Rng, f: Uint8Array, linktype: number): Uint8Array {
  const g = f.slice();
  const bump = (at: number, mask = 0xffff) => {
    if (at + 1 >= g.length) return;
    const v = (g[at]! << 8) | g[at + 1]!;
    const nv = (rng.chance(0.5) ? v + rng.range(-8, 8) : rng.int(65536)) & mask;
    g[at] = (g[at]! & ~(mask >>> 8)) | (nv >>> 8);
    g[at + 1] = nv & 0xff;
  };
  if (linktype === LINKTYPE_INFINIBAND) {
    bump(4, 0x07ff);
    return g;
  }
  let l3 = 14;
  if (g.length >= 14 && g[12] === 0x81 && g[13] === 0x00) l3 = 18;
  const type = g.length >= l3 ? (g[l3 - 2]! << 8) | g[l3 - 1]! : 0;
  if (type === 0x0800 && g.length > l3) {
    const hl = (g[l3]! & 0xf) * 4;
    rng.chance(0.5) ? bump(l3 + 2) : bump(l3 + hl + 4);
  } else if (type === 0x86dd) {
    rng.chance(0.5) ? bump(l3 + 4) : bump(l3 + 44);
  } else if (type === 0x8915) {
    bump(l3 + 4);
  }
  return g;
}

// ---------------------------------------------------------------------------
// Random inputs behind plausible headers

function put16(b: Uint8Array, at: number, v: number): void {
  b[at] = (v >>> 8) & 0xff;
  b[at + 1] = v & 0xff;
}

/**
 * Random bytes with routing headers that are consistent most of the time
 * (ethertype, version, lengths, next protocol, UDP port 4791, LRH PktLen),
 * an opcode from the table and TVer 0, so that — with the checks off — the
 * decoder reaches the extension-header readers with random contents. Each
 * consistency step is skipped now and then, so the checks around it run too.
 */
function plausibleRandom(rng: Rng): { input: Uint8Array; linktype: number } {
  const kind = rng.pick(['v4', 'v4', 'v6', 'v1', 'ib', 'ib-grh'] as const);
  const vlan = kind !== 'ib' && kind !== 'ib-grh' && rng.chance(0.3);
  const ok = () => rng.chance(0.9);
  const info = rng.chance(0.85) ? rng.pick(DEFINED) : null;
  const hdr = info ? info.headerLength : rng.range(12, 40);
  const body = info && !info.payload ? 0 : rng.chance(0.8) ? rng.int(24) * 4 : rng.int(100);
  const ihl = kind === 'v4' && rng.chance(0.1) ? rng.range(5, 15) : 5;
  const l3 = kind === 'ib' || kind === 'ib-grh' ? 0 : vlan ? 18 : 14;
  const route = kind === 'v4' ? l3 + ihl * 4 + 8 : kind === 'v6' ? l3 + 48 : kind === 'v1' ? l3 + 40 : kind === 'ib' ? 8 : 48;
  const tlen = hdr + body + 4;
  const n = Math.max(0, route + tlen + (kind.startsWith('ib') ? 2 : 0) + (ok() ? 0 : rng.range(-6, 6)));
  const b = rng.bytes(n);
  const bth = route;
  if (kind === 'ib' || kind === 'ib-grh') {
    if (n < 8) return { input: b, linktype: LINKTYPE_INFINIBAND };
    b[0] = ok() ? b[0]! & 0xf0 : b[0]!; // LVer 0
    b[1] = (b[1]! & 0xfc) | (ok() ? (kind === 'ib' ? 2 : 3) : b[1]! & 3);
    const words = (route + tlen) >>> 2;
    if (ok()) {
      b[4] = (b[4]! & 0xf8) | ((words >>> 8) & 7);
      b[5] = words & 0xff;
    }
    if (kind === 'ib-grh' && n >= 48) {
      if (ok()) b[8] = 0x60 | (b[8]! & 0x0f);
      if (ok()) put16(b, 12, tlen);
      if (ok()) b[14] = 0x1b;
    }
  } else {
    if (n < l3) return { input: b, linktype: LINKTYPE_ETHERNET };
    if (vlan) put16(b, 12, 0x8100);
    put16(b, l3 - 2, ok() ? (kind === 'v4' ? 0x0800 : kind === 'v6' ? 0x86dd : 0x8915) : rng.pick([0x0800, 0x86dd, 0x8915, 0x8100, 0x8808, b[l3 - 2]! << 8]));
    if (kind === 'v4' && n >= l3 + 20) {
      b[l3] = ok() ? 0x40 | ihl : b[l3]!;
      if (ok()) put16(b, l3 + 2, ihl * 4 + 8 + tlen);
      if (ok()) put16(b, l3 + 6, 0x4000); // DF, not a fragment
      if (ok()) b[l3 + 9] = 17;
      if (rng.chance(0.5) && n >= l3 + ihl * 4) {
        put16(b, l3 + 10, 0);
        let sum = 0;
        for (let i = 0; i < ihl * 4; i += 2) sum += (b[l3 + i]! << 8) | b[l3 + i + 1]!;
        while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
        put16(b, l3 + 10, ~sum & 0xffff);
      }
    } else if ((kind === 'v6' || kind === 'v1') && n >= l3 + 40) {
      if (ok()) b[l3] = 0x60 | (b[l3]! & 0x0f);
      if (ok()) put16(b, l3 + 4, kind === 'v6' ? 8 + tlen : tlen);
      if (ok()) b[l3 + 6] = kind === 'v6' ? 17 : 0x1b;
    }
    if ((kind === 'v4' || kind === 'v6') && n >= route) {
      const udp = route - 8;
      if (ok()) put16(b, udp + 2, 4791);
      if (ok()) put16(b, udp + 4, 8 + tlen);
      if (kind === 'v6' && ok()) put16(b, udp + 6, 0); // no UDP checksum to verify
    }
  }
  if (n >= bth + 2) {
    if (info && ok()) b[bth] = info.code;
    if (ok()) b[bth + 1] = (b[bth + 1]! & 0xc0) | (rng.int(4) << 4); // TVer 0, any PadCnt
  }
  return { input: b, linktype: kind === 'ib' || kind === 'ib-grh' ? LINKTYPE_INFINIBAND : LINKTYPE_ETHERNET };
}

// ---------------------------------------------------------------------------

describe(`decodePacket fuzzing (seed 0x${BASE_SEED.toString(16)}, FUZZ_ITERATIONS=${ITERATIONS})`, () => {
  it('(a) random byte strings, lengths 0..2000, link type 1 or 247', () => {
    const fz = new Fuzzer('random');
    for (let i = 0; i < ITERATIONS; i++) {
      const seed = (BASE_SEED + i * 0x9e3779b1) >>> 0;
      const rng = new Rng(seed);
      const n = rng.chance(0.5) ? rng.int(2001) : rng.int(120);
      const linktype = rng.chance(0.5) ? LINKTYPE_ETHERNET : LINKTYPE_INFINIBAND;
      fz.check(seed, rng.bytes(n), linktype);
    }
    fz.assertClean();
    expect(fz.stats.inputs).toBe(ITERATIONS);
  });

  it("(a') random bytes behind a plausible Ethernet/IP/UDP, RoCE v1 or LRH prefix", () => {
    const fz = new Fuzzer('plausible');
    let deep = 0;
    for (let i = 0; i < ITERATIONS; i++) {
      const seed = ((BASE_SEED ^ 0x51ed270b) + i * 0x85ebca6b) >>> 0;
      const rng = new Rng(seed);
      const { input, linktype } = plausibleRandom(rng);
      const rs = fz.check(seed, input, linktype);
      // With the checks off, how often did decoding reach the opcode table or further?
      const r = rs[1];
      if (r && (r.ok || ['WIRE_UNKNOWN_OPCODE', 'WIRE_LENGTH_MISMATCH', 'WIRE_OPCODE_NOT_ALLOWED', 'WIRE_BAD_VERSION'].includes(r.error.code))) deep++;
    }
    fz.assertClean();
    // The generator is only useful if it gets past the routing headers a fair share of the time.
    expect(deep).toBeGreaterThan(ITERATIONS / 10);
  });

  it('(b) valid frames of random framing/opcode/fields decode, round-trip, and survive mutation', () => {
    const fz = new Fuzzer('mutated');
    const n = Math.max(1, Math.floor(ITERATIONS / 2));
    let prev: Uint8Array | null = null;
    const roundTrip: string[] = [];
    for (let i = 0; i < n; i++) {
      const seed = ((BASE_SEED ^ 0xb5297a4d) + i * 0x68e31da4) >>> 0;
      const rng = new Rng(seed);
      let built: Built;
      try {
        built = randomPacket(rng);
      } catch (e) {
        roundTrip.push(`seed ${seed}: newPacket/encodePacket threw ${(e as Error).message}`);
        continue;
      }
      const { packet, frame, linktype } = built;
      // The valid frame itself.
      const [r] = fz.check(seed, frame, linktype);
      if (!r?.ok) {
        roundTrip.push(
          `seed ${seed}: a freshly encoded ${packet.framing} ${OPCODES[packet.bth.opcode]!.name} frame does not decode: ${r && !r.ok ? `${r.error.code} ${r.error.message}` : 'threw'}`,
        );
      } else {
        if (builtFields(r.packet) !== builtFields(packet))
          roundTrip.push(
            `seed ${seed}: decode(encode(p)) differs from p:\n    ${builtFields(r.packet).slice(0, 400)}\n    ${builtFields(packet).slice(0, 400)}`,
          );
        if (toHex(reencode(r.packet)) !== toHex(frame)) roundTrip.push(`seed ${seed}: encode(decode(f)) !== f`);
      }
      // Mutations of it.
      const mutants: Uint8Array[] = [
        flipBits(rng, frame),
        overwriteBytes(rng, frame),
        truncate(rng, frame),
        extend(rng, frame),
        lengthFieldMutation(rng, frame, linktype),
      ];
      if (prev) mutants.push(splice(rng, frame, prev));
      for (const m of mutants) fz.check(seed, m, linktype);
      // The other link type now and then: Ethernet bytes read as IB and back.
      if (rng.chance(0.1)) fz.check(seed, frame, linktype === LINKTYPE_ETHERNET ? LINKTYPE_INFINIBAND : LINKTYPE_ETHERNET);
      prev = frame;
    }
    expect(roundTrip, roundTrip.slice(0, 20).join('\n')).toEqual([]);
    fz.assertClean();
  });

  it('(b) truncation at every length of a few frames of each framing', () => {
    const fz = new Fuzzer('truncated');
    const rng = new Rng(BASE_SEED ^ 0x7f4a7c15);
    const frames: Built[] = [];
    for (const want of ['roce-v2', 'roce-v1', 'ib'] as const) {
      let k = 0;
      while (k < 3) {
        const b = randomPacket(rng);
        if (b.packet.framing !== want || b.frame.length > 400) continue;
        frames.push(b);
        k++;
      }
    }
    let truncatedOk = 0;
    for (const [j, { frame, linktype }] of frames.entries()) {
      const full = decodePacket(frame, linktype);
      expect(full.ok, `frame ${j}`).toBe(true);
      const end = full.ok ? packetEnd(full.packet) : frame.length;
      for (let len = 0; len < frame.length; len++) {
        const [r] = fz.check(j, frame.subarray(0, len), linktype);
        // Cutting into the packet itself can never give a valid packet
        // (only Ethernet padding may go).
        if (r?.ok && len < end) truncatedOk++;
      }
    }
    fz.assertClean();
    expect(truncatedOk, 'a frame cut inside its packet decoded as ok').toBe(0);
  });
});
