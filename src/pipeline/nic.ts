/**
 * One RNIC's pipeline, driven by whoever runs it: `poll()` services
 * doorbells, firmware commands, timers and the transmit schedule;
 * `receive()` takes a frame from a port. It does not know whether it runs
 * on a worker thread or inside the simulator: time comes from env.clock.
 */
import {
  IBV_QPS_ERR,
  IBV_QPS_INIT,
  IBV_QPS_RESET,
  IBV_QPS_RTS,
  IBV_QPS_SQD,
  IBV_QPT_RC,
  IBV_QPT_UC,
  IBV_QPT_UD,
  IBV_QPT_XRC_RECV,
  IBV_QPT_XRC_SEND,
  IBV_WC_RECV,
  IBV_WC_WR_FLUSH_ERR,
  IBV_EVENT_CQ_ERR,
} from '../device/abi/constants.js';
import { CQC, QPC, QpFlag } from '../device/contexts.js';
import { Ctr } from '../device/counters.js';
import { CqeFields, CqPush, cqArm, cqModerationExpired, cqPush } from '../device/cqe.js';
import { EQE_TYPE_COMPLETION, eqDoorbell, eqPush } from '../device/eqe.js';
import { commandPending, serviceCommandDoorbell } from '../device/mailbox.js';
import { sqDrainCheck } from './sq-drain.js';
import { rqAdvance, rqPeek, sqAdvance, sqPeek } from '../device/queues.js';
import { DbKind, drainDoorbells, takeSummary } from '../device/registers.js';
import { DecodeScratch, decodePacket, type DecodeOptions, LINKTYPE_ETHERNET, OPCODES, type ScratchPacket, Transport } from '../wire/index.js';

const RX_DECODE: DecodeOptions = Object.freeze({});
/** The runtime vouches that the frame is byte for byte as a model device built it: its ICRC and IP checksum checks would pass. */
const RX_DECODE_ICRC_KNOWN: DecodeOptions = Object.freeze({ verifyIcrc: false, verifyIpChecksum: false });
import { type CcParams, DEFAULT_CC_PARAMS, txPriority } from './cc-params.js';
import type { CcSample } from './cc/congestion-control.js';
import { ecnOf } from './cnp.js';
import { type CcObserver, Congestion } from './congestion.js';

export type { CcObserver } from './congestion.js';
import { completerReceive, completerTimeout } from './completer.js';
import type { NicCore } from './core.js';
import type { EthPort } from './eth-port.js';
import type { NicEnv } from './nic-env.js';
import { releaseFrame } from './packet-builder.js';
import { QpCtx } from './qp-ctx.js';
import { completeSend, requesterHasWork, requesterTransmit } from './requester.js';
import { responderReceive } from './responder.js';
import { responderTransmit } from './responses.js';
import { readRecvWqe, readSendWqe, SendWqe } from './work-requests.js';

/** Packets one QP may send before the scheduler moves to the next (fairness). */
const QP_BURST = 16;
/** The destination QPN of UD multicast (IBTA: 0xFFFFFF). */
const MULTICAST_QPN = 0xffffff;

const TRANSPORT_OF_QPT: Record<number, number> = {
  [IBV_QPT_RC]: Transport.RC,
  [IBV_QPT_UC]: Transport.UC,
  [IBV_QPT_UD]: Transport.UD,
  [IBV_QPT_XRC_SEND]: Transport.XRC,
  [IBV_QPT_XRC_RECV]: Transport.XRC,
};

export class Nic implements NicCore {
  readonly env: NicEnv;
  readonly cc: CcParams;
  private readonly qps = new Map<number, QpCtx>();
  /**
   * QPs whose local ACK or RNR timer may be running: all that serviceTimers
   * and nextDeadline look at, so a pass costs O(running timers), not
   * O(QPs ever used). Entries without a deadline leave lazily.
   */
  private readonly timed = new Set<QpCtx>();
  /** CQ moderation: cqn → when (ns) its held-back completion event is due. */
  private readonly modDue = new Map<number, number>();
  /** The next QpCtx's rank (creation order, the order of `qps`): timers due together fire in it. */
  private nextRank = 0;
  /** QPs with something to send, in round-robin order. */
  private readonly ready: QpCtx[] = [];
  /**
   * QPs with something to send on a priority the far end has paused (PFC):
   * off the schedule until the pause ends (XON or its time), so a paused
   * priority costs no work and never holds up the others.
   */
  private parked: QpCtx[] = [];
  /** ECN → CNP, CNP → DCQCN, the flows' timers and pacing waits. */
  private readonly congestion: Congestion;
  /** Sorts QPs in creation order (timers due together fire in it). */
  private readonly byRank = (qs: QpCtx[]): void => {
    qs.sort((x, y) => x.rank - y.rank);
  };
  private readonly scheduleQp = (q: QpCtx): void => this.schedule(q);
  private readonly pairs = new Int32Array(1024);
  /** QPNs taken from the firmware's change list after a command. */
  private readonly changed: Int32Array;
  private readonly scratch = new CqeFields();
  private readonly ipIds: number[];
  /** The receive parser's reused decode objects (see decodePacket). */
  private readonly rxScratch = new DecodeScratch();
  private readonly lanes: Float64Array[];

  /** Device clock ticks per nanosecond: hcaCoreClock (kHz) / 10^6. */
  private readonly tickPerNs: number;

  constructor(env: NicEnv) {
    this.env = env;
    this.cc = env.cc ?? DEFAULT_CC_PARAMS;
    this.congestion = new Congestion(this, this.cc);
    this.tickPerNs = env.caps.device.hcaCoreClock / 1e6;
    this.changed = new Int32Array(env.fw.qpChanges.capacity);
    this.ipIds = env.ports.map(() => 0);
    this.lanes = env.ports.map((_, i) => env.counters.lane(i + 1, 0));
  }

  // ---- NicCore ---------------------------------------------------------

  ctr(portNum: number): Float64Array {
    return this.lanes[portNum - 1] ?? this.lanes[0]!;
  }

  cqe(): CqeFields {
    return this.scratch.reset();
  }

  complete(cqn: number, f: CqeFields): void {
    const { mem, tables: t, bar } = this.env;
    const cq = t.cqByNumber(cqn);
    if (cq < 0) return;
    f.timestamp = this.deviceTicks();
    const r = cqPush(mem, t, cq, f);
    const eqn = CQC.f.eqn.get(t.dv, cq);
    if (r & CqPush.HELD) this.holdEvent(cqn, cq);
    else if (r & CqPush.EVENT) this.modDue.delete(cqn);
    if (r & CqPush.EVENT) eqPush(mem, t, bar, eqn, EQE_TYPE_COMPLETION, cqn, 0, f.timestamp);
    if (r & CqPush.OVERFLOW) eqPush(mem, t, bar, eqn, IBV_EVENT_CQ_ERR, cqn, 0, f.timestamp);
  }

  /**
   * A UD packet to QPN 0xFFFFFF (received, or looped back from this
   * device's own transmit): a copy to every UD QP attached to the
   * destination GID's group (the IPv4 destination as ::ffff:a.b.c.d, or the
   * IPv6 / GRH destination), each with its own Q_Key and receive queue.
   */
  private receiveMulticast(p: ScratchPacket, frame: Uint8Array, ctr: Float64Array, looped = false): void {
    if ((p.bth.pkey & 0x7fff) !== 0x7fff) {
      ctr[Ctr.BAD_PKEY_CNTR]!++;
      return;
    }
    const fw = this.env.fw;
    let members: ReadonlySet<number> | undefined;
    if (p.ipv4) {
      const g = this.mgid;
      g.set(p.ipv4.dst, 12);
      members = fw.mcastMembers(g, 0);
    } else {
      const dst = p.ipv6?.dst ?? p.grh?.dgid;
      if (dst) members = fw.mcastMembers(dst, 0);
    }
    if (!members || members.size === 0) {
      // A looped-back copy with no member here is not a drop: the message went out.
      if (!looped) ctr[Ctr.RX_UNKNOWN_QP]!++;
      return;
    }
    const t = this.env.tables;
    ctr[Ctr.RCVD_PKTS]!++;
    for (const qpn of members) {
      const off = t.qpByNumber(qpn);
      const s = off >= 0 ? this.qp(qpn) : undefined;
      const state = off >= 0 ? t.qpState(off) : IBV_QPS_RESET;
      if (!s || state === IBV_QPS_RESET || state === IBV_QPS_INIT || state === IBV_QPS_ERR) continue;
      responderReceive(this, s.q, s.off, p, frame);
    }
  }
  /** ::ffff:0.0.0.0, the IPv4 multicast group's GID is written into its last 4 bytes. */
  private readonly mgid = Uint8Array.of(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 0);

  /** A CQ moderation period starts at the first CQE whose event it holds back. */
  private holdEvent(cqn: number, cq: number): void {
    const period = CQC.f.modPeriod.get(this.env.tables.dv, cq);
    if (period > 0 && !this.modDue.has(cqn)) this.modDue.set(cqn, this.env.clock.now() + period * 1000);
  }

  /** Completion events whose moderation period ran out. */
  private serviceModeration(now: number): number {
    let work = 0;
    const t = this.env.tables;
    for (const [cqn, due] of this.modDue) {
      if (due > now) continue;
      this.modDue.delete(cqn);
      const cq = t.cqByNumber(cqn);
      if (cq >= 0 && cqModerationExpired(t, cq)) {
        eqPush(this.env.mem, t, this.env.bar, CQC.f.eqn.get(t.dv, cq), EQE_TYPE_COMPLETION, cqn, 0, this.deviceTicks());
        work++;
      }
    }
    return work;
  }

  /** The free-running device clock (hca_core_clock kHz), read from the nanosecond clock the NIC is handed. */
  deviceTicks(): number {
    const ns = this.env.clock.now();
    return Math.floor(this.tickPerNs === 1 ? ns : ns * this.tickPerNs);
  }

  asyncEvent(cqn: number, type: number, resource: number): void {
    const { mem, tables: t, bar } = this.env;
    const cq = t.cqByNumber(cqn);
    if (cq < 0) return;
    eqPush(mem, t, bar, CQC.f.eqn.get(t.dv, cq), type, resource, 0, this.deviceTicks());
  }

  fail(q: QpCtx): void {
    q.sqError = true;
    const qp = this.qpOff(q);
    if (qp >= 0) this.env.tables.qpSetError(qp);
    this.schedule(q);
  }

  transmit(portNum: number, frame: Uint8Array, priority = 0, spacingPs = -1): void {
    this.txBytes += frame.length;
    const ctr = this.ctr(portNum);
    ctr[Ctr.SENT_PKTS]!++;
    ctr[Ctr.PORT_XMIT_PACKETS]!++;
    // IB PortXmitData counts up to the VCRC (IBTA 16.1.3.5): an IB packet's words are its bytes less 2, over 4.
    ctr[Ctr.PORT_XMIT_DATA]! += this.port(portNum).ib === null ? frame.length / 4 : (frame.length - 2) / 4;
    // A group address (I/G bit) with groups joined here: maybe a message for members on this device too.
    if (frame[0]! & 1 && this.env.fw.mcast.size > 0 && this.port(portNum).ib === null) this.loopMulticast(portNum, frame);
    if (!this.port(portNum).transmitOwned(frame, priority, spacingPs)) releaseFrame(frame);
  }

  /**
   * Multicast loopback: a UD message this device sends to a group is also
   * delivered to the group's members on this device, as an HCA does (mlx5;
   * rxe does not loop it back), unless the sending QP was created with
   * IBV_QP_CREATE_BLOCK_SELF_MCAST_LB (the DETH's source QP). It runs
   * before the frame leaves, while it is still ours, on its own decode
   * scratch (a receive may be in progress in rxScratch).
   */
  private loopMulticast(portNum: number, frame: Uint8Array): void {
    const d = decodePacket(frame, LINKTYPE_ETHERNET, RX_DECODE_ICRC_KNOWN, this.loopScratch);
    if (!d.ok) return;
    const p = this.loopScratch.packet; // = d.packet: an Ethernet decode fills the scratch it is given
    if (p.bth.destQp !== MULTICAST_QPN || OPCODES[p.bth.opcode]!.transport !== Transport.UD) return;
    const t = this.env.tables;
    const sender = p.deth ? t.qpByNumber(p.deth.srcQp) : -1;
    if (sender >= 0 && QPC.f.flags.get(t.dv, sender) & QpFlag.BLOCK_SELF_MCAST_LB) return;
    this.receiveMulticast(p, frame, this.ctr(portNum), true);
  }
  private readonly loopScratch = new DecodeScratch();

  port(portNum: number): EthPort {
    return this.env.ports[portNum - 1] ?? this.env.ports[0]!;
  }

  nextIpId(portNum: number): number {
    const i = portNum - 1;
    const v = this.ipIds[i]!;
    this.ipIds[i] = (v + 1) & 0xffff;
    return v;
  }

  schedule(q: QpCtx): void {
    if (!q.scheduled) {
      q.scheduled = true;
      this.ready.push(q);
    }
  }

  qpOff(q: QpCtx): number {
    return this.env.tables.qpByNumber(q.qpn);
  }

  // ---- QP state ----------------------------------------------------------

  /** The pipeline state of QP `qpn` with fresh attributes, or null if the QP does not exist. */
  private qp(qpn: number): { q: QpCtx; off: number } | null {
    const off = this.env.tables.qpByNumber(qpn);
    if (off < 0) {
      this.dropQp(qpn);
      return null;
    }
    return { q: this.qpAt(qpn, off), off };
  }

  /** Bytes of every frame transmitted so far (what bounds a pass's rounds). */
  private txBytes = 0;

  private lastQpn = -1;
  private lastQp: QpCtx | undefined = undefined;

  /** `qp` for a QP whose context slot `off` the caller has just looked up (a received packet's: no second lookup, no object). */
  private qpAt(qpn: number, off: number): QpCtx {
    const t = this.env.tables;
    // The last QP looked up, kept: a stream's packets name one QP (a Map lookup fewer per packet).
    let q = qpn === this.lastQpn ? this.lastQp : this.qps.get(qpn);
    if (!q) {
      this.qps.set(qpn, (q = new QpCtx(qpn)));
      q.rank = this.nextRank++;
    }
    this.lastQpn = qpn;
    this.lastQp = q;
    // UD has no path MTU attribute: its messages are bounded by the port's MTU (rxe get_mtu).
    if (q.refresh(t, off) && q.qpType === IBV_QPT_UD) q.mtu = this.env.caps.ports[q.portNum - 1]?.activeMtu ?? q.mtu;
    this.handleFlags(q, off);
    if (q.av !== null && q.qpType !== IBV_QPT_UD) q.prio = txPriority(q.av.sl, q.av.trafficClass, this.cc.trust);
    return q;
  }

  /** Forget the private state of a destroyed QP. */
  private dropQp(qpn: number): void {
    const q = this.qps.get(qpn);
    if (!q) return;
    this.qps.delete(qpn);
    if (qpn === this.lastQpn) {
      this.lastQpn = -1;
      this.lastQp = undefined;
    }
    this.timed.delete(q);
    this.congestion.forget(q);
  }

  /** After a stage ran for `q`: track it if it left a timer running. */
  private noteTimers(q: QpCtx): void {
    if (q.ackDeadline !== Infinity || q.rnrUntil !== 0) this.timed.add(q);
  }

  /** Acts on RESET / ERR requested by the firmware (or by a stage via fail()). */
  private handleFlags(q: QpCtx, off: number): void {
    const t = this.env.tables;
    const flags = t.qpFlags(off);
    if (flags & QpFlag.RESET_PENDING) {
      q.clearTransport();
      q.seq = -1;
      q.refresh(t, off);
      t.qpClearFlags(off, QpFlag.RESET_PENDING);
    }
    if (flags & QpFlag.FLUSH_PENDING) {
      t.qpClearFlags(off, QpFlag.FLUSH_PENDING);
      this.flush(q, off);
    }
    if (flags & QpFlag.SQ_DRAINING) sqDrainCheck(this, q, off);
  }

  /**
   * The QP is in ERR: every outstanding and newly posted WQE completes with
   * WR_FLUSH_ERR, signaled or not (IBTA 10.7.3.1), in order.
   */
  private flush(q: QpCtx, off: number): void {
    const { mem, tables: t } = this.env;
    q.sqError = true;
    const ctr = this.ctr(q.portNum);
    for (const w of q.window.splice(0)) {
      completeSend(this, q, w, IBV_WC_WR_FLUSH_ERR);
      ctr[Ctr.REQ_CQE_FLUSH_ERROR]!++;
    }
    q.txIndex = 0;
    q.rdAtomicOut = 0;
    q.ackDeadline = Infinity;
    // The NAK that reports the error still goes out (IBTA 9.9.3: NAK, then error), and so do the
    // responses queued before it: they answer requests before the failed one, which the responder
    // executed in PSN order (rxe sends a READ's responses before it handles the next request).
    // Without them the requester blames the NAK on the READ ahead of the failed WR. Nothing after.
    q.responses.length = q.responses.findLastIndex((r) => r.kind === 'nak') + 1;
    if (q.responses.length > 0) this.schedule(q);
    for (let addr = sqPeek(mem, t, off); addr >= 0; addr = sqPeek(mem, t, off)) {
      const counter = sqAdvance(t, off);
      const w = readSendWqe(mem, addr - mem.baseNum, q.qpType, counter, 255, 1 << 16) ?? new SendWqe();
      completeSend(this, q, w, IBV_WC_WR_FLUSH_ERR);
      ctr[Ctr.REQ_CQE_FLUSH_ERROR]!++;
    }
    if (q.recv) {
      this.flushRecv(q, q.recv.wrIdLo, q.recv.wrIdHi, q.recv.counter);
      q.recv = null;
    }
    if (!q.hasSrq) {
      for (let addr = rqPeek(mem, t, off); addr >= 0; addr = rqPeek(mem, t, off)) {
        const counter = rqAdvance(t, off);
        const w = readRecvWqe(mem, addr, counter, 255);
        this.flushRecv(q, w?.wrIdLo ?? 0, w?.wrIdHi ?? 0, counter);
      }
    }
  }

  private flushRecv(q: QpCtx, lo: number, hi: number, counter: number): void {
    const f = this.cqe();
    f.wrIdLo = lo;
    f.wrIdHi = hi;
    f.status = IBV_WC_WR_FLUSH_ERR;
    f.opcode = IBV_WC_RECV;
    f.qpNum = q.qpn;
    // An XRC receive QP's WQE came from the SRQ its message named: the driver frees it there.
    f.srqn = q.qpType === IBV_QPT_XRC_RECV ? q.srqn : 0;
    f.wqeCounter = counter & 0xffff;
    this.ctr(q.portNum)[Ctr.RESP_CQE_FLUSH_ERROR]!++;
    this.complete(q.recvCqn, f);
  }

  // ---- the loop ---------------------------------------------------------

  /**
   * One pass: firmware commands, doorbells, timers, then up to `budget`
   * packets from the transmit schedule in at most `rounds` rounds of it
   * (each QP on the schedule sends up to QP_BURST packets per round), a
   * round after the first only while the pass has sent fewer than
   * `roundBytes` bytes. Returns the amount of work done (0 = idle). The
   * simulator runs one round per pass (its event timing is built on it);
   * the realtime runtime runs more, so a burst of small posts leaves in one
   * pass (runtime/device-host.ts PASS_ROUNDS).
   */
  poll(budget = 256, rounds = 1, roundBytes = 0): number {
    const now = this.env.clock.now();
    const owed = this.ready.length > 0 && commandPending(this.env.fw, this.env.bar) ? this.sendOwedResponses(budget, now) : 0;
    let work = owed + this.serviceDoorbells();
    if (this.parked.length > 0) this.unpark(now);
    work += this.serviceTimers(now);
    work += this.transmitScheduled(budget - owed, now, rounds, roundBytes);
    return work;
  }

  /**
   * Before a command runs: the ACKs (and READ and atomic responses) owed for
   * requests already executed go out, so that a destroy or a modify to
   * RESET or ERR the driver rings after reading the completion cannot take
   * them away. rxe sends the ACK in the task that completes the receive, and
   * a destroy waits for that task; here the driver may run between the
   * receive and the transmit of a pass (another thread, or one preempted).
   * The QPs stay on the schedule for their requester side.
   */
  private sendOwedResponses(budget: number, now: number): number {
    let sent = 0;
    for (const q of this.ready) {
      if (sent >= budget) break;
      if (q.responses.length === 0) continue;
      if (this.paused(q, now)) continue;
      const s = this.qp(q.qpn);
      if (s) sent += responderTransmit(this, s.q, budget - sent);
    }
    return sent;
  }

  private serviceDoorbells(): number {
    const { fw, bar, tables: t } = this.env;
    let work = 0;
    if (serviceCommandDoorbell(fw, bar)) {
      work++;
      this.afterCommand();
    }
    const kinds = takeSummary(bar);
    if (kinds === 0) return work;
    const pairs = this.pairs;
    // Sends posted: schedule the QP. Receives posted: the responder finds them
    // when a message comes. Either posted to a QP in ERR: flushed at once.
    if (kinds & (1 << DbKind.SQ)) work += this.qpDoorbells(DbKind.SQ, true);
    if (kinds & (1 << DbKind.RQ)) work += this.qpDoorbells(DbKind.RQ, false);
    if (kinds & (1 << DbKind.SRQ)) work += drainDoorbells(bar, DbKind.SRQ, pairs);
    if (kinds & (1 << DbKind.CQ)) {
      const n = drainDoorbells(bar, DbKind.CQ, pairs);
      for (let i = 0; i < n; i++) {
        const cqn = pairs[2 * i]!;
        const cq = t.cqByNumber(cqn);
        if (cq >= 0 && cqArm(t, cq, pairs[2 * i + 1]!)) {
          eqPush(this.env.mem, t, bar, CQC.f.eqn.get(t.dv, cq), EQE_TYPE_COMPLETION, cqn, 0, this.deviceTicks());
        }
      }
      work += n;
    }
    if (kinds & (1 << DbKind.EQ)) {
      const n = drainDoorbells(bar, DbKind.EQ, pairs);
      for (let i = 0; i < n; i++) eqDoorbell(t, bar, pairs[2 * i]!, pairs[2 * i + 1]!);
      work += n;
    }
    return work;
  }

  /**
   * Drains SQ or RQ doorbells. A full drain buffer leaves the rest pending
   * with the summary bit set again, for the next pass.
   */
  private qpDoorbells(kind: DbKind.SQ | DbKind.RQ, isSend: boolean): number {
    const t = this.env.tables;
    const pairs = this.pairs;
    const n = drainDoorbells(this.env.bar, kind, pairs);
    for (let i = 0; i < n; i++) {
      const s = this.qp(pairs[2 * i]!);
      if (!s) continue;
      if (t.qpState(s.off) === IBV_QPS_ERR) {
        // rxe 6.1 leaves a receive posted in ERR in its queue (profiles.ts flushRecvPostedInErr).
        if (isSend || this.env.profile.flushRecvPostedInErr) this.flush(s.q, s.off);
      } else if (isSend) this.schedule(s.q);
    }
    return n;
  }

  /**
   * After a command: act on the QPs it changed (the firmware's change list,
   * QpChangeList), not on every QP slot: a create or modify costs the same
   * at 100 QPs as at 100,000.
   */
  private afterCommand(): void {
    const n = this.env.fw.qpChanges.take(this.changed);
    if (n < 0) {
      this.scanAllQps();
      return;
    }
    for (let i = 0; i < n; i++) this.qpChanged(this.changed[i]!);
  }

  /** QP `qpn` was created, modified or destroyed by a command. */
  private qpChanged(qpn: number): void {
    const t = this.env.tables;
    const off = t.qpByNumber(qpn);
    const q = this.qps.get(qpn);
    if (off < 0) {
      // Destroyed: its private state goes now (a later QP with this number starts fresh).
      if (q) this.dropQp(qpn);
      return;
    }
    const flags = t.qpFlags(off);
    if (!q && (flags & (QpFlag.RESET_PENDING | QpFlag.FLUSH_PENDING)) === QpFlag.RESET_PENDING) {
      // Nothing cached to drop: acknowledge the reset without allocating pipeline state.
      t.qpClearFlags(off, QpFlag.RESET_PENDING);
    } else if (flags & (QpFlag.RESET_PENDING | QpFlag.FLUSH_PENDING | QpFlag.SQ_DRAINING)) {
      this.qp(qpn);
    }
    const state = t.qpState(off);
    if (q && state === IBV_QPS_RESET) q.clearTransport();
    if (q && state === IBV_QPS_RTS) {
      // SQD → RTS: what was posted during the drain is fetched now (its doorbells were rung in SQD).
      q.draining = false;
      this.schedule(q);
    }
  }

  /** The change list overflowed: look at every QP (bounded fallback, as before the list existed). */
  private scanAllQps(): void {
    const t = this.env.tables;
    for (let qpn = 2; qpn < t.qpCount; qpn++) {
      const off = t.qpOff(qpn);
      if (t.qpFlags(off) & (QpFlag.RESET_PENDING | QpFlag.FLUSH_PENDING)) this.qp(qpn);
    }
    for (const [qpn, q] of this.qps) {
      const off = t.qpByNumber(qpn);
      if (off < 0) this.dropQp(qpn);
      else if (t.qpState(off) === IBV_QPS_RESET) q.clearTransport();
    }
  }

  private serviceTimers(now: number): number {
    let work = this.congestion.service(now, this.byRank, this.scheduleQp);
    if (this.modDue.size !== 0) work += this.serviceModeration(now);
    if (this.timed.size === 0) return work;
    let due: QpCtx[] | null = null;
    for (const q of this.timed) {
      if (q.ackDeadline <= now || (q.rnrUntil !== 0 && q.rnrUntil <= now)) (due ??= []).push(q);
      else if (q.ackDeadline === Infinity && q.rnrUntil === 0) this.timed.delete(q);
    }
    if (due === null) return work;
    if (due.length > 1) due.sort((x, y) => x.rank - y.rank);
    for (const q of due) {
      if (q.ackDeadline <= now) {
        const s = this.qp(q.qpn);
        if (s) completerTimeout(this, s.q, now);
        work++;
      }
      if (q.rnrUntil !== 0 && q.rnrUntil <= now) {
        q.rnrUntil = 0;
        this.schedule(q);
        work++;
      }
    }
    return work;
  }

  /** Earliest timer deadline (ns), or Infinity: the runtime may sleep until then. A PFC pause's end is one. */
  nextDeadline(): number {
    let d = Infinity;
    for (const q of this.parked) {
      const r = this.port(q.portNum).pause.resumeNs(q.prio);
      if (r < d) d = r;
    }
    d = this.congestion.nextDeadline(d);
    // Called after every received frame: an empty Map makes no iterator.
    if (this.modDue.size > 0) for (const due of this.modDue.values()) if (due < d) d = due;
    for (const q of this.timed) {
      if (q.ackDeadline < d) d = q.ackDeadline;
      if (q.rnrUntil !== 0 && q.rnrUntil < d) d = q.rnrUntil;
    }
    return d;
  }

  /** True while some QP has packets waiting to go out. */
  busy(): boolean {
    return this.ready.length > 0;
  }

  /**
   * Rounds of the schedule until `budget` packets are sent, `rounds` rounds
   * have run, a round sends nothing, or (after the first) `roundBytes` bytes
   * have gone: large packets keep a pass's frames few enough to stay in cache.
   */
  private transmitScheduled(budget: number, now: number, rounds: number, roundBytes: number): number {
    let sent = 0;
    const bytes0 = this.txBytes;
    for (let r = 0; r < rounds && sent < budget && this.ready.length > 0; r++) {
      if (r > 0 && this.txBytes - bytes0 >= roundBytes) break;
      const n = this.transmitRound(budget - sent, now);
      if (n === 0) break;
      sent += n;
    }
    return sent;
  }

  /** One round: each QP on the schedule when it starts sends up to QP_BURST packets, while `budget` lasts. */
  private transmitRound(budget: number, now: number): number {
    let sent = 0;
    let left = this.ready.length;
    while (left-- > 0 && sent < budget) {
      const q = this.ready.shift()!;
      if (this.paused(q, now)) {
        // Still scheduled (schedule() leaves it alone); back on the list when the pause ends.
        q.parked = true;
        this.parked.push(q);
        continue;
      }
      q.scheduled = false;
      const s = this.qp(q.qpn);
      if (!s) continue;
      let n = responderTransmit(this, s.q, QP_BURST);
      if (n < QP_BURST) n += requesterTransmit(this, s.q, s.off, QP_BURST - n, now);
      this.noteTimers(s.q);
      sent += n;
      const blocked = n === 0;
      // Pacing: the engine's timer puts it back when its next packet may go.
      if (s.q.paceWait) this.congestion.paced(s.q);
      // Still work to do: back on the schedule, unless only waiting (timer, neighbour, credits, pacing).
      if (!blocked && (s.q.responses.length > 0 || (!s.q.paceWait && (requesterHasWork(s.q) || this.sqPending(s.off))))) this.schedule(s.q);
      else if (blocked && (s.q.responses.length > 0 || requesterHasWork(s.q)) && now >= s.q.rnrUntil && this.waitingForNeighbour(s.q)) this.schedule(s.q);
    }
    return sent;
  }

  /** The QP's priority is PFC-paused on its port now. */
  private paused(q: QpCtx, now: number): boolean {
    const pause = this.port(q.portNum).pause;
    return pause.pausedMask !== 0 && pause.isPaused(q.prio, now);
  }

  /** Puts the parked QPs whose priority flows again back on the schedule, in the order they were parked. */
  private unpark(now: number): void {
    const still: QpCtx[] = [];
    for (const q of this.parked) {
      if (this.port(q.portNum).pause.isPaused(q.prio, now)) still.push(q);
      else {
        q.parked = false;
        this.ready.push(q);
      }
    }
    this.parked = still;
  }

  private sqPending(off: number): boolean {
    return sqPeek(this.env.mem, this.env.tables, off) >= 0;
  }

  /** Blocked only until the port resolves the peer's MAC (ARP / ND): try again next pass. */
  private waitingForNeighbour(q: QpCtx): boolean {
    return q.qpType === IBV_QPT_UD || q.path === null || !q.path.resolved;
  }

  // ---- congestion control -------------------------------------------------

  /**
   * A CNP for QP `qpn`: the reaction point takes it when the QP exists (RC,
   * UC, UD or XRC send: a QP that sends requests) and its priority's
   * reaction point is on.
   */
  private cnpReceived(qpn: number): boolean {
    const t = this.env.tables;
    const off = t.qpByNumber(qpn);
    if (off < 0) return false;
    const type = QPC.f.qpType.get(t.dv, off);
    if (type !== IBV_QPT_RC && type !== IBV_QPT_UC && type !== IBV_QPT_UD && type !== IBV_QPT_XRC_SEND) return false;
    return this.congestion.reactionPoint(this.qp(qpn)!.q);
  }

  /** Sets (or with null clears) the observer of every QP's rate changes. Costs nothing unset. */
  setCcObserver(fn: CcObserver | null): void {
    this.congestion.setObserver(fn);
  }

  /** Every QP with a congestion-control flow: its state now (α brought up to date). */
  ccSnapshot(): { qpn: number; sample: CcSample }[] {
    return this.congestion.snapshot(this.qps);
  }

  // ---- receive -------------------------------------------------------------

  /**
   * A frame from port `portNum`'s cable. The frame belongs to the NIC from
   * here on. Every frame the port hands over and the pipeline does not use
   * is counted once, in rxe's order of checks (hdr_check, check_type_state,
   * check_keys): malformed → port_rcv_errors (and rx_icrc_encapsulated /
   * rx_unknown_opcode), CNP → rp_cnp_ignored, no such QP → rx_unknown_qp,
   * wrong transport → rx_qp_type_mismatch, wrong state → rx_qp_state_drop,
   * bad P_Key → bad_pkey_cntr. rcvd_pkts counts what passed them all.
   * `icrcKnownGood`: the runtime knows the frame is byte for byte what a
   * model device built (the simulator, over a link no fault can touch), so
   * the ICRC and IP checksum checks, whose results are then known, are skipped.
   */
  receive(portNum: number, frame: Uint8Array, icrcKnownGood = false): void {
    const port = this.port(portNum);
    if (port.receive(frame) !== 'rdma') return;
    const ctr = this.ctr(portNum);
    ctr[Ctr.PORT_RCV_PACKETS]!++;
    ctr[Ctr.PORT_RCV_DATA]! += port.ib === null ? frame.length / 4 : Math.max(0, frame.length - 2) / 4;
    // One decode per frame into the NIC's own scratch: nothing allocated but the payload view.
    // The stages below use the packet during this call only (they copy what they keep).
    const d = decodePacket(frame, port.linktype, icrcKnownGood ? RX_DECODE_ICRC_KNOWN : RX_DECODE, this.rxScratch);
    if (!d.ok) {
      ctr[Ctr.PORT_RCV_ERRORS]!++;
      if (d.error.code === 'WIRE_BAD_ICRC') ctr[Ctr.RX_ICRC_ENCAPSULATED]!++;
      else if (d.error.code === 'WIRE_UNKNOWN_OPCODE') ctr[Ctr.RX_UNKNOWN_OPCODE]!++;
      else if (d.error.code === 'WIRE_BAD_VCRC') ctr[Ctr.RX_VCRC_ERRORS]!++;
      return;
    }
    const p = this.rxScratch.packet; // = d.packet: a decode fills the scratch it is given
    // A native IB port takes the DLIDs of its LMC range (IBTA 7.11.1); the link layer drops the rest.
    const ib = port.ib;
    if (ib !== null && p.lrh!.dlid >>> ib.lmc !== ib.lid >>> ib.lmc) {
      ctr[Ctr.RX_DLID_MISMATCH]!++;
      return;
    }
    const info = OPCODES[p.bth.opcode]!;
    if (info.transport === Transport.CNP) {
      ctr[Ctr.RCVD_PKTS]!++;
      if (this.cnpReceived(p.bth.destQp)) ctr[Ctr.RP_CNP_HANDLED]!++;
      else ctr[Ctr.RP_CNP_IGNORED]!++;
      return;
    }
    const t = this.env.tables;
    if (p.bth.destQp === MULTICAST_QPN && info.transport === Transport.UD) {
      this.receiveMulticast(p, frame, ctr);
      return;
    }
    const off = t.qpByNumber(p.bth.destQp);
    if (off < 0) {
      ctr[Ctr.RX_UNKNOWN_QP]!++;
      return;
    }
    const qpType = QPC.f.qpType.get(t.dv, off);
    // An XRC send QP only initiates, an XRC receive QP only responds (IBTA 9.8 XRC_INI / XRC_TGT).
    if (TRANSPORT_OF_QPT[qpType] !== info.transport || (qpType === IBV_QPT_XRC_SEND && info.isRequest) || (qpType === IBV_QPT_XRC_RECV && !info.isRequest)) {
      ctr[Ctr.RX_QP_TYPE_MISMATCH]!++;
      return;
    }
    const state = t.qpState(off);
    if (info.isRequest ? state === IBV_QPS_RESET || state === IBV_QPS_INIT || state === IBV_QPS_ERR : state !== IBV_QPS_RTS && state !== IBV_QPS_SQD) {
      ctr[Ctr.RX_QP_STATE_DROP]!++;
      return;
    }
    if ((p.bth.pkey & 0x7fff) !== 0x7fff) {
      ctr[Ctr.BAD_PKEY_CNTR]!++;
      return;
    }
    ctr[Ctr.RCVD_PKTS]!++;
    const q = this.qpAt(p.bth.destQp, off);
    if (p.ipv4 !== null || p.ipv6 !== null) {
      if (ecnOf(p) === 3) this.congestion.notificationPoint(portNum, q, p);
    }
    if (info.isRequest) responderReceive(this, q, off, p, frame);
    else completerReceive(this, q, off, p, this.env.clock.now());
    this.noteTimers(q);
  }
}
