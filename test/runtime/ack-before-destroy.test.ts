/**
 * A responder that completes a message owes its ACK; a command the driver
 * rings after reading that completion (destroy the QP, modify it to RESET or
 * ERR) must not take the ACK away. rxe sends the ACK in the same task that
 * completes the receive, and a destroy waits for that task.
 *
 * Found as a rare hang of `rnic rc_pingpong -e` at workers 1 under load: the
 * client read its last receive, destroyed its QP and exited while its device
 * thread, preempted between the receive and the transmit of one pass, still
 * held the ACK; the server retransmitted its last SEND for ever (retry_cnt 7
 * retries for ever, as rxe does). Here the passes are run by hand to make
 * that interleaving certain: one pass delivers the SEND (the receive CQE is
 * written, the ACK queued), the application reads the completion with no
 * pass between, then its command runs in a pass of its own.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { rcPair } from '../../bench/rc-pair.js';
import { disableAutoStart } from '../../src/boot.js';
import { handTurnedHost } from '../helpers/hand-turned-host.js';
import {
  IBV_QPS_ERR,
  IBV_QPS_RESET,
  IBV_QP_STATE,
  IBV_SEND_SIGNALED,
  IBV_WC_RECV,
  IBV_WC_SEND,
  IBV_WC_SUCCESS,
  IBV_WR_SEND,
  ibv_destroy_qp,
  ibv_modify_qp,
  ibv_poll_cq,
  ibv_post_recv,
  ibv_post_send,
  newQpAttr,
  type ibv_qp,
  type ibv_wc,
} from '../../src/index.js';

function poll(cq: Parameters<typeof ibv_poll_cq>[0]): ibv_wc[] {
  const wc: ibv_wc[] = [];
  const n = ibv_poll_cq(cq, 4, wc);
  expect(n).toBeGreaterThanOrEqual(0);
  return wc.slice(0, n);
}

const commands: Record<string, (qp: ibv_qp) => number> = {
  'destroy the QP': (qp) => ibv_destroy_qp(qp),
  'modify it to ERR': (qp) => {
    const a = newQpAttr();
    a.qp_state = IBV_QPS_ERR;
    return ibv_modify_qp(qp, a, IBV_QP_STATE);
  },
  'modify it to RESET': (qp) => {
    const a = newQpAttr();
    a.qp_state = IBV_QPS_RESET;
    return ibv_modify_qp(qp, a, IBV_QP_STATE);
  },
};

disableAutoStart(); // only the hand-turned devices are listed

let close: (() => Promise<void>) | null = null;
afterEach(async () => {
  await close?.();
  close = null;
});

describe('the ACK of a completed receive goes out before a later command on the QP', () => {
  for (const [what, command] of Object.entries(commands)) {
    it(`the responder's application reads its last receive, then ${what}: the requester's SEND completes`, async () => {
      const t = await handTurnedHost();
      close = t.close;
      const [a, b] = rcPair(4096, 8);
      expect(ibv_post_recv(b.qp, { wr_id: 7n, sg_list: [{ addr: b.mr.addr, length: 64, lkey: b.mr.lkey }], num_sge: 1, next: null })).toBe(0);
      a.buf.fill(0x5a, 0, 64);

      // The device thread is descheduled: a driver call runs no pass (a command still gets its one).
      t.policy = () => 0;
      expect(
        ibv_post_send(a.qp, {
          wr_id: 1n,
          opcode: IBV_WR_SEND,
          send_flags: IBV_SEND_SIGNALED,
          sg_list: [{ addr: a.mr.addr, length: 64, lkey: a.mr.lkey }],
          num_sge: 1,
          next: null,
        }),
      ).toBe(0);
      // One pass: A sends, the wire delivers, B writes its receive CQE and queues the ACK.
      t.host.poll();
      const [recv] = poll(b.cq);
      expect(recv, 'B has its receive before any further pass').toMatchObject({ wr_id: 7n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RECV, byte_len: 64 });
      expect(b.buf.subarray(0, 64).every((x) => x === 0x5a)).toBe(true);
      expect(command(b.qp)).toBe(0);

      t.policy = () => 'settle';
      const sent = poll(a.cq);
      expect(sent, "A's SEND is acknowledged without a retransmission").toMatchObject([{ wr_id: 1n, status: IBV_WC_SUCCESS, opcode: IBV_WC_SEND }]);
    });
  }
});
