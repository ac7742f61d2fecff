/**
 * DCQCN's reaction point, event by event, against values computed by hand
 * from the algorithm (docs/pipeline.md "DCQCN"): the tables below were
 * worked out with the formulas alone (α ← (1 − g)α [+ g], Rc ← Rc(1 − α/2),
 * Rc ← (Rc + Rt)/2, Rt += AI / HAI), g = 1/256, 100 Gb/s line rate, the
 * HPCC incast's parameters (AI 20 Mb/s, HAI 200 Mb/s, 4 µs, 1 µs, 300 µs,
 * F = 1), plus seeded random event streams against invariants.
 */
import { describe, expect, it } from 'vitest';
import { Random } from '../../runtime/sim/random.js';
import { resolveCcParams } from '../cc-params.js';
import type { CcEventKind, CcSample } from './congestion-control.js';
import { Dcqcn } from './dcqcn.js';

const LINE = 100e9;
const HPCC = {
  dce_tcp_g: 1020,
  rpg_ai_rate: 20,
  rpg_hai_rate: 200,
  rpg_min_rate: 1000,
  rate_reduce_monitor_period: 4,
  dce_tcp_rtt: 1,
  rpg_time_reset: 300,
  rpg_threshold: 1,
  rpg_byte_reset: 0,
  initial_alpha_value: 1024,
};

function flow(over: Record<string, unknown>) {
  const log: { kind: CcEventKind; ns: number; s: CcSample }[] = [];
  const f = new Dcqcn(resolveCcParams({ ...HPCC, ...over })).newFlow(LINE, (kind, ns, s) => log.push({ kind, ns, s }));
  return { f, log };
}

const close = (actual: number, expected: number) => expect(Math.abs(actual - expected) / Math.max(1e-300, Math.abs(expected))).toBeLessThan(1e-12);

describe('DCQCN, step by step', () => {
  it('first CNP, two cuts (target clamped), fast recovery, additive, hyper: rates and α as computed by hand', () => {
    const { f, log } = flow({ clamp_tgt_rate: true });
    f.onCnp(0);
    expect(f.nextTimerNs).toBe(4000); // the first rate-reduction period ends
    f.onTimer(4000);
    f.onCnp(5000); // in the second period: a cut at its end, 8 µs
    expect(f.nextTimerNs).toBe(8000);
    f.onTimer(8000);
    expect(f.nextTimerNs).toBe(308_000); // the increase timer, rpg_time_reset after the cut
    f.onTimer(308_000);
    f.onTimer(608_000);
    f.onTimer(908_000);
    const table: [CcEventKind, number, number, number, number][] = [
      ['first-cnp', 0, 100e9, 100e9, 1.0],
      ['cut', 4000, 50776684272.56867, 100e9, 0.9844663145486265],
      ['cut', 8000, 26072565154.262413, 50776684272.56867, 0.9730497165074751],
      ['fast-recovery', 308_000, 38424624713.41554, 50776684272.56867, 0.3007457972848629],
      ['additive', 608_000, 44610654492.99211, 50796684272.56867, 0.09295314828223684],
      ['hyper', 908_000, 47803669382.780396, 50996684272.56867, 0.028729537880775542],
    ];
    expect(log.map((e) => e.kind)).toEqual(table.map((r) => r[0]));
    for (const [i, [, ns, rc, rt]] of table.entries()) {
      expect(log[i]!.ns).toBe(ns);
      close(log[i]!.s.rateBps, rc);
      close(log[i]!.s.targetBps, rt);
    }
    // α as of each event (sample brings it up to date; the log carries it as it was at cuts).
    close(log[1]!.s.alpha, table[1]![4]);
    close(log[2]!.s.alpha, table[2]![4]);
    close(f.sample(908_000).alpha, table[5]![4]);
  });

  it('no target clamp (the HPCC incast): a cut before any timer increase leaves the target at line rate', () => {
    const { f, log } = flow({ clamp_tgt_rate: false, clamp_tgt_rate_after_time_inc: true });
    f.onCnp(0);
    f.onTimer(4000);
    close(f.rateBps, 50776684272.56867);
    expect(f.targetBps).toBe(100e9);
    f.onTimer(304_000); // fast recovery
    close(f.rateBps, (50776684272.56867 + 100e9) / 2);
    f.onCnp(305_000);
    f.onTimer(308_000); // a cut after a timer increase: now the target is clamped to the rate
    close(f.targetBps, (50776684272.56867 + 100e9) / 2);
    expect(log.map((e) => e.kind)).toEqual(['first-cnp', 'cut', 'fast-recovery', 'cut']);
  });

  it('byte counter and timer together: the phase follows both stages', () => {
    const { f, log } = flow({ clamp_tgt_rate: true, rpg_byte_reset: 10_000, rate_to_set_on_first_cnp: 40_000 });
    f.onCnp(0);
    expect(f.rateBps).toBe(40e9);
    f.onSent(9_999, 1000); // before the first cut the byte counter does not run
    f.onTimer(4000);
    f.onSent(6_000, 9_000);
    f.onSent(4_000, 10_000); // 10 000 bytes: a byte event (B 0 → 1)
    f.onSent(10_000, 20_000); // B 1 → 2
    f.onTimer(304_000); // T 0 → 1
    f.onSent(10_000, 400_000); // B 2 → 3
    f.onTimer(604_000); // T 1 → 2
    f.onSent(10_000, 700_000); // both past F = 1: hyper
    const table: [CcEventKind, number, number, number][] = [
      ['first-cnp', 0, 40e9, 40e9],
      ['cut', 4000, 20310673709.02747, 40e9],
      ['fast-recovery', 10_000, 30155336854.513733, 40e9],
      ['additive', 20_000, 35087668427.25687, 40.02e9],
      ['additive', 304_000, 37563834213.62843, 40.04e9],
      ['additive', 400_000, 38811917106.81422, 40.06e9],
      ['additive', 604_000, 39445958553.407104, 40.08e9],
      ['hyper', 700_000, 39862979276.70355, 40.28e9],
    ];
    expect(log.map((e) => [e.kind, e.ns])).toEqual(table.map((r) => [r[0], r[1]]));
    for (const [i, [, , rc, rt]] of table.entries()) {
      close(log[i]!.s.rateBps, rc);
      close(log[i]!.s.targetBps, rt);
    }
    expect([f.timeStage, f.byteStage]).toEqual([2, 4]);
  });

  it('rpg_gd, rpg_min_dec_fac and rpg_min_rate bound a cut', () => {
    const a4 = (255 / 256) ** 4;
    let { f } = flow({ rpg_gd: 12 });
    f.onCnp(0);
    f.onTimer(4000);
    close(f.rateBps, 100e9 * (1 - a4 / 4)); // 75388342136.28433
    ({ f } = flow({ rpg_gd: 12, rpg_min_dec_fac: 80 }));
    f.onCnp(0);
    f.onTimer(4000);
    close(f.rateBps, 80e9);
    ({ f } = flow({ rpg_min_rate: 60_000 }));
    f.onCnp(0);
    f.onTimer(4000);
    expect(f.rateBps).toBe(60e9);
  });

  it('the CNPs of one rate-reduction period cause one cut; α counts one CNP per α period', () => {
    const { f, log } = flow({});
    f.onCnp(0);
    f.onTimer(4000);
    for (const t of [4100, 4200, 4300, 6500, 7999]) f.onCnp(t);
    f.onTimer(8000);
    expect(log.filter((e) => e.kind === 'cut').length).toBe(2);
    // α periods ending 5 µs (CNPs at 4.1-4.3 µs), 7 µs (6.5 µs), 8 µs (7.999 µs) saw a CNP; 6 µs did not.
    const k = 255 / 256;
    const g = 1 / 256;
    let a = k ** 4;
    a = k * a + g; // 5
    a = k * a; // 6
    a = k * a + g; // 7
    a = k * a + g; // 8
    close(log[2]!.s.alpha, a);
  });

  it('back at full rate, the flow is unlimited and asks for no timer', () => {
    const { f } = flow({ rpg_ai_rate: 50_000, rpg_hai_rate: 50_000 });
    f.onCnp(0);
    f.onTimer(4000);
    let t = 4000;
    for (let i = 0; i < 200 && f.nextTimerNs !== Infinity; i++) f.onTimer((t = f.nextTimerNs));
    expect(f.nextTimerNs).toBe(Infinity);
    expect(f.rateBps).toBe(LINE);
    expect(t).toBeGreaterThan(4000);
  });

  it('seeded random CNP / send / timer streams: rates stay in [min, max], α in [0, 1], time runs forward', () => {
    const bad: string[] = [];
    let events = 0;
    for (let seed = 0; seed < 2000; seed++) {
      const r = new Random(seed);
      const over = {
        rpg_byte_reset: 0 + r.int(3 - 0 + 1) === 0 ? 0 : 1000 + r.int(100_000 - 1000 + 1),
        rpg_threshold: 1 + r.int(5 - 1 + 1),
        clamp_tgt_rate: 0 + r.int(1 - 0 + 1) === 1,
        dce_tcp_g: 900 + r.int(1024 - 900 + 1),
        rpg_min_rate: 1 + r.int(5000 - 1 + 1),
        rate_reduce_monitor_period: 1 + r.int(50 - 1 + 1),
        rpg_time_reset: 1 + r.int(500 - 1 + 1),
      };
      const { f, log } = flow(over);
      let now = 0;
      for (let i = 0; i < 200; i++) {
        now += 0 + r.int(20_000 - 0 + 1);
        while (f.nextTimerNs <= now) f.onTimer(f.nextTimerNs);
        const what = 0 + r.int(2 - 0 + 1);
        if (what === 0) f.onCnp(now);
        else if (what === 1) f.onSent(60 + r.int(5000 - 60 + 1), now);
      }
      let last = -1;
      for (const e of log) {
        const s = e.s;
        const ok = e.ns >= last && s.rateBps >= over.rpg_min_rate * 1e6 - 1e-3 && s.rateBps <= LINE && s.targetBps <= LINE && s.alpha >= 0 && s.alpha <= 1;
        if (!ok) bad.push(`seed ${seed}: ${e.kind} at ${e.ns} ns: ${JSON.stringify(s)}`);
        last = e.ns;
      }
      if (log.length > 1) events += log.length;
    }
    expect(bad).toEqual([]);
    expect(events).toBeGreaterThan(20_000);
  });
});
