/**
 * A device port's cable end for every cable whose far side is not a model
 * device taking the frame object as built (a UDP socket, a switch, a fault
 * rule, a ring to another thread): it computes a deferred ICRC
 * (wire/lazy-icrc.ts) before the frame goes in, so whatever is past it
 * reads a complete frame. Costs a WeakMap look-up when nothing is pending.
 */
import type { CableEnd, CableStats, FrameHandler } from '../fabric/cable.js';
import { sealIcrc } from '../wire/index.js';

export class SealingEnd implements CableEnd {
  readonly sendOwned?: (frame: Uint8Array) => void;

  constructor(private readonly inner: CableEnd) {
    const owned = inner.sendOwned?.bind(inner);
    if (owned) this.sendOwned = (frame) => owned(sealIcrc(frame));
  }

  send(frame: Uint8Array): void {
    this.inner.send(sealIcrc(frame));
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
