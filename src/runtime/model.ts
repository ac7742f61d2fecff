/**
 * Starting the model: make each device's shared memory here, then run the
 * devices on worker threads (realtime) or in this thread (workers: 0), and
 * hand back, per device, exactly what a driver gets of hardware — host
 * memory, the BAR, the counters window and an interrupt wait.
 */
import { Worker } from 'node:worker_threads';
import type { HostMemory } from '../device/host-memory.js';
import type { HwCounters } from '../device/counters.js';
import { Reg, type Bar } from '../device/registers.js';
import { FrameRing } from '../fabric/frame-ring.js';
import { checkWireLinkLayers, type ModelConfig } from './config.js';
import { DeviceHost, type FabricStats, type RingCable } from './device-host.js';
import { createDevice, type DeviceOnHost } from './device-resources.js';
import { type HostedSwitchSpec, hostedSwitches } from './realtime-switch.js';
import { DEFAULT_TUNING, monotonicClock, type LoopTuning } from './run-loop.js';
import { closeSocketsOnExit, createUdpCableShm, readUdpIoStats, type UdpCableShm, type UdpIoStats } from './udp-io.js';
import { compiledWorker } from './worker-url.js';

/** What the driver side gets for one device (the shape of the model provider's ModelDeviceHandle). */
export interface DeviceHandle {
  readonly name: string;
  readonly nodeGuid: bigint;
  readonly mem: HostMemory;
  readonly bar: Bar;
  readonly counters: HwCounters;
  readonly serviceInline?: () => void;
  readonly serviceSoon?: () => void;
  waitIrq(vector: number, seen: number): Promise<number>;
}

export interface RunningModel {
  readonly config: ModelConfig;
  readonly devices: readonly DeviceHandle[];
  /** Starts or stops a port's capture at run time ('rnic0:1', a path or null). */
  setCapture(port: string, path: string | null): Promise<void>;
  /**
   * Resolves when every cable is up (a UDP cable's socket bound); rejects
   * when one cannot come up (FABRIC_BIND_FAILED naming the cable: its
   * address in use, not of this host). The devices answer their driver
   * before that; a frame sent to a peer whose socket is not bound yet is
   * lost, as on a link that is not up.
   */
  cabled?: Promise<void>;
  /** The switches' port counters and every device port's own (PFC pause counters among them); realtime runtime only. */
  fabricStats?(): Promise<FabricStats>;
  /** Counters of each UDP cable by its port ('rnic0:1'), read from shared memory (realtime runtime only). */
  udpStats?(): Record<string, UdpIoStats>;
  /**
   * Stops the devices after draining what they still had to send (the
   * last ACK, the last UC/UD message), closes the cables and flushes the
   * captures.
   */
  stop(): Promise<void>;
}

export interface StartOptions {
  tuning?: Partial<LoopTuning>;
}

type WaitAsync = (a: Int32Array, i: number, v: number, t?: number) => { async: boolean; value: Promise<string> | string };
const waitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync;

/**
 * Waits for an interrupt. Atomics.waitAsync alone does not keep a process
 * alive, and the engines are unref'd: a program awaiting a completion
 * event (rc_pingpong -e) would end with "unsettled top-level await". A
 * process blocked in ibv_get_cq_event stays, so a ref'd timer is held for
 * the wait.
 */
async function irqWait(bar: Bar, vector: number, seen: number): Promise<number> {
  const w = bar.irqBase + vector;
  let alive: NodeJS.Timeout | null = null;
  try {
    for (;;) {
      const now = Atomics.load(bar.i32, w);
      if (now !== seen) return now;
      const r = waitAsync(bar.i32, w, seen);
      if (!r.async) continue;
      alive ??= setInterval(() => {}, 1 << 30);
      await r.value;
    }
  } finally {
    if (alive) clearInterval(alive);
  }
}

/** An engine's 'CODE: message' as an error with that code. */
function engineError(text: string): Error {
  const m = /^([A-Z][A-Z0-9_]*): (.*)$/s.exec(text);
  return Object.assign(new Error(m ? m[2]! : text), { code: m ? m[1]! : 'ERROR' });
}

/** `p`, with the process kept alive while it is pending (the engines and I/O threads are unref'd). */
function keptAlive(p: Promise<void>): Promise<void> {
  const t = setInterval(() => {}, 1 << 30);
  return p.finally(() => clearInterval(t));
}

/** Shared memory for every UDP cable of the configuration, by cable index. */
function udpShmOf(config: ModelConfig, exit: SharedArrayBuffer): Map<number, UdpCableShm> {
  const m = new Map<number, UdpCableShm>();
  config.cables.forEach((c, i) => {
    if (c.kind === 'udp') m.set(i, createUdpCableShm(exit));
  });
  return m;
}

function udpStatsOf(config: ModelConfig, shm: Map<number, UdpCableShm>): Record<string, UdpIoStats> {
  const out: Record<string, UdpIoStats> = {};
  for (const [i, s] of shm) {
    const c = config.cables[i]!;
    if (c.kind === 'udp') out[c.port] = readUdpIoStats(s.stats);
  }
  return out;
}

/**
 * Starts the model described by `config`. Synchronous on purpose: devices
 * appear at once (as after `modprobe`), the device sets READY when its
 * engine runs, and the driver waits for READY when it opens a device.
 */
export function startModel(config: ModelConfig, opts: StartOptions = {}): RunningModel {
  checkWireLinkLayers(config);
  const made: DeviceOnHost[] = config.devices.map(createDevice);
  const switches = hostedSwitches(config);
  const exitWord = new SharedArrayBuffer(8);
  const udpShm = udpShmOf(config, exitWord);
  if (config.workers === 0) {
    const off = udpShm.size > 0 ? closeSocketsOnExit(exitWord, 1) : () => {};
    return startInline(config, made, udpShm, off, switches);
  }
  const workers = Math.min(config.workers, made.length);
  const assign = made.map((_, i) => i % workers);
  // A switch runs on a device engine (switch k on worker k): an engine with no device would have no doorbell to sleep on.
  const switchAt = switches.map((_, k) => k % workers);
  const workerOf = (ref: string): number => {
    const name = ref.split(':')[0];
    const d = config.devices.findIndex((x) => x.name === name);
    return d >= 0 ? assign[d]! : switchAt[switches.findIndex((x) => x.name === name)]!;
  };
  const isDevice = (ref: string): boolean => config.devices.some((d) => d.name === ref.split(':')[0]);
  const rings: RingCable[][] = Array.from({ length: workers }, () => []);
  for (const c of config.cables) {
    if (c.kind !== 'wire') continue;
    const wa = workerOf(c.a);
    const wb = workerOf(c.b);
    if (wa === wb) continue;
    const ab = FrameRing.create(1 << 22);
    const ba = FrameRing.create(1 << 22);
    // Engines run only model devices and switches; a switch may forward what came from a socket.
    const asBuilt = isDevice(c.a) && isDevice(c.b) && !c.faults?.length;
    rings[wa]!.push({ port: c.a, tx: ab.buffer, rx: ba.buffer, asBuilt });
    rings[wb]!.push({ port: c.b, tx: ba.buffer, rx: ab.buffer, asBuilt });
  }
  const stop = new SharedArrayBuffer(4);
  const threads: Worker[] = [];
  const url = compiledWorker('device-engine');
  const ioThreads = new Set<number>();
  const engineCabled: Promise<void>[] = [];
  for (let w = 0; w < workers; w++) {
    const devices = made.filter((_, i) => assign[i] === w).map((d) => d.resources);
    const mySwitches = switches.filter((_, k) => switchAt[k] === w);
    const names = new Set([...devices.map((d) => d.name), ...mySwitches.map((s) => s.name)]);
    const udp = [...udpShm].filter(([i]) => {
      const c = config.cables[i]!;
      return c.kind === 'udp' && names.has(c.port.split(':')[0]!);
    });
    if (udp.length > 0) ioThreads.add(w);
    const t = new Worker(url, {
      workerData: {
        devices,
        switches: mySwitches,
        cables: config.cables,
        rings: rings[w],
        udp,
        seed: config.seed,
        stop,
        tuning: engineTuning(config, opts.tuning),
      },
    });
    t.on('message', (m: { type: string; message?: string }) => {
      if (m.type === 'error') process.emitWarning(`rnic-model device engine: ${m.message}`);
    });
    engineCabled.push(
      new Promise<void>((resolve, reject) => {
        const on = (m: { type: string; message?: string }) => {
          if (m.type !== 'ready' && m.type !== 'error' && m.type !== 'stopped') return;
          t.off('message', on);
          // An error before 'ready' is a cable that could not come up (a UDP port in use, say).
          if (m.type === 'error') reject(engineError(m.message ?? ''));
          else resolve();
        };
        t.on('message', on);
        t.once('exit', () => resolve());
      }),
    );
    t.on('error', (e) => process.emitWarning(`rnic-model device engine crashed: ${e.message}`));
    // The model must not keep the application alive (a C program exits when main returns).
    t.unref();
    threads.push(t);
  }
  const offExit = ioThreads.size > 0 ? closeSocketsOnExit(exitWord, ioThreads.size) : () => {};
  const devices = made.map(
    (d): DeviceHandle => ({
      name: d.resources.name,
      nodeGuid: d.nodeGuid,
      mem: d.mem,
      bar: d.bar,
      counters: d.counters,
      waitIrq: (v, seen) => irqWait(d.bar, v, seen),
    }),
  );
  const cabled = Promise.all(engineCabled).then(() => {});
  cabled.catch(() => {}); // reported by the warning above; rejects only for whoever awaits `cabled`
  return {
    config,
    devices,
    get cabled() {
      return keptAlive(cabled);
    },
    udpStats: () => udpStatsOf(config, udpShm),
    async fabricStats() {
      const all = await Promise.all(
        threads.map(
          (t) =>
            new Promise<FabricStats>((resolve) => {
              const on = (m: { type: string; stats?: FabricStats }) => {
                if (m.type !== 'fabric-stats') return;
                t.off('message', on);
                resolve(m.stats!);
              };
              t.on('message', on);
              t.postMessage({ type: 'fabric-stats' });
            }),
        ),
      );
      return {
        switches: Object.assign({}, ...all.map((s) => s.switches)),
        ports: Object.assign({}, ...all.map((s) => s.ports)),
      };
    },
    async setCapture(port, path) {
      const dev = port.split(':')[0];
      const i = config.devices.findIndex((d) => d.name === dev);
      if (i < 0) throw new Error(`no device ${dev}`);
      const t = threads[assign[i]!]!;
      await new Promise<void>((resolve, reject) => {
        const on = (m: { type: string; message?: string }) => {
          if (m.type === 'capture-ok') resolve();
          else if (m.type === 'error') reject(new Error(m.message));
          else return;
          t.off('message', on);
        };
        t.on('message', on);
        t.postMessage({ type: 'capture', port, path });
      });
    },
    async stop() {
      Atomics.store(new Int32Array(stop), 0, 1);
      for (const d of made) Atomics.notify(d.bar.i32, Reg.DB_SEQ);
      await Promise.all(
        threads.map(
          (t) =>
            new Promise<void>((r) => {
              t.ref(); // keep the process alive until the engine has flushed its captures and exited
              t.once('exit', () => r());
              t.postMessage({ type: 'stop' });
              // Draining (≤ 200 ms) and the UDP flush (≤ 2 s) come first; then give up.
              setTimeout(() => void t.terminate().then(() => r()), 5000).unref();
            }),
        ),
      );
      offExit();
    },
  };
}

/**
 * The engines' loop tuning: the configuration's `engineSpinUs` (with a
 * pass cap that lets it last: an idle pass is ≥ 10 ns), under what the
 * caller's StartOptions say.
 */
export function engineTuning(config: ModelConfig, tuning: Partial<LoopTuning> | undefined): Partial<LoopTuning> | undefined {
  const us = config.engineSpinUs;
  if (us === undefined) return tuning;
  return { spinNs: us * 1000, spinPasses: Math.max(DEFAULT_TUNING.spinPasses, us * 100), ...tuning };
}

/** Most device passes one inline service runs while frames keep arriving. */
const INLINE_PASSES = 64;

/** Most inline services in a row that skip their pass as quiet (DeviceHost.quiet). */
const QUIET_SKIPS = 1024;

/** All devices in the application's thread: they run when the driver rings or polls. */
function startInline(
  config: ModelConfig,
  made: DeviceOnHost[],
  udpShm: Map<number, UdpCableShm>,
  offExit: () => void,
  switches: readonly HostedSwitchSpec[],
): RunningModel {
  const host = new DeviceHost(
    made.map((d) => d.resources),
    monotonicClock(),
    { specs: switches, ...(config.seed === undefined ? {} : { seed: config.seed }) },
  );
  let stopped = false;
  const ready = host.cable(config.cables, [], config.seed, udpShm);
  let cabled = false;
  void ready.then(
    () => {
      cabled = true;
      // Frames from a socket arrive in a ring: between the driver's calls,
      // poll when one comes (or a timer is due), on this thread's event loop.
      // Atomics.waitAsync does not keep the process alive.
      if (udpShm.size > 0) void pump();
    },
    (e: Error) => process.emitWarning(`rnic-model: ${(e as { code?: string }).code ?? 'ERROR'}: ${e.message}`),
  );
  const pump = async () => {
    while (!stopped) {
      host.poll();
      const ms = Math.min(1000, (host.nextDeadline() - host.clock.now()) / 1e6);
      if (ms < 1) await new Promise<void>((r) => setImmediate(r));
      else {
        let t: NodeJS.Timeout | null = null;
        await Promise.race([...host.ringWaits(), new Promise<void>((r) => (t = setTimeout(r, ms)).unref())]);
        clearTimeout(t!);
      }
    }
  };
  // A doorbell asks for a pass soon: the driver's next poll or command runs it, else the next
  // event-loop turn does (a program that posts, then awaits something else, still sends).
  let passWanted = false;
  let turnQueued = false;
  const onTurn = () => {
    turnQueued = false;
    if (!passWanted || stopped) return;
    try {
      service();
    } catch (e) {
      // No caller to hand it to on an event-loop turn: report it as a worker's engine would.
      process.emitWarning(`rnic-model device engine: ${(e as Error).message}`);
    }
  };
  // Another pass while the last one's deliveries left work behind (bounded): what a pass delivers is
  // answered before the driver reads the completion (an ACK queued in the last pass would wait for
  // the next call, and a program that closes its QP after its last completion would never send it).
  let skipped = 0;
  const service = () => {
    // An empty poll of a CQ asks for a pass: skip it when nothing can have changed (but run one after
    // QUIET_SKIPS skipped in a row all the same, for what quiet() cannot see).
    if (!passWanted && skipped < QUIET_SKIPS && host.quiet()) {
      skipped++;
      return;
    }
    skipped = 0;
    passWanted = false;
    host.poll();
    for (let i = 1; i < INLINE_PASSES && host.unsettled(); i++) host.poll();
  };
  const serviceSoon = () => {
    passWanted = true;
    if (turnQueued) return;
    turnQueued = true;
    setImmediate(onTurn);
  };
  const devices = made.map(
    (d): DeviceHandle => ({
      name: d.resources.name,
      nodeGuid: d.nodeGuid,
      mem: d.mem,
      bar: d.bar,
      counters: d.counters,
      serviceInline: service,
      serviceSoon,
      async waitIrq(v, seen) {
        const w = d.bar.irqBase + v;
        for (;;) {
          host.poll();
          const now = Atomics.load(d.bar.i32, w);
          if (now !== seen) return now;
          await new Promise<void>((r) => setImmediate(r));
        }
      },
    }),
  );
  return {
    config,
    devices,
    async setCapture(port, path) {
      host.setCapture(port, path);
    },
    async fabricStats() {
      return host.fabricStats();
    },
    get cabled() {
      return keptAlive(ready);
    },
    udpStats: () => udpStatsOf(config, udpShm),
    async stop() {
      if (!cabled) await ready.catch(() => {});
      stopped = true;
      await host.drain();
      await host.close();
      offExit();
    },
  };
}
