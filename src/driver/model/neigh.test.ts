import { describe, expect, it } from 'vitest';
import { macFromLinkLocalGid, macFromMulticastGid, neighForget, neighLearn, neighResolve } from './neigh.js';

const ll = Uint8Array.of(0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55);
const v4 = (a: number, b: number, c: number, d: number) => Uint8Array.of(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d);

describe('neighbour resolution', () => {
  it('derives MACs from link-local EUI-64 and multicast GIDs', () => {
    expect(Array.from(macFromLinkLocalGid(ll)!)).toEqual([0x02, 0x11, 0x22, 0x33, 0x44, 0x55]);
    expect(macFromLinkLocalGid(v4(10, 0, 0, 1))).toBeNull();
    const noEui = ll.slice();
    noEui[11] = 0;
    expect(macFromLinkLocalGid(noEui)).toBeNull();
    expect(Array.from(macFromMulticastGid(Uint8Array.of(0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4))!)).toEqual([0x33, 0x33, 1, 2, 3, 4]);
    expect(Array.from(macFromMulticastGid(v4(239, 129, 2, 3))!)).toEqual([0x01, 0x00, 0x5e, 1, 2, 3]);
    expect(macFromMulticastGid(v4(10, 0, 0, 1))).toBeNull();
  });

  it('own GIDs first, then the runtime, then model devices of the process, then derivation', () => {
    const own = Uint8Array.of(2, 0, 0, 0, 0, 1);
    const src = { ownGids: [v4(10, 0, 0, 1)], ownMac: own, resolveMac: (_p: number, g: Uint8Array) => (g[15] === 2 ? Uint8Array.of(2, 2, 2, 2, 2, 2) : null) };
    expect(neighResolve(src, 1, v4(10, 0, 0, 1))).toBe(own);
    expect(Array.from(neighResolve(src, 1, v4(10, 0, 0, 2))!)).toEqual([2, 2, 2, 2, 2, 2]);
    expect(neighResolve(src, 1, v4(10, 0, 0, 3))).toBeNull();
    neighLearn('peer', [v4(10, 0, 0, 3)], Uint8Array.of(2, 3, 3, 3, 3, 3));
    expect(Array.from(neighResolve(src, 1, v4(10, 0, 0, 3))!)).toEqual([2, 3, 3, 3, 3, 3]);
    neighForget('peer');
    expect(neighResolve(src, 1, v4(10, 0, 0, 3))).toBeNull();
    expect(Array.from(neighResolve(src, 1, ll)!)).toEqual([0x02, 0x11, 0x22, 0x33, 0x44, 0x55]);
  });
});
