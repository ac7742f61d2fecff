/**
 * Two `rnic` processes on one host find each other without a file: with no
 * RNIC_CONFIG, a command that talks to a peer (rc_pingpong, perf without
 * --loopback) runs one device, rnic0, on a loopback UDP cable between two
 * well-known ports. The first process takes host A (02:00:00:00:00:01,
 * 192.0.2.1, bound to 127.0.0.1:47001, sending to 47002), the second host B
 * (…:02, 192.0.2.2, 47002 → 47001). Which is which is settled by a lock
 * file per role (created exclusively, holding the pid; a dead holder's file
 * is taken over), so two processes started at the same moment still get
 * different roles.
 */
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ModelConfig } from '../runtime/config.js';

/** The two well-known ports; RNIC_TWO_HOSTS_PORTS="A,B" moves them (tests, or when they are taken). */
export const TWO_HOST_PORTS: readonly [number, number] = (() => {
  const m = /^(\d+),(\d+)$/.exec(process.env.RNIC_TWO_HOSTS_PORTS ?? '');
  return m ? [Number(m[1]), Number(m[2])] : [47001, 47002];
})();

export interface TwoHostRole {
  role: 'A' | 'B';
  config: ModelConfig;
  lock: string;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the role's lock file, or returns false if a live process holds it. */
function take(path: string): boolean {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const pid = Number(readFileSync(path, 'utf8').trim());
      if (Number.isInteger(pid) && pid > 0 && alive(pid)) return false;
      try {
        unlinkSync(path); // a holder that died without cleaning up
      } catch {
        // someone else took it over first: try once more
      }
    }
  }
  return false;
}

export function twoHostConfig(role: 'A' | 'B'): ModelConfig {
  const n = role === 'A' ? 1 : 2;
  const [mine, theirs] = role === 'A' ? TWO_HOST_PORTS : [TWO_HOST_PORTS[1], TWO_HOST_PORTS[0]];
  return {
    workers: 1,
    devices: [
      { name: 'rnic0', memoryBytes: 64 << 20, caps: {}, ports: [{ mac: `02:00:00:00:00:0${n}`, ipv4: [`192.0.2.${n}`], ipv6: [`fd00::${n}`], mtu: 4096 }] },
    ],
    cables: [{ kind: 'udp', port: 'rnic0:1', local: `127.0.0.1:${mine}`, remote: `127.0.0.1:${theirs}` }],
  };
}

/**
 * Picks a free role and holds it until the process exits. Null when both
 * are held by live processes.
 */
export function takeTwoHostRole(dir = tmpdir()): TwoHostRole | null {
  for (const role of ['A', 'B'] as const) {
    const lock = join(dir, `rnic-model-two-hosts-${TWO_HOST_PORTS[0]}-${role}.pid`);
    if (!take(lock)) continue;
    process.once('exit', () => {
      try {
        if (readFileSync(lock, 'utf8').trim() === String(process.pid)) unlinkSync(lock);
      } catch {
        // gone already
      }
    });
    return { role, config: twoHostConfig(role), lock };
  }
  return null;
}

/** The line printed to stderr so the user knows what was set up. */
export function twoHostNote(r: TwoHostRole): string {
  const [mine, theirs] = r.role === 'A' ? TWO_HOST_PORTS : [TWO_HOST_PORTS[1], TWO_HOST_PORTS[0]];
  const ip = r.role === 'A' ? '192.0.2.1' : '192.0.2.2';
  return `rnic: no RNIC_CONFIG: host ${r.role} of two on this machine: rnic0 (${ip}) on a loopback UDP cable 127.0.0.1:${mine} -> ${theirs} (docs/configuration.md)\n`;
}

export const TWO_HOSTS_TAKEN =
  'rnic: no RNIC_CONFIG, and two rnic processes already hold the two loopback host roles; give this one its own RNIC_CONFIG (docs/configuration.md, "Two processes")\n';
