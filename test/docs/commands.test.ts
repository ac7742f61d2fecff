/**
 * Every command the README and docs/ show in a ```sh block, run exactly as
 * written, the way a new user would: in a fresh checkout (the repository's
 * files copied to a temporary directory, then the README's own
 * `npm install && npm start`), one command at a time, each with a bound on
 * how long it may take, checking its exit status and a meaningful part of
 * what it prints or writes.
 *
 * - A line ending in `&` starts a server; the next line is its client. A
 *   comment "in another shell: CMD" makes CMD the client of the line. The
 *   server runs in the background until it listens on its TCP port, then the
 *   client runs; both must succeed.
 * - A block whose info string is `sh vm` runs inside a virtual machine the
 *   reader brings (docs/fabric.md): reported as skipped, with the reason.
 * - `requires=PROGRAM` in the info string (e.g. `sh requires=tshark`)
 *   skips the block, saying so, only when PROGRAM is not installed.
 * - Every command needs an entry in EXPECT below (status and output); a
 *   command added to a document without one fails here.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const DOCS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];
/** The checkout, a directory of its own per run (two runs at once must not share one). */
let WORK = '';
/** What one command may take (npm install builds the package: minutes on a loaded machine). */
const COMMAND_TIMEOUT_MS = 8 * 60_000;

interface Expect {
  status?: number;
  /** Matched against stdout + stderr. */
  out?: RegExp;
  /** Files (relative to the checkout) the command must leave. */
  files?: string[];
  /** For a pair: what the client prints. */
  clientOut?: RegExp;
  /** Not run, and why. */
  skip?: string;
  /** Its own bound, ms, when COMMAND_TIMEOUT_MS is too short for it on a loaded machine. */
  timeoutMs?: number;
}

const EXPECT: Record<string, Expect> = {
  'npm install && npm start': {
    out: /== SEND\/RECV ping-pong[\s\S]*== RDMA WRITE bandwidth[\s\S]*== RDMA READ bandwidth[\s\S]*rnic1: .*rx_read_requests=\d+/,
    files: ['rnic-demo.pcap', 'dist/src/cli/main.js'],
  },
  'npm test': { skip: 'it is the command that runs this test' },
  'npx rnic demo --pcap run.pcap': { out: /== RDMA WRITE bandwidth/, files: ['run.pcap'] },
  'npx rnic devinfo -v': { out: /hca_id:\trnic0[\s\S]*max_qp:\s+\d+[\s\S]*hca_core_clock:\t+\d+kHZ[\s\S]*GID\[\s*3\]:\t\t::ffff:192\.0\.2\.1, RoCE v2\n/ },
  'npx rnic rc_pingpong': {
    out: /8192000 bytes in [\d.]+ seconds/,
    clientOut: /remote address: LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID ::ffff:192\.0\.2\.1\n8192000 bytes in/,
  },
  'npx rnic perf write_bw --loopback -s 65536 -n 1000 -x 3': { out: /RDMA_Write BW Test[\s\S]*GID index\s+: 3[\s\S]*\n 65536\s+1000\s+[\d.]+\s+[\d.]+/ },
  'npx rnic counters -v': { out: /rnic0 port 1:[\s\S]*port_xmit_data +\d+[\s\S]*port_rcv_packets +\d+[\s\S]*rnic1 port 1:/ },
  'npx rnic compare scenarios/compare-profiles.json': {
    out: /9 flows aligned, 68 packets matched[\s\S]*0 unexplained[\s\S]*\[profile: ipHopLimit\] RC_SEND_FIRST PSN \+0: ttl 1 in A, 64 in B[\s\S]*\[profile: udSourcePort\] UD_SEND_ONLY[\s\S]*identical, modulo/,
  },
  "npx rnic compare scenarios/write-basic.json --b ibta --fault-b 'drop:opcode=RC_RDMA_WRITE_ONLY,after=10,count=1'": {
    status: 1,
    out: /\[DIFFERS\] B sent RC_RDMA_WRITE_ONLY PSN \+10\.\.\+\d+ \(\d+ packets, transmission 2\); A did not[\s\S]*syndrome 0x1f \(ACK\) in A, 0x60 \(NAK PSN sequence error\) in B/,
  },
  'npx rnic sim scenarios/compare-profiles.json --profile rxe --out rxe-run/ --quiet': { files: ['rxe-run/capture.pcap', 'rxe-run/config.json'] },
  'npx rnic compare rxe-run/ rxe-run/capture.pcap --b rxe': { out: /\nno differences\n/ },
  'npx rnic perf write_bw --loopback --profile rxe -n 5 -s 64': { out: /RDMA_Write BW Test[\s\S]*\n 64\s+5\s+[\d.]+\s+[\d.]+/ },
  'npx rnic sim scenarios/drop-5th-packet.json --out run/': {
    out: /checks: all passed\n  wrote config\.json, timeline\.json, counters\.json, summary\.txt, summary\.json, flows\.json, capture\.pcap, capture-rnic1-1\.pcap in run\//,
    files: ['run/capture.pcap', 'run/counters.json', 'run/flows.json'],
  },
  'npx rnic sim scenarios/incast-8to1.json --out incast/': {
    out: /switch sw0: 0 dropped[\s\S]*checks: all passed\n  wrote .*pfc\.json, timeseries\.json, queue-depth\.svg, flow-rate\.svg, pauses\.svg, fct\.svg, cc-rate\.svg, report\.html in incast\//,
    files: ['incast/flows.json', 'incast/pfc.json', 'incast/report.html', 'incast/summary.json'],
  },
  'npx rnic campaign --campaign campaigns/fabric.json --seeds 20 --jobs 1 --quiet': { out: /campaign fabric: seeds 0\.\.19 \(20\): 20 passed, 0 failed/ },
  "npx rnic campaign --seeds 20 --jobs 1 --quiet --set 'topology.hosts=[3,6]' --set topology.pfc=1 --set 'faults.perSeed=0' --set 'gids=[1,3,5]' --set 'sizes.max=65536' --set topology.converge=1":
    {
      out: /campaign default: seeds 0\.\.19 \(20\): 20 passed, 0 failed/,
    },
  'npx rnic pcap-sample --out sample.pcap': { out: /wrote \d+ Ethernet frames .* to sample\.pcap/, files: ['sample.pcap', 'sample-ib.pcap'] },
  // Every benchmark, spinning threads among them: ~2 min alone, over 8 min with both cores busy.
  'npm run bench': { out: /## wire codec[\s\S]*## sim scheduler/, timeoutMs: 25 * 60_000 },
  'npm run bench -- wire': { out: /## wire codec.*\n.*Mpps/ },
  'npx tsc -b --dry': { out: /Project '[^']*src\/wire\/tsconfig\.json' is up to date/ },
  'RNIC_NO_MODEL=1 npx rnic rc-pingpong': { status: 1, out: /^no RDMA devices found\n/m },
  'RNIC_CONFIG=examples/config/host-a.json npx rnic rc-pingpong -d rnic0 -g 3 -c -e': {
    out: /remote address: .*GID ::ffff:192\.0\.2\.2\n8192000 bytes in/,
    clientOut: /local address: .*GID ::ffff:192\.0\.2\.2\n  remote address: .*GID ::ffff:192\.0\.2\.1\n8192000 bytes in/,
  },
  'RNIC_CONFIG=examples/config/host-a.json npx rnic xsrq_pingpong -d rnic0 -g 3 -n 10': {
    out: / {2}remote: LID 0000, QPN RECV [0-9a-f]{6} SEND [0-9a-f]{6}, PSN [0-9a-f]{6}, SRQN [0-9a-f]{6}, GID ::ffff:192\.0\.2\.2\n {3}local: .*GID ::ffff:192\.0\.2\.1\nsuccess\n/,
    clientOut: / {3}local: .*GID ::ffff:192\.0\.2\.2\n {2}remote: .*SRQN [0-9a-f]{6}, GID ::ffff:192\.0\.2\.1\nsuccess\n/,
  },
  'npx rnic sim scenarios/drop-5th-packet.json --out run1/': {
    out: /scenario drop-5th-packet, seed 1: ended \(complete\)[\s\S]*checks: all passed/,
    files: ['run1/capture.pcap'],
  },
  "npx rnic sim scenarios/random-loss.json --seed 42 --fault 'delay:p=1%,delay=5us'": {
    out: /scenario random-loss, seed 42:[\s\S]*checks: all passed/,
    files: ['sim-out/random-loss/capture.pcap'],
  },
};

interface Command {
  doc: string;
  line: number;
  cmd: string;
  /** The client of a server command. */
  client?: string;
  skip?: string;
}

function have(program: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${program}`], { stdio: 'ignore' }).status === 0;
}

/** `# comment` at the end of a line (outside quotes). */
function splitComment(l: string): [string, string] {
  let q: string | null = null;
  for (let i = 0; i < l.length; i++) {
    const c = l[i]!;
    if (q) {
      if (c === q) q = null;
    } else if (c === "'" || c === '"') q = c;
    else if (c === '#' && (i === 0 || /\s/.test(l[i - 1]!))) return [l.slice(0, i).trimEnd(), l.slice(i + 1).trim()];
  }
  return [l.trimEnd(), ''];
}

function commands(): Command[] {
  const out: Command[] = [];
  for (const doc of DOCS) {
    const lines = readFileSync(join(ROOT, doc), 'utf8').split('\n');
    for (let i = 0; i < lines.length; i++) {
      const open = /^```(sh|bash|shell)\b(.*)$/.exec(lines[i]!);
      if (!open) continue;
      const attrs = open[2]!.trim().split(/\s+/).filter(Boolean);
      let skip: string | undefined;
      if (attrs.includes('vm')) skip = 'runs in a virtual machine the reader brings (docs/fabric.md)';
      for (const a of attrs) {
        const m = /^requires=(.+)$/.exec(a);
        if (m && !have(m[1]!)) skip = `needs ${m[1]}, which is not installed`;
      }
      const block: { cmd: string; comment: string; line: number }[] = [];
      let j = i + 1;
      let pending = '';
      for (; j < lines.length && !lines[j]!.startsWith('```'); j++) {
        const raw = lines[j]!;
        if (raw.endsWith('\\')) {
          pending += raw.slice(0, -1) + ' ';
          continue;
        }
        const [cmd, comment] = splitComment(pending + raw);
        pending = '';
        if (cmd.trim()) block.push({ cmd: cmd.trim(), comment, line: j + 1 });
      }
      i = j;
      for (let k = 0; k < block.length; k++) {
        const b = block[k]!;
        const other = /in another shell: (.+)$/.exec(b.comment);
        if (b.cmd.endsWith('&')) {
          const client = block[++k];
          out.push({ doc, line: b.line, cmd: b.cmd.slice(0, -1).trim(), ...(client ? { client: client.cmd } : {}), ...(skip ? { skip } : {}) });
        } else out.push({ doc, line: b.line, cmd: b.cmd, ...(other ? { client: other[1]!.trim() } : {}), ...(skip ? { skip } : {}) });
      }
    }
  }
  return out;
}

const ALL = commands();

// ---------------------------------------------------------------------------
// Running

interface Ran {
  status: number | null;
  out: string;
  timedOut: boolean;
  /** The bound it ran under. */
  timeoutMs: number;
}

const children = new Set<number>();
afterAll(() => {
  for (const pid of children) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  if (!WORK) return;
  rmSync(WORK, { recursive: true, force: true });
  // `npx rnic` in the checkout linked it into npx's cache: take that entry away too.
  const cache = spawnSync('npm', ['config', 'get', 'cache'], { encoding: 'utf8' }).stdout.trim();
  const npx = join(cache, '_npx');
  if (!cache || !existsSync(npx)) return;
  for (const d of readdirSync(npx)) {
    try {
      if (readFileSync(join(npx, d, 'package.json'), 'utf8').includes(WORK)) rmSync(join(npx, d), { recursive: true, force: true });
    } catch {
      // not an npx entry
    }
  }
});

/** Environment of a user's shell: none of this test runner's, and npx may not fetch anything. */
function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^(VITEST|RNIC_|NODE_OPTIONS$|NODE_ENV$|npm_)/.test(k)) env[k] = v;
  env['npm_config_yes'] = 'false';
  env['npm_config_update_notifier'] = 'false';
  env['npm_config_fund'] = 'false';
  env['npm_config_audit'] = 'false';
  return env;
}

function start(cmd: string, timeoutMs = COMMAND_TIMEOUT_MS): { done: Promise<Ran>; pid: number; exited: () => boolean } {
  const p = spawn('bash', ['-c', cmd], { cwd: WORK, env: userEnv(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const pid = p.pid!;
  children.add(pid);
  let out = '';
  let timedOut = false;
  let exited = false;
  p.stdout.on('data', (b: Buffer) => (out += b.toString()));
  p.stderr.on('data', (b: Buffer) => (out += b.toString()));
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // gone
    }
  }, timeoutMs);
  const done = new Promise<Ran>((resolve) => {
    p.on('close', (status) => {
      exited = true;
      clearTimeout(timer);
      children.delete(pid);
      resolve({ status, out, timedOut, timeoutMs });
    });
  });
  return { done, pid, exited: () => exited };
}

/** Whether something listens on TCP `port` (IPv4 or IPv6), from /proc/net: no connection is made. */
function listening(port: number): boolean {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(f, 'utf8');
    } catch {
      continue;
    }
    for (const row of text.split('\n').slice(1)) {
      const cols = row.trim().split(/\s+/);
      if (cols[1]?.endsWith(`:${hex}`) && cols[3] === '0A') return true;
    }
  }
  return false;
}

/** What rc_pingpong prints when IBTA's local ACK timeout (67 ms, retry_cnt 7) ran out. */
const TRANSPORT_TIMEOUT = /transport retry counter exceeded/;

async function runPair(server: string, client: string): Promise<{ server: Ran; client: Ran }> {
  // The realtime model keeps IBTA's timers: with both cores busy a process
  // can be off the CPU for longer than rc_pingpong's fixed 8 × 67 ms, and
  // then it times out as a real device would. That is the machine, not the
  // command this test checks: such a run (either side timing out) is tried
  // twice more, and only then does it count.
  for (let attempt = 1; ; attempt++) {
    const s = start(server);
    // As a user would: start the client once the server is up (rc_pingpong's TCP port).
    while (!listening(18515) && !s.exited()) await new Promise((r) => setTimeout(r, 100));
    const c = await start(client).done;
    // A client that failed leaves its server waiting for ever (as the C program does): end it.
    if (c.status !== 0 && !s.exited()) kill(s.pid);
    const sr = await s.done;
    if (attempt < 3 && (c.status !== 0 || sr.status !== 0) && TRANSPORT_TIMEOUT.test(c.out + sr.out)) continue;
    return { server: sr, client: c };
  }
}

function kill(pid: number): void {
  try {
    process.kill(-pid, 'SIGTERM');
  } catch {
    // gone
  }
}

/** What a directory of the checkout holds, for a missing-file message. */
function listing(dir: string): string {
  try {
    return `${dir}/ holds: ${readdirSync(join(WORK, dir)).sort().join(' ') || '(nothing)'}`;
  } catch (err) {
    return `${dir}/: ${(err as Error).message}`;
  }
}

function describeRan(r: Ran): string {
  return `exit ${r.status}${r.timedOut ? ` (killed after ${r.timeoutMs / 1000} s)` : ''}; output:\n${r.out.slice(-3000)}`;
}

// ---------------------------------------------------------------------------
// A fresh checkout: the files git would commit, as they are now.

function checkout(): void {
  WORK = mkdtempSync(join(tmpdir(), 'rnic-doc-commands-'));
  const r = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git ls-files failed: ${r.stderr}`);
  for (const f of r.stdout.split('\0').filter(Boolean)) {
    const from = join(ROOT, f);
    if (!existsSync(from)) continue; // deleted in the working tree
    const to = join(WORK, f);
    mkdirSync(dirname(to), { recursive: true });
    copyFileSync(from, to);
    chmodSync(to, statSync(from).mode & 0o777);
  }
}

let install: Ran | undefined;

describe('every command in README.md and docs/, as written', () => {
  beforeAll(async () => {
    checkout();
    // The README's first command, which every other one needs.
    install = await start('npm install && npm start').done;
  }, COMMAND_TIMEOUT_MS + 60_000);

  it('the documents have commands, and each has an expectation here', () => {
    expect(ALL.length).toBeGreaterThan(10);
    expect(ALL.filter((c) => !c.skip && !EXPECT[c.cmd]).map((c) => `${c.doc}:${c.line}: ${c.cmd}`)).toEqual([]);
    expect(ALL.find((c) => c.cmd === 'npx rnic rc_pingpong')?.client).toBe('npx rnic rc_pingpong 127.0.0.1');
  });

  for (const c of ALL) {
    const e = EXPECT[c.cmd] ?? {};
    const skip = c.skip ?? e.skip;
    const title = `${c.doc}:${c.line}: ${c.cmd}${c.client ? `  +  ${c.client}` : ''}${skip ? ` — skipped: ${skip}` : ''}`;
    it.skipIf(skip !== undefined)(
      title,
      async () => {
        let r: Ran;
        if (c.cmd === 'npm install && npm start') r = install!;
        else if (c.client) {
          const pair = await runPair(c.cmd, c.client);
          expect(pair.client.status, `client ${c.client}: ${describeRan(pair.client)}`).toBe(0);
          if (e.clientOut) expect(pair.client.out, `client ${c.client}`).toMatch(e.clientOut);
          r = pair.server;
        } else r = await start(c.cmd, e.timeoutMs).done;
        expect(r.status, `${c.cmd}: ${describeRan(r)}`).toBe(e.status ?? 0);
        if (e.out) expect(r.out, c.cmd).toMatch(e.out);
        for (const f of e.files ?? []) expect(existsSync(join(WORK, f)), `${c.cmd} leaves ${f}; ${listing(dirname(f))}; ${describeRan(r)}`).toBe(true);
      },
      Math.max(COMMAND_TIMEOUT_MS * 2, e.timeoutMs ?? 0) + 10_000,
    );
  }
});
