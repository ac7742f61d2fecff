import { describe, expect, it } from 'vitest';
import { benchScheduler } from '../../../bench/sim.bench.js';
import { Random } from './random.js';
import { Priority, PRIORITY_MAX, PRIORITY_MIN, Scheduler, SimError, SimEvent } from './scheduler.js';

function codeOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (e) {
    return (e as SimError).code;
  }
  return undefined;
}

describe('Scheduler ordering', () => {
  it('runs by time, then priority (lower first), then scheduling order', () => {
    const s = new Scheduler();
    const log: string[] = [];
    const mk = (name: string, prio: number) => new SimEvent(name, prio, () => log.push(`${s.now()}:${name}`));
    const evs = [mk('t20', 0), mk('t10-p5-first', 5), mk('t10-p0', 0), mk('t10-p5-second', 5), mk('t10-pm3', -3), mk('t5', 50)];
    s.schedule(evs[0]!, 20);
    s.schedule(evs[1]!, 10);
    s.schedule(evs[2]!, 10);
    s.schedule(evs[3]!, 10);
    s.schedule(evs[4]!, 10);
    s.schedule(evs[5]!, 5);
    expect(s.runUntilIdle()).toBe(6);
    expect(log).toEqual(['5:t5', '10:t10-pm3', '10:t10-p0', '10:t10-p5-first', '10:t10-p5-second', '20:t20']);
    expect(s.now()).toBe(20);
    expect(s.eventsRun).toBe(6);
  });

  it('an event scheduled at now by a callback runs in the same instant, after those already queued with its priority', () => {
    const s = new Scheduler();
    const log: string[] = [];
    const late = new SimEvent('late', 0, () => log.push('late'));
    const a = new SimEvent('a', 0, () => {
      log.push('a');
      s.schedule(late, s.now());
    });
    const b = new SimEvent('b', 0, () => log.push('b'));
    const urgent = new SimEvent('urgent', -1, () => log.push('urgent'));
    const c = new SimEvent('c', 0, () => {
      log.push('c');
      s.schedule(urgent, s.now());
    });
    s.schedule(a, 7);
    s.schedule(c, 7);
    s.schedule(b, 7);
    s.runUntilIdle();
    expect(log).toEqual(['a', 'c', 'urgent', 'b', 'late']);
  });

  it('a self-rescheduling event (a tick) is unscheduled while its callback runs', () => {
    const s = new Scheduler();
    const seen: number[] = [];
    const tick: SimEvent = new SimEvent('tick', 0, () => {
      expect(tick.scheduled).toBe(false);
      expect(tick.when).toBe(-1);
      seen.push(s.now());
      if (seen.length < 5) s.schedule(tick, s.now() + 3);
    });
    s.schedule(tick, 1);
    expect(tick.scheduled).toBe(true);
    expect(tick.when).toBe(1);
    s.runUntilIdle();
    expect(seen).toEqual([1, 4, 7, 10, 13]);
    expect(s.pending).toBe(0);
  });
});

describe('reschedule and deschedule', () => {
  it('reschedule moves a queued event and takes a new sequence number', () => {
    const s = new Scheduler();
    const log: string[] = [];
    const x = new SimEvent('x', 0, () => log.push('x'));
    const y = new SimEvent('y', 0, () => log.push('y'));
    s.schedule(x, 10);
    s.schedule(y, 10);
    s.reschedule(x, 10); // same time, now after y
    s.runUntilIdle();
    expect(log).toEqual(['y', 'x']);
    log.length = 0;
    s.schedule(x, 100);
    s.schedule(y, 200);
    s.reschedule(y, 50);
    s.reschedule(x, 300);
    expect(s.nextTime()).toBe(50);
    s.runUntilIdle();
    expect(log).toEqual(['y', 'x']);
    expect(s.now()).toBe(300);
  });

  it('reschedule of an unscheduled event schedules it', () => {
    const s = new Scheduler();
    let ran = 0;
    const x = new SimEvent('x', 0, () => ran++);
    s.reschedule(x, 5);
    expect(x.scheduled).toBe(true);
    s.runUntilIdle();
    expect(ran).toBe(1);
  });

  it('deschedule takes an event out; it can be scheduled again', () => {
    const s = new Scheduler();
    const log: string[] = [];
    const evs = ['a', 'b', 'c', 'd'].map((n) => new SimEvent(n, 0, () => log.push(n)));
    evs.forEach((e, i) => s.schedule(e, 10 + i));
    s.deschedule(evs[0]!);
    s.deschedule(evs[2]!);
    expect(s.pending).toBe(2);
    expect(evs[2]!.scheduled).toBe(false);
    s.schedule(evs[2]!, 1);
    s.runUntilIdle();
    expect(log).toEqual(['c', 'b', 'd']);
  });

  it('a callback may deschedule and reschedule other events', () => {
    const s = new Scheduler();
    const log: string[] = [];
    const victim = new SimEvent('victim', 0, () => log.push('victim'));
    const moved = new SimEvent('moved', 0, () => log.push(`moved@${s.now()}`));
    const boss = new SimEvent('boss', 0, () => {
      log.push('boss');
      s.deschedule(victim);
      s.reschedule(moved, 40);
    });
    s.schedule(boss, 1);
    s.schedule(victim, 2);
    s.schedule(moved, 3);
    s.runUntilIdle();
    expect(log).toEqual(['boss', 'moved@40']);
  });
});

describe('running', () => {
  it('runUntil runs events at or before t and leaves the clock at t', () => {
    const s = new Scheduler();
    const log: number[] = [];
    for (const t of [5, 10, 11, 30]) s.schedule(new SimEvent(`e${t}`, 0, () => log.push(s.now())), t);
    expect(s.runUntil(10)).toBe(2);
    expect(s.now()).toBe(10);
    expect(s.runUntil(10)).toBe(0);
    expect(s.runUntil(25)).toBe(1);
    expect(s.now()).toBe(25);
    expect(s.nextTime()).toBe(30);
    expect(s.runUntil(100)).toBe(1);
    expect(s.now()).toBe(100);
    expect(log).toEqual([5, 10, 11, 30]);
    expect(s.nextTime()).toBe(Infinity);
  });

  it('runUntilIdle stops at the limit; step runs one event', () => {
    const s = new Scheduler();
    let n = 0;
    const tick: SimEvent = new SimEvent('tick', 0, () => {
      n++;
      s.schedule(tick, s.now() + 1);
    });
    s.schedule(tick, 0);
    expect(s.runUntilIdle(1000)).toBe(1000);
    expect(n).toBe(1000);
    expect(s.now()).toBe(999);
    expect(s.step()).toBe(true);
    expect(s.now()).toBe(1000);
    s.deschedule(tick);
    expect(s.step()).toBe(false);
    expect(s.eventsRun).toBe(1001);
  });

  it('a throwing callback leaves the queue usable', () => {
    const s = new Scheduler();
    const log: string[] = [];
    s.schedule(
      new SimEvent('boom', 0, () => {
        throw new Error('boom');
      }),
      1,
    );
    s.schedule(new SimEvent('after', 0, () => log.push('after')), 2);
    expect(() => s.runUntilIdle()).toThrow('boom');
    expect(s.now()).toBe(1);
    expect(s.pending).toBe(1);
    s.runUntilIdle();
    expect(log).toEqual(['after']);
  });

  it('starts at a given time', () => {
    expect(new Scheduler(1234).now()).toBe(1234);
  });
});

describe('runBatch and interrupt', () => {
  it('runs events at or before t, at most limit, and leaves the clock at the last one', () => {
    const s = new Scheduler();
    const log: number[] = [];
    for (const t of [5, 10, 10, 20, 30]) s.schedule(new SimEvent(`e${t}`, 0, () => log.push(s.now())), t);
    expect(s.runBatch(15, 100)).toBe(3);
    expect(log).toEqual([5, 10, 10]);
    expect(s.now()).toBe(10);
    expect(s.runBatch(Infinity, 1)).toBe(1);
    expect(s.now()).toBe(20);
    expect(s.pending).toBe(1);
  });

  it('returns after the event that called interrupt; the rest stay queued; the next run starts clean', () => {
    const s = new Scheduler();
    const log: string[] = [];
    s.schedule(new SimEvent('a', 0, () => log.push('a')), 1);
    s.schedule(
      new SimEvent('b', 0, () => {
        log.push('b');
        s.interrupt();
      }),
      2,
    );
    s.schedule(new SimEvent('c', 0, () => log.push('c')), 2);
    s.schedule(new SimEvent('d', 0, () => log.push('d')), 3);
    expect(s.runBatch(Infinity, 100)).toBe(2);
    expect(log).toEqual(['a', 'b']);
    expect(s.now()).toBe(2);
    expect(s.pending).toBe(2);
    expect(s.runBatch(Infinity, 100)).toBe(2);
    expect(log).toEqual(['a', 'b', 'c', 'd']);
  });

  it('interrupt outside a run does nothing, and a throwing callback does not leave it set', () => {
    const s = new Scheduler();
    s.interrupt();
    let n = 0;
    for (let t = 0; t < 5; t++) s.schedule(new SimEvent(`e${t}`, 0, () => n++), t);
    expect(s.runBatch(Infinity, 100)).toBe(5);
    s.schedule(
      new SimEvent('boom', 0, () => {
        s.interrupt();
        throw new Error('boom');
      }),
      10,
    );
    s.schedule(new SimEvent('x', 0, () => n++), 11);
    s.schedule(new SimEvent('y', 0, () => n++), 12);
    expect(() => s.runBatch(Infinity, 100)).toThrow('boom');
    expect(s.runBatch(Infinity, 100)).toBe(2);
    expect(n).toBe(7);
  });

  it('agrees with a loop of nextTime and step on 2000 seeded random workloads', () => {
    for (let seed = 1; seed <= 2000; seed++) {
      const traces = [0, 1].map((mode) => {
        const rnd = new Random(seed);
        const s = new Scheduler();
        const trace: string[] = [];
        const evs: SimEvent[] = [];
        const stopped = { now: false };
        for (let i = 0; i < 12; i++) {
          const ev: SimEvent = new SimEvent(`e${i}`, rnd.int(3) - 1, () => {
            trace.push(`${s.now()}:${ev.name}`);
            if (rnd.int(4) === 0) {
              s.interrupt();
              stopped.now = true;
            }
            if (rnd.int(2) === 0) s.reschedule(evs[rnd.int(evs.length)]!, s.now() + rnd.int(20));
          });
          evs.push(ev);
          s.schedule(ev, rnd.int(50));
        }
        for (let round = 0; round < 40 && s.pending > 0; round++) {
          const limit = s.nextTime() + rnd.int(30);
          const max = 1 + rnd.int(8);
          if (mode === 0) trace.push(`ran ${s.runBatch(limit, max)}`);
          else {
            // The reference: one event per call, stopping after an interrupting event.
            let n = 0;
            while (n < max && s.nextTime() <= limit) {
              stopped.now = false;
              s.step();
              n++;
              if (stopped.now) break;
            }
            trace.push(`ran ${n}`);
          }
        }
        return trace;
      });
      expect(traces[0], `seed ${seed}`).toEqual(traces[1]);
    }
  });
});

describe('errors (typed, with a stable code)', () => {
  it('scheduling in the past', () => {
    const s = new Scheduler();
    s.runUntil(100);
    const e = new SimEvent('e', 0, () => {});
    expect(codeOf(() => s.schedule(e, 99))).toBe('SIM_ERR_PAST');
    expect(codeOf(() => s.reschedule(e, 0))).toBe('SIM_ERR_PAST');
    try {
      s.schedule(e, 50);
    } catch (err) {
      expect(err).toBeInstanceOf(SimError);
      expect((err as Error).message).toContain('event e');
    }
    expect(e.scheduled).toBe(false);
  });

  it('bad times', () => {
    const s = new Scheduler();
    const e = new SimEvent('e', 0, () => {});
    for (const t of [1.5, NaN, Infinity, 2 ** 53]) expect(codeOf(() => s.schedule(e, t))).toBe('SIM_ERR_BAD_TIME');
    expect(codeOf(() => s.runUntil(-1))).toBe('SIM_ERR_BAD_TIME');
    expect(codeOf(() => new Scheduler(0.5))).toBe('SIM_ERR_BAD_TIME');
  });

  it('double schedule, deschedule of an idle event, a foreign event', () => {
    const s = new Scheduler();
    const t = new Scheduler();
    const e = new SimEvent('e', 0, () => {});
    s.schedule(e, 1);
    expect(codeOf(() => s.schedule(e, 2))).toBe('SIM_ERR_ALREADY_SCHEDULED');
    expect(codeOf(() => t.schedule(e, 2))).toBe('SIM_ERR_FOREIGN_EVENT');
    expect(codeOf(() => t.deschedule(e))).toBe('SIM_ERR_FOREIGN_EVENT');
    expect(codeOf(() => t.reschedule(e, 3))).toBe('SIM_ERR_FOREIGN_EVENT');
    s.deschedule(e);
    expect(codeOf(() => s.deschedule(e))).toBe('SIM_ERR_NOT_SCHEDULED');
  });

  it('priorities out of range', () => {
    expect(codeOf(() => new SimEvent('p', PRIORITY_MAX + 1, () => {}))).toBe('SIM_ERR_BAD_PRIORITY');
    expect(codeOf(() => new SimEvent('p', PRIORITY_MIN - 1, () => {}))).toBe('SIM_ERR_BAD_PRIORITY');
    expect(codeOf(() => new SimEvent('p', 0.5, () => {}))).toBe('SIM_ERR_BAD_PRIORITY');
    expect(new SimEvent('p', PRIORITY_MIN, () => {}).priority).toBe(PRIORITY_MIN);
  });

  it('running from inside a callback', () => {
    const s = new Scheduler();
    let code: string | undefined;
    s.schedule(
      new SimEvent('nested', 0, () => {
        code = codeOf(() => s.runUntilIdle());
      }),
      1,
    );
    s.runUntilIdle();
    expect(code).toBe('SIM_ERR_REENTRANT');
  });

  it('named priority bands are ordered', () => {
    expect(Priority.first).toBeLessThan(Priority.wire);
    expect(Priority.wire).toBeLessThan(Priority.default);
    expect(Priority.default).toBeLessThan(Priority.stats);
    expect(Priority.stats).toBeLessThan(Priority.exit);
  });
});

/**
 * Random workload against an oracle that keeps pending events in an array
 * and picks the minimum of (time, priority, sequence) by linear scan.
 */
function stress(seed: number, ops: number): string[] {
  const rng = new Random(seed).fork('stress');
  const s = new Scheduler();
  const trace: string[] = [];
  type Entry = { ev: SimEvent; when: number; prio: number; seq: number };
  const pending = new Map<SimEvent, Entry>();
  let seq = 0;
  const events: SimEvent[] = [];
  const expectNext = (): Entry | undefined => {
    let best: Entry | undefined;
    for (const e of pending.values()) {
      if (!best || e.when < best.when || (e.when === best.when && (e.prio < best.prio || (e.prio === best.prio && e.seq < best.seq)))) best = e;
    }
    return best;
  };
  const put = (ev: SimEvent, at: number, re: boolean) => {
    if (re) s.reschedule(ev, at);
    else s.schedule(ev, at);
    pending.set(ev, { ev, when: at, prio: ev.priority, seq: seq++ });
  };
  const randomOp = () => {
    const r = rng.int(100);
    const ev = events[rng.int(events.length)]!;
    const at = s.now() + (rng.bernoulli(0.2) ? 0 : rng.int(rng.bernoulli(0.5) ? 8 : 5000));
    if (r < 40) {
      if (!ev.scheduled) put(ev, at, false);
    } else if (r < 65) {
      put(ev, at, true);
    } else if (r < 80) {
      if (ev.scheduled) {
        s.deschedule(ev);
        pending.delete(ev);
      }
    }
  };
  for (let i = 0; i < 200; i++) {
    const ev: SimEvent = new SimEvent(`e${i}`, rng.int(5) - 2, () => {
      const want = expected!;
      if (want.ev !== ev || s.now() !== want.when) throw new Error(`ran ${ev.name}@${s.now()}, oracle wants ${want.ev.name}@${want.when}`);
      pending.delete(ev);
      trace.push(`${s.now()}:${ev.name}`);
      // Callbacks change the queue too, including rescheduling themselves.
      const k = rng.int(4);
      for (let j = 0; j < k; j++) randomOp();
    });
    events.push(ev);
  }
  let expected: Entry | undefined;
  for (let i = 0; i < ops; i++) {
    if (rng.bernoulli(0.55)) randomOp();
    else {
      expected = expectNext();
      const ran = s.step();
      expect(ran).toBe(expected !== undefined);
    }
    expect(s.pending).toBe(pending.size);
  }
  while ((expected = expectNext()) !== undefined) expect(s.step()).toBe(true);
  expect(s.step()).toBe(false);
  return trace;
}

describe('heap stress against a sorted-array oracle', () => {
  it('agrees on every event for a seeded random workload', () => {
    for (const seed of [1, 2, 3]) {
      const trace = stress(seed, 20_000);
      expect(trace.length).toBeGreaterThan(5000);
    }
  });

  it('is reproducible: the same seed gives the same trace', () => {
    expect(stress(7, 5000)).toEqual(stress(7, 5000));
    expect(stress(7, 5000)).not.toEqual(stress(8, 5000));
  });
});

describe('tracer', () => {
  it('sees every event with its time, and two seeded runs trace identically', () => {
    const run = (seed: number): string => {
      const rng = new Random(seed);
      const s = new Scheduler();
      const lines: string[] = [];
      s.setTracer((ev, t) => lines.push(`${t} ${ev.name}`));
      const evs: SimEvent[] = [];
      for (let i = 0; i < 50; i++) {
        const r = rng.fork(`ev${i}`);
        const ev: SimEvent = new SimEvent(`ev${i}`, r.int(3), () => {
          if (r.bernoulli(0.9)) s.schedule(ev, s.now() + r.int(100));
        });
        evs.push(ev);
        s.schedule(ev, r.int(100));
      }
      s.runUntil(100_000);
      s.setTracer(null);
      return lines.join('\n');
    };
    const a = run(42);
    expect(a.split('\n').length).toBeGreaterThan(50);
    expect(run(42)).toBe(a);
    expect(run(43)).not.toBe(a);
  });
});

describe('benchmark (asserts nothing about time)', () => {
  it('benchScheduler measures the scheduler and its baseline', () => {
    const r = benchScheduler(100, 20);
    expect(r.eventsPerSec).toBeGreaterThan(0);
    expect(r.baselinePerSec).toBeGreaterThan(0);
    expect(r.pending).toBe(100);
  });
});
