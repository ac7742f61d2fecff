/**
 * The sim runtime: the model's devices, their pipelines and the links
 * between them, run in the application's thread by one discrete-event
 * scheduler on a virtual nanosecond clock, with one seeded random source.
 * Same configuration and seed: the same events in the same order, the same
 * frames at the same virtual times, byte-identical captures, identical
 * counters.
 *
 * The application drives it through the verbs API exactly as it drives the
 * realtime model. The driver calls `serviceInline()` after every doorbell
 * and command and on every empty ibv_poll_cq; here that is the whole
 * contract between the program and the clock:
 *
 *  - after a doorbell or command it schedules device work and returns
 *    (commands are answered at once; they take no virtual time);
 *  - on an empty poll (nothing rung since the last call) it runs events up
 *    to the next change (a CQE or EQE landing, an interrupt) or one
 *    `pollStep` of virtual time, always at least the next event, so a
 *    busy-poll loop moves the clock;
 *  - `waitIrq` (ibv_get_cq_event, ibv_get_async_event) runs events until the
 *    vector's count changes, yielding to the event loop at each change so
 *    other async code (the other end of a ping-pong in the same process)
 *    reacts at the virtual time it happened;
 *  - `sleep(ns)` / `until(cond)` wait for simulated time, the same way.
 *
 * See docs/simulator.md ("The sim runtime").
 */
import type { HostMemory } from '../../device/host-memory.js';
import type { HwCounters } from '../../device/counters.js';
import { irqCount, type Bar } from '../../device/registers.js';
import { carryOut, FaultInjector, type FaultRule, type FaultStats, type FaultVerdict, type ResolvedFaultRule } from '../../fabric/faults.js';

import { resolveSimLinkParams, SimLink, type SimLinkStats, WIRE_PRIORITY } from '../../fabric/link.js';
import { resolveTimingParams, type TimingParams } from '../../fabric/timing-params.js';
import { DEFAULT_SWITCH_CONFIG } from '../../fabric/switch/config.js';
import { Switch } from '../../fabric/switch/switch.js';
import type { CcEventKind } from '../../pipeline/cc/congestion-control.js';
import { LINKTYPE_INFINIBAND, parseMac, type PcapWriter, sealBeforeChange } from '../../wire/index.js';
import { ConfigError } from '../config-error.js';
import { checkWireLinkLayers, type ModelConfig, type SwitchEntry } from '../config.js';
import { createDevice, type DeviceOnHost, portLinktype } from '../device-resources.js';
import { DeferredPayloads } from './deferred-payloads.js';
import type { DeviceHandle, RunningModel } from '../model.js';
import { Random, type Seed } from './random.js';
import { Priority, Scheduler, SimError, SimEvent } from './scheduler.js';
import { type FrameObserver, type HandoffObserver, SimDevice, type SimDeviceContext, type SimPort } from './sim-device.js';
import { resolveSimRuntimeParams, type SimRuntimeParams } from './sim-params.js';
import { openPcapFile } from '../pcap-file.js';
import { applyRoutes, switchPortMac, switchRoutes } from '../switch-routes.js';

/** One cable's link settings and faults (`links[i]` goes with `cables[i]`). */
export interface SimLinkOptions {
  /** Name for events, fault streams and reports (default `l<i>`). */
  readonly name?: string;
  /** Overrides of the timing model for this link: `linkRate`, `propagationDelay`; and `queueLimit`. */
  readonly linkRate?: unknown;
  readonly propagationDelay?: unknown;
  readonly queueLimit?: unknown;
  /** Largest frame a switch on this link forwards from it (bytes, no FCS); also sizes its PFC headroom. Default 9018. */
  readonly mtu?: number;
  /** Fault rules on this link (docs/faults.md); `a->b` is from the cable's `a` port. */
  readonly faults?: readonly (FaultRule | ResolvedFaultRule)[];
}

/** A switch of the simulated fabric (src/fabric/switch); cables name its ports 'sw0:1' ... (its links give each port's rate, delay and MTU). */
export type SimSwitchOptions = SwitchEntry;

/** A switch of the running simulation. */
export interface SimSwitchInfo {
  readonly name: string;
  readonly sw: Switch;
  /** Cable refs of its ports, by index ('h0:1' is what port 1 faces). */
  readonly peers: readonly (string | null)[];
}

export interface SimOptions {
  /** The one seed of the run (number, bigint or string). Default 0. */
  readonly seed?: Seed;
  /** Timing model overrides (TIMING_PARAMS, src/fabric/timing-params.ts). */
  readonly timing?: Readonly<Record<string, unknown>>;
  /** Sim runtime settings (SIM_RUNTIME_PARAMS, ./sim-params.ts). */
  readonly sim?: Readonly<Record<string, unknown>>;
  /** Per cable, by index: link settings and faults. */
  readonly links?: readonly (SimLinkOptions | undefined)[];
  /** Fault rules for the one cable of a configuration with exactly one. */
  readonly faults?: readonly (FaultRule | ResolvedFaultRule)[];
}

/** A model configuration plus what the simulator adds (`workers` is ignored: everything runs in this thread). */
export type SimModelConfig = ModelConfig & SimOptions;

/** A link of the running simulation. */
export interface SimLinkInfo {
  readonly name: string;
  /** 'rnic0:1', 'rnic1:1'. */
  readonly a: string;
  readonly b: string;
  readonly link: SimLink;
  readonly faults: FaultInjector | null;
}

/** What `stats()` reports. */
export interface SimStats {
  readonly nowNs: number;
  readonly eventsRun: number;
  readonly pending: number;
  readonly links: Record<string, { aToB: SimLinkStats; bToA: SimLinkStats; faults: FaultStats | null }>;
  readonly devices: Record<string, { framesBuilt: number; doorbells: number; droppedNoCable: number }>;
}

/** One point of a QP's congestion-control time series. */
export interface CongestionEvent {
  readonly device: string;
  readonly qpn: number;
  /** What changed the rate, or 'sample' (congestionSnapshot). */
  readonly kind: CcEventKind | 'sample';
  /** Virtual time, ns. */
  readonly ns: number;
  readonly rateBps: number;
  readonly targetBps: number;
  readonly alpha: number;
}

export type CongestionObserver = (e: CongestionEvent) => void;

/**
 * A link's fault injector judging one frame (`SimModel.observeFaults`): every
 * frame it sees, on either end of the link, a switch's transmissions included,
 * with its verdict. `frame` is the frame as the injector saw it (a corrupted
 * one's original bytes).
 */
export interface FaultJudgement {
  readonly link: string;
  readonly direction: 'a->b' | 'b->a';
  readonly stage: 'tx' | 'rx';
  readonly frame: Uint8Array;
  readonly verdict: FaultVerdict;
  readonly ns: number;
}

export type FaultObserver = (j: FaultJudgement) => void;

const CHUNK_EVENTS = 50_000;

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

export class SimModel implements RunningModel {
  readonly config: ModelConfig;
  readonly devices: readonly DeviceHandle[];
  readonly scheduler: Scheduler;
  readonly random: Random;
  readonly seed: Seed;
  readonly timing: TimingParams;
  readonly params: SimRuntimeParams;
  readonly links: readonly SimLinkInfo[];
  readonly switches: readonly SimSwitchInfo[];
  readonly #devs: SimDevice[];
  readonly #made: DeviceOnHost[];
  readonly #captures: PcapWriter[] = [];
  #observers: FrameObserver[] = [];
  /** The observers added with `observe` (they may read payload bytes): while there is one, nothing is deferred. */
  readonly #payloadReaders = new Set<FrameObserver>();
  #ccObservers: CongestionObserver[] = [];
  #faultObservers: FaultObserver[] = [];
  #handoffObservers: HandoffObserver[] = [];
  #changes = 0;
  #stopped = false;
  #driving = false;
  /** True while step or runToChange runs a batch that ends at the first change. */
  #batch = false;
  #kicks: (() => void)[] = [];
  #horizon = Infinity;
  readonly #payloads = new DeferredPayloads();

  constructor(config: SimModelConfig) {
    this.config = config;
    this.seed = config.seed ?? 0;
    this.scheduler = new Scheduler();
    this.random = new Random(this.seed);
    this.timing = resolveTimingParams(config.timing ?? {}, 'timing');
    this.params = resolveSimRuntimeParams(config.sim ?? {}, 'sim');
    const ctx: SimDeviceContext = {
      sched: this.scheduler,
      payloads: this.#payloads,
      timing: this.timing,
      params: this.params,
      changed: () => {
        this.#changes++;
        // A batch run for a poll (step, runToChange) ends at the first change.
        if (this.#batch) this.scheduler.interrupt();
      },
    };
    this.#made = config.devices.map(createDevice);
    this.#devs = this.#made.map((d, i) => new SimDevice(d.resources, i, ctx));
    this.switches = this.#buildSwitches(config);
    this.links = this.#layCables(config);
    this.#route(config);
    for (const [i, d] of config.devices.entries()) {
      for (const [j, p] of d.ports.entries())
        if (p.capture) this.#capture(this.#devs[i]!.ports[j]!, openPcapFile(p.capture, { linktype: portLinktype(p), nanosecond: true }));
    }
    this.#updateDeferral();
    this.devices = this.#made.map(
      (d, i): DeviceHandle => ({
        name: d.resources.name,
        nodeGuid: d.nodeGuid,
        mem: d.mem as HostMemory,
        bar: d.bar as Bar,
        counters: d.counters as HwCounters,
        serviceInline: () => this.serviceInline(i),
        waitIrq: (v, seen) => this.#waitIrq(this.#devs[i]!.bar, v, seen),
      }),
    );
  }

  #layCables(config: SimModelConfig): SimLinkInfo[] {
    const out: SimLinkInfo[] = [];
    if (config.faults && config.faults.length > 0 && config.cables.length !== 1) {
      throw new ConfigError(
        `faults: a top-level fault list needs exactly one cable (there are ${config.cables.length}); give each link its own in links[i].faults`,
      );
    }
    checkWireLinkLayers(config);
    for (const [i, c] of config.cables.entries()) {
      if (c.kind !== 'wire') throw new ConfigError(`cables[${i}]: the simulator runs only in-process wires, not ${c.kind} cables`);
      const o = config.links?.[i] ?? {};
      const name = o.name ?? `l${i}`;
      const raw: Record<string, unknown> = { linkRate: this.timing.linkRate, propagationDelay: this.timing.propagationDelay };
      if (o.linkRate !== undefined) raw.linkRate = o.linkRate;
      if (o.propagationDelay !== undefined) raw.propagationDelay = o.propagationDelay;
      if (o.queueLimit !== undefined) raw.queueLimit = o.queueLimit;
      const link = new SimLink(this.scheduler, resolveSimLinkParams(raw, `links[${i}]`), name);
      const rules = o.faults ?? (config.cables.length === 1 ? config.faults : undefined) ?? [];
      const faults = rules.length > 0 ? new FaultInjector(rules, { random: this.random.fork(`${name}.faults`) }) : null;
      const sa = this.#switchPort(c.a, `cables[${i}].a`, o.linkRate, o.propagationDelay, o.mtu);
      const sb = this.#switchPort(c.b, `cables[${i}].b`, o.linkRate, o.propagationDelay, o.mtu);
      link.nativeIb = !sa && !sb && this.#port(c.a, `cables[${i}].a`).eth.ib !== null;
      if (faults && link.nativeIb) faults.linktype = LINKTYPE_INFINIBAND;
      if (sa) this.#plugSwitch(sa, link, 'aToB', link.a, faults, 'a->b', c.b);
      else this.#plug(this.#port(c.a, `cables[${i}].a`), link, 'aToB', link.a, faults, 'a->b');
      if (sb) this.#plugSwitch(sb, link, 'bToA', link.b, faults, 'b->a', c.a);
      else this.#plug(this.#port(c.b, `cables[${i}].b`), link, 'bToA', link.b, faults, 'b->a');
      out.push({ name, a: c.a, b: c.b, link, faults });
    }
    return out;
  }

  /** Switch specs are built lazily: a port's link rate, delay and MTU size its headroom. */
  #pendingSwitches = new Map<string, { opts: SimSwitchOptions; ports: ({ linkRate: number; delayNs: number; mtu: number } | null)[] }>();

  #buildSwitches(config: SimModelConfig): SimSwitchInfo[] {
    const names = new Set(config.devices.map((d) => d.name));
    for (const [i, s] of (config.switches ?? []).entries()) {
      if (names.has(s.name)) throw new ConfigError(`switches[${i}].name: ${s.name} is already the name of a device or switch`);
      if (!Number.isSafeInteger(s.ports) || s.ports < 1 || s.ports > 1024)
        throw new ConfigError(`switches[${i}].ports: expected 1..1024 ports, got ${s.ports}`);
      names.add(s.name);
      this.#pendingSwitches.set(s.name, { opts: s, ports: Array.from({ length: s.ports }, () => null) });
    }
    return [];
  }

  /** If `ref` names a switch port, records the link behind it and returns [switch, index]. */
  #switchPort(ref: string, path: string, rate: unknown, delay: unknown, mtu: number | undefined): { name: string; index: number } | null {
    const [name, num] = ref.split(':') as [string, string | undefined];
    const pend = this.#pendingSwitches.get(name);
    if (!pend) return null;
    const index = Number(num ?? '1') - 1;
    if (!Number.isInteger(index) || index < 0 || index >= pend.ports.length)
      throw new ConfigError(`${path}: switch ${name} has no port ${num} (ports 1..${pend.ports.length})`);
    if (pend.ports[index] !== null) throw new ConfigError(`${path}: port ${ref} already has a link`);
    const p = resolveSimLinkParams({ linkRate: rate ?? this.timing.linkRate, propagationDelay: delay ?? this.timing.propagationDelay }, path);
    pend.ports[index] = { linkRate: p.linkRate, delayNs: p.propagationDelay, mtu: mtu ?? 9018 };
    return { name, index };
  }

  #switchPlugs: (() => void)[] = [];

  #plugSwitch(
    at: { name: string; index: number },
    link: SimLink,
    dir: 'aToB' | 'bToA',
    end: SimLink['a'],
    faults: FaultInjector | null,
    fdir: 'a->b' | 'b->a',
    peer: string,
  ): void {
    // The Switch itself is made once every port's link is known (#route); wiring waits until then.
    this.#switchPlugs.push(() => {
      const info = this.switches.find((s) => s.name === at.name)!;
      const sw = info.sw;
      const i = at.index;
      (info.peers as (string | null)[])[i] = peer;
      end.onReceive((f) => sw.receive(i, f));
      link.setPull(dir, () => sw.pull(i));
      sw.attach(i, { kick: () => link.kick(dir) });
      link.onStateChange((up) => (up ? link.kick(dir) : sw.linkDown(i)));
      if (faults) link.setFaultHook(dir, (f, ns) => this.#judge(link.name, faults, f, ns, fdir, 'tx'));
    });
  }

  /** Builds the switches, wires their ports, and fills their forwarding tables with every shortest path. */
  #route(config: SimModelConfig): void {
    if (this.#pendingSwitches.size === 0) return;
    const out = this.switches as SimSwitchInfo[];
    let k = 0;
    for (const [name, pend] of this.#pendingSwitches) {
      const ports = pend.ports.map((p, i) => ({
        ...(p ?? { linkRate: this.timing.linkRate, delayNs: this.timing.propagationDelay, mtu: 9018 }),
        mac: parseMac(switchPortMac(k, i)),
      }));
      const sw = new Switch(name, pend.opts.config ?? DEFAULT_SWITCH_CONFIG, ports, this.scheduler, this.random.fork(`${name}.ecn`));
      out.push({ name, sw, peers: pend.ports.map(() => null) });
      k++;
    }
    for (const plug of this.#switchPlugs) plug();
    const routes = switchRoutes({
      devices: config.devices,
      wires: config.cables.flatMap((c) => (c.kind === 'wire' ? [c] : [])),
      switches: new Set(this.#pendingSwitches.keys()),
    });
    for (const info of out) applyRoutes(info.sw, routes.get(info.name)!);
  }

  #port(ref: string, path: string): SimPort {
    const [dev, num] = ref.split(':') as [string, string];
    const d = this.#devs.find((x) => x.name === dev);
    const p = d?.ports[Number(num) - 1];
    if (!p) throw new ConfigError(`${path}: no port ${ref}`);
    return p;
  }

  #plug(p: SimPort, link: SimLink, dir: 'aToB' | 'bToA', end: SimLink['a'], faults: FaultInjector | null, fdir: 'a->b' | 'b->a'): void {
    p.plug(link, dir, end);
    link.onTxDone(dir, p);
    // A PAUSE quantum is 512 bit times at this link's rate.
    p.eth.pause.setLinkRate(link.params.linkRate);
    const rxDir = fdir === 'a->b' ? 'b->a' : 'a->b';
    if (faults?.rules.some((r) => r.on === 'rx')) {
      // `on: rx` rules: the frame has crossed the link; its fate is decided as this port takes it
      end.onReceive((f) => {
        const deliver = (g: Uint8Array): void => p.onReceive(g);
        carryOut(this.#judge(link.name, faults, sealBeforeChange(f), this.scheduler.now(), rxDir, 'rx'), f, deliver, (ns, g) => {
          this.scheduler.schedule(
            this.scheduler.event(`${link.name}.rx-delay`, WIRE_PRIORITY, () => deliver(g)),
            this.scheduler.now() + ns,
          );
        });
      });
    } else {
      end.onReceive((f) => p.onReceive(f));
    }
    // The port sees each frame as it starts serialization (its capture and observers), then the faults.
    link.setTap(dir, p);
    if (faults) link.setFaultHook(dir, (f, ns) => this.#judge(link.name, faults, f, ns, fdir, 'tx'));
  }

  // ---- time --------------------------------------------------------------

  /** Virtual time, ns. */
  now(): number {
    return this.scheduler.now();
  }

  get eventsRun(): number {
    return this.scheduler.eventsRun;
  }

  /** Counts CQEs and events landing and interrupts firing: what a waiting program may be waiting for. */
  get changes(): number {
    return this.#changes;
  }

  /**
   * The end of simulated time: an empty poll, `until` and `waitIrq` run no
   * event after it (a scenario's duration). `advance` is not limited.
   */
  get horizon(): number {
    return this.#horizon;
  }

  set horizon(ns: number) {
    this.#horizon = ns;
  }

  /** Runs every event in the next `ns` of virtual time (synchronously) and leaves the clock there. */
  advance(ns: number): void {
    this.#guard();
    this.#driving = true;
    try {
      this.scheduler.runUntil(this.now() + ns);
    } finally {
      this.#driving = false;
    }
  }

  /**
   * What an empty ibv_poll_cq does: run the next event, then more until
   * something changes (a CQE, an event, an interrupt) or `pollStep` of
   * virtual time has passed since that first event. Returns events run.
   */
  step(): number {
    if (this.#driving) return 0;
    const sched = this.scheduler;
    const first = sched.nextTime();
    if (first > this.#horizon) return 0;
    return this.#runBatch(Math.min(first + this.params.pollStep, this.#horizon));
  }

  /** Runs events up to `limitNs` until the first change or CHUNK_EVENTS have run; returns how many ran. */
  #runBatch(limitNs: number): number {
    this.#driving = true;
    this.#batch = true;
    try {
      return this.scheduler.runBatch(limitNs, CHUNK_EVENTS);
    } finally {
      this.#batch = false;
      this.#driving = false;
    }
  }

  /**
   * Runs events until `cond()` holds (checked after every event) or the
   * clock reaches `deadlineNs`, yielding to the event loop after every
   * change so that other async code runs at the virtual time it was woken.
   * Resolves with `cond()`. With nothing scheduled it waits for the
   * program to give the devices work (a doorbell).
   */
  async until(cond: () => boolean, deadlineNs = Infinity): Promise<boolean> {
    let wake: SimEvent | null = null;
    if (deadlineNs !== Infinity) {
      wake = new SimEvent('sim.wake', Priority.stats, () => {});
      this.scheduler.schedule(wake, Math.max(this.now(), Math.ceil(deadlineNs)));
    }
    try {
      for (;;) {
        if (cond()) return true;
        if (this.now() >= deadlineNs || this.#stopped) return false;
        const ran = this.#runChunk(cond, deadlineNs);
        if (cond()) return true;
        if (ran === 0 && this.scheduler.nextTime() > this.#horizon) return false; // nothing more before the end of time
        if (ran === 0 && this.scheduler.pending === 0) await this.#nextKick();
        else await turn();
      }
    } finally {
      if (wake?.scheduled) this.scheduler.deschedule(wake);
    }
  }

  /** Lets `ns` of virtual time pass (what a program's sleep would be), yielding at every change. */
  async sleep(ns: number): Promise<void> {
    const target = this.now() + ns;
    await this.until(() => this.now() >= target, target);
  }

  /**
   * Runs events until something changes (a CQE, an event, an interrupt),
   * the next event is past the horizon, or CHUNK_EVENTS have run; returns
   * how many ran. For a driver loop that acts only on completions and on
   * times it puts in the horizon (the scenario runner): unlike `step`, no
   * `pollStep` cap, so it does not come back every microsecond of virtual
   * time to find nothing new.
   */
  runToChange(): number {
    if (this.#driving) return 0;
    return this.#runBatch(this.#horizon);
  }

  /** Runs events until a change, `cond()`, the deadline, or CHUNK_EVENTS. Returns events run. */
  #runChunk(cond: (() => boolean) | null, deadlineNs: number): number {
    if (this.#driving) return 0;
    const sched = this.scheduler;
    const seen = this.#changes;
    const limit = Math.min(deadlineNs, this.#horizon);
    let n = 0;
    this.#driving = true;
    try {
      while (n < CHUNK_EVENTS && sched.nextTime() <= limit) {
        sched.step();
        n++;
        if (this.#changes !== seen || cond?.()) break;
      }
    } finally {
      this.#driving = false;
    }
    return n;
  }

  async #waitIrq(bar: Bar, vector: number, seen: number): Promise<number> {
    for (;;) {
      const c = irqCount(bar, vector);
      if (c !== seen) return c;
      if (this.#stopped) return new Promise<number>(() => {});
      const ran = this.#runChunk(() => irqCount(bar, vector) !== seen, Infinity);
      // Nothing left to run (or nothing before the horizon): only the program can give the devices work.
      if (ran === 0 && this.scheduler.nextTime() > this.#horizon) await this.#nextKick();
      else if (ran === 0 && this.scheduler.pending === 0) await this.#nextKick();
      else await turn();
    }
  }

  #nextKick(): Promise<void> {
    return new Promise<void>((r) => this.#kicks.push(r));
  }

  #guard(): void {
    if (this.#driving)
      throw new SimError('SIM_ERR_REENTRANT', 'the simulator is already running events (advance() called from inside an event or a frame observer)');
  }

  // ---- the driver's hook ---------------------------------------------------

  /**
   * See the file comment. A device handle's `serviceInline` is this for its
   * own device: the driver calls it after every doorbell it rings there, so
   * the other devices' doorbells were taken at their own calls (with many
   * hosts, looking at every BAR on every empty poll was the largest cost).
   * Without `device`, every device is looked at.
   */
  serviceInline(device?: number): void {
    let rung = false;
    if (device !== undefined) rung = this.#devs[device]!.takeDoorbells();
    else for (const d of this.#devs) if (d.takeDoorbells()) rung = true;
    if (rung) {
      const k = this.#kicks;
      if (k.length > 0) {
        this.#kicks = [];
        for (const r of k) r();
      }
      return;
    }
    this.step();
  }

  // ---- observation -----------------------------------------------------------

  /**
   * Adds an observer of congestion control: told of every change of a QP's
   * rate (its first CNP, each cut and increase) with the device, QP number,
   * event, virtual time, rate, target rate and α after it. Returns a
   * remover. With no observer the devices build nothing for it.
   */
  observeCongestion(fn: CongestionObserver): () => void {
    this.#ccObservers.push(fn);
    this.#updateCcObserver();
    return () => {
      this.#ccObservers = this.#ccObservers.filter((f) => f !== fn);
      this.#updateCcObserver();
    };
  }

  #updateCcObserver(): void {
    const list = this.#ccObservers;
    for (const d of this.#devs) {
      const device = d.name;
      d.nic.setCcObserver(
        list.length === 0
          ? null
          : (qpn, kind, ns, s) => {
              const e: CongestionEvent = { device, qpn, kind, ns, rateBps: s.rateBps, targetBps: s.targetBps, alpha: s.alpha };
              for (const f of list) f(e);
            },
      );
    }
  }

  /** Every QP with a congestion-control flow, per device: its rate, target and α now (for sampled time series). */
  congestionSnapshot(): CongestionEvent[] {
    const out: CongestionEvent[] = [];
    const ns = this.now();
    for (const d of this.#devs) {
      for (const { qpn, sample: s } of d.nic.ccSnapshot())
        out.push({ device: d.name, qpn, kind: 'sample', ns, rateBps: s.rateBps, targetBps: s.targetBps, alpha: s.alpha });
    }
    return out;
  }

  /**
   * Adds an observer of the fault injectors (FaultJudgement): every frame a
   * link's rules judge, with the verdict, at either end of the link (a
   * switch's transmissions too). Returns a remover. With none, nothing is built.
   */
  observeFaults(fn: FaultObserver): () => void {
    this.#faultObservers.push(fn);
    return () => {
      this.#faultObservers = this.#faultObservers.filter((f) => f !== fn);
    };
  }

  /**
   * Starts logging when each device's transmit FIFOs are empty (SimDevice
   * txIdleLog); returns device index → its log so far (empty-from, filled-at,
   * alternating; an odd length: empty now).
   */
  trackTxIdle(): (deviceIndex: number) => readonly number[] {
    const now = this.scheduler.now();
    for (const d of this.#devs) d.txIdleLog ??= d.fifoFrames === 0 ? [now] : [];
    return (i) => this.#devs[i]?.txIdleLog ?? [];
  }

  /**
   * Adds an observer of the frames the devices hand to their ports' transmit
   * FIFOs (HandoffObserver: sent, for the transport, though maybe not yet on
   * the line). Returns a remover.
   */
  observeHandoffs(fn: HandoffObserver): () => void {
    this.#handoffObservers.push(fn);
    this.#updateHandoffObserver();
    return () => {
      this.#handoffObservers = this.#handoffObservers.filter((f) => f !== fn);
      this.#updateHandoffObserver();
    };
  }

  #updateHandoffObserver(): void {
    const list = this.#handoffObservers;
    const obs: HandoffObserver | null =
      list.length === 0
        ? null
        : (d, p, f, ns, ib) => {
            for (const fn of list) fn(d, p, f, ns, ib);
          };
    for (const d of this.#devs) d.handoffObserver = obs;
  }

  #judge(link: string, faults: FaultInjector, frame: Uint8Array, ns: number, direction: 'a->b' | 'b->a', stage: 'tx' | 'rx'): FaultVerdict {
    const verdict = faults.apply(frame, ns, direction, stage);
    for (const fn of this.#faultObservers) fn({ link, direction, stage, frame, verdict, ns });
    return verdict;
  }

  /** Adds a frame observer (every frame starting serialization, 'tx', and arriving, 'rx'); returns a remover. */
  observe(fn: FrameObserver): () => void {
    return this.#addObserver(fn, true);
  }

  /**
   * Adds a frame observer that reads only the headers of `FrameEvent.headers`
   * (addresses, BTH, extension headers, lengths), never its payload bytes:
   * while every observer is of this kind, payloads may stay in the sender's
   * host memory until delivery (deferred-payloads.ts), so observing costs no
   * copy. `FrameEvent.frame` is still every byte as on the wire (reading it
   * copies a deferred payload in). Returns a remover.
   */
  observeHeaders(fn: FrameObserver): () => void {
    return this.#addObserver(fn, false);
  }

  #addObserver(fn: FrameObserver, readsPayload: boolean): () => void {
    this.#observers.push(fn);
    if (readsPayload) this.#payloadReaders.add(fn);
    this.#updateObserver();
    return () => {
      this.#observers = this.#observers.filter((f) => f !== fn);
      this.#payloadReaders.delete(fn);
      this.#updateObserver();
    };
  }

  #updateObserver(): void {
    const list = this.#observers;
    const obs: FrameObserver | null =
      list.length === 0
        ? null
        : list.length === 1
          ? list[0]!
          : (e) => {
              for (const f of list) f(e);
            };
    const readsPayload = this.#payloadReaders.size > 0;
    for (const d of this.#devs) {
      d.observer = obs;
      d.observerReadsPayload = readsPayload;
    }
    this.#updateDeferral();
  }

  /**
   * Payloads may stay in host memory until delivery (deferred-payloads.ts)
   * only while nothing but the devices reads frames on the way: no
   * observer but header-only ones (observeHeaders), no capture, no fault rule.
   */
  #updateDeferral(): void {
    const quiet =
      this.#payloadReaders.size === 0 && this.links.every((l) => l.faults === null) && this.#devs.every((d) => d.ports.every((p) => p.capture === null));
    this.#payloads.setEnabled(quiet);
  }

  /** Payloads the devices left in host memory for the receiver to read (deferred-payloads.ts), so far. */
  get payloadsDeferred(): number {
    return this.#payloads.deferred;
  }

  #capture(p: SimPort, w: PcapWriter | null): void {
    p.capture = w;
    if (w) this.#captures.push(w);
    this.#updateDeferral();
  }

  /**
   * Captures a port ('rnic0:1'), both ways, into `writer` (null stops):
   * transmitted frames stamped when they start serialization, received
   * ones when they arrive, in virtual ns. The caller closes the writer.
   */
  capturePort(port: string, writer: PcapWriter | null): void {
    this.#port(port, 'capturePort').capture = writer;
    this.#updateDeferral();
  }

  /**
   * Puts `frame` on the wire into port `port` ('rnic1:1') now, as a traffic
   * generator plugged into that port would: it arrives like a frame from
   * the cable (capture, observers, the receive stage), with no link time.
   * For hostile-wire tests: forged, mutated or truncated frames. The frame
   * belongs to the model from here on.
   */
  injectFrame(port: string, frame: Uint8Array): void {
    this.#port(port, 'injectFrame').onReceive(frame);
  }

  /**
   * Sends an 802.1Qbb PFC frame out of port `port` now, as the device's MAC
   * would when its receive buffer fills (EthPort.sendPfc): priority p holds
   * for `pauseTimes[p]` quanta when bit p of `classEnable` is set.
   */
  sendPfc(port: string, classEnable: number, pauseTimes: readonly number[]): void {
    this.#port(port, 'sendPfc').eth.sendPfc(classEnable, pauseTimes);
  }

  /** The Ethernet counters of port `port` ('rnic1:1') by name, and its neighbour table's size. */
  portCounters(port: string): Record<string, number> {
    const eth = this.#port(port, 'portCounters').eth;
    return { ...eth.counters(), neighbors: eth.neighbors().length };
  }

  async setCapture(port: string, path: string | null): Promise<void> {
    const p = this.#port(port, 'setCapture');
    this.#capture(p, path ? openPcapFile(path, { linktype: p.eth.linktype, nanosecond: true }) : null);
  }

  stats(): SimStats {
    const links: SimStats['links'] = {};
    for (const l of this.links) links[l.name] = { aToB: l.link.stats('aToB'), bToA: l.link.stats('bToA'), faults: l.faults?.stats() ?? null };
    const devices: SimStats['devices'] = {};
    for (const d of this.#devs)
      devices[d.name] = { framesBuilt: d.framesBuilt, doorbells: d.doorbells, droppedNoCable: d.ports.reduce((s, p) => s + p.dropped, 0) };
    return { nowNs: this.now(), eventsRun: this.eventsRun, pending: this.scheduler.pending, links, devices };
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const c of this.#captures) {
      try {
        c.close();
      } catch {
        // already closed
      }
    }
    for (const d of this.#devs) d.close();
    const k = this.#kicks;
    this.#kicks = [];
    for (const r of k) r();
  }
}

/**
 * Starts a simulated model. Synchronous, like `startModel`: the devices
 * exist and are READY at virtual time 0; nothing runs until the program
 * gives them work.
 */
export function startSim(config: SimModelConfig): SimModel {
  return new SimModel(config);
}
