/**
 * xsrq_pingpong: rdma-core's libibverbs/examples/xsrq_pingpong.c, ported.
 * Each end opens the XRC domain of /tmp/xrc_domain, makes one XRC SRQ (its
 * receives complete on the receive CQ) and, per client, an XRC receive QP
 * and an XRC send QP. A SEND names the peer's SRQ number; the receive QP
 * the peer's send QP is connected to takes it into that SRQ.
 *
 * The TCP exchange is the C program's, byte for byte: a 66-byte address
 * "%04x:%06x:%06x:%06x:%06x:%32s" (LID, receive QPN, send QPN, PSN, SRQ
 * number, wire GID) and its NUL, the client first, the server answering on
 * each of its `-c` connections; then the 4-byte termination "END" + NUL,
 * client first. The server sends first; every receive is answered by a
 * SEND until `-n` SENDs went to that client (only the last one signaled).
 *
 * What the port does not run: `-o` (on-demand paging: refused). With
 * `-c` > 1 the C server sends round-robin through every client's send QP
 * naming one client's SRQ, which relies on the clients sharing one device
 * and XRC domain (processes on one host opening /tmp/xrc_domain); model
 * devices in separate processes do not share one.
 */
import { constants as fsc, closeSync, openSync } from 'node:fs';
import { randomInt } from 'node:crypto';
import {
  IBV_ACCESS_LOCAL_WRITE,
  IBV_ACCESS_REMOTE_READ,
  IBV_ACCESS_REMOTE_WRITE,
  IBV_LINK_LAYER_ETHERNET,
  IBV_MTU_1024,
  IBV_QP_ACCESS_FLAGS,
  IBV_QP_AV,
  IBV_QP_DEST_QPN,
  IBV_QP_INIT_ATTR_PD,
  IBV_QP_INIT_ATTR_XRCD,
  IBV_QP_MAX_DEST_RD_ATOMIC,
  IBV_QP_MAX_QP_RD_ATOMIC,
  IBV_QP_MIN_RNR_TIMER,
  IBV_QP_PATH_MTU,
  IBV_QP_PKEY_INDEX,
  IBV_QP_PORT,
  IBV_QP_RETRY_CNT,
  IBV_QP_RNR_RETRY,
  IBV_QP_RQ_PSN,
  IBV_QP_SQ_PSN,
  IBV_QP_STATE,
  IBV_QP_TIMEOUT,
  IBV_QPS_INIT,
  IBV_QPS_RTR,
  IBV_QPS_RTS,
  IBV_QPT_XRC_RECV,
  IBV_QPT_XRC_SEND,
  IBV_SEND_SIGNALED,
  IBV_SRQ_INIT_ATTR_CQ,
  IBV_SRQ_INIT_ATTR_PD,
  IBV_SRQ_INIT_ATTR_TYPE,
  IBV_SRQ_INIT_ATTR_XRCD,
  IBV_SRQT_XRC,
  IBV_WR_SEND,
  IBV_XRCD_INIT_ATTR_FD,
  IBV_XRCD_INIT_ATTR_OFLAGS,
  O_CREAT,
  ibv_alloc_pd,
  ibv_close_device,
  ibv_close_xrcd,
  ibv_create_comp_channel,
  ibv_create_cq,
  ibv_create_qp_ex,
  ibv_create_srq_ex,
  ibv_dealloc_pd,
  ibv_dereg_mr,
  ibv_destroy_comp_channel,
  ibv_destroy_cq,
  ibv_destroy_qp,
  ibv_destroy_srq,
  ibv_get_device_list,
  ibv_get_device_name,
  ibv_get_srq_num,
  ibv_modify_qp,
  ibv_open_device,
  ibv_open_xrcd,
  ibv_poll_cq,
  ibv_post_send,
  ibv_post_srq_recv,
  ibv_query_gid,
  ibv_reg_mr,
  ibv_req_notify_cq,
  newAhAttr,
  newGid,
  newPortAttr,
  newQpAttr,
  newQpCap,
  newWcArray,
  rnic_alloc_buf,
  rnic_free_buf,
} from '../src/driver/verbs/index.js';
import type { ibv_comp_channel, ibv_context, ibv_cq, ibv_gid, ibv_mr, ibv_pd, ibv_qp, ibv_srq, ibv_xrcd } from '../src/driver/verbs/index.js';
import { GetoptError, getopt_long, intArg, type OptionSpec } from './common/getopt.js';
import { inet_ntop6 } from './common/inet.js';
import { errText, PollWait, processIo, type Io } from './common/io.js';
import { sprintf } from './common/printf.js';
import { type MsgSocket, tcpAcceptMany, tcpConnect } from './common/sock.js';
import { gid_to_wire_gid, pp_get_port_info, pp_mtu_to_enum, wire_gid_to_gid } from './pingpong.js';
import { CqEvents } from './pingpong/cq-events.js';
import { cleanupStack, type MainOptions, page_size, ROCE_V2_IPV4_GID } from './pingpong/core.js';

/** The C program's address message: 65 characters and the NUL. */
export const XSRQ_MSG_SIZE = 66;
const TERMINATION = Buffer.from('END\0', 'latin1');
const XRC_DOMAIN_FILE = '/tmp/xrc_domain';

/** One peer (C `struct pingpong_dest`). */
export interface xsrq_dest {
  lid: number;
  recv_qpn: number;
  send_qpn: number;
  /** In a message: the sender's PSN. Kept per peer: ours to it (recv_psn) and its (send_psn). */
  psn: number;
  srqn: number;
  gid: ibv_gid;
}

/** sprintf(MSG_FORMAT, ...) and its NUL: exactly XSRQ_MSG_SIZE bytes. */
export function xsrq_dest_to_msg(d: xsrq_dest): Buffer {
  const text = sprintf('%04x:%06x:%06x:%06x:%06x:%s', d.lid, d.recv_qpn, d.send_qpn, d.psn, d.srqn, gid_to_wire_gid(d.gid));
  const b = Buffer.alloc(XSRQ_MSG_SIZE);
  b.write(text, 'latin1');
  return b;
}

/** sscanf(MSG_SSCAN, ...): null when the text is not five hex numbers and a wire GID. */
export function xsrq_msg_to_dest(msg: Uint8Array): xsrq_dest | null {
  const text = Buffer.from(msg).toString('latin1').replace(/\0.*$/s, '');
  const m = /^([0-9a-fA-F]+):([0-9a-fA-F]+):([0-9a-fA-F]+):([0-9a-fA-F]+):([0-9a-fA-F]+):(\S+)$/.exec(text);
  if (!m) return null;
  const gid = newGid();
  if (!wire_gid_to_gid(m[6]!, gid)) return null;
  const [lid, recv_qpn, send_qpn, psn, srqn] = m.slice(1, 6).map((h) => parseInt(h, 16)) as [number, number, number, number, number];
  return { lid, recv_qpn, send_qpn, psn, srqn, gid };
}

/** printf(ADDR_FORMAT, ...). */
export function xsrq_address_line(side: 'local' | 'remote', d: xsrq_dest): string {
  return sprintf(
    '%8s: LID %04x, QPN RECV %06x SEND %06x, PSN %06x, SRQN %06x, GID %s\n',
    side,
    d.lid,
    d.recv_qpn,
    d.send_qpn,
    d.psn,
    d.srqn,
    inet_ntop6(d.gid.raw),
  );
}

export function usage(argv0: string): string {
  return [
    'Usage:',
    `  ${argv0}            start a server and wait for connection`,
    `  ${argv0} <host>     connect to server at <host>`,
    '',
    'Options:',
    '  -p, --port=<port>      listen on/connect to port <port> (default 18515)',
    '  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)',
    '  -i, --ib-port=<port>   use port <port> of IB device (default 1)',
    '  -s, --size=<size>      size of message to exchange (default 4096)',
    '  -m, --mtu=<size>       path MTU (default 1024)',
    '  -c, --clients=<n>      number of clients (on server only, default 1)',
    '  -n, --num_tests=<n>    number of tests per client (default 5)',
    '  -l, --sl=<sl>          service level value',
    '  -e, --events           sleep on CQ events (default poll)',
    '  -o, --odp              use on demand paging (refused: not modelled)',
    '  -g, --gid-idx=<gid index> local port gid index (default: 3 on RoCE, none on InfiniBand)',
    '',
  ].join('\n');
}

export interface XsrqOptions {
  servername: string | null;
  port: number;
  ib_devname: string | null;
  ib_port: number;
  size: number;
  mtu: number;
  num_clients: number;
  num_tests: number;
  sl: number;
  use_event: boolean;
  gidx: number;
  gidGiven: boolean;
}

const OPTIONS: readonly OptionSpec[] = [
  { short: 'p', long: 'port', arg: true },
  { short: 'd', long: 'ib-dev', arg: true },
  { short: 'i', long: 'ib-port', arg: true },
  { short: 's', long: 'size', arg: true },
  { short: 'm', long: 'mtu', arg: true },
  { short: 'c', long: 'clients', arg: true },
  { short: 'n', long: 'num_tests', arg: true },
  { short: 'l', long: 'sl', arg: true },
  { short: 'e', long: 'events', arg: false },
  { short: 'o', long: 'odp', arg: false },
  { short: 'g', long: 'gid-idx', arg: true },
];

/** The C option loop (getopt "p:d:i:s:m:n:l:eog:c:"). Throws GetoptError on a usage mistake. */
export function parse_xsrq_args(argv: readonly string[]): XsrqOptions {
  const o: XsrqOptions = {
    servername: null,
    port: 18515,
    ib_devname: null,
    ib_port: 1,
    size: 4096,
    mtu: IBV_MTU_1024,
    num_clients: 1,
    num_tests: 5,
    sl: 0,
    use_event: false,
    gidx: -1,
    gidGiven: false,
  };
  const { options, operands } = getopt_long(argv, OPTIONS);
  for (const a of options) {
    switch (a.name) {
      case 'port':
        o.port = intArg(a, 0, 65535);
        break;
      case 'ib-dev':
        o.ib_devname = a.value!;
        break;
      case 'ib-port':
        o.ib_port = intArg(a, 1, 255);
        break;
      case 'size':
        o.size = intArg(a, 1, 1 << 30);
        break;
      case 'mtu': {
        const m = pp_mtu_to_enum(intArg(a, 0, 1 << 30));
        if (m < 0) throw new GetoptError(`${a.as}: ${a.value} is not an MTU (256, 512, 1024, 2048 or 4096)`);
        o.mtu = m;
        break;
      }
      case 'clients':
        o.num_clients = intArg(a, 1, 1024);
        break;
      case 'num_tests':
        o.num_tests = intArg(a, 1, 1 << 20);
        break;
      case 'sl':
        o.sl = intArg(a, 0, 15);
        break;
      case 'events':
        o.use_event = true;
        break;
      case 'odp':
        throw new GetoptError(`${a.as} is not supported: on-demand paging needs IBV_ACCESS_ON_DEMAND, which the model does not have (odp_caps 0)`);
      case 'gid-idx':
        o.gidx = intArg(a, 0, 255);
        o.gidGiven = true;
        break;
    }
  }
  if (operands.length > 1) throw new GetoptError(`one server name at most, got ${operands.length}`);
  if (operands.length === 1) {
    o.servername = operands[0]!;
    o.num_clients = 1; // as in C: a client is one client
  }
  return o;
}

interface XsrqContext {
  context: ibv_context;
  channel: ibv_comp_channel | null;
  pd: ibv_pd;
  mr: ibv_mr;
  send_cq: ibv_cq;
  recv_cq: ibv_cq;
  srq: ibv_srq;
  xrcd: ibv_xrcd;
  fd: number;
  recv_qp: ibv_qp[];
  send_qp: ibv_qp[];
  buf: Uint8Array;
  size: number;
  /** Per client: its address, the PSN we sent it, and our SENDs to it so far. */
  rem: { dest: xsrq_dest | null; recv_psn: number; pp_cnt: number; sock: MsgSocket | null }[];
}

function qpInit(qp: ibv_qp, ib_port: number, access: number): number {
  const a = newQpAttr();
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = ib_port;
  a.qp_access_flags = access;
  return ibv_modify_qp(qp, a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

function initCtx(dev: ReturnType<typeof ibv_get_device_list>[number], o: XsrqOptions, io: Io): XsrqContext | null {
  const { undo, fail } = cleanupStack(io);
  let context: ibv_context;
  try {
    context = ibv_open_device(dev);
  } catch (e) {
    return fail(`Couldn't get context for ${ibv_get_device_name(dev)}`, e);
  }
  undo.push(() => ibv_close_device(context));
  try {
    const portinfo = newPortAttr();
    if (pp_get_port_info(context, o.ib_port, portinfo)) return fail('Failed to get port info');
    if (portinfo.link_layer !== IBV_LINK_LAYER_ETHERNET && !portinfo.lid) return fail("Couldn't get local LID");
    const buf = rnic_alloc_buf(context, o.size, page_size);
    buf.fill(0);
    undo.push(() => rnic_free_buf(context, buf));
    const channel = o.use_event ? ibv_create_comp_channel(context) : null;
    if (channel) undo.push(() => ibv_destroy_comp_channel(channel));
    const pd = ibv_alloc_pd(context);
    undo.push(() => ibv_dealloc_pd(pd));
    const mr = ibv_reg_mr(pd, buf, IBV_ACCESS_LOCAL_WRITE);
    undo.push(() => ibv_dereg_mr(mr));
    // As C: a file for the domain if it can be made, else a private domain (fd -1).
    let fd = -1;
    try {
      fd = openSync(XRC_DOMAIN_FILE, fsc.O_RDONLY | fsc.O_CREAT, 0o440);
      const opened = fd;
      undo.push(() => closeSync(opened));
    } catch (e) {
      io.err(`Couldn't create the file for the XRC Domain but not stopping (${errText(e)})\n`);
    }
    const xrcd = ibv_open_xrcd(context, { comp_mask: IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS, fd, oflags: O_CREAT });
    undo.push(() => ibv_close_xrcd(xrcd));
    const recv_cq = ibv_create_cq(context, o.num_clients, null, channel, 0);
    undo.push(() => ibv_destroy_cq(recv_cq));
    if (o.use_event && ibv_req_notify_cq(recv_cq, 0)) return fail("Couldn't request CQ notification");
    const send_cq = ibv_create_cq(context, o.num_clients, null, null, 0);
    undo.push(() => ibv_destroy_cq(send_cq));
    const srq = ibv_create_srq_ex(context, {
      comp_mask: IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD,
      srq_type: IBV_SRQT_XRC,
      xrcd,
      cq: recv_cq,
      pd,
      srq_context: null,
      attr: { max_wr: o.num_clients, max_sge: 1, srq_limit: 0 },
    });
    undo.push(() => ibv_destroy_srq(srq));
    const recv_qp: ibv_qp[] = [];
    const send_qp: ibv_qp[] = [];
    for (let i = 0; i < o.num_clients; i++) {
      const r = ibv_create_qp_ex(context, {
        comp_mask: IBV_QP_INIT_ATTR_XRCD,
        xrcd,
        qp_type: IBV_QPT_XRC_RECV,
        send_cq: null,
        recv_cq: null,
        cap: newQpCap(),
        sq_sig_all: 0,
      });
      undo.push(() => ibv_destroy_qp(r));
      recv_qp.push(r);
      if (qpInit(r, o.ib_port, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)) return fail(`Failed to modify recv QP[${i}] to INIT`);
      const cap = newQpCap();
      cap.max_send_wr = o.num_clients * o.num_tests;
      cap.max_send_sge = 1;
      const s = ibv_create_qp_ex(context, { comp_mask: IBV_QP_INIT_ATTR_PD, pd, qp_type: IBV_QPT_XRC_SEND, send_cq, recv_cq: null, cap, sq_sig_all: 0 });
      undo.push(() => ibv_destroy_qp(s));
      send_qp.push(s);
      if (qpInit(s, o.ib_port, 0)) return fail(`Failed to modify send QP[${i}] to INIT`);
    }
    const rem = Array.from({ length: o.num_clients }, () => ({ dest: null, recv_psn: 0, pp_cnt: 0, sock: null }));
    return { context, channel, pd, mr, send_cq, recv_cq, srq, xrcd, fd, recv_qp, send_qp, buf, size: o.size, rem };
  } catch (e) {
    return fail('Failed to set up the XRC resources', e);
  }
}

function closeCtx(ctx: XsrqContext, io: Io): number {
  const step = (rc: number, what: string): boolean => {
    if (rc) io.err(`${what}\n`);
    return rc !== 0;
  };
  for (let i = 0; i < ctx.send_qp.length; i++) {
    if (step(ibv_destroy_qp(ctx.send_qp[i]!), `Couldn't destroy INI QP[${i}]`)) return 1;
    if (step(ibv_destroy_qp(ctx.recv_qp[i]!), `Couldn't destroy TGT QP[${i}]`)) return 1;
    ctx.rem[i]?.sock?.close();
  }
  if (step(ibv_destroy_srq(ctx.srq), "Couldn't destroy SRQ")) return 1;
  if (step(ibv_close_xrcd(ctx.xrcd), "Couldn't close the XRC Domain")) return 1;
  if (ctx.fd >= 0) closeSync(ctx.fd);
  if (step(ibv_destroy_cq(ctx.send_cq), "Couldn't destroy send CQ")) return 1;
  if (step(ibv_destroy_cq(ctx.recv_cq), "Couldn't destroy recv CQ")) return 1;
  if (step(ibv_dereg_mr(ctx.mr), "Couldn't deregister MR")) return 1;
  rnic_free_buf(ctx.context, ctx.buf);
  if (step(ibv_dealloc_pd(ctx.pd), "Couldn't deallocate PD")) return 1;
  if (ctx.channel && step(ibv_destroy_comp_channel(ctx.channel), "Couldn't destroy completion channel")) return 1;
  if (step(ibv_close_device(ctx.context), "Couldn't release context")) return 1;
  return 0;
}

function postRecv(ctx: XsrqContext, n: number): number {
  for (let k = 0; k < n; k++) {
    const wr = { wr_id: 0n, next: null, sg_list: [{ addr: ctx.mr.addr, length: ctx.size, lkey: ctx.mr.lkey }], num_sge: 1 };
    if (ibv_post_srq_recv(ctx.srq, wr)) return 1;
  }
  return 0;
}

/** C pp_post_send: to client `index`'s SRQ, round robin over the send QPs; the last SEND to it signaled. */
function postSend(ctx: XsrqContext, index: number, num_tests: number): number {
  const r = ctx.rem[index]!;
  const qpi = (index + r.pp_cnt) % ctx.send_qp.length;
  const flags = ++r.pp_cnt >= num_tests ? IBV_SEND_SIGNALED : 0;
  return ibv_post_send(ctx.send_qp[qpi]!, {
    wr_id: BigInt(index),
    next: null,
    sg_list: [{ addr: ctx.mr.addr, length: ctx.size, lkey: ctx.mr.lkey }],
    num_sge: 1,
    opcode: IBV_WR_SEND,
    send_flags: flags,
    qp_type: { xrc: { remote_srqn: r.dest!.srqn } },
  });
}

/** C connect_qps: receive QP to RTR and RTS, send QP to RTR and RTS, both pointing at client `i`. */
function connectQps(ctx: XsrqContext, i: number, o: XsrqOptions, gidx: number, io: Io): number {
  const r = ctx.rem[i]!;
  const d = r.dest!;
  const av = () => {
    const ah = newAhAttr();
    ah.dlid = d.lid;
    ah.sl = o.sl;
    ah.port_num = o.ib_port;
    if (d.gid.raw.subarray(8).some((b) => b !== 0)) {
      ah.is_global = 1;
      ah.grh.hop_limit = 5;
      ah.grh.dgid = { raw: Uint8Array.from(d.gid.raw) };
      ah.grh.sgid_index = gidx;
    }
    return ah;
  };
  const a = newQpAttr();
  a.qp_state = IBV_QPS_RTR;
  a.dest_qp_num = d.send_qpn;
  a.path_mtu = o.mtu;
  a.rq_psn = d.psn;
  a.min_rnr_timer = 12;
  a.ah_attr = av();
  const rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
  if (ibv_modify_qp(ctx.recv_qp[i]!, a, rtr | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
    io.err(`Failed to modify recv QP[${i}] to RTR\n`);
    return 1;
  }
  const b = newQpAttr();
  b.qp_state = IBV_QPS_RTS;
  b.timeout = 14;
  b.sq_psn = r.recv_psn;
  if (ibv_modify_qp(ctx.recv_qp[i]!, b, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN)) {
    io.err(`Failed to modify recv QP[${i}] to RTS\n`);
    return 1;
  }
  const c = newQpAttr();
  c.qp_state = IBV_QPS_RTR;
  c.dest_qp_num = d.recv_qpn;
  c.path_mtu = o.mtu;
  c.rq_psn = d.psn;
  c.ah_attr = av();
  if (ibv_modify_qp(ctx.send_qp[i]!, c, rtr)) {
    io.err(`Failed to modify send QP[${i}] to RTR\n`);
    return 1;
  }
  const e = newQpAttr();
  e.qp_state = IBV_QPS_RTS;
  e.timeout = 14;
  e.retry_cnt = 7;
  e.rnr_retry = 7;
  e.sq_psn = r.recv_psn;
  if (ibv_modify_qp(ctx.send_qp[i]!, e, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC)) {
    io.err(`Failed to modify send QP[${i}] to RTS\n`);
    return 1;
  }
  return 0;
}

/** C send_local_dest: a fresh PSN for client `i`, our address to it (printed, then written). */
async function sendLocalDest(ctx: XsrqContext, sock: MsgSocket, i: number, lid: number, gid: ibv_gid, io: Io): Promise<boolean> {
  const r = ctx.rem[i]!;
  r.recv_psn = randomInt(0, 0x1000000); // lrand48() & 0xffffff
  const out = { srq_num: 0 };
  if (ibv_get_srq_num(ctx.srq, out)) {
    io.err("Couldn't get SRQ num\n");
    return false;
  }
  const mine: xsrq_dest = { lid, recv_qpn: ctx.recv_qp[i]!.qp_num, send_qpn: ctx.send_qp[i]!.qp_num, psn: r.recv_psn, srqn: out.srq_num, gid };
  io.out(xsrq_address_line('local', mine));
  await sock.write(xsrq_dest_to_msg(mine));
  return true;
}

/** C recv_remote_dest: client `i`'s address (read, parsed, printed). */
async function recvRemoteDest(ctx: XsrqContext, sock: MsgSocket, i: number, io: Io): Promise<boolean> {
  const msg = await sock.read(XSRQ_MSG_SIZE);
  if (msg.length !== XSRQ_MSG_SIZE) {
    io.err(`${msg.length}/${XSRQ_MSG_SIZE}: Couldn't read remote address [${i}]\n`);
    return false;
  }
  const d = xsrq_msg_to_dest(msg);
  if (!d) {
    io.err(`Couldn't parse remote address '${msg.toString('latin1').replace(/\0.*$/s, '')}'\n`);
    return false;
  }
  io.out(xsrq_address_line('remote', d));
  const r = ctx.rem[i]!;
  r.dest = d;
  r.sock = sock;
  return true;
}

async function termination(ctx: XsrqContext, client: boolean, io: Io): Promise<boolean> {
  const recv = async (i: number): Promise<boolean> => {
    const m = await ctx.rem[i]!.sock!.read(TERMINATION.length);
    if (m.length !== TERMINATION.length) {
      io.err(`${m.length}/${TERMINATION.length}: Couldn't read remote termination ack\n`);
      return false;
    }
    if (!m.equals(TERMINATION)) {
      io.err('Invalid termination ack was accepted\n');
      return false;
    }
    return true;
  };
  if (client) {
    await ctx.rem[0]!.sock!.write(TERMINATION);
    return recv(0);
  }
  for (let i = 0; i < ctx.rem.length; i++) if (!(await recv(i))) return false;
  for (const r of ctx.rem) await r.sock!.write(TERMINATION);
  return true;
}

/** The C main(): 0 ok ("success" printed), 1 failure, 2 usage mistake. */
export async function main(argv: string[], mo: MainOptions = {}): Promise<number> {
  const io = mo.io ?? processIo;
  const argv0 = mo.argv0 ?? 'xsrq_pingpong';
  let o: XsrqOptions;
  try {
    o = parse_xsrq_args(argv);
  } catch (e) {
    if ((e as { code?: string }).code !== 'EXAMPLE_USAGE') throw e;
    io.err(`${argv0}: ${(e as Error).message}\n${usage(argv0)}`);
    return 2;
  }
  const list = ibv_get_device_list();
  const dev = o.ib_devname ? list.find((d) => ibv_get_device_name(d) === o.ib_devname) : list[0];
  if (!dev) {
    io.err(`IB device ${o.ib_devname ?? ''} not found\nFailed to open device\n`);
    return 1;
  }
  const ctx = initCtx(dev, o, io);
  if (!ctx) return 1;
  let closed = false;
  const events = new CqEvents(ctx.channel, ctx.recv_cq);
  try {
    if (postRecv(ctx, o.num_clients)) {
      io.err("Couldn't post receives\n");
      return 1;
    }
    const portinfo = newPortAttr();
    if (pp_get_port_info(ctx.context, o.ib_port, portinfo)) {
      io.err('Failed to get port info\n');
      return 1;
    }
    // As the other ports: RoCE needs a GID, index 3 (RoCE v2, IPv4) unless -g says otherwise.
    const gidx = o.gidx < 0 && !o.gidGiven && portinfo.link_layer === IBV_LINK_LAYER_ETHERNET ? ROCE_V2_IPV4_GID : o.gidx;
    const gid = newGid();
    if (gidx >= 0 && ibv_query_gid(ctx.context, o.ib_port, gidx, gid)) {
      io.err(`can't read sgid of index ${gidx}\n`);
      return 1;
    }
    try {
      if (o.servername) {
        let sock: MsgSocket;
        try {
          sock = await tcpConnect(o.servername, o.port);
        } catch (e) {
          io.err(`Couldn't connect to ${o.servername}:${o.port} (${errText(e)})\n`);
          return 1;
        }
        ctx.rem[0]!.sock = sock;
        if (!(await sendLocalDest(ctx, sock, 0, portinfo.lid, gid, io))) return 1;
        if (!(await recvRemoteDest(ctx, sock, 0, io))) return 1;
        if (connectQps(ctx, 0, o, gidx, io)) return 1;
      } else {
        let socks: MsgSocket[];
        try {
          socks = await tcpAcceptMany(o.port, o.num_clients, mo.onListening);
        } catch (e) {
          io.err(`Couldn't listen to port ${o.port} (${errText(e)})\n`);
          return 1;
        }
        for (let i = 0; i < o.num_clients; i++) {
          if (!(await recvRemoteDest(ctx, socks[i]!, i, io))) return 1;
          if (!(await sendLocalDest(ctx, socks[i]!, i, portinfo.lid, gid, io))) return 1;
          if (connectQps(ctx, i, o, gidx, io)) return 1;
        }
        for (let i = 0; i < o.num_clients; i++) {
          if (postSend(ctx, i, o.num_tests)) {
            io.err("Couldn't post send\n");
            return 1;
          }
        }
      }
    } catch (e) {
      io.err(`Couldn't exchange addresses (${errText(e)})\n`);
      return 1;
    }

    const total = o.num_clients * o.num_tests;
    const wc = newWcArray(1);
    const polls = new PollWait();
    let cnt = 0;
    while (cnt < total) {
      if (o.use_event && !(await events.next(io))) return 1;
      for (;;) {
        const ne = ibv_poll_cq(ctx.recv_cq, 1, wc);
        if (ne < 0) {
          io.err(`Error polling cq ${ne}\n`);
          return 1;
        }
        if (ne === 0) {
          if (o.use_event) break;
          await polls.wait();
          continue;
        }
        polls.progressed();
        const w = wc[0]!;
        if (w.status) {
          io.err(`Work completion error ${w.status}\n`);
          return 1;
        }
        postRecv(ctx, ne);
        let qpi = 0;
        if (o.num_clients > 1) {
          qpi = ctx.recv_qp.findIndex((q) => q.qp_num === w.qp_num);
          if (qpi < 0) {
            io.err(sprintf('Unable to find qp %x\n', w.qp_num));
            qpi = 0;
          }
        }
        if (ctx.rem[qpi]!.pp_cnt < o.num_tests && postSend(ctx, qpi, o.num_tests)) {
          io.err("Couldn't post send\n");
          return 1;
        }
        cnt += ne;
        if (cnt >= total && !o.use_event) break;
      }
    }
    // Each client's last SEND is signaled: wait for them all.
    for (let n = 0; n < o.num_clients; ) {
      const ne = ibv_poll_cq(ctx.send_cq, 1, wc);
      if (ne < 0) {
        io.err(`Error polling cq ${ne}\n`);
        return 1;
      }
      if (ne === 0) await polls.wait();
      else if (wc[0]!.status) {
        io.err(`Work completion error ${wc[0]!.status}\n`);
        return 1;
      } else polls.progressed();
      n += ne;
    }
    events.ack();
    try {
      if (!(await termination(ctx, o.servername !== null, io))) return 1;
    } catch (e) {
      io.err(`Couldn't exchange the termination ack (${errText(e)})\n`);
      return 1;
    }
    closed = true;
    if (closeCtx(ctx, io)) return 1;
    io.out('success\n');
    return 0;
  } finally {
    if (!closed) {
      try {
        events.ack();
        closeCtx(ctx, { out: () => {}, err: () => {} });
      } catch {
        // Already failing: the first error is the one reported.
      }
    }
  }
}
