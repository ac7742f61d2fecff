/**
 * uc_pingpong and ud_pingpong (rdma-core's libibverbs/examples) on the
 * model, server and client over TCP, and what differs from rc_pingpong:
 * flags, defaults, the UD size limit, the output.
 */
import { describe, expect, it } from 'vitest';
import { BufferIo } from '../../examples/common/io.js';
import { parse_args, pingpongMain, usage } from '../../examples/pingpong/core.js';
import { noRdmaDevice } from './device.js';
import { expectAddressesCrossed, expectPingpong, pingpongPair } from './scenarios.js';

describe('pingpong flags per program', () => {
  it("ud_pingpong: 2048-byte default, no -m; uc_pingpong: rc's flags without the ODP/timestamp/DM ones", () => {
    expect(parse_args([], 'UD').size).toBe(2048);
    expect(parse_args([], 'UC').size).toBe(4096);
    expect(() => parse_args(['-m', '1024'], 'UD')).toThrow("invalid option -- 'm'");
    expect(parse_args(['-m', '2048'], 'UC').mtu).toBe(4);
    expect(() => parse_args(['-o'], 'UC')).toThrow("invalid option -- 'o'");
    expect(() => parse_args(['-o'], 'RC')).toThrow('-o is not supported: on-demand paging');
    expect(usage('ud_pingpong', 'UD')).toContain('bytes per message (default 2048)');
    expect(usage('ud_pingpong', 'UD')).not.toContain('--mtu');
    expect(usage('uc_pingpong', 'UC')).not.toContain('--odp');
  });

  it('a usage mistake names the program, exit 2', async () => {
    const io = new BufferIo();
    expect(await pingpongMain('UD', ['-m', '1024'], { io })).toBe(2);
    expect(io.stderr.split('\n')[0]).toBe("ud_pingpong: invalid option -- 'm'");
  });
});

describe.skipIf(noRdmaDevice)('uc_pingpong and ud_pingpong on the model', () => {
  it('uc_pingpong: server and client, with -c', async () => {
    const { server, client } = await pingpongPair('UC', ['-n', '100', '-s', '8192', '-c']);
    expectPingpong(server, 8192, 100);
    expectPingpong(client, 8192, 100);
    expectAddressesCrossed(server, client);
  });

  it('uc_pingpong with -e (completion events)', async () => {
    const { server, client } = await pingpongPair('UC', ['-n', '50', '-e']);
    expectPingpong(server, 4096, 50);
    expectPingpong(client, 4096, 50);
  });

  it('ud_pingpong: server and client, with -c; its own address printed with "PSN ...: GID"', async () => {
    const { server, client } = await pingpongPair('UD', ['-n', '100', '-s', '1024', '-c']);
    expectPingpong(server, 1024, 100);
    expectPingpong(client, 1024, 100);
    expect(server.out.split('\n')[0]).toMatch(/^ {2}local address: {2}LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}: GID [0-9a-f:.]+$/);
    expect(server.out.split('\n')[1]).toMatch(/^ {2}remote address: LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID [0-9a-f:.]+$/);
    expectAddressesCrossed(server, client);
  });

  it('ud_pingpong: a message larger than the port MTU is refused as in C', async () => {
    const io = new BufferIo();
    expect(await pingpongMain('UD', ['-s', '8192', '-d', 'rnic0', '-p', '0'], { io })).toBe(1);
    expect(io.stderr).toMatch(/^Requested size larger than port MTU \(\d+\)\n$/);
  });
});

describe.skipIf(noRdmaDevice)('srq_pingpong on the model', () => {
  async function srqPair(args: string[]) {
    const { main } = await import('../../examples/srq_pingpong.js');
    const sio = new BufferIo();
    const cio = new BufferIo();
    let port!: (p: number) => void;
    const portP = new Promise<number>((r) => (port = r));
    const s = main(['-p', '0', '-d', 'rnic0', ...args], { io: sio, onListening: port });
    const c = main(['-p', String(await portP), '-d', 'rnic1', ...args, '127.0.0.1'], { io: cio });
    const [sc, cc] = await Promise.all([s, c]);
    return { sc, cc, sio, cio };
  }

  it('four QPs on one SRQ: an address line per QP each way, the exchange totals', async () => {
    const { sc, cc, sio, cio } = await srqPair(['-q', '4', '-n', '200', '-s', '2048']);
    expect({ sc, cc, err: sio.stderr + cio.stderr }).toEqual({ sc: 0, cc: 0, err: '' });
    for (const out of [sio.stdout, cio.stdout]) {
      const lines = out.trimEnd().split('\n');
      expect(lines.filter((l) => l.startsWith('  local address:'))).toHaveLength(4);
      expect(lines.filter((l) => l.startsWith('  remote address:'))).toHaveLength(4);
      expect(lines.at(-2)).toMatch(/^819200 bytes in \d+\.\d\d seconds = \d+\.\d\d Mbit\/sec$/);
      expect(lines.at(-1)).toMatch(/^200 iters in \d+\.\d\d seconds/);
    }
    // the QPNs each side printed as remote are the other's local ones, in order
    const qpns = (out: string, side: string): string[] =>
      out
        .split('\n')
        .filter((l) => l.startsWith(`  ${side} address:`))
        .map((l) => /QPN (0x[0-9a-f]+)/.exec(l)![1]!);
    expect(qpns(cio.stdout, 'remote')).toEqual(qpns(sio.stdout, 'local'));
    expect(qpns(sio.stdout, 'remote')).toEqual(qpns(cio.stdout, 'local'));
  });

  it('with -e; and the C checks: -q above 256, rx_depth below -q, -o refused', async () => {
    const { sc, cc } = await srqPair(['-q', '2', '-n', '40', '-e']);
    expect([sc, cc]).toEqual([0, 0]);
    const { main } = await import('../../examples/srq_pingpong.js');
    const io = new BufferIo();
    expect(await main(['-q', '257'], { io })).toBe(2);
    expect(io.stderr.split('\n')[0]).toBe('srq_pingpong: -q: 257 is out of range (1..256)');
    const io2 = new BufferIo();
    expect(await main(['-q', '8', '-r', '4'], { io: io2 })).toBe(1);
    expect(io2.stderr).toBe('rx_depth 4 is too small for 8 QPs -- must have at least one receive per QP.\n');
    const io3 = new BufferIo();
    expect(await main(['-o'], { io: io3 })).toBe(2);
    expect(io3.stderr.split('\n')[0]).toContain('-o is not supported: on-demand paging');
  });
});
