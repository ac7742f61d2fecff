import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../test/seeded.js';
import { newPacket } from '../wire/build.js';
import { icrcPending, sealIcrc, takeAsBuilt } from '../wire/lazy-icrc.js';
import { buildCnp, CnpBuilder } from './cnp.js';

/** A CE-marked RC WRITE from peer number `peer`. */
function received(peer: number, v6: boolean, n: (k: number) => number) {
  return newPacket('roce-v2', 0x0a /* RC_RDMA_WRITE_ONLY */, {
    ipVersion: v6 ? 6 : 4,
    srcMac: Uint8Array.of(2, 0, 0, 0, 0, peer),
    dstMac: Uint8Array.of(2, 0, 0, 0, 1, 1),
    srcIp: v6 ? Uint8Array.from({ length: 16 }, (_, i) => (i === 15 ? peer : 0xfd)) : Uint8Array.of(10, 0, 0, peer),
    dstIp: v6 ? Uint8Array.from({ length: 16 }, () => 0xfd) : Uint8Array.of(10, 0, 1, 1),
    vlan: n(4) === 0 ? { pcp: 3, dei: 0, vid: 100 } : null,
    ecn: 3,
    destQp: 0x11 + n(4),
    payload: new Uint8Array(n(64)),
  });
}

describe('CnpBuilder', () => {
  it('gives buildCnp’s bytes for 3,000 seeded CNPs (a changed peer, port MAC, destination QP, DSCP or ECN rebuilds; IPv6 and VLAN-tagged packets too)', () => {
    const n0 = seededRandom(0xc0ffee);
    const n = (k: number) => Math.floor(n0() * k);
    const b = new CnpBuilder();
    let v4 = 0;
    for (let i = 0; i < 3000; i++) {
      // Mostly the same peer, destination QP and fields per local QP (a hit); sometimes not (a rebuild).
      const qpn = n(4);
      const odd = n(6) === 0;
      const rx = received(odd ? n(3) : qpn % 3, n(10) === 0, n);
      const srcMac = Uint8Array.of(2, 0, 0, 0, 1, odd && n(2) === 0 ? 2 : 1);
      const destQp = odd && n(2) === 0 ? 0x100 + n(5) : 0x100 + qpn;
      const dscp = odd && n(2) === 0 ? n(64) : 48;
      const ect = !(odd && n(2) === 0);
      const ipId = n(65536);
      const want = buildCnp(rx, srcMac, destQp, dscp, ect, ipId, false);
      const got = b.build(qpn, rx, srcMac, destQp, dscp, ect, ipId, true);
      if (rx.ipv4 !== null) v4++;
      // Deferred (the simulator's devices): the ICRC is computed when the bytes are read.
      expect(icrcPending(got)).toBe(rx.ipv4 !== null);
      expect(sealIcrc(got)).toEqual(want);
    }
    // Both ways were taken, mostly the copy.
    expect(3000 - b.encoded).toBeGreaterThan(1500);
    expect(b.encoded - (3000 - v4)).toBeGreaterThan(100);
  });

  it('marks a patched CNP as built (the receiver may skip its check) and leaves the kept copy unmarked', () => {
    const n = () => 0;
    const b = new CnpBuilder();
    const rx = received(0, false, n);
    const mac = Uint8Array.of(2, 0, 0, 0, 1, 1);
    const first = b.build(9, rx, mac, 7, 48, true, 1, true);
    sealIcrc(first); // a capture read it: the next one must still start from a zero ICRC field
    const second = b.build(9, rx, mac, 7, 48, true, 2, true);
    expect(icrcPending(second)).toBe(true);
    expect(sealIcrc(second)).toEqual(buildCnp(rx, mac, 7, 48, true, 2, false));
    expect(takeAsBuilt(b.build(9, rx, mac, 7, 48, true, 3, true))).toBe(true);
  });

  it('encodes at once when the NIC does not defer the ICRC', () => {
    const n = () => 0;
    const b = new CnpBuilder();
    const rx = received(0, false, n);
    const mac = Uint8Array.of(2, 0, 0, 0, 1, 1);
    for (let id = 0; id < 3; id++) {
      const f = b.build(9, rx, mac, 7, 48, true, id, false);
      expect(icrcPending(f)).toBe(false);
      expect(f).toEqual(buildCnp(rx, mac, 7, 48, true, id, false));
    }
  });
});
