/**
 * Deferred payloads beside the deferred ICRC (lazy-icrc.ts): a frame that
 * left its payload in a source buffer gives every reader the same bytes as
 * the frame built with its payload copied in, and a receiving device's
 * scratch decode reads the payload where it is.
 */
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../test/seeded.js';
import { newPacket } from './build.js';
import { clearIcrcMark, deferPayload, materializePayload, payloadDeferred, payloadSource, sealBeforeChange, sealIcrc, takeAsBuilt } from './lazy-icrc.js';
import { Op } from './opcodes.js';
import { DecodeScratch, decodePacket, encodePacket, payloadOffset } from './packet.js';

const OPS = [Op.RC_SEND_FIRST, Op.RC_SEND_ONLY, Op.RC_RDMA_WRITE_FIRST, Op.RC_RDMA_WRITE_MIDDLE, Op.RC_RDMA_WRITE_ONLY, Op.RC_SEND_ONLY_WITH_IMMEDIATE];

/** A RoCE v2 frame whose payload sits in `src` at `at`: built with its ICRC pending and its payload region zeroed, and the same frame built whole. */
function sample(r: () => number): { frame: Uint8Array; whole: Uint8Array; src: Uint8Array; at: number; off: number; len: number } {
  const n = (k: number) => Math.floor(r() * k);
  const len = 1 + n(4096);
  const payload = Uint8Array.from({ length: len }, () => n(256));
  const p = newPacket('roce-v2', OPS[n(OPS.length)]!, {
    srcMac: Uint8Array.from({ length: 6 }, () => n(256)),
    dstMac: Uint8Array.from({ length: 6 }, () => n(256)),
    srcIp: Uint8Array.from({ length: 4 }, () => n(256)),
    dstIp: Uint8Array.from({ length: 4 }, () => n(256)),
    psn: n(1 << 24),
    destQp: n(1 << 24),
    payload,
  });
  const whole = encodePacket(p);
  const frame = encodePacket(p, undefined, 0, { deferIcrc: true });
  const off = payloadOffset(p);
  frame.fill(0, off, off + len);
  const at = n(64);
  const src = new Uint8Array(len + at + n(64));
  src.set(payload, at);
  deferPayload(frame, off, len, src, at);
  return { frame, whole, src, at, off, len };
}

describe('deferred payloads', () => {
  it('500 seeded frames: sealIcrc gives the bytes of the frame built whole (payload and ICRC), and keeps the frame as built', () => {
    const r = seededRandom(11);
    for (let i = 0; i < 500; i++) {
      const s = sample(r);
      expect(payloadDeferred(s.frame)).toBe(true);
      expect(Buffer.compare(sealIcrc(s.frame), s.whole), `frame ${i}`).toBe(0);
      expect(payloadDeferred(s.frame)).toBe(false);
      expect(takeAsBuilt(s.frame)).toBe(true);
    }
  });

  it('500 seeded frames: a scratch decode with the ICRC known reads the payload in the source (the frame keeps its zeros); any other decode sees it in place', () => {
    const r = seededRandom(12);
    const scratch = new DecodeScratch();
    for (let i = 0; i < 500; i++) {
      const s = sample(r);
      const d = decodePacket(s.frame, undefined, { verifyIcrc: false, verifyIpChecksum: false }, scratch);
      expect(d.ok).toBe(true);
      const p = scratch.packet;
      expect(p.payloadBytes).toBe(s.src);
      expect(p.payloadAt).toBe(s.at);
      expect(p.payloadLength).toBe(s.len);
      expect(s.frame.subarray(s.off, s.off + s.len).every((b) => b === 0)).toBe(true);
      // A decode that checks the ICRC, or one without the scratch, gets the payload copied in first.
      const t = sample(r);
      const e = decodePacket(t.frame, undefined, {}, scratch);
      expect(e.ok, `frame ${i}: ICRC checked over the payload in place`).toBe(false); // still pending: the field is zero
      expect(payloadDeferred(t.frame)).toBe(false);
      expect(Buffer.compare(t.frame.subarray(t.off, t.off + t.len), t.src.subarray(t.at, t.at + t.len))).toBe(0);
      const u = sample(r);
      const f = decodePacket(u.frame, undefined, { verifyIcrc: false });
      expect(f.ok && Buffer.compare(f.packet.payload, u.src.subarray(u.at, u.at + u.len)) === 0, `frame ${i}`).toBe(true);
    }
  });

  it('a decoder that finds another place or length than the sender recorded gets the bytes in the frame, never the source', () => {
    const s = sample(seededRandom(13));
    expect(payloadSource(s.frame, s.off + 1, s.len)).toBe(null);
    expect(payloadDeferred(s.frame)).toBe(false);
    expect(Buffer.compare(s.frame.subarray(s.off, s.off + s.len), s.src.subarray(s.at, s.at + s.len))).toBe(0);
  });

  it('sealBeforeChange copies the payload in before a hook may change bytes; materializing reads the source as it is then', () => {
    const s = sample(seededRandom(14));
    s.src[s.at] = s.src[s.at]! ^ 0xff;
    const want = s.src[s.at];
    sealBeforeChange(s.frame);
    expect(s.frame[s.off]).toBe(want);
    expect(takeAsBuilt(s.frame)).toBe(false);
    const t = sample(seededRandom(15));
    materializePayload(t.frame);
    t.src.fill(0);
    expect(Buffer.compare(sealIcrc(t.frame), t.whole)).toBe(0);
  });

  it('a recycled frame forgets its deferred payload; a frame whose ICRC is not pending cannot defer one', () => {
    const s = sample(seededRandom(16));
    clearIcrcMark(s.frame);
    expect(payloadDeferred(s.frame)).toBe(false);
    expect(
      materializePayload(s.frame)
        .subarray(s.off, s.off + s.len)
        .every((b) => b === 0),
    ).toBe(true);
    expect(() => deferPayload(s.whole, 0, 1, s.src, 0)).toThrow(/ICRC is not pending/);
  });
});
