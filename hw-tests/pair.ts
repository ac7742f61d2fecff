/**
 * What the hw-tests share: open a device by name whatever its provider,
 * pick its RoCE v2 IPv4 GID, build CQ/QP pairs and connect them with the
 * masks the kernel requires, post and poll with a deadline. Only `ibv_*`
 * calls, so the same code runs on the model and on rxe0 through rdma-core.
 */
import {
  IBV_ACCESS_LOCAL_WRITE,
  IBV_ACCESS_REMOTE_ATOMIC,
  IBV_ACCESS_REMOTE_READ,
  IBV_ACCESS_REMOTE_WRITE,
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
  IBV_QPT_UD,
  IBV_SEND_SIGNALED,
  ibv_alloc_pd,
  ibv_close_device,
  ibv_create_cq,
  ibv_create_qp,
  ibv_get_device_list,
  ibv_modify_qp,
  ibv_open_device,
  ibv_poll_cq,
  ibv_post_recv,
  ibv_post_send,
  ibv_query_gid,
  ibv_query_port,
  ibv_reg_mr,
  ibv_wc_status_str,
  newGid,
  newPortAttr,
  newQpAttr,
  newWcArray,
  rnic_alloc_buf,
} from '../src/driver/verbs/index.js';
import type {
  ibv_comp_channel,
  ibv_context,
  ibv_cq,
  ibv_gid,
  ibv_mr,
  ibv_pd,
  ibv_qp,
  ibv_qp_attr,
  ibv_send_wr,
  ibv_srq,
  ibv_wc,
} from '../src/driver/verbs/index.js';
import type { ProviderDevice } from '../src/driver/verbs/ops.js';

export const PORT = 1;
export const QKEY = 0x11111111;
export const ALL_ACCESS = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
/** Generous: rxe under QEMU TCG is slow. */
export const POLL_TIMEOUT_MS = 15_000;

export class Fail extends Error {}

export function check(cond: unknown, what: string): asserts cond {
  if (!cond) throw new Fail(what);
}

export function eq<T>(got: T, want: T, what: string): void {
  if (got !== want) throw new Fail(`${what}: got ${String(got)}, want ${String(want)}`);
}

export interface Dev {
  name: string;
  provider: string;
  ctx: ibv_context;
  pd: ibv_pd;
  gid: ibv_gid;
  gidIndex: number;
}

/** The first RoCE v2 IPv4 GID (::ffff:a.b.c.d) of the port, else index 0. */
export function roceV2Ipv4Gid(ctx: ibv_context): { gid: ibv_gid; index: number } {
  const pa = newPortAttr();
  eq(ibv_query_port(ctx, PORT, pa), 0, 'ibv_query_port');
  for (let i = 0; i < Math.min(pa.gid_tbl_len, 16); i++) {
    const g = newGid();
    if (ibv_query_gid(ctx, PORT, i, g) !== 0) continue;
    const r = g.raw;
    if (r.subarray(0, 10).every((b) => b === 0) && r[10] === 0xff && r[11] === 0xff) return { gid: g, index: i };
  }
  const g = newGid();
  eq(ibv_query_gid(ctx, PORT, 0, g), 0, 'ibv_query_gid(0)');
  return { gid: g, index: 0 };
}

export function openDev(name: string): Dev {
  const d = ibv_get_device_list().find((x) => x.name === name) as ProviderDevice | undefined;
  if (!d)
    throw new Fail(
      `no device ${name} (have: ${ibv_get_device_list()
        .map((x) => x.name)
        .join(', ')})`,
    );
  const ctx = ibv_open_device(d);
  const { gid, index } = roceV2Ipv4Gid(ctx);
  return { name, provider: d.provider.name, ctx, pd: ibv_alloc_pd(ctx), gid, gidIndex: index };
}

export function closeDev(d: Dev): void {
  ibv_close_device(d.ctx); // destroys what is left, on both providers
}

export interface Mem {
  buf: Uint8Array;
  mr: ibv_mr;
}

export function mem(d: Dev, size: number, access = ALL_ACCESS): Mem {
  const buf = rnic_alloc_buf(d.ctx, size, 4096);
  return { buf, mr: ibv_reg_mr(d.pd, buf, access) };
}

export interface End {
  dev: Dev;
  cq: ibv_cq;
  qp: ibv_qp;
}

export function end(dev: Dev, type = IBV_QPT_RC, opts: { srq?: ibv_srq; channel?: ibv_comp_channel; depth?: number; inline?: number } = {}): End {
  const depth = opts.depth ?? 16;
  const cq = ibv_create_cq(dev.ctx, depth * 2, null, opts.channel ?? null, 0);
  const qp = ibv_create_qp(dev.pd, {
    send_cq: cq,
    recv_cq: cq,
    srq: opts.srq ?? null,
    qp_type: type,
    sq_sig_all: 0,
    cap: { max_send_wr: depth, max_recv_wr: depth, max_send_sge: 2, max_recv_sge: 2, max_inline_data: opts.inline ?? 0 },
  });
  return { dev, cq, qp };
}

export function toInit(e: End, access = ALL_ACCESS): void {
  const a = newQpAttr();
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = PORT;
  if (e.qp.qp_type === IBV_QPT_UD) {
    a.qkey = QKEY;
    eq(ibv_modify_qp(e.qp, a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY), 0, 'modify_qp INIT (UD)');
  } else {
    a.qp_access_flags = access;
    eq(ibv_modify_qp(e.qp, a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0, 'modify_qp INIT');
  }
}

export function rtrAttr(e: End, peer: End, psn: number): ibv_qp_attr {
  const a = newQpAttr();
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = peer.qp.qp_num;
  a.rq_psn = psn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.port_num = PORT;
  a.ah_attr.grh.dgid = peer.dev.gid;
  a.ah_attr.grh.sgid_index = e.dev.gidIndex;
  a.ah_attr.grh.hop_limit = 64;
  return a;
}

export const RTR_MASK = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
export const RTS_MASK = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;

export function toRts(e: End, peer: End, opts: { rnrRetry?: number; retryCnt?: number; psn?: number } = {}): void {
  const psn = opts.psn ?? 100;
  if (e.qp.qp_type === IBV_QPT_UD) {
    const a = newQpAttr();
    a.qp_state = IBV_QPS_RTR;
    eq(ibv_modify_qp(e.qp, a, IBV_QP_STATE), 0, 'modify_qp RTR (UD)');
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = psn;
    eq(ibv_modify_qp(e.qp, a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0, 'modify_qp RTS (UD)');
    return;
  }
  const uc = e.qp.qp_type !== IBV_QPT_RC;
  const r = rtrAttr(e, peer, psn);
  eq(ibv_modify_qp(e.qp, r, uc ? IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN : RTR_MASK), 0, 'modify_qp RTR');
  const a = newQpAttr();
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = opts.retryCnt ?? 7;
  a.rnr_retry = opts.rnrRetry ?? 7;
  a.sq_psn = psn;
  a.max_rd_atomic = 1;
  eq(ibv_modify_qp(e.qp, a, uc ? IBV_QP_STATE | IBV_QP_SQ_PSN : RTS_MASK), 0, 'modify_qp RTS');
}

/** Two connected QPs: on one device (rxe0 loops back to itself) or two (the model's cabled pair). */
export function connectedPair(a: Dev, b: Dev, type = IBV_QPT_RC, opts: Parameters<typeof toRts>[2] = {}): [End, End] {
  const x = end(a, type);
  const y = end(b, type);
  toInit(x);
  toInit(y);
  toRts(x, y, opts);
  toRts(y, x, opts);
  return [x, y];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls until `n` completions arrived, or fails naming what it waited for. */
export async function pollN(cq: ibv_cq, n: number, what: string, timeoutMs = POLL_TIMEOUT_MS): Promise<ibv_wc[]> {
  const out: ibv_wc[] = [];
  const wc = newWcArray(8);
  const t0 = Date.now();
  while (out.length < n) {
    const k = ibv_poll_cq(cq, Math.min(8, n - out.length), wc);
    check(k >= 0, `ibv_poll_cq returned ${k}`);
    for (let i = 0; i < k; i++) out.push({ ...wc[i]! });
    if (k === 0) {
      if (Date.now() - t0 > timeoutMs) throw new Fail(`${what}: ${out.length} of ${n} completions in ${timeoutMs} ms`);
      await sleep(1);
    }
  }
  return out;
}

export function wcOk(w: ibv_wc, what: string): void {
  if (w.status !== 0) throw new Fail(`${what}: status ${ibv_wc_status_str(w.status)} (vendor_err ${w.vendor_err})`);
}

export function postRecv(e: End, m: Mem, off: number, len: number, wr_id: bigint): void {
  eq(ibv_post_recv(e.qp, { wr_id, next: null, num_sge: 1, sg_list: [{ addr: m.mr.addr + BigInt(off), length: len, lkey: m.mr.lkey }] }), 0, 'ibv_post_recv');
}

export function sendWr(opcode: number, m: Mem, off: number, len: number, wr_id: bigint, extra: Partial<ibv_send_wr> = {}): ibv_send_wr {
  return {
    wr_id,
    next: null,
    opcode,
    send_flags: IBV_SEND_SIGNALED,
    num_sge: len > 0 ? 1 : 0,
    sg_list: len > 0 ? [{ addr: m.mr.addr + BigInt(off), length: len, lkey: m.mr.lkey }] : [],
    ...extra,
  };
}

export function post(e: End, wr: ibv_send_wr): void {
  eq(ibv_post_send(e.qp, wr), 0, 'ibv_post_send');
}

export function fill(b: Uint8Array, seed: number): void {
  for (let i = 0; i < b.length; i++) b[i] = (i * 131 + seed * 17 + 7) & 0xff;
}

export function sameBytes(a: Uint8Array, b: Uint8Array, what: string): void {
  eq(a.length, b.length, `${what}: length`);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) throw new Fail(`${what}: byte ${i} is ${a[i]}, want ${b[i]}`);
}
