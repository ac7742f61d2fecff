/**
 * xsrq_pingpong (rdma-core's libibverbs/examples/xsrq_pingpong.c) on the
 * model: a server and a client over TCP, each with an XRC domain, an XRC
 * SRQ and a send / receive QP pair; the C program's address exchange
 * (66-byte messages, "END" termination) and output lines; the flags.
 */
import { describe, expect, it } from 'vitest';
import { BufferIo } from '../../examples/common/io.js';
import { main, parse_xsrq_args, xsrq_dest_to_msg, xsrq_msg_to_dest, XSRQ_MSG_SIZE } from '../../examples/xsrq_pingpong.js';
import { newGid } from '../../src/driver/verbs/index.js';
import { noRdmaDevice } from './device.js';

async function xsrqPair(args: string[]) {
  const sio = new BufferIo();
  const cio = new BufferIo();
  let port!: (p: number) => void;
  const portP = new Promise<number>((r) => (port = r));
  const s = main(['-p', '0', '-d', 'rnic0', ...args], { io: sio, onListening: port });
  const c = main(['-p', String(await portP), '-d', 'rnic1', ...args, '127.0.0.1'], { io: cio });
  const [sc, cc] = await Promise.all([s, c]);
  return { sc, cc, sio, cio };
}

const ADDR = /^ {2,3}(local|remote): LID ([0-9a-f]{4}), QPN RECV ([0-9a-f]{6}) SEND ([0-9a-f]{6}), PSN ([0-9a-f]{6}), SRQN ([0-9a-f]{6}), GID (\S+)$/;

describe('xsrq_pingpong: the exchange format and the flags', () => {
  it('the 66-byte address message: C sprintf("%04x:%06x:%06x:%06x:%06x:%32s") and its NUL, read back', () => {
    const gid = newGid();
    gid.raw.set([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1]);
    const msg = xsrq_dest_to_msg({ lid: 0x12, recv_qpn: 0x11, send_qpn: 0x12, psn: 0xabcdef, srqn: 3, gid });
    expect(msg.length).toBe(XSRQ_MSG_SIZE);
    expect(msg.toString('latin1')).toBe('0012:000011:000012:abcdef:000003:00000000000000000000ffffc0000201\0');
    expect(xsrq_msg_to_dest(msg)).toEqual({ lid: 0x12, recv_qpn: 0x11, send_qpn: 0x12, psn: 0xabcdef, srqn: 3, gid });
    expect(xsrq_msg_to_dest(Buffer.from('garbage'))).toBeNull();
  });

  it('defaults and flags as the C getopt has them; a client is one client; -o refused; a usage mistake exits 2', async () => {
    const d = parse_xsrq_args([]);
    expect([d.port, d.size, d.num_clients, d.num_tests, d.mtu, d.servername]).toEqual([18515, 4096, 1, 5, 3, null]);
    const c = parse_xsrq_args(['-c', '3', '-n', '7', '-s', '64', '-m', '2048', '-e', 'host']);
    expect([c.num_clients, c.num_tests, c.size, c.mtu, c.use_event, c.servername]).toEqual([1, 7, 64, 4, true, 'host']);
    expect(parse_xsrq_args(['-c', '3']).num_clients).toBe(3);
    expect(() => parse_xsrq_args(['-o'])).toThrow('-o is not supported');
    expect(() => parse_xsrq_args(['-m', '1000'])).toThrow('is not an MTU');
    const io = new BufferIo();
    expect(await main(['-q'], { io })).toBe(2);
    expect(io.stderr.split('\n')[0]).toBe("xsrq_pingpong: invalid option -- 'q'");
  });
});

describe.skipIf(noRdmaDevice)('xsrq_pingpong on the model', () => {
  for (const extra of [[], ['-e']]) {
    it(`server and client${extra.length ? ' with -e' : ''}: addresses crossed, "success" on both`, async () => {
      const { sc, cc, sio, cio } = await xsrqPair(['-n', '20', '-s', '3000', ...extra]);
      expect({ sc, cc, err: sio.stderr + cio.stderr }).toEqual({ sc: 0, cc: 0, err: '' });
      const lines = (out: string) => out.trimEnd().split('\n');
      const parse = (out: string) =>
        Object.fromEntries(
          lines(out)
            .filter((l) => ADDR.test(l))
            .map((l) => {
              const m = ADDR.exec(l)!;
              return [m[1], m.slice(2)];
            }),
        );
      const s = parse(sio.stdout);
      const c = parse(cio.stdout);
      // The client speaks first: its local line, then the server's remote/local, then the client's remote.
      expect(lines(cio.stdout)[0]).toMatch(/^ {3}local:/);
      expect(lines(sio.stdout)[0]).toMatch(/^ {2}remote:/);
      expect(s['remote']).toEqual(c['local']);
      expect(c['remote']).toEqual(s['local']);
      for (const out of [sio.stdout, cio.stdout]) expect(lines(out).at(-1)).toBe('success');
    });
  }
});
