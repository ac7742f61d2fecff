/**
 * Carrying out a verdict, the same wherever the injector is asked (a cable
 * end as it sends or as it receives, the simulator's receiving port): the
 * frames that go on now, those that go on later, and reordered frames the
 * verdict releases. No clock and no timers here: `later` is the caller's.
 */
import type { FaultVerdict } from './injector.js';

export function carryOut(v: FaultVerdict, frame: Uint8Array, now: (f: Uint8Array) => void, later: (ns: number, f: Uint8Array) => void): void {
  switch (v.kind) {
    case 'pass':
      now(frame);
      break;
    case 'replace':
      now(v.frame);
      break;
    case 'duplicate': {
      // A receiver owns what it is given (and may recycle it): the copies are made first.
      const copies = Array.from({ length: v.count }, () => frame.slice());
      now(frame);
      for (const c of copies) now(c);
      break;
    }
    case 'delay':
      // The frame's owner may reuse its buffer once this returns.
      later(v.ns, frame.slice());
      break;
    case 'drop':
    case 'hold':
      break;
  }
  if (v.release) for (const f of v.release) now(f);
}
