/**
 * PriorityPause as a state machine: thousands of seeded streams of PFC,
 * XON and 802.3x PAUSE frames at random times, checked after every frame
 * and at random instants against a plain reference (per priority, the list
 * of paused intervals), for whether each priority is paused, when it
 * resumes, and every counter. Plus the quantum at several link rates.
 */
import { describe, expect, it } from 'vitest';
import { encodePause, encodePfc } from '../wire/index.js';
import { PFC_COUNTERS, PriorityPause } from './pfc.js';

const MAC = Uint8Array.of(2, 0, 0, 0, 0, 9);

/** A small seeded generator (xorshift32): the test's own dice. */
function dice(seed: number): (n: number) => number {
  let x = (seed * 2654435761) >>> 0 || 1;
  return (n) => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x % n;
  };
}

/** The reference: per priority, closed intervals [from, to) of pausing, and the frame counts. */
class Reference {
  intervals: [number, number][][] = Array.from({ length: 8 }, () => []);
  frames = new Array(8).fill(0);
  global = 0;

  /** Priority p gets `ps` (0 = XON) at `now`. */
  set(p: number, ps: number, now: number, count: boolean): void {
    if (count) this.frames[p]++;
    const list = this.intervals[p]!;
    const last = list[list.length - 1];
    const running = last !== undefined && last[1] > now;
    if (ps > 0) {
      if (running) last[1] = now + ps;
      else list.push([now, now + ps]);
    } else if (running) {
      last[1] = now;
    }
  }

  paused(p: number, now: number): boolean {
    const last = this.intervals[p]![this.intervals[p]!.length - 1];
    return last !== undefined && last[0] <= now && now < last[1];
  }

  durationUs(p: number, now: number): number {
    let ps = 0;
    for (const [a, b] of this.intervals[p]!) ps += Math.max(0, Math.min(b, now) - a);
    return Math.floor(ps / 1e6);
  }

  transitions(p: number, now: number): number {
    return this.intervals[p]!.filter(([, b]) => b <= now).length;
  }
}

describe('PriorityPause', () => {
  it('a quantum is 512 bit times: 5.12 ns at 100 Gb/s, 51.2 ns at 10G, 20.48 ns at 25G, rounded up to a ps', () => {
    const p = new PriorityPause(100e9);
    expect(p.quantaPs(1)).toBe(5120);
    expect(p.quantaPs(0xffff)).toBe(335_539_200);
    p.setLinkRate(10e9);
    expect(p.quantaPs(1)).toBe(51_200);
    p.setLinkRate(25e9);
    expect(p.quantaPs(3)).toBe(61_440);
    p.setLinkRate(56e9);
    expect(p.quantaPs(1)).toBe(9143); // 9142.857… ps
    expect(() => p.setLinkRate(0)).toThrow(/positive integer/);
    expect(p.receive(new Uint8Array(20), 0)).toBe('malformed');
    expect(PFC_COUNTERS.length).toBe(8 * 5 + 2);
  });

  it('5,000 seeded frame streams agree with the reference after every frame and at random instants', () => {
    const problems: string[] = [];
    for (let seed = 1; seed <= 5000 && problems.length < 5; seed++) {
      const r = dice(seed);
      const rate = [10e9, 25e9, 40e9, 100e9, 400e9][r(5)]!;
      const pp = new PriorityPause(rate);
      const ref = new Reference();
      let now = 0;
      for (let i = 0; i < 40; i++) {
        // Frames arrive on the runtime's ns clock.
        now += r(3) === 0 ? 0 : 1000 * r(2000);
        const kind = r(10);
        if (kind === 0) {
          const q = r(4) === 0 ? 0 : r(0x10000);
          pp.receive(encodePause(MAC, q), now);
          ref.global++;
          for (let p = 0; p < 8; p++) ref.set(p, pp.quantaPs(q), now, false);
        } else {
          const ce = r(256);
          const times = Array.from({ length: 8 }, () => (r(3) === 0 ? 0 : r(0x10000)));
          pp.receive(encodePfc(MAC, ce, times), now);
          for (let p = 0; p < 8; p++) if (ce & (1 << p)) ref.set(p, pp.quantaPs(times[p]!), now, true);
        }
        const probe = now + r(3_000_000);
        for (const t of [now, probe]) {
          const nowNs = Math.floor(t / 1000);
          for (let p = 0; p < 8; p++) {
            // isPaused is asked on the ns clock: paused at nowNs means nowNs·1000 lies in the interval.
            if (pp.isPaused(p, nowNs) !== ref.paused(p, nowNs * 1000)) problems.push(`seed ${seed} frame ${i}: prio ${p} paused at ${nowNs} ns`);
            if (ref.paused(p, nowNs * 1000)) {
              const last = ref.intervals[p]![ref.intervals[p]!.length - 1]!;
              if (pp.resumeNs(p) !== Math.ceil(last[1] / 1000))
                problems.push(`seed ${seed}: prio ${p} resumes ${pp.resumeNs(p)} ≠ ${Math.ceil(last[1] / 1000)}`);
            }
          }
        }
      }
      const c = pp.counters(now);
      for (let p = 0; p < 8; p++) {
        if (c[`rx_prio${p}_pause`] !== ref.frames[p]) problems.push(`seed ${seed}: rx_prio${p}_pause ${c[`rx_prio${p}_pause`]} ≠ ${ref.frames[p]}`);
        if (c[`rx_prio${p}_pause_duration`] !== ref.durationUs(p, now))
          problems.push(`seed ${seed}: rx_prio${p}_pause_duration ${c[`rx_prio${p}_pause_duration`]} ≠ ${ref.durationUs(p, now)}`);
        if (c[`rx_prio${p}_pause_transition`] !== ref.transitions(p, now))
          problems.push(`seed ${seed}: rx_prio${p}_pause_transition ${c[`rx_prio${p}_pause_transition`]} ≠ ${ref.transitions(p, now)}`);
      }
      if (c.rx_global_pause !== ref.global) problems.push(`seed ${seed}: rx_global_pause`);
    }
    expect(problems).toEqual([]);
  });

  it('counts what the port sends, and leaves its own transmit priorities alone', () => {
    const pp = new PriorityPause(100e9);
    pp.noteTransmit(encodePfc(MAC, 0x81, [1000, 0, 0, 0, 0, 0, 0, 500]), 0);
    pp.noteTransmit(encodePfc(MAC, 0x01, [0, 0, 0, 0, 0, 0, 0, 0]), 2_000_000); // XON for 0 after 2 µs
    pp.noteTransmit(encodePause(MAC, 10), 3_000_000);
    pp.noteTransmit(new Uint8Array(60), 0); // not MAC Control: ignored
    const c = pp.counters(10_000_000);
    expect(c).toMatchObject({
      tx_prio0_pause: 2,
      tx_prio0_pause_duration: 2,
      tx_prio7_pause: 1,
      tx_prio7_pause_duration: 2,
      tx_global_pause: 1,
      rx_prio0_pause: 0,
    });
    expect(pp.pausedMask).toBe(0);
  });
});
