/**
 * A send WR that fails its local checks (a bad lkey, a UD message larger
 * than the MTU) behind WRs still in the requester's window: its error
 * completion comes after theirs, as a work queue's completions come in
 * posting order (interleavings-misuse.test.ts finds it in 7 of 300 seeds: the error came
 * first and the WRs before it were flushed). And a READ with a bad rkey
 * behind a good READ: the responder's NAK must not overtake (nor drop) the
 * good READ's response, or A blames the good one (found by
 * interleavings-misuse.test.ts, seed 110 of 300).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { disableAutoStart } from '../../src/boot.js';
import {
  IBV_QPS_ERR,
  IBV_QPT_RC,
  IBV_QPT_UD,
  IBV_WC_LOC_LEN_ERR,
  IBV_WC_LOC_PROT_ERR,
  IBV_WC_REM_ACCESS_ERR,
  IBV_WC_SUCCESS,
  IBV_WC_WR_FLUSH_ERR,
} from '../../src/index.js';
import * as H from '../e2e/harness.js';
import { handTurnedHost, type HandTurnedHost } from '../helpers/hand-turned-host.js';

disableAutoStart(); // only the hand-turned devices are listed

let t: HandTurnedHost | null = null;
afterEach(async () => {
  await t?.close();
  t = null;
});

const statuses = (cq: Parameters<typeof H.pollNow>[0]) => H.pollNow(cq).map((w) => `${w.wr_id}:${w.status}`);

describe('a send WR failing its local checks behind WRs in flight', () => {
  it('RC: three WRITEs, then one with a bad lkey: three successes, then LOC_PROT_ERR, then the flush', async () => {
    t = await handTurnedHost();
    const [a, b] = [H.openDev('rnic0'), H.openDev('rnic1')];
    const qa = H.createQp(a, IBV_QPT_RC);
    const qb = H.createQp(b, IBV_QPT_RC);
    H.connect(qa, qb);
    const [ra, rb] = [H.region(a, 4096), H.region(b, 4096)];
    t.policy = () => 0; // the device thread sees all five at once
    const wr = (i: number, lkey: number) =>
      H.wrWrite({ wrId: BigInt(i), sge: [{ addr: ra.addr, length: 64, lkey }], remote: { addr: rb.addr, rkey: rb.rkey } });
    H.postSend(qa, [wr(0, ra.lkey), wr(1, ra.lkey), wr(2, ra.lkey), wr(3, 0xdead), wr(4, ra.lkey)]);
    t.settle();
    expect(statuses(qa.scq)).toEqual([
      `0:${IBV_WC_SUCCESS}`,
      `1:${IBV_WC_SUCCESS}`,
      `2:${IBV_WC_SUCCESS}`,
      `3:${IBV_WC_LOC_PROT_ERR}`,
      `4:${IBV_WC_WR_FLUSH_ERR}`,
    ]);
  });

  it('UD: two SENDs, then one larger than the MTU: two successes, then LOC_LEN_ERR', async () => {
    t = await handTurnedHost();
    const [a, b] = [H.openDev('rnic0'), H.openDev('rnic1')];
    const qa = H.createQp(a, IBV_QPT_UD);
    const qb = H.createQp(b, IBV_QPT_UD);
    H.connect(qa, qb);
    const ah = H.createAh(a, b);
    const ra = H.region(a, 8192);
    t.policy = () => 0;
    const mtu = H.pathMtuBytes(a.portAttr.active_mtu);
    const wr = (i: number, len: number) => H.wrSend({ wrId: BigInt(i), sge: [ra.sge(0, len)], ud: { ah, qpn: qb.qp.qp_num, qkey: H.QKEY } });
    H.postSend(qa, [wr(0, 16), wr(1, 16), wr(2, mtu + 1)]);
    t.settle();
    expect(statuses(qa.scq)).toEqual([`0:${IBV_WC_SUCCESS}`, `1:${IBV_WC_SUCCESS}`, `2:${IBV_WC_LOC_LEN_ERR}`]);
  });

  it('RC: a READ, then a READ with a bad rkey: the first succeeds with its bytes, the second REM_ACCESS_ERR, B in ERR', async () => {
    t = await handTurnedHost();
    const [a, b] = [H.openDev('rnic0'), H.openDev('rnic1')];
    const qa = H.createQp(a, IBV_QPT_RC);
    const qb = H.createQp(b, IBV_QPT_RC);
    H.connect(qa, qb);
    const ra = H.region(a, 8192);
    const rb = H.region(b, 8192, undefined, { fill: (i) => i * 7 + 1 });
    t.policy = () => 0;
    H.postSend(qa, [
      H.wrRead({ wrId: 0n, sge: [ra.sge(0, 3000)], remote: { addr: rb.addr, rkey: rb.rkey } }),
      H.wrRead({ wrId: 1n, sge: [ra.sge(4096, 64)], remote: { addr: rb.addr, rkey: 0xc0ffee } }),
    ]);
    t.settle();
    expect(statuses(qa.scq)).toEqual([`0:${IBV_WC_SUCCESS}`, `1:${IBV_WC_REM_ACCESS_ERR}`]);
    H.expectBytes(ra.data.subarray(0, 3000), rb.data.subarray(0, 3000), 'the good READ');
    H.expectQpState(qb.qp, IBV_QPS_ERR, 'B after the bad rkey');
  });
});
