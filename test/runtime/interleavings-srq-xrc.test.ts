/**
 * Shared receive queues under seeded interleavings of device passes and
 * driver calls (interleaving-run.ts): in odd seeds two or three RC QP pairs
 * whose B ends share one SRQ, in even seeds two or three XRC send QPs on A
 * to XRC receive QPs on B, each message naming one of one or two XRC SRQs.
 * Every QP sends SEND, SEND with immediate, WRITE with immediate (each takes
 * a receive of the SRQ), WRITE and READ, 0 B to 3 packets; B keeps its
 * SRQs stocked eagerly or one receive now and then (RNR NAKs, retried), and
 * reads its one CQ by polling or by waiting for completion events (arm,
 * poll, wait: a lost event is a hang); it arms the SRQ limit at random
 * steps (IBV_SRQ_LIMIT); at the end it arms it
 * once more above what is left and takes one more message.
 * Checks: every signaled WR completes once, in order per QP, successfully
 * with its opcode; each QP's receives complete in its message order, with
 * qp_num (and for XRC src_qp and the SRQ the message named), opcode,
 * length, immediate and bytes right; WRITE and READ bytes; every
 * IBV_EVENT_SRQ_LIMIT_REACHED names its SRQ and follows an arm, none is
 * lost at the end; no hang.
 */
import { describe, expect, it } from 'vitest';
import { disableAutoStart } from '../../src/boot.js';
import {
  IBV_EVENT_SRQ_LIMIT_REACHED,
  IBV_QPT_RC,
  IBV_SEND_SIGNALED,
  IBV_SRQ_LIMIT,
  IBV_WC_RDMA_READ,
  IBV_WC_RDMA_WRITE,
  IBV_WC_RECV,
  IBV_WC_RECV_RDMA_WITH_IMM,
  IBV_WC_SEND,
  IBV_WC_SUCCESS,
  IBV_WC_WITH_IMM,
  IBV_WR_RDMA_READ,
  IBV_WR_RDMA_WRITE,
  IBV_WR_RDMA_WRITE_WITH_IMM,
  IBV_WR_SEND,
  IBV_WR_SEND_WITH_IMM,
  ibv_ack_async_event,
  ibv_ack_cq_events,
  ibv_create_comp_channel,
  ibv_destroy_comp_channel,
  ibv_get_cq_event,
  ibv_req_notify_cq,
  ibv_create_srq,
  ibv_destroy_srq,
  ibv_get_async_event,
  ibv_modify_srq,
  ibv_post_send,
  ibv_post_srq_recv,
  type ibv_qp,
  type ibv_srq,
  type ibv_wc,
} from '../../src/index.js';
import * as H from '../e2e/harness.js';
import { connectXrc, openXrcd, xrcRecvQp, xrcSendQp, xrcSrq } from '../e2e/xrc-setup.js';
import type { HandTurnedHost } from '../helpers/hand-turned-host.js';
import { bytesDiffer, drawSchedule, drive, fill, pollAll, runSeeds, seedCount } from '../helpers/interleaving-run.js';
import { seededRandom } from '../seeded.js';

disableAutoStart(); // only the hand-turned devices are listed

const SEEDS = seedCount(150);
const DEPTH = 8;
const SRQ_DEPTH = 8;
const MAX_MESSAGES = 12;
const SLOT = 3 * 1024;
/** wr_id = flow × FLOW_IDS + message; a receive: RECV_IDS + SRQ × FLOW_IDS + its index on the SRQ. */
const FLOW_IDS = 1000;
const RECV_IDS = 100_000;

type Op = 'send' | 'send_imm' | 'write_imm' | 'write' | 'read';
const OPS: readonly Op[] = ['send', 'send_imm', 'write_imm', 'write', 'read'];
const WR_OPCODE: Record<Op, number> = {
  send: IBV_WR_SEND,
  send_imm: IBV_WR_SEND_WITH_IMM,
  write_imm: IBV_WR_RDMA_WRITE_WITH_IMM,
  write: IBV_WR_RDMA_WRITE,
  read: IBV_WR_RDMA_READ,
};
const WC_OPCODE: Record<Op, number> = {
  send: IBV_WC_SEND,
  send_imm: IBV_WC_SEND,
  write_imm: IBV_WC_RDMA_WRITE,
  write: IBV_WC_RDMA_WRITE,
  read: IBV_WC_RDMA_READ,
};
const consumesReceive = (op: Op) => op === 'send' || op === 'send_imm' || op === 'write_imm';

interface Message {
  readonly flow: number;
  readonly i: number;
  readonly op: Op;
  readonly len: number;
  readonly signaled: boolean;
  readonly imm: number;
  /** The SRQ it takes a receive from (XRC: the one it names). */
  readonly srq: number;
  /** Its slot in A's and B's buffers. */
  readonly slot: number;
}

interface Flow {
  readonly qp: ibv_qp;
  /** B's end: what its receives report as qp_num. */
  readonly peer: ibv_qp;
  readonly msgs: Message[];
  posted: number;
  retired: number;
  readonly sent: ibv_wc[];
}

interface Shared {
  readonly srq: ibv_srq;
  readonly num: number;
  /** Receives posted, and the buffer slot of each. */
  posted: number;
  consumed: number;
  armed: number;
  arms: number;
  events: number;
  readonly total: number;
}

const tally = { srq: 0, xrc: 0, events: 0, rnr: 0, twoSrqs: 0, cqEvents: 0 };

async function runSeed(t: HandTurnedHost, seed: number): Promise<string | null> {
  const rand = seededRandom(seed);
  const xrc = seed % 2 === 0;
  const nFlows = 2 + Math.floor(rand() * 2);
  const nSrqs = xrc && rand() < 0.5 ? 2 : 1;
  const [da, db] = [H.openDev('rnic0'), H.openDev('rnic1')];
  t.policy = () => 'settle';
  // B waits for completion events (arm, poll, wait) or polls; its one CQ takes every QP's receives.
  const useEvents = rand() < 0.5;
  const channel = useEvents ? ibv_create_comp_channel(db.ctx) : null;
  if (channel) db.cleanup.push(() => void ibv_destroy_comp_channel(channel));
  const scq = H.createCq(da, 128);
  const rcq = H.createCq(db, 128, channel);
  let slots = 0;
  const plan = Array.from({ length: nFlows }, (_, f) =>
    Array.from({ length: 1 + Math.floor(rand() * MAX_MESSAGES) }, (_, i): Message => {
      const op = OPS[Math.floor(rand() * OPS.length)]!;
      const r = rand();
      const len = r < 0.1 ? 0 : r < 0.5 ? 1 + Math.floor(rand() * 64) : 1 + Math.floor(rand() * SLOT);
      return {
        flow: f,
        i,
        op,
        len,
        signaled: i % DEPTH === DEPTH - 1 || rand() < 0.7,
        imm: Math.floor(rand() * 2 ** 32),
        srq: Math.floor(rand() * nSrqs),
        slot: slots++,
      };
    }),
  );
  for (const ms of plan) (ms[ms.length - 1] as { signaled: boolean }).signaled = true;
  const src = H.region(da, slots * SLOT);
  const dst = H.region(db, slots * SLOT);
  for (const m of plan.flat()) fill(m.op === 'read' ? dst.data : src.data, m.slot * SLOT, m.len, rand);
  // B's SRQs; the last receive of each is for the limit check at the end.
  const srqs: Shared[] = [];
  const xrcd = xrc ? openXrcd(db) : null;
  for (let s = 0; s < nSrqs; s++) {
    const total = plan.flat().filter((m) => consumesReceive(m.op) && m.srq === s).length + (s === 0 ? 2 : 0);
    if (xrcd) {
      const x = xrcSrq(db, xrcd, rcq, SRQ_DEPTH);
      srqs.push({ srq: x.srq, num: x.num, posted: 0, consumed: 0, armed: 0, arms: 0, events: 0, total });
    } else {
      const srq = ibv_create_srq(db.pd, { srq_context: null, attr: { max_wr: SRQ_DEPTH, max_sge: 1, srq_limit: 0 } });
      db.cleanup.push(() => void ibv_destroy_srq(srq));
      srqs.push({ srq, num: 0, posted: 0, consumed: 0, armed: 0, arms: 0, events: 0, total });
    }
  }
  const rbufs = srqs.map((s) => H.region(db, Math.max(1, s.total) * SLOT));
  const flows: Flow[] = plan.map((msgs) => {
    let qp: ibv_qp;
    let peer: ibv_qp;
    if (xrcd) {
      qp = xrcSendQp(da, scq);
      peer = xrcRecvQp(db, xrcd);
      connectXrc(da, qp, db, peer);
    } else {
      const a = H.createQp(da, IBV_QPT_RC, { sendCq: scq, recvCq: scq, maxSendWr: DEPTH, maxRecvWr: 1 });
      const b = H.createQp(db, IBV_QPT_RC, { sendCq: rcq, recvCq: rcq, srq: srqs[0]!.srq, maxSendWr: 1 });
      H.connect(a, b);
      [qp, peer] = [a.qp, b.qp];
    }
    return { qp, peer, msgs, posted: 0, retired: 0, sent: [] };
  });
  const sched = drawSchedule(rand);
  const eager = rand() < 0.5;
  const received: ibv_wc[] = [];
  let failure: string | null = null;
  let ended = false;
  const awaitEvent = () => {
    ibv_get_async_event(db.ctx).then(
      (ev) => {
        const s = srqs.find((x) => x.srq === ev.element.srq);
        if (ev.event_type !== IBV_EVENT_SRQ_LIMIT_REACHED || !s) failure = `async event ${ev.event_type} for ${s ? 'an SRQ' : 'no SRQ of ours'}`;
        else if (s.armed === 0) failure = 'SRQ_LIMIT_REACHED with the limit not armed';
        else {
          s.armed = 0;
          s.events++;
        }
        ibv_ack_async_event(ev);
        awaitEvent();
      },
      (e: Error) => {
        if (!ended) failure = `get_async_event: ${e.message}`;
      },
    );
  };
  awaitEvent();
  const postRecv = (s: Shared, k: number): string | null => {
    const index = srqs.indexOf(s);
    for (; k > 0 && s.posted < s.total && s.posted - s.consumed < SRQ_DEPTH; k--) {
      const rc = ibv_post_srq_recv(s.srq, {
        wr_id: BigInt(RECV_IDS + index * FLOW_IDS + s.posted),
        sg_list: [rbufs[index]!.sge(s.posted * SLOT, SLOT)],
        num_sge: 1,
        next: null,
      });
      if (rc !== 0) return `post_srq_recv: ${rc}`;
      s.posted++;
    }
    return null;
  };
  const arm = (s: Shared, limit: number): string | null => {
    const rc = ibv_modify_srq(s.srq, { max_wr: 0, max_sge: 0, srq_limit: limit }, IBV_SRQ_LIMIT);
    if (rc !== 0) return `modify_srq (limit ${limit}): ${rc}`;
    s.armed = limit;
    s.arms++;
    return null;
  };
  const pollB = (): number => {
    const got = pollAll(rcq);
    for (const w of got) {
      received.push(w);
      const s = srqs[Math.floor((Number(w.wr_id) - RECV_IDS) / FLOW_IDS)];
      if (s) s.consumed++;
    }
    return got.length;
  };
  // As the rdma-core examples with -e: poll; when none, arm and poll once more; then wait, not polling.
  const cq = { armed: false, waiting: false, events: 0 };
  const serveB = () => {
    if (cq.waiting || pollB() > 0 || !channel) return;
    if (!cq.armed) {
      if (ibv_req_notify_cq(rcq, 0) !== 0) failure = 'req_notify_cq failed';
      cq.armed = true;
      if (pollB() > 0) return;
    }
    cq.waiting = true;
    ibv_get_cq_event(channel).then(
      (ev) => {
        if (ev.cq !== rcq) failure = 'a completion event for another CQ';
        ibv_ack_cq_events(rcq, 1);
        cq.events++;
        cq.armed = false;
        cq.waiting = false;
      },
      (e: Error) => {
        if (!ended) failure = `get_cq_event: ${e.message}`;
      },
    );
  };
  const step = (): string | null => {
    for (const s of srqs) {
      const e = postRecv(s, eager ? SRQ_DEPTH : rand() < 0.3 ? 1 : 0);
      if (e) return e;
      if (s.armed === 0 && rand() < 0.05) {
        const e = arm(s, 1 + Math.floor(rand() * 4));
        if (e) return e;
      }
    }
    for (const [fi, f] of flows.entries()) {
      for (let k = Math.floor(rand() * 4); k > 0 && f.posted < f.msgs.length && f.posted - f.retired < DEPTH; k--) {
        const m = f.msgs[f.posted]!;
        const at = BigInt(m.slot * SLOT);
        const rc = ibv_post_send(f.qp, {
          wr_id: BigInt(fi * FLOW_IDS + m.i),
          opcode: WR_OPCODE[m.op] as never,
          send_flags: m.signaled ? IBV_SEND_SIGNALED : 0,
          sg_list: m.len === 0 ? [] : [{ addr: src.addr + at, length: m.len, lkey: src.lkey }],
          num_sge: m.len === 0 ? 0 : 1,
          imm_data: m.imm,
          wr: { rdma: { remote_addr: dst.addr + at, rkey: dst.rkey } },
          ...(xrc ? { qp_type: { xrc: { remote_srqn: srqs[m.srq]!.num } } } : {}),
          next: null,
        });
        if (rc !== 0) return `flow ${fi}: post_send ${m.i} (${m.op}): ${rc}`;
        f.posted++;
      }
    }
    for (const w of pollAll(scq)) {
      const id = Number(w.wr_id);
      const f = flows[Math.floor(id / FLOW_IDS)];
      if (!f) return `a send completion with wr_id ${w.wr_id}`;
      f.sent.push(w);
      f.retired = (id % FLOW_IDS) + 1;
    }
    serveB();
    return failure;
  };
  const consumers = plan.flat().filter((m) => consumesReceive(m.op)).length;
  const e = await drive(t, sched, {
    step,
    done: () => flows.every((f) => f.sent.length === f.msgs.filter((m) => m.signaled).length) && received.length >= consumers,
    where: () =>
      `${xrc ? 'XRC' : 'SRQ'}: ${flows.map((f, i) => `flow ${i}: ${f.sent.length} sent, ${f.posted}/${f.msgs.length} posted`).join('; ')}; ${received.length}/${consumers} received; SRQs ${srqs.map((s) => `${s.posted}/${s.total} posted`).join(', ')}; B ${channel ? `waits for events (${cq.events} had${cq.waiting ? ', waiting' : ''})` : 'polls'}`,
  });
  if (e) return `${xrc ? 'XRC' : 'SRQ'}: ${e}`;
  // The limit, armed above what is left on SRQ 0, must fire at the next receive it takes.
  const s0 = srqs[0]!;
  const quiet = async () => {
    t.settle();
    for (let k = 0; k < 4; k++) {
      t.deliverInterrupts();
      await new Promise<void>((r) => setImmediate(r));
    }
    pollB();
  };
  await quiet(); // events the run raised are counted before the last arm
  const events = s0.events;
  const left = () => s0.posted - s0.consumed;
  if (postRecv(s0, 2 - left()) ?? arm(s0, left())) return 'the last arm failed';
  const last = flows[0]!;
  const lastWr = {
    wr_id: BigInt(FLOW_IDS - 1),
    opcode: IBV_WR_SEND as never,
    send_flags: IBV_SEND_SIGNALED,
    sg_list: [],
    num_sge: 0,
    ...(xrc ? { qp_type: { xrc: { remote_srqn: s0.num } } } : {}),
    next: null,
  };
  if (ibv_post_send(last.qp, lastWr) !== 0) return 'the last SEND';
  t.policy = () => 'settle';
  await quiet();
  const lastRecv = received.pop();
  const lastSent = pollAll(scq);
  ended = true;
  const errors: string[] = [];
  if (failure) errors.push(failure);
  if (lastSent.length !== 1 || lastSent[0]!.status !== IBV_WC_SUCCESS || !lastRecv || lastRecv.status !== IBV_WC_SUCCESS || lastRecv.byte_len !== 0)
    errors.push(`the last SEND: ${lastSent.map(H.wcText).join()}, ${lastRecv ? H.wcText(lastRecv) : 'no receive'}`);
  if (s0.events !== events + 1)
    errors.push(`the limit armed at ${s0.armed || 'its last value'} with ${left() + 1} left: ${s0.events - events} events after the last receive`);
  for (const s of srqs) if (s.events > s.arms) errors.push(`${s.events} limit events for ${s.arms} arms`);
  // Per flow: its signaled WRs in order, successful.
  for (const [fi, f] of flows.entries()) {
    const want = f.msgs.filter((m) => m.signaled);
    if (f.sent.length !== want.length) errors.push(`flow ${fi}: ${f.sent.length} completions for ${want.length} signaled WRs`);
    f.sent.forEach((w, k) => {
      const m = want[k];
      if (!m || w.wr_id !== BigInt(fi * FLOW_IDS + m.i) || w.status !== IBV_WC_SUCCESS || w.opcode !== WC_OPCODE[m.op])
        errors.push(`flow ${fi}: completion ${k}: ${H.wcText(w)}, expected ${m ? `message ${m.i} (${m.op})` : 'none'}`);
    });
    // Its receives, in its message order, from whichever SRQ slot they took.
    const mine = received.filter((w) => w.qp_num === f.peer.qp_num);
    const takers = f.msgs.filter((m) => consumesReceive(m.op));
    if (mine.length !== takers.length) errors.push(`flow ${fi}: ${mine.length} receives for ${takers.length} messages that take one`);
    mine.forEach((w, k) => {
      const m = takers[k];
      const id = Number(w.wr_id) - RECV_IDS;
      const [s, slot] = [Math.floor(id / FLOW_IDS), id % FLOW_IDS];
      const imm = m?.op !== 'send';
      if (
        !m ||
        w.status !== IBV_WC_SUCCESS ||
        s !== m.srq ||
        w.opcode !== (m.op === 'write_imm' ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV) ||
        w.byte_len !== m.len ||
        ((w.wc_flags & IBV_WC_WITH_IMM) !== 0) !== imm ||
        (imm && w.imm_data !== m.imm) ||
        (xrc && w.src_qp !== f.qp.qp_num)
      ) {
        errors.push(`flow ${fi}: receive ${k}: ${H.wcText(w)} (SRQ ${s}), expected ${m ? `message ${m.i} (${m.op}, ${m.len} B, SRQ ${m.srq})` : 'none'}`);
        return;
      }
      if (m.op !== 'write_imm') {
        const d = bytesDiffer(rbufs[s]!.data, slot * SLOT, src.data, m.slot * SLOT, m.len, SLOT);
        if (d) errors.push(`flow ${fi}: message ${m.i} (${m.op}) in receive ${slot} of SRQ ${s}: ${d}`);
      }
    });
    for (const m of f.msgs) {
      if (m.op !== 'write' && m.op !== 'write_imm' && m.op !== 'read') continue;
      const [got, want] = m.op === 'read' ? [src.data, dst.data] : [dst.data, src.data];
      const d = bytesDiffer(got, m.slot * SLOT, want, m.slot * SLOT, m.len, SLOT);
      if (d) errors.push(`flow ${fi}: message ${m.i} (${m.op}, ${m.len} B): ${d}`);
    }
  }
  if (received.some((w) => !flows.some((f) => f.peer.qp_num === w.qp_num))) errors.push('a receive for no QP of ours');
  xrc ? tally.xrc++ : tally.srq++;
  if (nSrqs > 1) tally.twoSrqs++;
  if (!eager) tally.rnr++;
  tally.events += srqs.reduce((n, s) => n + s.events, 0);
  tally.cqEvents += cq.events;
  for (const r of [src, dst, ...rbufs]) r.checkGuards();
  return errors.length > 0 ? `${xrc ? 'XRC' : 'SRQ'}: ${errors.slice(0, 4).join('; ')}` : null;
}

describe('SRQ and XRC under seeded interleavings of device passes and driver calls', () => {
  it(`${SEEDS} seeds: every WR completes once, in order per QP; every receive on its SRQ with its bytes; limit events; no hang`, {
    timeout: 600_000,
  }, async () => {
    await runSeeds(SEEDS, runSeed);
    expect(tally.srq, 'SRQ seeds').toBeGreaterThan(SEEDS / 3);
    expect(tally.xrc, 'XRC seeds').toBeGreaterThan(SEEDS / 3);
    expect(tally.twoSrqs, 'XRC seeds with two SRQs').toBeGreaterThan(SEEDS / 10);
    expect(tally.rnr, 'seeds with receives posted late').toBeGreaterThan(SEEDS / 4);
    expect(tally.events, 'SRQ limit events').toBeGreaterThan(SEEDS * 1.2);
    expect(tally.cqEvents, 'completion events B waited for').toBeGreaterThan(SEEDS / 2);
  });
});
