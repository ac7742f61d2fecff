/**
 * The simulated fabric end to end: scenarios with a topology, run through
 * the verbs API by the scenario runner (which checks every WRITE's bytes
 * at the responder), judged by the switch counters, the PFC log, the
 * captures (tshark for the PFC frames) and the flows.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { currentModel } from '../../src/boot.js';
import { Priority, SimEvent } from '../../src/runtime/sim/scheduler.js';
import type { SimModel } from '../../src/runtime/sim/sim-model.js';
import { loadScenario, parseScenario } from '../../src/scenario/scenario.js';
import { runScenario, type ScenarioResult } from '../../src/scenario/scenario-runner.js';
import { decodeMacControl, readPcap } from '../../src/wire/index.js';
import { TSHARK, tsharkFields } from '../helpers/tshark.js';

const dir = mkdtempSync(join(tmpdir(), 'rnic-fabric-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function totals(r: ScenarioResult): { drops: number; marks: number; xoff: number; xon: number } {
  const t = { drops: 0, marks: 0, xoff: 0, xon: 0 };
  for (const ports of Object.values(r.fabric!.switches)) {
    for (const c of Object.values(ports)) {
      t.drops += c.droppedFrames;
      t.marks += c.ecnMarked;
      t.xoff += c.pauseSent;
      t.xon += c.resumeSent;
    }
  }
  return t;
}

/** Every byte of every flow arrived (the runner compared them with what was sent) and nothing else failed. */
function allDelivered(r: ScenarioResult, bytesPerFlow: number): void {
  expect(r.verify).toEqual([]);
  expect(r.endedBy).toBe('complete');
  for (const f of r.flows) {
    expect(f.bytes).toBe(bytesPerFlow);
    expect(f.fctNs).not.toBeNull();
  }
}

/**
 * Per switch port: every data frame that came in was enqueued at an egress
 * port or counted as dropped, and every frame enqueued was sent or is
 * still queued; across the fabric, frames a link delivered to a switch
 * were received by it.
 */
function conserved(r: ScenarioResult): void {
  for (const [sw, ports] of Object.entries(r.fabric!.switches)) {
    let rxData = 0;
    let inDrops = 0;
    let admitted = 0;
    let refused = 0;
    for (const c of Object.values(ports)) {
      rxData += c.rxFrames - c.pfcFramesReceived - c.arpReplies - c.ndAdvertisements;
      inDrops += c.droppedNoRoute + c.droppedMalformed;
      admitted += c.enqueuedFrames;
      refused += c.droppedFrames;
    }
    expect(rxData, `${sw}: frames in = enqueued + refused + unroutable`).toBe(admitted + refused + inDrops);
    for (const [p, c] of Object.entries(ports)) {
      const control = c.pauseSent + c.resumeSent + c.arpReplies + c.ndAdvertisements;
      expect(c.txFrames - control, `${sw}:${p}: sent = enqueued − still queued − lost on link down`).toBe(c.enqueuedFrames - c.droppedLinkDown);
      expect(c.queueBytesAtEnd).toBe(0);
    }
  }
}

describe('incast through a switch', () => {
  it('scenarios/incast-64to1.json (PFC, ECN, DCQCN) loses nothing: 0 drops, every byte delivered, CE marks sent', async () => {
    const r = await runScenario(loadScenario('scenarios/incast-64to1.json'));
    allDelivered(r, 1_000_000);
    expect(r.flows).toHaveLength(64);
    expect(totals(r).drops).toBe(0);
    expect(totals(r).marks).toBeGreaterThan(0);
    conserved(r);
  }, 300_000);

  it('with PFC on and no ECN in a 4 MiB buffer, a 64:1 incast loses nothing: PAUSE frames sent and obeyed do it all', async () => {
    const file = loadScenario('scenarios/incast-64to1.json');
    const sw = file.switches[0]!.config;
    const s = { ...file, capture: [], switches: file.switches.map((x) => ({ ...x, config: { ...sw, bufferBytes: 4 << 20, ecn: null } })) };
    const r = await runScenario(s);
    allDelivered(r, 1_000_000);
    expect(r.flows).toHaveLength(64);
    const t = totals(r);
    expect(t.drops).toBe(0);
    expect(t.xoff).toBeGreaterThan(0);
    expect(t.xon).toBeGreaterThan(0);
    for (const tr of r.traffic) expect(tr.retransmittedPackets).toBe(0);
    conserved(r);
    // The log has one entry per PAUSE frame sent, XON as quanta 0, on the lossless priority only.
    expect(r.fabric!.pfc.length).toBe(t.xoff + t.xon);
    for (const p of r.fabric!.pfc) {
      expect(p.priority).toBe(3);
      expect([0, 0xffff]).toContain(p.quanta);
    }
  }, 300_000);

  it('with PFC off and a small buffer, drops happen and go-back-N recovers every WRITE', async () => {
    const s = parseScenario({
      name: 'lossy-incast',
      seed: 3,
      duration: '200ms',
      topology: { kind: 'star', hosts: 5 },
      switch: { buffer: '256KiB', pfc: { enabled: false } },
      incast: { senders: 4, size: 200_000 },
    });
    const r = await runScenario(s);
    allDelivered(r, 200_000);
    const t = totals(r);
    expect(t.drops).toBeGreaterThan(0);
    expect(t.xoff + t.xon).toBe(0);
    expect(r.traffic.reduce((n, tr) => n + tr.retransmittedPackets, 0)).toBeGreaterThan(0);
    conserved(r);
  }, 120_000);

  it('the same with PFC on: the small buffer pauses instead of dropping', async () => {
    const s = parseScenario({
      name: 'lossless-incast',
      seed: 3,
      duration: '200ms',
      topology: { kind: 'star', hosts: 5 },
      switch: { buffer: '256KiB' },
      incast: { senders: 4, size: 200_000 },
    });
    const r = await runScenario(s);
    allDelivered(r, 200_000);
    const t = totals(r);
    expect(t.drops).toBe(0);
    expect(t.xoff).toBeGreaterThan(0);
    conserved(r);
  }, 120_000);
});

describe('pause spreading', () => {
  it('a receiver that keeps its switch port paused backs the fabric up: the switch pauses every sender in turn, drops nothing, and all completes once it lets go', async () => {
    const s = parseScenario({
      name: 'pause-storm',
      seed: 11,
      duration: '100ms',
      topology: { kind: 'star', hosts: 5, hostCongestion: { ecn: false } },
      switch: { buffer: '1MiB', ecn: { enabled: false } },
      incast: { senders: 4, size: 200_000 },
    });
    const STORM_END = 2_000_000;
    let sim: SimModel | null = null;
    const r = await runScenario(s, {
      observe: (e) => {
        if (sim !== null || e.dir !== 'tx') return;
        // The receiver's NIC says XOFF on priority 3 from the first frame on, every 100 µs, until 2 ms.
        sim = currentModel() as SimModel;
        const m = sim;
        const storm = new SimEvent('test.storm', Priority.default, () => {
          m.sendPfc('h0:1', 1 << 3, [0, 0, 0, m.now() < STORM_END ? 0xffff : 0, 0, 0, 0, 0]);
          if (m.now() < STORM_END) m.scheduler.schedule(storm, m.now() + 100_000);
        });
        m.scheduler.schedule(storm, m.now());
      },
    });
    allDelivered(r, 200_000);
    const t = totals(r);
    expect(t.drops).toBe(0);
    // sw0 port 1 (h0) was paused by h0; ports 2..5 (the senders) were paused by sw0, and resumed after 2 ms.
    expect(r.fabric!.switches.sw0!['1']!.pauseReceived).toBeGreaterThanOrEqual(20);
    for (const p of [2, 3, 4, 5]) {
      const log = r.fabric!.pfc.filter((x) => x.port === p);
      expect(log.length, `sw0:${p}`).toBeGreaterThan(0);
      expect(log[0]!.quanta).toBe(0xffff);
      expect(log[0]!.timeNs).toBeLessThan(STORM_END);
      expect(log[log.length - 1]!.quanta).toBe(0);
      expect(log[log.length - 1]!.timeNs).toBeGreaterThanOrEqual(STORM_END);
    }
    // Nothing completed while the storm lasted.
    for (const f of r.flows) expect(f.finishNs!).toBeGreaterThan(STORM_END);
    conserved(r);
  }, 120_000);
});

describe('leaf-spine', () => {
  it('ECMP spreads flows over the spines, each flow on one path (no reordering, no retransmission)', async () => {
    const s = parseScenario({
      name: 'ecmp',
      seed: 5,
      duration: '100ms',
      topology: { kind: 'leaf-spine', leaves: 2, spines: 4, hostsPerLeaf: 8 },
      incast: { receiver: 'h8', senders: ['h0', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'h7'], size: 64_000 },
    });
    const r = await runScenario(s);
    allDelivered(r, 64_000);
    for (const tr of r.traffic) expect(tr.retransmittedPackets).toBe(0);
    // leaf0's uplinks are its ports 9..12 (after its 8 hosts); data leaves by them.
    const leaf0 = r.fabric!.switches.leaf0!;
    const uplinks = [9, 10, 11, 12].map((p) => leaf0[String(p)]!.enqueuedFrames);
    expect(uplinks.reduce((a, b) => a + b, 0)).toBe(8 * Math.ceil(64_000 / 1024));
    expect(uplinks.filter((n) => n > 0).length).toBeGreaterThanOrEqual(2);
    // Whole flows per path: each uplink carries a multiple of one flow's packets.
    for (const n of uplinks) expect(n % Math.ceil(64_000 / 1024)).toBe(0);
    conserved(r);
  }, 120_000);

  it('a k=4 fat tree delivers between pods', async () => {
    const s = parseScenario({
      name: 'fat-tree',
      seed: 2,
      duration: '100ms',
      topology: { kind: 'fat-tree', k: 4 },
      incast: { receiver: 'h15', senders: ['h0', 'h1', 'h4', 'h8'], size: 32_000 },
    });
    expect(s.switches).toHaveLength(20);
    const r = await runScenario(s);
    allDelivered(r, 32_000);
    conserved(r);
  }, 120_000);
});

describe('captures and reproducibility', () => {
  const scenario = {
    name: 'pfc-capture',
    seed: 7,
    duration: '100ms',
    topology: { kind: 'star', hosts: 5 },
    switch: { buffer: '512KiB' },
    incast: { senders: 4, size: 300_000 },
    capture: ['h1:1', 'h0:1'],
  };

  async function run(tag: string): Promise<{ r: ScenarioResult; pcap: Uint8Array }> {
    const r = await runScenario(parseScenario(scenario));
    const pcap = r.captures['h1:1']!;
    writeFileSync(join(dir, `${tag}.pcap`), pcap);
    return { r, pcap };
  }

  it('the same seed gives the same capture, flows, PFC log, time series and counters', async () => {
    const one = await run('one');
    const two = await run('two');
    expect(Buffer.from(two.pcap).equals(Buffer.from(one.pcap))).toBe(true);
    expect(Buffer.from(two.r.captures['h0:1']!).equals(Buffer.from(one.r.captures['h0:1']!))).toBe(true);
    expect(two.r.flows).toEqual(one.r.flows);
    expect(two.r.fabric!.pfc).toEqual(one.r.fabric!.pfc);
    expect(two.r.fabric!.series).toEqual(one.r.fabric!.series);
    expect(two.r.fabric!.switches).toEqual(one.r.fabric!.switches);
    expect(two.r.eventsRun).toBe(one.r.eventsRun);
    expect(one.r.fabric!.pfc.length).toBeGreaterThan(0);
  }, 120_000);

  it("the PFC frames a switch sent are in the sender port's capture, as the PFC log says, and tshark decodes them", async () => {
    const { r } = await run('tshark');
    const pcap = readPcap(r.captures['h1:1']!);
    const pfcFrames = pcap.records.map((rec) => ({ ns: rec.timestampNs, m: decodeMacControl(rec.data) })).filter((x) => typeof x.m !== 'string');
    // h1 is port 2 of sw0: every PAUSE the log shows for that port is in h1's capture, arriving after it was sent.
    const logged = r.fabric!.pfc.filter((p) => p.node === 'sw0' && p.port === 2);
    expect(logged.length).toBeGreaterThan(0);
    expect(pfcFrames.length).toBe(logged.length);
    pfcFrames.forEach((f, i) => {
      const m = f.m as Exclude<typeof f.m, string>;
      expect(m.kind).toBe('pfc');
      if (m.kind !== 'pfc') return;
      expect(m.classEnable).toBe(1 << 3);
      expect(m.pauseTimes[3]).toBe(logged[i]!.quanta);
      expect(Number(f.ns)).toBeGreaterThan(logged[i]!.timeNs);
    });
    if (!TSHARK) return;
    const rows = tsharkFields(join(dir, 'tshark.pcap'), ['eth.type', 'macc.opcode', 'macc.cbfc.enbv', 'macc.cbfc.pause_time.c3', '_ws.expert'], ['-Y', 'macc']);
    expect(rows.length).toBe(logged.length);
    rows.forEach((row, i) => {
      expect(row['macc.opcode']).toMatch(/^(0x0101|257)$/);
      expect(Number(row['macc.cbfc.enbv'])).toBe(8);
      expect(Number(row['macc.cbfc.pause_time.c3'])).toBe(logged[i]!.quanta);
      expect(row['_ws.expert']).toBe('');
    });
  }, 120_000);
});

describe('scenario fabric sections', () => {
  const base = { topology: { kind: 'star', hosts: 3 } };
  const bad: [string, Record<string, unknown>, RegExp][] = [
    ['unknown topology key', { topology: { kind: 'star', hosts: 3, hots: 1 } }, /^s\.topology\.hots: unknown setting/],
    ['too few hosts', { topology: { kind: 'star', hosts: 1 } }, /^s\.topology\.hosts: /],
    ['odd fat tree', { topology: { kind: 'fat-tree', k: 3 } }, /^s\.topology\.k: k must be even/],
    ['bad kind', { topology: { kind: 'ring', hosts: 3 } }, /^s\.topology\.kind: /],
    ['bad rate', { topology: { kind: 'star', hosts: 3, linkRate: 'fast' } }, /^s\.topology\.linkRate: a rate: /],
    [
      'kmax below kmin',
      { ...base, switch: { ecn: { thresholds: [{ linkRate: '100Gbps', kmin: '400KB', kmax: '100KB', pmax: 0.2 }] } } },
      /^s\.switch\.ecn\.thresholds\[0\]\.kmax: must be above kmin/,
    ],
    [
      'pmax above 1',
      { ...base, switch: { ecn: { thresholds: [{ linkRate: '100Gbps', kmin: 1, kmax: 2, pmax: 1.5 }] } } },
      /^s\.switch\.ecn\.thresholds\[0\]\.pmax: /,
    ],
    ['xon above xoff', { ...base, switch: { pfc: { mode: 'static', xoff: '10KB', xon: '20KB' } } }, /^s\.switch\.pfc\.xon: must be at most xoff/],
    ['priority 8', { ...base, switch: { pfc: { priorities: [8] } } }, /^s\.switch\.pfc\.priorities\[0\]: /],
    ['bad buffer', { ...base, switch: { buffer: 'lots' } }, /^s\.switch\.buffer: a size: /],
    ['receiver not a host', { ...base, incast: { receiver: 'h9', senders: 1 } }, /^s\.incast\.receiver: no host h9/],
    ['too many senders', { ...base, incast: { senders: 5 } }, /^s\.incast\.senders: 5 senders, but the topology has 2/],
    ['switch without topology', { switch: {} }, /^s\.switch: needs a topology/],
    ['devices with topology', { ...base, devices: [] }, /^s\.devices: not with topology/],
    ['unknown link override', { topology: { kind: 'star', hosts: 3, links: { 'h7-sw0': { delay: '2us' } } } }, /^s\.topology\.links\.h7-sw0: no such link/],
    ['bad link fault', { topology: { kind: 'star', hosts: 3, links: { 'h1-sw0': { faults: [{ action: 'explode' }] } } } }, /^s\.links\[1\]\.faults/],
  ];
  for (const [what, raw, re] of bad) {
    it(`rejects ${what}, naming the field`, () => {
      expect(() => parseScenario(raw, 's')).toThrow(re);
    });
  }

  it('expands a star into hosts, a switch, links and one QP per sender on the incast priority', () => {
    const s = parseScenario(
      { topology: { kind: 'star', hosts: 4, delay: '2us', links: { 'h2-sw0': { linkRate: '25Gbps' } } }, incast: { senders: 2, priority: 5 } },
      's',
    );
    expect(s.devices.map((d) => d.name)).toEqual(['h0', 'h1', 'h2', 'h3']);
    expect(s.switches).toEqual([expect.objectContaining({ name: 'sw0', ports: 4 })]);
    expect(s.links.map((l) => [l.name, l.a, l.b, l.linkRate, l.propagationDelay])).toEqual([
      ['h0-sw0', 'h0:1', 'sw0:1', 100e9, 2000],
      ['h1-sw0', 'h1:1', 'sw0:2', 100e9, 2000],
      ['h2-sw0', 'h2:1', 'sw0:3', 25e9, 2000],
      ['h3-sw0', 'h3:1', 'sw0:4', 100e9, 2000],
    ]);
    expect(s.qps.map((q) => [q.name, q.a, q.b, q.sl, q.traffic_class >> 2])).toEqual([
      ['h1-h0', 'h1', 'h0', 5, 40],
      ['h2-h0', 'h2', 'h0', 5, 40],
    ]);
    expect(s.switches[0]!.config.ecn!.thresholds[0]).toEqual({ linkRate: 100e9, kminBytes: 400_000, kmaxBytes: 1_600_000, pmax: 0.2 });
  });
});
