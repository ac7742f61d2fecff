import { describe, expect, it } from 'vitest';
import { IBV_GID_TYPE_ROCE_V1, IBV_GID_TYPE_ROCE_V2, IBV_LINK_LAYER_ETHERNET, IBV_MTU_1024, IBV_MTU_4096, IBV_PORT_ACTIVE } from './abi/constants.js';
import { capabilitiesToJSON, DEFAULT_CAPABILITIES, DEVICE_PARAMS, ipv6ToBytes, PORT_PARAMS, resolveCapabilities } from './capabilities.js';
import { QUERY_DEVICE_OUT } from './commands.js';
import { describeParams, parseBytes } from '../params/params.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('capabilities', () => {
  it('defaults are rxe-like', () => {
    const d = DEFAULT_CAPABILITIES.device;
    expect(d.maxQpRdAtom).toBe(128);
    expect(d.maxQpInitRdAtom).toBe(128);
    expect(d.maxQp).toBe(0x10000);
    expect(d.maxSge).toBe(32);
    expect(d.maxMrSize).toBe((1n << 64n) - 1n);
    expect(d.localCaAckDelay).toBe(15);
    expect(d.physPortCnt).toBe(1);
    const p = DEFAULT_CAPABILITIES.ports[0]!;
    expect(p.maxMsgSz).toBe(8 * 1024 * 1024);
    expect(p.activeMtuEnum).toBe(IBV_MTU_4096);
    expect(p.state).toBe(IBV_PORT_ACTIVE);
    expect(p.linkLayer).toBe(IBV_LINK_LAYER_ETHERNET);
    expect(Object.isFrozen(d)).toBe(true);
  });

  it('builds the RoCE GID table: link-local v1/v2, IPv4-mapped v1/v2, IPv6 v1/v2', () => {
    const caps = resolveCapabilities({ ports: [{ macAddress: '00:11:22:33:44:55', ipv4Addresses: ['192.0.2.9'], ipv6Addresses: ['2001:db8::1'] }] });
    const g = caps.ports[0]!.gidTable;
    expect(g.map((e) => e.type)).toEqual([1, 2, 1, 2, 1, 2].map((x) => (x === 1 ? IBV_GID_TYPE_ROCE_V1 : IBV_GID_TYPE_ROCE_V2)));
    expect(hex(g[0]!.gid)).toBe('fe800000000000000211' + '22fffe334455');
    expect(hex(g[2]!.gid)).toBe('00000000000000000000ffffc0000209');
    expect(hex(g[4]!.gid)).toBe('20010db8000000000000000000000001');
    expect(hex(ipv6ToBytes('::ffff:1.2.3.4')!)).toBe('00000000000000000000ffff01020304');
    expect(ipv6ToBytes('1::2::3')).toBeNull();
  });

  it('accepts overrides with units and rejects bad configuration', () => {
    const caps = resolveCapabilities({ device: { maxQp: '0x100', maxSge: 4, maxSrqSge: 4 }, ports: [{ activeMtu: '1KiB', maxMsgSz: '1MiB' }, {}] });
    expect(caps.device.maxQp).toBe(256);
    expect(caps.ports[0]!.activeMtuEnum).toBe(IBV_MTU_1024);
    expect(caps.ports[0]!.maxMsgSz).toBe(1 << 20);
    expect(caps.ports[1]!.macAddress).toBe('02:00:00:00:00:02');
    expect(caps.device.physPortCnt).toBe(2);
    const bad = (cfg: object) => expect(() => resolveCapabilities(cfg)).toThrowError(expect.objectContaining({ code: 'DEV_ERR_BAD_CONFIG' }));
    bad({ device: { maxQpp: 1 } });
    bad({ device: { maxSge: 0 } });
    bad({ device: { maxSge: 1.5 } });
    bad({ device: { atomicCap: 'SOMETIMES' } });
    bad({ ports: [{ activeMtu: 1500 }] });
    bad({ ports: [{ activeMtu: 4096, maxMtu: 2048 }] });
    bad({ ports: [{ macAddress: 'zz' }] });
    bad({ ports: [{ ipv4Addresses: ['1.2.3.400'] }] });
    bad({ ports: [] });
    expect(parseBytes('8MiB', 'x')).toBe(8 << 20);
  });

  it('schemas document every parameter; QUERY_DEVICE carries every device parameter', () => {
    for (const [k, s] of Object.entries({ ...DEVICE_PARAMS, ...PORT_PARAMS })) {
      expect(s.doc.length, k).toBeGreaterThan(3);
      expect(s.unit.length, k).toBeGreaterThan(0);
    }
    const outNames = new Set<string>(QUERY_DEVICE_OUT.fields.map((f) => f.name));
    for (const k of Object.keys(DEVICE_PARAMS)) expect(outNames.has(k), k).toBe(true);
    expect(describeParams(DEVICE_PARAMS)).toMatch(/\| `maxQpRdAtom` \| `128` \| count \|/);
    const json = capabilitiesToJSON(DEFAULT_CAPABILITIES);
    expect(json.device['maxMrSize']).toBe('0xffffffffffffffff');
    expect(JSON.parse(JSON.stringify(json))).toEqual(json);
    // The effective configuration round-trips through resolveCapabilities.
    expect(resolveCapabilities(json)).toEqual(DEFAULT_CAPABILITIES);
  });
});
