/**
 * UC has no retransmission: a lost packet loses its message. The fault rule
 * drops the MIDDLE packet of the first 3-packet SEND; the responder drops the
 * rest of that message, keeps the receive WQE for the next one, and the
 * requester never resends anything.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IBV_QPT_UC, IBV_SEND_SIGNALED, IBV_WC_SUCCESS, IBV_WR_SEND } from '../../src/driver/verbs/index.js';
import { parseConfig } from '../../src/runtime/config.js';
import * as H from './harness.js';

let f: H.Fabric;
beforeAll(async () => {
  f = await H.openFabric(
    parseConfig({
      workers: 1,
      devices: [
        { name: 'rnic0', ports: [{ mac: '02:00:00:00:00:01', ipv4: ['192.0.2.1'] }] },
        { name: 'rnic1', ports: [{ mac: '02:00:00:00:00:02', ipv4: ['192.0.2.2'] }] },
      ],
      cables: [{ kind: 'wire', a: 'rnic0:1', b: 'rnic1:1', faults: [{ action: 'drop', direction: 'a->b', match: { opcode: 'UC_SEND_MIDDLE', count: 1 } }] }],
    }),
  );
});
afterAll(async () => f?.close());

describe('UC on a PSN gap', () => {
  it('drops the message, keeps the receive for the next one, retransmits nothing', async () => {
    const p = H.makePair(f, IBV_QPT_UC); // path MTU 1024 (the harness default)
    const size = 3 * 1024;
    const src = H.region(f.a, 3 * size, H.ALL_ACCESS, { fill: (i) => (i * 13 + 5) & 0xff });
    const dst = H.region(f.b, 3 * size);
    H.postRecv(
      p.b,
      [0, 1, 2].map((k) => H.recvWr(BigInt(k), [dst.sge(k * size, size)])),
    );
    const before = H.counters(f.a);
    H.postSend(
      p.a,
      [0, 1, 2].map((k) => H.sendWr(IBV_WR_SEND, { wrId: BigInt(10 + k), flags: IBV_SEND_SIGNALED, sge: [src.sge(k * size, size)] })),
    );
    const sw = await H.pollN(p.a.scq, 3, 'UC sends complete when sent');
    expect(sw.map((w) => [w.wr_id, w.status])).toEqual([
      [10n, IBV_WC_SUCCESS],
      [11n, IBV_WC_SUCCESS],
      [12n, IBV_WC_SUCCESS],
    ]);
    const rw = await H.pollN(p.b.rcq, 2, 'messages 2 and 3 received');
    await H.expectNoCqe(p.b.rcq, 50, 'no third receive completion');
    // Message 1 is gone; receive 0 took message 2, receive 1 message 3.
    expect(rw.map((w) => [w.wr_id, w.status, w.byte_len])).toEqual([
      [0n, IBV_WC_SUCCESS, size],
      [1n, IBV_WC_SUCCESS, size],
    ]);
    H.expectBytes(dst.data.subarray(0, size), src.data.subarray(size, 2 * size), 'receive 0 holds message 2');
    H.expectBytes(dst.data.subarray(size, 2 * size), src.data.subarray(2 * size, 3 * size), 'receive 1 holds message 3');
    const d = H.counterDelta(before, H.counters(f.a));
    expect(d['sent_pkts'], 'nine packets, no retransmission').toBe(9n);
  });
});
