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

/** A recycled frame view starts over as if new: no mark (`takeAsBuilt` false, nothing to seal). */
export function clearIcrcMark(frame: Uint8Array): void {
  if ((frame as Marked)[MARK] !== undefined) (frame as Marked)[MARK] = undefined;
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
