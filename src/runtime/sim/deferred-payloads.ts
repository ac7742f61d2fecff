/**
 * The simulator's deferred payloads (wire/lazy-icrc.ts deferPayload). A
 * reliable SEND or WRITE packet leaves its payload in the sender's host
 * memory and the receiving device's decoder reads it from there: one copy
 * (host memory to host memory) instead of a gather into the frame and a
 * scatter out of it.
 *
 * Reading the bytes at delivery instead of at the DMA read gives the same
 * bytes as long as the source does not change in between. The verbs rules
 * promise that for a correct program until the work request completes, and
 * a successful RC/XRC completion comes only after the responder has taken
 * every packet of the message (a duplicate still on the way is not executed,
 * so its payload is never read). For the rest this keeps track of every
 * deferred frame and copies the payloads in (`materializeAll`) before the
 * source may legitimately change or vanish:
 *  - a completion in error or an asynchronous event (the work request may
 *    end while its packets are still queued somewhere);
 *  - any firmware command (modify or destroy a QP, deregister an MR, ...);
 *  - something starting to read frames on the way (an observer, a capture).
 * The model allows deferral only while nothing but the devices reads the
 * frames (no observer, capture or fault): every other reader would read the
 * source later than the real DMA did. A frame read anyway (sealIcrc, a
 * decode without scratch, a link hook) gets its payload copied in first.
 */
import { deferPayload, materializePayload, payloadDeferred } from '../../wire/lazy-icrc.js';
import type { PayloadDeferral } from '../../pipeline/nic-env.js';

/** Entries kept before the list drops frames no longer deferred (consumed or materialized). */
const FIRST_COMPACT = 4096;

export class DeferredPayloads implements PayloadDeferral {
  enabled = true;
  /** Frames deferred since the last materializeAll, some long consumed (their views recycled: checked by payloadDeferred). */
  #frames: Uint8Array[] = [];
  #compactAt = FIRST_COMPACT;
  /** Frames deferred, for stats and tests. */
  deferred = 0;

  defer(frame: Uint8Array, off: number, len: number, src: Uint8Array, at: number): void {
    deferPayload(frame, off, len, src, at);
    this.deferred++;
    const list = this.#frames;
    list.push(frame);
    if (list.length >= this.#compactAt) {
      let j = 0;
      for (let i = 0; i < list.length; i++) if (payloadDeferred(list[i]!)) list[j++] = list[i]!;
      list.length = j;
      this.#compactAt = Math.max(FIRST_COMPACT, 2 * j);
    }
  }

  /** Copies every payload still deferred into its frame, from the source as it is now. */
  materializeAll(): void {
    const list = this.#frames;
    for (let i = 0; i < list.length; i++) materializePayload(list[i]!);
    list.length = 0;
    this.#compactAt = FIRST_COMPACT;
  }

  /** Turns deferral on or off; off materializes what is in flight (a reader is about to look). */
  setEnabled(on: boolean): void {
    if (!on) this.materializeAll();
    this.enabled = on;
  }
}
