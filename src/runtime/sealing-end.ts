/**
 * A device port's cable end for every cable whose far side is not a model
 * device taking the frame object as built (a UDP socket, a switch, a fault
 * rule, a ring to another thread): it computes a deferred ICRC
 * (wire/lazy-icrc.ts) before the frame goes in, so whatever is past it
 * reads a complete frame. The frame's mark ends with it (`sealBeforeChange`):
 * past this end nobody takes a frame as built. Costs a property read when
 * nothing is pending.
 */
import type { CableEnd, CableStats, FrameHandler } from '../fabric/cable.js';
import { sealBeforeChange } from '../wire/index.js';

export class SealingEnd implements CableEnd {
  readonly sendOwned?: (frame: Uint8Array) => void;

  constructor(private readonly inner: CableEnd) {
    const owned = inner.sendOwned?.bind(inner);
    if (owned) this.sendOwned = (frame) => owned(sealBeforeChange(frame));
  }

  send(frame: Uint8Array): void {
    this.inner.send(sealBeforeChange(frame));
  }

  onReceive(handler: FrameHandler | null): void {
    this.inner.onReceive(handler);
  }

  close(): void {
    this.inner.close();
  }

  get stats(): CableStats {
    return this.inner.stats;
  }
}
