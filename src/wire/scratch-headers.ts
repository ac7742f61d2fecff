/**
 * The routing headers of a DecodeScratch, whose address fields (MACs, IP
 * addresses) are copied out of the frame when first read after a decode
 * rather than by the decode. The receive path of an RC WRITE or ACK reads
 * none of them (the port has matched the destination already; a CNP, a UD
 * receive's GRH and the neighbour code do read them): that is 20 bytes
 * copied per IPv4 packet, 44 per IPv6 packet, for nothing.
 *
 * What a reader sees is what an eager copy at decode time would have given,
 * as long as the frame is not changed between the decode and the first
 * read; the scratch's packet is only used during the receive call that
 * decoded it (DecodeScratch), and nothing writes to a received frame then.
 * Each header owns its address arrays (a decode never hands out the
 * frame's bytes), as before.
 */
import type { EthernetHeader, VlanTag } from './ethernet.js';
import type { Ipv4Header, Ipv6Header } from './ip.js';

const NO_BYTES = new Uint8Array(0);

/**
 * Two adjacent address fields of `len` bytes each at `frame[at..]` (first
 * `a`, then `b`), copied into owned arrays on first access.
 */
class LazyPair {
  #frame: Uint8Array = NO_BYTES;
  #at = 0;
  #stale = false;
  a: Uint8Array;
  b: Uint8Array;

  constructor(len: number) {
    this.a = new Uint8Array(len);
    this.b = new Uint8Array(len);
  }

  /** The fields now lie at `frame[at..]` (the copy waits for a read). */
  from(frame: Uint8Array, at: number): void {
    this.#frame = frame;
    this.#at = at;
    this.#stale = true;
  }

  /** Copies the fields if a decode has moved them since the last read. */
  fresh(): this {
    if (this.#stale) {
      const f = this.#frame;
      const a = this.a;
      const b = this.b;
      const n = a.length;
      const at = this.#at;
      for (let i = 0; i < n; i++) {
        a[i] = f[at + i]!;
        b[i] = f[at + n + i]!;
      }
      this.#stale = false;
      this.#frame = NO_BYTES; // hold no reference to a frame its pool may reuse
    }
    return this;
  }
}

/** Destination then source MAC (Ethernet bytes 0-11). */
export class ScratchEth implements EthernetHeader {
  readonly #macs = new LazyPair(6);
  vlan: VlanTag | null = null;
  etherType = 0;

  /** @internal The MACs are `frame[0..12)`. */
  macsAt(frame: Uint8Array): void {
    this.#macs.from(frame, 0);
  }
  get dst(): Uint8Array {
    return this.#macs.fresh().a;
  }
  set dst(v: Uint8Array) {
    this.#macs.fresh().a = v;
  }
  get src(): Uint8Array {
    return this.#macs.fresh().b;
  }
  set src(v: Uint8Array) {
    this.#macs.fresh().b = v;
  }
}

/** Source then destination address of an IP header, `len` bytes each, copied on first read. */
abstract class LazySrcDst {
  readonly #addrs: LazyPair;

  constructor(len: number) {
    this.#addrs = new LazyPair(len);
  }

  /** @internal The addresses are `frame[at..at+2·len)`. */
  addrsAt(frame: Uint8Array, at: number): void {
    this.#addrs.from(frame, at);
  }
  get src(): Uint8Array {
    return this.#addrs.fresh().a;
  }
  set src(v: Uint8Array) {
    this.#addrs.fresh().a = v;
  }
  get dst(): Uint8Array {
    return this.#addrs.fresh().b;
  }
  set dst(v: Uint8Array) {
    this.#addrs.fresh().b = v;
  }
}

/** IPv4, its addresses at bytes 12-19. */
export class ScratchIpv4 extends LazySrcDst implements Ipv4Header {
  ihl = 0;
  dscp = 0;
  ecn = 0;
  totalLength = 0;
  id = 0;
  flags = 0;
  fragmentOffset = 0;
  ttl = 0;
  protocol = 0;
  checksum = 0;
  options: Uint8Array | null = null;

  constructor() {
    super(4);
  }
}

/** IPv6, its addresses at bytes 8-39. */
export class ScratchIpv6 extends LazySrcDst implements Ipv6Header {
  trafficClass = 0;
  flowLabel = 0;
  payloadLength = 0;
  nextHeader = 0;
  hopLimit = 0;

  constructor() {
    super(16);
  }
}
