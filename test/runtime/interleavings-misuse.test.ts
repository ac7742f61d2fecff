/**
 * Verbs misused while RC traffic is in flight, under seeded interleavings
 * of device passes and driver calls (interleaving-run.ts). A sends WRITEs,
 * SENDs and READs (0 B to 3 packets) to B; at a step drawn from the seed,
 * with WRs outstanding, one misuse happens:
 *  - err: A's QP modified to ERR mid-message, and the rest posted in ERR;
 *  - err-b: B's QP modified to ERR under A's traffic (A's retries run out);
 *  - bad-lkey / bad-rkey: one WR with a key nobody registered;
 *  - dereg-local / dereg-remote / dereg-recv: the MR that A's posted WRs
 *    read or write, the one B's WRITEs and READs target, or the one B's
 *    posted receives name, deregistered;
 *  - destroy-cq: each QP's CQ destroyed (must fail: EBUSY);
 *  - overflow: more WRs posted than the SQ holds (ENOMEM at the first over);
 *  - post-reset-init: a fresh QP posted to in RESET and INIT;
 *  - mw-invalidate: B's WRITE and READ targets reached through a memory
 *    window, which B rebinds (type 1, ibv_bind_mw) or invalidates (type 2,
 *    IBV_WR_LOCAL_INV) while A's WRs use its key.
 * Checks (what rxe and the IBTA agree on; docs/pipeline.md "Threads" says
 * where the IBTA leaves room): a verb misused returns its errno, never
 * throws; A's completions are in posting order: successes, then at most one
 * error that the misuse explains (at the WR it names, for a bad key), then
 * WR_FLUSH_ERR for every WR after it, signaled or not; every WR that
 * completed successfully delivered its bytes (and its receive at B);
 * an errored or flushed one left only its own bytes or none; the QPs end in
 * ERR exactly when an error says so; no guard byte changes; no hang.
 */
import { describe, expect, it } from 'vitest';
import { disableAutoStart } from '../../src/boot.js';
import {
  errno,
  IBV_QPS_ERR,
  IBV_QPS_RTS,
  IBV_QP_STATE,
  IBV_QPT_RC,
  IBV_ACCESS_MW_BIND,
  IBV_ACCESS_REMOTE_READ,
  IBV_ACCESS_REMOTE_WRITE,
  IBV_MW_TYPE_1,
  IBV_MW_TYPE_2,
  IBV_WR_BIND_MW,
  IBV_WR_LOCAL_INV,
  ibv_alloc_mw,
  ibv_bind_mw,
  ibv_dealloc_mw,
  ibv_inc_rkey,
  IBV_SEND_SIGNALED,
  IBV_WC_LOC_PROT_ERR,
  IBV_WC_LOC_QP_OP_ERR,
  IBV_WC_REM_ACCESS_ERR,
  IBV_WC_REM_INV_REQ_ERR,
  IBV_WC_REM_OP_ERR,
  IBV_WC_RETRY_EXC_ERR,
  IBV_WC_SUCCESS,
  IBV_WC_WR_FLUSH_ERR,
  IBV_WR_RDMA_READ,
  IBV_WR_RDMA_WRITE,
  IBV_WR_SEND,
  ibv_dereg_mr,
  ibv_destroy_cq,
  ibv_destroy_qp,
  ibv_modify_qp,
  ibv_post_recv,
  ibv_post_send,
  newQpAttr,
  type ibv_send_wr,
  type ibv_wc,
} from '../../src/index.js';
import * as H from '../e2e/harness.js';
import type { HandTurnedHost } from '../helpers/hand-turned-host.js';
import { bytesDiffer, drawSchedule, drive, fill, pollAll, runSeeds, seedCount } from '../helpers/interleaving-run.js';
import { seededRandom } from '../seeded.js';

disableAutoStart(); // only the hand-turned devices are listed

const SEEDS = seedCount(300);
const DEPTH = 8;
const MAX_MESSAGES = 24;
const SLOT = 3 * 1024;
const RECV_IDS = 500;
const BAD_KEY = 0x00c0ffee;

const KINDS = [
  'err',
  'err-b',
  'bad-lkey',
  'bad-rkey',
  'dereg-local',
  'dereg-remote',
  'dereg-recv',
  'destroy-cq',
  'overflow',
  'post-reset-init',
  'mw-invalidate',
] as const;
type Kind = (typeof KINDS)[number];
type Op = 'write' | 'send' | 'read';
const WR_OPCODE: Record<Op, number> = { write: IBV_WR_RDMA_WRITE, send: IBV_WR_SEND, read: IBV_WR_RDMA_READ };

/** The errors a misuse can explain at A (besides the flush after them). */
const CAUSES: Record<Kind, readonly number[]> = {
  err: [],
  // B in ERR drops what comes in, silently (IBTA 10.3.1): A's transport retries run out.
  'err-b': [IBV_WC_RETRY_EXC_ERR],
  'bad-lkey': [IBV_WC_LOC_PROT_ERR],
  'bad-rkey': [IBV_WC_REM_ACCESS_ERR],
  'dereg-local': [IBV_WC_LOC_PROT_ERR],
  'dereg-remote': [IBV_WC_REM_ACCESS_ERR],
  // B cannot place the SEND: NAK remote operational error (rxe, class A) or invalid request.
  'dereg-recv': [IBV_WC_REM_OP_ERR, IBV_WC_REM_INV_REQ_ERR, IBV_WC_REM_ACCESS_ERR],
  'destroy-cq': [],
  overflow: [],
  'post-reset-init': [],
  'mw-invalidate': [IBV_WC_REM_ACCESS_ERR],
};

interface Message {
  readonly i: number;
  readonly op: Op;
  readonly len: number;
  readonly signaled: boolean;
  /** bad-lkey / bad-rkey: this WR carries the bad key. */
  bad: boolean;
}

const tally = Object.fromEntries(KINDS.map((k) => [k, 0])) as Record<Kind, number>;
const seen = { flushed: 0, caused: 0, midMessage: 0 };
const causedBy: Partial<Record<Kind, number>> = {};

function qpState(qp: Parameters<typeof H.qpState>[0]): number {
  return H.qpState(qp);
}

async function runSeed(t: HandTurnedHost, seed: number): Promise<string | null> {
  const rand = seededRandom(seed);
  const kind = KINDS[seed % KINDS.length]!;
  const n = 2 + Math.floor(rand() * (MAX_MESSAGES - 1));
  const ops: readonly Op[] = kind === 'dereg-recv' ? ['send', 'send', 'write'] : ['write', 'send', 'read'];
  const msgs: Message[] = [];
  for (let i = 0; i < n; i++) {
    const op = ops[Math.floor(rand() * ops.length)]!;
    const r = rand();
    const len = r < 0.1 ? 0 : r < 0.4 ? 1 + Math.floor(rand() * 64) : 1 + Math.floor(rand() * SLOT);
    msgs.push({ i, op, len, signaled: i === n - 1 || i % DEPTH === DEPTH - 1 || rand() < 0.6, bad: false });
  }
  const sched = drawSchedule(rand);
  const misuseAt = Math.floor(rand() * 10);
  const [da, db] = [H.openDev('rnic0'), H.openDev('rnic1')];
  t.policy = () => 'settle';
  const qa = H.createQp(da, IBV_QPT_RC, { maxSendWr: DEPTH, maxRecvWr: 1, cqDepth: 64 });
  const qb = H.createQp(db, IBV_QPT_RC, { maxSendWr: 1, maxRecvWr: MAX_MESSAGES, cqDepth: 64 });
  // retry_cnt 3: 7 would be infinite in rxe, and err-b waits for the retries to run out.
  H.connect(qa, qb, { timeout: 14, minRnrTimer: 1, retryCnt: 3 });
  const local = H.region(da, n * SLOT);
  const remote = H.region(db, n * SLOT, H.ALL_ACCESS | IBV_ACCESS_MW_BIND);
  const rbuf = H.region(db, n * SLOT);
  for (const m of msgs) fill(m.op === 'read' ? remote.data : local.data, m.i * SLOT, m.len, rand);
  // The sources as they were: a deregistered MR's bytes stay, but compare against a copy.
  const [localWas, remoteWas] = [local.data.slice(), remote.data.slice()];
  const sends = msgs.filter((m) => m.op === 'send');
  sends.forEach((m, j) => {
    const rc = ibv_post_recv(qb.qp, { wr_id: BigInt(RECV_IDS + j), sg_list: [rbuf.sge(m.i * SLOT, SLOT)], num_sge: 1, next: null });
    if (rc !== 0) throw new Error(`post_recv ${j}: ${rc}`);
  });
  // mw-invalidate: A reaches B's targets through a window over all of them.
  const mw = kind === 'mw-invalidate' ? ibv_alloc_mw(db.pd, seed % 4 < 2 ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2) : null;
  if (mw) db.cleanup.push(() => void ibv_dealloc_mw(mw));
  let targetRkey = remote.rkey;
  if (mw) {
    const info = { mr: remote.mr, addr: remote.addr, length: BigInt(n * SLOT), mw_access_flags: IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE };
    if (mw.type === IBV_MW_TYPE_1) {
      if (ibv_bind_mw(qb.qp, mw, { wr_id: 1n, send_flags: IBV_SEND_SIGNALED, bind_info: info }) !== 0) throw new Error('bind_mw');
      targetRkey = mw.rkey;
    } else {
      targetRkey = ibv_inc_rkey(mw.rkey);
      const bind = {
        wr_id: 1n,
        next: null,
        sg_list: null,
        num_sge: 0,
        opcode: IBV_WR_BIND_MW,
        send_flags: IBV_SEND_SIGNALED,
        bind_mw: { mw, rkey: targetRkey, bind_info: info },
      };
      if (ibv_post_send(qb.qp, bind as never) !== 0) throw new Error('post bind');
    }
    t.settle();
    const w = pollAll(qb.scq);
    if (w.length !== 1 || w[0]!.status !== IBV_WC_SUCCESS) throw new Error(`the bind: ${w.map(H.wcText).join()}`);
  }
  const sent: ibv_wc[] = [];
  const received: ibv_wc[] = [];
  let posted = 0;
  let retired = 0;
  let misused = false;
  let errAt = -1; // err: WRs posted before the move
  const wrOf = (m: Message): ibv_send_wr => ({
    wr_id: BigInt(m.i),
    opcode: WR_OPCODE[m.op] as never,
    send_flags: m.signaled ? IBV_SEND_SIGNALED : 0,
    sg_list: m.len === 0 ? [] : [{ addr: local.at(m.i * SLOT), length: m.len, lkey: m.bad && kind === 'bad-lkey' ? BAD_KEY : local.lkey }],
    num_sge: m.len === 0 ? 0 : 1,
    wr: { rdma: { remote_addr: remote.at(m.i * SLOT), rkey: m.bad && kind === 'bad-rkey' ? BAD_KEY : targetRkey } },
    next: null,
  });
  const cap = qa.initCap.max_send_wr;
  const misuse = (): string | null => {
    misused = true;
    tally[kind]++;
    const attr = newQpAttr();
    switch (kind) {
      case 'err': {
        errAt = posted;
        attr.qp_state = IBV_QPS_ERR;
        const rc = ibv_modify_qp(qa.qp, attr, IBV_QP_STATE);
        return rc === 0 ? null : `modify to ERR: ${rc}`;
      }
      case 'err-b': {
        attr.qp_state = IBV_QPS_ERR;
        const rc = ibv_modify_qp(qb.qp, attr, IBV_QP_STATE);
        return rc === 0 ? null : `modify B to ERR: ${rc}`;
      }
      case 'bad-lkey':
      case 'bad-rkey': {
        // The next WR that uses the key (a non-empty buffer for an lkey; a WRITE or READ for an rkey).
        const m = msgs.slice(posted).find((x) => (kind === 'bad-lkey' ? x.len > 0 : x.op !== 'send' && x.len > 0));
        if (m) m.bad = true;
        return null;
      }
      case 'dereg-local':
        return ibv_dereg_mr(local.mr) === 0 ? null : 'dereg_mr (local) failed';
      case 'dereg-remote':
        return ibv_dereg_mr(remote.mr) === 0 ? null : 'dereg_mr (remote) failed';
      case 'dereg-recv':
        return ibv_dereg_mr(rbuf.mr) === 0 ? null : 'dereg_mr (receive buffers) failed';
      case 'destroy-cq': {
        for (const cq of [qa.scq, qa.rcq, qb.scq, qb.rcq]) {
          const rc = ibv_destroy_cq(cq);
          if (rc !== errno.EBUSY) return `destroy_cq of a CQ with a QP: ${rc}, expected EBUSY`;
        }
        return null;
      }
      case 'overflow': {
        const room = cap - (posted - retired);
        const chain = msgs.slice(posted, posted + room + 1).map(wrOf);
        chain.forEach((w, k) => {
          w.next = chain[k + 1] ?? null;
        });
        if (chain.length === 0) return null;
        const bad: { wr: ibv_send_wr | null } = { wr: null };
        const rc = ibv_post_send(qa.qp, chain[0]!, bad);
        const over = chain.length > room;
        if (over ? rc !== errno.ENOMEM || bad.wr !== chain[room] : rc !== 0)
          return `post of ${chain.length} WRs with room for ${room}: ${rc}, bad_wr ${bad.wr?.wr_id}`;
        posted += Math.min(room, chain.length);
        return null;
      }
      case 'mw-invalidate': {
        // The window's old key stops working when B's requester executes this (its own SQ, own pace).
        const rc =
          mw!.type === IBV_MW_TYPE_1
            ? ibv_bind_mw(qb.qp, mw!, {
                wr_id: 2n,
                send_flags: IBV_SEND_SIGNALED,
                bind_info: { mr: remote.mr, addr: remote.addr, length: BigInt(n * SLOT), mw_access_flags: IBV_ACCESS_REMOTE_WRITE },
              })
            : ibv_post_send(qb.qp, {
                wr_id: 2n,
                next: null,
                sg_list: [],
                num_sge: 0,
                opcode: IBV_WR_LOCAL_INV as never,
                send_flags: IBV_SEND_SIGNALED,
                invalidate_rkey: targetRkey,
              });
        return rc === 0 ? null : `${mw!.type === IBV_MW_TYPE_1 ? 'rebind' : 'local invalidate'}: ${rc}`;
      }
      case 'post-reset-init': {
        const c = H.createQp(da, IBV_QPT_RC, { sendCq: qa.scq, recvCq: qa.rcq, maxSendWr: 2, maxRecvWr: 2 });
        const wr = wrOf(msgs[0]!);
        const recv = { wr_id: 999n, sg_list: [local.sge(0, 8)], num_sge: 1, next: null };
        // rxe: sends need RTS, receives INIT (EINVAL before); the IBTA calls both an immediate error.
        if (ibv_post_send(c.qp, wr) !== errno.EINVAL || ibv_post_recv(c.qp, recv) !== errno.EINVAL) return 'post in RESET was not EINVAL';
        H.toInit(c);
        if (ibv_post_send(c.qp, wr) !== errno.EINVAL) return 'post_send in INIT was not EINVAL';
        if (ibv_post_recv(c.qp, recv) !== 0) return 'post_recv in INIT failed';
        // Destroyed with a receive posted: no completion for it (the QP is gone, IBTA 10.2.4.4).
        const rc = ibv_destroy_qp(c.qp);
        return rc === 0 ? null : `destroy_qp: ${rc}`;
      }
    }
  };
  const lastDone = () => sent.length > 0 && sent[sent.length - 1]!.wr_id === BigInt(n - 1);
  const e = await drive(t, sched, {
    step: (step) => {
      // With WRs outstanding if it comes to that; else late (all may have completed).
      if (!misused && step >= misuseAt && (posted - retired >= 2 || step >= misuseAt + 40)) {
        const e = misuse();
        if (e) return e;
      }
      // Nothing but A's timers moves an err-b run on: time goes by in steps of a third of the timeout.
      if (kind === 'err-b' && misused) t.clock.t += 22e6;
      for (let k = Math.floor(rand() * 4); k > 0 && posted < n && posted - retired < DEPTH; k--) {
        const m = msgs[posted]!;
        const rc = ibv_post_send(qa.qp, wrOf(m));
        if (rc !== 0) return `post_send ${m.i} (${m.op}) in state ${qpState(qa.qp)}: ${rc}`;
        posted++;
      }
      for (const w of pollAll(qa.scq)) {
        sent.push(w);
        retired = Number(w.wr_id) + 1;
      }
      received.push(...pollAll(qb.rcq));
      return null;
    },
    done: () => misused && posted === n && lastDone(),
    where: () =>
      `${kind}: ${sent.length} send completions (last ${sent[sent.length - 1]?.wr_id}), ${received.length} receives, ${posted}/${n} posted, misused ${misused}`,
  });
  if (e) return `${kind}: ${e}`;
  t.settle();
  received.push(...pollAll(qb.rcq));
  const errors: string[] = [];
  // A's completions: in order; successes, then at most one error the misuse explains, then flushes.
  let firstBad = -1;
  let prev = -1;
  for (const [k, w] of sent.entries()) {
    const i = Number(w.wr_id);
    if (i <= prev) errors.push(`completion ${k}: wr_id ${i} after ${prev}`);
    prev = i;
    const m = msgs[i];
    if (!m) {
      errors.push(`completion ${k}: wr_id ${i}, which no WR had`);
      continue;
    }
    if (firstBad < 0 && w.status !== IBV_WC_SUCCESS) {
      firstBad = i;
      if (w.status !== IBV_WC_WR_FLUSH_ERR) {
        seen.caused++;
        causedBy[kind] = (causedBy[kind] ?? 0) + 1;
        if (!CAUSES[kind].includes(w.status)) errors.push(`${kind}: WR ${i} (${m.op}) completed ${H.wcText(w)}, which the misuse does not explain`);
        if ((kind === 'bad-lkey' || kind === 'bad-rkey') && !m.bad)
          errors.push(
            `${kind}: WR ${i} (${m.op}, ${m.len} B) failed ${w.status}, not the WR with the bad key (${msgs.filter((x) => x.bad).map((x) => `${x.i} ${x.op} ${x.len}`)}); posted ${posted}`,
          );
      } else if (kind !== 'err') errors.push(`${kind}: WR ${i} flushed with no error before it`);
    } else if (firstBad >= 0) {
      if (w.status !== IBV_WC_WR_FLUSH_ERR) errors.push(`completion ${k}: WR ${i} ${H.wcText(w)} after WR ${firstBad} failed`);
    } else if (!m.signaled) errors.push(`completion ${k}: unsignaled WR ${i} completed successfully`);
  }
  if (firstBad >= 0) {
    seen.flushed += sent.filter((w) => w.status === IBV_WC_WR_FLUSH_ERR).length;
    const wants = msgs.filter((m) => m.i > firstBad).map((m) => m.i);
    const got = sent.filter((w) => Number(w.wr_id) > firstBad).map((w) => Number(w.wr_id));
    if (wants.join() !== got.join()) errors.push(`after WR ${firstBad} failed, completions for ${got.join()} instead of every WR after it`);
  } else {
    if (['bad-lkey', 'bad-rkey'].includes(kind) && msgs.some((m) => m.bad)) errors.push(`${kind}: the WR with the bad key completed successfully`);
    if (kind === 'err' && errAt < n) errors.push('err: no flush of the WRs posted after the move to ERR');
    const wants = msgs.filter((m) => m.signaled).map((m) => m.i);
    if (wants.join() !== sent.map((w) => Number(w.wr_id)).join()) errors.push(`completions for ${sent.map((w) => w.wr_id).join()}, signaled ${wants.join()}`);
  }
  // What completed successfully (everything before the first error) delivered its bytes.
  const okBefore = firstBad < 0 ? n : firstBad;
  for (const m of msgs) {
    const at = m.i * SLOT;
    const [got, want] = m.op === 'read' ? [local.data, remoteWas] : m.op === 'write' ? [remote.data, localWas] : [rbuf.data, localWas];
    const d = bytesDiffer(got, at, want, at, m.len, SLOT);
    if (m.i < okBefore && d) errors.push(`${kind}: WR ${m.i} (${m.op}, ${m.len} B) succeeded but ${d}`);
    if (m.i >= okBefore && d) {
      for (let k = 0; k < SLOT; k++)
        if (got[at + k] !== 0 && (k >= m.len || got[at + k] !== want[at + k])) errors.push(`${kind}: failed WR ${m.i}: byte ${k} wrong`);
      if (d) seen.midMessage++;
    }
  }
  // B's receives: in posting order, the SENDs A saw succeed among the successes, then flushes.
  let recvBad = -1;
  received.forEach((w, j) => {
    if (w.wr_id !== BigInt(RECV_IDS + j)) errors.push(`receive ${j}: wr_id ${w.wr_id}`);
    if (recvBad < 0 && w.status !== IBV_WC_SUCCESS) recvBad = j;
    else if (recvBad >= 0 && w.status !== IBV_WC_WR_FLUSH_ERR) errors.push(`receive ${j}: ${H.wcText(w)} after receive ${recvBad} failed`);
    if (w.status === IBV_WC_SUCCESS && w.byte_len !== sends[j]?.len) errors.push(`receive ${j}: ${H.wcText(w)} for message ${sends[j]?.i}`);
  });
  if (recvBad >= 0 && received[recvBad]!.status !== IBV_WC_WR_FLUSH_ERR && kind !== 'dereg-recv')
    errors.push(`${kind}: receive ${recvBad} ${H.wcText(received[recvBad]!)}`);
  const okSends = sends.filter((m) => m.i < okBefore).length;
  const okRecvs = received.filter((w) => w.status === IBV_WC_SUCCESS).length;
  if (okRecvs < okSends) errors.push(`${okSends} SENDs completed successfully, ${okRecvs} receives`);
  // The QPs' states: A in ERR after an error; B in ERR after an error it NAKed (rxe; IBTA class C).
  const cause = firstBad >= 0 ? sent.find((w) => Number(w.wr_id) === firstBad)!.status : IBV_WC_SUCCESS;
  const [sa, sb] = [qpState(qa.qp), qpState(qb.qp)];
  if (sa !== (firstBad >= 0 || errAt >= 0 ? IBV_QPS_ERR : IBV_QPS_RTS)) errors.push(`${kind}: A's QP in state ${sa} after ${cause}`);
  const bErr = (kind === 'err-b' && misused) || cause === IBV_WC_REM_ACCESS_ERR || cause === IBV_WC_REM_OP_ERR || cause === IBV_WC_REM_INV_REQ_ERR;
  if (sb !== (bErr ? IBV_QPS_ERR : IBV_QPS_RTS)) errors.push(`${kind}: B's QP in state ${sb} after A's ${cause}`);
  if (kind === 'dereg-recv' && recvBad >= 0 && ![IBV_WC_LOC_PROT_ERR, IBV_WC_LOC_QP_OP_ERR, IBV_WC_WR_FLUSH_ERR].includes(received[recvBad]!.status))
    errors.push(`dereg-recv: receive ${recvBad} ${H.wcText(received[recvBad]!)}`);
  if (mw && misused) {
    const w = pollAll(qb.scq);
    if (w.length !== 1 || w[0]!.wr_id !== 2n || w[0]!.status !== IBV_WC_SUCCESS)
      errors.push(`the window's ${mw.type === IBV_MW_TYPE_1 ? 'rebind' : 'invalidation'}: ${w.map(H.wcText).join()}`);
  }
  for (const r of [local, remote, rbuf]) r.checkGuards();
  return errors.length > 0 ? `${kind}: ${errors.slice(0, 4).join('; ')}` : null;
}

describe('verbs misused while RC traffic is in flight, under seeded interleavings', () => {
  it(`${SEEDS} seeds: errnos, completions in order with the error the misuse explains, flushes, bytes, QP states, no hang`, { timeout: 600_000 }, async () => {
    await runSeeds(SEEDS, runSeed);
    for (const k of KINDS) expect(tally[k], `seeds misusing: ${k}`).toBeGreaterThan(SEEDS / KINDS.length / 2);
    for (const k of KINDS) if (CAUSES[k].length > 0) expect(causedBy[k] ?? 0, `seeds where ${k} caused its error`).toBeGreaterThan(SEEDS / KINDS.length / 4);
    expect(seen.caused, 'error completions a misuse caused').toBeGreaterThan(SEEDS / 10);
    expect(seen.flushed, 'WRs flushed').toBeGreaterThan(SEEDS / 2);
  });
});
