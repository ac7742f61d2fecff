/**
 * The transport's loss recovery on the simulator, checked on the wire (the
 * captures), in the counters and in the completions: a lost request packet
 * (NAK-sequence, go-back-N), lost ACKs (local ACK timeout), retries
 * exhausted (RETRY_EXC_ERR, QP in ERR, the rest flushed), RNR NAK (the RNR
 * timer), seeded random loss over several seeds, and the watchdog.
 */
import { describe, expect, it } from 'vitest';
import { localAckTimeoutNs, rnrTimerNs } from '../../src/pipeline/timer-tables.js';
import { ctr, rows, run, scenarioJson } from './helpers.js';

const range = (a: number, b: number) => Array.from({ length: b - a }, (_, i) => a + i);
const isWrite = (op: string) => op.startsWith('RC_RDMA_WRITE');
const NAK_PSN_SEQ = 0x60;

describe('a lost request packet: NAK-sequence and go-back-N', () => {
  it('drop the 5th packet of a 16-packet WRITE: one NAK-sequence for its PSN, resent from there, WRITE succeeds', async () => {
    const r = await run(scenarioJson('drop-5th-packet'));
    expect(r.verify).toEqual([]);
    const a = rows(r.captures['rnic0:1']!);
    const b = rows(r.captures['rnic1:1']!);
    // The requester sent PSN 100..115, then 104..115 again (go-back-N from the NAKed PSN).
    expect(a.filter((x) => isWrite(x.op)).map((x) => x.psn)).toEqual([...range(100, 116), ...range(104, 116)]);
    // The responder never saw the first 104; everything after it until the resend was out of sequence.
    expect(b.filter((x) => isWrite(x.op)).map((x) => x.psn)).toEqual([...range(100, 104), ...range(105, 116), ...range(104, 116)]);
    // Exactly one NAK-sequence, carrying the expected PSN 104, then the final ACK of 115.
    const acks = a.filter((x) => x.op === 'RC_ACKNOWLEDGE');
    expect(acks.map((x) => [x.psn, x.syndrome])).toEqual([
      [104, NAK_PSN_SEQ],
      [115, 0x1f],
    ]);
    // The resend starts after the NAK arrived at the requester, and ends before the ACK.
    const resent = a.filter((x) => isWrite(x.op)).slice(16);
    expect(resent[0]!.ns).toBeGreaterThan(acks[0]!.ns);
    expect(acks[1]!.ns).toBeGreaterThan(resent.at(-1)!.ns);
    // Counters on both sides (rxe and mlx5 names).
    expect(ctr(r, 'rnic1', 'out_of_seq_request')).toBe(1);
    expect(ctr(r, 'rnic1', 'out_of_sequence')).toBe(11);
    expect(ctr(r, 'rnic0', 'rcvd_seq_err')).toBe(1);
    expect(ctr(r, 'rnic0', 'packet_seq_err')).toBe(1);
    expect(ctr(r, 'rnic0', 'local_ack_timeout_err')).toBe(0);
    // The timeline tells the same story.
    const [w] = r.timeline.qps[0]!.wrs;
    expect(w).toMatchObject({ status: 'IBV_WC_SUCCESS', psnFirst: 100, psnLast: 115 });
    expect(w!.retransmissions.map((x) => x.psn)).toEqual(range(104, 116));
    expect(r.timeline.qps[0]!.events.map((e) => [e.kind, e.psn])).toEqual([['nak-psn-seq', 104]]);
    expect(r.qpStates.q0).toEqual({ a: 'RTS', b: 'RTS' });
  });
});

describe('lost ACKs: the local ACK timeout', () => {
  it('the WRITE is resent every 4.096 µs × 2^timeout of virtual time until an ACK gets through', async () => {
    const r = await run(scenarioJson('ack-loss-timeout'));
    expect(r.verify).toEqual([]);
    const T = localAckTimeoutNs(8);
    expect(T).toBe(1_048_576);
    const writes = rows(r.captures['rnic0:1']!).filter((x) => isWrite(x.op));
    expect(writes.map((x) => x.psn)).toEqual([4096, 4096, 4096, 4096]);
    // Each resend exactly one timeout after the previous send (the timer restarts when the packet is built).
    for (let i = 1; i < writes.length; i++) expect(writes[i]!.ns - writes[i - 1]!.ns).toBe(T);
    expect(ctr(r, 'rnic0', 'local_ack_timeout_err')).toBe(3);
    expect(ctr(r, 'rnic0', 'retry_exceeded_err')).toBe(0);
    expect(ctr(r, 'rnic1', 'duplicate_request')).toBe(3);
    const [w] = r.timeline.qps[0]!.wrs;
    expect(w!.status).toBe('IBV_WC_SUCCESS');
    expect(w!.retransmissions).toHaveLength(3);
    expect(w!.completedNs!).toBeGreaterThan(3_000_000);
  });

  it('retries exhausted: IBV_WC_RETRY_EXC_ERR, the QP in ERR, the rest flushed in order', async () => {
    const r = await run(scenarioJson('retry-exceeded'));
    expect(r.verify).toEqual([]);
    const wrs = r.timeline.qps[0]!.wrs;
    expect(wrs.map((w) => w.status)).toEqual(['IBV_WC_RETRY_EXC_ERR', 'IBV_WC_WR_FLUSH_ERR', 'IBV_WC_WR_FLUSH_ERR', 'IBV_WC_WR_FLUSH_ERR']);
    expect(wrs.every((w) => w.completion === 'signaled')).toBe(true);
    // retry_cnt 2: the first packet went out 1 + 2 times, each a timeout (262.144 µs) apart.
    const T = localAckTimeoutNs(6);
    const first = rows(r.captures['rnic0:1']!).filter((x) => x.psn === 4096 && isWrite(x.op));
    expect(first).toHaveLength(3);
    expect(first[1]!.ns - first[0]!.ns).toBe(T);
    expect(first[2]!.ns - first[1]!.ns).toBe(T);
    // The error comes at the third expiry.
    expect(wrs[0]!.completedNs! - first[2]!.ns).toBeGreaterThanOrEqual(T - 3000);
    expect(r.qpStates.q0!.a).toBe('ERR');
    expect(ctr(r, 'rnic0', 'retry_exceeded_err')).toBe(1);
    expect(ctr(r, 'rnic0', 'local_ack_timeout_err')).toBe(2);
    expect(ctr(r, 'rnic0', 'req_cqe_flush_error')).toBe(3);
  });
});

describe('RNR NAK', () => {
  it('the requester waits the RNR timer of the NAK (IBTA table) before it sends again', async () => {
    const r = await run(scenarioJson('rnr'));
    expect(r.verify).toEqual([]);
    const a = rows(r.captures['rnic0:1']!);
    const rnr = a.filter((x) => x.op === 'RC_ACKNOWLEDGE' && (x.syndrome & 0x60) === 0x20);
    expect(rnr.length).toBeGreaterThanOrEqual(2);
    // min_rnr_timer 4: the NAK carries timer code 4, 40 µs in the IBTA table.
    expect(rnr.every((x) => (x.syndrome & 0x1f) === 4)).toBe(true);
    expect(rnrTimerNs(4)).toBe(40_000);
    const sends = a.filter((x) => x.op === 'RC_SEND_ONLY' && x.psn === 4096);
    for (const nak of rnr) {
      const next = sends.find((s) => s.ns > nak.ns)!;
      // At least the timer; no more than the timer plus the device's own latency (receive stages, DMA).
      expect(next.ns - nak.ns).toBeGreaterThanOrEqual(40_000);
      expect(next.ns - nak.ns).toBeLessThan(40_000 + 5_000);
    }
    expect(ctr(r, 'rnic0', 'rcvd_rnr_err')).toBe(rnr.length);
    expect(ctr(r, 'rnic1', 'send_rnr_err')).toBe(rnr.length);
    // Receives are posted at 100 µs: the first success comes after that.
    expect(r.timeline.qps[0]!.wrs[0]!.completedNs!).toBeGreaterThan(100_000);
    expect(r.traffic[0]!.ok).toBe(4);
  });
});

describe('seeded random loss', () => {
  for (const p of [0.01, 0.04, 0.1]) {
    it(`${p * 100}% loss both ways, three seeds: every WR completes once, in order, bytes intact, nothing hangs`, async () => {
      for (const seed of [11, 12, 13]) {
        const json = scenarioJson('random-loss');
        json.seed = seed;
        (json.faults as { probability: number }[])[0]!.probability = p;
        json.capture = [];
        for (const t of json.traffic as { count: number }[]) t.count = 60;
        const r = await run(json);
        expect(r.verify, `seed ${seed}`).toEqual([]);
        expect(r.endedBy).toBe('complete');
        expect(r.stalls).toEqual([]);
        for (const q of r.timeline.qps) {
          expect(q.wrs).toHaveLength(60);
          let last = -1;
          for (const w of q.wrs) {
            expect(w.status, `${q.qp} WR ${w.index}`).toBe('IBV_WC_SUCCESS');
            expect(w.completedNs!).toBeGreaterThanOrEqual(last);
            last = w.completedNs!;
          }
        }
        const dropped = r.sim.links.l0!.faults!.dropped;
        expect(dropped).toBeGreaterThan(0);
      }
    });
  }
});

describe('the watchdog', () => {
  it('a QP with no ACK timer (timeout 0) that lost a packet is reported with its state, and the run ends', async () => {
    const r = await run(
      {
        seed: 1,
        duration: '50ms',
        watchdog: '2ms',
        qps: [{ name: 'q0', timeout: 0 }],
        faults: [{ action: 'drop', direction: 'a->b', match: { opcode: 'write', count: 1 } }],
        traffic: [{ qp: 'q0', op: 'write', size: 1000, count: 1 }],
      },
      { faultHits: true },
    );
    expect(r.stalls).toHaveLength(1);
    expect(r.stalls[0]).toMatchObject({ qp: 'q0', state: 'RTS', outstanding: 1, lastProgressNs: 0 });
    expect(r.stalls[0]!.atNs).toBe(2_000_000);
    // The one drop (at 0) is the fault behind the stall, and the finding says so.
    expect(r.verify, JSON.stringify(r.verify)).toContain(
      'q0: stalled (watchdog): no progress for 2.000 ms (since 0.000 ms); faults acted on 1 of its frames in that time',
    );
    expect(r.endNs).toBeLessThan(50_000_000);
  });

  it('the run ends at its duration whatever is still outstanding', async () => {
    const r = await run(
      {
        seed: 1,
        duration: '300us',
        qps: [{ name: 'q0', timeout: 14 }],
        faults: [{ action: 'drop', direction: 'b->a', match: { opcode: 'ack' } }],
        traffic: [{ qp: 'q0', op: 'write', size: 1000, count: 2 }],
      },
      { faultHits: true },
    );
    expect(r.endedBy).toBe('duration');
    expect(r.endNs).toBe(300_000);
    expect(r.verify.join('\n')).toContain('still outstanding');
    // And how much of that the faults did: every ACK dropped since the WRITEs went out.
    expect(r.verify.join('\n')).toMatch(
      /^q0: 2 WRs still outstanding when the run ended \(duration\); last progress at 0\.\d{3} ms; faults acted on [1-9]\d* of its frames since$/m,
    );
  });
});

/*
 * Regressions found by running the simulator with faults (src/pipeline/completer.ts). Each
 * scenario ended in RETRY_EXC_ERR on the completer as it was before the fix.
 */
describe('completer regressions under loss and reordering', () => {
  it('a lost READ response with more READs in flight: one implied NAK and one retry, not one per response still arriving', async () => {
    const r = await run({
      seed: 1,
      duration: '20ms',
      qps: [{ name: 'r', mtu: 1024, timeout: 8, retry_cnt: 3 }],
      // READs of 4000 bytes: FIRST, MIDDLE, MIDDLE, LAST. Lose the 2nd MIDDLE of the 3rd READ.
      faults: [{ action: 'drop', direction: 'b->a', match: { opcode: 'RC_RDMA_READ_RESPONSE_MIDDLE', after: 5, count: 1 } }],
      traffic: [{ qp: 'r', op: 'read', size: 4000, count: 8, depth: 8 }],
    });
    expect(r.verify).toEqual([]);
    expect(ctr(r, 'rnic0', 'implied_nak_seq_err')).toBe(1);
    expect(ctr(r, 'rnic0', 'retry_exceeded_err')).toBe(0);
  });

  it('an ATOMIC whose ACK was lost, then a NAK-sequence beyond it: the ATOMIC is asked again (and replayed, not executed twice)', async () => {
    const r = await run({
      seed: 1,
      duration: '20ms',
      qps: [{ name: 'f', mtu: 1024, timeout: 8, retry_cnt: 3 }],
      faults: [
        // The 6th FETCH_ADD (PSN 0x1005) is executed but its answer is lost...
        { action: 'drop', direction: 'b->a', match: { opcode: 'atomic-ack', psn: [0x1005, 0x1005], count: 1 } },
        // ... and the 7th request is lost, so the responder NAKs PSN 0x1006.
        { action: 'drop', direction: 'a->b', match: { opcode: 'atomic', psn: [0x1006, 0x1006], count: 1 } },
      ],
      traffic: [{ qp: 'f', op: 'fetch_add', count: 12, depth: 4 }],
    });
    expect(r.verify).toEqual([]);
    expect(r.timeline.qps[0]!.events.map((e) => [e.kind, e.psn])).toEqual([['nak-psn-seq', 0x1006]]);
    // The 6th was sent again and the responder answered it from its saved result (duplicate_request).
    expect(r.timeline.qps[0]!.wrs[5]!.retransmissions.length).toBeGreaterThanOrEqual(1);
    expect(ctr(r, 'rnic1', 'duplicate_request')).toBeGreaterThanOrEqual(1);
  });

  it('an ACK that covers a WRITE being resent after a NAK retires it (reordered LAST packet)', async () => {
    const r = await run({
      seed: 1,
      duration: '20ms',
      capture: ['rnic1:1'],
      qps: [
        { name: 'w', mtu: 1024, timeout: 8, retry_cnt: 3 },
        { name: 'bulk', mtu: 4096 },
      ],
      // WRITEs of 3000 bytes on QP 2: 3 packets each from PSN 0x1000. The LAST of the 2nd WRITE (0x1005)
      // arrives after the 3rd WRITE. A bulk stream on QP 3 keeps rnic0's transmit path full, so the
      // resend after the first NAK waits while the ACK for 0x1005 comes in.
      faults: [{ action: 'reorder', direction: 'a->b', reorderDepth: 3, match: { qpn: 2, psn: [0x1005, 0x1005], count: 1 } }],
      traffic: [
        { qp: 'w', op: 'write', size: 3000, count: 6, depth: 4 },
        { qp: 'bulk', op: 'write', size: 65536, count: 40, depth: 16 },
      ],
    });
    expect(r.verify).toEqual([]);
    const arrived = rows(r.captures['rnic1:1']!)
      .filter((x) => isWrite(x.op) && x.destQp === 2)
      .map((x) => x.psn);
    expect(arrived.slice(0, 10)).toEqual([0x1000, 0x1001, 0x1002, 0x1003, 0x1004, 0x1006, 0x1007, 0x1008, 0x1005, 0x1009]);
    // NAK 0x1005 (gap), ACK 0x1005 (the late LAST), NAK 0x1006 (the next gap): no error, no timeout needed.
    expect(r.timeline.qps[0]!.events.map((e) => [e.kind, e.psn])).toEqual([
      ['nak-psn-seq', 0x1005],
      ['nak-psn-seq', 0x1006],
    ]);
    expect(ctr(r, 'rnic0', 'local_ack_timeout_err')).toBe(0);
  });

  it('ACK timeouts while the requester waits out an RNR NAK spend no retries (it sends nothing meanwhile)', async () => {
    // Campaign default, seed 810828 (profile ibta, retry_cnt 3, timeout 1 = 8.2 µs), shrunk: a READ,
    // then a 6-packet SEND whose receive is posted at 21.8 µs. The SEND gets an RNR NAK (PSN +1, RNR
    // timer 240 µs); a delayed copy of that packet then reaches the responder after the receive is
    // posted and it NAKs the next gap (PSN +2), which arms the ACK timer while the requester still waits
    // out the RNR timer, sending nothing. Before the fix three ACK timeouts in that wait spent
    // retry_cnt: IBV_WC_RETRY_EXC_ERR at 58 µs. Now the resend after the RNR timer completes the SEND.
    const psn = 5611860;
    const delay = (dir: string, opcode: number, p: number, after = 0) => ({
      action: 'delay',
      direction: dir,
      match: { opcode, qpn: 2, psn: [p, p], ...(after ? { after } : {}), count: 1 },
      delayNs: 15646,
    });
    const r = await run({
      seed: 810828,
      duration: '250ms',
      profile: 'ibta',
      qps: [
        {
          name: 'rc3',
          mtu: 256,
          psn_a: psn,
          psn_b: 3892958,
          timeout: 1,
          retry_cnt: 3,
          rnr_retry: 3,
          min_rnr_timer: 9,
          max_send_wr: 2,
          max_recv_wr: 1,
          cq_depth: 2,
        },
      ],
      faults: [delay('a->b', 12, psn), delay('b->a', 17, psn + 1), delay('a->b', 0, psn + 1, 2), delay('a->b', 1, psn + 3, 2)],
      traffic: [
        {
          qp: 'rc3',
          from: 'a',
          depth: 2,
          wrs: [
            { op: 'read', size: 1 },
            { op: 'send', size: 1458 },
          ],
          recvDepth: 1,
          recvStartNs: 21785,
        },
      ],
    });
    expect(r.verify).toEqual([]);
    const tl = r.timeline.qps[0]!;
    expect(tl.events.map((e) => [e.kind, e.psn])).toEqual([
      ['nak-psn-seq', psn],
      ['rnr-nak', psn + 1],
      ['nak-psn-seq', psn + 2],
    ]);
    expect(tl.wrs.map((w) => w.status)).toEqual(['IBV_WC_SUCCESS', 'IBV_WC_SUCCESS']);
    // Completed by the resend after the RNR timer (240 µs after the RNR NAK), not before it.
    const rnrAt = tl.events[1]!.ns;
    expect(tl.wrs[1]!.completedNs! - rnrAt).toBeGreaterThan(rnrTimerNs(9));
    expect(ctr(r, 'rnic0', 'retry_exceeded_err')).toBe(0);
  });
});
