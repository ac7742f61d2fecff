/**
 * A switch between two realtime devices (docs/fabric.md, "Switches in the
 * realtime runtime"): the simulator's switch, driven by the wall clock,
 * with ports paced at a 1 Gb/s line rate so its egress queue builds when
 * the sender outpaces it. RC WRITEs cross it: every byte lands; with a low
 * ECN Kmin the switch marks CE, the receiver (notification point) answers
 * with CNPs and the sender (reaction point) handles them; with ECN off
 * nothing is marked; with a static PFC XOFF low on the traffic's priority
 * the switch pauses the sender. The switch runs in the application's thread
 * (workers 0), on one worker with both devices, on a worker while one
 * device is on another (shared-memory rings), and with its second port on a
 * UDP cable to a device reached through a socket (as another process would
 * be: the switch knows that host only from the cable's `hosts`).
 *
 * Timing is not what is tested: the QPs have a long transport timeout and
 * the deadlines only catch a hang.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { currentModel } from '../../src/boot.js';
import { IBV_MTU_1024, IBV_QPT_RC, IBV_WC_RDMA_WRITE, IBV_WC_SUCCESS } from '../../src/driver/verbs/index.js';
import { type ModelConfig, parseConfig } from '../../src/runtime/config.js';
import { PATIENT_QP_TIMEOUT } from '../examples/scenarios.js';
import { freeUdpPort } from '../helpers/ports.js';
import * as H from './harness.js';

const MSG = 64 * 1024;
const WRITES = 24;
const DEPTH = 8;
const HANG_MS = 120_000;

const A = { mac: '02:00:00:00:00:01', ipv4: ['192.0.2.1'], mtu: 1024 };
const B = { mac: '02:00:00:00:00:02', ipv4: ['192.0.2.2'], mtu: 1024 };

/** ECN on every priority, marking above 2 KB (the default thresholds are for 100 Gb/s ports). */
const LOW_KMIN = { thresholds: [{ linkRate: '1Gbps', kmin: 2000, kmax: 20000, pmax: 1 }], priorities: [0, 1, 2, 3, 4, 5, 6, 7] };

interface Layout {
  name: string;
  workers: number;
  udp: boolean;
}

async function config(l: Layout, sw: Record<string, unknown>, linkRate = '1Gbps'): Promise<ModelConfig> {
  const cables: unknown[] = [{ kind: 'wire', a: 'rnic0:1', b: 'sw0:1' }];
  if (l.udp) {
    const [p1, p2] = [await freeUdpPort(), await freeUdpPort()];
    cables.push(
      { kind: 'udp', port: 'sw0:2', local: `127.0.0.1:${p1}`, remote: `127.0.0.1:${p2}`, hosts: [{ mac: B.mac, ipv4: B.ipv4 }] },
      { kind: 'udp', port: 'rnic1:1', local: `127.0.0.1:${p2}`, remote: `127.0.0.1:${p1}` },
    );
  } else cables.push({ kind: 'wire', a: 'rnic1:1', b: 'sw0:2' });
  return parseConfig(
    {
      workers: l.workers,
      devices: [
        { name: 'rnic0', ports: [A] },
        { name: 'rnic1', ports: [B] },
      ],
      switches: [{ name: 'sw0', ports: 2, linkRate, config: sw }],
      cables,
    },
    'test',
  );
}

/** WRITEs rnic0 → rnic1 through the switch, DEPTH in flight; checks every completion and byte. */
async function writeThrough(f: H.Fabric): Promise<void> {
  const { a } = H.makePair(f, IBV_QPT_RC, { mtu: IBV_MTU_1024, timeout: PATIENT_QP_TIMEOUT, maxSendWr: 64, maxRecvWr: 16 });
  const src = H.region(f.a, WRITES * MSG, H.ALL_ACCESS);
  src.data.set(H.pattern(WRITES * MSG, 7));
  const dst = H.region(f.b, WRITES * MSG, H.ALL_ACCESS);
  let posted = 0;
  let done = 0;
  while (done < WRITES) {
    while (posted < WRITES && posted - done < DEPTH) {
      H.postSend(a, H.wrWrite({ wrId: BigInt(posted), sge: [src.sge(posted * MSG, MSG)], remote: { addr: dst.at(posted * MSG), rkey: dst.rkey } }));
      posted++;
    }
    const wc = await H.poll1(a.scq, `WRITE ${done}`, HANG_MS);
    H.expectWc(wc, { wr_id: BigInt(done), status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_WRITE }, `write ${done}`);
    done++;
  }
  H.expectBytes(dst.data, src.data, 'WRITE targets');
  dst.checkGuards('WRITE target');
}

const LAYOUTS: Layout[] = [
  { name: 'in the application thread (workers 0)', workers: 0, udp: false },
  { name: 'on one worker with both devices', workers: 1, udp: false },
  { name: 'on a worker, the receiver on another (rings)', workers: 2, udp: false },
  { name: 'its second port on a UDP cable', workers: 1, udp: true },
];

describe('a realtime switch between two devices', () => {
  let f: H.Fabric | null = null;
  afterEach(async () => {
    await f?.close();
    f = null;
  });

  it.each(LAYOUTS)('$name: RC WRITEs cross it, a low Kmin marks CE, CNPs go back and are handled', { timeout: 4 * HANG_MS }, async (l) => {
    f = await H.openFabric(await config(l, { ecn: LOW_KMIN }));
    const before = [H.counters(f.a), H.counters(f.b)];
    await writeThrough(f);
    // The receiver's counters are written by its thread: wait for the last CNPs to be counted on both sides.
    const rx = await H.waitCounters(f.b, before[1]!, (d) => (d.np_cnp_sent ?? 0n) > 0n, 'CNPs sent', HANG_MS);
    expect(rx.np_ecn_marked_roce_packets ?? 0n, 'CE-marked packets received').toBeGreaterThan(0n);
    expect(rx.np_ecn_marked_roce_packets!, 'no more CNPs than marked packets').toBeGreaterThanOrEqual(rx.np_cnp_sent!);
    const tx = await H.waitCounters(f.a, before[0]!, (d) => (d.rp_cnp_handled ?? 0n) > 0n, 'CNPs handled', HANG_MS);
    expect(tx.rp_cnp_handled, 'the sender handled CNPs').toBeGreaterThan(0n);
    // The switch marked them on the way out of port 2 (toward rnic1); on a wire or a ring nothing is lost between.
    const sw = (await currentModel()!.fabricStats!()).switches.sw0!;
    expect(sw[1]!.ecnMarked).toBeGreaterThan(0);
    if (!l.udp) expect(BigInt(sw[1]!.ecnMarked), 'marks sent = marks received').toBe(rx.np_ecn_marked_roce_packets);
    expect(sw[0]!.droppedFrames + sw[1]!.droppedFrames, 'drops').toBe(0);
  });

  it('with ECN off in the switch, the same traffic arrives unmarked and no CNP is sent', { timeout: 4 * HANG_MS }, async () => {
    f = await H.openFabric(await config(LAYOUTS[1]!, { ecn: { ...LOW_KMIN, enabled: false } }));
    const before = H.counters(f.b);
    await writeThrough(f);
    const d = H.counterDelta(before, H.counters(f.b));
    expect(d.np_ecn_marked_roce_packets ?? 0n).toBe(0n);
    expect(d.np_cnp_sent ?? 0n).toBe(0n);
    const sw = (await currentModel()!.fabricStats!()).switches.sw0!;
    expect(sw[1]!.ecnMarked).toBe(0);
    // The queue did build (the same traffic marked CE with ECN on): only the marking is off.
    expect(sw[1]!.queueBytesHighWater).toBeGreaterThan(2000);
  });

  it('with a static XOFF of 16 KB on priority 0 and a 100 Mb/s line, the switch pauses the sender, which resumes; nothing is lost', {
    timeout: 4 * HANG_MS,
  }, async () => {
    // Headroom for what a software NIC sends in one pass after the XOFF left (up to 256 packets): 64 MTUs.
    const pfc = { mode: 'static', xoff: 16384, xon: 8192, priorities: [0], headroomMtus: 64 };
    f = await H.openFabric(await config(LAYOUTS[1]!, { pfc, ecn: { enabled: false } }, '100Mbps'));
    const before = H.counters(f.b);
    await writeThrough(f);
    const st = await currentModel()!.fabricStats!();
    const sw = st.switches.sw0!;
    expect(sw[0]!.pauseSent, 'XOFF out of port 1, toward the sender').toBeGreaterThan(0);
    expect(sw[0]!.resumeSent, 'XON once the queue drained').toBeGreaterThan(0);
    expect(sw[1]!.pauseSent, 'nothing paused toward the receiver').toBe(0);
    expect(sw[0]!.droppedFrames + sw[1]!.droppedFrames, 'drops').toBe(0);
    const port = st.ports['rnic0:1']!;
    expect(port.rx_prio0_pause, 'XOFF frames the sender obeyed').toBeGreaterThan(0);
    expect(port.rx_prio0_pause_duration, 'time paused, µs').toBeGreaterThan(0);
    for (let p = 1; p < 8; p++) expect(port[`rx_prio${p}_pause`], `priority ${p}`).toBe(0);
    expect(H.counterDelta(before, H.counters(f.b)).packet_seq_err ?? 0n, 'no PSN gap at the receiver').toBe(0n);
  });
});

describe('a realtime switch in the configuration: what is wrong is named', () => {
  const base = {
    devices: [
      { name: 'rnic0', ports: [A] },
      { name: 'rnic1', ports: [B] },
    ],
  };
  const bad = (patch: Record<string, unknown>): string => {
    try {
      parseConfig({ ...base, ...patch }, 'cfg');
    } catch (e) {
      return (e as Error).message;
    }
    return 'accepted';
  };
  it.each([
    [{ switches: [{ name: 'rnic0', ports: 2 }] }, 'cfg.switches[0].name: rnic0 is already the name of a device'],
    [{ switches: [{ name: 's', ports: 2 }], cables: [{ kind: 'wire', a: 'rnic0:1', b: 's:3' }] }, 'cfg.cables[0].b: switch s has no port 3 (ports 1..2)'],
    [{ switches: [{ name: 's', ports: 0 }] }, 'cfg.switches[0].ports'],
    [{ switches: [{ name: 's', ports: 2, linkRate: 'fast' }] }, 'cfg.switches[0].linkRate'],
    [{ switches: [{ name: 's', ports: 2, config: { ecn: { thresholds: [{ linkRate: '1Gbps', kmin: 10, kmax: 5, pmax: 1 }] } } }] }, 'kmax'],
    [{ switches: [{ name: 's', ports: 2, config: { buffers: 1 } }] }, 'cfg.switches[0].config'],
    [
      { cables: [{ kind: 'udp', port: 'rnic0:1', local: '127.0.0.1:1', remote: '127.0.0.1:2', hosts: [{ mac: B.mac, ipv4: B.ipv4 }] }] },
      "cfg.cables[0].hosts: only a switch port's cable names the hosts beyond it (rnic0:1 is a device port)",
    ],
    [
      {
        switches: [
          { name: 's', ports: 2 },
          { name: 's', ports: 2 },
        ],
      },
      'cfg.switches[1].name: switch s is defined twice',
    ],
  ])('%j → %s', (patch, want) => {
    expect(bad(patch)).toContain(want);
  });
});
