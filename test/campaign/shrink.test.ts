/** Shrinking keeps the failure class and makes the scenario small; judging classes findings. */
import { describe, expect, it } from 'vitest';
import { formatScenario } from '../../src/campaign/campaign.js';
import { DEFAULT_CAMPAIGN } from '../../src/campaign/config.js';
import { inlineExecutor } from '../../src/campaign/executor.js';
import { generateScenario } from '../../src/campaign/generator.js';
import type { ScenarioJson } from '../../src/campaign/generator.js';
import { classOf, judge } from '../../src/campaign/invariants.js';
import { runJudged } from '../../src/campaign/run-seed.js';
import { pinFaults, shrinkScenario } from '../../src/campaign/shrink.js';
import { parseScenario } from '../../src/scenario/scenario.js';
import { type FaultHit, runScenario } from '../../src/scenario/scenario-runner.js';

/** Two RC QPs and a UD QP; every RC WRITE a->b on rc1 is lost, and rc1 has no retries: RETRY_EXC_ERR. The random faults are harmless to it. */
function failing(): ScenarioJson {
  const wr = (op: string, size?: number) => (size === undefined ? { op } : { op, size });
  return {
    name: 'shrink-me',
    seed: 3,
    duration: '20ms',
    qps: [
      { name: 'rc0', type: 'RC', mtu: 1024, timeout: 4 },
      { name: 'rc1', type: 'RC', mtu: 512, timeout: 4, retry_cnt: 0 },
      { name: 'ud0', type: 'UD', mtu: 1024 },
    ],
    faults: [
      { action: 'delay', probability: 0.3, delayNs: 2000, match: { qpn: 2 } },
      { action: 'drop', direction: 'a->b', match: { opcode: 'write', qpn: 3 } },
      { action: 'duplicate', probability: 0.2 },
    ],
    traffic: [
      { qp: 'rc0', from: 'a', depth: 4, wrs: [wr('send', 3000), wr('read', 2000), wr('fetch_add'), wr('write', 100)] },
      {
        qp: 'rc1',
        from: 'a',
        depth: 3,
        recvStartNs: 5000,
        wrs: [wr('send', 700), wr('cmp_swap'), wr('send_imm', 9), wr('read', 4000), wr('write', 5000), wr('send', 20), wr('write_imm', 30)],
      },
      { qp: 'rc1', from: 'b', depth: 2, wrs: [wr('write', 800), wr('read', 900)] },
      { qp: 'ud0', from: 'a', depth: 2, wrs: [wr('send', 100), wr('send_imm', 10)] },
    ],
  } as ScenarioJson;
}

describe('shrinking', () => {
  it('keeps the failure class and ends with the one QP and the one WR that matter', async () => {
    const before = await runJudged(failing(), 'shrink-me');
    expect(before.primary).toBe('RC error-completion IBV_WC_RETRY_EXC_ERR');
    const { scenario, steps } = await shrinkScenario(failing(), before.primary!, inlineExecutor());
    expect(steps).toBeGreaterThan(3);
    const after = await runJudged(scenario, 'shrunk');
    expect(after.primary).toBe(before.primary);
    expect(scenario.qps.map((q) => q.name)).toEqual(['rc1']);
    expect(scenario.traffic).toHaveLength(1);
    const wrs = (scenario.traffic[0] as { wrs: { op: string; size?: number }[] }).wrs;
    // One zero-byte WRITE (or WRITE with immediate: the rule drops both), one pinned drop of its one packet.
    expect(wrs).toHaveLength(1);
    expect(wrs[0]).toMatchObject({ size: 0 });
    expect(wrs[0]!.op).toMatch(/^write/);
    expect(scenario.faults).toHaveLength(1);
    expect(scenario.faults[0]).toMatchObject({ action: 'drop', direction: 'a->b', match: { qpn: 2, psn: [0x1000, 0x1000], count: 1 } });
    // Still a scenario file `rnic sim` takes.
    expect(() => parseScenario(scenario)).not.toThrow();
  });

  it('pinned faults hit the same frames as the random rules they replace', async () => {
    const json = failing();
    json.qps[1]!.retry_cnt = 7;
    json.faults = [
      { action: 'drop', probability: 0.1 },
      { action: 'duplicate', probability: 0.1 },
    ];
    const hits: FaultHit[] = [];
    const r1 = await runScenario({ ...parseScenario(json), capture: [] }, { onFault: (h) => hits.push(h) });
    expect(hits.length).toBeGreaterThan(2);
    const pinned = { ...json, faults: pinFaults(json.faults, hits) };
    const r2 = await runScenario({ ...parseScenario(pinned), capture: [] });
    const f1 = r1.sim.links.l0!.faults!;
    const f2 = r2.sim.links.l0!.faults!;
    expect([f2.dropped, f2.duplicated]).toEqual([f1.dropped, f1.duplicated]);
    expect(JSON.stringify(r2.timeline)).toBe(JSON.stringify(r1.timeline));
  });
});

describe('judging', () => {
  const f = (kind: string, ns: number, extra: Record<string, string> = {}) => ({
    kind,
    qp: 'q',
    from: 'a',
    type: 'RC',
    op: '',
    status: '',
    ns,
    detail: kind,
    ...extra,
  });
  const result = (findings: ReturnType<typeof f>[]) =>
    ({ findings, stalls: [], exhausted: [], endNs: 100, endedBy: 'complete', timeline: { qps: [] } }) as never;

  it('a class is type, kind and what it is about; the first finding that is no consequence decides', () => {
    expect(classOf(f('error-completion', 1, { status: 'IBV_WC_BAD_RESP_ERR', op: 'read' }))).toBe('RC error-completion IBV_WC_BAD_RESP_ERR');
    expect(classOf(f('data', 1, { op: 'read' }))).toBe('RC data read');
    expect(classOf(f('stall', 1, { op: 'read' }))).toBe('RC stall');
    const v = judge(result([f('error-completion', 5, { status: 'IBV_WC_WR_FLUSH_ERR' }), f('atomic', 7), f('outstanding', 9)]));
    expect(v.ok).toBe(false);
    expect(v.primary).toBe('RC atomic');
    expect(v.classes).toEqual(['RC atomic', 'RC error-completion IBV_WC_WR_FLUSH_ERR', 'RC outstanding']);
    expect(judge(result([])).ok).toBe(true);
  });

  it('the timeline cross-check: a WR without a completion in a run that completed', () => {
    const r = {
      findings: [],
      stalls: [],
      exhausted: [],
      endNs: 100,
      endedBy: 'complete',
      timeline: {
        qps: [
          {
            qp: 'q',
            from: 'a',
            wrs: [
              { index: 0, op: 'send', completedNs: 5, status: 'IBV_WC_SUCCESS' },
              { index: 1, op: 'send', completedNs: null, status: null },
            ],
          },
        ],
      },
    } as never;
    const v = judge(r, new Map([['q', 'UC']]));
    expect(v.ok).toBe(false);
    expect(v.failures).toEqual(['q: WR 1 (send) has no completion in the timeline']);
    expect(v.primary).toBe('UC timeline');
  });
});

describe('scenario files', () => {
  it('are the same JSON, one work request and one fault rule per line', () => {
    const j = generateScenario(DEFAULT_CAMPAIGN, 42);
    const text = formatScenario(j);
    expect(JSON.parse(text)).toEqual(j);
    const wrs = j.traffic.reduce((n, t) => n + (t.wrs as unknown[]).length, 0);
    expect(text.split('\n').filter((l) => /^\s*\{ "op": /.test(l)).length).toBe(wrs);
    expect(text.split('\n').filter((l) => /^\s*\{ "action": /.test(l)).length).toBe(j.faults.length);
  });
});
