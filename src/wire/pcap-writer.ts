/**
 * Streaming classic-pcap writer. Frames are packed into one fixed chunk and
 * handed on when it fills, so a long run never holds its capture in memory
 * and frames land in the order they were written.
 *
 * Unlike the rest of src/wire this holds state (the chunk); it does no I/O
 * and no clock reads: bytes go to a sink the caller gives (a file in
 * src/runtime/pcap-file.ts, memory in tests), and every timestamp comes
 * from the caller (sim or wall clock).
 */
import { WireError } from './errors.js';
import { sealIcrc } from './lazy-icrc.js';
import { encodePcapGlobalHeader, encodePcapRecordHeader, PCAP_DEFAULT_SNAPLEN, PCAP_RECORD_HEADER_LENGTH } from './pcap.js';

/**
 * Receives the file's bytes in order. The writer never touches a chunk again
 * after passing it here, so the sink may keep it without copying.
 */
export type PcapSink = (chunk: Uint8Array) => void;

/**
 * A sink that consumes each chunk before returning and keeps none (a file
 * descriptor): the writer then reuses one chunk for the whole capture.
 * `close` is called once, by the writer's close().
 */
export interface PcapOutput {
  write(chunk: Uint8Array): void;
  close(): void;
}

export interface PcapWriterOptions {
  linktype: number;
  /** Nanosecond timestamps (magic 0xa1b23c4d); default microseconds. */
  nanosecond?: boolean;
  /** Frames longer than this are cut to it; default 262144. */
  snaplen?: number;
  /** Bytes buffered before a write; default 256 KiB, minimum 64. */
  chunkSize?: number;
}

const DEFAULT_CHUNK_SIZE = 256 * 1024;
const MIN_CHUNK_SIZE = 64;

export class PcapWriter {
  readonly linktype: number;
  readonly nanosecond: boolean;
  readonly snaplen: number;

  readonly #sink: PcapSink | null;
  readonly #output: PcapOutput | null;
  readonly #chunkSize: number;
  #chunk: Uint8Array;
  #used = 0;
  #closed = false;
  /** A failed file/sink write leaves a hole in the stream: refuse to go on past it. */
  #failed = false;
  #frames = 0;

  /**
   * Writes to a sink that may keep what it gets (e.g. to capture in memory)
   * or to an output that consumes at once (a file). Nothing reaches either
   * before the first flush, so a caller may validate the options by
   * constructing the writer before it opens the file.
   */
  constructor(sink: PcapSink | PcapOutput, opts: PcapWriterOptions) {
    const chunkSize = opts.chunkSize ?? DEFAULT_CHUNK_SIZE;
    if (!Number.isInteger(chunkSize) || chunkSize < MIN_CHUNK_SIZE) {
      throw new WireError('WIRE_BAD_PCAP', `pcap writer: chunkSize ${chunkSize} must be an integer >= ${MIN_CHUNK_SIZE}`);
    }
    const header = encodePcapGlobalHeader(opts);
    this.linktype = opts.linktype;
    this.nanosecond = opts.nanosecond ?? false;
    this.snaplen = opts.snaplen ?? PCAP_DEFAULT_SNAPLEN;
    this.#sink = typeof sink === 'function' ? sink : null;
    this.#output = typeof sink === 'function' ? null : sink;
    this.#chunkSize = chunkSize;
    this.#chunk = new Uint8Array(chunkSize);
    this.#chunk.set(header, 0);
    this.#used = header.length;
  }

  get framesWritten(): number {
    return this.#frames;
  }

  /**
   * Appends one frame. Frames longer than snaplen are cut, keeping the
   * original length in the record. The frame is copied before return, so the
   * caller may reuse its buffer at once.
   */
  write(frame: Uint8Array, timestampNs: bigint): void {
    this.#assertOpen('write');
    sealIcrc(frame); // a capture shows the frame as it is on the wire
    const capLen = Math.min(frame.length, this.snaplen);
    // Keep the 16-byte header whole in one chunk; frame bytes may straddle chunks.
    if (this.#chunkSize - this.#used < PCAP_RECORD_HEADER_LENGTH) this.#drain();
    // Throws on a bad timestamp before anything is committed, leaving the file consistent.
    encodePcapRecordHeader(this.#chunk, this.#used, timestampNs, capLen, frame.length, this.nanosecond);
    this.#used += PCAP_RECORD_HEADER_LENGTH;
    let done = 0;
    while (done < capLen) {
      if (this.#used === this.#chunkSize) this.#drain();
      const n = Math.min(capLen - done, this.#chunkSize - this.#used);
      this.#chunk.set(frame.subarray(done, done + n), this.#used);
      this.#used += n;
      done += n;
    }
    this.#frames++;
  }

  /** Hands everything buffered so far to the file or sink. */
  flush(): void {
    this.#assertOpen('flush');
    this.#drain();
  }

  /** Flushes and closes the output. Closing twice is harmless. */
  close(): void {
    if (this.#closed) return;
    try {
      if (!this.#failed) this.#drain();
    } finally {
      // Even if the last write fails, do not leak the output or accept more frames.
      this.#closed = true;
      this.#output?.close();
    }
  }

  #assertOpen(op: string): void {
    if (this.#closed) throw new WireError('WIRE_BAD_PCAP', `pcap writer: ${op} after close`);
    if (this.#failed) throw new WireError('WIRE_BAD_PCAP', `pcap writer: ${op} after an earlier write failed`);
  }

  #drain(): void {
    if (this.#used === 0) return;
    try {
      this.#drainUnchecked();
    } catch (e) {
      this.#failed = true;
      throw e;
    }
  }

  #drainUnchecked(): void {
    const n = this.#used;
    if (this.#output) {
      this.#output.write(this.#chunk.subarray(0, n));
      this.#used = 0;
      return;
    }
    // A sink may keep what it gets, so never reuse a chunk once handed over.
    // A full (or mostly full) chunk is given away whole and replaced; a small
    // partial flush is copied instead, so a sink that keeps many small flushes
    // does not pin a 256 KiB buffer for each.
    let out: Uint8Array;
    if (n >= this.#chunkSize >>> 1) {
      out = this.#chunk.subarray(0, n);
      this.#chunk = new Uint8Array(this.#chunkSize);
    } else {
      out = this.#chunk.slice(0, n);
    }
    this.#used = 0;
    this.#sink!(out);
  }
}
