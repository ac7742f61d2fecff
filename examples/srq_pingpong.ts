/**
 * srq_pingpong: rdma-core's libibverbs/examples/srq_pingpong.c, ported on the
 * ping-pong core (examples/pingpong/core.ts): `-q` RC QPs (16) whose
 * receives all come from one shared receive queue, one CQ, each QP
 * ping-ponging SENDs on its own. What it shares with rc_pingpong comes from
 * the core: the address text, its parsing and printing, the RTR/RTS
 * attributes and masks, the option parsing, device lookup and the report.
 *
 * As in C, the TCP exchange carries MAX_QP (256) addresses each way
 * whatever `-q` is (the unused ones zero), 52 bytes each: the client writes
 * its 256, reads the server's 256 and ends with "done"; the server reads,
 * connects its QPs, writes, and reads the "done". `-n` counts SENDs and
 * receives over all QPs together (the C loop's `scnt`/`rcnt`).
 */
import { randomInt } from 'node:crypto';
import {
  IBV_ACCESS_LOCAL_WRITE,
  IBV_LINK_LAYER_ETHERNET,
  IBV_QP_ACCESS_FLAGS,
  IBV_QP_CAP,
  IBV_QP_PKEY_INDEX,
  IBV_QP_PORT,
  IBV_QP_STATE,
  IBV_QPS_INIT,
  IBV_QPT_RC,
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
  ibv_create_srq,
  ibv_dealloc_pd,
  ibv_dereg_mr,
  ibv_destroy_comp_channel,
  ibv_destroy_cq,
  ibv_destroy_qp,
  ibv_destroy_srq,
  ibv_get_device_list,
  ibv_get_device_name,
  ibv_modify_qp,
  ibv_open_device,
  ibv_post_send,
  ibv_post_srq_recv,
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
} from '../src/driver/verbs/index.js';
import type { ibv_comp_channel, ibv_context, ibv_cq, ibv_mr, ibv_pd, ibv_qp, ibv_qp_init_attr, ibv_srq } from '../src/driver/verbs/index.js';
import { GetoptError, getopt_long, intArg, type OptionSpec } from './common/getopt.js';
import { errText, processIo, type Io } from './common/io.js';
import { sprintf } from './common/printf.js';
import { tcpAcceptOne, tcpConnect, type MsgSocket } from './common/sock.js';
import {
  cleanupStack,
  PINGPONG_RECV_WRID,
  PINGPONG_SEND_WRID,
  PP_MSG_SIZE,
  ROCE_V2_IPV4_GID,
  page_size,
  parse_args,
  pp_address_line,
  pp_connect_ctx,
  pp_dest_to_msg,
  pp_msg_to_dest,
  type MainOptions,
  type pingpong_context,
  type pingpong_dest,
} from './pingpong/core.js';
import { CqEvents, pollSome, printThroughput } from './pingpong/cq-events.js';
import { pp_get_port_info } from './pingpong.js';

/** srq_pingpong.c's MAX_QP: the addresses exchanged each way, and the most `-q` may ask. */
export const MAX_QP = 256;
const DONE = Buffer.from('done\0', 'latin1');

interface SrqContext {
  context: ibv_context;
  channel: ibv_comp_channel | null;
  pd: ibv_pd;
  mr: ibv_mr;
  cq: ibv_cq;
  srq: ibv_srq;
  qps: ibv_qp[];
  buf: Uint8Array;
  size: number;
  send_flags: number;
  rx_depth: number;
  pending: number[];
}

export function usage(argv0: string): string {
  return [
    'Usage:',
    `  ${argv0}            start a server and wait for connection`,
    `  ${argv0} <host>     connect to server at <host>`,
    '',
    'Options:',
    '  -p, --port=<port>      TCP port to listen on / connect to (default 18515)',
    '  -d, --ib-dev=<dev>     RDMA device to use (default: the first one found)',
    '  -i, --ib-port=<port>   port of the device (default 1)',
    '  -s, --size=<size>      bytes per message (default 4096)',
    '  -m, --mtu=<size>       path MTU: 256, 512, 1024, 2048 or 4096 (default 1024)',
    `  -q, --num-qp=<num>     queue pairs, all on one SRQ (default 16, at most ${MAX_QP})`,
    '  -r, --rx-depth=<dep>   receives kept posted on the SRQ (default 500)',
    '  -n, --iters=<iters>    exchanges, over all QPs (default 1000)',
    '  -l, --sl=<sl>          service level (default 0)',
    '  -e, --events           wait for completion events instead of polling',
    '  -g, --gid-idx=<index>  local GID table index (default: 3 on RoCE, none on InfiniBand)',
    '  -c, --chk              check the received bytes (server side)',
    '  -o, --odp              on-demand paging: refused (this verbs API has no ibv_query_device_ex)',
    '',
  ].join('\n');
}

/** srq_pingpong's own flags: `-q` and `-o`; the rest are the core's (as the C getopt string has them). */
export function parse_srq_args(argv: readonly string[]): { num_qp: number } & ReturnType<typeof parse_args> {
  const own: OptionSpec[] = [
    { short: 'q', long: 'num-qp', arg: true },
    { short: 'o', long: 'odp', arg: false },
  ];
  const shared: OptionSpec[] = [
    { short: 'p', long: 'port', arg: true },
    { short: 'd', long: 'ib-dev', arg: true },
    { short: 'i', long: 'ib-port', arg: true },
    { short: 's', long: 'size', arg: true },
    { short: 'm', long: 'mtu', arg: true },
    { short: 'r', long: 'rx-depth', arg: true },
    { short: 'n', long: 'iters', arg: true },
    { short: 'l', long: 'sl', arg: true },
    { short: 'e', long: 'events', arg: false },
    { short: 'g', long: 'gid-idx', arg: true },
    { short: 'c', long: 'chk', arg: false },
  ];
  // First pass: take out -q/-o (checked here), hand the rest to the core's parser.
  const { options } = getopt_long(argv, [...own, ...shared]);
  let num_qp = 16;
  for (const o of options) {
    if (o.name === 'num-qp') num_qp = intArg(o, 1, MAX_QP);
    if (o.name === 'odp')
      throw new GetoptError(
        `${o.as} is not supported: on-demand paging needs ibv_query_device_ex and IBV_ACCESS_ON_DEMAND, which this verbs API does not provide`,
      );
  }
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '-q' || a === '--num-qp') i++;
    else if (!/^(-q.+|--num-qp=.*)$/.test(a)) rest.push(a);
  }
  return { ...parse_args(rest, 'UC'), num_qp }; // UC's flag set is the common one plus -m: srq's, without -q/-o
}

function initCtx(
  dev: ReturnType<typeof ibv_get_device_list>[number],
  size: number,
  num_qp: number,
  rx_depth: number,
  port: number,
  use_event: number,
  io: Io,
): SrqContext | null {
  const { undo, fail } = cleanupStack(io);
  let context: ibv_context;
  try {
    context = ibv_open_device(dev);
  } catch (e) {
    return fail(`Couldn't get context for ${ibv_get_device_name(dev)}`, e);
  }
  undo.push(() => ibv_close_device(context));
  let buf: Uint8Array;
  try {
    buf = rnic_alloc_buf(context, size, page_size);
  } catch (e) {
    return fail("Couldn't allocate work buf.", e);
  }
  undo.push(() => rnic_free_buf(context, buf));
  buf.fill(0); // srq_pingpong.c clears its buffer (rc_pingpong fills 0x7b)
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
  let mr: ibv_mr;
  let cq: ibv_cq;
  let srq: ibv_srq;
  try {
    pd = ibv_alloc_pd(context);
  } catch (e) {
    return fail("Couldn't allocate PD", e);
  }
  undo.push(() => ibv_dealloc_pd(pd));
  try {
    mr = ibv_reg_mr(pd, buf, IBV_ACCESS_LOCAL_WRITE);
  } catch (e) {
    return fail("Couldn't register MR", e);
  }
  undo.push(() => ibv_dereg_mr(mr));
  try {
    cq = ibv_create_cq(context, rx_depth + num_qp, null, channel, 0);
  } catch (e) {
    return fail("Couldn't create CQ", e);
  }
  undo.push(() => ibv_destroy_cq(cq));
  try {
    srq = ibv_create_srq(pd, { srq_context: null, attr: { max_wr: rx_depth, max_sge: 1, srq_limit: 0 } });
  } catch (e) {
    return fail("Couldn't create SRQ", e);
  }
  undo.push(() => ibv_destroy_srq(srq));
  let send_flags = IBV_SEND_SIGNALED;
  const qps: ibv_qp[] = [];
  for (let i = 0; i < num_qp; i++) {
    const init_attr: ibv_qp_init_attr = {
      send_cq: cq,
      recv_cq: cq,
      srq,
      cap: { ...newQpCap(), max_send_wr: 1, max_send_sge: 1 },
      qp_type: IBV_QPT_RC,
      sq_sig_all: 0,
    };
    let qp: ibv_qp;
    try {
      qp = ibv_create_qp(pd, init_attr);
    } catch (e) {
      return fail(`Couldn't create QP[${i}]`, e);
    }
    qps.push(qp);
    undo.push(() => ibv_destroy_qp(qp));
    ibv_query_qp(qp, newQpAttr(), IBV_QP_CAP, init_attr);
    if (init_attr.cap.max_inline_data >= size) send_flags |= IBV_SEND_INLINE;
  }
  for (let i = 0; i < num_qp; i++) {
    const attr = newQpAttr();
    attr.qp_state = IBV_QPS_INIT;
    attr.pkey_index = 0;
    attr.port_num = port;
    attr.qp_access_flags = 0;
    const r = ibv_modify_qp(qps[i] as ibv_qp, attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    if (r) return fail(`Failed to modify QP[${i}] to INIT (${errnoName(r)})`);
  }
  return { context, channel, pd, mr, cq, srq, qps, buf, size, send_flags, rx_depth, pending: new Array<number>(num_qp).fill(0) };
}

function closeCtx(ctx: SrqContext, io: Io): number {
  for (let i = 0; i < ctx.qps.length; i++) {
    if (ibv_destroy_qp(ctx.qps[i] as ibv_qp)) {
      io.err(`Couldn't destroy QP[${i}]\n`);
      return 1;
    }
  }
  const steps: Array<[() => number, string]> = [
    [() => ibv_destroy_srq(ctx.srq), "Couldn't destroy SRQ"],
    [() => ibv_destroy_cq(ctx.cq), "Couldn't destroy CQ"],
    [() => ibv_dereg_mr(ctx.mr), "Couldn't deregister MR"],
    [() => ibv_dealloc_pd(ctx.pd), "Couldn't deallocate PD"],
    [() => (ctx.channel ? ibv_destroy_comp_channel(ctx.channel) : 0), "Couldn't destroy completion channel"],
  ];
  for (const [f, msg] of steps) {
    if (f()) {
      io.err(`${msg}\n`);
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

function postRecv(ctx: SrqContext, n: number): number {
  const wr = { wr_id: BigInt(PINGPONG_RECV_WRID), next: null, sg_list: [{ addr: ctx.mr.addr, length: ctx.size, lkey: ctx.mr.lkey }], num_sge: 1 };
  let i: number;
  for (i = 0; i < n; ++i) if (ibv_post_srq_recv(ctx.srq, wr, {})) break;
  return i;
}

function postSend(ctx: SrqContext, i: number): number {
  return ibv_post_send(
    ctx.qps[i] as ibv_qp,
    {
      wr_id: BigInt(PINGPONG_SEND_WRID),
      next: null,
      sg_list: [{ addr: ctx.mr.addr, length: ctx.size, lkey: ctx.mr.lkey }],
      num_sge: 1,
      opcode: IBV_WR_SEND,
      send_flags: ctx.send_flags,
    },
    {},
  );
}

/** Every QP of ours towards its peer, through the core's RC connect (one QP at a time). */
function connectAll(ctx: SrqContext, ib_port: number, mtu: number, sl: number, mine: pingpong_dest[], theirs: pingpong_dest[], gidx: number, io: Io): number {
  for (let i = 0; i < ctx.qps.length; i++) {
    const view = { kind: 'RC', qp: ctx.qps[i], pd: ctx.pd } as pingpong_context;
    if (pp_connect_ctx(view, ib_port, (mine[i] as pingpong_dest).psn, mtu, sl, theirs[i] as pingpong_dest, gidx, io)) {
      io.err(`(QP[${i}])\n`);
      return 1;
    }
  }
  return 0;
}

const zeroDest = (): pingpong_dest => ({ lid: 0, qpn: 0, psn: 0, gid: newGid() });

async function readDests(sock: MsgSocket, io: Io): Promise<pingpong_dest[] | null> {
  const out: pingpong_dest[] = [];
  for (let i = 0; i < MAX_QP; i++) {
    const msg = await sock.read(PP_MSG_SIZE);
    if (msg.length !== PP_MSG_SIZE) {
      io.err(`${msg.length}/${PP_MSG_SIZE}: Couldn't read remote address [${i}]\n`);
      return null;
    }
    out.push(pp_msg_to_dest(msg) ?? zeroDest());
  }
  return out;
}

async function writeDests(sock: MsgSocket, mine: pingpong_dest[]): Promise<void> {
  for (let i = 0; i < MAX_QP; i++) await sock.write(pp_dest_to_msg(mine[i] ?? zeroDest()));
}

/** The C main(): 0 ok, 1 failure, 2 usage mistake. */
export async function main(argv: string[], mo: MainOptions = {}): Promise<number> {
  const io = mo.io ?? processIo;
  const argv0 = mo.argv0 ?? 'srq_pingpong';
  let o: ReturnType<typeof parse_srq_args>;
  try {
    o = parse_srq_args(argv);
  } catch (e) {
    if ((e as { code?: string }).code !== 'EXAMPLE_USAGE') throw e;
    io.err(`${argv0}: ${(e as Error).message}\n${usage(argv0)}`);
    return 2;
  }
  const { servername, port, ib_devname, ib_port, size, mtu, rx_depth, iters, sl, use_event, num_qp, validate_buf } = o;
  if (num_qp > rx_depth) {
    io.err(`rx_depth ${rx_depth} is too small for ${num_qp} QPs -- must have at least one receive per QP.\n`);
    return 1;
  }
  const list = ibv_get_device_list();
  const dev = ib_devname ? list.find((d) => ibv_get_device_name(d) === ib_devname) : list[0];
  if (!dev) {
    io.err(ib_devname ? `IB device ${ib_devname} not found\n` : 'No IB devices found\n');
    return 1;
  }
  const ctx = initCtx(dev, size, num_qp, rx_depth, ib_port, use_event, io);
  if (!ctx) return 1;
  let closed = false;
  const events = new CqEvents(ctx.channel, ctx.cq);
  try {
    let routs = postRecv(ctx, rx_depth);
    if (routs < rx_depth) {
      io.err(`Couldn't post receive (${routs})\n`);
      return 1;
    }
    if (use_event && ibv_req_notify_cq(ctx.cq, 0)) {
      io.err("Couldn't request CQ notification\n");
      return 1;
    }
    const portinfo = newPortAttr();
    if (pp_get_port_info(ctx.context, ib_port, portinfo)) {
      io.err("Couldn't get port info\n");
      return 1;
    }
    const gidGiven = argv.some((a) => a.startsWith('-g') || a.startsWith('--gid-idx'));
    const gidx = o.gidx < 0 && !gidGiven && portinfo.link_layer === IBV_LINK_LAYER_ETHERNET ? ROCE_V2_IPV4_GID : o.gidx;
    const mine: pingpong_dest[] = [];
    for (let i = 0; i < num_qp; i++) {
      const d: pingpong_dest = { lid: portinfo.lid, qpn: (ctx.qps[i] as ibv_qp).qp_num, psn: randomInt(0, 0x1000000), gid: newGid() };
      if (portinfo.link_layer !== IBV_LINK_LAYER_ETHERNET && !d.lid) {
        io.err("Couldn't get local LID\n");
        return 1;
      }
      if (gidx >= 0 && ibv_query_gid(ctx.context, ib_port, gidx, d.gid)) {
        io.err(`Could not get local gid for gid index ${gidx}\n`);
        return 1;
      }
      mine.push(d);
      io.out(pp_address_line('local', d));
    }

    let theirs: pingpong_dest[] | null;
    let sock: MsgSocket;
    try {
      sock = servername ? await tcpConnect(servername, port) : await tcpAcceptOne(port, mo.onListening);
    } catch (e) {
      io.err(servername ? `Couldn't connect to ${servername}:${port} (${errText(e)})\n` : `Couldn't listen to port ${port} (${errText(e)})\n`);
      return 1;
    }
    try {
      if (servername) {
        await writeDests(sock, mine);
        theirs = await readDests(sock, io);
        if (theirs) await sock.write(DONE);
      } else {
        theirs = await readDests(sock, io);
        if (theirs && connectAll(ctx, ib_port, mtu, sl, mine, theirs, gidx, io)) {
          io.err("Couldn't connect to remote QP\n");
          return 1;
        }
        if (theirs) {
          await writeDests(sock, mine);
          const done = await sock.read(DONE.length);
          if (done.length !== DONE.length) theirs = null;
        }
      }
    } catch (e) {
      io.err(`Couldn't send/recv local address (${errText(e)})\n`);
      return 1;
    } finally {
      sock.close();
    }
    if (!theirs) return 1;
    for (let i = 0; i < num_qp; i++) io.out(pp_address_line('remote', theirs[i] as pingpong_dest));
    if (servername && connectAll(ctx, ib_port, mtu, sl, mine, theirs, gidx, io)) return 1;

    if (servername) {
      if (validate_buf) for (let i = 0; i < size; i += page_size) ctx.buf[i] = 0; // the C `i / page_size % sizeof(char)`: always 0
      for (let i = 0; i < num_qp; i++) {
        if (postSend(ctx, i)) {
          io.err("Couldn't post send\n");
          return 1;
        }
        ctx.pending[i] = PINGPONG_SEND_WRID | PINGPONG_RECV_WRID;
      }
    } else {
      ctx.pending.fill(PINGPONG_RECV_WRID);
    }

    const start = process.hrtime.bigint();
    const wc = newWcArray(num_qp + rx_depth);
    let rcnt = 0;
    let scnt = 0;
    while (rcnt < iters || scnt < iters) {
      if (use_event && !(await events.next(io))) return 1;
      const ne = await pollSome(io, ctx.cq, wc.length, wc, use_event !== 0);
      if (ne < 0) return 1;
      for (let k = 0; k < ne; k++) {
        const w = wc[k]!;
        if (w.status !== IBV_WC_SUCCESS) {
          io.err(sprintf('Failed status %s (%d) for wr_id %d\n', ibv_wc_status_str(w.status), w.status, Number(BigInt.asIntN(32, w.wr_id))));
          return 1;
        }
        const qi = ctx.qps.findIndex((q) => q.qp_num === w.qp_num);
        if (qi < 0) {
          io.err(sprintf("Couldn't find QPN %06x\n", w.qp_num));
          return 1;
        }
        const id = Number(BigInt.asIntN(32, w.wr_id));
        if (id === PINGPONG_SEND_WRID) {
          ++scnt;
        } else if (id === PINGPONG_RECV_WRID) {
          if (--routs <= num_qp) {
            routs += postRecv(ctx, rx_depth - routs);
            if (routs < rx_depth) {
              io.err(`Couldn't post receive (${routs})\n`);
              return 1;
            }
          }
          ++rcnt;
        } else {
          io.err(`Completion for unknown wr_id ${id}\n`);
          return 1;
        }
        ctx.pending[qi] = (ctx.pending[qi] as number) & ~id;
        if (scnt < iters && !ctx.pending[qi]) {
          if (postSend(ctx, qi)) {
            io.err("Couldn't post send\n");
            return 1;
          }
          ctx.pending[qi] = PINGPONG_RECV_WRID | PINGPONG_SEND_WRID;
        }
      }
    }
    printThroughput(io, start, size, iters);
    if (!servername && validate_buf) {
      for (let i = 0; i < size; i += page_size) if (ctx.buf[i] !== 0) io.out(`invalid data in page ${Math.floor(i / page_size)}\n`);
    }
    events.ack();
    closed = true;
    return closeCtx(ctx, io);
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
