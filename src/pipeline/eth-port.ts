/**
 * The RNIC's Ethernet MAC function: one port's MAC address and IP
 * addresses (from which its RoCE GIDs come), a MAC filter, the ARP and
 * IPv6 neighbour-discovery responder, the neighbour table, and the split of
 * received frames into what the RDMA pipeline, the MAC-control (PFC) logic
 * and nobody wants.
 *
 * No timers and no I/O: time comes from the clock it is handed (rate limits
 * and capture timestamps), frames leave through whatever `FrameSink` is
 * attached (a fabric CableEnd satisfies it), and frames arrive when the
 * runtime calls `receive`:
 *
 *   port.attach(cable);
 *   cable.onReceive((f) => { if (port.receive(f) === 'rdma') rxParser.push(f); });
 *
 * Addresses given to or returned by the port are 4-byte IPv4, 16-byte IPv6,
 * or 16-byte GIDs (an IPv4-mapped GID ::ffff:a.b.c.d stands for its IPv4
 * address).
 */
import { bad, count, list, type ParamSpec, type ParamValues, resolveParams } from '../params/params.js';
import { ArpOp, decodeArpFrame, encodeArpReply, encodeArpRequest } from '../wire/arp.js';
import { RnicError } from '../wire/errors.js';
import { ETH_HEADER_LENGTH, EtherType, formatMac, parseMac } from '../wire/ethernet.js';
import { formatIpv4, formatIpv6, IP_PROTO_UDP, parseIpv4, parseIpv6 } from '../wire/ip.js';
import {
  ALL_NODES_ADDRESS,
  decodeNdFrame,
  encodeNeighborAdvertisement,
  encodeNeighborSolicitation,
  Icmpv6Type,
  IP_PROTO_ICMPV6,
  ipv6MulticastMac,
  isIpv6Unspecified,
  ndMessageType,
} from '../wire/ndp.js';
import { encodePfc } from '../wire/mac-control.js';
import { LINKTYPE_ETHERNET, LINKTYPE_INFINIBAND } from '../wire/pcap.js';
import type { PcapWriter } from '../wire/pcap-writer.js';
import { ROCE_V2_UDP_PORT } from '../wire/udp.js';
import { PriorityPause } from './pfc.js';

// ---- errors ----------------------------------------------------------------

export type EthPortErrorCode =
  /** An address is not 4 or 16 bytes, or not one this port can use. */
  | 'PORT_BAD_ADDRESS'
  /** A capture writer that does not write Ethernet frames. */
  | 'PORT_BAD_CAPTURE'
  /** A construction argument (other than the validated parameters) is unusable. */
  | 'PORT_BAD_CONFIG';

export class EthPortError extends RnicError<EthPortErrorCode> {
  constructor(code: EthPortErrorCode, message: string) {
    super(code, message);
    this.name = 'EthPortError';
  }
}

// ---- parameters (STYLE §6) -------------------------------------------------

function macParam(def: string, doc: string): ParamSpec<string> {
  return {
    default: def,
    unit: 'mac',
    doc,
    parse: (raw, path) => {
      let m: Uint8Array;
      try {
        m = parseMac(String(raw));
      } catch {
        return bad(path, `expected a MAC like 02:00:00:00:00:01, got ${JSON.stringify(raw)}`);
      }
      if (m[0]! & 1) bad(path, `${formatMac(m)} is a group (multicast) address`);
      if (m.every((b) => b === 0)) bad(path, 'the all-zero MAC is not a station address');
      return formatMac(m);
    },
  };
}

function boolParam(def: boolean, doc: string): ParamSpec<boolean> {
  return {
    default: def,
    unit: 'bool',
    doc,
    parse: (raw, path) => (typeof raw === 'boolean' ? raw : bad(path, `expected true or false, got ${JSON.stringify(raw)}`)),
  };
}

const DURATION_UNITS: Record<string, bigint> = { ns: 1n, us: 1_000n, ms: 1_000_000n, s: 1_000_000_000n };

/** A duration like '1s', '500ms', '250us', '100ns' (or integer nanoseconds), in nanoseconds. */
function durationParam(def: string, doc: string, min: bigint, max: bigint): ParamSpec<bigint> {
  return {
    default: def,
    unit: 'ns',
    doc,
    parse: (raw, path) => {
      let v: bigint;
      if (typeof raw === 'number' && Number.isSafeInteger(raw)) v = BigInt(raw);
      else if (typeof raw === 'bigint') v = raw;
      else {
        const m = typeof raw === 'string' ? /^\s*(\d+)\s*(ns|us|ms|s)\s*$/.exec(raw) : null;
        if (!m) return bad(path, `expected a duration like '1s' or '500ms', got ${JSON.stringify(raw)}`);
        v = BigInt(m[1]!) * DURATION_UNITS[m[2]!]!;
      }
      if (v < min || v > max) bad(path, `${v} ns is outside [${min}, ${max}]`);
      return v;
    },
  };
}

function ipv4Text(raw: unknown, path: string): string {
  let a: Uint8Array;
  try {
    a = parseIpv4(String(raw));
  } catch {
    return bad(path, `expected a dotted IPv4 address, got ${JSON.stringify(raw)}`);
  }
  if (!isStationIpv4(a)) bad(path, `${formatIpv4(a)} is not a station address (0.0.0.0/8, multicast or broadcast)`);
  return formatIpv4(a);
}

function isStationIpv4(a: Uint8Array): boolean {
  return a[0] !== 0 && a[0]! < 224;
}

function ipv6Text(raw: unknown, path: string): string {
  let a: Uint8Array;
  try {
    a = parseIpv6(String(raw));
  } catch {
    return bad(path, `expected an IPv6 address, got ${JSON.stringify(raw)}`);
  }
  if (a[0] === 0xff) bad(path, `${formatIpv6(a)} is multicast`);
  if (isIpv6Unspecified(a)) bad(path, ':: is not a station address');
  return formatIpv6(a);
}

export const ETH_PORT_PARAMS = {
  macAddress: macParam('02:00:00:00:00:01', "the port's station MAC address"),
  ipv4Addresses: list([], 'ipv4[]', 'IPv4 addresses: answered by ARP, each an IPv4-mapped GID ::ffff:a.b.c.d', ipv4Text),
  ipv6Addresses: list([], 'ipv6[]', 'IPv6 addresses: answered by ND, each a GID', ipv6Text),
  linkLocal: boolParam(true, 'also own fe80::/64 with the modified EUI-64 of the MAC (GID 0 of a Linux RoCE port)'),
  solicitInterval: durationParam('1s', 'at most one ARP request / NS per unresolved address per interval (Linux retrans_time_ms)', 1n, 3_600_000_000_000n),
  neighborCapacity: count(1024, 'neighbour table entries; the least recently updated one is evicted', 1, 1 << 20),
  promiscuous: boolParam(false, 'accept every destination MAC; otherwise ours, broadcast and the groups the port listens to'),
} as const;

export type EthPortParams = ParamValues<typeof ETH_PORT_PARAMS>;

/** Validates a configuration (DEV_ERR_BAD_CONFIG on error) into frozen port parameters. */
export function resolveEthPortParams(raw: Readonly<Record<string, unknown>> = {}, path = 'ethPort'): EthPortParams {
  return resolveParams(ETH_PORT_PARAMS, raw, path);
}

// ---- counters (STYLE §7) ---------------------------------------------------

export interface PortCounterDecl {
  readonly name: string;
  readonly unit: 'frames' | 'bytes' | 'calls';
  readonly doc: string;
}

/** The counter table. Order = index = `PortCtr`. Append only. */
export const ETH_PORT_COUNTERS: readonly PortCounterDecl[] = Object.freeze([
  { name: 'rx_packets', unit: 'frames', doc: 'frames received from the cable, before any filtering (netdev rx_packets)' },
  { name: 'rx_bytes', unit: 'bytes', doc: 'bytes of the frames in rx_packets, no FCS (netdev rx_bytes)' },
  { name: 'tx_packets', unit: 'frames', doc: 'frames handed to the cable (netdev tx_packets)' },
  { name: 'tx_bytes', unit: 'bytes', doc: 'bytes of the frames in tx_packets, no FCS (netdev tx_bytes)' },
  { name: 'tx_dropped', unit: 'frames', doc: 'frames dropped on transmit because no cable is attached (netdev tx_dropped)' },
  {
    name: 'rx_ignored',
    unit: 'frames',
    doc: 'frames not for this port (MAC filter, IP destination) or of a protocol it does not handle (netdev rx_nohandler / rx_otherhost_dropped)',
  },
  { name: 'rx_rdma_packets', unit: 'frames', doc: 'frames passed to the RDMA receive path (RoCE v2 to our address, RoCE v1 to our GID)' },
  { name: 'rx_mac_control_packets', unit: 'frames', doc: 'PAUSE / PFC frames passed to MAC control' },
  { name: 'rx_arp_nd_errors', unit: 'frames', doc: 'malformed ARP or ND frames dropped (bad field, length or checksum)' },
  { name: 'arp_requests_rcvd', unit: 'frames', doc: 'ARP requests received (for any address)' },
  { name: 'arp_replies_rcvd', unit: 'frames', doc: 'ARP replies received' },
  { name: 'arp_requests_sent', unit: 'frames', doc: 'ARP requests sent by resolve()' },
  { name: 'arp_replies_sent', unit: 'frames', doc: 'ARP replies sent for our IPv4 addresses' },
  { name: 'nd_ns_rcvd', unit: 'frames', doc: 'ICMPv6 Neighbor Solicitations received (for any target)' },
  { name: 'nd_na_rcvd', unit: 'frames', doc: 'ICMPv6 Neighbor Advertisements received' },
  { name: 'nd_ns_sent', unit: 'frames', doc: 'Neighbor Solicitations sent by resolve()' },
  { name: 'nd_na_sent', unit: 'frames', doc: 'Neighbor Advertisements sent for our IPv6 addresses' },
  { name: 'neigh_resolve_misses', unit: 'calls', doc: 'resolve() calls that found no neighbour entry and returned null' },
  { name: 'neigh_updates', unit: 'calls', doc: 'neighbour entries created or changed (learned from ARP, ND or RoCE frames)' },
  {
    name: 'neigh_evictions',
    unit: 'calls',
    doc: 'neighbour entries evicted (least recently updated first) to make room for one learned from ARP / ND or set statically',
  },
  {
    name: 'neigh_learn_dropped',
    unit: 'frames',
    doc: 'RoCE frames whose source was not learned: the table was full (a flood of sources never evicts known neighbours), or the source is known with another MAC (only ARP / ND move a neighbour)',
  },
  { name: 'neigh_pending_evictions', unit: 'calls', doc: 'outstanding ARP / ND solicitations forgotten to keep their table within neighborCapacity' },
]);

export const enum PortCtr {
  RX_PACKETS = 0,
  RX_BYTES,
  TX_PACKETS,
  TX_BYTES,
  TX_DROPPED,
  RX_IGNORED,
  RX_RDMA_PACKETS,
  RX_MAC_CONTROL_PACKETS,
  RX_ARP_ND_ERRORS,
  ARP_REQUESTS_RCVD,
  ARP_REPLIES_RCVD,
  ARP_REQUESTS_SENT,
  ARP_REPLIES_SENT,
  ND_NS_RCVD,
  ND_NA_RCVD,
  ND_NS_SENT,
  ND_NA_SENT,
  NEIGH_RESOLVE_MISSES,
  NEIGH_UPDATES,
  NEIGH_EVICTIONS,
  NEIGH_LEARN_DROPPED,
  NEIGH_PENDING_EVICTIONS,
  COUNT,
}

// ---- types -----------------------------------------------------------------

/** The clock the port is handed: simulated or wall time, in nanoseconds. */
export interface PortClock {
  nowNs(): bigint;
}

/** Where transmitted frames go (a fabric CableEnd is one). Must copy the frame. */
export interface FrameSink {
  send(frame: Uint8Array): void;
  /**
   * Optional: takes the frame without copying it (the sender gives it away).
   * `priority` (0..7) is the transmit priority the frame is queued on, for
   * a sink with a priority arbiter (the simulator's MAC); others ignore it.
   */
  sendOwned?(frame: Uint8Array, priority?: number, spacingPs?: number): void;
}

/** A native InfiniBand port's link: its LIDs and SL-to-VL map (runtime/config.ts IbPortConfig). */
export interface IbLink {
  readonly lid: number;
  readonly lmc: number;
  /** VL of each SL 0..15. */
  readonly sl2vl: readonly number[];
}

/** What `receive` did with a frame. */
export type RxClass = 'consumed' | 'rdma' | 'mac-control' | 'ignored';

export type NeighborSource = 'arp' | 'nd' | 'roce' | 'static';

export interface NeighborInfo {
  /** Dotted IPv4 or RFC 5952 IPv6 text. */
  readonly ip: string;
  readonly mac: string;
  readonly source: NeighborSource;
  readonly updatedNs: bigint;
}

interface NeighborEntry {
  /** Never mutated: replaced on change, so a caller holding it sees a consistent value. */
  readonly mac: Uint8Array;
  readonly ip: Uint8Array;
  readonly source: NeighborSource;
  readonly updatedNs: bigint;
}

type AddrKey = number | string;

const BROADCAST = Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0xff, 0xff);
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

function isV4Mapped(a: Uint8Array, off = 0): boolean {
  for (let i = 0; i < 10; i++) if (a[off + i] !== 0) return false;
  return a[off + 10] === 0xff && a[off + 11] === 0xff;
}

/**
 * IPv4 as a signed 32-bit number (a small integer: a lookup boxes no heap
 * number, as 192.0.2.1 >>> 0 would); IPv6 as hex text. The v4-mapped form
 * keys as its IPv4.
 */
function keyAt(a: Uint8Array, off: number, len: 4 | 16): AddrKey {
  if (len === 16 && isV4Mapped(a, off)) off += 12;
  else if (len === 16) {
    let s = '';
    for (let i = 0; i < 16; i++) s += HEX[a[off + i]!];
    return s;
  }
  return (a[off]! << 24) | (a[off + 1]! << 16) | (a[off + 2]! << 8) | a[off + 3]!;
}

function sameMac(a: Uint8Array, aOff: number, b: Uint8Array): boolean {
  for (let i = 0; i < 6; i++) if (a[aOff + i] !== b[i]) return false;
  return true;
}

/** a[aOff, aOff+n) equals b[bOff, bOff+n). */
function sameBytes(a: Uint8Array, aOff: number, b: Uint8Array, n: number, bOff = 0): boolean {
  for (let i = 0; i < n; i++) if (a[aOff + i] !== b[bOff + i]) return false;
  return true;
}

function isStationMacAt(m: Uint8Array, o: number): boolean {
  return (m[o]! & 1) === 0 && (m[o]! | m[o + 1]! | m[o + 2]! | m[o + 3]! | m[o + 4]! | m[o + 5]!) !== 0;
}

function isStationMac(m: Uint8Array): boolean {
  return (m[0]! & 1) === 0 && (m[0]! | m[1]! | m[2]! | m[3]! | m[4]! | m[5]!) !== 0;
}

function ipText(ip: Uint8Array): string {
  return ip.length === 4 ? formatIpv4(ip) : formatIpv6(ip);
}

function linkLocalOf(mac: Uint8Array): Uint8Array {
  const g = new Uint8Array(16);
  g[0] = 0xfe;
  g[1] = 0x80;
  g.set([mac[0]! ^ 0x02, mac[1]!, mac[2]!, 0xff, 0xfe, mac[3]!, mac[4]!, mac[5]!], 8);
  return g;
}

// ---- the port --------------------------------------------------------------

export class EthPort {
  readonly params: EthPortParams;
  /** The counters, indexed by PortCtr (see ETH_PORT_COUNTERS). May be a view of shared memory. */
  readonly counterArray: Float64Array;
  /**
   * What PFC / PAUSE frames received say about our 8 transmit priorities,
   * and what we have sent (the ethtool rx_prio<N>_pause... counters).
   * The runtime sets its link rate when it cables the port.
   */
  readonly pause = new PriorityPause();

  readonly #clock: PortClock;
  readonly #mac: Uint8Array;
  /** Our IPv4 addresses (4 bytes) and IPv6 addresses (16 bytes), in GID order. */
  #v4: Uint8Array[] = [];
  #v6: Uint8Array[] = [];
  readonly #own = new Map<AddrKey, Uint8Array>();
  /** #ownsAt's last hit (an IPv4 key) and the #neighGen it was found in; -1: none yet. */
  #ownHit = 0;
  #ownHitGen = -1;
  readonly #neigh = new Map<AddrKey, NeighborEntry>();
  /** Unresolved addresses: when the last solicitation went out. */
  readonly #pending = new Map<AddrKey, bigint>();
  /** Bumped on every change to #neigh (see #learnFromRoce's shortcut). */
  #neighGen = 0;
  /** The last RoCE source found in the table unchanged: address (4 or 16 bytes) at 0, MAC at 16. */
  readonly #lastSrc = new Uint8Array(22);
  #lastSrcLen = 0;
  #lastSrcGen = -1;
  #sink: FrameSink | null = null;
  #capture: PcapWriter | null = null;

  /**
   * `params` from `resolveEthPortParams`. `counters`, when given, must hold
   * ETH_PORT_COUNTERS.length slots (e.g. a Float64Array over a
   * SharedArrayBuffer that another thread reads).
   */
  /**
   * The native InfiniBand link of this port, or null for Ethernet. An IB
   * port frames LRH (+GRH) ... VCRC: no MAC filter, ARP, ND or PFC; every
   * frame goes to the RDMA receive path, which checks VCRC and DLID.
   */
  readonly ib: IbLink | null;
  /** LINKTYPE_ETHERNET or LINKTYPE_INFINIBAND: how the port's frames decode and capture. */
  readonly linktype: number;

  constructor(params: EthPortParams, clock: PortClock, counters?: Float64Array, ib: IbLink | null = null) {
    this.params = params;
    this.ib = ib;
    this.linktype = ib ? LINKTYPE_INFINIBAND : LINKTYPE_ETHERNET;
    this.#clock = clock;
    this.#mac = parseMac(params.macAddress);
    if (counters && counters.length < PortCtr.COUNT) {
      throw new EthPortError('PORT_BAD_CONFIG', `counter array has ${counters.length} slots, needs ${PortCtr.COUNT}`);
    }
    this.counterArray = counters ?? new Float64Array(PortCtr.COUNT);
    if (params.linkLocal) this.addAddress(linkLocalOf(this.#mac));
    for (const a of params.ipv4Addresses) this.addAddress(parseIpv4(a));
    for (const a of params.ipv6Addresses) this.addAddress(parseIpv6(a));
  }

  /** The port's link rate, b/s (what the runtime cabled it at; PAUSE quanta and pacing use it). */
  get linkRateBps(): number {
    return this.pause.linkRateBps;
  }

  /** A copy of the port's MAC address. */
  get mac(): Uint8Array {
    return this.#mac.slice();
  }

  // ---- addresses and GIDs --------------------------------------------------

  /** Adds an IPv4 (4 bytes, or a v4-mapped GID) or IPv6 address. Adding one twice is harmless. */
  addAddress(ip: Uint8Array): void {
    const { key, v4, bytes } = this.#normalize(ip, 'addAddress');
    if (this.#own.has(key)) return;
    if (v4) {
      if (!isStationIpv4(bytes)) throw new EthPortError('PORT_BAD_ADDRESS', `addAddress: ${formatIpv4(bytes)} is not a station address`);
      this.#v4.push(bytes);
    } else {
      if (bytes[0] === 0xff || isIpv6Unspecified(bytes))
        throw new EthPortError('PORT_BAD_ADDRESS', `addAddress: ${formatIpv6(bytes)} is not a station address`);
      this.#v6.push(bytes);
    }
    this.#own.set(key, bytes);
    this.#neighGen++;
    this.#neigh.delete(key);
    this.#pending.delete(key);
  }

  /** Removes an address; returns whether it was there. */
  removeAddress(ip: Uint8Array): boolean {
    const { key } = this.#normalize(ip, 'removeAddress');
    const bytes = this.#own.get(key);
    if (!bytes) return false;
    this.#own.delete(key);
    this.#neighGen++;
    this.#v4 = this.#v4.filter((a) => a !== bytes);
    this.#v6 = this.#v6.filter((a) => a !== bytes);
    return true;
  }

  /** Our IPv4 addresses (copies). */
  ipv4Addresses(): Uint8Array[] {
    return this.#v4.map((a) => a.slice());
  }

  /** Our IPv6 addresses, the link-local one first when enabled (copies). */
  ipv6Addresses(): Uint8Array[] {
    return this.#v6.map((a) => a.slice());
  }

  /**
   * The port's GIDs, as the GID table would hold them: the link-local
   * address (when enabled), then an IPv4-mapped GID per IPv4 address, then
   * the other IPv6 addresses. Fresh copies.
   */
  gids(): Uint8Array[] {
    const out: Uint8Array[] = [];
    const ll = this.params.linkLocal ? this.#v6.find((a) => a[0] === 0xfe && (a[1]! & 0xc0) === 0x80) : undefined;
    if (ll) out.push(ll.slice());
    for (const a of this.#v4) {
      const g = new Uint8Array(16);
      g[10] = 0xff;
      g[11] = 0xff;
      g.set(a, 12);
      out.push(g);
    }
    for (const a of this.#v6) if (a !== ll) out.push(a.slice());
    return out;
  }

  /** Whether `ip` (IPv4, IPv6 or GID) is one of ours. */
  owns(ip: Uint8Array): boolean {
    return this.#own.has(this.#normalize(ip, 'owns').key);
  }

  #normalize(ip: Uint8Array, op: string): { key: AddrKey; v4: boolean; bytes: Uint8Array } {
    if (ip.length === 4) return { key: keyAt(ip, 0, 4), v4: true, bytes: ip.slice() };
    if (ip.length === 16) {
      if (isV4Mapped(ip)) return { key: keyAt(ip, 12, 4), v4: true, bytes: ip.slice(12, 16) };
      return { key: keyAt(ip, 0, 16), v4: false, bytes: ip.slice() };
    }
    throw new EthPortError('PORT_BAD_ADDRESS', `${op}: an address is 4 (IPv4) or 16 (IPv6 / GID) bytes, got ${ip.length}`);
  }

  // ---- cable and capture ---------------------------------------------------

  /** Connects the port to a cable end (or disconnects it with null). */
  attach(sink: FrameSink | null): void {
    this.#sink = sink;
  }

  /**
   * Starts (writer) or stops (null) capturing every frame in and out, with
   * the clock's time. The port does not close the writer it is given.
   */
  setCapture(writer: PcapWriter | null): void {
    if (writer && writer.linktype !== this.linktype) {
      const what = this.ib ? 'InfiniBand' : 'Ethernet';
      throw new EthPortError('PORT_BAD_CAPTURE', `capture writer has link type ${writer.linktype}, the port writes ${what} (${this.linktype})`);
    }
    this.#capture = writer;
  }

  /** Sends a frame out of the port. With no cable attached it is dropped and counted. */
  transmit(frame: Uint8Array): void {
    this.transmitOwned(frame);
  }

  /**
   * Sends an 802.1Qbb PFC frame from this port: priority p is asked to
   * hold for `pauseTimes[p]` quanta when bit p of `classEnable` is set
   * (0 = XON). Counted in tx_prio<p>_pause and tx_prio<p>_pause_duration.
   */
  sendPfc(classEnable: number, pauseTimes: readonly number[]): void {
    if (!Number.isInteger(classEnable) || classEnable < 0 || classEnable > 0xff) {
      throw new EthPortError('PORT_BAD_CONFIG', `sendPfc: the class-enable vector is 8 bits, got ${classEnable}`);
    }
    if (pauseTimes.length !== 8 || pauseTimes.some((t) => !Number.isInteger(t) || t < 0 || t > 0xffff)) {
      throw new EthPortError('PORT_BAD_CONFIG', `sendPfc: 8 pause times of 0..65535 quanta, got ${JSON.stringify(pauseTimes)}`);
    }
    this.transmit(encodePfc(this.#mac, classEnable, pauseTimes));
  }

  /**
   * Sends a frame the caller gives away when the cable can take it without a
   * copy; returns true if it did (the caller must not reuse the frame), false
   * if the cable copied it (or dropped it) and the caller still owns it.
   */
  transmitOwned(frame: Uint8Array, priority = 0, spacingPs = -1): boolean {
    const c = this.counterArray;
    const sink = this.#sink;
    if (!sink) {
      c[PortCtr.TX_DROPPED]!++;
      return false;
    }
    if (this.#capture) this.#capture.write(frame, this.#clock.nowNs());
    c[PortCtr.TX_PACKETS]!++;
    c[PortCtr.TX_BYTES]! += frame.length;
    if (frame[12] === 0x88 && frame[13] === 0x08 && this.ib === null) this.pause.noteTransmit(frame, Number(this.#clock.nowNs()) * 1000);
    if (sink.sendOwned) {
      sink.sendOwned(frame, priority, spacingPs);
      return true;
    }
    sink.send(frame);
    return false;
  }

  // ---- receive -------------------------------------------------------------

  /**
   * Takes one frame from the cable and says what it is. ARP and ND are
   * handled here (answered, learned from) and 'consumed'; RoCE for one of
   * our addresses is 'rdma' (its source is learned); PAUSE / PFC is
   * 'mac-control'; the rest is 'ignored' and counted. Never throws on
   * frame contents. The frame is not kept.
   */
  receive(frame: Uint8Array): RxClass {
    const c = this.counterArray;
    if (this.#capture) this.#capture.write(frame, this.#clock.nowNs());
    c[PortCtr.RX_PACKETS]!++;
    c[PortCtr.RX_BYTES]! += frame.length;
    if (this.ib !== null) return this.#rdma();
    // The Ethernet header read in place (no views, no objects): dst at 0, src at 6.
    if (frame.length < ETH_HEADER_LENGTH || !this.#acceptsDst(frame)) return this.#ignore();
    let p = 12;
    let etherType = (frame[12]! << 8) | frame[13]!;
    if (etherType === EtherType.VLAN) {
      if (frame.length < ETH_HEADER_LENGTH + 4) return this.#ignore();
      p = 16;
      etherType = (frame[16]! << 8) | frame[17]!;
    }
    p += 2;
    switch (etherType) {
      case EtherType.ARP:
        this.#onArp(frame);
        return 'consumed';
      case EtherType.MAC_CONTROL:
        c[PortCtr.RX_MAC_CONTROL_PACKETS]!++;
        // The MAC acts on PAUSE / PFC at once, from the time the frame has arrived.
        this.pause.receive(frame, Number(this.#clock.nowNs()) * 1000);
        return 'mac-control';
      case EtherType.ROCE: {
        // GRH: SGID at +8, DGID at +24. A truncated one goes to the parser, which counts it.
        if (frame.length >= p + 40) {
          if (!this.#ownsAt(frame, p + 24, 16)) return this.#ignore();
          this.#learnFromRoce(frame, p + 8, 16);
        }
        return this.#rdma();
      }
      case EtherType.IPV4: {
        if (frame.length < p + 20 || frame[p]! >>> 4 !== 4) return this.#ignore();
        const ihl = (frame[p]! & 0xf) * 4;
        const udp = p + ihl;
        if (ihl < 20 || frame[p + 9] !== IP_PROTO_UDP || frame.length < udp + 4) return this.#ignore();
        if (((frame[udp + 2]! << 8) | frame[udp + 3]!) !== ROCE_V2_UDP_PORT) return this.#ignore();
        if (!this.#ownsAt(frame, p + 16, 4)) return this.#ignore();
        this.#learnFromRoce(frame, p + 12, 4);
        return this.#rdma();
      }
      case EtherType.IPV6: {
        if (frame.length < p + 40 || frame[p]! >>> 4 !== 6) return this.#ignore();
        const nh = frame[p + 6];
        if (nh === IP_PROTO_ICMPV6) {
          const t = ndMessageType(frame);
          if (t !== Icmpv6Type.NEIGHBOR_SOLICITATION && t !== Icmpv6Type.NEIGHBOR_ADVERTISEMENT) return this.#ignore();
          this.#onNd(frame);
          return 'consumed';
        }
        const udp = p + 40;
        if (nh !== IP_PROTO_UDP || frame.length < udp + 4) return this.#ignore();
        if (((frame[udp + 2]! << 8) | frame[udp + 3]!) !== ROCE_V2_UDP_PORT) return this.#ignore();
        if (!this.#ownsAt(frame, p + 24, 16)) return this.#ignore();
        this.#learnFromRoce(frame, p + 8, 16);
        return this.#rdma();
      }
      default:
        return this.#ignore();
    }
  }

  #ignore(): RxClass {
    this.counterArray[PortCtr.RX_IGNORED]!++;
    return 'ignored';
  }

  #rdma(): RxClass {
    this.counterArray[PortCtr.RX_RDMA_PACKETS]!++;
    return 'rdma';
  }

  /**
   * Whether the address at frame[off, off+len) is one of ours, without a
   * key: IPv4 as a number, IPv6 compared byte by byte with our few
   * addresses (a v4-mapped GID as its IPv4).
   */
  #ownsAt(frame: Uint8Array, off: number, len: 4 | 16): boolean {
    if (len === 16 && isV4Mapped(frame, off)) {
      off += 12;
      len = 4;
    }
    // RoCE to a multicast group: the NIC delivers it to the QPs attached to the group, if any.
    if (len === 4 ? (frame[off]! & 0xf0) === 0xe0 : frame[off] === 0xff) return true;
    if (len === 4) {
      // The last address found ours, kept until an address is removed (#neighGen): one Map lookup fewer per frame.
      const key = (frame[off]! << 24) | (frame[off + 1]! << 16) | (frame[off + 2]! << 8) | frame[off + 3]!;
      if (key === this.#ownHit && this.#ownHitGen === this.#neighGen) return true;
      if (!this.#own.has(key)) return false;
      this.#ownHit = key;
      this.#ownHitGen = this.#neighGen;
      return true;
    }
    for (const a of this.#v6) if (sameBytes(frame, off, a, 16)) return true;
    return false;
  }

  /** The MAC filter: our address, broadcast, PAUSE/PFC, IPv6 all-nodes and our solicited-node groups, IP multicast groups (dst at d[0..6)). */
  #acceptsDst(d: Uint8Array): boolean {
    if (this.params.promiscuous) return true;
    if ((d[0]! & 1) === 0) return sameMac(d, 0, this.#mac);
    if (sameMac(d, 0, BROADCAST)) return true;
    if (d[0] === 0x01 && d[1] === 0x80 && d[2] === 0xc2 && d[3] === 0 && d[4] === 0 && d[5] === 0x01) return true;
    // IPv4 multicast (RFC 1112 MACs): RoCE v2 multicast groups; the IP layer decides.
    if (d[0] === 0x01 && d[1] === 0x00 && d[2] === 0x5e && (d[3]! & 0x80) === 0) return true;
    if (d[0] === 0x33 && d[1] === 0x33) {
      if (d[2] === 0 && d[3] === 0 && d[4] === 0 && d[5] === 1) return true;
      // Other IPv6 groups than solicited-node ones (33:33:ff:...): RoCE multicast groups.
      if (d[2] !== 0xff) return true;
      if (d[2] === 0xff) {
        for (const a of this.#v6) if (a[13] === d[3] && a[14] === d[4] && a[15] === d[5]) return true;
      }
    }
    return false;
  }

  #onArp(frame: Uint8Array): void {
    const c = this.counterArray;
    const r = decodeArpFrame(frame);
    if (!r.ok) {
      c[PortCtr.RX_ARP_ND_ERRORS]!++;
      return;
    }
    const { arp, eth } = r.frame;
    const senderKey = keyAt(arp.senderIp, 0, 4);
    const forUs = this.#own.has(keyAt(arp.targetIp, 0, 4));
    const senderUsable = senderKey !== 0 && isStationMac(arp.senderMac) && !this.#own.has(senderKey);
    if (arp.op === ArpOp.REQUEST) {
      c[PortCtr.ARP_REQUESTS_RCVD]!++;
      // RFC 826 merge: refresh a known or pending entry; create one if the request is for us.
      if (senderUsable && (forUs || this.#neigh.has(senderKey) || this.#pending.has(senderKey))) {
        this.#learn(senderKey, arp.senderIp, arp.senderMac, 'arp');
      }
      if (forUs) {
        // A probe (sender 0.0.0.0) is answered too, so the prober sees the conflict.
        this.transmit(encodeArpReply(this.#mac, arp.targetIp, arp.senderMac, arp.senderIp, eth.vlan));
        c[PortCtr.ARP_REPLIES_SENT]!++;
      }
    } else {
      c[PortCtr.ARP_REPLIES_RCVD]!++;
      if (senderUsable && (forUs || this.#neigh.has(senderKey) || this.#pending.has(senderKey))) {
        this.#learn(senderKey, arp.senderIp, arp.senderMac, 'arp');
      }
    }
  }

  #onNd(frame: Uint8Array): void {
    const c = this.counterArray;
    const r = decodeNdFrame(frame);
    if (!r.ok) {
      c[PortCtr.RX_ARP_ND_ERRORS]!++;
      return;
    }
    const { eth, ipv6, message: m } = r.frame;
    const targetKey = keyAt(m.target, 0, 16);
    const forUs = this.#own.has(targetKey);
    if (m.type === Icmpv6Type.NEIGHBOR_SOLICITATION) {
      c[PortCtr.ND_NS_RCVD]!++;
      const dad = isIpv6Unspecified(ipv6.src);
      if (!dad && m.sourceLinkAddr && isStationMac(m.sourceLinkAddr)) {
        const srcKey = keyAt(ipv6.src, 0, 16);
        if (!this.#own.has(srcKey) && (forUs || this.#neigh.has(srcKey) || this.#pending.has(srcKey))) {
          this.#learn(srcKey, ipv6.src, m.sourceLinkAddr, 'nd');
        }
      }
      if (forUs) {
        // RFC 4861 §7.2.4: to the soliciting node, or to all-nodes (S=0) when it has no address yet.
        const na = dad
          ? encodeNeighborAdvertisement(
              this.#mac,
              m.target,
              ipv6MulticastMac(ALL_NODES_ADDRESS),
              ALL_NODES_ADDRESS,
              { solicited: false, override: true },
              eth.vlan,
            )
          : encodeNeighborAdvertisement(this.#mac, m.target, m.sourceLinkAddr ?? eth.src, ipv6.src, { solicited: true, override: true }, eth.vlan);
        this.transmit(na);
        c[PortCtr.ND_NA_SENT]!++;
      }
    } else {
      c[PortCtr.ND_NA_RCVD]!++;
      const mac = m.targetLinkAddr ?? eth.src;
      if (!forUs && isStationMac(mac) && (m.solicited || this.#neigh.has(targetKey) || this.#pending.has(targetKey))) {
        this.#learn(targetKey, m.target, mac, 'nd');
      }
    }
  }

  /**
   * Learns the source of a RoCE frame (MAC at frame[6..12)). The steady
   * state (the same neighbour again) builds no key: the last source learned
   * or confirmed is remembered with the table's generation, and a frame
   * from it while the table is unchanged returns at once.
   */
  #learnFromRoce(frame: Uint8Array, srcOff: number, len: 4 | 16): void {
    const last = this.#lastSrc;
    if (this.#lastSrcGen === this.#neighGen && this.#lastSrcLen === len && sameBytes(frame, srcOff, last, len) && sameBytes(frame, 6, last, 6, 16)) return;
    if (!isStationMacAt(frame, 6)) return;
    // Never learn a multicast, broadcast, unspecified or own source.
    if (len === 4 || isV4Mapped(frame, srcOff)) {
      const b = frame[len === 4 ? srcOff : srcOff + 12]!;
      if (b === 0 || b >= 224) return;
    } else if (frame[srcOff] === 0xff || isIpv6Unspecified(frame.subarray(srcOff, srcOff + 16))) {
      return;
    }
    const key = keyAt(frame, srcOff, len);
    if (this.#own.has(key)) return;
    const e = this.#neigh.get(key);
    if (e && sameMac(frame, 6, e.mac)) {
      // The common case: nothing changed. Remember it, so the next frame from it costs no key.
      for (let i = 0; i < len; i++) last[i] = frame[srcOff + i]!;
      for (let i = 0; i < 6; i++) last[16 + i] = frame[6 + i]!;
      this.#lastSrcLen = len;
      this.#lastSrcGen = this.#neighGen;
      return;
    }
    if (e) {
      // A RoCE frame is not proof of a new MAC (it is learned before its ICRC is
      // checked): only ARP, ND or a static entry moves a known neighbour.
      this.counterArray[PortCtr.NEIGH_LEARN_DROPPED]!++;
      return;
    }
    this.#learn(key, frame.subarray(srcOff, srcOff + len), frame.subarray(6, 12), 'roce');
  }

  #learn(key: AddrKey, ip: Uint8Array, mac: Uint8Array, source: NeighborSource): void {
    this.#neighGen++;
    const old = this.#neigh.get(key);
    this.#pending.delete(key);
    const now = this.#clock.nowNs();
    if (old) {
      this.#neigh.delete(key); // re-insert: Map order is least recently updated first
      if (sameMac(old.mac, 0, mac)) {
        this.#neigh.set(key, { ...old, source, updatedNs: now });
        return;
      }
    } else if (this.#neigh.size >= this.params.neighborCapacity) {
      if (source === 'roce') {
        // Learning from RoCE sources is the model's convenience, not a protocol: a
        // flood of forged sources must not push out the neighbours traffic uses.
        this.counterArray[PortCtr.NEIGH_LEARN_DROPPED]!++;
        return;
      }
      this.#neigh.delete(this.#neigh.keys().next().value!);
      this.counterArray[PortCtr.NEIGH_EVICTIONS]!++;
    }
    const ipBytes = ip.length === 16 && isV4Mapped(ip) ? ip.slice(12, 16) : ip.slice();
    this.#neigh.set(key, { ip: ipBytes, mac: mac.slice(0, 6), source, updatedNs: now });
    this.counterArray[PortCtr.NEIGH_UPDATES]!++;
  }

  // ---- resolution ----------------------------------------------------------

  /**
   * The MAC to send to `ipOrGid`, or null when it is not known yet. On a
   * miss, an ARP request (IPv4 / v4-mapped GID) or a Neighbor Solicitation
   * (IPv6) goes out, at most one per address per `solicitInterval`; the
   * caller holds its packet and asks again later. `from` picks the source
   * address of the solicitation (default: the first IPv4 address, or the
   * IPv6 address of the same scope). Multicast and broadcast addresses map
   * to their group MACs. The returned array must not be modified.
   */
  resolve(ipOrGid: Uint8Array, from?: Uint8Array): Uint8Array | null {
    const len = ipOrGid.length;
    if (len !== 4 && len !== 16) throw new EthPortError('PORT_BAD_ADDRESS', `resolve: an address is 4 or 16 bytes, got ${len}`);
    const key = keyAt(ipOrGid, 0, len);
    const hit = this.#neigh.get(key);
    if (hit) return hit.mac;
    const isV4 = typeof key === 'number';
    const group = isV4 ? v4GroupMac(key) : ipOrGid[0] === 0xff ? ipv6MulticastMac(ipOrGid) : null;
    if (group) return group;
    if (this.#own.has(key)) return this.#mac;
    this.counterArray[PortCtr.NEIGH_RESOLVE_MISSES]!++;
    const now = this.#clock.nowNs();
    const last = this.#pending.get(key);
    if (last !== undefined && now - last < this.params.solicitInterval) return null;
    const src = this.#sourceFor(ipOrGid, isV4, from);
    if (!src) return null; // no address of that family to ask from
    if (last === undefined && this.#pending.size >= this.params.neighborCapacity) {
      this.#pending.delete(this.#pending.keys().next().value!);
      this.counterArray[PortCtr.NEIGH_PENDING_EVICTIONS]!++;
    }
    this.#pending.delete(key);
    this.#pending.set(key, now);
    if (isV4) {
      const target = len === 4 ? ipOrGid : ipOrGid.subarray(12, 16);
      this.transmit(encodeArpRequest(this.#mac, src, target));
      this.counterArray[PortCtr.ARP_REQUESTS_SENT]!++;
    } else {
      this.transmit(encodeNeighborSolicitation(this.#mac, src, ipOrGid));
      this.counterArray[PortCtr.ND_NS_SENT]!++;
    }
    return null;
  }

  #sourceFor(target: Uint8Array, isV4: boolean, from: Uint8Array | undefined): Uint8Array | null {
    if (from && (from.length === 4 || from.length === 16)) {
      const k = keyAt(from, 0, from.length as 4 | 16);
      const mine = this.#own.get(k);
      if (mine && (mine.length === 4) === isV4) return mine;
    }
    if (isV4) return this.#v4[0] ?? null;
    const wantLinkLocal = target[0] === 0xfe && (target[1]! & 0xc0) === 0x80;
    return this.#v6.find((a) => (a[0] === 0xfe && (a[1]! & 0xc0) === 0x80) === wantLinkLocal) ?? this.#v6[0] ?? null;
  }

  /** Sets a static neighbour entry (as `ip neigh add ... lladdr`). */
  setNeighbor(ip: Uint8Array, mac: Uint8Array): void {
    const { key, bytes } = this.#normalize(ip, 'setNeighbor');
    if (mac.length !== 6 || !isStationMac(mac)) throw new EthPortError('PORT_BAD_ADDRESS', `setNeighbor: ${formatMac(mac)} is not a station MAC`);
    this.#learn(key, bytes, mac, 'static');
  }

  /** Forgets one neighbour (or all with no argument). */
  forgetNeighbor(ip?: Uint8Array): void {
    this.#neighGen++;
    if (!ip) {
      this.#neigh.clear();
      this.#pending.clear();
      return;
    }
    const { key } = this.#normalize(ip, 'forgetNeighbor');
    this.#neigh.delete(key);
    this.#pending.delete(key);
  }

  /** The neighbour table, least recently updated first. */
  neighbors(): NeighborInfo[] {
    return Array.from(this.#neigh.values(), (e) => ({ ip: ipText(e.ip), mac: formatMac(e.mac), source: e.source, updatedNs: e.updatedNs }));
  }

  // ---- counters ------------------------------------------------------------

  /** The counters by name, the PFC ones (PFC_COUNTERS) after the port's own. */
  counters(): Record<string, number> {
    const out: Record<string, number> = {};
    ETH_PORT_COUNTERS.forEach((d, i) => {
      out[d.name] = this.counterArray[i]!;
    });
    return Object.assign(out, this.pause.counters(Number(this.#clock.nowNs()) * 1000));
  }
}

/** (keyAt's signed key) 255.255.255.255 → broadcast; 224.0.0.0/4 → 01:00:5e + low 23 bits (RFC 1112); else null. */
function v4GroupMac(key: number): Uint8Array | null {
  if (key === -1) return BROADCAST.slice();
  if (key >>> 28 !== 0xe) return null;
  return Uint8Array.of(0x01, 0x00, 0x5e, (key >>> 16) & 0x7f, (key >>> 8) & 0xff, key & 0xff);
}
