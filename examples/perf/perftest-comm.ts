/**
 * perftest's out-of-band exchange over its TCP connection (perftest_communication.c,
 * "Data ex. method : Ethernet"), byte for byte, so that `rnic perf` and perftest's
 * ib_* programs can face each other.
 *
 * Every exchange is symmetric: the client (the side given a server name)
 * writes its bytes then reads the peer's; the server reads first, then writes.
 * In order, perftest 5.70 and later exchange:
 *   1. the version string, a 16-byte char array ("6.06" and NULs);
 *   2. the system data: cycle buffer then cache line size, 4 bytes each,
 *      big-endian; each side keeps the larger;
 *   3. the MTU, the enum value printed with %d, 2 bytes ("3\0"); the smaller wins;
 *   4. handshakes: one queue pair's address as text (KEY_PRINT_FMT_GID, 108
 *      bytes with its NUL, or KEY_PRINT_FMT, 59 bytes, without a GID index);
 *      the same message also serves as a barrier;
 *   5. bandwidth reports: size, iterations (8 bytes each from 5.33), peak,
 *      average and message rate (doubles), each a separate exchange, big-endian.
 */
import { sprintf } from '../common/printf.js';
import type { MsgSocket } from '../common/sock.js';
import { RnicError } from '../../src/wire/errors.js';

/** The version this side announces: Debian 12's perftest 4.5-0.17 prints "Version: 6.06". */
export const PERFTEST_VERSION = '6.06';
/** perftest's MAX_VERSION: the size of the version char array on the wire. */
export const VERSION_BYTES = 16;
/** check_version_compatibility: older peers speak another exchange. */
export const MIN_PEER_VERSION = 5.7;
export const KEY_MSG_SIZE = 59;
export const KEY_MSG_SIZE_GID = 108;

/** The exchange broke off or the peer sent something perftest would not. */
export class PerftestCommError extends RnicError<'PERF_FAILED'> {
  constructor(message: string) {
    super('PERF_FAILED', message);
    this.name = 'PerftestCommError';
  }
}

/** A queue pair's address as perftest exchanges it (struct pingpong_dest). */
export interface PerfDest {
  lid: number;
  out_reads: number;
  qpn: number;
  psn: number;
  rkey: number;
  vaddr: bigint;
  gid: { raw: Uint8Array };
  srqn: number;
}

/** One row of a bandwidth report as xchg_bw_reports carries it. */
export interface BwReportWire {
  size: number;
  iters: number;
  bw_peak: number;
  bw_avg: number;
  msgRate_avg: number;
}

/** The text perftest writes for one address: with a GID (gid_index ≥ 0) or without. */
export function destToMsg(d: PerfDest, withGid: boolean): Buffer {
  const head = sprintf('%04x:%04x:%06x:%06x:%08x:%016llx:', d.lid, d.out_reads, d.qpn, d.psn, d.rkey >>> 0, d.vaddr);
  const text = withGid ? head + sprintf('%02x:'.repeat(16), ...d.gid.raw) + sprintf('%08x:', d.srqn) : head + sprintf('%08x', d.srqn);
  const msg = Buffer.alloc(withGid ? KEY_MSG_SIZE_GID : KEY_MSG_SIZE);
  msg.write(text, 'latin1');
  return msg;
}

/** Parses an address message; null when it is not one perftest would write. */
export function msgToDest(msg: Uint8Array, withGid: boolean): PerfDest | null {
  const nul = msg.indexOf(0);
  const text = Buffer.from(msg.subarray(0, nul >= 0 ? nul : msg.length)).toString('latin1');
  const f = text.split(':');
  const want = withGid ? 23 : 7;
  if (f.length < want || !f.slice(0, want).every((x) => /^[0-9a-fA-F]+$/.test(x))) return null;
  const raw = new Uint8Array(16);
  if (withGid) for (let i = 0; i < 16; i++) raw[i] = parseInt(f[6 + i] as string, 16);
  return {
    lid: parseInt(f[0] as string, 16),
    out_reads: parseInt(f[1] as string, 16),
    qpn: parseInt(f[2] as string, 16),
    psn: parseInt(f[3] as string, 16),
    rkey: parseInt(f[4] as string, 16) >>> 0,
    vaddr: BigInt(`0x${f[5] as string}`),
    gid: { raw },
    srqn: parseInt(f[withGid ? 22 : 6] as string, 16) >>> 0,
  };
}

/** perftest's atof of a version string: the leading decimal number, 0 if none. */
export function versionNumber(v: string): number {
  const m = /^\s*[+-]?(\d+(\.\d*)?|\.\d+)/.exec(v);
  return m ? Number(m[0]) : 0;
}

export class PerftestComm {
  /** The peer's version string, once exchanged. */
  remVersion = '';

  constructor(
    private readonly sock: MsgSocket,
    /** The side that connected: it writes first. */
    private readonly isClient: boolean,
    /** Whether addresses carry a GID (perftest: gid_index != -1; always so on RoCE). */
    private readonly withGid: boolean,
  ) {}

  /** ctx_xchg_data_ethernet: the same number of bytes each way, client first. */
  async xchg(mine: Uint8Array, what: string): Promise<Buffer> {
    if (this.isClient) await this.sock.write(mine);
    const theirs = await this.sock.read(mine.length);
    if (theirs.length !== mine.length) {
      throw new PerftestCommError(
        ` Failed to exchange data between server and clients (${what}: the other side closed the connection after ${theirs.length} of ${mine.length} bytes)`,
      );
    }
    if (!this.isClient) await this.sock.write(mine);
    return theirs;
  }

  /** exchange_versions + check_version_compatibility. */
  async exchangeVersions(): Promise<string> {
    const mine = Buffer.alloc(VERSION_BYTES);
    mine.write(PERFTEST_VERSION, 'latin1');
    const theirs = await this.xchg(mine, 'version');
    const nul = theirs.indexOf(0);
    this.remVersion = theirs.subarray(0, nul >= 0 ? nul : theirs.length).toString('latin1');
    if (versionNumber(this.remVersion) < MIN_PEER_VERSION) {
      throw new PerftestCommError(
        `Current implementation is not compatible with versions older than 5.70 (the other side sent version '${this.remVersion.replace(/[^\x20-\x7e]/g, '?')}')`,
      );
    }
    return this.remVersion;
  }

  /** check_sys_data: cycle buffer and cache line size, the larger of each kept. */
  async checkSysData(cycleBuffer: number, cacheLine: number): Promise<{ cycleBuffer: number; cacheLine: number }> {
    const b = Buffer.alloc(4);
    b.writeInt32BE(cycleBuffer);
    const remCycle = (await this.xchg(b, 'cycle buffer')).readInt32BE(0);
    b.writeInt32BE(cacheLine);
    const remLine = (await this.xchg(b, 'cache line size')).readInt32BE(0);
    return { cycleBuffer: Math.max(cycleBuffer, remCycle), cacheLine: Math.max(cacheLine, remLine) };
  }

  /** check_mtu: both MTU enums as "%d" in 2 bytes; the smaller valid one is used. */
  async checkMtu(mtuEnum: number): Promise<number> {
    const b = Buffer.alloc(2);
    b.write(sprintf('%d', mtuEnum).slice(0, 1), 'latin1');
    const theirs = await this.xchg(b, 'MTU');
    const nul = theirs.indexOf(0);
    const rem = parseInt(theirs.subarray(0, nul >= 0 ? nul : 2).toString('latin1'), 10);
    return rem >= 1 && rem <= 5 && mtuEnum > rem ? rem : mtuEnum;
  }

  /** ctx_hand_shake: swaps one address; also perftest's barrier. */
  async handshake(mine: PerfDest): Promise<PerfDest> {
    const theirs = await this.xchg(destToMsg(mine, this.withGid), 'address');
    const d = msgToDest(theirs, this.withGid);
    if (!d) throw new PerftestCommError(`Couldn't parse line <${theirs.toString('latin1').replace(/\0.*$/s, '')}>`);
    return d;
  }

  /** xchg_bw_reports: five exchanges, big-endian. */
  async xchgBwReports(mine: BwReportWire): Promise<BwReportWire> {
    const u64 = (n: number): Buffer => {
      const b = Buffer.alloc(8);
      b.writeBigUInt64BE(BigInt(Math.max(0, Math.trunc(n))));
      return b;
    };
    const dbl = (x: number): Buffer => {
      const b = Buffer.alloc(8);
      b.writeDoubleBE(x);
      return b;
    };
    const size = Number((await this.xchg(u64(mine.size), 'report size')).readBigUInt64BE(0));
    const iters = Number((await this.xchg(u64(mine.iters), 'report iterations')).readBigUInt64BE(0));
    const bw_peak = (await this.xchg(dbl(mine.bw_peak), 'report peak')).readDoubleBE(0);
    const bw_avg = (await this.xchg(dbl(mine.bw_avg), 'report average')).readDoubleBE(0);
    const msgRate_avg = (await this.xchg(dbl(mine.msgRate_avg), 'report message rate')).readDoubleBE(0);
    return { size, iters, bw_peak, bw_avg, msgRate_avg };
  }

  /** The socket closed with no last handshake (perftest's write_lat). */
  end(): void {
    this.sock.close();
  }

  /** ctx_close_connection: a last handshake, then the socket is closed. */
  async close(mine: PerfDest): Promise<void> {
    await this.handshake(mine);
    this.sock.close();
  }
}
