/**
 * compareRuns on runs made here: the simulator's (a lost-ACK outage under
 * both retry_cnt 7 choices) and hand-made timelines and counters, for the
 * completion and counter comparisons and the profile explanations.
 */
import { describe, expect, it } from 'vitest';
import { compareRuns, decodeCapture, type RunRecord } from '../../src/compare/index.js';
import { IBTA_PROFILE, RXE_PROFILE, resolveProfile } from '../../src/pipeline/profiles.js';
import { parseScenario } from '../../src/scenario/scenario.js';
import { runScenario } from '../../src/scenario/scenario-runner.js';

/** Every ACK lost for 1.5 ms: eight timeouts of 131 µs would exceed seven retries (test/sim/device-behaviours.test.ts). */
const outage = (profile: string) =>
  parseScenario({
    name: 'retry-7',
    seed: 3,
    duration: '20ms',
    profile,
    qps: [{ name: 'q', type: 'RC', mtu: 1024, timeout: 5, retry_cnt: 7 }],
    faults: [{ name: 'outage', action: 'drop', direction: 'b->a', match: { opcode: 'ack', window: ['0ns', '1.5ms'] } }],
    traffic: [{ qp: 'q', op: 'write', size: 1024, count: 1, depth: 1, expect: 'any' }],
  });

async function simRun(profile: 'ibta' | 'rxe'): Promise<RunRecord> {
  const s = outage(profile);
  const r = await runScenario(s);
  return {
    label: profile,
    ...decodeCapture(r.captures[s.capture[0]!]!, profile),
    completions: r.timeline.qps.map((q) => ({ qp: q.qp, wrs: q.wrs })),
    counters: Object.entries(r.counters).map(([device, ports]) => ({ device, ports })),
    profile: resolveProfile(profile),
  };
}

describe('compareRuns', () => {
  it('retry_cnt 7 under ibta and rxe: the status and the retries past the seventh are the profile choice; the transport timer agrees', async () => {
    const [a, b] = [await simRun('ibta'), await simRun('rxe')];
    const r = compareRuns(a, b);
    const status = r.differences.find((d) => d.kind === 'completion-field');
    expect(status).toMatchObject({
      field: 'status',
      a: 'IBV_WC_RETRY_EXC_ERR',
      b: 'IBV_WC_SUCCESS',
      explainedBy: 'retryCnt7Infinite',
      where: { qp: 'q', wr: 0 },
    });
    // Eight sends in A (the first and seven retries); B's ninth and later are explained.
    expect(r.a.retransmissions).toBe(7);
    expect(r.b.retransmissions).toBeGreaterThan(7);
    const extra = r.differences.filter((d) => d.kind === 'packet-only-in-b' && d.where.flow?.startsWith('requests'));
    expect(extra.length).toBeGreaterThan(0);
    for (const d of extra) expect(d.explainedBy).toBe('retryCnt7Infinite');
    expect(r.differences.some((d) => d.kind === 'timer')).toBe(false);
    // With a tolerance of 0 the first seven retries must still be exactly alike (the same seed, the same timer).
    expect(compareRuns(a, b, { timerTolerance: 0 }).differences.some((d) => d.kind === 'timer')).toBe(false);
    // Told nothing of the profiles, nothing is explained.
    const bare = compareRuns({ ...a, profile: undefined }, { ...b, profile: undefined });
    expect(bare.differences.every((d) => d.explainedBy === undefined)).toBe(true);
    expect(bare.unexplained).toBe(bare.differences.length);
  });

  const run = (wrs: [number, string | null, number | null][], counters: Record<string, number>, profile = IBTA_PROFILE): RunRecord => ({
    label: 'x',
    packets: [],
    invalidFrames: 0,
    completions: [{ qp: 'q', wrs: wrs.map(([index, status, completedNs]) => ({ index, op: 'send', size: 100, status, completedNs })) }],
    counters: [{ device: 'rnic1', ports: { '1': counters } }],
    profile,
  });

  it('completions: status, order and a missing completion, each at its QP and WR; counters by name', () => {
    const a = run(
      [
        [0, 'IBV_WC_SUCCESS', 10],
        [1, 'IBV_WC_SUCCESS', 20],
        [2, 'IBV_WC_WR_FLUSH_ERR', 30],
      ],
      { resp_cqe_flush_error: 1, rx_write_requests: 5 },
    );
    const b = run(
      [
        [0, 'IBV_WC_SUCCESS', 25],
        [1, 'IBV_WC_SUCCESS', 20],
        [2, null, null],
      ],
      { resp_cqe_flush_error: 0, rx_write_requests: 5 },
      RXE_PROFILE,
    );
    const r = compareRuns(a, b);
    expect(r.differences.map((d) => [d.kind, d.where.wr ?? d.where.counter, d.explainedBy ?? '-'])).toEqual([
      ['completion-missing', 2, 'flushRecvPostedInErr'],
      ['completion-order', 0, '-'],
      ['counter', 'resp_cqe_flush_error', 'retryCnt7Infinite or recvOverflow or flushRecvPostedInErr'],
    ]);
    expect(r.unexplained).toBe(1);
    expect(compareRuns(a, b, { allow: ['completion-order'] }).unexplained).toBe(0);
    expect(compareRuns(a, b, { strict: true }).unexplained).toBe(3);
  });
});

describe('readResponseGap', () => {
  /** One READ of four responses, the second lost once; a 4 ms transport timer (timeout 10). */
  const readLoss = (profile: string) =>
    parseScenario({
      name: 'read-gap',
      seed: 1,
      duration: '50ms',
      profile,
      qps: [{ name: 'q', type: 'RC', mtu: 1024, timeout: 10 }],
      faults: [{ name: 'lose', action: 'drop', direction: 'b->a', match: { opcode: 'RC_RDMA_READ_RESPONSE_MIDDLE', count: 1 } }],
      traffic: [{ qp: 'q', op: 'read', size: 4096, count: 1, depth: 1 }],
    });
  const record = async (profile: 'ibta' | 'rxe'): Promise<RunRecord> => {
    const s = readLoss(profile);
    const r = await runScenario(s);
    expect(r.traffic[0]!.ok, `${profile}: the READ completes`).toBe(1);
    return { label: profile, ...decodeCapture(r.captures[s.capture[0]!]!, profile), profile: resolveProfile(profile) };
  };

  it('ibta asks the READ again at the gap; rxe ignores the gap and asks one timeout later; compare names the choice', async () => {
    const [a, b] = [await record('ibta'), await record('rxe')];
    const r = compareRuns(a, b);
    const t = r.differences.find((d) => d.kind === 'timer');
    expect(t).toMatchObject({ explainedBy: 'readResponseGap' });
    const timeoutNs = 4096 * 2 ** 10;
    expect(t!.a as number).toBeLessThan(timeoutNs / 10);
    expect(t!.b as number).toBeGreaterThanOrEqual(timeoutNs);
    // Nothing else differs but what the other profile choices explain.
    expect(r.unexplained).toBe(0);
  });
});
