/**
 * One model device inside the simulator: the same firmware, Ethernet ports
 * and pipeline (`Nic`) as the realtime runtime, driven by named events on
 * the virtual clock instead of a polling loop, with the timing model of
 * docs/simulator.md around them:
 *
 *   doorbell  the driver's BAR write is taken out of the BAR when the driver
 *             hands over (serviceInline) and written back doorbellLatency
 *             later, when the device event that polls the pipeline runs;
 *   DMA       each frame the pipeline builds waits, in a transmit FIFO per
 *             port, for the DMA reads it needed (WQE fetch, payload gather;
 *             pcieLatency + bytes / dmaBandwidth, reads sharing the
 *             bandwidth first come first served) and txStages × stageProcessing;
 *   MAC       the FIFO hands a frame to the link when the line has at most
 *             one frame waiting, so the link's own exact serialization
 *             timing applies and the device never floods it;
 *   receive   a frame off the link reaches the pipeline rxStages ×
 *             stageProcessing after it arrived;
 *   CQE/EQE   the pipeline's completion and event writes are posted DMA
 *             writes: they land pcieLatency / 2 + cqeBytes / dmaBandwidth later;
 *   timers    the local ACK and RNR timers are an event at `nextDeadline()`.
 *
 * Nothing here spins: every piece of device work is an event, scheduled
 * when something gives it work.
 */
import { resolveCapabilities } from '../../device/capabilities.js';
import { ContextTables } from '../../device/contexts.js';
import { HwCounters } from '../../device/counters.js';
import { IBV_WC_SUCCESS } from '../../device/abi/constants.js';
import { CqeFields } from '../../device/cqe.js';
import { Firmware } from '../../device/firmware.js';
import { HostMemory } from '../../device/host-memory.js';
import { Bar, DbKind, DevStatus, drainDoorbells, ringDoorbell, setDeviceStatus, takeSummary } from '../../device/registers.js';
import type { CableEnd } from '../../fabric/cable.js';
import type { LinkDir, LinkTransmitter, SerializeTap, SimLink, TxDoneListener } from '../../fabric/link.js';
import { TimedQueue } from '../../fabric/timed-queue.js';
import { ceilDiv, psPerBit, type TimingParams } from '../../fabric/timing-params.js';
import { resolveCcParams } from '../../pipeline/cc-params.js';
import type { EthPort, FrameSink } from '../../pipeline/eth-port.js';
import { Nic } from '../../pipeline/nic.js';
import type { NicEnv } from '../../pipeline/nic-env.js';
import { releaseFrame } from '../../pipeline/packet-builder.js';
import { materializePayload, type PcapWriter, sealIcrc, takeAsBuilt } from '../../wire/index.js';
import { type DeviceResources, makePort } from '../device-resources.js';
import type { DeferredPayloads } from './deferred-payloads.js';
import { bthDestQp, bthOffset, payloadLength, TX_DMA_CLASS, TxDma } from './frame-info.js';
import { Priority, type Scheduler, SimEvent } from './scheduler.js';
import type { SimRuntimeParams } from './sim-params.js';
import { CONTROL_LANE, TxArbiter } from './tx-arbiter.js';

/** A frame passing a port, for observers (captures, the scenario timeline). */
export interface FrameEvent {
  /** 'tx': the frame starts serialization on the link; 'rx': it arrived from the link. */
  readonly dir: 'tx' | 'rx';
  readonly device: string;
  /** Index of the device in the model's list. */
  readonly deviceIndex: number;
  readonly portNum: number;
  /** The frame, every byte as on the wire; valid only during the call (copy what you keep). */
  readonly frame: Uint8Array;
  /**
   * The same frame, its ICRC possibly not computed yet (wire/lazy-icrc.ts):
   * for an observer that reads only headers and payload, which then costs
   * no CRC pass. Its payload is in place for an observer added with
   * `SimModel.observe`; for one added with `observeHeaders` only the
   * headers are (the payload may still be in the sender's host memory).
   * Valid only during the call.
   */
  readonly headers: Uint8Array;
  /** Virtual time, ns. */
  readonly ns: number;
  /** The port is native InfiniBand: the frame is LRH (+GRH) ... VCRC (frame-info.ts bthOffset(f, true)). */
  readonly ib: boolean;
}

export type FrameObserver = (e: FrameEvent) => void;

/**
 * A frame the pipeline (or the port's ARP/ND) handed to a port's transmit
 * FIFO, where it may wait for the line (frames ahead of it, PAUSE) before
 * FrameEvent 'tx'. For the transport the frame is sent: its timers run.
 * `frame` is valid only during the call; its ICRC may not be computed yet,
 * and its payload may still be in the sender's host memory (deferred-payloads.ts):
 * read its headers.
 */
export type HandoffObserver = (deviceIndex: number, portNum: number, frame: Uint8Array, ns: number, ib: boolean) => void;

/** A FrameEvent whose `frame` computes a deferred ICRC only when an observer asks for it. */
class PortFrameEvent implements FrameEvent {
  constructor(
    readonly dir: 'tx' | 'rx',
    readonly device: string,
    readonly deviceIndex: number,
    readonly portNum: number,
    readonly bytes: Uint8Array,
    readonly ns: number,
    /** False while every observer reads headers only (SimModel.observeHeaders): a deferred payload stays where it is. */
    readonly payloadRead: boolean,
    readonly ib: boolean,
  ) {}

  get frame(): Uint8Array {
    return sealIcrc(this.bytes);
  }

  /** The payload in place (a deferred one copied in: lazy-icrc.ts), unless no observer reads it. */
  get headers(): Uint8Array {
    return this.payloadRead ? materializePayload(this.bytes) : this.bytes;
  }
}

/** What a device needs from the model around it. */
export interface SimDeviceContext {
  readonly sched: Scheduler;
  readonly timing: TimingParams;
  readonly params: SimRuntimeParams;
  /** A CQE or EQE landed in host memory, or an interrupt fired: wake whoever waits. */
  changed(): void;
  /** The model's deferred payloads (deferred-payloads.ts), shared by its devices. */
  readonly payloads: DeferredPayloads;
}

/** Doorbell kinds that have slots (CMD has none: commands are served at once). */
const SLOT_KINDS = [DbKind.SQ, DbKind.RQ, DbKind.SRQ, DbKind.CQ, DbKind.EQ] as const;
const CMD_BIT = 1 << DbKind.CMD;
/** Longest wait before a device retries a transmit the pipeline could not make (neighbour resolution). */
const MAX_BACKOFF_NS = 1_000_000;
const FIRST_BACKOFF_NS = 1_000;

/**
 * The pipeline with its CQE and asynchronous-event writes deferred by the
 * posted-write latency. Everything else is `Nic` as the realtime runtime
 * runs it.
 */
class SimNic extends Nic {
  constructor(
    env: NicEnv,
    private readonly host: SimDevice,
  ) {
    super(env);
  }

  override complete(cqn: number, f: CqeFields): void {
    this.host.deferCqe(cqn, f);
  }

  override asyncEvent(cqn: number, type: number, resource: number): void {
    this.host.deferEvent(cqn, type, resource);
  }

  /** @internal The write itself, when the deferred CQE is due. */
  writeCqe(cqn: number, f: CqeFields): void {
    super.complete(cqn, f);
  }

  /** @internal */
  writeEvent(cqn: number, type: number, resource: number): void {
    super.asyncEvent(cqn, type, resource);
  }
}

/**
 * One port of a simulated device: the `FrameSink` its EthPort transmits
 * into (the MAC's transmit arbiter: a FIFO per priority, tx-arbiter.ts),
 * and the receive side of its link. PAUSE / PFC frames take effect in the
 * MAC the moment they arrive; a frame already handed to the line but not
 * yet started goes back to its lane when its priority is paused, so only
 * the frame on the wire finishes.
 */
export class SimPort implements FrameSink, SerializeTap, TxDoneListener {
  readonly dev: SimDevice;
  readonly portNum: number;
  readonly eth: EthPort;
  /** The link end this port transmits into, and the link's direction from here (plug). */
  end: CableEnd | null = null;
  link: SimLink | null = null;
  dir: LinkDir = 'aToB';
  /** The link's transmit side from here when `end` is that link's end (not another kind of cable). */
  #line: LinkTransmitter | null = null;
  capture: PcapWriter | null = null;
  /** Frames dropped because the port has no cable. */
  dropped = 0;
  readonly #txEv: SimEvent;
  readonly #arb = new TxArbiter();
  /** The frame handed to the line that waits behind the one being serialized, and its lane. */
  #waiting: Uint8Array | null = null;
  #waitingLane = 0;

  constructor(dev: SimDevice, portNum: number, eth: EthPort) {
    this.dev = dev;
    this.portNum = portNum;
    this.eth = eth;
    this.#txEv = new SimEvent(`${dev.name}.port${portNum}.tx`, Priority.default, () => this.#onTx());
  }

  get queued(): number {
    return this.#arb.size;
  }

  /** Plugs the port into `link`, transmitting on `end` in `dir`. */
  plug(link: SimLink, dir: LinkDir, end: CableEnd): void {
    this.link = link;
    this.dir = dir;
    this.end = end;
    this.#line = end === (dir === 'aToB' ? link.a : link.b) ? link.transmitter(dir) : null;
  }

  /** Frames held in lanes the far end pauses now (they do not count against the device's transmit room). */
  held(): number {
    return this.#arb.held(this.dev.sched.now(), this.eth.pause);
  }

  send(frame: Uint8Array): void {
    this.sendOwned(frame.slice());
  }

  /** A frame from the pipeline (or the port's ARP/ND): into its priority's lane with its ready time. */
  sendOwned(frame: Uint8Array, priority = 0, spacingPs = -1): void {
    const ib = this.eth.ib !== null;
    const lane = frame[12] === 0x88 && frame[13] === 0x08 && !ib ? CONTROL_LANE : priority & 7;
    this.#arb.push(lane, frame, this.dev.txReadyNs(frame, spacingPs, ib));
    if (this.dev.fifoFrames++ === 0) this.dev.txFilled();
    this.dev.framesBuilt++;
    const now = this.dev.sched.now();
    if (this.dev.handoffObserver !== null) this.dev.handoffObserver(this.dev.index, this.portNum, frame, now, ib);
    this.#wake(this.#arb.nextNs(now, this.eth.pause));
  }

  /** Runs #onTx at `t` (or now) unless it runs by then anyway. */
  #wake(t: number): void {
    if (t === Infinity) return;
    const sched = this.dev.sched;
    const at = Math.max(sched.now(), t);
    const ev = this.#txEv;
    if (!ev.scheduled || ev.when > at) sched.reschedule(ev, at);
  }

  #onTx(): void {
    const sched = this.dev.sched;
    const now = sched.now();
    const arb = this.#arb;
    const pause = this.eth.pause;
    const line = this.#line;
    let freed = 0;
    for (;;) {
      const lane = arb.pick(now, pause);
      if (lane < 0) {
        this.#wake(arb.nextNs(now, pause));
        break;
      }
      if (line !== null && line.queued > 0) {
        // The line has a frame waiting already: the link calls us back (lineFree) when that one starts,
        // unless it is of a lower priority than this one, which takes its place (strict priority:
        // only the frame on the wire is past the arbiter).
        if (!this.#takeBackWaiting(lane, now)) break;
      }
      const frame = arb.take(lane);
      // The link takes the frame as its own copy (no copy); the receiving device recycles it.
      // A frame our pipeline built keeps its ICRC deferred (wire/lazy-icrc.ts): the far device
      // learns from that mark that the bytes are as built, and skips the check.
      if (this.end === null) {
        this.dropped++;
        releaseFrame(frame);
      } else if (line !== null) {
        line.sendOwned(frame);
      } else if (this.end.sendOwned) {
        // Not a simulator link (another kind of cable): the frame leaves with every byte computed.
        this.end.sendOwned(sealIcrc(frame));
      } else {
        this.end.send(sealIcrc(frame));
        releaseFrame(frame);
      }
      if (line !== null && line.queued > 0) {
        this.#waiting = frame;
        this.#waitingLane = lane;
      }
      freed++;
    }
    if (freed > 0) this.dev.txFreed(freed);
  }

  /** Puts the frame waiting for the line back in its lane if `lane` outranks it; returns whether it did. */
  #takeBackWaiting(lane: number, now: number): boolean {
    const w = this.#waiting;
    if (w === null || this.#waitingLane >= lane || this.#line === null || !this.#line.unsend(w)) return false;
    this.#arb.unshift(this.#waitingLane, w, now);
    if (this.dev.fifoFrames++ === 0) this.dev.txFilled();
    this.#waiting = null;
    return true;
  }

  /** Called by the link's hook: a frame of ours starts serialization now. */
  onSerialize(frame: Uint8Array, ns: number): void {
    if (frame === this.#waiting) this.#waiting = null;
    if (this.capture !== null) this.capture.write(frame, BigInt(ns));
    const obs = this.dev.observer;
    // An observer reading `frame` sees the ICRC as on the wire; one reading `headers` costs no CRC (lazy-icrc.ts).
    if (obs !== null)
      obs(new PortFrameEvent('tx', this.dev.name, this.dev.index, this.portNum, frame, ns, this.dev.observerReadsPayload, this.eth.ib !== null));
  }

  /**
   * Called by the link from its txDone event (SimLink.onTxDone): the frame
   * that waited behind the one on the wire has started, so the next may go
   * to the line now, in the same event (every frame started by the link
   * comes through here; the ones our own transmit starts do not need it).
   */
  lineFree(): void {
    if (this.#arb.size > 0) this.#onTx();
  }

  /** A frame off the link (the link's copy, ours now). */
  onReceive(frame: Uint8Array): void {
    const ns = this.dev.sched.now();
    if (this.capture !== null) this.capture.write(frame, BigInt(ns));
    const obs = this.dev.observer;
    if (obs !== null)
      obs(new PortFrameEvent('rx', this.dev.name, this.dev.index, this.portNum, frame, ns, this.dev.observerReadsPayload, this.eth.ib !== null));
    // MAC control (PAUSE / PFC) exists on Ethernet only.
    if (frame.length >= 14 && frame[12] === 0x88 && frame[13] === 0x08 && this.eth.ib === null) this.#onMacControl(frame, ns);
    else this.dev.rxPush(this.portNum, frame);
  }

  /** PAUSE / PFC: the MAC acts now, not after the receive pipeline's stages. */
  #onMacControl(frame: Uint8Array, now: number): void {
    this.eth.receive(frame);
    releaseFrame(frame);
    const w = this.#waiting;
    if (w !== null && this.#waitingLane !== CONTROL_LANE && this.eth.pause.isPaused(this.#waitingLane, now)) {
      // Not started yet: it waits in its lane like the rest of its priority.
      this.#takeBackWaiting(CONTROL_LANE + 1, now);
      this.#waiting = null;
    }
    if (this.#arb.size > 0) this.#wake(this.#arb.nextNs(now, this.eth.pause));
    // The pipeline parks or resumes the QPs of the priorities this frame named.
    this.dev.schedulePoll(now);
  }
}

export class SimDevice {
  readonly name: string;
  readonly index: number;
  readonly ctx: SimDeviceContext;
  readonly sched: Scheduler;
  readonly nic: Nic;
  readonly bar: Bar;
  readonly ports: SimPort[];
  /** Frames in all ports' transmit FIFOs. */
  fifoFrames = 0;
  /**
   * When the transmit FIFOs were empty, if asked for (SimModel.trackTxIdle):
   * the times they went empty and filled again, alternating, so an odd
   * length means empty now. A response can wait inside the device only
   * while they hold something (the pipeline polls whenever there is room).
   */
  txIdleLog: number[] | null = null;
  /** Frames the pipeline (and the ports' ARP/ND) handed to the transmit path. */
  framesBuilt = 0;
  /** Doorbells taken from the driver and written back later. */
  doorbells = 0;
  /**
   * The model's frame observer, or null (read per frame; nothing is built
   * without one). A field the model sets, not a callback: a call through a
   * closure made per model would be a new call target for every model.
   */
  observer: FrameObserver | null = null;
  /** The model's hand-off observer (HandoffObserver), or null. */
  handoffObserver: HandoffObserver | null = null;
  /** False while every observer reads headers only (SimModel.observeHeaders): FrameEvent.headers then copies no deferred payload in. */
  observerReadsPayload = true;

  readonly #pollEv: SimEvent;
  readonly #timerEv: SimEvent;
  readonly #doorbellEv: SimEvent;
  readonly #rxEv: SimEvent;
  readonly #writeEv: SimEvent;
  readonly #pairs = new Int32Array(1024);
  /** Doorbells in flight to the device: kind, queue, slot value, due time (4 numbers each, [#dbHead, #dbTail)). */
  readonly #db: number[] = [];
  #dbHead = 0;
  #dbTail = 0;
  /** Frames received, waiting out the receive stages. */
  readonly #rx = new TimedQueue();
  /**
   * Posted writes in flight to host memory, in parallel arrays ([#writeHead,
   * #writeTail)): a CQE (its fields set) or an asynchronous event (fields
   * null, its type and resource set), and when it lands. The arrays keep
   * their storage: no object per write.
   */
  readonly #writeCqn: number[] = [];
  readonly #writeCqe: (CqeFields | null)[] = [];
  readonly #writeType: number[] = [];
  readonly #writeResource: number[] = [];
  readonly #writeDue: number[] = [];
  #writeHead = 0;
  #writeTail = 0;
  readonly #spareCqes: CqeFields[] = [];
  /** DMA read channel: when it has returned its last byte, ps. */
  #readFreePs = 0;
  /** Per destination QP of a paced QP: when its last packet was ready, ps. */
  readonly #pacedReadyPs = new Map<number, number>();
  /**
   * Per destination QP: when the WQE of the message being sent arrived, ps.
   * The QP of the last WQE fetch is held in fields (a stream's every packet
   * asks for it): no Map lookup and no boxed number per packet; the Map
   * holds the other QPs (an entry for the held QP may be stale).
   */
  readonly #wqeAt = new Map<number, number>();
  #wqeQp = -1;
  #wqeQpAtPs = 0;
  #backoffNs = FIRST_BACKOFF_NS;
  readonly #dmaNum: number;
  readonly #dmaDen: number;
  readonly #stagePs: number;
  readonly #txStagePs: number;
  readonly #rxStageNs: number;
  readonly #pcieReadPs: number;
  readonly #writeLatencyNs: number;

  constructor(r: DeviceResources, index: number, ctx: SimDeviceContext) {
    this.name = r.name;
    this.index = index;
    this.ctx = ctx;
    const sched = (this.sched = ctx.sched);
    const { timing, params } = ctx;
    const caps = resolveCapabilities(r.capsConfig);
    const mem = HostMemory.attach(r.mem);
    const bar = (this.bar = Bar.attach(r.bar));
    const tables = ContextTables.attach(r.tables);
    const counters = HwCounters.attach(r.counters);
    const fw = new Firmware({ caps, mem, bar, tables, counters, clock: sched });
    const portClock = { nowNs: () => BigInt(sched.now()) };
    const eth = r.ports.map((p) => makePort(p, `${r.name}.ports`, portClock));
    const cc = resolveCcParams(r.ccConfig ?? {}, `${r.name}.congestion`);
    this.nic = new SimNic(
      { name: r.name, caps, fw, mem, bar, tables, counters, ports: eth, clock: sched, profile: r.profile, cc, deferIcrc: true, payloads: ctx.payloads },
      this,
    );
    this.ports = eth.map((e, i) => {
      const p = new SimPort(this, i + 1, e);
      e.attach(p);
      return p;
    });
    [this.#dmaNum, this.#dmaDen] = psPerBit(timing.dmaBandwidth);
    this.#stagePs = timing.stageProcessing * 1000;
    this.#txStagePs = params.txStages * this.#stagePs;
    this.#rxStageNs = params.rxStages * timing.stageProcessing;
    this.#pcieReadPs = timing.pcieLatency * 1000;
    this.#writeLatencyNs = Math.ceil((timing.pcieLatency * 500 + ceilDiv(params.cqeBytes * 8, this.#dmaNum, this.#dmaDen)) / 1000);
    const n = r.name;
    this.#pollEv = new SimEvent(`${n}.poll`, Priority.default, () => this.#runPoll());
    this.#timerEv = new SimEvent(`${n}.timer`, Priority.default, () => this.#runPoll());
    this.#doorbellEv = new SimEvent(`${n}.doorbell`, Priority.default, () => this.#onDoorbells());
    this.#rxEv = new SimEvent(`${n}.rx`, Priority.default, () => this.#onRx());
    this.#writeEv = new SimEvent(`${n}.hostWrite`, Priority.default, () => this.#onWrites());
    setDeviceStatus(bar, DevStatus.READY);
  }

  // ---- the driver side: doorbells and commands --------------------------------

  /**
   * Takes what the driver rang since the last look: doorbells go into the
   * delay line (written back doorbellLatency later), a firmware command runs
   * now (the mailbox is answered before the driver reads it; control takes
   * no virtual time). Returns true if the driver had rung anything.
   */
  takeDoorbells(): boolean {
    const bar = this.bar;
    const kinds = takeSummary(bar);
    if (kinds === 0) return false;
    const due = this.sched.now() + this.ctx.timing.doorbellLatency;
    const pairs = this.#pairs;
    for (const kind of SLOT_KINDS) {
      if ((kinds & (1 << kind)) === 0) continue;
      for (;;) {
        const n = drainDoorbells(bar, kind, pairs);
        const db = this.#db;
        for (let i = 0; i < n; i++) {
          const t = this.#dbTail;
          db[t] = kind;
          db[t + 1] = pairs[2 * i]!;
          db[t + 2] = pairs[2 * i + 1]!;
          db[t + 3] = due;
          this.#dbTail = t + 4;
        }
        this.doorbells += n;
        if (n < pairs.length >> 1) break;
      }
    }
    // drainDoorbells may have put the summary bit back (out of room): that kind is taken next time.
    if (this.#dbHead < this.#dbTail && !this.#doorbellEv.scheduled) this.sched.schedule(this.#doorbellEv, this.#db[this.#dbHead + 3]!);
    if (kinds & CMD_BIT) {
      // A command may end what a deferred payload's source belongs to (a QP, an MR).
      this.ctx.payloads.materializeAll();
      // Only the command is pending in the BAR now: poll(0) serves it and acts on RESET/ERR, sends nothing.
      this.#pollNow(0);
    }
    return true;
  }

  #onDoorbells(): void {
    const now = this.sched.now();
    const db = this.#db;
    while (this.#dbHead < this.#dbTail && db[this.#dbHead + 3]! <= now) {
      ringDoorbell(this.bar, db[this.#dbHead]! as DbKind, db[this.#dbHead + 1]!, db[this.#dbHead + 2]!);
      this.#dbHead += 4;
    }
    if (this.#dbHead === this.#dbTail) {
      this.#dbHead = this.#dbTail = 0;
    } else {
      if (this.#dbHead >= 4096 && this.#dbHead * 2 >= this.#dbTail) {
        db.copyWithin(0, this.#dbHead, this.#dbTail);
        this.#dbTail -= this.#dbHead;
        this.#dbHead = 0;
      }
      this.sched.schedule(this.#doorbellEv, db[this.#dbHead + 3]!);
    }
    this.#runPoll();
  }

  // ---- the poll: doorbells, timers, transmit ---------------------------------

  #irqSum(): number {
    const b = this.bar;
    let s = 0;
    for (let v = 0; v < b.numIrq; v++) s += Atomics.load(b.i32, b.irqBase + v);
    return s;
  }

  #pollNow(budget: number): number {
    const irq = this.#irqSum();
    const before = this.framesBuilt;
    this.nic.poll(budget);
    if (this.#irqSum() !== irq) this.ctx.changed();
    const sent = this.framesBuilt - before;
    this.#plan(sent);
    return sent;
  }

  #runPoll(): void {
    const room = this.ctx.params.txQueueFrames - this.#activeFrames();
    this.#pollNow(room > 0 ? room : 0);
  }

  /** After a poll: when to poll next (more to send, a blocked QP, a transport timer). */
  #plan(sent: number): void {
    const sched = this.sched;
    const now = sched.now();
    if (this.nic.busy()) {
      if (this.#activeFrames() >= this.ctx.params.txQueueFrames) {
        // Full: txFreed() polls again when the MAC has taken some.
      } else if (sent > 0) {
        this.#backoffNs = FIRST_BACKOFF_NS;
        this.schedulePoll(now);
      } else {
        // Work that could not go out (a neighbour being resolved): try again later, backing off.
        this.schedulePoll(now + this.#backoffNs);
        this.#backoffNs = Math.min(MAX_BACKOFF_NS, this.#backoffNs * 2);
      }
    }
    this.#planTimer(now);
  }

  /** The transport timer event at the pipeline's nextDeadline() (or none). */
  #planTimer(now: number): void {
    const sched = this.sched;
    const d = this.nic.nextDeadline();
    const ev = this.#timerEv;
    if (d === Infinity) {
      if (ev.scheduled) sched.deschedule(ev);
    } else {
      const t = Math.max(now, Math.ceil(d));
      if (ev.when !== t) sched.reschedule(ev, t);
    }
  }

  /** Polls at `t` unless a poll is already due by then. */
  schedulePoll(t: number): void {
    const ev = this.#pollEv;
    if (!ev.scheduled || ev.when > t) this.sched.reschedule(ev, t);
  }

  /** A frame went into the empty transmit FIFOs. */
  txFilled(): void {
    const log = this.txIdleLog;
    if (log !== null && log.length % 2 === 1) log.push(this.sched.now());
  }

  /** The MAC took `n` frames from a FIFO. */
  txFreed(n: number): void {
    this.fifoFrames -= n;
    if (this.fifoFrames === 0 && this.txIdleLog !== null) this.txIdleLog.push(this.sched.now());
    if (this.nic.busy() && this.#activeFrames() <= this.ctx.params.txQueueFrames >> 1) this.schedulePoll(this.sched.now());
  }

  /**
   * Frames in the transmit FIFOs that count against txQueueFrames: those on
   * priorities the far end pauses do not, so a paused priority's backlog
   * never stops the pipeline from feeding the others.
   */
  #activeFrames(): number {
    let n = this.fifoFrames;
    for (const p of this.ports) if (p.eth.pause.pausedMask !== 0) n -= p.held();
    return n;
  }

  // ---- the DMA model of the transmit path ------------------------------------

  /** A DMA read of `bytes` issued at `issuePs`: when its last byte is back, ps. */
  #dmaRead(issuePs: number, bytes: number): number {
    const start = issuePs + this.#pcieReadPs;
    const done = (start > this.#readFreePs ? start : this.#readFreePs) + ceilDiv(bytes * 8, this.#dmaNum, this.#dmaDen);
    this.#readFreePs = done;
    return done;
  }

  /**
   * When a frame the pipeline just built can leave for the MAC (ns): after
   * the DMA reads it needs and the transmit stages. Requests: the WQE fetch
   * on the first packet of a message, then the payload gather; READ
   * responses: the gather; atomic ACKs: the 8-byte read of the target;
   * ACKs, NAKs and non-RoCE frames: no DMA. Payload reads share the
   * read bandwidth first come, first served; WQE fetches have their own
   * queue (devices prefetch WQEs) and take pcieLatency + 64 B of transfer.
   * (Inline data is gathered like any other: the frame does not say it
   * was inline.)
   */
  txReadyNs(frame: Uint8Array, spacingPs = -1, ib = false): number {
    const nowPs = this.sched.now() * 1000;
    let readyPs = nowPs;
    const bth = bthOffset(frame, ib);
    const cls = bth >= 0 ? TX_DMA_CLASS[frame[bth]!]! : TxDma.NONE;
    const kind = cls & ~TxDma.PAYLOAD;
    if (kind === TxDma.REQUEST_FIRST || kind === TxDma.REQUEST_LATER) {
      const qp = bthDestQp(frame, bth);
      let issuePs: number;
      if (kind === TxDma.REQUEST_FIRST) {
        // WQE fetches have their own read queue (a device prefetches WQEs): they do not wait behind payload.
        issuePs = nowPs + this.#pcieReadPs + ceilDiv(this.ctx.params.wqeBytes * 8, this.#dmaNum, this.#dmaDen);
        if (qp !== this.#wqeQp) {
          if (this.#wqeQp >= 0) this.#wqeAt.set(this.#wqeQp, this.#wqeQpAtPs);
          this.#wqeQp = qp;
        }
        this.#wqeQpAtPs = issuePs;
      } else {
        const w = qp === this.#wqeQp ? this.#wqeQpAtPs : (this.#wqeAt.get(qp) ?? 0);
        issuePs = w > nowPs ? w : nowPs;
      }
      const len = cls & TxDma.PAYLOAD ? payloadLength(frame, bth) : 0;
      readyPs = len > 0 ? this.#dmaRead(issuePs, len) : issuePs;
      if (spacingPs >= 0) {
        // A paced QP: the DMA may bunch its packets (a message's first waits for its WQE); the MAC keeps the gaps.
        const prev = this.#pacedReadyPs.get(qp);
        if (spacingPs > 0 && prev !== undefined && readyPs < prev + spacingPs) readyPs = prev + spacingPs;
        this.#pacedReadyPs.set(qp, readyPs);
      }
    } else if (kind === TxDma.READ_RESPONSE) {
      const len = payloadLength(frame, bth);
      if (len > 0) readyPs = this.#dmaRead(nowPs, len);
    } else if (kind === TxDma.ATOMIC_ACK) {
      readyPs = this.#dmaRead(nowPs, 8);
    }
    return Math.ceil((readyPs + this.#txStagePs) / 1000);
  }

  // ---- receive ---------------------------------------------------------------

  rxPush(portNum: number, frame: Uint8Array): void {
    const due = this.sched.now() + this.#rxStageNs;
    this.#rx.push(frame, due, portNum);
    if (!this.#rxEv.scheduled) this.sched.schedule(this.#rxEv, this.#rx.firstAt());
  }

  #onRx(): void {
    const now = this.sched.now();
    const rx = this.#rx;
    while (rx.length > 0 && rx.firstAt() <= now) {
      const port = rx.firstTag();
      const f = rx.shift();
      // Still as its device built it (its ICRC deferred, no hook changed it): the check would pass.
      this.nic.receive(port, f, takeAsBuilt(f));
      // The NIC keeps nothing of a frame once it is processed (as in device-host.ts): recycle the buffer.
      releaseFrame(f);
    }
    if (rx.length > 0) this.sched.schedule(this.#rxEv, rx.firstAt());
    this.#backoffNs = FIRST_BACKOFF_NS;
    // What the frames caused (responses, retransmissions): poll now. A frame that gave the
    // pipeline nothing to send (most packets of a WRITE) needs no poll: only the transport
    // timer may have moved (started, stopped), and a timer due now has its own event now.
    if (this.nic.busy()) this.schedulePoll(now);
    else this.#planTimer(now);
  }

  // ---- posted writes: CQEs and events ---------------------------------------

  deferCqe(cqn: number, f: CqeFields): void {
    // A work request ending in error may leave packets on the way whose source the program may now reuse.
    if (f.status !== IBV_WC_SUCCESS) this.ctx.payloads.materializeAll();
    const c = this.#spareCqes.pop() ?? new CqeFields();
    Object.assign(c, f);
    this.#deferWrite(cqn, c, 0, 0);
  }

  deferEvent(cqn: number, type: number, resource: number): void {
    this.ctx.payloads.materializeAll();
    this.#deferWrite(cqn, null, type, resource);
  }

  #deferWrite(cqn: number, f: CqeFields | null, type: number, resource: number): void {
    const t = this.#writeTail++;
    this.#writeCqn[t] = cqn;
    this.#writeCqe[t] = f;
    this.#writeType[t] = type;
    this.#writeResource[t] = resource;
    this.#writeDue[t] = this.sched.now() + this.#writeLatencyNs;
    if (!this.#writeEv.scheduled) this.sched.schedule(this.#writeEv, this.#writeDue[this.#writeHead]!);
  }

  #onWrites(): void {
    const now = this.sched.now();
    const nic = this.nic as SimNic;
    const irq = this.#irqSum();
    let n = 0;
    while (this.#writeHead < this.#writeTail && this.#writeDue[this.#writeHead]! <= now) {
      const h = this.#writeHead++;
      const f = this.#writeCqe[h]!;
      if (f !== null) {
        this.#writeCqe[h] = null;
        nic.writeCqe(this.#writeCqn[h]!, f);
        this.#spareCqes.push(f);
      } else {
        nic.writeEvent(this.#writeCqn[h]!, this.#writeType[h]!, this.#writeResource[h]!);
      }
      n++;
    }
    if (this.#writeHead === this.#writeTail) {
      this.#writeHead = this.#writeTail = 0;
    } else {
      if (this.#writeHead >= 1024 && this.#writeHead * 2 >= this.#writeTail) this.#compactWrites();
      this.sched.schedule(this.#writeEv, this.#writeDue[this.#writeHead]!);
    }
    if (n > 0 || this.#irqSum() !== irq) this.ctx.changed();
  }

  /** Moves the writes still in flight to the front of their arrays. */
  #compactWrites(): void {
    const h = this.#writeHead;
    const t = this.#writeTail;
    for (const a of [this.#writeCqn, this.#writeType, this.#writeResource, this.#writeDue]) a.copyWithin(0, h, t);
    this.#writeCqe.copyWithin(0, h, t);
    this.#writeCqe.fill(null, t - h, t);
    this.#writeHead = 0;
    this.#writeTail = t - h;
  }

  /** Stops the device (the driver sees it not READY). */
  close(): void {
    setDeviceStatus(this.bar, 0);
  }
}
