/**
 * The model provider's verbs objects: what libibverbs' `struct ibv_*` are
 * plus the provider-private state a userspace driver keeps next to them
 * (rxe's `struct rxe_qp`, mlx5's `struct mlx5_qp`): ring addresses, the
 * producer / consumer counters the driver owns, event bookkeeping.
 *
 * Every counter here is the driver's side of a device ring: producer
 * counters of the work queues (published through the doorbell record),
 * consumer counters of the CQs (published through the CQ doorbell record).
 * They are free-running 32-bit values, as in the device manual.
 */
import type { ibv_mw_type } from '../../device/abi/constants.js';
import type { ibv_ah, ibv_comp_channel, ibv_cq, ibv_mr, ibv_mw, ibv_pd, ibv_qp, ibv_srq, ibv_xrcd } from '../verbs/types.js';
import type { ModelContext } from './context.js';

export class ModelPd implements ibv_pd {
  destroyed = false;
  constructor(
    readonly context: ModelContext,
    /** The device's protection domain number. */
    readonly handle: number,
  ) {}
  get pdn(): number {
    return this.handle;
  }
}

export class ModelMr implements ibv_mr {
  destroyed = false;
  constructor(
    readonly context: ModelContext,
    /** pd, addr, length and iova change with ibv_rereg_mr (the keys stay). */
    public pd: ModelPd,
    /** The buffer's host address (libibverbs: the addr registered). */
    public addr: bigint,
    public length: number,
    /** The MPT index (key >> 8). */
    readonly handle: number,
    readonly lkey: number,
    readonly rkey: number,
    /** The address keys see: SGEs and RETHs name [iova, iova + length) (= addr for ibv_reg_mr). */
    public iova: bigint = addr,
  ) {}
}

/** A memory window (ibv_alloc_mw). `rkey` follows ibv_bind_mw (type 1), as libibverbs' providers set it. */
export class ModelMw implements ibv_mw {
  destroyed = false;
  constructor(
    readonly context: ModelContext,
    readonly pd: ModelPd,
    public rkey: number,
    readonly type: ibv_mw_type,
  ) {}
  /** The MPT index (key >> 8), as the handle. */
  get handle(): number {
    return this.rkey >>> 8;
  }
}

/** A device XRC domain and the opens that share it (one per inode per device, or one private open for fd -1). */
export class XrcdDomain {
  opens = 0;
  constructor(
    readonly xrcdn: number,
    /** "dev:ino" of the file that names it, or null (fd -1). */
    readonly inode: string | null,
  ) {}
}

/** The device's XRC receive QP behind every handle on it (created or opened): it lives while any handle does. */
export class XrcRecvShare {
  handles = 0;
  constructor(
    readonly qpn: number,
    readonly xrcdn: number,
    /** The QP's doorbell record, freed with the last handle. */
    readonly dbrecAddr: number,
  ) {}
}

/** What makes an SRQ an XRC SRQ. */
export interface XrcSrq {
  readonly xrcd: ModelXrcd;
  readonly cq: ModelCq;
}

/** One ibv_open_xrcd: its own handle on a possibly shared domain. */
export class ModelXrcd implements ibv_xrcd {
  destroyed = false;
  constructor(
    readonly context: ModelContext,
    readonly domain: XrcdDomain,
  ) {}
  get xrcdn(): number {
    return this.domain.xrcdn;
  }
}

/** A completion channel: the CQs whose completion events are waiting to be read, in order. */
export class ModelCompChannel implements ibv_comp_channel {
  refcnt = 0;
  destroyed = false;
  /** CQs with a pending completion event (one entry per event). */
  readonly events: ModelCq[] = [];
  /** Resolves when the channel is destroyed (wakes get_cq_event waiters). */
  readonly gone: Promise<void>;
  markGone!: () => void;
  constructor(
    readonly context: ModelContext,
    readonly fd: number,
  ) {
    this.gone = new Promise((r) => (this.markGone = r));
  }
}

export class ModelCq implements ibv_cq {
  /** Driver consumer counter: CQEs ever polled. */
  ci = 0;
  mask: number;
  /** Byte offset of the ring in host memory. */
  ringOff: number;
  /** Word index (in HostMemory.i32) of the record's `ci`. */
  readonly ciWord: number;
  /** Completion events returned by get_cq_event / acknowledged by ack_cq_events. */
  compEventsReported = 0;
  compEventsAcked = 0;
  asyncEventsReported = 0;
  asyncEventsAcked = 0;
  destroyed = false;
  constructor(
    readonly context: ModelContext,
    readonly channel: ModelCompChannel | null,
    readonly cq_context: unknown,
    /** The CQ number. */
    readonly handle: number,
    /** Usable entries: ring size − 1, as mlx5 reports. */
    public cqe: number,
    public logSize: number,
    public ringAddr: number,
    readonly dbrecAddr: number,
  ) {
    const base = context.mem.baseNum;
    this.mask = (1 << logSize) - 1;
    this.ringOff = ringAddr - base;
    this.ciWord = (dbrecAddr - base) >> 2;
  }
  get cqn(): number {
    return this.handle;
  }
  /** After RESIZE_CQ: the new ring (the consumer counter carries on). */
  moveRing(ringAddr: number, logSize: number): void {
    this.ringAddr = ringAddr;
    this.logSize = logSize;
    this.mask = (1 << logSize) - 1;
    this.ringOff = ringAddr - this.context.mem.baseNum;
    this.cqe = this.mask;
  }
}

export class ModelSrq implements ibv_srq {
  /** Next free entry to post into (head of the free list). */
  head = 0;
  /** Last free entry (the list's sentinel: never posted while it is the tail). */
  tail: number;
  /** Producer counter (record `pi`). */
  pi = 0;
  readonly mask: number;
  readonly ringOff: number;
  readonly piWord: number;
  asyncEventsReported = 0;
  asyncEventsAcked = 0;
  destroyed = false;
  constructor(
    readonly context: ModelContext,
    readonly srq_context: unknown,
    readonly pd: ModelPd,
    /** The SRQ number. */
    readonly handle: number,
    readonly logSize: number,
    readonly logStride: number,
    readonly maxSge: number,
    readonly ringAddr: number,
    readonly dbrecAddr: number,
    /** An XRC SRQ's domain and CQ (null: a basic SRQ). */
    readonly xrc: XrcSrq | null = null,
  ) {
    const base = context.mem.baseNum;
    this.mask = (1 << logSize) - 1;
    this.tail = this.mask;
    this.ringOff = ringAddr - base;
    this.piWord = (dbrecAddr - base) >> 2;
  }
  get srqn(): number {
    return this.handle;
  }
}

export class ModelAh implements ibv_ah {
  destroyed = false;
  constructor(
    readonly context: ModelContext,
    readonly pd: ModelPd,
    readonly handle: number,
    /** The encoded address vector (device layout AV, 40 bytes) copied into every UD WQE. */
    readonly av: Uint8Array,
  ) {}
}

export class ModelQp implements ibv_qp {
  /** Cached state, as libibverbs caches it: updated by modify_qp / query_qp. */
  state = 0;
  /** Port the QP is bound to (IBV_QP_PORT), 0 before INIT. */
  portNum = 0;

  // Send queue (size 0: no send queue).
  readonly sqSize: number;
  readonly sqMask: number;
  readonly sqLogStride: number;
  readonly sqRingOff: number;
  /** Producer counter (record sqPi) and the oldest WQE not known to be retired. */
  sqPi = 0;
  sqCi = 0;
  readonly maxSendSge: number;
  readonly maxInline: number;
  /** Offset of the data segments / inline data in a send WQE (0x40 RC/UC, 0x50 UD). */
  readonly sqDataOff: number;
  /** Bit n set: IBV_WR opcode n is valid on this QP type. */
  readonly opMask: number;

  // Receive queue (size 0: none, or an SRQ).
  readonly rqSize: number;
  readonly rqMask: number;
  readonly rqLogStride: number;
  readonly rqRingOff: number;
  rqPi = 0;
  rqCi = 0;
  readonly maxRecvSge: number;

  /** Word indexes (HostMemory.i32) of the record's rqPi and sqPi. */
  readonly rqPiWord: number;
  readonly sqPiWord: number;

  asyncEventsReported = 0;
  asyncEventsAcked = 0;
  destroyed = false;
  /** An XRC receive QP: the device QP this handle shares (null for every other type). */
  xrcShare: XrcRecvShare | null = null;

  constructor(
    readonly context: ModelContext,
    readonly qp_context: unknown,
    /** null for an XRC receive QP; CQs are null where the type has none (XRC). */
    readonly pd: ModelPd | null,
    readonly send_cq: ModelCq | null,
    readonly recv_cq: ModelCq | null,
    readonly srq: ModelSrq | null,
    /** The QP number. */
    readonly handle: number,
    readonly qp_type: number,
    readonly sqSigAll: number,
    sq: { size: number; logStride: number; ringAddr: number; maxSge: number; maxInline: number; dataOff: number; opMask: number },
    rq: { size: number; logStride: number; ringAddr: number; maxSge: number },
    readonly dbrecAddr: number,
    /** Host allocations to free at destroy. */
    readonly allocations: readonly number[],
  ) {
    const base = context.mem.baseNum;
    this.sqSize = sq.size;
    this.sqMask = sq.size - 1;
    this.sqLogStride = sq.logStride;
    this.sqRingOff = sq.ringAddr - base;
    this.maxSendSge = sq.maxSge;
    this.maxInline = sq.maxInline;
    this.sqDataOff = sq.dataOff;
    this.opMask = sq.opMask;
    this.rqSize = rq.size;
    this.rqMask = rq.size - 1;
    this.rqLogStride = rq.logStride;
    this.rqRingOff = rq.ringAddr - base;
    this.maxRecvSge = rq.maxSge;
    this.rqPiWord = (dbrecAddr - base) >> 2;
    this.sqPiWord = this.rqPiWord + 1;
  }

  get qp_num(): number {
    return this.handle;
  }
}
