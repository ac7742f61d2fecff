/**
 * rc_pingpong without a device: every flag, every way a flag can be wrong,
 * the exact text of the TCP address exchange and of the address lines (as
 * the C program writes them), a TCP conversation with a peer that behaves
 * like the C program byte for byte, and the QP attributes and masks.
 */
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { BufferIo } from '../../examples/common/io.js';
import { gid_to_wire_gid, pp_mtu_to_enum, wire_gid_to_gid } from '../../examples/pingpong.js';
import {
  PP_MSG_SIZE,
  main,
  parse_args,
  pp_address_line,
  pp_client_exch_dest,
  pp_connect_ctx,
  pp_dest_to_msg,
  pp_msg_to_dest,
  pp_server_exch_dest,
  type pingpong_context,
  type pingpong_dest,
} from '../../examples/rc_pingpong.js';
import {
  IBV_MTU_1024,
  IBV_MTU_2048,
  IBV_MTU_256,
  IBV_MTU_4096,
  IBV_MTU_512,
  IBV_QP_AV,
  IBV_QP_DEST_QPN,
  IBV_QP_MAX_DEST_RD_ATOMIC,
  IBV_QP_MAX_QP_RD_ATOMIC,
  IBV_QP_MIN_RNR_TIMER,
  IBV_QP_PATH_MTU,
  IBV_QP_RETRY_CNT,
  IBV_QP_RNR_RETRY,
  IBV_QP_RQ_PSN,
  IBV_QP_SQ_PSN,
  IBV_QP_STATE,
  IBV_QP_TIMEOUT,
  IBV_QPS_RTR,
  IBV_QPS_RTS,
  newGid,
  type ibv_qp_attr,
} from '../../src/driver/verbs/index.js';
import { noRdmaDevice } from './device.js';

const gidOf = (hex: string): { raw: Uint8Array } => ({ raw: Uint8Array.from(Buffer.from(hex, 'hex')) });

describe('rc_pingpong arguments', () => {
  it('defaults are the C defaults', () => {
    expect(parse_args([])).toEqual({
      servername: null,
      port: 18515,
      ib_devname: null,
      ib_port: 1,
      size: 4096,
      mtu: IBV_MTU_1024,
      rx_depth: 500,
      iters: 1000,
      sl: 0,
      use_event: 0,
      gidx: -1,
      validate_buf: false,
      late_recv_ms: 0,
    });
  });

  it('every supported flag, short and long', () => {
    const short = parse_args([
      '-p',
      '9000',
      '-d',
      'mlx5_0',
      '-i',
      '2',
      '-s',
      '64',
      '-m',
      '2048',
      '-r',
      '16',
      '-n',
      '7',
      '-l',
      '3',
      '-e',
      '-g',
      '1',
      '-c',
      'host-a',
    ]);
    const long = parse_args([
      '--port=9000',
      '--ib-dev=mlx5_0',
      '--ib-port=2',
      '--size=64',
      '--mtu=2048',
      '--rx-depth=16',
      '--iters=7',
      '--sl=3',
      '--events',
      '--gid-idx=1',
      '--chk',
      'host-a',
    ]);
    const want = {
      servername: 'host-a',
      port: 9000,
      ib_devname: 'mlx5_0',
      ib_port: 2,
      size: 64,
      mtu: IBV_MTU_2048,
      rx_depth: 16,
      iters: 7,
      sl: 3,
      use_event: 1,
      gidx: 1,
      validate_buf: true,
      late_recv_ms: 0,
    };
    expect(short).toEqual(want);
    expect(long).toEqual(want);
  });

  it('numbers as strtol reads them (hex, octal), -e counted, clustered flags', () => {
    const o = parse_args(['-p0x4853', '-s', '010', '-ee', '-ceg0']);
    expect(o.port).toBe(0x4853);
    expect(o.size).toBe(8);
    expect(o.use_event).toBe(3);
    expect(o.validate_buf).toBe(true);
    expect(o.gidx).toBe(0);
  });

  it('every MTU rc_pingpong knows', () => {
    expect([256, 512, 1024, 2048, 4096].map((m) => parse_args(['-m', String(m)]).mtu)).toEqual([
      IBV_MTU_256,
      IBV_MTU_512,
      IBV_MTU_1024,
      IBV_MTU_2048,
      IBV_MTU_4096,
    ]);
    expect(pp_mtu_to_enum(1500)).toBe(-1);
  });

  async function usageError(argv: string[]): Promise<string> {
    const io = new BufferIo();
    const code = await main(argv, { io });
    expect(code).toBe(2);
    expect(io.stdout).toBe('');
    expect(io.stderr).toContain('Usage:');
    return io.stderr.split('\n')[0] as string;
  }

  it.each([
    [['-p', '70000'], 'rc_pingpong: -p: 70000 is out of range (0..65535)'],
    [['--port=abc'], "rc_pingpong: --port: 'abc' is not a number"],
    [['-m', '1500'], 'rc_pingpong: -m: 1500 is not an MTU (256, 512, 1024, 2048 or 4096)'],
    [['-i', '0'], 'rc_pingpong: -i: 0 is out of range (1..255)'],
    [['-l', '16'], 'rc_pingpong: -l: 16 is out of range (0..15)'],
    [['-n', '0'], 'rc_pingpong: -n: 0 is out of range (1..4294967295)'],
    [['-r', '0'], 'rc_pingpong: -r: 0 is out of range (1..2147483646)'],
    [['-s', '-1'], 'rc_pingpong: -s: -1 is out of range (0..2147483647)'],
    [['-s', '12abc'], "rc_pingpong: -s: '12abc' is not a number"],
    [['-g', '-2'], 'rc_pingpong: -g: -2 is out of range (-1..255)'],
    [['-d', ''], 'rc_pingpong: -d: the device name is empty'],
    [['-z'], "rc_pingpong: invalid option -- 'z'"],
    [['--bogus'], "rc_pingpong: unrecognized option '--bogus'"],
    [['-p'], "rc_pingpong: option requires an argument -- 'p'"],
    [['--events=1'], "rc_pingpong: option '--events' doesn't allow an argument"],
    [['a', 'b'], 'rc_pingpong: one server name at most (got a b)'],
  ])('%j → exit 2: %s', async (argv, first) => {
    expect(await usageError(argv)).toBe(first);
  });

  it.each([
    ['-o', 'on-demand paging'],
    ['--odp', 'on-demand paging'],
    ['-O', 'implicit on-demand paging'],
    ['-P', 'ibv_advise_mr'],
    ['-t', 'ibv_create_cq_ex'],
    ['--ts', 'ibv_create_cq_ex'],
    ['-j', 'ibv_alloc_dm'],
    ['-N', 'ibv_create_qp_ex'],
    ['--new_send', 'ibv_create_qp_ex'],
  ])('%s is refused with its reason', async (flag, reason) => {
    const first = await usageError([flag]);
    expect(first).toContain(`${flag} is not supported: `);
    expect(first).toContain(reason);
  });

  it('the usage text names every flag of the C program', async () => {
    const io = new BufferIo();
    await main(['--nope'], { io, argv0: 'rnic rc-pingpong' });
    for (const f of [
      '-p, --port',
      '-d, --ib-dev',
      '-i, --ib-port',
      '-s, --size',
      '-m, --mtu',
      '-r, --rx-depth',
      '-n, --iters',
      '-l, --sl',
      '-e, --events',
      '-g, --gid-idx',
      '-c, --chk',
      '-o, --odp',
      '-t, --ts',
      '-j, --dm',
      '-N, --new_send',
    ]) {
      expect(io.stderr).toContain(f);
    }
    expect(io.stderr).toContain('  rnic rc-pingpong <host>     connect to server at <host>');
  });

  it.skipIf(!noRdmaDevice)('with no device it fails cleanly: "no RDMA devices found", exit 1', async () => {
    const io = new BufferIo();
    expect(await main(['-n', '5'], { io })).toBe(1);
    expect(io.stderr).toBe('no RDMA devices found\n');
    expect(io.stdout).toBe('');
  });
});

describe('rc_pingpong text formats (as the C program writes them)', () => {
  const gid = gidOf('fe800000000000000202c9fffe0a1b2c');
  const dest: pingpong_dest = { lid: 0, qpn: 0x11, psn: 0xabcdef, gid };

  it('wire GID: the 16 bytes in order as 32 hex digits, and back', () => {
    expect(gid_to_wire_gid(gid)).toBe('fe800000000000000202c9fffe0a1b2c');
    expect(gid_to_wire_gid(gidOf('00000000000000000000ffff0a000001'))).toBe('00000000000000000000ffff0a000001');
    const back = newGid();
    expect(wire_gid_to_gid('FE800000000000000202C9FFFE0A1B2C', back)).toBe(true);
    expect(Buffer.from(back.raw).toString('hex')).toBe('fe800000000000000202c9fffe0a1b2c');
    expect(wire_gid_to_gid('fe80', back)).toBe(false);
    expect(wire_gid_to_gid('zz800000000000000202c9fffe0a1b2c', back)).toBe(false);
  });

  it('the exchanged message: "%04x:%06x:%06x:%s" and its NUL, 52 bytes', () => {
    const msg = pp_dest_to_msg(dest);
    expect(msg.length).toBe(PP_MSG_SIZE);
    expect(msg.toString('latin1')).toBe('0000:000011:abcdef:fe800000000000000202c9fffe0a1b2c\0');
    const ib = pp_dest_to_msg({ lid: 0x1a, qpn: 0x402, psn: 0x3f2c1b, gid: newGid() });
    expect(ib.toString('latin1')).toBe('001a:000402:3f2c1b:00000000000000000000000000000000\0');
  });

  it('reads what the C program sends (sscanf "%x:%x:%x:%s"), ignoring what follows the NUL', () => {
    const c = Buffer.from('0003:00f00d:0a0b0c:00000000000000000000ffffc0a80a02\0', 'latin1');
    expect(c.length).toBe(PP_MSG_SIZE);
    const d = pp_msg_to_dest(c) as pingpong_dest;
    expect({ lid: d.lid, qpn: d.qpn, psn: d.psn }).toEqual({ lid: 3, qpn: 0xf00d, psn: 0x0a0b0c });
    expect(Buffer.from(d.gid.raw).toString('hex')).toBe('00000000000000000000ffffc0a80a02');
    const round = pp_msg_to_dest(pp_dest_to_msg(dest)) as pingpong_dest;
    expect(round.lid).toBe(0);
    expect(round.qpn).toBe(0x11);
    expect(round.psn).toBe(0xabcdef);
    expect(Buffer.from(round.gid.raw).toString('hex')).toBe('fe800000000000000202c9fffe0a1b2c');
    expect(pp_msg_to_dest(Buffer.from('done\0', 'latin1'))).toBeNull();
    expect(pp_msg_to_dest(Buffer.from('0000:000011:abcdef:fe80\0', 'latin1'))).toBeNull();
  });

  it('the address lines, GID as inet_ntop prints it', () => {
    expect(pp_address_line('local', dest)).toBe('  local address:  LID 0x0000, QPN 0x000011, PSN 0xabcdef, GID fe80::202:c9ff:fe0a:1b2c\n');
    expect(pp_address_line('remote', { lid: 0x1a, qpn: 0x402, psn: 0x3f2c1b, gid: newGid() })).toBe(
      '  remote address: LID 0x001a, QPN 0x000402, PSN 0x3f2c1b, GID ::\n',
    );
    expect(pp_address_line('remote', { lid: 0, qpn: 0x1234, psn: 1, gid: gidOf('00000000000000000000ffffc0a80a02') })).toBe(
      '  remote address: LID 0x0000, QPN 0x001234, PSN 0x000001, GID ::ffff:192.168.10.2\n',
    );
  });
});

/** A context whose QP records the ibv_modify_qp calls (attributes copied at call time). */
function recordingContext(): { ctx: pingpong_context; calls: Array<{ attr: ibv_qp_attr; mask: number }> } {
  const calls: Array<{ attr: ibv_qp_attr; mask: number }> = [];
  const context = {
    ops: {
      modify_qp: (_qp: unknown, attr: ibv_qp_attr, mask: number) => {
        calls.push({ attr: structuredClone(attr), mask });
        return 0;
      },
    },
  };
  const ctx = { qp: { context } } as unknown as pingpong_context;
  return { ctx, calls };
}

describe('rc_pingpong QP setup (pp_connect_ctx)', () => {
  it('RTR then RTS with the C attributes and masks; a GRH when the remote GID has an interface id', () => {
    const { ctx, calls } = recordingContext();
    const remote: pingpong_dest = { lid: 7, qpn: 0x123, psn: 0x456, gid: gidOf('fe800000000000000202c9fffe0a1b2c') };
    expect(pp_connect_ctx(ctx, 1, 0x789, IBV_MTU_2048, 3, remote, 2, new BufferIo())).toBe(0);
    expect(calls).toHaveLength(2);
    const [rtr, rts] = calls as [{ attr: ibv_qp_attr; mask: number }, { attr: ibv_qp_attr; mask: number }];
    expect(rtr.mask).toBe(IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    expect(rtr.attr).toMatchObject({
      qp_state: IBV_QPS_RTR,
      path_mtu: IBV_MTU_2048,
      dest_qp_num: 0x123,
      rq_psn: 0x456,
      max_dest_rd_atomic: 1,
      min_rnr_timer: 12,
    });
    expect(rtr.attr.ah_attr).toMatchObject({ is_global: 1, dlid: 7, sl: 3, src_path_bits: 0, port_num: 1 });
    expect(rtr.attr.ah_attr.grh).toMatchObject({ hop_limit: 1, sgid_index: 2 });
    expect(Buffer.from(rtr.attr.ah_attr.grh.dgid.raw).toString('hex')).toBe('fe800000000000000202c9fffe0a1b2c');
    expect(rts.mask).toBe(IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
    expect(rts.attr).toMatchObject({ qp_state: IBV_QPS_RTS, timeout: 14, retry_cnt: 7, rnr_retry: 7, sq_psn: 0x789, max_rd_atomic: 1 });
  });

  it('no GRH when the remote GID is zero (InfiniBand without -g)', () => {
    const { ctx, calls } = recordingContext();
    pp_connect_ctx(ctx, 1, 1, IBV_MTU_1024, 0, { lid: 9, qpn: 1, psn: 2, gid: newGid() }, -1, new BufferIo());
    expect(calls[0]?.attr.ah_attr.is_global).toBe(0);
    expect(calls[0]?.attr.ah_attr.dlid).toBe(9);
  });
});

/** Reads exactly n bytes from a socket. */
function readN(s: Socket, n: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let got = Buffer.alloc(0);
    const onData = (d: Buffer): void => {
      got = Buffer.concat([got, d]);
      if (got.length >= n) {
        s.off('data', onData);
        resolve(got.subarray(0, n));
      }
    };
    s.on('data', onData);
    s.once('error', reject);
  });
}

describe('rc_pingpong TCP exchange against a peer that talks like the C program', () => {
  const mine: pingpong_dest = { lid: 0, qpn: 0x11, psn: 0xabcdef, gid: gidOf('fe800000000000000202c9fffe0a1b2c') };

  it('client: sends its 52 bytes, reads the server\'s 52, answers "done" and its NUL', async () => {
    const seen: Buffer[] = [];
    let peerDone!: () => void;
    const peerFinished = new Promise<void>((r) => (peerDone = r));
    const server = createServer((s) => {
      void (async () => {
        seen.push(await readN(s, PP_MSG_SIZE));
        s.write(Buffer.from('0005:000abc:123456:00000000000000000000ffff0a000002\0', 'latin1'));
        seen.push(await readN(s, 5));
        s.end();
        peerDone();
      })();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const rem = await pp_client_exch_dest('127.0.0.1', port, mine, new BufferIo());
    await peerFinished;
    server.close();
    expect(seen[0]?.toString('latin1')).toBe('0000:000011:abcdef:fe800000000000000202c9fffe0a1b2c\0');
    expect(seen[1]?.toString('latin1')).toBe('done\0');
    expect(rem).not.toBeNull();
    expect({ lid: rem?.lid, qpn: rem?.qpn, psn: rem?.psn }).toEqual({ lid: 5, qpn: 0xabc, psn: 0x123456 });
  });

  it('client: a refused connection is "Couldn\'t connect to host:port", not a crash', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const io = new BufferIo();
    expect(await pp_client_exch_dest('127.0.0.1', port, mine, io)).toBeNull();
    expect(io.stderr).toContain(`Couldn't connect to 127.0.0.1:${port}`);
  });

  it('server: reads the client\'s address, connects its QP to it, then answers, then waits for "done"', async () => {
    const { ctx, calls } = recordingContext();
    let listening!: (p: number) => void;
    const portP = new Promise<number>((r) => (listening = r));
    const remP = pp_server_exch_dest(ctx, 1, IBV_MTU_1024, 0, 0, mine, 0, new BufferIo(), listening);
    const s = connect(await portP, '127.0.0.1');
    s.write(Buffer.from('0000:0000a1:00b2c3:00000000000000000000ffff0a000002\0', 'latin1'));
    const reply = await readN(s, PP_MSG_SIZE);
    // The C server moves its QP to RTR/RTS before it answers.
    expect(calls.map((c) => c.attr.qp_state)).toEqual([IBV_QPS_RTR, IBV_QPS_RTS]);
    expect(calls[0]?.attr.dest_qp_num).toBe(0xa1);
    expect(calls[0]?.attr.rq_psn).toBe(0xb2c3);
    expect(reply.toString('latin1')).toBe('0000:000011:abcdef:fe800000000000000202c9fffe0a1b2c\0');
    s.write(Buffer.from('done\0', 'latin1'));
    const rem = await remP;
    s.destroy();
    expect(rem?.qpn).toBe(0xa1);
  });

  it('server: a client that hangs up early is reported, not a crash', async () => {
    const { ctx } = recordingContext();
    let listening!: (p: number) => void;
    const portP = new Promise<number>((r) => (listening = r));
    const io = new BufferIo();
    const remP = pp_server_exch_dest(ctx, 1, IBV_MTU_1024, 0, 0, mine, 0, io, listening);
    const s = connect(await portP, '127.0.0.1');
    s.end(Buffer.from('0000:00', 'latin1'));
    expect(await remP).toBeNull();
    expect(io.stderr).toContain("7/52: Couldn't read remote address");
  });
});
