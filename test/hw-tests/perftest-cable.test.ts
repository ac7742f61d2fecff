import { spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { guestScript, PERFTEST_CASES, udpSocketDrops } from '../../hw-tests/perftest-cable.js';

const linux = process.platform === 'linux';

describe('perftest-cable harness', () => {
  // A receiver that binds and is then stopped (SIGSTOP) reads nothing, as QEMU's main loop on a loaded host:
  // what does not fit its receive buffer Linux drops, and /proc/net/udp counts it for that socket.
  it.skipIf(!linux)('udpSocketDrops reads the drops of the socket bound at a port', async () => {
    const child = spawn(
      process.execPath,
      [
        '-e',
        "const s=require('dgram').createSocket('udp4');s.bind(0,'127.0.0.1',()=>{s.setRecvBufferSize(4096);process.stdout.write(String(s.address().port)+'\\n')})",
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      const [line] = (await once(child.stdout, 'data')) as [Buffer];
      const port = Number(line.toString().trim());
      expect(udpSocketDrops(port)).toBe(0);
      child.kill('SIGSTOP');
      const tx = dgram.createSocket('udp4');
      const frame = Buffer.alloc(1000, 0xab);
      for (let i = 0; i < 200; i++) await new Promise<void>((r) => tx.send(frame, port, '127.0.0.1', () => r()));
      tx.close();
      // A 4 KiB buffer (Linux doubles it; each 1000-byte datagram costs about 2.3 KB of it) holds a few; the rest are dropped.
      const d = udpSocketDrops(port);
      expect(d).toBeGreaterThanOrEqual(190);
      expect(d).toBeLessThanOrEqual(200);
      expect(udpSocketDrops(1)).toBe(-1); // no socket there
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('the guest script keeps each program stderr apart, after its stdout, and retries on both', () => {
    const c = PERFTEST_CASES.filter((x) => x.name === 'send_lat-I-e');
    expect(c).toHaveLength(1);
    const s = guestScript(
      c,
      (i) => 11000 + i,
      (i) => 12000 + i,
    );
    expect(s).toContain(`ib_send_lat -d rxe1 -I 64 -e -u 18 -n 200 -p 11000 10.0.2.2 > /tmp/o 2> /tmp/e`);
    expect(s).toContain(`cat /tmp/o /tmp/e | grep -q "Couldn't connect`);
    expect(s).toContain(
      `awk '{print "PERFA|send_lat-I-e| " $0}' /tmp/o; awk '{print "PERFA|send_lat-I-e| stderr: " $0}' /tmp/e; echo "PERFA-END|send_lat-I-e|$rc"`,
    );
    expect(s).toContain(`timeout 200 ib_send_lat -d rxe1 -I 64 -e -u 18 -n 200 -p 12000 > /tmp/o 2> /tmp/e; rc=$?`);
    // The guest's counters before the first case and after each case and role.
    expect(s.match(/echo "PERF-CNT\|/g)?.length).toBe(3);
  });
});
