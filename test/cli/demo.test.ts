/**
 * The README's first command runs `rnic demo`: run the built CLI as a user
 * would, check its report and that the capture it wrote is real traffic.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decodePacket, iteratePcap, opcodeName } from '../../src/wire/index.js';

const CLI = join(import.meta.dirname, '../../dist/src/cli/main.js');
const dir = mkdtempSync(join(tmpdir(), 'rnic-demo-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('rnic demo', () => {
  it('runs the ping-pong, WRITE and READ tests and writes a capture of them', () => {
    const pcap = join(dir, 'demo.pcap');
    const out = execFileSync(process.execPath, [CLI, 'demo', '--iters', '20', '--size', '8192', '--pcap', pcap], { encoding: 'utf8', timeout: 120_000 });
    expect(out).toMatch(/== SEND\/RECV ping-pong/);
    expect(out).toMatch(/== RDMA WRITE bandwidth/);
    expect(out).toMatch(/== RDMA READ bandwidth/);
    // The measured runs and perftest's own warm-up only (20 + 20 WRITEs, 10 + 10 READs, 20 SENDs):
    // no JIT warm-up in the demo, whose capture is for reading.
    expect(out).toMatch(/rnic1: .*rdma_recvs=20 .*rx_write_requests=40 rx_read_requests=20\b/);
    const ops = new Set<string>();
    let bad = 0;
    for (const r of iteratePcap(readFileSync(pcap))) {
      const d = decodePacket(r.data);
      if (d.ok) ops.add(opcodeName(d.packet.bth.opcode));
      else if (d.error.code !== 'WIRE_NOT_RDMA') bad++;
    }
    expect(bad, 'frames that fail to decode (bad ICRC, lengths)').toBe(0);
    for (const op of ['RC_SEND_ONLY', 'RC_ACKNOWLEDGE', 'RC_RDMA_WRITE_FIRST', 'RC_RDMA_WRITE_LAST', 'RC_RDMA_READ_REQUEST', 'RC_RDMA_READ_RESPONSE_LAST']) {
      expect(ops.has(op), op).toBe(true);
    }
  });

  it('refuses bad options with a usage message and exit code 2', () => {
    const r = spawnSync(process.execPath, [CLI, 'demo', '--iters', 'many'], { encoding: 'utf8', timeout: 30_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--iters must be a positive integer, got "many"/);
  });

  it('refuses out-of-range and non-decimal numbers before it starts (exit 2, naming the option)', () => {
    for (const [args, msg] of [
      [['--iters', '4'], /^rnic demo: --iters must be 5\.\.100000000, got 4\n/],
      [['--iters', '99999999999999999999'], /^rnic demo: --iters must be 5\.\.100000000, got 99999999999999999999\n/],
      [['--iters', '0x10'], /^rnic demo: --iters must be a positive integer, got "0x10"\n/],
      [['--size', ' '], /^rnic demo: --size must be a positive integer, got " "\n/],
      [['--size', '2147483648'], /^rnic demo: --size must be 1\.\.1073741824, got 2147483648\n/],
      [['--workers', ''], /^rnic demo: --workers must be 0\.\.64, got ""\n/],
    ] as const) {
      const r = spawnSync(process.execPath, [CLI, 'demo', ...args], { encoding: 'utf8', timeout: 30_000 });
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(msg);
    }
  });

  it("--iters 5 runs all three tests (read_bw gets perftest's minimum of 5, not iters / 2)", () => {
    const pcap = join(dir, 'five.pcap');
    const r = spawnSync(process.execPath, [CLI, 'demo', '--iters', '5', '--size', '64', '--pcap', pcap], { encoding: 'utf8', timeout: 120_000 });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('== RDMA READ bandwidth (read_bw)');
    expect(r.stdout).toContain('== hardware counters (non-zero)');
  });
});
