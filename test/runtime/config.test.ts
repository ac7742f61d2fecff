/** Configuration mistakes get one line naming the setting (issue 8). */
import { describe, expect, it } from 'vitest';
import { availableParallelism } from 'node:os';
import { ConfigError, DEFAULT_CONFIG, defaultWorkers, parseConfig } from '../../src/runtime/config.js';
import { createDevice } from '../../src/runtime/device-resources.js';

const port = (mac: string, ipv4: string[], ipv6: string[] = []) => ({ mac, ipv4, ipv6 });
const two = (a: ReturnType<typeof port>, b: ReturnType<typeof port>) => ({
  devices: [
    { name: 'rnic0', ports: [a] },
    { name: 'rnic1', ports: [b] },
  ],
  cables: [{ kind: 'wire', a: 'rnic0:1', b: 'rnic1:1' }],
});

describe('parseConfig: two ends of one wire', () => {
  it('accepts distinct MACs and addresses', () => {
    const c = parseConfig(two(port('02:00:00:00:00:01', ['192.0.2.1']), port('02:00:00:00:00:02', ['192.0.2.2'])));
    expect(c.cables).toHaveLength(1);
  });

  it('refuses the same MAC (in any case) and names the cable', () => {
    expect(() => parseConfig(two(port('02:00:00:00:00:0a', ['192.0.2.1']), port('02:00:00:00:00:0A', ['192.0.2.2'])), 'f.json')).toThrow(
      /^f\.json\.cables\[0\]: rnic0:1 and rnic1:1 are on one wire with the same MAC 02:00:00:00:00:0a$/,
    );
  });

  it('refuses the same IPv4 address', () => {
    expect(() => parseConfig(two(port('02:00:00:00:00:01', ['192.0.2.9', '192.0.2.1']), port('02:00:00:00:00:02', ['192.0.2.1'])))).toThrow(
      /cables\[0\]: .* same IPv4 address 192\.0\.2\.1$/,
    );
  });

  it('refuses the same IPv6 address', () => {
    expect(() => parseConfig(two(port('02:00:00:00:00:01', [], ['FD00::1']), port('02:00:00:00:00:02', [], ['fd00::1'])))).toThrow(/same IPv6 address/);
  });

  it('allows the same address on ports that share no wire', () => {
    const c = parseConfig({
      devices: [
        { name: 'a', ports: [port('02:00:00:00:00:01', ['192.0.2.1'])] },
        { name: 'b', ports: [port('02:00:00:00:00:01', ['192.0.2.1'])] },
      ],
    });
    expect(c.devices).toHaveLength(2);
  });
});

describe('parseConfig: memory', () => {
  const withMemory = (memory: unknown) => ({ devices: [{ name: 'rnic0', memory, ports: [port('02:00:00:00:00:01', [])] }] });
  it('takes bytes and KiB/MiB/GiB sizes in whole pages', () => {
    expect(parseConfig(withMemory('64MiB')).devices[0]!.memoryBytes).toBe(64 << 20);
    expect(parseConfig(withMemory(8192)).devices[0]!.memoryBytes).toBe(8192);
  });
  it.each([
    ['1000', /devices\[0\]\.memory: "1000" is not a whole number of 4 KiB pages/],
    ['99999GiB', /devices\[0\]\.memory: "99999GiB" is more than the model's limit of 64 TiB$/],
    ['99999999999999999999GiB', /devices\[0\]\.memory: expected a size such as 64MiB/],
    [0, /devices\[0\]\.memory: expected a size/],
    [-4096, /devices\[0\]\.memory: expected a size/],
    ['lots', /devices\[0\]\.memory: expected a size/],
  ])('refuses %j naming the field', (v, re) => {
    expect(() => parseConfig(withMemory(v))).toThrow(re);
    expect(() => parseConfig(withMemory(v))).toThrow(ConfigError);
  });

  it("a size the machine cannot allocate names the device and its memory setting, not only V8's words", () => {
    // 60000 GiB passes the parser (below 64 TiB) and fails where the SharedArrayBuffer is made.
    const c = parseConfig(withMemory('60000GiB'));
    let err: unknown;
    try {
      createDevice(c.devices[0]!);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/^devices\[rnic0\]\.memory: cannot allocate 64424509440000 bytes of host memory \(.+\)$/);
  });

  it('the default configuration still parses', () => {
    expect(
      parseConfig(
        JSON.parse(JSON.stringify({ ...DEFAULT_CONFIG, devices: DEFAULT_CONFIG.devices.map(({ memoryBytes, ...d }) => ({ ...d, memory: memoryBytes })) })),
      ).devices,
    ).toHaveLength(2);
  });
});

describe('parseConfig: devices[].congestion', () => {
  const base = () => two(port('02:00:00:00:00:01', ['192.0.2.1']), port('02:00:00:00:00:02', ['192.0.2.2']));
  it('takes mlx5-named congestion parameters and hands them to the device', () => {
    const raw = base();
    (raw.devices[0] as Record<string, unknown>).congestion = { rpg_ai_rate: 20, dce_tcp_g: 1020, trust: 'dscp', ecn: false };
    const c = parseConfig(raw);
    expect(c.devices[0]!.congestion).toEqual({ rpg_ai_rate: 20, dce_tcp_g: 1020, trust: 'dscp', ecn: false });
    expect(createDevice(c.devices[0]!).resources.ccConfig).toEqual({ rpg_ai_rate: 20, dce_tcp_g: 1020, trust: 'dscp', ecn: false });
    expect(createDevice(c.devices[1]!).resources.ccConfig).toEqual({});
  });

  it.each([
    [{ rpg_gd: 0 }, /^f\.json\.devices\[0\]\.congestion\.rpg_gd: 0 is outside \[1, 15\]$/],
    [{ rpg_ai: 5 }, /^f\.json\.devices\[0\]\.congestion\.rpg_ai: unknown parameter$/],
    [{ trust: 'vlan' }, /congestion\.trust: "vlan" is not one of pcp, dscp/],
    [{ ecn: 'yes' }, /congestion\.ecn: expected true or false/],
    [{ cnp_802p_prio: 8 }, /congestion\.cnp_802p_prio: 8 is outside \[0, 7\]/],
    [{ min_time_between_cnps: -1 }, /congestion\.min_time_between_cnps: -1 is outside/],
    [{ dce_tcp_g: 1.5 }, /congestion\.dce_tcp_g: expected an integer/],
  ])('refuses %j naming the key', (cc, re) => {
    const raw = base();
    (raw.devices[0] as Record<string, unknown>).congestion = cc;
    expect(() => parseConfig(raw, 'f.json')).toThrow(ConfigError);
    expect(() => parseConfig(raw, 'f.json')).toThrow(re);
  });

  it('refuses a congestion section that is not an object', () => {
    const raw = base();
    (raw.devices[0] as Record<string, unknown>).congestion = [1];
    expect(() => parseConfig(raw, 'f.json')).toThrow(/f\.json\.devices\[0\]\.congestion: expected an object/);
  });
});

describe('workers when the file names none', () => {
  it('is 0 (devices in the application thread) up to 2 cores and 1 above', () => {
    expect([1, 2, 3, 4, 64].map((n) => defaultWorkers(n))).toEqual([0, 0, 1, 1, 1]);
  });

  it('follows this machine in a parsed file and in the built-in default; a named value is kept', () => {
    const here = availableParallelism() <= 2 ? 0 : 1;
    const c = two(port('02:00:00:00:00:01', ['192.0.2.1']), port('02:00:00:00:00:02', ['192.0.2.2']));
    expect(parseConfig(c).workers).toBe(here);
    expect(DEFAULT_CONFIG.workers).toBe(here);
    for (const workers of [0, 1, 2]) expect(parseConfig({ ...c, workers }).workers).toBe(workers);
  });
});

describe('engineSpinUs', () => {
  const c = () => two(port('02:00:00:00:00:01', ['192.0.2.1']), port('02:00:00:00:00:02', ['192.0.2.2']));
  it('is absent unless named (the engines keep their 50 µs); a named value 0..1000000 is kept', () => {
    expect(parseConfig(c()).engineSpinUs).toBeUndefined();
    for (const us of [0, 50, 1000, 1_000_000]) expect(parseConfig({ ...c(), engineSpinUs: us }).engineSpinUs).toBe(us);
  });

  it.each([
    [-1, /^f\.json\.engineSpinUs: -1 is outside \[0, 1000000\]$/],
    [1_000_001, /^f\.json\.engineSpinUs: 1000001 is outside \[0, 1000000\]$/],
    [2.5, /^f\.json\.engineSpinUs: expected an integer/],
    ['50us', /^f\.json\.engineSpinUs: /],
  ])('refuses %j naming the key', (v, re) => {
    expect(() => parseConfig({ ...c(), engineSpinUs: v }, 'f.json')).toThrow(ConfigError);
    expect(() => parseConfig({ ...c(), engineSpinUs: v }, 'f.json')).toThrow(re);
  });
});

describe('parseConfig: UDP cable addresses, checked up front (not when the socket binds)', () => {
  const udp = (...cables: Record<string, unknown>[]) => ({
    devices: [
      { name: 'rnic0', ports: [port('02:00:00:00:00:01', ['192.0.2.1'])] },
      { name: 'rnic1', ports: [port('02:00:00:00:00:02', ['192.0.2.2'])] },
    ],
    cables: cables.map((c, i) => ({ kind: 'udp', port: `rnic${i}:1`, ...c })),
  });

  it('accepts literal IPv4 and IPv6 addresses, a local port 0, and two cables on port 0', () => {
    const c = parseConfig(udp({ local: '127.0.0.1:0', remote: '127.0.0.1:5000' }, { local: '[::1]:0', remote: '[0:0::1]:5001' }));
    expect(c.cables).toHaveLength(2);
    expect(parseConfig(udp({ local: '127.0.0.1:0', remote: '127.0.0.1:5000' }, { local: '127.0.0.1:0', remote: '127.0.0.1:5001' })).cables).toHaveLength(2);
  });

  it.each([
    [{ local: 'localhost:5000', remote: '127.0.0.1:5001' }, /^f\.json\.cables\[0\]\.local: local address "localhost:5000": host "localhost" is not a literal/],
    [{ local: '127.0.0.1', remote: '127.0.0.1:5001' }, /^f\.json\.cables\[0\]\.local: .*missing ':port'$/],
    [{ local: '127.0.0.1:70000', remote: '127.0.0.1:5001' }, /^f\.json\.cables\[0\]\.local: .*port "70000" is not 0\.\.65535$/],
    [{ local: '::1:5000', remote: '127.0.0.1:5001' }, /^f\.json\.cables\[0\]\.local: .*must be in brackets/],
    [{ local: '224.0.0.1:5000', remote: '127.0.0.1:5001' }, /^f\.json\.cables\[0\]\.local: .*multicast or broadcast/],
    [{ local: '127.0.0.1:5000', remote: '127.0.0.1:0' }, /^f\.json\.cables\[0\]\.remote: .*port 0 is only allowed for the local address$/],
    [{ local: '127.0.0.1:5000', remote: '[::1]:5001' }, /^f\.json\.cables\[0\]\.remote: .*is IPv6 but local "127\.0\.0\.1:5000" is IPv4$/],
    [{ local: '127.0.0.1:5000', remote: '0.0.0.0:5001' }, /^f\.json\.cables\[0\]\.remote: .*the unspecified address cannot be sent to$/],
    [{ local: '127.0.0.1:5000', remote: '255.255.255.255:5001' }, /^f\.json\.cables\[0\]\.remote: .*multicast and broadcast peers/],
    [{ local: '127.0.0.1:5000', remote: 'peer:5001' }, /^f\.json\.cables\[0\]\.remote: .*not a literal IPv4 or IPv6 address/],
  ])('%j: one line naming the field', (cable, re) => {
    expect(() => parseConfig(udp(cable), 'f.json')).toThrow(ConfigError);
    expect(() => parseConfig(udp(cable), 'f.json')).toThrow(re);
  });

  it('two cables binding one local address: the second is refused, naming the first', () => {
    const both = udp({ local: '127.0.0.1:5000', remote: '127.0.0.1:5001' }, { local: '127.0.0.1:5000', remote: '127.0.0.1:5002' });
    expect(() => parseConfig(both, 'f.json')).toThrow(
      /^f\.json\.cables\[1\]\.local: 127\.0\.0\.1:5000 is already the local address of cables\[0\]: two sockets cannot bind one address$/,
    );
    const v6 = udp({ local: '[::1]:5000', remote: '[::1]:5001' }, { local: '[0::1]:5000', remote: '[::1]:5002' });
    expect(() => parseConfig(v6, 'f.json')).toThrow(/^f\.json\.cables\[1\]\.local: \[::1\]:5000 is already the local address of cables\[0\]/);
  });
});
