/**
 * Garbage on a UDP cable (the QEMU socket convention) while an RC QP runs
 * over it, with the devices in this thread (workers 0), on one worker and
 * on two. The test process is the wire: it relays every frame between the
 * two devices' sockets and, in between, sends seeded hostile datagrams from
 * the peer's own address (so they pass the cable's source check): too short,
 * too long, random bytes, unknown EtherTypes, ARP garbage, PAUSE / PFC with
 * random quanta, real RoCE frames with a flipped byte (bad ICRC), cut short
 * or replayed as they were. Each kind must be dropped and counted under its
 * name (docs/pipeline.md "A hostile wire"), and the QP's traffic must finish
 * with every byte in place.
 */
import { createSocket, type Socket } from 'node:dgram';
import { afterAll, describe, expect, it } from 'vitest';
import { currentModel } from '../../src/boot.js';
import { IBV_QPT_RC, IBV_WC_RDMA_WRITE, IBV_WC_SUCCESS } from '../../src/driver/verbs/index.js';
import { Random } from '../../src/runtime/sim/random.js';
import { PATIENT_QP_TIMEOUT } from '../examples/scenarios.js';
import { freeUdpPort } from '../helpers/ports.js';
import * as H from './harness.js';

const MSG = 8192;
const WRITES = 64;
const GARBAGE_PER_FRAME = 2;
const HANG_MS = 120_000;

const MAC = ['02:00:00:00:00:01', '02:00:00:00:00:02'];
const macBytes = (m: string) => Uint8Array.from(m.split(':').map((x) => Number.parseInt(x, 16)));

type Kind = 'tiny' | 'huge' | 'random' | 'ethertype' | 'arp' | 'pause' | 'badIcrc' | 'truncated' | 'replay';
const KINDS: readonly Kind[] = ['tiny', 'huge', 'random', 'ethertype', 'arp', 'pause', 'badIcrc', 'truncated', 'replay'];

/** An integer in [lo, hi]. */
const between = (rnd: Random, lo: number, hi: number) => lo + rnd.int(hi - lo + 1);

function bind(port: number): Promise<Socket> {
  const s = createSocket('udp4');
  return new Promise((r) => s.bind(port, '127.0.0.1', () => r(s)));
}

/** A frame of `kind` for the device whose MAC is `to`, made from the last real frame `seen` on the way to it. */
function hostile(kind: Kind, rnd: Random, to: Uint8Array, seen: Uint8Array | null): Uint8Array {
  const bytes = (n: number) => Uint8Array.from({ length: n }, () => between(rnd, 0, 255));
  const eth = (dst: Uint8Array, type: number, body: Uint8Array) => {
    const f = new Uint8Array(14 + body.length);
    f.set(dst, 0);
    f.set([0x02, 0xee, 0, 0, 0, 9], 6);
    f[12] = type >> 8;
    f[13] = type & 0xff;
    f.set(body, 14);
    return f;
  };
  switch (kind) {
    case 'tiny':
      return bytes(between(rnd, 0, 13));
    case 'huge':
      return bytes(between(rnd, 9019, 20000));
    case 'random': {
      const f = bytes(between(rnd, 14, 1500));
      f[0] = 0x06; // unicast, locally administered, never a device's MAC
      return f;
    }
    case 'ethertype': {
      let t = between(rnd, 0x0600, 0xffff);
      if (t === 0x0800 || t === 0x0806 || t === 0x86dd || t === 0x8808 || t === 0x8100 || t === 0x8915) t = 0x1234;
      return eth(to, t, bytes(between(rnd, 0, 200)));
    }
    case 'arp': {
      // Not for our addresses: a request or reply for 198.51.100.x, with random hardware / protocol fields.
      const b = bytes(28);
      if (between(rnd, 0, 1) === 0) b.set([0, 1, 8, 0, 6, 4], 0);
      b.set([198, 51, 100, between(rnd, 0, 255)], 24);
      return eth(between(rnd, 0, 1) ? to : new Uint8Array(6).fill(0xff), 0x0806, b);
    }
    case 'pause': {
      // 802.3x PAUSE or 802.1Qbb PFC with any quanta (at 100 Gb/s, at most 0.34 ms each).
      const pfc = between(rnd, 0, 1) === 1;
      const body = new Uint8Array(46);
      body[0] = pfc ? 0x01 : 0x00; // opcode 0x0101 PFC, 0x0001 PAUSE
      body[1] = 0x01;
      if (pfc) {
        body[3] = between(rnd, 0, 255);
        for (let i = 0; i < 8; i++) {
          const q = between(rnd, 0, 0xffff);
          body[4 + 2 * i] = q >> 8;
          body[5 + 2 * i] = q & 0xff;
        }
      } else {
        const q = between(rnd, 0, 0xffff);
        body[2] = q >> 8;
        body[3] = q & 0xff;
      }
      return eth(Uint8Array.from([0x01, 0x80, 0xc2, 0, 0, 1]), 0x8808, body);
    }
    case 'badIcrc': {
      const f = Uint8Array.from(seen!);
      // Past Ethernet + IPv4 + UDP + BTH: RETH, AETH, payload or the ICRC itself.
      f[between(rnd, 54, f.length - 1)]! ^= 1 << between(rnd, 0, 7);
      return f;
    }
    case 'truncated':
      return seen!.slice(0, between(rnd, 14, seen!.length - 1));
    case 'replay':
      return Uint8Array.from(seen!);
  }
}

describe.each([0, 1, 2])('workers: %i', (workers) => {
  let f: H.Fabric | null = null;
  const socks: Socket[] = [];
  afterAll(async () => {
    await f?.close();
    for (const s of socks) s.close();
  });

  it(`${WRITES} × 8 KiB WRITEs over a UDP wire with ${GARBAGE_PER_FRAME} hostile datagrams per frame: every byte lands, every drop counted`, {
    timeout: 2 * HANG_MS,
  }, async () => {
    const [p0, p1, r0, r1] = [await freeUdpPort(), await freeUdpPort(), await freeUdpPort(), await freeUdpPort()];
    const config = H.twoDeviceConfig(workers, (c) => {
      c.cables = [
        { kind: 'udp', port: 'rnic0:1', local: `127.0.0.1:${p0}`, remote: `127.0.0.1:${r0}` },
        { kind: 'udp', port: 'rnic1:1', local: `127.0.0.1:${p1}`, remote: `127.0.0.1:${r1}` },
      ] as typeof c.cables;
    });
    // The wire: s0 is rnic0's peer, s1 rnic1's.
    const s0 = await bind(r0);
    const s1 = await bind(r1);
    socks.push(s0, s1);
    const rnd = new Random(4242 + workers);
    const sent = [new Map<Kind, number>(), new Map<Kind, number>()];
    const lastRoce: (Uint8Array | null)[] = [null, null];
    const relay = (to: Socket, toPort: number, toDev: number) => (msg: Buffer) => {
      const frame = new Uint8Array(msg);
      if (frame.length > 58 && frame[12] === 0x08 && frame[13] === 0x00 && frame[23] === 17) lastRoce[toDev] = frame;
      to.send(msg, toPort, '127.0.0.1');
      for (let i = 0; i < GARBAGE_PER_FRAME; i++) {
        const seen = lastRoce[toDev];
        const choices = seen ? KINDS : KINDS.slice(0, 6);
        const kind = choices[between(rnd, 0, choices.length - 1)]!;
        to.send(hostile(kind, rnd, macBytes(MAC[toDev]!), seen), toPort, '127.0.0.1');
        sent[toDev]!.set(kind, (sent[toDev]!.get(kind) ?? 0) + 1);
      }
    };
    s0.on('message', relay(s1, p1, 1));
    s1.on('message', relay(s0, p0, 0));

    f = await H.openFabric(config);
    await currentModel()!.cabled;
    const before = [H.counters(f.a), H.counters(f.b)];
    const { a } = H.makePair(f, IBV_QPT_RC, { timeout: PATIENT_QP_TIMEOUT, maxSendWr: 64 });
    const src = H.region(f.a, WRITES * MSG, H.ALL_ACCESS);
    src.data.set(H.pattern(WRITES * MSG, 7 + workers));
    const dst = H.region(f.b, WRITES * MSG, H.ALL_ACCESS);
    for (let i = 0; i < WRITES; i++) {
      H.postSend(a, H.wrWrite({ wrId: BigInt(i), sge: [src.sge(i * MSG, MSG)], remote: { addr: dst.at(i * MSG), rkey: dst.rkey } }));
      const wc = await H.poll1(a.scq, `WRITE ${i}`, HANG_MS);
      H.expectWc(wc, { wr_id: BigInt(i), status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_WRITE }, `write ${i}`);
    }
    H.expectBytes(dst.data, src.data, 'WRITE targets');
    dst.checkGuards('WRITE target');
    // Let the last garbage arrive and the I/O threads publish their counters (every 250 ms).
    await new Promise((r) => setTimeout(r, 800));
    const udp = currentModel()!.udpStats!();
    const ports = (await currentModel()!.fabricStats!()).ports;
    const delta = [H.counterDelta(before[0]!, H.counters(f.a)), H.counterDelta(before[1]!, H.counters(f.b))];
    for (const d of [0, 1]) {
      const n = (k: Kind) => sent[d]!.get(k) ?? 0;
      const u = udp[`rnic${d}:1`]!;
      const p = ports[`rnic${d}:1`]!;
      const c = (k: string) => Number(delta[d]![k] ?? 0n);
      const what = `rnic${d} (${JSON.stringify(Object.fromEntries(sent[d]!))})`;
      expect(u.rxTooSmall, `${what}: rxTooSmall`).toBe(n('tiny'));
      expect(u.rxTooLarge, `${what}: rxTooLarge`).toBe(n('huge'));
      expect(u.rxRingFull + u.rxForeign + u.rxNoHandler, `${what}: lost in the I/O thread`).toBe(0);
      expect(p.rx_mac_control_packets, `${what}: rx_mac_control_packets`).toBe(n('pause'));
      expect(p.rx_arp_nd_errors, `${what}: rx_arp_nd_errors`).toBe(n('arp'));
      expect(c('rx_icrc_encapsulated'), `${what}: rx_icrc_encapsulated`).toBe(n('badIcrc'));
      // A frame cut inside its IPv4 / UDP headers is not RoCE (rx_ignored); one cut later is malformed (port_rcv_errors).
      expect(p.rx_ignored! + c('port_rcv_errors'), `${what}: rx_ignored + port_rcv_errors`).toBe(n('random') + n('ethertype') + n('truncated') + n('badIcrc'));
    }
    // A replayed request is a duplicate: executed once, answered again.
    expect(Number(delta[1]!.duplicate_request ?? 0n), 'rnic1 duplicate_request').toBe(sent[1]!.get('replay') ?? 0);
  });
});
