/**
 * Deferred ICRC. In the simulator most frames go from one model device to
 * another over links that vouch for their bytes, and the receiver skips the
 * ICRC check (its result is known), so nobody reads the ICRC field: computing
 * it (a CRC pass over the whole frame) is work for no reader. The encoder
 * can leave the field "not yet computed" (`encodePacket(..., { deferIcrc })`);
 * `sealIcrc` computes it, and every reader of a frame's bytes calls it first
 * (the pcap writer does so itself; docs/simulator.md lists the others).
 * The realtime runtime defers too, on in-process wires between two model
 * devices, and seals at every other cable end (runtime/sealing-end.ts).
 *
 * Sealing later gives the same ICRC as sealing at encode time as long as
 * only fields the ICRC masks changed in between (IP TOS/ECN, TTL, header
 * checksum, UDP checksum, BTH byte 4: SPEC-DIGEST §3.1), which is all a
 * switch rewrites. Anything that may change other bytes (a fault hook)
 * seals before it looks.
 *
 * The mark is also the simulator's word that the frame's bytes are exactly
 * as its device built them: a receiver may take its ICRC check as passed
 * (`takeAsBuilt`). Reading does not end that (`sealIcrc` computes the ICRC
 * and keeps the word); a hook about to change bytes calls
 * `sealBeforeChange`, which ends it.
 *
 * The mark is a property of the frame's view (not a WeakMap entry: a
 * WeakMap set per frame cost ~6 % of the simulator's time, and its
 * entries are extra work for the collector). A recycled view starts over
 * unmarked (`clearIcrcMark`, pipeline/packet-builder.ts acquireFrame), so a
 * mark cannot outlive its frame. A copy carries no mark: seal the original
 * before copying it.
 *
 * Deferred payload (the simulator only, `deferPayload`): a frame whose ICRC
 * is pending may also leave its payload in the sender's host memory; the
 * receiving device's decoder reads it from there (`payloadSource`), one
 * copy instead of gather-into-frame plus scatter-out-of-it. Every reader
 * of the bytes gets them in place first: `sealIcrc`, `sealBeforeChange`
 * and `materializePayload` copy the payload into the frame before
 * anything else. Only the runtime that deferred knows when the source may
 * change, so it materializes its frames in flight before it can
 * (runtime/sim/deferred-payloads.ts).
 */
import { icrcRoceV1, icrcRoceV2, writeIcrc } from './icrc.js';

/**
 * Per marked frame, on its view: 0 once its ICRC is written (still as
 * built), -1 once it no longer counts as built, else where the pending
 * ICRC goes: icrcOff * 2^17 + v1 * 2^16 + bthOff * 2^8 + ipOff (ipOff,
 * bthOff < 256; a frame < 2^14 bytes). An unmarked view has no such
 * property. Never deleted (a delete would slow every later access to the
 * view): ended marks are set to -1.
 */
const MARK = Symbol('icrcMark');
type Marked = Uint8Array & { [MARK]?: number };
const ENDED = -1;

/**
 * @internal The encoder's mark: `frame` is a RoCE frame (v2 with the IP
 * header at `ipOff`, or v1 with the GRH there) whose ICRC at `icrcOff` is
 * not computed yet.
 */
export function markIcrcPending(frame: Uint8Array, v1: boolean, ipOff: number, bthOff: number, icrcOff: number): void {
  (frame as Marked)[MARK] = icrcOff * 0x20000 + (v1 ? 0x10000 : 0) + bthOff * 0x100 + ipOff;
}

/** A recycled frame view starts over as if new: no mark (`takeAsBuilt` false, nothing to seal), no deferred payload. */
export function clearIcrcMark(frame: Uint8Array): void {
  if ((frame as Marked)[MARK] !== undefined) (frame as Marked)[MARK] = undefined;
  if ((frame as Deferred)[PAY_SRC] !== undefined) (frame as Deferred)[PAY_SRC] = undefined;
}

/** A deferred payload, on the frame's view: its bytes are src[at, at + len), their place in the frame `off`. */
const PAY_SRC = Symbol('payloadSource');
const PAY_AT = Symbol('payloadAt');
const PAY_OFF = Symbol('payloadOff');
const PAY_LEN = Symbol('payloadLen');
type Deferred = Uint8Array & { [PAY_SRC]?: Uint8Array; [PAY_AT]?: number; [PAY_OFF]?: number; [PAY_LEN]?: number };

/**
 * @internal The sender's mark, after the encoder left the ICRC pending:
 * `frame[off, off + len)` is to hold `src[at, at + len)`, not copied yet.
 * `off` and `at` should be equal mod 8 (src is shared memory: word-wise copy).
 */
export function deferPayload(frame: Uint8Array, off: number, len: number, src: Uint8Array, at: number): void {
  if (!icrcPending(frame)) throw new Error("deferPayload: the frame's ICRC is not pending (only a frame nobody has read may defer its payload)");
  const d = frame as Deferred;
  d[PAY_SRC] = src;
  d[PAY_AT] = at;
  d[PAY_OFF] = off;
  d[PAY_LEN] = len;
}

/** True while `frame`'s payload is still in its sender's memory. */
export function payloadDeferred(frame: Uint8Array): boolean {
  return (frame as Deferred)[PAY_SRC] !== undefined;
}

/**
 * For the receiving device's decoder: where the payload of `frame` that it
 * found at `frame[off, off + len)` really is, or null when it is in the
 * frame. A decoder that finds another place or length than the sender
 * recorded gets the bytes copied in and null (never the wrong bytes).
 */
export function payloadSource(frame: Uint8Array, off: number, len: number): Uint8Array | null {
  const d = frame as Deferred;
  const src = d[PAY_SRC];
  if (src === undefined) return null;
  if (d[PAY_OFF] === off && d[PAY_LEN] === len) return src;
  materializePayload(frame);
  return null;
}

/** With `payloadSource`: the payload's offset in the source it returned. */
export function payloadSourceAt(frame: Uint8Array): number {
  return (frame as Deferred)[PAY_AT] ?? 0;
}

/** Copies a deferred payload into its frame (from the source as it is now); returns `frame`. */
export function materializePayload(frame: Uint8Array): Uint8Array {
  const d = frame as Deferred;
  const src = d[PAY_SRC];
  if (src === undefined) return frame;
  const at = d[PAY_AT]!;
  d[PAY_SRC] = undefined;
  frame.set(src.subarray(at, at + d[PAY_LEN]!), d[PAY_OFF]!);
  return frame;
}

/** True while `frame`'s ICRC field is not computed (the bytes there are zero). */
export function icrcPending(frame: Uint8Array): boolean {
  return ((frame as Marked)[MARK] ?? 0) > 0;
}

/**
 * A receiver's question: is `frame` still byte for byte as its device
 * built it (ICRC-masked fields aside)? If so the check of its ICRC would
 * pass. The mark is dropped either way: the caller consumes the frame and
 * lets no byte of it go anywhere else (a pending ICRC field stays zero).
 */
export function takeAsBuilt(frame: Uint8Array): boolean {
  const code = (frame as Marked)[MARK];
  if (code === undefined || code === ENDED) return false;
  (frame as Marked)[MARK] = ENDED;
  return true;
}

/**
 * Computes and writes `frame`'s ICRC if it was deferred; returns `frame`.
 * Call before reading or copying a frame's bytes. Cheap when nothing is
 * pending. The frame keeps its standing as built.
 */
export function sealIcrc(frame: Uint8Array): Uint8Array {
  if ((frame as Deferred)[PAY_SRC] !== undefined) materializePayload(frame);
  const code = (frame as Marked)[MARK];
  if (code === undefined || code <= 0) return frame;
  (frame as Marked)[MARK] = 0;
  writeIcrc(frame, Math.floor(code / 0x20000), icrcOf(frame, code));
  return frame;
}

/**
 * `sealIcrc`, for a hook that may change bytes other than the ICRC-masked
 * fields: the ICRC it sees is the one built, so a change it makes shows at
 * the receiver's check, and the frame no longer counts as built.
 */
export function sealBeforeChange(frame: Uint8Array): Uint8Array {
  sealIcrc(frame);
  if ((frame as Marked)[MARK] !== undefined) (frame as Marked)[MARK] = ENDED;
  return frame;
}

function icrcOf(frame: Uint8Array, code: number): number {
  const ipOff = code & 0xff;
  const bthOff = (code >>> 8) & 0xff;
  const icrcOff = Math.floor(code / 0x20000);
  return code & 0x10000 ? icrcRoceV1(frame, ipOff, icrcOff) : icrcRoceV2(frame, ipOff, bthOff, icrcOff);
}
