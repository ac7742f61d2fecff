/**
 * The Linux port counters end to end (port_xmit_data, port_rcv_data,
 * port_xmit_packets, port_rcv_packets): RDMA WRITEs of known sizes over
 * RoCE v2 / IPv4, each frame's size computed from the headers the wire
 * carries (Ethernet 14, IPv4 20, UDP 8, BTH 12, RETH 16 or AETH 4, ICRC 4;
 * the payload padded to 4), and the data counters in 4-octet words as
 * IBTA PortXmitData / PortRcvData count them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IBV_QPT_RC } from '../../src/driver/verbs/index.js';
import * as H from './harness.js';

const HDR = 14 + 20 + 8 + 12; // Ethernet, IPv4, UDP, BTH
const ICRC = 4;

describe('Linux port counters', () => {
  let f: H.Fabric;
  beforeAll(async () => {
    f = await H.openFabric(H.twoDeviceConfig(0));
  });
  afterAll(async () => {
    await f?.close();
  });

  it('count every RDMA frame and its bytes / 4, both ways, and agree with sent_pkts / rcvd_pkts', async () => {
    const p = H.makePair(f, IBV_QPT_RC);
    const src = H.region(f.a, 4096, H.ALL_ACCESS, { fill: (i) => i });
    const dst = H.region(f.b, 4096);
    const sizes = [4, 100, 257, 1000, 1024, 3];
    const a0 = H.counters(f.a);
    const b0 = H.counters(f.b);
    for (const [i, len] of sizes.entries()) {
      H.postSend(p.a, H.wrWrite({ wrId: BigInt(i), sge: [src.sge(0, len)], remote: { addr: dst.addr, rkey: dst.rkey } }));
      await H.poll1(p.a.scq, `write ${i}`);
    }
    await H.sleep(20);
    const da = H.counterDelta(a0, H.counters(f.a));
    const db = H.counterDelta(b0, H.counters(f.b));
    const n = BigInt(sizes.length);
    // Requests a → b: one WRITE ONLY each (all ≤ the 1024-byte MTU); responses b → a: one ACK each.
    const requestBytes = sizes.reduce((s, l) => s + HDR + 16 + Math.ceil(l / 4) * 4 + ICRC, 0);
    const ackBytes = sizes.length * (HDR + 4 + ICRC);
    expect(da['port_xmit_packets']).toBe(n);
    expect(da['port_xmit_packets']).toBe(da['sent_pkts']);
    expect(db['port_rcv_packets']).toBe(n);
    expect(db['port_rcv_packets']).toBe(db['rcvd_pkts']);
    expect(db['port_xmit_packets']).toBe(n);
    expect(da['port_rcv_packets']).toBe(n);
    expect(da['port_xmit_data'], 'request bytes / 4').toBe(BigInt(Math.floor(requestBytes / 4)));
    expect(db['port_rcv_data']).toBe(da['port_xmit_data']);
    expect(db['port_xmit_data'], 'ACK bytes / 4').toBe(BigInt(Math.floor(ackBytes / 4)));
    expect(da['port_rcv_data']).toBe(db['port_xmit_data']);
    expect(da['port_rcv_errors'] ?? 0n).toBe(0n);
  });
});
