/**
 * Deferred payloads (src/runtime/sim/deferred-payloads.ts): with nothing
 * observing the frames, an RC SEND or WRITE packet's payload stays in the
 * sender's host memory and the receiver's decoder reads it from there. The
 * run must be the same as one with every payload gathered into its frame:
 * each case runs twice through the verbs API, once quiet (payloads
 * deferred) and once with a frame observer (which turns deferral off), and
 * the two must agree on every received byte, every completion, the virtual
 * time and the event count; both must match a plain model of what the
 * WRITEs and SENDs put where. The program rewrites each source buffer as
 * soon as its work request completes (what verbs allow), and in the error
 * cases moves the QP to ERR or deregisters nothing but rewrites all of its
 * memory once the flush is reported: bytes still on the way must be the
 * ones of the DMA read, not the rewritten ones.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { rcPair, type Side } from '../../bench/rc-pair.js';
import { startSimModel, stopModel } from '../../src/boot.js';
import {
  IBV_QP_STATE,
  IBV_QPS_ERR,
  IBV_SEND_SIGNALED,
  IBV_WC_SUCCESS,
  IBV_WR_RDMA_WRITE,
  IBV_WR_RDMA_WRITE_WITH_IMM,
  IBV_WR_SEND,
  ibv_modify_qp,
  ibv_poll_cq,
  ibv_post_recv,
  ibv_post_send,
  type ibv_send_wr,
  newQpAttr,
  newWcArray,
} from '../../src/driver/verbs/index.js';
import { DEFAULT_CONFIG } from '../../src/runtime/config.js';
import { Random } from '../../src/runtime/sim/random.js';
import type { FrameObserver } from '../../src/runtime/sim/sim-device.js';
import type { SimModel } from '../../src/runtime/sim/sim-model.js';
import { decodePacket } from '../../src/wire/packet.js';

const BUF = 1 << 20;
const DEPTH = 8;

interface Op {
  kind: 'write' | 'imm' | 'send';
  src: number;
  dst: number;
  len: number;
}

interface Outcome {
  received: Uint8Array;
  expected: Uint8Array;
  completions: string[];
  events: number;
  now: number;
  deferred: number;
  /** Frames forwarded by switches. */
  switched: number;
}

/** An integer in [lo, hi]. */
const between = (r: Random, lo: number, hi: number): number => lo + r.int(hi - lo + 1);

function plan(seed: number, n: number): Op[] {
  const r = new Random(seed);
  const ops: Op[] = [];
  let cursor = 0;
  for (let i = 0; i < n; i++) {
    const pick = between(r, 0, 9);
    const len = pick < 2 ? between(r, 0, 511) : pick < 4 ? between(r, 512, 4096) : between(r, 4097, 70_000);
    // Source regions one after the other round the buffer: a region is used again only after
    // ~1 MiB of later requests, long after its own request completed (DEPTH x 70 KB < BUF).
    let src = cursor + between(r, 0, 7);
    if (src + len > BUF) src = between(r, 0, 7);
    cursor = src + len;
    const kind = (['write', 'imm', 'send'] as const)[between(r, 0, 2)]!;
    ops.push({ kind, src, dst: between(r, 0, BUF - len), len });
  }
  return ops;
}

function fill(buf: Uint8Array, off: number, len: number, r: Random): void {
  // A seeded xorshift per call: a megabyte at a time is too slow through Random.
  let x = r.int(2 ** 32) | 1;
  for (let i = 0; i < len; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    buf[off + i] = x & 0xff;
  }
}

/** A frame observer that checks every RoCE frame it sees decodes with a good ICRC (its payload in place). */
function checker(bad: string[]): FrameObserver {
  return (e) => {
    const d = decodePacket(e.frame);
    if (!d.ok && d.error.code !== 'WIRE_NOT_RDMA') bad.push(`${e.dir} ${e.device} ${e.ns}: ${d.error.code}`);
  };
}

/** observed: a frame observer from the start (true), from after op N was posted (N), or none (false). */
/** The two hosts through one switch (its shared buffer, ECN marking on the way). */
const VIA_SWITCH = {
  ...DEFAULT_CONFIG,
  switches: [{ name: 'sw0', ports: 2 }],
  cables: [
    { kind: 'wire', a: 'rnic0:1', b: 'sw0:1' },
    { kind: 'wire', a: 'sw0:2', b: 'rnic1:1' },
  ],
} as typeof DEFAULT_CONFIG;

async function runCase(
  seed: number,
  ops: readonly Op[],
  observed: boolean | number,
  errAfter = -1,
  bad: string[] = [],
  config = DEFAULT_CONFIG,
): Promise<Outcome> {
  const sim: SimModel = await startSimModel({ ...config, seed });
  try {
    if (observed === true) sim.observe(checker(bad));
    const [a, b] = rcPair(BUF, DEPTH + 1);
    const r = new Random(seed * 7 + 1);
    fill(a.buf, 0, BUF, r);
    const expected = b.buf.slice();
    const completions: string[] = [];
    const wc = newWcArray(16);
    let posted = 0;
    let done = 0;
    let idle = 0;
    const drain = (s: Side, tag: string): number => {
      const n = ibv_poll_cq(s.cq, wc.length, wc);
      for (let i = 0; i < n; i++) completions.push(`${tag}:${wc[i]!.wr_id}:${wc[i]!.status}:${wc[i]!.opcode}:${wc[i]!.byte_len}`);
      return n;
    };
    while (done < ops.length) {
      while (posted < ops.length && posted - done < DEPTH && (errAfter < 0 || posted < errAfter + DEPTH)) {
        const op = ops[posted]!;
        if (op.kind === 'send') {
          const rc = ibv_post_recv(b.qp, {
            wr_id: BigInt(posted),
            next: null,
            num_sge: 1,
            sg_list: [{ addr: b.mr.addr + BigInt(op.dst), length: op.len, lkey: b.mr.lkey }],
          });
          if (rc !== 0) throw new Error(`post_recv ${rc}`);
        }
        const wr: ibv_send_wr = {
          wr_id: BigInt(posted),
          next: null,
          num_sge: 1,
          opcode: op.kind === 'write' ? IBV_WR_RDMA_WRITE : op.kind === 'imm' ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_SEND,
          send_flags: IBV_SEND_SIGNALED,
          imm_data: posted,
          sg_list: [{ addr: a.mr.addr + BigInt(op.src), length: op.len, lkey: a.mr.lkey }],
          wr: { rdma: { remote_addr: b.mr.addr + BigInt(op.dst), rkey: b.mr.rkey } },
        };
        if (op.kind === 'imm') {
          // A WRITE with immediate consumes a receive WQE (no bytes).
          const rc = ibv_post_recv(b.qp, { wr_id: BigInt(posted), next: null, num_sge: 0, sg_list: [] });
          if (rc !== 0) throw new Error(`post_recv ${rc}`);
        }
        const rc = ibv_post_send(a.qp, wr);
        if (rc !== 0) throw new Error(`post_send ${rc}`);
        posted++;
        if (posted === observed) sim.observe(checker(bad));
        if (posted === errAfter) {
          // Let the first packets leave, then fail the QP with its requests' packets on the way.
          sim.advance(3_000);
          const attr = newQpAttr();
          attr.qp_state = IBV_QPS_ERR;
          if (ibv_modify_qp(a.qp, attr, IBV_QP_STATE) !== 0) throw new Error('modify to ERR');
        }
      }
      drain(b, 'b');
      const n = ibv_poll_cq(a.cq, wc.length, wc);
      if (n < 0) throw new Error(`poll_cq ${n}`);
      if (n === 0) {
        if (++idle > 1_000_000) throw new Error('stalled');
        continue;
      }
      idle = 0;
      for (let i = 0; i < n; i++) {
        const w = wc[i]!;
        const k = Number(w.wr_id);
        completions.push(`a:${k}:${w.status}:${w.opcode}`);
        const op = ops[k]!;
        // A WRITE and a SEND (its receive buffer at op.dst) put the same bytes at the same place.
        if (w.status === IBV_WC_SUCCESS) expected.set(a.buf.subarray(op.src, op.src + op.len), op.dst);
        // Done with the source: the program may write it again (the packets of its request have all been taken).
        fill(a.buf, op.src, op.len, r);
        done++;
      }
      if (errAfter >= 0 && done >= posted && posted >= errAfter) break;
    }
    if (errAfter >= 0) {
      // Everything flushed: the program rewrites all its memory; what is still on the way must not change.
      fill(a.buf, 0, BUF, r);
      sim.advance(2_000_000);
    }
    drain(b, 'b');
    const switched = sim.links.reduce((n, l) => n + (l.a.startsWith('sw') ? l.link.stats('aToB').framesTransmitted : 0), 0);
    return { received: b.buf.slice(), expected, completions, events: sim.eventsRun, now: sim.now(), deferred: sim.payloadsDeferred, switched };
  } finally {
    await stopModel();
  }
}

afterEach(async () => {
  await stopModel();
});

describe('deferred payloads: the same run as payloads gathered into their frames', () => {
  it('60 seeded mixes of WRITE, WRITE with immediate and SEND (0 B to 70 KB, any alignment), sources rewritten after each completion', async () => {
    let deferredTotal = 0;
    for (let seed = 1; seed <= 60; seed++) {
      const ops = plan(seed, 24);
      const quiet = await runCase(seed, ops, false);
      const bad: string[] = [];
      const seen = await runCase(seed, ops, true, -1, bad);
      expect(bad, `seed ${seed}`).toEqual([]);
      expect(seen.deferred, `seed ${seed}: an observer turns deferral off`).toBe(0);
      expect(quiet.completions, `seed ${seed}`).toEqual(seen.completions);
      expect(quiet.events, `seed ${seed}`).toBe(seen.events);
      expect(quiet.now, `seed ${seed}`).toBe(seen.now);
      expect(Buffer.compare(quiet.received, seen.received), `seed ${seed}: received bytes`).toBe(0);
      expect(Buffer.compare(quiet.received, quiet.expected), `seed ${seed}: what the requests put where`).toBe(0);
      expect(
        quiet.completions.filter((c) => c.startsWith('a:') && c.split(':')[2] !== String(IBV_WC_SUCCESS)),
        `seed ${seed}`,
      ).toEqual([]);
      deferredTotal += quiet.deferred;
    }
    // The quiet runs did defer (most payloads are ≥ 512 B).
    expect(deferredTotal).toBeGreaterThan(1000);
  }, 300_000);

  it('20 seeds through a switch: the same run deferred and gathered', async () => {
    for (let seed = 300; seed < 320; seed++) {
      const ops = plan(seed, 24);
      const bad: string[] = [];
      const quiet = await runCase(seed, ops, false, -1, [], VIA_SWITCH);
      const seen = await runCase(seed, ops, true, -1, bad, VIA_SWITCH);
      expect(bad, `seed ${seed}`).toEqual([]);
      expect(quiet.deferred, `seed ${seed}`).toBeGreaterThan(0);
      expect(quiet.switched, `seed ${seed}: frames went through the switch`).toBeGreaterThan(24);
      expect(quiet.completions, `seed ${seed}`).toEqual(seen.completions);
      expect(quiet.events, `seed ${seed}`).toBe(seen.events);
      expect(Buffer.compare(quiet.received, seen.received), `seed ${seed}: received bytes`).toBe(0);
      expect(Buffer.compare(quiet.received, quiet.expected), `seed ${seed}: what the requests put where`).toBe(0);
    }
  }, 300_000);

  it('20 seeds: an observer added mid-run (deferral turned off with payloads on the way) sees every frame complete, and the run is the same', async () => {
    for (let seed = 200; seed < 220; seed++) {
      const ops = plan(seed, 24);
      const bad: string[] = [];
      const quiet = await runCase(seed, ops, false);
      const late = await runCase(seed, ops, 10, -1, bad);
      expect(bad, `seed ${seed}`).toEqual([]);
      expect(late.deferred, `seed ${seed}: deferred before the observer came`).toBeGreaterThan(0);
      expect(late.deferred, `seed ${seed}: and not after`).toBeLessThan(quiet.deferred);
      expect(late.completions, `seed ${seed}`).toEqual(quiet.completions);
      expect(late.events, `seed ${seed}`).toBe(quiet.events);
      expect(Buffer.compare(late.received, quiet.received), `seed ${seed}: received bytes`).toBe(0);
    }
  }, 300_000);

  it('20 seeds: the QP moved to ERR with packets on the way, then all its memory rewritten: the receiver gets the bytes as read', async () => {
    for (let seed = 100; seed < 120; seed++) {
      const ops = plan(seed, 16).map((o) => ({ ...o, len: Math.max(o.len, 8192) > 70_000 ? 70_000 : Math.max(o.len, 8192) }));
      const quiet = await runCase(seed, ops, false, 4);
      const seen = await runCase(seed, ops, true, 4);
      expect(quiet.deferred, `seed ${seed}`).toBeGreaterThan(0);
      expect(quiet.completions, `seed ${seed}`).toEqual(seen.completions);
      expect(quiet.events, `seed ${seed}`).toBe(seen.events);
      expect(Buffer.compare(quiet.received, seen.received), `seed ${seed}: received bytes`).toBe(0);
      // Some requests were flushed (not all completed successfully).
      expect(
        quiet.completions.some((c) => c.startsWith('a:') && c.split(':')[2] !== String(IBV_WC_SUCCESS)),
        `seed ${seed}`,
      ).toBe(true);
    }
  }, 300_000);
});
