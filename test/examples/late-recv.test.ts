/**
 * rc_pingpong --late-recv (this port's own flag): the receives go up only
 * some ms after the connection, so the peer's first SEND meets an empty
 * receive queue: the responder answers RNR NAK, the requester waits its
 * RNR timer and resends until the receive is there; the run then ends as
 * a normal one. Counted on both devices.
 */
import { describe, expect, it } from 'vitest';
import { BufferIo } from '../../examples/common/io.js';
import { parse_args, pingpongMain } from '../../examples/pingpong/core.js';
import { ibv_close_device, ibv_get_device_list, ibv_get_device_name, ibv_open_device, rnic_read_counters } from '../../src/driver/verbs/index.js';
import './device.js';
import { expectPingpong, twoEnds } from './scenarios.js';

/** The server late, the client as rdma-core's: it sends as soon as it is connected. */
async function latePair(lateMs: number) {
  const [sdev, cdev] = twoEnds();
  const common = ['-n', '20', '-s', '1024', '-c', '-g', '3'];
  const sio = new BufferIo();
  const cio = new BufferIo();
  let listening!: (port: number) => void;
  const portP = new Promise<number>((r) => (listening = r));
  const serverP = pingpongMain('RC', ['-p', '0', '-d', sdev, ...common, '--late-recv', String(lateMs)], { io: sio, onListening: listening });
  const port = await portP;
  const ccode = await pingpongMain('RC', ['-p', String(port), '-d', cdev, ...common, '127.0.0.1'], { io: cio });
  const scode = await serverP;
  return { server: { code: scode, out: sio.stdout, err: sio.stderr }, client: { code: ccode, out: cio.stdout, err: cio.stderr } };
}

const counters = (name: string): Record<string, bigint | number> => {
  const ctx = ibv_open_device(ibv_get_device_list().find((d) => ibv_get_device_name(d) === name)!);
  try {
    return rnic_read_counters(ctx) as Record<string, bigint | number>;
  } finally {
    ibv_close_device(ctx);
  }
};

describe('rc_pingpong --late-recv', () => {
  it('parses as ms, 0..60000, RC only', () => {
    expect(parse_args(['--late-recv', '200'], 'RC').late_recv_ms).toBe(200);
    expect(parse_args([], 'RC').late_recv_ms).toBe(0);
    expect(() => parse_args(['--late-recv', '-1'], 'RC')).toThrow();
    expect(() => parse_args(['--late-recv=70000'], 'RC')).toThrow();
    expect(() => parse_args(['--late-recv', '5'], 'UC')).toThrow(/late-recv/);
  });

  it('RNR NAKs on both sides, then the run completes with the right data', async () => {
    const [sdev, cdev] = twoEnds();
    const before = { s: counters(sdev), c: counters(cdev) };
    const { server, client } = await latePair(100);
    expectPingpong(server, 1024, 20);
    expectPingpong(client, 1024, 20);
    const after = { s: counters(sdev), c: counters(cdev) };
    const d = (side: 's' | 'c', k: string) => Number(after[side][k]) - Number(before[side][k]);
    // The client's first SEND reaches a server with no receive posted.
    expect(d('s', 'send_rnr_err'), 'server: RNR NAKs sent').toBeGreaterThan(0);
    expect(d('c', 'rcvd_rnr_err'), 'client: RNR NAKs received').toBeGreaterThan(0);
    expect(d('c', 'retry_rnr_exceeded_err')).toBe(0);
  }, 60_000);
});
