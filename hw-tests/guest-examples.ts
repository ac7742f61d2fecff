/**
 * In the guest: rdma-core's own programs beside the project's ports of them
 * on rxe0. Prints one "HWTEST {...}" line per check, as run-cases does.
 *
 * - devinfo: `ibv_devinfo -d rxe0` and `rnic devinfo -d rxe0` (also -v) must
 *   print the same lines (whitespace-normalised), the extended section and
 *   the typed GIDs of -v included.
 * - rc_pingpong: the port against itself, and against ibv_rc_pingpong in
 *   both directions (server ours / client theirs and the reverse), over TCP
 *   on the guest's loopback, RDMA on rxe0.
 *
 *   node dist/hw-tests/guest-examples.js [rxe0] [gid-index]
 */
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type { CaseResult } from './run-cases.js';

const PROJECT = join(import.meta.dirname, '..', '..');
const RNIC = join(PROJECT, 'bin', 'rnic.js');
const dev = process.argv[2] ?? 'rxe0';
const gid = process.argv[3] ?? '1';

/** The lines only `a` has and the lines only `b` has (an LCS diff). */
function diffLines(a: string[], b: string[]): { onlyA: string[]; onlyB: string[] } {
  const L = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--) L[i]![j] = a[i] === b[j] ? L[i + 1]![j + 1]! + 1 : Math.max(L[i + 1]![j]!, L[i]![j + 1]!);
  const onlyA: string[] = [];
  const onlyB: string[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      i++;
      j++;
    } else if (j >= b.length || (i < a.length && L[i + 1]![j]! >= L[i]![j + 1]!)) onlyA.push(a[i++]!);
    else onlyB.push(b[j++]!);
  }
  return { onlyA, onlyB };
}

function report(r: Omit<CaseResult, 'provider' | 'device'>): CaseResult {
  const full: CaseResult = { ...r, provider: 'rdma-core', device: dev };
  console.log(`HWTEST ${JSON.stringify(full)}`);
  return full;
}

const norm = (s: string) =>
  s
    .split('\n')
    .map((l) => l.trim().replace(/\s+/g, ' '))
    .filter(Boolean);

function devinfo(verbose: boolean): CaseResult {
  const t0 = Date.now();
  const args = ['-d', dev, ...(verbose ? ['-v'] : [])];
  const theirs = spawnSync('ibv_devinfo', args, { encoding: 'utf8' });
  const ours = spawnSync(process.execPath, [RNIC, 'devinfo', ...args], { encoding: 'utf8', env: { ...process.env, RNIC_NO_MODEL: '1' } });
  const name = verbose ? 'devinfo-v-vs-ibv_devinfo' : 'devinfo-vs-ibv_devinfo';
  if (theirs.status !== 0 || ours.status !== 0) {
    return report({
      test: name,
      result: 'failed',
      detail: `exit ibv_devinfo ${theirs.status}, rnic devinfo ${ours.status}: ${ours.stderr.slice(0, 300)}`,
      ms: Date.now() - t0,
    });
  }
  // Line for line, -v included: the extended section and the typed GIDs come from
  // ibv_query_device_ex / ibv_query_gid_ex, which the rdma-core addon binds.
  const { onlyA, onlyB } = diffLines(norm(theirs.stdout), norm(ours.stdout));
  if (onlyA.length || onlyB.length) {
    const d = [...onlyA.map((l) => `ibv_devinfo only: "${l}"`), ...onlyB.map((l) => `rnic only: "${l}"`)];
    return report({ test: name, result: 'failed', detail: `${d.length} lines differ: ${d.slice(0, 8).join('; ')}`, ms: Date.now() - t0 });
  }
  return report({ test: name, result: 'passed', detail: '', ms: Date.now() - t0 });
}

interface Proc {
  status: number | null;
  out: string;
}

function run(cmd: string, args: string[], timeoutMs: number): Promise<Proc> {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, RNIC_NO_MODEL: '1' } });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const t = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('close', (status) => {
      clearTimeout(t);
      resolve({ status, out });
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function pingpong(name: string, server: 'ours' | 'theirs', client: 'ours' | 'theirs', port: number, extra: string[] = []): Promise<CaseResult> {
  const t0 = Date.now();
  const common = ['-d', dev, '-g', gid, '-n', '50', '-s', '1024', '-p', String(port), ...extra];
  const cmd = (who: 'ours' | 'theirs', extra: string[]): [string, string[]] =>
    who === 'ours' ? [process.execPath, [RNIC, 'rc_pingpong', ...common, ...extra]] : ['ibv_rc_pingpong', [...common, ...extra]];
  const s = run(...cmd(server, []), 90_000);
  await sleep(server === 'ours' ? 2500 : 500); // the server listens before the client connects
  let c = await run(...cmd(client, ['127.0.0.1']), 90_000);
  // The server is still starting: node under TCG takes seconds, many more on a loaded host. Retry for a minute.
  for (let k = 0; k < 30 && /Couldn't connect/.test(c.out); k++) {
    await sleep(2000);
    c = await run(...cmd(client, ['127.0.0.1']), 90_000);
  }
  const sv = await s;
  const ok = sv.status === 0 && c.status === 0 && /iters in/.test(c.out) && /iters in/.test(sv.out);
  const tail = (p: Proc) => p.out.trim().split('\n').slice(-2).join(' | ');
  return report({
    test: name,
    result: ok ? 'passed' : 'failed',
    detail: ok ? tail(c) : `server exit ${sv.status}: ${tail(sv)}; client exit ${c.status}: ${tail(c)}`,
    ms: Date.now() - t0,
  });
}

/** `rnic perf` unchanged on rxe0: one process (--loopback), and server + client processes. */
async function perf(name: string, args: string[], twoProcesses: boolean, port: number): Promise<CaseResult> {
  const t0 = Date.now();
  const common = [RNIC, 'perf', ...args, '-d', dev, '-x', gid, '-p', String(port)];
  let out: string;
  let ok: boolean;
  if (!twoProcesses) {
    const r = await run(process.execPath, [...common, '--loopback'], 120_000);
    out = r.out;
    ok = r.status === 0;
  } else {
    const s = run(process.execPath, common, 120_000);
    await sleep(2500);
    let c = await run(process.execPath, [...common, '127.0.0.1'], 120_000);
    // As in pingpong: node under TCG starts in seconds, many more on a loaded host. Retry for a minute.
    for (let k = 0; k < 30 && c.status !== 0 && /ECONNREFUSED|connect/i.test(c.out); k++) {
      await sleep(2000);
      c = await run(process.execPath, [...common, '127.0.0.1'], 120_000);
    }
    const sv = await s;
    out = `${sv.out}\n${c.out}`;
    ok = sv.status === 0 && c.status === 0;
  }
  // perftest's result table: a row of numbers under the #bytes header.
  const row = out.split('\n').find((l) => /^\s*\d+\s+\d+\s+[\d.]+/.test(l));
  ok &&= row !== undefined;
  return report({
    test: name,
    result: ok ? 'passed' : 'failed',
    detail: ok ? row!.trim().replace(/\s+/g, ' ') : out.trim().split('\n').slice(-4).join(' | '),
    ms: Date.now() - t0,
  });
}

/** With the model allowed to start: ibv_get_device_list has both providers' devices. */
async function bothProviders(): Promise<CaseResult> {
  const t0 = Date.now();
  const code = `import('${join(PROJECT, 'dist/src/index.js')}').then(async (m) => {
    console.log(JSON.stringify(m.ibv_get_device_list().map((d) => [d.name, d.provider.name])));
    await m.stopModel(); process.exit(0); })`;
  const env = { ...process.env };
  delete env['RNIC_NO_MODEL'];
  const r = spawnSync(process.execPath, ['-e', code], { encoding: 'utf8', env, timeout: 120_000 });
  const line = r.stdout.trim().split('\n').pop() ?? '';
  let list: [string, string][] = [];
  try {
    list = JSON.parse(line) as [string, string][];
  } catch {
    // reported below
  }
  const names = list.map(([n, p]) => `${n}(${p})`).join(' ');
  const ok = list.some(([n, p]) => n === dev && p === 'rdma-core') && list.some(([, p]) => p === 'model') && list[0]?.[1] === 'model';
  return report({ test: 'device-list-model-then-rdma-core', result: ok ? 'passed' : 'failed', detail: names || r.stderr.slice(-300), ms: Date.now() - t0 });
}

const results: CaseResult[] = [devinfo(false), devinfo(true), await bothProviders()];
results.push(await perf('perf-write_bw-loopback', ['write_bw', '-s', '4096', '-n', '300'], false, 18520));
results.push(await perf('perf-send_lat-two-processes', ['send_lat', '-s', '64', '-n', '200'], true, 18521));
results.push(await pingpong('rc_pingpong-ours-vs-ours', 'ours', 'ours', 18515));
results.push(await pingpong('rc_pingpong-server-ibv-client-ours', 'theirs', 'ours', 18516));
results.push(await pingpong('rc_pingpong-server-ours-client-ibv', 'ours', 'theirs', 18517));
results.push(await pingpong('rc_pingpong-events-server-ibv-client-ours', 'theirs', 'ours', 18518, ['-e']));
process.exit(results.some((r) => r.result === 'failed') ? 1 : 0);
