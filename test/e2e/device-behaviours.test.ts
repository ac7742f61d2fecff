/**
 * The rxe receive-overflow behaviour, switched on in the configuration:
 * the responder's receive completes with REM_INV_REQ_ERR instead of the
 * IBTA's LOC_LEN_ERR (errors.test.ts checks the default). The requester sees
 * REM_INV_REQ_ERR either way.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IBV_QPT_RC, IBV_WC_REM_INV_REQ_ERR, IBV_WC_WR_FLUSH_ERR } from '../../src/driver/verbs/index.js';
import * as H from './harness.js';

let f: H.Fabric;
beforeAll(async () => {
  f = await H.openFabric(
    H.twoDeviceConfig(1, (c) => {
      c.quirks = { rxeRecvOverflowRemInvReq: true };
    }),
  );
});
afterAll(async () => f?.close());

describe('rxeRecvOverflowRemInvReq', () => {
  it('a SEND longer than the receive: REM_INV_REQ_ERR on both sides, rest flushed', async () => {
    const p = H.makePair(f, IBV_QPT_RC);
    const src = H.region(f.a, 4096, H.ALL_ACCESS, { fill: (i) => i & 0xff });
    const small = H.region(f.b, 1000);
    H.postRecv(p.b, [H.recvWr(1n, [small.sge()]), H.recvWr(2n, [small.sge()])]);
    H.postSend(p.a, H.wrSend({ wrId: 10n, sge: [src.sge(0, 2000)] }));
    H.expectWc(await H.poll1(p.a.scq, 'the SEND'), { wr_id: 10n, status: IBV_WC_REM_INV_REQ_ERR }, 'requester');
    const rw = await H.pollN(p.b.rcq, 2, 'the short receive and the flushed one');
    expect(rw.map((w) => [w.wr_id, w.status])).toEqual([
      [1n, IBV_WC_REM_INV_REQ_ERR],
      [2n, IBV_WC_WR_FLUSH_ERR],
    ]);
    small.checkGuards('guards around the short receive buffer');
  });
});
