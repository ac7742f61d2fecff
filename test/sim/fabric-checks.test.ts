/**
 * The scenario runner's checks of a run through a switch
 * (src/scenario/fabric-checks.ts): PFC keeps a lossless priority lossless,
 * and DCQCN's rate follows its rules. Each is shown failing on a run (or
 * events) that breaks it, and passing on runs that keep it.
 */
import { describe, expect, it } from 'vitest';
import type { CongestionEvent } from '../../src/runtime/sim/sim-model.js';
import { dcqcnFindings } from '../../src/scenario/fabric-checks.js';
import { parseScenario } from '../../src/scenario/scenario.js';
import { runScenario } from '../../src/scenario/scenario-runner.js';

/** Four senders into h0 through one switch, 64 KiB WRITEs at priority 3, a small buffer. */
function incast(pfc: Record<string, unknown>, faults: unknown[] = []): Record<string, unknown> {
  return {
    seed: 3,
    duration: '100ms',
    topology: { kind: 'star', hosts: 5, linkRate: '25Gbps', delay: '1us', hostMemory: '16MiB' },
    switch: { buffer: '512KiB', pfc: { priorities: [3], ...pfc }, ecn: { enabled: false } },
    incast: { receiver: 'h0', senders: 4, size: 65536, count: 8, priority: 3, mtu: 4096 },
    faults,
  };
}

describe('PFC keeps a lossless priority lossless', () => {
  it('with headroom: nothing refused, no PSN gap at the receiver, every byte delivered', async () => {
    const r = await runScenario({ ...parseScenario(incast({}), 'pfc'), capture: [] });
    expect(r.verify).toEqual([]);
    let xoff = 0;
    for (const c of Object.values(r.fabric!.switches.sw0!)) {
      expect(c.droppedLossless).toBe(0);
      xoff += c.pauseSent;
    }
    expect(xoff, 'the incast did congest the switch').toBeGreaterThan(0);
    expect(r.counters.h0!['1']!.out_of_sequence).toBe(0);
  }, 60_000);

  it('with no headroom the switch refuses lossless frames: a lossless-drop finding, and the gaps they leave', async () => {
    const r = await runScenario({
      ...parseScenario(incast({ headroomFactor: 0, headroomMtus: 0, mode: 'static', xoff: 8192, xon: 4096 }), 'nohdrm'),
      capture: [],
    });
    const kinds = new Set(r.findings.map((f) => f.kind));
    expect(kinds.has('lossless-drop')).toBe(true);
    expect(kinds.has('lossless-gap')).toBe(true);
    expect(r.findings.find((f) => f.kind === 'lossless-drop')!.detail).toMatch(/^sw0:1 refused \d+ frames of a lossless priority \(PFC on\)$/);
  }, 60_000);

  it('PFC off: the refusals are no finding (a lossy fabric may drop)', async () => {
    const r = await runScenario({ ...parseScenario(incast({ enabled: false }), 'lossy'), capture: [] });
    expect(r.findings.filter((f) => f.kind.startsWith('lossless'))).toEqual([]);
    // It did drop (and the senders' 67 ms ACK timeouts, timeout 14, leave WRs outstanding at 100 ms: no matter here).
    expect(Object.values(r.fabric!.switches.sw0!).reduce((n, c) => n + c.droppedFrames, 0)).toBeGreaterThan(0);
  }, 60_000);
});

describe('DCQCN rules', () => {
  const s = parseScenario(incast({}), 'events');
  const ev = (kind: CongestionEvent['kind'], ns: number, gbps: number, targetGbps = gbps): CongestionEvent => ({
    device: 'h1',
    qpn: 17,
    kind,
    ns,
    rateBps: gbps * 1e9,
    targetBps: targetGbps * 1e9,
    alpha: 0.5,
  });
  const details = (events: CongestionEvent[], endNs: number): string[] => dcqcnFindings(s, events, endNs).map((f) => f.detail);

  it('a cut, then increases back to the line rate: nothing to say', () => {
    const ok = [
      ev('first-cnp', 1000, 25),
      ev('cut', 5000, 12.5, 25),
      ev('fast-recovery', 305_000, 18.75, 25),
      ev('additive', 605_000, 21.9, 25),
      ev('hyper', 905_000, 25),
    ];
    expect(details(ok, 2_000_000)).toEqual([]);
  });

  it('a cut that raises the rate, an increase that lowers it or its target, a rate past the target or the line: each found', () => {
    expect(details([ev('cut', 5000, 10, 25), ev('cut', 9000, 11, 25)], 10_000)).toEqual([
      'DCQCN cut at 9000 ns: a cut raised the rate from 10.000 Gb/s to 11.000 Gb/s',
    ]);
    expect(details([ev('cut', 5000, 10, 25), ev('additive', 9000, 9, 25)], 10_000)).toEqual([
      'DCQCN additive at 9000 ns: an increase lowered the rate from 10.000 Gb/s to 9.000 Gb/s',
    ]);
    expect(details([ev('cut', 5000, 10, 25), ev('additive', 9000, 11, 20)], 10_000)).toEqual([
      'DCQCN additive at 9000 ns: an increase lowered the target from 25.000 Gb/s to 20.000 Gb/s',
    ]);
    expect(details([ev('cut', 5000, 10, 12), ev('hyper', 9000, 14, 13)], 10_000)).toEqual([
      'DCQCN hyper at 9000 ns: the rate 14.000 Gb/s passed the target 13.000 Gb/s',
    ]);
    expect(details([ev('first-cnp', 5000, 26)], 10_000)).toEqual(['DCQCN first-cnp at 5000 ns: rate 26.000 Gb/s is outside [1.000 Mb/s, 25.000 Gb/s]']);
    expect(details([ev('cut', 5000, 0.0005, 25)], 10_000)).toEqual(['DCQCN cut at 5000 ns: rate 0.500 Mb/s is outside [1.000 Mb/s, 25.000 Gb/s]']);
  });

  it('a cut with no increase in rpg_time_reset (300 us) after it: the rate never recovered; a run that ends sooner says nothing', () => {
    expect(details([ev('cut', 5000, 10, 25)], 200_000)).toEqual([]);
    expect(details([ev('cut', 5000, 10, 25)], 400_000)).toEqual([
      'DCQCN cut at 5000 ns: no increase in the 395000 ns after it (rpg_time_reset 300000 ns): the rate never recovered',
    ]);
  });

  it('an ECN incast with DCQCN keeps every rule (the runner checks its events)', async () => {
    const j = incast({ enabled: false });
    j.switch = { buffer: '4MiB', ecn: { thresholds: [{ linkRate: '25Gbps', kmin: '20KB', kmax: '80KB', pmax: 0.2 }] } };
    const r = await runScenario({ ...parseScenario(j, 'ecn'), capture: [] });
    expect(r.verify).toEqual([]);
    const cuts = Object.values(r.counters).reduce((n, d) => n + (d['1']!.rp_cnp_handled ?? 0), 0);
    expect(cuts, 'CNPs cut the senders').toBeGreaterThan(0);
  }, 60_000);
});
