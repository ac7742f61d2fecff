/**
 * Rounds of the transmit schedule per device pass (DeviceHost.passRounds,
 * Nic.poll): the realtime runtime lets a pass send up to its budget, the
 * simulator keeps one round of QP_BURST packets per QP. More rounds per
 * pass change when packets leave and how many requests one ACK covers,
 * never what arrives: each seed runs the same random RC traffic on two QP
 * pairs with one round per pass and with the runtime's rounds, and checks
 * that both runs give the same completions, in the same order, and the
 * same bytes in every buffer.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { rcPair, type Side } from '../../bench/rc-pair.js';
import { disableAutoStart } from '../../src/boot.js';
import {
  IBV_SEND_SIGNALED,
  IBV_WR_RDMA_READ,
  IBV_WR_RDMA_WRITE,
  IBV_WR_RDMA_WRITE_WITH_IMM,
  IBV_WR_SEND,
  IBV_WR_SEND_WITH_IMM,
  ibv_destroy_qp,
  ibv_poll_cq,
  ibv_post_recv,
  ibv_post_send,
  type ibv_wc,
} from '../../src/index.js';
import { PASS_ROUND_BYTES, PASS_ROUNDS } from '../../src/runtime/device-host.js';
import { handTurnedHost, type HandTurnedHost } from '../helpers/hand-turned-host.js';
import { seededRandom } from '../seeded.js';

disableAutoStart(); // only the hand-turned devices are listed

const SEEDS = Number(process.env.RNIC_PASS_ROUNDS_SEEDS ?? 100);
const DEPTH = 128;
const SLOT = 9000; // up to 3 packets at MTU 4096
const MAX_MESSAGES = 120;
const OPCODES = [IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_READ];
const consumesReceive = (op: number) => op === IBV_WR_SEND || op === IBV_WR_SEND_WITH_IMM || op === IBV_WR_RDMA_WRITE_WITH_IMM;

let bed: HandTurnedHost | null = null;
afterEach(async () => {
  await bed?.close();
  bed = null;
});

interface Msg {
  op: number;
  len: number;
  signaled: boolean;
  imm: number;
}

function drawFlow(rand: () => number): Msg[] {
  const n = 1 + Math.floor(rand() * MAX_MESSAGES);
  return Array.from({ length: n }, (_, i) => {
    const r = rand();
    return {
      op: OPCODES[Math.floor(rand() * OPCODES.length)]!,
      len: r < 0.6 ? 1 + Math.floor(rand() * 16) : Math.floor(rand() * SLOT),
      // At least one in 32 signaled, so the send queue drains; the last always.
      signaled: i === n - 1 || i % 32 === 31 || rand() < 0.2,
      imm: Math.floor(rand() * 2 ** 32),
    };
  });
}

/** A flow's outcome: every completion on both of its CQs, and both buffers. */
interface Outcome {
  /** Receives the flow's messages consume. */
  receives: number;
  completions: string[];
  buffers: Uint8Array[];
}

/** Runs the seed's flows (one per QP pair, A → B) with `rounds` rounds per pass; scheduling drawn from `rand`. */
async function run(seed: number, rounds: number): Promise<Outcome[]> {
  bed = await handTurnedHost(16 << 20);
  bed.host.passRounds = rounds;
  const msgRand = seededRandom(seed);
  const pairs = [rcPair(MAX_MESSAGES * SLOT, DEPTH), rcPair(MAX_MESSAGES * SLOT, DEPTH)];
  const flows = pairs.map(() => drawFlow(msgRand));
  const sched = seededRandom(seed ^ 0x5a5a5a5a);
  // Most driver calls run no pass, so posts pile up and a pass finds more than QP_BURST to send.
  bed.policy = () => {
    const r = sched();
    return r < 0.03 ? 'settle' : r < 0.1 ? 1 + Math.floor(sched() * 2) : 0;
  };
  const out: Outcome[] = [];
  const state = pairs.map(([a, b], f) => {
    const msgs = flows[f]!;
    for (let i = 0; i < a.buf.length; i += 4) a.buf[i] = (i * 7 + f) & 0xff; // data to send, and for READs to land on
    for (let i = 0; i < b.buf.length; i += 4) b.buf[i] = (i * 13 + f) & 0xff;
    msgs.forEach((m, i) => {
      if (!consumesReceive(m.op)) return;
      const rc = ibv_post_recv(b.qp, {
        wr_id: BigInt(1000 + i),
        sg_list: [{ addr: b.mr.addr + BigInt(i * SLOT), length: SLOT, lkey: b.mr.lkey }],
        num_sge: 1,
        next: null,
      });
      if (rc !== 0) throw new Error(`post_recv: ${rc}`);
    });
    const o: Outcome = { receives: msgs.filter((m) => consumesReceive(m.op)).length, completions: [], buffers: [] };
    out.push(o);
    return { a, b, msgs, posted: 0, retired: 0, o };
  });
  /** Polls up to 16 completions; returns how many. */
  const poll = (side: Side, s: (typeof state)[number], tag: string): number => {
    const wc: ibv_wc[] = [];
    const n = ibv_poll_cq(side.cq, 16, wc);
    if (n < 0) throw new Error(`poll_cq: ${n}`);
    for (let k = 0; k < n; k++) {
      const c = wc[k]!;
      s.o.completions.push(`${tag} ${c.wr_id} ${c.status} ${c.opcode} ${c.byte_len} ${c.wc_flags} ${c.imm_data}`);
      if (tag === 'A') s.retired = Number(c.wr_id) + 1;
    }
    return n;
  };
  for (let step = 0; step < 100_000; step++) {
    let done = true;
    for (const s of state) {
      const burst = Math.floor(sched() * 64);
      for (let k = 0; k < burst && s.posted < s.msgs.length && s.posted - s.retired < DEPTH; k++) {
        const m = s.msgs[s.posted]!;
        const at = BigInt(s.posted * SLOT);
        const rc = ibv_post_send(s.a.qp, {
          wr_id: BigInt(s.posted),
          opcode: m.op as never,
          send_flags: m.signaled ? IBV_SEND_SIGNALED : 0,
          sg_list: m.len === 0 ? [] : [{ addr: s.a.mr.addr + at, length: m.len, lkey: s.a.mr.lkey }],
          num_sge: m.len === 0 ? 0 : 1,
          imm_data: m.imm,
          wr: { rdma: { remote_addr: s.b.mr.addr + at, rkey: s.b.mr.rkey } },
          next: null,
        });
        if (rc !== 0) throw new Error(`post_send: ${rc}`);
        s.posted++;
      }
      poll(s.a, s, 'A');
      poll(s.b, s, 'B');
      if (s.retired < s.msgs.length) done = false;
    }
    if (done) break;
  }
  bed.settle();
  for (const s of state) {
    while (poll(s.b, s, 'B') > 0) {}
    s.o.buffers = [s.a.buf.slice(), s.b.buf.slice()];
    ibv_destroy_qp(s.a.qp);
    ibv_destroy_qp(s.b.qp);
  }
  await bed.close();
  bed = null;
  return out;
}

describe('rounds of the transmit schedule per pass', () => {
  it('a burst of 100 posted 8 B WRITEs lands in one pass (one round: 16)', async () => {
    bed = await handTurnedHost();
    bed.policy = () => 0; // posts run no pass
    const [a, b] = rcPair(4096, DEPTH);
    b.buf.fill(0);
    for (let i = 0; i < 100; i++) {
      a.buf.fill(i + 1, i * 8, i * 8 + 8);
      const rc = ibv_post_send(a.qp, {
        wr_id: BigInt(i),
        opcode: IBV_WR_RDMA_WRITE,
        send_flags: i === 99 ? IBV_SEND_SIGNALED : 0,
        sg_list: [{ addr: a.mr.addr + BigInt(i * 8), length: 8, lkey: a.mr.lkey }],
        num_sge: 1,
        wr: { rdma: { remote_addr: b.mr.addr + BigInt(i * 8), rkey: b.mr.rkey } },
        next: null,
      });
      expect(rc).toBe(0);
    }
    bed.host.poll();
    const landed = Array.from({ length: 100 }, (_, i) => b.buf[i * 8 + 7]).filter((v, i) => v === i + 1).length;
    expect(landed).toBe(100);
  });

  it('a burst of 64 KiB WRITEs leaves one round per pass (PASS_ROUND_BYTES: a pass keeps its frames in cache)', async () => {
    bed = await handTurnedHost();
    bed.policy = () => 0;
    const size = 65536;
    const [a, b] = rcPair(8 * size, DEPTH);
    b.buf.fill(0);
    for (let i = 0; i < 8; i++) {
      a.buf.fill(i + 1, i * size, (i + 1) * size);
      const rc = ibv_post_send(a.qp, {
        wr_id: BigInt(i),
        opcode: IBV_WR_RDMA_WRITE,
        send_flags: i === 7 ? IBV_SEND_SIGNALED : 0,
        sg_list: [{ addr: a.mr.addr + BigInt(i * size), length: size, lkey: a.mr.lkey }],
        num_sge: 1,
        wr: { rdma: { remote_addr: b.mr.addr + BigInt(i * size), rkey: b.mr.rkey } },
        next: null,
      });
      expect(rc).toBe(0);
    }
    expect(PASS_ROUND_BYTES).toBeLessThanOrEqual(16 * 4096 + 16 * 128); // one round's 16 packets at MTU 4096 reach it
    bed.host.poll();
    // One round: QP_BURST (16) packets at MTU 4096, the first message.
    const landed = Array.from({ length: 8 }, (_, i) => b.buf[(i + 1) * size - 1]).filter((v, i) => v === i + 1).length;
    expect(landed).toBe(1);
    bed.settle();
    expect(Array.from({ length: 8 }, (_, i) => b.buf[(i + 1) * size - 1])).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it(`gives what one round per pass gives (${SEEDS} seeds, two QP pairs, WRITE / SEND / READ, 0 B to 3 packets)`, async () => {
    expect(PASS_ROUNDS).toBeGreaterThan(1);
    for (let seed = 1; seed <= SEEDS; seed++) {
      const one = await run(seed, 1);
      const many = await run(seed, PASS_ROUNDS);
      for (const [f, o] of one.entries()) {
        const m = many[f]!;
        // Every send completion and receive came, successfully (status 0).
        expect(o.completions.every((c) => c.split(' ')[2] === '0')).toBe(true);
        expect(o.completions.filter((c) => c.startsWith('B')).length).toBe(o.receives);
        // Each CQ's completions in their order (A's and B's interleave by timing).
        const byCq = (cs: string[]) => [...cs.filter((c) => c.startsWith('A')), ...cs.filter((c) => c.startsWith('B'))];
        expect(byCq(m.completions), `seed ${seed}, flow ${f}`).toEqual(byCq(o.completions));
        for (let k = 0; k < 2; k++) if (Buffer.compare(m.buffers[k]!, o.buffers[k]!) !== 0) expect.fail(`seed ${seed}, flow ${f}: buffer ${k} differs`);
      }
    }
  }, 600_000);
});
