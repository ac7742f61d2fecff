/** markCe: CE on ECT IPv4 / IPv6 packets with a valid header checksum after; Not-ECT and non-IP left alone. */
import { describe, expect, it } from 'vitest';
import { decodePacket, encodePacket, internetChecksum, newPacket } from '../../wire/index.js';
import { markCe } from './ecn.js';

describe('markCe', () => {
  it('sets CE on ECT(0) and ECT(1) over IPv4, the header checksum stays right, the ICRC still passes', () => {
    for (const ecn of [1, 2]) {
      for (const dscp of [0, 26, 48, 63]) {
        for (const id of [0, 1, 0x1234, 0xfffe, 0xffff]) {
          const f = encodePacket(newPacket('roce-v2', 0x0a, { dscp, ecn, ipId: id, destQp: 7 }));
          expect(markCe(f)).toBe(true);
          expect(f[15]! & 3).toBe(3);
          expect(f[15]! >>> 2).toBe(dscp);
          expect(internetChecksum(f, 14, 20)).toBe(0);
          const d = decodePacket(f);
          expect(d.ok && d.packet.ipv4!.ecn).toBe(3);
        }
      }
    }
  });

  it('sets CE over IPv6 (traffic class low bits), leaves the flow label', () => {
    const f = encodePacket(newPacket('roce-v2', 0x0a, { ipVersion: 6, dscp: 24, ecn: 2, flowLabel: 0xabcde }));
    expect(markCe(f)).toBe(true);
    const d = decodePacket(f);
    expect(d.ok && d.packet.ipv6!.trafficClass).toBe((24 << 2) | 3);
    expect(d.ok && d.packet.ipv6!.flowLabel).toBe(0xabcde);
  });

  it('leaves Not-ECT, CE already, RoCE v1 and runts alone', () => {
    const notEct = encodePacket(newPacket('roce-v2', 0x0a, { ecn: 0 }));
    const copy = notEct.slice();
    expect(markCe(notEct)).toBe(false);
    expect(notEct).toEqual(copy);
    expect(markCe(encodePacket(newPacket('roce-v2', 0x0a, { ecn: 3 })))).toBe(false);
    expect(markCe(encodePacket(newPacket('roce-v1', 0x0a, {})))).toBe(false);
    expect(markCe(new Uint8Array(10))).toBe(false);
  });
});
