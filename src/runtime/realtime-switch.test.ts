/**
 * The realtime switch on a clock the test moves by hand (no wall time, no
 * threads): its lines pace frames at the port's rate, exactly; a frame
 * goes where the routes say, including to a host known only from a UDP
 * cable's `hosts`; a received PAUSE holds exactly its priority for its
 * quanta of the port's rate; the routes of a configuration come out as
 * the simulator's (shortest paths, ECMP over two spines).
 */
import { describe, expect, it } from 'vitest';
import { type CableEnd, newStats } from '../fabric/cable.js';
import { wireBytes } from '../fabric/link.js';
import { DEFAULT_SWITCH_CONFIG } from '../fabric/switch/config.js';
import { newPacket } from '../wire/build.js';
import { encodePfc } from '../wire/mac-control.js';
import { encodePacket } from '../wire/packet.js';
import { parseConfig } from './config.js';
import { hostedSwitches, RealtimeSwitches } from './realtime-switch.js';
import { switchRoutes } from './switch-routes.js';

/** A cable end that records what the switch sends and lets the test deliver frames to it. */
class TestEnd implements CableEnd {
  readonly sent: { ns: number; frame: Uint8Array }[] = [];
  #h: ((f: Uint8Array) => void) | null = null;
  constructor(readonly clock: { t: number }) {}
  send(frame: Uint8Array): void {
    this.sent.push({ ns: this.clock.t, frame: frame.slice() });
  }
  onReceive(h: ((f: Uint8Array) => void) | null): void {
    this.#h = h;
  }
  deliver(f: Uint8Array): void {
    this.#h!(f);
  }
  close(): void {}
  get stats() {
    return newStats();
  }
}

const MAC = (i: number) => `02:00:00:00:00:0${i + 1}`;
const IP = (i: number) => `192.0.2.${i + 1}`;

function roce(from: number, to: number, payload: number, prio = 0): Uint8Array {
  const mac = (i: number) => Uint8Array.of(2, 0, 0, 0, 0, i + 1);
  const ip = (i: number) => Uint8Array.of(192, 0, 2, i + 1);
  return encodePacket(
    newPacket('roce-v2', 0x04, {
      srcMac: mac(from),
      dstMac: mac(to),
      srcIp: ip(from),
      dstIp: ip(to),
      dscp: prio << 3,
      ecn: 2,
      psn: 0,
      destQp: 17,
      payload: new Uint8Array(payload),
    }),
  );
}

function rig(linkRate: number) {
  const clock = { t: 0 };
  const config = parseConfig(
    {
      devices: [
        { name: 'a', ports: [{ mac: MAC(0), ipv4: [IP(0)] }] },
        { name: 'b', ports: [{ mac: MAC(1), ipv4: [IP(1)] }] },
      ],
      switches: [{ name: 'sw0', ports: 3, linkRate, config: { ecn: { enabled: false } } }],
      cables: [
        { kind: 'wire', a: 'a:1', b: 'sw0:1' },
        { kind: 'wire', a: 'b:1', b: 'sw0:2' },
        { kind: 'udp', port: 'sw0:3', local: '127.0.0.1:1', remote: '127.0.0.1:2', hosts: [{ mac: MAC(2), ipv4: [IP(2)] }] },
      ],
    },
    't',
  );
  const fabric = new RealtimeSwitches(hostedSwitches(config), { now: () => clock.t });
  const ends = [0, 1, 2].map(() => new TestEnd(clock));
  ends.forEach((e, i) => expect(fabric.plug(`sw0:${i + 1}`, e)).toBe(true));
  /** Moves the clock to `ns`, stopping at every switch event on the way (as a loop polling continuously would). */
  const runTo = (ns: number): void => {
    for (;;) {
      const next = fabric.nextDeadline();
      if (next > ns) break;
      clock.t = next;
      fabric.poll();
    }
    clock.t = ns;
    fabric.poll();
  };
  return { clock, fabric, ends, runTo };
}

describe('RealtimeSwitches on a hand-moved clock', () => {
  it('a port sends one frame at a time at its line rate (preamble, FCS and gap counted), in order', () => {
    const { ends, runTo, fabric } = rig(1e9);
    const frames = Array.from({ length: 5 }, (_, i) => roce(0, 1, 500 + 100 * i));
    for (const f of frames) ends[0]!.deliver(f.slice());
    runTo(1_000_000);
    const out = ends[1]!.sent;
    expect(out.map((x) => x.frame.length)).toEqual(frames.map((f) => f.length));
    for (let i = 0; i < out.length; i++) expect(out[i]!.frame).toEqual(frames[i]);
    // At 1 Gb/s a byte takes 8 ns: frame i+1 leaves when frame i's last bit has.
    let t = 0;
    for (let i = 0; i < out.length; i++) {
      expect(out[i]!.ns, `frame ${i}`).toBe(Math.ceil(t));
      t += wireBytes(frames[i]!.length) * 8;
    }
    expect(ends[0]!.sent.length + ends[2]!.sent.length).toBe(0);
    expect(fabric.busy()).toBe(false);
    expect(fabric.stats().sw0![1]!.txFrames).toBe(5);
  });

  it('a frame for a host named on a UDP cable leaves by that port; an unknown address is dropped and counted', () => {
    const { ends, runTo, fabric } = rig(10e9);
    ends[0]!.deliver(roce(0, 2, 100));
    const stranger = roce(0, 1, 100);
    stranger[30 + 3] = 99; // destination 192.0.2.99 (IPv4 header at 14, destination at +16)
    ends[0]!.deliver(stranger);
    runTo(100_000);
    expect(ends[2]!.sent.length).toBe(1);
    expect(ends[1]!.sent.length).toBe(0);
    expect(fabric.stats().sw0![0]!.droppedNoRoute).toBe(1);
  });

  it('a PAUSE received on a port holds exactly its priority there for quanta × 512 bit times at the port rate', () => {
    const { ends, runTo, clock } = rig(1e9);
    // XOFF priority 3 for 100 quanta = 51,200 bit times = 51.2 µs at 1 Gb/s, arriving on port 2 (toward b).
    const t = [0, 0, 0, 100, 0, 0, 0, 0];
    ends[1]!.deliver(encodePfc(Uint8Array.of(2, 0, 0, 0, 0, 2), 1 << 3, t));
    ends[0]!.deliver(roce(0, 1, 200, 3));
    ends[0]!.deliver(roce(0, 1, 200, 0));
    runTo(50_000);
    // Priority 0 went at once; priority 3 waits.
    expect(ends[1]!.sent.map((x) => x.frame[15]! >> 2)).toEqual([0]);
    runTo(51_199);
    expect(ends[1]!.sent.length).toBe(1);
    runTo(60_000);
    expect(ends[1]!.sent.length).toBe(2);
    expect(ends[1]!.sent[1]!.ns).toBe(51_200);
    expect(ends[1]!.sent[1]!.frame[15]! >> 2).toBe(3 << 3);
    expect(clock.t).toBe(60_000);
  });

  it('routes: shortest paths through two tiers, ECMP over both spines, as the simulator gets them', () => {
    // Two leaves, two spines, one host per leaf.
    const routes = switchRoutes({
      devices: [
        { name: 'h0', ports: [{ mac: MAC(0), ipv4: [IP(0)], ipv6: [] }] },
        { name: 'h1', ports: [{ mac: MAC(1), ipv4: [IP(1)], ipv6: [] }] },
      ],
      wires: [
        { a: 'h0:1', b: 'l0:1' },
        { a: 'h1:1', b: 'l1:1' },
        { a: 'l0:2', b: 's0:1' },
        { a: 'l0:3', b: 's1:1' },
        { a: 'l1:2', b: 's0:2' },
        { a: 'l1:3', b: 's1:2' },
      ],
      switches: new Set(['l0', 'l1', 's0', 's1']),
    });
    expect(routes.get('l0')).toEqual([
      { ip: IP(0), mac: MAC(0), ports: [0] },
      { ip: IP(1), mac: MAC(1), ports: [1, 2] },
    ]);
    expect(routes.get('s1')).toEqual([
      { ip: IP(0), mac: MAC(0), ports: [0] },
      { ip: IP(1), mac: MAC(1), ports: [1] },
    ]);
  });

  it('a switch spec carries the configured settings and the defaults otherwise', () => {
    const c = parseConfig({ devices: [{ name: 'a', ports: [{ mac: MAC(0) }] }], switches: [{ name: 's', ports: 4 }] }, 't');
    const [s] = hostedSwitches(c);
    expect(s).toMatchObject({ name: 's', index: 0, ports: 4, linkRate: 10e9, delayNs: 1000, mtu: 9018, routes: [] });
    expect(s!.config).toEqual(DEFAULT_SWITCH_CONFIG);
  });
});
