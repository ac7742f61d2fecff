/**
 * A software stand-in for a verbs provider, for testing the example programs
 * before the model provider exists: RC, UC and UD queue pairs on RoCE-like
 * ports, SEND/RECV, RDMA WRITE and RDMA READ, completion queues and
 * completion channels, all in this thread.
 *
 * It is not the model and checks only what the examples rely on. It keeps
 * the rules a real RoCE device enforces that a ported program could get
 * wrong: the modify_qp masks each transition needs, a GRH on every address
 * vector of an Ethernet port, posting only in the right states, queue
 * depths, lkey/rkey bounds and access rights, RNR retry on RC when no
 * receive is posted, drops on UC/UD. Work advances on the event loop
 * (setImmediate), so a program that spins without yielding hangs here just
 * as it would against a device driven by this thread.
 */
import {
  IBV_ACCESS_LOCAL_WRITE,
  IBV_ACCESS_REMOTE_READ,
  IBV_ACCESS_REMOTE_WRITE,
  IBV_ATOMIC_HCA,
  IBV_LINK_LAYER_ETHERNET,
  IBV_MTU_1024,
  IBV_MTU_4096,
  IBV_NODE_CA,
  IBV_PORT_ACTIVE,
  IBV_QP_ACCESS_FLAGS,
  IBV_QP_AV,
  IBV_QP_CAP,
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
  IBV_QPS_ERR,
  IBV_QPS_INIT,
  IBV_QPS_RESET,
  IBV_QPS_RTR,
  IBV_QPS_RTS,
  IBV_QPT_RC,
  IBV_QPT_UC,
  IBV_QPT_UD,
  IBV_SEND_INLINE,
  IBV_SEND_SIGNALED,
  IBV_TRANSPORT_IB,
  IBV_WC_LOC_LEN_ERR,
  IBV_WC_LOC_PROT_ERR,
  IBV_WC_RDMA_READ,
  IBV_WC_RDMA_WRITE,
  IBV_WC_RECV,
  IBV_WC_REM_ACCESS_ERR,
  IBV_WC_RETRY_EXC_ERR,
  IBV_WC_SEND,
  IBV_WC_SUCCESS,
  IBV_WC_WR_FLUSH_ERR,
  IBV_WR_RDMA_READ,
  IBV_WR_RDMA_WRITE,
  IBV_WR_SEND,
  VerbsError,
  errno,
  newWc,
} from '../../src/driver/verbs/index.js';
import type {
  ibv_ah,
  ibv_ah_attr,
  ibv_comp_channel,
  ibv_context,
  ibv_cq,
  ibv_gid,
  ibv_mr,
  ibv_pd,
  ibv_qp,
  ibv_qp_attr,
  ibv_qp_cap,
  ibv_recv_wr,
  ibv_send_wr,
  ibv_sge,
  ibv_wc,
  ProviderDevice,
  VerbsContextOps,
  VerbsProvider,
} from '../../src/driver/verbs/index.js';
import { registerProvider, unregisterProvider } from '../../src/driver/providers.js';

const MAX_INLINE = 64;
const UD_GRH = 40;

type Ctx = ibv_context & { ops: VerbsContextOps; dev: SoftDevice };

class SoftDevice implements ProviderDevice {
  readonly node_type = IBV_NODE_CA;
  readonly transport_type = IBV_TRANSPORT_IB;
  readonly dev_name: string;
  readonly dev_path: string;
  readonly ibdev_path: string;
  readonly gids: Uint8Array[];
  readonly guid: bigint;
  constructor(
    readonly provider: VerbsProvider,
    readonly name: string,
    readonly index: number,
  ) {
    this.dev_name = `uverbs${index}`;
    this.dev_path = `/nonexistent/soft-verbs/${this.dev_name}`;
    this.ibdev_path = `/nonexistent/soft-verbs/${name}`;
    this.guid = 0x0200_5eff_fe00_0000n + BigInt(index + 1);
    const ll = new Uint8Array(16);
    ll.set([0xfe, 0x80]);
    ll.set([0x00, 0x00, 0x5e, 0xff, 0xfe, 0x00, 0x00, index + 1], 8);
    const v4 = new Uint8Array(16);
    v4.set([0xff, 0xff, 10, 0, 0, index + 1], 10);
    this.gids = [ll, v4];
  }
}

class SoftCq implements ibv_cq {
  readonly handle: number;
  readonly queue: ibv_wc[] = [];
  armed = false;
  events = 0;
  acked = 0;
  constructor(
    readonly context: ibv_context,
    readonly cqe: number,
    readonly cq_context: unknown,
    readonly channel: SoftChannel | null,
  ) {
    this.handle = nextHandle++;
  }
}

class SoftChannel implements ibv_comp_channel {
  readonly fd: number;
  readonly refcnt = 0;
  readonly pending: SoftCq[] = [];
  readonly waiting: Array<(cq: SoftCq) => void> = [];
  constructor(readonly context: ibv_context) {
    this.fd = nextHandle++;
  }
}

interface SoftMr extends ibv_mr {
  bytes: Uint8Array;
  access: number;
}

interface SendItem {
  wr: ibv_send_wr;
  inline: Uint8Array | null;
  attempts: number;
}

class SoftQp implements ibv_qp {
  readonly handle: number;
  readonly qp_num: number;
  readonly srq = null;
  state = IBV_QPS_RESET;
  readonly attr: Partial<ibv_qp_attr> = {};
  readonly sq: SendItem[] = [];
  readonly rq: ibv_recv_wr[] = [];
  sendOutstanding = 0;
  pumping = false;
  constructor(
    readonly context: Ctx,
    readonly pd: ibv_pd,
    readonly send_cq: SoftCq,
    readonly recv_cq: SoftCq,
    readonly qp_type: number,
    readonly cap: ibv_qp_cap,
    readonly sq_sig_all: number,
    readonly qp_context: unknown,
  ) {
    this.handle = nextHandle++;
    this.qp_num = nextQpn++;
  }
}

interface SoftAh extends ibv_ah {
  attr: ibv_ah_attr;
}

let nextHandle = 1;
let nextQpn = 0x11;
let nextKey = 0x1000;
let nextAddr = 0x7f00_0000_0000n;
const bases = new WeakMap<ArrayBufferLike, bigint>();
const mrs = new Map<number, SoftMr>();
const qps = new Map<number, SoftQp>();
let devices: SoftDevice[] = [];

function cloneWr(wr: ibv_send_wr): ibv_send_wr {
  return {
    ...wr,
    next: null,
    sg_list: (wr.sg_list ?? []).slice(0, wr.num_sge).map((s) => ({ ...s })),
    wr: wr.wr ? { rdma: wr.wr.rdma && { ...wr.wr.rdma }, ud: wr.wr.ud && { ...wr.wr.ud } } : undefined,
  };
}

/** The bytes an SGE names, if its lkey covers it and allows `need`. */
function sgeBytes(ctx: ibv_context, sge: ibv_sge, need: number): Uint8Array | null {
  const mr = mrs.get(sge.lkey);
  if (!mr || mr.context !== ctx) return null;
  if ((mr.access & need) !== need) return null;
  const off = sge.addr - mr.addr;
  if (off < 0n || off + BigInt(sge.length) > BigInt(mr.length)) return null;
  return mr.bytes.subarray(Number(off), Number(off) + sge.length);
}

function gather(qp: SoftQp, sges: ibv_sge[]): Uint8Array | null {
  const parts: Uint8Array[] = [];
  for (const s of sges) {
    const b = sgeBytes(qp.context, s, 0);
    if (!b) return null;
    parts.push(b);
  }
  const total = parts.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(total);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

function scatter(ctx: ibv_context, sges: ibv_sge[], data: Uint8Array): boolean {
  const room = sges.reduce((n, s) => n + s.length, 0);
  if (room < data.length) return false;
  let o = 0;
  for (const s of sges) {
    if (o >= data.length) break;
    const n = Math.min(s.length, data.length - o);
    const b = sgeBytes(ctx, { ...s, length: n }, IBV_ACCESS_LOCAL_WRITE);
    if (!b) return false;
    b.set(data.subarray(o, o + n));
    o += n;
  }
  return true;
}

function complete(cq: SoftCq, fields: Partial<ibv_wc>): void {
  cq.queue.push({ ...newWc(), ...fields });
  if (cq.armed && cq.channel) {
    cq.armed = false;
    const ch = cq.channel;
    const w = ch.waiting.shift();
    if (w) w(cq);
    else ch.pending.push(cq);
  }
}

function findDevice(ah: ibv_ah_attr): SoftDevice | undefined {
  if (!ah.is_global) return undefined; // RoCE: no GRH, no route
  return devices.find((d) => d.gids.some((g) => g.every((b, i) => b === ah.grh.dgid.raw[i])));
}

/** Delivers the head of qp's send queue if it can; returns false to retry later. */
function execute(qp: SoftQp, item: SendItem): boolean {
  const wr = item.wr;
  const signaled = qp.sq_sig_all !== 0 || (wr.send_flags & IBV_SEND_SIGNALED) !== 0;
  const sges = wr.sg_list ?? [];
  const finish = (status: number, opcode: number, byte_len: number): void => {
    qp.sendOutstanding--;
    if (status !== IBV_WC_SUCCESS) {
      qp.state = IBV_QPS_ERR;
      complete(qp.send_cq, { wr_id: wr.wr_id, status, opcode, qp_num: qp.qp_num });
      return;
    }
    if (signaled) complete(qp.send_cq, { wr_id: wr.wr_id, status, opcode, byte_len, qp_num: qp.qp_num });
  };

  // Where it goes.
  let ahAttr: ibv_ah_attr | undefined;
  let dqpn: number;
  if (qp.qp_type === IBV_QPT_UD) {
    const ud = wr.wr?.ud;
    ahAttr = (ud?.ah as SoftAh | null | undefined)?.attr;
    dqpn = ud?.remote_qpn ?? 0;
  } else {
    ahAttr = qp.attr.ah_attr;
    dqpn = qp.attr.dest_qp_num ?? 0;
  }
  const dev = ahAttr ? findDevice(ahAttr) : undefined;
  const remote = qps.get(dqpn);
  const reachable = !!dev && !!remote && remote.context.dev === dev && (remote.state === IBV_QPS_RTR || remote.state === IBV_QPS_RTS);
  if (!reachable || !remote) {
    if (qp.qp_type !== IBV_QPT_RC) {
      finish(IBV_WC_SUCCESS, IBV_WC_SEND, 0); // UC/UD: the packet is lost
      return true;
    }
    if (++item.attempts < 2000) return false;
    finish(IBV_WC_RETRY_EXC_ERR, IBV_WC_SEND, 0);
    return true;
  }

  switch (wr.opcode) {
    case IBV_WR_SEND: {
      const data = item.inline ?? gather(qp, sges);
      if (!data) {
        finish(IBV_WC_LOC_PROT_ERR, IBV_WC_SEND, 0);
        return true;
      }
      if (qp.qp_type === IBV_QPT_UD && (remote.attr.qkey ?? 0) !== (wr.wr?.ud?.remote_qkey ?? -1)) {
        finish(IBV_WC_SUCCESS, IBV_WC_SEND, 0); // a bad Q_Key is silently dropped
        return true;
      }
      const rwr = remote.rq.shift();
      if (!rwr) {
        if (qp.qp_type !== IBV_QPT_RC) {
          finish(IBV_WC_SUCCESS, IBV_WC_SEND, data.length);
          return true;
        }
        return ++item.attempts < 100000 ? false : (finish(IBV_WC_RETRY_EXC_ERR, IBV_WC_SEND, 0), true);
      }
      let payload = data;
      if (qp.qp_type === IBV_QPT_UD) {
        payload = new Uint8Array(UD_GRH + data.length);
        payload.set(data, UD_GRH);
      }
      const rsges = (rwr.sg_list ?? []).slice(0, rwr.num_sge);
      if (!scatter(remote.context, rsges, payload)) {
        complete(remote.recv_cq, { wr_id: rwr.wr_id, status: IBV_WC_LOC_LEN_ERR, opcode: IBV_WC_RECV, qp_num: remote.qp_num });
        remote.state = IBV_QPS_ERR;
        finish(qp.qp_type === IBV_QPT_RC ? IBV_WC_REM_ACCESS_ERR : IBV_WC_SUCCESS, IBV_WC_SEND, 0);
        return true;
      }
      complete(remote.recv_cq, {
        wr_id: rwr.wr_id,
        status: IBV_WC_SUCCESS,
        opcode: IBV_WC_RECV,
        byte_len: payload.length,
        qp_num: remote.qp_num,
        src_qp: qp.qp_num,
        wc_flags: qp.qp_type === IBV_QPT_UD ? 1 : 0,
      });
      finish(IBV_WC_SUCCESS, IBV_WC_SEND, data.length);
      return true;
    }
    case IBV_WR_RDMA_WRITE: {
      const data = item.inline ?? gather(qp, sges);
      const rdma = wr.wr?.rdma;
      const mr = rdma ? mrs.get(rdma.rkey) : undefined;
      const off = mr && rdma ? rdma.remote_addr - mr.addr : -1n;
      const ok =
        !!data && !!mr && mr.context === remote.context && (mr.access & IBV_ACCESS_REMOTE_WRITE) !== 0 &&
        ((remote.attr.qp_access_flags ?? 0) & IBV_ACCESS_REMOTE_WRITE) !== 0 && off >= 0n && off + BigInt(data.length) <= BigInt(mr.length);
      if (!ok || !data || !mr) {
        finish(qp.qp_type === IBV_QPT_RC ? IBV_WC_REM_ACCESS_ERR : IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0);
        return true;
      }
      mr.bytes.set(data, Number(off));
      finish(IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, data.length);
      return true;
    }
    case IBV_WR_RDMA_READ: {
      const rdma = wr.wr?.rdma;
      const len = sges.reduce((n, s) => n + s.length, 0);
      const mr = rdma ? mrs.get(rdma.rkey) : undefined;
      const off = mr && rdma ? rdma.remote_addr - mr.addr : -1n;
      const ok =
        qp.qp_type === IBV_QPT_RC && !!mr && mr.context === remote.context && (mr.access & IBV_ACCESS_REMOTE_READ) !== 0 &&
        ((remote.attr.qp_access_flags ?? 0) & IBV_ACCESS_REMOTE_READ) !== 0 && off >= 0n && off + BigInt(len) <= BigInt(mr.length);
      if (!ok || !mr) {
        finish(IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_READ, 0);
        return true;
      }
      const data = mr.bytes.slice(Number(off), Number(off) + len);
      if (!scatter(qp.context, sges, data)) {
        finish(IBV_WC_LOC_PROT_ERR, IBV_WC_RDMA_READ, 0);
        return true;
      }
      finish(IBV_WC_SUCCESS, IBV_WC_RDMA_READ, len);
      return true;
    }
    default:
      finish(IBV_WC_LOC_PROT_ERR, IBV_WC_SEND, 0);
      return true;
  }
}

/** Moves one QP's send queue along, one WR per turn of the event loop (retrying an RNR later). */
function pump(qp: SoftQp): void {
  if (qp.pumping) return;
  qp.pumping = true;
  setImmediate(() => {
    qp.pumping = false;
    const item = qp.sq[0];
    if (!item) return;
    if (qp.state === IBV_QPS_ERR) {
      qp.sq.shift();
      qp.sendOutstanding--;
      complete(qp.send_cq, { wr_id: item.wr.wr_id, status: IBV_WC_WR_FLUSH_ERR, qp_num: qp.qp_num });
    } else if (execute(qp, item)) {
      qp.sq.shift();
    }
    if (qp.sq.length) pump(qp);
  });
}

/** The modify_qp mask each transition needs (and may carry), per transport, as the IB spec tables say. */
function checkMask(qp: SoftQp, cur: number, next: number, mask: number): boolean {
  const need = (m: number): boolean => (mask & m) === m;
  if (next === IBV_QPS_RESET || next === IBV_QPS_ERR) return true;
  if (cur === IBV_QPS_RESET && next === IBV_QPS_INIT) {
    return qp.qp_type === IBV_QPT_UD
      ? need(IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)
      : need(IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  }
  if (cur === IBV_QPS_INIT && next === IBV_QPS_RTR) {
    if (qp.qp_type === IBV_QPT_UD) return true;
    const base = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    return qp.qp_type === IBV_QPT_RC ? need(base | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) : need(base);
  }
  if (cur === IBV_QPS_RTR && next === IBV_QPS_RTS) {
    return qp.qp_type === IBV_QPT_RC
      ? need(IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC)
      : need(IBV_QP_SQ_PSN);
  }
  return cur === next;
}

function makeOps(): VerbsContextOps {
  const einval = (what: string): VerbsError => new VerbsError(errno.EINVAL, what);
  const unsupported = (): never => {
    throw new VerbsError(errno.EOPNOTSUPP, 'not in the soft-verbs stand-in');
  };
  return {
    query_device(ctx, attr) {
      const d = (ctx as Ctx).dev;
      Object.assign(attr, {
        fw_ver: '0.1.0',
        node_guid: d.guid,
        sys_image_guid: d.guid,
        max_mr_size: 0xffff_ffffn,
        page_size_cap: 0xffff_f000n,
        vendor_id: 0x1af4,
        vendor_part_id: 1,
        hw_ver: 0,
        max_qp: 1024,
        max_qp_wr: 16384,
        device_cap_flags: 0x1000 | 0x4000,
        max_sge: 4,
        max_sge_rd: 4,
        max_cq: 1024,
        max_cqe: 65536,
        max_mr: 1024,
        max_pd: 1024,
        max_qp_rd_atom: 16,
        max_res_rd_atom: 16384,
        max_qp_init_rd_atom: 16,
        atomic_cap: IBV_ATOMIC_HCA,
        max_ah: 1024,
        max_pkeys: 1,
        local_ca_ack_delay: 15,
        phys_port_cnt: 1,
      });
      return 0;
    },
    query_port(_ctx, port, attr) {
      if (port !== 1) return errno.EINVAL;
      Object.assign(attr, {
        state: IBV_PORT_ACTIVE,
        max_mtu: IBV_MTU_4096,
        active_mtu: IBV_MTU_1024,
        gid_tbl_len: 2,
        port_cap_flags: 0x04010000,
        max_msg_sz: 0x80000000,
        pkey_tbl_len: 1,
        lid: 0,
        sm_lid: 0,
        lmc: 0,
        max_vl_num: 1,
        active_width: 2,
        active_speed: 32,
        phys_state: 5,
        link_layer: IBV_LINK_LAYER_ETHERNET,
      });
      return 0;
    },
    query_gid(ctx, port, index, gid: ibv_gid) {
      const g = (ctx as Ctx).dev.gids[index];
      if (port !== 1 || !g) return errno.EINVAL;
      gid.raw.set(g);
      return 0;
    },
    query_pkey: () => 0xffff,
    close_device: () => 0,
    alloc_pd: (ctx) => ({ context: ctx, handle: nextHandle++ }),
    dealloc_pd: () => 0,
    alloc_buf(_ctx, length, align) {
      const bytes = new Uint8Array(length);
      const a = BigInt(Math.max(align, 64));
      nextAddr = ((nextAddr + a - 1n) / a) * a;
      bases.set(bytes.buffer, nextAddr);
      nextAddr += BigInt(length) + 4096n;
      return bytes;
    },
    free_buf: () => {},
    reg_mr(pd, buf, access) {
      const base = bases.get(buf.buffer);
      if (base === undefined) throw einval('reg_mr: not from rnic_alloc_buf');
      if (access & IBV_ACCESS_REMOTE_WRITE && !(access & IBV_ACCESS_LOCAL_WRITE)) throw einval('reg_mr: REMOTE_WRITE needs LOCAL_WRITE');
      const key = nextKey++;
      const mr: SoftMr = {
        context: pd.context,
        pd,
        addr: base + BigInt(buf.byteOffset),
        length: buf.byteLength,
        handle: nextHandle++,
        lkey: key,
        rkey: key,
        bytes: new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength),
        access,
      };
      mrs.set(key, mr);
      return mr;
    },
    dereg_mr(mr) {
      mrs.delete(mr.lkey);
      return 0;
    },
    create_comp_channel: (ctx) => new SoftChannel(ctx),
    destroy_comp_channel: () => 0,
    create_cq(ctx, cqe, cq_context, channel) {
      if (cqe < 1) throw einval('create_cq: cqe < 1');
      return new SoftCq(ctx, cqe, cq_context, channel as SoftChannel | null);
    },
    destroy_cq: () => 0,
    req_notify_cq(cq) {
      (cq as SoftCq).armed = true;
      return 0;
    },
    get_cq_event(ch) {
      const c = ch as SoftChannel;
      const ready = c.pending.shift();
      const deliver = (cq: SoftCq): { cq: ibv_cq; cq_context: unknown } => {
        cq.events++;
        return { cq, cq_context: cq.cq_context };
      };
      if (ready) return Promise.resolve(deliver(ready));
      return new Promise((resolve) => c.waiting.push((cq) => resolve(deliver(cq))));
    },
    ack_cq_events(cq, n) {
      (cq as SoftCq).acked += n;
    },
    poll_cq(cq, n, wc) {
      const q = (cq as SoftCq).queue;
      let i = 0;
      for (; i < n && q.length; i++) {
        const e = q.shift() as ibv_wc;
        if (wc[i]) Object.assign(wc[i] as ibv_wc, e);
        else wc[i] = e;
      }
      return i;
    },
    create_srq: unsupported,
    modify_srq: unsupported,
    query_srq: unsupported,
    destroy_srq: unsupported,
    post_srq_recv: unsupported,
    create_qp(pd, a) {
      if (a.qp_type !== IBV_QPT_RC && a.qp_type !== IBV_QPT_UC && a.qp_type !== IBV_QPT_UD) throw einval('create_qp: qp_type');
      if (!a.send_cq || !a.recv_cq) throw einval('create_qp: no CQ');
      const cap = { ...a.cap, max_inline_data: Math.max(a.cap.max_inline_data, MAX_INLINE) };
      const qp = new SoftQp(pd.context as Ctx, pd, a.send_cq as SoftCq, a.recv_cq as SoftCq, a.qp_type, cap, a.sq_sig_all, a.qp_context);
      qps.set(qp.qp_num, qp);
      return qp;
    },
    modify_qp(qpIn, attr, mask) {
      const qp = qpIn as SoftQp;
      const next = mask & IBV_QP_STATE ? (attr.qp_state as number) : qp.state;
      if (!checkMask(qp, qp.state, next, mask)) return errno.EINVAL;
      if (mask & IBV_QP_AV && attr.ah_attr) {
        if (!attr.ah_attr.is_global) return errno.EINVAL; // RoCE needs a GRH
        if (!(qp.context.dev.gids[attr.ah_attr.grh.sgid_index])) return errno.EINVAL;
        qp.attr.ah_attr = { ...attr.ah_attr, grh: { ...attr.ah_attr.grh, dgid: { raw: Uint8Array.from(attr.ah_attr.grh.dgid.raw) } } };
      }
      if (mask & IBV_QP_DEST_QPN) qp.attr.dest_qp_num = attr.dest_qp_num;
      if (mask & IBV_QP_ACCESS_FLAGS) qp.attr.qp_access_flags = attr.qp_access_flags;
      if (mask & IBV_QP_QKEY) qp.attr.qkey = attr.qkey;
      if (mask & IBV_QP_PATH_MTU) qp.attr.path_mtu = attr.path_mtu;
      qp.state = next;
      return 0;
    },
    query_qp(qpIn, attr, mask, init_attr) {
      const qp = qpIn as SoftQp;
      if (mask & IBV_QP_CAP) attr.cap = { ...qp.cap };
      attr.qp_state = qp.state;
      init_attr.cap = { ...qp.cap };
      init_attr.qp_type = qp.qp_type;
      return 0;
    },
    destroy_qp(qp) {
      qps.delete(qp.qp_num);
      (qp as SoftQp).state = IBV_QPS_RESET;
      return 0;
    },
    post_send(qpIn, wr, bad) {
      const qp = qpIn as SoftQp;
      for (let w: ibv_send_wr | null = wr; w; w = w.next) {
        let err = 0;
        if (qp.state !== IBV_QPS_RTS && qp.state !== IBV_QPS_ERR) err = errno.EINVAL;
        else if (qp.sendOutstanding >= qp.cap.max_send_wr) err = errno.ENOMEM;
        else if (w.num_sge > 4) err = errno.EINVAL;
        let inline: Uint8Array | null = null;
        if (!err && w.send_flags & IBV_SEND_INLINE) {
          inline = gather(qp, (w.sg_list ?? []).slice(0, w.num_sge));
          if (!inline || inline.length > qp.cap.max_inline_data) err = errno.EINVAL;
        }
        if (err) {
          if (bad) bad.wr = w;
          return err;
        }
        qp.sendOutstanding++;
        qp.sq.push({ wr: cloneWr(w), inline, attempts: 0 });
      }
      pump(qp);
      return 0;
    },
    post_recv(qpIn, wr, bad) {
      const qp = qpIn as SoftQp;
      for (let w: ibv_recv_wr | null = wr; w; w = w.next) {
        if (qp.state === IBV_QPS_RESET || qp.rq.length >= qp.cap.max_recv_wr) {
          if (bad) bad.wr = w;
          return qp.state === IBV_QPS_RESET ? errno.EINVAL : errno.ENOMEM;
        }
        qp.rq.push({ ...w, next: null, sg_list: (w.sg_list ?? []).slice(0, w.num_sge).map((s) => ({ ...s })) });
      }
      return 0;
    },
    create_ah(pd, attr) {
      if (!attr.is_global) throw einval('create_ah: RoCE needs a GRH');
      const ah: SoftAh = { context: pd.context, pd, handle: nextHandle++, attr: { ...attr, grh: { ...attr.grh, dgid: { raw: Uint8Array.from(attr.grh.dgid.raw) } } } };
      return ah;
    },
    destroy_ah: () => 0,
    get_async_event: () => new Promise(() => {}),
    ack_async_event: () => {},
    read_counters: () => ({}),
  };
}

const provider: VerbsProvider = {
  name: 'soft-verbs',
  devices: () => devices,
  guid: (d) => (d as SoftDevice).guid,
  open(d) {
    const dev = d as SoftDevice;
    const ctx = { device: dev, cmd_fd: -1, async_fd: -1, num_comp_vectors: 1, ops: makeOps(), dev };
    return ctx;
  },
};

/** Registers the stand-in with `count` devices named soft0, soft1, ... (replacing any earlier set). */
export function installSoftVerbs(count = 2): void {
  devices = Array.from({ length: count }, (_, i) => new SoftDevice(provider, `soft${i}`, i));
  registerProvider(provider);
}

export function uninstallSoftVerbs(): void {
  unregisterProvider(provider);
  devices = [];
}
