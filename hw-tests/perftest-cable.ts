/**
 * perftest's ib_* programs in the guest (on rxe1, cabled to the model's
 * rnic0 over QEMU's UDP socket netdev) against `rnic perf` on this host, in
 * both roles:
 *   A. `rnic perf <test>` serves here; `ib_<test> ... 10.0.2.2` in the guest
 *      connects (QEMU user networking reaches this host's loopback as 10.0.2.2);
 *   B. `ib_<test>` serves in the guest on a host-forwarded port; `rnic perf
 *      <test> ... 127.0.0.1` connects to it from here.
 * One model process holds the cable at a time, so the cases run one after
 * the other on both sides; a side that starts early retries its connection.
 *
 *   node dist/hw-tests/perftest-cable.js [case name, or prefix*, ...]
 *
 * Prints one `HWTEST {json}` line per case and role (as run-cases.ts does);
 * exit 0 all passed, 1 some failed, 3 the guest cannot run here.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { boot, CACHE, ensureInitramfs, ensureKernel, pickAccel, PROJECT, portBlock, qemuUsable } from './guest.js';
import type { CaseResult } from './run-cases.js';

export interface PerftestCase {
  name: string;
  /** write_bw, ..., atomic_lat: `ib_<test>` in the guest, `rnic perf <test>` here; uc_pingpong, ud_pingpong: `ibv_<test>` there, `rnic <test>` here. */
  test: string;
  /** The flags both ends get (perftest wants them alike on both sides). */
  args: string[];
  /** Flags for one end only (the GID index of each device, for the pingpongs). */
  guestArgs?: string[];
  modelArgs?: string[];
  /** Fault rules on the model's cable (docs/faults.md), e.g. loss of what the guest sends (`on: 'rx'`). */
  faults?: unknown[];
  /** The model's device profile (docs/compare.md); the IBTA's when absent. */
  profile?: string;
  /**
   * Why this case is left out of a default run (it runs only when named):
   * a known failure that is not yet fixed, said here rather than hidden.
   */
  onlyWhenNamed?: string;
}

const isPingpong = (c: PerftestCase): boolean => c.test.endsWith('_pingpong');
/** The guest's program and the model's command line for a case. */
const guestProgram = (c: PerftestCase): string => (isPingpong(c) ? `ibv_${c.test}` : `ib_${c.test}`);
const modelCommand = (c: PerftestCase): string[] => (isPingpong(c) ? [c.test] : ['perf', c.test]);
/** rxe1's RoCE v2 IPv4 GID is index 1; rnic0's is 3 (docs/configuration.md). */
const PINGPONG_GUEST = ['-g', '1'];
const PINGPONG_MODEL = ['-g', '3'];

const TIMER = ['-u', '18'];
const QUICK_BW = ['-n', '200', '-s', '4096'];
/** 3% loss of the frames the model receives from the guest. */
const RX_LOSS = [{ name: 'rx-loss-3%', action: 'drop', on: 'rx', direction: 'b->a', probability: 0.03 }];
const QUICK_LAT = ['-n', '200'];
const RC_BW = [...TIMER, ...QUICK_BW];
const RC_LAT = [...TIMER, ...QUICK_LAT];

/**
 * Each program once with near-default flags, then the flags the issue lists. Every RC case
 * without a `-u` of its own runs with `-u 18` (a 1.07 s local ACK timeout): at perftest's default `-u 14`
 * (67 ms, 7 retries) a QP fails with IBV_WC_RETRY_EXC_ERR when one packet goes unanswered
 * for ~0.5 s, and a TCG guest on a loaded host answers later than 67 ms several times per
 * 200 round trips with no frame lost (rxe1's completer_retry_err, and the duplicate_request
 * it counts for the model's resends; hw-tests/README.md). UC and UD have no timer.
 */
export const PERFTEST_CASES: PerftestCase[] = [
  { name: 'write_bw', test: 'write_bw', args: RC_BW },
  { name: 'read_bw', test: 'read_bw', args: RC_BW },
  { name: 'send_bw', test: 'send_bw', args: RC_BW },
  { name: 'atomic_bw', test: 'atomic_bw', args: [...TIMER, '-n', '200'] },
  { name: 'write_lat', test: 'write_lat', args: RC_LAT },
  { name: 'read_lat', test: 'read_lat', args: RC_LAT },
  { name: 'send_lat', test: 'send_lat', args: RC_LAT },
  { name: 'atomic_lat', test: 'atomic_lat', args: RC_LAT },
  // -t 8 -u 20: up to 8 MiB messages; a TCG guest's rxe drops under 128 of them in flight within perftest's 67 ms timeout
  // The cable to a TCG guest is paced (TCG_CABLE_PACE): unpaced, from 32 KiB messages the guest dropped frames and each loss cost a 4.3 s timeout (hw-tests/README.md)
  { name: 'write_bw-a', test: 'write_bw', args: ['-a', '-n', '20', '-t', '8', '-u', '20'] },
  { name: 'write_bw-b-a', test: 'write_bw', args: ['-b', '-a', '-n', '10', '-t', '8', '-u', '20'] },
  // -u 18 (~1 s): a TCG guest's rxe answers 2 QPs × 2 directions slower than perftest's 67 ms ACK timeout
  { name: 'write_bw-b-q2', test: 'write_bw', args: ['-b', '-q', '2', '-t', '32', '-u', '18', ...QUICK_BW] },
  { name: 'send_bw-b', test: 'send_bw', args: ['-b', '-u', '18', ...QUICK_BW] },
  { name: 'read_bw-o-Q', test: 'read_bw', args: ['-o', '4', '-Q', '10', ...RC_BW] },
  { name: 'atomic_lat-CAS', test: 'atomic_lat', args: ['-A', 'CMP_AND_SWAP', ...RC_LAT] },
  // -a on UD stops at the MTU: every size in reach of a TCG guest
  { name: 'send_lat-UD-a', test: 'send_lat', args: ['-c', 'UD', '-a', '-n', '20'] },
  { name: 'send_bw-i-r', test: 'send_bw', args: ['-i', '1', '-r', '64', ...RC_BW] },
  // UC does not resend (IBTA: a lost packet loses its message), and ib_send_bw's receiver waits for every SEND: a loss fails the run. The paced cable keeps the TCG guest from dropping them.
  { name: 'send_bw-UC-gbits', test: 'send_bw', args: ['-c', 'UC', '--report_gbits', '-t', '8', ...QUICK_BW] },
  { name: 'send_bw-UD-srq', test: 'send_bw', args: ['-c', 'UD', '--use-srq', '-t', '8', '-n', '200', '-s', '1024'] },
  { name: 'send_lat-I-e', test: 'send_lat', args: ['-I', '64', '-e', ...RC_LAT] },
  {
    name: 'write_bw-l-Q-t',
    test: 'write_bw',
    args: ['-l', '4', '-t', '64', '-Q', '4', ...TIMER, '-n', '200', '-s', '1024'],
    onlyWhenNamed:
      'failed once (both roles) in a CI run of every case on a loaded host, 2026-12-02: ib_write_bw in the guest exited 1 right after its header, the model server saw the connection close; 6 of 6 runs alone passed (3 beside two busy loops); the cause is not found',
  },
  { name: 'read_bw-m-u-F', test: 'read_bw', args: ['-m', '1024', '-u', '16', '-F', ...QUICK_BW] },
  { name: 'write_bw-D', test: 'write_bw', args: ['-D', '4', ...TIMER, '-s', '4096'] },
  // 3% of what the guest sends lost as the model receives it (seeded dice): both roles recover by NAK and timer.
  { name: 'rc_pingpong-loss', test: 'rc_pingpong', args: ['-n', '100', '-s', '4096'], guestArgs: PINGPONG_GUEST, modelArgs: PINGPONG_MODEL, faults: RX_LOSS },
  { name: 'write_bw-loss', test: 'write_bw', args: ['-t', '16', '-u', '18', ...QUICK_BW], faults: RX_LOSS },
  { name: 'send_bw-loss', test: 'send_bw', args: ['-t', '16', '-u', '18', ...QUICK_BW], faults: RX_LOSS },
  // rdma-core's examples: the ports of this project against the C programs
  { name: 'uc_pingpong', test: 'uc_pingpong', args: ['-n', '50', '-s', '1024'], guestArgs: PINGPONG_GUEST, modelArgs: PINGPONG_MODEL },
  { name: 'uc_pingpong-e-c', test: 'uc_pingpong', args: ['-n', '50', '-s', '4096', '-e', '-c'], guestArgs: PINGPONG_GUEST, modelArgs: PINGPONG_MODEL },
  { name: 'ud_pingpong', test: 'ud_pingpong', args: ['-n', '50', '-s', '1024'], guestArgs: PINGPONG_GUEST, modelArgs: PINGPONG_MODEL },
  { name: 'srq_pingpong', test: 'srq_pingpong', args: ['-q', '4', '-n', '100', '-s', '1024'], guestArgs: PINGPONG_GUEST, modelArgs: PINGPONG_MODEL },
  { name: 'ud_pingpong-e-c', test: 'ud_pingpong', args: ['-n', '50', '-s', '512', '-e', '-c'], guestArgs: PINGPONG_GUEST, modelArgs: PINGPONG_MODEL },
];

/**
 * The model's cable to a TCG guest is paced (docs/fabric.md, "Pacing"):
 * at line rate the guest's receive path drops some of every long burst,
 * and each loss costs rxe's one NAK and then the requester's timer.
 * RNIC_HW_CABLE_RATE overrides it ('off': unpaced); a KVM guest keeps up.
 */
export const TCG_CABLE_PACE = { rate: '100Mb/s', burstBytes: '32KiB' };

/**
 * QEMU's cable socket's receive buffer when the harness runs as root (guest.ts deepenQemuSocket): 8 MiB,
 * ~3,600 frames (Linux counts ~2.3 KB per 1 KB frame), several seconds of the 100 Mb/s paced cable.
 * RNIC_HW_QEMU_SOCKET=0 leaves Linux's default (net.core.rmem_default, 208 KiB: ~90 frames, 14 ms).
 */
export const QEMU_SOCKET_BYTES = Number(process.env['RNIC_HW_QEMU_SOCKET'] ?? 8 * 1024 * 1024);

function cablePace(accel: 'kvm' | 'tcg'): { rate?: string; burstBytes?: string } {
  const env = process.env['RNIC_HW_CABLE_RATE'];
  if (env === 'off') return {};
  if (env) return { rate: env, burstBytes: TCG_CABLE_PACE.burstBytes };
  return accel === 'tcg' ? TCG_CABLE_PACE : {};
}

export function shQuote(a: string): string {
  return /^[\w./=:,-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`;
}

/**
 * The guest's half: clients of part A, then servers of part B, each output line tagged with the case.
 * stderr comes after stdout, each line marked `stderr: ` (stdout to a file is block-buffered, so in one
 * file an error would stand above the lines printed before it); awk ends a last line that has no newline.
 */
export function guestScript(cases: PerftestCase[], portA: (i: number) => number, portB: (i: number) => number): string {
  const lines = [
    'ip link set eth0 up; ip addr add 192.0.2.2/24 dev eth0; ip link set eth1 up; ip addr add 10.0.2.15/24 dev eth1',
    'rdma link add rxe1 type rxe netdev eth0 || echo "rdma link add rxe1 failed" >&2',
    // After each case: the guest's uptime, rxe1's counters and eth0's, for a failure's report (differences between cases).
    "cnt() { printf 'up=%s' $(cut -d' ' -f1 /proc/uptime); for f in /sys/class/infiniband/rxe1/ports/1/hw_counters/* /sys/class/net/eth0/statistics/rx_packets /sys/class/net/eth0/statistics/rx_dropped /sys/class/net/eth0/statistics/tx_packets; do printf ' %s=%s' $(basename $f) $(cat $f); done; echo; }",
    'echo "PERF-CNT|start|$(cnt)"',
  ];
  cases.forEach((c, i) => {
    const cmd = [guestProgram(c), '-d', 'rxe1', ...c.args, ...(c.guestArgs ?? []), '-p', String(portA(i)), '10.0.2.2'].map(shQuote).join(' ');
    // The model's server may not listen yet: retry while the program says it could not connect.
    lines.push(
      `for k in $(seq 1 90); do timeout 150 ${cmd} > /tmp/o 2> /tmp/e; rc=$?; cat /tmp/o /tmp/e | grep -q "Couldn't connect\\|Couldn't read/write remote address" || break; sleep 1; done`,
    );
    lines.push(
      `awk '{print "PERFA|${c.name}| " $0}' /tmp/o; awk '{print "PERFA|${c.name}| stderr: " $0}' /tmp/e; echo "PERFA-END|${c.name}|$rc"; echo "PERF-CNT|A ${c.name}|$(cnt)"`,
    );
  });
  cases.forEach((c, i) => {
    const cmd = [guestProgram(c), '-d', 'rxe1', ...c.args, ...(c.guestArgs ?? []), '-p', String(portB(i))].map(shQuote).join(' ');
    lines.push(`timeout 200 ${cmd} > /tmp/o 2> /tmp/e; rc=$?`);
    lines.push(
      `awk '{print "PERFB|${c.name}| " $0}' /tmp/o; awk '{print "PERFB|${c.name}| stderr: " $0}' /tmp/e; echo "PERFB-END|${c.name}|$rc"; echo "PERF-CNT|B ${c.name}|$(cnt)"`,
    );
  });
  lines.push("dmesg | tail -40 | sed 's/^/DMESG| /'");
  return `${lines.join('\n')}\n`;
}

export interface Run {
  code: number | null;
  out: string;
  /** Frames Linux dropped at the model's cable socket while it ran (its receive buffer full), -1 unknown. */
  modelDrops?: number;
}

/**
 * Linux's receive drops (`/proc/net/udp`'s `drops`: datagrams that found the
 * socket's receive buffer full) of the UDP socket bound to 127.0.0.1:port;
 * -1 where there is none or no /proc.
 */
export function udpSocketDrops(port: number): number {
  let text: string;
  try {
    text = readFileSync('/proc/net/udp', 'latin1');
  } catch {
    return -1;
  }
  const key = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f[1] === key) return Number(f[f.length - 1]);
  }
  return -1;
}

/** `watchPort`: the model's cable socket, whose drops are read every 200 ms while the model runs (the socket goes with the process). */
export function runModel(args: string[], cfg: string, killAfterMs: number, watchPort?: number): Promise<Run> {
  return new Promise((res) => {
    const c = spawn(process.execPath, [join(PROJECT, 'bin/rnic.js'), ...args], {
      env: { ...process.env, RNIC_CONFIG: cfg, RNIC_NO_RDMA_CORE: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const log = process.env['RNIC_HW_LOG'];
    const add = (d: Buffer): void => {
      out += d.toString();
      if (log) appendFileSync(log, d);
    };
    c.stdout.on('data', add);
    c.stderr.on('data', add);
    const killer = setTimeout(() => c.kill('SIGKILL'), killAfterMs);
    let modelDrops = -1;
    const watch = watchPort === undefined ? undefined : setInterval(() => (modelDrops = Math.max(modelDrops, udpSocketDrops(watchPort))), 200);
    c.on('close', (code) => {
      clearTimeout(killer);
      if (watch) clearInterval(watch);
      res({ code, out, ...(watchPort === undefined ? {} : { modelDrops }) });
    });
  });
}

/** What a finished run must show: a results table with a row (a BW or a latency row), or the pingpong's two lines. */
function hasResults(out: string, test: string): boolean {
  if (test.endsWith('_pingpong')) return /bytes in [\d.]+ seconds/.test(out) && /iters in [\d.]+ seconds/.test(out) && !/invalid data/.test(out);
  const row = test.endsWith('_bw') ? /^ \d+\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s*$/m : /^ \d+\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+/m;
  return row.test(out);
}

/** The server of read_lat / atomic_lat prints no table (perftest's passive side). */
function passiveServer(test: string): boolean {
  return test === 'read_lat' || test === 'atomic_lat';
}

export async function runPerftestCable(cases: PerftestCase[]): Promise<{ results: CaseResult[]; note: string } | { cannot: string }> {
  const q = qemuUsable();
  if (q) return { cannot: q };
  const k = ensureKernel();
  const initrd = ensureInitramfs(k);
  const accel = await pickAccel(k.vmlinuz, initrd);
  const base = portBlock(2);
  const [udpModel, udpQemu] = [base, base + 1];
  const [fromA, fromB] = [portBlock(cases.length), portBlock(cases.length)];
  const portA = (i: number): number => fromA + i;
  const portB = (i: number): number => fromB + i;
  const pace = cablePace(accel);
  const cable = { kind: 'udp', port: 'rnic0:1', local: `127.0.0.1:${udpModel}`, remote: `127.0.0.1:${udpQemu}`, ...pace };
  const device = (capture?: string) => ({ name: 'rnic0', ports: [{ mac: '02:00:00:00:00:01', ipv4: ['192.0.2.1'], ...(capture ? { capture } : {}) }] });
  // Each case and role captures the model's port (both directions) and keeps the capture, both programs'
  // output and the cable's socket drops in `work` when it fails (RNIC_HW_DUMP: every capture, beside the dump).
  const dump = process.env['RNIC_HW_DUMP'];
  const work = join(CACHE, `perftest-cable-${process.pid}`);
  mkdirSync(work, { recursive: true });
  const pcapOf = (c: PerftestCase, role: 'A' | 'B'): string => (dump ? `${dump}.${c.name}-${role}.pcap` : join(work, `${c.name}-${role}.pcap`));
  const cfgFor = (c: PerftestCase, role: 'A' | 'B'): string => {
    const f = join(work, `${c.name}-${role}.json`);
    writeFileSync(
      f,
      JSON.stringify({
        ...(c.profile ? { profile: c.profile } : {}),
        devices: [device(pcapOf(c, role))],
        cables: [{ ...cable, ...(c.faults ? { faults: c.faults } : {}) }],
      }),
    );
    return f;
  };
  const fwd = cases.map((_, i) => `,hostfwd=tcp:127.0.0.1:${portB(i)}-:${portB(i)}`).join('');
  const netArgs = [
    '-netdev',
    `socket,id=n0,udp=127.0.0.1:${udpModel},localaddr=127.0.0.1:${udpQemu}`,
    '-device',
    'virtio-net-pci,netdev=n0,mac=52:54:00:00:00:02',
    '-netdev',
    `user,id=u0${fwd}`,
    '-device',
    'virtio-net-pci,netdev=u0',
  ];
  let guestDone = false;
  const host: { a: Run[]; b: Run[] } = { a: [], b: [] };
  // Frames QEMU's end of the cable dropped (its socket's receive buffer full: the guest did not take them) while each case ran.
  const qemuDrops: { a: number[]; b: number[] } = { a: [], b: [] };
  // Drops since d0 (-1 when QEMU had not bound its socket yet: all its drops are this case's).
  const since = (d0: number): number => {
    const d = udpSocketDrops(udpQemu);
    return d < 0 ? -1 : d - Math.max(d0, 0);
  };
  const driver = (async () => {
    for (let i = 0; i < cases.length; i++) {
      const c = cases[i] as PerftestCase;
      const d0 = udpSocketDrops(udpQemu);
      host.a.push(
        await runModel([...modelCommand(c), '-d', 'rnic0', ...c.args, ...(c.modelArgs ?? []), '-p', String(portA(i))], cfgFor(c, 'A'), 240_000, udpModel),
      );
      qemuDrops.a.push(since(d0));
    }
    for (let i = 0; i < cases.length; i++) {
      const c = cases[i] as PerftestCase;
      let r: Run = { code: null, out: 'not run' };
      const d0 = udpSocketDrops(udpQemu);
      // Until the guest's server listens, QEMU accepts and drops: the version exchange then reads 0 bytes.
      for (let t = 0; t < 120 && !guestDone; t++) {
        r = await runModel(
          [...modelCommand(c), '-d', 'rnic0', ...c.args, ...(c.modelArgs ?? []), '-p', String(portB(i)), '127.0.0.1'],
          cfgFor(c, 'B'),
          240_000,
          udpModel,
        );
        if (
          r.code === 0 ||
          !/version: the other side closed the connection after 0 of|ECONNREFUSED|ECONNRESET|Couldn't read\/write remote address|read 0 of 52/.test(r.out)
        )
          break;
        await new Promise((res) => setTimeout(res, 1000));
      }
      host.b.push(r);
      qemuDrops.b.push(since(d0));
    }
  })();
  const timeout = Number(process.env['RNIC_HW_TIMEOUT'] ?? 1500) * 1000;
  const t1 = Date.now();
  const g = await boot(accel, k.vmlinuz, initrd, guestScript(cases, portA, portB), timeout, netArgs, {
    cableSocket: { port: udpQemu, bytes: QEMU_SOCKET_BYTES },
  });
  guestDone = true;
  await driver;
  const results: CaseResult[] = [];
  const guestPart = (tag: 'PERFA' | 'PERFB', name: string): { code: number | null; out: string } => {
    const out = g.stdout
      .split('\n')
      .filter((l) => l.startsWith(`${tag}|${name}| `))
      .map((l) => l.slice(`${tag}|${name}| `.length))
      .join('\n');
    const m = g.stdout.match(new RegExp(`^${tag}-END\\|${name.replace(/[-]/g, '\\-')}\\|(\\d+)$`, 'm'));
    return { code: m ? Number(m[1]) : null, out };
  };
  const verdict = (r: { code: number | null; out: string }, test: string, isServer: boolean): boolean =>
    r.code === 0 && (isServer && passiveServer(test) ? true : hasResults(r.out, test));
  const tail = (s: string): string => s.trim().split('\n').slice(-6).join(' | ').slice(-600);
  // The guest's counters after each case (PERF-CNT lines, in run order), as name=value maps.
  const counters = [...g.stdout.matchAll(/^PERF-CNT\|([^|]*)\|(.*)$/gm)].map((m) => ({
    at: m[1] as string,
    v: new Map((m[2] as string).split(' ').map((kv) => kv.split('=') as [string, string])),
  }));
  /** What changed in the guest's counters over one case and role: `name +delta` (and its seconds of guest uptime). */
  const counterDelta = (at: string): string => {
    const k = counters.findIndex((x) => x.at === at);
    if (k <= 0) return 'no counters from the guest';
    const [p, q] = [counters[k - 1]?.v, counters[k]?.v] as [Map<string, string>, Map<string, string>];
    const parts = [...q].flatMap(([n, v]) => {
      const d = Number(v) - Number(p.get(n) ?? 0);
      return d ? [n === 'up' ? `${d.toFixed(1)} s` : `${n} +${d}`] : [];
    });
    return parts.join(', ');
  };
  const drops = (r: Run, q: number | undefined): string =>
    `cable socket drops: at QEMU ${q === undefined || q < 0 ? '?' : q}, at the model ${r.modelDrops === undefined || r.modelDrops < 0 ? '?' : r.modelDrops}`;
  // A failed case and role keeps both programs' whole output, the guest's counters and the capture in `work`.
  let kept = 0;
  const keep = (c: PerftestCase, role: 'A' | 'B', model: Run, guest: { code: number | null; out: string }, q: number | undefined, failed: boolean): string => {
    const pcap = pcapOf(c, role);
    if (!failed) {
      if (!dump) rmSync(pcap, { force: true });
      return '';
    }
    kept++;
    const f = join(work, `${c.name}-${role}.txt`);
    writeFileSync(
      f,
      [
        `${c.name}, role ${role} (${role === 'A' ? 'the model serves' : 'the guest serves'}): ${guestProgram(c)} ${c.args.join(' ')}`,
        drops(model, q),
        `guest counters over the case: ${counterDelta(`${role} ${c.name}`)}`,
        `capture of the model's port: ${pcap}`,
        `==== model (rnic ${modelCommand(c).join(' ')}), exit ${model.code}`,
        model.out,
        `==== guest (${guestProgram(c)}), exit ${guest.code}`,
        guest.out,
        '',
      ].join('\n'),
    );
    return ` (both programs' output: ${f})`;
  };
  cases.forEach((c, i) => {
    const ma = host.a[i] ?? { code: null, out: 'not run' };
    const ga = guestPart('PERFA', c.name);
    const mb = host.b[i] ?? { code: null, out: 'not run' };
    const gb = guestPart('PERFB', c.name);
    const tag = isPingpong(c) ? c.name : `perftest-${c.name}`;
    const a = `${tag}-model-server-vs-${guestProgram(c)}-client-udp-cable`;
    const b = `${tag}-${guestProgram(c)}-server-vs-model-client-udp-cable`;
    const okMa = verdict(ma, c.test, true);
    const okGa = verdict(ga, c.test, false);
    const okMb = verdict(mb, c.test, false);
    const okGb = verdict(gb, c.test, true);
    const keptA = keep(c, 'A', ma, ga, qemuDrops.a[i], !(okMa && okGa));
    const keptB = keep(c, 'B', mb, gb, qemuDrops.b[i], !(okMb && okGb));
    const dropsA = drops(ma, qemuDrops.a[i]);
    const dropsB = drops(mb, qemuDrops.b[i]);
    results.push({
      test: a,
      provider: 'model',
      device: 'rnic0',
      result: okMa ? 'passed' : 'failed',
      detail: okMa ? `${tail(ma.out).slice(-200)}; ${dropsA}` : `exit ${ma.code}: ${tail(ma.out)}; ${dropsA}${keptA}`,
      ms: 0,
    });
    results.push({
      test: a,
      provider: 'rdma-core',
      device: 'rxe1',
      result: okGa ? 'passed' : 'failed',
      detail: ga.code === null ? 'no result from the guest' : `exit ${ga.code}: ${tail(ga.out)}${okGa ? '' : keptA}`,
      ms: 0,
    });
    results.push({
      test: b,
      provider: 'model',
      device: 'rnic0',
      result: okMb ? 'passed' : 'failed',
      detail: okMb ? `${tail(mb.out).slice(-200)}; ${dropsB}` : `exit ${mb.code}: ${tail(mb.out)}; ${dropsB}${keptB}`,
      ms: 0,
    });
    results.push({
      test: b,
      provider: 'rdma-core',
      device: 'rxe1',
      result: okGb ? 'passed' : 'failed',
      detail: gb.code === null ? 'no result from the guest' : `exit ${gb.code}: ${tail(gb.out)}${okGb ? '' : keptB}`,
      ms: 0,
    });
  });
  for (const c of cases) for (const role of ['A', 'B']) rmSync(join(work, `${c.name}-${role}.json`), { force: true });
  if (kept === 0) rmSync(work, { recursive: true, force: true });
  const note = `${kept ? `failures kept (both programs' output, captures) in ${work}; ` : ''}cable: ${pace.rate ? `paced to ${pace.rate}, burst ${pace.burstBytes}` : 'unpaced'}; guest: ${accel.toUpperCase()}, ready in ${g.bootSeconds?.toFixed(1) ?? '?'} s, whole run ${((Date.now() - t1) / 1000).toFixed(1)} s${g.timedOut ? `, killed after ${timeout / 1000} s` : ''}`;
  if (process.env['RNIC_HW_DUMP'])
    writeFileSync(
      process.env['RNIC_HW_DUMP'],
      `${g.stdout}\n==== host A\n${host.a.map((r) => r.out).join('\n----\n')}\n==== host B\n${host.b.map((r) => r.out).join('\n----\n')}\n==== console\n${g.console.slice(-3000)}`,
    );
  return { results, note };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const filter = process.argv.slice(2);
  // A name selects that case; a name ending in * every case it begins.
  // A case with onlyWhenNamed runs only when named in full.
  const cases = PERFTEST_CASES.filter((c) =>
    c.onlyWhenNamed ? filter.includes(c.name) : filter.length === 0 || filter.some((f) => (f.endsWith('*') ? c.name.startsWith(f.slice(0, -1)) : c.name === f)),
  );
  const r = await runPerftestCable(cases);
  if ('cannot' in r) {
    process.stderr.write(`perftest-cable: cannot run here: ${r.cannot}\n`);
    process.exit(3);
  }
  for (const x of r.results) process.stdout.write(`HWTEST ${JSON.stringify(x)}\n`);
  process.stderr.write(`${r.note}\n`);
  process.exit(r.results.every((x) => x.result === 'passed') ? 0 : 1);
}
