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
import { Bar, DevStatus, Reg, setDeviceStatus } from '../device/registers.js';
import { InProcessCable, type CableEnd } from '../fabric/cable.js';
import type { SwitchPortStats } from '../fabric/switch/switch.js';
import { FaultInjector, FaultyCableEnd } from '../fabric/faults.js';
import { Random } from './sim/random.js';
import { resolveCcParams } from '../pipeline/cc-params.js';
import type { EthPort } from '../pipeline/eth-port.js';
import { Nic } from '../pipeline/nic.js';
import { releaseFrame } from '../pipeline/packet-builder.js';
import type { NicClock } from '../pipeline/nic-env.js';
import { LINKTYPE_INFINIBAND, type PcapWriter } from '../wire/index.js';
import type { CableConfig } from './config.js';
import { type DeviceResources, makePort, portLinktype } from './device-resources.js';
import { RingEnd } from './ring-end.js';
import { DEFAULT_BURST_BYTES, type PaceSettings } from './pacer.js';
import { createUdpCableShm, UdpIoThread, type UdpCableShm } from './udp-io.js';
import { openPcapFile } from './pcap-file.js';
import { SealingEnd } from './sealing-end.js';
import { type HostedSwitchSpec, RealtimeSwitches } from './realtime-switch.js';

/** A cable between two threads: one ring each way, made by the main thread. */
export interface RingCable {
  /** DEVICE:PORT on this side. */
  port: string;
  tx: SharedArrayBuffer;
  rx: SharedArrayBuffer;
  /** Both ends are device ports (no switch, no faults): what arrives is as the far device built it. */
  asBuilt?: boolean;
}

export interface HostedDevice {
  readonly name: string;
  readonly nic: Nic;
  readonly ports: EthPort[];
  readonly bar: Bar;
}

/** Counters of a running model's fabric (RunningModel.fabricStats). */
export interface FabricStats {
  /** Per switch, its ports' counters, port 1 first. */
  switches: Record<string, SwitchPortStats[]>;
  /** Per device port ('rnic0:1'), the port's counters (rx/tx, ARP, PFC: rx_prio3_pause, ...). */
  ports: Record<string, Record<string, number>>;
}

/**
 * What a cable does with the frames a device port sends, and so what the
 * port and the receiver may skip:
 * - 'checked': something on the way may read or change them (a socket, a
 *   switch, a fault rule): they go in with their ICRC computed
 *   (`SealingEnd`) and the receiver checks it;
 * - 'copied': a ring to a model device port on another thread, nothing on
 *   the way: copied, so sealed before they go in (the deferred-ICRC mark
 *   is a property of the frame's view and does not cross threads); the check is skipped;
 * - 'as-built': an in-process wire between two model device ports, nothing
 *   on the way: the frame object itself reaches the far device, which
 *   takes it as built, so its ICRC may stay deferred (`NicEnv.deferIcrc`)
 *   and only a capture, which seals as it writes, ever computes it.
 */
type Carriage = 'checked' | 'copied' | 'as-built';

/** Room counted per packet when budgeting a pass: a 4096-byte MTU packet with every header (and a tag), rounded up. */
const FULL_FRAME_BYTES = 4096 + 128;

/**
 * Rounds of a device's transmit schedule per pass (Nic.poll): a lone QP
 * with a burst of small posts sends up to the pass's budget (256) in one
 * pass instead of QP_BURST (16), so the far device receives, and
 * acknowledges, the burst in one drain; a pass costs a doorbell and timer
 * sweep per device, which a 16-packet pass paid once per 16 packets.
 * Fairness between QPs is unchanged: each round gives each QP up to
 * QP_BURST. A round after the first starts only while the pass has sent
 * less than PASS_ROUND_BYTES: 256 MTU-4096 frames (1 MiB in flight) would
 * leave the cache between the gather and the far end's scatter.
 */
export const PASS_ROUNDS = 16;
export const PASS_ROUND_BYTES = 64 * 1024;

export class DeviceHost {
  /** Rounds of each device's transmit schedule per pass (PASS_ROUNDS; a test compares with 1). */
  passRounds = PASS_ROUNDS;
  readonly devices: HostedDevice[] = [];
  private readonly wires: InProcessCable[] = [];
  /** Ring ends to other threads: device engines on other workers, and the UDP I/O thread. */
  private readonly rings: RingEnd[] = [];
  private udp: UdpIoThread | null = null;
  private readonly captures: PcapWriter[] = [];
  private kick: (() => void) | null = null;
  private readonly injectors = new Map<CableConfig, FaultInjector>();
  /** The switches this thread runs (docs/fabric.md), or null. */
  readonly fabric: RealtimeSwitches | null;
  /**
   * Each device's `NicEnv.deferIcrc`, off until a port of it gets an
   * 'as-built' cable (`plug`; before any QP has built a path, which reads it).
   */
  private readonly lazyIcrc = new Map<HostedDevice, { deferIcrc: boolean }>();

  constructor(
    resources: DeviceResources[],
    readonly clock: NicClock,
    switches: { specs: readonly HostedSwitchSpec[]; seed?: number | string | bigint } | null = null,
  ) {
    this.fabric = switches && switches.specs.length > 0 ? new RealtimeSwitches(switches.specs, clock, switches.seed ?? 1) : null;
    const portClock = { nowNs: () => BigInt(Math.floor(clock.now())) };
    for (const r of resources) {
      const caps = resolveCapabilities(r.capsConfig);
      const mem = HostMemory.attach(r.mem);
      const bar = Bar.attach(r.bar);
      const tables = ContextTables.attach(r.tables);
      const counters = HwCounters.attach(r.counters);
      const fw = new Firmware({ caps, mem, bar, tables, counters, clock });
      const ports = r.ports.map((p) => makePort(p, `${r.name}.ports`, portClock));
      const env = {
        name: r.name,
        caps,
        fw,
        mem,
        bar,
        tables,
        counters,
        ports,
        clock,
        profile: r.profile,
        cc: resolveCcParams(r.ccConfig ?? {}, `${r.name}.congestion`),
        deferIcrc: false,
      };
      const nic = new Nic(env);
      r.ports.forEach((p, i) => {
        if (p.capture) {
          const w = openPcapFile(p.capture, { linktype: portLinktype(p), nanosecond: true });
          this.captures.push(w);
          ports[i]!.setCapture(w);
        }
      });
      setDeviceStatus(bar, DevStatus.READY);
      const dev = { name: r.name, nic, ports, bar };
      this.devices.push(dev);
      this.lazyIcrc.set(dev, env);
    }
  }

  private portRef(ref: string): { dev: HostedDevice; portNum: number } | null {
    const [name, num] = ref.split(':') as [string, string];
    const dev = this.devices.find((d) => d.name === name);
    return dev ? { dev, portNum: Number(num) } : null;
  }

  /** Ring ends by device: what limits how much a device may send in a pass. */
  private readonly deviceRings = new Map<HostedDevice, RingEnd[]>();

  /** Plugs a cable end into the port `ref` names here (a device's or a switch's); false if it is not here. */
  private plugAt(ref: string, end: CableEnd, carriage: Carriage = 'checked'): boolean {
    const p = this.portRef(ref);
    if (p) {
      this.plug(p, end, carriage);
      return true;
    }
    return this.fabric?.plug(ref, end) ?? false;
  }

  /** Is the port `ref` names (a device's or a switch's) run by this thread? */
  private isHere(ref: string): boolean {
    return this.portRef(ref) !== null || this.fabric?.port(ref) != null;
  }

  private plugRing(ref: string, ring: RingEnd, end: CableEnd = ring, carriage: Carriage = 'checked'): void {
    if (!this.plugAt(ref, end, carriage)) return;
    this.rings.push(ring);
    const p = this.portRef(ref);
    if (!p) return; // a switch port: its line paces itself
    const l = this.deviceRings.get(p.dev) ?? [];
    l.push(ring);
    this.deviceRings.set(p.dev, l);
  }

  /**
   * Unless the cable is 'checked', every frame this end delivers is byte
   * for byte what a model device built, so the ICRC check may be taken as
   * passed, as the simulator does for a link that vouches for its bytes.
   * Unless it is 'as-built', what the port sends is sealed first.
   */
  private plug(ref: { dev: HostedDevice; portNum: number }, end: CableEnd, carriage: Carriage): void {
    const asBuilt = carriage !== 'checked';
    if (carriage === 'as-built') this.lazyIcrc.get(ref.dev)!.deferIcrc = true;
    ref.dev.ports[ref.portNum - 1]!.attach(carriage === 'as-built' ? end : new SealingEnd(end));
    end.onReceive((f) => {
      ref.dev.nic.receive(ref.portNum, f, asBuilt);
      // The NIC keeps nothing of a frame once it is processed: recycle the buffer
      // (its deferred-ICRC mark lives on this view, which goes with it).
      releaseFrame(f);
      // A frame from a socket arrives on the event loop: wake a sleeping loop to send what it caused.
      this.wake();
    });
  }

  /**
   * Promises that resolve when a frame arrives on a ring cable from another
   * thread (or a socket), or when a ring with frames waiting to go has room.
   */
  ringWaits(): Promise<unknown>[] {
    return this.rings.map((r) => r.wait());
  }

  /** Frames waiting for room in a TX ring. */
  pendingTx(): number {
    let n = 0;
    for (const r of this.rings) n += r.pendingTx;
    return n;
  }

  /**
   * Drain on stop: polls until nothing is left to send (every queued frame
   * is in a ring or on a wire), at most `ms` milliseconds. The last ACK or
   * the last UC/UD message posted before the stop still goes out.
   */
  async drain(ms = 200): Promise<void> {
    const end = this.clock.now() + ms * 1e6;
    let quiet = 0;
    while (quiet < 4 && this.clock.now() < end) {
      const work = this.poll();
      const busy = this.devices.some((d) => d.nic.busy()) || (this.fabric?.busy() ?? false);
      if (work === 0 && !busy && this.pendingTx() === 0) quiet++;
      else quiet = 0;
      if (work === 0) await new Promise<void>((r) => setImmediate(r));
    }
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
    // A delayed frame is sent from a timer on the event loop: wake a sleeping loop to carry it.
    return new FaultyCableEnd(end, injector, {
      direction,
      nowNs: () => this.clock.now(),
      setTimer: (ms, fn) =>
        setTimeout(() => {
          fn();
          this.wake();
        }, ms),
    });
  }

  /**
   * Lays the cables whose ends are here: wires between local ports, ring
   * ends, UDP cables. A UDP cable's socket lives on the I/O thread, its
   * rings in `udpShm` (keyed by the cable's index in `cables`; made here
   * when not given).
   */
  async cable(
    cables: CableConfig[],
    rings: RingCable[] = [],
    seed: number | string | bigint = 1,
    udpShm: ReadonlyMap<number, UdpCableShm> = new Map(),
  ): Promise<void> {
    // One independent, seeded stream per cable (the simulator's forkable source).
    const random = new Random(typeof seed === 'number' || typeof seed === 'bigint' || typeof seed === 'string' ? seed : 1);
    cables.forEach((c, i) => {
      if (c.faults && c.faults.length > 0) this.injectors.set(c, new FaultInjector(c.faults, { random: random.fork(`cable/${i}`) }));
    });
    for (const c of cables) {
      const inj = this.injectors.get(c) ?? null;
      if (c.kind === 'wire') {
        if (!this.isHere(c.a) || !this.isHere(c.b)) continue; // the other end lives on another thread: a ring cable
        if (inj !== null && this.isIbWire(c.a)) inj.linktype = LINKTYPE_INFINIBAND;
        const w = new InProcessCable();
        // Device to device with nothing on the way: the bytes arrive as the far device built them (a switch may forward what came from a socket).
        const carriage = inj === null && this.portRef(c.a) !== null && this.portRef(c.b) !== null ? 'as-built' : 'checked';
        this.plugAt(c.a, this.faulty(w.a, inj, 'a->b'), carriage);
        this.plugAt(c.b, this.faulty(w.b, inj, 'b->a'), carriage);
        this.wires.push(w);
      }
    }
    for (const r of rings) {
      if (this.isHere(r.port)) this.plugRing(r.port, new RingEnd(r.tx, r.rx), undefined, r.asBuilt === true ? 'copied' : 'checked');
    }
    // UDP cables: their ring ends are plugged now, so what the port sends
    // before the socket is bound (an ARP request, say) waits in the TX ring.
    // Last, and the only part that waits: the I/O thread starts and binds
    // (tens of ms; seconds on a loaded machine). The loop may run meanwhile.
    const udp: { options: { local: string; remote: string; socketBufferBytes?: number }; shm: UdpCableShm; pace?: PaceSettings; label: string }[] = [];
    cables.forEach((c, i) => {
      if (c.kind !== 'udp') return;
      if (!this.isHere(c.port)) return;
      const options = { local: c.local, remote: c.remote, ...(c.socketBufferBytes === undefined ? {} : { socketBufferBytes: c.socketBufferBytes }) };
      const shm = udpShm.get(i) ?? createUdpCableShm();
      const end = UdpIoThread.end(shm);
      this.plugRing(c.port, end, this.faulty(end, this.injectors.get(c) ?? null, 'a->b'));
      const pace = c.rate === undefined ? {} : { pace: { rate: c.rate, burstBytes: c.burstBytes ?? DEFAULT_BURST_BYTES } };
      udp.push({ options, shm, ...pace, label: `cables[${i}] (${c.port})` });
    });
    if (udp.length > 0) {
      this.cabling = UdpIoThread.open(udp);
      this.udp = await this.cabling;
    }
  }

  /** The UDP I/O thread being started, if it is. */
  private cabling: Promise<UdpIoThread> | null = null;

  /** The local addresses the UDP cables are bound to, in the order of the configuration. */
  get udpLocal(): readonly string[] {
    return this.udp?.local ?? [];
  }

  /** Frames the last pass delivered over the in-process wires after the devices ran. */
  private deliveredLast = 0;

  /**
   * Did the last pass end with frames delivered that left work behind (a
   * response scheduled, a frame on a wire)? Then another pass sends it.
   */
  unsettled(): boolean {
    if (this.deliveredLast === 0) return false;
    for (const d of this.devices) if (d.nic.busy()) return true;
    for (const w of this.wires) if (w.pending > 0) return true;
    return false;
  }

  /**
   * True when a pass now can do nothing: no doorbell rung since the last
   * pass (every kind, commands too, sets DB_SUMMARY), no frame on a wire,
   * no packet waiting to go and no transport timer due (the clock is read
   * only when a timer is set). Always false with ring cables or switches
   * (their frames come with no doorbell). The inline runtime skips such
   * passes: an empty poll of a CQ then costs a few loads instead of a pass
   * (~0.5 µs for two devices).
   */
  quiet(): boolean {
    if (this.rings.length > 0 || this.fabric !== null) return false;
    for (const w of this.wires) if (w.pending > 0) return false;
    let deadline = Number.POSITIVE_INFINITY;
    for (const d of this.devices) {
      if (Atomics.load(d.bar.i32, Reg.DB_SUMMARY) !== 0 || d.nic.busy()) return false;
      const t = d.nic.nextDeadline();
      if (t < deadline) deadline = t;
    }
    return deadline === Number.POSITIVE_INFINITY || this.clock.now() < deadline;
  }

  /** One pass over every device and cable; returns the work done (0 = idle). */
  poll(): number {
    let work = this.fabric?.poll() ?? 0;
    for (const w of this.wires) work += w.drain();
    for (const r of this.rings) work += r.poll();
    for (const d of this.devices) work += d.nic.poll(this.budget(d), this.passRounds, PASS_ROUND_BYTES);
    let late = 0;
    for (const w of this.wires) late += w.drain();
    this.deliveredLast = late;
    return work + late;
  }

  /**
   * Packets a device may send this pass: 256, or fewer when a ring cable of
   * one of its ports has room for fewer full-size frames (the UDP I/O
   * thread or the other engine is behind). Back-pressure instead of a
   * queue: a packet the pipeline still holds is sent when it can be, with
   * its timer started then.
   */
  private budget(d: HostedDevice): number {
    const rings = this.deviceRings.get(d);
    if (!rings) return 256;
    let budget = 256;
    for (const r of rings) {
      const n = Math.max(0, Math.floor(r.txRoom() / FULL_FRAME_BYTES));
      r.wantRoom = n < 256 && d.nic.busy();
      if (n < budget) budget = n;
    }
    return budget;
  }

  /** Earliest transport timer of any device (ns), or Infinity. */
  nextDeadline(): number {
    let t = Infinity;
    for (const d of this.devices) t = Math.min(t, d.nic.nextDeadline());
    if (this.fabric) t = Math.min(t, this.fabric.nextDeadline());
    return t;
  }

  /** What the switches and the ports here have counted (the ethtool-style port counters, PFC included). */
  fabricStats(): FabricStats {
    const ports: Record<string, Record<string, number>> = {};
    for (const d of this.devices) d.ports.forEach((p, i) => (ports[`${d.name}:${i + 1}`] = p.counters()));
    return { switches: this.fabric?.stats() ?? {}, ports };
  }

  /** Whether a wire joins two native IB ports (startModel has refused one of mixed link layers). */
  private isIbWire(a: string): boolean {
    const p = this.portRef(a);
    return p !== null && p.dev.ports[p.portNum - 1]!.ib !== null;
  }

  /** Starts or stops capturing a port at run time (null stops). */
  setCapture(ref: string, path: string | null): void {
    const p = this.portRef(ref);
    if (!p) throw new Error(`no port ${ref} here`);
    const port = p.dev.ports[p.portNum - 1]!;
    const w = path ? openPcapFile(path, { linktype: port.linktype, nanosecond: true }) : null;
    if (w) this.captures.push(w);
    port.setCapture(w);
  }

  /** Closes the cables (the UDP I/O thread sends what is still queued first), then the captures. */
  async close(): Promise<void> {
    if (this.cabling) await this.cabling.catch(() => null);
    const u = this.udp;
    this.udp = null;
    if (u) await u.close();
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
