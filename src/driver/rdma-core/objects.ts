/**
 * The rdma-core provider's objects (each holds its libibverbs pointer as a
 * Number, 0 once destroyed) and the checks every verb makes of them.
 */
import { errno, IBV_QPS_RESET } from '../../device/abi/constants.js';
import { VerbsError } from '../verbs/errno-error.js';
import type { ProviderDevice, VerbsContextOps, VerbsProvider } from '../verbs/ops.js';
import type { ibv_ah, ibv_comp_channel, ibv_context, ibv_cq, ibv_mr, ibv_mw, ibv_pd, ibv_qp, ibv_qp_cap, ibv_srq, ibv_xrcd } from '../verbs/types.js';
import { rdmaCoreAddon, rdmaCoreUnavailable, type NativeDevice, type RdmaCoreAddon } from './addon.js';

export class RcDevice implements ProviderDevice {
  readonly node_type: number;
  readonly transport_type: number;
  readonly name: string;
  readonly dev_name: string;
  readonly dev_path: string;
  readonly ibdev_path: string;
  /** ibv_get_device_index, read with the device list. */
  readonly index: number;
  constructor(
    readonly provider: VerbsProvider,
    public ptr: number,
    d: NativeDevice,
    readonly nodeGuid: bigint,
  ) {
    this.node_type = d.node_type;
    this.transport_type = d.transport_type;
    this.index = typeof d.index === 'number' ? d.index : -1;
    this.name = d.name;
    this.dev_name = d.dev_name;
    this.dev_path = d.dev_path;
    this.ibdev_path = d.ibdev_path;
  }
}

export type Waiter = { id: number; fd: number; reject: (e: Error) => void };

export class RcContext implements ibv_context {
  closed = false;
  readonly pds = new Set<RcPd>();
  readonly mrs = new Set<RcMr>();
  readonly mws = new Set<RcMw>();
  readonly channels = new Set<RcChannel>();
  readonly cqs = new Map<number, RcCq>();
  readonly qps = new Map<number, RcQp>();
  readonly srqs = new Map<number, RcSrq>();
  readonly ahs = new Set<RcAh>();
  readonly xrcds = new Set<RcXrcd>();
  readonly buffers = new Set<ArrayBuffer>();
  readonly waiters = new Set<Waiter>();
  constructor(
    readonly ops: VerbsContextOps,
    readonly device: RcDevice,
    readonly ptr: number,
    readonly cmd_fd: number,
    readonly async_fd: number,
    readonly num_comp_vectors: number,
  ) {}
}

export class RcPd implements ibv_pd {
  ptr: number;
  constructor(
    readonly context: RcContext,
    ptr: number,
    readonly handle: number,
  ) {
    this.ptr = ptr;
  }
}

/** A memory window; `rkey` follows ibv_bind_mw as libibverbs sets it, and is written into the C struct before a type 2 bind (a C program may set it: rxe names the window by it). */
export class RcMw implements ibv_mw {
  ptr: number;
  constructor(
    readonly context: RcContext,
    readonly pd: RcPd,
    ptr: number,
    public rkey: number,
    readonly handle: number,
    readonly type: number,
  ) {
    this.ptr = ptr;
  }
}

/** An MR; pd, addr, length and the keys follow ibv_rereg_mr as libibverbs updates them. */
export class RcMr implements ibv_mr {
  ptr: number;
  constructor(
    readonly context: RcContext,
    public pd: RcPd,
    ptr: number,
    public addr: bigint,
    public length: number,
    readonly handle: number,
    public lkey: number,
    public rkey: number,
    /** holds the memory while registered */ public buf: Uint8Array | null,
  ) {
    this.ptr = ptr;
  }
}

export class RcChannel implements ibv_comp_channel {
  ptr: number;
  refcnt = 0;
  constructor(
    readonly context: RcContext,
    ptr: number,
    readonly fd: number,
  ) {
    this.ptr = ptr;
  }
}

/** An async event libibverbs reported for an object and the application has not acknowledged. */
export interface PendingAsync {
  type: number;
  kind: string;
  ptr: number;
}

export class RcCq implements ibv_cq {
  ptr: number;
  compReported = 0;
  compAcked = 0;
  asyncReported = 0;
  asyncAcked = 0;
  readonly pendingAsync: PendingAsync[] = [];
  constructor(
    readonly context: RcContext,
    ptr: number,
    readonly channel: RcChannel | null,
    readonly cq_context: unknown,
    readonly handle: number,
    /** follows ibv_resize_cq */ public cqe: number,
    /** ibv_create_cq_ex: the poll API reads it (native/extended.cc PollCqEx) */ readonly ex = false,
  ) {
    this.ptr = ptr;
  }
}

export class RcSrq implements ibv_srq {
  ptr: number;
  asyncReported = 0;
  asyncAcked = 0;
  readonly pendingAsync: PendingAsync[] = [];
  constructor(
    readonly context: RcContext,
    readonly pd: RcPd,
    ptr: number,
    readonly srq_context: unknown,
    readonly handle: number,
    /** an XRC SRQ's domain and completion queue */ readonly xrc: { xrcd: RcXrcd; cq: RcCq } | null = null,
  ) {
    this.ptr = ptr;
  }
}

export class RcQp implements ibv_qp {
  ptr: number;
  state: number = IBV_QPS_RESET;
  asyncReported = 0;
  asyncAcked = 0;
  readonly pendingAsync: PendingAsync[] = [];
  constructor(
    readonly context: RcContext,
    readonly pd: RcPd,
    ptr: number,
    readonly qp_context: unknown,
    readonly send_cq: RcCq | null,
    readonly recv_cq: RcCq | null,
    readonly srq: RcSrq | null,
    readonly handle: number,
    readonly qp_num: number,
    readonly qp_type: number,
    readonly sq_sig_all: number,
    /** ibv_create_qp_ex with send_ops_flags: ibv_wr_complete posts through it */ readonly ex = false,
  ) {
    this.ptr = ptr;
  }
}

export class RcAh implements ibv_ah {
  ptr: number;
  constructor(
    readonly context: RcContext,
    readonly pd: RcPd,
    ptr: number,
    readonly handle: number,
  ) {
    this.ptr = ptr;
  }
}

// ------------------------------------------------------------------ helpers

export function capOf(c: Record<string, unknown>): ibv_qp_cap {
  return {
    max_send_wr: c['max_send_wr'] as number,
    max_recv_wr: c['max_recv_wr'] as number,
    max_send_sge: c['max_send_sge'] as number,
    max_recv_sge: c['max_recv_sge'] as number,
    max_inline_data: c['max_inline_data'] as number,
  };
}

export function A(): RdmaCoreAddon {
  const a = rdmaCoreAddon();
  if (!a) throw new VerbsError(errno.ENOSYS, `rdma-core provider: ${rdmaCoreUnavailable()}`);
  return a;
}

export function fail(e: number, verb: string, what: string): never {
  throw new VerbsError(e, `${verb}: ${what}`);
}

/** A live object of this provider (its context open), else null. */
export function live<T extends { ptr: number; context: RcContext }>(o: unknown, cls: abstract new (...a: never[]) => T): T | null {
  return o instanceof cls && o.ptr !== 0 && !o.context.closed ? o : null;
}

export function liveCtx(c: unknown): RcContext | null {
  return c instanceof RcContext && !c.closed ? c : null;
}

export function isNum(x: unknown): x is number {
  return typeof x === 'number' && Number.isInteger(x);
}

/** An XRC domain (one open of it: ibv_open_xrcd). */
export class RcXrcd implements ibv_xrcd {
  ptr: number;
  constructor(
    readonly context: RcContext,
    ptr: number,
  ) {
    this.ptr = ptr;
  }
}

/** Addresses of the buffers rnic_alloc_buf made (the inline check below). */
export const bufAddr = new WeakMap<ArrayBuffer, bigint>();

/**
 * Whether [addr, addr + len) is memory this context holds: inside a
 * registered MR or a buffer from rnic_alloc_buf. Inline data is copied by
 * the provider library from such an address in this process, so anything
 * else would be read from wherever the number points.
 */
export function heldRange(ctx: RcContext, addr: bigint, len: number): boolean {
  const end = addr + BigInt(len);
  for (const mr of ctx.mrs) if (mr.ptr && mr.buf && addr >= mr.addr && end <= mr.addr + BigInt(mr.buf.byteLength)) return true;
  for (const ab of ctx.buffers) {
    const a = bufAddr.get(ab);
    if (a !== undefined && addr >= a && end <= a + BigInt(ab.byteLength)) return true;
  }
  return false;
}
