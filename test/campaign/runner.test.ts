/**
 * The scenario runner's mixed work requests (`wrs`) and the checks the
 * campaign relies on, on the real model in the simulator.
 */
import { describe, expect, it } from 'vitest';
import { parseScenario } from '../../src/scenario/scenario.js';
import { runScenario } from '../../src/scenario/scenario-runner.js';
import { buffer, closeHosts, guardDamage, GUARD_BYTES, openHosts } from '../../src/scenario/scenario-setup.js';
import { currentModel, startSimModel, stopModel } from '../../src/boot.js';
import { ALL_RC } from './all-ops.js';

function mixed(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    seed: 11,
    duration: '50ms',
    qps: [
      { name: 'rc0', mtu: 1024, psn_a: 0xfffff0, psn_b: 12_000_000, timeout: 6, max_inline_data: 64 },
      { name: 'uc0', type: 'UC', mtu: 512, psn_a: 0x900000 },
      { name: 'ud0', type: 'UD', mtu: 1024 },
    ],
    traffic: [
      { qp: 'rc0', from: 'a', depth: 4, wrs: ALL_RC },
      { qp: 'rc0', from: 'b', depth: 2, recvDepth: 2, recvStartNs: '20us', wrs: [...ALL_RC].reverse() },
      {
        qp: 'uc0',
        depth: 3,
        wrs: [
          { op: 'send', size: 1200 },
          { op: 'write_imm', size: 10 },
          { op: 'write', size: 700 },
          { op: 'send_imm', size: 5 },
        ],
      },
      {
        qp: 'ud0',
        depth: 3,
        wrs: [
          { op: 'send', size: 1000 },
          { op: 'send_imm', size: 0 },
          { op: 'send', size: 16, signaled: false },
          { op: 'send', size: 1 },
        ],
      },
    ],
    ...extra,
  };
}

describe('mixed work requests', () => {
  it('every op on one RC QP both ways (PSNs past 2^23, receives late one way), UC and UD: all checks pass', async () => {
    const r = await runScenario(parseScenario(mixed()));
    expect(r.verify).toEqual([]);
    expect(r.findings).toEqual([]);
    expect(r.endedBy).toBe('complete');
    const t = r.traffic;
    expect(t.map((x) => [x.qp, x.from, x.op, x.ok])).toEqual([
      ['rc0', 'a', 'mixed', 11],
      ['rc0', 'b', 'mixed', 11],
      ['uc0', 'a', 'mixed', 4],
      ['ud0', 'a', 'mixed', 4],
    ]);
    expect(t[1]!.naks['rnr-nak'] ?? 0, 'a SEND met the late receives').toBeGreaterThan(0);
    expect(t[0]!.receives).toBe(4);
    // The timeline knows each WR's own op and size.
    expect(r.timeline.qps[0]!.wrs.map((w) => w.op)).toEqual(ALL_RC.map((w) => w.op));
    expect((r.timeline.qps[0]!.wrs[8]!.psnLast - r.timeline.qps[0]!.wrs[8]!.psnFirst) & 0xffffff, 'a 12000-byte WRITE at MTU 1024').toBe(11);
  });

  it('the same under 5% loss, corruption, duplication, reordering and delay both ways', async () => {
    const faults = [
      { action: 'drop', probability: 0.05 },
      { action: 'corrupt', probability: 0.05 },
      { action: 'duplicate', probability: 0.05 },
      { action: 'reorder', probability: 0.05, reorderDepth: 2 },
      { action: 'delay', probability: 0.05, delayNs: '3us' },
    ];
    for (const seed of [1, 2, 3]) {
      const r = await runScenario(parseScenario(mixed({ seed, faults, profile: { retryCnt7Infinite: true } })));
      expect(r.verify, `seed ${seed}`).toEqual([]);
      expect(r.sim.links.l0!.faults!.dropped, `seed ${seed}`).toBeGreaterThan(0);
    }
  });

  it('UD and UC receives are matched to their messages however the wire reorders and duplicates them (600 SENDs each, 0-byte ones among them)', async () => {
    const sends = Array.from({ length: 600 }, (_, i) => ({ op: 'send', size: i % 7 === 0 ? 0 : 16 + (i % 5) }));
    const r = await runScenario(
      parseScenario({
        seed: 5,
        duration: '50ms',
        qps: [
          { name: 'ud0', type: 'UD', mtu: 1024 },
          { name: 'uc0', type: 'UC', mtu: 1024 },
        ],
        faults: [
          { action: 'reorder', probability: 0.2, reorderDepth: 8 },
          { action: 'duplicate', probability: 0.1 },
        ],
        traffic: [
          { qp: 'ud0', depth: 16, recvDepth: 64, wrs: sends },
          { qp: 'uc0', depth: 16, recvDepth: 64, wrs: sends },
        ],
      }),
    );
    expect(r.verify).toEqual([]);
    const ud = r.traffic.find((t) => t.qp === 'ud0')!;
    expect(ud.ok).toBe(600);
    expect(r.sim.links.l0!.faults!.held).toBeGreaterThan(100);
    expect(r.sim.links.l0!.faults!.duplicated).toBeGreaterThan(50);
  });

  it('a WR that must fail is a finding with its class parts: QP type, kind, status', async () => {
    const r = await runScenario(
      parseScenario({
        duration: '10ms',
        qps: [{ name: 'q', mtu: 1024, timeout: 4, retry_cnt: 0 }],
        faults: [{ action: 'drop', direction: 'a->b', match: { opcode: 'write' } }],
        traffic: [
          {
            qp: 'q',
            depth: 2,
            wrs: [
              { op: 'send', size: 10 },
              { op: 'write', size: 100 },
              { op: 'read', size: 10 },
            ],
          },
        ],
      }),
    );
    const first = r.findings[0]!;
    expect(first).toMatchObject({ kind: 'error-completion', qp: 'q', type: 'RC', op: 'write', status: 'IBV_WC_RETRY_EXC_ERR' });
    expect(r.findings.length, 'the READ behind it is flushed: a consequence, not a finding').toBe(1);
    expect(r.traffic[0]!.errors).toEqual({ IBV_WC_RETRY_EXC_ERR: 1, IBV_WC_WR_FLUSH_ERR: 1 });
    expect(r.verify[0]).toBe('q: WR 1 (write 100 B) completed with IBV_WC_RETRY_EXC_ERR');
  });

  it('a signaled WR after depth-1 unsignaled ones, whatever the list says (the queue cannot fill with WRs nothing completes)', async () => {
    const wrs = Array.from({ length: 9 }, () => ({ op: 'write', size: 8, signaled: false }));
    const r = await runScenario(parseScenario({ duration: '5ms', qps: [{ name: 'q' }], traffic: [{ qp: 'q', depth: 3, wrs }] }));
    expect(r.verify).toEqual([]);
    expect(r.timeline.qps[0]!.wrs.map((w) => w.signaled)).toEqual([false, false, true, false, false, true, false, false, true]);
  });

  it('a CQE that lands while another CQ is polled is seen at once, not at the watchdog horizon', async () => {
    // Found by the campaign (seed 11, shrunk): the runner used to jump the clock to the next watchdog deadline.
    const r = await runScenario(
      parseScenario({
        qps: [
          { name: 'rc0', mtu: 256, timeout: 10 },
          { name: 'ud0', type: 'UD', mtu: 2048 },
        ],
        traffic: [
          {
            qp: 'rc0',
            depth: 1,
            wrs: [{ op: 'fetch_add' }, { op: 'write_imm', size: 1 }, { op: 'read', size: 0 }, { op: 'fetch_add' }, { op: 'write', size: 0 }],
            recvDepth: 1,
          },
          { qp: 'ud0', depth: 1, wrs: [{ op: 'send', size: 0 }], recvDepth: 1 },
        ],
      }),
    );
    expect(r.verify).toEqual([]);
    expect(r.endedBy).toBe('complete');
    expect(r.endNs).toBeLessThan(100_000);
  });

  it('a 57 KB WRITE at MTU 256 under 17% loss is slow, not stalled: each go-back-N round acknowledges more of it', async () => {
    // Found by a campaign with 64 KB messages (seed 356, shrunk): completions alone came further apart than the watchdog.
    const r = await runScenario(
      parseScenario({
        seed: 356,
        duration: '250ms',
        profile: { retryCnt7Infinite: true },
        qps: [
          {
            name: 'rc1',
            mtu: 256,
            psn_a: 9176870,
            psn_b: 10981905,
            timeout: 9,
            min_rnr_timer: 9,
            max_rd_atomic: 11,
            max_dest_rd_atomic: 11,
            max_send_wr: 13,
            max_recv_wr: 7,
            cq_depth: 13,
          },
        ],
        faults: [
          { action: 'corrupt', probability: 0.0696 },
          { action: 'drop', probability: 0.0982 },
        ],
        traffic: [
          {
            qp: 'rc1',
            from: 'b',
            depth: 13,
            wrs: [
              { op: 'write', size: 57161 },
              { op: 'write', size: 0 },
            ],
          },
        ],
      }),
    );
    expect(r.verify).toEqual([]);
    const t = r.traffic[0]!;
    expect(t.ok).toBe(2);
    // Longer than the watchdog (2 × 8 × the 2.1 ms ACK timeout) from post to completion.
    expect(t.lastCompletionNs! - t.firstPostNs!).toBeGreaterThan(2 * 8 * 2_097_152);
  });

  it('a lone READ resuming round by round is slow, not stalled: each resumed request starts a round', async () => {
    // Campaign seed 870494 (rxe profile, retry_cnt 1, ACK timeout 4.2 ms), shrunk: one 9619-byte READ
    // at MTU 256 (38 responses). A response lost in each of four rounds; the responses after it arrived
    // and set the highest PSN seen, so the resumed responses, all below it, were no progress; and a
    // resumed READ request (PSN above the first request's) was not seen as a new round. The watchdog
    // (16.8 ms, 4 timeouts) called it a stall just as the fourth round completed the READ.
    const P = 7956791;
    // The shrunk seed's pinned faults on READ responses (opcode 14, MIDDLE): drops, and delays that reorder.
    const hit = (action: string, psn: number, after: number) => ({
      action,
      direction: 'b->a',
      match: { opcode: 14, qpn: 2, psn: [P + psn, P + psn], ...(after ? { after } : {}), count: 1 },
      ...(action === 'delay' ? { delayNs: 2977 } : {}),
    });
    const r = await runScenario(
      parseScenario({
        seed: 870494,
        duration: '250ms',
        profile: { base: 'rxe', retryCnt7Infinite: false },
        qps: [{ name: 'rc2', mtu: 256, psn_a: P, psn_b: 6331062, timeout: 10, retry_cnt: 1, max_rd_atomic: 14, max_dest_rd_atomic: 14, max_send_wr: 1 }],
        faults: [hit('drop', 13, 0), hit('drop', 17, 1), hit('delay', 23, 1), hit('drop', 23, 1), hit('delay', 29, 3)],
        traffic: [{ qp: 'rc2', from: 'a', depth: 1, wrs: [{ op: 'read', size: 9619 }], expect: 'success-or-exhausted' }],
      }),
    );
    expect(r.verify).toEqual([]);
    const w = r.timeline.qps[0]!.wrs[0]!;
    expect(w.status).toBe('IBV_WC_SUCCESS');
    // Four rounds, each resuming later, the last one past the watchdog's 16.8 ms.
    expect(w.retransmissions.map((x) => x.psn - P)).toEqual([13, 17, 23, 30]);
    expect(w.completedNs!).toBeGreaterThan(4 * 4_194_304);
  });

  it("a READ resuming round by round below a later READ's early response is slow, not stalled", async () => {
    // Found by a campaign at 5-20 % fault rates (seed 90045): the later READ's response arrived while the
    // earlier READ was incomplete (the requester dropped it as out of sequence) and set the highest
    // response PSN the watchdog had seen; the earlier READ's resumed responses, all below it, counted as
    // no progress. Here: READ #1 (32 responses at MTU 256) and READ #2 behind it. Response k of #1 is
    // lost the k-th time it is sent (in round k - 1), and so is the first request resuming from it, so
    // each round gains one PSN and costs one ACK timeout (4.2 ms): 30 rounds, about twice the
    // watchdog's 16 timeouts.
    const P = 1000;
    const faults = [];
    for (let k = 1; k <= 30; k++) {
      faults.push({ action: 'drop', match: { opcode: 'RC_RDMA_READ_RESPONSE_MIDDLE', psn: [P + k, P + k], after: k - 1, count: 1 } });
      faults.push({ action: 'drop', match: { opcode: 'RC_RDMA_READ_REQUEST', psn: [P + k, P + k], count: 1 } });
    }
    const r = await runScenario(
      parseScenario({
        seed: 1,
        duration: '400ms',
        profile: { retryCnt7Infinite: true },
        qps: [{ name: 'rc0', mtu: 256, psn_a: P, psn_b: 5000, timeout: 10, max_rd_atomic: 4, max_dest_rd_atomic: 4 }],
        faults,
        traffic: [
          {
            qp: 'rc0',
            from: 'a',
            depth: 2,
            wrs: [
              { op: 'read', size: 32 * 256 },
              { op: 'read', size: 16 },
            ],
          },
        ],
      }),
    );
    expect(r.verify).toEqual([]);
    expect(r.stalls).toEqual([]);
    const t = r.traffic[0]!;
    expect(t.ok).toBe(2);
    // Longer than the watchdog (2 × 8 × the 4.2 ms ACK timeout) from post to completion.
    expect(t.lastCompletionNs! - t.firstPostNs!).toBeGreaterThan(2 * 8 * 4_194_304);
  });

  it('a corrupted response with a flipped PSN bit is no progress, and does not hide the real progress after it', async () => {
    // Found by campaigns/stress.json (seed 130, shrunk): the watchdog's wire tap saw the frame before
    // the receiver's ICRC check, took its PSN (2 million ahead) as acknowledged, and declared a stall.
    const r = await runScenario(
      parseScenario({
        seed: 130,
        duration: 250000000,
        profile: { retryCnt7Infinite: true },
        qps: [
          {
            name: 'rc1',
            type: 'RC',
            mtu: 256,
            psn_a: 12774598,
            psn_b: 14392166,
            max_inline_data: 112,
            timeout: 7,
            retry_cnt: 7,
            rnr_retry: 7,
            min_rnr_timer: 4,
            max_rd_atomic: 15,
            max_dest_rd_atomic: 15,
            max_send_wr: 12,
            max_recv_wr: 14,
            cq_depth: 14,
          },
        ],
        faults: [
          { action: 'duplicate', probability: 0.0759, copies: 4 },
          { action: 'delay', probability: 0.09, delayNs: 307547 },
          { action: 'drop', probability: 0.0916 },
          { action: 'reorder', probability: 0.0979, reorderDepth: 59 },
          { action: 'corrupt', probability: 0.071 },
        ],
        traffic: [
          {
            qp: 'rc1',
            from: 'a',
            depth: 12,
            wrs: [
              { op: 'write_imm', size: 62409, signaled: false },
              { op: 'send', size: 52079 },
              { op: 'write_imm', size: 699 },
            ],
            recvDepth: 14,
          },
        ],
      }),
    );
    expect(r.verify).toEqual([]);
    expect(r.stalls).toEqual([]);
    expect(r.sim.links.l0!.faults!.corrupted).toBeGreaterThan(0);
    expect(r.traffic[0]!.ok).toBe(3);
  });

  it('refuses a wrs entry that does not fit its QP, naming it', () => {
    const bad = (t: Record<string, unknown>, q: Record<string, unknown> = {}) => {
      try {
        parseScenario({ qps: [{ name: 'q', ...q }], traffic: [{ qp: 'q', ...t }] }, 's.json');
      } catch (e) {
        return (e as Error).message;
      }
      return 'accepted';
    };
    expect(
      bad(
        {
          wrs: [
            { op: 'send', size: 1 },
            { op: 'read', size: 5 },
          ],
        },
        { type: 'UC' },
      ),
    ).toBe('s.json.traffic[0].wrs[1].op: a UC QP has no read');
    expect(bad({ wrs: [{ op: 'send' }] })).toBe('s.json.traffic[0].wrs[0].size: required (bytes)');
    expect(bad({ wrs: [{ op: 'send', size: 100, inline: true }] }, { max_inline_data: 64 })).toMatch(/^s\.json\.traffic\[0\]\.wrs\[0\]\.inline: inline needs/);
    expect(bad({ wrs: [{ op: 'send', size: 2000 }] }, { type: 'UD', mtu: 1024 })).toBe('s.json.traffic[0].wrs[0].size: a UD message must fit the MTU (1024)');
    expect(bad({ op: 'send', wrs: [{ op: 'send', size: 1 }] })).toMatch(/^s\.json\.traffic\[0\]\.op: not with wrs/);
    expect(bad({ wrs: [] })).toBe('s.json.traffic[0].wrs: expected at least one work request');
    expect(bad({ wrs: [{ op: 'write', size: 1, sigaled: false }] })).toMatch(/^s\.json\.traffic\[0\]\.wrs\[0\]\.sigaled: unknown setting/);
  });
});

describe('guard bytes', () => {
  it('bytes just outside a registered buffer are reported, bytes inside are not', async () => {
    const s = parseScenario({});
    await startSimModel({
      workers: 0,
      devices: s.devices.map((d) => ({ ...d, ports: d.ports.map((p) => ({ ...p })) })),
      cables: s.links.map((l) => ({ kind: 'wire' as const, a: l.a, b: l.b })),
    });
    const hosts = openHosts(s);
    try {
      const b = buffer(hosts.get('rnic0')!, 100);
      expect(b.whole.length).toBe(100 + 2 * GUARD_BYTES);
      b.bytes.fill(0xee);
      expect(guardDamage(b)).toEqual([]);
      b.whole[GUARD_BYTES - 1]! ^= 1;
      b.whole[GUARD_BYTES + 100 + 3]! ^= 0x80;
      expect(guardDamage(b)).toEqual([-1, 103]);
    } finally {
      closeHosts(hosts);
      if (currentModel()) await stopModel();
    }
  });
});
