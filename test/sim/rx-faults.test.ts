/**
 * Receive-side faults (`on: rx`) in the simulator: the frame crosses the
 * link (it uses the line and is delivered to the far end) and is hurt as
 * the port takes it. The transport's answer is the same as for a frame lost
 * on the way; the link's counters tell the two apart.
 */
import { describe, expect, it } from 'vitest';
import { localAckTimeoutNs } from '../../src/pipeline/timer-tables.js';
import { ctr, rows, run, scenarioJson } from './helpers.js';

const isWrite = (op: string) => op.startsWith('RC_RDMA_WRITE');

function ackLoss(on: 'tx' | 'rx'): Record<string, unknown> {
  const j = scenarioJson('ack-loss-timeout');
  const faults = (j.faults as Record<string, unknown>[]).map((f) => ({ ...f, on }));
  return { ...j, faults };
}

describe('on: rx in the simulator', () => {
  it('ACKs lost as the requester receives them: resent every local ACK timeout, as when lost on the wire', async () => {
    const tx = await run(ackLoss('tx'));
    const rx = await run(ackLoss('rx'));
    for (const r of [tx, rx]) {
      expect(r.verify).toEqual([]);
      const writes = rows(r.captures['rnic0:1']!).filter((x) => isWrite(x.op));
      expect(writes.map((x) => x.psn)).toEqual([4096, 4096, 4096, 4096]);
      for (let i = 1; i < writes.length; i++) expect(writes[i]!.ns - writes[i - 1]!.ns).toBe(localAckTimeoutNs(8));
      expect(ctr(r, 'rnic0', 'local_ack_timeout_err')).toBe(3);
      expect(ctr(r, 'rnic1', 'duplicate_request')).toBe(3);
    }
    // The difference is where: lost on the wire, the three ACKs never arrive; lost on receive, they do, and are dropped there.
    const [ltx] = Object.values(tx.sim.links);
    const [lrx] = Object.values(rx.sim.links);
    expect(ltx!.bToA.faultDropped).toBe(3);
    expect(lrx!.bToA.faultDropped).toBe(0);
    expect(lrx!.bToA.framesDelivered - ltx!.bToA.framesDelivered).toBe(3);
    expect(rx.sim.links[Object.keys(rx.sim.links)[0]!]!.faults!.rules[0]).toMatchObject({ fired: 3 });
  });

  it('a receive-side delay on the responder: the WRITE lands late, the ACK follows it', async () => {
    const j = { ...scenarioJson('write-basic'), capture: ['rnic0:1'], traffic: [{ qp: 'q0', op: 'write', size: 4096, count: 1 }] };
    const plain = await run(j);
    const late = await run({ ...j, faults: [{ action: 'delay', direction: 'a->b', on: 'rx', delayNs: '50us', match: { opcode: 'write', count: 1 } }] });
    expect(plain.verify).toEqual([]);
    expect(late.verify).toEqual([]);
    const ack = (r: typeof plain): number[] =>
      rows(r.captures['rnic0:1']!)
        .filter((x) => x.op === 'RC_ACKNOWLEDGE')
        .map((x) => x.ns);
    expect(ack(plain)).toHaveLength(1);
    expect(ack(late)).toHaveLength(1);
    expect(ack(late)[0]! - ack(plain)[0]!).toBe(50_000);
  });
});
