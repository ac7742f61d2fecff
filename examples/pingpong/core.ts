/**
 * The ping-pong examples of rdma-core's libibverbs/examples, ported to the
 * rnic-model verbs API: rc_pingpong.c, uc_pingpong.c and ud_pingpong.c share
 * this core (they differ in the queue pair type, the connect masks, the UD
 * address handle and 40-byte GRH room, the defaults and the flags). Same
 * flags, same TCP address exchange (so each can face its C program), same
 * queue pair setup, same loop and same output.
 *
 * Read it side by side with the C files: the functions keep their names and
 * order (pp_connect_ctx, pp_client_exch_dest, pp_server_exch_dest,
 * pp_init_ctx, pp_close_ctx, pp_post_recv, pp_post_send, parse_single_wc,
 * usage, main). What differs, and why:
 *
 * - Verbs that return a pointer in C throw here; each call site catches and
 *   prints the C message (with the errno name added).
 * - The work buffer comes from rnic_alloc_buf(), which needs the open
 *   context, so it is allocated after ibv_open_device() instead of before.
 * - Waiting is asynchronous: ibv_get_cq_event() returns a promise and an
 *   empty ibv_poll_cq() yields to the event loop instead of spinning.
 * - rc_pingpong's -o/-O/-P (on-demand paging), -t (completion timestamps),
 *   -j (device memory) and -N (ibv_wr_* sends) need verbs this API does not
 *   have (ibv_query_device_ex, ibv_create_cq_ex, ibv_alloc_dm,
 *   ibv_qp_to_qp_ex): they are refused with a clear message instead of
 *   failing later.
 * - A usage mistake returns 2 (C returns 1); numbers must be whole numbers
 *   (C's strtol reads "12abc" as 12).
 * - On failure the resources created so far are released before returning.
 * - Without -g on an Ethernet (RoCE) port, GID index 3 is used (RoCE v2 over
 *   the port's first IPv4 address, see docs/configuration.md): the C program
 *   would send no GRH and fail to reach RTR (EINVAL), so the README's
 *   `rnic rc_pingpong` / `rnic rc_pingpong 127.0.0.1` would not work as
 *   written. `-g -1` keeps C's behaviour.
 *
 * The address exchange on the TCP connection is text, as in C: the client
 * sends "LLLL:QQQQQQ:PPPPPP:GGGG...(32 hex)" plus its NUL (52 bytes), the
 * server connects its QP to the client's, answers with its own 52 bytes, and
 * the client ends with "done" plus its NUL.
 */
import { randomInt } from 'node:crypto';
import {
  IBV_ACCESS_LOCAL_WRITE,
  IBV_LINK_LAYER_ETHERNET,
  IBV_MTU_1024,
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
  IBV_QP_QKEY,
  ibv_create_ah,
  ibv_destroy_ah,
  IBV_SEND_INLINE,
  IBV_SEND_SIGNALED,
  IBV_WC_SUCCESS,
  IBV_WR_SEND,
  errnoName,
  ibv_alloc_pd,
  ibv_close_device,
  ibv_create_comp_channel,
  ibv_create_cq,
  ibv_create_qp,
  ibv_dealloc_pd,
  ibv_dereg_mr,
  ibv_destroy_comp_channel,
  ibv_destroy_cq,
  ibv_destroy_qp,
  ibv_free_device_list,
  ibv_get_device_list,
  ibv_get_device_name,
  ibv_modify_qp,
  ibv_open_device,
  ibv_post_recv,
  ibv_post_send,
  ibv_query_gid,
  ibv_query_qp,
  ibv_reg_mr,
  ibv_req_notify_cq,
  ibv_wc_status_str,
  newGid,
  newPortAttr,
  newQpAttr,
  newQpCap,
  newWcArray,
  rnic_alloc_buf,
  rnic_free_buf,
} from '../../src/driver/verbs/index.js';
import { CqEvents, pollSome, printThroughput } from './cq-events.js';
import type {
  ibv_ah,
  ibv_comp_channel,
  ibv_context,
  ibv_cq,
  ibv_device,
  ibv_gid,
  ibv_mr,
  ibv_mtu,
  ibv_pd,
  ibv_port_attr,
  ibv_qp,
  ibv_qp_init_attr,
  ibv_recv_wr,
  ibv_send_wr,
  ibv_sge,
  ibv_wc_status,
} from '../../src/driver/verbs/index.js';
import { GetoptError, getopt_long, intArg, type OptionSpec } from '../common/getopt.js';
import { inet_ntop6 } from '../common/inet.js';
import { errText, processIo, type Io } from '../common/io.js';
import { sprintf } from '../common/printf.js';
import { type MsgSocket, tcpAcceptOne, tcpConnect } from '../common/sock.js';
import { gid_to_wire_gid, pp_get_port_info, pp_mtu_to_enum, wire_gid_to_gid } from '../pingpong.js';

/** Which of rdma-core's ping-pong programs: the transport of its queue pair. */
export type PingpongKind = 'RC' | 'UC' | 'UD';

/** ud_pingpong: the receive buffer starts with room for the GRH (struct ibv_grh). */
export const UD_GRH_ROOM = 40;
/** ud_pingpong's Q_Key, on both ends. */
export const UD_QKEY = 0x11111111;

/** The program each kind ports (its name in the usage text and errors). */
export const PINGPONG_PROGRAM: Record<PingpongKind, string> = { RC: 'rc_pingpong', UC: 'uc_pingpong', UD: 'ud_pingpong' };

/** The GID a RoCE port uses without -g: index 3, RoCE v2 over its first IPv4 address. */
export const ROCE_V2_IPV4_GID = 3;

export const PINGPONG_RECV_WRID = 1;
export const PINGPONG_SEND_WRID = 2;

/** sysconf(_SC_PAGESIZE) on the hosts rdma-core runs on: the buffer alignment and the -c stride. */
export const page_size = 4096;

/**
 * C's `sizeof(char)`. The -c pattern is `i / page_size % sizeof(char)`,
 * which is always 0: the client writes 0 at the start of every page, the
 * server's buffer starts as 0x7b everywhere, and the check is that those
 * bytes became 0. Kept as in C so both programs agree on the bytes.
 */
const sizeof_char = 1;

/** The size of the C `msg` buffer: sizeof "0000:000000:000000:" + 32 hex digits + NUL. */
export const PP_MSG_SIZE = 52;

export interface pingpong_context {
  kind: PingpongKind;
  context: ibv_context;
  channel: ibv_comp_channel | null;
  pd: ibv_pd;
  mr: ibv_mr;
  cq: ibv_cq;
  qp: ibv_qp;
  buf: Uint8Array;
  size: number;
  send_flags: number;
  rx_depth: number;
  pending: number;
  portinfo: ibv_port_attr;
  /** UD: the address handle towards the peer, its QPN (set by pp_connect_ctx). */
  ah: ibv_ah | null;
  remote_qpn: number;
}

export interface pingpong_dest {
  lid: number;
  qpn: number;
  psn: number;
  gid: ibv_gid;
}

/** The send and receive completions of the C `pp_cq()`: with -t gone, always the one CQ. */
function pp_cq(ctx: pingpong_context): ibv_cq {
  return ctx.cq;
}

/**
 * Moves the QP to RTR (towards `dest`) and then RTS with the attributes and
 * masks of the kind's C program; UD also gets its address handle.
 */
export function pp_connect_ctx(
  ctx: pingpong_context,
  port: number,
  my_psn: number,
  mtu: ibv_mtu,
  sl: number,
  dest: pingpong_dest,
  sgid_idx: number,
  io: Io = processIo,
): number {
  const attr = newQpAttr();
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = mtu;
  attr.dest_qp_num = dest.qpn;
  attr.rq_psn = dest.psn;
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = 12;
  attr.ah_attr.is_global = 0;
  attr.ah_attr.dlid = dest.lid;
  attr.ah_attr.sl = sl;
  attr.ah_attr.src_path_bits = 0;
  attr.ah_attr.port_num = port;

  // gid.global.interface_id is bytes 8..15 of the GID.
  if (dest.gid.raw.subarray(8, 16).some((b) => b !== 0)) {
    attr.ah_attr.is_global = 1;
    attr.ah_attr.grh.hop_limit = 1;
    attr.ah_attr.grh.dgid = { raw: Uint8Array.from(dest.gid.raw) };
    attr.ah_attr.grh.sgid_index = sgid_idx & 0xff; // uint8_t in C: -1 becomes 255
  }
  const rtrMask =
    ctx.kind === 'UD'
      ? IBV_QP_STATE
      : ctx.kind === 'UC'
        ? IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN
        : IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  let ret = ibv_modify_qp(ctx.qp, attr, rtrMask);
  if (ret) {
    io.err(`Failed to modify QP to RTR (${errnoName(ret)})\n`);
    return 1;
  }

  attr.qp_state = IBV_QPS_RTS;
  attr.timeout = 14;
  attr.retry_cnt = 7;
  attr.rnr_retry = 7;
  attr.sq_psn = my_psn;
  attr.max_rd_atomic = 1;
  const rtsMask =
    ctx.kind === 'UC' || ctx.kind === 'UD'
      ? IBV_QP_STATE | IBV_QP_SQ_PSN
      : IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
  ret = ibv_modify_qp(ctx.qp, attr, rtsMask);
  if (ret) {
    io.err(`Failed to modify QP to RTS (${errnoName(ret)})\n`);
    return 1;
  }
  if (ctx.kind === 'UD') {
    try {
      ctx.ah = ibv_create_ah(ctx.pd, attr.ah_attr);
    } catch (e) {
      io.err(`Failed to create AH (${errText(e)})\n`);
      return 1;
    }
    ctx.remote_qpn = dest.qpn;
  }
  return 0;
}

/** The 52 bytes one side sends: sprintf("%04x:%06x:%06x:%s") of the address, then NUL padding. */
export function pp_dest_to_msg(dest: pingpong_dest): Buffer {
  const text = sprintf('%04x:%06x:%06x:%s', dest.lid, dest.qpn, dest.psn, gid_to_wire_gid(dest.gid));
  const msg = Buffer.alloc(PP_MSG_SIZE);
  msg.write(text.slice(0, PP_MSG_SIZE - 1), 'latin1');
  return msg;
}

/** The C `sscanf(msg, "%x:%x:%x:%s")` + wire_gid_to_gid; null if the text is not an address. */
export function pp_msg_to_dest(msg: Uint8Array): pingpong_dest | null {
  const nul = msg.indexOf(0);
  const text = Buffer.from(msg.subarray(0, nul >= 0 ? nul : msg.length)).toString('latin1');
  const m = /^\s*(?:0[xX])?([0-9a-fA-F]+):(?:0[xX])?([0-9a-fA-F]+):(?:0[xX])?([0-9a-fA-F]+):(\S+)/.exec(text);
  if (!m) return null;
  const dest: pingpong_dest = {
    lid: parseInt(m[1] as string, 16),
    qpn: parseInt(m[2] as string, 16),
    psn: parseInt(m[3] as string, 16),
    gid: newGid(),
  };
  if (!wire_gid_to_gid(m[4] as string, dest.gid)) return null;
  return dest;
}

/** The line main() prints for each end (C: inet_ntop(AF_INET6) of the GID). */
export function pp_address_line(side: 'local' | 'remote', dest: pingpong_dest, kind: PingpongKind = 'RC'): string {
  const label = side === 'local' ? '  local address: ' : '  remote address:';
  const sep = kind === 'UD' && side === 'local' ? ':' : ','; // ud_pingpong.c prints "PSN 0x%06x: GID" for its own end
  return sprintf(`${label} LID 0x%04x, QPN 0x%06x, PSN 0x%06x${sep} GID %s\n`, dest.lid, dest.qpn, dest.psn, inet_ntop6(dest.gid.raw));
}

const DONE = Buffer.from('done\0', 'latin1');

export async function pp_client_exch_dest(servername: string, port: number, my_dest: pingpong_dest, io: Io = processIo): Promise<pingpong_dest | null> {
  let sock: MsgSocket;
  try {
    sock = await tcpConnect(servername, port);
  } catch (e) {
    io.err(`Couldn't connect to ${servername}:${port} (${errText(e)})\n`);
    return null;
  }
  try {
    await sock.write(pp_dest_to_msg(my_dest));
  } catch (e) {
    io.err(`Couldn't send local address (${errText(e)})\n`);
    sock.close();
    return null;
  }
  let rem_dest: pingpong_dest | null = null;
  try {
    const msg = await sock.read(PP_MSG_SIZE);
    if (msg.length !== PP_MSG_SIZE) throw new Error(`read ${msg.length} of ${PP_MSG_SIZE} bytes`);
    await sock.write(DONE);
    rem_dest = pp_msg_to_dest(msg);
    if (!rem_dest) io.err(`Couldn't parse remote address '${msg.toString('latin1').replace(/\0.*$/s, '')}'\n`);
  } catch (e) {
    io.err(`client read/write: ${errText(e)}\n`);
    io.err("Couldn't read/write remote address\n");
  }
  sock.close();
  return rem_dest;
}

export async function pp_server_exch_dest(
  ctx: pingpong_context,
  ib_port: number,
  mtu: ibv_mtu,
  port: number,
  sl: number,
  my_dest: pingpong_dest,
  sgid_idx: number,
  io: Io = processIo,
  onListening?: (port: number) => void,
): Promise<pingpong_dest | null> {
  let connfd: MsgSocket;
  try {
    connfd = await tcpAcceptOne(port, onListening);
  } catch (e) {
    io.err(`Couldn't listen to port ${port} (${errText(e)})\n`);
    return null;
  }
  let rem_dest: pingpong_dest | null = null;
  try {
    const msg = await connfd.read(PP_MSG_SIZE);
    if (msg.length !== PP_MSG_SIZE) {
      io.err(`server read: ${msg.length === 0 ? 'connection closed' : 'short read'}\n`);
      io.err(`${msg.length}/${PP_MSG_SIZE}: Couldn't read remote address\n`);
      return null;
    }
    rem_dest = pp_msg_to_dest(msg);
    if (!rem_dest) {
      io.err(`Couldn't parse remote address '${msg.toString('latin1').replace(/\0.*$/s, '')}'\n`);
      return null;
    }
    if (pp_connect_ctx(ctx, ib_port, my_dest.psn, mtu, sl, rem_dest, sgid_idx, io)) {
      io.err("Couldn't connect to remote QP\n");
      return null;
    }
    await connfd.write(pp_dest_to_msg(my_dest));
    const done = await connfd.read(DONE.length);
    if (done.length !== DONE.length) {
      io.err("Couldn't send/recv local address\n");
      return null;
    }
    return rem_dest;
  } catch (e) {
    io.err(`Couldn't send/recv local address (${errText(e)})\n`);
    return null;
  } finally {
    connfd.close();
  }
}

/**
 * Opens the device and creates the buffer, PD, MR, CQ (and completion
 * channel with `use_event`) and an RC QP in INIT. Null on failure, with the
 * reason printed and everything created so far released (C's goto chain).
 */
/**
 * C's cleanup labels for an init function: `undo` collects what was made,
 * `fail` prints the error, undoes it all (newest first, best effort) and
 * returns null for the caller to return.
 */
export function cleanupStack(io: Io): { undo: Array<() => void>; fail: (what: string, e?: unknown) => null } {
  const undo: Array<() => void> = [];
  const fail = (what: string, e?: unknown): null => {
    io.err(e === undefined ? `${what}\n` : `${what} (${errText(e)})\n`);
    for (const u of undo.reverse()) {
      try {
        u();
      } catch {
        // Best effort, as in C's cleanup labels.
      }
    }
    return null;
  };
  return { undo, fail };
}

export function pp_init_ctx(
  kind: PingpongKind,
  ib_dev: ibv_device,
  size: number,
  rx_depth: number,
  port: number,
  use_event: number,
  io: Io = processIo,
): pingpong_context | null {
  const access_flags = IBV_ACCESS_LOCAL_WRITE;
  const { undo, fail } = cleanupStack(io);

  let context: ibv_context;
  try {
    context = ibv_open_device(ib_dev);
  } catch (e) {
    return fail(`Couldn't get context for ${ibv_get_device_name(ib_dev)}`, e);
  }
  undo.push(() => ibv_close_device(context));

  // UD: the GRH lands in front of each receive
  const bytes = kind === 'UD' ? size + UD_GRH_ROOM : size;
  let buf: Uint8Array;
  try {
    buf = rnic_alloc_buf(context, bytes, page_size);
  } catch (e) {
    return fail("Couldn't allocate work buf.", e);
  }
  undo.push(() => rnic_free_buf(context, buf));
  // FIXME in C too: memset(ctx->buf, 0, size) would be the sane default.
  buf.fill(0x7b);

  let channel: ibv_comp_channel | null = null;
  if (use_event) {
    try {
      channel = ibv_create_comp_channel(context);
    } catch (e) {
      return fail("Couldn't create completion channel", e);
    }
    const ch = channel;
    undo.push(() => ibv_destroy_comp_channel(ch));
  }

  let pd: ibv_pd;
  try {
    pd = ibv_alloc_pd(context);
  } catch (e) {
    return fail("Couldn't allocate PD", e);
  }
  undo.push(() => ibv_dealloc_pd(pd));

  let mr: ibv_mr;
  try {
    mr = ibv_reg_mr(pd, buf, access_flags);
  } catch (e) {
    return fail("Couldn't register MR", e);
  }
  undo.push(() => ibv_dereg_mr(mr));

  let cq: ibv_cq;
  try {
    cq = ibv_create_cq(context, rx_depth + 1, null, channel, 0);
  } catch (e) {
    return fail("Couldn't create CQ", e);
  }
  undo.push(() => ibv_destroy_cq(cq));

  let send_flags = IBV_SEND_SIGNALED;
  let qp: ibv_qp;
  {
    const attr = newQpAttr();
    const init_attr: ibv_qp_init_attr = {
      send_cq: cq,
      recv_cq: cq,
      cap: { ...newQpCap(), max_send_wr: 1, max_recv_wr: rx_depth, max_send_sge: 1, max_recv_sge: 1 },
      qp_type: kind === 'RC' ? IBV_QPT_RC : kind === 'UC' ? IBV_QPT_UC : IBV_QPT_UD,
      sq_sig_all: 0,
    };
    try {
      qp = ibv_create_qp(pd, init_attr);
    } catch (e) {
      return fail("Couldn't create QP", e);
    }
    const created = qp;
    undo.push(() => ibv_destroy_qp(created));

    ibv_query_qp(qp, attr, IBV_QP_CAP, init_attr);
    if (init_attr.cap.max_inline_data >= size) send_flags |= IBV_SEND_INLINE;
  }

  {
    const attr = newQpAttr();
    attr.qp_state = IBV_QPS_INIT;
    attr.pkey_index = 0;
    attr.port_num = port;
    attr.qp_access_flags = 0;
    attr.qkey = UD_QKEY;
    const ret = ibv_modify_qp(qp, attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | (kind === 'UD' ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS));
    if (ret) return fail(`Failed to modify QP to INIT (${errnoName(ret)})`);
  }

  return { kind, context, channel, pd, mr, cq, qp, buf, size, send_flags, rx_depth, pending: 0, portinfo: newPortAttr(), ah: null, remote_qpn: 0 };
}

export function pp_close_ctx(ctx: pingpong_context, io: Io = processIo): number {
  if (ibv_destroy_qp(ctx.qp)) {
    io.err("Couldn't destroy QP\n");
    return 1;
  }
  if (ibv_destroy_cq(pp_cq(ctx))) {
    io.err("Couldn't destroy CQ\n");
    return 1;
  }
  if (ibv_dereg_mr(ctx.mr)) {
    io.err("Couldn't deregister MR\n");
    return 1;
  }
  if (ctx.ah && ibv_destroy_ah(ctx.ah)) {
    io.err("Couldn't destroy AH\n");
    return 1;
  }
  if (ibv_dealloc_pd(ctx.pd)) {
    io.err("Couldn't deallocate PD\n");
    return 1;
  }
  if (ctx.channel) {
    if (ibv_destroy_comp_channel(ctx.channel)) {
      io.err("Couldn't destroy completion channel\n");
      return 1;
    }
  }
  rnic_free_buf(ctx.context, ctx.buf);
  if (ibv_close_device(ctx.context)) {
    io.err("Couldn't release context\n");
    return 1;
  }
  return 0;
}

/** Posts up to `n` receives of the whole buffer; returns how many were posted. */
export function pp_post_recv(ctx: pingpong_context, n: number): number {
  const list: ibv_sge = { addr: ctx.mr.addr, length: ctx.size + (ctx.kind === 'UD' ? UD_GRH_ROOM : 0), lkey: ctx.mr.lkey };
  const wr: ibv_recv_wr = { wr_id: BigInt(PINGPONG_RECV_WRID), next: null, sg_list: [list], num_sge: 1 };
  let i: number;
  for (i = 0; i < n; ++i) if (ibv_post_recv(ctx.qp, wr, {})) break;
  return i;
}

/** Posts one SEND of the whole buffer; returns 0 or an errno value. */
export function pp_post_send(ctx: pingpong_context): number {
  const ud = ctx.kind === 'UD';
  const list: ibv_sge = { addr: ctx.mr.addr + BigInt(ud ? UD_GRH_ROOM : 0), length: ctx.size, lkey: ctx.mr.lkey };
  const wr: ibv_send_wr = {
    wr_id: BigInt(PINGPONG_SEND_WRID),
    next: null,
    sg_list: [list],
    num_sge: 1,
    opcode: IBV_WR_SEND,
    send_flags: ctx.send_flags,
  };
  if (ud) wr.wr = { ud: { ah: ctx.ah, remote_qpn: ctx.remote_qpn, remote_qkey: UD_QKEY } };
  return ibv_post_send(ctx.qp, wr, {});
}

/** The counters C passes by pointer to parse_single_wc. */
export interface pp_counts {
  scnt: number;
  rcnt: number;
  routs: number;
}

function parse_single_wc(ctx: pingpong_context, c: pp_counts, iters: number, wr_id: bigint, status: ibv_wc_status, io: Io): number {
  if (status !== IBV_WC_SUCCESS) {
    io.err(sprintf('Failed status %s (%d) for wr_id %d\n', ibv_wc_status_str(status), status, Number(BigInt.asIntN(32, wr_id))));
    return 1;
  }

  const id = Number(BigInt.asIntN(32, wr_id));
  switch (id) {
    case PINGPONG_SEND_WRID:
      ++c.scnt;
      break;

    case PINGPONG_RECV_WRID:
      if (--c.routs <= 1) {
        c.routs += pp_post_recv(ctx, ctx.rx_depth - c.routs);
        if (c.routs < ctx.rx_depth) {
          io.err(`Couldn't post receive (${c.routs})\n`);
          return 1;
        }
      }
      ++c.rcnt;
      break;

    default:
      io.err(`Completion for unknown wr_id ${id}\n`);
      return 1;
  }

  ctx.pending &= ~id;
  if (c.scnt < iters && !ctx.pending) {
    if (pp_post_send(ctx)) {
      io.err("Couldn't post send\n");
      return 1;
    }
    ctx.pending = PINGPONG_RECV_WRID | PINGPONG_SEND_WRID;
  }
  return 0;
}

/** The usage text of the kind's program (its defaults and flags). */
export function usage(argv0: string, kind: PingpongKind = 'RC'): string {
  const lines = [
    'Usage:',
    `  ${argv0}            start a server and wait for connection`,
    `  ${argv0} <host>     connect to server at <host>`,
    '',
    'Options:',
    '  -p, --port=<port>      TCP port to listen on / connect to (default 18515)',
    '  -d, --ib-dev=<dev>     RDMA device to use (default: the first one found)',
    '  -i, --ib-port=<port>   port of the device (default 1)',
    `  -s, --size=<size>      bytes per message (default ${DEFAULT_SIZE[kind]})`,
  ];
  if (kind !== 'UD') lines.push('  -m, --mtu=<size>       path MTU: 256, 512, 1024, 2048 or 4096 (default 1024)');
  lines.push(
    '  -r, --rx-depth=<dep>   receives kept posted (default 500)',
    '  -n, --iters=<iters>    round trips (default 1000)',
    '  -l, --sl=<sl>          service level (default 0)',
    '  -e, --events           wait for completion events instead of polling',
    '  -g, --gid-idx=<index>  local GID table index (needed on RoCE; default: 3 on RoCE, none on InfiniBand)',
    '  -c, --chk              check the received bytes (server side)',
  );
  if (kind === 'RC') {
    lines.push(
      '  -o, --odp  -O, --iodp  -P, --prefetch  -t, --ts  -j, --dm  -N, --new_send',
      '                         rdma-core options this verbs API cannot run yet (refused)',
      "  --late-recv=<ms>       post the receives <ms> after connecting, so the peer's first SENDs get RNR NAKs (this port's own)",
    );
  }
  if (kind === 'UD') lines.push('  (the message must fit the port MTU; there is no -m)');
  lines.push('');
  return lines.join('\n');
}

/** ud_pingpong.c's default message is 2048 bytes; the others' 4096. */
const DEFAULT_SIZE: Record<PingpongKind, number> = { RC: 4096, UC: 4096, UD: 2048 };

export interface RcPingpongOptions {
  servername: string | null;
  port: number;
  ib_devname: string | null;
  ib_port: number;
  size: number;
  mtu: ibv_mtu;
  rx_depth: number;
  iters: number;
  sl: number;
  use_event: number;
  gidx: number;
  validate_buf: boolean;
  /** --late-recv (this port's own, not rdma-core's): ms after connecting before the receives are posted, 0: at once. */
  late_recv_ms: number;
}

const COMMON_OPTIONS: readonly OptionSpec[] = [
  { short: 'p', long: 'port', arg: true },
  { short: 'd', long: 'ib-dev', arg: true },
  { short: 'i', long: 'ib-port', arg: true },
  { short: 's', long: 'size', arg: true },
  { short: 'r', long: 'rx-depth', arg: true },
  { short: 'n', long: 'iters', arg: true },
  { short: 'l', long: 'sl', arg: true },
  { short: 'e', long: 'events', arg: false },
  { short: 'g', long: 'gid-idx', arg: true },
  { short: 'c', long: 'chk', arg: false },
];
const MTU_OPTION: OptionSpec = { short: 'm', long: 'mtu', arg: true };
/** rc_pingpong.c only. */
const RC_ONLY_OPTIONS: readonly OptionSpec[] = [
  { short: 'o', long: 'odp', arg: false },
  { short: 'O', long: 'iodp', arg: false },
  { short: 'P', long: 'prefetch', arg: false },
  { short: 't', long: 'ts', arg: false },
  { short: 'j', long: 'dm', arg: false },
  { short: 'N', long: 'new_send', arg: false },
  // Not rdma-core's: a receiver that is not ready, so the peer gets RNR NAKs (hw-tests/compare-cable.ts).
  { long: 'late-recv', arg: true },
];
/** Each C program's getopt table. */
const OPTIONS: Record<PingpongKind, readonly OptionSpec[]> = {
  RC: [...COMMON_OPTIONS, MTU_OPTION, ...RC_ONLY_OPTIONS],
  UC: [...COMMON_OPTIONS, MTU_OPTION],
  UD: COMMON_OPTIONS,
};

const UNSUPPORTED: Readonly<Record<string, string>> = {
  odp: 'on-demand paging needs ibv_query_device_ex and IBV_ACCESS_ON_DEMAND, which this verbs API does not provide',
  iodp: 'implicit on-demand paging needs ibv_query_device_ex and IBV_ACCESS_ON_DEMAND, which this verbs API does not provide',
  prefetch: 'prefetching needs ibv_advise_mr (and on-demand paging), which this verbs API does not provide',
  ts: 'completion timestamps need ibv_create_cq_ex, which this verbs API does not provide',
  dm: 'device memory needs ibv_alloc_dm, which this verbs API does not provide',
  new_send: 'the ibv_wr_* send API needs ibv_create_qp_ex, which this verbs API does not provide',
};

/** The C option loop. Throws GetoptError on a usage mistake. */
export function parse_args(argv: readonly string[], kind: PingpongKind = 'RC'): RcPingpongOptions {
  const o: RcPingpongOptions = {
    servername: null,
    port: 18515,
    ib_devname: null,
    ib_port: 1,
    size: DEFAULT_SIZE[kind],
    mtu: IBV_MTU_1024,
    rx_depth: 500,
    iters: 1000,
    sl: 0,
    use_event: 0,
    gidx: -1,
    validate_buf: false,
    late_recv_ms: 0,
  };
  const { options, operands } = getopt_long(argv, OPTIONS[kind]);
  for (const opt of options) {
    switch (opt.name) {
      case 'port':
        o.port = intArg(opt, 0, 65535);
        break;
      case 'ib-dev':
        if (!opt.value) throw new GetoptError(`${opt.as}: the device name is empty`);
        o.ib_devname = opt.value;
        break;
      case 'ib-port':
        o.ib_port = intArg(opt, 1, 255);
        break;
      case 'size':
        o.size = intArg(opt, 0, 0x7fffffff);
        break;
      case 'mtu': {
        const bytes = intArg(opt, 0, 0x7fffffff);
        const mtu = pp_mtu_to_enum(bytes);
        if (mtu < 0) throw new GetoptError(`${opt.as}: ${bytes} is not an MTU (256, 512, 1024, 2048 or 4096)`);
        o.mtu = mtu;
        break;
      }
      case 'rx-depth':
        o.rx_depth = intArg(opt, 1, 0x7ffffffe);
        break;
      case 'iters':
        o.iters = intArg(opt, 1, 0xffffffff);
        break;
      case 'sl':
        o.sl = intArg(opt, 0, 15);
        break;
      case 'events':
        ++o.use_event;
        break;
      case 'gid-idx':
        o.gidx = intArg(opt, -1, 255);
        break;
      case 'chk':
        o.validate_buf = true;
        break;
      case 'late-recv':
        o.late_recv_ms = intArg(opt, 0, 60_000);
        break;
      default: {
        const why = UNSUPPORTED[opt.name];
        throw new GetoptError(why ? `${opt.as} is not supported: ${why}` : `unexpected option ${opt.as}`);
      }
    }
  }
  if (operands.length === 1) o.servername = operands[0] as string;
  else if (operands.length > 1) throw new GetoptError(`one server name at most (got ${operands.join(' ')})`);
  return o;
}

export interface MainOptions {
  io?: Io;
  /** The program name in the usage text (default "rc_pingpong"). */
  argv0?: string;
  /** Server only: called with the TCP port once a client can connect (useful with -p 0). */
  onListening?: (port: number) => void;
}

/** The C main() of the kind's program: returns the exit code (0 ok, 1 failure, 2 usage mistake). */
export async function pingpongMain(kind: PingpongKind, argv: string[], mo: MainOptions = {}): Promise<number> {
  const io = mo.io ?? processIo;
  const argv0 = mo.argv0 ?? PINGPONG_PROGRAM[kind];
  let opts: RcPingpongOptions;
  try {
    opts = parse_args(argv, kind);
  } catch (e) {
    if ((e as { code?: string }).code !== 'EXAMPLE_USAGE') throw e;
    io.err(`${argv0}: ${(e as Error).message}\n${usage(argv0, kind)}`);
    return 2;
  }
  const { servername, port, ib_devname, ib_port, size, mtu, rx_depth, iters, sl, use_event, validate_buf } = opts;
  const grh = kind === 'UD' ? UD_GRH_ROOM : 0; // ud_pingpong's payload starts after the GRH room
  let gidx = opts.gidx;
  const gidGiven = argv.some((a) => a === '-g' || a.startsWith('-g') || a.startsWith('--gid-idx'));

  const dev_list = ibv_get_device_list();
  let ib_dev: ibv_device | undefined;
  if (!ib_devname) {
    ib_dev = dev_list[0];
    if (!ib_dev) {
      io.err('no RDMA devices found\n');
      return 1;
    }
  } else {
    ib_dev = dev_list.find((d) => ibv_get_device_name(d) === ib_devname);
    if (!ib_dev) {
      io.err(`IB device ${ib_devname} not found\n`);
      return 1;
    }
  }

  const ctx = pp_init_ctx(kind, ib_dev, size, rx_depth, ib_port, use_event, io);
  if (!ctx) return 1;

  const events = new CqEvents(ctx.channel, pp_cq(ctx));
  let closed = false;
  try {
    const c: pp_counts = { scnt: 0, rcnt: 0, routs: 0 };
    const postReceives = (): boolean => {
      c.routs = pp_post_recv(ctx, ctx.rx_depth);
      if (c.routs >= ctx.rx_depth) return true;
      io.err(`Couldn't post receive (${c.routs})\n`);
      return false;
    };
    if (!opts.late_recv_ms && !postReceives()) return 1;

    if (use_event) {
      if (ibv_req_notify_cq(pp_cq(ctx), 0)) {
        io.err("Couldn't request CQ notification\n");
        return 1;
      }
    }

    if (pp_get_port_info(ctx.context, ib_port, ctx.portinfo)) {
      io.err(kind === 'UD' ? `Unable to query port info for port ${ib_port}\n` : "Couldn't get port info\n");
      return 1;
    }
    if (kind === 'UD') {
      const portMtu = 1 << (ctx.portinfo.active_mtu + 7);
      if (size > portMtu) {
        io.err(`Requested size larger than port MTU (${portMtu})\n`);
        return 1;
      }
    }

    const my_dest: pingpong_dest = { lid: ctx.portinfo.lid, qpn: 0, psn: 0, gid: newGid() };
    if (ctx.portinfo.link_layer !== IBV_LINK_LAYER_ETHERNET && !my_dest.lid) {
      io.err("Couldn't get local LID\n");
      return 1;
    }

    if (gidx < 0 && !gidGiven && ctx.portinfo.link_layer === IBV_LINK_LAYER_ETHERNET) gidx = ROCE_V2_IPV4_GID;
    if (gidx >= 0) {
      if (ibv_query_gid(ctx.context, ib_port, gidx, my_dest.gid)) {
        io.err(`can't read sgid of index ${gidx}\n`);
        return 1;
      }
    }

    my_dest.qpn = ctx.qp.qp_num;
    my_dest.psn = randomInt(0, 0x1000000); // lrand48() & 0xffffff
    io.out(pp_address_line('local', my_dest, kind));

    const rem_dest = servername
      ? await pp_client_exch_dest(servername, port, my_dest, io)
      : await pp_server_exch_dest(ctx, ib_port, mtu, port, sl, my_dest, gidx, io, mo.onListening);
    if (!rem_dest) return 1;

    io.out(pp_address_line('remote', rem_dest, kind));

    if (servername) {
      if (pp_connect_ctx(ctx, ib_port, my_dest.psn, mtu, sl, rem_dest, gidx, io)) return 1;
    }

    if (opts.late_recv_ms) {
      await new Promise((r) => setTimeout(r, opts.late_recv_ms));
      if (!postReceives()) return 1;
    }

    ctx.pending = PINGPONG_RECV_WRID;

    if (servername) {
      if (validate_buf) {
        for (let i = 0; i < size; i += page_size) ctx.buf[i + grh] = Math.floor(i / page_size) % sizeof_char;
      }
      if (pp_post_send(ctx)) {
        io.err("Couldn't post send\n");
        return 1;
      }
      ctx.pending |= PINGPONG_SEND_WRID;
    }

    const start = process.hrtime.bigint();
    const wc = newWcArray(2);

    while (c.rcnt < iters || c.scnt < iters) {
      if (use_event && !(await events.next(io))) return 1;

      const ne = await pollSome(io, pp_cq(ctx), 2, wc, use_event !== 0);
      if (ne < 0) return 1;

      for (let i = 0; i < ne; ++i) {
        const w = wc[i];
        if (!w || parse_single_wc(ctx, c, iters, w.wr_id, w.status, io)) {
          io.err(`parse WC failed ${ne}\n`);
          return 1;
        }
      }
    }

    printThroughput(io, start, size, iters);
    if (!servername && validate_buf) {
      for (let i = 0; i < size; i += page_size) {
        if (ctx.buf[i + grh] !== Math.floor(i / page_size) % sizeof_char) io.out(`invalid data in page ${Math.floor(i / page_size)}\n`);
      }
    }

    events.ack();
    closed = true;
    if (pp_close_ctx(ctx, io)) return 1;
    ibv_free_device_list(dev_list);
    return 0;
  } finally {
    if (!closed) {
      try {
        events.ack();
        pp_close_ctx(ctx, { out: () => {}, err: () => {} });
      } catch {
        // Already failing: the first error is the one reported.
      }
    }
  }
}
