/**
 * `rnic compare` of Linux rxe against the model's rxe profile, on the
 * cable. Each case is one program pair (perftest's ib_*_lat, rdma-core's
 * rc_pingpong) run twice, the server always the model (`rnic perf` /
 * `rnic rc_pingpong`, rxe profile, capturing its port, with the case's
 * fault rules on its cable):
 *   real:  the client is the C program on rxe1 in the guest (hw-tests/README.md);
 *   model: the client is the model's port of it, on a second model process
 *          on this host (rxe profile), cabled to the server by UDP.
 * The two captures (both directions at the server's port) are compared
 * flow by flow (src/compare): the client's requests and responses are
 * rxe's in one and the rxe profile's in the other. A case passes with zero
 * unexplained differences; the few it allows are listed with their reason.
 *
 *   node dist/hw-tests/compare-cable.js [case name or prefix*, ...]
 *
 * Prints one `HWTEST {json}` line per case; exit 0 all passed, 1 some
 * failed, 3 the guest cannot run here. RNIC_HW_DUMP=file appends the
 * reports and the programs' output.
 */
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { compareRuns, decodeCapture, renderReport } from '../src/compare/index.js';
import { RXE_PROFILE } from '../src/pipeline/profiles.js';
import { boot, CACHE, ensureInitramfs, ensureKernel, pickAccel, portBlock, qemuUsable } from './guest.js';
import { QEMU_SOCKET_BYTES, type Run, runModel, shQuote } from './perftest-cable.js';
import type { CaseResult } from './run-cases.js';

export interface CompareCase {
  name: string;
  /** send_lat, write_lat, ...: `ib_<test>` / `rnic perf <test>`; rc_pingpong: `ibv_rc_pingpong` / `rnic rc_pingpong`. */
  test: string;
  args: string[];
  /** Flags for the model's server only, in both runs (rc_pingpong's `--late-recv`). */
  serverArgs?: string[];
  /** Fault rules on the server's cable (docs/faults.md), the same in both runs. */
  faults?: unknown[];
  /** What this case does not count, and why (rnic compare --allow). */
  allow?: { what: string[]; why: string };
}

/**
 * -u 18: a 1.07 s transport timer. Under TCG the guest's rxe may take
 * longer than perftest's default 67 ms to answer the first packet, and a
 * loaded host the model as long; either side then resends: timing, not
 * behaviour, and it would differ between the runs.
 */
const LAT = ['-n', '20', '-u', '18'];
/** Four packets a message (the ports' MTU is 1024, as rxe1's on a 1500-byte Ethernet): a loss inside one is seen at the next packet. */
const LAT4K = [...LAT, '-s', '4096'];
/** The 5th such packet the client sends, lost before the server's port (and its capture) sees it: the server NAKs the gap. */
const lostFromClient = (opcode: string) => [{ name: 'lost-from-client', action: 'drop', on: 'rx', direction: 'b->a', match: { opcode, after: 4, count: 1 } }];
/** The 5th such packet the server sends, lost after its port sent it: the client (responder, or READ requester) reacts. */
const lostToClient = (opcode: string) => [{ name: 'lost-to-client', action: 'drop', direction: 'a->b', match: { opcode, after: 4, count: 1 } }];

/** Each operation; loss both ways; a timeout; RNR (the model's server posts its receives late). */
export const COMPARE_CASES: CompareCase[] = [
  { name: 'compare-send_lat', test: 'send_lat', args: LAT },
  { name: 'compare-write_lat', test: 'write_lat', args: LAT },
  { name: 'compare-read_lat', test: 'read_lat', args: LAT4K },
  { name: 'compare-atomic_lat', test: 'atomic_lat', args: LAT },
  {
    name: 'compare-rc_pingpong',
    test: 'rc_pingpong',
    args: ['-n', '20', '-s', '2048', '-m', '1024'],
    allow: {
      what: ['retransmission', 'timer'],
      why: "rc_pingpong's ACK timeout is 14 (67 ms), not an option: under TCG the guest's rxe (and on a loaded host the model) may answer a message later than that, and the sender resends: timing, not behaviour",
    },
  },
  {
    // The server's receives go up 200 ms after connecting: the client's first SEND is RNR NAKed until then, and retried on its RNR timer.
    name: 'compare-rc_pingpong-rnr',
    test: 'rc_pingpong',
    args: ['-n', '20', '-s', '2048', '-m', '1024'],
    serverArgs: ['--late-recv', '200'],
    allow: {
      what: ['retransmission', 'timer'],
      why: "how many RNR NAKs come before the receives are posted depends on when each side started (wall time), and rc_pingpong's 67 ms ACK timeout as above",
    },
  },
  { name: 'compare-send_lat-loss', test: 'send_lat', args: LAT4K, faults: lostFromClient('RC_SEND_MIDDLE') },
  { name: 'compare-write_lat-loss', test: 'write_lat', args: LAT4K, faults: lostFromClient('RC_RDMA_WRITE_MIDDLE') },
  { name: 'compare-read_lat-loss', test: 'read_lat', args: LAT4K, faults: lostToClient('RC_RDMA_READ_RESPONSE_MIDDLE') },
  // The server's 5th ACK lost: the client's transport timer (4.096 µs × 2^17 = 537 ms) fires and it resends.
  { name: 'compare-send_lat-timeout', test: 'send_lat', args: ['-n', '20', '-u', '17'], faults: lostToClient('ack') },
];

const isPingpong = (c: CompareCase) => c.test.endsWith('_pingpong');
const guestProgram = (c: CompareCase) => (isPingpong(c) ? `ibv_${c.test}` : `ib_${c.test}`);
const modelCommand = (c: CompareCase) => (isPingpong(c) ? [c.test, '-g', '3'] : ['perf', c.test]);

function config(file: string, o: { n: 1 | 2; local: number; remote: number; capture?: string; faults?: unknown[] }): string {
  writeFileSync(
    file,
    JSON.stringify({
      profile: 'rxe',
      devices: [
        { name: 'rnic0', ports: [{ mac: `02:00:00:00:00:0${o.n}`, ipv4: [`192.0.2.${o.n}`], mtu: 1024, ...(o.capture ? { capture: o.capture } : {}) }] },
      ],
      cables: [{ kind: 'udp', port: 'rnic0:1', local: `127.0.0.1:${o.local}`, remote: `127.0.0.1:${o.remote}`, ...(o.faults ? { faults: o.faults } : {}) }],
    }),
  );
  return file;
}

/** The model on both ends, on this host: the server, then its client retrying until the server listens. */
async function modelPair(c: CompareCase, dir: string, base: number, tcp: number): Promise<{ server: Run; client: Run; capture: string }> {
  const capture = join(dir, 'model.pcap');
  const s = config(join(dir, 'server-model.json'), { n: 1, local: base, remote: base + 1, capture, ...(c.faults ? { faults: c.faults } : {}) });
  const k = config(join(dir, 'client-model.json'), { n: 2, local: base + 1, remote: base });
  const server = runModel([...modelCommand(c), '-d', 'rnic0', ...c.args, ...(c.serverArgs ?? []), '-p', String(tcp)], s, 200_000);
  let client: Run = { code: null, out: 'not run' };
  for (let t = 0; t < 60; t++) {
    client = await runModel([...modelCommand(c), '-d', 'rnic0', ...c.args, '-p', String(tcp), '127.0.0.1'], k, 200_000);
    if (client.code === 0 || !/ECONNREFUSED|closed the connection after 0 of|Couldn't connect/.test(client.out)) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  return { server: await server, client, capture };
}

export async function runCompareCable(cases: CompareCase[]): Promise<{ results: CaseResult[]; note: string } | { cannot: string }> {
  const q = qemuUsable();
  if (q) return { cannot: q };
  const dir = join(CACHE, `compare-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const base = portBlock(6);
  const fromA = portBlock(cases.length + 20);
  const tcpA = (i: number) => fromA + i;
  // 1. model ↔ model, here (no guest needed).
  const modelRuns: { server: Run; client: Run; capture: string }[] = [];
  for (const [i, c] of cases.entries()) {
    const d = join(dir, c.name);
    mkdirSync(d, { recursive: true });
    modelRuns.push(await modelPair(c, d, base + 4, tcpA(i) + 20));
  }
  // 2. the guest's client ↔ the model's server, over the cable.
  const k = ensureKernel();
  const initrd = ensureInitramfs(k);
  const accel = await pickAccel(k.vmlinuz, initrd);
  const [udpModel, udpQemu] = [base, base + 1];
  const script = [
    'ip link set eth0 up; ip addr add 192.0.2.2/24 dev eth0; ip link set eth1 up; ip addr add 10.0.2.15/24 dev eth1',
    'rdma link add rxe1 type rxe netdev eth0 || echo "rdma link add rxe1 failed" >&2',
    ...cases.flatMap((c, i) => {
      const cmd = [guestProgram(c), '-d', 'rxe1', ...c.args, ...(isPingpong(c) ? ['-g', '1'] : []), '-p', String(tcpA(i)), '10.0.2.2'].map(shQuote).join(' ');
      return [
        `for k in $(seq 1 90); do timeout 150 ${cmd} > /tmp/o 2>&1; rc=$?; grep -q "Couldn't connect\\|Couldn't read/write remote address\\|Connection refused" /tmp/o || break; sleep 1; done`,
        `sed 's/^/CMP|${c.name}| /' /tmp/o; echo "CMP-END|${c.name}|$rc"`,
      ];
    }),
  ].join('\n');
  const realServers: Run[] = [];
  const captures: string[] = [];
  const driver = (async () => {
    for (const [i, c] of cases.entries()) {
      const capture = join(dir, c.name, 'real.pcap');
      captures.push(capture);
      const s = config(join(dir, c.name, 'server-real.json'), { n: 1, local: udpModel, remote: udpQemu, capture, ...(c.faults ? { faults: c.faults } : {}) });
      realServers.push(await runModel([...modelCommand(c), '-d', 'rnic0', ...c.args, ...(c.serverArgs ?? []), '-p', String(tcpA(i))], s, 240_000));
    }
  })();
  const netArgs = [
    '-netdev',
    `socket,id=n0,udp=127.0.0.1:${udpModel},localaddr=127.0.0.1:${udpQemu}`,
    '-device',
    'virtio-net-pci,netdev=n0,mac=52:54:00:00:00:02',
    '-netdev',
    'user,id=u0',
    '-device',
    'virtio-net-pci,netdev=u0',
  ];
  const t1 = Date.now();
  const timeout = Number(process.env['RNIC_HW_TIMEOUT'] ?? 1200) * 1000;
  const g = await boot(accel, k.vmlinuz, initrd, `${script}\n`, timeout, netArgs, { cableSocket: { port: udpQemu, bytes: QEMU_SOCKET_BYTES } });
  await driver;
  const results: CaseResult[] = [];
  const dump = process.env['RNIC_HW_DUMP'];
  for (const [i, c] of cases.entries()) {
    const guestOut = g.stdout
      .split('\n')
      .filter((l) => l.startsWith(`CMP|${c.name}| `))
      .map((l) => l.slice(`CMP|${c.name}| `.length))
      .join('\n');
    const guestCode = g.stdout.match(new RegExp(`^CMP-END\\|${c.name.replace(/-/g, '\\-')}\\|(\\d+)$`, 'm'))?.[1];
    const m = modelRuns[i]!;
    const test = `${c.name}-rxe1-vs-model-rxe-profile`;
    const ran = guestCode === '0' && realServers[i]?.code === 0 && m.server.code === 0 && m.client.code === 0;
    let detail: string;
    let ok = false;
    if (!ran) {
      detail = `did not run to the end: guest exit ${guestCode ?? 'none'}, model server ${realServers[i]?.code} (real) / ${m.server.code} (model), model client ${m.client.code}: ${(guestOut + realServers[i]?.out).slice(-300)}`;
    } else {
      const real = {
        label: `${guestProgram(c)} on rxe1 (guest) ↔ model server`,
        ...decodeCapture(new Uint8Array(readFileSync(captures[i]!)), captures[i]!),
        profile: RXE_PROFILE,
      };
      const model = {
        label: 'model client (rxe profile) ↔ model server',
        ...decodeCapture(new Uint8Array(readFileSync(m.capture)), m.capture),
        profile: RXE_PROFILE,
      };
      const r = compareRuns(real, model, { allow: c.allow?.what ?? [] });
      const text = renderReport(r);
      writeFileSync(join(dir, c.name, 'report.txt'), text);
      if (dump) appendFileSync(dump, `==== ${c.name}\n${text}\n`);
      ok = r.unexplained === 0 && r.matchedPackets > 0;
      const firsts = r.differences.filter((d) => !d.allowed && !d.explainedBy).slice(0, 3);
      detail = `${r.a.packets} vs ${r.b.packets} packets, ${r.matchedPackets} matched, ${r.unexplained} unexplained${firsts.length ? `: ${firsts.map((d) => d.text).join(' | ')}` : ''} (report: ${join(dir, c.name, 'report.txt')})`;
    }
    if (dump)
      appendFileSync(
        dump,
        `==== ${c.name} output\nguest:\n${guestOut}\nserver (real):\n${realServers[i]?.out}\nmodel pair:\n${m.server.out}\n${m.client.out}\n`,
      );
    results.push({ test, provider: 'rdma-core', device: 'rxe1', result: ok ? 'passed' : 'failed', detail, ms: 0 });
  }
  const note = `compare guest: ${accel.toUpperCase()}, whole run ${((Date.now() - t1) / 1000).toFixed(1)} s${g.timedOut ? `, killed after ${timeout / 1000} s` : ''}`;
  return { results, note };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const filter = process.argv.slice(2);
  const cases = COMPARE_CASES.filter(
    (c) => filter.length === 0 || filter.some((f) => (f.endsWith('*') ? c.name.startsWith(f.slice(0, -1)) : c.name.includes(f))),
  );
  const r = await runCompareCable(cases);
  if ('cannot' in r) {
    process.stderr.write(`compare-cable: cannot run here: ${r.cannot}\n`);
    process.exit(3);
  }
  for (const x of r.results) process.stdout.write(`HWTEST ${JSON.stringify(x)}\n`);
  process.stderr.write(`${r.note}\n`);
  process.exit(r.results.every((x) => x.result === 'passed') ? 0 : 1);
}
