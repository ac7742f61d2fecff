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
import { currentModel, startSimModel, stopModel } from '../../boot.js';
import {
  IBV_SEND_INLINE, IBV_SEND_SIGNALED, IBV_WC_RECV, IBV_WC_RECV_RDMA_WITH_IMM, IBV_WC_SUCCESS, IBV_WC_WR_FLUSH_ERR,
  IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_RDMA_READ, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM,
  IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, ibv_poll_cq, ibv_post_recv, ibv_post_send, newWcArray, rnic_read_counters,
} from '../../driver/verbs/index.js';
import type { ibv_cq, ibv_send_wr, ibv_wc } from '../../driver/verbs/index.js';
import { LINKTYPE_ETHERNET, PcapWriter } from '../../wire/index.js';
import { localAckTimeoutNs, rnrTimerNs } from '../../pipeline/timer-tables.js';
import { Random } from './random.js';
import type { Scenario, ScenarioTraffic } from './scenario.js';
import { buffer, closeHosts, makePair, openHosts, qpStateOf, ScenarioRunError, type HostDev, type QpEnd, type QpPair, type RegBuf } from './scenario-setup.js';
import type { FrameObserver } from './sim-device.js';
import type { SimModel, SimStats } from './sim-model.js';
import { psnAddMasked, psnCount, type QpTimeline, TimelineRecorder, wcStatusName } from './timeline.js';

export interface RunScenarioOptions {
  /** Where a captured port's pcap goes (index 0 is the scenario's first capture); default: kept in memory, returned in `captures`. */
  captureWriter?: (port: string, index: number) => PcapWriter;
  /** Another frame observer for the run. */
  observe?: FrameObserver;
  /** Lines worth telling as they happen (a stall). */
  log?: (line: string) => void;
}

/** A QP the watchdog gave up on. */
export interface StallReport {
  readonly qp: string;
  readonly from: string;
  readonly atNs: number;
  /** Virtual time of its last completion (or of its first post). */
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
  /** Each QP's state at the end of the run, per end ('RTS', 'ERR', ...), as ibv_query_qp reports it. */
  readonly qpStates: Record<string, { a: string; b: string }>;
  /** Every check that failed; empty when all was well. */
  readonly verify: readonly string[];
  /** Pcap bytes per captured port (when no captureWriter was given). */
  readonly captures: Record<string, Uint8Array>;
}

const WC_BATCH = 32;
const YIELD_EVERY = 256;
const MIN_WATCHDOG_NS = 10_000_000;
const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

/** One traffic item while it runs. */
class Stream {
  readonly t: ScenarioTraffic;
  readonly pair: QpPair;
  readonly req: QpEnd;
  readonly resp: QpEnd;
  readonly tl: QpTimeline;
  readonly local: RegBuf;
  readonly remote: RegBuf;
  readonly slot: number;
  readonly pattern: Uint8Array;
  readonly watchdogNs: number;
  readonly rc: boolean;
  readonly needsRecv: boolean;
  posted = 0;
  /** WRs completed (their CQE or a later one's), in order. */
  retired = 0;
  ok = 0;
  readonly errors: Record<string, number> = {};
  failed = false;
  stalled = false;
  nextPsn: number;
  lastProgressNs = -1;
  firstPostNs: number | null = null;
  lastOkNs: number | null = null;
  recvPosted = 0;
  recvDone = 0;
  recvSlot: number;

  constructor(t: ScenarioTraffic, pair: QpPair, tl: QpTimeline, local: RegBuf, remote: RegBuf, slot: number, pattern: Uint8Array, watchdogNs: number) {
    this.t = t;
    this.pair = pair;
    this.req = t.from === 'a' ? pair.a : pair.b;
    this.resp = t.from === 'a' ? pair.b : pair.a;
    this.tl = tl;
    this.local = local;
    this.remote = remote;
    this.slot = slot;
    this.pattern = pattern;
    this.watchdogNs = watchdogNs;
    this.rc = pair.spec.type === 'RC';
    this.needsRecv = t.op === 'send' || t.op === 'send_imm' || t.op === 'write_imm';
    this.nextPsn = this.req.sqPsn;
    this.recvSlot = pair.spec.type === 'UD' ? slot + 40 : slot;
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
    return !this.needsRecv || !this.rc || this.failed || this.stalled || this.recvDone >= this.t.count;
  }

  /** Bytes of WR i's pattern. */
  data(i: number): Uint8Array {
    const off = i % 251;
    return this.pattern.subarray(off, off + this.t.size);
  }

  signaled(i: number): boolean {
    return (i + 1) % this.t.signalEvery === 0 || i === this.t.count - 1;
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  return Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.length), Buffer.from(b.buffer, b.byteOffset, b.length)) === 0;
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
    quirks: { ...s.quirks },
    seed: s.seed,
    timing: { ...s.timing },
    sim: { ...s.sim },
    links: s.links.map((l) => ({ name: l.name, linkRate: l.linkRate, propagationDelay: l.propagationDelay, queueLimit: l.queueLimit, faults: l.faults })),
  });
  const captures: Record<string, Uint8Array> = {};
  const chunks = new Map<string, Uint8Array[]>();
  const writers: PcapWriter[] = [];
  s.capture.forEach((port, i) => {
    let w: PcapWriter;
    if (opts.captureWriter) w = opts.captureWriter(port, i);
    else {
      const parts: Uint8Array[] = [];
      chunks.set(port, parts);
      w = new PcapWriter((c) => parts.push(c.slice()), { linktype: LINKTYPE_ETHERNET, nanosecond: true });
    }
    writers.push(w);
    sim.capturePort(port, w);
  });
  const timeline = new TimelineRecorder();
  const unobserve = [sim.observe(timeline.observe)];
  if (opts.observe) unobserve.push(sim.observe(opts.observe));
  const verify: string[] = [];
  const stalls: StallReport[] = [];
  const devIndex = new Map(s.devices.map((d, i) => [d.name, i]));
  const hosts = openHosts(s);
  const root = new Random(s.seed).fork('scenario');
  try {
    const pairs = new Map<string, QpPair>();
    for (const q of s.qps) pairs.set(q.name, makePair(hosts, q));
    const streams = s.traffic.map((t, i) => {
      const pair = pairs.get(t.qp)!;
      const req = t.from === 'a' ? pair.a : pair.b;
      const resp = t.from === 'a' ? pair.b : pair.a;
      const slot = Math.max(8, t.size);
      const ud = pair.spec.type === 'UD';
      const local = buffer(req.dev, slot * t.depth);
      const remoteSlots = t.op === 'fetch_add' || t.op === 'cmp_swap' ? 1 : Math.max(t.depth, t.recvDepth);
      const remote = buffer(resp.dev, (ud ? slot + 40 : slot) * remoteSlots);
      const rnd = root.fork(`traffic/${i}`);
      const pattern = new Uint8Array(t.size + 256);
      for (let k = 0; k < pattern.length; k++) pattern[k] = rnd.int(256);
      const tl = timeline.addQp({ qp: t.qp, from: t.from, device: req.dev.name, qpn: req.qp.qp_num, op: t.op }, devIndex.get(req.dev.name)!, resp.qp.qp_num);
      return new Stream(t, pair, tl, local, remote, slot, pattern, defaultWatchdog(s, pair.spec));
    });
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

    const post = (st: Stream): void => {
      const now = sim.now();
      const t = st.t;
      if (st.needsRecv && now >= t.recvStartNs) {
        while (st.recvPosted - st.recvDone < t.recvDepth && st.recvPosted < t.count) {
          const k = st.recvPosted;
          const off = (k % t.recvDepth) * st.recvSlot;
          const rc = ibv_post_recv(st.resp.qp, { wr_id: BigInt(k), next: null, sg_list: [{ addr: st.remote.mr.addr + BigInt(off), length: st.recvSlot, lkey: st.remote.mr.lkey }], num_sge: 1 }, {});
          if (rc !== 0) {
            verify.push(`${t.qp}: ibv_post_recv #${k} failed (${rc})`);
            break;
          }
          st.recvPosted++;
        }
      }
      if (st.failed || st.stalled || now < t.startNs) return;
      while (st.posted < t.count && st.outstanding < t.depth) {
        const i = st.posted;
        const slotOff = (i % t.depth) * st.slot;
        const wr = buildWr(st, i, slotOff);
        if (st.firstPostNs === null) {
          st.firstPostNs = now;
          st.lastProgressNs = now;
        }
        const npsn = psnCount(t.op, t.size, st.pair.spec.mtu, st.pair.spec.type === 'UD');
        timeline.posted(st.tl, i, t.op, t.size, st.signaled(i), st.nextPsn, psnAddMasked(st.nextPsn, npsn - 1), now);
        const rc = ibv_post_send(st.req.qp, wr, {});
        if (rc !== 0) {
          verify.push(`${t.qp}: ibv_post_send #${i} failed (${rc})`);
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
      const t = st.t;
      if (i < st.retired || i >= st.posted) {
        verify.push(`${t.qp}: completion for WR ${i} out of order or twice (next expected ${st.retired}, posted ${st.posted})`);
        return;
      }
      const status = wcStatusName(wc.status);
      // Everything before it completed without a CQE of its own (unsignaled, acknowledged in
      // order); after an error every WR gets its own (flush) CQE, so there is no gap then.
      for (let j = st.retired; j < i; j++) {
        if (!st.failed) retireOk(st, j, now, 'implied');
        else verify.push(`${t.qp}: WR ${j} got no completion before that of WR ${i} (${status})`);
      }
      if (wc.status === IBV_WC_SUCCESS) {
        retireOk(st, i, now, 'signaled');
      } else {
        timeline.completed(st.tl, i, now, status, 'signaled');
        st.errors[status] = (st.errors[status] ?? 0) + 1;
        st.failed = true;
        st.retired = i + 1;
      }
      st.lastProgressNs = now;
    };

    const retireOk = (st: Stream, j: number, now: number, how: 'signaled' | 'implied'): void => {
      timeline.completed(st.tl, j, now, 'IBV_WC_SUCCESS', how);
      st.retired = j + 1;
      st.ok++;
      st.lastOkNs = now;
      if (st.rc) checkData(st, j);
    };

    const checkData = (st: Stream, j: number): void => {
      const t = st.t;
      const slotOff = (j % t.depth) * st.slot;
      switch (t.op) {
        case 'write':
        case 'write_imm': {
          const got = st.remote.bytes.subarray(slotOff, slotOff + t.size);
          if (!sameBytes(got, st.data(j))) verify.push(`${t.qp}: WRITE ${j}: the responder's memory differs from what was written`);
          break;
        }
        case 'read': {
          const got = st.local.bytes.subarray(slotOff, slotOff + t.size);
          if (!sameBytes(got, st.data(j))) verify.push(`${t.qp}: READ ${j}: the local buffer differs from the remote data`);
          break;
        }
        case 'fetch_add':
        case 'cmp_swap': {
          const orig = new DataView(st.local.bytes.buffer, st.local.bytes.byteOffset + slotOff, 8).getBigUint64(0, true);
          if (orig !== BigInt(j)) verify.push(`${t.qp}: ${t.op} ${j} returned ${orig}, expected ${j} (each atomic executed exactly once, in order)`);
          break;
        }
        default:
      }
    };

    const onRecvWc = (st: Stream, wc: ibv_wc): void => {
      const k = Number(wc.wr_id);
      const t = st.t;
      if (wc.status !== IBV_WC_SUCCESS) {
        if (wc.status !== IBV_WC_WR_FLUSH_ERR) verify.push(`${t.qp}: receive ${k} completed with ${wcStatusName(wc.status)}`);
        st.recvDone++;
        return;
      }
      if (st.rc && k !== st.recvDone) verify.push(`${t.qp}: receive ${k} completed out of order (expected ${st.recvDone})`);
      st.recvDone++;
      if (!st.rc) return;
      if (t.op === 'write_imm') {
        if (wc.opcode !== IBV_WC_RECV_RDMA_WITH_IMM || wc.imm_data !== k) verify.push(`${t.qp}: WRITE with immediate ${k}: opcode ${wc.opcode}, imm ${wc.imm_data}`);
        return;
      }
      if (wc.opcode !== IBV_WC_RECV || wc.byte_len !== t.size) verify.push(`${t.qp}: receive ${k}: opcode ${wc.opcode}, ${wc.byte_len} bytes (expected ${t.size})`);
      const off = (k % t.recvDepth) * st.recvSlot;
      if (!sameBytes(st.remote.bytes.subarray(off, off + t.size), st.data(k))) verify.push(`${t.qp}: SEND ${k}: the received bytes differ from what was sent`);
      if (t.op === 'send_imm' && wc.imm_data !== k) verify.push(`${t.qp}: SEND with immediate ${k}: imm ${wc.imm_data}`);
    };

    const pollAll = (): number => {
      let n = 0;
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
          oldest: w ? { index: w.index, psnFirst: w.psnFirst, psnLast: w.psnLast, lastPacketNs: w.lastPacketNs, retransmissions: w.retransmissions.length } : null,
        };
        stalls.push(r);
        opts.log?.(`watchdog: ${st.t.qp} (${st.t.from}) made no progress for ${now - st.lastProgressNs} ns with ${r.outstanding} WRs outstanding; QP state ${r.state}`);
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
      const got = pollAll();
      watchdog();
      // Nothing happens before then (ibv_poll_cq ran no event): move the clock there.
      if (got === 0 && sim.scheduler.nextTime() > h) sim.advance(Math.max(1, h - sim.now()));
      if (++iter % YIELD_EVERY === 0) await turn();
    }
    // Quiet the fabric (stragglers, the last ACKs), then collect what completed meanwhile.
    sim.horizon = endNs;
    while (sim.scheduler.pending > 0 && sim.scheduler.nextTime() <= endNs) {
      sim.step();
      if (pollAll() > 0) continue;
    }
    pollAll();
    for (const st of streams) {
      if (st.retired < st.posted && !st.stalled) verify.push(`${st.t.qp}: ${st.posted - st.retired} WRs still outstanding when the run ended (${endedBy})`);
      if (st.posted < st.t.count && !st.failed && !st.stalled) verify.push(`${st.t.qp}: only ${st.posted} of ${st.t.count} WRs were posted before the run ended`);
      if (st.stalled) verify.push(`${st.t.qp}: stalled (watchdog)`);
      const errs = Object.entries(st.errors);
      if (st.t.expect === 'success' && errs.length > 0) verify.push(`${st.t.qp}: error completions: ${errs.map(([k, v]) => `${v} ${k}`).join(', ')}`);
      if (st.t.expect === 'error' && errs.length === 0) verify.push(`${st.t.qp}: expected an error completion, got none`);
    }

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
        gbps: span > 0 ? (st.ok * st.t.size * 8) / span : null,
        receives: st.recvDone,
        stalled: st.stalled,
      };
    });
    const result: ScenarioResult = {
      scenario: s.name,
      seed: s.seed,
      endedBy,
      endNs: sim.now(),
      eventsRun: sim.eventsRun,
      wallMs: Number(process.hrtime.bigint() - wall0) / 1e6,
      traffic,
      timeline: { qps: timeline.qps },
      counters,
      sim: sim.stats(),
      faults,
      stalls,
      qpStates,
      verify,
      captures,
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

function buildWr(st: Stream, i: number, slotOff: number): ibv_send_wr {
  const t = st.t;
  const lAddr = st.local.mr.addr + BigInt(slotOff);
  const flags = (st.signaled(i) ? IBV_SEND_SIGNALED : 0) | (t.inline ? IBV_SEND_INLINE : 0);
  const wr: ibv_send_wr = { wr_id: BigInt(i), next: null, sg_list: [], num_sge: 0, opcode: IBV_WR_RDMA_WRITE, send_flags: flags };
  const sge = (len: number) => {
    wr.sg_list = len > 0 ? [{ addr: lAddr, length: len, lkey: st.local.mr.lkey }] : [];
    wr.num_sge = wr.sg_list.length;
  };
  const rAddr = st.remote.mr.addr + BigInt(slotOff);
  switch (t.op) {
    case 'write':
    case 'write_imm':
      st.local.bytes.set(st.data(i), slotOff);
      sge(t.size);
      wr.opcode = t.op === 'write' ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_WRITE_WITH_IMM;
      if (t.op === 'write_imm') wr.imm_data = i;
      wr.wr = { rdma: { remote_addr: rAddr, rkey: st.remote.mr.rkey } };
      break;
    case 'read':
      // The responder's data for READ i (the runner plays both hosts).
      st.remote.bytes.set(st.data(i), slotOff);
      st.local.bytes.fill(0, slotOff, slotOff + t.size);
      sge(t.size);
      wr.opcode = IBV_WR_RDMA_READ;
      wr.wr = { rdma: { remote_addr: rAddr, rkey: st.remote.mr.rkey } };
      break;
    case 'send':
    case 'send_imm':
      st.local.bytes.set(st.data(i), slotOff);
      sge(t.size);
      wr.opcode = t.op === 'send' ? IBV_WR_SEND : IBV_WR_SEND_WITH_IMM;
      if (t.op === 'send_imm') wr.imm_data = i;
      if (st.pair.spec.type === 'UD') wr.wr = { ud: { ah: st.req.ah, remote_qpn: st.resp.qp.qp_num, remote_qkey: st.pair.spec.qkey } };
      break;
    case 'fetch_add':
    case 'cmp_swap':
      sge(8);
      wr.opcode = t.op === 'fetch_add' ? IBV_WR_ATOMIC_FETCH_AND_ADD : IBV_WR_ATOMIC_CMP_AND_SWP;
      wr.wr = {
        atomic: {
          remote_addr: st.remote.mr.addr,
          rkey: st.remote.mr.rkey,
          compare_add: t.op === 'fetch_add' ? 1n : BigInt(i),
          swap: t.op === 'fetch_add' ? 0n : BigInt(i + 1),
        },
      };
      break;
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
    const errs = Object.entries(t.errors).map(([k, v]) => `${v} ${k}`).join(', ');
    const naks = Object.entries(t.naks).map(([k, v]) => `${v} ${k}`).join(', ');
    lines.push(
      `  ${t.qp} ${t.from === 'a' ? 'a→b' : 'b→a'} ${t.op} ${t.size} B × ${t.count}: ${t.ok} ok${errs ? `, ${errs}` : ''}${t.stalled ? ', STALLED' : ''}` +
        `; ${t.retransmittedPackets} packets retransmitted${naks ? ` (${naks})` : ''}` +
        `; first post ${us(t.firstPostNs)}, last completion ${us(t.lastCompletionNs)}${t.gbps !== null ? `, ${t.gbps.toFixed(2)} Gb/s` : ''}`,
    );
  }
  for (const [link, d] of Object.entries(r.faults)) lines.push(`  faults on ${link}:\n${d.split('\n').map((l) => `    ${l}`).join('\n')}`);
  for (const st of r.stalls) lines.push(`  stalled: ${st.qp} (${st.from}) at ${us(st.atNs)}: state ${st.state}, ${st.outstanding} outstanding, last progress ${us(st.lastProgressNs)}`);
  const interesting = ['rcvd_seq_err', 'packet_seq_err', 'out_of_seq_request', 'out_of_sequence', 'local_ack_timeout_err', 'retry_exceeded_err', 'rnr_nak_retry_err', 'rcvd_rnr_err', 'duplicate_request', 'completer_retry_err', 'rx_icrc_encapsulated'];
  for (const [dev, ports] of Object.entries(r.counters)) {
    for (const [port, c] of Object.entries(ports)) {
      const shown = interesting.filter((k) => (c[k] ?? 0) !== 0).map((k) => `${k}=${c[k]}`);
      lines.push(`  ${dev}:${port} sent ${c.sent_pkts ?? 0} / received ${c.rcvd_pkts ?? 0} packets${shown.length ? `; ${shown.join(' ')}` : ''}`);
    }
  }
  lines.push(r.verify.length === 0 ? '  checks: all passed' : `  checks: ${r.verify.length} failed\n${r.verify.slice(0, 20).map((v) => `    ${v}`).join('\n')}`);
  return lines.join('\n');
}
