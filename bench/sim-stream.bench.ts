/**
 * The simulator's packet rate (issue 9): two hosts on a 100 Gb/s link, one
 * RC QP streaming RDMA WRITEs at MTU 4096 through the verbs API, the
 * application busy-polling its CQ (an empty poll moves virtual time). No
 * scenario runner around it: this is the simulator's own cost per frame.
 *
 * Reported, per round (min / median / max over the rounds):
 *  - packet-hops per wall-clock second: frames serialized onto a link (both
 *    directions, ACKs included) per wall second. One frame crossing one link
 *    is one hop; ns-3's HPCC simulator does ~0.64 M on this machine;
 *  - wall ms per simulated ms;
 *  - events per frame;
 * beside the scheduler's no-queue loop (bench/sim.bench.ts) measured in the
 * same run, which scales with the machine's speed at the moment.
 *
 * Warm-up rounds (JIT) come first and are not counted: V8 needs ~100 k
 * frames of this stream, over several fresh models (each new model's
 * closures and objects deoptimize some of the code compiled for the last),
 * before a round's CPU per frame settles; a 3 ms warm-up left the counted
 * rounds 1.5-4x slower than the settled rate. The first warm-up round's
 * rate is reported too (`coldHopsPerCpuSec`).
 */
import { crc32 } from 'node:zlib';
import { startSimModel, stopModel } from '../src/boot.js';
import { DEFAULT_CONFIG } from '../src/runtime/config.js';
import { IBV_SEND_SIGNALED, IBV_WC_SUCCESS, IBV_WR_RDMA_WRITE, ibv_poll_cq, ibv_post_send, newWcArray, type ibv_send_wr } from '../src/index.js';
import { rcPair, type Side } from './rc-pair.js';
import { benchScheduler } from './sim.bench.js';

export interface SimStreamOptions {
  /** Bytes per RDMA WRITE (default 65536: 16 packets at MTU 4096). */
  messageBytes?: number;
  /** Virtual time per counted round, ms (default 20: shorter rounds spread ±15 % on a loaded machine). */
  simulatedMs?: number;
  /** Counted rounds (after the warm-up). */
  rounds?: number;
  /** Uncounted rounds first (default 6), each of warmUpMs (default 5). */
  warmUpRounds?: number;
  warmUpMs?: number;
}

export interface Spread {
  min: number;
  median: number;
  max: number;
}

export interface SimStreamResult {
  readonly name: string;
  readonly key: string;
  /** Frames serialized on the link per wall second (both ways). */
  readonly hopsPerSec: Spread;
  /** The same per CPU second of the process (the machine is shared: wall time includes waiting for a core). */
  readonly hopsPerCpuSec: Spread;
  /** The first warm-up round's packet-hops per CPU second: the code not yet compiled (a short run's rate). */
  readonly coldHopsPerCpuSec: number;
  readonly wallMsPerSimMs: Spread;
  readonly eventsPerFrame: number;
  readonly virtualGbps: number;
  /** The scheduler's no-queue loop (10 callbacks round-robin), callbacks per second, same run. */
  readonly noQueuePerSec: number;
  /**
   * The byte work every data frame needs in a byte-true model, measured in
   * the same run: zlib.crc32 twice (ICRC built, ICRC checked) and two
   * copies (gather, scatter) of one frame's payload; frames per second if
   * that were all (the ceiling for this frame size).
   */
  readonly byteFloorPerSec: number;
}

function spread(xs: number[]): Spread {
  const s = [...xs].sort((a, b) => a - b);
  return { min: s[0]!, median: s[s.length >> 1]!, max: s[s.length - 1]! };
}

export interface Round {
  wallMs: number;
  /** CPU time of the process (user + system) during the round: less disturbed by other load on a shared machine. */
  cpuMs: number;
  simNs: number;
  frames: number;
  events: number;
  bytes: number;
}

/** One round alone (for a profile: `node --cpu-prof` on a script that calls it). */
export async function simStreamRound(size: number, simulatedMs: number): Promise<Round> {
  const sim = await startSimModel({ ...DEFAULT_CONFIG, seed: 1 });
  try {
    const depth = 32;
    const [a, b] = rcPair(Math.max(size, 4096), depth + 1);
    const count = Math.max(1, Math.round((simulatedMs * 1e6 * 98) / (size * 8)));
    const link = sim.links[0]!.link;
    const f0 = link.stats('aToB').framesTransmitted + link.stats('bToA').framesTransmitted;
    const e0 = sim.eventsRun;
    const n0 = sim.now();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    writeStream(a, b, size, count, depth, 8);
    const wallMs = performance.now() - t0;
    const c = process.cpuUsage(c0);
    const cpuMs = (c.user + c.system) / 1000;
    const frames = link.stats('aToB').framesTransmitted + link.stats('bToA').framesTransmitted - f0;
    return { wallMs, cpuMs, simNs: sim.now() - n0, frames, events: sim.eventsRun - e0, bytes: count * size };
  } finally {
    await stopModel();
  }
}

function writeStream(a: Side, b: Side, size: number, count: number, depth: number, sigEvery: number): void {
  const wc = newWcArray(16);
  const wr: ibv_send_wr = {
    wr_id: 0n,
    next: null,
    num_sge: 1,
    opcode: IBV_WR_RDMA_WRITE,
    send_flags: 0,
    sg_list: [{ addr: a.mr.addr, length: size, lkey: a.mr.lkey }],
    wr: { rdma: { remote_addr: b.mr.addr, rkey: b.mr.rkey } },
  };
  let posted = 0;
  let done = 0;
  let idle = 0;
  while (done < count) {
    while (posted < count && posted - done < depth) {
      wr.send_flags = (posted + 1) % sigEvery === 0 || posted + 1 === count ? IBV_SEND_SIGNALED : 0;
      wr.wr_id = BigInt(posted);
      const rc = ibv_post_send(a.qp, wr);
      if (rc !== 0) throw new Error(`post_send ${rc}`);
      posted++;
    }
    const n = ibv_poll_cq(a.cq, wc.length, wc);
    if (n < 0) throw new Error(`poll_cq ${n}`);
    if (n === 0) {
      if (++idle > 10_000_000) throw new Error('sim stream stalled');
      continue;
    }
    idle = 0;
    for (let i = 0; i < n; i++) {
      if (wc[i]!.status !== IBV_WC_SUCCESS) throw new Error(`completion status ${wc[i]!.status}`);
      done = Number(wc[i]!.wr_id) + 1;
    }
  }
}

export async function benchSimStream(opts: SimStreamOptions = {}): Promise<SimStreamResult> {
  const size = opts.messageBytes ?? 65536;
  const simulatedMs = opts.simulatedMs ?? 20;
  const warmUpMs = opts.warmUpMs ?? 5;
  const rounds = opts.rounds ?? 5;
  const warmUp = opts.warmUpRounds ?? 6;
  let cold = Number.NaN;
  for (let r = 0; r < warmUp; r++) {
    const w = await simStreamRound(size, warmUpMs);
    if (r === 0) cold = (w.frames / w.cpuMs) * 1000;
  }
  const rs: Round[] = [];
  for (let r = 0; r < rounds; r++) rs.push(await simStreamRound(size, simulatedMs));
  const noQueue = benchScheduler(10, 200).baselinePerSec;
  const byteFloor = byteWorkPerSec(Math.min(size, 4096));
  const frames = rs.reduce((s, r) => s + r.frames, 0);
  const events = rs.reduce((s, r) => s + r.events, 0);
  const last = rs[rs.length - 1]!;
  return {
    name: `sim: two hosts, 100 Gb/s, RC WRITE ${size} B, MTU 4096`,
    key: `sim-stream-write-${size}`,
    hopsPerSec: spread(rs.map((r) => (r.frames / r.wallMs) * 1000)),
    hopsPerCpuSec: spread(rs.map((r) => (r.frames / r.cpuMs) * 1000)),
    coldHopsPerCpuSec: cold,
    wallMsPerSimMs: spread(rs.map((r) => r.wallMs / (r.simNs / 1e6))),
    eventsPerFrame: events / frames,
    virtualGbps: (last.bytes * 8) / last.simNs,
    noQueuePerSec: noQueue,
    byteFloorPerSec: byteFloor,
  };
}

/** Frames/s if a frame cost only 2 x crc32 + 2 x copy of `payload` bytes (best of 5 rounds). */
function byteWorkPerSec(payload: number): number {
  const src = new Uint8Array(new ArrayBuffer(9216), 0, payload + 64);
  const mem = new Uint8Array(1 << 20);
  const frame = new Uint8Array(9216);
  let best = 0;
  let c = 0;
  for (let r = 0; r < 5; r++) {
    const n = 2000;
    const t0 = performance.now();
    let off = 0;
    for (let i = 0; i < n; i++) {
      frame.set(mem.subarray(off, off + payload), 58);
      c = crc32(frame.subarray(14, 58 + payload), c);
      c = crc32(src.subarray(14, 58 + payload), c);
      mem.set(src.subarray(58, 58 + payload), off);
      off = (off + payload) & ((1 << 20) - 1);
      if (off + payload > mem.length) off = 0;
    }
    best = Math.max(best, n / ((performance.now() - t0) / 1000));
  }
  if (c === 0.5) console.log(c);
  return best;
}

const fmtK = (x: number): string => (x >= 1e6 ? `${(x / 1e6).toFixed(2)} M` : `${(x / 1e3).toFixed(0)} k`);
const fmtSpread = (s: Spread, f: (x: number) => string): string => `${f(s.min)} / ${f(s.median)} / ${f(s.max)}`;

export function printSimStream(results: readonly SimStreamResult[], vsBaseline: (key: string, value: number, noQueue: number) => string): void {
  console.log('\n## sim packet rate (min / median / max over rounds; goal ≥ 1.3 M packet-hops/s)');
  for (const r of results) {
    console.log(r.name);
    console.log(`  packet-hops/s       ${fmtSpread(r.hopsPerSec, fmtK).padEnd(30)} ${vsBaseline(r.key, r.hopsPerSec.median, r.noQueuePerSec)}`);
    console.log(`  per CPU second      ${fmtSpread(r.hopsPerCpuSec, fmtK).padEnd(30)} ${vsBaseline(`${r.key}-cpu`, r.hopsPerCpuSec.median, r.noQueuePerSec)}`);
    console.log(`  first warm-up round ${fmtK(r.coldHopsPerCpuSec)} per CPU second (before the JIT settles)`);
    console.log(`  wall ms per sim ms  ${fmtSpread(r.wallMsPerSimMs, (x) => x.toFixed(2))}`);
    console.log(`  events per frame    ${r.eventsPerFrame.toFixed(2)}   (${r.virtualGbps.toFixed(1)} Gb/s virtual)`);
    console.log(
      `  same run: byte work alone (2 x crc32 + 2 x copy of the payload) ${fmtK(r.byteFloorPerSec)} frames/s; ` +
        `the simulator at ${((r.hopsPerCpuSec.median / r.byteFloorPerSec) * 100).toFixed(0)}% of it per CPU second`,
    );
    console.log(
      `  same run: scheduler no-queue loop ${(r.noQueuePerSec / 1e6).toFixed(0)} M callbacks/s; ` +
        `packet-hops at ${((r.hopsPerSec.median / r.noQueuePerSec) * 1e6).toFixed(1)} per M no-queue callbacks`,
    );
  }
}

/** `node dist/bench/sim-stream.bench.js [bytes]` runs it alone. */
if (import.meta.url === `file://${process.argv[1]}`) {
  const size = Number(process.argv[2] ?? 65536);
  const r = await benchSimStream({ messageBytes: size });
  printSimStream([r], () => '');
  process.exit(0);
}
