/**
 * The realtime runtime's deferred transmit ICRC (docs/pipeline.md, "CRC
 * passes"): a device leaves a frame's ICRC uncomputed only where the frame
 * object goes straight to another model device, and every other way out
 * gets the frame complete. Checked on every way out, with workers 0, 1 and
 * 2, by reading what came out:
 * - a wire between the two devices (in-process, or a ring between workers
 *   with workers 2), rnic1's port captured: every RoCE frame of the pcap
 *   (what rnic0 sent, as it arrived, and what rnic1 sent) decodes with its
 *   ICRC checked by src/wire, and tshark reads each as InfiniBand, none
 *   malformed (Wireshark's RoCE dissector does not check the ICRC itself);
 * - the same wire with a fault rule (duplicates): the receiver checks the
 *   ICRC;
 * - UDP cables through a relay in this process that checks the ICRC of
 *   every datagram it carries;
 * - a switch: its port 2 on a UDP cable through the relay (what rnic0 sent
 *   into the switch leaves the process as the switch forwards it), and a
 *   switch with both ports on wires (with workers 2 one is a ring), where
 *   the receiver checks the ICRC.
 * Only the wire layout captures: a capture seals what its port sends
 * before the cable sees it, and would hide a cable end that does not.
 * Every layout runs RC WRITEs, a READ and a SEND and checks the bytes,
 * and that neither device counted a bad ICRC or a receive error. A device
 * defers only once one of its ports has a wire to a model device in its
 * own thread, so each of the two gets a second port wired to a partner
 * device on its thread (rnic2, rnic3; with workers 2, device i runs on
 * worker i % 2): the frames of every layout are built deferred, and each
 * way out must seal them.
 */
import { createSocket, type Socket } from 'node:dgram';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { IBV_MTU_1024, IBV_QPT_RC, IBV_WC_RDMA_READ, IBV_WC_RDMA_WRITE, IBV_WC_RECV, IBV_WC_SEND, IBV_WC_SUCCESS } from '../../src/driver/verbs/index.js';
import { type ModelConfig, parseConfig } from '../../src/runtime/config.js';
import { decodePacket, readPcap } from '../../src/wire/index.js';
import { freeUdpPort } from '../helpers/ports.js';
import { TSHARK, tsharkFields } from '../helpers/tshark.js';
import * as H from './harness.js';

const A = { mac: '02:00:00:00:00:01', ipv4: ['192.0.2.1'], mtu: 1024 };
const B = { mac: '02:00:00:00:00:02', ipv4: ['192.0.2.2'], mtu: 1024 };
/** A port of its own subnet: the wire to a partner device that makes its device defer. */
const PARTNER_PORT = (n: number) => ({ mac: `02:00:00:00:01:0${n}`, ipv4: [`198.51.100.${n}`], mtu: 1024 });
const WRITE_BYTES = 16 * 1024;
const WRITES = 6;
const READ_BYTES = 8 * 1024;
const SEND_BYTES = 300;
const HANG_MS = 30_000;

/** Is this Ethernet frame RoCE v2 over IPv4 (UDP 4791)? */
function isRoceV2(f: Uint8Array): boolean {
  return f.length > 42 && f[12] === 0x08 && f[13] === 0x00 && f[23] === 17 && ((f[36]! << 8) | f[37]!) === 4791;
}

/** The ICRC check of one frame: 'ok' or the decoder's complaint. */
function icrcVerdict(f: Uint8Array): string {
  const d = decodePacket(f, undefined, { verifyIcrc: true, verifyIpChecksum: true });
  return d.ok ? 'ok' : `${d.error.code}: ${d.error.message}`;
}

/** Two sockets between two UDP cables, checking the ICRC of every RoCE frame they carry. */
class CheckingRelay {
  readonly bad: string[] = [];
  roce = 0;
  private readonly s0: Socket = createSocket('udp4');
  private readonly s1: Socket = createSocket('udp4');

  /** r0 faces the cable at p0, r1 the one at p1. */
  async open(r0: number, p0: number, r1: number, p1: number): Promise<void> {
    await Promise.all([new Promise<void>((r) => this.s0.bind(r0, '127.0.0.1', r)), new Promise<void>((r) => this.s1.bind(r1, '127.0.0.1', r))]);
    this.s0.on('message', (m) => this.carry(m, this.s1, p1));
    this.s1.on('message', (m) => this.carry(m, this.s0, p0));
  }

  private carry(m: Buffer, out: Socket, port: number): void {
    const f = new Uint8Array(m.buffer, m.byteOffset, m.length);
    if (isRoceV2(f)) {
      this.roce++;
      const v = icrcVerdict(f);
      if (v !== 'ok' && this.bad.length < 5) this.bad.push(v);
    }
    out.send(m, port, '127.0.0.1');
  }

  close(): void {
    this.s0.close();
    this.s1.close();
  }
}

type Layout = 'wire' | 'faulty wire' | 'udp' | 'switch to udp' | 'switch';

interface Setup {
  config: ModelConfig;
  /** rnic1:1's pcap, if it is captured. */
  capture: string | null;
  relay: CheckingRelay | null;
}

async function setup(layout: Layout, workers: number, dir: string): Promise<Setup> {
  const capture = layout === 'wire' ? join(dir, `${layout}-w${workers}-b.pcap`) : null;
  const devices = [
    { name: 'rnic0', ports: [A, PARTNER_PORT(1)] },
    { name: 'rnic1', ports: [{ ...B, ...(capture ? { capture } : {}) }, PARTNER_PORT(2)] },
    { name: 'rnic2', ports: [PARTNER_PORT(3)] },
    { name: 'rnic3', ports: [PARTNER_PORT(4)] },
  ];
  const partners = [
    { kind: 'wire', a: 'rnic0:2', b: 'rnic2:1' },
    { kind: 'wire', a: 'rnic1:2', b: 'rnic3:1' },
  ];
  let relay: CheckingRelay | null = null;
  let cables: unknown[];
  let switches: unknown[] | undefined;
  const viaRelay = async (leftPort: string, left: Record<string, unknown> = {}) => {
    const [p0, r0, r1, p1] = [await freeUdpPort(), await freeUdpPort(), await freeUdpPort(), await freeUdpPort()];
    relay = new CheckingRelay();
    await relay.open(r0, p0, r1, p1);
    return [
      { kind: 'udp', port: leftPort, local: `127.0.0.1:${p0}`, remote: `127.0.0.1:${r0}`, ...left },
      { kind: 'udp', port: 'rnic1:1', local: `127.0.0.1:${p1}`, remote: `127.0.0.1:${r1}` },
    ];
  };
  switch (layout) {
    case 'wire':
      cables = [{ kind: 'wire', a: 'rnic0:1', b: 'rnic1:1' }];
      break;
    case 'faulty wire':
      cables = [{ kind: 'wire', a: 'rnic0:1', b: 'rnic1:1', faults: [{ action: 'duplicate', direction: 'both', probability: 0.05 }] }];
      break;
    case 'udp':
      cables = await viaRelay('rnic0:1');
      break;
    case 'switch to udp':
      switches = [{ name: 'sw0', ports: 2 }];
      cables = [{ kind: 'wire', a: 'rnic0:1', b: 'sw0:1' }, ...(await viaRelay('sw0:2', { hosts: [{ mac: B.mac, ipv4: B.ipv4 }] }))];
      break;
    case 'switch':
      switches = [{ name: 'sw0', ports: 2 }];
      cables = [
        { kind: 'wire', a: 'rnic0:1', b: 'sw0:1' },
        { kind: 'wire', a: 'rnic1:1', b: 'sw0:2' },
      ];
      break;
  }
  cables.push(...partners);
  const config = parseConfig({ workers, seed: 3, devices, cables, ...(switches ? { switches } : {}) }, 'test');
  return { config, capture, relay };
}

/** WRITEs a → b, a READ back, a SEND: every completion and every byte checked. */
async function traffic(f: H.Fabric): Promise<void> {
  const p = H.makePair(f, IBV_QPT_RC, { mtu: IBV_MTU_1024, maxSendWr: 32, maxRecvWr: 8 });
  const src = H.region(f.a, WRITES * WRITE_BYTES, H.ALL_ACCESS, { fill: (i) => (i * 13 + 5) & 0xff });
  const dst = H.region(f.b, WRITES * WRITE_BYTES, H.ALL_ACCESS);
  for (let i = 0; i < WRITES; i++) {
    H.postSend(p.a, H.wrWrite({ wrId: BigInt(i), sge: [src.sge(i * WRITE_BYTES, WRITE_BYTES)], remote: { addr: dst.at(i * WRITE_BYTES), rkey: dst.rkey } }));
  }
  const wcs = await H.pollN(p.a.scq, WRITES, 'WRITEs', HANG_MS);
  wcs.forEach((w, i) => H.expectWc(w, { wr_id: BigInt(i), status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_WRITE }, `write ${i}`));
  H.expectBytes(dst.data.subarray(0, WRITES * WRITE_BYTES), src.data.subarray(0, WRITES * WRITE_BYTES), 'written bytes');

  const back = H.region(f.a, READ_BYTES, H.ALL_ACCESS);
  H.postSend(p.a, H.wrRead({ wrId: 100n, sge: [back.sge()], remote: { addr: dst.at(0), rkey: dst.rkey } }));
  H.expectWc(await H.poll1(p.a.scq, 'READ', HANG_MS), { wr_id: 100n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_READ }, 'read');
  H.expectBytes(back.data.subarray(0, READ_BYTES), src.data.subarray(0, READ_BYTES), 'read bytes');

  const msg = H.region(f.b, SEND_BYTES, H.ALL_ACCESS, { fill: (i) => (i * 3) & 0xff });
  const into = H.region(f.a, SEND_BYTES, H.ALL_ACCESS);
  H.postRecv(p.a, H.recvWr(7n, [into.sge()]));
  H.postSend(p.b, H.wrSend({ wrId: 8n, sge: [msg.sge()] }));
  H.expectWc(await H.poll1(p.b.scq, 'SEND', HANG_MS), { wr_id: 8n, status: IBV_WC_SUCCESS, opcode: IBV_WC_SEND }, 'send');
  H.expectWc(await H.poll1(p.a.rcq, 'RECV', HANG_MS), { wr_id: 7n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RECV, byte_len: SEND_BYTES }, 'recv');
  H.expectBytes(into.data.subarray(0, SEND_BYTES), msg.data.subarray(0, SEND_BYTES), 'sent bytes');
}

/** Checks one capture: its RoCE frames, each decoded with the ICRC checked; returns how many. */
function checkCapture(path: string): number {
  const file = readPcap(readFileSync(path));
  const bad: string[] = [];
  let roce = 0;
  file.records.forEach((rec, i) => {
    if (!isRoceV2(rec.data)) return;
    roce++;
    const v = icrcVerdict(rec.data);
    if (v !== 'ok') bad.push(`frame ${i + 1}: ${v}`);
  });
  expect(bad.slice(0, 5), `${path}: frames with a bad ICRC (${bad.length} of ${roce})`).toEqual([]);
  if (TSHARK) {
    const rows = tsharkFields(path, ['frame.number', 'frame.protocols', '_ws.malformed']);
    expect(rows.length).toBe(file.records.length);
    for (const r of rows) {
      const what = `${path} frame ${r['frame.number']} (${r['frame.protocols']})`;
      expect(r['_ws.malformed'], `${what}: malformed`).toBe('');
      if (!r['frame.protocols']!.includes('arp')) expect(r['frame.protocols'], what).toMatch(/^eth:ethertype:ip:udp:infiniband/);
    }
  }
  return roce;
}

const LAYOUTS: Layout[] = ['wire', 'faulty wire', 'udp', 'switch to udp', 'switch'];
/** At least the WRITEs' packets and their ACKs, the READ and its responses, the SEND and its ACK. */
const MIN_ROCE = WRITES * (WRITE_BYTES / 1024) + READ_BYTES / 1024 + 3;

describe('realtime: every frame leaves with its ICRC computed', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rnic-lazy-icrc-'));
  let f: H.Fabric | null = null;
  let relay: CheckingRelay | null = null;
  afterEach(async () => {
    await f?.close();
    f = null;
    relay?.close();
    relay = null;
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  for (const workers of [0, 1, 2]) {
    for (const layout of LAYOUTS) {
      it(`${layout}, workers ${workers}`, async () => {
        const s = await setup(layout, workers, dir);
        relay = s.relay;
        f = await H.openFabric(s.config);
        const before = [H.counters(f.a), H.counters(f.b)];
        await traffic(f);
        const after = [H.counters(f.a), H.counters(f.b)];
        for (const k of [0, 1]) {
          const d = H.counterDelta(before[k]!, after[k]!);
          expect(d['rx_icrc_encapsulated'] ?? 0n, `device ${k}: bad ICRCs received`).toBe(0n);
          expect(d['port_rcv_errors'] ?? 0n, `device ${k}: receive errors`).toBe(0n);
        }
        await f.close(); // stops the model: the captures are complete
        f = null;
        if (s.capture) expect(checkCapture(s.capture), 'RoCE frames in the capture').toBeGreaterThanOrEqual(MIN_ROCE);
        if (s.relay) {
          expect(s.relay.bad, 'frames through UDP with a bad ICRC').toEqual([]);
          expect(s.relay.roce, 'RoCE frames through UDP').toBeGreaterThanOrEqual(MIN_ROCE);
        }
      }, 60_000);
    }
  }
});
