/**
 * `SimLink` takes the fault injector's verdicts as they are
 * (`link.setFaultHook(dir, injector.hook('a->b'))`): a duplicate with a
 * count, hold (reorder) and the release of held frames, on the wire with
 * the right timing.
 */
import { describe, expect, it } from 'vitest';
import { FaultInjector } from '../../src/fabric/faults.js';
import { resolveSimLinkParams, SimLink, Verdict, wireBytes } from '../../src/fabric/link.js';
import { transferPs } from '../../src/fabric/timing-params.js';
import { Random } from '../../src/runtime/sim/random.js';
import { Scheduler } from '../../src/runtime/sim/scheduler.js';

function setup(hook: Parameters<SimLink['setFaultHook']>[1]) {
  const sched = new Scheduler();
  const link = new SimLink(sched, resolveSimLinkParams(), 'l0');
  const got: { id: number; ns: number }[] = [];
  link.b.onReceive((f) => got.push({ id: f[0]!, ns: sched.now() }));
  link.setFaultHook('aToB', hook);
  return { sched, link, got };
}

const frame = (id: number, len = 1000) => {
  const f = new Uint8Array(len);
  f[0] = id;
  return f;
};

const serPs = transferPs(wireBytes(1000), 100e9);

describe('SimLink and FaultVerdict', () => {
  it('duplicate with a count: 1 + count copies back to back', () => {
    const { sched, link, got } = setup((f) => (f[0] === 1 ? { kind: 'duplicate', count: 3 } : Verdict.pass));
    link.a.send(frame(1));
    link.a.send(frame(2));
    sched.runUntilIdle();
    expect(got.map((g) => g.id)).toEqual([1, 1, 1, 1, 2]);
    for (let i = 1; i < 5; i++) expect(got[i]!.ns - got[i - 1]!.ns).toBeLessThanOrEqual(Math.ceil(serPs / 1000));
    expect(link.stats('aToB')).toMatchObject({ faultDuplicated: 1, framesTransmitted: 5, framesDelivered: 5 });
  });

  it('hold, then release riding on a later frame: the line is not used by the held frame; it goes right after its carrier', () => {
    let held: Uint8Array | null = null;
    const { sched, link, got } = setup((f) => {
      if (f[0] === 1) {
        held = f.slice();
        return Verdict.hold;
      }
      if (f[0] === 3 && held) {
        const r = held;
        held = null;
        return { kind: 'pass', release: [r] };
      }
      return Verdict.pass;
    });
    for (const id of [1, 2, 3, 4]) link.a.send(frame(id));
    sched.runUntilIdle();
    expect(got.map((g) => g.id)).toEqual([2, 3, 1, 4]);
    // Frame 2 went first on an idle line: the held frame took no line time.
    expect(got[0]!.ns).toBe(Math.ceil((serPs + 500_000) / 1000));
    expect(link.stats('aToB')).toMatchObject({ faultHeld: 1, faultReleased: 1, framesTransmitted: 4, framesDelivered: 4 });
  });

  it('a release on a dropped frame still goes out', () => {
    let held: Uint8Array | null = null;
    const { sched, link, got } = setup((f) => {
      if (f[0] === 1) {
        held = f.slice();
        return Verdict.hold;
      }
      if (f[0] === 2) return { kind: 'drop', release: [held!] };
      return Verdict.pass;
    });
    link.a.send(frame(1));
    link.a.send(frame(2));
    sched.runUntilIdle();
    expect(got.map((g) => g.id)).toEqual([1]);
  });

  it("the injector's hook plugs in as it is: reorder depth 2 with the simulator's random source", () => {
    const inj = new FaultInjector([{ action: 'reorder', reorderDepth: 2, match: { opcode: 'any', count: 1 } }], { random: new Random(1).fork('l0.faults') });
    const { sched, link, got } = setup(inj.hook('a->b'));
    for (const id of [1, 2, 3, 4, 5]) link.a.send(frame(id));
    sched.runUntilIdle();
    expect(got.map((g) => g.id)).toEqual([2, 3, 1, 4, 5]);
    expect(inj.stats()).toMatchObject({ held: 1, released: 1 });
  });

  it('a bad duplicate count is refused', () => {
    const { link } = setup(() => ({ kind: 'duplicate', count: 0 }));
    expect(() => link.a.send(frame(1))).toThrow(/duplicate verdict needs a count >= 1/);
  });
});
