/**
 * A UDP cable whose socket cannot bind (its port taken by another socket):
 * `cabled` rejects with FABRIC_BIND_FAILED naming the cable and saying why,
 * with the devices in this thread, on one worker and on two; the cable
 * that did bind on the same I/O thread is closed again (a model started
 * afterwards finds its port free), and the model still stops.
 * Before, `cabled` resolved and a program ran on with no cable (rnic
 * rc-pingpong waited for its peer for ever).
 */
import { createSocket, type Socket } from 'node:dgram';
import { afterAll, describe, expect, it } from 'vitest';
import { restartModel, stopModel } from '../../src/boot.js';
import { parseConfig } from '../../src/runtime/config.js';
import { freeUdpPort } from '../helpers/ports.js';

function bind(port: number): Promise<Socket> {
  const s = createSocket('udp4');
  return new Promise((resolve, reject) => {
    s.once('error', reject);
    s.bind({ port, address: '127.0.0.1', exclusive: true }, () => resolve(s));
  });
}

afterAll(async () => {
  await stopModel();
});

describe.each([0, 1, 2])('workers: %i', (workers) => {
  it('a local port in use: cabled rejects naming cables[1] (rnic1:1) and EADDRINUSE; the model stops', async () => {
    const [p0, p1, r0, r1] = [await freeUdpPort(), await freeUdpPort(), await freeUdpPort(), await freeUdpPort()];
    const taken = await bind(p1);
    try {
      const config = parseConfig({
        workers,
        devices: [
          { name: 'rnic0', ports: [{ mac: '02:00:00:00:00:01', ipv4: ['192.0.2.1'] }] },
          { name: 'rnic1', ports: [{ mac: '02:00:00:00:00:02', ipv4: ['192.0.2.2'] }] },
        ],
        cables: [
          { kind: 'udp', port: 'rnic0:1', local: `127.0.0.1:${p0}`, remote: `127.0.0.1:${r0}` },
          { kind: 'udp', port: 'rnic1:1', local: `127.0.0.1:${p1}`, remote: `127.0.0.1:${r1}` },
        ],
      });
      const model = await restartModel(config);
      await expect(model.cabled).rejects.toMatchObject({
        code: 'FABRIC_BIND_FAILED',
        message: `cables[1] (rnic1:1): cannot bind UDP 127.0.0.1:${p1}: EADDRINUSE (another socket is bound to it: a second model process with the same file, a VM or an older run still up)`,
      });
      await stopModel();
      // rnic0's socket did not stay bound behind the failure (with two workers it had an I/O thread of its own, closed by stop).
      const again = await bind(p0);
      again.close();
    } finally {
      taken.close();
    }
  });
});
