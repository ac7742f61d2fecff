/**
 * Switches in the realtime runtime: the simulator's switch (src/fabric/switch,
 * unchanged) driven by the wall clock. Its events (PAUSE expiry, XOFF
 * refresh, a port's line becoming free) sit in a discrete-event Scheduler
 * whose clock the device loop moves to the monotonic clock on every pass,
 * so they run at most one pass late.
 *
 * Each switch port has a paced line: it pulls the next frame when the
 * previous one would have left at the port's link rate (preamble, FCS and
 * inter-frame gap counted, as on the simulated link), and hands it to the
 * port's cable (an in-process wire, a ring to another worker, a UDP socket).
 * The line rate is what makes an egress queue build when devices send
 * faster than it drains, and so what makes ECN marking and PFC happen as in
 * the simulator. The cable's own latency is whatever the machine gives.
 */
import type { CableEnd } from '../fabric/cable.js';
import { wireBytes } from '../fabric/link.js';
import { DEFAULT_SWITCH_CONFIG, type SwitchConfig } from '../fabric/switch/config.js';
import { Switch, type SwitchLine, type SwitchPortStats } from '../fabric/switch/switch.js';
import { releaseFrame } from '../pipeline/packet-builder.js';
import { parseMac } from '../wire/index.js';
import { Random } from './sim/random.js';
import { Scheduler, type SimEvent } from './sim/scheduler.js';
import type { ModelConfig } from './config.js';
import { applyRoutes, type HostAddresses, type SwitchRoute, switchPortMac, switchRoutes } from './switch-routes.js';

/** One switch as the main thread hands it to the thread that runs it (plain data: it crosses to a worker). */
export interface HostedSwitchSpec {
  readonly name: string;
  /** Index of the switch in the configuration (its port MACs: 02:5e:<index>:<port>). */
  readonly index: number;
  readonly ports: number;
  /** Every port's line rate, bit/s. */
  readonly linkRate: number;
  /** Cable delay the PFC headroom is sized for, ns. */
  readonly delayNs: number;
  /** Largest frame the switch forwards (bytes, no FCS): also sizes the headroom. */
  readonly mtu: number;
  readonly config: SwitchConfig;
  readonly routes: readonly SwitchRoute[];
}

/** The configuration's switches with their forwarding tables, ready to hand to the threads that run them. */
export function hostedSwitches(config: ModelConfig): HostedSwitchSpec[] {
  const list = config.switches ?? [];
  if (list.length === 0) return [];
  const remoteHosts = new Map<string, readonly HostAddresses[]>();
  for (const c of config.cables) if (c.kind === 'udp' && c.hosts) remoteHosts.set(c.port, c.hosts);
  const routes = switchRoutes({
    devices: config.devices,
    wires: config.cables.flatMap((c) => (c.kind === 'wire' ? [c] : [])),
    switches: new Set(list.map((s) => s.name)),
    remoteHosts,
  });
  return list.map((s, index) => ({
    name: s.name,
    index,
    ports: s.ports,
    linkRate: s.linkRate ?? 10e9,
    delayNs: s.delayNs ?? 1000,
    mtu: s.mtu ?? 9018,
    config: s.config ?? DEFAULT_SWITCH_CONFIG,
    routes: routes.get(s.name)!,
  }));
}

/** A port's line: one frame at a time, at the link rate. */
class PacedLine implements SwitchLine {
  readonly #sw: Switch;
  readonly #index: number;
  readonly #end: CableEnd;
  readonly #sched: Scheduler;
  readonly #nsPerByte: number;
  readonly #free: SimEvent;
  /** When the frame on the line has left, ns (fractional). */
  #busyUntil = 0;

  constructor(sw: Switch, index: number, end: CableEnd, sched: Scheduler, linkRate: number) {
    this.#sw = sw;
    this.#index = index;
    this.#end = end;
    this.#sched = sched;
    this.#nsPerByte = 8e9 / linkRate;
    this.#free = sched.event(`${sw.name}.p${index}.lineFree`, 0, () => this.#next());
  }

  kick(): void {
    if (!this.#free.scheduled) this.#next();
  }

  #next(): void {
    const frame = this.#sw.pull(this.#index);
    if (frame === null) return;
    const now = this.#sched.now();
    const start = this.#busyUntil > now ? this.#busyUntil : now;
    this.#busyUntil = start + wireBytes(frame.length) * this.#nsPerByte;
    const end = this.#end;
    if (end.sendOwned) end.sendOwned(frame);
    else {
      end.send(frame);
      releaseFrame(frame);
    }
    this.#sched.schedule(this.#free, Math.ceil(this.#busyUntil));
  }
}

/** The switches one thread runs, on one scheduler over that thread's clock. */
export class RealtimeSwitches {
  readonly switches: readonly Switch[];
  readonly #specs: readonly HostedSwitchSpec[];
  readonly #sched = new Scheduler();
  readonly #clock: { now(): number };
  #running = false;

  constructor(specs: readonly HostedSwitchSpec[], clock: { now(): number }, seed: number | string | bigint = 1) {
    this.#specs = specs;
    this.#clock = clock;
    const random = new Random(seed);
    this.switches = specs.map((s) => {
      const ports = Array.from({ length: s.ports }, (_, i) => ({
        linkRate: s.linkRate,
        delayNs: s.delayNs,
        mtu: s.mtu,
        mac: parseMac(switchPortMac(s.index, i)),
      }));
      const sw = new Switch(s.name, s.config, ports, this.#sched, random.fork(`${s.name}.ecn`));
      applyRoutes(sw, s.routes);
      return sw;
    });
  }

  /** The switch port a `SWITCH:PORT` reference names here, or null. */
  port(ref: string): { sw: Switch; index: number; spec: HostedSwitchSpec } | null {
    const [name, num] = ref.split(':') as [string, string];
    const k = this.#specs.findIndex((s) => s.name === name);
    if (k < 0) return null;
    const index = Number(num) - 1;
    if (!Number.isInteger(index) || index < 0 || index >= this.#specs[k]!.ports) return null;
    return { sw: this.switches[k]!, index, spec: this.#specs[k]! };
  }

  /** Connects a switch port to its cable: what arrives goes into the switch, what leaves goes out at the line rate. */
  plug(ref: string, end: CableEnd): boolean {
    const p = this.port(ref);
    if (!p) return false;
    const { sw, index } = p;
    end.onReceive((f) => {
      this.#advance();
      sw.receive(index, f);
    });
    sw.attach(index, new PacedLine(sw, index, end, this.#sched, p.spec.linkRate));
    return true;
  }

  /** Runs the switches' events that are due; returns how many ran. */
  poll(): number {
    return this.#advance();
  }

  /** Moves the switches' clock to now, running what is due (not from inside one of their own events). */
  #advance(): number {
    if (this.#running) return 0;
    this.#running = true;
    try {
      return this.#sched.runUntil(Math.floor(this.#clock.now()));
    } finally {
      this.#running = false;
    }
  }

  /** Time of the next switch event (clock ns), or Infinity. */
  nextDeadline(): number {
    return this.#sched.nextTime();
  }

  /** Every switch's port counters, port 1 first. */
  stats(): Record<string, SwitchPortStats[]> {
    const out: Record<string, SwitchPortStats[]> = {};
    for (const sw of this.switches) out[sw.name] = Array.from({ length: sw.portCount }, (_, i) => sw.stats(i));
    return out;
  }

  /** Frames still queued in any switch. */
  busy(): boolean {
    for (const sw of this.switches) for (let i = 0; i < sw.portCount; i++) if (sw.queueBytes(i) > 0) return true;
    return false;
  }
}
