/**
 * Wireshark judges the ARP and neighbour-discovery encoders: every field it
 * reads is the one we meant, and it finds the ICMPv6 checksums good.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ALL_NODES_ADDRESS,
  encodeArpReply,
  encodeArpRequest,
  encodeNeighborAdvertisement,
  encodeNeighborSolicitation,
  ipv6MulticastMac,
  LINKTYPE_ETHERNET,
  parseIpv4,
  parseIpv6,
  parseMac,
  UNSPECIFIED_ADDRESS,
} from '../../src/wire/index.js';
import { TSHARK, tsharkFields } from '../helpers/tshark.js';
import { openPcapFile } from '../../src/runtime/pcap-file.js';

const dir = mkdtempSync(join(tmpdir(), 'rnic-arpnd-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const MAC_A = parseMac('02:00:00:00:00:0a');
const MAC_B = parseMac('02:00:00:00:00:0b');

const FIELDS = [
  'frame.protocols',
  '_ws.malformed',
  '_ws.expert.severity',
  'arp.opcode',
  'arp.src.hw_mac',
  'arp.src.proto_ipv4',
  'arp.dst.hw_mac',
  'arp.dst.proto_ipv4',
  'ipv6.src',
  'ipv6.dst',
  'ipv6.hlim',
  'icmpv6.type',
  'icmpv6.code',
  'icmpv6.checksum.status',
  'icmpv6.nd.ns.target_address',
  'icmpv6.nd.na.target_address',
  'icmpv6.nd.na.flag.s',
  'icmpv6.nd.na.flag.o',
  'icmpv6.opt.type',
  'icmpv6.opt.linkaddr',
  'vlan.id',
] as const;

describe.skipIf(!TSHARK)('ARP and ND frames under tshark', () => {
  it('decodes as intended, with good ICMPv6 checksums', () => {
    const frames = [
      encodeArpRequest(MAC_A, parseIpv4('192.0.2.1'), parseIpv4('192.0.2.2')),
      encodeArpReply(MAC_B, parseIpv4('192.0.2.2'), MAC_A, parseIpv4('192.0.2.1')),
      encodeNeighborSolicitation(MAC_A, parseIpv6('2001:db8::a'), parseIpv6('2001:db8::12:3456')),
      encodeNeighborAdvertisement(MAC_B, parseIpv6('2001:db8::12:3456'), MAC_A, parseIpv6('2001:db8::a'), { solicited: true, override: true }),
      encodeNeighborSolicitation(MAC_A, UNSPECIFIED_ADDRESS, parseIpv6('fe80::1')),
      encodeNeighborAdvertisement(
        MAC_B,
        parseIpv6('fe80::1'),
        ipv6MulticastMac(ALL_NODES_ADDRESS),
        ALL_NODES_ADDRESS,
        { solicited: false },
        { pcp: 0, dei: 0, vid: 42 },
      ),
    ];
    const file = join(dir, 'arp-nd.pcap');
    const w = openPcapFile(file, { linktype: LINKTYPE_ETHERNET, nanosecond: true });
    frames.forEach((f, i) => w.write(f, BigInt(i) * 1000n));
    w.close();
    const t = tsharkFields(file, FIELDS);
    expect(t).toHaveLength(frames.length);
    for (const r of t) {
      expect(r['_ws.malformed']).toBe('');
      expect(r['_ws.expert.severity']).toBe('');
    }
    expect(t[0]).toMatchObject({
      'arp.opcode': '1',
      'arp.src.hw_mac': '02:00:00:00:00:0a',
      'arp.src.proto_ipv4': '192.0.2.1',
      'arp.dst.hw_mac': '00:00:00:00:00:00',
      'arp.dst.proto_ipv4': '192.0.2.2',
    });
    expect(t[1]).toMatchObject({
      'arp.opcode': '2',
      'arp.src.hw_mac': '02:00:00:00:00:0b',
      'arp.src.proto_ipv4': '192.0.2.2',
      'arp.dst.hw_mac': '02:00:00:00:00:0a',
      'arp.dst.proto_ipv4': '192.0.2.1',
    });
    expect(t[2]).toMatchObject({
      'ipv6.src': '2001:db8::a',
      'ipv6.dst': 'ff02::1:ff12:3456',
      'ipv6.hlim': '255',
      'icmpv6.type': '135',
      'icmpv6.code': '0',
      'icmpv6.checksum.status': '1',
      'icmpv6.nd.ns.target_address': '2001:db8::12:3456',
      'icmpv6.opt.type': '1',
      'icmpv6.opt.linkaddr': '02:00:00:00:00:0a',
    });
    expect(t[3]).toMatchObject({
      'ipv6.src': '2001:db8::12:3456',
      'ipv6.dst': '2001:db8::a',
      'icmpv6.type': '136',
      'icmpv6.checksum.status': '1',
      'icmpv6.nd.na.target_address': '2001:db8::12:3456',
      'icmpv6.nd.na.flag.s': '1',
      'icmpv6.nd.na.flag.o': '1',
      'icmpv6.opt.type': '2',
      'icmpv6.opt.linkaddr': '02:00:00:00:00:0b',
    });
    expect(t[4]).toMatchObject({
      'ipv6.src': '::',
      'ipv6.dst': 'ff02::1:ff00:1',
      'icmpv6.type': '135',
      'icmpv6.checksum.status': '1',
      'icmpv6.nd.ns.target_address': 'fe80::1',
      'icmpv6.opt.type': '',
    });
    expect(t[5]).toMatchObject({ 'vlan.id': '42', 'ipv6.dst': 'ff02::1', 'icmpv6.type': '136', 'icmpv6.checksum.status': '1', 'icmpv6.nd.na.flag.s': '0' });
  });
});
