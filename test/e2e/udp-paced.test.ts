/**
 * A paced UDP cable (`cables[].rate`): the I/O thread's real TX path, from
 * the TX ring the device loop fills to the socket, with a plain socket as
 * the peer. The bound checked is one the pacer guarantees whatever the
 * machine's load: by the time the last datagram arrives, no more than
 * burst + rate × (time since the ring was first filled) bytes can have
 * been sent. A slow machine only makes the elapsed time longer. Also:
 * every frame arrives (the pacer holds, never drops), in order, and the
 * holding is counted.
 */
import { spawn } from 'node:child_process';
import * as dgram from 'node:dgram';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { BufferIo } from '../../examples/common/io.js';
import { main as perfMain } from '../../examples/perf.js';
import { restartModel, stopModel } from '../../src/boot.js';
import { parseConfig } from '../../src/runtime/config.js';
import { createUdpCableShm, readUdpIoStats, UdpIoThread } from '../../src/runtime/udp-io.js';
import { PATIENT_QP_TIMEOUT } from '../examples/scenarios.js';
import { freeTcpPort, freeUdpPort } from '../helpers/ports.js';

const CLI = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));
const HANG_MS = 180_000;

const threads: UdpIoThread[] = [];
const sockets: dgram.Socket[] = [];
afterEach(async () => {
  for (const t of threads.splice(0)) await t.close();
  for (const s of sockets.splice(0)) s.close();
});

async function run(pace: { rate: number; burstBytes: number } | undefined, frames: number, len: number) {
  const peerPort = await freeUdpPort();
  const peer = dgram.createSocket('udp4');
  sockets.push(peer);
  await new Promise<void>((r) => peer.bind(peerPort, '127.0.0.1', r));
  peer.setRecvBufferSize(8 << 20);
  const shm = createUdpCableShm();
  const thread = await UdpIoThread.open([{ options: { local: '127.0.0.1:0', remote: `127.0.0.1:${peerPort}` }, shm, ...(pace ? { pace } : {}) }]);
  threads.push(thread);
  const end = UdpIoThread.end(shm);
  const got: number[] = [];
  let bytes = 0;
  let lastAt = 0;
  const done = new Promise<void>((resolve) =>
    peer.on('message', (m) => {
      got.push(m.readUInt32BE(14));
      bytes += m.length;
      lastAt = performance.now();
      if (got.length === frames) resolve();
    }),
  );
  const start = performance.now();
  for (let i = 0; i < frames; i++) {
    const f = new Uint8Array(len);
    new DataView(f.buffer).setUint32(14, i);
    end.send(f);
  }
  expect(end.stats.framesDropped).toBe(0);
  await done;
  const elapsedMs = lastAt - start;
  await thread.close();
  threads.splice(threads.indexOf(thread), 1);
  return { got, bytes, elapsedMs, stats: readUdpIoStats(shm.stats) };
}

describe('paced UDP cable', () => {
  it('sends no faster than its rate over the run, drops nothing, counts the holding', async () => {
    const rate = 16e6; // 2 MB/s
    const burstBytes = 16 << 10;
    const frames = 500;
    const len = 1200;
    const r = await run({ rate, burstBytes }, frames, len);
    expect(r.got).toEqual([...Array(frames).keys()]);
    expect(r.bytes).toBe(frames * len);
    // 600 kB at 2 MB/s: at least ~0.29 s, whatever the load.
    expect(r.bytes).toBeLessThanOrEqual(burstBytes + (rate / 8) * (r.elapsedMs / 1000));
    expect(r.stats.framesSent).toBe(frames);
    expect(r.stats.framesDropped).toBe(0);
    // All but the first burst's frames waited for tokens.
    expect(r.stats.txPacedFrames).toBeGreaterThan(0);
    expect(r.stats.txPacedFrames).toBeLessThanOrEqual(frames);
    expect(r.stats.txPacedNs).toBeGreaterThan(0);
  }, 60_000);

  it('an unpaced cable holds nothing back', async () => {
    const r = await run(undefined, 200, 1200);
    expect(r.got).toEqual([...Array(200).keys()]);
    expect(r.stats.txPacedFrames).toBe(0);
    expect(r.stats.txPacedNs).toBe(0);
  }, 60_000);
});

describe('cables[].rate and burstBytes', () => {
  const cfg = (c: Record<string, unknown>) =>
    parseConfig(
      {
        devices: [{ name: 'd', ports: [{ mac: '02:00:00:00:00:01' }] }],
        cables: [{ kind: 'udp', port: 'd:1', local: '127.0.0.1:1', remote: '127.0.0.1:2', ...c }],
      },
      'f',
    );
  it('a rate in units or bit/s, a burst in bytes or units', () => {
    expect(cfg({ rate: '1Gb/s' }).cables[0]).toMatchObject({ rate: 1e9 });
    expect(cfg({ rate: '200Mbps', burstBytes: '32KiB' }).cables[0]).toMatchObject({ rate: 200e6, burstBytes: 32768 });
    expect(cfg({ rate: 5e8 }).cables[0]).toMatchObject({ rate: 5e8 });
    expect(cfg({}).cables[0]).not.toHaveProperty('rate');
  });
  it('refuses bad values, naming the field', () => {
    expect(() => cfg({ rate: 'fast' })).toThrow(/f\.cables\[0\]\.rate: a rate: expected a rate like/);
    expect(() => cfg({ rate: 0 })).toThrow(/f\.cables\[0\]\.rate/);
    expect(() => cfg({ rate: '1Gb/s', burstBytes: 10 })).toThrow('f.cables[0].burstBytes: expected 1KiB..64MiB, got 10');
    expect(() => cfg({ burstBytes: '64KiB' })).toThrow('f.cables[0].burstBytes: only a paced cable (one with a rate) has a burst');
  });
});

describe('rnic perf write_bw between two processes, the client on a paced cable (the config path)', () => {
  it('completes, and the client sent no faster than its rate over the run', { timeout: 2 * HANG_MS }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rnic-paced-'));
    // 10 Mb/s: the 3.9 MB run takes at least 3 s paced, well under 1 s unpaced, so the bound below tells them apart.
    const rate = 10e6;
    const burstBytes = 64 << 10;
    const host = (n: number, local: number, remote: number, extra: Record<string, unknown> = {}) => ({
      devices: [{ name: 'rnic0', ports: [{ mac: `02:00:00:00:00:0${n}`, ipv4: [`192.0.2.${n}`] }] }],
      cables: [{ kind: 'udp', port: 'rnic0:1', local: `127.0.0.1:${local}`, remote: `127.0.0.1:${remote}`, ...extra }],
    });
    const [pa, pb] = [await freeUdpPort(), await freeUdpPort()];
    writeFileSync(join(dir, 'server.json'), JSON.stringify(host(1, pa, pb)));
    const tcp = await freeTcpPort();
    const iters = 60;
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
    try {
      // From before the client's cable exists: its bucket starts full (one burst) no earlier than this.
      const start = performance.now();
      const model = await restartModel(parseConfig(host(2, pb, pa, { rate: '10Mb/s', burstBytes: '64KiB' }), 'client'));
      await model.cabled;
      while (!sout.includes('Waiting for client to connect') && server.exitCode === null) await new Promise((r) => setTimeout(r, 20));
      let io = new BufferIo();
      let rc = 1;
      for (let attempt = 0; attempt < 20; attempt++) {
        io = new BufferIo();
        rc = await perfMain([...args, '127.0.0.1'], { io });
        if (rc === 0 || !io.stderr.includes("Couldn't connect")) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const code = await serverDone;
      // Before the stop: the stop sends what is left unpaced.
      const elapsedS = (performance.now() - start) / 1000;
      await stopModel();
      const s = model.udpStats!()['rnic0:1']!;
      expect({ rc, err: io.stderr }, 'client').toEqual({ rc: 0, err: '' });
      expect({ code, out: code === 0 ? '' : sout }, 'server').toEqual({ code: 0, out: '' });
      expect(io.stdout).toMatch(new RegExp(`^ 65536\\s+${iters}\\s+[\\d.]+\\s+[\\d.]+`, 'm'));
      expect(s.bytesSent, '64 KiB × iters at least').toBeGreaterThan(65536 * iters);
      expect(s.bytesSent).toBeLessThanOrEqual(burstBytes + (rate / 8) * elapsedS);
      expect(s.txPacedFrames).toBeGreaterThan(0);
      expect(s.txPacedNs).toBeGreaterThan(0);
      expect({ txErrors: s.txErrors, framesDropped: s.framesDropped }).toEqual({ txErrors: 0, framesDropped: 0 });
    } finally {
      clearTimeout(kill);
      server.kill('SIGKILL');
      await stopModel();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
