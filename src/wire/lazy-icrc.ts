/**
 * Deferred ICRC. In the simulator most frames go from one model device to
 * another over links that vouch for their bytes, and the receiver skips the
 * ICRC check (its result is known), so nobody reads the ICRC field: computing
 * it (a CRC pass over the whole frame) is work for no reader. The encoder
 * can leave the field "not yet computed" (`encodePacket(..., { deferIcrc })`);
 * `sealIcrc` computes it, and every reader of a frame's bytes calls it first
 * (the pcap writer does so itself; docs/simulator.md lists the others).
 *
 * Sealing later gives the same ICRC as sealing at encode time as long as
 * only fields the ICRC masks changed in between (IP TOS/ECN, TTL, header
 * checksum, UDP checksum, BTH byte 4: SPEC-DIGEST §3.1), which is all a
 * switch rewrites. Anything that may change other bytes (a fault hook)
 * seals before it looks.
 *
 * A pending frame is therefore also the simulator's word that its bytes are
 * exactly as its device built them (no hook that may change bytes has seen
 * it): a receiver may take its ICRC check as passed (`takeAsBuilt`).
 *
 * Keyed by the frame's view: a recycled buffer gets a new view per frame,
 * so a mark cannot outlive its frame. A copy of a pending frame is not
 * pending: seal before copying.
 */
import { icrcRoceV1, icrcRoceV2, writeIcrc } from './icrc.js';

/** icrcOff * 2^17 + v1 * 2^16 + bthOff * 2^8 + ipOff (ipOff, bthOff < 256; a frame < 2^14 bytes). */
const PENDING = new WeakMap<Uint8Array, number>();

/**
 * @internal The encoder's mark: `frame` is a RoCE frame (v2 with the IP
 * header at `ipOff`, or v1 with the GRH there) whose ICRC at `icrcOff` is
 * not computed yet.
 */
export function markIcrcPending(frame: Uint8Array, v1: boolean, ipOff: number, bthOff: number, icrcOff: number): void {
  PENDING.set(frame, icrcOff * 0x20000 + (v1 ? 0x10000 : 0) + bthOff * 0x100 + ipOff);
}

/** True while `frame`'s ICRC field is not computed (the bytes there are zero). */
export function icrcPending(frame: Uint8Array): boolean {
  return PENDING.has(frame);
}

/**
 * A receiver's question: is `frame` still as its sender's pipeline built
 * it (its ICRC pending)? If so the check of its ICRC would pass, and the
 * mark is dropped: the caller consumes the frame and lets no byte of it go
 * anywhere else (the ICRC field stays zero). Otherwise false, and the frame
 * is as it came, its ICRC to be checked.
 */
export function takeAsBuilt(frame: Uint8Array): boolean {
  return PENDING.delete(frame);
}

/**
 * Computes and writes `frame`'s ICRC if it was deferred; returns `frame`.
 * Call before reading, copying or changing a frame's bytes (other than the
 * ICRC-masked fields). Cheap when nothing is pending.
 */
export function sealIcrc(frame: Uint8Array): Uint8Array {
  const code = PENDING.get(frame);
  if (code === undefined) return frame;
  PENDING.delete(frame);
  const ipOff = code & 0xff;
  const bthOff = (code >>> 8) & 0xff;
  const icrcOff = Math.floor(code / 0x20000);
  const crc = code & 0x10000 ? icrcRoceV1(frame, ipOff, icrcOff) : icrcRoceV2(frame, ipOff, bthOff, icrcOff);
  writeIcrc(frame, icrcOff, crc);
  return frame;
}
