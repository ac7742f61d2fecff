/**
 * Header-only frame observers (SimModel.observeHeaders): the scenario
 * runner's own observers (timeline, watchdog, fabric recorder) read headers
 * only, so a run without captures or faults leaves payloads in host memory
 * until delivery (deferred-payloads.ts). Each scenario runs twice, once with
 * one more header-only observer (payloads deferred) and once with a full
 * observer (`observe`: every payload gathered into its frame as before); the
 * two must agree on everything the runner reports (timelines, counters,
 * flows, time series, findings, events, virtual time) and on the headers of
 * every frame each observer saw, and the first must have deferred payloads.
 */
import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { loadCampaign } from '../../src/campaign/config.js';
import { generateScenario } from '../../src/campaign/generator.js';
import { bthOffset, payloadLength } from '../../src/runtime/sim/frame-info.js';
import type { FrameEvent } from '../../src/runtime/sim/sim-device.js';
import { loadScenario, parseScenario, type Scenario } from '../../src/scenario/scenario.js';
import { runScenario, type ScenarioResult } from '../../src/scenario/scenario-runner.js';
import { payloadDeferred } from '../../src/wire/lazy-icrc.js';

/** Every frame an observer saw: direction, device, port, time, length and a CRC of its headers (the bytes before the payload). */
function headerLog(): { log: string[]; deferred: { n: number }; observer: (e: FrameEvent) => void } {
  const log: string[] = [];
  const deferred = { n: 0 };
  return {
    log,
    deferred,
    observer: (e) => {
      const f = e.headers;
      if (payloadDeferred(f)) deferred.n++;
      const bth = bthOffset(f);
      const end = bth < 0 ? Math.min(f.length, 64) : f.length - 4 - ((f[bth + 1]! >> 4) & 3) - payloadLength(f, bth);
      log.push(`${e.dir} ${e.device}:${e.portNum} ${e.ns} ${f.length} ${crc32(f.subarray(0, end))}`);
    },
  };
}

/** What the runner reports, wall-clock figures left out. */
function outcome(r: ScenarioResult): unknown {
  return {
    endedBy: r.endedBy,
    endNs: r.endNs,
    eventsRun: r.eventsRun,
    traffic: r.traffic,
    timeline: r.timeline,
    counters: r.counters,
    sim: r.sim,
    faults: r.faults,
    stalls: r.stalls,
    exhausted: r.exhausted,
    qpStates: r.qpStates,
    verify: r.verify,
    findings: r.findings,
    flows: r.flows,
    fabric: r.fabric,
    packetHops: r.packetHops,
  };
}

async function twin(s: Scenario, label: string): Promise<number> {
  const quiet = headerLog();
  const seen = headerLog();
  const a = await runScenario({ ...s, capture: [] }, { observeHeaders: quiet.observer });
  const b = await runScenario({ ...s, capture: [] }, { observe: seen.observer });
  expect(seen.deferred.n, `${label}: a full observer turns deferral off`).toBe(0);
  expect(quiet.log.length, `${label}: frames seen`).toBe(seen.log.length);
  expect(quiet.log, `${label}: the headers of every frame`).toEqual(seen.log);
  expect(outcome(a), label).toEqual(outcome(b));
  return quiet.deferred.n;
}

describe('header-only observers: the same run with payloads deferred as gathered', () => {
  it('200 seeds of the default campaign without their fault rules (every op, RC/UC/UD, any size and MTU): same reports and headers', async () => {
    const c = loadCampaign('campaigns/default.json');
    let deferred = 0;
    let quietSeeds = 0;
    for (let seed = 1; seed <= 200; seed++) {
      // A fault rule turns deferral off (it reads frames on the way): without them the run defers.
      const json = { ...generateScenario(c, seed), faults: [] };
      const n = await twin(parseScenario(json, `default-${seed}`), `default seed ${seed}`);
      deferred += n;
      if (n > 0) quietSeeds++;
    }
    expect(quietSeeds).toBeGreaterThan(100);
    expect(deferred).toBeGreaterThan(1000);
  }, 600_000);

  it('the 8:1 incast through a switch (PFC, ECN, CNPs): same reports, time series and headers', async () => {
    const n = await twin(loadScenario('scenarios/incast-8to1.json'), 'incast-8to1');
    expect(n).toBeGreaterThan(1000);
  }, 300_000);
});
