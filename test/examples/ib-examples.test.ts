/**
 * The example programs over native InfiniBand: rc_, uc_ and ud_pingpong
 * (server and client in this process over TCP, no -g: the LRH routes by
 * LID) and perf --loopback, on two IB hosts (test/helpers/ib.ts), with
 * the devices in this thread and on a worker.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { restartModel, stopModel } from '../../src/boot.js';
import { ibConfig, LID_A, LID_B } from '../helpers/ib.js';
import { expectPerfTable, expectPingpong, perfLoopback, pingpongPair } from './scenarios.js';

afterAll(async () => {
  await stopModel();
});

describe.each([0, 1])('examples on two IB hosts, %i worker thread(s)', (workers) => {
  it.each(['RC', 'UC', 'UD'] as const)('%s pingpong: LRH only, the peers named by LID', async (kind) => {
    await restartModel(ibConfig(workers));
    const size = kind === 'UD' ? 1024 : 8192;
    const { server, client } = await pingpongPair(kind, ['-n', '100', '-s', String(size)]);
    expectPingpong(server, size, 100);
    expectPingpong(client, size, 100);
    // The addresses crossed are the two LIDs.
    const lids = (s: string) => [...s.matchAll(/LID 0x([0-9a-f]{4})/g)].map((m) => Number.parseInt(m[1]!, 16)).sort();
    expect(lids(server.out)).toEqual([LID_A, LID_B]);
  });

  it('perf --loopback write_bw and read_lat: Link type IB, the tables filled', async () => {
    await restartModel(ibConfig(workers));
    for (const test of ['write_bw', 'read_lat'] as const) {
      const r = await perfLoopback(test, { iters: 200 });
      expect(r.text).toContain('Link type       : IB');
      expectPerfTable(r, 1);
    }
  });
});
