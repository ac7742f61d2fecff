import { describe, expect, it } from 'vitest';
import { Scheduler } from '../runtime/sim/scheduler.js';
import { decodePacket, encodePacket, newPacket, Op, takeAsBuilt } from '../wire/index.js';
import { type FaultHook, resolveSimLinkParams, SimLink, Verdict } from './link.js';

/** A RoCE v2 RC SEND with a 64-byte payload, its ICRC deferred (as a simulated device builds it) or not. */
function frame(deferIcrc: boolean): Uint8Array {
  const p = newPacket('roce-v2', Op.RC_SEND_ONLY, { destQp: 0x11, psn: 5, payload: new Uint8Array(64).fill(7) });
  return encodePacket(p, undefined, 0, { deferIcrc });
}

interface Got {
  /** takeAsBuilt of what b got. */
  asBuilt: boolean;
  /** It decodes with its ICRC checked (asked after takeAsBuilt). */
  icrcGood: boolean;
}

/** Sends one frame a -> b the given way; what b got. */
function through(how: 'send' | 'sendOwned', deferIcrc: boolean, hook: FaultHook | null, readOnly: boolean): Got[] {
  const sched = new Scheduler();
  const link = new SimLink(sched, resolveSimLinkParams(), 'l0');
  if (hook) link.setFaultHook('aToB', hook, { readOnly });
  const got: Got[] = [];
  link.b.onReceive((f) => got.push({ asBuilt: takeAsBuilt(f), icrcGood: decodePacket(f).ok }));
  const f = frame(deferIcrc);
  if (how === 'send') link.a.send(f);
  else link.sendOwned('aToB', f);
  sched.runUntilIdle();
  return got;
}

describe('SimLink: a frame its device built (ICRC deferred)', () => {
  const tap: FaultHook = () => Verdict.pass;
  const flip: FaultHook = (f) => {
    f[60] ^= 1;
    return Verdict.pass;
  };

  it('arrives as built with no hook or a read-only one, and the answer is given once', () => {
    // Nobody read it on the way: its ICRC was never computed.
    expect(through('sendOwned', true, null, false)).toEqual([{ asBuilt: true, icrcGood: false }]);
    expect(through('sendOwned', true, tap, true)).toEqual([{ asBuilt: true, icrcGood: false }]);
    const sched = new Scheduler();
    const link = new SimLink(sched, resolveSimLinkParams(), 'l0');
    let got: Uint8Array | null = null;
    link.b.onReceive((f) => (got = f));
    link.sendOwned('aToB', frame(true));
    sched.runUntilIdle();
    expect(takeAsBuilt(got!)).toBe(true);
    expect(takeAsBuilt(got!)).toBe(false);
  });

  it('does not when a hook may change bytes (it sees the ICRC computed, so a change it makes fails the check), nor as a copy or a duplicate', () => {
    expect(through('sendOwned', true, flip, false)).toEqual([{ asBuilt: false, icrcGood: false }]);
    expect(through('sendOwned', true, tap, false)).toEqual([{ asBuilt: false, icrcGood: true }]);
    // `send` copies, the ICRC computed first: the copy is complete and unmarked.
    expect(through('send', true, null, false)).toEqual([{ asBuilt: false, icrcGood: true }]);
    expect(through('sendOwned', false, tap, true)).toEqual([{ asBuilt: false, icrcGood: true }]);
    // A duplicate is made from the sealed frame: both are complete, only the original is still as built.
    expect(through('sendOwned', true, () => Verdict.duplicate, true)).toEqual([
      { asBuilt: true, icrcGood: true },
      { asBuilt: false, icrcGood: true },
    ]);
  });
});
