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
    expect(out).toMatch(/rnic1: .*rx_write_requests=\d+.*rx_read_requests=\d+/);
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
});
