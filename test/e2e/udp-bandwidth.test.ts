/**
 * A UDP cable under bandwidth: `rnic perf write_bw -s 65536` between this
 * process (client) and a server process, each with its own model.
 *  - `socketBufferBytes` reaches the socket (and is refused out of range);
 *    the default asks for 4 MiB.
 *  - The 64 KiB run completes, every frame the client's pipeline sent went
 *    out of the socket, and what each socket saw is counted, including
 *    the OS's receive-buffer drops (Linux /proc/net/udp). Before, a 64 KiB
 *    run queued up to 64 MiB behind the socket, timed out and ended in
 *    RETRY_EXC_ERR; with the I/O thread on the event loop of a busy engine,
 *    93 of 15,796 frames were lost in the receive buffer.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BufferIo } from '../../examples/common/io.js';
import { main as perfMain } from '../../examples/perf.js';
import { currentModel, restartModel, stopModel } from '../../src/boot.js';
import { ibv_get_device_list, ibv_open_device, ibv_close_device, rnic_read_counters } from '../../src/driver/verbs/index.js';
import { parseConfig } from '../../src/runtime/config.js';
import { PATIENT_QP_TIMEOUT } from '../examples/scenarios.js';

import { freeTcpPort, freeUdpPort } from '../helpers/ports.js';

const CLI = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));
const HANG_MS = 180_000;

const host = (n: number, local: number, remote: number, extra: Record<string, unknown> = {}) => ({
  devices: [{ name: 'rnic0', ports: [{ mac: `02:00:00:00:00:0${n}`, ipv4: [`192.0.2.${n}`] }] }],
  cables: [{ kind: 'udp', port: 'rnic0:1', local: `127.0.0.1:${local}`, remote: `127.0.0.1:${remote}`, ...extra }],
});

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'rnic-udpbw-'));
});
afterAll(async () => {
  await stopModel();
  rmSync(dir, { recursive: true, force: true });
});

describe('UDP cable settings', () => {
  it('socketBufferBytes: a size, 1 KiB..1 GiB, on udp cables only', () => {
    const cfg = (c: Record<string, unknown>) =>
      parseConfig(
        {
          devices: [{ name: 'd', ports: [{ mac: '02:00:00:00:00:01' }] }],
          cables: [{ kind: 'udp', port: 'd:1', local: '127.0.0.1:1', remote: '127.0.0.1:2', ...c }],
        },
        'f',
      );
    expect(cfg({ socketBufferBytes: '8MiB' }).cables[0]).toMatchObject({ socketBufferBytes: 8 << 20 });
    expect(cfg({ socketBufferBytes: 65536 }).cables[0]).toMatchObject({ socketBufferBytes: 65536 });
    expect(cfg({}).cables[0]).not.toHaveProperty('socketBufferBytes');
    expect(() => cfg({ socketBufferBytes: 100 })).toThrow('f.cables[0].socketBufferBytes: expected 1KiB..1GiB, got 100');
    expect(() => cfg({ socketBufferBytes: 'lots' })).toThrow('f.cables[0].socketBufferBytes: expected a size such as 64MiB');
    expect(() =>
      parseConfig(
        {
          devices: [
            { name: 'd', ports: [{ mac: '02:00:00:00:00:01' }] },
            { name: 'e', ports: [{ mac: '02:00:00:00:00:02' }] },
          ],
          cables: [{ kind: 'wire', a: 'd:1', b: 'e:1', socketBufferBytes: 4096 }],
        },
        'f',
      ),
    ).toThrow('f.cables[0].socketBufferBytes: unknown setting');
  });

  it('the socket gets what was asked (Linux grants twice the request), 4 MiB by default', async () => {
    const [a, b] = [await freeUdpPort(), await freeUdpPort()];
    /** The engine binds the socket after the model starts: wait for the I/O thread's first counters. */
    const granted = async (): Promise<number> => {
      const end = Date.now() + HANG_MS;
      for (;;) {
        const n = currentModel()!.udpStats!()['rnic0:1']!.receiveBufferBytes;
        if (n > 0 || Date.now() > end) return n;
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    await restartModel(parseConfig(host(1, a, b, { socketBufferBytes: '256KiB' }), 'small'));
    const small = await granted();
    await restartModel(parseConfig(host(1, a, b), 'default'));
    const dflt = await granted();
    await stopModel();
    expect(small).toBeGreaterThanOrEqual(256 << 10);
    expect(small).toBeLessThan(1 << 20);
    // The default asks for 4 MiB; the OS may cap it (net.core.rmem_max), never below its own default of ~208 KiB.
    expect(dflt).toBeGreaterThan(small);
  });
});

describe('write_bw -s 65536 between two processes over a UDP cable', () => {
  it('completes; every frame the pipeline sent left the socket; drops are counted', { timeout: 2 * HANG_MS }, async () => {
    const [pa, pb] = [await freeUdpPort(), await freeUdpPort()];
    writeFileSync(join(dir, 'server.json'), JSON.stringify(host(1, pa, pb)));
    const tcp = await freeTcpPort();
    const iters = 300;
    const args = ['write_bw', '-s', '65536', '-n', String(iters), '-x', '3', '-u', String(PATIENT_QP_TIMEOUT), '-p', String(tcp)];
    const server = spawn(process.execPath, [CLI, 'perf', ...args], {
      env: { ...process.env, RNIC_CONFIG: join(dir, 'server.json') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let sout = '';
    server.stdout!.on('data', (d: Buffer) => (sout += d.toString()));
    server.stderr!.on('data', (d: Buffer) => (sout += d.toString()));
    const serverDone = new Promise<number | null>((r) => server.once('exit', (code) => r(code)));
    const kill = setTimeout(() => server.kill('SIGKILL'), HANG_MS);

    const model = await restartModel(parseConfig(host(2, pb, pa), 'client'));
    await model.cabled;
    const ctx = ibv_open_device(ibv_get_device_list()[0]!);
    // The server says so once it listens.
    while (!sout.includes('Waiting for client to connect') && server.exitCode === null) await new Promise((r) => setTimeout(r, 20));
    let io = new BufferIo();
    let rc = 1;
    for (let attempt = 0; attempt < 20; attempt++) {
      io = new BufferIo();
      rc = await perfMain([...args, '127.0.0.1'], { io });
      if (rc === 0 || !io.stderr.includes("Couldn't connect")) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const c = rnic_read_counters(ctx);
    ibv_close_device(ctx);
    const code = await serverDone;
    clearTimeout(kill);
    await stopModel(); // the I/O thread publishes its last counters at close
    const s = model.udpStats!()['rnic0:1']!;
    expect({ rc, err: io.stderr }, 'client').toEqual({ rc: 0, err: '' });
    expect({ code, out: code === 0 ? '' : sout }, 'server').toEqual({ code: 0, out: '' });
    expect(io.stdout).toMatch(new RegExp(`^ 65536\\s+${iters}\\s+[\\d.]+\\s+[\\d.]+`, 'm'));
    expect(Number(c['sent_pkts']), 'packets sent: 16 per message at least').toBeGreaterThanOrEqual(16 * iters);
    // Nothing the pipeline sent stayed behind: packets = frames out of the socket (plus ARP).
    expect(s.framesSent).toBeGreaterThanOrEqual(Number(c['sent_pkts']));
    expect(s.framesSent - Number(c['sent_pkts']), 'non-RoCE frames (ARP)').toBeLessThan(8);
    expect({ txErrors: s.txErrors, txBadSize: s.txBadSize, rxRingFull: s.rxRingFull }).toEqual({ txErrors: 0, txBadSize: 0, rxRingFull: 0 });
    if (process.platform === 'linux') expect(s.rxSocketDrops, 'receive-buffer drops are visible on Linux').toBeGreaterThanOrEqual(0);
  });
});
