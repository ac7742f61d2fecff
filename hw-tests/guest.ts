/**
 * The hw-tests guest: a small Linux with Soft-RoCE (rdma_rxe), built at test
 * time only from Debian packages and this host's files, and booted under
 * QEMU (KVM when a probe boot works, else TCG).
 *
 * - Kernel: Debian's linux-image-<abi>-amd64 (`apt-get download`, unpacked
 *   with dpkg-deb); its vmlinuz, and the modules the guest loads (virtio,
 *   9p, dummy, rdma_rxe, ib_uverbs) with every module they depend on,
 *   resolved from each .ko's own `depends=` (no depmod needed).
 * - Userland: busybox (busybox-static), the host's node binary, rdma-core's
 *   libibverbs and rxe provider, ibverbs-utils, perftest and iproute2's
 *   `rdma`, each with the shared libraries ldd names: one initramfs (cpio).
 * - The project is shared read-only over 9p (virtfs) at the same path, so
 *   dist/ and the built addon run as they are; a per-run "job" directory
 *   (writable 9p) carries the command in and the results out.
 *
 * Everything built goes under hw-tests/.cache (gitignored) and is reused
 * while its inputs are unchanged.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

export const PROJECT = resolve(import.meta.dirname, '..', '..');
export const CACHE = process.env['RNIC_HW_CACHE'] ?? join(PROJECT, 'hw-tests', '.cache');

/** Debian packages the harness needs on the host (installed with apt-get when missing). */
export const HOST_PACKAGES = ['qemu-system-x86', 'rdma-core', 'ibverbs-utils', 'perftest', 'libibverbs-dev', 'busybox-static', 'cpio', 'iproute2'];

const GUEST_MODULES = ['crc32_generic', 'virtio_pci', 'virtio_net', '9pnet_virtio', '9p', 'dummy', 'rdma_rxe', 'ib_uverbs'];
const GUEST_BINARIES = [
  process.execPath,
  '/usr/bin/ibv_devinfo',
  '/usr/bin/ibv_devices',
  '/usr/bin/ibv_rc_pingpong',
  '/usr/bin/ibv_ud_pingpong',
  '/usr/bin/ibv_uc_pingpong',
  '/usr/bin/ibv_srq_pingpong',
  '/usr/bin/rdma',
  '/usr/bin/ib_write_bw',
  '/usr/bin/ib_send_bw',
  '/usr/bin/ib_read_bw',
  '/usr/bin/ib_atomic_bw',
  '/usr/bin/ib_write_lat',
  '/usr/bin/ib_send_lat',
  '/usr/bin/ib_read_lat',
  '/usr/bin/ib_atomic_lat',
];

function log(msg: string): void {
  process.stderr.write(`hw-test: ${msg}\n`);
}

function sh(cmd: string, args: string[], opts: { cwd?: string } = {}): string {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 << 20, ...opts });
}

function dpkgInstalled(pkg: string): boolean {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's own format syntax, not a template
  return spawnSync('dpkg-query', ['-W', '-f=${Status}', pkg], { encoding: 'utf8' }).stdout.includes('install ok installed');
}

/** Installs what is missing (root, apt-get); returns the packages it could not get. */
export function ensureHostPackages(): string[] {
  const missing = HOST_PACKAGES.filter((p) => !dpkgInstalled(p));
  if (missing.length === 0) return [];
  log(`apt-get install ${missing.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  spawnSync('apt-get', ['update', '-qq'], { stdio: 'ignore', env });
  spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], { stdio: 'ignore', env });
  return HOST_PACKAGES.filter((p) => !dpkgInstalled(p));
}

/** The Debian kernel image package (linux-image-amd64's dependency), downloaded and unpacked once. */
export function ensureKernel(): { version: string; vmlinuz: string; root: string } {
  const debs = join(CACHE, 'debs');
  mkdirSync(debs, { recursive: true });
  let deb = readdirSync(debs).find((f) => /^linux-image-.*-amd64_.*\.deb$/.test(f));
  if (!deb) {
    const dep = sh('apt-cache', ['depends', 'linux-image-amd64']).match(/Depends: (linux-image-[^\s]+-amd64)/)?.[1];
    if (!dep) throw new Error('apt-cache knows no linux-image-amd64 (run apt-get update)');
    log(`apt-get download ${dep}`);
    sh('apt-get', ['download', '-q', dep], { cwd: debs });
    deb = readdirSync(debs).find((f) => /^linux-image-.*-amd64_.*\.deb$/.test(f));
    if (!deb) throw new Error(`apt-get download ${dep} left no .deb`);
  }
  const root = join(CACHE, 'kernel', deb.replace(/\.deb$/, ''));
  if (!existsSync(join(root, '.done'))) {
    rmSync(root, { recursive: true, force: true });
    mkdirSync(root, { recursive: true });
    sh('dpkg-deb', ['-x', join(debs, deb), root]);
    writeFileSync(join(root, '.done'), '');
  }
  const version = readdirSync(join(root, 'lib', 'modules'))[0]!;
  return { version, vmlinuz: join(root, 'boot', `vmlinuz-${version}`), root };
}

/** The modules to load, dependencies first (from each module's modinfo `depends=`). */
function moduleOrder(modRoot: string): string[] {
  const byName = new Map<string, string>();
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ko')) byName.set(e.name.slice(0, -3).replace(/-/g, '_'), p);
    }
  };
  walk(join(modRoot, 'kernel'));
  const order: string[] = [];
  const seen = new Set<string>();
  const visit = (name: string): void => {
    const n = name.replace(/-/g, '_');
    if (seen.has(n)) return;
    seen.add(n);
    const p = byName.get(n);
    if (!p) return; // built into the kernel
    const info = readFileSync(p).toString('latin1');
    const deps = info.match(/\0depends=([^\0]*)\0/)?.[1] ?? info.match(/depends=([^\0]*)\0/)?.[1] ?? '';
    for (const dep of deps.split(',').filter(Boolean)) visit(dep);
    order.push(p);
  };
  for (const m of GUEST_MODULES) visit(m);
  return order;
}

/** The shared libraries a binary needs (and the loader), from ldd. */
function libsOf(bin: string): string[] {
  const out = spawnSync('ldd', [bin], { encoding: 'utf8' }).stdout ?? '';
  const libs: string[] = [];
  for (const line of out.split('\n')) {
    const m = line.match(/=>\s+(\/\S+)/) ?? line.match(/^\s+(\/\S+)\s+\(/);
    if (m) libs.push(m[1]!);
  }
  return libs;
}

function copyInto(root: string, file: string): void {
  const dst = join(root, file);
  if (existsSync(dst)) return;
  mkdirSync(dirname(dst), { recursive: true });
  copyFileSync(file, dst); // follows symlinks: the library's real bytes under the soname
  chmodSync(dst, statSync(file).mode & 0o777);
}

const INIT = `#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin:/usr/bin:/sbin:/usr/sbin HOME=/root
mkdir -p /proc /sys /dev /tmp /root /run /job
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
# The project's mount point only now: a clone under /tmp (as CI makes) would be hidden by the tmpfs.
mkdir -p '${PROJECT}'
for m in $(cat /etc/modules.order); do insmod "$m" 2>/dev/null || echo "hw-guest: insmod $m failed"; done
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro project '${PROJECT}' || echo "hw-guest: no project share"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 job /job || echo "hw-guest: no job share"
ip link set lo up
ip link set dummy0 up
ip addr add 10.77.0.1/24 dev dummy0
echo "HWGUEST-READY $(cut -d' ' -f1 /proc/uptime)"
if [ -f /job/job.sh ]; then cd '${PROJECT}' && sh /job/job.sh > /job/stdout 2> /job/stderr; echo "HWGUEST-EXIT $?"; fi
sync
poweroff -f
`;

/** Builds (or reuses) the initramfs; returns its path. */
export function ensureInitramfs(kernel: { version: string; root: string }): string {
  const modRoot = join(kernel.root, 'lib', 'modules', kernel.version);
  const modules = moduleOrder(modRoot);
  const bins = GUEST_BINARIES.filter((b) => existsSync(b));
  const providerDir = '/usr/lib/x86_64-linux-gnu/libibverbs';
  const providers = existsSync(providerDir)
    ? readdirSync(providerDir)
        .filter((f) => f.startsWith('librxe'))
        .map((f) => join(providerDir, f))
    : [];
  const files = new Set<string>(['/bin/busybox']);
  const addon = join(PROJECT, 'src/driver/rdma-core/native/build/Release/rnic_rdma_core.node');
  for (const b of [...bins, ...providers, ...(existsSync(addon) ? [addon] : [])]) {
    if (b !== addon) files.add(b);
    for (const l of libsOf(b)) files.add(l);
  }
  for (const f of readdirSync('/etc/libibverbs.d').filter((f) => f.startsWith('rxe'))) files.add(join('/etc/libibverbs.d', f));
  const key = createHash('sha256')
    .update(INIT)
    .update(kernel.version)
    .update(
      [...files]
        .sort()
        .map((f) => `${f}:${statSync(f).size}:${statSync(f).mtimeMs}`)
        .join('\n'),
    )
    .update(modules.join('\n'))
    .digest('hex')
    .slice(0, 16);
  const out = join(CACHE, `initramfs-${key}.cpio`);
  if (existsSync(out)) return out;
  log(`building the guest initramfs (${files.size} files, ${modules.length} modules)`);
  const root = join(CACHE, 'rootfs');
  rmSync(root, { recursive: true, force: true });
  mkdirSync(root, { recursive: true });
  for (const f of files) copyInto(root, f);
  // Modules keep their path under /lib/modules/<version>.
  const order: string[] = [];
  for (const m of modules) {
    const rel = relative(kernel.root, m);
    const dst = join(root, rel);
    mkdirSync(dirname(dst), { recursive: true });
    copyFileSync(m, dst);
    order.push('/' + rel);
  }
  mkdirSync(join(root, 'etc'), { recursive: true });
  writeFileSync(join(root, 'etc', 'modules.order'), order.join('\n') + '\n');
  writeFileSync(join(root, 'etc', 'passwd'), 'root:x:0:0:root:/root:/bin/sh\n');
  writeFileSync(join(root, 'init'), INIT);
  chmodSync(join(root, 'init'), 0o755);
  mkdirSync(join(root, 'bin'), { recursive: true });
  if (!existsSync(join(root, 'bin', 'busybox'))) copyFileSync('/bin/busybox', join(root, 'bin', 'busybox'));
  for (const f of readdirSync(CACHE).filter((f) => /^initramfs-.*\.cpio$/.test(f))) rmSync(join(CACHE, f));
  const list = spawnSync('find', ['.', '-mindepth', '1'], { cwd: root, encoding: 'utf8' }).stdout;
  const r = spawnSync('cpio', ['-o', '-H', 'newc', '--quiet', '-O', out], { cwd: root, input: list, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`cpio failed: ${r.stderr}`);
  return out;
}

export interface BootResult {
  accel: 'kvm' | 'tcg';
  /** Seconds from QEMU start to the guest's "ready" line (modules loaded, shares mounted). */
  bootSeconds: number | null;
  /** Exit status of job.sh in the guest, null when it never finished. */
  status: number | null;
  stdout: string;
  stderr: string;
  console: string;
  timedOut: boolean;
}

function qemuArgs(accel: 'kvm' | 'tcg', vmlinuz: string, initrd: string, job: string, extra: string[]): string[] {
  return [
    '-machine',
    accel === 'kvm' ? 'q35,accel=kvm' : 'q35,accel=tcg',
    '-cpu',
    accel === 'kvm' ? 'host' : 'max',
    '-m',
    '1536',
    '-smp',
    '1',
    '-nographic',
    '-no-reboot',
    ...(extra.some((a) => a.startsWith('-netdev') || a === '-nic') ? [] : ['-nic', 'none']),
    '-kernel',
    vmlinuz,
    '-initrd',
    initrd,
    '-append',
    'console=ttyS0 panic=-1 quiet loglevel=3 rdinit=/init',
    '-virtfs',
    `local,path=${PROJECT},mount_tag=project,security_model=none,readonly=on`,
    '-virtfs',
    `local,path=${job},mount_tag=job,security_model=none`,
    ...extra,
  ];
}

/** Whether a UDP socket is bound to 127.0.0.1:port (/proc/net/udp). */
function udpBound(port: number): boolean {
  try {
    const key = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
    return readFileSync('/proc/net/udp', 'latin1')
      .split('\n')
      .some((l) => l.trim().split(/\s+/)[1] === key);
  } catch {
    return false;
  }
}

/**
 * The receive buffer a socket created now gets (Linux: net.core.rmem_default, 208 KiB); QEMU's socket
 * netdev never sets its own. As root, `deepenQemuSocket` raises it only until QEMU's cable socket is
 * bound at `port` (QEMU creates it before the guest boots), then puts it back, so that socket alone
 * holds `bytes` of frames: when a loaded host does not schedule QEMU's main loop, the frames the model
 * sends wait there instead of being dropped by Linux (which UC and UD cannot recover). Returns
 * `restore` (idempotent) and `poll` (whether the socket is bound yet), or null when it cannot be changed here.
 */
function deepenQemuSocket(port: number, bytes: number): { restore: () => void; poll: () => boolean } | null {
  if (bytes <= 0) return null;
  const f = '/proc/sys/net/core/rmem_default';
  let old: string;
  try {
    old = readFileSync(f, 'utf8').trim();
    if (process.getuid?.() !== 0 || Number(old) >= bytes) return null;
    writeFileSync(f, String(bytes));
  } catch {
    return null;
  }
  let done = false;
  const restore = (): void => {
    if (done) return;
    done = true;
    try {
      writeFileSync(f, old);
    } catch {}
  };
  return { restore, poll: () => udpBound(port) };
}

/** `cableSocket`: QEMU's UDP socket netdev's local port, given a deep receive buffer when root (deepenQemuSocket). */
export interface BootOptions {
  cableSocket?: { port: number; bytes: number };
}

/** Boots the guest, runs `script` (sh, cwd = the project) in it, and powers it off. */
export function boot(
  accel: 'kvm' | 'tcg',
  vmlinuz: string,
  initrd: string,
  script: string,
  timeoutMs: number,
  extraQemuArgs: string[] = [],
  opts: BootOptions = {},
): Promise<BootResult> {
  const job = join(CACHE, `job-${process.pid}-${Date.now()}`);
  mkdirSync(job, { recursive: true });
  writeFileSync(join(job, 'job.sh'), script);
  const t0 = Date.now();
  return new Promise((resolveBoot) => {
    const deep = opts.cableSocket ? deepenQemuSocket(opts.cableSocket.port, opts.cableSocket.bytes) : null;
    const q = spawn('qemu-system-x86_64', qemuArgs(accel, vmlinuz, initrd, job, extraQemuArgs), { stdio: ['ignore', 'pipe', 'pipe'] });
    if (deep) {
      // QEMU binds its netdev's socket within a second of starting; give up (and restore) after 10 s.
      const watch = setInterval(() => {
        if (deep.poll() || Date.now() - t0 > 10_000) {
          deep.restore();
          clearInterval(watch);
        }
      }, 20);
      q.on('close', () => {
        clearInterval(watch);
        deep.restore();
      });
    }
    let out = '';
    let bootSeconds: number | null = null;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      q.kill('SIGKILL');
    }, timeoutMs);
    const onData = (d: Buffer): void => {
      out += d.toString('latin1');
      if (bootSeconds === null && out.includes('HWGUEST-READY')) bootSeconds = (Date.now() - t0) / 1000;
    };
    q.stdout.on('data', onData);
    q.stderr.on('data', onData);
    q.on('close', () => {
      clearTimeout(timer);
      const m = out.match(/HWGUEST-EXIT (\d+)/);
      const read = (f: string): string => (existsSync(join(job, f)) ? readFileSync(join(job, f), 'utf8') : '');
      const res: BootResult = {
        accel,
        bootSeconds,
        status: m ? Number(m[1]) : null,
        stdout: read('stdout'),
        stderr: read('stderr'),
        console: out,
        timedOut,
      };
      rmSync(job, { recursive: true, force: true });
      resolveBoot(res);
    });
  });
}

/**
 * KVM when /dev/kvm is there and a probe boot reaches "ready" within a
 * short timeout (cached for a day in the cache dir), else TCG.
 */
export async function pickAccel(vmlinuz: string, initrd: string): Promise<'kvm' | 'tcg'> {
  if (process.env['RNIC_HW_ACCEL'] === 'tcg' || process.env['RNIC_HW_ACCEL'] === 'kvm') return process.env['RNIC_HW_ACCEL'];
  if (!existsSync('/dev/kvm')) return 'tcg';
  const probe = join(CACHE, 'kvm-probe');
  if (existsSync(probe) && Date.now() - statSync(probe).mtimeMs < 86_400_000) return readFileSync(probe, 'utf8').trim() === 'ok' ? 'kvm' : 'tcg';
  log('probing KVM (a short boot)');
  const r = await boot('kvm', vmlinuz, initrd, 'true\n', 20_000);
  const ok = r.status === 0;
  writeFileSync(probe, ok ? 'ok\n' : `bad\n${r.console.slice(-2000)}\n`);
  if (!ok) log('KVM did not boot the guest; using TCG');
  return ok ? 'kvm' : 'tcg';
}

/** Ports handed out by portBlock: below Linux's ephemeral range (32768-60999), where no outgoing connection takes one. */
const PORTS_FROM = 10_000;
const PORTS_TO = 32_768;
const PORT_BLOCK = 64;
let portBlocks = 0;

/**
 * The first of `n` (≤ 64) consecutive ports for this process's next use,
 * distinct from its earlier blocks and, by the pid, likely from another
 * run's: a port in the ephemeral range may already be some socket's own
 * (a guest server's listen failed with EADDRINUSE under load).
 */
export function portBlock(n: number): number {
  if (n > PORT_BLOCK) throw new Error(`portBlock: ${n} ports asked for, at most ${PORT_BLOCK}`);
  const blocks = Math.floor((PORTS_TO - PORTS_FROM) / PORT_BLOCK);
  return PORTS_FROM + ((process.pid * 5 + portBlocks++) % blocks) * PORT_BLOCK;
}

/** Why the guest cannot run on this platform at all (it is x86-64 Linux), or null. */
export function platformProblem(): string | null {
  return process.platform === 'linux' && process.arch === 'x64' ? null : `the guest is x86-64 Linux; this is ${process.platform}/${process.arch}`;
}

/** Whether QEMU can run here at all (x86-64 Linux, and a binary). */
export function qemuUsable(): string | null {
  const p = platformProblem();
  if (p) return p;
  const r = spawnSync('qemu-system-x86_64', ['--version'], { encoding: 'utf8' });
  if (r.status !== 0) return 'qemu-system-x86_64 does not run (apt-get install qemu-system-x86)';
  return null;
}
