/**
 * The example programs end to end on the RDMA devices ibv_get_device_list()
 * shows: the model's once its provider is registered (real hardware through
 * rdma-core works too). Skipped while there are none; see device.ts.
 */
import { describe, expect, it } from 'vitest';
import { noRdmaDevice, rdmaDevices } from './device.js';
import { devinfoRun, expectAddressesCrossed, expectPerfTable, expectPingpong, perfLoopback, rcPingpongPair } from './scenarios.js';

describe.skipIf(noRdmaDevice)(`examples on ${rdmaDevices.join(', ') || 'no devices'}`, () => {
  it('rc_pingpong: server and client over TCP on 127.0.0.1, with -c and -e', async () => {
    const { server, client } = await rcPingpongPair(['-n', '100', '-s', '16384', '-c', '-e']);
    expectPingpong(server, 16384, 100);
    expectPingpong(client, 16384, 100);
    expectAddressesCrossed(server, client);
  });

  it('rc_pingpong: polling, small messages', async () => {
    const { server, client } = await rcPingpongPair(['-n', '200', '-s', '64']);
    expectPingpong(server, 64, 200);
    expectPingpong(client, 64, 200);
  });

  it('perf --loopback write_bw: a table with non-zero numbers', async () => {
    expectPerfTable(await perfLoopback('write_bw', { iters: 500, size: 65536 }), 1);
  });

  it('perf --loopback read_bw: a table with non-zero numbers', async () => {
    expectPerfTable(await perfLoopback('read_bw', { iters: 500, size: 65536 }), 1);
  });

  it('perf --loopback send_lat: a table with non-zero numbers', async () => {
    expectPerfTable(await perfLoopback('send_lat', { iters: 500 }), 1);
  });

  it('devinfo: every device, and -v with the GID table', async () => {
    const all = await devinfoRun([]);
    expect(all.err).toBe('');
    expect(all.code).toBe(0);
    expect(all.out.match(/^hca_id:\t/gm)).toHaveLength(rdmaDevices.length);
    const v = await devinfoRun(['-v', '-d', rdmaDevices[0] as string, '-i', '1']);
    expect(v.code).toBe(0);
    // GID 0 is the link-local RoCE v1 entry: hex, with its type where the provider has ibv_query_gid_ex.
    expect(v.out).toMatch(/^\t\t\tGID\[ {2}0\]:\t\t[0-9a-f]{4}(:[0-9a-f]{4}){7}(, RoCE v1)?$/m);
    // RoCE v2 entries, where typed, in IPv6 text form.
    if (/, RoCE v1$/m.test(v.out)) expect(v.out).toMatch(/^\t\t\tGID\[ {0,2}\d+\]:\t\t[0-9a-f:.]+, RoCE v2$/m);
  });
});
