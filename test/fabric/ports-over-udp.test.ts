/**
 * Two model ports, each on its own UdpCable end over 127.0.0.1, find each
 * other by ARP and ND through real sockets; port A's capture is then read
 * back by tshark.
 */
import * as dgram from 'node:dgram';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { UdpCable } from '../../src/runtime/udp-cable.js';
import { EthPort, resolveEthPortParams } from '../../src/pipeline/eth-port.js';
import { formatMac, LINKTYPE_ETHERNET, parseIpv4, parseIpv6 } from '../../src/wire/index.js';
import { TSHARK, tsharkFields } from '../helpers/tshark.js';
import { openPcapFile } from '../../src/runtime/pcap-file.js';

const dir = mkdtempSync(join(tmpdir(), 'rnic-ports-udp-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The realtime runtime's clock; the port never reads time itself. */
const wallClock = { nowNs: () => process.hrtime.bigint() };

async function freePort(): Promise<number> {
  const s = dgram.createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

async function until(cond: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

describe('EthPorts over a UDP cable', () => {
  it('resolve each other by ARP and ND; the capture reads back in tshark', async () => {
    const [pa, pb] = [await freePort(), await freePort()];
    const cableA = await UdpCable.open({ local: `127.0.0.1:${pa}`, remote: `127.0.0.1:${pb}` });
    const cableB = await UdpCable.open({ local: `127.0.0.1:${pb}`, remote: `127.0.0.1:${pa}` });
    const a = new EthPort(resolveEthPortParams({ macAddress: '02:00:00:00:00:0a', ipv4Addresses: ['192.0.2.1'], ipv6Addresses: ['2001:db8::1'] }), wallClock);
    const b = new EthPort(resolveEthPortParams({ macAddress: '02:00:00:00:00:0b', ipv4Addresses: ['192.0.2.2'], ipv6Addresses: ['2001:db8::2'] }), wallClock);
    a.attach(cableA);
    b.attach(cableB);
    cableA.onReceive((f) => a.receive(f));
    cableB.onReceive((f) => b.receive(f));
    const file = join(dir, 'port-a.pcap');
    const cap = openPcapFile(file, { linktype: LINKTYPE_ETHERNET, nanosecond: true });
    a.setCapture(cap);
    try {
      let mac: Uint8Array | null = null;
      await until(() => (mac = a.resolve(parseIpv4('192.0.2.2'))) !== null, 'ARP');
      expect(formatMac(mac!)).toBe('02:00:00:00:00:0b');
      await until(() => (mac = a.resolve(parseIpv6('2001:db8::2'))) !== null, 'ND');
      expect(formatMac(mac!)).toBe('02:00:00:00:00:0b');
      // B learned A from A's requests, without asking.
      expect(formatMac(b.resolve(parseIpv4('192.0.2.1'))!)).toBe('02:00:00:00:00:0a');
      expect(formatMac(b.resolve(parseIpv6('2001:db8::1'))!)).toBe('02:00:00:00:00:0a');
      expect(b.counters()).toMatchObject({ arp_requests_sent: 0, nd_ns_sent: 0, arp_replies_sent: 1, nd_na_sent: 1 });
    } finally {
      a.setCapture(null);
      cap.close();
      cableA.close();
      cableB.close();
    }
    if (!TSHARK) return;
    const t = tsharkFields(file, ['arp.opcode', 'arp.dst.proto_ipv4', 'icmpv6.type', 'icmpv6.nd.ns.target_address', 'icmpv6.checksum.status', '_ws.malformed']);
    expect(t).toEqual([
      {
        'arp.opcode': '1',
        'arp.dst.proto_ipv4': '192.0.2.2',
        'icmpv6.type': '',
        'icmpv6.nd.ns.target_address': '',
        'icmpv6.checksum.status': '',
        '_ws.malformed': '',
      },
      {
        'arp.opcode': '2',
        'arp.dst.proto_ipv4': '192.0.2.1',
        'icmpv6.type': '',
        'icmpv6.nd.ns.target_address': '',
        'icmpv6.checksum.status': '',
        '_ws.malformed': '',
      },
      {
        'arp.opcode': '',
        'arp.dst.proto_ipv4': '',
        'icmpv6.type': '135',
        'icmpv6.nd.ns.target_address': '2001:db8::2',
        'icmpv6.checksum.status': '1',
        '_ws.malformed': '',
      },
      {
        'arp.opcode': '',
        'arp.dst.proto_ipv4': '',
        'icmpv6.type': '136',
        'icmpv6.nd.ns.target_address': '',
        'icmpv6.checksum.status': '1',
        '_ws.malformed': '',
      },
    ]);
  });
});
