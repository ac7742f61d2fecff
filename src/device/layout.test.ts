import { describe, expect, it } from 'vitest';
import './index.js'; // registers every layout of the device interface
import {
  decodeStruct,
  defineLayout,
  embed,
  encodeStruct,
  FieldKind,
  formatStruct,
  layoutTable,
  registeredLayouts,
  reserved,
  u,
  type BytesAccessor,
  type Layout,
  type U64Accessor,
  type UAccessor,
} from './layout.js';
import { CQE } from './cqe.js';

/** Deterministic PRNG (mulberry32). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomValue(width: number, kind: FieldKind, r: () => number): number | bigint | Uint8Array {
  if (kind === FieldKind.U) {
    // Favour edge values: 0, max, and random.
    const p = r();
    const max = 2 ** width - 1;
    return p < 0.1 ? 0 : p < 0.2 ? max : Math.floor(r() * (max + 1));
  }
  if (kind === FieldKind.U64) {
    const p = r();
    if (p < 0.1) return 0n;
    if (p < 0.2) return (1n << 64n) - 1n;
    return (BigInt(Math.floor(r() * 2 ** 32)) << 32n) | BigInt(Math.floor(r() * 2 ** 32));
  }
  return Uint8Array.from({ length: width / 8 }, () => Math.floor(r() * 256));
}

describe('layout declarations', () => {
  it('rejects overlaps, gaps, bad widths and misnamed reserved fields at definition', () => {
    expect(() => defineLayout('t', 4, '', [u('a', 0, 0, 16, ''), u('b', 1, 0, 24, '')])).toThrowError(/overlap|ascending/);
    expect(() => defineLayout('t', 4, '', [u('a', 0, 0, 16, '')])).toThrowError(/not covered/);
    expect(() => defineLayout('t', 4, '', [u('a', 0, 4, 32, '')])).toThrowError(/32 bits/);
    expect(() => defineLayout('t', 4, '', [u('a', 0, 0, 16, ''), { ...reserved(2, 16), name: 'reservedAt0x3' }])).toThrowError(/reservedAt0x2/);
    expect(() => defineLayout('t', 4, '', [u('a', 2, 0, 16, ''), reserved(0, 16)])).toThrowError(/ascending/);
    expect(() => defineLayout('t', 4, '', [u('a', 0, 0, 32, ''), u('b', 4, 0, 8, '')])).toThrowError(/past the end/);
  });

  it('every registered layout covers its bytes exactly and names reserved fields by offset', () => {
    const layouts = registeredLayouts();
    expect(layouts.length).toBeGreaterThan(30);
    for (const l of layouts) {
      const bits = l.fields.reduce((s, d) => s + d.width, 0);
      expect(bits, l.name).toBe(l.size * 8);
    }
  });

  it('places bit fields little-endian, bit 0 = LSB of the byte at offset', () => {
    const L = defineLayout('bits-test', 8, '', [
      u('lo', 0x00, 0, 4, ''),
      u('hi', 0x00, 4, 4, ''),
      u('mid', 0x01, 0, 20, ''),
      u('top', 0x03, 4, 4, ''),
      reserved(0x04, 32),
    ]);
    const buf = new Uint8Array(8);
    const dv = new DataView(buf.buffer);
    const f = L.f as unknown as Record<string, UAccessor>;
    f['lo']!.set(dv, 0, 0xa);
    f['hi']!.set(dv, 0, 0x5);
    f['mid']!.set(dv, 0, 0xabcde);
    f['top']!.set(dv, 0, 0x9);
    expect(Array.from(buf.subarray(0, 4))).toEqual([0x5a, 0xde, 0xbc, 0x9a]);
    expect(f['mid']!.get(dv, 0)).toBe(0xabcde);
    // set masks to the width and leaves neighbours alone
    f['lo']!.set(dv, 0, 0x1f);
    expect(buf[0]).toBe(0x5f);
  });

  it('embeds sub-layouts with prefixed names and re-based reserved fields', () => {
    const inner = defineLayout('inner-test', 4, '', [u('x', 0, 0, 8, ''), reserved(1, 24)]);
    const outer = defineLayout('outer-test', 8, '', [u('y', 0, 0, 32, ''), ...embed('in', inner, 4)]);
    expect(outer.fields.map((d) => d.name)).toEqual(['y', 'inX', 'reservedAt0x5']);
    const buf = new Uint8Array(8);
    const dv = new DataView(buf.buffer);
    outer.f.inX.set(dv, 0, 7);
    expect(buf[4]).toBe(7);
  });

  it('encodeStruct range-checks; decodeStruct skips reserved fields', () => {
    const buf = new Uint8Array(64);
    const dv = new DataView(buf.buffer);
    expect(() => encodeStruct(CQE, dv, 0, { status: 256 })).toThrowError(/does not fit/);
    expect(() => encodeStruct(CQE, dv, 0, { qpNum: 1 << 24 })).toThrowError(/does not fit/);
    expect(() => encodeStruct(CQE, dv, 0, { wrId: -1n })).toThrowError(/64 bits/);
    encodeStruct(CQE, dv, 0, { wrId: 42, qpNum: 0xffffff, status: 5 });
    const v = decodeStruct(CQE, dv, 0);
    expect(v.wrId).toBe(42n);
    expect(v.qpNum).toBe(0xffffff);
    expect(Object.keys(v).some((k) => k.startsWith('reserved'))).toBe(false);
  });

  it('formatStruct prints names of enum values and flags non-zero reserved bits', () => {
    const buf = new Uint8Array(64);
    const dv = new DataView(buf.buffer);
    encodeStruct(CQE, dv, 0, { opcode: 128, byteLen: 4096 });
    buf[0x34] = 1;
    const s = formatStruct(CQE, buf);
    expect(s).toMatch(/opcode\s+= 128 \(0x80\) RECV/);
    expect(s).toMatch(/reservedAt0x34 .*reserved bits set/);
    expect(s).not.toMatch(/reservedAt0x38/);
    expect(layoutTable(CQE)).toMatch(/\| 0x3f \| 0 \| `owner` \|/);
  });
});

describe('round trip, every layout (property test)', () => {
  const layouts = registeredLayouts().filter((l) => !l.name.endsWith('-test'));
  for (const layout of layouts) {
    it(`${layout.name}: decode(encode(x)) = x, fields isolated, accessors agree`, () => {
      const r = rng(layout.size * 7919 + layout.name.length);
      for (let iter = 0; iter < 25; iter++) {
        // Random background, random base offset inside a larger buffer.
        const base = 3 + Math.floor(r() * 8);
        const buf = Uint8Array.from({ length: layout.size + 16 }, () => Math.floor(r() * 256));
        const dv = new DataView(buf.buffer);
        const before = buf.slice();
        const values = new Map<string, number | bigint | Uint8Array>();
        for (const d of layout.fields) values.set(d.name, randomValue(d.width, d.kind, r));
        for (const d of layout.fields) setField(layout, d.name, dv, base, values.get(d.name)!);
        // Bytes outside [base, base + size) untouched.
        expect(buf.subarray(0, base)).toEqual(before.subarray(0, base));
        expect(buf.subarray(base + layout.size)).toEqual(before.subarray(base + layout.size));
        for (const d of layout.fields) {
          expect(getField(layout, d.name, dv, base), `${layout.name}.${d.name}`).toEqual(values.get(d.name));
        }
        // decodeStruct agrees with the accessors.
        const dec = decodeStruct(layout, dv, base) as Record<string, unknown>;
        expect(Object.keys(dec)).toEqual(layout.fields.map((d) => d.name).filter((n) => !n.startsWith('reservedAt0x')));
        for (const [k, v] of Object.entries(dec)) expect(v).toEqual(values.get(k));
        // encodeStruct of the decoded values reproduces the bytes.
        const copy = new Uint8Array(buf.length);
        const cdv = new DataView(copy.buffer);
        for (const d of layout.fields) if (d.name.startsWith('reserved')) setField(layout, d.name, cdv, base, values.get(d.name)!);
        encodeStruct(layout, cdv, base, dec as never);
        expect(copy.subarray(base, base + layout.size)).toEqual(buf.subarray(base, base + layout.size));
        // Re-setting one field changes only its bits.
        const victim = layout.fields[Math.floor(r() * layout.fields.length)]!;
        const snapshot = buf.slice();
        setField(layout, victim.name, dv, base, randomValue(victim.width, victim.kind, r));
        const changed: number[] = [];
        for (let b = 0; b < layout.size * 8; b++) {
          const lo = victim.offset * 8 + victim.bitOffset;
          if (b >= lo && b < lo + victim.width) continue;
          const byte = base + (b >> 3);
          if (((buf[byte]! ^ snapshot[byte]!) >> (b & 7)) & 1) changed.push(b);
        }
        expect(changed, `bits changed when setting ${victim.name}`).toEqual([]);
      }
      // 64-bit number variants agree with the bigint ones below 2^53.
      for (const d of layout.fields) {
        if (d.kind !== FieldKind.U64) continue;
        const a = (layout.f as Record<string, U64Accessor>)[d.name]!;
        const buf = new Uint8Array(layout.size);
        const dv = new DataView(buf.buffer);
        for (const n of [0, 1, 2 ** 32 - 1, 2 ** 32, 0x1_0000_0040, Number.MAX_SAFE_INTEGER]) {
          a.setNum(dv, 0, n);
          expect(a.get(dv, 0)).toBe(BigInt(n));
          expect(a.getNum(dv, 0)).toBe(n);
        }
      }
    });
  }
});

function setField(layout: Layout, name: string, dv: DataView, base: number, v: number | bigint | Uint8Array): void {
  const a = (layout.f as Record<string, UAccessor | U64Accessor | BytesAccessor>)[name]!;
  (a.set as (dv: DataView, b: number, v: unknown) => void)(dv, base, v);
}

function getField(layout: Layout, name: string, dv: DataView, base: number): unknown {
  return (layout.f as Record<string, UAccessor | U64Accessor | BytesAccessor>)[name]!.get(dv, base);
}
