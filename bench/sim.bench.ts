/**
 * Discrete-event scheduler rate: simulated events per wall-clock second.
 *
 * Workload: `pending` long-lived events, each of which reschedules itself
 * from its own callback at now + a pseudo-random delta (1..1024 ns, from a
 * table built by the seeded PRNG), the pattern of a model full of timers
 * and per-stage ticks. Priorities are spread over 4 bands so ties take
 * the full comparison.
 *
 * Baseline, measured in the same run: the same callbacks (a counter and
 * the delta lookup) called round-robin from an array, with no queue. It is
 * the floor of dispatching an event; the ratio says what the queue costs.
 */
import { resolveSimLinkParams, SimLink } from '../src/fabric/link.js';
import { Random } from '../src/runtime/sim/random.js';
import { Priority, Scheduler, SimEvent } from '../src/runtime/sim/scheduler.js';
import { measure, type Rate } from './harness.js';

export interface SchedulerBenchResult {
  /** Events in the queue during the run. */
  pending: number;
  /** Scheduler: events run per wall-clock second (best round). */
  eventsPerSec: number;
  /** Baseline loop: callbacks per second without a queue. */
  baselinePerSec: number;
  rates: Rate[];
}

function workload(pending: number): { sched: Scheduler; counter: () => number } {
  const sched = new Scheduler();
  const rng = new Random(1).fork('bench');
  const deltas = new Float64Array(4096);
  for (let i = 0; i < deltas.length; i++) deltas[i] = 1 + rng.int(1024);
  let k = 0;
  let fired = 0;
  for (let i = 0; i < pending; i++) {
    const ev: SimEvent = new SimEvent(`bench.${i}`, (i & 3) - 1, () => {
      fired++;
      sched.schedule(ev, sched.now() + deltas[k++ & 4095]!);
    });
    sched.schedule(ev, deltas[k++ & 4095]!);
  }
  return { sched, counter: () => fired };
}

export function benchScheduler(pending = 1000, budgetMs = 300): SchedulerBenchResult {
  const { sched, counter } = workload(pending);
  const sim = measure(
    `scheduler, ${pending} pending events`,
    0,
    (n) => {
      const before = counter();
      const ran = sched.runUntilIdle(n);
      if (ran !== n || counter() - before !== n) throw new Error('scheduler benchmark lost events');
    },
    budgetMs,
  );

  const deltas = new Float64Array(4096).fill(3);
  let k = 0;
  let fired = 0;
  let t = 0;
  const cbs: (() => void)[] = [];
  for (let i = 0; i < pending; i++) {
    cbs.push(() => {
      fired++;
      t += deltas[k++ & 4095]!;
    });
  }
  const base = measure(
    `baseline: ${pending} callbacks round-robin, no queue`,
    0,
    (n) => {
      let j = 0;
      for (let i = 0; i < n; i++) {
        const cb = cbs[j]!;
        cb();
        if (++j === pending) j = 0;
      }
    },
    budgetMs,
  );
  if (fired === 0.5 || t < 0) console.log(fired, t);
  return { pending, eventsPerSec: sim.opsPerSec, baselinePerSec: base.opsPerSec, rates: [sim, base] };
}

export function printScheduler(results: SchedulerBenchResult[]): void {
  console.log('\n## sim scheduler (events per wall-clock second), best of 5 rounds');
  for (const r of results) {
    for (const rate of r.rates) console.log(`${rate.name.padEnd(44)} ${(rate.opsPerSec / 1e6).toFixed(2).padStart(9)} M/s`);
    console.log(`  queue cost: scheduler at ${((r.eventsPerSec / r.baselinePerSec) * 100).toFixed(1)}% of the no-queue loop`);
  }
}

export interface LinkBenchResult {
  /** Frames carried per wall-clock second (both directions). */
  framesPerSec: number;
  /** Scheduler events per wall-clock second during that run. */
  eventsPerSec: number;
}

/**
 * A `SimLink` at 100 Gb/s carrying 1500-byte frames both ways, each host
 * sending one every 130 ns of virtual time (94% of the line): the cost of
 * a frame through the link (copy on send, serialization, delivery event)
 * with the scheduler underneath.
 */
export function benchLink(budgetMs = 300): LinkBenchResult {
  const sched = new Scheduler();
  const link = new SimLink(sched, resolveSimLinkParams(), 'bench');
  let delivered = 0;
  link.a.onReceive(() => delivered++);
  link.b.onReceive(() => delivered++);
  const payload = new Uint8Array(1500);
  for (const end of [link.a, link.b]) {
    const tick: SimEvent = sched.event('bench.tx', Priority.default, () => {
      end.send(payload);
      sched.schedule(tick, sched.now() + 130);
    });
    sched.schedule(tick, 0);
  }
  let frames = 0;
  let events = 0;
  const r = measure(
    'SimLink, 1500 B both ways at 94% load',
    1500,
    (n) => {
      const d0 = delivered;
      const e0 = sched.eventsRun;
      sched.runUntilIdle(n);
      frames = delivered - d0;
      events = sched.eventsRun - e0;
    },
    budgetMs,
  );
  return { framesPerSec: (r.opsPerSec * frames) / events, eventsPerSec: r.opsPerSec };
}

export function printLink(r: LinkBenchResult): void {
  console.log('\n## sim link (1500 B frames, 100 Gb/s, both directions), best of 5 rounds');
  console.log(`${'events'.padEnd(44)} ${(r.eventsPerSec / 1e6).toFixed(2).padStart(9)} M/s`);
  console.log(`${'frames delivered'.padEnd(44)} ${(r.framesPerSec / 1e6).toFixed(2).padStart(9)} M/s`);
}

/** `node dist/bench/sim.bench.js` runs it alone. */
if (import.meta.url === `file://${process.argv[1]}`) {
  printScheduler([10, 1000, 100_000].map((p) => benchScheduler(p)));
  printLink(benchLink());
}
