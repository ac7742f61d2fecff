/**
 * Fault injection in the realtime runtime: rules on the in-process wire from
 * the configuration file's `cables[].faults`, with a seed. Loss and
 * corruption both ways; every WR completes once, in order, with the right
 * bytes, and the counters show the recovery (bad ICRCs, NAK-sequence,
 * retransmission). The dice are seeded; the timing is the machine's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IBV_QPT_RC, IBV_SEND_SIGNALED, IBV_WC_SUCCESS, IBV_WR_RDMA_READ, IBV_WR_RDMA_WRITE } from '../../src/driver/verbs/index.js';
import { parseConfig } from '../../src/runtime/config.js';
import * as H from './harness.js';

let f: H.Fabric;

beforeAll(async () => {
  // As a configuration file would say it, through the same parser.
  const config = parseConfig({
    workers: 1,
    seed: 7,
    devices: [
      { name: 'rnic0', ports: [{ mac: '02:00:00:00:00:01', ipv4: ['192.0.2.1'] }] },
      { name: 'rnic1', ports: [{ mac: '02:00:00:00:00:02', ipv4: ['192.0.2.2'] }] },
    ],
    cables: [
      {
        kind: 'wire',
        a: 'rnic0:1',
        b: 'rnic1:1',
        faults: [
          { action: 'drop', direction: 'both', probability: 0.02 },
          { action: 'corrupt', direction: 'a->b', probability: 0.01 },
        ],
      },
    ],
  });
  f = await H.openFabric(config);
});
afterAll(async () => f?.close());

describe('realtime faults from the configuration', () => {
  it('rejects a bad rule with its path', () => {
    const devices = [
      { name: 'rnic0', ports: [{ mac: '02:00:00:00:00:01' }] },
      { name: 'rnic1', ports: [{ mac: '02:00:00:00:00:02' }] },
    ];
    expect(() => parseConfig({ devices, cables: [{ kind: 'wire', a: 'rnic0:1', b: 'rnic1:1', faults: [{ action: 'explode' }] }] })).toThrow(
      /cables\[0\]\.faults/,
    );
  });

  // READs behind WRITEs on one QP: this once ended in RETRY_EXC_ERR about one
  // run in two (stale re-executed READ responses queued ahead of the one the
  // requester waited for); RNIC_TEST_REALTIME_READ_FAULTS=0 runs WRITEs only.
  const withReads = process.env.RNIC_TEST_REALTIME_READ_FAULTS !== '0';

  it(`WRITEs${withReads ? ' and READs' : ''} through 2% loss and 1% corruption all complete, in order, with the right bytes`, async () => {
    const p = H.makePair(f, IBV_QPT_RC, { timeout: 8, retryCnt: 7, rnrRetry: 7, maxSendWr: 128 }); // 1 ms ACK timeout
    const size = 16 * 1024;
    const n = 40;
    const src = H.region(f.a, size * n, H.ALL_ACCESS, { fill: (i) => (i * 7 + 3) & 0xff });
    const dst = H.region(f.b, size * n);
    const back = H.region(f.a, size * n);
    const before = H.counters(f.a);
    const beforeB = H.counters(f.b);
    const wrs = [];
    for (let i = 0; i < n; i++) {
      wrs.push(
        H.sendWr(IBV_WR_RDMA_WRITE, {
          wrId: BigInt(i),
          flags: IBV_SEND_SIGNALED,
          sge: [src.sge(i * size, size)],
          remote: { addr: dst.addr + BigInt(i * size), rkey: dst.rkey },
        }),
      );
    }
    for (let i = 0; withReads && i < n; i++) {
      wrs.push(
        H.sendWr(IBV_WR_RDMA_READ, {
          wrId: BigInt(n + i),
          flags: IBV_SEND_SIGNALED,
          sge: [back.sge(i * size, size)],
          remote: { addr: dst.addr + BigInt(i * size), rkey: dst.rkey },
        }),
      );
    }
    for (let k = 0; k < wrs.length; k += 16) H.postSend(p.a, wrs.slice(k, k + 16));
    const total = withReads ? 2 * n : n;
    const wc = await H.pollN(p.a.scq, total, 'WRITEs (and READs) under faults', 30_000);
    expect(wc.map((w) => Number(w.wr_id))).toEqual(Array.from({ length: total }, (_, i) => i));
    expect(wc.filter((w) => w.status !== IBV_WC_SUCCESS).map((w) => `${w.wr_id}:${w.status}`)).toEqual([]);
    H.expectBytes(dst.data, src.data, 'written bytes');
    if (withReads) H.expectBytes(back.data, src.data, 'read back');
    const da = H.counterDelta(before, H.counters(f.a));
    const db = H.counterDelta(beforeB, H.counters(f.b));
    // Corrupted frames were caught by the ICRC at rnic1, and losses were recovered.
    expect(db['rx_icrc_encapsulated'] ?? 0n, 'bad ICRCs seen by the receiver').toBeGreaterThan(0n);
    const recoveries = (da['completer_retry_err'] ?? 0n) + (da['rcvd_seq_err'] ?? 0n);
    expect(recoveries, 'retransmissions started').toBeGreaterThan(0n);
  });
});
