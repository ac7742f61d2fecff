/**
 * Runs a set of model devices in one thread: builds each device's firmware,
 * ports and pipeline over its shared memory, lays the cables, and offers
 * `poll()` for whatever loop drives them (a worker's spin-then-sleep loop,
 * or the application's own thread).
 */
import { resolveCapabilities } from '../device/capabilities.js';
import { ContextTables } from '../device/contexts.js';
import { HwCounters } from '../device/counters.js';
import { Firmware } from '../device/firmware.js';
import { HostMemory } from '../device/host-memory.js';
import { Bar, DevStatus, setDeviceStatus } from '../device/registers.js';
import { InProcessCable, type CableEnd } from '../fabric/cable.js';
import { FaultInjector, FaultyCableEnd } from '../fabric/faults.js';
import { Random } from './sim/random.js';
import { FrameRing } from '../fabric/frame-ring.js';
import { UdpCable } from '../fabric/udp-cable.js';
import { EthPort, resolveEthPortParams } from '../pipeline/eth-port.js';
import { Nic } from '../pipeline/nic.js';
import { releaseFrame } from '../pipeline/packet-builder.js';
import { IBTA_QUIRKS, type NicClock, type Quirks } from '../pipeline/nic-env.js';
import { LINKTYPE_ETHERNET, PcapWriter } from '../wire/index.js';
import type { CableConfig } from './config.js';
import type { DeviceResources } from './device-resources.js';

/** A cable between two threads: one ring each way, made by the main thread. */
export interface RingCable {
  /** DEVICE:PORT on this side. */
  port: string;
  tx: SharedArrayBuffer;
  rx: SharedArrayBuffer;
}

export interface HostedDevice {
  readonly name: string;
  readonly nic: Nic;
  readonly ports: EthPort[];
  readonly bar: Bar;
}

class RingEnd implements CableEnd {
  private handler: ((f: Uint8Array) => void) | null = null;
  private s = { framesSent: 0, bytesSent: 0, framesReceived: 0, bytesReceived: 0, framesDropped: 0 };
  constructor(private readonly tx: FrameRing, private readonly rx: FrameRing) {}
  /** Resolves when the other thread pushes a frame (or at the timeout). */
  waitForData(ms: number): Promise<unknown> {
    return this.rx.waitForDataAsync(ms);
  }
  send(frame: Uint8Array): void {
    if (this.tx.push(frame)) {
      this.s.framesSent++;
      this.s.bytesSent += frame.length;
    } else this.s.framesDropped++; // a full ring drops, as a congested wire would
  }
  onReceive(h: ((f: Uint8Array) => void) | null): void {
    this.handler = h;
  }
  close(): void {
    this.handler = null;
  }
  get stats() {
    return { ...this.s };
  }
  /** Delivers what the other thread sent; returns the number of frames. */
  poll(): number {
    let n = 0;
    for (let f = this.rx.pop(); f; f = this.rx.pop()) {
      this.s.framesReceived++;
      this.s.bytesReceived += f.length;
      this.handler?.(f);
      n++;
    }
    return n;
  }
}

export class DeviceHost {
  readonly devices: HostedDevice[] = [];
  private readonly wires: InProcessCable[] = [];
  private readonly rings: RingEnd[] = [];
  private readonly udp: UdpCable[] = [];
  private readonly captures: PcapWriter[] = [];
  private kick: (() => void) | null = null;
  private readonly injectors = new Map<CableConfig, FaultInjector>();

  constructor(resources: DeviceResources[], readonly clock: NicClock, quirks: Partial<Quirks> = {}) {
    const portClock = { nowNs: () => BigInt(Math.floor(clock.now())) };
    const q: Quirks = { ...IBTA_QUIRKS, ...quirks };
    for (const r of resources) {
      const caps = resolveCapabilities(r.capsConfig);
      const mem = HostMemory.attach(r.mem);
      const bar = Bar.attach(r.bar);
      const tables = ContextTables.attach(r.tables);
      const counters = HwCounters.attach(r.counters);
      const fw = new Firmware({ caps, mem, bar, tables, counters });
      const ports = r.ports.map((p) => new EthPort(resolveEthPortParams({ macAddress: p.mac, ipv4Addresses: p.ipv4, ipv6Addresses: p.ipv6 }, `${r.name}.ports`), portClock));
      const nic = new Nic({ name: r.name, caps, fw, mem, bar, tables, counters, ports, clock, quirks: q });
      r.ports.forEach((p, i) => {
        if (p.capture) {
          const w = PcapWriter.open(p.capture, { linktype: LINKTYPE_ETHERNET, nanosecond: true });
          this.captures.push(w);
          ports[i]!.setCapture(w);
        }
      });
      setDeviceStatus(bar, DevStatus.READY);
      this.devices.push({ name: r.name, nic, ports, bar });
    }
  }

  private portRef(ref: string): { dev: HostedDevice; portNum: number } | null {
    const [name, num] = ref.split(':') as [string, string];
    const dev = this.devices.find((d) => d.name === name);
    return dev ? { dev, portNum: Number(num) } : null;
  }

  private plug(ref: { dev: HostedDevice; portNum: number }, end: CableEnd): void {
    ref.dev.ports[ref.portNum - 1]!.attach(end);
    end.onReceive((f) => {
      ref.dev.nic.receive(ref.portNum, f);
      // The NIC keeps nothing of a frame once it is processed: recycle the buffer.
      releaseFrame(f);
      // A frame from a socket arrives on the event loop: wake a sleeping loop to send what it caused.
      this.wake();
    });
  }

  /** Promises that resolve when a frame arrives on a ring cable from another thread. */
  ringWaits(ms: number): Promise<unknown>[] {
    return this.rings.map((r) => r.waitForData(ms));
  }

  /** Resolves at the next `wake()` (a frame arrived from outside the poll loop). */
  kicked(): Promise<void> {
    return new Promise<void>((r) => {
      this.kick = r;
    });
  }

  private wake(): void {
    const k = this.kick;
    this.kick = null;
    k?.();
  }

  /**
   * With fault rules, a cable end becomes a FaultyCableEnd: seeded dice,
   * but delays and windows in wall time (docs/faults.md).
   */
  private faulty(end: CableEnd, injector: FaultInjector | null, direction: 'a->b' | 'b->a'): CableEnd {
    if (!injector) return end;
    return new FaultyCableEnd(end, injector, { direction, nowNs: () => this.clock.now(), setTimer: (ms, fn) => setTimeout(fn, ms) });
  }

  /** Lays the cables whose ends are here: wires between local ports, ring ends, UDP cables. */
  async cable(cables: CableConfig[], rings: RingCable[] = [], seed: number | string | bigint = 1): Promise<void> {
    // One independent, seeded stream per cable (the simulator's forkable source).
    const random = new Random(typeof seed === 'number' || typeof seed === 'bigint' || typeof seed === 'string' ? seed : 1);
    cables.forEach((c, i) => {
      if (c.faults && c.faults.length > 0) this.injectors.set(c, new FaultInjector(c.faults, { random: random.fork(`cable/${i}`) }));
    });
    for (const c of cables) {
      const inj = this.injectors.get(c) ?? null;
      if (c.kind === 'wire') {
        const a = this.portRef(c.a);
        const b = this.portRef(c.b);
        if (!a || !b) continue; // the other end lives on another thread: a ring cable
        const w = new InProcessCable();
        this.plug(a, this.faulty(w.a, inj, 'a->b'));
        this.plug(b, this.faulty(w.b, inj, 'b->a'));
        this.wires.push(w);
      } else {
        const p = this.portRef(c.port);
        if (!p) continue;
        const u = await UdpCable.open({ local: c.local, remote: c.remote });
        this.plug(p, this.faulty(u, inj, 'a->b'));
        this.udp.push(u);
      }
    }
    for (const r of rings) {
      const p = this.portRef(r.port);
      if (!p) continue;
      const end = new RingEnd(FrameRing.attach(r.tx), FrameRing.attach(r.rx));
      this.plug(p, end);
      this.rings.push(end);
    }
  }

  /** One pass over every device and cable; returns the work done (0 = idle). */
  poll(): number {
    let work = 0;
    for (const w of this.wires) work += w.drain();
    for (const r of this.rings) work += r.poll();
    for (const d of this.devices) work += d.nic.poll();
    for (const w of this.wires) work += w.drain();
    return work;
  }

  /** Earliest transport timer of any device (ns), or Infinity. */
  nextDeadline(): number {
    let t = Infinity;
    for (const d of this.devices) t = Math.min(t, d.nic.nextDeadline());
    return t;
  }

  /** Starts or stops capturing a port at run time (null stops). */
  setCapture(ref: string, path: string | null): void {
    const p = this.portRef(ref);
    if (!p) throw new Error(`no port ${ref} here`);
    const w = path ? PcapWriter.open(path, { linktype: LINKTYPE_ETHERNET, nanosecond: true }) : null;
    if (w) this.captures.push(w);
    p.dev.ports[p.portNum - 1]!.setCapture(w);
  }

  close(): void {
    for (const u of this.udp) u.close();
    for (const c of this.captures) {
      try {
        c.close();
      } catch {
        // already closed
      }
    }
    for (const d of this.devices) setDeviceStatus(d.bar, 0);
  }
}
