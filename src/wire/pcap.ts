/**
 * Classic libpcap capture format (not pcapng): encoders for the file and
 * record headers, and a reader. Pure functions over bytes; the streaming
 * file writer lives in pcap-writer.ts.
 *
 * Layout (all fields in the byte order the magic announces):
 *   global header, 24 bytes: magic u32, version major u16 (2), minor u16 (4),
 *     thiszone i32, sigfigs u32, snaplen u32, network (linktype) u32
 *   record header, 16 bytes: ts_sec u32, ts_frac u32 (µs or ns, by magic),
 *     incl_len u32 (captured), orig_len u32 (on the wire)
 */
import { WireError } from './errors.js';

export const LINKTYPE_ETHERNET = 1;
export const LINKTYPE_INFINIBAND = 247;

/** Magic as read in the file's own byte order: µs and ns resolution. */
export const PCAP_MAGIC_US = 0xa1b2c3d4;
export const PCAP_MAGIC_NS = 0xa1b23c4d;

export const PCAP_GLOBAL_HEADER_LENGTH = 24;
export const PCAP_RECORD_HEADER_LENGTH = 16;

/** tcpdump's default snapshot length: whole frames, even jumbo and TSO-sized. */
export const PCAP_DEFAULT_SNAPLEN = 262144;

/**
 * Largest captured length we believe. libpcap's largest per-linktype limit is
 * 128 MiB (D-Bus); a bigger record length means a corrupt or misparsed file,
 * and refusing it keeps a bad length from becoming a huge bogus view.
 */
export const PCAP_MAX_RECORD_LENGTH = 128 * 1024 * 1024;

/** pcapng section header block type: a common wrong input, worth naming. */
const PCAPNG_MAGIC = 0x0a0d0d0a;

/** Bits 0-25 of the network field are the link type; the upper bits carry
 *  FCS-length information (see pcap-linktype(7)), which we do not model. */
const LINKTYPE_MASK = 0x03ffffff;

const NS_PER_SEC = 1_000_000_000n;
/** ts_sec is an unsigned 32-bit field: the last representable instant. */
const MAX_TIMESTAMP_NS = 0xffffffffn * NS_PER_SEC + (NS_PER_SEC - 1n);

export interface PcapHeader {
  /** Link type (low 26 bits of the network field), e.g. LINKTYPE_ETHERNET. */
  linktype: number;
  /** True when record timestamps carry nanoseconds, false for microseconds. */
  nanosecond: boolean;
  /** Snapshot length from the file; 0 means the writer left it unspecified. */
  snaplen: number;
  /** Byte order of the file (not of this machine). */
  littleEndian: boolean;
}

export interface PcapRecord {
  /** Capture time in nanoseconds since the Unix epoch (µs files: a multiple of 1000). */
  timestampNs: bigint;
  /** Captured bytes: a view into the input, not a copy. */
  data: Uint8Array;
  /** Length of the frame on the wire; >= data.length when snaplen cut it. */
  originalLength: number;
}

export interface PcapFile extends PcapHeader {
  records: PcapRecord[];
}

export interface PcapGlobalHeaderOptions {
  linktype: number;
  snaplen?: number;
  nanosecond?: boolean;
}

function bad(message: string, offset: number): WireError {
  return new WireError('WIRE_BAD_PCAP', `pcap: ${message} (at byte ${offset})`, offset);
}

function isU32(v: number): boolean {
  return Number.isInteger(v) && v >= 0 && v <= 0xffffffff;
}

// Byte-by-byte stores: no DataView per call, so the record encoder allocates nothing.
function putU16LE(out: Uint8Array, o: number, v: number): void {
  out[o] = v & 0xff;
  out[o + 1] = (v >>> 8) & 0xff;
}

function putU32LE(out: Uint8Array, o: number, v: number): void {
  out[o] = v & 0xff;
  out[o + 1] = (v >>> 8) & 0xff;
  out[o + 2] = (v >>> 16) & 0xff;
  out[o + 3] = (v >>> 24) & 0xff;
}

/**
 * The 24-byte global header, little-endian (what tcpdump writes on x86, and
 * the order every reader accepts). snaplen defaults to 262144.
 */
export function encodePcapGlobalHeader(opts: PcapGlobalHeaderOptions): Uint8Array {
  const snaplen = opts.snaplen ?? PCAP_DEFAULT_SNAPLEN;
  if (!isU32(opts.linktype)) {
    throw bad(`linktype ${opts.linktype} is not an unsigned 32-bit integer`, 20);
  }
  // 0 would mean "unspecified" to readers, and above the cap our own reader
  // would refuse the records we write; so a writer must pick a real limit.
  if (!Number.isInteger(snaplen) || snaplen < 1 || snaplen > PCAP_MAX_RECORD_LENGTH) {
    throw bad(`snaplen ${snaplen} is not an integer in 1..${PCAP_MAX_RECORD_LENGTH}`, 16);
  }
  const out = new Uint8Array(PCAP_GLOBAL_HEADER_LENGTH);
  putU32LE(out, 0, opts.nanosecond ? PCAP_MAGIC_NS : PCAP_MAGIC_US);
  putU16LE(out, 4, 2);
  putU16LE(out, 6, 4);
  // thiszone (8) and sigfigs (12) stay 0: timestamps are UTC, as everyone writes them.
  putU32LE(out, 16, snaplen);
  putU32LE(out, 20, opts.linktype);
  return out;
}

/**
 * Writes one 16-byte record header, little-endian, at out[offset..offset+16).
 * No allocation of buffers: the writer calls this once per frame.
 * Microsecond files truncate the timestamp to the microsecond, as libpcap does.
 */
export function encodePcapRecordHeader(
  out: Uint8Array,
  offset: number,
  timestampNs: bigint,
  capturedLength: number,
  originalLength: number,
  nanosecond: boolean,
): void {
  // Validate everything before the first store, so a failed call leaves `out` untouched.
  if (!Number.isInteger(offset) || offset < 0 || offset + PCAP_RECORD_HEADER_LENGTH > out.length) {
    throw bad(`no room for a 16-byte record header in a ${out.length}-byte buffer`, offset);
  }
  if (typeof timestampNs !== 'bigint' || timestampNs < 0n || timestampNs > MAX_TIMESTAMP_NS) {
    throw bad(`timestamp ${String(timestampNs)} ns does not fit an unsigned 32-bit seconds field`, offset);
  }
  if (!isU32(capturedLength) || !isU32(originalLength)) {
    throw bad(`lengths ${capturedLength}/${originalLength} are not unsigned 32-bit integers`, offset + 8);
  }
  if (capturedLength > originalLength) {
    throw bad(`captured length ${capturedLength} exceeds original length ${originalLength}`, offset + 8);
  }
  const sec = Number(timestampNs / NS_PER_SEC);
  const subNs = Number(timestampNs % NS_PER_SEC);
  putU32LE(out, offset, sec);
  putU32LE(out, offset + 4, nanosecond ? subNs : Math.floor(subNs / 1000));
  putU32LE(out, offset + 8, capturedLength);
  putU32LE(out, offset + 12, originalLength);
}

/** Parses and checks the global header. */
export function readPcapHeader(bytes: Uint8Array): PcapHeader {
  if (bytes.length < PCAP_GLOBAL_HEADER_LENGTH) {
    throw bad(`file is ${bytes.length} bytes, shorter than the 24-byte global header`, 0);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const magicLE = view.getUint32(0, true);
  let littleEndian: boolean;
  let nanosecond: boolean;
  // Reading the magic little-endian tells both the resolution and the byte order.
  switch (magicLE) {
    case PCAP_MAGIC_US:
      littleEndian = true;
      nanosecond = false;
      break;
    case PCAP_MAGIC_NS:
      littleEndian = true;
      nanosecond = true;
      break;
    case 0xd4c3b2a1:
      littleEndian = false;
      nanosecond = false;
      break;
    case 0x4d3cb2a1:
      littleEndian = false;
      nanosecond = true;
      break;
    case PCAPNG_MAGIC:
      throw bad('this is a pcapng file; only classic pcap is supported', 0);
    default:
      throw bad(`unknown magic 0x${magicLE.toString(16).padStart(8, '0')}`, 0);
  }
  const major = view.getUint16(4, littleEndian);
  // Minor versions of 2.x differ only in ancient quirks; major != 2 is another format.
  if (major !== 2) {
    throw bad(`unsupported version ${major}.${view.getUint16(6, littleEndian)}`, 4);
  }
  return {
    linktype: view.getUint32(20, littleEndian) & LINKTYPE_MASK,
    nanosecond,
    snaplen: view.getUint32(16, littleEndian),
    littleEndian,
  };
}

/**
 * Yields records lazily, each a view into `bytes`. The generator does no work
 * until first pulled, so a bad global header throws from the first next().
 * Every inconsistency throws WireError('WIRE_BAD_PCAP'), never a RangeError,
 * and a record cut short is an error, not a silently dropped tail.
 */
export function* iteratePcap(bytes: Uint8Array): Generator<PcapRecord, void, undefined> {
  const hdr = readPcapHeader(bytes);
  yield* iterateRecords(bytes, hdr);
}

function* iterateRecords(bytes: Uint8Array, hdr: PcapHeader): Generator<PcapRecord, void, undefined> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const le = hdr.littleEndian;
  const fracLimit = hdr.nanosecond ? 1_000_000_000 : 1_000_000;
  const fracScale = hdr.nanosecond ? 1n : 1000n;
  // Snaplen 0 is how some writers say "unspecified": then only the sanity cap applies.
  const capLimit = hdr.snaplen === 0 ? PCAP_MAX_RECORD_LENGTH : Math.min(hdr.snaplen, PCAP_MAX_RECORD_LENGTH);
  let pos = PCAP_GLOBAL_HEADER_LENGTH;
  let index = 0;
  while (pos < bytes.length) {
    if (bytes.length - pos < PCAP_RECORD_HEADER_LENGTH) {
      throw bad(`record ${index}: header cut short, ${bytes.length - pos} of 16 bytes present`, pos);
    }
    const sec = view.getUint32(pos, le);
    const frac = view.getUint32(pos + 4, le);
    const capLen = view.getUint32(pos + 8, le);
    const origLen = view.getUint32(pos + 12, le);
    if (frac >= fracLimit) {
      throw bad(`record ${index}: sub-second field ${frac} is not below ${fracLimit}`, pos + 4);
    }
    if (capLen > capLimit) {
      const why = hdr.snaplen !== 0 && capLen > hdr.snaplen ? `exceeds snaplen ${hdr.snaplen}` : `exceeds the ${PCAP_MAX_RECORD_LENGTH}-byte sanity limit`;
      throw bad(`record ${index}: captured length ${capLen} ${why}`, pos + 8);
    }
    if (capLen > origLen) {
      throw bad(`record ${index}: captured length ${capLen} exceeds original length ${origLen}`, pos + 8);
    }
    const dataStart = pos + PCAP_RECORD_HEADER_LENGTH;
    if (capLen > bytes.length - dataStart) {
      throw bad(`record ${index}: ${capLen} captured bytes run past the end of the file (${bytes.length - dataStart} left)`, dataStart);
    }
    yield {
      timestampNs: BigInt(sec) * NS_PER_SEC + BigInt(frac) * fracScale,
      data: bytes.subarray(dataStart, dataStart + capLen),
      originalLength: origLen,
    };
    pos = dataStart + capLen;
    index++;
  }
}

/** Reads a whole capture. Record data are views into `bytes`. */
export function readPcap(bytes: Uint8Array): PcapFile {
  const hdr = readPcapHeader(bytes);
  return { ...hdr, records: Array.from(iterateRecords(bytes, hdr)) };
}
