/**
 * A scenario's hosts as an application sets them up: open each device,
 * allocate a protection domain, create completion queues and queue pairs,
 * and bring each pair through RESET → INIT → RTR → RTS with the scenario's
 * attributes — with the same ibv_* calls any verbs program makes (no
 * pipeline or device internals).
 *
 * Layering note: this file and scenario-runner.ts are an *application* of
 * the verbs API that lives beside the runtime it drives, like the
 * examples/ do; nothing else in src/runtime imports them.
 */
import {
  IBV_ACCESS_LOCAL_WRITE,
  IBV_ACCESS_REMOTE_ATOMIC,
  IBV_ACCESS_REMOTE_READ,
  IBV_ACCESS_REMOTE_WRITE,
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
  IBV_LINK_LAYER_INFINIBAND,
  IBV_QPT_RC,
  IBV_QPT_UC,
  IBV_QPT_UD,
  IBV_QPT_XRC_RECV,
  IBV_QPT_XRC_SEND,
  IBV_QP_INIT_ATTR_PD,
  IBV_QP_INIT_ATTR_XRCD,
  IBV_SRQ_INIT_ATTR_CQ,
  IBV_SRQ_INIT_ATTR_PD,
  IBV_SRQ_INIT_ATTR_TYPE,
  IBV_SRQ_INIT_ATTR_XRCD,
  IBV_SRQT_XRC,
  IBV_XRCD_INIT_ATTR_FD,
  IBV_XRCD_INIT_ATTR_OFLAGS,
  errnoName,
  ibv_alloc_pd,
  ibv_close_device,
  ibv_create_ah,
  ibv_create_cq,
  ibv_create_qp,
  ibv_create_qp_ex,
  ibv_create_srq_ex,
  ibv_close_xrcd,
  ibv_destroy_srq,
  ibv_get_srq_num,
  ibv_open_xrcd,
  ibv_dealloc_pd,
  ibv_dereg_mr,
  ibv_destroy_ah,
  ibv_destroy_cq,
  ibv_destroy_qp,
  ibv_get_device_list,
  ibv_get_device_name,
  ibv_modify_qp,
  ibv_open_device,
  ibv_query_gid,
  ibv_query_port,
  rnic_errno,
  ibv_query_qp,
  ibv_reg_mr,
  mtu_bytes_to_enum,
  newAhAttr,
  newGid,
  newPortAttr,
  newQpAttr,
  newQpCap,
  qpStateName,
  rnic_alloc_buf,
  rnic_free_buf,
} from '../driver/verbs/index.js';
import type {
  ibv_ah,
  ibv_ah_attr,
  ibv_context,
  ibv_cq,
  ibv_gid,
  ibv_mr,
  ibv_pd,
  ibv_qp,
  ibv_qp_attr,
  ibv_qp_init_attr,
  ibv_srq,
} from '../driver/verbs/index.js';
import { RnicError } from '../wire/errors.js';
import { isReliable, type Scenario, type ScenarioQp } from './scenario.js';

export class ScenarioRunError extends RnicError<'SCENARIO_RUN_FAILED'> {
  constructor(message: string) {
    super('SCENARIO_RUN_FAILED', message);
    this.name = 'ScenarioRunError';
  }
}

export interface HostDev {
  readonly name: string;
  readonly ctx: ibv_context;
  readonly pd: ibv_pd;
  readonly ports: number;
  readonly cleanup: (() => void)[];
}

/** One end of a scenario QP. */
export interface QpEnd {
  readonly dev: HostDev;
  readonly port: number;
  readonly gid: ibv_gid;
  /** The port's LID when it is an InfiniBand port (the peer's DLID), else null. */
  readonly ibLid: number | null;
  readonly qp: ibv_qp;
  readonly scq: ibv_cq;
  readonly rcq: ibv_cq;
  /** Its first send PSN. */
  readonly sqPsn: number;
  /** UD: an address handle towards the other end. */
  ah: ibv_ah | null;
  /** XRC, the receive end: the XRC SRQ its receives go to (completions on `rcq`), and its number for the sender's WRs. */
  readonly srq: ibv_srq | null;
  readonly srqNum: number;
}

export interface QpPair {
  readonly spec: ScenarioQp;
  readonly a: QpEnd;
  readonly b: QpEnd;
}

export interface RegBuf {
  readonly dev: HostDev;
  /** The registered bytes. */
  readonly bytes: Uint8Array;
  readonly mr: ibv_mr;
  /** The allocation: GUARD_BYTES, `bytes`, GUARD_BYTES. */
  readonly whole: Uint8Array;
}

const ALL_ACCESS = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

/** Opens every device of the scenario (for counters too) with a PD each. */
export function openHosts(s: Scenario): Map<string, HostDev> {
  const list = ibv_get_device_list();
  const out = new Map<string, HostDev>();
  for (const d of s.devices) {
    const dev = list.find((x) => ibv_get_device_name(x) === d.name);
    if (!dev) throw new ScenarioRunError(`device ${d.name} is not in ibv_get_device_list() (${list.map(ibv_get_device_name).join(', ')})`);
    const ctx = ibv_open_device(dev);
    const pd = ibv_alloc_pd(ctx);
    out.set(d.name, { name: d.name, ctx, pd, ports: d.ports.length, cleanup: [] });
  }
  return out;
}

export function closeHosts(hosts: Map<string, HostDev>): void {
  for (const h of hosts.values()) {
    while (h.cleanup.length > 0) {
      try {
        h.cleanup.pop()!();
      } catch {
        // best effort: closing the context frees the rest
      }
    }
    ibv_dealloc_pd(h.pd);
    ibv_close_device(h.ctx);
  }
}

function modify(qp: ibv_qp, attr: Partial<ibv_qp_attr>, mask: number, what: string): void {
  const rc = ibv_modify_qp(qp, attr, mask);
  if (rc !== 0) throw new ScenarioRunError(`ibv_modify_qp(${what}) on QP ${qp.qp_num} failed: ${errnoName(rc)}`);
}

function qpType(t: 'RC' | 'UC' | 'UD'): number {
  return t === 'RC' ? IBV_QPT_RC : t === 'UC' ? IBV_QPT_UC : IBV_QPT_UD;
}

/** XRC: `a` is the send end, `b` the receive end. */
type XrcRole = 'send' | 'recv' | null;

function makeEnd(dev: HostDev, port: number, spec: ScenarioQp, sqPsn: number, xrc: XrcRole): QpEnd {
  const gid = newGid();
  const rc = ibv_query_gid(dev.ctx, port, spec.gid_index, gid);
  if (rc !== 0) throw new ScenarioRunError(`ibv_query_gid(${dev.name} port ${port}, index ${spec.gid_index}) failed: ${errnoName(rnic_errno())}`);
  const ibLid = portLid(dev, port);
  const scq = ibv_create_cq(dev.ctx, spec.cq_depth, null, null, 0);
  dev.cleanup.push(() => void ibv_destroy_cq(scq));
  const rcq = ibv_create_cq(dev.ctx, spec.cq_depth, null, null, 0);
  dev.cleanup.push(() => void ibv_destroy_cq(rcq));
  const cap = newQpCap();
  cap.max_send_wr = spec.max_send_wr;
  cap.max_recv_wr = spec.max_recv_wr;
  cap.max_send_sge = 1;
  cap.max_recv_sge = 1;
  cap.max_inline_data = spec.max_inline_data;
  if (xrc === 'recv') return { ...xrcReceiveEnd(dev, spec, rcq), dev, port, gid, ibLid, scq, rcq, sqPsn, ah: null };
  let qp: ibv_qp;
  if (xrc === 'send') {
    cap.max_recv_wr = 0;
    cap.max_recv_sge = 0;
    qp = ibv_create_qp_ex(dev.ctx, { comp_mask: IBV_QP_INIT_ATTR_PD, pd: dev.pd, qp_type: IBV_QPT_XRC_SEND, send_cq: scq, recv_cq: null, cap, sq_sig_all: 0 });
  } else {
    const init: ibv_qp_init_attr = { send_cq: scq, recv_cq: rcq, srq: null, cap, qp_type: qpType(spec.type as 'RC' | 'UC' | 'UD'), sq_sig_all: 0 };
    qp = ibv_create_qp(dev.pd, init);
  }
  dev.cleanup.push(() => void ibv_destroy_qp(qp));
  return { dev, port, gid, ibLid, qp, scq, rcq, sqPsn, ah: null, srq: null, srqNum: 0 };
}

/** The LID of an InfiniBand port, null on Ethernet. */
function portLid(dev: HostDev, port: number): number | null {
  const pa = newPortAttr();
  const rc = ibv_query_port(dev.ctx, port, pa);
  if (rc !== 0) throw new ScenarioRunError(`ibv_query_port(${dev.name} port ${port}) failed: ${errnoName(rc)}`);
  return pa.link_layer === IBV_LINK_LAYER_INFINIBAND ? pa.lid : null;
}

/** An XRC receive end: a private XRC domain, an XRC SRQ completing on `cq`, and the XRC receive QP (as ibv_xsrq_pingpong sets them up). */
function xrcReceiveEnd(dev: HostDev, spec: ScenarioQp, cq: ibv_cq): { qp: ibv_qp; srq: ibv_srq; srqNum: number } {
  const xrcd = ibv_open_xrcd(dev.ctx, { comp_mask: IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS, fd: -1, oflags: 0 });
  dev.cleanup.push(() => void ibv_close_xrcd(xrcd));
  const srq = ibv_create_srq_ex(dev.ctx, {
    comp_mask: IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
    srq_type: IBV_SRQT_XRC,
    pd: dev.pd,
    xrcd,
    cq,
    srq_context: null,
    attr: { max_wr: spec.max_recv_wr, max_sge: 1, srq_limit: 0 },
  });
  dev.cleanup.push(() => void ibv_destroy_srq(srq));
  const num = { srq_num: 0 };
  const rc = ibv_get_srq_num(srq, num);
  if (rc !== 0) throw new ScenarioRunError(`ibv_get_srq_num on ${dev.name} failed: ${errnoName(rc)}`);
  const qp = ibv_create_qp_ex(dev.ctx, {
    comp_mask: IBV_QP_INIT_ATTR_XRCD,
    xrcd,
    qp_type: IBV_QPT_XRC_RECV,
    send_cq: null,
    recv_cq: null,
    cap: newQpCap(),
    sq_sig_all: 0,
  });
  dev.cleanup.push(() => void ibv_destroy_qp(qp));
  return { qp, srq, srqNum: num.srq_num };
}

function avTowards(end: QpEnd, peer: QpEnd, spec: ScenarioQp): ibv_ah_attr {
  const ah = newAhAttr();
  ah.is_global = 1;
  if (peer.ibLid !== null) {
    ah.dlid = peer.ibLid;
    ah.is_global = spec.grh === false ? 0 : 1;
  }
  ah.port_num = end.port;
  ah.sl = spec.sl;
  ah.grh.dgid = { raw: Uint8Array.from(peer.gid.raw) };
  ah.grh.sgid_index = spec.gid_index;
  ah.grh.hop_limit = spec.hop_limit;
  ah.grh.traffic_class = spec.traffic_class;
  return ah;
}

/**
 * INIT → RTR → RTS for one end of a connected (RC/UC) pair or a UD QP; an
 * XRC send end as an RC requester, an XRC receive end to RTR as an RC
 * responder (it never sends a request, as in rdma-core's XRC tests).
 */
function connectEnd(end: QpEnd, peer: QpEnd, spec: ScenarioQp, xrc: XrcRole): void {
  const init = newQpAttr();
  init.qp_state = IBV_QPS_INIT;
  init.pkey_index = 0;
  init.port_num = end.port;
  let mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
  if (spec.type === 'UD') {
    init.qkey = spec.qkey;
    mask |= IBV_QP_QKEY;
  } else {
    init.qp_access_flags = ALL_ACCESS;
    mask |= IBV_QP_ACCESS_FLAGS;
  }
  modify(end.qp, init, mask, `${spec.name} RESET→INIT`);

  const rtr = newQpAttr();
  rtr.qp_state = IBV_QPS_RTR;
  mask = IBV_QP_STATE;
  if (spec.type !== 'UD') {
    rtr.path_mtu = mtu_bytes_to_enum(spec.mtu);
    rtr.dest_qp_num = peer.qp.qp_num;
    rtr.rq_psn = peer.sqPsn;
    rtr.ah_attr = avTowards(end, peer, spec);
    mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    if (isReliable(spec.type) && xrc !== 'send') {
      rtr.max_dest_rd_atomic = spec.max_dest_rd_atomic;
      rtr.min_rnr_timer = spec.min_rnr_timer;
      mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    }
  }
  modify(end.qp, rtr, mask, `${spec.name} INIT→RTR`);
  if (xrc === 'recv') return;

  const rts = newQpAttr();
  rts.qp_state = IBV_QPS_RTS;
  rts.sq_psn = end.sqPsn;
  mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
  if (isReliable(spec.type)) {
    rts.timeout = spec.timeout;
    rts.retry_cnt = spec.retry_cnt;
    rts.rnr_retry = spec.rnr_retry;
    rts.max_rd_atomic = spec.max_rd_atomic;
    mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
  }
  modify(end.qp, rts, mask, `${spec.name} RTR→RTS`);
  if (spec.type === 'UD') {
    const ah = ibv_create_ah(end.dev.pd, avTowards(end, peer, spec));
    end.dev.cleanup.push(() => void ibv_destroy_ah(ah));
    end.ah = ah;
  }
}

/** Creates and connects the scenario's QP `spec`. */
export function makePair(hosts: Map<string, HostDev>, spec: ScenarioQp): QpPair {
  const xrc = spec.type === 'XRC';
  const a = makeEnd(hosts.get(spec.a)!, spec.aPort, spec, spec.psn_a, xrc ? 'send' : null);
  const b = makeEnd(hosts.get(spec.b)!, spec.bPort, spec, spec.psn_b, xrc ? 'recv' : null);
  connectEnd(a, b, spec, xrc ? 'send' : null);
  connectEnd(b, a, spec, xrc ? 'recv' : null);
  return { spec, a, b };
}

/** Known bytes on each side of every buffer `buffer` registers (outside its MR, in the same allocation). */
export const GUARD_BYTES = 64;

function guardByte(k: number): number {
  return (k * 151 + 0xc3) & 0xff;
}

/**
 * A registered buffer of `len` bytes (all access rights), zeroed, with
 * GUARD_BYTES of known bytes before and after it that are not part of the
 * MR: `guardDamage` tells whether anything wrote there.
 */
export function buffer(dev: HostDev, len: number): RegBuf {
  const n = Math.max(8, len);
  const whole = rnic_alloc_buf(dev.ctx, n + 2 * GUARD_BYTES, 64);
  // Known bytes in the guards only (the MR between them is zeroed).
  for (let k = 0; k < GUARD_BYTES; k++) whole[k] = guardByte(k);
  for (let k = GUARD_BYTES + n; k < whole.length; k++) whole[k] = guardByte(k);
  // Zeroed by rnic_alloc_buf (calloc-like), and the guards did not touch it.
  const bytes = whole.subarray(GUARD_BYTES, GUARD_BYTES + n);
  const mr = ibv_reg_mr(dev.pd, bytes, ALL_ACCESS);
  dev.cleanup.push(() => {
    ibv_dereg_mr(mr);
    rnic_free_buf(dev.ctx, whole);
  });
  return { dev, bytes, mr, whole };
}

/** Offsets of guard bytes of `b` that changed (relative to the MR's start: negative before it), at most `max`. */
export function guardDamage(b: RegBuf, max = 8): number[] {
  const out: number[] = [];
  const w = b.whole;
  const end = GUARD_BYTES + b.bytes.length;
  for (let k = 0; k < w.length && out.length < max; k++) {
    if (k === GUARD_BYTES) k = end;
    if (k < w.length && w[k] !== guardByte(k)) out.push(k - GUARD_BYTES);
  }
  return out;
}

/** The QP's state name as ibv_query_qp reports it ('RTS', 'ERR', ...). */
export function qpStateOf(qp: ibv_qp): string {
  const attr = newQpAttr();
  const init = { send_cq: null, recv_cq: null, cap: newQpCap(), qp_type: 0, sq_sig_all: 0 } as ibv_qp_init_attr;
  const rc = ibv_query_qp(qp, attr, IBV_QP_STATE, init);
  return rc === 0 ? qpStateName(attr.qp_state) : `unknown (ibv_query_qp: ${errnoName(rc)})`;
}
