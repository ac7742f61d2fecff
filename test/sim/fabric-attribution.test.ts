/**
 * Through a switch a frame's destination is not its link's far end: the
 * faults a host's first hop does to its requests are this QP's, found by
 * the frame's destination MAC, so a retry budget they use up is explained
 * (expect success-or-exhausted) and a stall report counts them. The same
 * for what a switch's own transmissions meet (the second hop).
 */
import { describe, expect, it } from 'vitest';
import { parseScenario } from '../../src/scenario/scenario.js';
import { type FaultHit, runScenario } from '../../src/scenario/scenario-runner.js';

describe('fault hits through a switch', () => {
  it('every request of q0 dropped on h1-sw0: RETRY_EXC_ERR explained by them, each hit addressed to h0', async () => {
    const j = {
      seed: 1,
      duration: '50ms',
      profile: 'ibta',
      topology: {
        kind: 'star',
        hosts: 3,
        linkRate: '25Gbps',
        hostMemory: '16MiB',
        links: { 'h1-sw0': { faults: [{ action: 'drop', direction: 'a->b', match: { opcode: 10, psn: [4096, 4096] } }] } },
      },
      // Two QPs of h1 with the same remote QPN on two hosts: only the one to h0 is hurt.
      qps: [
        { name: 'q0', a: 'h1', b: 'h0', timeout: 4, retry_cnt: 2 },
        { name: 'q1', a: 'h2', b: 'h0' },
        { name: 'q2', a: 'h1', b: 'h2', timeout: 4, retry_cnt: 2, psn_a: 20480 },
      ],
      traffic: [
        { qp: 'q0', op: 'write', size: 100, count: 1, expect: 'success-or-exhausted' },
        { qp: 'q2', op: 'write', size: 100, count: 1 },
      ],
    };
    const s = parseScenario(j, 'attr');
    expect(s.qps.map((q) => q.b)).toEqual(['h0', 'h0', 'h2']);
    const hits: FaultHit[] = [];
    const r = await runScenario({ ...s, capture: [] }, { onFault: (h) => hits.push(h) });
    expect(r.verify).toEqual([]);
    expect(r.exhausted.map((x) => x.qp)).toEqual(['q0']);
    // The first try and two retries.
    expect(hits).toHaveLength(3);
    for (const h of hits) expect([h.link, h.direction, h.to]).toEqual(['h1-sw0', 'a->b', 'h0']);
  }, 60_000);

  it('every request of q0 dropped on the second hop (sw0 to h0): the hits are recorded there, and they explain RETRY_EXC_ERR', async () => {
    const j = {
      seed: 2,
      duration: '50ms',
      profile: 'ibta',
      topology: {
        kind: 'star',
        hosts: 2,
        linkRate: '25Gbps',
        hostMemory: '16MiB',
        // Link h0-sw0: a = h0, b = sw0; the switch sends to h0 b->a.
        links: { 'h0-sw0': { faults: [{ action: 'drop', direction: 'b->a', match: { opcode: 10, psn: [4096, 4096] } }] } },
      },
      qps: [{ name: 'q0', a: 'h1', b: 'h0', timeout: 4, retry_cnt: 2 }],
      traffic: [{ qp: 'q0', op: 'write', size: 100, count: 1, expect: 'success-or-exhausted' }],
    };
    const hits: FaultHit[] = [];
    const r = await runScenario({ ...parseScenario(j, 'second-hop'), capture: [] }, { onFault: (h) => hits.push(h) });
    expect(r.verify).toEqual([]);
    expect(r.exhausted.map((x) => x.qp)).toEqual(['q0']);
    expect(hits.map((h) => [h.link, h.direction, h.to, h.kind, h.psn, h.occurrence])).toEqual([
      ['h0-sw0', 'b->a', 'h0', 'drop', 4096, 0],
      ['h0-sw0', 'b->a', 'h0', 'drop', 4096, 1],
      ['h0-sw0', 'b->a', 'h0', 'drop', 4096, 2],
    ]);
  }, 60_000);
});
