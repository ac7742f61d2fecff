/**
 * DeviceHost.quiet: what lets the inline runtime (workers: 0) skip the
 * device pass of an empty CQ poll. It must say "not quiet" for every
 * doorbell kind, a frame on a wire, a packet waiting to go and a due
 * timer, and "quiet" again once a pass has taken them.
 */
import { describe, expect, it } from 'vitest';
import { DbKind, ringDoorbell, ringKind } from '../device/registers.js';
import { DEFAULT_CONFIG } from './config.js';
import { DeviceHost } from './device-host.js';
import { createDevice } from './device-resources.js';

async function hostWithClock(): Promise<{ host: DeviceHost; clock: { t: number; now(): number } }> {
  const clock = { t: 1_000, now: () => clock.t };
  const made = DEFAULT_CONFIG.devices.map(createDevice);
  const host = new DeviceHost(
    made.map((d) => d.resources),
    clock,
  );
  await host.cable(DEFAULT_CONFIG.cables);
  host.poll();
  return { host, clock };
}

describe('DeviceHost.quiet', () => {
  it('a fresh host after a pass is quiet; every doorbell kind on either device makes it not quiet until the next pass', async () => {
    const { host } = await hostWithClock();
    expect(host.quiet()).toBe(true);
    for (const d of host.devices) {
      for (const kind of [DbKind.SQ, DbKind.RQ, DbKind.SRQ, DbKind.CQ, DbKind.EQ]) {
        ringDoorbell(d.bar, kind, 1, 1);
        expect(host.quiet(), `${d.name} doorbell kind ${kind}`).toBe(false);
        host.poll();
        expect(host.quiet(), `${d.name} after the pass for kind ${kind}`).toBe(true);
      }
      ringKind(d.bar, DbKind.CMD);
      expect(host.quiet(), `${d.name} command doorbell`).toBe(false);
      host.poll();
      expect(host.quiet()).toBe(true);
    }
    await host.close();
  });

  it('a due timer, a packet waiting to go or a frame on a wire: not quiet', async () => {
    const { host, clock } = await hostWithClock();
    const nic = host.devices[1]!.nic;
    const deadline = nic.nextDeadline.bind(nic);
    const busy = nic.busy.bind(nic);
    nic.nextDeadline = () => 5_000;
    clock.t = 4_999;
    expect(host.quiet()).toBe(true);
    clock.t = 5_000;
    expect(host.quiet(), 'the timer is due').toBe(false);
    nic.nextDeadline = deadline;
    nic.busy = () => true;
    expect(host.quiet(), 'a QP with packets to send').toBe(false);
    nic.busy = busy;
    expect(host.quiet()).toBe(true);
    // A frame on the wire, not yet delivered (an Ethernet frame of an unknown EtherType: the far port drops it).
    const frame = new Uint8Array(60);
    frame.set([0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x88, 0xb5]);
    host.devices[0]!.ports[0]!.transmit(frame);
    expect(host.quiet(), 'a frame on the wire').toBe(false);
    host.poll();
    expect(host.quiet(), 'after it was delivered').toBe(true);
    await host.close();
  });
});
