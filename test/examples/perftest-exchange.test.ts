/**
 * perftest's out-of-band exchange (perftest_communication.c), byte for byte:
 * a perftest 6.06 client written here from the protocol's facts (version
 * string, system data, MTU, address messages, barriers, reports) talks to
 * `rnic perf` serving over TCP loopback, and every byte the model sends is
 * checked, as is what it prints from what it received.
 */
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { BufferIo } from '../../examples/common/io.js';
import { MsgSocket } from '../../examples/common/sock.js';
import { bwRow, main } from '../../examples/perf.js';
import { KEY_MSG_SIZE, KEY_MSG_SIZE_GID, destToMsg, msgToDest, versionNumber, type PerfDest } from '../../examples/perf/perftest-comm.js';
import { noRdmaDevice } from './device.js';

const peerDest: PerfDest = {
  lid: 0,
  out_reads: 1,
  qpn: 0xab,
  psn: 0x123456,
  rkey: 0xdeadbeef,
  vaddr: 0x7f0000001000n,
  gid: { raw: Uint8Array.from(Buffer.from('00000000000000000000ffffc0000263', 'hex')) },
  srqn: 0,
};

/** The model's address message: KEY_PRINT_FMT_GID, as perftest's sscanf-like parser reads it. */
const KEY_GID_RE = /^[0-9a-f]{4}:[0-9a-f]{4}:[0-9a-f]{6}:[0-9a-f]{6}:[0-9a-f]{8}:[0-9a-f]{16}:(?:[0-9a-f]{2}:){16}[0-9a-f]{8}:\0+$/;

/** A perftest client's side of the conversation: every exchange is "write mine, then read theirs". */
class FakePerftestClient {
  constructor(readonly sock: MsgSocket) {}
  async xchg(mine: Buffer): Promise<Buffer> {
    await this.sock.write(mine);
    const theirs = await this.sock.read(mine.length);
    expect(theirs.length).toBe(mine.length);
    return theirs;
  }
  async version(v: string): Promise<Buffer> {
    const b = Buffer.alloc(16);
    b.write(v, 'latin1');
    return this.xchg(b);
  }
  async int32(n: number): Promise<number> {
    const b = Buffer.alloc(4);
    b.writeInt32BE(n);
    return (await this.xchg(b)).readInt32BE(0);
  }
  async mtu(e: number): Promise<string> {
    const b = Buffer.alloc(2);
    b.write(String(e), 'latin1');
    return (await this.xchg(b)).toString('latin1');
  }
  async handshake(): Promise<PerfDest> {
    const theirs = await this.xchg(destToMsg(peerDest, true));
    expect(theirs.toString('latin1')).toMatch(KEY_GID_RE);
    return msgToDest(theirs, true) as PerfDest;
  }
  async u64(n: number): Promise<bigint> {
    const b = Buffer.alloc(8);
    b.writeBigUInt64BE(BigInt(n));
    return (await this.xchg(b)).readBigUInt64BE(0);
  }
  async dbl(x: number): Promise<number> {
    const b = Buffer.alloc(8);
    b.writeDoubleBE(x);
    return (await this.xchg(b)).readDoubleBE(0);
  }
}

async function serve(args: string[]): Promise<{ done: Promise<number>; io: BufferIo; peer: FakePerftestClient }> {
  const io = new BufferIo();
  let port!: (p: number) => void;
  const portP = new Promise<number>((r) => (port = r));
  const done = main([...args, '-p', '0', '-d', 'rnic0'], { io, onListening: port });
  const p = await portP;
  const socket = await new Promise<ReturnType<typeof connect>>((res, rej) => {
    const s = connect(p, '127.0.0.1', () => res(s));
    s.on('error', rej);
  });
  return { done, io, peer: new FakePerftestClient(new MsgSocket(socket)) };
}

describe('perftest-comm encoding', () => {
  it('KEY_PRINT_FMT_GID (108 bytes with its NUL) and KEY_PRINT_FMT (59) round trip', () => {
    const g = destToMsg(peerDest, true);
    expect(g.length).toBe(KEY_MSG_SIZE_GID);
    expect(g.toString('latin1')).toBe('0000:0001:0000ab:123456:deadbeef:00007f0000001000:00:00:00:00:00:00:00:00:00:00:ff:ff:c0:00:02:63:00000000:\0');
    const n = destToMsg(peerDest, false);
    expect(n.length).toBe(KEY_MSG_SIZE);
    expect(n.toString('latin1')).toBe('0000:0001:0000ab:123456:deadbeef:00007f0000001000:00000000\0');
    expect(msgToDest(g, true)).toMatchObject({ qpn: 0xab, psn: 0x123456, rkey: 0xdeadbeef, vaddr: 0x7f0000001000n });
    expect(msgToDest(n, false)).toMatchObject({ qpn: 0xab, psn: 0x123456, rkey: 0xdeadbeef, vaddr: 0x7f0000001000n, srqn: 0 });
    expect(msgToDest(Buffer.from('done\0'), true)).toBeNull();
  });

  it("the version as perftest's atof reads it", () => {
    expect(versionNumber('6.06')).toBe(6.06);
    expect(versionNumber('5.70')).toBe(5.7);
    expect(versionNumber('')).toBe(0);
    expect(versionNumber('x6')).toBe(0);
  });
});

describe.skipIf(noRdmaDevice)('a perftest 6.06 client against rnic perf serving', () => {
  it('ib_write_bw: version, system data, MTU, addresses, barriers, the report it then prints, close', async () => {
    const { done, io, peer } = await serve(['write_bw', '-n', '1000', '-s', '4096']);
    const ver = await peer.version('6.06');
    expect(ver.toString('latin1')).toBe(`6.06${'\0'.repeat(12)}`);
    expect(await peer.int32(8192)).toBe(4096); // cycle buffer: the page size
    expect(await peer.int32(128)).toBe(64); // cache line
    expect(await peer.mtu(2)).toMatch(/^[1-5]\0$/); // the model's port MTU; 512 (2) is the smaller
    const a1 = await peer.handshake(); // per QP, before RTR
    const a2 = await peer.handshake(); // per QP, printed
    expect(a2).toEqual(a1);
    expect(a1).toMatchObject({ lid: 0, out_reads: 1 });
    expect(Buffer.from(a1.gid.raw).toString('hex')).toMatch(/^00000000000000000000ffff/); // the IPv4 (RoCE v2) GID perftest would pick
    await peer.handshake(); // after RTR
    await peer.handshake(); // the client has finished
    // xchg_bw_reports: size, iters, peak, average, rate; the server's own is zeros
    expect(await peer.u64(4096)).toBe(0n);
    expect(await peer.u64(1000)).toBe(0n);
    expect(await peer.dbl(123.45)).toBe(0);
    expect(await peer.dbl(100.5)).toBe(0);
    expect(await peer.dbl(0.025728)).toBe(0);
    await peer.handshake(); // ctx_close_connection
    expect(await done).toBe(0);
    expect(io.stderr).toBe('');
    expect(io.stdout).toContain(' Mtu             : 512[B]\n');
    expect(io.stdout).toContain(
      ' remote address: LID 0000 QPN 0x00ab PSN 0x123456 RKey 0xdeadbeef VAddr 0x007f0000001000\n GID: 00:00:00:00:00:00:00:00:00:00:255:255:192:00:02:99\n',
    );
    expect(io.stdout).toContain(bwRow({ size: 4096, iters: 1000, bw_peak: 123.45, bw_avg: 100.5, msgRate_avg: 0.025728 }, false));
    peer.sock.close();
  });

  it('ib_read_lat: the server is passive and closes after the addresses (four handshakes, then one)', async () => {
    const { done, io, peer } = await serve(['read_lat', '-n', '100']);
    await peer.version('6.06');
    await peer.int32(4096);
    await peer.int32(64);
    await peer.mtu(3);
    for (let k = 0; k < 4; k++) expect(await peer.handshake()).toMatchObject({ out_reads: expect.any(Number) });
    await peer.handshake(); // close
    expect(await done).toBe(0);
    expect(io.stdout).toContain(' Outstand reads  : ');
    expect(io.stdout).not.toContain('#bytes');
    peer.sock.close();
  });

  it("a peer older than 5.70 is refused with perftest's message, exit 1", async () => {
    const { done, io, peer } = await serve(['send_bw']);
    await peer.version('5.60');
    expect(await done).toBe(1);
    expect(io.stderr).toContain("Current implementation is not compatible with versions older than 5.70 (the other side sent version '5.60')");
    peer.sock.close();
  });

  it('a peer that hangs up mid-exchange: a clear error naming the step, exit 1', async () => {
    const { done, io, peer } = await serve(['write_bw']);
    await peer.version('6.06');
    await peer.sock.write(Buffer.from([0, 0])); // half of the cycle buffer
    peer.sock.close();
    expect(await done).toBe(1);
    expect(io.stderr).toContain('Failed to exchange data between server and clients (cycle buffer: the other side closed the connection after 2 of 4 bytes)');
  });
});
