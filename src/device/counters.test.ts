import { describe, expect, it } from 'vitest';
import { counterIndex, COUNTERS, Ctr, HwCounters } from './counters.js';

describe('hardware counters', () => {
  it('Ctr constants match the declaration table', () => {
    const pairs: [number, string][] = [
      [Ctr.SENT_PKTS, 'sent_pkts'],
      [Ctr.RDMA_RECVS, 'rdma_recvs'],
      [Ctr.OUT_OF_SEQUENCE, 'out_of_sequence'],
      [Ctr.NP_CNP_SENT, 'np_cnp_sent'],
      [Ctr.REQ_CQE_FLUSH_ERROR, 'req_cqe_flush_error'],
      [Ctr.QKEY_VIOL_CNTR, 'qkey_viol_cntr'],
    ];
    for (const [i, n] of pairs) expect(COUNTERS[i]!.name).toBe(n);
    expect(Ctr.COUNT as number).toBe(COUNTERS.length);
    expect(new Set(COUNTERS.map((c) => c.name)).size).toBe(COUNTERS.length);
    for (const c of COUNTERS) expect(c.name).toMatch(/^[a-z0-9_]+$/);
    expect(counterIndex('rp_cnp_handled')).toBe(Ctr.RP_CNP_HANDLED);
    expect(counterIndex('nope')).toBe(-1);
  });

  it('lanes are written without atomics and summed by readers; other threads share the buffer', () => {
    const c = HwCounters.create(2, 3);
    c.lane(1, 0)[Ctr.SENT_PKTS]! += 5;
    c.lane(1, 2)[Ctr.SENT_PKTS]! += 7;
    c.lane(2, 1)[Ctr.RCVD_PKTS]!++;
    expect(c.read(1, 'sent_pkts')).toBe(12);
    expect(c.read(2, Ctr.SENT_PKTS)).toBe(0);
    const other = HwCounters.attach(c.descriptor);
    expect(other.snapshot(2)['rcvd_pkts']).toBe(1);
    expect(() => c.lane(3, 0)).toThrowError(expect.objectContaining({ code: 'DEV_ERR_BAD_CONFIG' }));
    expect(() => c.read(1, 'bogus')).toThrowError(expect.objectContaining({ code: 'DEV_ERR_BAD_CONFIG' }));
  });
});
