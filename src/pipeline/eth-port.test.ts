import { describe, expect, it } from 'vitest';
import { InProcessCable } from '../fabric/cable.js';
import {
  encodeArpRequest,
  encodePacket,
  encodePfc,
  formatIpv6,
  formatMac,
  ipv4MappedGid,
  LINKTYPE_ETHERNET,
  LINKTYPE_INFINIBAND,
  newPacket,
  parseIpv4,
  parseIpv6,
  parseMac,
  PcapWriter,
  readPcap,
} from '../wire/index.js';
import { ETH_PORT_COUNTERS, EthPort, PortCtr, resolveEthPortParams } from './eth-port.js';

class TestClock {
  t = 1_000_000_000n;
  nowNs(): bigint {
    return this.t;
  }
}

const RC_SEND_ONLY = 0x04;

function pair(extraA: Record<string, unknown> = {}, extraB: Record<string, unknown> = {}) {
  const clock = new TestClock();
  const a = new EthPort(
    resolveEthPortParams({ macAddress: '02:00:00:00:00:0a', ipv4Addresses: ['192.0.2.1'], ipv6Addresses: ['2001:db8::1'], ...extraA }),
    clock,
  );
  const b = new EthPort(
    resolveEthPortParams({ macAddress: '02:00:00:00:00:0b', ipv4Addresses: ['192.0.2.2'], ipv6Addresses: ['2001:db8::2'], ...extraB }),
    clock,
  );
  const cable = new InProcessCable();
  const rx = { a: [] as string[], b: [] as string[] };
  a.attach(cable.a);
  b.attach(cable.b);
  cable.a.onReceive((f) => rx.a.push(a.receive(f)));
  cable.b.onReceive((f) => rx.b.push(b.receive(f)));
  const settle = () => {
    while (cable.drain() > 0);
  };
  return { clock, a, b, cable, rx, settle };
}

describe('EthPort parameters', () => {
  it('validates and freezes', () => {
    const p = resolveEthPortParams({ macAddress: '02:AA:00:00:00:01', solicitInterval: '250ms' });
    expect(p.macAddress).toBe('02:aa:00:00:00:01');
    expect(p.solicitInterval).toBe(250_000_000n);
    expect(Object.isFrozen(p)).toBe(true);
    for (const bad of [
      { macAddress: '01:00:5e:00:00:01' },
      { macAddress: 'nope' },
      { ipv4Addresses: ['300.1.1.1'] },
      { ipv4Addresses: ['224.0.0.1'] },
      { ipv6Addresses: ['ff02::1'] },
      { solicitInterval: '1 fortnight' },
      { neighborCapacity: 0 },
      { colour: 'red' },
    ]) {
      expect(() => resolveEthPortParams(bad)).toThrow(expect.objectContaining({ code: 'DEV_ERR_BAD_CONFIG' }));
    }
  });

  it('declares every counter once, in PortCtr order, with a description', () => {
    expect(ETH_PORT_COUNTERS.length).toBe(PortCtr.COUNT);
    expect(ETH_PORT_COUNTERS[PortCtr.NEIGH_UPDATES]!.name).toBe('neigh_updates');
    expect(new Set(ETH_PORT_COUNTERS.map((c) => c.name)).size).toBe(ETH_PORT_COUNTERS.length);
    for (const c of ETH_PORT_COUNTERS) expect(c.doc.length).toBeGreaterThan(10);
  });
});

describe('GIDs', () => {
  it('link-local first, then IPv4-mapped, then IPv6; addresses can change at run time', () => {
    const { a } = pair({ ipv4Addresses: ['192.0.2.1', '198.51.100.1'] });
    expect(a.gids().map(formatIpv6)).toEqual(['fe80::ff:fe00:a', '::ffff:192.0.2.1', '::ffff:198.51.100.1', '2001:db8::1']);
    a.addAddress(parseIpv6('2001:db8::99'));
    a.removeAddress(ipv4MappedGid(parseIpv4('198.51.100.1')));
    expect(a.gids().map(formatIpv6)).toEqual(['fe80::ff:fe00:a', '::ffff:192.0.2.1', '2001:db8::1', '2001:db8::99']);
    const noLl = new EthPort(resolveEthPortParams({ linkLocal: false, ipv4Addresses: ['10.0.0.1'] }), new TestClock());
    expect(noLl.gids().map(formatIpv6)).toEqual(['::ffff:10.0.0.1']);
    expect(() => a.resolve(new Uint8Array(5))).toThrow(expect.objectContaining({ code: 'PORT_BAD_ADDRESS' }));
  });
});

describe('two ports on an in-process cable', () => {
  it('resolve each other by ARP, rate-limited, and learn from the request', () => {
    const { a, b, rx, settle, clock, cable } = pair();
    const ipB = parseIpv4('192.0.2.2');
    expect(a.resolve(ipB)).toBeNull();
    expect(a.resolve(ipB)).toBeNull(); // rate-limited: no second request
    expect(a.counters().arp_requests_sent).toBe(1);
    expect(cable.pending).toBe(1);
    cable.drain(); // B gets the request, answers, and learns A
    expect(rx.b).toEqual(['consumed']);
    expect(b.counters()).toMatchObject({ arp_requests_rcvd: 1, arp_replies_sent: 1, neigh_updates: 1 });
    expect(formatMac(b.resolve(parseIpv4('192.0.2.1'))!)).toBe('02:00:00:00:00:0a');
    expect(b.counters().arp_requests_sent).toBe(0);
    settle();
    expect(rx.a).toEqual(['consumed']);
    expect(a.counters().arp_replies_rcvd).toBe(1);
    expect(formatMac(a.resolve(ipB)!)).toBe('02:00:00:00:00:0b');
    // The IPv4-mapped GID is the same neighbour.
    expect(formatMac(a.resolve(ipv4MappedGid(ipB))!)).toBe('02:00:00:00:00:0b');
    expect(a.neighbors()).toEqual([{ ip: '192.0.2.2', mac: '02:00:00:00:00:0b', source: 'arp', updatedNs: clock.t }]);
    expect(a.counters().neigh_resolve_misses).toBe(2);
  });

  it('re-solicits only after solicitInterval', () => {
    const { a, clock } = pair();
    const ghost = parseIpv4('192.0.2.77');
    expect(a.resolve(ghost)).toBeNull();
    clock.t += 999_999_999n;
    expect(a.resolve(ghost)).toBeNull();
    expect(a.counters().arp_requests_sent).toBe(1);
    clock.t += 1n;
    expect(a.resolve(ghost)).toBeNull();
    expect(a.counters().arp_requests_sent).toBe(2);
  });

  it('resolve each other by ND (global and link-local) and learn from the NS', () => {
    const { a, b, rx, settle } = pair();
    const ipB = parseIpv6('2001:db8::2');
    expect(a.resolve(ipB)).toBeNull();
    expect(a.counters().nd_ns_sent).toBe(1);
    settle();
    expect(rx.b).toEqual(['consumed']);
    expect(rx.a).toEqual(['consumed']);
    expect(b.counters()).toMatchObject({ nd_ns_rcvd: 1, nd_na_sent: 1 });
    expect(formatMac(a.resolve(ipB)!)).toBe('02:00:00:00:00:0b');
    expect(formatMac(b.resolve(parseIpv6('2001:db8::1'))!)).toBe('02:00:00:00:00:0a');
    expect(b.counters().nd_ns_sent).toBe(0);
    // Link-local, asked from our link-local address.
    const llB = b.gids()[0]!;
    expect(formatIpv6(llB)).toBe('fe80::ff:fe00:b');
    expect(a.resolve(llB)).toBeNull();
    settle();
    expect(formatMac(a.resolve(llB)!)).toBe('02:00:00:00:00:0b');
    expect(b.neighbors().map((n) => n.ip)).toContain('fe80::ff:fe00:a');
  });

  it('learns the source of RoCE frames for our addresses and passes them on as rdma', () => {
    const { a, b, rx, settle } = pair();
    const v4 = encodePacket(
      newPacket('roce-v2', RC_SEND_ONLY, {
        srcMac: parseMac('02:00:00:00:00:0b'),
        dstMac: parseMac('02:00:00:00:00:0a'),
        srcIp: parseIpv4('192.0.2.2'),
        dstIp: parseIpv4('192.0.2.1'),
        payload: new Uint8Array(8),
      }),
    );
    const v6 = encodePacket(
      newPacket('roce-v2', RC_SEND_ONLY, {
        ipVersion: 6,
        srcMac: parseMac('02:00:00:00:00:0b'),
        dstMac: parseMac('02:00:00:00:00:0a'),
        srcIp: parseIpv6('2001:db8::2'),
        dstIp: parseIpv6('2001:db8::1'),
      }),
    );
    const v1 = encodePacket(
      newPacket('roce-v1', RC_SEND_ONLY, {
        srcMac: parseMac('02:00:00:00:00:0c'),
        dstMac: parseMac('02:00:00:00:00:0a'),
        srcIp: parseIpv6('2001:db8::3'),
        dstIp: parseIpv6('2001:db8::1'),
      }),
    );
    const notOurs = encodePacket(
      newPacket('roce-v2', RC_SEND_ONLY, {
        srcMac: parseMac('02:00:00:00:00:0b'),
        dstMac: parseMac('02:00:00:00:00:0a'),
        srcIp: parseIpv4('192.0.2.2'),
        dstIp: parseIpv4('192.0.2.99'),
      }),
    );
    for (const f of [v4, v6, v1, notOurs]) b.transmit(f);
    settle();
    expect(rx.a).toEqual(['rdma', 'rdma', 'rdma', 'ignored']);
    expect(a.counters()).toMatchObject({ rx_rdma_packets: 3, rx_ignored: 1, neigh_updates: 3, arp_requests_sent: 0 });
    expect(formatMac(a.resolve(parseIpv4('192.0.2.2'))!)).toBe('02:00:00:00:00:0b');
    expect(formatMac(a.resolve(parseIpv6('2001:db8::2'))!)).toBe('02:00:00:00:00:0b');
    expect(formatMac(a.resolve(parseIpv6('2001:db8::3'))!)).toBe('02:00:00:00:00:0c');
    expect(a.neighbors().map((n) => n.source)).toEqual(['roce', 'roce', 'roce']);
    // The same source again changes nothing.
    b.transmit(v4);
    settle();
    expect(a.counters().neigh_updates).toBe(3);
  });

  it('keys IPv4 addresses on both sides of 128.0.0.0 alike (own, learned, broadcast, groups)', () => {
    const low = ['10.0.0.1', '127.255.255.254'];
    const high = ['128.0.0.1', '192.0.2.1', '223.255.255.254'];
    const { a, b, rx, settle } = pair({ ipv4Addresses: [...low, ...high] });
    const roce = (dst: string, src = '198.51.100.7') =>
      encodePacket(
        newPacket('roce-v2', RC_SEND_ONLY, {
          srcMac: parseMac('02:00:00:00:00:0b'),
          dstMac: parseMac('02:00:00:00:00:0a'),
          srcIp: parseIpv4(src),
          dstIp: parseIpv4(dst),
        }),
      );
    for (const ip of [...low, ...high]) {
      expect(a.owns(parseIpv4(ip))).toBe(true);
      expect(formatMac(a.resolve(parseIpv4(ip))!)).toBe('02:00:00:00:00:0a');
      b.transmit(roce(ip));
    }
    // One below and one above each own address: not ours.
    for (const ip of ['10.0.0.2', '127.255.255.253', '128.0.0.2', '192.0.2.0', '223.255.255.255']) b.transmit(roce(ip));
    settle();
    expect(rx.a).toEqual([...Array(5).fill('rdma'), ...Array(5).fill('ignored')]);
    // The source (above 2^31) was learned once, then found again under the same key.
    expect(a.neighbors()).toEqual([expect.objectContaining({ ip: '198.51.100.7', mac: '02:00:00:00:00:0b', source: 'roce' })]);
    expect(a.counters().neigh_updates).toBe(1);
    expect(formatMac(a.resolve(parseIpv4('198.51.100.7'))!)).toBe('02:00:00:00:00:0b');
    expect(formatMac(a.resolve(parseIpv4('255.255.255.255'))!)).toBe('ff:ff:ff:ff:ff:ff');
    expect(formatMac(a.resolve(parseIpv4('239.129.2.3'))!)).toBe('01:00:5e:01:02:03');
    expect(formatMac(a.resolve(parseIpv4('224.0.0.1'))!)).toBe('01:00:5e:00:00:01');
    expect(a.counters().arp_requests_sent).toBe(0);
  });

  it('classifies MAC control, unknown protocols, foreign MACs and malformed ARP', () => {
    const { a, b, rx, settle } = pair();
    const macB = parseMac('02:00:00:00:00:0b');
    const other = new Uint8Array(60);
    other.set(parseMac('02:00:00:00:00:0a'), 0);
    other.set(macB, 6);
    other[12] = 0x88;
    other[13] = 0xcc; // LLDP
    const foreign = encodeArpRequest(macB, parseIpv4('192.0.2.2'), parseIpv4('192.0.2.1')).slice();
    foreign.set([0x02, 0, 0, 0, 0, 0x0e], 0); // unicast to someone else
    const badArp = encodeArpRequest(macB, parseIpv4('192.0.2.2'), parseIpv4('192.0.2.1')).slice();
    badArp[14 + 7] = 9; // opcode 9
    const runt = new Uint8Array(10);
    for (const f of [encodePfc(macB, 0x08, [0, 0, 0, 0xffff, 0, 0, 0, 0]), other, foreign, badArp, runt]) b.transmit(f);
    settle();
    expect(rx.a).toEqual(['mac-control', 'ignored', 'ignored', 'consumed', 'ignored']);
    expect(a.counters()).toMatchObject({ rx_packets: 5, rx_mac_control_packets: 1, rx_ignored: 3, rx_arp_nd_errors: 1, arp_replies_sent: 0 });
  });

  it('transmit with no cable attached drops and counts', () => {
    const p = new EthPort(resolveEthPortParams(), new TestClock());
    p.transmit(new Uint8Array(60));
    expect(p.counters()).toMatchObject({ tx_dropped: 1, tx_packets: 0 });
  });

  it('keeps counters in a caller-supplied (shared) array', () => {
    const shared = new Float64Array(new SharedArrayBuffer(8 * PortCtr.COUNT));
    const p = new EthPort(resolveEthPortParams({ ipv4Addresses: ['192.0.2.1'] }), new TestClock(), shared);
    p.resolve(parseIpv4('192.0.2.5'));
    expect(shared[PortCtr.NEIGH_RESOLVE_MISSES]).toBe(1);
    expect(() => new EthPort(resolveEthPortParams(), new TestClock(), new Float64Array(3))).toThrow(expect.objectContaining({ code: 'PORT_BAD_CONFIG' }));
  });

  it('evicts the least recently updated neighbour at capacity', () => {
    const p = new EthPort(resolveEthPortParams({ neighborCapacity: 2 }), new TestClock());
    p.setNeighbor(parseIpv4('10.0.0.1'), parseMac('02:00:00:00:01:01'));
    p.setNeighbor(parseIpv4('10.0.0.2'), parseMac('02:00:00:00:01:02'));
    p.setNeighbor(parseIpv4('10.0.0.1'), parseMac('02:00:00:00:01:11'));
    p.setNeighbor(parseIpv4('10.0.0.3'), parseMac('02:00:00:00:01:03'));
    expect(p.neighbors().map((n) => `${n.ip}=${n.mac}`)).toEqual(['10.0.0.1=02:00:00:00:01:11', '10.0.0.3=02:00:00:00:01:03']);
  });
});

describe('capture', () => {
  function memoryCapture() {
    const chunks: Uint8Array[] = [];
    const w = new PcapWriter((c) => chunks.push(c), { linktype: LINKTYPE_ETHERNET, nanosecond: true });
    const records = () => {
      w.flush();
      return readPcap(Uint8Array.from(chunks.flatMap((c) => Array.from(c)))).records;
    };
    return { w, records };
  }

  it('writes every frame in and out with the clock time, switchable at run time', () => {
    const { a, b, settle, clock } = pair();
    const cap = memoryCapture();
    a.setCapture(cap.w);
    clock.t = 5_000n;
    a.resolve(parseIpv4('192.0.2.2')); // out: ARP request at 5000
    clock.t = 6_000n;
    settle(); // in: ARP reply at 6000
    a.setCapture(null);
    a.forgetNeighbor();
    clock.t = 7_000n;
    a.resolve(parseIpv6('2001:db8::2')); // not captured
    settle();
    a.setCapture(cap.w);
    clock.t = 8_000n;
    b.transmit(encodePfc(parseMac('02:00:00:00:00:0b'), 1, [5, 0, 0, 0, 0, 0, 0, 0]));
    settle(); // in: PFC at 8000
    const recs = cap.records();
    expect(recs.map((r) => r.timestampNs)).toEqual([5_000n, 6_000n, 8_000n]);
    expect(recs.map((r) => (r.data[12]! << 8) | r.data[13]!)).toEqual([0x0806, 0x0806, 0x8808]);
    expect(recs[0]!.data[21]).toBe(1); // request
    expect(recs[1]!.data[21]).toBe(2); // reply
  });

  it('refuses a non-Ethernet writer', () => {
    const { a } = pair();
    const w = new PcapWriter(() => {}, { linktype: LINKTYPE_INFINIBAND });
    expect(() => a.setCapture(w)).toThrow(expect.objectContaining({ code: 'PORT_BAD_CAPTURE' }));
  });
});
