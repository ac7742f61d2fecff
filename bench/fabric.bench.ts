/**
 * The simulator's packet rate through a switch (issue 10): the HPCC incasts
 * (scenarios/incast-8to1.json, incast-64to1.json: N senders, one receiver,
 * one 100 Gb/s switch, 1,000,000-byte WRITEs, PFC and ECN on) run by the
 * scenario runner exactly as `rnic sim` runs them, captures off.
 *
 * Reported, per scenario, min / median / max over the rounds:
 *  - packet-hops per wall second of the traffic (one frame delivered over
 *    one link is one hop; host and QP setup excluded), and per CPU second
 *    of the process over the same span (the machine is shared: wall time
 *    includes waiting for a core);
 *  - wall ms per simulated ms;
 *  - the whole run's wall time (setup included);
 *  - events per packet-hop;
 * beside the scheduler's no-queue loop (bench/sim.bench.ts) measured in the
 * same run, and the saved baseline (bench/baseline.json, keys
 * `fabric-<scenario>` and `fabric-<scenario>-cpu`). The goal is twice what
 * ns-3's HPCC simulator does on this machine's kind (~0.64 M packet-hops/s
 * at 8:1, ~0.43 M at 64:1); the figures say how far off that is.
 */
import { loadScenario, type Scenario } from '../src/scenario/scenario.js';
import { runScenario } from '../src/scenario/scenario-runner.js';
import { benchScheduler } from './sim.bench.js';
import type { Spread } from './sim-stream.bench.js';

export interface FabricBenchResult {
  readonly name: string;
  readonly key: string;
  readonly hopsPerSec: Spread;
  readonly hopsPerCpuSec: Spread;
  readonly wallMsPerSimMs: Spread;
  readonly runWallMs: Spread;
  readonly hops: number;
  readonly simulatedNs: number;
  readonly drops: number;
  readonly eventsPerHop: number;
  readonly noQueuePerSec: number;
  /** ns-3 HPCC's packet-hops per second for this incast on this machine's kind (issue 10), or 0 when not known. */
  readonly ns3PerSec: number;
}

/** What issue 10 gives for ns-3's HPCC simulator on this machine's kind (packet-hops per wall second). */
const NS3_HOPS_PER_SEC: Readonly<Record<string, number>> = { 'incast-8to1': 640_000, 'incast-64to1': 430_000 };

/** Packet-hops run uncounted first: V8 needs ~100 k frames over fresh models before a round's cost settles (sim-stream.bench.ts). */
const WARM_UP_HOPS = 100_000;

function spread(xs: number[]): Spread {
  const s = [...xs].sort((a, b) => a - b);
  return { min: s[0]!, median: s[s.length >> 1]!, max: s[s.length - 1]! };
}

async function oneRound(s: Scenario) {
  const r = await runScenario(s);
  if (r.verify.length > 0) throw new Error(`${s.name}: ${r.verify[0]}`);
  let drops = 0;
  for (const ports of Object.values(r.fabric?.switches ?? {})) for (const p of Object.values(ports)) drops += p.droppedFrames;
  return { r, drops };
}

export async function benchFabric(file: string, rounds: number): Promise<FabricBenchResult> {
  const s0 = loadScenario(file);
  const s: Scenario = { ...s0, capture: [], output: { ...s0.output, plots: false } };
  // Warm-up (JIT): rounds until WARM_UP_HOPS have run (the 8:1 incast is ~17 k hops a round; one left its counted rounds 1.5-4x apart).
  for (let hops = 0; hops < WARM_UP_HOPS; ) hops += (await oneRound(s)).r.packetHops;
  const rs = [];
  for (let i = 0; i < rounds; i++) rs.push(await oneRound(s));
  const noQueue = benchScheduler(10, 200).baselinePerSec;
  const last = rs[rs.length - 1]!;
  return {
    name: `sim: ${s.name} (${s.traffic.length} senders, one switch, 100 Gb/s, PFC + ECN)`,
    key: `fabric-${s.name}`,
    hopsPerSec: spread(rs.map((x) => x.r.packetHops / (x.r.trafficWallNs / 1e9))),
    hopsPerCpuSec: spread(rs.map((x) => x.r.packetHops / (x.r.trafficCpuNs / 1e9))),
    wallMsPerSimMs: spread(rs.map((x) => x.r.trafficWallNs / 1e6 / (x.r.endNs / 1e6))),
    runWallMs: spread(rs.map((x) => x.r.wallNs / 1e6)),
    hops: last.r.packetHops,
    simulatedNs: last.r.endNs,
    drops: last.drops,
    eventsPerHop: last.r.eventsRun / last.r.packetHops,
    noQueuePerSec: noQueue,
    ns3PerSec: NS3_HOPS_PER_SEC[s.name] ?? 0,
  };
}

const fmtK = (x: number): string => (x >= 1e6 ? `${(x / 1e6).toFixed(2)} M` : `${(x / 1e3).toFixed(0)} k`);
const fmtSpread = (s: Spread, f: (x: number) => string): string => `${f(s.min)} / ${f(s.median)} / ${f(s.max)}`;

export function printFabric(results: readonly FabricBenchResult[], vsBaseline: (key: string, value: number, noQueue: number) => string = () => ''): void {
  console.log('\n## sim fabric: incast through a switch (min / median / max over rounds; goal: twice ns-3 HPCC)');
  for (const r of results) {
    console.log(r.name);
    console.log(`  packet-hops/s       ${fmtSpread(r.hopsPerSec, fmtK).padEnd(26)} ${vsBaseline(r.key, r.hopsPerSec.median, r.noQueuePerSec)}`);
    console.log(`  per CPU second      ${fmtSpread(r.hopsPerCpuSec, fmtK).padEnd(26)} ${vsBaseline(`${r.key}-cpu`, r.hopsPerCpuSec.median, r.noQueuePerSec)}`);
    console.log(`  wall ms per sim ms  ${fmtSpread(r.wallMsPerSimMs, (x) => x.toFixed(1))}`);
    console.log(`  whole run, wall ms  ${fmtSpread(r.runWallMs, (x) => x.toFixed(0))}   (setup included)`);
    console.log(
      `  traffic             ${r.hops} hops, ${(r.simulatedNs / 1000).toFixed(0)} µs simulated, ${r.drops} dropped, ${r.eventsPerHop.toFixed(2)} events per hop`,
    );
    if (r.ns3PerSec > 0)
      console.log(
        `  vs ns-3 HPCC        ${fmtK(r.ns3PerSec)} packet-hops/s there (issue 10): this median at x${(r.hopsPerSec.median / r.ns3PerSec).toFixed(2)} wall, x${(r.hopsPerCpuSec.median / r.ns3PerSec).toFixed(2)} per CPU second; goal x2`,
      );
    console.log(
      `  same run: scheduler no-queue loop ${(r.noQueuePerSec / 1e6).toFixed(0)} M callbacks/s; ` +
        `packet-hops at ${((r.hopsPerSec.median / r.noQueuePerSec) * 1e6).toFixed(1)} per M no-queue callbacks`,
    );
  }
}

/** `node dist/bench/fabric.bench.js` runs it alone. */
if (import.meta.url === `file://${process.argv[1]}`) {
  const { vsBaseline } = await import('./baseline.js');
  printFabric([await benchFabric('scenarios/incast-8to1.json', 5), await benchFabric('scenarios/incast-64to1.json', 3)], vsBaseline);
  process.exit(0);
}
