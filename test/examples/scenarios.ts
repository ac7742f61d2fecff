/**
 * End-to-end runs of the example programs on whatever devices
 * ibv_get_device_list() shows, with their checks. Used by e2e.test.ts (real
 * or model devices, skipped when there are none) and by
 * model-scenarios.test.ts.
 */
import { expect } from 'vitest';
import { BufferIo } from '../../examples/common/io.js';
import { main as devinfoMain } from '../../examples/devinfo.js';
import { RESULT_LINE, runLoopback, type PerfResults, type PerfTestName } from '../../examples/perf.js';
import { pingpongMain, type PingpongKind } from '../../examples/pingpong/core.js';
import {
  IBV_LINK_LAYER_ETHERNET,
  ibv_close_device,
  ibv_get_device_list,
  ibv_get_device_name,
  ibv_open_device,
  ibv_query_port,
  newPortAttr,
} from '../../src/driver/verbs/index.js';

export interface ProgramRun {
  code: number;
  out: string;
  err: string;
}

/** The device names for the two ends: the first two devices, or the first one twice. */
export function twoEnds(): [string, string] {
  const names = ibv_get_device_list().map((d) => ibv_get_device_name(d));
  const a = names[0];
  if (!a) throw new Error('no RDMA device');
  return [a, names[1] ?? a];
}

/** rc_pingpong needs -g on an Ethernet (RoCE) port, where every address vector carries a GRH. */
export function gidArgs(devName: string): string[] {
  const dev = ibv_get_device_list().find((d) => ibv_get_device_name(d) === devName);
  if (!dev) throw new Error(`no device ${devName}`);
  const ctx = ibv_open_device(dev);
  try {
    const attr = newPortAttr();
    expect(ibv_query_port(ctx, 1, attr)).toBe(0);
    return attr.link_layer === IBV_LINK_LAYER_ETHERNET ? ['-g', '0'] : [];
  } finally {
    ibv_close_device(ctx);
  }
}

/** rc_pingpong server and client in this process, over TCP on 127.0.0.1 (the server on an ephemeral port). */
export function rcPingpongPair(extra: string[]): Promise<{ server: ProgramRun; client: ProgramRun }> {
  return pingpongPair('RC', extra);
}

/** rc_, uc_ or ud_pingpong server and client in this process, over TCP on 127.0.0.1. */
export async function pingpongPair(kind: PingpongKind, extra: string[]): Promise<{ server: ProgramRun; client: ProgramRun }> {
  const rcMain = (argv: string[], mo: Parameters<typeof pingpongMain>[2]): Promise<number> => pingpongMain(kind, argv, mo);
  const [sdev, cdev] = twoEnds();
  const sio = new BufferIo();
  const cio = new BufferIo();
  let listening!: (port: number) => void;
  const portP = new Promise<number>((resolve) => {
    listening = resolve;
  });
  const serverP = rcMain(['-p', '0', '-d', sdev, ...gidArgs(sdev), ...extra], { io: sio, onListening: listening });
  const port = await Promise.race([portP, serverP.then((code) => Promise.reject(new Error(`server exited (${code}): ${sio.stderr}`)))]);
  const clientP = rcMain(['-p', String(port), '-d', cdev, ...gidArgs(cdev), ...extra, '127.0.0.1'], { io: cio });
  const [scode, ccode] = await Promise.all([serverP, clientP]);
  return {
    server: { code: scode, out: sio.stdout, err: sio.stderr },
    client: { code: ccode, out: cio.stdout, err: cio.stderr },
  };
}

/** ud_pingpong prints its own address with "PSN ...: GID", the others with a comma. */
const ADDRESS = /^ {2}(local address: |remote address:) LID 0x[0-9a-f]{4}, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}[,:] GID [0-9a-f:.]+$/;

/** What a good rc_pingpong run prints, and what it must not. */
export function expectPingpong(r: ProgramRun, size: number, iters: number): void {
  expect(r.err, r.err).toBe('');
  expect(r.code).toBe(0);
  const lines = r.out.trimEnd().split('\n');
  expect(lines[0]).toMatch(ADDRESS);
  expect(lines[0]).toContain('local address:');
  expect(lines[1]).toMatch(ADDRESS);
  expect(lines[1]).toContain('remote address:');
  expect(lines[2]).toMatch(new RegExp(`^${size * iters * 2} bytes in \\d+\\.\\d\\d seconds = \\d+\\.\\d\\d Mbit/sec$`));
  expect(lines[3]).toMatch(new RegExp(`^${iters} iters in \\d+\\.\\d\\d seconds = \\d+\\.\\d\\d usec/iter$`));
  expect(r.out).not.toContain('invalid data');
  expect(lines).toHaveLength(4);
}

/** The QPN the other side printed as its own is the one this side printed as remote. */
export function expectAddressesCrossed(server: ProgramRun, client: ProgramRun): void {
  const local = (out: string): string => (out.split('\n')[0] as string).replace('local address: ', '').replace(': GID', ', GID');
  const remote = (out: string): string => (out.split('\n')[1] as string).replace('remote address:', '');
  expect(remote(client.out)).toBe(local(server.out));
  expect(remote(server.out)).toBe(local(client.out));
}

/**
 * The QP timeout of realtime example runs: 2^22 × 4.096 µs ≈ 17 s, where
 * timing is not what is tested. On a loaded machine a thread can be off its
 * core longer than perftest's 67 ms, and the run would end in "transport
 * retry counter exceeded" for want of CPU, not for a fault of the model.
 */
export const PATIENT_QP_TIMEOUT = 22;

export async function perfLoopback(test: PerfTestName, extra: Record<string, unknown> = {}): Promise<PerfResults> {
  const [a, b] = twoEnds();
  return runLoopback({ test, ib_devname: a, peer_devname: b, qp_timeout: PATIENT_QP_TIMEOUT, ...extra });
}

/** A perf run printed perftest's frame: test header, addresses, the table, and non-zero numbers. */
export function expectPerfTable(r: PerfResults, rows: number): void {
  const lines = r.text.split('\n');
  expect(lines[0]).toBe(RESULT_LINE.trimEnd());
  expect(r.text).toContain(' Test\n');
  expect(r.text).toMatch(/^ local address: LID /m);
  expect(r.text).toMatch(/^ remote address: LID /m);
  expect(r.text.endsWith(RESULT_LINE)).toBe(true);
  if (r.tst === 'BW') {
    expect(r.text).toContain(` #bytes     #iterations    BW peak[${r.bw_unit}]    BW average[${r.bw_unit}]   MsgRate[Mpps]\n`);
    expect(r.bw).toHaveLength(rows);
    for (const row of r.bw) {
      expect(row.bw_avg).toBeGreaterThan(0);
      expect(row.bw_peak).toBeGreaterThan(0);
      expect(row.msgRate_avg).toBeGreaterThan(0);
      expect(Number.isFinite(row.bw_avg)).toBe(true);
    }
  } else {
    expect(r.text).toContain(' #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]');
    expect(r.lat).toHaveLength(rows);
    for (const row of r.lat) {
      expect(row.t_min).toBeGreaterThan(0);
      expect(row.t_typical).toBeGreaterThanOrEqual(row.t_min);
      expect(row.t_max).toBeGreaterThanOrEqual(row.t_typical);
      expect(row.t_99_9).toBeGreaterThanOrEqual(row.t_99);
      expect(Number.isFinite(row.t_avg)).toBe(true);
    }
  }
  const table = lines.filter((l) => /^ \d+ /.test(l));
  expect(table).toHaveLength(rows);
}

export async function devinfoRun(args: string[]): Promise<ProgramRun> {
  const io = new BufferIo();
  const code = await devinfoMain(args, { io });
  return { code, out: io.stdout, err: io.stderr };
}
