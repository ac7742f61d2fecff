/**
 * When the transport timer may run (requester.ts hasUnacked): only while a
 * sent PSN waits for its acknowledgement. A WQE being resent below the
 * cumulative ACK has nothing in flight; a READ at the head that an ACK
 * passed still waits for its response.
 */
import { describe, expect, it } from 'vitest';
import { IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_RDMA_READ, IBV_WR_RDMA_WRITE, IBV_WR_SEND } from '../device/abi/constants.js';
import { QpCtx } from './qp-ctx.js';
import { hasUnacked } from './requester.js';
import { SendWqe, WqeStatus } from './work-requests.js';

function wqe(opcode: number, firstPsn: number, npsn: number, sentPkts: number): SendWqe {
  return Object.assign(new SendWqe(), { opcode, firstPsn, npsn, sentPkts, status: sentPkts >= npsn ? WqeStatus.SENT : WqeStatus.PENDING });
}

function qp(ackedPsn: number, sentPsn: number, ...window: SendWqe[]): QpCtx {
  const q = new QpCtx(5);
  q.ackedPsn = ackedPsn;
  q.sentPsn = sentPsn;
  q.window.push(...window);
  return q;
}

describe('hasUnacked: the timer runs while something sent is unacknowledged', () => {
  it('nothing in the window: nothing outstanding', () => {
    expect(hasUnacked(qp(99, 99))).toBe(false);
  });

  it('a PSN past the cumulative ACK was sent', () => {
    expect(hasUnacked(qp(104, 110, wqe(IBV_WR_RDMA_WRITE, 100, 20, 11)))).toBe(true);
  });

  it('a WRITE rewound and resent below an ACK that covered all that was sent: nothing in flight (seed 9981298)', () => {
    // Sent through 140, resent from 110 to 120 after a timeout, then an ACK for 140 came.
    expect(hasUnacked(qp(140, 140, wqe(IBV_WR_RDMA_WRITE, 100, 60, 21)))).toBe(false);
  });

  it('a READ at the head that an ACK of later PSNs passed still waits for its response', () => {
    const read = wqe(IBV_WR_RDMA_READ, 100, 10, 10);
    expect(hasUnacked(qp(120, 120, read, wqe(IBV_WR_RDMA_WRITE, 110, 11, 11)))).toBe(true);
  });

  it('an ATOMIC behind a SEND, both passed by the ACK, waits for its answer (one dropped while a READ ahead missed responses)', () => {
    expect(hasUnacked(qp(87, 87, wqe(IBV_WR_SEND, 86, 1, 1), wqe(IBV_WR_ATOMIC_CMP_AND_SWP, 87, 1, 1)))).toBe(true);
  });

  it('a READ rewound and not yet asked again: the resend starts the timer', () => {
    expect(hasUnacked(qp(120, 120, wqe(IBV_WR_RDMA_READ, 100, 10, 0)))).toBe(false);
  });

  it('PSNs across the 2^24 wrap', () => {
    expect(hasUnacked(qp(0xfffffe, 2, wqe(IBV_WR_RDMA_WRITE, 0xfffff0, 30, 19)))).toBe(true);
    expect(hasUnacked(qp(2, 0xfffffe, wqe(IBV_WR_RDMA_WRITE, 0xfffff0, 30, 5)))).toBe(false);
  });
});
