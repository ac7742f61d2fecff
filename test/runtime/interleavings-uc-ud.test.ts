/**
 * UC and UD under seeded interleavings of device passes and driver calls
 * (interleaving-run.ts draws them as the RC test does). A sends to B:
 *  - UC: SEND, SEND with immediate, RDMA WRITE, WRITE with immediate,
 *    0 B to 3 packets at MTU 1024;
 *    some WRITEs with an rkey B never gave (B drops them: UC has no NAK);
 *  - UD: SEND with and without immediate up to the MTU, some with a wrong
 *    Q_Key (B must drop them), and in some seeds a last one larger than
 *    the MTU (an error completion at A: LOC_LEN_ERR).
 * B's receives are posted all before the traffic (then nothing may be
 * lost: the wire loses nothing) or one now and then (UC and UD drop a
 * message that finds none: it is lost, never delivered twice or wrong).
 * Each side's application polls its CQ or waits for completion events
 * (arm, poll, wait); in some seeds A's QP goes to SQD mid-run (with
 * en_sqd_async_notify) and back to RTS after IBV_EVENT_SQ_DRAINED, and B
 * tears its QP down (destroy, ERR, RESET) the moment it has read its last
 * receive, when the last message takes one and every receive was posted.
 * Checks: every signaled WR completes once, in order, with its status and
 * opcode; each receive completes in posting order with a message that was
 * sent (opcode, length, immediate, and for UD the source QP and a 40 B GRH
 * before the payload), later than the one before; in SQD no WR posted after
 * the move completes, and the drain ends with one SQ_DRAINED event; every
 * byte right; no hang (no lost completion event either).
 */
import { describe, expect, it } from 'vitest';
import { disableAutoStart } from '../../src/boot.js';
import {
  IBV_QP_STATE,
  IBV_QPS_ERR,
  IBV_QPS_RESET,
  IBV_QPS_RTS,
  IBV_QPT_UC,
  IBV_QPT_UD,
  IBV_SEND_SIGNALED,
  IBV_WC_GRH,
  IBV_WC_LOC_LEN_ERR,
  IBV_WC_RDMA_WRITE,
  IBV_WC_RECV,
  IBV_WC_RECV_RDMA_WITH_IMM,
  IBV_WC_SEND,
  IBV_WC_SUCCESS,
  IBV_WC_WITH_IMM,
  IBV_WR_RDMA_WRITE,
  IBV_WR_RDMA_WRITE_WITH_IMM,
  IBV_WR_SEND,
  IBV_WR_SEND_WITH_IMM,
  ibv_create_comp_channel,
  ibv_destroy_comp_channel,
  ibv_destroy_qp,
  ibv_modify_qp,
  ibv_post_recv,
  ibv_post_send,
  newQpAttr,
  type ibv_wc,
} from '../../src/index.js';
import * as H from '../e2e/harness.js';
import type { HandTurnedHost } from '../helpers/hand-turned-host.js';
import { bytesDiffer, CqReader, drawSchedule, drive, fill, pollAll, runSeeds, seedCount, sqdDrain } from '../helpers/interleaving-run.js';
import { seededRandom } from '../seeded.js';

disableAutoStart(); // only the hand-turned devices are listed

const SEEDS = seedCount(200);
const DEPTH = 8;
const MAX_MESSAGES = 24;
const GRH = 40;
const RECV_IDS = 500;

type Op = 'send' | 'send_imm' | 'write' | 'write_imm';
const WR_OPCODE: Record<Op, number> = {
  send: IBV_WR_SEND,
  send_imm: IBV_WR_SEND_WITH_IMM,
  write: IBV_WR_RDMA_WRITE,
  write_imm: IBV_WR_RDMA_WRITE_WITH_IMM,
};
const consumesReceive = (op: Op) => op !== 'write';
const hasImm = (op: Op) => op === 'send_imm' || op === 'write_imm';

interface Message {
  readonly i: number;
  readonly op: Op;
  readonly len: number;
  readonly signaled: boolean;
  readonly imm: number;
  /** UD: sent with a Q_Key B does not have; UC (a WRITE): with an rkey B never gave. */
  readonly badQkey: boolean;
  /** UD: larger than the MTU (the last message only). */
  readonly oversize: boolean;
}

const tally = { uc: 0, ud: 0, lost: 0, badQkey: 0, oversize: 0, writes: 0, events: 0, drains: 0, teardowns: 0 };

async function runSeed(t: HandTurnedHost, seed: number): Promise<string | null> {
  const rand = seededRandom(seed);
  const ud = seed % 2 === 0;
  const [da, db] = [H.openDev('rnic0'), H.openDev('rnic1')];
  const mtu = ud ? H.pathMtuBytes(da.portAttr.active_mtu) : 1024;
  const slot = ud ? mtu + 64 : 3 * 1024;
  const n = 1 + Math.floor(rand() * MAX_MESSAGES);
  const ops: readonly Op[] = ud ? ['send', 'send_imm'] : ['send', 'send_imm', 'write', 'write_imm'];
  const msgs: Message[] = [];
  for (let i = 0; i < n; i++) {
    const op = ops[Math.floor(rand() * ops.length)]!;
    const oversize = ud && i === n - 1 && rand() < 0.15;
    const r = rand();
    const max = ud ? mtu : slot;
    const len = oversize ? mtu + 1 + Math.floor(rand() * 32) : r < 0.1 ? 0 : r < 0.5 ? 1 + Math.floor(rand() * 64) : 1 + Math.floor(rand() * max);
    // A zero-length WRITE needs no valid rkey (the IBTA checks none for a 0 B RDMA; rxe): only longer ones are refused.
    const badQkey = (ud || ((op === 'write' || op === 'write_imm') && len > 0)) && !oversize && rand() < 0.1;
    msgs.push({
      i,
      op,
      len,
      signaled: oversize || i === n - 1 || i % DEPTH === DEPTH - 1 || rand() < 0.7,
      imm: Math.floor(rand() * 2 ** 32),
      badQkey,
      oversize,
    });
  }
  const sched = drawSchedule(rand);
  const upfront = rand() < 0.6;
  const useEvents = [rand() < 0.5, rand() < 0.5] as const;
  // Not with an oversized UD message: its error moves the QP to ERR, and the drain never ends.
  const sqdAt = rand() < 0.4 && !msgs.some((m) => m.oversize) ? Math.floor(rand() * 12) : -1;
  const sqdStay = Math.floor(rand() * 40);
  const last = msgs[n - 1]!;
  const teardown =
    upfront && consumesReceive(last.op) && !last.badQkey && !last.oversize ? (['none', 'destroy', 'err', 'reset'] as const)[Math.floor(rand() * 4)]! : 'none';
  t.policy = () => 'settle';
  const channels = [da, db].map((d, k) => {
    if (!useEvents[k]) return null;
    const ch = ibv_create_comp_channel(d.ctx);
    d.cleanup.push(() => void ibv_destroy_comp_channel(ch)); // after the CQs (cleanup runs newest first)
    return ch;
  });
  const qa = H.createQp(da, ud ? IBV_QPT_UD : IBV_QPT_UC, { maxSendWr: DEPTH, maxRecvWr: 1, cqDepth: 64, channel: channels[0] });
  const qb = H.createQp(db, ud ? IBV_QPT_UD : IBV_QPT_UC, { maxSendWr: 1, maxRecvWr: MAX_MESSAGES, cqDepth: 64, channel: channels[1] });
  H.connect(qa, qb);
  const ah = ud ? H.createAh(da, db) : null;
  const src = H.region(da, n * slot);
  const dst = H.region(db, n * slot); // UC WRITE targets
  const rslot = slot + GRH;
  const rbuf = H.region(db, MAX_MESSAGES * rslot);
  for (const m of msgs) fill(src.data, m.i * slot, m.len, rand);
  const receivers = msgs.filter((m) => consumesReceive(m.op) && !m.badQkey && !m.oversize);
  const signaled = msgs.filter((m) => m.signaled);
  const sent: ibv_wc[] = [];
  const received: ibv_wc[] = [];
  let posted = 0;
  let retired = 0;
  let recvPosted = 0;
  const postRecv = (): string | null => {
    const rc = ibv_post_recv(qb.qp, { wr_id: BigInt(RECV_IDS + recvPosted), sg_list: [rbuf.sge(recvPosted * rslot, rslot)], num_sge: 1, next: null });
    if (rc !== 0) return `post_recv ${recvPosted}: ${rc}`;
    recvPosted++;
    return null;
  };
  if (upfront) for (let k = 0; k < receivers.length; k++) postRecv();
  const senderDone = () => sent.length >= signaled.length;
  const readers = [
    new CqReader(qa.scq, channels[0]!, 'A', useEvents[0], () => {
      const ws = pollAll(qa.scq);
      for (const w of ws) {
        sent.push(w);
        retired = Number(w.wr_id) + 1;
      }
      return ws.length;
    }),
    new CqReader(qb.rcq, channels[1]!, 'B', useEvents[1], () => {
      const ws = pollAll(qb.rcq);
      received.push(...ws);
      return ws.length;
    }),
  ];
  const view = {
    get posted() {
      return posted;
    },
    get retired() {
      return retired;
    },
    sent,
  };
  const sqd = sqdDrain(qa.qp, da.ctx, view, (w) => Number(w.wr_id), sqdAt, sqdStay);
  let tornDown = false;
  const e = await drive(t, sched, {
    step: (step) => {
      if (!upfront && recvPosted < MAX_MESSAGES && rand() < 0.3) {
        const e = postRecv();
        if (e) return e;
      }
      for (let k = Math.floor(rand() * 4); k > 0 && posted < n && posted - retired < DEPTH; k--) {
        const m = msgs[posted]!;
        const rc = ibv_post_send(qa.qp, {
          wr_id: BigInt(m.i),
          opcode: WR_OPCODE[m.op] as never,
          send_flags: m.signaled ? IBV_SEND_SIGNALED : 0,
          sg_list: m.len === 0 ? [] : [src.sge(m.i * slot, m.len)],
          num_sge: m.len === 0 ? 0 : 1,
          imm_data: m.imm,
          wr: ah
            ? { ud: { ah, remote_qpn: qb.qp.qp_num, remote_qkey: m.badQkey ? H.QKEY ^ 1 : H.QKEY } }
            : { rdma: { remote_addr: dst.at(m.i * slot), rkey: m.badQkey ? dst.rkey ^ 0x5a5a00 : dst.rkey } },
          next: null,
        });
        if (rc !== 0) return `post_send ${m.i} (${m.op}): ${rc}`;
        posted++;
      }
      readers[0]!.serve();
      if (!tornDown) readers[1]!.serve();
      const failed = readers.find((r) => r.failure);
      if (failed) return failed.failure;
      if (!tornDown && teardown !== 'none' && received.length === receivers.length) {
        tornDown = true;
        const attr = newQpAttr();
        attr.qp_state = teardown === 'err' ? IBV_QPS_ERR : IBV_QPS_RESET;
        const rc = teardown === 'destroy' ? ibv_destroy_qp(qb.qp) : ibv_modify_qp(qb.qp, attr, IBV_QP_STATE);
        if (rc !== 0) return `B's teardown (${teardown}): ${rc}`;
      }
      return sqd.step(step);
    },
    done: () => senderDone() && (!upfront || received.length >= receivers.length) && sqd.settled(),
    waits: () => useEvents.some((u) => u) || !sqd.settled(),
    asleep: () => readers.every((r, k) => r.waiting || (k === 1 && tornDown)),
    where: () =>
      `${ud ? 'UD' : 'UC'}: ${sent.length}/${signaled.length} sent, ${received.length}/${receivers.length} received, ${posted}/${n} posted, receives ${upfront ? 'upfront' : 'late'}; ${readers.map((r) => r.how()).join(', ')}${tornDown ? `; B torn down (${teardown})` : ''}; SQD ${sqd.state()}`,
  });
  for (const r of readers) r.ended = true;
  sqd.end();
  tally.events += readers[0]!.events + readers[1]!.events;
  if (sqd.drained) tally.drains++;
  if (tornDown) tally.teardowns++;
  if (e) return e;
  t.settle();
  received.push(...pollAll(qb.rcq));
  if (pollAll(qa.scq).length > 0) return 'a send completion after the last one';
  ud ? tally.ud++ : tally.uc++;
  const errors: string[] = [];
  // The sender: each signaled WR once, in order; the oversized one LOC_LEN_ERR.
  if (sent.length !== signaled.length) errors.push(`${sent.length} send completions for ${signaled.length} signaled WRs`);
  sent.forEach((w, k) => {
    const m = signaled[k];
    const status = m?.oversize ? IBV_WC_LOC_LEN_ERR : IBV_WC_SUCCESS;
    const opcode = m && (m.op === 'write' || m.op === 'write_imm') ? IBV_WC_RDMA_WRITE : IBV_WC_SEND;
    if (!m || w.wr_id !== BigInt(m.i) || w.status !== status || (status === IBV_WC_SUCCESS && w.opcode !== opcode))
      errors.push(`send completion ${k}: ${H.wcText(w)}, expected ${m ? `message ${m.i} (${m.op}, ${m.len} B${m.oversize ? ', oversize' : ''})` : 'none'}`);
  });
  // After its error completion the UD QP is in ERR, as rxe does (the IBTA has SQE for a UD or UC
  // send error: receives go on; docs/pipeline.md "Threads"); else still RTS.
  const state = H.qpState(qa.qp);
  if (state !== (msgs.some((m) => m.oversize) ? IBV_QPS_ERR : IBV_QPS_RTS)) errors.push(`A's QP in state ${state} at the end`);
  if (msgs.some((m) => m.oversize)) tally.oversize++;
  tally.badQkey += msgs.filter((m) => m.badQkey).length;
  // The receiver: in posting order, each a message sent after the one before, never one twice.
  let next = 0;
  received.forEach((w, j) => {
    if (w.wr_id !== BigInt(RECV_IDS + j) || w.status !== IBV_WC_SUCCESS) {
      errors.push(`receive ${j}: ${H.wcText(w)}, expected wr_id ${RECV_IDS + j}, success`);
      return;
    }
    const off = ud ? GRH : 0;
    const matches = (m: Message) =>
      w.opcode === (m.op === 'write_imm' ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV) &&
      w.byte_len === m.len + off &&
      ((w.wc_flags & IBV_WC_WITH_IMM) !== 0) === hasImm(m.op) &&
      (!hasImm(m.op) || w.imm_data === m.imm) &&
      (m.op === 'write_imm' || bytesDiffer(rbuf.data, j * rslot + off, src.data, m.i * slot, m.len, slot) === null);
    let k = next;
    while (k < receivers.length && !matches(receivers[k]!)) k++;
    if (k === receivers.length) {
      errors.push(`receive ${j}: ${H.wcText(w)} is no message sent after message ${receivers[next - 1]?.i ?? 'none'} (wrong or delivered twice)`);
      return;
    }
    if (upfront && k > next) errors.push(`receive ${j}: messages ${receivers[next]!.i}..${receivers[k - 1]!.i} lost with every receive posted`);
    tally.lost += k - next;
    next = k + 1;
    if (ud) {
      if (!(w.wc_flags & IBV_WC_GRH) || w.src_qp !== qa.qp.qp_num)
        errors.push(`receive ${j}: flags ${w.wc_flags}, src_qp ${w.src_qp} (A's QP is ${qa.qp.qp_num})`);
      // RoCE v2 over IPv4: the GRH's last 20 bytes are the IPv4 header, its source A's address.
      const g = rbuf.data.subarray(j * rslot, j * rslot + GRH);
      if (g[20] !== 0x45 || g.subarray(32, 36).join('.') !== da.gid.raw.subarray(12).join('.')) errors.push(`receive ${j}: GRH ${Array.from(g).join(' ')}`);
    }
  });
  if (upfront && next < receivers.length) errors.push(`messages from ${receivers[next]!.i} on lost with every receive posted`);
  // UC WRITEs land whether or not a receive was there; a WRITE with immediate without one may land in part.
  for (const m of msgs) {
    if (ud || (m.op !== 'write' && m.op !== 'write_imm')) continue;
    tally.writes++;
    if (m.badQkey && bytesDiffer(dst.data, m.i * slot, src.data, m.i * slot, 0, slot)) errors.push(`message ${m.i} (${m.op}) with a bad rkey wrote B's memory`);
    const delivered =
      (m.op === 'write' && !m.badQkey) || received.some((w) => w.opcode === IBV_WC_RECV_RDMA_WITH_IMM && w.imm_data === m.imm && w.byte_len === m.len);
    const at = m.i * slot;
    const d = bytesDiffer(dst.data, at, src.data, at, m.len, slot);
    if (delivered && d) errors.push(`message ${m.i} (${m.op}, ${m.len} B): ${d}`);
    if (!delivered)
      for (let k = 0; k < slot; k++)
        if (dst.data[at + k] !== 0 && (k >= m.len || dst.data[at + k] !== src.data[at + k])) errors.push(`lost message ${m.i}: byte ${k} wrong`);
  }
  for (const r of [src, dst, rbuf]) r.checkGuards();
  return errors.length > 0 ? errors.slice(0, 4).join('; ') : null;
}

describe('UC and UD under seeded interleavings of device passes and driver calls', () => {
  it(`${SEEDS} seeds: every WR completes once, in order; nothing delivered twice or wrong; no hang`, { timeout: 600_000 }, async () => {
    await runSeeds(SEEDS, runSeed);
    expect(tally.uc, 'UC seeds').toBeGreaterThan(SEEDS / 3);
    expect(tally.ud, 'UD seeds').toBeGreaterThan(SEEDS / 3);
    expect(tally.lost, 'messages lost for want of a receive').toBeGreaterThan(SEEDS / 20);
    expect(tally.badQkey, 'UD messages with a wrong Q_Key, UC WRITEs with a wrong rkey').toBeGreaterThan(SEEDS / 20);
    expect(tally.oversize, 'UD messages larger than the MTU').toBeGreaterThan(SEEDS / 40);
    expect(tally.writes, 'UC WRITEs').toBeGreaterThan(SEEDS);
    expect(tally.events, 'completion events waited for').toBeGreaterThan(SEEDS);
    expect(tally.drains, 'seeds whose requester drained its SQ in SQD').toBeGreaterThan(SEEDS / 10);
    expect(tally.teardowns, 'seeds whose responder tore its QP down').toBeGreaterThan(SEEDS / 20);
  });
});
