/**
 * Fault rules on a native InfiniBand wire act on IB packets: the injector
 * classifies LRH (+GRH) packets (opcode, PSN) in both runtimes. A dropped
 * WRITE middle is recovered by RC (NAK-sequence, resend), the bytes land;
 * on the simulator a corrupted packet fails its VCRC at the receiver.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { restartModel, startSimModel, stopModel } from '../../src/boot.js';
import { IBV_QPT_RC, IBV_WC_SUCCESS } from '../../src/driver/verbs/index.js';
import type { FaultRule } from '../../src/fabric/faults/rules.js';
import { ibConfig } from '../helpers/ib.js';
import * as H from './harness.js';

afterEach(async () => {
  await stopModel();
});

async function writeThrough(global: boolean): Promise<{ a: H.Dev; b: H.Dev; before: Record<string, bigint>; beforeB: Record<string, bigint> }> {
  const a = H.openDev('rnic0', 0);
  const b = H.openDev('rnic1', 0);
  const f: H.Fabric = { a, b, config: ibConfig(0), close: async () => {} };
  const p = H.makePair(f, IBV_QPT_RC, { ib: { global }, timeout: 8 });
  const src = H.region(a, 8192, H.ALL_ACCESS, { fill: (i) => i * 3 });
  const dst = H.region(b, 8192, H.ALL_ACCESS);
  const before = H.counters(a);
  const beforeB = H.counters(b);
  H.postSend(p.a, H.wrWrite({ wrId: 1n, sge: [src.sge(0, 5000)], remote: { addr: dst.at(0), rkey: dst.rkey } }));
  expect((await H.poll1(p.a.scq, 'WRITE through the fault')).status).toBe(IBV_WC_SUCCESS);
  H.expectBytes(dst.data.subarray(0, 5000), src.data.subarray(0, 5000), 'WRITE payload');
  return { a, b, before, beforeB };
}

const dropMiddle: FaultRule[] = [{ action: 'drop', match: { opcode: 'RC_RDMA_WRITE_MIDDLE', count: 1 } }];

describe('faults on an IB wire', () => {
  for (const [name, start] of [
    ['realtime', () => restartModel(ibConfig(0, undefined, dropMiddle))],
    // The simulator takes a one-cable model's faults at the top level (docs/simulator.md).
    ['simulator', () => startSimModel({ ...ibConfig(0), seed: 4, faults: dropMiddle })],
  ] as const) {
    for (const global of [false, true]) {
      it(`${name}, ${global ? 'LRH+GRH' : 'LRH only'}: a dropped WRITE middle is resent and the bytes land`, async () => {
        await start();
        const { a, b, before, beforeB } = await writeThrough(global);
        const d = H.counterDelta(before, H.counters(a));
        expect(d['packet_seq_err'] ?? 0n, 'the requester got a NAK-sequence: the rule matched an IB packet').toBe(1n);
        expect(H.counterDelta(beforeB, H.counters(b))['out_of_sequence'] ?? 0n).toBeGreaterThan(0n);
        H.closeDev(a);
        H.closeDev(b);
      });
    }
  }

  it('simulator: a corrupted WRITE packet fails its VCRC at the receiver, is resent, the bytes land', async () => {
    await startSimModel({ ...ibConfig(0), seed: 4, faults: [{ action: 'corrupt', match: { opcode: 'RC_RDMA_WRITE_MIDDLE', count: 1 } }] });
    const { a, b, beforeB } = await writeThrough(false);
    const d = H.counterDelta(beforeB, H.counters(b));
    expect([d['rx_vcrc_errors'], d['port_rcv_errors']]).toEqual([1n, 1n]);
    H.closeDev(a);
    H.closeDev(b);
  });
});
