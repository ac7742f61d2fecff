/**
 * `expect: success-or-exhausted`: an RC QP that runs out of its retry budget
 * is no failure when the run explains it (src/scenario/exhaustion.ts), and
 * stays one when it does not. The judge's rules on made-up timelines, then
 * whole scenarios on the simulator: a cable that stops carrying requests,
 * receives that never come, and the consequences on the QP's other stream.
 */
import { describe, expect, it } from 'vitest';
import { type DelayEvidence, explainRetryExhausted, explainRnrExhausted, trailingRounds } from '../../src/scenario/exhaustion.js';
import type { QpFlight, QpTimeline, WrRecord } from '../../src/scenario/timeline.js';
import { judge } from '../../src/campaign/invariants.js';
import { run } from './helpers.js';

function wr(over: Partial<WrRecord> & Pick<WrRecord, 'op' | 'psnFirst' | 'psnLast'>): WrRecord {
  return {
    index: 0,
    size: 0,
    signaled: true,
    postedNs: 0,
    firstPacketNs: 100,
    lastPacketNs: null,
    retransmissions: [],
    completedNs: null,
    status: null,
    completion: null,
    ...over,
  };
}

function timeline(wrs: WrRecord[], events: QpTimeline['events'] = []): QpTimeline {
  return { qp: 'rc0', from: 'a', device: 'rnic0', qpn: 17, op: 'mixed', wrs, events, acks: 0, retransmittedPackets: 0 };
}

/** A 4-packet WRITE at PSN 10..13 resent whole `n` times from 10, after one resend from 12 (progress before). */
function write4(n: number): QpTimeline {
  const rs = [
    { ns: 200, psn: 12 },
    { ns: 201, psn: 13 },
  ];
  for (let k = 0; k < n; k++) for (let p = 10; p <= 13; p++) rs.push({ ns: 1000 * (k + 1) + p, psn: p });
  return timeline([wr({ op: 'write', psnFirst: 10, psnLast: 13, retransmissions: rs })]);
}

describe('the judge of an exhausted transport retry budget', () => {
  it('counts go-back-N rounds from the last starting PSN only', () => {
    expect(trailingRounds(write4(3), 0)).toMatchObject({ psn: 10, rounds: 3 });
    // An earlier round from a later PSN does not count with them.
    expect(trailingRounds(write4(0), 0)).toMatchObject({ psn: 12, rounds: 1 });
    expect(trailingRounds(timeline([wr({ op: 'write', psnFirst: 10, psnLast: 13 })]), 0)).toBeNull();
  });

  it('a READ is one request a round, resuming where its responses stopped', () => {
    const rs = [265, 269, 302, 302].map((psn, i) => ({ ns: 1000 * i, psn }));
    expect(trailingRounds(timeline([wr({ op: 'read', psnFirst: 264, psnLast: 302, retransmissions: rs })]), 0)).toMatchObject({ psn: 302, rounds: 2 });
  });

  it('retry_cnt retries and a fault behind every attempt: explained', () => {
    const e = explainRetryExhausted({ tl: write4(3), index: 0, budget: 3, faultNs: [150, 1011, 2012, 3010], errorNs: 9000 });
    expect(e.ok).toBe(true);
    expect(e.why).toMatch(/3 retries from PSN 10/);
  });

  it('fewer retries than retry_cnt: not explained, whatever the faults', () => {
    const e = explainRetryExhausted({ tl: write4(2), index: 0, budget: 3, faultNs: [150, 1011, 2012, 3010, 4000], errorNs: 9000 });
    expect(e).toEqual({ ok: false, why: expect.stringMatching(/gave up after 2 retransmission round\(s\).*retry_cnt 3 allows 3/) });
  });

  it('too few faults on the QP to account for every failed attempt: not explained (a responder that stopped on its own)', () => {
    const e = explainRetryExhausted({
      tl: write4(3),
      index: 0,
      budget: 3,
      faultNs: [1011, 2012, 50 /* before its first packet */, 9500 /* after */],
      errorNs: 9000,
    });
    expect(e.ok).toBe(false);
    expect(e.why).toMatch(/only 2 time\(s\)/);
  });

  it('a fault on an older WR still outstanding at its first packet counts (its response was dropped behind the lost one)', () => {
    // WR 0, a READ, first sent at 10 and completed at 3000; WR 1, an FAA first sent at 50, resent once
    // (retry_cnt 1) and given up at 9000. Faults at 20 (the READ's response) and 1500 (the resend's ACK).
    const fa = (older: Partial<WrRecord>) =>
      timeline([
        wr({ index: 0, op: 'read', psnFirst: 5, psnLast: 5, firstPacketNs: 10, ...older }),
        wr({ index: 1, op: 'fetch_add', psnFirst: 6, psnLast: 6, firstPacketNs: 50, retransmissions: [{ ns: 1000, psn: 6 }] }),
      ]);
    const outstanding = explainRetryExhausted({ tl: fa({ completedNs: 3000 }), index: 1, budget: 1, faultNs: [20, 1500], errorNs: 9000 });
    expect(outstanding.ok).toBe(true);
    // The same READ done before the FAA's first packet: its fault cost the FAA nothing.
    const done = explainRetryExhausted({ tl: fa({ completedNs: 40 }), index: 1, budget: 1, faultNs: [20, 1500], errorNs: 9000 });
    expect(done).toEqual({ ok: false, why: expect.stringMatching(/only 1 time\(s\)/) });
  });

  it('a device that retries for ever never explains giving up', () => {
    expect(explainRetryExhausted({ tl: write4(9), index: 0, budget: Infinity, faultNs: [1, 2, 3], errorNs: 9000 }).ok).toBe(false);
  });
});

/**
 * Timeouts on delay: a one-packet READ at PSN 10, timeout 4 (65.536 µs), retry_cnt 3, resent every
 * `every` ns from its first transmission at 0 (the times its requester handed it to the port), given
 * up at the fourth timeout. Its requests reach the responder 500 ns after they are sent and are
 * answered at once; `respRx` says when (if) the answers come back.
 */
function readRounds(every: number, respRx: number[], more: Partial<DelayEvidence> = {}, events: QpTimeline['events'] = []) {
  const sent = [0, every, 2 * every, 3 * every];
  const resends = sent.slice(1).map((ns) => ({ ns, psn: 10 }));
  const tl = timeline([wr({ op: 'read', psnFirst: 10, psnLast: 10, firstPacketNs: 0, retransmissions: resends })], events);
  const delay: DelayEvidence = {
    flight: {
      reqTx: sent,
      reqTxPsn: sent.map(() => 10),
      reqRx: sent.map((t) => t + 500),
      respTx: sent.map((t) => t + 600),
      respRx,
      resent: new Map([[0, resends]]),
    },
    timeoutNs: 65_536,
    reqLostNs: [],
    respLostNs: [],
    ...more,
  };
  return explainRetryExhausted({ tl, index: 0, budget: 3, faultNs: [], errorNs: 4 * every, delay });
}

/** readRounds' READ sent every 70 µs, its requests arrived 500 ns later, no answer handed over: `over` changes that. */
function silentFlight(over: Partial<QpFlight> = {}): QpFlight {
  return {
    reqTx: [0, 70_000, 140_000, 210_000],
    reqTxPsn: [10, 10, 10, 10],
    reqRx: [500, 70_500, 140_500, 210_500],
    respTx: [],
    respRx: [],
    resent: new Map([[0, [70_000, 140_000, 210_000].map((ns) => ({ ns, psn: 10 }))]]),
    ...over,
  };
}

describe('the judge of a retry budget spent on delay (a timeout shorter than the fabric queueing)', () => {
  it('every timeout due while the answer was still on the way: explained with no fault at all', () => {
    const e = readRounds(70_000, [400_000]);
    expect(e.ok).toBe(true);
    expect(e.why).toMatch(/0 fault\(s\).* and 4 timeout\(s\) expired while its frames were still on the way/);
  });

  it('a timer that fires before the timeout: not explained, whatever is on the way', () => {
    const e = readRounds(30_000, [400_000]);
    expect(e.ok).toBe(false);
    expect(e.why).toMatch(/only 0 time\(s\)/);
  });

  it('a responder that never answers (the requests arrived, nothing came back or is on the way): not explained', () => {
    const e = readRounds(70_000, [], {
      flight: silentFlight(),
    });
    expect(e.ok).toBe(false);
  });

  it('a responder whose transmit FIFOs stayed full from each request on holds the answers back: explained; one whose FIFOs emptied meanwhile: not', () => {
    const silent = silentFlight();
    // Never empty while the run was watched (an empty log), or empty only before the first request.
    expect(readRounds(70_000, [], { flight: silent, responderTxIdle: [] }).ok).toBe(true);
    expect(readRounds(70_000, [], { flight: silent, responderTxIdle: [0, 400] })).toMatchObject({
      ok: true,
      why: expect.stringMatching(/and 4 timeout\(s\)/),
    });
    // Empty for a moment after each request arrived: it had room and did not answer.
    const spells = [1000, 1100, 71_000, 71_100, 141_000, 141_100, 211_000, 211_100];
    expect(readRounds(70_000, [], { flight: silent, responderTxIdle: spells }).ok).toBe(false);
    // Empty from the second request on (an odd length: still empty at the end): only the first timeout is explained.
    expect(readRounds(70_000, [], { flight: silent, responderTxIdle: [70_600] })).toMatchObject({
      ok: false,
      why: expect.stringMatching(/and 1 timeout\(s\)/),
    });
  });

  it('the latest request since the last response is the one held: earlier ones may have been dropped out of sequence', () => {
    // Each round's request arrives at once and is dropped (the FIFOs empty just after); another
    // request arrives later, and the FIFOs stay full from then until the timer fires.
    const flight = silentFlight({ reqRx: [500, 60_000, 70_500, 130_000, 140_500, 200_000, 210_500, 270_000] });
    const spells = [1000, 1100, 71_000, 71_100, 141_000, 141_100, 211_000, 211_100];
    expect(readRounds(70_000, [], { flight, responderTxIdle: spells })).toMatchObject({ ok: true, why: expect.stringMatching(/and 4 timeout\(s\)/) });
    // The FIFOs empty after the later arrivals too: nothing was held.
    const more = [...spells, 61_000, 61_100, 131_000, 131_100, 201_000, 201_100, 271_000, 271_100].sort((a, b) => a - b);
    expect(readRounds(70_000, [], { flight, responderTxIdle: more }).ok).toBe(false);
  });

  it('a response after the requests answered them: only requests that arrived since the last response are held', () => {
    // Every request answered at once (respTx), the answers lost: a busy responder explains nothing.
    const e = readRounds(70_000, [], { responderTxIdle: [], respLostNs: [600, 70_600, 140_600, 210_600] });
    expect(e.ok).toBe(false);
  });

  it('copies a duplicate made arrive without being sent: counted as sent, they do not hide a frame on the way', () => {
    // An older response and its duplicate arrived before the READ went out; the READ's answers are all still out.
    const flight = silentFlight({ respTx: [-100, 600, 70_600, 140_600, 210_600], respRx: [-50, -40, -30, -20, -10] });
    expect(readRounds(70_000, [], { flight }).ok).toBe(false);
    expect(readRounds(70_000, [], { flight, respCopyNs: [-60, -60, -60, -60] })).toMatchObject({
      ok: true,
      why: expect.stringMatching(/and 4 timeout\(s\)/),
    });
  });

  it('a timer that fired while the answer was on the way counts though the resend went out after the answer arrived', () => {
    // The READ at 0 times out at 65.5 µs; its answer arrives at 66 µs, but the resend waits behind
    // the requester's own traffic until 90 µs (the QP had gone back already). The resend's answer is still out at the end.
    const resends = [{ ns: 90_000, psn: 10 }];
    const tl = timeline([wr({ op: 'read', psnFirst: 10, psnLast: 10, firstPacketNs: 0, retransmissions: resends })]);
    const delay: DelayEvidence = {
      flight: { reqTx: [0, 90_000], reqTxPsn: [10, 10], reqRx: [500, 90_500], respTx: [600, 90_600], respRx: [66_000], resent: new Map([[0, resends]]) },
      timeoutNs: 65_536,
      reqLostNs: [],
      respLostNs: [],
    };
    expect(explainRetryExhausted({ tl, index: 0, budget: 1, faultNs: [], errorNs: 160_000, delay })).toMatchObject({
      ok: true,
      why: expect.stringMatching(/and 2 timeout\(s\)/),
    });
    // Given up before a whole timeout since the resend: that one is not on delay.
    expect(explainRetryExhausted({ tl, index: 0, budget: 1, faultNs: [], errorNs: 150_000, delay }).ok).toBe(false);
  });

  it('a PSN first sent after the round before it ended just below: its resend starts a round of its own', () => {
    // WRITE 10..15: 10..12 sent, resent at 70 µs (a round from 10); 13..15 sent fresh just after;
    // 10..12 acknowledged; 13..15 resent at 80 µs and again at 150 µs: two rounds from 13.
    const resends = [70_000, 70_001, 70_002].map((ns, i) => ({ ns, psn: 10 + i }));
    for (const at of [80_000, 150_000]) for (let k = 0; k < 3; k++) resends.push({ ns: at + k, psn: 13 + k });
    const fresh = [0, 1, 2, 70_010, 70_011, 70_012];
    const freshPsn = [10, 11, 12, 13, 14, 15];
    const tl = timeline([wr({ op: 'write', psnFirst: 10, psnLast: 15, firstPacketNs: 0, retransmissions: resends })]);
    const reqTx = [...fresh, ...resends.map((r) => r.ns)].sort((a, b) => a - b);
    const psnAt = new Map([...fresh.map((ns, i) => [ns, freshPsn[i]!] as const), ...resends.map((r) => [r.ns, r.psn] as const)]);
    const delay: DelayEvidence = {
      flight: { reqTx, reqTxPsn: reqTx.map((ns) => psnAt.get(ns)!), reqRx: [], respTx: [], respRx: [71_000], resent: new Map([[0, resends]]) },
      timeoutNs: 65_536,
      reqLostNs: [],
      respLostNs: [],
    };
    const e = explainRetryExhausted({ tl, index: 0, budget: 2, faultNs: [75_000, 100_000, 160_000], errorNs: 220_000, delay });
    expect(e).toMatchObject({ ok: true, why: expect.stringMatching(/^2 retries from PSN 13/) });
  });

  it('retry_cnt 0: the first timeout ends the QP, explained when the answer was still on the way, in the receive stages included', () => {
    // A READ at PSN 10 sent at 0; its answer comes off the link 6 ns before the timer is due and
    // reaches the transport 40 ns later, after it fired.
    const run = (respRx: number[], rxLatencyNs?: number) => {
      const tl = timeline([wr({ op: 'read', psnFirst: 10, psnLast: 10, firstPacketNs: 0 })]);
      const delay: DelayEvidence = {
        flight: { reqTx: [0], reqTxPsn: [10], reqRx: [500], respTx: [600], respRx, resent: new Map() },
        timeoutNs: 65_536,
        reqLostNs: [],
        respLostNs: [],
        ...(rxLatencyNs === undefined ? {} : { rxLatencyNs }),
      };
      return explainRetryExhausted({ tl, index: 0, budget: 0, faultNs: [], errorNs: 65_600, delay });
    };
    expect(run([65_530], 40)).toMatchObject({ ok: true, why: expect.stringMatching(/and 1 timeout\(s\)/) });
    expect(run([65_530]).ok).toBe(false);
    // Taken long before the timer was due: it restarted the timer, and what fired 65.6 µs after the send was early.
    expect(run([30_000], 40).ok).toBe(false);
  });

  it('answers dropped on the way are losses, not delay: with no fault recorded, not explained', () => {
    const e = readRounds(70_000, [], { respLostNs: [600, 70_600, 140_600, 210_600] });
    expect(e.ok).toBe(false);
  });

  it('an answer that arrived before the timer was due restarts it: that timeout is not on delay', () => {
    // Only the first round's answer is back (at 1 µs); the other three are still out.
    const e = readRounds(70_000, [1000, 400_000]);
    expect(e.ok).toBe(false);
    expect(e.why).toMatch(/and 3 timeout\(s\)/);
  });

  it("resends still in the port FIFO when the QP gives up count as rounds (they are the requester's, not the line's)", () => {
    // On the line only the first transmission was seen; the three resends were handed to the port.
    const sent = [0, 70_000, 140_000, 210_000];
    const tl = timeline([wr({ op: 'read', psnFirst: 10, psnLast: 10, firstPacketNs: 0 })]);
    const flight = {
      reqTx: sent,
      reqTxPsn: [10, 10, 10, 10],
      reqRx: [500],
      respTx: [600],
      respRx: [],
      resent: new Map([[0, sent.slice(1).map((ns) => ({ ns, psn: 10 }))]]),
    };
    const delay: DelayEvidence = { flight, timeoutNs: 65_536, reqLostNs: [], respLostNs: [] };
    expect(explainRetryExhausted({ tl, index: 0, budget: 3, faultNs: [], errorNs: 280_000, delay }).ok).toBe(true);
    expect(explainRetryExhausted({ tl, index: 0, budget: 3, faultNs: [], errorNs: 280_000 }).why).toMatch(/gave up after 0 retransmission round/);
  });

  it('a one-packet round, progress, then timeouts at the next PSN: each resend after a whole timeout of quiet starts a round', () => {
    // WRITE of PSN 45..46 resent as 45 (NAK), 45 (timeout), ACK of 45, then 46 twice on timeouts.
    const resends = [
      { ns: 103_794, psn: 45 },
      { ns: 222_126, psn: 45 },
      { ns: 349_104, psn: 46 },
      { ns: 417_739, psn: 46 },
    ];
    const tl = timeline([wr({ op: 'write', psnFirst: 36, psnLast: 46, firstPacketNs: 2183, retransmissions: resends })]);
    const flight = {
      reqTx: [2183, ...resends.map((r) => r.ns)],
      reqTxPsn: [36, ...resends.map((r) => r.psn)],
      reqRx: [],
      respTx: [],
      respRx: [265_080],
      resent: new Map([[0, resends]]),
    };
    // By PSN alone, 46 follows 45: one round from 46, fewer than retry_cnt 2.
    expect(explainRetryExhausted({ tl, index: 0, budget: 2, faultNs: [80_000, 300_000, 450_000], errorNs: 483_730 }).why).toMatch(
      /gave up after 1 retransmission round/,
    );
    const delay: DelayEvidence = { flight, timeoutNs: 65_536, reqLostNs: [], respLostNs: [] };
    expect(explainRetryExhausted({ tl, index: 0, budget: 2, faultNs: [80_000, 300_000, 450_000], errorNs: 483_730, delay })).toMatchObject({
      ok: true,
      why: expect.stringMatching(/2 retries from PSN 46/),
    });
  });

  it('the packets of one round handed over at one instant after a long quiet are one round, not one each', () => {
    const resends = [70_000, 140_000, 210_000].flatMap((ns) => [10, 11].map((psn) => ({ ns, psn })));
    const tl = timeline([wr({ op: 'send', psnFirst: 10, psnLast: 11, firstPacketNs: 0, retransmissions: resends })]);
    const flight = {
      reqTx: [0, 0, ...resends.map((r) => r.ns)],
      reqTxPsn: [10, 11, ...resends.map((r) => r.psn)],
      reqRx: [],
      respTx: [],
      respRx: [],
      resent: new Map([[0, resends]]),
    };
    const delay: DelayEvidence = { flight, timeoutNs: 65_536, reqLostNs: [], respLostNs: [] };
    const e = explainRetryExhausted({ tl, index: 0, budget: 3, faultNs: [1, 70_001, 140_001, 210_001], errorNs: 280_000, delay });
    expect(e).toMatchObject({ ok: true, why: expect.stringMatching(/^3 retries from PSN 10/) });
  });

  it('a NAK in the quiet time: that round answered the NAK, not a timeout', () => {
    const naks: QpTimeline['events'] = [1, 2].map((k) => ({ ns: k * 70_000 - 100, kind: 'nak-psn-seq' as const, psn: 10, syndrome: 0x60 }));
    const e = readRounds(70_000, [400_000], {}, naks);
    expect(e.ok).toBe(false);
    expect(e.why).toMatch(/and 2 timeout\(s\)/);
  });
});

/**
 * A 2-packet SEND at PSN 10..11, retry_cnt 1, timeout 65.536 µs: PSN 10 lost (a fault at 100), its
 * NAK back at 5 µs, 10 resent at 5.04 µs and 11 only at `secondNs` (the port's FIFO was full), and
 * neither arrived by the time the QP gave up at `errorNs` (campaign seed 301066).
 */
function resentAsTheFifoDrains(secondNs: number, errorNs: number, respRx: number[] = []) {
  const resends = [
    { ns: 5_040, psn: 10 },
    { ns: secondNs, psn: 11 },
  ];
  const naks: QpTimeline['events'] = [{ ns: 5_000, kind: 'nak-psn-seq', psn: 10, syndrome: 0x60 }];
  const tl = timeline([wr({ op: 'send', psnFirst: 10, psnLast: 11, firstPacketNs: 0, retransmissions: [] })], naks);
  const delay: DelayEvidence = {
    flight: {
      reqTx: [0, 0, 5_040, secondNs],
      reqTxPsn: [10, 11, 10, 11],
      reqRx: [500, 600],
      respTx: [700],
      respRx: [5_000, ...respRx],
      resent: new Map([[0, resends]]),
    },
    timeoutNs: 65_536,
    reqLostNs: [],
    respLostNs: [],
  };
  return explainRetryExhausted({ tl, index: 0, budget: 1, faultNs: [100], errorNs, delay });
}

describe('the judge of a round whose packets go out as the FIFO makes room (the timer runs from its first)', () => {
  it('a timeout after the round began, its later packets handed over since: on delay, explained', () => {
    const e = resentAsTheFifoDrains(20_000, 5_040 + 65_536 + 500);
    expect(e).toMatchObject({ ok: true, why: expect.stringMatching(/1 fault\(s\).* and 1 timeout\(s\) expired/) });
  });

  it('given up less than a timeout after the round began: not explained, however late its last packet went', () => {
    expect(resentAsTheFifoDrains(20_000, 5_040 + 60_000).ok).toBe(false);
    expect(resentAsTheFifoDrains(1_000, 5_040 + 60_000).ok).toBe(false);
  });

  it('a response during the round (a duplicate: one that made progress would have moved the next round on) does not restart the timer', () => {
    expect(resentAsTheFifoDrains(20_000, 5_040 + 65_536 + 500, [30_000]).ok).toBe(true);
  });
});

describe('the judge of a NAK for the PSN the requester was about to send', () => {
  /**
   * A 4-packet WRITE at PSN 10..13, retry_cnt 2: 11 and 12 lost; NAK(11) resends from 11, and NAK(12)
   * comes back after 11 went again but before 12 did, so the resend of 12 follows on from 11's. Then
   * two timeouts from 12 (the resent 12 lost twice), the second the last.
   */
  function nakedAhead(events: QpTimeline['events']) {
    const resends = [
      { ns: 5_040, psn: 11 },
      { ns: 5_100, psn: 12 },
      { ns: 5_150, psn: 13 },
      { ns: 70_640, psn: 12 },
      { ns: 70_700, psn: 13 },
    ];
    const tl = timeline([wr({ op: 'write', psnFirst: 10, psnLast: 13, firstPacketNs: 0, retransmissions: resends })], events);
    return explainRetryExhausted({ tl, index: 0, budget: 2, faultNs: [100, 101, 5_120, 70_660], errorNs: 137_000 });
  }
  const nak = (ns: number, psn: number) => ({ ns, kind: 'nak-psn-seq' as const, psn, syndrome: 0x60 });

  it('the resend of the NAKed PSN after the NAK starts a round, though it follows on: 2 rounds from 12, explained', () => {
    expect(nakedAhead([nak(5_000, 11), nak(5_060, 12)])).toMatchObject({ ok: true, why: expect.stringMatching(/^2 retries from PSN 12/) });
  });

  it('a NAK for 12 just before 11 went again (11 already in the transmit stages) is answered by the next send of 12 all the same', () => {
    expect(nakedAhead([nak(5_000, 11), nak(5_020, 12)])).toMatchObject({ ok: true, why: expect.stringMatching(/^2 retries from PSN 12/) });
  });

  it('without that NAK the resend of 12 is part of the round from 11: one round from 12, not explained', () => {
    expect(nakedAhead([nak(5_000, 11)]).why).toMatch(/gave up after 1 retransmission round/);
  });
});

describe('the judge of an exhausted RNR retry budget', () => {
  const send = (retrans: number[]) =>
    timeline(
      [wr({ op: 'send', psnFirst: 40, psnLast: 40, firstPacketNs: 100, retransmissions: retrans.map((ns) => ({ ns, psn: 40 })) })],
      retrans
        .map((ns) => ({ ns: ns - 50, kind: 'rnr-nak' as const, psn: 40, syndrome: 0x21 }))
        .concat([{ ns: 9000, kind: 'rnr-nak', psn: 40, syndrome: 0x21 }]),
    );

  it('rnr_retry + 1 RNR NAKs in a row while no receive was posted: explained', () => {
    const e = explainRnrExhausted({ tl: send([1000, 2000]), index: 0, rnrRetry: 2, heldReceives: () => 0 });
    expect(e).toEqual({ ok: true, why: expect.stringMatching(/3 RNR NAKs for PSN 40 in a row \(rnr_retry 2\)/) });
  });

  it('a count of receives held below zero is none held: explained', () => {
    expect(explainRnrExhausted({ tl: send([1000, 2000]), index: 0, rnrRetry: 2, heldReceives: () => -1 }).ok).toBe(true);
  });

  it('fewer RNR NAKs than rnr_retry + 1: not explained', () => {
    expect(explainRnrExhausted({ tl: send([1000]), index: 0, rnrRetry: 2, heldReceives: () => 0 }).ok).toBe(false);
  });

  it('an RNR NAK while the responder held a receive posted before the request left: not explained', () => {
    const e = explainRnrExhausted({ tl: send([1000, 2000]), index: 0, rnrRetry: 2, heldReceives: (tx) => (tx >= 1000 ? 1 : 0) });
    expect(e.ok).toBe(false);
    expect(e.why).toMatch(/held 1 receive/);
  });

  it('a NAK a fault brought in late may answer an older transmission no other NAK answered; without the fault, or with none left, it may not', () => {
    // 40 sent at 100, 200 and 5000; RNR NAKs arrive at 900 and 9000; a receive posted at 3000.
    const tl = timeline(
      [wr({ op: 'send', psnFirst: 40, psnLast: 40, firstPacketNs: 100, retransmissions: [200, 5000].map((ns) => ({ ns, psn: 40 })) })],
      [900, 9000].map((ns) => ({ ns, kind: 'rnr-nak' as const, psn: 40, syndrome: 0x21 })),
    );
    const heldReceives = (tx: number) => (tx >= 3000 ? 1 : 0);
    expect(explainRnrExhausted({ tl, index: 0, rnrRetry: 1, heldReceives, displacingNs: [150] })).toEqual({
      ok: true,
      why: expect.stringMatching(/1 of them late, answering an older transmission/),
    });
    expect(explainRnrExhausted({ tl, index: 0, rnrRetry: 1, heldReceives }).why).toMatch(/at 9000 ns while the responder held 1 receive/);
    // A fault after the NAK excuses nothing.
    expect(explainRnrExhausted({ tl, index: 0, rnrRetry: 1, heldReceives, displacingNs: [9500] }).ok).toBe(false);
    // Every older transmission answered already: the late NAK has nothing earlier to answer.
    const e = explainRnrExhausted({ tl: send([1000, 2000]), index: 0, rnrRetry: 2, heldReceives: (tx) => (tx >= 1500 ? 1 : 0), displacingNs: [150] });
    expect(e.ok).toBe(false);
  });

  it('rnr_retry 7 retries for ever', () => {
    expect(explainRnrExhausted({ tl: send([1000, 2000]), index: 0, rnrRetry: 7, heldReceives: () => 0 }).ok).toBe(false);
  });
});

/** Two hosts, one RC QP; `traffic` and `faults` as given. */
function scenarioWith(qp: Record<string, unknown>, traffic: Record<string, unknown>[], faults: Record<string, unknown>[] = []) {
  return {
    name: 'exhaustion',
    seed: 7,
    duration: '50ms',
    qps: [{ name: 'rc0', type: 'RC', mtu: 1024, timeout: 4, retry_cnt: 2, rnr_retry: 7, ...qp }],
    traffic,
    faults,
  };
}

describe('scenarios that run a QP out of retries', () => {
  // After its first 3 requests, the cable carries no more of a's requests: every retry of the 4th is lost.
  const blackhole = [{ action: 'drop', direction: 'a->b', match: { after: 3 } }];
  const writes = { qp: 'rc0', from: 'a', op: 'write', size: 1024, count: 6, depth: 6 };

  it('retry_cnt 2 and a cable that stops: RETRY_EXC_ERR explained, later WRs flushed, no failure', async () => {
    const r = await run(scenarioWith({}, [{ ...writes, expect: 'success-or-exhausted' }], blackhole));
    expect(r.verify).toEqual([]);
    expect(r.exhausted).toHaveLength(1);
    expect(r.exhausted[0]).toMatchObject({ qp: 'rc0', from: 'a', wr: 3, status: 'IBV_WC_RETRY_EXC_ERR' });
    expect(r.exhausted[0]!.why).toMatch(/2 retries from PSN \d+ without progress \(retry_cnt 2\)/);
    const t = r.traffic[0]!;
    expect(t.ok).toBe(3);
    expect(t.errors).toEqual({ IBV_WC_RETRY_EXC_ERR: 1, IBV_WC_WR_FLUSH_ERR: 2 });
    expect(r.counters.rnic0!['1']!.retry_exceeded_err).toBe(1);
    expect(judge(r)).toMatchObject({ ok: true, exhausted: 1 });
  });

  it('the same with expect success: a failure', async () => {
    const r = await run(scenarioWith({}, [{ ...writes, expect: 'success' }], blackhole));
    expect(r.exhausted).toEqual([]);
    expect(r.findings.map((f) => `${f.kind} ${f.status}`)).toEqual(['error-completion IBV_WC_RETRY_EXC_ERR']);
    expect(judge(r).ok).toBe(false);
  });

  it('rxe retries for ever at retry_cnt 7: the cable that stops is a stall, not an explained exhaustion', async () => {
    const r = await run({
      ...scenarioWith({ retry_cnt: 7 }, [{ ...writes, expect: 'success-or-exhausted' }], blackhole),
      profile: 'rxe',
      watchdog: '5ms',
    });
    expect(r.exhausted).toEqual([]);
    expect(r.findings.map((f) => f.kind)).toEqual(['stall']);
  });

  it('rnr_retry 1 and receives that come too late: RNR_RETRY_EXC_ERR explained; the reverse stream on the QP in error follows from it', async () => {
    const r = await run(
      scenarioWith({ rnr_retry: 1, min_rnr_timer: 1 }, [
        { qp: 'rc0', from: 'a', op: 'send', size: 100, count: 2, recvStartNs: '5ms', expect: 'success-or-exhausted' },
        // b's writes start once a's QP is in the error state: they time out against it.
        { qp: 'rc0', from: 'b', op: 'write', size: 100, count: 2, startNs: '1ms', expect: 'success-or-exhausted' },
      ]),
    );
    expect(r.verify).toEqual([]);
    expect(r.exhausted.map((x) => `${x.from} ${x.status}`)).toEqual(['a IBV_WC_RNR_RETRY_EXC_ERR']);
    expect(r.exhausted[0]!.why).toMatch(/2 RNR NAKs for PSN \d+ in a row \(rnr_retry 1\), each while no receive was posted/);
    // No fault explains b's timeout on its own: a's QP in the error state does, so it is a consequence.
    expect(r.consequences.map((f) => `${f.from} ${f.kind} ${f.status}`)).toEqual(['b error-completion IBV_WC_RETRY_EXC_ERR']);
    expect(judge(r).ok).toBe(true);
  });

  it('a receive posted in time: no RNR exhaustion to explain, the SENDs succeed', async () => {
    const r = await run(
      scenarioWith({ rnr_retry: 1, min_rnr_timer: 1 }, [{ qp: 'rc0', from: 'a', op: 'send', size: 100, count: 2, expect: 'success-or-exhausted' }]),
    );
    expect(r.verify).toEqual([]);
    expect(r.exhausted).toEqual([]);
    expect(r.traffic[0]!.ok).toBe(2);
  });
});
