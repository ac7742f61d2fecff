/**
 * perf without a device: arguments (every flag, every mistake), the report
 * arithmetic on hand-made timestamps, and the printed text against
 * hand-written expectations and against lines printed by the real perftest.
 */
import { describe, expect, it } from 'vitest';
import { BufferIo } from '../../examples/common/io.js';
import {
  KEY_MSG_SIZE_GID,
  RESULT_LINE,
  bwHeader,
  bwRow,
  bwAverageReport,
  computeBwReport,
  computeLatReport,
  defaultParams,
  latHeader,
  latRow,
  main,
  parsePerfArgs,
  perfDestToMsg,
  perfMsgToDest,
  pingpongDataText,
  testInfoText,
  type PerfDest,
  type TestInfo,
} from '../../examples/perf.js';
import { IBV_LINK_LAYER_ETHERNET, IBV_LINK_LAYER_INFINIBAND, IBV_TRANSPORT_IB } from '../../src/driver/verbs/index.js';
import { noRdmaDevice } from './device.js';

/** Tabs to spaces at 8-column stops, as a terminal shows them (and as perftest output is usually pasted). */
function expandTabs(s: string): string {
  let out = '';
  for (const ch of s) {
    if (ch === '\t') out += ' '.repeat(8 - (out.length % 8));
    else out += ch;
  }
  return out;
}

const gidOf = (hex: string): { raw: Uint8Array } => ({ raw: Uint8Array.from(Buffer.from(hex, 'hex')) });

describe('perf arguments', () => {
  it("perftest's defaults per test", () => {
    expect(parsePerfArgs(['write_bw'])).toMatchObject({
      verb: 'WRITE',
      tst: 'BW',
      size: 65536,
      iters: 5000,
      tx_depth: 128,
      cq_mod: 100,
      port: 18515,
      gid_index: -1,
      connection_type: 'RC',
      num_of_qps: 1,
      report_gbits: false,
      mtu: 0,
    });
    expect(parsePerfArgs(['read_bw'])).toMatchObject({ verb: 'READ', tst: 'BW', size: 65536, iters: 1000, tx_depth: 128 });
    expect(parsePerfArgs(['send_bw'])).toMatchObject({ verb: 'SEND', tst: 'BW', size: 65536, iters: 1000, rx_depth: 512 });
    expect(parsePerfArgs(['write_lat'])).toMatchObject({ verb: 'WRITE', tst: 'LAT', size: 2, iters: 1000, tx_depth: 1, cq_mod: 1 });
    expect(parsePerfArgs(['read_lat'])).toMatchObject({ verb: 'READ', tst: 'LAT', size: 2 });
    expect(parsePerfArgs(['send_lat'])).toMatchObject({ verb: 'SEND', tst: 'LAT', size: 2, rx_depth: 512 });
    expect(defaultParams('write_bw').servername).toBeNull();
  });

  it('every flag, short and long', () => {
    const short = parsePerfArgs([
      'send_bw',
      '-a',
      '-c',
      'UD',
      '-d',
      'mlx5_0',
      '-F',
      '-i',
      '2',
      '-m',
      '2048',
      '-n',
      '100',
      '-N',
      '-p',
      '9999',
      '-q',
      '4',
      '-Q',
      '10',
      '-r',
      '64',
      '-s',
      '1024',
      '-t',
      '64',
      '-x',
      '3',
      '--report_gbits',
      'host-b',
    ]);
    const long = parsePerfArgs([
      'send_bw',
      '--all',
      '--connection=UD',
      '--ib-dev=mlx5_0',
      '--CPU-freq',
      '--ib-port=2',
      '--mtu=2048',
      '--iters=100',
      '--noPeak',
      '--port=9999',
      '--qp=4',
      '--cq-mod=10',
      '--rx-depth=64',
      '--size=1024',
      '--tx-depth=64',
      '--gid-index=3',
      '--report_gbits',
      'host-b',
    ]);
    const want = {
      all: true,
      connection_type: 'UD',
      ib_devname: 'mlx5_0',
      cpu_freq_f: true,
      ib_port: 2,
      mtu: 2048,
      iters: 100,
      noPeak: true,
      port: 9999,
      num_of_qps: 4,
      cq_mod: 10,
      rx_depth: 64,
      size: 1024,
      tx_depth: 64,
      gid_index: 3,
      report_gbits: true,
      servername: 'host-b',
      loopback: false,
    };
    expect(short).toMatchObject(want);
    expect(long).toMatchObject(want);
    expect(parsePerfArgs(['write_bw', '--loopback', '--peer-ib-dev', 'rxe1'])).toMatchObject({ loopback: true, peer_devname: 'rxe1' });
  });

  it('the flags of issue 12: -b -D -e -I -l -A -o --use-srq --run_infinitely, and the atomic tests', () => {
    expect(parsePerfArgs(['atomic_bw'])).toMatchObject({ verb: 'ATOMIC', tst: 'BW', size: 8, atomicType: 'FETCH_AND_ADD' });
    expect(parsePerfArgs(['atomic_lat', '-A', 'CMP_AND_SWAP', '-o', '4'])).toMatchObject({
      verb: 'ATOMIC',
      tst: 'LAT',
      size: 8,
      atomicType: 'CMP_AND_SWAP',
      out_reads: 4,
    });
    const p = parsePerfArgs(['send_bw', '-b', '-e', '-I', '64', '-l', '4', '--use-srq', '-n', '100']);
    expect(p).toMatchObject({ duplex: true, use_event: true, inline_size: 64, post_list: 4, use_srq: true, cq_mod: 4 });
    expect(parsePerfArgs(['write_bw', '-D', '7'])).toMatchObject({ duration: 7, noPeak: true });
    // --run_infinitely prints a row every 5 s unless -D says otherwise
    expect(parsePerfArgs(['write_bw', '--run_infinitely'])).toMatchObject({ run_infinitely: true, duration: 5 });
    expect(parsePerfArgs(['write_bw', '--run_infinitely', '-D', '2'])).toMatchObject({ run_infinitely: true, duration: 2 });
  });

  it("perftest's adjustments: cq_mod ≤ tx_depth, no peak above 20000 messages", () => {
    expect(parsePerfArgs(['write_bw', '-t', '10']).cq_mod).toBe(10);
    expect(parsePerfArgs(['write_bw', '-n', '20000']).noPeak).toBe(false);
    expect(parsePerfArgs(['write_bw', '-n', '20001']).noPeak).toBe(true);
    expect(parsePerfArgs(['write_bw', '-n', '10000', '-q', '3']).noPeak).toBe(true);
  });

  async function usageError(argv: string[]): Promise<string> {
    const io = new BufferIo();
    expect(await main(argv, { io })).toBe(2);
    expect(io.stdout).toBe('');
    expect(io.stderr).toContain('Usage:');
    return io.stderr.split('\n')[0] as string;
  }

  it.each([
    [[], 'perf: which test? (one of write_bw, write_lat, read_bw, read_lat, send_bw, send_lat, atomic_bw, atomic_lat)'],
    [['write_bandwidth'], "perf: unknown test 'write_bandwidth' (one of write_bw, write_lat, read_bw, read_lat, send_bw, send_lat, atomic_bw, atomic_lat)"],
    [['write_bw', '-n', '4'], "perf: -n: Iteration num should be between 5 and 100000000 (got '4')"],
    [['write_bw', '-n', 'many'], "perf: -n: Iteration num should be between 5 and 100000000 (got 'many')"],
    [['write_bw', '-s', '0'], "perf: -s: Message size should be between 1 and 1073741824 (got '0')"],
    [['write_bw', '-t', '0'], "perf: -t: Tx depth should be between 1 and 15000 (got '0')"],
    [['write_bw', '-q', '0'], "perf: -q: num of qps should be between 1 and 16384 (got '0')"],
    [['write_bw', '-Q', '2000'], "perf: -Q: CQ moderation should be between 1 and 1024 (got '2000')"],
    [['write_bw', '-x', '65'], "perf: -x: GID index should be between 0 and 64 (got '65')"],
    [['write_bw', '-i', '0'], "perf: -i: IB port should be between 1 and 255 (got '0')"],
    [['write_bw', '-p', '65536'], "perf: -p: Port should be between 0 and 65535 (got '65536')"],
    [['write_bw', '-m', '1500'], 'perf: -m: 1500 is not an MTU (256, 512, 1024, 2048 or 4096)'],
    [['write_bw', '-m', '9000'], "perf: -m: MTU should be between 256 and 4096 (got '9000')"],
    [['send_bw', '-c', 'XRC'], "perf: -c: invalid connection type 'XRC' (RC, UC or UD; XRC is not supported)"],
    [['send_bw', '-c', 'rc'], "perf: -c: invalid connection type 'rc' (RC, UC or UD)"],
    [['read_bw', '-c', 'UC'], 'perf: RDMA READ runs on RC only (not UC)'],
    [['write_lat', '-c', 'UD'], 'perf: RDMA WRITE does not run on UD'],
    [['send_lat', '-q', '2'], 'perf: -q (several QPs) is for the bandwidth tests'],
    [['write_bw', '--loopback', 'host'], 'perf: --loopback runs both sides here: give no server name'],
    [['write_bw', '--peer-ib-dev', 'x'], 'perf: --peer-ib-dev is for --loopback'],
    [['write_bw', 'a', 'b'], 'perf: one server name at most (got a b)'],
    [['write_bw', '-D', '0'], "perf: -D: Duration should be between 1 and 1000000 (got '0')"],
    [['write_lat', '-b'], 'perf: Bidirectional is only available in BW test'],
    [['write_bw', '-D', '5', '-a'], "perf: Duration mode currently doesn't support running on all sizes."],
    [['send_bw', '-D', '5', '-e'], "perf: Duration mode doesn't work with events."],
    [['read_lat', '--run_infinitely'], 'perf: run_infinitely exists only in BW tests for now.'],
    [['send_bw', '-b', '--run_infinitely'], 'perf: run_infinitely mode is not supported in SEND Bidirectional BW test'],
    [['read_bw', '-I', '64'], 'perf: Inline feature not available on READ/Atomic verbs'],
    [['atomic_bw', '-I', '8'], 'perf: Inline feature not available on READ/Atomic verbs'],
    [['write_bw', '-o', '4'], 'perf: Setting Outstanding reads only available on READ verb'],
    [['write_bw', '--use-srq'], 'perf: Using SRQ only avavilible in SEND tests.'],
    [['send_bw', '--use-srq', '-q', '4', '-r', '2'], 'perf: Using SRQ depth should be greater than number of QPs.'],
    [['write_lat', '-e'], 'perf: Events feature not available on WRITE verb'],
    [['send_lat', '-l', '4'], 'perf: Post list is supported in BW tests only'],
    [['write_bw', '-l', '3', '-n', '100'], 'perf: Number of iterations must be a multiple of post list size'],
    [['atomic_bw', '-s', '16'], 'perf: Message size cannot be changed for Atomic tests'],
    [['atomic_lat', '-A', 'ADD'], "perf: -A: Invalid Atomic type! please choose from {CMP_AND_SWAP,FETCH_AND_ADD} (got 'ADD')"],
    [['atomic_bw', '-c', 'UC'], 'perf: atomic operations run on RC only (not UC)'],
    [
      ['write_bw', '-z'],
      'perf: -z: the RDMA CM is not available with the model\'s devices (no rdma_cm); the exchange runs over TCP ("Data ex. method : Ethernet")',
    ],
    [['write_bw', '--report-gbits'], "perf: unrecognized option '--report-gbits'"],
  ])('%j → exit 2: %s', async (argv, first) => {
    expect(await usageError(argv)).toBe(first);
  });

  it('--help prints the usage with every common perftest flag, exit 0', async () => {
    const io = new BufferIo();
    expect(await main(['--help'], { io, argv0: 'rnic perf' })).toBe(0);
    for (const f of [
      '-a, --all',
      '-c, --connection',
      '-d, --ib-dev',
      '-F, --CPU-freq',
      '-i, --ib-port',
      '-m, --mtu',
      '-n, --iters',
      '-p, --port',
      '-q, --qp',
      '-s, --size',
      '-t, --tx-depth',
      '-x, --gid-index',
      '--report_gbits',
      '--loopback',
    ]) {
      expect(io.stdout).toContain(f);
    }
    expect(io.stdout).toContain('rnic perf <test> --loopback');
  });

  it.skipIf(!noRdmaDevice)('with no device: "no RDMA devices found", exit 1 (server, client and loopback)', async () => {
    for (const argv of [['write_bw'], ['read_lat', 'somehost'], ['send_bw', '--loopback']]) {
      const io = new BufferIo();
      expect(await main(argv, { io })).toBe(1);
      expect(io.stderr).toBe('no RDMA devices found\n');
    }
  });
});

describe('perf report arithmetic', () => {
  // Times in nanoseconds. Four messages, a CQE every two (cq_mod 2).
  const tposted = [0, 10, 20, 30];
  const tcompleted = [60, 60, 200, 200];

  it('BW: average over the whole run, peak over the best window, message rate', () => {
    const r = computeBwReport({ size: 1000, cq_mod: 2, noPeak: false, report_gbits: false }, tposted, tcompleted, 1e9);
    expect(r.size).toBe(1000);
    expect(r.iters).toBe(4);
    // 4000 bytes in 200 ns = 2e10 B/s = 19073.486328125 MiB/s
    expect(r.bw_avg).toBeCloseTo(19073.486328125, 9);
    // the best window: messages 0..1 posted at 0, completed at 60 → 30 ns a message
    expect(r.bw_peak).toBeCloseTo(1000 / 30e-9 / 1048576, 6);
    expect(r.msgRate_avg).toBeCloseTo(20, 12); // 4 messages in 200 ns
  });

  it('BW in Gb/sec, no peak with -N, the last CQE counted when n is not a multiple of cq_mod', () => {
    const g = computeBwReport({ size: 1000, cq_mod: 2, noPeak: true, report_gbits: true }, tposted, tcompleted, 1e9);
    expect(g.bw_avg).toBeCloseTo(160, 9); // 4000 bytes × 8 bits / 200 ns
    expect(g.bw_peak).toBe(0);
    // Without a peak only the first post and the last completion count (what runBwClient keeps then).
    expect(bwAverageReport({ size: 1000, report_gbits: true }, 4, 0, 200, 1e9)).toEqual(g);
    // Five messages, CQEs after messages 1, 3 and (the last, signaled) 4.
    const odd = computeBwReport({ size: 1, cq_mod: 2, noPeak: false, report_gbits: true }, [0, 1, 2, 3, 4], [20, 20, 40, 40, 41], 1e9);
    // windows at cq_mod boundaries are 10 ns a message at best; the window to the last CQE is 41 ns / 5
    expect(odd.bw_peak).toBeCloseTo(8 / 8.2, 9);
  });

  it('latency: half round trips, two slowest dropped, median, mean, stdev, percentiles', () => {
    // Iteration start times → round trips 1000, 3000, 2000, 5000, 4000, 100000 ns.
    const t = [0, 1000, 4000, 6000, 11000, 15000, 115000];
    const w = computeLatReport({ size: 2, verb: 'WRITE' }, t, 1e9);
    // sorted: 1000 2000 3000 4000 | 5000 100000 (the last two dropped); µs, halved
    expect(w).toEqual({
      size: 2,
      iters: 7,
      t_min: 0.5,
      t_max: 2.5,
      t_typical: 1.25,
      t_avg: 1.25,
      t_stdev: Math.sqrt(0.3125),
      t_99: 2.5,
      t_99_9: 2.5,
    });
    const r = computeLatReport({ size: 2, verb: 'READ' }, t, 1e9);
    expect([r.t_min, r.t_typical, r.t_max]).toEqual([1, 2.5, 5]); // READ: the whole round trip
    // an odd count: the median is the middle one
    const odd = computeLatReport({ size: 8, verb: 'SEND' }, [0, 2000, 6000, 12000, 20000, 30000], 1e9);
    expect(odd.t_typical).toBe(2); // kept 2000 4000 6000 → 4000 / 2
  });
});

describe('perf text (perftest formats)', () => {
  it('BW header and row, MB/sec: a line as perftest printed it', () => {
    expect(bwHeader(false)).toBe(' #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n');
    expect(bwRow({ size: 65536, iters: 5000, bw_peak: 43834.02, bw_avg: 6789.66, msgRate_avg: 0.108635 }, false)).toBe(
      ' 65536      5000             43834.02            6789.66\t\t   0.108635\n',
    );
  });

  it('BW header and row, Gb/sec: as it shows on a terminal', () => {
    expect(bwHeader(true)).toBe(' #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n');
    expect(expandTabs(bwRow({ size: 65536, iters: 5000, bw_peak: 92.99, bw_avg: 92.51, msgRate_avg: 0.176478 }, true))).toBe(
      ' 65536      5000             92.99              92.51              0.176478\n',
    );
    expect(expandTabs(bwRow({ size: 8192, iters: 5000, bw_peak: 26.46, bw_avg: 25.56, msgRate_avg: 0.389942 }, true))).toBe(
      ' 8192       5000             26.46              25.56              0.389942\n',
    );
  });

  it('BW row below 0.1 Gb/sec gets six decimals (REPORT_FMT_EXT)', () => {
    expect(bwRow({ size: 2, iters: 1000, bw_peak: 0.00356, bw_avg: 0.00115, msgRate_avg: 0.071884 }, true)).toBe(
      ' 2          1000           0.003560            0.001150            0.071884\n',
    );
    // …but not in MB/sec
    expect(bwRow({ size: 2, iters: 1000, bw_peak: 0.00356, bw_avg: 0.00115, msgRate_avg: 0.071884 }, false)).toBe(
      ' 2          1000             0.00               0.00   \t\t   0.071884\n',
    );
  });

  it('latency header and row, tabs and all', () => {
    expect(latHeader()).toBe(
      ' #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n',
    );
    const row = { size: 2, iters: 1000, t_min: 1.42, t_max: 1.93, t_typical: 1.47, t_avg: 1.47, t_stdev: 0, t_99: 1.57, t_99_9: 1.93 };
    expect(latRow(row)).toBe(' 2       1000          1.42           1.93         1.47     \t       1.47        \t0.00   \t\t1.57    \t\t1.93   \n');
    // as pasted from a real ib_write_lat run
    expect(expandTabs(latRow(row)).trimEnd()).toBe(
      ' 2       1000          1.42           1.93         1.47                1.47             0.00            1.57                    1.93',
    );
  });

  it('the test header (ctx_print_test_info)', () => {
    const info: TestInfo = {
      verb: 'WRITE',
      tst: 'BW',
      role: 'client',
      device: 'mlx5_0',
      num_of_qps: 1,
      transport_type: IBV_TRANSPORT_IB,
      connection_type: 'RC',
      tx_depth: 128,
      rx_depth: 512,
      cq_mod: 100,
      mtu_bytes: 1024,
      link_type: IBV_LINK_LAYER_ETHERNET,
      gid_index: 3,
      inline_size: 0,
      out_reads: 1,
      exchange: 'Ethernet',
    };
    expect(testInfoText(info)).toBe(
      `${RESULT_LINE}` +
        '                    RDMA_Write BW Test\n' +
        ' Dual-port       : OFF\t\tDevice         : mlx5_0\n' +
        ' Number of qps   : 1\t\tTransport type : IB\n' +
        ' Connection type : RC\t\tUsing SRQ      : OFF\n' +
        ' PCIe relax order: ON\n' +
        ' ibv_wr* API     : OFF\n' +
        ' TX depth        : 128\n' +
        ' CQ Moderation   : 100\n' +
        ' Mtu             : 1024[B]\n' +
        ' Link type       : Ethernet\n' +
        ' GID index       : 3\n' +
        ' Max inline data : 0[B]\n' +
        ' rdma_cm QPs\t : OFF\n' +
        ' Data ex. method : Ethernet\n' +
        `${RESULT_LINE}`,
    );
    const lat = testInfoText({
      ...info,
      verb: 'READ',
      tst: 'LAT',
      role: 'server',
      link_type: IBV_LINK_LAYER_INFINIBAND,
      gid_index: -1,
      out_reads: 16,
      tx_depth: 1,
    });
    expect(lat).toContain('                    RDMA_Read Latency Test\n');
    expect(lat).toContain(' Link type       : IB\n');
    expect(lat).toContain(' Outstand reads  : 16\n');
    expect(lat).not.toContain('TX depth'); // the server side
    expect(lat).not.toContain('GID index');
    expect(lat).not.toContain('CQ Moderation');
    expect(lat).not.toContain('Max inline data');
    const send = testInfoText({ ...info, verb: 'SEND', role: 'server' });
    expect(send).toContain('                    Send BW Test\n');
    expect(send).toContain(' RX depth        : 512\n');
  });

  const dest: PerfDest = {
    lid: 0,
    out_reads: 16,
    qpn: 0x2ee,
    psn: 0xb0c21c,
    rkey: 0x10011b4d,
    vaddr: 0x7f10cb874000n,
    gid: gidOf('00000000000000000000ffff0a000001'),
    srqn: 0,
  };

  it('address lines (ctx_print_pingpong_data), GID in decimal bytes as perftest prints it', () => {
    expect(pingpongDataText(dest, 'local', 'WRITE', 1)).toBe(
      ' local address: LID 0000 QPN 0x02ee PSN 0xb0c21c RKey 0x10011b4d VAddr 0x007f10cb874000\n' + ' GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:00:00:01\n',
    );
    expect(pingpongDataText({ ...dest, lid: 3, qpn: 0x3352b, psn: 0xa7af12 }, 'remote', 'READ', -1)).toBe(
      ' remote address: LID 0x03 QPN 0x3352b PSN 0xa7af12 OUT 0x10 RKey 0x10011b4d VAddr 0x007f10cb874000\n',
    );
    expect(pingpongDataText(dest, 'local', 'SEND', -1)).toBe(' local address: LID 0000 QPN 0x02ee PSN 0xb0c21c\n');
  });

  it('the exchanged key message (KEY_PRINT_FMT_GID), 108 bytes, and back', () => {
    const msg = perfDestToMsg({ ...dest, qpn: 0x11, psn: 0xabcdef, rkey: 0x1002, vaddr: 0x7f000001a000n, gid: gidOf('fe800000000000000202c9fffe0a1b2c') });
    expect(msg.length).toBe(KEY_MSG_SIZE_GID);
    expect(msg.toString('latin1')).toBe('0000:0010:000011:abcdef:00001002:00007f000001a000:fe:80:00:00:00:00:00:00:02:02:c9:ff:fe:0a:1b:2c:00000000:\0');
    const back = perfMsgToDest(msg) as PerfDest;
    expect(back).toMatchObject({ lid: 0, out_reads: 16, qpn: 0x11, psn: 0xabcdef, rkey: 0x1002, vaddr: 0x7f000001a000n, srqn: 0 });
    expect(Buffer.from(back.gid.raw).toString('hex')).toBe('fe800000000000000202c9fffe0a1b2c');
    expect(perfMsgToDest(Buffer.from('done\0'))).toBeNull();
  });
});
