import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireError } from './errors.js';
import {
  encodePcapGlobalHeader,
  encodePcapRecordHeader,
  iteratePcap,
  LINKTYPE_ETHERNET,
  LINKTYPE_INFINIBAND,
  PCAP_MAX_RECORD_LENGTH,
  readPcap,
  readPcapHeader,
} from './pcap.js';
import { PcapWriter } from './pcap-writer.js';
import { RXE_PAIR_CAPTURE } from '../../test/fixtures/fixtures.js';
import { openPcapFile } from '../runtime/pcap-file.js';

const REAL_CAPTURE = RXE_PAIR_CAPTURE;
const TSHARK = '/usr/bin/tshark';

let tmp: string;
beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rnic-pcap-'));
});
afterAll(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** Deterministic PRNG so fuzz cases are reproducible. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A frame whose bytes depend on its index, so misordering or mixing shows. */
function frameFor(i: number, len: number): Uint8Array {
  const f = new Uint8Array(len);
  for (let k = 0; k < len; k++) f[k] = (i * 31 + k * 7) & 0xff;
  return f;
}

/** An Ethernet II / IPv4 / UDP frame to 4791, enough for Wireshark to dissect. */
function ethernetFrame(payloadLen: number): Uint8Array {
  const f = new Uint8Array(14 + 20 + 8 + payloadLen);
  f.set([0x52, 0x54, 0x00, 0x77, 0x00, 0x01, 0x52, 0x54, 0x00, 0x77, 0x00, 0x02, 0x08, 0x00], 0);
  const ip = 14;
  f[ip] = 0x45;
  const ipLen = 20 + 8 + payloadLen;
  f[ip + 2] = ipLen >> 8;
  f[ip + 3] = ipLen & 0xff;
  f[ip + 8] = 64;
  f[ip + 9] = 17;
  f.set([192, 168, 77, 2, 192, 168, 77, 1], ip + 12);
  const udp = ip + 20;
  f.set([0xc1, 0x21, 0x12, 0xb7], udp);
  f[udp + 4] = (8 + payloadLen) >> 8;
  f[udp + 5] = (8 + payloadLen) & 0xff;
  return f;
}

/** Buffer → plain Uint8Array view (no copy), so record views compare equal to Uint8Array frames. */
function u8(b: Buffer): Uint8Array {
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

function collect(opts: ConstructorParameters<typeof PcapWriter>[1]) {
  const chunks: Uint8Array[] = [];
  const w = new PcapWriter((c) => chunks.push(c), opts);
  const bytes = () => u8(Buffer.concat(chunks));
  return { w, chunks, bytes };
}

/** Asserts fn throws a WireError with code WIRE_BAD_PCAP, and nothing else. */
function expectBadPcap(fn: () => unknown): WireError {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(caught, 'expected a throw').toBeDefined();
  expect(caught).toBeInstanceOf(WireError);
  const we = caught as WireError;
  expect(we.code).toBe('WIRE_BAD_PCAP');
  expect(we.message).toMatch(/at byte \d+/);
  return we;
}

/** Hand-built file in either byte order, independent of the encoders under test. */
function buildPcap(opts: {
  littleEndian: boolean;
  nanosecond: boolean;
  snaplen: number;
  linktype: number;
  records: { sec: number; frac: number; data: Uint8Array; orig?: number }[];
}): Uint8Array {
  const total = 24 + opts.records.reduce((s, r) => s + 16 + r.data.length, 0);
  const out = new Uint8Array(total);
  const v = new DataView(out.buffer);
  const le = opts.littleEndian;
  v.setUint32(0, opts.nanosecond ? 0xa1b23c4d : 0xa1b2c3d4, le);
  v.setUint16(4, 2, le);
  v.setUint16(6, 4, le);
  v.setUint32(16, opts.snaplen, le);
  v.setUint32(20, opts.linktype, le);
  let p = 24;
  for (const r of opts.records) {
    v.setUint32(p, r.sec, le);
    v.setUint32(p + 4, r.frac, le);
    v.setUint32(p + 8, r.data.length, le);
    v.setUint32(p + 12, r.orig ?? r.data.length, le);
    out.set(r.data, p + 16);
    p += 16 + r.data.length;
  }
  return out;
}

describe('encodePcapGlobalHeader', () => {
  it('writes the µs header little-endian with version 2.4 and default snaplen', () => {
    const h = encodePcapGlobalHeader({ linktype: LINKTYPE_ETHERNET });
    expect(Array.from(h)).toEqual([0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x00, 0x04, 0x00, 1, 0, 0, 0]);
  });

  it('writes the ns magic and a custom snaplen', () => {
    const h = encodePcapGlobalHeader({ linktype: LINKTYPE_INFINIBAND, snaplen: 128, nanosecond: true });
    expect(Array.from(h.subarray(0, 4))).toEqual([0x4d, 0x3c, 0xb2, 0xa1]);
    expect(Array.from(h.subarray(16, 24))).toEqual([128, 0, 0, 0, 247, 0, 0, 0]);
  });

  it('rejects bad linktype and snaplen with WIRE_BAD_PCAP', () => {
    expectBadPcap(() => encodePcapGlobalHeader({ linktype: -1 }));
    expectBadPcap(() => encodePcapGlobalHeader({ linktype: 1.5 }));
    expectBadPcap(() => encodePcapGlobalHeader({ linktype: 1, snaplen: 0 }));
    expectBadPcap(() => encodePcapGlobalHeader({ linktype: 1, snaplen: PCAP_MAX_RECORD_LENGTH + 1 }));
  });
});

describe('encodePcapRecordHeader', () => {
  it('splits a nanosecond timestamp into seconds and ns or µs (truncated)', () => {
    const out = new Uint8Array(40).fill(0xee);
    const ts = 1_795_940_541_972_421_999n;
    encodePcapRecordHeader(out, 4, ts, 60, 1082, true);
    const v = new DataView(out.buffer);
    expect(v.getUint32(4, true)).toBe(1_795_940_541);
    expect(v.getUint32(8, true)).toBe(972_421_999);
    expect(v.getUint32(12, true)).toBe(60);
    expect(v.getUint32(16, true)).toBe(1082);
    // Bytes outside the 16 are untouched.
    expect(out[3]).toBe(0xee);
    expect(out[20]).toBe(0xee);
    encodePcapRecordHeader(out, 20, ts, 60, 1082, false);
    expect(v.getUint32(24, true)).toBe(972_421);
  });

  it('accepts the u32 seconds extremes and rejects what does not fit', () => {
    const out = new Uint8Array(16);
    encodePcapRecordHeader(out, 0, 0n, 0, 0, true);
    encodePcapRecordHeader(out, 0, 0xffffffffn * 1_000_000_000n + 999_999_999n, 0, 0, true);
    expect(new DataView(out.buffer).getUint32(0, true)).toBe(0xffffffff);
    const before = out.slice();
    expectBadPcap(() => encodePcapRecordHeader(out, 0, -1n, 0, 0, true));
    expectBadPcap(() => encodePcapRecordHeader(out, 0, 0x1_0000_0000n * 1_000_000_000n, 0, 0, true));
    expectBadPcap(() => encodePcapRecordHeader(out, 0, 0n, 10, 5, true));
    expectBadPcap(() => encodePcapRecordHeader(out, 0, 0n, -1, 5, true));
    expectBadPcap(() => encodePcapRecordHeader(out, 1, 0n, 0, 0, true));
    expectBadPcap(() => encodePcapRecordHeader(new Uint8Array(15), 0, 0n, 0, 0, true));
    // A rejected call leaves the buffer as it was.
    expect(out).toEqual(before);
  });
});

describe('round trip', () => {
  for (const nanosecond of [false, true]) {
    it(`writer → reader, ${nanosecond ? 'ns' : 'µs'} timestamps`, () => {
      const { w, bytes } = collect({ linktype: LINKTYPE_ETHERNET, nanosecond });
      const frames = [frameFor(0, 60), frameFor(1, 1082), frameFor(2, 0), frameFor(3, 9000)];
      const times = [0n, 1_795_940_541_972_421_123n, 1_795_940_541_972_421_999n, 4_000_000_000_000_000_001n];
      frames.forEach((f, i) => w.write(f, times[i]!));
      expect(w.framesWritten).toBe(4);
      w.close();
      const file = readPcap(bytes());
      expect(file).toMatchObject({ linktype: 1, nanosecond, snaplen: 262144, littleEndian: true });
      expect(file.records).toHaveLength(4);
      file.records.forEach((r, i) => {
        const want = nanosecond ? times[i]! : (times[i]! / 1000n) * 1000n;
        expect(r.timestampNs).toBe(want);
        expect(r.data).toEqual(frames[i]);
        expect(r.originalLength).toBe(frames[i]!.length);
      });
    });
  }

  for (const littleEndian of [true, false]) {
    for (const nanosecond of [false, true]) {
      it(`reads a hand-built ${littleEndian ? 'little' : 'big'}-endian ${nanosecond ? 'ns' : 'µs'} file`, () => {
        const frac = nanosecond ? 123_456_789 : 123_456;
        const bytes = buildPcap({
          littleEndian,
          nanosecond,
          snaplen: 65535,
          linktype: LINKTYPE_INFINIBAND,
          records: [
            { sec: 1_700_000_000, frac, data: frameFor(7, 64) },
            { sec: 0xffffffff, frac: 0, data: frameFor(8, 100), orig: 4000 },
          ],
        });
        const file = readPcap(bytes);
        expect(file).toMatchObject({ linktype: 247, nanosecond, snaplen: 65535, littleEndian });
        expect(file.records.map((r) => r.timestampNs)).toEqual([
          1_700_000_000n * 1_000_000_000n + BigInt(frac) * (nanosecond ? 1n : 1000n),
          0xffffffffn * 1_000_000_000n,
        ]);
        expect(file.records[0]!.data).toEqual(frameFor(7, 64));
        expect(file.records[1]!.data).toEqual(frameFor(8, 100));
        expect(file.records[1]!.originalLength).toBe(4000);
        // The lazy iterator sees the same thing.
        expect(Array.from(iteratePcap(bytes))).toEqual(file.records);
      });
    }
  }

  it('returns views into the input, not copies, also for a subarray input', () => {
    const inner = buildPcap({
      littleEndian: true,
      nanosecond: false,
      snaplen: 100,
      linktype: 1,
      records: [{ sec: 1, frac: 2, data: frameFor(1, 20) }],
    });
    const outer = new Uint8Array(inner.length + 13);
    outer.set(inner, 5);
    const bytes = outer.subarray(5, 5 + inner.length);
    const rec = readPcap(bytes).records[0]!;
    expect(rec.data.buffer).toBe(outer.buffer);
    expect(rec.data.byteOffset).toBe(5 + 24 + 16);
    expect(rec.data).toEqual(frameFor(1, 20));
  });

  it('reads an empty capture (header only)', () => {
    const file = readPcap(encodePcapGlobalHeader({ linktype: 1 }));
    expect(file.records).toEqual([]);
  });

  it('treats snaplen 0 as unspecified', () => {
    const bytes = buildPcap({
      littleEndian: true,
      nanosecond: false,
      snaplen: 0,
      linktype: 1,
      records: [{ sec: 1, frac: 0, data: frameFor(1, 300) }],
    });
    expect(readPcap(bytes).records[0]!.data.length).toBe(300);
  });
});

describe('snaplen truncation', () => {
  it('cuts frames longer than snaplen and keeps the original length', () => {
    const { w, bytes } = collect({ linktype: 1, snaplen: 96 });
    w.write(frameFor(1, 95), 1n);
    w.write(frameFor(2, 96), 2n);
    w.write(frameFor(3, 1500), 3n);
    w.close();
    const file = readPcap(bytes());
    expect(file.snaplen).toBe(96);
    expect(file.records.map((r) => [r.data.length, r.originalLength])).toEqual([
      [95, 95],
      [96, 96],
      [96, 1500],
    ]);
    expect(file.records[2]!.data).toEqual(frameFor(3, 1500).subarray(0, 96));
  });
});

describe('PcapWriter', () => {
  it('streams 100k frames through a file in order and reads them back', () => {
    const file = path.join(tmp, 'stream.pcap');
    const w = openPcapFile(file, { linktype: LINKTYPE_ETHERNET, nanosecond: true });
    const N = 100_000;
    const base = 1_700_000_000_000_000_000n;
    const lenOf = (i: number) => 60 + ((i * 37) % 240);
    let expectedSize = 24;
    for (let i = 0; i < N; i++) {
      w.write(frameFor(i, lenOf(i)), base + BigInt(i) * 1_337n);
      expectedSize += 16 + lenOf(i);
      // Bytes reach the file while writing: the writer does not keep the run in memory.
      if (i === N / 2) expect(fs.statSync(file).size).toBeGreaterThan(expectedSize - 256 * 1024 - 1);
    }
    expect(w.framesWritten).toBe(N);
    w.close();
    const bytes = u8(fs.readFileSync(file));
    expect(bytes.length).toBe(expectedSize);
    let i = 0;
    for (const r of iteratePcap(bytes)) {
      expect(r.timestampNs).toBe(base + BigInt(i) * 1_337n);
      expect(r.originalLength).toBe(lenOf(i));
      // Cheap content check on every record, full compare on a sample.
      expect(r.data[r.data.length - 1]).toBe((i * 31 + (lenOf(i) - 1) * 7) & 0xff);
      if (i % 997 === 0) expect(r.data).toEqual(frameFor(i, lenOf(i)));
      i++;
    }
    expect(i).toBe(N);
  });

  it('hands the sink chunks it may keep (never reused), none larger than chunkSize', () => {
    const chunkSize = 1000;
    const { w, chunks, bytes } = collect({ linktype: 1, chunkSize });
    const N = 500;
    for (let i = 0; i < N; i++) {
      w.write(frameFor(i, 1 + ((i * 53) % 2500)), BigInt(i) * 1000n);
      if (i % 50 === 0) w.flush(); // partial flushes too
    }
    w.close();
    expect(chunks.length).toBeGreaterThan(10);
    for (const c of chunks) expect(c.length).toBeLessThanOrEqual(chunkSize);
    // Had any chunk been overwritten after hand-over, this concatenation would not parse.
    const file = readPcap(bytes());
    expect(file.records).toHaveLength(N);
    file.records.forEach((r, i) => expect(r.data).toEqual(frameFor(i, 1 + ((i * 53) % 2500))));
  });

  it('copies the frame, so the caller may reuse its buffer right away', () => {
    const { w, bytes } = collect({ linktype: 1 });
    const buf = new Uint8Array(10).fill(1);
    w.write(buf, 1000n);
    buf.fill(2);
    w.write(buf, 2000n);
    w.close();
    const [a, b] = readPcap(bytes()).records;
    expect(Array.from(a!.data)).toEqual(new Array(10).fill(1));
    expect(Array.from(b!.data)).toEqual(new Array(10).fill(2));
  });

  it('throws WIRE_BAD_PCAP on write or flush after close; close twice is harmless', () => {
    const file = path.join(tmp, 'closed.pcap');
    const w = openPcapFile(file, { linktype: 1 });
    w.write(frameFor(1, 60), 1n);
    w.close();
    w.close();
    for (const op of [() => w.write(frameFor(2, 60), 2n), () => w.flush()]) {
      let caught: unknown;
      try {
        op();
      } catch (e) {
        caught = e;
      }
      expect(caught).toBeInstanceOf(WireError);
      expect((caught as WireError).code).toBe('WIRE_BAD_PCAP');
    }
    expect(readPcap(fs.readFileSync(file)).records).toHaveLength(1);
  });

  it('rejects a bad timestamp without corrupting the stream', () => {
    const { w, bytes } = collect({ linktype: 1 });
    w.write(frameFor(1, 60), 1000n);
    expectBadPcap(() => w.write(frameFor(2, 60), -5n));
    w.write(frameFor(3, 60), 3000n);
    w.close();
    const recs = readPcap(bytes()).records;
    expect(recs.map((r) => r.timestampNs)).toEqual([1000n, 3000n]);
    expect(w.framesWritten).toBe(2);
  });

  it('refuses bad options before creating the file', () => {
    const file = path.join(tmp, 'never.pcap');
    expect(() => openPcapFile(file, { linktype: 1, snaplen: 0 })).toThrow(WireError);
    expect(() => openPcapFile(file, { linktype: 1, chunkSize: 8 })).toThrow(WireError);
    expect(fs.existsSync(file)).toBe(false);
  });

  it('stops after a sink failure rather than writing a file with a hole', () => {
    let fail = false;
    const w = new PcapWriter(
      () => {
        if (fail) throw new Error('disk full');
      },
      { linktype: 1, chunkSize: 64 },
    );
    w.write(frameFor(1, 10), 1n);
    fail = true;
    expect(() => w.write(frameFor(2, 100), 2n)).toThrow('disk full');
    fail = false;
    expect(() => w.write(frameFor(3, 10), 3n)).toThrow(WireError);
    w.close();
  });
});

describe('malformed input gives WIRE_BAD_PCAP', () => {
  const good = () =>
    buildPcap({
      littleEndian: true,
      nanosecond: false,
      snaplen: 200,
      linktype: 1,
      records: [
        { sec: 10, frac: 5, data: frameFor(1, 50) },
        { sec: 11, frac: 6, data: frameFor(2, 70), orig: 900 },
      ],
    });
  const rec1 = 24 + 16 + 50; // offset of the second record header
  const both = (bytes: Uint8Array) => {
    const e = expectBadPcap(() => readPcap(bytes));
    expectBadPcap(() => Array.from(iteratePcap(bytes)));
    return e;
  };
  const setU32 = (b: Uint8Array, off: number, v: number) => new DataView(b.buffer, b.byteOffset).setUint32(off, v, true);

  it('too short for the global header', () => {
    both(new Uint8Array(0));
    both(good().subarray(0, 23));
  });

  it('unknown magic, and pcapng named as such', () => {
    const b = good();
    setU32(b, 0, 0xdeadbeef);
    expect(both(b).message).toMatch(/unknown magic 0xdeadbeef/);
    setU32(b, 0, 0x0a0d0d0a);
    expect(both(b).message).toMatch(/pcapng/);
  });

  it('unsupported major version', () => {
    const b = good();
    new DataView(b.buffer).setUint16(4, 1, true);
    expect(both(b).offset).toBe(4);
  });

  it('record header cut short', () => {
    const e = both(good().subarray(0, rec1 + 10));
    expect(e.offset).toBe(rec1);
    expect(e.message).toMatch(/record 1/);
  });

  it('record data running past the end', () => {
    const e = both(good().subarray(0, -1));
    expect(e.offset).toBe(rec1 + 16);
    expect(e.message).toMatch(/run past the end/);
  });

  it('captured length larger than snaplen', () => {
    const b = good();
    setU32(b, 16, 60); // snaplen below the second record's 70 bytes
    const e = both(b);
    expect(e.offset).toBe(rec1 + 8);
    expect(e.message).toMatch(/exceeds snaplen 60/);
  });

  it('absurd captured length even when snaplen does not limit it', () => {
    for (const snaplen of [0, 0xffffffff]) {
      const b = good();
      setU32(b, 16, snaplen);
      setU32(b, rec1 + 8, 0xfffffff0);
      setU32(b, rec1 + 12, 0xfffffff0);
      expect(both(b).message).toMatch(/sanity limit/);
    }
  });

  it('captured length larger than original length', () => {
    const b = good();
    setU32(b, rec1 + 12, 69);
    expect(both(b).message).toMatch(/exceeds original length/);
  });

  it('sub-second field out of range', () => {
    const b = good();
    setU32(b, 24 + 4, 1_000_000); // µs file
    expect(both(b).offset).toBe(28);
  });

  it('yields the good records before the bad one, then throws', () => {
    const it = iteratePcap(good().subarray(0, -1));
    expect(it.next().value).toMatchObject({ originalLength: 50 });
    expectBadPcap(() => it.next());
  });

  it('fuzz: every truncation and random corruption either parses or throws WIRE_BAD_PCAP', () => {
    const base = (() => {
      const { w, bytes } = collect({ linktype: 1, snaplen: 300 });
      for (let i = 0; i < 20; i++) w.write(frameFor(i, 20 + i * 13), BigInt(i) * 1_000_000n);
      w.close();
      return bytes();
    })();
    const boundaries = new Set<number>([24]);
    let p = 24;
    for (const r of readPcap(base).records) boundaries.add((p += 16 + r.data.length));
    for (let n = 0; n < base.length; n++) {
      const cut = base.subarray(0, n);
      if (boundaries.has(n)) expect(() => readPcap(cut)).not.toThrow();
      else both(cut);
    }
    const rnd = mulberry32(0x5eed);
    for (let trial = 0; trial < 3000; trial++) {
      const b = base.slice();
      const flips = 1 + Math.floor(rnd() * 4);
      for (let k = 0; k < flips; k++) {
        // Bias toward headers, where corruption matters most.
        const at = rnd() < 0.5 ? Math.floor(rnd() * 40) : Math.floor(rnd() * b.length);
        b[at] = Math.floor(rnd() * 256);
      }
      const len = rnd() < 0.3 ? Math.floor(rnd() * b.length) : b.length;
      try {
        for (const r of iteratePcap(b.subarray(0, len))) void r;
      } catch (e) {
        expect(e).toBeInstanceOf(WireError);
        expect((e as WireError).code).toBe('WIRE_BAD_PCAP');
      }
    }
  });
});

describe('real capture', () => {
  it('reads the Soft-RoCE capture of test/fixtures', () => {
    const bytes = u8(fs.readFileSync(REAL_CAPTURE));
    const file = readPcap(bytes);
    expect(file.linktype).toBe(LINKTYPE_ETHERNET);
    expect(file.nanosecond).toBe(false);
    expect(file.records).toHaveLength(571);
    const first = file.records[0]!;
    expect(first.data.length).toBeGreaterThanOrEqual(14);
    // Ethertype at bytes 12-13: IPv4 (RoCE v2 rides UDP/IPv4 here).
    expect((first.data[12]! << 8) | first.data[13]!).toBe(0x0800);
    expect(first.data[14]! >> 4).toBe(4);
    expect(first.timestampNs).toBe(1_795_940_541_972_421_000n);
    expect(first.originalLength).toBe(1082);
    // Header-only reader agrees.
    expect(readPcapHeader(bytes)).toEqual({ linktype: 1, nanosecond: false, snaplen: 262144, littleEndian: true });
  });
});

describe.skipIf(!fs.existsSync(TSHARK))('tshark agrees with the writer', () => {
  const fmt = (ns: bigint) => `${ns / 1_000_000_000n}.${(ns % 1_000_000_000n).toString().padStart(9, '0')}`;
  for (const nanosecond of [false, true]) {
    it(`${nanosecond ? 'ns' : 'µs'} file`, () => {
      const file = path.join(tmp, `tshark-${nanosecond ? 'ns' : 'us'}.pcap`);
      const w = openPcapFile(file, { linktype: LINKTYPE_ETHERNET, nanosecond, snaplen: 512 });
      const frames = [ethernetFrame(18), ethernetFrame(1040), ethernetFrame(64)];
      const times = [1_795_940_541_972_421_123n, 1_795_940_541_972_450_987n, 1_000_000_007n];
      frames.forEach((f, i) => w.write(f, times[i]!));
      w.close();
      const out = execFileSync(TSHARK, ['-r', file, '-T', 'fields', '-e', 'frame.time_epoch', '-e', 'frame.len', '-e', 'frame.cap_len'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const rows = out
        .trim()
        .split('\n')
        .map((l) => l.split('\t'));
      expect(rows).toEqual(
        frames.map((f, i) => {
          const ts = nanosecond ? times[i]! : (times[i]! / 1000n) * 1000n;
          return [fmt(ts), String(f.length), String(Math.min(f.length, 512))];
        }),
      );
    });
  }
});
