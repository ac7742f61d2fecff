/**
 * A program leaves with traffic in flight (exit-child.ts: 64 × 64 KiB
 * WRITEs and READs between two devices joined by UDP cables on loopback):
 * by returning from main, process.exit, an uncaught exception, stopModel or
 * ibv_close_device. The model must not keep the process alive, hang on the
 * way out, or abort in a socket thread (UDPWrap::OnRecv during teardown,
 * src/runtime/udp-io.ts closeSocketsOnExit); the exit code is the program's.
 * A hang shows as the 120 s limit, not as a timed assertion.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { freeUdpPort } from '../helpers/ports.js';

const CHILD = fileURLToPath(new URL('./exit-child.ts', import.meta.url));
const REGISTER = new URL('../fabric/register-ts.mjs', import.meta.url).href;
const LIMIT_MS = 120_000;
const dir = mkdtempSync(join(tmpdir(), 'rnic-exit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function run(workers: number, mode: string): Promise<{ code: number | null; signal: string | null; out: string }> {
  const [p0, p1] = [await freeUdpPort(), await freeUdpPort()];
  const port = (n: number) => ({ mac: `02:00:00:00:00:0${n + 1}`, ipv4: [`192.0.2.${n + 1}`] });
  const cfg = {
    workers,
    devices: [
      { name: 'rnic0', ports: [port(0)] },
      { name: 'rnic1', ports: [port(1)] },
    ],
    cables: [
      { kind: 'udp', port: 'rnic0:1', local: `127.0.0.1:${p0}`, remote: `127.0.0.1:${p1}` },
      { kind: 'udp', port: 'rnic1:1', local: `127.0.0.1:${p1}`, remote: `127.0.0.1:${p0}` },
    ],
  };
  const file = join(dir, `w${workers}-${mode}.json`);
  writeFileSync(file, JSON.stringify(cfg));
  const child = spawn(process.execPath, ['--import', REGISTER, CHILD], {
    env: { ...process.env, RNIC_CONFIG: file, EXIT_MODE: mode },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const killer = setTimeout(() => child.kill('SIGKILL'), LIMIT_MS - 5000);
  const [code, signal] = await new Promise<[number | null, string | null]>((r) => child.once('close', (c, s) => r([c, s])));
  clearTimeout(killer);
  return { code, signal, out };
}

const CASES: [number, string, number, string][] = [
  [0, 'return', 0, 'returned'],
  [1, 'return', 0, 'returned'],
  [2, 'return', 0, 'returned'],
  [0, 'exit', 0, 'posted'],
  [1, 'exit', 0, 'posted'],
  [2, 'exit', 0, 'posted'],
  [1, 'stop', 0, 'returned'],
  [2, 'stop', 0, 'returned'],
  [2, 'close', 0, 'returned'],
  [2, 'throw', 1, 'the program failed on purpose'],
];

describe('leaving with traffic in flight on UDP cables', () => {
  it.each(CASES)('workers %i, %s: exits with code %i', { timeout: LIMIT_MS }, async (workers, mode, code, says) => {
    const r = await run(workers, mode);
    expect(r.signal, r.out).toBeNull();
    expect(r.code, r.out).toBe(code);
    expect(r.out).toContain(says);
    // The model's own lines start "rnic-model:" or "rnic-model device engine:" (a stack trace's path may hold "rnic-model/": the checkout's folder).
    expect(r.out, 'no warning, no unhandled rejection').not.toMatch(/Warning|Unhandled|FATAL|rnic-model(:| device)/);
  });
});
