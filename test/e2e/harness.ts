/**
 * End-to-end harness: the model started through boot.ts, two devices opened
 * through the verbs API, and helpers to build PD/MR/CQ/QP pairs of a type
 * (RC, UC, UD), connect them (RESET→INIT→RTR→RTS with the masks the kernel
 * requires), post, poll with a deadline (never hang: fail naming what was
 * awaited), read counters, and guard the bytes around every MR.
 *
 * Everything goes through `ibv_*` (and rnic_alloc_buf / rnic_read_counters):
 * no pipeline or device internals.
 */
import { expect } from 'vitest';
import { currentModel, restartModel, stopModel } from '../../src/boot.js';
import { DEFAULT_CONFIG, type ModelConfig } from '../../src/runtime/config.js';
import {
  IBV_QP_INIT_ATTR_CREATE_FLAGS,
  IBV_QP_INIT_ATTR_PD,
  ibv_create_qp_ex,
  IBV_ACCESS_LOCAL_WRITE,
  IBV_ACCESS_REMOTE_ATOMIC,
  IBV_ACCESS_REMOTE_READ,
  IBV_ACCESS_REMOTE_WRITE,
  IBV_LINK_LAYER_INFINIBAND,
  IBV_MTU_1024,
  IBV_QP_ACCESS_FLAGS,
  IBV_QP_AV,
  IBV_QP_DEST_QPN,
  IBV_QP_MAX_DEST_RD_ATOMIC,
  IBV_QP_MAX_QP_RD_ATOMIC,
  IBV_QP_MIN_RNR_TIMER,
  IBV_QP_PATH_MTU,
  IBV_QP_PKEY_INDEX,
  IBV_QP_PORT,
  IBV_QP_QKEY,
  IBV_QP_RETRY_CNT,
  IBV_QP_RNR_RETRY,
  IBV_QP_RQ_PSN,
  IBV_QP_SQ_PSN,
  IBV_QP_STATE,
  IBV_QP_TIMEOUT,
  IBV_QPS_INIT,
  IBV_QPS_RTR,
  IBV_QPS_RTS,
  IBV_QPT_RC,
  IBV_QPT_UC,
  IBV_QPT_UD,
  IBV_SEND_SIGNALED,
  IBV_WR_ATOMIC_CMP_AND_SWP,
  IBV_WR_ATOMIC_FETCH_AND_ADD,
  IBV_WR_RDMA_READ,
  IBV_WR_RDMA_WRITE,
  IBV_WR_RDMA_WRITE_WITH_IMM,
  IBV_WR_SEND,
  IBV_WR_SEND_WITH_IMM,
  errnoName,
  ibv_alloc_pd,
  ibv_close_device,
  ibv_create_ah,
  ibv_create_cq,
  ibv_create_qp,
  ibv_dealloc_pd,
  ibv_dereg_mr,
  ibv_destroy_ah,
  ibv_destroy_cq,
  ibv_destroy_qp,
  ibv_get_device_list,
  ibv_get_device_name,
  ibv_modify_qp,
  ibv_open_device,
  ibv_poll_cq,
  ibv_post_recv,
  ibv_post_send,
  ibv_query_gid,
  ibv_query_port,
  ibv_query_qp,
  ibv_reg_mr,
  ibv_wc_status_str,
  mtu_enum_to_bytes,
  newAhAttr,
  newGid,
  newPortAttr,
  newQpAttr,
  newQpCap,
  newWcArray,
  qpStateName,
  rnic_alloc_buf,
  rnic_free_buf,
  rnic_read_counters,
} from '../../src/driver/verbs/index.js';
import type {
  BadWr,
  ibv_ah,
  ibv_comp_channel,
  ibv_context,
  ibv_cq,
  ibv_gid,
  ibv_mr,
  ibv_pd,
  ibv_port_attr,
  ibv_qp,
  ibv_qp_attr,
  ibv_qp_init_attr,
  ibv_recv_wr,
  ibv_send_wr,
  ibv_sge,
  ibv_srq,
  ibv_wc,
} from '../../src/driver/verbs/index.js';

/** GID index of RoCE v2 over IPv4 (::ffff:192.0.2.x) in the default GID table. */
export const GID_V2_IPV4 = 3;
export const PORT = 1;
export const QKEY = 0x11111111;
export const ALL_ACCESS = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
/** How long a poll waits before it fails: only a bound on a hang, so generous enough for a loaded machine. */
export const POLL_TIMEOUT_MS = 30_000;

// ---------------------------------------------------------------------------
// The model and the devices
// ---------------------------------------------------------------------------

export interface Dev {
  readonly name: string;
  readonly ctx: ibv_context;
  readonly pd: ibv_pd;
  readonly gid: ibv_gid;
  readonly gidIndex: number;
  readonly portAttr: ibv_port_attr;
  /** Everything to undo at close (MRs, QPs, CQs, AHs, buffers), newest last. */
  readonly cleanup: (() => void)[];
}

export interface Fabric {
  readonly a: Dev;
  readonly b: Dev;
  readonly config: ModelConfig;
  close(): Promise<void>;
}

/** The default two-device config with `workers` threads (0: devices run in this thread). */
export function twoDeviceConfig(workers: number, patch?: (c: ModelConfig) => void): ModelConfig {
  const c = JSON.parse(JSON.stringify(DEFAULT_CONFIG)) as ModelConfig;
  c.workers = workers;
  patch?.(c);
  return c;
}

export function openDev(name: string, gidIndex = GID_V2_IPV4): Dev {
  const dev = ibv_get_device_list().find((d) => ibv_get_device_name(d) === name);
  if (!dev) throw new Error(`no device ${name} in ibv_get_device_list() (${ibv_get_device_list().map(ibv_get_device_name).join(', ')})`);
  const ctx = ibv_open_device(dev);
  const portAttr = newPortAttr();
  expect(ibv_query_port(ctx, PORT, portAttr), 'ibv_query_port').toBe(0);
  const gid = newGid();
  expect(ibv_query_gid(ctx, PORT, gidIndex, gid), `ibv_query_gid(${gidIndex})`).toBe(0);
  const pd = ibv_alloc_pd(ctx);
  return { name, ctx, pd, gid, gidIndex, portAttr, cleanup: [] };
}

export function closeDev(d: Dev): void {
  while (d.cleanup.length) {
    try {
      d.cleanup.pop()!();
    } catch {
      // best effort: the context close below frees the rest
    }
  }
  ibv_dealloc_pd(d.pd);
  ibv_close_device(d.ctx);
}

/**
 * Starts the model with `config` (default: rnic0 + rnic1 cabled, one worker
 * thread) and opens both devices.
 */
export async function openFabric(config: ModelConfig = twoDeviceConfig(1)): Promise<Fabric> {
  await restartModel(config);
  const [na, nb] = [config.devices[0]!.name, config.devices[1]!.name];
  const a = openDev(na);
  const b = openDev(nb);
  return {
    a,
    b,
    config,
    async close() {
      for (const d of [a, b]) {
        try {
          closeDev(d);
        } catch {
          // keep closing
        }
      }
      if (currentModel()) await stopModel();
    },
  };
}

// ---------------------------------------------------------------------------
// Memory with guard bytes
// ---------------------------------------------------------------------------

export const GUARD = 256;

/** Guard byte i: a pattern unlikely to be produced by any payload below. */
const guardByte = (i: number) => (0xc3 ^ ((i * 37) & 0xff)) & 0xff;

export interface Region {
  readonly dev: Dev;
  /** The whole allocation: guard | data | guard. */
  readonly full: Uint8Array;
  /** The registered bytes. */
  readonly data: Uint8Array;
  readonly mr: ibv_mr;
  readonly addr: bigint;
  readonly lkey: number;
  readonly rkey: number;
  readonly length: number;
  /** SGE over data[off, off+len). */
  sge(off?: number, len?: number): ibv_sge;
  /** Device address of data[off]. */
  at(off: number): bigint;
  /** Throws if a byte outside the registered range changed. */
  checkGuards(what?: string): void;
  /** Deregister (the data and guards stay allocated for checking). */
  dereg(): void;
}

/** rnic_alloc_buf of len + 2·GUARD bytes, guards filled, the middle registered with `access`. */
export function region(dev: Dev, len: number, access = ALL_ACCESS, opts: { pd?: ibv_pd; fill?: (i: number) => number } = {}): Region {
  const full = rnic_alloc_buf(dev.ctx, len + 2 * GUARD, 64);
  for (let i = 0; i < GUARD; i++) {
    full[i] = guardByte(i);
    full[GUARD + len + i] = guardByte(i + 1000);
  }
  const data = full.subarray(GUARD, GUARD + len);
  if (opts.fill) for (let i = 0; i < len; i++) data[i] = opts.fill(i) & 0xff;
  else data.fill(0);
  const mr = ibv_reg_mr(opts.pd ?? dev.pd, data, access);
  let registered = true;
  const r: Region = {
    dev,
    full,
    data,
    mr,
    addr: mr.addr,
    lkey: mr.lkey,
    rkey: mr.rkey,
    length: len,
    sge: (off = 0, l = len - off) => ({ addr: mr.addr + BigInt(off), length: l, lkey: mr.lkey }),
    at: (off) => mr.addr + BigInt(off),
    checkGuards(what = 'guard bytes') {
      const bad: number[] = [];
      for (let i = 0; i < GUARD; i++) {
        if (full[i] !== guardByte(i)) bad.push(i - GUARD);
        if (full[GUARD + len + i] !== guardByte(i + 1000)) bad.push(len + i);
      }
      expect(bad, `${what} of the MR at ${mr.addr.toString(16)} (len ${len}) on ${dev.name}: bytes at these data offsets changed`).toEqual([]);
    },
    dereg() {
      if (registered) expect(ibv_dereg_mr(mr), 'ibv_dereg_mr').toBe(0);
      registered = false;
    },
  };
  dev.cleanup.push(() => {
    if (registered) ibv_dereg_mr(mr);
    registered = false;
    rnic_free_buf(dev.ctx, full);
  });
  return r;
}

/** A deterministic byte pattern seeded by `seed`. */
export function pattern(len: number, seed: number): Uint8Array {
  const out = new Uint8Array(len);
  let x = (seed * 2654435761 + 12345) >>> 0;
  for (let i = 0; i < len; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = (x >>> 16) & 0xff;
  }
  return out;
}

/** First index where a and b differ, or -1; fails with a short message. */
export function expectBytes(actual: Uint8Array, expected: Uint8Array, what: string): void {
  expect(actual.length, `${what}: length`).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) {
    if (actual[i] !== expected[i]) {
      const ctx = (u: Uint8Array) => Array.from(u.subarray(i, i + 8), (x) => x.toString(16).padStart(2, '0')).join(' ');
      throw new Error(`${what}: first difference at byte ${i} of ${expected.length}: got [${ctx(actual)}] expected [${ctx(expected)}]`);
    }
  }
}

// ---------------------------------------------------------------------------
// CQs and QPs
// ---------------------------------------------------------------------------

export interface QpOpts {
  maxSendWr?: number;
  maxRecvWr?: number;
  maxSendSge?: number;
  maxRecvSge?: number;
  maxInline?: number;
  sqSigAll?: boolean;
  srq?: ibv_srq | null;
  sendCq?: ibv_cq;
  recvCq?: ibv_cq;
  cqDepth?: number;
  channel?: ibv_comp_channel | null;
  /** IBV_QP_CREATE_* flags: the QP is then made with ibv_create_qp_ex. */
  createFlags?: number;
}

export interface Ep {
  readonly dev: Dev;
  readonly qp: ibv_qp;
  readonly type: number;
  readonly scq: ibv_cq;
  readonly rcq: ibv_cq;
  readonly initCap: ibv_qp_init_attr['cap'];
}

export function createCq(dev: Dev, depth = 256, channel: ibv_comp_channel | null = null): ibv_cq {
  const cq = ibv_create_cq(dev.ctx, depth, null, channel, 0);
  dev.cleanup.push(() => void ibv_destroy_cq(cq));
  return cq;
}

export function createQp(dev: Dev, type: number, o: QpOpts = {}): Ep {
  const scq = o.sendCq ?? createCq(dev, o.cqDepth ?? 1024, o.channel ?? null);
  const rcq = o.recvCq ?? createCq(dev, o.cqDepth ?? 1024, o.channel ?? null);
  const cap = newQpCap();
  cap.max_send_wr = o.maxSendWr ?? 64;
  cap.max_recv_wr = o.srq ? 0 : (o.maxRecvWr ?? 64);
  cap.max_send_sge = o.maxSendSge ?? 4;
  cap.max_recv_sge = o.srq ? 0 : (o.maxRecvSge ?? 4);
  cap.max_inline_data = o.maxInline ?? 64;
  const init: ibv_qp_init_attr = { send_cq: scq, recv_cq: rcq, srq: o.srq ?? null, cap, qp_type: type, sq_sig_all: o.sqSigAll ? 1 : 0 };
  const qp =
    o.createFlags === undefined
      ? ibv_create_qp(dev.pd, init)
      : ibv_create_qp_ex(dev.ctx, { ...init, comp_mask: IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS, pd: dev.pd, create_flags: o.createFlags });
  // Destroyed before the CQs (cleanup runs newest first).
  dev.cleanup.push(() => void ibv_destroy_qp(qp));
  return { dev, qp, type, scq, rcq, initCap: init.cap };
}

export interface ConnOpts {
  mtu?: number;
  /** qp_access_flags (RC/UC). */
  access?: number;
  /** This side's first send PSN; the peer's rq_psn is set to it. */
  psnA?: number;
  psnB?: number;
  timeout?: number;
  retryCnt?: number;
  rnrRetry?: number;
  minRnrTimer?: number;
  maxRdAtomic?: number;
  maxDestRdAtomic?: number;
  qkey?: number;
  /** Address vector (RC/UC): service level and IP traffic class (default 0). */
  sl?: number;
  trafficClass?: number;
  /** InfiniBand ports: the path's GRH / DLID / path bits. */
  ib?: IbPath;
}

export function modifyOk(qp: ibv_qp, attr: Partial<ibv_qp_attr>, mask: number, what: string): void {
  const rc = ibv_modify_qp(qp, attr, mask);
  if (rc !== 0) throw new Error(`ibv_modify_qp(${what}) on QP ${qp.qp_num} failed: ${errnoName(rc)} (${rc})`);
}

export function toInit(ep: Ep, o: ConnOpts = {}): void {
  const attr = newQpAttr();
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = PORT;
  let mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
  if (ep.type === IBV_QPT_UD) {
    attr.qkey = o.qkey ?? QKEY;
    mask |= IBV_QP_QKEY;
  } else {
    attr.qp_access_flags = o.access ?? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    mask |= IBV_QP_ACCESS_FLAGS;
  }
  modifyOk(ep.qp, attr, mask, 'RESET→INIT');
}

/**
 * The AV from `dev` to `peer` (or to `dgid`). On an InfiniBand port it also
 * names the peer's LID (`ib.dlid`, else the peer's base LID) and carries the
 * GRH only when `ib.global` is not false.
 */
export function avTo(dev: Dev, peer: Dev | null, sgidIndex = dev.gidIndex, dgid: ibv_gid = peer!.gid, ib: IbPath = {}) {
  const ah = newAhAttr();
  ah.is_global = 1;
  if (dev.portAttr.link_layer === IBV_LINK_LAYER_INFINIBAND) {
    ah.is_global = ib.global === false ? 0 : 1;
    ah.dlid = ib.dlid ?? peer?.portAttr.lid ?? 0;
    ah.src_path_bits = ib.srcPathBits ?? 0;
  }
  ah.port_num = PORT;
  ah.sl = 0;
  ah.grh.dgid = { raw: Uint8Array.from(dgid.raw) };
  ah.grh.sgid_index = sgidIndex;
  ah.grh.hop_limit = 64;
  ah.grh.traffic_class = 0;
  return ah;
}

/** Where a peer QP is (what two processes exchange). */
export interface RemoteQp {
  qpn: number;
  gid: ibv_gid;
  /** InfiniBand: the peer port's LID. */
  lid?: number;
}

/** InfiniBand path choices (ignored on RoCE): GRH or LRH only, the DLID (default: the peer's base LID), source path bits. */
export interface IbPath {
  global?: boolean;
  dlid?: number;
  srcPathBits?: number;
}

export function toRtr(ep: Ep, peer: Ep | RemoteQp, rqPsn: number, o: ConnOpts = {}): void {
  const remote: RemoteQp = 'qp' in peer ? { qpn: peer.qp.qp_num, gid: peer.dev.gid, lid: peer.dev.portAttr.lid } : peer;
  const attr = newQpAttr();
  attr.qp_state = IBV_QPS_RTR;
  let mask = IBV_QP_STATE;
  if (ep.type !== IBV_QPT_UD) {
    attr.path_mtu = o.mtu ?? IBV_MTU_1024;
    attr.dest_qp_num = remote.qpn;
    attr.rq_psn = rqPsn;
    attr.ah_attr = avTo(ep.dev, null, ep.dev.gidIndex, remote.gid, { ...o.ib, dlid: o.ib?.dlid ?? remote.lid ?? 0 });
    attr.ah_attr.sl = o.sl ?? 0;
    attr.ah_attr.grh.traffic_class = o.trafficClass ?? 0;
    mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    if (ep.type === IBV_QPT_RC) {
      attr.max_dest_rd_atomic = o.maxDestRdAtomic ?? 16;
      attr.min_rnr_timer = o.minRnrTimer ?? 1;
      mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    }
  }
  modifyOk(ep.qp, attr, mask, 'INIT→RTR');
}

export function toRts(ep: Ep, sqPsn: number, o: ConnOpts = {}): void {
  const attr = newQpAttr();
  attr.qp_state = IBV_QPS_RTS;
  attr.sq_psn = sqPsn;
  let mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
  if (ep.type === IBV_QPT_RC) {
    // 17: 537 ms, so a slow CI machine does not retransmit spuriously (tests count packets).
    attr.timeout = o.timeout ?? 17;
    attr.retry_cnt = o.retryCnt ?? 7;
    attr.rnr_retry = o.rnrRetry ?? 7;
    attr.max_rd_atomic = o.maxRdAtomic ?? 16;
    mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
  }
  modifyOk(ep.qp, attr, mask, 'RTR→RTS');
}

/** Full RESET→INIT→RTR→RTS on both ends, each pointing at the other. */
export function connect(a: Ep, b: Ep, o: ConnOpts = {}): void {
  const psnA = o.psnA ?? 0x1000;
  const psnB = o.psnB ?? 0x2000;
  toInit(a, o);
  toInit(b, o);
  toRtr(a, b, psnB, o);
  toRtr(b, a, psnA, o);
  toRts(a, psnA, o);
  toRts(b, psnB, o);
}

export interface Pair {
  readonly a: Ep;
  readonly b: Ep;
}

/** A QP of `type` on each device, connected (UD: brought to RTS). */
export function makePair(f: Fabric, type: number, o: QpOpts & ConnOpts & { qpB?: QpOpts } = {}): Pair {
  const a = createQp(f.a, type, o);
  const b = createQp(f.b, type, { ...o, ...(o.qpB ?? {}) });
  connect(a, b, o);
  return { a, b };
}

export function createAh(dev: Dev, peer: Dev, sgidIndex = dev.gidIndex, dgid: ibv_gid = peer.gid, ib: IbPath = {}): ibv_ah {
  const ah = ibv_create_ah(dev.pd, avTo(dev, peer, sgidIndex, dgid, ib));
  dev.cleanup.push(() => void ibv_destroy_ah(ah));
  return ah;
}

export function qpState(qp: ibv_qp): number {
  const attr = newQpAttr();
  const init = { send_cq: null, recv_cq: null, cap: newQpCap(), qp_type: 0, sq_sig_all: 0 } as ibv_qp_init_attr;
  const rc = ibv_query_qp(qp, attr, IBV_QP_STATE, init);
  if (rc !== 0) throw new Error(`ibv_query_qp failed: ${errnoName(rc)}`);
  return attr.qp_state;
}

export function queryQp(qp: ibv_qp): ibv_qp_attr {
  const attr = newQpAttr();
  const init = { send_cq: null, recv_cq: null, cap: newQpCap(), qp_type: 0, sq_sig_all: 0 } as ibv_qp_init_attr;
  const rc = ibv_query_qp(qp, attr, IBV_QP_STATE, init);
  if (rc !== 0) throw new Error(`ibv_query_qp failed: ${errnoName(rc)}`);
  return attr;
}

export function expectQpState(qp: ibv_qp, state: number, what = ''): void {
  const s = qpState(qp);
  expect(qpStateName(s), `${what} QP ${qp.qp_num} state`).toBe(qpStateName(state));
}

export function pathMtuBytes(mtu = IBV_MTU_1024): number {
  return mtu_enum_to_bytes(mtu);
}

// ---------------------------------------------------------------------------
// Work requests
// ---------------------------------------------------------------------------

export interface SendOpts {
  wrId?: bigint;
  sge?: ibv_sge[];
  flags?: number;
  imm?: number;
  remote?: { addr: bigint; rkey: number };
  atomic?: { addr: bigint; rkey: number; compareAdd: bigint; swap?: bigint };
  ud?: { ah: ibv_ah; qpn: number; qkey: number };
}

export function sendWr(opcode: number, o: SendOpts = {}): ibv_send_wr {
  const sg = o.sge ?? [];
  const wr: ibv_send_wr = {
    wr_id: o.wrId ?? 0n,
    next: null,
    sg_list: sg,
    num_sge: sg.length,
    opcode,
    send_flags: o.flags ?? IBV_SEND_SIGNALED,
  };
  if (o.imm !== undefined) wr.imm_data = o.imm;
  if (o.remote) wr.wr = { rdma: { remote_addr: o.remote.addr, rkey: o.remote.rkey } };
  if (o.atomic) wr.wr = { atomic: { remote_addr: o.atomic.addr, rkey: o.atomic.rkey, compare_add: o.atomic.compareAdd, swap: o.atomic.swap ?? 0n } };
  if (o.ud) wr.wr = { ud: { ah: o.ud.ah, remote_qpn: o.ud.qpn, remote_qkey: o.ud.qkey } };
  return wr;
}

export const wrSend = (o: SendOpts) => sendWr(o.imm === undefined ? IBV_WR_SEND : IBV_WR_SEND_WITH_IMM, o);
export const wrWrite = (o: SendOpts) => sendWr(o.imm === undefined ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_WRITE_WITH_IMM, o);
export const wrRead = (o: SendOpts) => sendWr(IBV_WR_RDMA_READ, o);
export const wrCas = (o: SendOpts) => sendWr(IBV_WR_ATOMIC_CMP_AND_SWP, o);
export const wrFaa = (o: SendOpts) => sendWr(IBV_WR_ATOMIC_FETCH_AND_ADD, o);

/** Chain WRs through `next`. */
export function chain<T extends { next: T | null }>(wrs: T[]): T {
  for (let i = 0; i < wrs.length - 1; i++) wrs[i]!.next = wrs[i + 1]!;
  wrs[wrs.length - 1]!.next = null;
  return wrs[0]!;
}

/** ibv_post_send of one WR or a chain; fails the test unless it returns 0. */
export function postSend(ep: Ep, wr: ibv_send_wr | ibv_send_wr[]): void {
  const head = Array.isArray(wr) ? chain(wr) : wr;
  const bad: BadWr<ibv_send_wr> = {};
  const rc = ibv_post_send(ep.qp, head, bad);
  if (rc !== 0) throw new Error(`ibv_post_send on QP ${ep.qp.qp_num} returned ${errnoName(rc)} (bad_wr wr_id ${bad.wr?.wr_id})`);
}

export function recvWr(wrId: bigint, sge: ibv_sge[]): ibv_recv_wr {
  return { wr_id: wrId, next: null, sg_list: sge, num_sge: sge.length };
}

export function postRecv(ep: Ep, wr: ibv_recv_wr | ibv_recv_wr[]): void {
  const head = Array.isArray(wr) ? chain(wr) : wr;
  const bad: BadWr<ibv_recv_wr> = {};
  const rc = ibv_post_recv(ep.qp, head, bad);
  if (rc !== 0) throw new Error(`ibv_post_recv on QP ${ep.qp.qp_num} returned ${errnoName(rc)} (bad_wr wr_id ${bad.wr?.wr_id})`);
}

// ---------------------------------------------------------------------------
// Polling
// ---------------------------------------------------------------------------

const tick = () => new Promise<void>((r) => setImmediate(r));
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function copyWc(w: ibv_wc): ibv_wc {
  return { ...w };
}

export function wcText(w: ibv_wc): string {
  return `{wr_id ${w.wr_id}, ${ibv_wc_status_str(w.status)} (${w.status}), opcode ${w.opcode}, byte_len ${w.byte_len}, qp ${w.qp_num}, src_qp ${w.src_qp}, flags ${w.wc_flags}, imm 0x${(w.imm_data >>> 0).toString(16)}}`;
}

/**
 * Polls `cq` until `n` completions have arrived; fails after `timeoutMs`
 * naming `what` and what did arrive. Returns copies.
 */
export async function pollN(cq: ibv_cq, n: number, what: string, timeoutMs = POLL_TIMEOUT_MS): Promise<ibv_wc[]> {
  const out: ibv_wc[] = [];
  const wc = newWcArray(Math.min(64, Math.max(1, n)));
  const start = Date.now();
  let spins = 0;
  while (out.length < n) {
    const got = ibv_poll_cq(cq, Math.min(wc.length, n - out.length), wc);
    if (got < 0) throw new Error(`ibv_poll_cq returned ${got} while waiting for ${what}`);
    for (let i = 0; i < got; i++) out.push(copyWc(wc[i]!));
    if (out.length >= n) break;
    if (got > 0) {
      spins = 0;
      continue;
    }
    const el = Date.now() - start;
    if (el > timeoutMs) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}: ${out.length} of ${n} completions arrived${out.length ? ': ' + out.map(wcText).join(', ') : ''}`,
      );
    }
    // Spin on the event loop for a while, then back off to timers.
    if (++spins < 200) await tick();
    else await sleep(1);
  }
  return out;
}

export async function poll1(cq: ibv_cq, what: string, timeoutMs = POLL_TIMEOUT_MS): Promise<ibv_wc> {
  return (await pollN(cq, 1, what, timeoutMs))[0]!;
}

/** One non-blocking ibv_poll_cq of up to `max` entries (copies). */
export function pollNow(cq: ibv_cq, max = 64): ibv_wc[] {
  const wc = newWcArray(max);
  const got = ibv_poll_cq(cq, max, wc);
  if (got < 0) throw new Error(`ibv_poll_cq returned ${got}`);
  return wc.slice(0, got).map(copyWc);
}

export const TIMEOUT = Symbol('timeout');

/** Races `p` against `ms`; a late rejection of `p` is swallowed. */
export async function within<T>(p: Promise<T>, ms: number): Promise<T | typeof TIMEOUT> {
  p.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<typeof TIMEOUT>((r) => {
    timer = setTimeout(() => r(TIMEOUT), ms);
  });
  try {
    return await Promise.race([p, t]);
  } finally {
    clearTimeout(timer);
  }
}

/** Awaits `p` or fails after `ms` naming `what`. */
export async function orFail<T>(p: Promise<T>, what: string, ms = POLL_TIMEOUT_MS): Promise<T> {
  const r = await within(p, ms);
  if (r === TIMEOUT) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
  return r;
}

export function gidAt(dev: Dev, index: number): ibv_gid {
  const g = newGid();
  expect(ibv_query_gid(dev.ctx, PORT, index, g), `ibv_query_gid(${index})`).toBe(0);
  return g;
}

/** Polls for `ms` and fails if any completion arrives. */
export async function expectNoCqe(cq: ibv_cq, ms: number, what: string): Promise<void> {
  const wc = newWcArray(8);
  const end = Date.now() + ms;
  for (;;) {
    const got = ibv_poll_cq(cq, 8, wc);
    if (got !== 0) throw new Error(`${what}: expected no completion, got ${got}: ${wc.slice(0, Math.max(0, got)).map(wcText).join(', ')}`);
    if (Date.now() >= end) return;
    await sleep(2);
  }
}

/** Whatever is in the CQ now (after a short settle), without waiting for a count. */
export async function drain(cq: ibv_cq, settleMs = 50): Promise<ibv_wc[]> {
  const out: ibv_wc[] = [];
  const wc = newWcArray(16);
  let quietSince = Date.now();
  while (Date.now() - quietSince < settleMs) {
    const got = ibv_poll_cq(cq, 16, wc);
    if (got < 0) throw new Error(`ibv_poll_cq returned ${got}`);
    for (let i = 0; i < got; i++) out.push(copyWc(wc[i]!));
    if (got > 0) quietSince = Date.now();
    else await sleep(1);
  }
  return out;
}

export interface WcExpect {
  wr_id?: bigint;
  status?: number;
  opcode?: number;
  byte_len?: number;
  imm_data?: number;
  wc_flags?: number;
  qp_num?: number;
  src_qp?: number;
}

/** Compares the named fields, printing statuses by name. */
export function expectWc(w: ibv_wc, e: WcExpect, what: string): void {
  const pick: Record<string, unknown> = {};
  const want: Record<string, unknown> = {};
  for (const k of Object.keys(e) as (keyof WcExpect)[]) {
    let a: unknown = w[k];
    let b: unknown = e[k];
    if (k === 'status') {
      a = ibv_wc_status_str(a as number);
      b = ibv_wc_status_str(b as number);
    }
    if (k === 'imm_data') {
      a = (a as number) >>> 0;
      b = (b as number) >>> 0;
    }
    pick[k] = a;
    want[k] = b;
  }
  expect(pick, `${what}: ${wcText(w)}`).toEqual(want);
}

// ---------------------------------------------------------------------------
// Counters
// ---------------------------------------------------------------------------

export function counters(dev: Dev): Record<string, bigint> {
  return rnic_read_counters(dev.ctx, PORT);
}

/** after − before, only the counters that moved. */
export function counterDelta(before: Record<string, bigint>, after: Record<string, bigint>): Record<string, bigint> {
  const d: Record<string, bigint> = {};
  for (const k of Object.keys(after)) {
    const v = after[k]! - (before[k] ?? 0n);
    if (v !== 0n) d[k] = v;
  }
  return d;
}

/**
 * Counters are written by the device thread: wait (bounded) until `pred`
 * holds for the delta since `before`, then return that delta.
 */
export async function waitCounters(
  dev: Dev,
  before: Record<string, bigint>,
  pred: (d: Record<string, bigint>) => boolean,
  what: string,
  timeoutMs = 2000,
): Promise<Record<string, bigint>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const d = counterDelta(before, counters(dev));
    if (pred(d)) return d;
    if (Date.now() > end)
      throw new Error(`timed out waiting for counters on ${dev.name}: ${what}; delta ${JSON.stringify(d, (_k, v) => (typeof v === 'bigint' ? Number(v) : v))}`);
    await sleep(2);
  }
}

export { sleep };

export const QPT = { RC: IBV_QPT_RC, UC: IBV_QPT_UC, UD: IBV_QPT_UD } as const;
