/**
 * An output-queued Ethernet switch for the simulator: frames are stored
 * (the link delivers a frame once its last bit has arrived) and forwarded
 * by destination IP to an egress port, ECMP over equal-cost ports by a hash
 * of the 5-tuple; they wait in the egress port's queue for their priority
 * (from the VLAN PCP or the DSCP) in one shared buffer (./mmu.ts), and
 * leave when the line pulls them (SimLink pull mode), at which instant the
 * egress queue is RED-marked with CE (ECT packets only) and the ingress
 * accounting released.
 *
 * PFC (IEEE 802.1Qbb): when an ingress (port, priority) crosses its XOFF
 * threshold the switch sends a real PFC frame out of that port with
 * `pauseQuanta`, refreshed at half that time while the condition lasts,
 * and an XON (quanta 0) once it drains. It obeys the PFC frames it
 * receives: a paused priority of an egress port sends nothing for quanta ×
 * 512 bit times at the port's rate, or until XON. Pause storms and
 * deadlocks can therefore happen, as in a real fabric, and show in the
 * counters and the PFC log.
 *
 * Addresses: the switch knows each host's IP and MAC (the topology tells
 * it) and answers ARP requests and IPv6 neighbour solicitations for them
 * itself (ARP suppression, as EVPN fabrics do), so no broadcast is ever
 * flooded; data frames keep their MACs. A source IP the switch has no
 * route for is learnt on the port it came in on. RoCE v1 (no IP header)
 * and IPv6 to a link-local address (fe80::/10, which no route covers) are
 * bridged by destination MAC: a host's, or one learnt from the source MACs
 * of such frames.
 *
 * No timers or I/O of its own: it is handed an EventScheduler and a
 * random source, and its ports are reached through `SwitchLine`.
 */
import { decodeArpFrame, encodeArpReply, ArpOp } from '../../wire/arp.js';
import { EtherType } from '../../wire/ethernet.js';
import { decodeMacControl, encodePfc } from '../../wire/mac-control.js';
import { decodeNdFrame, encodeNeighborAdvertisement, Icmpv6Type, ndMessageType } from '../../wire/ndp.js';
import { FabricError } from '../cable.js';
import type { EventHandle, EventScheduler } from '../link.js';
import { ceilDiv, psPerBit } from '../timing-params.js';
import { type EcnThresholds, ecnForRate, headroomBytes, PRIORITIES, type SwitchConfig } from './config.js';
import { type Dequeued, Egress } from './egress.js';
import { addrKey, dscpAt, dstKey, ecnAt, flowHash, isEct, type L2Info, l3Long, markCe, readL2, srcKey } from './frame-fields.js';
import { Mmu } from './mmu.js';

/** A port's line: the switch calls `kick` when it has something to send and the line may be idle. */
export interface SwitchLine {
  kick(): void;
}

/** Uniform numbers in [0, 1) from a seeded stream (the sim's Random). */
export interface RandomSource {
  next(): number;
}

/** One port as built: the link behind it. */
export interface SwitchPortSpec {
  /** bit/s */
  readonly linkRate: number;
  /** Cable propagation delay, ns. */
  readonly delayNs: number;
  /** Largest frame expected, bytes (headroom). */
  readonly mtu: number;
  /** The port's own MAC (source of its PAUSE frames). */
  readonly mac: Uint8Array;
}

/** One PAUSE frame the switch sent (pfc.json). */
export interface PfcRecord {
  readonly node: string;
  readonly port: number;
  readonly priority: number;
  readonly timeNs: number;
  /** 0 = XON. */
  readonly quanta: number;
}

/** Counters of one switch port (both directions; drops are counted at the egress port they were bound for). */
export interface SwitchPortStats {
  rxFrames: number;
  rxBytes: number;
  txFrames: number;
  txBytes: number;
  /** Data frames forwarded into this port's egress queues. */
  enqueuedFrames: number;
  enqueuedBytes: number;
  /** Refused by the buffer (admission), bound for this port. */
  droppedFrames: number;
  droppedBytes: number;
  /** Of droppedFrames, those of a lossless priority (PFC on): its headroom ran out, which PFC is there to prevent. */
  droppedLossless: number;
  /** Dropped on arrival at this port: no route, malformed, unknown protocol. */
  droppedNoRoute: number;
  droppedMalformed: number;
  /** Queued frames lost when the link went down. */
  droppedLinkDown: number;
  ecnMarked: number;
  /** PFC frames sent out of this port: XOFF (incl. refreshes) and XON. */
  pauseSent: number;
  resumeSent: number;
  /** PFC frames received on this port (each counts once), and per-priority XOFF/XON in them. */
  pfcFramesReceived: number;
  pauseReceived: number;
  resumeReceived: number;
  /** Highest egress queue depth seen, bytes (all priorities). */
  queueBytesHighWater: number;
  arpReplies: number;
  ndAdvertisements: number;
}

export const SWITCH_PORT_STATS: readonly { name: keyof SwitchPortStats; doc: string }[] = Object.freeze([
  { name: 'rxFrames', doc: 'frames received on the port (every kind)' },
  { name: 'rxBytes', doc: 'bytes of rxFrames (no FCS)' },
  { name: 'txFrames', doc: 'frames the port transmitted (data, PFC, ARP/ND answers)' },
  { name: 'txBytes', doc: 'bytes of txFrames' },
  { name: 'enqueuedFrames', doc: "data frames admitted to this port's egress queues" },
  { name: 'enqueuedBytes', doc: 'bytes of enqueuedFrames' },
  { name: 'droppedFrames', doc: 'data frames bound for this port that the shared buffer refused (admission)' },
  { name: 'droppedBytes', doc: 'bytes of droppedFrames' },
  { name: 'droppedLossless', doc: 'of droppedFrames, those of a lossless priority (PFC on): its headroom ran out' },
  { name: 'droppedNoRoute', doc: 'frames received here with a destination the switch has no route for' },
  { name: 'droppedMalformed', doc: 'frames received here too short for their headers, or of a protocol the switch does not forward' },
  { name: 'droppedLinkDown', doc: 'frames queued for this port when its link went down' },
  { name: 'ecnMarked', doc: 'ECT packets marked CE as they left this port' },
  { name: 'pauseSent', doc: 'PFC XOFF frames sent (first and refreshes)' },
  { name: 'resumeSent', doc: 'PFC XON frames (quanta 0) sent' },
  { name: 'pfcFramesReceived', doc: 'PFC frames received' },
  { name: 'pauseReceived', doc: 'priorities paused by received PFC frames (one per enabled class with quanta > 0)' },
  { name: 'resumeReceived', doc: 'priorities resumed by received PFC frames (quanta 0)' },
  { name: 'queueBytesHighWater', doc: 'highest egress queue depth, bytes, all priorities' },
  { name: 'arpReplies', doc: 'ARP requests answered for a known host (ARP suppression)' },
  { name: 'ndAdvertisements', doc: 'IPv6 neighbour solicitations answered for a known host' },
]);

function newPortStats(): SwitchPortStats {
  const s = {} as Record<keyof SwitchPortStats, number>;
  for (const d of SWITCH_PORT_STATS) s[d.name] = 0;
  return s as SwitchPortStats;
}

interface Port {
  readonly index: number;
  readonly spec: SwitchPortSpec;
  readonly egress: Egress;
  readonly s: SwitchPortStats;
  readonly ecn: EcnThresholds | null;
  /** ps per bit as a fraction, for PAUSE quanta. */
  readonly num: number;
  readonly den: number;
  line: SwitchLine | null;
  /** Wakes the line when a received PAUSE ends. */
  readonly unpause: EventHandle;
  /** Re-sends XOFF for priorities still over threshold. */
  readonly refresh: EventHandle;
  /** When each priority we paused upstream needs its XOFF refreshed, ns (0: not paused). */
  readonly refreshAt: Float64Array;
}

/** The 48-bit MAC at `off` of `f`, as a number. */
function macAt(f: Uint8Array, off: number): number {
  return f[off]! * 2 ** 40 + f[off + 1]! * 2 ** 32 + ((f[off + 2]! << 24) >>> 0) + (f[off + 3]! << 16) + (f[off + 4]! << 8) + f[off + 5]!;
}

/** Most source addresses a switch learns (routes it was given do not count). */
export const LEARNT_CAPACITY = 4096;

export class Switch {
  readonly name: string;
  readonly config: SwitchConfig;
  readonly mmu: Mmu;
  readonly #sched: EventScheduler;
  readonly #random: RandomSource;
  readonly #ports: Port[];
  readonly #routes = new Map<number | string, number[]>();
  readonly #learnt = new Set<number | string>();
  readonly #hosts = new Map<number | string, { ip: Uint8Array; mac: Uint8Array }>();
  /** A host's MAC (48 bits as a number) → the key of its address, whose route bridged frames take. */
  readonly #hostByMac = new Map<number, number | string>();
  /** Source MACs of bridged frames → the port each came in on (bounded as #learnt). */
  readonly #macs = new Map<number, number[]>();
  readonly #l2: L2Info = { etherType: 0, l3: 0, pcp: -1 };
  readonly #deq: Dequeued = { prio: 0, inPort: 0 };
  readonly #ecnPrios: number;
  readonly #ecmpSeed: number;
  #onPfc: ((r: PfcRecord) => void) | null = null;
  /** Told of every frame the buffer refused (a congestion drop), before it is let go; null: nobody asks. */
  onDrop: ((frame: Uint8Array) => void) | null = null;

  constructor(name: string, config: SwitchConfig, ports: readonly SwitchPortSpec[], sched: EventScheduler, random: RandomSource) {
    if (ports.length === 0) throw new FabricError('FABRIC_BAD_CONFIG', `switch ${name}: no ports`);
    this.name = name;
    this.config = config;
    this.#sched = sched;
    this.#random = random;
    this.#ecnPrios = config.ecn ? config.ecn.priorities : 0;
    // The configured seed mixed with the switch's name: switches of two tiers do not pick alike (polarisation).
    let h = config.ecmpSeed >>> 0;
    for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193) >>> 0;
    this.#ecmpSeed = h;
    this.mmu = new Mmu(
      config,
      ports.map((p) => headroomBytes(config.pfc, p.linkRate, p.delayNs, p.mtu)),
    );
    this.#ports = ports.map((spec, index): Port => {
      const [num, den] = psPerBit(spec.linkRate);
      const port: Port = {
        index,
        spec,
        egress: new Egress(config.scheduler, config.dwrrWeights, config.dwrrQuantumBytes),
        s: newPortStats(),
        ecn: config.ecn ? ecnForRate(config.ecn.thresholds, spec.linkRate) : null,
        num,
        den,
        line: null,
        unpause: sched.event(`${name}.p${index}.unpause`, 0, () => this.#onUnpause(port)),
        refresh: sched.event(`${name}.p${index}.pfcRefresh`, 0, () => this.#onRefresh(port)),
        refreshAt: new Float64Array(PRIORITIES),
      };
      return port;
    });
  }

  get portCount(): number {
    return this.#ports.length;
  }

  /** Sets (or clears) the listener told of every PAUSE frame the switch sends. */
  onPfc(fn: ((r: PfcRecord) => void) | null): void {
    this.#onPfc = fn;
  }

  /** Connects port `i` to its line. */
  attach(i: number, line: SwitchLine): void {
    this.#port(i).line = line;
  }

  /** Frames to `ip` (4 or 16 bytes) leave by one of `ports` (ECMP when more than one). */
  addRoute(ip: Uint8Array, ports: readonly number[]): void {
    if (ports.length === 0) throw new FabricError('FABRIC_BAD_CONFIG', `switch ${this.name}: a route needs at least one port`);
    for (const p of ports) this.#port(p);
    const key = addrKey(ip, 0, ip.length === 4 ? 4 : 16);
    this.#routes.set(key, [...ports]);
    this.#learnt.delete(key);
  }

  /** A host the switch answers ARP / ND for. */
  addHost(ip: Uint8Array, mac: Uint8Array): void {
    const key = addrKey(ip, 0, ip.length === 4 ? 4 : 16);
    this.#hosts.set(key, { ip: ip.slice(), mac: mac.slice() });
    this.#hostByMac.set(macAt(mac, 0), key);
  }

  stats(i: number): SwitchPortStats {
    return { ...this.#port(i).s };
  }

  /** Bytes waiting at egress port `i` (all priorities, control frames excluded). */
  queueBytes(i: number): number {
    return this.#port(i).egress.totalBytes();
  }

  queueBytesAt(i: number, prio: number): number {
    return this.#port(i).egress.bytes(prio);
  }

  /** Is priority `prio` of egress port `i` held by a PAUSE it received? */
  isPausedByPeer(i: number, prio: number): boolean {
    return this.#port(i).egress.pausedUntilPs[prio]! > this.#sched.now() * 1000;
  }

  #port(i: number): Port {
    const p = this.#ports[i];
    if (p === undefined) throw new FabricError('FABRIC_BAD_CONFIG', `switch ${this.name}: no port ${i} (it has ${this.#ports.length})`);
    return p;
  }

  // ---- ingress ---------------------------------------------------------------

  /** A frame off port `i`'s link (ours now). */
  receive(i: number, frame: Uint8Array): void {
    const port = this.#ports[i]!;
    port.s.rxFrames++;
    port.s.rxBytes += frame.length;
    const l2 = this.#l2;
    if (!readL2(frame, l2)) {
      port.s.droppedMalformed++;
      return;
    }
    const et = l2.etherType;
    if (et === EtherType.IPV4 || et === EtherType.IPV6) {
      if (!l3Long(frame, l2.l3, et)) {
        port.s.droppedMalformed++;
        return;
      }
      if (et === EtherType.IPV6 && frame[l2.l3 + 6] === 58 && ndMessageType(frame) === Icmpv6Type.NEIGHBOR_SOLICITATION) {
        this.#answerNs(port, frame);
        return;
      }
      this.#forward(port, frame, l2.l3, et, l2.pcp);
    } else if (et === EtherType.MAC_CONTROL) {
      this.#onMacControl(port, frame);
    } else if (et === EtherType.ARP) {
      this.#answerArp(port, frame);
    } else if (et === EtherType.ROCE) {
      // RoCE v1 is link-layer only: bridged by MAC, its priority the PCP (untagged: 0; it has no DSCP).
      const hops = this.#bridgeHops(port, frame);
      if (hops === undefined) port.s.droppedNoRoute++;
      else this.#enqueue(port, frame, hops.length === 1 ? hops[0]! : hops[macAt(frame, 0) % hops.length]!, l2.pcp >= 0 ? l2.pcp : 0);
    } else {
      port.s.droppedMalformed++;
    }
  }

  #forward(inp: Port, frame: Uint8Array, l3: number, et: number, pcp: number): void {
    const sk = srcKey(frame, l3, et);
    // Bounded: a flood of forged sources must not grow the table without end (it stops learning, routes stay).
    if (!this.#routes.has(sk) && this.#learnt.size < LEARNT_CAPACITY) {
      this.#routes.set(sk, [inp.index]);
      this.#learnt.add(sk);
    }
    // An IPv6 link-local destination (fe80::/10) is no route's: bridged by its destination MAC.
    const hops =
      this.#routes.get(dstKey(frame, l3, et)) ??
      (et === EtherType.IPV6 && frame[l3 + 24] === 0xfe && (frame[l3 + 25]! & 0xc0) === 0x80 ? this.#bridgeHops(inp, frame) : undefined);
    if (hops === undefined) {
      inp.s.droppedNoRoute++;
      return;
    }
    const prio = this.config.trust === 'pcp' && pcp >= 0 ? pcp : this.config.dscpToPriority[dscpAt(frame, l3, et)]!;
    this.#enqueue(inp, frame, hops.length === 1 ? hops[0]! : hops[flowHash(frame, l3, et, this.#ecmpSeed) % hops.length]!, prio);
  }

  /** Ports toward a frame's destination MAC (a host's route, or a learnt MAC); learns its source MAC. */
  #bridgeHops(inp: Port, frame: Uint8Array): readonly number[] | undefined {
    const src = macAt(frame, 6);
    if (!this.#hostByMac.has(src) && !this.#macs.has(src) && this.#macs.size < LEARNT_CAPACITY) this.#macs.set(src, [inp.index]);
    const dst = macAt(frame, 0);
    const host = this.#hostByMac.get(dst);
    return (host === undefined ? undefined : this.#routes.get(host)) ?? this.#macs.get(dst);
  }

  /** Admits `frame` from `inp` to egress port `outIndex` at priority `prio`, or drops it. */
  #enqueue(inp: Port, frame: Uint8Array, outIndex: number, prio: number): void {
    const out = this.#ports[outIndex]!;
    const size = frame.length;
    if (!this.mmu.admit(inp.index, prio, size)) {
      out.s.droppedFrames++;
      out.s.droppedBytes += size;
      if (this.mmu.isLossless(prio)) out.s.droppedLossless++;
      this.onDrop?.(frame);
      return;
    }
    this.mmu.enqueue(inp.index, out.index, prio, size);
    out.egress.push(prio, frame, inp.index);
    out.s.enqueuedFrames++;
    out.s.enqueuedBytes += size;
    const q = out.egress.totalBytes();
    if (q > out.s.queueBytesHighWater) out.s.queueBytesHighWater = q;
    if (this.mmu.shouldPause(inp.index, prio)) this.#pause(inp, prio);
    out.line?.kick();
  }

  // ---- egress ----------------------------------------------------------------

  /** The line of port `i` is free: the next frame to serialize, or null. The link owns it. */
  pull(i: number): Uint8Array | null {
    const port = this.#ports[i]!;
    const nowPs = this.#sched.now() * 1000;
    const d = this.#deq;
    const frame = port.egress.next(nowPs, d);
    if (frame === null) {
      const until = port.egress.heldUntilPs(nowPs);
      if (until > 0) this.#sched.reschedule(port.unpause, Math.ceil(until / 1000));
      return null;
    }
    port.s.txFrames++;
    port.s.txBytes += frame.length;
    if (d.prio < 0) return frame;
    const prio = d.prio;
    const inPort = d.inPort;
    this.mmu.dequeue(inPort, i, prio, frame.length);
    if (port.ecn !== null && ((this.#ecnPrios >>> prio) & 1) === 1) this.#maybeMark(port, prio, frame);
    if (this.mmu.shouldResume(inPort, prio)) this.#resume(this.#ports[inPort]!, prio);
    return frame;
  }

  /** RED on the egress queue left behind (HPCC marks as the packet leaves): CE on ECT packets. */
  #maybeMark(port: Port, prio: number, frame: Uint8Array): void {
    const ecn = port.ecn!;
    const q = this.mmu.egressBytes(port.index, prio);
    if (q <= ecn.kminBytes) return;
    const l2 = this.#l2;
    readL2(frame, l2);
    // Only ECT IP packets are marked (and only they draw from the random stream); a RoCE v1 GRH has no ECN field.
    if ((l2.etherType !== EtherType.IPV4 && l2.etherType !== EtherType.IPV6) || !isEct(ecnAt(frame, l2.l3, l2.etherType))) return;
    if (q <= ecn.kmaxBytes && this.#random.next() >= (ecn.pmax * (q - ecn.kminBytes)) / (ecn.kmaxBytes - ecn.kminBytes)) return;
    markCe(frame, l2.l3, l2.etherType);
    port.s.ecnMarked++;
  }

  #onUnpause(port: Port): void {
    port.line?.kick();
  }

  /** The link of port `i` went down: its queues are lost (and their buffer freed). */
  linkDown(i: number): void {
    const port = this.#port(i);
    port.s.droppedLinkDown += port.egress.flush((prio, inPort, size) => {
      this.mmu.dequeue(inPort, i, prio, size);
      if (this.mmu.shouldResume(inPort, prio)) this.#resume(this.#ports[inPort]!, prio);
    });
  }

  // ---- PFC -------------------------------------------------------------------

  /** Pause time of `quanta` at the port's rate, ps. */
  #quantaPs(port: Port, quanta: number): number {
    return ceilDiv(quanta * 512, port.num, port.den);
  }

  #sendPfc(port: Port, prio: number, quanta: number): void {
    const times = [0, 0, 0, 0, 0, 0, 0, 0];
    times[prio] = quanta;
    port.egress.pushControl(encodePfc(port.spec.mac, 1 << prio, times));
    this.#onPfc?.({ node: this.name, port: port.index, priority: prio, timeNs: this.#sched.now(), quanta });
    port.line?.kick();
  }

  #pause(port: Port, prio: number): void {
    this.mmu.setPaused(port.index, prio, true);
    const q = this.config.pfc.pauseQuanta;
    port.s.pauseSent++;
    this.#sendPfc(port, prio, q);
    port.refreshAt[prio] = this.#sched.now() + Math.max(1, Math.floor(this.#quantaPs(port, q) / 2000));
    this.#armRefresh(port);
  }

  #resume(port: Port, prio: number): void {
    this.mmu.setPaused(port.index, prio, false);
    port.refreshAt[prio] = 0;
    port.s.resumeSent++;
    this.#sendPfc(port, prio, 0);
    this.#armRefresh(port);
  }

  #armRefresh(port: Port): void {
    let t = Infinity;
    for (let p = 0; p < PRIORITIES; p++) if (port.refreshAt[p]! > 0 && port.refreshAt[p]! < t) t = port.refreshAt[p]!;
    if (t === Infinity) {
      if (port.refresh.scheduled) this.#sched.deschedule(port.refresh);
    } else this.#sched.reschedule(port.refresh, t);
  }

  /** XOFF refresh: still paused at half the pause time, say so again before the far end resumes. */
  #onRefresh(port: Port): void {
    const now = this.#sched.now();
    const q = this.config.pfc.pauseQuanta;
    for (let p = 0; p < PRIORITIES; p++) {
      if (port.refreshAt[p] === 0 || port.refreshAt[p]! > now) continue;
      port.s.pauseSent++;
      this.#sendPfc(port, p, q);
      port.refreshAt[p] = now + Math.max(1, Math.floor(this.#quantaPs(port, q) / 2000));
    }
    this.#armRefresh(port);
  }

  /** A MAC Control frame off `port`: PFC pauses or resumes our egress on that port, per priority. */
  #onMacControl(port: Port, frame: Uint8Array): void {
    const m = decodeMacControl(frame);
    if (typeof m === 'string' || m.kind !== 'pfc') {
      port.s.droppedMalformed++;
      return;
    }
    port.s.pfcFramesReceived++;
    const nowPs = this.#sched.now() * 1000;
    let resumed = false;
    for (let p = 0; p < PRIORITIES; p++) {
      if (((m.classEnable >>> p) & 1) === 0) continue;
      const quanta = m.pauseTimes[p]!;
      if (quanta === 0) {
        port.s.resumeReceived++;
        if (port.egress.pausedUntilPs[p]! > nowPs) resumed = true;
        port.egress.pausedUntilPs[p] = 0;
      } else {
        port.s.pauseReceived++;
        port.egress.pausedUntilPs[p] = nowPs + this.#quantaPs(port, quanta);
      }
    }
    if (resumed) port.line?.kick();
  }

  // ---- ARP / ND suppression --------------------------------------------------

  #answerArp(port: Port, frame: Uint8Array): void {
    const r = decodeArpFrame(frame);
    if (!r.ok) {
      port.s.droppedMalformed++;
      return;
    }
    const a = r.frame.arp;
    if (a.op !== ArpOp.REQUEST) return;
    const h = this.#hosts.get(addrKey(a.targetIp, 0, 4));
    if (h === undefined) {
      port.s.droppedNoRoute++;
      return;
    }
    port.s.arpReplies++;
    port.egress.pushControl(encodeArpReply(h.mac, h.ip, a.senderMac.slice(), a.senderIp.slice(), r.frame.eth.vlan));
    port.line?.kick();
  }

  #answerNs(port: Port, frame: Uint8Array): void {
    const r = decodeNdFrame(frame);
    if (!r.ok || r.frame.message.type !== Icmpv6Type.NEIGHBOR_SOLICITATION) {
      port.s.droppedMalformed++;
      return;
    }
    const ns = r.frame.message;
    const h = this.#hosts.get(addrKey(ns.target, 0, 16));
    if (h === undefined || ns.sourceLinkAddr === null) {
      port.s.droppedNoRoute++;
      return;
    }
    port.s.ndAdvertisements++;
    port.egress.pushControl(
      encodeNeighborAdvertisement(
        h.mac,
        ns.target.slice(),
        ns.sourceLinkAddr.slice(),
        r.frame.ipv6.src.slice(),
        { solicited: true, override: true },
        r.frame.eth.vlan,
      ),
    );
    port.line?.kick();
  }
}
