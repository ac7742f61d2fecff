/**
 * In the guest: rdma-core's own programs beside the project's ports of them
 * on rxe0. Prints one "HWTEST {...}" line per check, as run-cases does.
 *
 * - devinfo: `ibv_devinfo -d rxe0` and `rnic devinfo -d rxe0` (also -v) must
 *   print the same lines (whitespace-normalised), except the lines named in
 *   DEVINFO_DIFFERENCES.
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

/**
 * What the port prints differently from ibv_devinfo, by design (see the
 * header of examples/devinfo.ts): the ibv_query_device_ex section of -v is
 * not printed (the verbs API has no query_device_ex), and GIDs are printed
 * as 16 hex bytes without the GID type (no GID-type query). A GID line
 * counts as this difference only when both name the same 16 bytes.
 */
const EXT_SECTION =
  /^(general_odp_caps:|rc_odp_caps:|uc_odp_caps:|ud_odp_caps:|xrc_odp_caps:|NO SUPPORT|SUPPORT_\w+|completion_timestamp_mask|core clock|hca_core_clock|device_cap_flags_ex:|tso_caps:|max_tso:|supported_qp:|rss_caps:|max_rwq_indirection_table|rx_hash_|max_wq_type_rq:|packet_pacing_caps:|qp_rate_limit_|tag matching|num_comp_vectors:|cq moderation|max_cq_count|max_cq_period|maximum available device memory)/;

function gidBytes(line: string): string | null {
  const m = line.match(/^GID\[\s*(\d+)\]: ([0-9a-f:.]+)/i);
  if (!m) return null;
  let txt = m[2]!;
  let tail: string[] = [];
  const v4 = txt.match(/^(.*:)(\d+\.\d+\.\d+\.\d+)$/);
  if (v4) {
    const q = v4[2]!.split('.').map(Number);
    tail = [((q[0]! << 8) | q[1]!).toString(16), ((q[2]! << 8) | q[3]!).toString(16)];
    txt = v4[1]!.endsWith('::') ? v4[1]! : v4[1]!.slice(0, -1);
  }
  const [head, rest] = txt.includes('::') ? txt.split('::') : [txt, null];
  const h = head ? head.split(':').filter(Boolean) : [];
  const r = rest !== null && rest !== undefined ? [...rest.split(':').filter(Boolean), ...tail] : tail;
  const groups = rest === null ? [...h, ...tail] : [...h, ...Array(8 - h.length - r.length).fill('0'), ...r];
  if (groups.length !== 8) return null;
  return `${m[1]}=${groups.map((g) => g.padStart(4, '0')).join(':')}`;
}

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
  const { onlyA, onlyB } = diffLines(norm(theirs.stdout), norm(ours.stdout));
  const known = new Set<string>();
  const gidsOurs = new Set(onlyB.map(gidBytes).filter((g): g is string => g !== null));
  const restA = onlyA.filter((l) => {
    if (EXT_SECTION.test(l)) return !known.add('the ibv_query_device_ex section is not printed');
    const g = gidBytes(l);
    if (g && gidsOurs.has(g)) return !known.add('GIDs as 16 hex bytes, without the GID type');
    return true;
  });
  const gidsTheirs = new Set(onlyA.map(gidBytes).filter((g): g is string => g !== null));
  const restB = onlyB.filter((l) => !(gidBytes(l) && gidsTheirs.has(gidBytes(l)!)));
  if (restA.length || restB.length) {
    const d = [...restA.map((l) => `ibv_devinfo only: "${l}"`), ...restB.map((l) => `rnic only: "${l}"`)];
    return report({ test: name, result: 'failed', detail: `${d.length} lines differ: ${d.slice(0, 8).join('; ')}`, ms: Date.now() - t0 });
  }
  return report({ test: name, result: known.size ? 'difference' : 'passed', detail: [...known].join('; '), ms: Date.now() - t0 });
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
    for (let k = 0; k < 5 && c.status !== 0 && /ECONNREFUSED|connect/i.test(c.out); k++) {
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
