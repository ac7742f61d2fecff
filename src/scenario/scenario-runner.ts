/**
 * Runs a scenario on the simulator: starts the simulated model, sets up
 * the queue pairs through the verbs API, posts each traffic item's work
 * requests (at most `depth` outstanding, every `signalEvery`-th signaled),
 * polls the completion queues as a verbs program does (an empty
 * ibv_poll_cq moves virtual time), checks what arrived, and records the
 * timeline of every work request.
 *
 * The run ends when every traffic item is done (all its WRs completed,
 * flushed, or its QP reported stalled) and the fabric is quiet, or at the
 * scenario's duration, whichever comes first. A watchdog reports a QP that
 * has outstanding WRs and no completion for `watchdog` of virtual time,
 * with its state, instead of waiting for ever.
 *
 * What is checked (the `verify` list of the result names every failure):
 * each WR completes exactly once and in order; RC WRITE, READ and SEND
 * data arrive byte for byte (WR i carries a pattern of its own); RC
 * fetch-and-add and compare-and-swap return i for the i-th WR (each
 * executed exactly once, in order). UC and UD, which may lose messages by
 * design, are checked for completion statuses only.
 */
import { currentModel, startSimModel, stopModel } from '../boot.js';
import {
  IBV_SEND_INLINE,
  IBV_SEND_SIGNALED,
  IBV_WC_RECV,
  IBV_WC_RECV_RDMA_WITH_IMM,
  IBV_WC_RETRY_EXC_ERR,
  IBV_WC_RNR_RETRY_EXC_ERR,
  IBV_WC_SUCCESS,
  IBV_WC_WITH_IMM,
  IBV_WC_WR_FLUSH_ERR,
  IBV_WR_ATOMIC_CMP_AND_SWP,
  IBV_WR_ATOMIC_FETCH_AND_ADD,
  IBV_WR_RDMA_READ,
  IBV_WR_RDMA_WRITE,
  IBV_WR_RDMA_WRITE_WITH_IMM,
  IBV_WR_SEND,
  IBV_WR_SEND_WITH_IMM,
  ibv_poll_cq,
  ibv_post_recv,
  ibv_post_srq_recv,
  ibv_post_send,
  newWcArray,
  rnic_read_counters,
} from '../driver/verbs/index.js';
import type { ibv_cq, ibv_send_wr, ibv_wc } from '../driver/verbs/index.js';
import { decodePacket, LINKTYPE_ETHERNET, LINKTYPE_INFINIBAND, OPCODES, PcapWriter } from '../wire/index.js';
import { portLinktype } from '../runtime/device-resources.js';
import { localAckTimeoutNs, rnrTimerNs } from '../pipeline/timer-tables.js';
import { bthDestQp, bthOffset, bthPsn } from '../runtime/sim/frame-info.js';
import { Random } from '../runtime/sim/random.js';
import { consumesRecv, isAtomic, isReliable, type Scenario, type ScenarioTraffic, type TrafficOp } from './scenario.js';
import {
  buffer,
  closeHosts,
  guardDamage,
  makePair,
  openHosts,
  qpStateOf,
  ScenarioRunError,
  type HostDev,
  type QpEnd,
  type QpPair,
  type RegBuf,
} from './scenario-setup.js';
import type { PfcRecord, SwitchPortStats } from '../fabric/switch/switch.js';
import type { FrameObserver } from '../runtime/sim/sim-device.js';
import type { CongestionEvent, SimModel, SimStats } from '../runtime/sim/sim-model.js';
import { dcqcnFindings, losslessFindings } from './fabric-checks.js';
import { type Exhaustion, explainRetryExhausted, explainRnrExhausted } from './exhaustion.js';
import { type FaultHit, recordFaultHits } from './fault-hits.js';

export type { FaultHit } from './fault-hits.js';
import { resolveProfile, retriesForever } from '../pipeline/profiles.js';
import { FabricRecorder, type FabricSeries } from './fabric-record.js';
import { psnAddMasked, psnCount, type QpTimeline, RequestKeys, TimelineRecorder, wcStatusName } from './timeline.js';
import { fillBytes } from '../device/fill-bytes.js';

export interface RunScenarioOptions {
  /** Where a captured port's pcap goes (index 0 is the scenario's first capture); default: kept in memory, returned in `captures`. */
  /** `linktype`: the port's (LINKTYPE_INFINIBAND for a native IB port). */
  captureWriter?: (port: string, index: number, linktype: number) => PcapWriter;
  /** Another frame observer for the run (it may read payload bytes: payloads are then gathered into their frames). */
  observe?: FrameObserver;
  /** Another frame observer that reads headers only (SimModel.observeHeaders: payloads may stay deferred). */
  observeHeaders?: FrameObserver;
  /** Lines worth telling as they happen (a stall). */
  log?: (line: string) => void;
  /** Told of every frame a fault rule acted on (which rule, and the frame by its BTH), at the end of the run. */
  onFault?: (hit: FaultHit) => void;
  /**
   * Record which frames the faults acted on, so that a stall or a WR left
   * outstanding says how many of its QP's frames were hurt meanwhile. It
   * costs per frame, so only `rnic sim` asks for it (a campaign's failed seed
   * is replayed there); default false.
   */
  faultHits?: boolean;
  /** A progress line (virtual time reached, events per wall second), every few seconds of a long run. */
  progress?: (line: string) => void;
}

/** One flow (traffic item) of a run: flows.json. */
export interface FlowRecord {
  /** Requester and responder devices. */
  readonly src: string;
  readonly dst: string;
  readonly qp: number;
  readonly name: string;
  readonly bytes: number;
  readonly startNs: number | null;
  readonly finishNs: number | null;
  readonly fctNs: number | null;
}

/** Switches' view of a run (null without switches). */
export interface FabricResult {
  readonly pfc: readonly PfcRecord[];
  readonly series: FabricSeries;
  /** switch → port (1-based) → counters, and the queue left at the end. */
  readonly switches: Record<string, Record<string, SwitchPortStats & { queueBytesAtEnd: number; peer: string | null }>>;
}

/** A QP the watchdog gave up on. */
export interface StallReport {
  readonly qp: string;
  readonly from: string;
  readonly atNs: number;
  /** Virtual time of its last progress: a completion, or a response acknowledging a later PSN (or its first post). */
  readonly lastProgressNs: number;
  readonly state: string;
  readonly outstanding: number;
  /** Index and PSNs of the oldest WR still outstanding, and when it last went on the wire. */
  readonly oldest: { index: number; psnFirst: number; psnLast: number; lastPacketNs: number | null; retransmissions: number } | null;
}

export interface TrafficSummary {
  readonly qp: string;
  readonly from: string;
  readonly op: string;
  readonly size: number;
  readonly count: number;
  readonly posted: number;
  readonly ok: number;
  readonly errors: Record<string, number>;
  readonly retransmittedPackets: number;
  readonly naks: Record<string, number>;
  readonly firstPostNs: number | null;
  readonly lastCompletionNs: number | null;
  /** Payload bits per second from first post to last successful completion. */
  readonly gbps: number | null;
  readonly receives: number;
  readonly stalled: boolean;
}

export interface ScenarioResult {
  readonly scenario: string;
  readonly seed: number | string;
  readonly endedBy: 'complete' | 'duration';
  readonly endNs: number;
  readonly eventsRun: number;
  readonly wallMs: number;
  readonly traffic: readonly TrafficSummary[];
  readonly timeline: { readonly qps: readonly QpTimeline[] };
  /** device → port → counter → value (every counter, as rnic_read_counters names them). */
  readonly counters: Record<string, Record<string, Record<string, number>>>;
  readonly sim: SimStats;
  readonly faults: Record<string, string>;
  readonly stalls: readonly StallReport[];
  /** QPs that ran out of retries as the run explains (`expect: success-or-exhausted`): not failures. */
  readonly exhausted: readonly ExhaustedReport[];
  /** Findings on those QPs' pairs after that, which follow from it and are not failures. */
  readonly consequences: readonly Finding[];
  /** Each QP's state at the end of the run, per end ('RTS', 'ERR', ...), as ibv_query_qp reports it. */
  readonly qpStates: Record<string, { a: string; b: string }>;
  /** Every check that failed; empty when all was well. */
  readonly verify: readonly string[];
  /** The same failures, structured (kind, QP, op, status, when), earliest first. */
  readonly findings: readonly Finding[];
  /** Pcap bytes per captured port (when no captureWriter was given). */
  readonly captures: Record<string, Uint8Array>;
  readonly flows: readonly FlowRecord[];
  readonly fabric: FabricResult | null;
  /** Frames delivered over every link: one per packet per hop. */
  readonly packetHops: number;
  readonly wallNs: number;
  /** Wall time of the traffic alone: from the first post to the end (setting up the hosts and QPs excluded). */
  readonly trafficWallNs: number;
  /** CPU time of the process (user + system) over the same span: less disturbed by other load on a shared machine. */
  readonly trafficCpuNs: number;
}

/** Finding kinds that follow from a QP in the error state (explained exhaustion of its pair). */
const EXHAUSTION_CONSEQUENCES: ReadonlySet<string> = new Set(['error-completion', 'stall', 'outstanding', 'unposted', 'recv-missing']);

/** A QP that ran out of its retry budget for reasons the run explains (exhaustion.ts). */
export interface ExhaustedReport {
  readonly qp: string;
  readonly from: string;
  readonly wr: number;
  readonly status: string;
  readonly ns: number;
  readonly why: string;
}

/** retry_cnt as a count of retries on device `dev`: a profile may make 7 infinite (rxe). */
function retryBudget(s: Scenario, dev: string, retryCnt: number): number {
  return retriesForever(resolveProfile(s.devices.find((d) => d.name === dev)?.profile), retryCnt) ? Infinity : retryCnt;
}

/** How many of the ascending times `xs` are at or before `ns`. */
function countUpTo(xs: readonly number[], ns: number): number {
  let n = 0;
  while (n < xs.length && xs[n]! <= ns) n++;
  return n;
}

const WC_BATCH = 32;
const YIELD_EVERY = 256;
const MIN_WATCHDOG_NS = 10_000_000;
const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

/** One work request of a stream, as posted. */
interface WrPlan {
  readonly op: TrafficOp;
  readonly size: number;
  readonly inline: boolean;
  readonly signaled: boolean;
  /** Which receive (in the responder's order) it consumes, or -1. */
  readonly recv: number;
  /** Which atomic of the stream it is (fetch-and-add and compare-and-swap move one word by one each), or -1. */
  readonly atomic: number;
}

/** A failed check: what kind (the failure class), where, when, and what. */
export interface Finding {
  /** 'error-completion', 'data', 'tail', 'guard', 'atomic', 'recv', 'order', 'stall', 'outstanding', ... */
  readonly kind: string;
  readonly qp: string;
  readonly from: string;
  /** QP type of the stream. */
  readonly type: string;
  /** The op involved ('write', ...), or '' */
  readonly op: string;
  /** The completion status involved (error completions), or ''. */
  readonly status: string;
  /** Virtual ns when it was found. */
  readonly ns: number;
  readonly detail: string;
}

/** One traffic item while it runs. */
class Stream {
  readonly t: ScenarioTraffic;
  readonly pair: QpPair;
  readonly req: QpEnd;
  readonly resp: QpEnd;
  readonly tl: QpTimeline;
  /** Requester's slots (WRITE/SEND source, READ destination, atomic result). */
  readonly local: RegBuf;
  /** Responder's slots for WRITE and READ. */
  readonly remote: RegBuf;
  /** Responder's receive buffers. */
  readonly recvBuf: RegBuf | null;
  /** Responder's atomic word. */
  readonly atomicBuf: RegBuf | null;
  readonly slot: number;
  readonly pattern: Uint8Array;
  readonly watchdogNs: number;
  readonly rc: boolean;
  readonly ud: boolean;
  readonly needsRecv: boolean;
  /** Receives the stream's WRs consume in all, and which WR consumes receive k. */
  readonly recvCount: number;
  readonly recvWr: Int32Array | null;
  readonly atomics: number;
  readonly recvSlot: number;
  readonly plans: readonly WrPlan[] | null;
  posted = 0;
  /** WRs completed (their CQE or a later one's), in order. */
  retired = 0;
  ok = 0;
  okBytes = 0;
  readonly errors: Record<string, number> = {};
  failed = false;
  stalled = false;
  nextPsn: number;
  lastProgressNs = -1;
  firstPostNs: number | null = null;
  lastOkNs: number | null = null;
  recvPosted = 0;
  recvDone = 0;
  /** When each receive was posted and completed (virtual ns, in order): what an RNR NAK is judged by. */
  readonly recvPostNs: number[] = [];
  readonly recvDoneNs: number[] = [];
  /** UC/UD: the highest WR index delivered so far, and which were delivered. */
  lastDelivered = -1;
  /** UC/UD: the receive-consuming WR (by its index among them) after the latest delivered one: where the search for the next message starts. */
  recvScanFrom = 0;
  readonly delivered = new Set<number>();

  constructor(
    t: ScenarioTraffic,
    pair: QpPair,
    tl: QpTimeline,
    bufs: { local: RegBuf; remote: RegBuf; recv: RegBuf | null; atomic: RegBuf | null },
    slot: number,
    recvSlot: number,
    pattern: Uint8Array,
    watchdogNs: number,
  ) {
    this.t = t;
    this.pair = pair;
    this.req = t.from === 'a' ? pair.a : pair.b;
    this.resp = t.from === 'a' ? pair.b : pair.a;
    this.tl = tl;
    this.local = bufs.local;
    this.remote = bufs.remote;
    this.recvBuf = bufs.recv;
    this.atomicBuf = bufs.atomic;
    this.slot = slot;
    this.recvSlot = recvSlot;
    this.pattern = pattern;
    this.watchdogNs = watchdogNs;
    this.rc = isReliable(pair.spec.type);
    this.ud = pair.spec.type === 'UD';
    this.nextPsn = this.req.sqPsn;
    this.plans = t.wrs ? planWrs(t) : null;
    if (this.plans) {
      const recvs = this.plans.filter((p) => p.recv >= 0);
      this.recvCount = recvs.length;
      this.recvWr = Int32Array.from(this.plans.flatMap((p, i) => (p.recv >= 0 ? [i] : [])));
      this.atomics = this.plans.filter((p) => p.atomic >= 0).length;
    } else {
      this.recvCount = consumesRecv(t.op as TrafficOp) ? t.count : 0;
      this.recvWr = null;
      this.atomics = isAtomic(t.op as TrafficOp) ? t.count : 0;
    }
    this.needsRecv = this.recvCount > 0;
  }

  plan(i: number): WrPlan {
    if (this.plans) return this.plans[i]!;
    const t = this.t;
    const op = t.op as TrafficOp;
    return {
      op,
      size: t.size,
      inline: t.inline,
      signaled: (i + 1) % t.signalEvery === 0 || i === t.count - 1,
      recv: consumesRecv(op) ? i : -1,
      atomic: isAtomic(op) ? i : -1,
    };
  }

  /** The WR that consumes receive k. */
  wrOfRecv(k: number): number {
    return this.recvWr ? this.recvWr[k]! : k;
  }

  get outstanding(): number {
    return this.posted - this.retired;
  }

  get sendDone(): boolean {
    return this.stalled || this.retired === this.t.count || (this.failed && this.retired === this.posted);
  }

  get done(): boolean {
    if (!this.sendDone) return false;
    // RC receives must all arrive unless the requester failed; UC/UD may lose messages.
    return !this.needsRecv || !this.rc || this.failed || this.stalled || this.recvDone >= this.recvCount;
  }

  /** Bytes of WR i's pattern (`size` of them). */
  data(i: number, size: number): Uint8Array {
    const off = i % 251;
    return this.pattern.subarray(off, off + size);
  }
}

/** Signaling of a listed stream: as listed, the last WR, and any WR after depth-1 unsignaled ones (so the queue never fills with WRs nothing completes). */
function planWrs(t: ScenarioTraffic): WrPlan[] {
  const out: WrPlan[] = [];
  let unsignaled = 0;
  let recv = 0;
  let atomic = 0;
  const wrs = t.wrs!;
  wrs.forEach((w, i) => {
    const signaled = w.signaled || i === wrs.length - 1 || unsignaled >= t.depth - 1;
    unsignaled = signaled ? 0 : unsignaled + 1;
    out.push({ op: w.op, size: w.size, inline: w.inline, signaled, recv: consumesRecv(w.op) ? recv++ : -1, atomic: isAtomic(w.op) ? atomic++ : -1 });
  });
  return out;
}

/** The filler a slot holds before WR i uses it (so bytes past its data can be checked). */
function filler(i: number): number {
  return (i * 37 + 0x5a) & 0xff;
}

/** PSNs a READ request's responses take: its RETH DMA length over the path MTU (at least one). */
function readPsns(h: Uint8Array, reth: number, mtu: number): number {
  const len = ((h[reth + 12]! << 24) | (h[reth + 13]! << 16) | (h[reth + 14]! << 8) | h[reth + 15]!) >>> 0;
  return Math.max(1, Math.ceil(len / mtu));
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  return Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.length), Buffer.from(b.buffer, b.byteOffset, b.length)) === 0;
}

function allBytes(a: Uint8Array, v: number): boolean {
  for (let k = 0; k < a.length; k++) if (a[k] !== v) return false;
  return true;
}

function defaultWatchdog(s: Scenario, spec: QpPair['spec']): number {
  if (s.watchdogNs !== null) return s.watchdogNs;
  let w = MIN_WATCHDOG_NS;
  const ack = localAckTimeoutNs(spec.timeout);
  if (ack !== Infinity) w = Math.max(w, 2 * (spec.retry_cnt + 1) * ack);
  w = Math.max(w, 2 * (spec.rnr_retry === 7 ? 8 : spec.rnr_retry + 1) * rnrTimerNs(spec.min_rnr_timer));
  return w;
}

/** Runs `s` (see the file comment). The simulated model replaces any running model and is stopped at the end. */
export async function runScenario(s: Scenario, opts: RunScenarioOptions = {}): Promise<ScenarioResult> {
  const wall0 = process.hrtime.bigint();
  const sim: SimModel = await startSimModel({
    workers: 0,
    devices: s.devices.map((d) => ({ ...d, ports: d.ports.map((p) => ({ ...p })) })),
    cables: s.links.map((l) => ({ kind: 'wire' as const, a: l.a, b: l.b })),
    seed: s.seed,
    timing: { ...s.timing },
    sim: { ...s.sim },
    links: s.links.map((l) => ({
      name: l.name,
      linkRate: l.linkRate,
      propagationDelay: l.propagationDelay,
      queueLimit: l.queueLimit,
      ...(l.mtu !== null ? { mtu: l.mtu } : {}),
      faults: l.faults,
    })),
    switches: s.switches.map((w) => ({ name: w.name, ports: w.ports, config: w.config })),
  });
  const captures: Record<string, Uint8Array> = {};
  const chunks = new Map<string, Uint8Array[]>();
  const writers: PcapWriter[] = [];
  s.capture.forEach((port, i) => {
    const [dev, num] = port.split(':') as [string, string];
    const cfg = s.devices.find((d) => d.name === dev)?.ports[Number(num) - 1];
    const linktype = cfg ? portLinktype(cfg) : LINKTYPE_ETHERNET;
    let w: PcapWriter;
    if (opts.captureWriter) w = opts.captureWriter(port, i, linktype);
    else {
      const parts: Uint8Array[] = [];
      chunks.set(port, parts);
      w = new PcapWriter((c) => parts.push(c.slice()), { linktype, nanosecond: true });
    }
    writers.push(w);
    sim.capturePort(port, w);
  });
  const recorder = s.switches.length > 0 ? new FabricRecorder(sim, s.output.sampleIntervalNs) : null;
  const requestKeys = new RequestKeys(
    s.devices.map((d) => d.ports.map((p) => p.mac)),
    s.devices.map((d) => d.ports.flatMap((p) => (p.ib ? [p.ib] : []))),
  );
  const timeline = new TimelineRecorder(requestKeys);
  // The runner's own observers read headers only (observeHeaders): payloads may stay deferred.
  const unobserve = [sim.observeHeaders(timeline.observe), sim.observeHandoffs(timeline.handoff)];
  // Every rate change of congestion control, for the DCQCN checks (fabric-checks.ts).
  const ccEvents: CongestionEvent[] = [];
  if (s.switches.length > 0) unobserve.push(sim.observeCongestion((e) => ccEvents.push(e)));
  // Fault hits go to the caller and, when a stream may end exhausted, to its judge.
  const faultSink: { current: ((h: FaultHit) => void) | null } = { current: null };
  const linkEnds = new Map(s.links.map((l) => [l.name, { a: l.a, b: l.b }]));
  const judgeExhaustion = s.traffic.some((t) => t.expect === 'success-or-exhausted') && s.links.some((l) => l.faults.length > 0);
  const faultHits = opts.onFault !== undefined || judgeExhaustion || (opts.faultHits === true && s.links.some((l) => l.faults.length > 0));
  if (faultHits)
    unobserve.push(
      recordFaultHits(
        sim,
        (h) => {
          opts.onFault?.(h);
          faultSink.current?.(h);
        },
        requestKeys,
        s.devices.map((d) => d.name),
      ),
    );
  if (opts.observe) unobserve.push(sim.observe(opts.observe));
  if (opts.observeHeaders) unobserve.push(sim.observeHeaders(opts.observeHeaders));
  const verify: string[] = [];
  const stalls: StallReport[] = [];
  const devIndex = new Map(s.devices.map((d, i) => [d.name, i]));
  const hosts = openHosts(s);
  const root = new Random(s.seed).fork('scenario');
  try {
    const pairs = new Map<string, QpPair>();
    for (const q of s.qps) pairs.set(q.name, makePair(hosts, q));
    // UC and UD have no duplicate detection for a message's first packet (a UC responder starts a
    // new message at any FIRST or ONLY, whatever its PSN): a link that duplicates or reorders
    // frames may have them deliver a message twice or out of order. Only then is that allowed.
    const dupFaults = s.links.some((l) => l.faults.some((f) => f.action === 'duplicate'));
    const reorderFaults = s.links.some((l) => l.faults.some((f) => f.action === 'duplicate' || f.action === 'reorder' || f.action === 'delay'));
    const findings: Finding[] = [];
    const consequences: Finding[] = [];
    const exhausted: ExhaustedReport[] = [];
    const pairExhausted = new Set<string>();
    /** Fault hits per frame destination: `${device}/${qpn}/${request ? 'req' : 'resp'}` → times (ns). */
    const faultTimes = new Map<string, number[]>();
    /** The same, for the hits that lost the frame (drops, a switch's included): what never arrives. */
    const lossTimes = new Map<string, number[]>();
    /** The same, for the hits that delayed, held back or duplicated the frame: what may arrive out of order. */
    const displaceTimes = new Map<string, number[]>();
    const push = (m: Map<string, number[]>, key: string, ns: number): void => {
      let xs = m.get(key);
      if (!xs) m.set(key, (xs = []));
      xs.push(ns);
    };
    faultSink.current = (h) => {
      const link = linkEnds.get(h.link);
      if (!link && !h.to) return;
      const dest = h.to ?? (h.direction === 'a->b' ? link!.b : link!.a).split(':')[0]!;
      const key = `${dest}/${h.qpn}/${OPCODES[h.opcode]?.isRequest ? 'req' : 'resp'}`;
      push(faultTimes, key, h.ns);
      if (h.kind === 'drop') push(lossTimes, key, h.ns);
      else if (h.kind === 'delay' || h.kind === 'hold' || h.kind === 'duplicate') push(displaceTimes, key, h.ns);
    };
    // A switch's congestion drops are losses too (a lossy priority under an incast, RoCE v1 on
    // priority 0): evidence for an exhausted retry budget, as a fault hit is.
    for (const { name, sw } of sim.switches) {
      sw.onDrop = (frame) => {
        const bth = bthOffset(frame);
        const to = requestKeys.destDevice(frame);
        if (bth < 0 || to < 0) return;
        faultSink.current?.({
          link: name,
          direction: 'a->b',
          rule: -1,
          kind: 'drop',
          opcode: frame[bth]!,
          qpn: bthDestQp(frame, bth),
          psn: bthPsn(frame, bth),
          occurrence: 0,
          ns: sim.now(),
          to: s.devices[to]!.name,
        });
      };
    }
    /** Fault hits on a stream's frames (its requests, its responses) in [from, to]: tells a reader of a stall or a leftover whether the faults can explain it. */
    const faultsOn = (st: Stream, from: number, to: number, what: string): string => {
      if (!faultHits) return '';
      let n = 0;
      for (const key of [`${st.resp.dev.name}/${st.resp.qp.qp_num}/req`, `${st.req.dev.name}/${st.req.qp.qp_num}/resp`])
        for (const ns of faultTimes.get(key) ?? []) if (ns >= from && ns <= to) n++;
      return `; faults acted on ${n} of its frames ${what}`;
    };
    const ms = (ns: number): string => `${(ns / 1e6).toFixed(3)} ms`;
    const exhaustion = (st: Stream, wr: number, status: number, now: number): Exhaustion | null => {
      if (!st.rc) return null;
      if (status === IBV_WC_RETRY_EXC_ERR) {
        const reqKey = `${st.resp.dev.name}/${st.resp.qp.qp_num}/req`;
        const respKey = `${st.req.dev.name}/${st.req.qp.qp_num}/resp`;
        const faultNs = [...(faultTimes.get(reqKey) ?? []), ...(faultTimes.get(respKey) ?? [])];
        return explainRetryExhausted({
          tl: st.tl,
          index: wr,
          budget: retryBudget(s, st.req.dev.name, st.pair.spec.retry_cnt),
          faultNs,
          errorNs: now,
          delay: {
            flight: timeline.flight(st.tl)!,
            timeoutNs: localAckTimeoutNs(st.pair.spec.timeout),
            reqLostNs: lossTimes.get(reqKey) ?? [],
            respLostNs: lossTimes.get(respKey) ?? [],
          },
        });
      }
      if (status === IBV_WC_RNR_RETRY_EXC_ERR) {
        // Receives posted later than the request may have completed before the NAK: those make
        // the difference negative, and a negative count is none certainly held.
        const heldReceives = (txNs: number, nakNs: number): number => Math.max(0, countUpTo(st.recvPostNs, txNs) - countUpTo(st.recvDoneNs, nakNs));
        const reqKey = `${st.resp.dev.name}/${st.resp.qp.qp_num}/req`;
        const respKey = `${st.req.dev.name}/${st.req.qp.qp_num}/resp`;
        const displacingNs = [...(displaceTimes.get(reqKey) ?? []), ...(displaceTimes.get(respKey) ?? [])];
        return explainRnrExhausted({ tl: st.tl, index: wr, rnrRetry: st.pair.spec.rnr_retry, heldReceives, displacingNs });
      }
      return null;
    };
    /** `ofError`: about an error completion (a receive's status), not about delivered data. */
    const finding = (st: Stream, kind: string, detail: string, extra: { op?: string; status?: string } = {}, ofError = false): void => {
      // Once a QP pair ran out of retries for reasons the run explains, its other streams
      // meet a QP in the error state: their errors, stalls and leftovers follow from it.
      if (pairExhausted.has(st.t.qp) && st.t.expect === 'success-or-exhausted' && (ofError || EXHAUSTION_CONSEQUENCES.has(kind))) {
        consequences.push({
          kind,
          qp: st.t.qp,
          from: st.t.from,
          type: st.pair.spec.type,
          op: extra.op ?? '',
          status: extra.status ?? '',
          ns: sim.now(),
          detail,
        });
        return;
      }
      findings.push({ kind, qp: st.t.qp, from: st.t.from, type: st.pair.spec.type, op: extra.op ?? '', status: extra.status ?? '', ns: sim.now(), detail });
      verify.push(`${st.t.qp}${st.t.from === 'b' ? ' (from b)' : ''}: ${detail}`);
    };
    const streams = s.traffic.map((t, i) => {
      const pair = pairs.get(t.qp)!;
      const req = t.from === 'a' ? pair.a : pair.b;
      const resp = t.from === 'a' ? pair.b : pair.a;
      const slot = Math.max(8, t.size);
      const ud = pair.spec.type === 'UD';
      const local = buffer(req.dev, slot * t.depth);
      const ops = t.wrs ? t.wrs.map((w) => w.op) : [t.op as TrafficOp];
      const remote = buffer(resp.dev, ops.some((o) => o === 'write' || o === 'write_imm' || o === 'read') ? slot * t.depth : 8);
      const recvSizes = t.wrs
        ? t.wrs.filter((w) => consumesRecv(w.op)).map((w) => (w.op === 'write_imm' ? 0 : w.size))
        : consumesRecv(t.op as TrafficOp)
          ? [t.size]
          : [];
      const recvSlot = recvSizes.length > 0 ? Math.max(8, ...recvSizes) + (ud ? 40 : 0) : 0;
      const recv = recvSlot > 0 ? buffer(resp.dev, recvSlot * t.recvDepth) : null;
      const atomic = ops.some(isAtomic) ? buffer(resp.dev, 8) : null;
      const rnd = root.fork(`traffic/${i}`);
      const pattern = new Uint8Array(t.size + 256);
      // Four pattern bytes per 32 random bits (a 1 MB WRITE needs a megabyte of them).
      for (let k = 0; k < pattern.length; k += 4) {
        const x = rnd.u32();
        pattern[k] = x & 0xff;
        if (k + 1 < pattern.length) pattern[k + 1] = (x >>> 8) & 0xff;
        if (k + 2 < pattern.length) pattern[k + 2] = (x >>> 16) & 0xff;
        if (k + 3 < pattern.length) pattern[k + 3] = x >>> 24;
      }
      const tl = timeline.addQp(
        { qp: t.qp, from: t.from, device: req.dev.name, qpn: req.qp.qp_num, op: t.op },
        devIndex.get(req.dev.name)!,
        devIndex.get(resp.dev.name)!,
        resp.qp.qp_num,
      );
      return new Stream(t, pair, tl, { local, remote, recv, atomic }, slot, recvSlot, pattern, defaultWatchdog(s, pair.spec));
    });
    // Progress the watchdog also counts, as a protocol analyzer at the requester's port would see it:
    // (a) a response (ACK, NAK, READ response, atomic ACK) reaching an RC requester with a later PSN
    // than any before; (b) a retry round (a request sent at or below the PSN of the request before it)
    // starting at a later PSN than the round before, which says the requester accepted responses in
    // between. A long multi-packet message at a high loss rate completes only after many go-back-N
    // rounds, each acknowledging more of it; a stuck transport acknowledges nothing new. (b) is needed
    // where (a) is blind: a later READ's response that arrived early (and was dropped as out of
    // sequence) sets the highest PSN seen, and the earlier READ then resumes below it round by round.
    type Watch = { st: Stream; maxPsn: number; lastTxPsn: number; roundStart: number };
    const responders = new Map<number, Watch>();
    const requesters = requestKeys.table<Watch>();
    for (const st of streams) {
      if (!st.rc) continue;
      const w: Watch = { st, maxPsn: (st.req.sqPsn - 1) & 0xffffff, lastTxPsn: -1, roundStart: -1 };
      const dev = devIndex.get(st.req.dev.name)!;
      responders.set(dev * 0x1000000 + st.req.qp.qp_num, w);
      // A request names only the remote QPN: with several hosts, the device it goes to too.
      requesters.set(dev, devIndex.get(st.resp.dev.name)!, st.resp.qp.qp_num, w);
    }
    const later = (a: number, b: number): boolean => ((a - b) << 8) >> 8 > 0;
    const progressAt = (w: Watch, ns: number): void => {
      if (w.st.lastProgressNs >= 0 && w.st.outstanding > 0) w.st.lastProgressNs = Math.max(w.st.lastProgressNs, ns);
    };
    if (responders.size > 0) {
      unobserve.push(
        sim.observeHeaders((e) => {
          const bth = bthOffset(e.headers, e.ib);
          if (bth < 0) return;
          const info = OPCODES[e.headers[bth]!];
          if (!info) return;
          const psn = bthPsn(e.headers, bth);
          if (e.dir === 'tx') {
            if (!info.isRequest) return;
            const w = requesters.ofFrame(e.deviceIndex, e.headers, bth, e.ib);
            if (!w) return;
            const newRound = w.lastTxPsn >= 0 && !later(psn, w.lastTxPsn);
            // A READ request stands for all its response PSNs: resumed, it starts below the last of
            // them, and that is a new round (seen as one only by its first PSN, a lone READ resuming
            // round by round looked stuck).
            w.lastTxPsn = info.kind === 'read-request' ? (psn + readPsns(e.headers, bth + info.offsets.reth, w.st.pair.spec.mtu) - 1) & 0xffffff : psn;
            if (!newRound) return;
            if (w.roundStart >= 0 && later(psn, w.roundStart)) progressAt(w, e.ns);
            w.roundStart = psn;
            return;
          }
          if (info.isRequest) return;
          const w = responders.get(e.deviceIndex * 0x1000000 + bthDestQp(e.headers, bth));
          if (!w || !later(psn, w.maxPsn)) return;
          // The tap sees frames before the receiver checks them: a corrupted one (a flipped PSN bit)
          // must not count. Only a frame that would advance the PSN is decoded (ICRC checked).
          if (!decodePacket(e.frame, e.ib ? LINKTYPE_INFINIBAND : LINKTYPE_ETHERNET).ok) return;
          w.maxPsn = psn;
          progressAt(w, e.ns);
        }),
      );
    }
    const endNs = s.durationNs;
    // Each CQ has one user: a stream's send CQ at its requester, or its receive CQ at the responder.
    const cqs = new Map<ibv_cq, { stream: Stream; recv: boolean }>();
    for (const st of streams) {
      cqs.set(st.req.scq, { stream: st, recv: false });
      if (st.needsRecv) cqs.set(st.resp.rcq, { stream: st, recv: true });
    }
    const wcs = newWcArray(WC_BATCH);
    let endedBy: ScenarioResult['endedBy'] = 'complete';
    let iter = 0;
    const traffic0 = process.hrtime.bigint();
    const cpu0 = process.cpuUsage();
    let lastTell = wall0;
    let lastEvents = 0;
    const progress = (): void => {
      const t = process.hrtime.bigint();
      if (t - wall0 < 3_000_000_000n || t - lastTell < 2_000_000_000n) return;
      const ev = sim.eventsRun;
      const rate = ((ev - lastEvents) * 1e9) / Number(t - lastTell);
      opts.progress!(
        `sim: ${(sim.now() / 1000).toFixed(1)} µs simulated of ${(endNs / 1000).toFixed(0)}, ${(rate / 1e6).toFixed(2)} M events/s, ${(Number(t - wall0) / 1e9).toFixed(0)} s wall`,
      );
      lastTell = t;
      lastEvents = ev;
    };

    const post = (st: Stream): void => {
      const now = sim.now();
      const t = st.t;
      if (st.needsRecv && now >= t.recvStartNs) {
        const rb = st.recvBuf!;
        while (st.recvPosted - st.recvDone < t.recvDepth && st.recvPosted < st.recvCount) {
          const k = st.recvPosted;
          const off = (k % t.recvDepth) * st.recvSlot;
          fillBytes(rb.bytes, filler(k), off, off + st.recvSlot);
          const rwr = { wr_id: BigInt(k), next: null, sg_list: [{ addr: rb.mr.addr + BigInt(off), length: st.recvSlot, lkey: rb.mr.lkey }], num_sge: 1 };
          const srq = st.resp.srq;
          const rc = srq ? ibv_post_srq_recv(srq, rwr, {}) : ibv_post_recv(st.resp.qp, rwr, {});
          if (rc !== 0) {
            finding(st, 'post-failed', `${srq ? 'ibv_post_srq_recv' : 'ibv_post_recv'} #${k} failed (${rc})`);
            break;
          }
          st.recvPosted++;
          st.recvPostNs.push(now);
        }
      }
      if (st.failed || st.stalled || now < t.startNs) return;
      while (st.posted < t.count && st.outstanding < t.depth) {
        const i = st.posted;
        const p = st.plan(i);
        const slotOff = (i % t.depth) * st.slot;
        const wr = buildWr(st, i, p, slotOff);
        if (st.firstPostNs === null) {
          st.firstPostNs = now;
          st.lastProgressNs = now;
        }
        const npsn = psnCount(p.op, p.size, st.pair.spec.mtu, st.ud);
        timeline.posted(st.tl, i, p.op, p.size, p.signaled, st.nextPsn, psnAddMasked(st.nextPsn, npsn - 1), now);
        const rc = ibv_post_send(st.req.qp, wr, {});
        if (rc !== 0) {
          finding(st, 'post-failed', `ibv_post_send #${i} (${p.op} ${p.size} B) failed (${rc})`, { op: p.op });
          st.tl.wrs.pop();
          st.failed = true;
          return;
        }
        st.nextPsn = psnAddMasked(st.nextPsn, npsn);
        st.posted++;
      }
    };

    const onSendWc = (st: Stream, wc: ibv_wc, now: number): void => {
      const i = Number(wc.wr_id);
      if (i < st.retired || i >= st.posted) {
        finding(st, 'order', `completion for WR ${i} out of order or twice (next expected ${st.retired}, posted ${st.posted})`);
        return;
      }
      const status = wcStatusName(wc.status);
      const p = st.plan(i);
      // Everything before it completed without a CQE of its own (unsignaled, acknowledged in
      // order); after an error every WR gets its own (flush) CQE, so there is no gap then.
      for (let j = st.retired; j < i; j++) {
        if (!st.failed) retireOk(st, j, now, 'implied');
        else finding(st, 'order', `WR ${j} got no completion before that of WR ${i} (${status})`);
      }
      if (!p.signaled && wc.status === IBV_WC_SUCCESS)
        finding(st, 'order', `WR ${i} (${p.op}) is unsignaled but got a successful CQE of its own`, { op: p.op });
      if (wc.status === IBV_WC_SUCCESS) {
        retireOk(st, i, now, 'signaled');
      } else {
        timeline.completed(st.tl, i, now, status, 'signaled');
        st.errors[status] = (st.errors[status] ?? 0) + 1;
        const strict = st.t.expect === 'success' || st.t.expect === 'success-or-exhausted';
        if (strict && !(st.failed && wc.status === IBV_WC_WR_FLUSH_ERR)) {
          const why = st.t.expect === 'success-or-exhausted' && !st.failed ? exhaustion(st, i, wc.status, now) : null;
          if (why?.ok) {
            exhausted.push({ qp: st.t.qp, from: st.t.from, wr: i, status, ns: now, why: why.why });
            pairExhausted.add(st.t.qp);
            opts.log?.(`exhausted: ${st.t.qp} (${st.t.from}) WR ${i} ${status}: ${why.why}`);
          } else
            finding(st, 'error-completion', `WR ${i} (${p.op} ${p.size} B) completed with ${status}${why ? ` (not explained: ${why.why})` : ''}`, {
              op: p.op,
              status,
            });
        }
        st.failed = true;
        st.retired = i + 1;
      }
      st.lastProgressNs = now;
    };

    const retireOk = (st: Stream, j: number, now: number, how: 'signaled' | 'implied'): void => {
      timeline.completed(st.tl, j, now, 'IBV_WC_SUCCESS', how);
      st.retired = j + 1;
      st.ok++;
      const p = st.plan(j);
      st.okBytes += p.size;
      st.lastOkNs = now;
      checkData(st, j, p);
    };

    const checkData = (st: Stream, j: number, p: WrPlan): void => {
      const slotOff = (j % st.t.depth) * st.slot;
      const slotEnd = slotOff + st.slot;
      switch (p.op) {
        case 'write':
        case 'write_imm': {
          if (!st.rc) return; // UC: the slot may already hold a later WR's data (its requester does not wait)
          const got = st.remote.bytes.subarray(slotOff, slotOff + p.size);
          if (!sameBytes(got, st.data(j, p.size)))
            finding(st, 'data', `${p.op} ${j} (${p.size} B): the responder's memory differs from what was written`, { op: p.op });
          if (!allBytes(st.remote.bytes.subarray(slotOff + p.size, slotEnd), filler(j)))
            finding(st, 'tail', `${p.op} ${j} (${p.size} B): bytes after its data in the responder's buffer changed`, { op: p.op });
          break;
        }
        case 'read': {
          const got = st.local.bytes.subarray(slotOff, slotOff + p.size);
          if (!sameBytes(got, st.data(j, p.size))) finding(st, 'data', `READ ${j} (${p.size} B): the local buffer differs from the remote data`, { op: p.op });
          if (!allBytes(st.local.bytes.subarray(slotOff + p.size, slotEnd), filler(j)))
            finding(st, 'tail', `READ ${j} (${p.size} B): bytes after its data in the local buffer changed`, { op: p.op });
          break;
        }
        case 'fetch_add':
        case 'cmp_swap': {
          const orig = new DataView(st.local.bytes.buffer, st.local.bytes.byteOffset + slotOff, 8).getBigUint64(0, true);
          if (orig !== BigInt(p.atomic))
            finding(st, 'atomic', `${p.op} ${j} (atomic #${p.atomic}) returned ${orig}, expected ${p.atomic} (each atomic executed exactly once, in order)`, {
              op: p.op,
            });
          if (!allBytes(st.local.bytes.subarray(slotOff + 8, slotEnd), filler(j)))
            finding(st, 'tail', `${p.op} ${j}: bytes after its 8-byte result in the local buffer changed`, { op: p.op });
          break;
        }
        default:
      }
    };

    const onRecvWc = (st: Stream, wc: ibv_wc): void => {
      const k = Number(wc.wr_id);
      const t = st.t;
      st.recvDoneNs.push(sim.now());
      if (wc.status !== IBV_WC_SUCCESS) {
        if (wc.status !== IBV_WC_WR_FLUSH_ERR)
          finding(st, 'recv', `receive ${k} completed with ${wcStatusName(wc.status)}`, { status: wcStatusName(wc.status) }, true);
        st.recvDone++;
        return;
      }
      if (k !== st.recvDone) finding(st, 'recv', `receive ${k} completed out of order (expected ${st.recvDone})`);
      st.recvDone++;
      const off = (k % t.recvDepth) * st.recvSlot;
      const hdr = st.ud ? 40 : 0;
      const buf = st.recvBuf!.bytes;
      // Which WR's message it holds: RC, the k-th receive-consuming one; UC/UD, the one it identifies
      // (its immediate data, or its bytes), after the last one delivered (UC) or any not yet (UD).
      let j: number;
      if (st.rc) j = st.wrOfRecv(k);
      else {
        j = -1;
        const len = wc.byte_len - hdr;
        const immOp = wc.opcode === IBV_WC_RECV_RDMA_WITH_IMM || (wc.wc_flags & IBV_WC_WITH_IMM) !== 0;
        const anyOrder = st.ud || reorderFaults;
        // From the one after the latest delivered, wrapping: messages mostly come in order, so the
        // search is short (from 0 every time it was quadratic in the count: a 16 M-SEND stream ran for minutes).
        let jr = -1;
        for (let pass = 0; pass < 2 && j < 0; pass++) {
          for (let i = 0; i < st.recvCount; i++) {
            const r = (st.recvScanFrom + i) % st.recvCount;
            const cand = st.wrOfRecv(r);
            if (st.delivered.has(cand) && (pass === 0 || !dupFaults)) continue;
            if (!anyOrder && cand <= st.lastDelivered) continue;
            const p = st.plan(cand);
            if (immOp ? cand !== wc.imm_data : p.op !== 'send' || p.size !== len) continue;
            if (!immOp && !sameBytes(buf.subarray(off + hdr, off + hdr + len), st.data(cand, len))) continue;
            j = cand;
            jr = r;
            break;
          }
        }
        if (j < 0) {
          finding(
            st,
            'recv',
            `receive ${k}: ${wc.byte_len} B, opcode ${wc.opcode}${immOp ? `, imm ${wc.imm_data}` : ''} is no message that was sent (or one delivered twice, or out of order on UC)`,
          );
          return;
        }
        st.delivered.add(j);
        if (j > st.lastDelivered) {
          st.lastDelivered = j;
          st.recvScanFrom = (jr + 1) % st.recvCount;
        }
      }
      const p = st.plan(j);
      if (p.op === 'write_imm') {
        if (wc.opcode !== IBV_WC_RECV_RDMA_WITH_IMM || wc.imm_data !== j)
          finding(st, 'recv', `WRITE with immediate ${j}: receive ${k} has opcode ${wc.opcode}, imm ${wc.imm_data}`, { op: p.op });
        return;
      }
      if (wc.opcode !== IBV_WC_RECV || wc.byte_len !== p.size + hdr)
        finding(st, 'recv', `${p.op} ${j}: receive ${k} has opcode ${wc.opcode}, ${wc.byte_len} bytes (expected ${p.size + hdr})`, { op: p.op });
      if (p.op === 'send_imm' && wc.imm_data !== j) finding(st, 'recv', `SEND with immediate ${j}: receive ${k} has imm ${wc.imm_data}`, { op: p.op });
      if (!sameBytes(buf.subarray(off + hdr, off + hdr + p.size), st.data(j, p.size)))
        finding(st, 'data', `${p.op} ${j} (${p.size} B): the received bytes differ from what was sent`, { op: p.op });
      // UC: a message lost part way may have written into this receive before it was reused.
      if (!(st.pair.spec.type === 'UC') && !allBytes(buf.subarray(off + hdr + p.size, off + st.recvSlot), filler(k)))
        finding(st, 'tail', `${p.op} ${j} (${p.size} B): bytes after it in receive buffer ${k} changed`, { op: p.op });
    };

    // One round of the application's poll loop: every CQ is looked at at the
    // same virtual instant (an empty ibv_poll_cq may not move time while
    // another CQ holds a completion the program has yet to react to, such as
    // a receive to post again); only a round that found nothing lets time run
    // on, as far as the next change.
    const pollAll = (): number => {
      let n = 0;
      const horizon = sim.horizon;
      sim.horizon = sim.now();
      try {
        for (const [cq, u] of cqs) {
          const got = ibv_poll_cq(cq, WC_BATCH, wcs);
          if (got < 0) throw new ScenarioRunError(`ibv_poll_cq failed (${got})`);
          const now = sim.now();
          for (let k = 0; k < got; k++) {
            if (u.recv) onRecvWc(u.stream, wcs[k]!);
            else onSendWc(u.stream, wcs[k]!, now);
          }
          n += got;
        }
      } finally {
        sim.horizon = horizon;
      }
      // Nothing completed: run to the next completion (or the horizon: a start time, a
      // watchdog deadline, the end). Between them the runner has nothing to do.
      if (n === 0) sim.runToChange();
      return n;
    };

    const watchdog = (): void => {
      const now = sim.now();
      for (const st of streams) {
        if (st.stalled || st.sendDone || st.outstanding === 0 || st.lastProgressNs < 0) continue;
        if (now - st.lastProgressNs < st.watchdogNs) continue;
        st.stalled = true;
        const w = st.tl.wrs[st.retired];
        const r: StallReport = {
          qp: st.t.qp,
          from: st.t.from,
          atNs: now,
          lastProgressNs: st.lastProgressNs,
          state: qpStateOf(st.req.qp),
          outstanding: st.outstanding,
          oldest: w
            ? { index: w.index, psnFirst: w.psnFirst, psnLast: w.psnLast, lastPacketNs: w.lastPacketNs, retransmissions: w.retransmissions.length }
            : null,
        };
        stalls.push(r);
        const hurt = faultsOn(st, st.lastProgressNs, now, 'in that time');
        finding(st, 'stall', `stalled (watchdog): no progress for ${ms(now - st.lastProgressNs)} (since ${ms(st.lastProgressNs)})${hurt}`, { op: w?.op ?? '' });
        opts.log?.(
          `watchdog: ${st.t.qp} (${st.t.from}) made no progress for ${now - st.lastProgressNs} ns with ${r.outstanding} WRs outstanding; QP state ${r.state}`,
        );
      }
    };

    for (;;) {
      if (sim.now() >= endNs) {
        endedBy = 'duration';
        break;
      }
      let pending = false;
      for (const st of streams) {
        if (st.done) continue;
        pending = true;
        post(st);
      }
      if (!pending) break;
      // The next moment the runner itself must act: a start time, a watchdog deadline, the end.
      const now0 = sim.now();
      let h = endNs;
      for (const st of streams) {
        if (st.done) continue;
        if (st.t.startNs > now0) h = Math.min(h, st.t.startNs);
        if (st.needsRecv && st.t.recvStartNs > now0) h = Math.min(h, st.t.recvStartNs);
        if (st.outstanding > 0 && !st.stalled && st.lastProgressNs >= 0) h = Math.min(h, st.lastProgressNs + st.watchdogNs);
      }
      sim.horizon = h;
      let got = pollAll();
      // A CQE may have landed while a later CQ of the round was polled (an empty poll runs
      // events): look once more before concluding that nothing happens until the horizon.
      if (got === 0 && sim.scheduler.nextTime() > h) got = pollAll();
      watchdog();
      // Nothing happens before then (ibv_poll_cq ran no event): move the clock there.
      if (got === 0 && sim.scheduler.nextTime() > h) sim.advance(Math.max(1, h - sim.now()));
      if (++iter % YIELD_EVERY === 0) {
        if (opts.progress) progress();
        await turn();
      }
    }
    // Quiet the fabric (stragglers, the last ACKs), then collect what completed meanwhile.
    sim.horizon = endNs;
    // Sampling ends with the traffic (a lone sampler would move the clock on).
    recorder?.endSampling();
    while (sim.scheduler.pending > 0 && sim.scheduler.nextTime() <= endNs) {
      sim.step();
      if (pollAll() > 0) continue;
    }
    pollAll();
    for (const st of streams) {
      if (st.retired < st.posted && !st.stalled) {
        const since = Math.max(0, st.lastProgressNs);
        finding(
          st,
          'outstanding',
          `${st.posted - st.retired} WRs still outstanding when the run ended (${endedBy}); last progress at ${ms(since)}${faultsOn(st, since, sim.now(), 'since')}`,
        );
      }
      if (st.posted < st.t.count && !st.failed && !st.stalled)
        finding(st, 'unposted', `only ${st.posted} of ${st.t.count} WRs were posted before the run ended`);
      const errs = Object.entries(st.errors);
      if (st.t.expect === 'error' && errs.length === 0) finding(st, 'expected-error', 'expected an error completion, got none');
      const clean = !st.failed && !st.stalled && st.retired === st.t.count;
      if (st.rc && clean && st.recvDone < st.recvCount)
        finding(st, 'recv-missing', `${st.recvCount - st.recvDone} of ${st.recvCount} receives never completed though every WR succeeded`);
      if (st.atomicBuf && st.rc && clean) {
        const v = new DataView(st.atomicBuf.bytes.buffer, st.atomicBuf.bytes.byteOffset, 8).getBigUint64(0, true);
        if (v !== BigInt(st.atomics)) finding(st, 'atomic-final', `the atomic word holds ${v} after ${st.atomics} atomics (each adds one)`, { op: 'atomic' });
      }
      const bufs: [string, RegBuf | null][] = [
        ['requester buffer', st.local],
        ['responder buffer', st.remote],
        ['receive buffers', st.recvBuf],
        ['atomic word', st.atomicBuf],
      ];
      for (const [what, b] of bufs) {
        if (!b) continue;
        const bad = guardDamage(b);
        if (bad.length > 0) finding(st, 'guard', `bytes outside the ${what}'s MR changed, at offsets ${bad.join(', ')}`);
      }
    }
    findings.sort((x, y) => x.ns - y.ns);

    const qpStates: ScenarioResult['qpStates'] = {};
    for (const [name, p] of pairs) qpStates[name] = { a: qpStateOf(p.a.qp), b: qpStateOf(p.b.qp) };
    const counters: ScenarioResult['counters'] = {};
    for (const h of hosts.values()) counters[h.name] = readCounters(h);
    const faults: Record<string, string> = {};
    for (const l of sim.links) if (l.faults) faults[l.name] = l.faults.describe();
    const traffic = streams.map((st): TrafficSummary => {
      const naks: Record<string, number> = {};
      for (const e of st.tl.events) naks[e.kind] = (naks[e.kind] ?? 0) + 1;
      const span = st.firstPostNs !== null && st.lastOkNs !== null ? st.lastOkNs - st.firstPostNs : 0;
      return {
        qp: st.t.qp,
        from: st.t.from,
        op: st.t.op,
        size: st.t.size,
        count: st.t.count,
        posted: st.posted,
        ok: st.ok,
        errors: st.errors,
        retransmittedPackets: st.tl.retransmittedPackets,
        naks,
        firstPostNs: st.firstPostNs,
        lastCompletionNs: st.lastOkNs,
        gbps: span > 0 ? (st.okBytes * 8) / span : null,
        receives: st.recvDone,
        stalled: st.stalled,
      };
    });
    const flows = streams.map(
      (st): FlowRecord => ({
        src: st.req.dev.name,
        dst: st.resp.dev.name,
        qp: st.req.qp.qp_num,
        name: st.t.qp,
        bytes: st.okBytes,
        startNs: st.firstPostNs,
        finishNs: st.lastOkNs,
        fctNs: st.firstPostNs !== null && st.lastOkNs !== null && st.ok === st.t.count ? st.lastOkNs - st.firstPostNs : null,
      }),
    );
    recorder?.stop();
    const simStats = sim.stats();
    let packetHops = 0;
    for (const l of Object.values(simStats.links)) packetHops += l.aToB.framesDelivered + l.bToA.framesDelivered;
    const fabric: FabricResult | null =
      recorder === null
        ? null
        : {
            pfc: recorder.pfc,
            series: recorder.series,
            switches: Object.fromEntries(
              sim.switches.map((w) => [
                w.name,
                Object.fromEntries(
                  Array.from({ length: w.sw.portCount }, (_, p) => [
                    String(p + 1),
                    { ...w.sw.stats(p), queueBytesAtEnd: w.sw.queueBytes(p), peer: w.peers[p] ?? null },
                  ]),
                ),
              ]),
            ),
          };
    if (fabric !== null) {
      const more = [...losslessFindings(s, fabric, counters, sim.now()), ...dcqcnFindings(s, ccEvents, sim.now())];
      for (const f of more) verify.push(`${f.qp}: ${f.detail}`);
      findings.push(...more);
      findings.sort((x, y) => x.ns - y.ns);
    }
    const wallEnd = process.hrtime.bigint();
    const wallNs = Number(wallEnd - wall0);
    const trafficWallNs = Number(wallEnd - traffic0);
    const cpu = process.cpuUsage(cpu0);
    const trafficCpuNs = (cpu.user + cpu.system) * 1000;
    const result: ScenarioResult = {
      scenario: s.name,
      seed: s.seed,
      endedBy,
      endNs: sim.now(),
      eventsRun: sim.eventsRun,
      wallMs: wallNs / 1e6,
      traffic,
      timeline: { qps: timeline.qps },
      counters,
      sim: simStats,
      faults,
      stalls,
      exhausted,
      consequences,
      qpStates,
      verify,
      findings,
      captures,
      flows,
      fabric,
      packetHops,
      wallNs,
      trafficWallNs,
      trafficCpuNs,
    };
    return result;
  } finally {
    for (const u of unobserve) u();
    try {
      closeHosts(hosts);
    } finally {
      for (const w of writers) sim.capturePort(s.capture[writers.indexOf(w)]!, null);
      for (const w of writers) w.close();
      for (const [port, parts] of chunks) captures[port] = concat(parts);
      if (currentModel() === sim) await stopModel();
    }
  }
}

function buildWr(st: Stream, i: number, p: WrPlan, slotOff: number): ibv_send_wr {
  const lAddr = st.local.mr.addr + BigInt(slotOff);
  const slotEnd = slotOff + st.slot;
  const flags = (p.signaled ? IBV_SEND_SIGNALED : 0) | (p.inline ? IBV_SEND_INLINE : 0);
  const wr: ibv_send_wr = { wr_id: BigInt(i), next: null, sg_list: [], num_sge: 0, opcode: IBV_WR_RDMA_WRITE, send_flags: flags };
  if (st.resp.srq) wr.qp_type = { xrc: { remote_srqn: st.resp.srqNum } };
  const sge = (len: number) => {
    wr.sg_list = len > 0 ? [{ addr: lAddr, length: len, lkey: st.local.mr.lkey }] : [];
    wr.num_sge = wr.sg_list.length;
  };
  const rAddr = st.remote.mr.addr + BigInt(slotOff);
  // The runner plays both hosts: it sets the responder's memory for a WR before posting it.
  switch (p.op) {
    case 'write':
    case 'write_imm':
      st.local.bytes.set(st.data(i, p.size), slotOff);
      fillBytes(st.remote.bytes, filler(i), slotOff, slotEnd);
      sge(p.size);
      wr.opcode = p.op === 'write' ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_WRITE_WITH_IMM;
      if (p.op === 'write_imm') wr.imm_data = i;
      wr.wr = { rdma: { remote_addr: rAddr, rkey: st.remote.mr.rkey } };
      break;
    case 'read':
      st.remote.bytes.set(st.data(i, p.size), slotOff);
      fillBytes(st.local.bytes, filler(i), slotOff, slotEnd);
      sge(p.size);
      wr.opcode = IBV_WR_RDMA_READ;
      wr.wr = { rdma: { remote_addr: rAddr, rkey: st.remote.mr.rkey } };
      break;
    case 'send':
    case 'send_imm':
      st.local.bytes.set(st.data(i, p.size), slotOff);
      sge(p.size);
      wr.opcode = p.op === 'send' ? IBV_WR_SEND : IBV_WR_SEND_WITH_IMM;
      if (p.op === 'send_imm') wr.imm_data = i;
      if (st.ud) wr.wr = { ud: { ah: st.req.ah, remote_qpn: st.resp.qp.qp_num, remote_qkey: st.pair.spec.qkey } };
      break;
    case 'fetch_add':
    case 'cmp_swap': {
      fillBytes(st.local.bytes, filler(i), slotOff, slotEnd);
      sge(8);
      const a = BigInt(p.atomic);
      wr.opcode = p.op === 'fetch_add' ? IBV_WR_ATOMIC_FETCH_AND_ADD : IBV_WR_ATOMIC_CMP_AND_SWP;
      wr.wr = {
        atomic: {
          remote_addr: st.atomicBuf!.mr.addr,
          rkey: st.atomicBuf!.mr.rkey,
          compare_add: p.op === 'fetch_add' ? 1n : a,
          swap: p.op === 'fetch_add' ? 0n : a + 1n,
        },
      };
      break;
    }
  }
  return wr;
}

function readCounters(h: HostDev): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (let p = 1; p <= h.ports; p++) {
    const c = rnic_read_counters(h.ctx, p);
    out[String(p)] = Object.fromEntries(Object.entries(c).map(([k, v]) => [k, Number(v)]));
  }
  return out;
}

function concat(parts: Uint8Array[]): Uint8Array {
  const n = parts.reduce((s, p) => s + p.length, 0);
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** A short text summary of a result (what `rnic sim` prints). */
export function summarize(r: ScenarioResult): string {
  const lines: string[] = [];
  const us = (ns: number | null) => (ns === null ? '-' : `${(ns / 1000).toFixed(3)} µs`);
  lines.push(`scenario ${r.scenario}, seed ${r.seed}: ended (${r.endedBy}) at ${us(r.endNs)} virtual; ${r.eventsRun} events in ${r.wallMs.toFixed(0)} ms wall`);
  for (const t of r.traffic) {
    const errs = Object.entries(t.errors)
      .map(([k, v]) => `${v} ${k}`)
      .join(', ');
    const naks = Object.entries(t.naks)
      .map(([k, v]) => `${v} ${k}`)
      .join(', ');
    lines.push(
      `  ${t.qp} ${t.from === 'a' ? 'a→b' : 'b→a'} ${t.op} ${t.size} B × ${t.count}: ${t.ok} ok${errs ? `, ${errs}` : ''}${t.stalled ? ', STALLED' : ''}` +
        `; ${t.retransmittedPackets} packets retransmitted${naks ? ` (${naks})` : ''}` +
        `; first post ${us(t.firstPostNs)}, last completion ${us(t.lastCompletionNs)}${t.gbps !== null ? `, ${t.gbps.toFixed(2)} Gb/s` : ''}`,
    );
  }
  for (const [sw, ports] of Object.entries(r.fabric?.switches ?? {})) {
    let drops = 0;
    let marks = 0;
    let xoff = 0;
    let xon = 0;
    let hw = 0;
    for (const c of Object.values(ports)) {
      drops += c.droppedFrames;
      marks += c.ecnMarked;
      xoff += c.pauseSent;
      xon += c.resumeSent;
      hw = Math.max(hw, c.queueBytesHighWater);
    }
    lines.push(`  switch ${sw}: ${drops} dropped, ${marks} ECN-marked, ${xoff} XOFF / ${xon} XON sent, deepest queue ${hw} B`);
  }
  for (const [link, d] of Object.entries(r.faults))
    lines.push(
      `  faults on ${link}:\n${d
        .split('\n')
        .map((l) => `    ${l}`)
        .join('\n')}`,
    );
  for (const st of r.stalls)
    lines.push(`  stalled: ${st.qp} (${st.from}) at ${us(st.atNs)}: state ${st.state}, ${st.outstanding} outstanding, last progress ${us(st.lastProgressNs)}`);
  for (const x of r.exhausted) lines.push(`  exhausted (explained, not a failure): ${x.qp} (${x.from}) WR ${x.wr} ${x.status} at ${us(x.ns)}: ${x.why}`);
  if (r.consequences.length > 0) lines.push(`  and ${r.consequences.length} finding(s) on those QPs that follow from it`);
  const interesting = [
    'rcvd_seq_err',
    'packet_seq_err',
    'out_of_seq_request',
    'out_of_sequence',
    'local_ack_timeout_err',
    'retry_exceeded_err',
    'rnr_nak_retry_err',
    'rcvd_rnr_err',
    'duplicate_request',
    'completer_retry_err',
    'rx_icrc_encapsulated',
  ];
  for (const [dev, ports] of Object.entries(r.counters)) {
    for (const [port, c] of Object.entries(ports)) {
      const shown = interesting.filter((k) => (c[k] ?? 0) !== 0).map((k) => `${k}=${c[k]}`);
      lines.push(`  ${dev}:${port} sent ${c.sent_pkts ?? 0} / received ${c.rcvd_pkts ?? 0} packets${shown.length ? `; ${shown.join(' ')}` : ''}`);
    }
  }
  lines.push(
    r.verify.length === 0
      ? '  checks: all passed'
      : `  checks: ${r.verify.length} failed\n${r.verify
          .slice(0, 20)
          .map((v) => `    ${v}`)
          .join('\n')}`,
  );
  return lines.join('\n');
}
