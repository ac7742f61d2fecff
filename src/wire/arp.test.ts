import { describe, expect, it } from 'vitest';
import { ArpOp, ARP_LENGTH, decodeArpFrame, encodeArpFrame, encodeArpReply, encodeArpRequest, readArp, writeArp } from './arp.js';
import { formatIpv4, parseIpv4 } from './ip.js';
import { formatMac, parseMac } from './ethernet.js';

const hex = (s: string) => Uint8Array.from(s.replace(/\s+/g, '').match(/../g)!, (b) => parseInt(b, 16));
const toHex = (a: Uint8Array) => Array.from(a, (b) => b.toString(16).padStart(2, '0')).join('');

const MAC_A = parseMac('02:00:00:00:00:0a');
const MAC_B = parseMac('02:00:00:00:00:0b');
const IP_A = parseIpv4('192.0.2.1');
const IP_B = parseIpv4('192.0.2.2');

/** Who has 192.0.2.2? Tell 192.0.2.1 — written out by hand from RFC 826. */
const REQUEST_HEX = `
  ffffffffffff 02000000000a 0806
  0001 0800 06 04 0001
  02000000000a c0000201
  000000000000 c0000202
  000000000000000000000000000000000000`;

describe('ARP codec', () => {
  it('encodes a request to the hand-written bytes, padded to 60', () => {
    const f = encodeArpRequest(MAC_A, IP_A, IP_B);
    expect(f.length).toBe(60);
    expect(toHex(f)).toBe(toHex(hex(REQUEST_HEX)));
  });

  it('decodes the hand-written request', () => {
    const r = decodeArpFrame(hex(REQUEST_HEX));
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const { eth, arp } = r.frame;
    expect(formatMac(eth.dst)).toBe('ff:ff:ff:ff:ff:ff');
    expect(arp.op).toBe(ArpOp.REQUEST);
    expect(formatMac(arp.senderMac)).toBe('02:00:00:00:00:0a');
    expect(formatIpv4(arp.senderIp)).toBe('192.0.2.1');
    expect(formatMac(arp.targetMac)).toBe('00:00:00:00:00:00');
    expect(formatIpv4(arp.targetIp)).toBe('192.0.2.2');
  });

  it('round-trips a reply, with and without an 802.1Q tag', () => {
    for (const vlan of [null, { pcp: 3, dei: 0, vid: 100 }]) {
      const f = encodeArpReply(MAC_B, IP_B, MAC_A, IP_A, vlan);
      expect(f.length).toBe(60);
      const r = decodeArpFrame(f);
      expect(r.ok).toBe(true);
      if (!r.ok) return;
      expect(r.frame.eth.vlan).toEqual(vlan);
      expect(r.frame.eth.dst).toEqual(MAC_A);
      expect(r.frame.arp).toEqual({ op: ArpOp.REPLY, senderMac: MAC_B, senderIp: IP_B, targetMac: MAC_A, targetIp: IP_A });
    }
  });

  it('writeArp / readArp at an offset', () => {
    const buf = new Uint8Array(40).fill(0xee);
    expect(writeArp(buf, 5, { op: 2, senderMac: MAC_A, senderIp: IP_A, targetMac: MAC_B, targetIp: IP_B })).toBe(5 + ARP_LENGTH);
    const r = readArp(buf, 5);
    expect(r.ok && r.arp.op).toBe(2);
    expect(r.ok && formatIpv4(r.arp.targetIp)).toBe('192.0.2.2');
  });

  it('returns typed errors, never throws, on bad frames', () => {
    const good = hex(REQUEST_HEX);
    // Every truncation short of the ARP body's end.
    for (let n = 0; n < 14 + ARP_LENGTH; n++) {
      const r = decodeArpFrame(good.subarray(0, n));
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.error.code).toBe('WIRE_TRUNCATED');
    }
    const bad = (at: number, v: number) => {
      const f = good.slice();
      f[at] = v;
      const r = decodeArpFrame(f);
      return r.ok ? 'ok' : r.error.code;
    };
    expect(bad(13, 0x00)).toBe('WIRE_BAD_FIELD'); // ethertype 0x0800
    expect(bad(15, 6)).toBe('WIRE_BAD_FIELD'); // htype 6 (IEEE 802)
    expect(bad(17, 0xdd)).toBe('WIRE_BAD_FIELD'); // ptype
    expect(bad(18, 8)).toBe('WIRE_BAD_FIELD'); // hlen
    expect(bad(21, 3)).toBe('WIRE_BAD_FIELD'); // RARP opcode
    // Random bytes behind an ARP ethertype never throw.
    let seed = 7;
    for (let i = 0; i < 2000; i++) {
      const f = new Uint8Array(14 + (i % 50));
      for (let k = 0; k < f.length; k++) f[k] = (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24;
      f[12] = 0x08;
      f[13] = 0x06;
      expect(() => decodeArpFrame(f)).not.toThrow();
    }
  });

  it('rejects bad arguments to the encoder with a typed error', () => {
    expect(() =>
      encodeArpFrame({ dst: MAC_A, src: MAC_B, vlan: null }, { op: 1, senderMac: MAC_A, senderIp: IP_A.subarray(0, 3), targetMac: MAC_B, targetIp: IP_B }),
    ).toThrow(expect.objectContaining({ code: 'WIRE_BAD_FIELD' }));
  });
});
