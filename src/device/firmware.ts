/**
 * The firmware: owner of the device's resource tables. It holds the
 * capabilities, the context tables (shared with the pipeline), the
 * firmware-private bookkeeping the pipeline never needs (free lists, PD
 * table, reference counts, key variants), and the hardware counters.
 *
 * Commands (commands.ts) are the only writers of configuration; this class
 * gives them small, checked primitives. Nothing here blocks or schedules:
 * the realtime runtime calls `serviceCommandDoorbell` on its device thread,
 * the simulator calls it inline.
 */
import type { Capabilities } from './capabilities.js';
import { ContextTables } from './contexts.js';
import { HwCounters } from './counters.js';
import type { HostMemory } from './host-memory.js';
import { Bar } from './registers.js';
import { fillBytes } from './fill-bytes.js';

/**
 * FIFO pool of free indices [first, count): O(1), reuses the least recently
 * freed. Never-used indices come first, in ascending order, then freed ones
 * in the order they were freed, exactly as a ring initialised with
 * [first, count) would hand them out; but nothing is filled at creation (a
 * device with 262,144 MR slots starts in microseconds) and the ring of freed
 * indices grows only as far as indices are freed.
 */
export class IndexPool {
  /** The next never-used index. */
  private fresh: number;
  private ring = new Int32Array(16);
  private head = 0;
  private size = 0;
  private readonly live: Uint8Array;

  constructor(
    readonly first: number,
    readonly count: number,
  ) {
    this.fresh = first;
    this.live = new Uint8Array(Math.max(count, 0));
  }

  /** A free index, or -1 when exhausted. */
  alloc(): number {
    let i: number;
    if (this.fresh < this.count) i = this.fresh++;
    else if (this.size > 0) {
      i = this.ring[this.head]!;
      this.head = (this.head + 1) & (this.ring.length - 1);
      this.size--;
    } else return -1;
    this.live[i] = 1;
    return i;
  }

  free(i: number): void {
    if (!this.isLive(i)) return;
    this.live[i] = 0;
    if (this.size === this.ring.length) this.grow();
    this.ring[(this.head + this.size) & (this.ring.length - 1)] = i;
    this.size++;
  }

  private grow(): void {
    const next = new Int32Array(this.ring.length * 2);
    for (let k = 0; k < this.size; k++) next[k] = this.ring[(this.head + k) & (this.ring.length - 1)]!;
    this.ring = next;
    this.head = 0;
  }

  isLive(i: number): boolean {
    return Number.isInteger(i) && i >= this.first && i < this.count && this.live[i] === 1;
  }

  get inUse(): number {
    return this.fresh - this.first - this.size;
  }
}

/**
 * QPs a command changed (CREATE_QP, MODIFY_QP, DESTROY_QP), in order, for
 * the pipeline to act on (RESET / ERR flags, dropped private state) without
 * scanning the QP table. Bounded: when more than `capacity` changes pile up
 * before the pipeline takes them (a device whose commands are served with
 * no pipeline draining them, as the driver's test stand-in does), the list
 * says "overflowed" and the taker falls back to one scan of the table.
 */
export class QpChangeList {
  private readonly qpns: Int32Array;
  private count = 0;
  private overflowed = false;

  constructor(readonly capacity = 64) {
    this.qpns = new Int32Array(capacity);
  }

  /** Firmware: QP `qpn` changed. A QPN already in the list is not repeated. */
  note(qpn: number): void {
    if (this.overflowed) return;
    for (let i = 0; i < this.count; i++) if (this.qpns[i] === qpn) return;
    if (this.count === this.capacity) {
      this.overflowed = true;
      this.count = 0;
      return;
    }
    this.qpns[this.count++] = qpn;
  }

  /**
   * Pipeline: copy the changed QPNs into `out` (at least `capacity` long)
   * and empty the list. Returns how many, or -1 after an overflow: then any
   * QP may have changed and the caller scans them all.
   */
  take(out: Int32Array): number {
    if (this.overflowed) {
      this.overflowed = false;
      this.count = 0;
      return -1;
    }
    const n = this.count;
    for (let i = 0; i < n; i++) out[i] = this.qpns[i]!;
    this.count = 0;
    return n;
  }

  get pending(): number {
    return this.overflowed ? -1 : this.count;
  }
}

export interface FirmwareInit {
  readonly caps: Capabilities;
  /** Host memory as the device sees it (DMA): to check that rings and buffers lie inside it. */
  readonly mem: HostMemory;
  /** The BAR (created for `caps` if omitted). */
  readonly bar?: Bar;
  /** Context tables (created for `caps` if omitted). */
  readonly tables?: ContextTables;
  /** Counters (created with one lane per port if omitted). */
  readonly counters?: HwCounters;
  /** The device's nanosecond clock, which the free-running hca_core_clock counts from (0 if omitted). */
  readonly clock?: { now(): number };
}

export class Firmware {
  readonly caps: Capabilities;
  readonly mem: HostMemory;
  readonly bar: Bar;
  readonly tables: ContextTables;
  readonly counters: HwCounters;

  /** Human-readable reason of the last failed command (diagnostics, not ABI). */
  lastError = '';
  /** Token of the last command served through the BAR (mailbox.ts). */
  lastToken = 0;

  readonly pds: IndexPool;
  /** XRC domains (ALLOC_XRCD), numbered from 1. */
  readonly xrcds: IndexPool;
  readonly qps: IndexPool;
  readonly cqs: IndexPool;
  readonly eqs: IndexPool;
  readonly srqs: IndexPool;
  readonly mrs: IndexPool;
  /** MPT indices that hold memory windows (MRs and windows share the MPT; DESTROY_QP looks at these only). */
  readonly mws = new Set<number>();
  /** Per MPT index: the variant byte of its current / next key. */
  readonly mrVariant: Uint8Array;
  /** Objects that reference a PD (MRs, QPs, SRQs); DEALLOC_PD is BUSY while > 0. */
  readonly pdRefs: Int32Array;
  /** XRC SRQs and XRC receive QPs in an XRC domain; DEALLOC_XRCD is BUSY while > 0. */
  readonly xrcdRefs: Int32Array;
  /** QPs using a CQ; DESTROY_CQ is BUSY while > 0. */
  readonly cqRefs: Int32Array;
  /** CQs using an EQ; DESTROY_EQ is BUSY while > 0. */
  readonly eqRefs: Int32Array;
  /** QPs using an SRQ; DESTROY_SRQ is BUSY while > 0. */
  readonly srqRefs: Int32Array;
  /**
   * UD multicast groups (ATTACH_MCAST): the MGID (16 bytes as hex) → the
   * QPNs attached. The pipeline's receive path reads it (same thread).
   */
  readonly mcast = new Map<string, Set<number>>();
  /** QPs changed by commands since the pipeline last looked (see QpChangeList). */
  readonly qpChanges = new QpChangeList();

  private readonly clock: { now(): number } | null;

  constructor(init: FirmwareInit) {
    this.clock = init.clock ?? null;
    this.caps = init.caps;
    this.mem = init.mem;
    this.bar = init.bar ?? Bar.create(init.caps);
    this.tables = init.tables ?? ContextTables.create(init.caps);
    this.counters = init.counters ?? HwCounters.create(init.caps.ports.length, 1);
    const d = init.caps.device;
    const t = this.tables;
    this.pds = new IndexPool(1, d.maxPd + 1);
    this.qps = new IndexPool(2, t.qpCount);
    this.cqs = new IndexPool(1, t.cqCount);
    this.eqs = new IndexPool(1, t.eqCount);
    this.srqs = new IndexPool(1, t.srqCount);
    this.mrs = new IndexPool(1, t.mrCount);
    this.mrVariant = new Uint8Array(t.mrCount);
    this.pdRefs = new Int32Array(d.maxPd + 1);
    this.xrcds = new IndexPool(1, d.maxXrcd + 1);
    this.xrcdRefs = new Int32Array(d.maxXrcd + 1);
    this.cqRefs = new Int32Array(t.cqCount);
    this.eqRefs = new Int32Array(t.eqCount);
    this.srqRefs = new Int32Array(t.srqCount);
  }

  /** The free-running device clock in ticks of hcaCoreClock kHz (the CQE timestamp's clock). */
  clockTicks(): number {
    return this.clock ? Math.floor((this.clock.now() * this.caps.device.hcaCoreClock) / 1e6) : 0;
  }

  /** The QPs attached to multicast group `mgid` (16 bytes at off of buf), or undefined. */
  mcastMembers(buf: Uint8Array, off: number): ReadonlySet<number> | undefined {
    if (this.mcast.size === 0) return undefined;
    let k = '';
    for (let i = 0; i < 16; i++) k += (buf[off + i]! | 0x100).toString(16).slice(1);
    return this.mcast.get(k);
  }

  /** Port attributes by 1-based number, or undefined. */
  port(portNum: number) {
    return this.caps.ports[portNum - 1];
  }

  /** Is [addr, addr + len) a DMA-able range of host memory aligned to `align`? */
  hostRangeOk(addr: number, len: number, align: number): boolean {
    return this.mem.inRangeN(addr, len) && addr % align === 0;
  }

  /** Zero a context entry (all but the words listed in `keep`, byte offsets). */
  clearEntry(off: number, size: number, keep: readonly number[] = []): void {
    const saved = keep.map((k) => this.tables.dv.getUint32(off + k, true));
    fillBytes(this.tables.u8, 0, off, off + size);
    keep.forEach((k, i) => this.tables.dv.setUint32(off + k, saved[i]!, true));
  }
}
