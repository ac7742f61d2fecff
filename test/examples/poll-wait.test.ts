/**
 * PollWait, the examples' wait between empty CQ polls: `spin` microtask
 * waits after a completion, then an event-loop turn per wait; and
 * RNIC_POLL_SPIN, read with a one-line error for a bad value.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_POLL_SPIN, MAX_POLL_SPIN, PollWait, pollSpin } from '../../examples/common/io.js';

/** Runs `w.wait()` `n` times; how many of them let a setImmediate queued before each one run first. */
async function turnsIn(w: PollWait, n: number): Promise<number> {
  let turns = 0;
  for (let i = 0; i < n; i++) {
    let ran = false;
    setImmediate(() => {
      ran = true;
    });
    await w.wait();
    if (ran) turns++;
    // Let the immediate run anyway before the next round (a microtask wait does not).
    if (!ran) await new Promise<void>((r) => setImmediate(r));
  }
  return turns;
}

describe('PollWait', () => {
  it.each([0, 1, 16, 100])('spin %i: that many microtask waits, then an event-loop turn on each; a completion starts the spin again', async (spin) => {
    let turnsSeen = 0;
    const w = new PollWait(spin, () => {
      turnsSeen++;
      return new Promise<void>((r) => setImmediate(r));
    });
    expect(w.turnDue).toBe(spin === 0);
    expect(await turnsIn(w, spin)).toBe(0);
    expect(turnsSeen).toBe(0);
    expect(w.turnDue).toBe(true);
    expect(await turnsIn(w, 5)).toBe(5);
    expect(turnsSeen).toBe(5);
    w.progressed();
    expect(await turnsIn(w, spin)).toBe(0);
    expect(await turnsIn(w, 1)).toBe(1);
    expect(turnsSeen).toBe(6);
  });

  it('other async work of the thread runs between microtask waits (the other side of a loopback run)', async () => {
    const w = new PollWait(1000);
    let other = 0;
    const side = (async () => {
      for (let i = 0; i < 50; i++) {
        other++;
        await w.wait();
      }
    })();
    let seen = -1;
    for (let i = 0; i < 10; i++) {
      const before = other;
      await w.wait();
      if (i > 0) expect(other, `wait ${i}`).toBeGreaterThan(before);
      seen = other;
    }
    expect(seen).toBeGreaterThan(5);
    await side;
  });
});

describe('pollSpin (RNIC_POLL_SPIN)', () => {
  it('unset or empty: the default; a whole number: that', () => {
    expect(pollSpin({})).toBe(DEFAULT_POLL_SPIN);
    expect(pollSpin({ RNIC_POLL_SPIN: '' })).toBe(DEFAULT_POLL_SPIN);
    expect(pollSpin({ RNIC_POLL_SPIN: '0' })).toBe(0);
    expect(pollSpin({ RNIC_POLL_SPIN: '256' })).toBe(256);
    expect(pollSpin({ RNIC_POLL_SPIN: String(MAX_POLL_SPIN) })).toBe(MAX_POLL_SPIN);
  });

  it.each(['-1', '1.5', 'abc', '1e400', ' x', '65537'])('%j: a one-line error naming the variable and the range', (v) => {
    expect(() => pollSpin({ RNIC_POLL_SPIN: v })).toThrow(`RNIC_POLL_SPIN: ${JSON.stringify(v)} is not a whole number of polls from 0 to 65536`);
  });
});
