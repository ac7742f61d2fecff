/**
 * The responder's queue when a duplicate READ or ATOMIC arrives
 * (responder.ts answerAgain): the answer replaces what was queued for its
 * PSN and later ones, and the queue stays in PSN order, so no ACK tells the
 * requester a READ is done before all its responses have gone.
 */
import { describe, expect, it } from 'vitest';
import { type PendingResponse, plainResponse, QpCtx } from './qp-ctx.js';
import { answerAgain } from './responder.js';

const read = (psn: number, sent = 0): PendingResponse => ({ ...plainResponse('read', psn, 0), left: 4096, total: 4096, sent });
const ack = (psn: number): PendingResponse => plainResponse('ack', psn, 0);
const nak = (psn: number): PendingResponse => plainResponse('nak', psn, 0x60);
const queue = (q: QpCtx): string[] => q.responses.map((r) => `${r.kind} ${r.psn}${r.sent ? ` sent ${r.sent}` : ''}`);

function withQueue(...rs: PendingResponse[]): QpCtx {
  const q = new QpCtx(5);
  q.responses.push(...rs);
  return q;
}

describe('a duplicate READ or ATOMIC re-answered in PSN order', () => {
  it('an ACK for a later SEND queued behind the READ it repeats goes after the new answer, not before it', () => {
    // READ 100..110 half sent, then the ACK of a SEND at 111; the READ is asked again from 100.
    const q = withQueue(read(100, 5), ack(111));
    answerAgain(q, 100, 110, read(100));
    expect(queue(q)).toEqual(['read 100', 'ack 111']);
  });

  it('answers to earlier requests keep their place in front', () => {
    const q = withQueue(ack(90), plainResponse('atomic', 95, 0), read(100, 3), nak(112));
    answerAgain(q, 100, 110, read(100));
    expect(queue(q)).toEqual(['ack 90', 'atomic 95', 'read 100', 'nak 112']);
  });

  it('an ACK past a later READ whose answer is abandoned is dropped: it would cover that READ (asked again after this one)', () => {
    // READ 100..110, READ 111..120 queued, then the ACK of a SEND at 121.
    const q = withQueue(read(100, 2), read(111), ack(121));
    answerAgain(q, 100, 110, read(100));
    expect(queue(q)).toEqual(['read 100']);
  });

  it('an ACK between the repeated READ and a later abandoned one stays, after the answer', () => {
    // READ 100..110, ACK of a SEND at 111, READ 112..120, ACK 121.
    const q = withQueue(read(100, 2), ack(111), read(112), ack(121));
    answerAgain(q, 100, 110, read(100));
    expect(queue(q)).toEqual(['read 100', 'ack 111']);
  });

  it('a READ resumed in the middle replaces an earlier answer to the same READ, which would stream again what the requester has', () => {
    // READ 100..110: the requester has 100..104 and asks again from 105 (its resume PSN).
    const q = withQueue(ack(90), read(100, 8), ack(111));
    answerAgain(q, 100, 110, read(105));
    expect(queue(q)).toEqual(['ack 90', 'read 105', 'ack 111']);
  });

  it('an ATOMIC repeated: its result replaces the answers from its PSN on', () => {
    const q = withQueue(plainResponse('atomic', 200, 0), ack(201), read(202), ack(210));
    answerAgain(q, 200, 200, plainResponse('atomic', 200, 0, 7n));
    expect(queue(q)).toEqual(['atomic 200', 'ack 201']);
    expect(q.responses[0]!.orig).toBe(7n);
  });

  it('PSNs across the 2^24 wrap compare as the transport does', () => {
    const q = withQueue(ack(0xfffff0), read(0xfffffe, 1), ack(3));
    answerAgain(q, 0xfffffe, 1, read(0xfffffe));
    expect(queue(q)).toEqual([`ack ${0xfffff0}`, `read ${0xfffffe}`, 'ack 3']);
  });
});
