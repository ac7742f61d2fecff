/**
 * The shared-buffer MMU as a state machine, by the thousand: random
 * enqueues (when admitted) and dequeues in seeded order, checked after
 * every step against a plain model of what it must hold (bytes per
 * ingress and egress queue, buffer use), and the PFC rules: a lossless
 * priority is refused only when both threshold and headroom are used up,
 * a paused queue is asked to resume only once its headroom is empty.
 */
import { describe, expect, it } from 'vitest';
import { Random } from '../../runtime/sim/random.js';
import { DEFAULT_SWITCH_CONFIG, headroomBytes, type SwitchConfig } from './config.js';
import { Mmu } from './mmu.js';

const PORTS = 4;

function run(seed: number, cfg: SwitchConfig): void {
  const rnd = new Random(seed);
  const headroom = Array.from({ length: PORTS }, () => headroomBytes(cfg.pfc, 100e9, 1000, 1100));
  const mmu = new Mmu(cfg, headroom);
  const queued: { inPort: number; outPort: number; prio: number; size: number }[] = [];
  const ingress = new Map<string, number>();
  const egress = new Map<string, number>();
  const key = (p: number, q: number) => `${p}/${q}`;
  for (let step = 0; step < 2000; step++) {
    if (rnd.next() < 0.55) {
      const inPort = rnd.int(PORTS);
      const outPort = rnd.int(PORTS);
      const prio = [0, 3, 3, 5][rnd.int(4)]!;
      const size = 64 + rnd.int(1100);
      const before = mmu.usedBytes;
      const lossless = mmu.isLossless(prio);
      const overThreshold = Math.max(0, mmu.ingressBytes(inPort, prio) - mmu.headroomUsed(inPort, prio) - cfg.reserveBytes) + size > mmu.threshold();
      if (mmu.admit(inPort, prio, size)) {
        mmu.enqueue(inPort, outPort, prio, size);
        queued.push({ inPort, outPort, prio, size });
        ingress.set(key(inPort, prio), (ingress.get(key(inPort, prio)) ?? 0) + size);
        egress.set(key(outPort, prio), (egress.get(key(outPort, prio)) ?? 0) + size);
        if (mmu.usedBytes !== before + size) expect.fail(`seed ${seed} step ${step}: used ${mmu.usedBytes} after admitting ${size} to ${before}`);
      } else {
        // Refused: the buffer is full, or the shared bytes would cross the threshold (and, lossless, the headroom too).
        const full = before + size > cfg.bufferBytes;
        const hdrmFull = mmu.headroomUsed(inPort, prio) + size > headroom[inPort]!;
        if (!(full || (overThreshold && (!lossless || hdrmFull))))
          expect.fail(`seed ${seed} step ${step}: refused ${size} B from port ${inPort} prio ${prio} with room`);
      }
      if (mmu.shouldPause(inPort, prio)) mmu.setPaused(inPort, prio, true);
    } else if (queued.length > 0) {
      const [q] = queued.splice(rnd.int(queued.length), 1);
      mmu.dequeue(q!.inPort, q!.outPort, q!.prio, q!.size);
      ingress.set(key(q!.inPort, q!.prio), ingress.get(key(q!.inPort, q!.prio))! - q!.size);
      egress.set(key(q!.outPort, q!.prio), egress.get(key(q!.outPort, q!.prio))! - q!.size);
      if (mmu.shouldResume(q!.inPort, q!.prio)) {
        if (mmu.headroomUsed(q!.inPort, q!.prio) !== 0) expect.fail(`seed ${seed} step ${step}: resume with headroom in use`);
        mmu.setPaused(q!.inPort, q!.prio, false);
      }
    }
    // Plain comparisons (expect is slow at this count); a mismatch fails with the seed and step.
    for (let p = 0; p < PORTS; p++) {
      for (const prio of [0, 3, 5]) {
        const bad =
          mmu.ingressBytes(p, prio) !== (ingress.get(key(p, prio)) ?? 0) ||
          mmu.egressBytes(p, prio) !== (egress.get(key(p, prio)) ?? 0) ||
          mmu.headroomUsed(p, prio) < 0 ||
          (!mmu.isLossless(prio) && mmu.headroomUsed(p, prio) !== 0);
        if (bad)
          expect.fail(
            `seed ${seed} step ${step}: port ${p} prio ${prio}: ingress ${mmu.ingressBytes(p, prio)} vs ${ingress.get(key(p, prio))}, egress ${mmu.egressBytes(p, prio)} vs ${egress.get(key(p, prio))}, headroom ${mmu.headroomUsed(p, prio)}`,
          );
      }
    }
    let held = 0;
    for (const q of queued) held += q.size;
    if (mmu.usedBytes !== held || mmu.usedBytes > cfg.bufferBytes || mmu.sharedBytes < 0)
      expect.fail(`seed ${seed} step ${step}: used ${mmu.usedBytes}, held ${held}, shared ${mmu.sharedBytes}`);
  }
  for (const q of queued) mmu.dequeue(q.inPort, q.outPort, q.prio, q.size);
  expect(mmu.usedBytes).toBe(0);
  expect(mmu.sharedBytes).toBe(0);
}

describe('MMU', () => {
  const small = (o: Partial<SwitchConfig['pfc']> = {}): SwitchConfig => ({
    ...DEFAULT_SWITCH_CONFIG,
    bufferBytes: 300_000,
    pfc: { ...DEFAULT_SWITCH_CONFIG.pfc, ...o },
  });
  it('dynamic PFC: 300 seeded random runs of 2000 steps keep the accounting exact', () => {
    for (let seed = 0; seed < 300; seed++) run(seed, small());
  }, 120_000);
  it('static PFC and PFC off: the same, 100 runs each', () => {
    for (let seed = 0; seed < 100; seed++) run(seed, small({ mode: 'static', xoffBytes: 20_000, xonBytes: 15_000 }));
    for (let seed = 0; seed < 100; seed++) run(seed, small({ enabled: false }));
  }, 120_000);
});
