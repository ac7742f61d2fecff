/**
 * Table-driven binary layouts (STYLE §3): every structure the driver and the
 * device exchange (WQE segments, CQEs, EQEs, doorbell records, mailbox
 * commands, context table entries) is declared ONCE as a list of fields
 * `{name, offset, bitOffset, width}`. Accessors, the pretty-printer, the
 * encoder/decoder used by the mailbox and the reference tables in
 * docs/device-interface.md are all derived from that list.
 *
 * Bit and byte order (the whole device interface uses this convention):
 *  - multi-byte fields are LITTLE-ENDIAN (unlike the wire, which is big-endian);
 *  - bit 0 is the least significant bit of the byte at `offset`; a field
 *    occupies bits [bitOffset, bitOffset + width) of the little-endian integer
 *    that starts at `offset`. So `{offset: 0x1a, bitOffset: 4, width: 4}` is
 *    the high nibble of byte 0x1a;
 *  - width ≤ 32: a number; width 64 (bitOffset 0): a bigint, plus number
 *    variants `getNum`/`setNum` for values below 2^53 (addresses); any other
 *    multiple of 8 (bitOffset 0): a byte string (GIDs, MACs), stored as-is.
 *
 * Every bit of a structure is covered by exactly one field: gaps are
 * declared as reserved fields named by their offset (`reservedAt0x1c`,
 * `reservedAt0x3fBit1` for a field that starts at bit 1 of byte 0x3f), so a
 * slip in a table shows up at module load (DEV_ERR_LAYOUT) and in review.
 *
 * Hot path: accessors are closures built once at module load; the ≤32-bit
 * ones allocate nothing. Hoist them (`const opcode = SEND_CTRL.f.opcode`)
 * and call `opcode.get(dv, wqeOffset)` with the DataView of host memory.
 */
import { DeviceError } from './errors.js';

/** What a field's value looks like in JavaScript. */
export const enum FieldKind {
  /** ≤ 32 bits: number. */
  U = 0,
  /** exactly 64 bits: bigint (and number via getNum/setNum). */
  U64 = 1,
  /** a byte string: Uint8Array. */
  BYTES = 2,
}

/** One declared field. `width` is in bits. */
export interface FieldDecl<N extends string = string, K extends FieldKind = FieldKind> {
  readonly name: N;
  readonly offset: number;
  readonly bitOffset: number;
  readonly width: number;
  readonly kind: K;
  /** One line for the reference manual. */
  readonly doc: string;
  /** Optional names of values, for the pretty-printer. */
  readonly names?: Readonly<Record<number, string>>;
}

export type ReservedName = `reservedAt0x${string}`;

/** Accessor of a ≤32-bit field. get/set do not allocate. `set` masks the value to the field width. */
export interface UAccessor {
  readonly decl: FieldDecl;
  get(dv: DataView, base: number): number;
  set(dv: DataView, base: number, v: number): void;
}

/** Accessor of a 64-bit field. */
export interface U64Accessor {
  readonly decl: FieldDecl;
  get(dv: DataView, base: number): bigint;
  set(dv: DataView, base: number, v: bigint): void;
  /** The value as a number; exact below 2^53 (use for addresses and lengths). */
  getNum(dv: DataView, base: number): number;
  /** Store a non-negative integer number < 2^53. */
  setNum(dv: DataView, base: number, v: number): void;
}

/** Accessor of a byte-string field. */
export interface BytesAccessor {
  readonly decl: FieldDecl;
  /** A view (no copy) of the field's bytes. */
  view(dv: DataView, base: number): Uint8Array;
  /** A copy of the field's bytes. */
  get(dv: DataView, base: number): Uint8Array;
  /** Copy `src` (exactly the field's length) into the field. */
  set(dv: DataView, base: number, src: ArrayLike<number>): void;
}

export type AccessorOf<D> =
  D extends FieldDecl<string, infer K> ? (K extends FieldKind.U ? UAccessor : K extends FieldKind.U64 ? U64Accessor : BytesAccessor) : never;

export type ValueOf<D> = D extends FieldDecl<string, infer K> ? (K extends FieldKind.U ? number : K extends FieldKind.U64 ? bigint : Uint8Array) : never;

export type Accessors<F extends readonly FieldDecl[]> = {
  readonly [D in F[number] as D['name']]: AccessorOf<D>;
};

/** Decoded values of a layout (reserved fields left out). */
export type StructValues<F extends readonly FieldDecl[]> = {
  [D in F[number] as D['name'] extends ReservedName ? never : D['name']]: ValueOf<D>;
};

/** Input of encodeStruct: any subset; 64-bit fields also accept numbers. */
export type StructInput<F extends readonly FieldDecl[]> = {
  [D in F[number] as D['name'] extends ReservedName ? never : D['name']]?: D extends FieldDecl<string, FieldKind.U64>
    ? bigint | number
    : D extends FieldDecl<string, FieldKind.BYTES>
      ? ArrayLike<number>
      : number;
};

export interface Layout<F extends readonly FieldDecl[] = readonly FieldDecl[]> {
  readonly name: string;
  /** Size in bytes. */
  readonly size: number;
  /** One paragraph for the reference manual. */
  readonly doc: string;
  /** Fields in ascending bit position. */
  readonly fields: F;
  /** Accessors by field name. */
  readonly f: Accessors<F>;
}

// ---------------------------------------------------------------------------
// Declaring fields
// ---------------------------------------------------------------------------

/** A field of 1..32 bits at bit `bitOffset` (0..7) of byte `offset`. */
export function u<N extends string>(
  name: N,
  offset: number,
  bitOffset: number,
  width: number,
  doc: string,
  names?: Readonly<Record<number, string>>,
): FieldDecl<N, FieldKind.U> {
  return names ? { name, offset, bitOffset, width, kind: FieldKind.U, doc, names } : { name, offset, bitOffset, width, kind: FieldKind.U, doc };
}

/** A 64-bit field at byte `offset`. */
export function u64<N extends string>(name: N, offset: number, doc: string): FieldDecl<N, FieldKind.U64> {
  return { name, offset, bitOffset: 0, width: 64, kind: FieldKind.U64, doc };
}

/** A byte string of `length` bytes at byte `offset`. */
export function bytes<N extends string>(name: N, offset: number, length: number, doc: string): FieldDecl<N, FieldKind.BYTES> {
  return { name, offset, bitOffset: 0, width: length * 8, kind: FieldKind.BYTES, doc };
}

/** The canonical name of a reserved field at (offset, bitOffset). */
export function reservedName(offset: number, bitOffset = 0): ReservedName {
  const base = `reservedAt0x${offset.toString(16)}`;
  return (bitOffset ? `${base}Bit${bitOffset}` : base) as ReservedName;
}

/**
 * A reserved field of `width` bits. Software writes zero; the device ignores
 * it. Up to 32 bits it is numeric, longer ones are byte strings.
 */
export function reserved(offset: number, width: number, bitOffset = 0): FieldDecl<ReservedName> {
  const name = reservedName(offset, bitOffset);
  if (width <= 32 && bitOffset + width <= 32) {
    return { name, offset, bitOffset, width, kind: FieldKind.U, doc: 'reserved, write 0' };
  }
  return { name, offset, bitOffset, width, kind: FieldKind.BYTES, doc: 'reserved, write 0' };
}

type Prefixed<P extends string, D> =
  D extends FieldDecl<infer N, infer K>
    ? N extends ReservedName
      ? FieldDecl<ReservedName, K>
      : FieldDecl<P extends '' ? N : `${P}${Capitalize<N>}`, K>
    : never;

export type EmbeddedFields<P extends string, F extends readonly FieldDecl[]> = {
  readonly [I in keyof F]: Prefixed<P, F[I]>;
};

/**
 * The fields of `layout` placed at byte `at` of an enclosing structure, with
 * names prefixed (`embed('av', AV, 8)` turns `dgid` into `avDgid`; an empty
 * prefix keeps the names). Reserved fields are renamed to their new offset.
 */
export function embed<P extends string, F extends readonly FieldDecl[]>(prefix: P, layout: Layout<F>, at: number): EmbeddedFields<P, F> {
  return layout.fields.map((d) => {
    const offset = d.offset + at;
    const isReserved = d.name.startsWith('reservedAt0x');
    const name = isReserved ? reservedName(offset, d.bitOffset) : prefix === '' ? d.name : prefix + d.name[0]!.toUpperCase() + d.name.slice(1);
    const doc = isReserved ? d.doc : `${layout.name}.${d.name}: ${d.doc}`;
    return { ...d, name, offset, doc };
  }) as unknown as EmbeddedFields<P, F>;
}

// ---------------------------------------------------------------------------
// Building accessors
// ---------------------------------------------------------------------------

function fail(layout: string, msg: string): never {
  throw new DeviceError('DEV_ERR_LAYOUT', `layout ${layout}: ${msg}`);
}

function readContainer(dv: DataView, o: number, c: number): number {
  switch (c) {
    case 8:
      return dv.getUint8(o);
    case 16:
      return dv.getUint16(o, true);
    case 24:
      return dv.getUint16(o, true) | (dv.getUint8(o + 2) << 16);
    default:
      return dv.getUint32(o, true);
  }
}

function writeContainer(dv: DataView, o: number, c: number, v: number): void {
  switch (c) {
    case 8:
      dv.setUint8(o, v);
      return;
    case 16:
      dv.setUint16(o, v, true);
      return;
    case 24:
      dv.setUint16(o, v & 0xffff, true);
      dv.setUint8(o + 2, (v >>> 16) & 0xff);
      return;
    default:
      dv.setUint32(o, v >>> 0, true);
  }
}

function makeU(d: FieldDecl): UAccessor {
  const off = d.offset;
  const bo = d.bitOffset;
  const w = d.width;
  if (bo === 0 && w === 8) {
    return {
      decl: d,
      get: (dv, b) => dv.getUint8(b + off),
      set: (dv, b, v) => dv.setUint8(b + off, v),
    };
  }
  if (bo === 0 && w === 16) {
    return {
      decl: d,
      get: (dv, b) => dv.getUint16(b + off, true),
      set: (dv, b, v) => dv.setUint16(b + off, v, true),
    };
  }
  if (bo === 0 && w === 32) {
    return {
      decl: d,
      get: (dv, b) => dv.getUint32(b + off, true),
      set: (dv, b, v) => dv.setUint32(b + off, v >>> 0, true),
    };
  }
  const span = bo + w;
  const c = span <= 8 ? 8 : span <= 16 ? 16 : span <= 24 ? 24 : 32;
  const mask = (2 ** w - 1) | 0; // w < 32 here, or w == 32 handled above
  const clear = ~(mask << bo);
  return {
    decl: d,
    get: (dv, b) => (readContainer(dv, b + off, c) >>> bo) & mask,
    set: (dv, b, v) => {
      const x = readContainer(dv, b + off, c);
      writeContainer(dv, b + off, c, (x & clear) | ((v & mask) << bo));
    },
  };
}

const TWO_32 = 4294967296;

function makeU64(d: FieldDecl): U64Accessor {
  const off = d.offset;
  return {
    decl: d,
    get: (dv, b) => dv.getBigUint64(b + off, true),
    set: (dv, b, v) => dv.setBigUint64(b + off, BigInt.asUintN(64, v), true),
    getNum: (dv, b) => dv.getUint32(b + off + 4, true) * TWO_32 + dv.getUint32(b + off, true),
    setNum: (dv, b, v) => {
      dv.setUint32(b + off, v >>> 0, true);
      dv.setUint32(b + off + 4, Math.floor(v / TWO_32) >>> 0, true);
    },
  };
}

function makeBytes(d: FieldDecl): BytesAccessor {
  const off = d.offset;
  const len = d.width / 8;
  const view = (dv: DataView, b: number) => new Uint8Array(dv.buffer, dv.byteOffset + b + off, len);
  return {
    decl: d,
    view,
    get: (dv, b) => view(dv, b).slice(),
    set: (dv, b, src) => {
      if (src.length !== len) {
        throw new DeviceError('DEV_ERR_FIELD_RANGE', `${d.name}: expected ${len} bytes, got ${src.length}`);
      }
      view(dv, b).set(src);
    },
  };
}

const REGISTRY: Layout[] = [];

/**
 * Declare a structure. Checks, at module load: fields in ascending order,
 * each within the structure and of a valid width for its kind, names
 * unique, reserved fields named by their offset, and every bit covered
 * exactly once.
 */
export function defineLayout<const F extends readonly FieldDecl[]>(name: string, size: number, doc: string, fields: F): Layout<F> {
  if (!Number.isInteger(size) || size <= 0) fail(name, `bad size ${size}`);
  const covered = new Uint8Array(size * 8);
  const seen = new Set<string>();
  let lastPos = -1;
  for (const d of fields) {
    const where = `field ${d.name} @0x${d.offset.toString(16)}`;
    if (seen.has(d.name)) fail(name, `${where}: duplicate name`);
    seen.add(d.name);
    if (!Number.isInteger(d.offset) || d.offset < 0) fail(name, `${where}: bad offset`);
    if (!Number.isInteger(d.bitOffset) || d.bitOffset < 0 || d.bitOffset > 7) {
      fail(name, `${where}: bitOffset must be 0..7`);
    }
    if (!Number.isInteger(d.width) || d.width < 1) fail(name, `${where}: bad width ${d.width}`);
    switch (d.kind) {
      case FieldKind.U:
        if (d.bitOffset + d.width > 32) fail(name, `${where}: a numeric field must fit in 32 bits from its byte`);
        break;
      case FieldKind.U64:
        if (d.width !== 64 || d.bitOffset !== 0) fail(name, `${where}: a 64-bit field must be byte aligned`);
        break;
      case FieldKind.BYTES:
        if (d.bitOffset !== 0 || d.width % 8 !== 0) fail(name, `${where}: a byte string must be whole bytes`);
        break;
    }
    if (d.name.startsWith('reserved') && d.name !== reservedName(d.offset, d.bitOffset)) {
      fail(name, `${where}: reserved field must be named ${reservedName(d.offset, d.bitOffset)}`);
    }
    const pos = d.offset * 8 + d.bitOffset;
    if (pos <= lastPos) fail(name, `${where}: fields must be declared in ascending position`);
    lastPos = pos;
    if (pos + d.width > size * 8) fail(name, `${where}: extends past the end (${size} bytes)`);
    for (let b = pos; b < pos + d.width; b++) {
      if (covered[b]) fail(name, `${where}: overlaps bit ${b}`);
      covered[b] = 1;
    }
  }
  const gap = covered.indexOf(0);
  if (gap >= 0) {
    fail(name, `bit ${gap} (byte 0x${(gap >> 3).toString(16)} bit ${gap & 7}) is not covered; declare it reserved`);
  }
  const f: Record<string, UAccessor | U64Accessor | BytesAccessor> = {};
  for (const d of fields) {
    f[d.name] = d.kind === FieldKind.U ? makeU(d) : d.kind === FieldKind.U64 ? makeU64(d) : makeBytes(d);
  }
  const layout: Layout<F> = Object.freeze({
    name,
    size,
    doc,
    fields: Object.freeze(fields.slice()) as unknown as F,
    f: Object.freeze(f) as Accessors<F>,
  });
  REGISTRY.push(layout as unknown as Layout);
  return layout;
}

/** Every layout declared so far (for the round-trip test and the doc generator). */
export function registeredLayouts(): readonly Layout[] {
  return REGISTRY;
}

// ---------------------------------------------------------------------------
// Generic encode / decode / print (control path; allocation is fine here)
// ---------------------------------------------------------------------------

function accessorOf(layout: Layout, name: string): UAccessor | U64Accessor | BytesAccessor {
  const a = (layout.f as Record<string, UAccessor | U64Accessor | BytesAccessor | undefined>)[name];
  if (!a) throw new DeviceError('DEV_ERR_LAYOUT', `layout ${layout.name} has no field ${name}`);
  return a;
}

type AnyAccessor = UAccessor | U64Accessor | BytesAccessor;

type Decoder = (accessors: readonly AnyAccessor[], dv: DataView, base: number) => Record<string, number | bigint | Uint8Array>;

/**
 * A layout's decoder, made on first decode: one object literal with every
 * non-reserved field in order, `{ "a": acc[0].get(dv, b), ... }`, built
 * from the declarations (the names are JSON string literals). Adding the
 * dozens of fields of a QP context one by one to a `{}` took ~7x as long
 * (3.2 µs against 0.47 µs), and every firmware command decodes its input.
 */
const DECODERS = new WeakMap<Layout, { accessors: AnyAccessor[]; make: Decoder }>();

function decoderOf(layout: Layout): { accessors: AnyAccessor[]; make: Decoder } {
  let d = DECODERS.get(layout);
  if (!d) {
    const names = layout.fields.filter((f) => !f.name.startsWith('reservedAt0x')).map((f) => f.name);
    const body = `return {${names.map((n, i) => `${JSON.stringify(n)}: acc[${i}].get(dv, b)`).join(', ')}};`;
    d = { accessors: names.map((n) => accessorOf(layout, n)), make: new Function('acc', 'dv', 'b', body) as Decoder };
    DECODERS.set(layout, d);
  }
  return d;
}

const U64_END = 1n << 64n;

/** All non-reserved fields of the structure at `base`. */
export function decodeStruct<F extends readonly FieldDecl[]>(layout: Layout<F>, dv: DataView, base: number): StructValues<F> {
  const d = decoderOf(layout as Layout);
  return d.make(d.accessors, dv, base) as StructValues<F>;
}

/**
 * Write the given fields (others untouched) with range checks: a value that
 * does not fit its field throws DEV_ERR_FIELD_RANGE (the fast accessors
 * mask instead).
 */
export function encodeStruct<F extends readonly FieldDecl[]>(layout: Layout<F>, dv: DataView, base: number, values: StructInput<F>): void {
  const vals = values as Record<string, unknown>;
  // for-in, not Object.entries: the same own keys in the same order, without an array per call.
  for (const name in vals) {
    const v = vals[name];
    if (v === undefined) continue;
    const a = accessorOf(layout as Layout, name);
    const d = a.decl;
    if (d.kind === FieldKind.U) {
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v >= 2 ** d.width) {
        throw new DeviceError('DEV_ERR_FIELD_RANGE', `${layout.name}.${name}: ${String(v)} does not fit ${d.width} bits`);
      }
      (a as UAccessor).set(dv, base, v);
    } else if (d.kind === FieldKind.U64) {
      const big = typeof v === 'number' && Number.isSafeInteger(v) ? BigInt(v) : v;
      if (typeof big !== 'bigint' || big < 0n || big >= U64_END) {
        throw new DeviceError('DEV_ERR_FIELD_RANGE', `${layout.name}.${name}: ${String(v)} does not fit 64 bits`);
      }
      (a as U64Accessor).set(dv, base, big);
    } else {
      (a as BytesAccessor).set(dv, base, v as ArrayLike<number>);
    }
  }
}

function hex(n: number | bigint): string {
  return '0x' + n.toString(16);
}

/**
 * A human-readable dump of one structure, one field per line. Reserved
 * fields are shown only when non-zero (then flagged), enum values by name.
 */
export function formatStruct(layout: Layout, data: Uint8Array, base = 0): string {
  const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const lines = [`${layout.name} (${layout.size} bytes)`];
  const width = Math.max(...layout.fields.map((d) => d.name.length));
  for (const d of layout.fields) {
    const v = accessorOf(layout, d.name).get(dv, base);
    const isReserved = d.name.startsWith('reservedAt0x');
    let text: string;
    if (v instanceof Uint8Array) {
      if (isReserved && v.every((x) => x === 0)) continue;
      text = Array.from(v, (x) => x.toString(16).padStart(2, '0')).join(d.width === 48 ? ':' : '');
    } else {
      if (isReserved && v === 0) continue;
      const name = d.names && typeof v === 'number' ? d.names[v] : undefined;
      text = d.width <= 4 ? String(v) : `${String(v)} (${hex(v)})`;
      if (name) text += ` ${name}`;
    }
    lines.push(`  ${d.name.padEnd(width)} = ${text}${isReserved ? '  <-- reserved bits set' : ''}`);
  }
  return lines.join('\n');
}

/** "0x1a" */
export function hexOffset(n: number): string {
  return '0x' + n.toString(16).padStart(2, '0');
}

/**
 * The byte/bit table of a layout, as Markdown: offset, bits (hi:lo of the
 * little-endian integer at that offset), field, description.
 */
export function layoutTable(layout: Layout): string {
  const rows = ['| offset | bits | field | description |', '| --- | --- | --- | --- |'];
  for (const d of layout.fields) {
    const hi = d.bitOffset + d.width - 1;
    const bits = d.kind === FieldKind.BYTES ? `${d.width / 8} bytes` : d.width === 1 ? `${d.bitOffset}` : `${hi}:${d.bitOffset}`;
    rows.push(`| ${hexOffset(d.offset)} | ${bits} | \`${d.name}\` | ${d.doc.replace(/\|/g, '\\|')} |`);
  }
  return rows.join('\n');
}
