/**
 * Device profiles through the verbs API (src/pipeline/profiles.ts), one
 * profile per device: the responder rnic1 runs the rxe profile (Linux 6.1),
 * or the rxe ≥ 6.2 receive-overflow choice; the requester rnic0 stays IBTA.
 * errors.test.ts checks the IBTA default on both sides. Devices run in the
 * application's thread (workers 0): a poll runs them, so "no completion"
 * is checked after the device has seen the doorbell, not after a wait.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IBV_QPS_ERR,
  IBV_QPT_RC,
  IBV_WC_LOC_QP_OP_ERR,
  IBV_WC_REM_ACCESS_ERR,
  IBV_WC_REM_INV_REQ_ERR,
  IBV_WC_REM_OP_ERR,
  IBV_WC_WR_FLUSH_ERR,
} from '../../src/driver/verbs/index.js';
import type { ProfileSpec } from '../../src/pipeline/profiles.js';
import * as H from './harness.js';

const withResponder = (profile: ProfileSpec) =>
  H.twoDeviceConfig(0, (c) => {
    c.devices[1]!.profile = profile;
  });

/** A SEND of 2000 bytes into a 1000-byte receive, then a second receive that the error flushes. */
async function overflow(f: H.Fabric) {
  const p = H.makePair(f, IBV_QPT_RC);
  const src = H.region(f.a, 4096, H.ALL_ACCESS, { fill: (i) => i & 0xff });
  const small = H.region(f.b, 1000);
  H.postRecv(p.b, [H.recvWr(1n, [small.sge()]), H.recvWr(2n, [small.sge()])]);
  H.postSend(p.a, H.wrSend({ wrId: 10n, sge: [src.sge(0, 2000)] }));
  const s = await H.poll1(p.a.scq, 'the SEND');
  const r = await H.pollN(p.b.rcq, 2, 'the short receive and the flushed one');
  small.checkGuards('guards around the short receive buffer');
  return { s, r: r.map((w) => [w.wr_id, w.status]) };
}

describe('profile rxe on the responder', () => {
  let f: H.Fabric;
  beforeAll(async () => {
    f = await H.openFabric(withResponder('rxe'));
  });
  afterAll(async () => f?.close());

  it('a SEND longer than the receive: NAK remote operational error, REM_OP_ERR and LOC_QP_OP_ERR, the rest flushed', async () => {
    const { s, r } = await overflow(f);
    H.expectWc(s, { wr_id: 10n, status: IBV_WC_REM_OP_ERR }, 'requester');
    expect(r).toEqual([
      [1n, IBV_WC_LOC_QP_OP_ERR],
      [2n, IBV_WC_WR_FLUSH_ERR],
    ]);
  });

  it('a receive posted after the QP went to ERR stays in the queue: no completion', async () => {
    const p = H.makePair(f, IBV_QPT_RC);
    const src = H.region(f.a, 4096);
    const dst = H.region(f.b, 4096);
    H.postSend(p.a, H.wrWrite({ wrId: 1n, sge: [src.sge(0, 100)], remote: { addr: dst.mr.addr, rkey: dst.mr.rkey ^ 0x5a5a00 } }));
    H.expectWc(await H.poll1(p.a.scq, 'the bad WRITE'), { wr_id: 1n, status: IBV_WC_REM_ACCESS_ERR }, 'requester');
    H.expectQpState(p.b.qp, IBV_QPS_ERR, 'responder');
    const before = H.counters(f.b);
    H.postRecv(p.b, H.recvWr(3n, [dst.sge(0, 10)]));
    // Each poll runs the devices (workers 0): the RQ doorbell has been seen by the first one.
    for (let i = 0; i < 20; i++) expect(H.pollNow(p.b.rcq), `poll ${i}`).toEqual([]);
    expect(H.counterDelta(before, H.counters(f.b))['resp_cqe_flush_error'] ?? 0n).toBe(0n);
  });
});

describe('profile { base: ibta, recvOverflow: nak-invalid-request-rem-inv } (rxe 6.2 and later)', () => {
  let f: H.Fabric;
  beforeAll(async () => {
    f = await H.openFabric(withResponder({ recvOverflow: 'nak-invalid-request-rem-inv' }));
  });
  afterAll(async () => f?.close());

  it('a SEND longer than the receive: REM_INV_REQ_ERR on both sides, the rest flushed', async () => {
    const { s, r } = await overflow(f);
    H.expectWc(s, { wr_id: 10n, status: IBV_WC_REM_INV_REQ_ERR }, 'requester');
    expect(r).toEqual([
      [1n, IBV_WC_REM_INV_REQ_ERR],
      [2n, IBV_WC_WR_FLUSH_ERR],
    ]);
  });

  it('a receive posted after the QP went to ERR is flushed (the IBTA choice the base keeps)', async () => {
    const p = H.makePair(f, IBV_QPT_RC);
    const src = H.region(f.a, 4096);
    const dst = H.region(f.b, 4096);
    H.postSend(p.a, H.wrWrite({ wrId: 1n, sge: [src.sge(0, 100)], remote: { addr: dst.mr.addr, rkey: dst.mr.rkey ^ 0x5a5a00 } }));
    H.expectWc(await H.poll1(p.a.scq, 'the bad WRITE'), { wr_id: 1n, status: IBV_WC_REM_ACCESS_ERR }, 'requester');
    H.postRecv(p.b, H.recvWr(3n, [dst.sge(0, 10)]));
    H.expectWc(await H.poll1(p.b.rcq, 'the flushed receive'), { wr_id: 3n, status: IBV_WC_WR_FLUSH_ERR }, 'responder');
  });
});
