/**
 * The example programs end to end on the model's default devices (rnic0,
 * rnic1): every perf test in loopback and over TCP, UC and UD, rc_pingpong's
 * variants and failure paths, devinfo.
 */
import { describe, expect, it } from 'vitest';
import '../../src/boot.js';
import { devinfoRun, expectAddressesCrossed, expectPerfTable, expectPingpong, perfLoopback, rcPingpongPair } from './scenarios.js';

describe('rc_pingpong on the model', () => {
  it('server and client over TCP, polling, with -c', async () => {
    const { server, client } = await rcPingpongPair(['-n', '200', '-s', '16384', '-c']);
    expectPingpong(server, 16384, 200);
    expectPingpong(client, 16384, 200);
    expectAddressesCrossed(server, client);
  });

  it('with -e (completion channel) and -c, small messages sent inline', async () => {
    const { server, client } = await rcPingpongPair(['-n', '100', '-s', '32', '-e', '-c', '-r', '8']);
    expectPingpong(server, 32, 100);
    expectPingpong(client, 32, 100);
  });

  async function pair(args: string[]) {
    const { BufferIo } = await import('../../examples/common/io.js');
    const { main } = await import('../../examples/rc_pingpong.js');
    const sio = new BufferIo();
    const cio = new BufferIo();
    let port!: (p: number) => void;
    const portP = new Promise<number>((r) => (port = r));
    const s = main(['-p', '0', '-n', '5', '-d', 'rnic0', ...args], { io: sio, onListening: port });
    const c = main(['-p', String(await portP), '-n', '5', '-d', 'rnic1', ...args, '127.0.0.1'], { io: cio });
    const [sc, cc] = await Promise.all([s, c]);
    return { sc, cc, sio, cio };
  }

  it('-g -1 on an Ethernet port: no GRH, the QP cannot reach RTR, as on real RoCE', async () => {
    const { sc, cc, sio } = await pair(['-g', '-1']);
    expect(sc).toBe(1);
    expect(sio.stderr).toContain('Failed to modify QP to RTR (EINVAL)');
    expect(sio.stderr).toContain("Couldn't connect to remote QP");
    expect(cc).toBe(1);
  });

  it('without -g on an Ethernet port: GID 3 (RoCE v2, IPv4), so the README command works as written', async () => {
    const { sc, cc, sio, cio } = await pair([]);
    expect({ sc, cc, err: sio.stderr + cio.stderr }).toEqual({ sc: 0, cc: 0, err: '' });
    expect(sio.stdout).toMatch(/local address: {2}LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID ::ffff:192\.0\.2\.1/);
  });
});

describe('perf --loopback on the model', () => {
  it('write_bw', async () => expectPerfTable(await perfLoopback('write_bw', { iters: 300, size: 8192 }), 1));
  it('read_bw', async () => expectPerfTable(await perfLoopback('read_bw', { iters: 300, size: 8192 }), 1));
  it('send_bw', async () => expectPerfTable(await perfLoopback('send_bw', { iters: 300, size: 4096 }), 1));
  it('send_bw on UD, two QPs', async () => expectPerfTable(await perfLoopback('send_bw', { iters: 200, size: 512, connection_type: 'UD', num_of_qps: 2 }), 1));
  it('write_bw on UC, -a up to 8 KiB', async () => {
    const r = await perfLoopback('write_bw', { iters: 50, all: true, connection_type: 'UC' });
    expectPerfTable(r, 23);
  });
  it('send_lat', async () => expectPerfTable(await perfLoopback('send_lat', { iters: 200 }), 1));
  it('write_lat', async () => expectPerfTable(await perfLoopback('write_lat', { iters: 300, size: 64 }), 1));
  it('read_lat', async () => expectPerfTable(await perfLoopback('read_lat', { iters: 200 }), 1));
});

/** perf server and client in this process over TCP; both outputs. */
async function perfPair(args: string[]): Promise<{ server: { code: number; out: string; err: string }; client: { code: number; out: string; err: string } }> {
  const { BufferIo } = await import('../../examples/common/io.js');
  const { main } = await import('../../examples/perf.js');
  const sio = new BufferIo();
  const cio = new BufferIo();
  let port!: (p: number) => void;
  const portP = new Promise<number>((r) => (port = r));
  const s = main([...args, '-p', '0', '-d', 'rnic0'], { io: sio, onListening: port });
  const c = main([...args, '-p', String(await portP), '-d', 'rnic1', '127.0.0.1'], { io: cio });
  const [sc, cc] = await Promise.all([s, c]);
  return { server: { code: sc, out: sio.stdout, err: sio.stderr }, client: { code: cc, out: cio.stdout, err: cio.stderr } };
}

const rows = (out: string): string[] => out.split('\n').filter((l) => /^ \d+ /.test(l));

describe('perf server/client over TCP on the model', () => {
  it("write_bw: both sides print the client's row", async () => {
    const { server, client } = await perfPair(['write_bw', '-n', '200', '-s', '4096']);
    expect([server.code, client.code, server.err, client.err]).toEqual([0, 0, '', '']);
    expect(server.out).toContain('* Waiting for client to connect... *');
    expect(server.out).not.toContain(' TX depth');
    expect(client.out).toContain(' TX depth        : 128');
    expect(rows(client.out)).toHaveLength(1);
    expect(rows(server.out)).toEqual(rows(client.out));
    // each side's remote address is the other's local one
    const addr = (out: string, side: string): string => (out.split('\n').find((l) => l.startsWith(` ${side} address:`)) as string).replace(/^ \w+ /, '');
    expect(addr(server.out, 'remote')).toBe(addr(client.out, 'local'));
    expect(addr(client.out, 'remote')).toBe(addr(server.out, 'local'));
  });

  it('send_bw on UD with two QPs and -a (sizes up to the MTU)', async () => {
    const { server, client } = await perfPair(['send_bw', '-c', 'UD', '-q', '2', '-a', '-n', '50']);
    expect([server.code, client.code, server.err, client.err]).toEqual([0, 0, '', '']);
    expect(rows(client.out).map((l) => l.trim().split(/\s+/)[0])).toEqual(['2', '4', '8', '16', '32', '64', '128', '256', '512', '1024', '2048', '4096']); // up to the port MTU, 4096
    // send_bw's server prints what it received (perftest's run_iter_bw_server): the same sizes and message counts
    const sizeAndCount = (out: string): string[] => rows(out).map((l) => l.trim().split(/\s+/).slice(0, 2).join(' '));
    expect(sizeAndCount(server.out)).toEqual(sizeAndCount(client.out));
  });

  it('write_lat: both sides measure and print', async () => {
    const { server, client } = await perfPair(['write_lat', '-n', '100']);
    expect([server.code, client.code, server.err, client.err]).toEqual([0, 0, '', '']);
    expect(rows(server.out)).toHaveLength(1);
    expect(rows(client.out)).toHaveLength(1);
  });

  it('read_lat: only the client prints a table', async () => {
    const { server, client } = await perfPair(['read_lat', '-n', '100', '--report_gbits']);
    expect([server.code, client.code, server.err, client.err]).toEqual([0, 0, '', '']);
    expect(rows(server.out)).toHaveLength(0);
    expect(rows(client.out)).toHaveLength(1);
  });

  it('write_bw -b -q 2 and -b -a: both directions, each side prints the sum; the barriers match', async () => {
    const one = await perfPair(['write_bw', '-b', '-q', '2', '-n', '100', '-s', '4096']);
    expect([one.server.code, one.client.code, one.server.err, one.client.err]).toEqual([0, 0, '', '']);
    expect(one.client.out).toContain('RDMA_Write Bidirectional BW Test');
    expect(rows(one.server.out)).toEqual(rows(one.client.out)); // my + yours on one side, yours + mine on the other
    const all = await perfPair(['write_bw', '-b', '-a', '-n', '5', '-t', '4']);
    expect([all.server.code, all.client.code]).toEqual([0, 0]);
    expect(rows(all.client.out)).toHaveLength(23);
  });

  it('atomic_bw and atomic_lat (CMP_AND_SWAP), send_bw with -e --use-srq -I and a post list', async () => {
    for (const args of [
      ['atomic_bw', '-n', '200'],
      ['atomic_lat', '-n', '50', '-A', 'CMP_AND_SWAP'],
      ['send_bw', '-e', '--use-srq', '-q', '2', '-I', '64', '-s', '64', '-n', '100'],
      ['write_bw', '-l', '4', '-t', '16', '-n', '200', '-s', '1024'],
    ]) {
      const r = await perfPair(args);
      expect([args.join(' '), r.server.code, r.client.code, r.server.err, r.client.err]).toEqual([args.join(' '), 0, 0, '', '']);
      expect(rows(r.client.out)).toHaveLength(1);
    }
  });

  it('a client with no server fails cleanly', async () => {
    const { BufferIo } = await import('../../examples/common/io.js');
    const { main } = await import('../../examples/perf.js');
    const { createServer } = await import('node:net');
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const io = new BufferIo();
    expect(await main(['write_bw', '-p', String(port), '127.0.0.1'], { io })).toBe(1);
    expect(io.stderr).toContain(`Couldn't connect to 127.0.0.1:${port}`);
  });
});

describe('perf --loopback failure paths on the model', () => {
  it('bad options from a program are refused as the command line refuses them', async () => {
    const { runLoopback } = await import('../../examples/perf.js');
    await expect(runLoopback({ test: 'send_lat', iters: 2 })).rejects.toMatchObject({
      code: 'PERF_FAILED',
      message: ' Iteration num should be between 5 and 100000000 (got 2)',
    });
    await expect(runLoopback({ test: 'read_bw', connection_type: 'UC' })).rejects.toThrow('RDMA READ runs on RC only (not UC)');
    await expect(runLoopback({ test: 'write_bw', mtu: 1500 })).rejects.toThrow('1500 is not an MTU');
  });

  it('an unknown device is a clean error', async () => {
    const { runLoopback } = await import('../../examples/perf.js');
    await expect(runLoopback({ test: 'write_bw', ib_devname: 'nope' })).rejects.toMatchObject({ code: 'PERF_FAILED', message: ' IB device nope not found' });
  });

  it('a GID index the port does not have fails when the QP addresses are made, resources released', async () => {
    const { runLoopback } = await import('../../examples/perf.js');
    await expect(runLoopback({ test: 'send_lat', gid_index: 7, iters: 5 })).rejects.toThrow(
      /Couldn't read GID 7 of port 1|Failed to modify QP \d+ to RTR \(EINVAL\)/,
    );
    // and the devices are still usable afterwards
    expectPerfTable(await perfLoopback('send_lat', { iters: 50 }), 1);
  });
});

describe('devinfo on the model', () => {
  it('prints every device', async () => {
    const r = await devinfoRun([]);
    expect(r.code).toBe(0);
    expect(r.out.match(/^hca_id:\t/gm)).toHaveLength(2);
    expect(r.out).toContain('\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n');
  });
});
