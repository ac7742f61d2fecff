/**
 * Frames a switch cannot route by IP are bridged by destination MAC: RoCE
 * v1 (EtherType 0x8915, a GRH and no IP header) and RoCE v2 to an IPv6
 * link-local address (no route: the topology gives the switch only the
 * hosts' configured addresses). Found by campaigns/fabric.json: before, the
 * switch dropped every such frame (v1 as malformed, link-local as no
 * route) and every RC QP on those GIDs stalled.
 */
import { describe, expect, it } from 'vitest';
import { parseScenario } from '../../src/scenario/scenario.js';
import { runScenario } from '../../src/scenario/scenario-runner.js';

/** Three hosts on one switch; QP i from h(i%3) to h((i+1)%3), both directions, every op. */
function scenario(gid: number, pcpTrust: boolean): Record<string, unknown> {
  const ops = ['write', 'send', 'read', 'write_imm', 'fetch_add', 'send_imm', 'cmp_swap'];
  return {
    seed: gid,
    duration: '50ms',
    topology: { kind: 'star', hosts: 3, linkRate: '25Gbps', delay: '500ns', hostMemory: '16MiB' },
    switch: { trust: pcpTrust ? 'pcp' : 'dscp' },
    qps: [0, 1, 2].map((i) => ({ name: `q${i}`, a: `h${i}`, b: `h${(i + 1) % 3}`, gid_index: gid, mtu: 1024, sl: 3, traffic_class: 96 })),
    traffic: [0, 1, 2].flatMap((i) =>
      (['a', 'b'] as const).map((from) => ({
        qp: `q${i}`,
        from,
        depth: 4,
        wrs: ops.map((op, k) => (op === 'fetch_add' || op === 'cmp_swap' ? { op } : { op, size: 100 + 1500 * k })),
      })),
    ),
  };
}

describe('switch: frames without an IP route are bridged by MAC', () => {
  // GID indices of a topology host: 0 RoCE v1 link-local, 1 RoCE v2 link-local, 2 v1 IPv4, 4 v1 IPv6.
  for (const [gid, what] of [
    [0, 'RoCE v1 on the link-local GID'],
    [1, 'RoCE v2 to a link-local IPv6 address'],
    [2, 'RoCE v1 on the IPv4-mapped GID'],
    [4, 'RoCE v1 on the IPv6 GID'],
  ] as const) {
    for (const pcp of [false, true]) {
      it(`${what} (trust ${pcp ? 'pcp' : 'dscp'}): every WR of 6 streams completes, bytes checked, nothing dropped`, async () => {
        const r = await runScenario({ ...parseScenario(scenario(gid, pcp), `bridge-${gid}`), capture: [] });
        expect(r.verify).toEqual([]);
        expect(r.stalls).toEqual([]);
        expect(r.endedBy).toBe('complete');
        let forwarded = 0;
        for (const ports of Object.values(r.fabric!.switches)) {
          for (const c of Object.values(ports)) {
            expect(c.droppedNoRoute + c.droppedMalformed + c.droppedFrames).toBe(0);
            forwarded += c.enqueuedFrames;
          }
        }
        // 6 streams × 7 WRs, each at least a request and a response.
        expect(forwarded).toBeGreaterThanOrEqual(84);
      }, 60_000);
    }
  }
});
