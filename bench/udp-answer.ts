/**
 * How soon the model answers a real peer on a UDP cable: a separate
 * process sends ARP requests for the model port's address as datagrams
 * (the QEMU socket convention) and times each reply, first with the
 * device loop idle, then while the same loop carries RDMA WRITE traffic
 * between two other devices (perf write_bw). The reply is made by the
 * port as soon as the request reaches the pipeline, so this is the time a
 * frame takes from the socket to the pipeline and back.
 *
 *   node dist/bench/udp-answer.js [workers=1] [samples=300]
 */
import { fork } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

async function freeUdpPort(): Promise<number> {
  const s = createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', () => r()));
  const p = s.address().port;
  await new Promise<void>((r) => s.close(() => r()));
  return p;
}

/** An ARP request from 02:00:00:00:00:99 / 192.0.2.99 for 192.0.2.1. */
function arpRequest(): Buffer {
  return Buffer.from(
    'ffffffffffff' + '020000000099' + '0806' + '0001' + '0800' + '06' + '04' + '0001' + '020000000099' + 'c0000263' + '000000000000' + 'c0000201',
    'hex',
  );
}

function stats(xs: number[]): string {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!.toFixed(0);
  return `min ${s[0]!.toFixed(0)}  median ${q(0.5)}  p90 ${q(0.9)}  p99 ${q(0.99)}  max ${s[s.length - 1]!.toFixed(0)} µs (${s.length} samples)`;
}

if (process.argv[2] === 'pinger') {
  const [local, remote, samples] = [Number(process.argv[3]), Number(process.argv[4]), Number(process.argv[5])];
  const sock = createSocket('udp4');
  await new Promise<void>((r) => sock.bind(local, '127.0.0.1', () => r()));
  const req = arpRequest();
  let sent = 0n;
  let waiting: ((t: bigint) => void) | null = null;
  sock.on('message', (m) => {
    if (m.length >= 42 && m.readUInt16BE(12) === 0x0806 && m.readUInt16BE(20) === 2) waiting?.(process.hrtime.bigint());
  });
  const rtt: number[] = [];
  let lost = 0;
  process.on('message', async (m: { type: string }) => {
    if (m.type !== 'go') return;
    rtt.length = 0;
    lost = 0;
    for (let i = 0; i < samples; i++) {
      await new Promise((r) => setTimeout(r, 2));
      const got = new Promise<bigint | null>((r) => {
        waiting = r;
        setTimeout(() => r(null), 1000);
      });
      sent = process.hrtime.bigint();
      sock.send(req, remote, '127.0.0.1');
      const t = await got;
      waiting = null;
      if (t === null) lost++;
      else rtt.push(Number(t - sent) / 1000);
    }
    process.send!({ type: 'done', rtt, lost });
  });
  process.send!({ type: 'ready' });
} else {
  const workers = Number(process.argv[2] ?? 1);
  const samples = Number(process.argv[3] ?? 300);
  const dir = mkdtempSync(join(tmpdir(), 'rnic-ans-'));
  const [pm, pp] = [await freeUdpPort(), await freeUdpPort()];
  const dev = (n: number) => ({ name: `rnic${n}`, ports: [{ mac: `02:00:00:00:00:0${n + 1}`, ipv4: [`192.0.2.${n + 1}`] }] });
  const cfg = {
    workers,
    devices: [dev(0), dev(1), dev(2)],
    cables: [
      { kind: 'udp', port: 'rnic0:1', local: `127.0.0.1:${pm}`, remote: `127.0.0.1:${pp}` },
      { kind: 'wire', a: 'rnic1:1', b: 'rnic2:1' },
    ],
  };
  writeFileSync(join(dir, 'm.json'), JSON.stringify(cfg));
  process.env.RNIC_CONFIG = join(dir, 'm.json');
  const v = await import('../src/index.js');
  const { main: perf } = await import('../examples/perf.js');
  const { BufferIo } = await import('../examples/common/io.js');
  v.ibv_get_device_list();
  const child = fork(fileURLToPath(import.meta.url), ['pinger', String(pp), String(pm), String(samples)]);
  const next = () => new Promise<{ type: string; rtt?: number[]; lost?: number }>((r) => child.once('message', r));
  await next();
  await new Promise((r) => setTimeout(r, 300));
  console.log(`ARP over a UDP cable to the model, answered by its port (workers ${workers})`);
  child.send({ type: 'go' });
  let m = await next();
  console.log(`  device loop idle:        ${stats(m.rtt!)}${m.lost ? `, ${m.lost} lost` : ''}`);
  let done = false;
  let runs = 0;
  let failed = 0;
  const load = (async () => {
    while (!done) {
      const io = new BufferIo();
      runs++;
      if ((await perf(['write_bw', '--loopback', '-d', 'rnic1', '--peer-ib-dev', 'rnic2', '-s', '65536', '-n', '500'], { io })) !== 0) failed++;
    }
  })();
  child.send({ type: 'go' });
  m = await next();
  done = true;
  await load;
  console.log(`  loop busy with write_bw: ${stats(m.rtt!)}${m.lost ? `, ${m.lost} lost` : ''} (${runs} perf runs, ${failed} failed)`);
  child.kill();
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}
