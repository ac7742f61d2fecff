import { describe, expect, it } from 'vitest';
import { Scheduler } from '../runtime/sim/scheduler.js';
import { arrivedAsBuilt, type FaultHook, resolveSimLinkParams, SimLink, Verdict } from './link.js';

/** Sends one 100-byte frame a -> b the given way; returns [frame sent, arrivedAsBuilt of what b got]. */
function through(how: 'send' | 'sendOwned' | 'sendBuilt', hook: FaultHook | null, readOnly: boolean): boolean[] {
  const sched = new Scheduler();
  const link = new SimLink(sched, resolveSimLinkParams(), 'l0');
  if (hook) link.setFaultHook('aToB', hook, { readOnly });
  const got: boolean[] = [];
  link.b.onReceive((f) => got.push(arrivedAsBuilt(f)));
  const f = new Uint8Array(100).fill(7);
  if (how === 'send') link.a.send(f);
  else if (how === 'sendOwned') link.a.sendOwned!(f);
  else link.sendBuilt('aToB', f);
  sched.runUntilIdle();
  return got;
}

describe('SimLink: a frame sent as built', () => {
  const tap: FaultHook = () => Verdict.pass;
  const flip: FaultHook = (f) => {
    f[50] ^= 1;
    return Verdict.pass;
  };

  it('arrives as built with no hook or a read-only one, and the answer is given once', () => {
    expect(through('sendBuilt', null, false)).toEqual([true]);
    expect(through('sendBuilt', tap, true)).toEqual([true]);
    const sched = new Scheduler();
    const link = new SimLink(sched, resolveSimLinkParams(), 'l0');
    let frame: Uint8Array | null = null;
    link.b.onReceive((f) => (frame = f));
    link.sendBuilt('aToB', new Uint8Array(64));
    sched.runUntilIdle();
    expect(arrivedAsBuilt(frame!)).toBe(true);
    expect(arrivedAsBuilt(frame!)).toBe(false);
  });

  it('does not when a hook may change bytes, nor for frames sent without the word, nor for duplicates', () => {
    expect(through('sendBuilt', flip, false)).toEqual([false]);
    expect(through('sendBuilt', tap, false)).toEqual([false]);
    expect(through('send', null, false)).toEqual([false]);
    expect(through('sendOwned', tap, true)).toEqual([false]);
    expect(through('sendBuilt', () => Verdict.duplicate, true)).toEqual([true, false]);
  });
});
