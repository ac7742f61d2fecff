/**
 * PFC obeyed on transmit, in the simulator, checked in virtual ns: a PFC
 * frame arriving at rnic0's port stops exactly the priorities in its
 * class-enable vector for exactly quanta × 512 bit times (5.12 ns a
 * quantum at 100 Gb/s), from the time it arrived; only the frame already
 * on the wire finishes; XON resumes at once; a new XOFF restarts the time;
 * other priorities keep flowing; every WRITE still completes with its
 * data, and the ethtool counters say what happened.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startSimModel, stopModel } from '../../src/boot.js';
import { IBV_QPT_RC, IBV_WC_SUCCESS } from '../../src/driver/verbs/index.js';
import type { SimModel } from '../../src/runtime/sim/sim-model.js';
import { decodePacket, encodePause, encodePfc, parseMac } from '../../src/wire/index.js';
import { closeDev, connect, createQp, type Dev, type Ep, expectBytes, openDev, pollN, postSend, region, twoDeviceConfig, wrWrite } from '../e2e/harness.js';

/** The far end's MAC (rnic1), as a switch port would send from its own. */
const PEER = parseMac('02:00:00:00:00:02');
const QUANTUM_PS = 5120;

interface Tx {
  ns: number;
  destQp: number;
}

let sim: SimModel;
let a: Dev;
let b: Dev;

afterEach(async () => {
  closeDev(a);
  closeDev(b);
  await stopModel();
});

async function setup(): Promise<{ sent: Tx[] }> {
  sim = await startSimModel({ ...twoDeviceConfig(0), seed: 'pfc' });
  a = openDev('rnic0');
  b = openDev('rnic1');
  const sent: Tx[] = [];
  sim.observe((e) => {
    if (e.dir !== 'tx' || e.device !== 'rnic0') return;
    const d = decodePacket(e.frame);
    if (d.ok) sent.push({ ns: e.ns, destQp: d.packet.bth.destQp });
  });
  return { sent };
}

/** An RC pair rnic0 → rnic1 on service level `sl` (PCP trust: priority = SL). */
function pair(sl: number): { a: Ep; b: Ep } {
  const p = { a: createQp(a, IBV_QPT_RC), b: createQp(b, IBV_QPT_RC) };
  connect(p.a, p.b, { sl });
  return p;
}

/** `count` 64 KiB WRITEs from p.a to p.b (1024-byte packets), one CQE each; returns the check of the data. */
function stream(p: { a: Ep; b: Ep }, count: number, seed: number): () => void {
  const len = 65536;
  const src = region(a, len * count, undefined, { fill: (i) => (i * 31 + seed) & 0xff });
  const dst = region(b, len * count);
  for (let i = 0; i < count; i++) postSend(p.a, wrWrite({ sge: [src.sge(i * len, len)], remote: { addr: dst.at(i * len), rkey: dst.rkey }, wrId: BigInt(i) }));
  return () => expectBytes(dst.data, src.data, `WRITEs of SL ${seed}`);
}

function pfc(prio: number, quanta: number): Uint8Array {
  const t = [0, 0, 0, 0, 0, 0, 0, 0];
  t[prio] = quanta;
  return encodePfc(PEER, 1 << prio, t);
}

const resumeAt = (atNs: number, quanta: number) => Math.ceil((atNs * 1000 + quanta * QUANTUM_PS) / 1000);

describe('PFC on the transmit side', () => {
  it('a PAUSE of priority 3 holds exactly its quanta; priority 0 flows meanwhile', async () => {
    const { sent } = await setup();
    const p3 = pair(3);
    const p0 = pair(0);
    const check3 = stream(p3, 8, 3);
    const check0 = stream(p0, 8, 0);
    sim.advance(20_000);
    const at = sim.now();
    const before = sent.length;
    sim.injectFrame('rnic0:1', pfc(3, 3000));
    const resume = resumeAt(at, 3000);
    expect(resume - at).toBe(15_360);
    sim.advance(40_000);
    const during = sent.slice(before).filter((t) => t.ns < resume);
    const q3 = p3.b.qp.qp_num;
    // Priority 3 was sending before; nothing of it starts while paused; priority 0 fills the line.
    expect(sent.slice(0, before).some((t) => t.destQp === q3)).toBe(true);
    expect(during.filter((t) => t.destQp === q3)).toEqual([]);
    expect(during.filter((t) => t.destQp === p0.b.qp.qp_num).length).toBeGreaterThan(100);
    // After the pause, priority 3 (strict priority over 0) starts behind at most the priority 0 frame on
    // the wire (a 1098-byte frame is 89.76 ns at 100 Gb/s): one waiting for the line steps back for it.
    const first3 = sent.slice(before).find((t) => t.destQp === q3)!;
    expect(first3.ns).toBeGreaterThanOrEqual(resume);
    expect(first3.ns - resume).toBeLessThanOrEqual(90);
    const wcs3 = await pollN(p3.a.scq, 8, 'priority 3 WRITEs');
    const wcs0 = await pollN(p0.a.scq, 8, 'priority 0 WRITEs');
    for (const w of [...wcs3, ...wcs0]) expect(w.status).toBe(IBV_WC_SUCCESS);
    check3();
    check0();
    const c = sim.portCounters('rnic0:1');
    expect(c).toMatchObject({
      rx_prio3_pause: 1,
      rx_prio3_pause_transition: 1,
      rx_prio3_pause_duration: 15,
      rx_prio0_pause: 0,
      rx_prio0_pause_duration: 0,
      tx_prio3_pause: 0,
    });
  });

  it('alone on the line, priority 3 resumes at the exact ns its pause ends', async () => {
    const { sent } = await setup();
    const p3 = pair(3);
    stream(p3, 4, 7);
    sim.advance(10_000);
    const at = sim.now();
    const before = sent.length;
    sim.injectFrame('rnic0:1', pfc(3, 1001)); // 5125.12 ns: the end falls between two ns
    sim.advance(30_000);
    const after = sent.slice(before);
    // Only the frame already on the wire when the PAUSE came (started at or before `at`) is before it.
    expect(after[0]!.ns).toBe(resumeAt(at, 1001));
    expect(after[0]!.ns).toBe(at + 5126);
    expect((await pollN(p3.a.scq, 4, 'WRITEs')).every((w) => w.status === IBV_WC_SUCCESS)).toBe(true);
  });

  it('XON (quanta 0) resumes at once; a second XOFF restarts the time from its arrival', async () => {
    const { sent } = await setup();
    const p3 = pair(3);
    stream(p3, 6, 9);
    sim.advance(10_000);
    sim.injectFrame('rnic0:1', pfc(3, 0xffff));
    sim.advance(3_000);
    let mark = sent.length;
    const xonAt = sim.now();
    sim.injectFrame('rnic0:1', pfc(3, 0));
    sim.advance(2_000);
    expect(sent[mark]!.ns).toBe(xonAt);
    // XOFF 2000 quanta (10.24 µs), then 4 µs later XOFF 2000 again: the pause ends 10.24 µs after the second.
    sim.injectFrame('rnic0:1', pfc(3, 2000));
    sim.advance(4_000);
    mark = sent.length;
    const second = sim.now();
    sim.injectFrame('rnic0:1', pfc(3, 2000));
    sim.advance(30_000);
    expect(sent[mark]!.ns).toBe(resumeAt(second, 2000));
    expect((await pollN(p3.a.scq, 6, 'WRITEs')).every((w) => w.status === IBV_WC_SUCCESS)).toBe(true);
    const c = sim.portCounters('rnic0:1');
    // Four frames; three pauses ended (XON, restart does not end one, then expiry).
    expect(c.rx_prio3_pause).toBe(4);
    expect(c.rx_prio3_pause_transition).toBe(2);
    // 3 µs + (4 µs + 10.24 µs) paused.
    expect(c.rx_prio3_pause_duration).toBe(17);
  });

  it('a PFC frame for other priorities, or a class bit with no time, leaves priority 3 alone', async () => {
    const { sent } = await setup();
    const p3 = pair(3);
    stream(p3, 2, 1);
    sim.advance(5_000);
    const before = sent.length;
    // Priorities 0-2 and 4-7 paused for the maximum; priority 3's time is set but its bit is clear.
    sim.injectFrame('rnic0:1', encodePfc(PEER, 0xf7, [0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff]));
    const at = sim.now();
    sim.advance(2_000);
    // It keeps the line busy: 2 µs hold about 22 frames of 89.76 ns.
    const next = sent.slice(before).filter((t) => t.ns < at + 2_000);
    expect(next.length).toBeGreaterThanOrEqual(18);
    expect((await pollN(p3.a.scq, 2, 'WRITEs')).every((w) => w.status === IBV_WC_SUCCESS)).toBe(true);
    expect(sim.portCounters('rnic0:1')).toMatchObject({ rx_prio3_pause: 0, rx_prio0_pause: 1, rx_prio7_pause: 1 });
  });

  it('an 802.3x PAUSE holds every priority', async () => {
    const { sent } = await setup();
    const p0 = pair(0);
    const p5 = pair(5);
    stream(p0, 2, 2);
    stream(p5, 2, 5);
    sim.advance(5_000);
    const at = sim.now();
    const before = sent.length;
    sim.injectFrame('rnic0:1', encodePause(PEER, 500));
    sim.advance(20_000);
    const after = sent.slice(before);
    expect(after[0]!.ns).toBeGreaterThanOrEqual(resumeAt(at, 500));
    expect(sim.portCounters('rnic0:1')).toMatchObject({ rx_global_pause: 1, rx_prio0_pause: 0, rx_prio0_pause_duration: 2, rx_prio5_pause_duration: 2 });
  });

  it('the port counts the PFC frames it sends (tx_prio<N>_pause, tx_prio<N>_pause_duration)', async () => {
    await setup();
    sim.sendPfc('rnic1:1', 0x08, [0, 0, 0, 2000, 0, 0, 0, 0]);
    sim.advance(20_000);
    const tx = sim.portCounters('rnic1:1');
    expect(tx).toMatchObject({ tx_prio3_pause: 1, tx_prio3_pause_duration: 10, tx_prio0_pause: 0 });
    // And the far end obeyed it.
    expect(sim.portCounters('rnic0:1')).toMatchObject({ rx_prio3_pause: 1, rx_prio3_pause_duration: 10, rx_prio3_pause_transition: 1 });
    expect(() => sim.sendPfc('rnic1:1', 0x100, [0, 0, 0, 0, 0, 0, 0, 0])).toThrow(/class-enable/);
    expect(() => sim.sendPfc('rnic1:1', 1, [70000, 0, 0, 0, 0, 0, 0, 0])).toThrow(/pause times/);
  });
});
