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
 * Lines where the port prints what rdma-core prints differently, by design
 * (each a regular expression over one normalised line of ibv_devinfo's).
 */
export const DEVINFO_DIFFERENCES: { re: RegExp; why: string }[] = [];

function report(r: Omit<CaseResult, 'provider' | 'device'>): CaseResult {
  const full: CaseResult = { ...r, provider: 'rdma-core', device: dev };
  console.log(`HWTEST ${JSON.stringify(full)}`);
  return full;
}

const norm = (s: string) => s.split('\n').map((l) => l.trim().replace(/\s+/g, ' ')).filter(Boolean);

function devinfo(verbose: boolean): CaseResult {
  const t0 = Date.now();
  const args = ['-d', dev, ...(verbose ? ['-v'] : [])];
  const theirs = spawnSync('ibv_devinfo', args, { encoding: 'utf8' });
  const ours = spawnSync(process.execPath, [RNIC, 'devinfo', ...args], { encoding: 'utf8', env: { ...process.env, RNIC_NO_MODEL: '1' } });
  const name = verbose ? 'devinfo-v-vs-ibv_devinfo' : 'devinfo-vs-ibv_devinfo';
  if (theirs.status !== 0 || ours.status !== 0) {
    return report({ test: name, result: 'failed', detail: `exit ibv_devinfo ${theirs.status}, rnic devinfo ${ours.status}: ${ours.stderr.slice(0, 300)}`, ms: Date.now() - t0 });
  }
  const a = norm(theirs.stdout);
  const b = norm(ours.stdout);
  const diffs: string[] = [];
  const known: string[] = [];
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] === b[i]) continue;
    const why = DEVINFO_DIFFERENCES.find((d) => d.re.test(a[i] ?? ''));
    (why ? known : diffs).push(`ibv_devinfo "${a[i] ?? ''}" / rnic "${b[i] ?? ''}"`);
  }
  if (diffs.length) return report({ test: name, result: 'failed', detail: `${diffs.length} lines differ: ${diffs.slice(0, 6).join('; ')}`, ms: Date.now() - t0 });
  return report({ test: name, result: known.length ? 'difference' : 'passed', detail: known.join('; '), ms: Date.now() - t0 });
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

async function pingpong(name: string, server: 'ours' | 'theirs', client: 'ours' | 'theirs', port: number): Promise<CaseResult> {
  const t0 = Date.now();
  const common = ['-d', dev, '-g', gid, '-n', '50', '-s', '1024', '-p', String(port)];
  const cmd = (who: 'ours' | 'theirs', extra: string[]): [string, string[]] =>
    who === 'ours' ? [process.execPath, [RNIC, 'rc_pingpong', ...common, ...extra]] : ['ibv_rc_pingpong', [...common, ...extra]];
  const s = run(...cmd(server, []), 90_000);
  await sleep(server === 'ours' ? 2500 : 500); // the server listens before the client connects
  const c = await run(...cmd(client, ['127.0.0.1']), 90_000);
  const sv = await s;
  const ok = sv.status === 0 && c.status === 0 && /iters in/.test(c.out) && /iters in/.test(sv.out);
  const tail = (p: Proc) => p.out.trim().split('\n').slice(-2).join(' | ');
  return report({
    test: name, result: ok ? 'passed' : 'failed',
    detail: ok ? tail(c) : `server exit ${sv.status}: ${tail(sv)}; client exit ${c.status}: ${tail(c)}`, ms: Date.now() - t0,
  });
}

const results: CaseResult[] = [devinfo(false), devinfo(true)];
results.push(await pingpong('rc_pingpong-ours-vs-ours', 'ours', 'ours', 18515));
results.push(await pingpong('rc_pingpong-server-ibv-client-ours', 'theirs', 'ours', 18516));
results.push(await pingpong('rc_pingpong-server-ours-client-ibv', 'ours', 'theirs', 18517));
process.exit(results.some((r) => r.result === 'failed') ? 1 : 0);
