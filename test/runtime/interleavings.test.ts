/**
 * The realtime runtime's device passes against its driver, in seeded random
 * interleavings. With the devices on a worker thread, the driver can run at
 * any point between two passes, and the OS decides when passes run; the
 * e2e tests see one interleaving per run, the one the machine's load gave.
 * Here each seed draws them (hand-turned-host.ts): how many passes each
 * driver call runs (none: the device thread is descheduled), extra passes
 * between calls, time moving in small steps or in jumps past the
 * retransmit and RNR timers, receives posted late, each application
 * polling its CQ or waiting for completion events (arm, poll, wait, as the
 * rdma-core examples with -e do), and at the end the responder tearing down
 * its QP (destroy, ERR, RESET) the moment it has read its last completion,
 * as rc_pingpong's client does; in some seeds A's QP goes to SQD mid-run
 * (with en_sqd_async_notify) and back to RTS after IBV_EVENT_SQ_DRAINED.
 *
 * Each seed runs an RC workload from A to B, and in half the seeds one from
 * B to A on the same QPs at the same time (SEND, SEND with immediate, RDMA
 * WRITE, WRITE with immediate, READ: 0 B to 3 packets; fetch-and-add and
 * compare-and-swap; some unsignaled, but one in every DEPTH signaled, as an
 * application must or its send queue fills), and checks:
 *  - every signaled WR completes once, successfully, in posting order, with
 *    its opcode and length; every receive likewise, with its immediate;
 *  - in SQD, no WR posted after the move completes; the drain ends with
 *    one SQ_DRAINED event;
 *  - every byte landed where it should (each message has its own region),
 *    atomics returned the original value and left the right one;
 *  - nothing hangs (no lost completion event either): the run ends within a
 *    bound of virtual time and steps.
 *
 * RNIC_INTERLEAVING_SEEDS=N runs more seeds (default 300).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { rcPair, type Side } from '../../bench/rc-pair.js';
import { disableAutoStart } from '../../src/boot.js';
import {
  IBV_ACCESS_REMOTE_ATOMIC,
  IBV_QPS_ERR,
  IBV_QPS_RESET,
  IBV_QP_STATE,
  IBV_SEND_SIGNALED,
  IBV_WC_COMP_SWAP,
  IBV_WC_FETCH_ADD,
  IBV_WC_RDMA_READ,
  IBV_WC_RDMA_WRITE,
  IBV_WC_RECV,
  IBV_WC_RECV_RDMA_WITH_IMM,
  IBV_WC_SEND,
  IBV_WC_SUCCESS,
  IBV_WC_WITH_IMM,
  IBV_WR_ATOMIC_CMP_AND_SWP,
  IBV_WR_ATOMIC_FETCH_AND_ADD,
  IBV_WR_RDMA_READ,
  IBV_WR_RDMA_WRITE,
  IBV_WR_RDMA_WRITE_WITH_IMM,
  IBV_WR_SEND,
  IBV_WR_SEND_WITH_IMM,
  ibv_destroy_qp,
  ibv_modify_qp,
  ibv_poll_cq,
  ibv_post_recv,
  ibv_post_send,
  newQpAttr,
  type ibv_wc,
} from '../../src/index.js';
import { handTurnedHost, type HandTurnedHost } from '../helpers/hand-turned-host.js';
import { CqReader, sqdDrain } from '../helpers/interleaving-run.js';
import { seededRandom } from '../seeded.js';

disableAutoStart(); // only the hand-turned devices are listed

const SEEDS = Number(process.env.RNIC_INTERLEAVING_SEEDS ?? 300);
const SLOT = 3 * 4096; // a message's region in each buffer: up to 3 packets at MTU 4096
const DEPTH = 8;
const MAX_MESSAGES = 24;
/** Past any run that works: rc-pair's timeout 14 (67 ms) and RNR timer 12 (0.64 ms), with retries. */
const MAX_VIRTUAL_NS = 120e9;
const MAX_STEPS = 200_000;
/** wr_id = flow × FLOW_IDS + message (+ RECV_IDS for its receive): a completion in error says no opcode. */
const FLOW_IDS = 1000;
const RECV_IDS = 500;

type Op = 'send' | 'send_imm' | 'write' | 'write_imm' | 'read' | 'fadd' | 'cswap';
const OPS: readonly Op[] = ['send', 'send_imm', 'write', 'write_imm', 'read', 'fadd', 'cswap'];
const WR_OPCODE: Record<Op, number> = {
  send: IBV_WR_SEND,
  send_imm: IBV_WR_SEND_WITH_IMM,
  write: IBV_WR_RDMA_WRITE,
  write_imm: IBV_WR_RDMA_WRITE_WITH_IMM,
  read: IBV_WR_RDMA_READ,
  fadd: IBV_WR_ATOMIC_FETCH_AND_ADD,
  cswap: IBV_WR_ATOMIC_CMP_AND_SWP,
};
const WC_OPCODE: Record<Op, number> = {
  send: IBV_WC_SEND,
  send_imm: IBV_WC_SEND,
  write: IBV_WC_RDMA_WRITE,
  write_imm: IBV_WC_RDMA_WRITE,
  read: IBV_WC_RDMA_READ,
  fadd: IBV_WC_FETCH_ADD,
  cswap: IBV_WC_COMP_SWAP,
};

interface Message {
  readonly i: number;
  readonly op: Op;
  readonly len: number;
  readonly signaled: boolean;
  readonly imm: number;
  /** Atomics: the remote's value before, the operand (add or compare) and the swap. */
  readonly orig: bigint;
  readonly operand: bigint;
  readonly swap: bigint;
}

const consumesReceive = (op: Op) => op === 'send' || op === 'send_imm' || op === 'write_imm';
const isAtomic = (op: Op) => op === 'fadd' || op === 'cswap';
/** Where the data comes from: the responder's memory for READ and atomics, else the requester's. */
const fromResponder = (op: Op) => op === 'read' || isAtomic(op);
const u64 = (rand: () => number) => (BigInt(Math.floor(rand() * 2 ** 32)) << 32n) | BigInt(Math.floor(rand() * 2 ** 32));

function drawMessages(rand: () => number, max: number): Message[] {
  const n = max === 0 ? 0 : 1 + Math.floor(rand() * max);
  const msgs: Message[] = [];
  for (let i = 0; i < n; i++) {
    const op = OPS[Math.floor(rand() * OPS.length)]!;
    const r = rand();
    const len = isAtomic(op) ? 8 : r < 0.1 ? 0 : r < 0.5 ? 1 + Math.floor(rand() * 64) : 1 + Math.floor(rand() * SLOT);
    const orig = u64(rand);
    const operand = op === 'cswap' && rand() < 0.5 ? orig : u64(rand);
    msgs.push({
      i,
      op,
      len,
      signaled: i === n - 1 || i % DEPTH === DEPTH - 1 || rand() < 0.7,
      imm: Math.floor(rand() * 2 ** 32),
      orig,
      operand,
      swap: u64(rand),
    });
  }
  return msgs;
}

/** Draws the seed's scheduling: how eager the device thread is, how time moves. */
function drawSchedule(rand: () => number) {
  const serve = rand(); // chance that a driver call finds the device running
  const settle = rand() * 0.5; // chance that it runs until quiet
  return {
    policy: () => {
      const r = rand();
      return r < settle ? ('settle' as const) : r < settle + serve * (1 - settle) ? 1 + Math.floor(rand() * 3) : 0;
    },
    /** Time between two steps of the driver loop. */
    advance: () => {
      const r = rand();
      if (r < 0.6) return 0;
      if (r < 0.97) return Math.floor(rand() * 20_000);
      return Math.floor(rand() * 150e6); // past a retransmit or RNR timer
    },
    extraPasses: () => (rand() < 0.3 ? Math.floor(rand() * 3) : 0),
    recvLate: rand() < 0.3, // receives posted one at a time, when the responder gets round to it (RNR NAKs)
    teardown: (['none', 'destroy', 'err', 'reset'] as const)[Math.floor(rand() * 4)]!,
    /** Each side's application waits for completion events instead of polling, or not. */
    events: [rand() < 0.5, rand() < 0.5] as const,
    /** The step at which A's QP goes RTS → SQD (-1: never), and how many steps after the drain it goes back. */
    sqdAt: rand() < 0.25 ? Math.floor(rand() * 12) : -1,
    sqdStay: Math.floor(rand() * 40),
  };
}

/** One direction of traffic on the QP pair, and what it has seen. */
interface Flow {
  readonly id: number;
  readonly from: Side;
  readonly to: Side;
  /** Its messages use slots base..base+n of both buffers. */
  readonly base: number;
  readonly msgs: Message[];
  readonly receivers: Message[];
  readonly signaled: Message[];
  posted: number;
  /** Messages whose SQ slot is free again (through the last completion). */
  retired: number;
  recvPosted: number;
  readonly sent: ibv_wc[];
  readonly received: ibv_wc[];
}

function flow(id: number, from: Side, to: Side, base: number, msgs: Message[]): Flow {
  const receivers = msgs.filter((m) => consumesReceive(m.op));
  return { id, from, to, base, msgs, receivers, signaled: msgs.filter((m) => m.signaled), posted: 0, retired: 0, recvPosted: 0, sent: [], received: [] };
}

/** Polls one side's CQ once and sorts each completion to its flow by wr_id; how many it took. */
function pollSide(side: Side, flows: Flow[]): number {
  const wc: ibv_wc[] = [];
  const n = ibv_poll_cq(side.cq, 4, wc);
  if (n < 0) throw new Error(`poll_cq: ${n}`);
  for (let k = 0; k < n; k++) {
    const c = { ...wc[k]! };
    const id = Number(c.wr_id);
    const f = flows[Math.floor(id / FLOW_IDS)];
    if (!f) throw new Error(`a completion with wr_id ${c.wr_id}, which no WR had`);
    if (id % FLOW_IDS >= RECV_IDS) f.received.push(c);
    else {
      f.sent.push(c);
      f.retired = (id % FLOW_IDS) + 1;
    }
  }
  return n;
}

function postSome(f: Flow, rand: () => number): string | null {
  const batch = Math.floor(rand() * 4);
  for (let k = 0; k < batch && f.posted < f.msgs.length && f.posted - f.retired < DEPTH; k++) {
    const m = f.msgs[f.posted]!;
    const at = BigInt((f.base + m.i) * SLOT);
    const remote_addr = f.to.mr.addr + at;
    const rc = ibv_post_send(f.from.qp, {
      wr_id: BigInt(f.id * FLOW_IDS + m.i),
      opcode: WR_OPCODE[m.op] as never,
      send_flags: m.signaled ? IBV_SEND_SIGNALED : 0,
      sg_list: m.len === 0 ? [] : [{ addr: f.from.mr.addr + at, length: m.len, lkey: f.from.mr.lkey }],
      num_sge: m.len === 0 ? 0 : 1,
      imm_data: m.imm,
      wr: isAtomic(m.op)
        ? { atomic: { remote_addr, compare_add: m.operand, swap: m.swap, rkey: f.to.mr.rkey } }
        : { rdma: { remote_addr, rkey: f.to.mr.rkey } },
      next: null,
    });
    if (rc !== 0) return `flow ${f.id}: post_send ${m.i} (${m.op}): ${rc}`;
    f.posted++;
  }
  return null;
}

function postReceives(f: Flow, late: boolean): string | null {
  const room = DEPTH - (f.recvPosted - f.received.length);
  for (let k = 0; k < (late ? Math.min(1, room) : room) && f.recvPosted < f.receivers.length; k++) {
    const m = f.receivers[f.recvPosted]!;
    const addr = f.to.mr.addr + BigInt((f.base + m.i) * SLOT);
    const rc = ibv_post_recv(f.to.qp, {
      wr_id: BigInt(f.id * FLOW_IDS + RECV_IDS + m.i),
      sg_list: [{ addr, length: SLOT, lkey: f.to.mr.lkey }],
      num_sge: 1,
      next: null,
    });
    if (rc !== 0) return `flow ${f.id}: post_recv ${m.i}: ${rc}`;
    f.recvPosted++;
  }
  return null;
}

/** What a flow's completions and bytes say against what it posted. */
function checkFlow(f: Flow): string[] {
  const errors: string[] = [];
  const name = `flow ${f.id}`;
  if (f.sent.length !== f.signaled.length) errors.push(`${name}: ${f.sent.length} send completions for ${f.signaled.length} signaled WRs`);
  f.sent.forEach((wc, k) => {
    const m = f.signaled[k];
    if (
      !m ||
      wc.wr_id !== BigInt(f.id * FLOW_IDS + m.i) ||
      wc.status !== IBV_WC_SUCCESS ||
      wc.opcode !== WC_OPCODE[m.op] ||
      (m.op === 'read' && wc.byte_len !== m.len)
    )
      errors.push(
        `${name}: completion ${k}: wr_id ${wc.wr_id} status ${wc.status} opcode ${wc.opcode} byte_len ${wc.byte_len}, expected ${m ? `message ${m.i} (${m.op}, ${m.len} B)` : 'none'}`,
      );
  });
  if (f.received.length !== f.receivers.length)
    errors.push(`${name}: ${f.received.length} receive completions for ${f.receivers.length} messages that consume one`);
  f.received.forEach((wc, k) => {
    const m = f.receivers[k];
    const opcode = m?.op === 'write_imm' ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
    if (!m || wc.wr_id !== BigInt(f.id * FLOW_IDS + RECV_IDS + m.i) || wc.status !== IBV_WC_SUCCESS || wc.opcode !== opcode || wc.byte_len !== m.len)
      errors.push(
        `${name}: receive ${k}: wr_id ${wc.wr_id} status ${wc.status} opcode ${wc.opcode} byte_len ${wc.byte_len}, expected ${m ? `message ${m.i} (${m.op}, ${m.len} B)` : 'none'}`,
      );
    else if ((m.op !== 'send') !== ((wc.wc_flags & IBV_WC_WITH_IMM) !== 0) || (m.op !== 'send' && wc.imm_data !== m.imm))
      errors.push(`${name}: receive ${k}: immediate ${wc.wc_flags} ${wc.imm_data} for ${m.op} ${m.imm}`);
  });
  for (const m of f.msgs) {
    const at = (f.base + m.i) * SLOT;
    if (isAtomic(m.op)) {
      const remote = new DataView(f.to.buf.buffer, f.to.buf.byteOffset + at, 8).getBigUint64(0, true);
      const local = new DataView(f.from.buf.buffer, f.from.buf.byteOffset + at, 8).getBigUint64(0, true);
      const after = m.op === 'fadd' ? BigInt.asUintN(64, m.orig + m.operand) : m.orig === m.operand ? m.swap : m.orig;
      if (local !== m.orig || remote !== after)
        errors.push(`${name}: message ${m.i} (${m.op}): returned ${local}, left ${remote}; expected ${m.orig}, ${after}`);
      continue;
    }
    const [src, dst] = fromResponder(m.op) ? [f.to.buf, f.from.buf] : [f.from.buf, f.to.buf];
    for (let k = 0; k < SLOT; k++) {
      const want = k < m.len ? src[at + k]! : 0;
      if (dst[at + k] !== want) {
        errors.push(`${name}: message ${m.i} (${m.op}, ${m.len} B): byte ${k} is ${dst[at + k]}, expected ${want}`);
        break;
      }
    }
  }
  return errors;
}

const nextTurn = () => new Promise<void>((r) => setImmediate(r));

/** Runs one seed; returns a description of what went wrong, or null. */
/** What the seeds exercised, summed: a test whose draws stopped reaching a path would pass without testing it. */
const tally = { events: 0, teardowns: 0, reverse: 0, rnrLate: 0, drains: 0 };

async function runSeed(t: HandTurnedHost, seed: number): Promise<string | null> {
  const rand = seededRandom(seed);
  const forward = drawMessages(rand, MAX_MESSAGES);
  const reverse = drawMessages(rand, rand() < 0.5 ? MAX_MESSAGES : 0);
  const sched = drawSchedule(rand);
  t.policy = () => 'settle';
  const [a, b] = rcPair((forward.length + reverse.length) * SLOT, DEPTH, IBV_ACCESS_REMOTE_ATOMIC, true);
  const flows = [flow(0, a, b, 0, forward), flow(1, b, a, forward.length, reverse)];
  const apps = [a, b].map((side, k) => new CqReader(side.cq, side.channel, k === 0 ? 'A' : 'B', sched.events[k]!, () => pollSide(side, flows)));
  // Sources hold random bytes, destinations zero; an atomic's target its original value.
  for (const f of flows) {
    for (const m of f.msgs) {
      const at = (f.base + m.i) * SLOT;
      if (isAtomic(m.op)) new DataView(f.to.buf.buffer, f.to.buf.byteOffset + at, 8).setBigUint64(0, m.orig, true);
      else for (let k = 0; k < m.len; k++) (fromResponder(m.op) ? f.to.buf : f.from.buf)[at + k] = Math.floor(rand() * 256);
    }
  }
  // The responder's application tears its QP down the moment it has read its last receive, when
  // only A sends and its last message takes a receive (all before it executed, in order).
  const last = forward[forward.length - 1]!;
  const teardown = reverse.length === 0 && consumesReceive(last.op) ? sched.teardown : 'none';
  let tornDown = false;
  t.policy = sched.policy;
  const sqd = sqdDrain(a.qp, a.ctx, flows[0]!, (wc) => Number(wc.wr_id) % FLOW_IDS, sched.sqdAt, sched.sqdStay);
  const done = () => flows.every((f) => f.sent.length >= f.signaled.length && f.received.length >= f.receivers.length) && sqd.settled();
  try {
    for (let step = 0; !done(); step++) {
      if (step > MAX_STEPS || t.clock.t > MAX_VIRTUAL_NS) {
        const where = flows.map(
          (f) =>
            `flow ${f.id}: ${f.sent.length}/${f.signaled.length} sent, ${f.received.length}/${f.receivers.length} received, ${f.posted}/${f.msgs.length} posted`,
        );
        const how = apps.map((p) => p.how());
        return `hang: after ${step} steps and ${(t.clock.t / 1e9).toFixed(3)} s virtual; ${where.join('; ')}; ${how.join(', ')}${tornDown ? '; B torn down' : ''}; SQD ${sqd.state()}`;
      }
      for (const f of flows) {
        const e = (tornDown ? null : postReceives(f, sched.recvLate)) ?? postSome(f, rand);
        if (e) return e;
      }
      for (let k = sched.extraPasses(); k > 0; k--) t.host.poll();
      apps[0]!.serve();
      if (!tornDown) apps[1]!.serve();
      const failed = apps.find((p) => p.failure);
      if (failed) return failed.failure;
      if (!tornDown && teardown !== 'none' && flows[0]!.received.length === flows[0]!.receivers.length) {
        tornDown = true;
        const attr = newQpAttr();
        attr.qp_state = teardown === 'err' ? IBV_QPS_ERR : IBV_QPS_RESET;
        const rc = teardown === 'destroy' ? ibv_destroy_qp(b.qp) : ibv_modify_qp(b.qp, attr, IBV_QP_STATE);
        if (rc !== 0) return `B's teardown (${teardown}): ${rc}`;
      }
      const e = sqd.step(step);
      if (e) return e;
      // Every application asleep: the device thread gets the core (else nothing would run).
      if (apps.every((p, i) => p.waiting || (i === 1 && tornDown))) t.host.poll();
      t.clock.t += sched.advance();
      if (apps.some((p) => p.useEvents) || !sqd.settled()) {
        t.deliverInterrupts();
        await nextTurn(); // the woken get_cq_event calls run
      }
    }
  } finally {
    for (const p of apps) p.ended = true;
    tally.events += apps[0]!.events + apps[1]!.events;
    if (tornDown) tally.teardowns++;
    if (reverse.length > 0) tally.reverse++;
    if (sched.recvLate) tally.rnrLate++;
    if (sqd.drained) tally.drains++;
    sqd.end();
  }
  const errors = flows.flatMap(checkFlow);
  return errors.length > 0 ? errors.slice(0, 4).join('; ') : null;
}

let host: HandTurnedHost | null = null;
afterEach(async () => {
  await host?.close();
  host = null;
});

describe('RC under seeded interleavings of device passes and driver calls', () => {
  it(`${SEEDS} seeds: every WR completes once, in order, every byte lands, no hang`, { timeout: 600_000 }, async () => {
    const failures: string[] = [];
    for (let seed = 1; seed <= SEEDS; seed++) {
      host = await handTurnedHost();
      let failure: string | null;
      try {
        failure = await runSeed(host, seed);
      } catch (e) {
        failure = `threw: ${(e as Error).stack ?? String(e)}`;
      }
      if (failure) failures.push(`seed ${seed}: ${failure}`);
      await host.close();
      host = null;
    }
    expect(failures).toEqual([]);
    expect(tally.events, 'completion events waited for').toBeGreaterThan(SEEDS);
    expect(tally.teardowns, 'seeds whose responder tore its QP down').toBeGreaterThan(SEEDS / 20);
    expect(tally.reverse, 'seeds with traffic both ways').toBeGreaterThan(SEEDS / 4);
    expect(tally.rnrLate, 'seeds with receives posted late').toBeGreaterThan(SEEDS / 10);
    expect(tally.drains, 'seeds whose requester drained its SQ in SQD').toBeGreaterThan(SEEDS / 10);
  });
});
