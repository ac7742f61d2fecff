/**
 * Named device behaviours: the IBTA by default, a real device's difference
 * when switched on (src/pipeline/nic-env.ts Quirks), each provoked precisely
 * on the simulator.
 */
import { describe, expect, it } from 'vitest';
import { ctr, run } from './helpers.js';

/** Every ACK lost for 1.5 ms, then the link heals: 8 timeouts of 131 µs (timeout 5) would exceed retry_cnt 7. */
const lostAcks = (quirks: Record<string, boolean>) => ({
  name: 'retry-7',
  seed: 3,
  duration: '20ms',
  quirks,
  qps: [{ name: 'q', type: 'RC', mtu: 1024, timeout: 5, retry_cnt: 7 }],
  faults: [{ name: 'outage', action: 'drop', direction: 'b->a', match: { opcode: 'ack', window: ['0ns', '1.5ms'] } }],
  traffic: [{ qp: 'q', op: 'write', size: 1024, count: 1, depth: 1, expect: 'any' }],
});

describe('rxeRetryCnt7Infinite', () => {
  it('IBTA (default): retry_cnt 7 is seven retries, then RETRY_EXC_ERR', async () => {
    const r = await run(lostAcks({}));
    expect(r.traffic[0]!.ok).toBe(0);
    expect(Object.keys(r.traffic[0]!.errors)).toEqual(['IBV_WC_RETRY_EXC_ERR']);
    expect(ctr(r, 'rnic0', 'retry_exceeded_err')).toBe(1);
    expect(ctr(r, 'rnic0', 'local_ack_timeout_err')).toBe(7);
  });

  it('switched on (Linux rxe): retry_cnt 7 retries forever, and the WRITE completes once the ACKs get through', async () => {
    const r = await run(lostAcks({ rxeRetryCnt7Infinite: true }));
    expect(r.traffic[0]!.ok).toBe(1);
    expect(ctr(r, 'rnic0', 'retry_exceeded_err')).toBe(0);
    expect(ctr(r, 'rnic0', 'local_ack_timeout_err')).toBeGreaterThan(7);
  });
});
