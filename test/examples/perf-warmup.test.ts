/**
 * `rnic perf` in loopback warms V8 up before it measures (the first
 * messages of a process run in code not yet compiled). Checked on the
 * responders' counters:
 * - latency tests run 8,192 ping-pongs before the measured -n, whatever
 *   -n is;
 * - bandwidth tests run the same test for about 65,536 packets at the
 *   first size (an eighth of that at each later one; at least tx_depth
 *   messages per QP), then perftest's own warm-up (WRITE, READ), then -n;
 * and the table reports -n.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BufferIo } from '../../examples/common/io.js';
import { main as perfMain } from '../../examples/perf.js';
import * as H from '../e2e/harness.js';

let f: H.Fabric;
beforeAll(async () => {
  f = await H.openFabric(H.twoDeviceConfig(0));
});
afterAll(async () => {
  await f?.close();
});

async function perf(
  test: string,
  iters: number,
  more: string[] = [],
): Promise<{ rows: string[]; mtu: number; a: Record<string, bigint>; b: Record<string, bigint> }> {
  const before = [H.counters(f.a), H.counters(f.b)];
  const io = new BufferIo();
  const rc = await perfMain([test, '--loopback', '-d', 'rnic0', '--peer-ib-dev', 'rnic1', '-x', '3', '-s', '8', '-n', String(iters), ...more], { io });
  expect(rc, io.stderr).toBe(0);
  const lines = io.stdout.split('\n');
  const head = lines.findIndex((l) => l.trimStart().startsWith('#bytes'));
  const mtu = Number(/Mtu\s*:\s*(\d+)\[B\]/.exec(io.stdout)?.[1]);
  return { rows: lines.slice(head + 1, head + 2), mtu, a: H.counterDelta(before[0]!, H.counters(f.a)), b: H.counterDelta(before[1]!, H.counters(f.b)) };
}

describe('perf latency warm-up (loopback)', () => {
  it.each([
    [5, 8192],
    [256, 8192],
    [3000, 8192],
  ])('write_lat -n %i: %i warm-up writes each way, then -n measured', async (iters, warm) => {
    const r = await perf('write_lat', iters);
    expect(r.rows[0]!.trim().split(/\s+/).slice(0, 2)).toEqual(['8', String(iters)]);
    expect(r.a['rx_write_requests'], 'WRITEs rnic0 received').toBe(BigInt(warm + iters));
    expect(r.b['rx_write_requests'], 'WRITEs rnic1 received').toBe(BigInt(warm + iters));
  });

  it.each([
    [100, 8192],
    [700, 8192],
  ])('send_lat -n %i: %i warm-up SENDs each way, then -n measured', async (iters, warm) => {
    const r = await perf('send_lat', iters);
    expect(r.rows[0]!.trim().split(/\s+/).slice(0, 2)).toEqual(['8', String(iters)]);
    // Receive completions, not packets: on a loaded machine a late ACK can cost a retransmission.
    expect(r.a['rdma_recvs'], 'SENDs rnic0 received').toBe(BigInt(warm + iters));
    expect(r.b['rdma_recvs'], 'SENDs rnic1 received').toBe(BigInt(warm + iters));
  });

  it('read_lat -n 300: 8,192 warm-up READs, then 300', async () => {
    const r = await perf('read_lat', 300);
    expect(r.b['rx_read_requests']).toBe(8192n + 300n);
    expect(r.a['rx_read_requests'] ?? 0n).toBe(0n);
  });
});

describe('perf bandwidth warm-up (loopback)', () => {
  const WARM_PACKETS = 65536;

  it("write_bw -n 1000 at 8 B: 65,536 warm-up WRITEs, perftest's 128, then 1,000", async () => {
    const r = await perf('write_bw', 1000);
    expect(r.rows[0]!.trim().split(/\s+/).slice(0, 2)).toEqual(['8', '1000']);
    expect(r.b['rx_write_requests']).toBe(BigInt(WARM_PACKETS + 128 + 1000));
    expect(r.a['rx_write_requests'] ?? 0n).toBe(0n);
  });

  it('write_bw -q 2 -n 500: the warm-up shared between the QPs', async () => {
    const r = await perf('write_bw', 500, ['-q', '2']);
    expect(r.b['rx_write_requests']).toBe(BigInt(WARM_PACKETS + 2 * 128 + 2 * 500));
  });

  it('write_bw -s 8192 -n 300: the warm-up counted in packets', async () => {
    const r = await perf('write_bw', 300, ['-s', '8192']);
    expect(r.mtu, 'the Mtu line').toBeGreaterThan(0);
    const warm = Math.ceil(WARM_PACKETS / Math.ceil(8192 / r.mtu));
    expect(r.b['rx_write_requests']).toBe(BigInt(warm + 128 + 300));
  });

  it('send_bw -n 1000: 65,536 warm-up SENDs received, then 1,000 (no perftest warm-up for SEND)', async () => {
    const r = await perf('send_bw', 1000);
    expect(r.rows[0]!.trim().split(/\s+/).slice(0, 2)).toEqual(['8', '1000']);
    expect(r.b['rdma_recvs'], 'SENDs rnic1 received (retries after RNR NAKs not counted)').toBe(BigInt(WARM_PACKETS + 1000));
  });

  it("read_bw -n 200 -t 16: 65,536 warm-up READs, perftest's 16, then 200", async () => {
    const r = await perf('read_bw', 200, ['-t', '16']);
    expect(r.b['rx_read_requests']).toBe(BigInt(WARM_PACKETS + 16 + 200));
  });
});
