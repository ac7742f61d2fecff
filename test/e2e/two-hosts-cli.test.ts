/**
 * The `rnic` command as a user runs it, in separate processes:
 *  - README: `rnic rc_pingpong` in one shell, `rnic rc_pingpong 127.0.0.1`
 *    in another, no configuration file. The first takes host A of the
 *    two-hosts loopback default, the second host B; they find each other.
 *  - `rc_pingpong -e` waits for completion events and exits 0 (it used to
 *    end with status 13, "unsettled top-level await": nothing kept the event
 *    loop alive while it awaited an event), with the devices on a worker
 *    thread and in the application's thread.
 *  - The capture of each side is complete (it was cut at a 256 KiB buffer
 *    boundary because the model was never stopped) and holds the ACK of the
 *    last SEND, which is queued just before the program ends (drain on stop),
 *    and was sent before the client's destroy of its QP could take it away
 *    (test/runtime/ack-before-destroy.test.ts: the hang this test once saw).
 *
 * The well-known UDP ports and the lock files are moved for the test
 * (RNIC_TWO_HOSTS_PORTS, TMPDIR) so that it does not meet a user's own run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodePacket, iteratePcap, Op } from '../../src/wire/index.js';

import { freeTcpPort, freeUdpPort } from '../helpers/ports.js';

const CLI = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));
const HANG_MS = 120_000;

interface Run {
  code: number | null;
  signal: string | null;
  out: string;
  err: string;
}

function rnic(args: string[], env: NodeJS.ProcessEnv): { child: ChildProcess; done: Promise<Run>; output: () => string } {
  const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const done = new Promise<Run>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal, out, err })));
  const t = setTimeout(() => child.kill('SIGKILL'), HANG_MS);
  void done.then(() => clearTimeout(t));
  return { child, done, output: () => out + err };
}

/** Resolves when `text` has appeared in the process's output (or it ended). */
async function seen(p: ReturnType<typeof rnic>, text: string): Promise<void> {
  let ended = false;
  void p.done.then(() => (ended = true));
  while (!p.output().includes(text) && !ended) await new Promise((r) => setTimeout(r, 20));
}

/**
 * Server, then client once the server has printed its address (it listens
 * right after). A client that came too early (connection refused) is
 * started again, as a user would.
 */
async function pingpong(common: string[], envS: NodeJS.ProcessEnv, envC: NodeJS.ProcessEnv): Promise<[Run, Run]> {
  const server = rnic(['rc_pingpong', ...common], envS);
  await seen(server, 'local address');
  for (let attempt = 0; ; attempt++) {
    const client = await rnic(['rc_pingpong', ...common, '127.0.0.1'], envC).done;
    if (client.code !== 1 || !client.err.includes("Couldn't connect") || attempt === 20) return [await server.done, client];
    await new Promise((r) => setTimeout(r, 100));
  }
}

let dir: string;
let env: NodeJS.ProcessEnv;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rnic-cli2-'));
  const [a, b] = [await freeUdpPort(), await freeUdpPort()];
  env = { ...process.env, TMPDIR: dir, RNIC_TWO_HOSTS_PORTS: `${a},${b}` };
  delete env.RNIC_CONFIG;
  delete env.RNIC_NO_MODEL;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('two rnic processes on one host', () => {
  it('README: `rnic rc_pingpong` and `rnic rc_pingpong 127.0.0.1` find each other without a configuration', { timeout: 3 * HANG_MS }, async () => {
    const tcp = await freeTcpPort();
    const [server, client] = await pingpong(['-p', String(tcp), '-n', '50'], env, env);
    expect({ code: server.code, err: server.err }, 'server').toMatchObject({ code: 0 });
    expect({ code: client.code, err: client.err }, 'client').toMatchObject({ code: 0 });
    expect(server.err).toContain('host A of two');
    expect(client.err).toContain('host B of two');
    // Each side learned the other's RoCE v2 GID (no -g: GID 3 on RoCE).
    expect(server.out).toMatch(/remote address: LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID ::ffff:192\.0\.2\.2/);
    expect(client.out).toMatch(/remote address: LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID ::ffff:192\.0\.2\.1/);
    for (const r of [server, client]) expect(r.out).toMatch(/^409600 bytes in [\d.]+ seconds = [\d.]+ Mbit\/sec$/m);
    for (const r of [server, client]) expect(r.out).toMatch(/^50 iters in [\d.]+ seconds = [\d.]+ usec\/iter$/m);
    // Both roles were given back.
    const again = await pingpong(['-p', String(await freeTcpPort()), '-n', '5'], env, env);
    expect(again[0].err).toContain('host A of two');
    expect(again.map((r) => r.code)).toEqual([0, 0]);
  });

  it.each([1, 0])(
    'rc_pingpong -e exits 0 (workers: %i), and each capture is complete, with the ACK of the last SEND',
    { timeout: 3 * HANG_MS },
    async (workers) => {
      const [pa, pb] = [await freeUdpPort(), await freeUdpPort()];
      // The subject is -e and the captures, not the retry budget: rc_pingpong's
      // retry_cnt 7 retries forever (as rxe does), so a machine loaded enough to
      // starve a process for the whole IBTA budget (8 × 67 ms) only slows it.
      const cfg = (n: number, local: number, remote: number) => ({
        workers,
        profile: { retryCnt7Infinite: true },
        devices: [{ name: 'rnic0', ports: [{ mac: `02:00:00:00:00:0${n}`, ipv4: [`192.0.2.${n}`], capture: join(dir, `w${workers}-${n}.pcap`) }] }],
        cables: [{ kind: 'udp', port: 'rnic0:1', local: `127.0.0.1:${local}`, remote: `127.0.0.1:${remote}` }],
      });
      writeFileSync(join(dir, `a${workers}.json`), JSON.stringify(cfg(1, pa, pb)));
      writeFileSync(join(dir, `b${workers}.json`), JSON.stringify(cfg(2, pb, pa)));
      const iters = 200;
      const [server, client] = await pingpong(
        ['-p', String(await freeTcpPort()), '-e', '-n', String(iters), '-s', '1024'],
        { ...env, RNIC_CONFIG: join(dir, `a${workers}.json`) },
        { ...env, RNIC_CONFIG: join(dir, `b${workers}.json`) },
      );
      // Both sides in one assertion: a hang of one (killed after HANG_MS: code null) shows what the other said.
      const ends = (r: Run) => ({ code: r.code, signal: r.signal, err: r.err, done: r.out.includes(`${iters} iters in`) });
      expect({ server: ends(server), client: ends(client) }).toEqual({
        server: { code: 0, signal: null, err: '', done: true },
        client: { code: 0, signal: null, err: '', done: true },
      });

      for (const n of [1, 2]) {
        const bytes = readFileSync(join(dir, `w${workers}-${n}.pcap`));
        // iteratePcap throws on a record cut short: the file must read to its end.
        const sends: number[] = [];
        const acked: number[] = [];
        let frames = 0;
        for (const r of iteratePcap(bytes)) {
          frames++;
          const d = decodePacket(r.data);
          if (!d.ok) continue;
          const fromMe = r.data[11] === n; // source MAC 02:00:00:00:00:0n
          const { opcode, psn } = d.packet.bth;
          if (!fromMe && opcode === Op.RC_SEND_ONLY) sends.push(psn);
          if (fromMe && opcode === Op.RC_ACKNOWLEDGE) acked.push(psn);
        }
        expect(frames, `frames in capture ${n}`).toBeGreaterThanOrEqual(4 * iters);
        expect(new Set(sends).size, `SENDs received by host ${n}`).toBe(iters);
        // The last SEND the peer made was acknowledged on the wire, even though the program ended right after it.
        expect(acked, `host ${n}'s ACKs`).toContain(sends[sends.length - 1]);
      }
    },
  );

  it('SIGINT / SIGTERM in the middle of a run: exit 130 / 143, and the captures are complete up to then', { timeout: 3 * HANG_MS }, async () => {
    const [pa, pb] = [await freeUdpPort(), await freeUdpPort()];
    const cfg = (n: number, local: number, remote: number) => ({
      devices: [{ name: 'rnic0', ports: [{ mac: `02:00:00:00:00:0${n}`, ipv4: [`192.0.2.${n}`], capture: join(dir, `sig-${n}.pcap`) }] }],
      cables: [{ kind: 'udp', port: 'rnic0:1', local: `127.0.0.1:${local}`, remote: `127.0.0.1:${remote}` }],
    });
    writeFileSync(join(dir, 'sa.json'), JSON.stringify(cfg(1, pa, pb)));
    writeFileSync(join(dir, 'sb.json'), JSON.stringify(cfg(2, pb, pa)));
    const common = ['-p', String(await freeTcpPort()), '-n', '100000000', '-s', '1024'];
    const server = rnic(['rc_pingpong', ...common], { ...env, RNIC_CONFIG: join(dir, 'sa.json') });
    await seen(server, 'local address');
    let client = rnic(['rc_pingpong', ...common, '127.0.0.1'], { ...env, RNIC_CONFIG: join(dir, 'sb.json') });
    for (let attempt = 0; attempt < 20; attempt++) {
      await seen(client, 'remote address');
      if (client.child.exitCode === null || !client.output().includes("Couldn't connect")) break;
      await new Promise((r) => setTimeout(r, 100));
      client = rnic(['rc_pingpong', ...common, '127.0.0.1'], { ...env, RNIC_CONFIG: join(dir, 'sb.json') });
    }
    // Let some messages cross, then stop both as a user would (Ctrl-C, kill).
    const frames = () => {
      try {
        return [...iteratePcap(readFileSync(join(dir, 'sig-2.pcap')))].length;
      } catch {
        return 0;
      }
    };
    // Messages have crossed once host 2's capture has written its first chunk
    // of frames (a loaded machine may take a while: wait for it, not a fixed time).
    const grown = () => {
      try {
        return statSync(join(dir, 'sig-2.pcap')).size > 24;
      } catch {
        return false;
      }
    };
    for (const end = Date.now() + HANG_MS / 2; !grown() && Date.now() < end; ) await new Promise((r) => setTimeout(r, 100));
    client.child.kill('SIGINT');
    server.child.kill('SIGTERM');
    const [c, sv] = [await client.done, await server.done];
    expect(c.code, `client: ${c.err}`).toBe(130);
    expect(sv.code, `server: ${sv.err}`).toBe(143);
    for (const n of [1, 2]) {
      let roce = 0;
      // Reads to the end: no record cut short.
      for (const r of iteratePcap(readFileSync(join(dir, `sig-${n}.pcap`)))) if (decodePacket(r.data).ok) roce++;
      expect(roce, `RoCE frames in host ${n}'s capture`).toBeGreaterThan(0);
    }
    expect(frames()).toBeGreaterThan(0);
  });

  it.each([
    ['perf', 'write_bw', '--bogus'],
    ['rc_pingpong', '--bogus'],
    ['srq_pingpong', '--bogus'],
    ['xsrq_pingpong', '--bogus'],
  ])(
    'with both host roles held by other processes, `rnic %s ... --bogus` is still a usage mistake (exit 2), no model started',
    { timeout: HANG_MS },
    async (...args) => {
      const held = mkdtempSync(join(tmpdir(), 'rnic-cli2-held-'));
      try {
        const ports = (env.RNIC_TWO_HOSTS_PORTS as string).split(',')[0];
        // This test's own process is alive: its PID holds both roles.
        for (const role of ['A', 'B']) writeFileSync(join(held, `rnic-model-two-hosts-${ports}-${role}.pid`), String(process.pid));
        const r = await rnic(args, { ...env, TMPDIR: held }).done;
        expect({ code: r.code, out: r.out }).toEqual({ code: 2, out: '' });
        expect(r.err).toContain("unrecognized option '--bogus'");
        expect(r.err).not.toContain('host roles');
        expect(r.err).not.toContain('host A of two');
      } finally {
        rmSync(held, { recursive: true, force: true });
      }
    },
  );
});
