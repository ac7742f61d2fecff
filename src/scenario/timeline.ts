/**
 * The timeline of a scenario run: for every work request, when it was
 * posted, when its first packet went on the wire, every retransmission
 * (time and PSN), and its completion with status; per queue pair, the NAKs
 * its requester received. Fed by the simulator's frame observer (the
 * transmit tap sees a frame when it starts serialization, the receive tap
 * when it arrives) and by the runner (posts, completions). It knows frames
 * only by their BTH: the requester's destination QP and the PSN.
 */
import { AethType, aethType, decodePacket, LINKTYPE_ETHERNET, LINKTYPE_INFINIBAND, OPCODES } from '../wire/index.js';
import { bthDestQp, bthOffset, bthPsn } from '../runtime/sim/frame-info.js';
import type { FrameEvent } from '../runtime/sim/sim-device.js';

/** One work request. Times are virtual ns; null: it did not happen (yet). */
export interface WrRecord {
  readonly index: number;
  readonly op: string;
  readonly size: number;
  readonly signaled: boolean;
  /** PSNs the WR uses, first and last (24-bit). */
  readonly psnFirst: number;
  readonly psnLast: number;
  readonly postedNs: number;
  firstPacketNs: number | null;
  lastPacketNs: number | null;
  readonly retransmissions: { ns: number; psn: number }[];
  completedNs: number | null;
  /** 'IBV_WC_SUCCESS', 'IBV_WC_RETRY_EXC_ERR', ... */
  status: string | null;
  /** 'signaled': its own CQE; 'implied': covered by a later signaled CQE (unsignaled WRs). */
  completion: 'signaled' | 'implied' | null;
}

/** Something the requester's port received that is not a plain ACK. */
export interface QpEvent {
  readonly ns: number;
  readonly kind: 'nak-psn-seq' | 'rnr-nak' | 'nak-invalid-request' | 'nak-remote-access' | 'nak-remote-op' | 'nak-other';
  readonly psn: number;
  readonly syndrome: number;
}

export interface QpTimeline {
  readonly qp: string;
  readonly from: string;
  readonly device: string;
  readonly qpn: number;
  readonly op: string;
  readonly wrs: WrRecord[];
  readonly events: QpEvent[];
  /** ACKs received (positive acknowledgements; coalesced ones count once). */
  acks: number;
  retransmittedPackets: number;
}

export const WC_STATUS_NAMES: readonly string[] = [
  'IBV_WC_SUCCESS',
  'IBV_WC_LOC_LEN_ERR',
  'IBV_WC_LOC_QP_OP_ERR',
  'IBV_WC_LOC_EEC_OP_ERR',
  'IBV_WC_LOC_PROT_ERR',
  'IBV_WC_WR_FLUSH_ERR',
  'IBV_WC_MW_BIND_ERR',
  'IBV_WC_BAD_RESP_ERR',
  'IBV_WC_LOC_ACCESS_ERR',
  'IBV_WC_REM_INV_REQ_ERR',
  'IBV_WC_REM_ACCESS_ERR',
  'IBV_WC_REM_OP_ERR',
  'IBV_WC_RETRY_EXC_ERR',
  'IBV_WC_RNR_RETRY_EXC_ERR',
  'IBV_WC_LOC_RDD_VIOL_ERR',
  'IBV_WC_REM_INV_RD_REQ_ERR',
  'IBV_WC_REM_ABORT_ERR',
  'IBV_WC_INV_EECN_ERR',
  'IBV_WC_INV_EEC_STATE_ERR',
  'IBV_WC_FATAL_ERR',
  'IBV_WC_RESP_TIMEOUT_ERR',
  'IBV_WC_GENERAL_ERR',
  'IBV_WC_TM_ERR',
  'IBV_WC_TM_RNDV_INCOMPLETE',
];

export function wcStatusName(status: number): string {
  return WC_STATUS_NAMES[status] ?? `IBV_WC_STATUS_${status}`;
}

/** A WrRecord with one stable shape (records are made per WR and updated per packet). */
class Wr implements WrRecord {
  firstPacketNs: number | null = null;
  lastPacketNs: number | null = null;
  readonly retransmissions: { ns: number; psn: number }[] = [];
  completedNs: number | null = null;
  status: string | null = null;
  completion: 'signaled' | 'implied' | null = null;
  constructor(
    readonly index: number,
    readonly op: string,
    readonly size: number,
    readonly signaled: boolean,
    readonly psnFirst: number,
    readonly psnLast: number,
    readonly postedNs: number,
  ) {}
}

const PSN_MASK = 0xffffff;
const isResponse = (kind: string): boolean => kind === 'ack' || kind === 'read-response' || kind === 'atomic-ack';
const QPN_SPACE = 0x1000000;
const psnCmp = (a: number, b: number): number => ((a - b) << 8) >> 8;

/**
 * When a requester's frames went out and came in (ascending virtual ns):
 * its requests as the requester's pipeline handed them to its port (sent,
 * for the transport: its timer runs, though the frame may wait in the
 * port's FIFO for the line) and as the responder's port took them off the
 * link, its responses (ACKs, NAKs, READ responses, atomic ACKs) likewise.
 * What was sent and has not arrived, less what faults and switches
 * dropped, is still on the way (in a FIFO, queued, paused, held).
 */
export interface QpFlight {
  readonly reqTx: number[];
  /** The PSN of each of reqTx. */
  readonly reqTxPsn: number[];
  readonly reqRx: number[];
  readonly respTx: number[];
  readonly respRx: number[];
  /** Per WR index: its retransmissions as handed to the port (WrRecord.retransmissions are as they went on the line). */
  readonly resent: Map<number, { ns: number; psn: number }[]>;
}

interface Track {
  readonly t: QpTimeline;
  readonly flight: QpFlight;
  /** Highest PSN sent so far, -1 before the first. */
  psnMax: number;
  /** The same, by hand-off. */
  handoffPsnMax: number;
  /** Oldest WR that may still send (everything before it has completed). */
  oldest: number;
}

/**
 * Who a request is for: its sender's device, the device it is addressed to
 * (by destination MAC) and the remote QPN its BTH carries. With more than
 * two hosts the remote QPN alone is ambiguous: QPNs are per device, so two
 * QPs of one host may both send to a QPN 2 (of two others). Look-ups go
 * through a RequestTable (per sender, per destination device, per QPN):
 * every key is a small integer, so a frame's look-up boxes no number.
 */
export class RequestKeys {
  /** By the MAC's high 24 bits, then its low 24 (two small integers: no boxed 48-bit number per frame). */
  readonly #byMac = new Map<number, Map<number, number>>();

  /** Native IB: the device owning each LID. */
  readonly #byLid = new Map<number, number>();

  /** `macs[i]`: the port MACs of device i ('02:00:00:00:00:01'); `lids[i]`: its IB ports' LID ranges. */
  constructor(macs: readonly (readonly string[])[], lids: readonly (readonly { lid: number; lmc: number }[])[] = []) {
    macs.forEach((list, i) => {
      for (const m of list) {
        const v = Number.parseInt(m.replace(/:/g, ''), 16);
        const lo = v % 0x1000000;
        const hi = (v - lo) / 0x1000000;
        let byLo = this.#byMac.get(hi);
        if (!byLo) this.#byMac.set(hi, (byLo = new Map()));
        byLo.set(lo, i);
      }
    });
    lids.forEach((list, i) => {
      for (const { lid, lmc } of list) for (let k = 0; k < 1 << lmc; k++) this.#byLid.set(lid + k, i);
    });
  }

  /** The device a frame is addressed to (its destination MAC; an IB packet's DLID), or -1. */
  destDevice(f: Uint8Array, ib = false): number {
    if (ib) return f.length >= 4 ? (this.#byLid.get((f[2]! << 8) | f[3]!) ?? -1) : -1;
    return this.#byMac.get((f[0]! << 16) | (f[1]! << 8) | f[2]!)?.get((f[3]! << 16) | (f[4]! << 8) | f[5]!) ?? -1;
  }

  /** A table of values by request key (RequestTable). */
  table<T>(): RequestTable<T> {
    return new RequestTable<T>(this);
  }
}

/** Values by (sender's device, destination device, remote QPN); see RequestKeys. */
export class RequestTable<T> {
  readonly #keys: RequestKeys;
  /** By sender × 4096 + destination device (a small integer), then remote QPN. */
  readonly #byPair = new Map<number, Map<number, T>>();

  constructor(keys: RequestKeys) {
    this.#keys = keys;
  }

  set(fromDevice: number, toDevice: number, remoteQpn: number, v: T): void {
    const pair = fromDevice * 4096 + toDevice;
    let m = this.#byPair.get(pair);
    if (!m) this.#byPair.set(pair, (m = new Map()));
    m.set(remoteQpn, v);
  }

  get(fromDevice: number, toDevice: number, remoteQpn: number): T | undefined {
    if (fromDevice < 0 || toDevice < 0) return undefined;
    return this.#byPair.get(fromDevice * 4096 + toDevice)?.get(remoteQpn);
  }

  /** The value for request frame `f` (Ethernet, or IB with `ib`) sent by `fromDevice`, its BTH at `bth`. */
  ofFrame(fromDevice: number, f: Uint8Array, bth: number, ib = false): T | undefined {
    return this.get(fromDevice, this.#keys.destDevice(f, ib), bthDestQp(f, bth));
  }
}

/** Records the timeline of the QPs it is told about. */
export class TimelineRecorder {
  readonly qps: QpTimeline[] = [];
  readonly #keys: RequestKeys;
  /** Requester tracks by RequestKeys (what its request packets carry), and by device index × 2^24 + local QPN. */
  readonly #byRemote: RequestTable<Track>;
  readonly #byLocal = new Map<number, Track>();
  /** Requester tracks by their responder: device index × 2^24 + the responder's QPN (what the requests arrive for). */
  readonly #byResponder = new Map<number, Track>();
  readonly #byTimeline = new Map<QpTimeline, Track>();

  constructor(keys: RequestKeys) {
    this.#keys = keys;
    this.#byRemote = keys.table();
  }

  /** A requester: `deviceIndex` sends with local QPN `qpn` to remote QPN `remoteQpn` of device `remoteDevice`. */
  addQp(t: Omit<QpTimeline, 'wrs' | 'events' | 'acks' | 'retransmittedPackets'>, deviceIndex: number, remoteDevice: number, remoteQpn: number): QpTimeline {
    const tl: QpTimeline = { ...t, wrs: [], events: [], acks: 0, retransmittedPackets: 0 };
    const track: Track = {
      t: tl,
      flight: { reqTx: [], reqTxPsn: [], reqRx: [], respTx: [], respRx: [], resent: new Map() },
      psnMax: -1,
      handoffPsnMax: -1,
      oldest: 0,
    };
    this.#byRemote.set(deviceIndex, remoteDevice, remoteQpn, track);
    this.#byLocal.set(deviceIndex * QPN_SPACE + t.qpn, track);
    this.#byResponder.set(remoteDevice * QPN_SPACE + remoteQpn, track);
    this.#byTimeline.set(tl, track);
    this.qps.push(tl);
    return tl;
  }

  /** The frame observer to give the simulator. */
  readonly observe = (e: FrameEvent): void => {
    const f = e.headers;
    const bth = bthOffset(f, e.ib);
    if (bth < 0) return;
    const info = OPCODES[f[bth]!];
    if (!info) return;
    if (info.isRequest) {
      if (e.dir === 'tx') {
        const tr = this.#byRemote.ofFrame(e.deviceIndex, f, bth, e.ib);
        if (tr) this.#request(tr, bthPsn(f, bth), e.ns);
      } else {
        this.#byResponder.get(e.deviceIndex * QPN_SPACE + bthDestQp(f, bth))?.flight.reqRx.push(e.ns);
      }
      return;
    }
    if (e.dir === 'tx' || !isResponse(info.kind)) return;
    const tr = this.#byLocal.get(e.deviceIndex * QPN_SPACE + bthDestQp(f, bth));
    if (!tr) return;
    tr.flight.respRx.push(e.ns);
    // The tap sees a frame before the receiver checks it: a corrupted ACK (a flipped syndrome bit
    // read as a NAK the requester never acted on) is not counted; decoding checks the ICRC.
    if (info.kind === 'ack' && decodePacket(e.frame, e.ib ? LINKTYPE_INFINIBAND : LINKTYPE_ETHERNET).ok) this.#ack(tr, f[bth + 12]!, bthPsn(f, bth), e.ns);
  };

  /** The hand-off observer to give the simulator (SimModel.observeHandoffs): when frames were sent. */
  readonly handoff = (deviceIndex: number, _portNum: number, f: Uint8Array, ns: number, ib: boolean): void => {
    const bth = bthOffset(f, ib);
    if (bth < 0) return;
    const info = OPCODES[f[bth]!];
    if (!info) return;
    if (info.isRequest) {
      const tr = this.#byRemote.ofFrame(deviceIndex, f, bth, ib);
      if (!tr) return;
      const psn = bthPsn(f, bth);
      tr.flight.reqTx.push(ns);
      tr.flight.reqTxPsn.push(psn);
      const w = this.#wrOf(tr, psn);
      if (!w) return;
      if (tr.handoffPsnMax < 0 || psnCmp(psn, tr.handoffPsnMax) > 0) {
        tr.handoffPsnMax = w.op === 'read' ? w.psnLast : psn;
      } else {
        let rs = tr.flight.resent.get(w.index);
        if (!rs) tr.flight.resent.set(w.index, (rs = []));
        rs.push({ ns, psn });
      }
    } else if (isResponse(info.kind)) {
      const to = this.#keys.destDevice(f, ib);
      if (to >= 0) this.#byLocal.get(to * QPN_SPACE + bthDestQp(f, bth))?.flight.respTx.push(ns);
    }
  };

  /** When `t`'s frames were sent and arrived (QpFlight). */
  flight(t: QpTimeline): QpFlight | null {
    return this.#byTimeline.get(t)?.flight ?? null;
  }

  /** The WR not yet completed whose PSNs hold `psn`. */
  #wrOf(tr: Track, psn: number): WrRecord | undefined {
    const wrs = tr.t.wrs;
    for (let i = tr.oldest; i < wrs.length; i++) {
      const x = wrs[i]!;
      if (psnCmp(psn, x.psnFirst) >= 0 && psnCmp(psn, x.psnLast) <= 0) return x;
    }
    return undefined;
  }

  #request(tr: Track, psn: number, ns: number): void {
    const w = this.#wrOf(tr, psn);
    if (!w) return;
    const fresh = tr.psnMax < 0 || psnCmp(psn, tr.psnMax) > 0;
    if (fresh) {
      // A READ's request stands for all its response PSNs.
      tr.psnMax = w.op === 'read' ? w.psnLast : psn;
      if (w.firstPacketNs === null) w.firstPacketNs = ns;
    } else {
      w.retransmissions.push({ ns, psn });
      tr.t.retransmittedPackets++;
    }
    w.lastPacketNs = ns;
  }

  #ack(tr: Track, syndrome: number, psn: number, ns: number): void {
    switch (aethType(syndrome)) {
      case AethType.ACK:
        tr.t.acks++;
        return;
      case AethType.RNR_NAK:
        tr.t.events.push({ ns, kind: 'rnr-nak', psn, syndrome });
        return;
      case AethType.NAK: {
        const code = syndrome & 0x1f;
        const kind =
          code === 0 ? 'nak-psn-seq' : code === 1 ? 'nak-invalid-request' : code === 2 ? 'nak-remote-access' : code === 3 ? 'nak-remote-op' : 'nak-other';
        tr.t.events.push({ ns, kind, psn, syndrome });
        return;
      }
      default:
    }
  }

  /** A WR was posted (in order). */
  posted(t: QpTimeline, index: number, op: string, size: number, signaled: boolean, psnFirst: number, psnLast: number, postedNs: number): WrRecord {
    const w = new Wr(index, op, size, signaled, psnFirst, psnLast, postedNs);
    t.wrs.push(w);
    return w;
  }

  /** WR `index` completed (its own CQE or implied); moves the search start past retired WRs. */
  completed(t: QpTimeline, index: number, ns: number, status: string, how: 'signaled' | 'implied'): void {
    const w = t.wrs[index];
    if (!w) return;
    w.completedNs = ns;
    w.status = status;
    w.completion = how;
    const tr = this.#byTimeline.get(t);
    if (tr) while (tr.oldest < t.wrs.length && t.wrs[tr.oldest]!.completedNs !== null) tr.oldest++;
  }
}

/** PSNs a message of `size` bytes uses at `mtu` (READ: its responses; atomics and UD: one). */
export function psnCount(op: string, size: number, mtu: number, ud: boolean): number {
  if (ud || op === 'fetch_add' || op === 'cmp_swap') return 1;
  return Math.max(1, Math.ceil(size / mtu));
}

export function psnAddMasked(psn: number, n: number): number {
  return (psn + n) & PSN_MASK;
}
