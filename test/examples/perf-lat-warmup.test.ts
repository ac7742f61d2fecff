/**
 * `rnic perf` latency tests in loopback run a warm-up of min(2048, -n)
 * ping-pongs, rounded down to whole 256s, before the measured -n (V8 is
 * still compiling the path during the first ~1,500). Checked on the
 * responders' counters: exactly warm-up + -n messages went each way, the
 * table reports -n, and a run shorter than 256 has no warm-up at all.
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

async function perf(test: string, iters: number): Promise<{ rows: string[]; a: Record<string, bigint>; b: Record<string, bigint> }> {
  const before = [H.counters(f.a), H.counters(f.b)];
  const io = new BufferIo();
  const rc = await perfMain([test, '--loopback', '-d', 'rnic0', '--peer-ib-dev', 'rnic1', '-x', '3', '-s', '8', '-n', String(iters)], { io });
  expect(rc, io.stderr).toBe(0);
  const lines = io.stdout.split('\n');
  const head = lines.findIndex((l) => l.trimStart().startsWith('#bytes'));
  return { rows: lines.slice(head + 1, head + 2), a: H.counterDelta(before[0]!, H.counters(f.a)), b: H.counterDelta(before[1]!, H.counters(f.b)) };
}

describe('perf latency warm-up (loopback)', () => {
  it.each([
    [100, 0],
    [256, 256],
    [600, 512],
    [3000, 2048],
  ])('write_lat -n %i: %i warm-up writes each way, then -n measured', async (iters, warm) => {
    const r = await perf('write_lat', iters);
    expect(r.rows[0]!.trim().split(/\s+/).slice(0, 2)).toEqual(['8', String(iters)]);
    expect(r.a['rx_write_requests'], 'WRITEs rnic0 received').toBe(BigInt(warm + iters));
    expect(r.b['rx_write_requests'], 'WRITEs rnic1 received').toBe(BigInt(warm + iters));
  });

  it.each([
    [100, 0],
    [700, 512],
  ])('send_lat -n %i: %i warm-up SENDs each way, then -n measured', async (iters, warm) => {
    const r = await perf('send_lat', iters);
    expect(r.rows[0]!.trim().split(/\s+/).slice(0, 2)).toEqual(['8', String(iters)]);
    // Each side's SENDs and its ACKs of the other's.
    expect(r.a['sent_pkts'], 'packets rnic0 sent').toBe(BigInt(2 * (warm + iters)));
    expect(r.b['sent_pkts'], 'packets rnic1 sent').toBe(BigInt(2 * (warm + iters)));
  });

  it('read_lat -n 300: 256 warm-up READs, then 300', async () => {
    const r = await perf('read_lat', 300);
    expect(r.b['rx_read_requests']).toBe(556n);
    expect(r.a['rx_read_requests'] ?? 0n).toBe(0n);
  });
});
