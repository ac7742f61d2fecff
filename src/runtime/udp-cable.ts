/**
 * An Ethernet cable over UDP, in QEMU's `-netdev socket,udp=...` convention:
 * each Ethernet frame, without FCS, is exactly one UDP datagram payload,
 * with no header of its own. Either end can be QEMU (virtio-net, e1000, ...),
 * another model process, or anything else that speaks the convention.
 *
 *   ours:  UdpCable.open({ local: '127.0.0.1:5001', remote: '127.0.0.1:5000' })
 *   QEMU:  -netdev socket,id=n0,udp=127.0.0.1:5001,localaddr=127.0.0.1:5000
 *
 * This is an I/O adapter: it owns a socket and is driven by the event loop
 * of the thread that opened it. Only the realtime runtime uses it; pipeline
 * stages and the simulator never import it.
 */
import * as dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import * as os from 'node:os';
import { isIPv4, isIPv6 } from 'node:net';
import { formatIpv6, parseIpv6 } from '../wire/ip.js';
import { ETH_HEADER_LENGTH } from '../wire/ethernet.js';
import { type CableEnd, type CableStats, FabricError, type FrameHandler, type StatDecl } from '../fabric/cable.js';

/** 9000-byte MTU + Ethernet header + one 802.1Q tag, no FCS. */
export const JUMBO_FRAME_BYTES = 9018;
/** The largest UDP payload over IPv4. */
export const MAX_UDP_PAYLOAD = 65507;

export interface UdpEndpoint {
  /** Literal address, without brackets. */
  readonly address: string;
  readonly port: number;
  readonly family: 4 | 6;
}

export interface UdpCableOptions {
  /** Where we bind: 'a.b.c.d:port' or '[v6]:port'. Port 0 picks a free port (see `localEndpoint`). */
  local: string;
  /** Where frames go: the peer's own bound address ('host:port', port 1..65535). */
  remote: string;
  /** Datagrams (either way) above this are dropped and counted; default 9018 (jumbo). */
  maxFrameBytes?: number;
  /** Accept datagrams only from `remote` (default), or from any sender. */
  acceptFrom?: 'remote' | 'any';
  /** SO_RCVBUF / SO_SNDBUF in bytes (default: the OS default; Linux caps at rmem_max/wmem_max). */
  socketBufferBytes?: number;
}

export interface UdpCableStats extends CableStats {
  /** Received datagrams dropped for being longer than maxFrameBytes. */
  readonly rxTooLarge: number;
  /** Received datagrams dropped for being shorter than an Ethernet header. */
  readonly rxTooSmall: number;
  /** Received datagrams dropped because they did not come from `remote`. */
  readonly rxForeign: number;
  /** Received datagrams dropped because no handler was set, or after close. */
  readonly rxNoHandler: number;
  /** Frames not sent: shorter than 14 bytes or longer than maxFrameBytes. */
  readonly txBadSize: number;
  /** Frames not sent because the cable was closed. */
  readonly txClosed: number;
  /** Sends the OS refused (reported by the send callback). */
  readonly txErrors: number;
  /** Datagrams the OS dropped because the receive buffer was full (Linux /proc/net/udp `drops`; -1 where it cannot be seen). */
  readonly rxSocketDrops: number;
}

/** Descriptions of the UDP-specific counters (STYLE §7); the common ones are CABLE_STATS. */
export const UDP_CABLE_STATS: readonly StatDecl[] = Object.freeze([
  { name: 'rxTooLarge', unit: 'datagrams', doc: 'received datagrams longer than maxFrameBytes, dropped' },
  { name: 'rxTooSmall', unit: 'datagrams', doc: 'received datagrams shorter than 14 bytes (an Ethernet header), dropped' },
  { name: 'rxForeign', unit: 'datagrams', doc: 'received datagrams from an address other than remote, dropped' },
  { name: 'rxNoHandler', unit: 'datagrams', doc: 'received datagrams with no handler set or after close, dropped' },
  { name: 'txBadSize', unit: 'frames', doc: 'frames shorter than 14 bytes or longer than maxFrameBytes, not sent' },
  { name: 'txClosed', unit: 'frames', doc: 'frames sent after close, not sent' },
  { name: 'txErrors', unit: 'errors', doc: 'datagrams the OS failed to send' },
  {
    name: 'rxSocketDrops',
    unit: 'datagrams',
    doc: 'datagrams the OS dropped for want of receive-buffer space (Linux /proc/net/udp `drops`; -1 if not visible)',
  },
]);

/** What the usual bind failures mean for a cable. */
const BIND_ERRORS: Readonly<Record<string, string>> = {
  EADDRINUSE: 'another socket is bound to it: a second model process with the same file, a VM or an older run still up',
  EADDRNOTAVAIL: 'not an address of this host',
  EACCES: 'permission denied: ports below 1024 need privileges',
};

/** The default SO_RCVBUF / SO_SNDBUF request: 4 MiB (Linux caps it at net.core.rmem_max / wmem_max). */
export const DEFAULT_SOCKET_BUFFER_BYTES = 4 << 20;

function badAddress(what: string, text: unknown, why: string): never {
  throw new FabricError('FABRIC_BAD_ADDRESS', `${what} address ${JSON.stringify(text)}: ${why}`);
}

/**
 * Parses 'a.b.c.d:port' or '[v6]:port' (a literal address: no name lookup,
 * so a run does not depend on a resolver). `allowPortZero` for a local
 * address that should take a free port.
 */
export function parseUdpEndpoint(text: unknown, what: string, allowPortZero = false): UdpEndpoint {
  if (typeof text !== 'string') badAddress(what, text, "expected a string 'host:port'");
  let host: string;
  let portText: string;
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close < 0 || text[close + 1] !== ':') badAddress(what, text, "an IPv6 address is written '[addr]:port'");
    host = text.slice(1, close);
    portText = text.slice(close + 2);
  } else {
    const colon = text.lastIndexOf(':');
    if (colon < 0) badAddress(what, text, "missing ':port'");
    host = text.slice(0, colon);
    portText = text.slice(colon + 1);
    if (host.includes(':')) badAddress(what, text, "an IPv6 address must be in brackets: '[addr]:port'");
  }
  if (!/^\d{1,5}$/.test(portText) || Number(portText) > 65535) badAddress(what, text, `port ${JSON.stringify(portText)} is not 0..65535`);
  const port = Number(portText);
  if (port === 0 && !allowPortZero) badAddress(what, text, 'port 0 is only allowed for the local address');
  let family: 4 | 6;
  if (isIPv4(host)) family = 4;
  else if (isIPv6(host)) family = 6;
  else if (host === '') badAddress(what, text, 'missing host');
  else badAddress(what, text, `host ${JSON.stringify(host)} is not a literal IPv4 or IPv6 address (no name lookup; for localhost write 127.0.0.1)`);
  return { address: host, port, family };
}

/**
 * The addresses of a cable, checked as `open` checks them but without a
 * socket (the configuration checks them up front). Throws
 * FABRIC_BAD_ADDRESS; the message starts with the field at fault, 'local'
 * or 'remote'.
 */
export function checkUdpAddresses(localText: unknown, remoteText: unknown): { local: UdpEndpoint; remote: UdpEndpoint } {
  const local = parseUdpEndpoint(localText, 'local', true);
  if (isMulticastOrBroadcast(local)) badAddress('local', localText, 'cannot bind a multicast or broadcast address');
  const remote = parseUdpEndpoint(remoteText, 'remote');
  if (local.family !== remote.family) {
    badAddress('remote', remoteText, `is IPv${remote.family} but local ${JSON.stringify(localText)} is IPv${local.family}`);
  }
  if (isUnspecified(remote)) badAddress('remote', remoteText, 'the unspecified address cannot be sent to');
  if (isMulticastOrBroadcast(remote)) badAddress('remote', remoteText, 'multicast and broadcast peers are not supported (QEMU mcast= mode is not implemented)');
  return { local, remote };
}

/** The text an endpoint is bound by, to find two cables binding one address ('[v6]:port' canonical). */
export function endpointText(e: UdpEndpoint): string {
  return e.family === 4 ? `${e.address}:${e.port}` : `[${canonical(e.address, 6)}]:${e.port}`;
}

function isUnspecified(e: UdpEndpoint): boolean {
  return e.family === 4 ? e.address === '0.0.0.0' : isAllZeroV6(e.address);
}

function isAllZeroV6(a: string): boolean {
  try {
    return parseIpv6(a.replace(/%.*$/, '')).every((b) => b === 0);
  } catch {
    return false;
  }
}

function isMulticastOrBroadcast(e: UdpEndpoint): boolean {
  if (e.family === 4) {
    const first = Number(e.address.split('.')[0]);
    return (first >= 224 && first <= 239) || e.address === '255.255.255.255';
  }
  return /^ff/i.test(e.address);
}

/** Canonical text of an address, to compare with what recvfrom reports. */
function canonical(address: string, family: 4 | 6): string {
  if (family === 4) return address;
  try {
    return formatIpv6(parseIpv6(address.replace(/%.*$/, '')));
  } catch {
    return address.toLowerCase();
  }
}

/** Hex of an address as /proc/net/udp{,6} writes it (host byte order words, little-endian here). */
function procHex(e: UdpEndpoint): string {
  const bytes = e.family === 4 ? e.address.split('.').map(Number) : [...parseIpv6(e.address.replace(/%.*$/, ''))];
  let out = '';
  for (let i = 0; i < bytes.length; i += 4) {
    for (let j = 3; j >= 0; j--) out += bytes[i + j]!.toString(16).padStart(2, '0');
  }
  return `${out.toUpperCase()}:${e.port.toString(16).toUpperCase().padStart(4, '0')}`;
}

/**
 * Receive-buffer drops of the socket bound to `local`: the last column of
 * Linux's /proc/net/udp. -1 where it cannot be read (not Linux, or a
 * big-endian host, where the address columns are written differently).
 */
function socketDrops(local: UdpEndpoint): number {
  if (process.platform !== 'linux' || os.endianness() !== 'LE') return -1;
  let text: string;
  try {
    text = readFileSync(local.family === 4 ? '/proc/net/udp' : '/proc/net/udp6', 'latin1');
  } catch {
    return -1;
  }
  const key = procHex(local);
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f[1] === key) return Number(f[f.length - 1]);
  }
  return -1;
}

export class UdpCable implements CableEnd {
  readonly localEndpoint: UdpEndpoint;
  readonly remoteEndpoint: UdpEndpoint;
  readonly maxFrameBytes: number;
  /** Resolves when the socket is closed. */
  readonly closed: Promise<void>;

  readonly #sock: dgram.Socket;
  readonly #acceptAny: boolean;
  readonly #remoteCanonical: string;
  #handler: FrameHandler | null = null;
  #isClosed = false;
  /** Sends handed to the OS whose callback has not come yet. */
  #inFlight = 0;
  #flushed: (() => void)[] = [];
  readonly #s = {
    framesSent: 0,
    bytesSent: 0,
    framesReceived: 0,
    bytesReceived: 0,
    framesDropped: 0,
    rxTooLarge: 0,
    rxTooSmall: 0,
    rxForeign: 0,
    rxNoHandler: 0,
    txBadSize: 0,
    txClosed: 0,
    txErrors: 0,
  };
  /** One callback for every send, not a closure per frame. */
  readonly #onSent = (err: Error | null) => {
    if (err) {
      this.#s.txErrors++;
      this.#s.framesDropped++;
    }
    if (--this.#inFlight === 0 && this.#flushed.length > 0) {
      const f = this.#flushed;
      this.#flushed = [];
      for (const r of f) r();
    }
  };

  /**
   * Binds `local` and returns the cable end, ready to send to `remote`.
   * Bad addresses reject with FABRIC_BAD_ADDRESS, bad options with
   * FABRIC_BAD_CONFIG, a failed bind with FABRIC_BIND_FAILED.
   */
  static async open(opts: UdpCableOptions): Promise<UdpCable> {
    const { local, remote } = checkUdpAddresses(opts.local, opts.remote);
    const max = opts.maxFrameBytes ?? JUMBO_FRAME_BYTES;
    if (!Number.isInteger(max) || max < ETH_HEADER_LENGTH || max > MAX_UDP_PAYLOAD) {
      throw new FabricError('FABRIC_BAD_CONFIG', `maxFrameBytes ${max} must be an integer in [${ETH_HEADER_LENGTH}, ${MAX_UDP_PAYLOAD}]`);
    }
    const bufBytes = opts.socketBufferBytes;
    if (bufBytes !== undefined && (!Number.isInteger(bufBytes) || bufBytes < 1024 || bufBytes > 1 << 30)) {
      throw new FabricError('FABRIC_BAD_CONFIG', `socketBufferBytes ${bufBytes} must be an integer in [1024, 2^30]`);
    }
    const acceptFrom = opts.acceptFrom ?? 'remote';
    if (acceptFrom !== 'remote' && acceptFrom !== 'any') {
      throw new FabricError('FABRIC_BAD_CONFIG', `acceptFrom ${JSON.stringify(acceptFrom)} is neither 'remote' nor 'any'`);
    }
    const sock = dgram.createSocket(local.family === 4 ? { type: 'udp4' } : { type: 'udp6', ipv6Only: true });
    await new Promise<void>((resolve, reject) => {
      const onError = (err: NodeJS.ErrnoException) => {
        sock.close();
        const why = err.code === undefined ? err.message : `${err.code}${BIND_ERRORS[err.code] ? ` (${BIND_ERRORS[err.code]})` : ''}`;
        const e = new FabricError('FABRIC_BIND_FAILED', `cannot bind UDP ${opts.local}: ${why}`);
        (e as { cause?: unknown }).cause = err;
        reject(e);
      };
      sock.once('error', onError);
      sock.bind({ address: local.address, port: local.port, exclusive: true }, () => {
        sock.off('error', onError);
        resolve();
      });
    });
    if (bufBytes !== undefined) {
      sock.setRecvBufferSize(bufBytes);
      sock.setSendBufferSize(bufBytes);
    }
    const bound = sock.address();
    return new UdpCable(sock, { ...local, port: bound.port }, remote, max, acceptFrom === 'any');
  }

  private constructor(sock: dgram.Socket, local: UdpEndpoint, remote: UdpEndpoint, max: number, acceptAny: boolean) {
    this.#sock = sock;
    this.localEndpoint = Object.freeze(local);
    this.remoteEndpoint = Object.freeze(remote);
    this.maxFrameBytes = max;
    this.#acceptAny = acceptAny;
    this.#remoteCanonical = canonical(remote.address, remote.family);
    // After bind, errors are per-datagram (ICMP-reported, etc.): count, never crash the model.
    sock.on('error', () => {
      this.#s.txErrors++;
    });
    sock.on('message', (msg, rinfo) => this.#receive(msg, rinfo));
    this.closed = new Promise((resolve) => sock.once('close', () => resolve()));
  }

  send(frame: Uint8Array): void {
    // A copy: the datagram may be queued in libuv after send() returns, and
    // the caller may reuse its buffer at once.
    this.#send(frame, true);
  }

  /** As `send`, for a frame the caller hands over and never touches again (no copy). */
  sendOwned(frame: Uint8Array): void {
    this.#send(frame, false);
  }

  /** Resolves when every datagram sent so far has been handed to the OS (or refused). */
  flush(): Promise<void> {
    if (this.#inFlight === 0) return Promise.resolve();
    return new Promise((r) => this.#flushed.push(r));
  }

  #send(frame: Uint8Array, copy: boolean): void {
    const s = this.#s;
    if (this.#isClosed) {
      s.txClosed++;
      s.framesDropped++;
      return;
    }
    const len = frame.length;
    if (len < ETH_HEADER_LENGTH || len > this.maxFrameBytes) {
      s.txBadSize++;
      s.framesDropped++;
      return;
    }
    s.framesSent++;
    s.bytesSent += len;
    this.#inFlight++;
    const buf = copy ? Buffer.from(frame) : Buffer.from(frame.buffer, frame.byteOffset, len);
    this.#sock.send(buf, this.remoteEndpoint.port, this.remoteEndpoint.address, this.#onSent);
  }

  onReceive(handler: FrameHandler | null): void {
    this.#handler = handler;
  }

  close(): void {
    if (this.#isClosed) return;
    this.#lastDrops = socketDrops(this.localEndpoint);
    this.#isClosed = true;
    this.#sock.close();
  }

  get stats(): UdpCableStats {
    return { ...this.#s, rxSocketDrops: this.#isClosed ? this.#lastDrops : (this.#lastDrops = socketDrops(this.localEndpoint)) };
  }

  #lastDrops = -1;

  /** The SO_RCVBUF the OS granted (Linux reports twice what was asked, capped at 2 × rmem_max). */
  get receiveBufferBytes(): number {
    if (!this.#isClosed) this.#rcvBuf = this.#sock.getRecvBufferSize();
    return this.#rcvBuf;
  }

  #rcvBuf = 0;

  #receive(msg: Buffer, rinfo: dgram.RemoteInfo): void {
    const s = this.#s;
    if (!this.#acceptAny && (rinfo.port !== this.remoteEndpoint.port || canonical(rinfo.address, this.remoteEndpoint.family) !== this.#remoteCanonical)) {
      s.rxForeign++;
      s.framesDropped++;
      return;
    }
    const len = msg.length;
    if (len < ETH_HEADER_LENGTH) {
      s.rxTooSmall++;
      s.framesDropped++;
      return;
    }
    if (len > this.maxFrameBytes) {
      s.rxTooLarge++;
      s.framesDropped++;
      return;
    }
    const h = this.#handler;
    if (!h || this.#isClosed) {
      s.rxNoHandler++;
      s.framesDropped++;
      return;
    }
    s.framesReceived++;
    s.bytesReceived += len;
    // Node gives each datagram its own ArrayBuffer; hand it over as a plain
    // Uint8Array (no copy) when it does, copy otherwise.
    const frame =
      msg.byteOffset === 0 && msg.buffer.byteLength === len ? new Uint8Array(msg.buffer, 0, len) : new Uint8Array(msg.buffer, msg.byteOffset, len).slice();
    h(frame);
  }
}
