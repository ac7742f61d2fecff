/**
 * perf: bandwidth and latency tests in the spirit of linux-rdma/perftest
 * (ib_write_bw, ib_write_lat, ib_read_bw, ib_read_lat, ib_send_bw,
 * ib_send_lat), on the rnic-model verbs API.
 *
 *   rnic perf write_bw                 server: wait for a client
 *   rnic perf write_bw <host>          client: connect and run
 *   rnic perf write_bw --loopback      both sides in this process, on two devices
 *
 * What is perftest's: the common flags and their defaults, the queue pair
 * attributes, the way a BW test posts (tx_depth outstanding, one signaled
 * WR per cq_mod) and measures (a timestamp per post and per completion,
 * peak = best rate over any window, average = whole run), the way a latency
 * test measures (a timestamp per iteration, half the round trip for SEND and
 * WRITE, the whole round trip for READ; the two slowest samples dropped),
 * and the printed text: test header, address lines, tables, number formats.
 *
 * What differs:
 * - t_stdev is the true standard deviation; perftest truncates each
 *   deviation to a whole microsecond before squaring, which prints 0.00 for
 *   any sub-microsecond spread.
 * - The TCP exchange uses perftest's message format for queue pair addresses
 *   but not its version and MTU negotiation: run both ends with this tool, it
 *   does not talk to ib_write_bw.
 * - Time is read from a clock in nanoseconds (performance.now by default, or
 *   any clock passed in, e.g. a simulator's), not from CPU cycles; -F is
 *   accepted and does nothing, there being no CPU frequency to check.
 * - --loopback runs both sides in one process; an empty completion queue
 *   yields to the event loop so that a device driven by this thread advances.
 */
import { randomInt } from 'node:crypto';
import {
  IBV_ACCESS_LOCAL_WRITE,
  IBV_ACCESS_REMOTE_ATOMIC,
  IBV_SEND_INLINE,
  IBV_WR_ATOMIC_CMP_AND_SWP,
  IBV_WR_ATOMIC_FETCH_AND_ADD,
  ibv_ack_cq_events,
  ibv_create_comp_channel,
  ibv_create_srq,
  ibv_destroy_comp_channel,
  ibv_destroy_srq,
  ibv_get_cq_event,
  ibv_post_srq_recv,
  ibv_req_notify_cq,
  IBV_ACCESS_REMOTE_READ,
  IBV_ACCESS_REMOTE_WRITE,
  IBV_LINK_LAYER_ETHERNET,
  IBV_LINK_LAYER_INFINIBAND,
  IBV_LINK_LAYER_UNSPECIFIED,
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
  IBV_TRANSPORT_IB,
  IBV_TRANSPORT_IWARP,
  IBV_WC_SUCCESS,
  IBV_WR_RDMA_READ,
  IBV_WR_RDMA_WRITE,
  IBV_WR_SEND,
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
  ibv_query_device,
  ibv_query_gid,
  ibv_query_port,
  ibv_reg_mr,
  ibv_wc_status_str,
  mtu_enum_to_bytes,
  newDeviceAttr,
  newGid,
  newPortAttr,
  newQpAttr,
  newQpCap,
  newWcArray,
  rnic_alloc_buf,
  rnic_free_buf,
} from '../src/driver/verbs/index.js';
import type {
  ibv_ah,
  ibv_comp_channel,
  ibv_context,
  ibv_srq,
  ibv_cq,
  ibv_device,
  ibv_device_attr,
  ibv_mr,
  ibv_pd,
  ibv_port_attr,
  ibv_qp,
  ibv_recv_wr,
  ibv_send_wr,
  ibv_wc,
} from '../src/driver/verbs/index.js';
import { GetoptError, getopt_long, intArg, type OptionSpec } from './common/getopt.js';
import { errText, idle, PollWait, pollSpin, processIo, type Io } from './common/io.js';
import { sprintf } from './common/printf.js';
import { type MsgSocket, tcpAcceptOne, tcpConnect } from './common/sock.js';
import { RnicError } from '../src/wire/errors.js';
import { pp_mtu_to_enum } from './pingpong.js';
import { type BwReportWire, destToMsg, msgToDest, type PerfDest, PerftestComm } from './perf/perftest-comm.js';

// ---------------------------------------------------------------------------
// Parameters (perftest_parameters.h defaults and limits)
// ---------------------------------------------------------------------------

export const PERF_TESTS = ['write_bw', 'write_lat', 'read_bw', 'read_lat', 'send_bw', 'send_lat', 'atomic_bw', 'atomic_lat'] as const;
export type PerfTestName = (typeof PERF_TESTS)[number];
export type Verb = 'SEND' | 'WRITE' | 'READ' | 'ATOMIC';
export type AtomicType = 'FETCH_AND_ADD' | 'CMP_AND_SWAP';
export type TestType = 'BW' | 'LAT';
export type ConnectionType = 'RC' | 'UC' | 'UD';

const DEF_PORT = 18515;
const DEF_SIZE_BW = 65536;
const DEF_SIZE_LAT = 2;
const DEF_ITERS = 1000;
const DEF_ITERS_WB = 5000;
const DEF_TX_BW = 128;
const DEF_TX_LAT = 1;
const DEF_QP_TIME = 14;
const DEF_RX_SEND = 512;
const DEF_CQ_MOD = 100;
const DEF_QKEY = 0x11111111;
/** perftest's default -D margin: results are measured between margin and duration − margin. */
const DEF_MARGIN_S = 2;
/** --run_infinitely prints a row every this many seconds (perftest's default duration). */
const DEF_DURATION_S = 5;
const ATOMIC_SIZE = 8;
/** What this side announces in check_sys_data (sysconf page size, cache line size). */
const CACHE_LINE = 64;
const MIN_RNR_TIMER = 12;
const UD_ADDITION = 40;
const CYCLE_BUFFER = 4096;
const MAX_SIZE_ALL = 1 << 23;
/** perftest drops the peak computation (quadratic) above this many iterations. */
const PEAK_ITERS_LIMIT = 20000;
const LAT_MEASURE_TAIL = 2;

export interface PerfParams {
  test: PerfTestName;
  verb: Verb;
  tst: TestType;
  servername: string | null;
  loopback: boolean;
  ib_devname: string | null;
  /** --loopback: the device of the server side (default: the second device, or the first if there is one). */
  peer_devname: string | null;
  ib_port: number;
  port: number;
  size: number;
  /** -a: every size from 2 to 2^23. */
  all: boolean;
  iters: number;
  /** -1: no GRH on InfiniBand, 0 on Ethernet (perftest's rule). */
  gid_index: number;
  cpu_freq_f: boolean;
  num_of_qps: number;
  tx_depth: number;
  rx_depth: number;
  cq_mod: number;
  noPeak: boolean;
  connection_type: ConnectionType;
  report_gbits: boolean;
  /** MTU in bytes; 0: the port's active MTU. */
  mtu: number;
  /** -u: the RC QPs' local ACK timeout exponent (4.096 µs × 2^n; perftest's default 14, ~67 ms). */
  qp_timeout: number;
  /** -b: both sides send (BW tests). */
  duplex: boolean;
  /** -D: seconds to run instead of -n iterations (0: iterations). --run_infinitely: seconds per printed row. */
  duration: number;
  /** --run_infinitely: BW tests run until stopped, one row per `duration` seconds. */
  run_infinitely: boolean;
  /** -e: wait for completions on a completion channel instead of polling. */
  use_event: boolean;
  /** -I: messages up to this many bytes are posted inline (not READ or ATOMIC). */
  inline_size: number;
  /** -l: send WRs posted as one list of this many. */
  post_list: number;
  /** --use-srq: SEND tests receive through a shared receive queue. */
  use_srq: boolean;
  /** -A: the atomic operation of the atomic tests. */
  atomicType: AtomicType;
  /** -o: outstanding RDMA READ / atomic operations (0: the device's maximum, up to 16). */
  out_reads: number;
}

const VERB_OF: Record<PerfTestName, [Verb, TestType]> = {
  write_bw: ['WRITE', 'BW'],
  write_lat: ['WRITE', 'LAT'],
  read_bw: ['READ', 'BW'],
  read_lat: ['READ', 'LAT'],
  send_bw: ['SEND', 'BW'],
  send_lat: ['SEND', 'LAT'],
  atomic_bw: ['ATOMIC', 'BW'],
  atomic_lat: ['ATOMIC', 'LAT'],
};

export function defaultParams(test: PerfTestName): PerfParams {
  const [verb, tst] = VERB_OF[test];
  return {
    test,
    verb,
    tst,
    servername: null,
    loopback: false,
    ib_devname: null,
    peer_devname: null,
    ib_port: 1,
    port: DEF_PORT,
    size: verb === 'ATOMIC' ? ATOMIC_SIZE : tst === 'BW' ? DEF_SIZE_BW : DEF_SIZE_LAT,
    all: false,
    iters: tst === 'BW' && verb === 'WRITE' ? DEF_ITERS_WB : DEF_ITERS,
    gid_index: -1,
    cpu_freq_f: false,
    num_of_qps: 1,
    tx_depth: tst === 'BW' ? DEF_TX_BW : DEF_TX_LAT,
    rx_depth: verb === 'SEND' ? DEF_RX_SEND : 1,
    cq_mod: DEF_CQ_MOD,
    noPeak: false,
    connection_type: 'RC',
    report_gbits: false,
    mtu: 0,
    qp_timeout: DEF_QP_TIME,
    duplex: false,
    duration: 0,
    run_infinitely: false,
    use_event: false,
    inline_size: 0,
    post_list: 1,
    use_srq: false,
    atomicType: 'FETCH_AND_ADD',
    out_reads: 0,
  };
}

const OPTIONS: readonly OptionSpec[] = [
  { short: 'a', long: 'all', arg: false },
  { short: 'c', long: 'connection', arg: true },
  { short: 'd', long: 'ib-dev', arg: true },
  { short: 'F', long: 'CPU-freq', arg: false },
  { short: 'i', long: 'ib-port', arg: true },
  { short: 'm', long: 'mtu', arg: true },
  { short: 'n', long: 'iters', arg: true },
  { short: 'N', long: 'noPeak', arg: false },
  { short: 'p', long: 'port', arg: true },
  { short: 'q', long: 'qp', arg: true },
  { short: 'Q', long: 'cq-mod', arg: true },
  { short: 'r', long: 'rx-depth', arg: true },
  { short: 's', long: 'size', arg: true },
  { short: 't', long: 'tx-depth', arg: true },
  { short: 'x', long: 'gid-index', arg: true },
  { short: 'u', long: 'qp-timeout', arg: true },
  { short: 'b', long: 'bidirectional', arg: false },
  { short: 'D', long: 'duration', arg: true },
  { short: 'e', long: 'events', arg: false },
  { short: 'I', long: 'inline_size', arg: true },
  { short: 'l', long: 'post_list', arg: true },
  { short: 'A', long: 'atomic_type', arg: true },
  { short: 'o', long: 'outs', arg: true },
  { short: 'z', long: 'comm_rdma_cm', arg: false },
  { short: 'R', long: 'rdma_cm', arg: false },
  { long: 'use-srq', arg: false },
  { long: 'run_infinitely', arg: false },
  { long: 'report_gbits', arg: false },
  { long: 'loopback', arg: false },
  { long: 'peer-ib-dev', arg: true },
  { short: 'h', long: 'help', arg: false },
];

/** perftest's CHECK_VALUE: the value and its range, or " <name> should be between <min> and <max>". */
function checkValue(value: string | undefined, as: string, min: number, max: number, name: string): number {
  try {
    return intArg({ name, as, value: value ?? '' }, min, max);
  } catch {
    throw new GetoptError(`${as}: ${name} should be between ${min} and ${max} (got '${value ?? ''}')`);
  }
}

/** -h/--help among the arguments: not a mistake, the usage goes to stdout. */
export class HelpRequested extends RnicError<'EXAMPLE_HELP'> {
  constructor() {
    super('EXAMPLE_HELP', 'help requested');
    this.name = 'HelpRequested';
  }
}

/** Parses `<test> [options] [host]`. Throws GetoptError on a usage mistake. */
export function parsePerfArgs(argv: readonly string[]): PerfParams {
  const [name, ...rest] = argv;
  if (name === '-h' || name === '--help') throw new HelpRequested();
  if (!name || !(PERF_TESTS as readonly string[]).includes(name)) {
    throw new GetoptError(name ? `unknown test '${name}' (one of ${PERF_TESTS.join(', ')})` : `which test? (one of ${PERF_TESTS.join(', ')})`);
  }
  const p = defaultParams(name as PerfTestName);
  const { options, operands } = getopt_long(rest, OPTIONS);
  let cqModGiven = false;
  let sizeGiven = false;
  for (const o of options) {
    switch (o.name) {
      case 'all':
        p.all = true;
        break;
      case 'connection': {
        const v = o.value ?? '';
        if (v !== 'RC' && v !== 'UC' && v !== 'UD') {
          throw new GetoptError(`${o.as}: invalid connection type '${v}' (RC, UC or UD${v === 'XRC' || v === 'DC' ? `; ${v} is not supported` : ''})`);
        }
        p.connection_type = v;
        break;
      }
      case 'ib-dev':
        if (!o.value) throw new GetoptError(`${o.as}: the device name is empty`);
        p.ib_devname = o.value;
        break;
      case 'peer-ib-dev':
        if (!o.value) throw new GetoptError(`${o.as}: the device name is empty`);
        p.peer_devname = o.value;
        break;
      case 'CPU-freq':
        p.cpu_freq_f = true;
        break;
      case 'ib-port':
        p.ib_port = checkValue(o.value, o.as, 1, 255, 'IB port');
        break;
      case 'mtu': {
        const bytes = checkValue(o.value, o.as, 256, 4096, 'MTU');
        if (pp_mtu_to_enum(bytes) < 0) throw new GetoptError(`${o.as}: ${bytes} is not an MTU (256, 512, 1024, 2048 or 4096)`);
        p.mtu = bytes;
        break;
      }
      case 'iters':
        p.iters = checkValue(o.value, o.as, 5, 100000000, 'Iteration num');
        break;
      case 'noPeak':
        p.noPeak = true;
        break;
      case 'port':
        p.port = checkValue(o.value, o.as, 0, 65535, 'Port');
        break;
      case 'qp':
        p.num_of_qps = checkValue(o.value, o.as, 1, 16384, 'num of qps');
        break;
      case 'cq-mod':
        p.cq_mod = checkValue(o.value, o.as, 1, 1024, 'CQ moderation');
        cqModGiven = true;
        break;
      case 'rx-depth':
        p.rx_depth = checkValue(o.value, o.as, 1, 16384, 'Rx depth');
        break;
      case 'size':
        p.size = checkValue(o.value, o.as, 1, 1 << 30, 'Message size');
        sizeGiven = true;
        break;
      case 'tx-depth':
        p.tx_depth = checkValue(o.value, o.as, 1, 15000, 'Tx depth');
        break;
      case 'gid-index':
        p.gid_index = checkValue(o.value, o.as, 0, 64, 'GID index');
        break;
      case 'qp-timeout':
        p.qp_timeout = checkValue(o.value, o.as, 0, 31, 'QP timeout');
        break;
      case 'report_gbits':
        p.report_gbits = true;
        break;
      case 'bidirectional':
        p.duplex = true;
        break;
      case 'duration':
        p.duration = checkValue(o.value, o.as, 1, 1000000, 'Duration');
        break;
      case 'events':
        p.use_event = true;
        break;
      case 'inline_size':
        p.inline_size = checkValue(o.value, o.as, 0, 912, 'Inline size');
        break;
      case 'post_list':
        p.post_list = checkValue(o.value, o.as, 1, 15000, 'Post list');
        break;
      case 'outs':
        p.out_reads = checkValue(o.value, o.as, 1, 65535, 'Outstanding reads');
        break;
      case 'atomic_type': {
        const v = o.value ?? '';
        if (v !== 'CMP_AND_SWAP' && v !== 'FETCH_AND_ADD')
          throw new GetoptError(`${o.as}: Invalid Atomic type! please choose from {CMP_AND_SWAP,FETCH_AND_ADD} (got '${v}')`);
        p.atomicType = v;
        break;
      }
      case 'use-srq':
        p.use_srq = true;
        break;
      case 'run_infinitely':
        p.run_infinitely = true;
        break;
      case 'comm_rdma_cm':
      case 'rdma_cm':
        throw new GetoptError(
          `${o.as}: the RDMA CM is not available with the model's devices (no rdma_cm); the exchange runs over TCP ("Data ex. method : Ethernet")`,
        );
      case 'loopback':
        p.loopback = true;
        break;
      case 'help':
        throw new HelpRequested();
    }
  }
  if (operands.length > 1) throw new GetoptError(`one server name at most (got ${operands.join(' ')})`);
  p.servername = operands[0] ?? null;

  if (p.verb === 'ATOMIC' && sizeGiven && p.size !== ATOMIC_SIZE) throw new GetoptError('Message size cannot be changed for Atomic tests');
  if (p.verb === 'ATOMIC' && p.all) throw new GetoptError('-a: Message size cannot be changed for Atomic tests');
  const wrong = combinationError(p);
  if (wrong) throw new GetoptError(wrong);
  forceDependencies(p, cqModGiven);
  return p;
}

/** The combinations perftest refuses (and, for runLoopback's callers, the ranges the flags check). */
function combinationError(p: PerfParams): string | null {
  const range = (v: number, min: number, max: number, name: string): string | null =>
    Number.isInteger(v) && v >= min && v <= max ? null : `${name} should be between ${min} and ${max} (got ${v})`;
  const bad =
    range(p.iters, 5, 100000000, 'Iteration num') ??
    range(p.size, 1, 1 << 30, 'Message size') ??
    range(p.num_of_qps, 1, 16384, 'num of qps') ??
    range(p.tx_depth, 1, 15000, 'Tx depth') ??
    range(p.rx_depth, 1, 16384, 'Rx depth') ??
    range(p.cq_mod, 1, 1024, 'CQ moderation') ??
    range(p.gid_index, -1, 64, 'GID index') ??
    range(p.ib_port, 1, 255, 'IB port');
  if (bad) return bad;
  if (p.connection_type !== 'RC' && p.connection_type !== 'UC' && p.connection_type !== 'UD')
    return `invalid connection type '${String(p.connection_type)}' (RC, UC or UD)`;
  if (p.mtu !== 0 && pp_mtu_to_enum(p.mtu) < 0) return `${p.mtu} is not an MTU (256, 512, 1024, 2048 or 4096)`;
  if (p.loopback && p.servername) return '--loopback runs both sides here: give no server name';
  if (p.peer_devname && !p.loopback) return '--peer-ib-dev is for --loopback';
  if (p.verb === 'READ' && p.connection_type !== 'RC') return `RDMA READ runs on RC only (not ${p.connection_type})`;
  if (p.verb === 'ATOMIC' && p.connection_type !== 'RC') return `atomic operations run on RC only (not ${p.connection_type})`;
  if (p.duplex && p.tst !== 'BW') return 'Bidirectional is only available in BW test';
  if (p.duration && p.tst !== 'BW') return '-D (duration) runs the bandwidth tests here; the latency tests take -n';
  if (p.duration && p.all) return "Duration mode currently doesn't support running on all sizes.";
  if (p.duration && p.use_event) return "Duration mode doesn't work with events.";
  if (p.run_infinitely && p.tst !== 'BW') return 'run_infinitely exists only in BW tests for now.';
  if (p.run_infinitely && p.use_event) return 'run_infinitely does not support events feature yet.';
  if (p.run_infinitely && p.duplex && p.verb === 'SEND') return 'run_infinitely mode is not supported in SEND Bidirectional BW test';
  if (p.run_infinitely && p.all) return '--run_infinitely runs one size: not with -a';
  if (p.inline_size && (p.verb === 'READ' || p.verb === 'ATOMIC')) return 'Inline feature not available on READ/Atomic verbs';
  if (p.out_reads && p.verb !== 'READ' && p.verb !== 'ATOMIC') return 'Setting Outstanding reads only available on READ verb';
  if (p.use_srq && p.verb !== 'SEND') return 'Using SRQ only avavilible in SEND tests.';
  if (p.use_srq && p.rx_depth < p.num_of_qps) return 'Using SRQ depth should be greater than number of QPs.';
  if (p.use_event && p.verb === 'WRITE' && p.tst === 'LAT') return 'Events feature not available on WRITE verb';
  if (p.post_list > 1 && p.tst !== 'BW') return 'Post list is supported in BW tests only';
  if (p.post_list > 1 && p.iters % p.post_list) return 'Number of iterations must be a multiple of post list size';
  if (p.loopback && (p.duplex || p.run_infinitely || p.duration)) return '--loopback runs -n iterations one way: not with -b, -D or --run_infinitely';
  if (p.verb === 'WRITE' && p.connection_type === 'UD') return 'RDMA WRITE does not run on UD';
  if (p.tst === 'LAT' && p.num_of_qps > 1) return '-q (several QPs) is for the bandwidth tests';
  return null;
}

/** force_dependecies(): what perftest adjusts rather than refuses. */
function forceDependencies(p: PerfParams, cqModGiven: boolean): void {
  if (p.tst === 'LAT') p.tx_depth = 1; // one message in flight
  // a CQE per cq_mod WRs cannot exceed the queue depth
  if (p.tst === 'BW' && p.cq_mod > p.tx_depth) p.cq_mod = p.tx_depth;
  if (p.tst === 'LAT' && !cqModGiven) p.cq_mod = 1;
  if (p.tst === 'BW' && p.iters * p.num_of_qps > PEAK_ITERS_LIMIT) p.noPeak = true;
  // "Post List requested - CQ moderation will be the size of the post list"
  if (p.post_list > 1) p.cq_mod = p.post_list;
  if (p.run_infinitely && !p.duration) p.duration = DEF_DURATION_S;
  if (p.duration || p.run_infinitely) p.noPeak = true;
}

export function usage(argv0: string): string {
  return [
    'Usage:',
    `  ${argv0} <test>            start a server and wait for connection`,
    `  ${argv0} <test> <host>     connect to server at <host>`,
    `  ${argv0} <test> --loopback run both sides in this process`,
    '',
    `  <test>: ${PERF_TESTS.join(', ')}`,
    '',
    'Options:',
    '  -a, --all                 every message size from 2 to 2^23 (UD: up to the MTU)',
    '  -c, --connection=<type>   RC, UC or UD (default RC; READ: RC; WRITE: RC or UC)',
    '  -d, --ib-dev=<dev>        RDMA device (default: the first one found)',
    '  -F, --CPU-freq            accepted for compatibility; no effect',
    '  -i, --ib-port=<port>      port of the device (default 1)',
    "  -m, --mtu=<mtu>           path MTU 256..4096 (default: the port's active MTU)",
    `  -n, --iters=<iters>       iterations, at least 5 (default ${DEF_ITERS}; write_bw ${DEF_ITERS_WB})`,
    '  -N, --noPeak              no peak bandwidth (always so above 20000 iterations)',
    `  -p, --port=<port>         TCP port of the exchange (default ${DEF_PORT})`,
    '  -q, --qp=<num>            queue pairs, bandwidth tests (default 1)',
    `  -Q, --cq-mod=<n>          one completion per n sends, bandwidth tests (default ${DEF_CQ_MOD})`,
    `  -r, --rx-depth=<dep>      receives kept posted, SEND tests (default ${DEF_RX_SEND})`,
    `  -s, --size=<size>         message size (default ${DEF_SIZE_BW}; latency ${DEF_SIZE_LAT})`,
    `  -t, --tx-depth=<dep>      sends in flight, bandwidth tests (default ${DEF_TX_BW})`,
    '  -x, --gid-index=<index>   GID index (default: none on InfiniBand, 0 on Ethernet)',
    `  -u, --qp-timeout=<n>      RC local ACK timeout, 4.096 µs × 2^n (default ${DEF_QP_TIME})`,
    '  -b, --bidirectional       both sides send, bandwidth tests',
    '  -D, --duration=<s>        run for s seconds instead of -n iterations, bandwidth tests',
    '      --run_infinitely      run until stopped, a row every -D seconds (5), bandwidth tests',
    '  -e, --events              sleep on completion events instead of polling',
    '  -I, --inline_size=<n>     post messages up to n bytes inline (not READ or atomics)',
    '  -l, --post_list=<n>       post n WRs at a time as one list, bandwidth tests',
    '      --use-srq             SEND tests: receive through a shared receive queue',
    '  -A, --atomic_type=<type>  FETCH_AND_ADD (default) or CMP_AND_SWAP, atomic tests',
    '  -o, --outs=<n>            outstanding READs / atomics (default: the device maximum, up to 16)',
    '  -z, -R                    rdma_cm: refused (the model has no RDMA CM)',
    '      --report_gbits        bandwidth in Gb/sec instead of MB/sec',
    '      --loopback            client and server in this process (two devices, or one device twice)',
    "      --peer-ib-dev=<dev>   with --loopback: the server side's device",
    '',
  ].join('\n');
}

// ---------------------------------------------------------------------------
// Report arithmetic (perftest's print_report_bw / print_report_lat)
// ---------------------------------------------------------------------------

export interface BwReport {
  /** Message size in bytes. */
  size: number;
  /** Messages counted (iterations × queue pairs). */
  iters: number;
  /** MB/sec (2^20 bytes) or Gb/sec (10^9 bits), as chosen by --report_gbits. */
  bw_peak: number;
  bw_avg: number;
  /** Millions of messages per second. */
  msgRate_avg: number;
}

export interface LatReport {
  size: number;
  iters: number;
  /** Microseconds. */
  t_min: number;
  t_max: number;
  t_typical: number;
  t_avg: number;
  t_stdev: number;
  t_99: number;
  t_99_9: number;
}

/**
 * The BW report from per-message timestamps: `tposted[k]` when message k was
 * posted, `tcompleted[k]` when its completion was seen (a CQE completes every
 * message up to the signaled one). Times in units of 1/ticksPerSec seconds.
 * Peak is the best rate over any window from a post to a CQE at a cq_mod
 * boundary (or the last message), as perftest computes it.
 */
export function computeBwReport(
  a: { size: number; cq_mod: number; noPeak: boolean; report_gbits: boolean },
  tposted: ArrayLike<number>,
  tcompleted: ArrayLike<number>,
  ticksPerSec: number,
): BwReport {
  const n = tposted.length;
  const r = bwAverageReport(a, n, tposted[0] as number, tcompleted[n - 1] as number, ticksPerSec);
  if (!a.noPeak) {
    const formatFactor = a.report_gbits ? 125000000 : 0x100000;
    let opt = Infinity;
    const q = a.cq_mod;
    for (let i = 0; i < n; i++) {
      const ti = tposted[i] as number;
      for (let j = Math.ceil((i + 1) / q) * q - 1; j < n; j += q) {
        const t = ((tcompleted[j] as number) - ti) / (j - i + 1);
        if (t < opt) opt = t;
      }
      if (n % q) {
        const t = ((tcompleted[n - 1] as number) - ti) / (n - i);
        if (t < opt) opt = t;
      }
    }
    r.bw_peak = opt > 0 && Number.isFinite(opt) ? (a.size * ticksPerSec) / (opt * formatFactor) : r.bw_avg;
  }
  return r;
}

/**
 * The report without a peak (-N, or above PEAK_ITERS_LIMIT): `n` messages
 * from the first post at `firstPosted` to the last completion at
 * `lastCompleted`, all perftest keeps then.
 */
export function bwAverageReport(
  a: { size: number; report_gbits: boolean },
  n: number,
  firstPosted: number,
  lastCompleted: number,
  ticksPerSec: number,
): BwReport {
  const formatFactor = a.report_gbits ? 125000000 : 0x100000;
  const sum = lastCompleted - firstPosted;
  const bw_avg = (a.size * n * ticksPerSec) / (sum * formatFactor);
  const msgRate_avg = (n * ticksPerSec) / (sum * 1000000);
  return { size: a.size, iters: n, bw_peak: 0, bw_avg, msgRate_avg };
}

/**
 * The latency report from `tposted[k]`, the time iteration k began: the
 * iters-1 differences are round trips (halved for SEND and WRITE, whose
 * iteration is a ping and a pong), sorted, the two largest dropped.
 */
export function computeLatReport(a: { size: number; verb: Verb }, tposted: ArrayLike<number>, ticksPerSec: number): LatReport {
  const iters = tposted.length;
  let measure_cnt = iters - 1;
  const delta = new Float64Array(measure_cnt);
  for (let i = 0; i < measure_cnt; i++) delta[i] = (tposted[i + 1] as number) - (tposted[i] as number);
  const rtt_factor = a.verb === 'READ' ? 1 : 2;
  const q = (ticksPerSec / 1e6) * rtt_factor; // ticks per reported microsecond
  delta.sort();
  measure_cnt -= LAT_MEASURE_TAIL;
  const median =
    (measure_cnt - 1) % 2
      ? ((delta[Math.floor(measure_cnt / 2)] as number) + (delta[Math.floor(measure_cnt / 2) - 1] as number)) / 2
      : (delta[Math.floor(measure_cnt / 2)] as number);
  let sum = 0;
  for (let i = 0; i < measure_cnt; i++) sum += (delta[i] as number) / q;
  const t_avg = sum / measure_cnt;
  let var_sum = 0;
  for (let i = 0; i < measure_cnt; i++) var_sum += (t_avg - (delta[i] as number) / q) ** 2;
  const iters_99 = Math.ceil(measure_cnt * 0.99);
  const iters_99_9 = Math.ceil(measure_cnt * 0.999);
  return {
    size: a.size,
    iters,
    t_min: (delta[0] as number) / q,
    t_max: (delta[measure_cnt] as number) / q,
    t_typical: median / q,
    t_avg,
    t_stdev: Math.sqrt(var_sum / measure_cnt),
    t_99: (delta[iters_99] as number) / q,
    t_99_9: (delta[iters_99_9] as number) / q,
  };
}

// ---------------------------------------------------------------------------
// Text (perftest's formats)
// ---------------------------------------------------------------------------

export const RESULT_LINE = '---------------------------------------------------------------------------------------\n';
const RESULT_FMT = ' #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]';
const RESULT_FMT_G = ' #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]';
const RESULT_FMT_LAT =
  ' #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ';
const REPORT_FMT = ' %-7lu    %-10lu       %-7.2lf            %-7.2lf\t\t   %-7.6lf';
const REPORT_FMT_EXT = ' %-7lu    %lu           %-7.6lf            %-7.6lf            %-7.6lf';
const REPORT_FMT_LAT = ' %-7lu %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f';

/** The column header line of a BW table. */
export function bwHeader(report_gbits: boolean): string {
  return `${report_gbits ? RESULT_FMT_G : RESULT_FMT}\n`;
}

/** One BW table row (with six decimals when a Gb/sec average is below 0.1, as perftest does). */
export function bwRow(r: BwReport, report_gbits: boolean): string {
  const inc_accuracy = r.bw_avg < 0.1 && report_gbits;
  return `${sprintf(inc_accuracy ? REPORT_FMT_EXT : REPORT_FMT, r.size, r.iters, r.bw_peak, r.bw_avg, r.msgRate_avg)}\n`;
}

export function latHeader(): string {
  return `${RESULT_FMT_LAT}\n`;
}

export function latRow(r: LatReport): string {
  return `${sprintf(REPORT_FMT_LAT, r.size, r.iters, r.t_min, r.t_max, r.t_typical, r.t_avg, r.t_stdev, r.t_99, r.t_99_9)}\n`;
}

const TESTS_STR: Record<Verb, string> = { SEND: 'Send', WRITE: 'RDMA_Write', READ: 'RDMA_Read', ATOMIC: 'Atomic' };

export function perf_transport_str(t: number): string {
  if (t === IBV_TRANSPORT_IB) return 'IB';
  if (t === IBV_TRANSPORT_IWARP) return 'IW';
  return 'Unknown';
}

export function perf_link_layer_str(ll: number): string {
  if (ll === IBV_LINK_LAYER_UNSPECIFIED || ll === IBV_LINK_LAYER_INFINIBAND) return 'IB';
  if (ll === IBV_LINK_LAYER_ETHERNET) return 'Ethernet';
  return 'Unknown';
}

/** What ctx_print_test_info prints, from the settled parameters. */
export interface TestInfo {
  verb: Verb;
  tst: TestType;
  role: 'client' | 'server';
  device: string;
  num_of_qps: number;
  transport_type: number;
  connection_type: ConnectionType;
  tx_depth: number;
  rx_depth: number;
  cq_mod: number;
  mtu_bytes: number;
  link_type: number;
  gid_index: number;
  inline_size: number;
  out_reads: number;
  exchange: string;
  duplex?: boolean;
  use_srq?: boolean;
  post_list?: number;
}

/** ctx_print_test_info as perftest 6.06 (Debian 12's 4.5-0.17) prints it. */
export function testInfoText(t: TestInfo): string {
  const onOff = (b: boolean | undefined): string => (b ? 'ON' : 'OFF');
  const postList = t.post_list ?? 1;
  let s = RESULT_LINE;
  s += `                    ${TESTS_STR[t.verb]} `;
  if (t.tst === 'BW') s += `${t.duplex ? 'Bidirectional ' : ''}${postList > 1 ? 'Post List ' : ''}BW `;
  else s += 'Latency ';
  s += 'Test\n';
  s += ` Dual-port       : OFF\t\tDevice         : ${t.device}\n`;
  s += ` Number of qps   : ${t.num_of_qps}\t\tTransport type : ${perf_transport_str(t.transport_type)}\n`;
  s += ` Connection type : ${t.connection_type}\t\tUsing SRQ      : ${onOff(t.use_srq)}\n`;
  // what perftest 6.06 printed on rxe: OFF for write_lat (it polls memory written by the peer), ON otherwise
  s += ` PCIe relax order: ${t.verb === 'WRITE' && t.tst === 'LAT' ? 'OFF' : 'ON'}\n`;
  s += ' ibv_wr* API     : OFF\n';
  if (t.role === 'client' || t.duplex) {
    s += ` TX depth        : ${t.tx_depth}\n`;
    if (postList > 1) s += ` Post List       : ${postList}\n`;
  }
  if (t.verb === 'SEND' && (t.role === 'server' || t.tst === 'LAT' || t.duplex)) s += ` RX depth        : ${t.rx_depth}\n`;
  if (t.tst === 'BW') s += ` CQ Moderation   : ${t.cq_mod}\n`;
  s += ` Mtu             : ${t.mtu_bytes}[B]\n`;
  s += ` Link type       : ${perf_link_layer_str(t.link_type)}\n`;
  if (t.gid_index !== -1) s += ` GID index       : ${t.gid_index}\n`;
  if (t.verb !== 'READ' && t.verb !== 'ATOMIC') s += ` Max inline data : ${t.inline_size}[B]\n`;
  else s += ` Outstand reads  : ${t.out_reads}\n`;
  s += ' rdma_cm QPs\t : OFF\n';
  s += ` Data ex. method : ${t.exchange}\n`;
  s += RESULT_LINE;
  return s;
}

/** ctx_print_pingpong_data: " local address: LID ... QPN ... PSN ..." and, with a GID index, the GID in decimal bytes. */
export function pingpongDataText(d: PerfDest, side: 'local' | 'remote', verb: Verb, gid_index: number): string {
  let s = sprintf(' %s address: LID %#04x QPN %#06x PSN %#06x', side, d.lid, d.qpn, d.psn);
  if (verb === 'READ' || verb === 'ATOMIC') s += sprintf(' OUT %#04x', d.out_reads);
  if (verb !== 'SEND') s += sprintf(' RKey %#08x VAddr %#016llx', d.rkey, d.vaddr);
  s += '\n';
  if (gid_index > -1) s += sprintf(` %s: ${'%02d:'.repeat(15)}%02d\n`, 'GID', ...d.gid.raw);
  return s;
}

export { KEY_MSG_SIZE_GID, type PerfDest } from './perf/perftest-comm.js';

/** The 108 bytes perftest writes on the socket for one QP (KEY_PRINT_FMT_GID). */
export function perfDestToMsg(d: PerfDest): Buffer {
  return destToMsg(d, true);
}

export function perfMsgToDest(msg: Uint8Array): PerfDest | null {
  return msgToDest(msg, true);
}

// ---------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------

/** Where time and waiting come from: wall clock and the event loop, or a simulator's. */
export interface PerfEnv {
  /** Now, in ticks (default: nanoseconds from performance.now). */
  now(): number;
  ticksPerSec: number;
  /** Waits a little when a completion queue is empty (once the spin is spent). */
  idle(): Promise<void>;
  /** Empty polls that wait only for a microtask before idle() is used (default: pollSpin(), RNIC_POLL_SPIN). */
  pollSpin?: number;
  /** Give up when nothing completes for this long (wall milliseconds; default 30000). */
  stallMs: number;
  /** --run_infinitely stops after this many rows (default: never). */
  infiniteRows?: number;
}

export function wallClockEnv(): PerfEnv {
  // performance.now(), not hrtime.bigint(): no BigInt per read (the loops read it per post and per poll).
  const base = performance.now();
  return { now: () => (performance.now() - base) * 1e6, ticksPerSec: 1e9, idle, stallMs: 30000 };
}

/** The test could not run (no device, a verb failed, a completion error, a stall): exit code 1. */
export class PerfError extends RnicError<'PERF_FAILED'> {
  constructor(message: string) {
    super('PERF_FAILED', message);
    this.name = 'PerfError';
  }
}

/** Shared by the two sides of a loopback run: one failing stops the other. */
interface Run {
  env: PerfEnv;
  failed: Error | null;
  /**
   * This thread's spin, shared by both sides of a loopback run: a side that
   * spun alone while the other waited for an event-loop turn would hold
   * that side back for the whole spin.
   */
  polls: PollWait;
}

function fail(run: Run, msg: string): never {
  const e = new PerfError(msg);
  if (!run.failed) run.failed = e;
  throw e;
}

/**
 * One wait for progress: throws if the other side failed or nothing moved
 * for stallMs. Spins (PollWait) before it takes event-loop turns; the clock
 * is read on a turn, not on every empty poll.
 */
class Waiter {
  private last = Date.now();
  private moved = false;
  private readonly polls: PollWait;
  constructor(
    private readonly run: Run,
    private readonly what: string,
  ) {
    this.polls = run.polls;
  }
  progressed(): void {
    this.moved = true;
    this.polls.progressed();
  }
  wait(): Promise<void> {
    if (this.run.failed) throw this.run.failed;
    if (this.polls.turnDue) this.checkStall();
    return this.polls.wait();
  }
  /** A whole event-loop turn (-e: the completion event races it), after the stall check. */
  turn(): Promise<void> {
    if (this.run.failed) throw this.run.failed;
    this.checkStall();
    return this.run.env.idle();
  }
  private checkStall(): void {
    const now = Date.now();
    if (this.moved) {
      this.moved = false;
      this.last = now;
    } else if (now - this.last > this.run.env.stallMs) fail(this.run, ` No progress for ${this.run.env.stallMs} ms while ${this.what}`);
  }
}

/** One end of the test: a device context and its queue pairs. */
class Side {
  context!: ibv_context;
  device_attr: ibv_device_attr = newDeviceAttr();
  portinfo: ibv_port_attr = newPortAttr();
  pd: ibv_pd | null = null;
  mr: ibv_mr | null = null;
  buf: Uint8Array | null = null;
  send_cq: ibv_cq | null = null;
  recv_cq: ibv_cq | null = null;
  qps: ibv_qp[] = [];
  srq: ibv_srq | null = null;
  channel: ibv_comp_channel | null = null;
  /** -e: the completion event this side waits for, if any. */
  eventWait: Promise<void> | null = null;
  ahs: Array<ibv_ah | null> = [];
  my_dest: PerfDest[] = [];
  rem_dest: PerfDest[] = [];
  /** Bytes of one region; each QP has a send region then a receive region. */
  region = 0;
  out_reads = 1;
  constructor(
    readonly role: 'client' | 'server',
    readonly device: ibv_device,
  ) {}

  get name(): string {
    return ibv_get_device_name(this.device);
  }
  sendOff(i: number): number {
    return 2 * i * this.region;
  }
  recvOff(i: number): number {
    return (2 * i + 1) * this.region;
  }
}

/** Everything runLoopback returns: the settled parameters, the rows, and the text that was printed. */
export interface PerfResults {
  test: PerfTestName;
  verb: Verb;
  tst: TestType;
  connection_type: ConnectionType;
  device: string;
  peer_device: string;
  mtu: number;
  link_layer: string;
  gid_index: number;
  num_of_qps: number;
  /** 'MB/sec' or 'Gb/sec'. */
  bw_unit: string;
  bw: BwReport[];
  lat: LatReport[];
  text: string;
}

function sizesOf(p: PerfParams, mtuBytes: number): number[] {
  if (!p.all) return [p.size];
  const sizes: number[] = [];
  for (let s = 2; s <= MAX_SIZE_ALL; s *= 2) {
    if (p.connection_type === 'UD' && s > mtuBytes) break;
    sizes.push(s);
  }
  return sizes;
}

function openSide(role: 'client' | 'server', dev: ibv_device, p: PerfParams): Side {
  const side = new Side(role, dev);
  try {
    side.context = ibv_open_device(dev);
  } catch (e) {
    throw new PerfError(` Couldn't get context for the device ${ibv_get_device_name(dev)} (${errText(e)})`);
  }
  const q = ibv_query_device(side.context, side.device_attr);
  if (q) {
    ibv_close_device(side.context);
    throw new PerfError(` Couldn't query device ${side.name} (${errnoName(q)})`);
  }
  const r = ibv_query_port(side.context, p.ib_port, side.portinfo);
  if (r) {
    ibv_close_device(side.context);
    throw new PerfError(` Unable to query port ${p.ib_port} attributes of ${side.name} (${errnoName(r)})`);
  }
  return side;
}

/** check_link / set_mtu: the GID index and the MTU for this run, and the size for UD. */
function checkLink(sides: Side[], p: PerfParams, io: Io): { mtu: number; gid_index: number; link_type: number } {
  const first = sides[0] as Side;
  const link_type = first.portinfo.link_layer;
  let gid_index = p.gid_index;
  if (link_type === IBV_LINK_LAYER_ETHERNET && gid_index === -1) gid_index = 0;
  let active = Math.min(...sides.map((s) => s.portinfo.active_mtu));
  if (!(active >= 1 && active <= 5)) active = 3;
  let mtu = active;
  if (p.mtu) {
    const want = pp_mtu_to_enum(p.mtu);
    if (want > active) {
      io.out(' Requested mtu is higher than active mtu \n');
      io.out(` Changing to active mtu - ${active}\n`);
    } else {
      mtu = want;
    }
  }
  const mtuBytes = mtu_enum_to_bytes(mtu);
  if (p.connection_type === 'UD' && p.size > mtuBytes && !p.all) {
    io.err(` Max msg size in UD is MTU ${mtuBytes}\n Changing to this MTU\n`);
    p.size = mtuBytes;
  }
  for (const s of sides) s.out_reads = p.verb === 'READ' ? Math.max(1, Math.min(s.device_attr.max_qp_rd_atom || 1, 16)) : 1;
  return { mtu, gid_index, link_type };
}

function qpType(c: ConnectionType): number {
  return c === 'RC' ? IBV_QPT_RC : c === 'UC' ? IBV_QPT_UC : IBV_QPT_UD;
}

/** ctx_init: buffer, PD, MR, CQs, QPs in INIT, receives posted where this side receives. */
function initResources(side: Side, p: PerfParams, maxSize: number): void {
  const n = p.num_of_qps;
  const ud = p.connection_type === 'UD';
  side.region = Math.ceil(Math.max(maxSize + (ud ? UD_ADDITION : 0), CYCLE_BUFFER) / 64) * 64;
  const ctx = side.context;
  try {
    side.buf = rnic_alloc_buf(ctx, 2 * n * side.region, CYCLE_BUFFER);
  } catch (e) {
    throw new PerfError(` Couldn't allocate work buf (${errText(e)})`);
  }
  side.buf.fill(0);
  try {
    side.pd = ibv_alloc_pd(ctx);
  } catch (e) {
    throw new PerfError(` Couldn't allocate PD (${errText(e)})`);
  }
  try {
    side.mr = ibv_reg_mr(side.pd, side.buf, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
  } catch (e) {
    throw new PerfError(` Couldn't allocate MR (${errText(e)})`);
  }
  const receives = p.verb === 'SEND' && (p.tst === 'LAT' || side.role === 'server' || p.duplex);
  try {
    if (p.use_event) side.channel = ibv_create_comp_channel(ctx);
    side.send_cq = ibv_create_cq(ctx, p.tx_depth * n, null, side.channel, 0);
    side.recv_cq = receives ? ibv_create_cq(ctx, p.rx_depth * n, null, side.channel, 0) : side.send_cq;
  } catch (e) {
    throw new PerfError(` Couldn't create CQ (${errText(e)})`);
  }
  if (receives && p.use_srq) {
    try {
      side.srq = ibv_create_srq(side.pd, { srq_context: null, attr: { max_wr: p.rx_depth, max_sge: 1, srq_limit: 0 } });
    } catch (e) {
      throw new PerfError(` Couldn't create SRQ (${errText(e)})`);
    }
    for (let k = 0; k < p.rx_depth; k++) {
      const rr = postRecv(side, k % n);
      if (rr) throw new PerfError(` Couldn't post receive ${k} of ${p.rx_depth} on the SRQ (${errnoName(rr)})`);
    }
  }
  for (let i = 0; i < n; i++) {
    let qp: ibv_qp;
    try {
      qp = ibv_create_qp(side.pd, {
        send_cq: side.send_cq,
        recv_cq: side.recv_cq,
        srq: side.srq,
        cap: {
          ...newQpCap(),
          max_send_wr: p.tx_depth,
          max_recv_wr: receives ? p.rx_depth : 1,
          max_send_sge: 1,
          max_recv_sge: 1,
          max_inline_data: p.inline_size,
        },
        qp_type: qpType(p.connection_type),
        sq_sig_all: 0,
      });
    } catch (e) {
      throw new PerfError(` Couldn't create QP (${errText(e)})`);
    }
    side.qps.push(qp);
    side.ahs.push(null);
    const attr = newQpAttr();
    attr.qp_state = IBV_QPS_INIT;
    attr.pkey_index = 0;
    attr.port_num = p.ib_port;
    let mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
    if (ud) {
      attr.qkey = DEF_QKEY;
      mask |= IBV_QP_QKEY;
    } else {
      attr.qp_access_flags =
        p.verb === 'READ'
          ? IBV_ACCESS_REMOTE_READ
          : p.verb === 'WRITE'
            ? IBV_ACCESS_REMOTE_WRITE
            : p.verb === 'ATOMIC'
              ? IBV_ACCESS_REMOTE_ATOMIC
              : IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
      mask |= IBV_QP_ACCESS_FLAGS;
    }
    const r = ibv_modify_qp(qp, attr, mask);
    if (r) throw new PerfError(` Failed to modify QP to INIT (${errnoName(r)})`);
    if (receives && !side.srq) {
      for (let k = 0; k < p.rx_depth; k++) {
        const rr = postRecv(side, i);
        if (rr) throw new PerfError(` Couldn't post receive ${k} of ${p.rx_depth} on QP ${i} (${errnoName(rr)})`);
      }
    }
  }
}

function postRecv(side: Side, i: number): number {
  const mr = side.mr as ibv_mr;
  const wr: ibv_recv_wr = {
    wr_id: BigInt(i),
    next: null,
    sg_list: [{ addr: mr.addr + BigInt(side.recvOff(i)), length: side.region, lkey: mr.lkey }],
    num_sge: 1,
  };
  return side.srq ? ibv_post_srq_recv(side.srq, wr, {}) : ibv_post_recv(side.qps[i] as ibv_qp, wr, {});
}

function makeDests(side: Side, p: PerfParams, gid_index: number): void {
  const gid = newGid();
  if (gid_index >= 0) {
    const r = ibv_query_gid(side.context, p.ib_port, gid_index, gid);
    if (r) throw new PerfError(` Couldn't read GID ${gid_index} of port ${p.ib_port} of ${side.name} (${errnoName(r)})`);
  }
  const mr = side.mr as ibv_mr;
  side.my_dest = side.qps.map((qp, i) => ({
    lid: side.portinfo.lid,
    out_reads: side.out_reads,
    qpn: qp.qp_num,
    psn: randomInt(0, 0x1000000),
    rkey: mr.rkey,
    vaddr: mr.addr + BigInt(side.recvOff(i)),
    gid: { raw: Uint8Array.from(gid.raw) },
    srqn: 0,
  }));
}

/** ctx_connect: RTR towards the remote QP, RTS where this side sends, an AH for UD. */
function connectSide(side: Side, p: PerfParams, mtu: number, gid_index: number): void {
  for (let i = 0; i < side.qps.length; i++) {
    const qp = side.qps[i] as ibv_qp;
    const dest = side.rem_dest[i] as PerfDest;
    const my = side.my_dest[i] as PerfDest;
    const attr = newQpAttr();
    attr.qp_state = IBV_QPS_RTR;
    attr.ah_attr.src_path_bits = 0;
    attr.ah_attr.port_num = p.ib_port;
    attr.ah_attr.dlid = dest.lid;
    if (gid_index === -1) {
      attr.ah_attr.is_global = 0;
      attr.ah_attr.sl = 0;
    } else {
      attr.ah_attr.is_global = 1;
      attr.ah_attr.grh.dgid = { raw: Uint8Array.from(dest.gid.raw) };
      attr.ah_attr.grh.sgid_index = gid_index;
      attr.ah_attr.grh.hop_limit = 0xff; // perftest's hop limit (IP TTL 255 on RoCE v2)
      attr.ah_attr.grh.traffic_class = 0;
      attr.ah_attr.sl = 0;
    }
    let mask = IBV_QP_STATE;
    if (p.connection_type !== 'UD') {
      attr.path_mtu = mtu;
      attr.dest_qp_num = dest.qpn;
      attr.rq_psn = dest.psn;
      mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
      if (p.connection_type === 'RC') {
        attr.max_dest_rd_atomic = my.out_reads;
        attr.min_rnr_timer = MIN_RNR_TIMER;
        mask |= IBV_QP_MIN_RNR_TIMER | IBV_QP_MAX_DEST_RD_ATOMIC;
      }
    }
    let r = ibv_modify_qp(qp, attr, mask);
    if (r) throw new PerfError(` Failed to modify QP ${qp.qp_num} to RTR (${errnoName(r)})`);

    const sends = p.tst === 'LAT' || side.role === 'client' || p.duplex;
    if (!sends) continue;
    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn = my.psn;
    mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
    if (p.connection_type === 'RC') {
      attr.timeout = p.qp_timeout;
      attr.retry_cnt = 7;
      attr.rnr_retry = 7;
      attr.max_rd_atomic = dest.out_reads;
      mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
    }
    r = ibv_modify_qp(qp, attr, mask);
    if (r) throw new PerfError(` Failed to modify QP ${qp.qp_num} to RTS (${errnoName(r)})`);
    if (p.connection_type === 'UD') {
      try {
        side.ahs[i] = ibv_create_ah(side.pd as ibv_pd, attr.ah_attr);
      } catch (e) {
        throw new PerfError(` Failed to create AH for UD (${errText(e)})`);
      }
    }
  }
}

function destroySide(side: Side): void {
  const quiet = (f: () => unknown): void => {
    try {
      f();
    } catch {
      // Tearing down after a failure: keep going.
    }
  };
  for (const ah of side.ahs) if (ah) quiet(() => ibv_destroy_ah(ah));
  for (const qp of side.qps) quiet(() => ibv_destroy_qp(qp));
  if (side.srq) quiet(() => ibv_destroy_srq(side.srq as ibv_srq));
  if (side.recv_cq && side.recv_cq !== side.send_cq) quiet(() => ibv_destroy_cq(side.recv_cq as ibv_cq));
  if (side.send_cq) quiet(() => ibv_destroy_cq(side.send_cq as ibv_cq));
  if (side.channel) quiet(() => ibv_destroy_comp_channel(side.channel as ibv_comp_channel));
  if (side.mr) quiet(() => ibv_dereg_mr(side.mr as ibv_mr));
  if (side.pd) quiet(() => ibv_dealloc_pd(side.pd as ibv_pd));
  if (side.buf) quiet(() => rnic_free_buf(side.context, side.buf as Uint8Array));
  quiet(() => ibv_close_device(side.context));
}

/** A send WR for QP i of this side, for the verb of the test. */
function sendWr(side: Side, p: PerfParams, i: number, size: number): ibv_send_wr {
  const mr = side.mr as ibv_mr;
  const rem = side.rem_dest[i] as PerfDest;
  const wr: ibv_send_wr = {
    wr_id: 0n,
    next: null,
    sg_list: [{ addr: mr.addr + BigInt(side.sendOff(i)), length: size, lkey: mr.lkey }],
    num_sge: 1,
    opcode:
      p.verb === 'WRITE'
        ? IBV_WR_RDMA_WRITE
        : p.verb === 'READ'
          ? IBV_WR_RDMA_READ
          : p.verb === 'ATOMIC'
            ? p.atomicType === 'CMP_AND_SWAP'
              ? IBV_WR_ATOMIC_CMP_AND_SWP
              : IBV_WR_ATOMIC_FETCH_AND_ADD
            : IBV_WR_SEND,
    send_flags: 0,
  };
  if (p.verb === 'ATOMIC') wr.wr = { atomic: { remote_addr: rem.vaddr, rkey: rem.rkey, compare_add: 1n, swap: 0n } };
  else if (p.verb !== 'SEND') wr.wr = { rdma: { remote_addr: rem.vaddr, rkey: rem.rkey } };
  else if (p.connection_type === 'UD') wr.wr = { ud: { ah: side.ahs[i] ?? null, remote_qpn: rem.qpn, remote_qkey: DEF_QKEY } };
  return wr;
}

function checkWc(run: Run, wc: ibv_wc, where: string): void {
  if (wc.status !== IBV_WC_SUCCESS) {
    fail(
      run,
      ` Completion with error at ${where}:\n Failed status ${wc.status} (${ibv_wc_status_str(wc.status)}): wr_id 0x${wc.wr_id.toString(16)} syndrom 0x${wc.vendor_err.toString(16)}`,
    );
  }
}

/** IBV_SEND_INLINE where -I allows it for this size (never READ or ATOMIC). */
function inlineFlag(p: PerfParams, size: number): number {
  return p.inline_size > 0 && size <= p.inline_size && (p.verb === 'SEND' || p.verb === 'WRITE') ? IBV_SEND_INLINE : 0;
}

/**
 * Polls `cq` for up to wc.length completions; with -e, an empty CQ is armed
 * and its completion event awaited (and acknowledged) rather than spun on.
 */
async function pollCq(side: Side, cq: ibv_cq, wc: ibv_wc[], run: Run, waiter: Waiter): Promise<number> {
  const ne = ibv_poll_cq(cq, wc.length, wc);
  if (ne < 0) fail(run, ` poll CQ failed ${ne}`);
  if (ne > 0 || !side.channel) return ne;
  if (ibv_req_notify_cq(cq, 0)) fail(run, " Couldn't request CQ notification");
  const again = ibv_poll_cq(cq, wc.length, wc); // a completion that came before the arming
  if (again !== 0) return again;
  // One wait on the channel at a time: an event it takes is acknowledged at once; closing the channel ends it.
  side.eventWait ??= ibv_get_cq_event(side.channel).then(
    (ev) => {
      ibv_ack_cq_events(ev.cq, 1);
      side.eventWait = null;
    },
    () => {
      side.eventWait = null;
    },
  );
  await Promise.race([side.eventWait, waiter.turn()]);
  return 0;
}

/** wr_id of the k-th WR on QP i: i in the high 32 bits, k in the low (one BigInt per post, not four). */
function bwWrId(i: number, k: number): bigint {
  return BigInt(i * 0x100000000 + (k >>> 0));
}

/**
 * run_iter_bw: the requester posts iters messages per QP (or, with -D, for
 * the duration), tx_depth in flight, one CQE per cq_mod, -l WRs per post.
 * With --run_infinitely it prints a row every `duration` seconds until
 * `env.infiniteRows` rows (for ever by default).
 */
async function runBwClient(side: Side, p: PerfParams, size: number, run: Run, io?: Io): Promise<BwReport> {
  const n = side.qps.length;
  const timed = p.duration > 0;
  const total = timed ? Infinity : p.iters * n;
  // Per-message times only where the peak needs them; otherwise, as in perftest, the first post and the last completion.
  const keepTimes = !timed && !p.noPeak;
  const tposted = new Float64Array(keepTimes ? total : 0);
  const tcompleted = new Float64Array(keepTimes ? total : 0);
  let totscnt = 0;
  let firstPosted = 0;
  let lastCompleted = 0;
  // A WR's wr_id names the signaled WR that completes it (its group of cq_mod): one BigInt per CQE, not per post.
  const groupEnd = new Array<number>(n).fill(-1);
  const groupId = new Array<bigint>(n).fill(0n);
  const badWr: { wr: ibv_send_wr | null } = { wr: null }; // one for every post, as perftest's &bad_wr
  const scnt = new Array<number>(n).fill(0);
  const ccnt = new Array<number>(n).fill(0);
  const inl = inlineFlag(p, size);
  const list = Math.max(1, p.post_list);
  const wrs = side.qps.map((_, i) => Array.from({ length: list }, () => sendWr(side, p, i, size)));
  for (const chain of wrs) for (let k = 0; k + 1 < chain.length; k++) (chain[k] as ibv_send_wr).next = chain[k + 1] as ibv_send_wr;
  const wc = newWcArray(16);
  let totccnt = 0;
  const waiter = new Waiter(run, `waiting for ${p.test} completions`);
  const now = run.env.now;
  const sec = run.env.ticksPerSec;
  const start = now();
  const margin = Math.min(DEF_MARGIN_S, p.duration / 4) * sec;
  const end = timed && !p.run_infinitely ? start + p.duration * sec : Infinity;
  let measuredFrom = -1;
  let measuredCount = 0;
  let rowStart = start;
  let rowCount = 0;
  let rows = 0;
  const maxRows = run.env.infiniteRows ?? Infinity;
  let stopping = false;
  const perQpLimit = timed ? Infinity : p.iters;
  while (totccnt < total) {
    const t0 = now();
    if (timed && !stopping && (t0 >= end || rows >= maxRows)) stopping = true;
    if (!stopping) {
      for (let i = 0; i < n; i++) {
        const chain = wrs[i] as ibv_send_wr[];
        while ((scnt[i] as number) + list <= perQpLimit && (scnt[i] as number) + list - (ccnt[i] as number) <= p.tx_depth) {
          const k0 = scnt[i] as number;
          for (let m = 0; m < list; m++) {
            const k = k0 + m;
            const wr = chain[m] as ibv_send_wr;
            if (k > (groupEnd[i] as number)) {
              const last = k - (k % p.cq_mod) + p.cq_mod - 1;
              groupEnd[i] = timed ? last : Math.min(last, p.iters - 1);
              groupId[i] = bwWrId(i, groupEnd[i] as number);
            }
            wr.send_flags = (k === groupEnd[i] ? IBV_SEND_SIGNALED : 0) | inl;
            wr.wr_id = groupId[i] as bigint;
          }
          if (totscnt === 0) firstPosted = t0;
          if (keepTimes) tposted.fill(t0, totscnt, totscnt + list);
          totscnt += list;
          const r = ibv_post_send(side.qps[i] as ibv_qp, chain[0] as ibv_send_wr, badWr);
          if (r) fail(run, ` Couldn't post send: qp ${i} scnt=${k0} (${errnoName(r)})`);
          scnt[i] = k0 + list;
        }
      }
    }
    if (stopping && side.qps.every((_, i) => Math.floor((scnt[i] as number) / p.cq_mod) * p.cq_mod <= (ccnt[i] as number))) break;
    const ne = await pollCq(side, side.send_cq as ibv_cq, wc, run, waiter);
    if (ne === 0) {
      if (!side.channel) await waiter.wait();
      continue;
    }
    const t = now();
    for (let k = 0; k < ne; k++) {
      const w = wc[k] as ibv_wc;
      checkWc(run, w, side.role);
      const id = Number(w.wr_id);
      const i = Math.floor(id / 0x100000000);
      const upTo = (id % 0x100000000) + 1;
      const done = upTo - (ccnt[i] as number);
      ccnt[i] = upTo;
      if (keepTimes) tcompleted.fill(t, totccnt, totccnt + done);
      totccnt += done;
      rowCount += done;
      lastCompleted = t;
    }
    if (timed && !p.run_infinitely) {
      // -D: count what completes between the margins, as perftest's SAMPLE state does
      if (measuredFrom < 0 && t - start >= margin) {
        measuredFrom = t;
        measuredCount = totccnt;
      }
    }
    if (p.run_infinitely && t - rowStart >= p.duration * sec) {
      const secs = (t - rowStart) / sec;
      const report: BwReport = {
        size,
        iters: rowCount,
        bw_peak: 0,
        bw_avg: (size * rowCount) / secs / (p.report_gbits ? 125000000 : 0x100000),
        msgRate_avg: rowCount / secs / 1e6,
      };
      io?.out(bwRow(report, p.report_gbits));
      rows++;
      rowStart = t;
      rowCount = 0;
    }
    waiter.progressed();
  }
  if (timed) {
    const t = now();
    const from = measuredFrom < 0 ? start : measuredFrom;
    const count = measuredFrom < 0 ? totccnt : totccnt - measuredCount;
    const secs = Math.max(t - from, 1) / sec;
    return { size, iters: count, bw_peak: 0, bw_avg: (size * count) / secs / (p.report_gbits ? 125000000 : 0x100000), msgRate_avg: count / secs / 1e6 };
  }
  if (!keepTimes) return bwAverageReport({ size, report_gbits: p.report_gbits }, totscnt, firstPosted, lastCompleted, run.env.ticksPerSec);
  return computeBwReport({ size, cq_mod: p.cq_mod, noPeak: p.noPeak, report_gbits: p.report_gbits }, tposted, tcompleted, run.env.ticksPerSec);
}

/**
 * perform_warm_up (WRITE, READ, ATOMIC): one queue's worth of messages per
 * QP, the last one signaled, before the measured run.
 */
async function warmUp(side: Side, p: PerfParams, size: number, run: Run): Promise<void> {
  const count = Math.min(p.tx_depth, p.iters);
  const wc = newWcArray(16);
  const inl = inlineFlag(p, size);
  for (let i = 0; i < side.qps.length; i++) {
    const wr = sendWr(side, p, i, size);
    for (let k = 0; k < count; k++) {
      wr.send_flags = (k === count - 1 ? IBV_SEND_SIGNALED : 0) | inl;
      wr.wr_id = bwWrId(i, k);
      const r = ibv_post_send(side.qps[i] as ibv_qp, wr, {});
      if (r) fail(run, ` Couldn't post send during warm up: qp ${i} (${errnoName(r)})`);
    }
  }
  const waiter = new Waiter(run, 'warming up');
  for (let done = 0; done < side.qps.length; ) {
    const ne = await pollCq(side, side.send_cq as ibv_cq, wc, run, waiter);
    for (let k = 0; k < ne; k++) checkWc(run, wc[k] as ibv_wc, `${side.role} (warm up)`);
    done += ne;
    if (ne) waiter.progressed();
    else if (!side.channel) await waiter.wait();
  }
}

/**
 * run_iter_bw_server (SEND): counts iters receives per QP (with -D, for the
 * duration), reposting each one, and reports what it received. On UC and UD
 * lost messages are not retried: once `peerDone()` says the sender finished,
 * the loop stops after a quiet spell.
 */
async function runBwServer(side: Side, p: PerfParams, size: number, run: Run, peerDone: () => boolean): Promise<BwReport> {
  const n = side.qps.length;
  const timed = p.duration > 0;
  const total = timed ? Infinity : p.iters * n;
  const wc = newWcArray(16);
  const times: number[] = [];
  let rcnt = 0;
  let quietSince = -1;
  const waiter = new Waiter(run, `waiting for ${p.test} receives`);
  const now = run.env.now;
  const start = now();
  const end = timed ? start + p.duration * run.env.ticksPerSec : Infinity;
  while (rcnt < total) {
    const ne = await pollCq(side, side.recv_cq as ibv_cq, wc, run, waiter);
    if (ne === 0) {
      if ((p.connection_type !== 'RC' || timed) && rcnt > 0 && peerDone()) {
        if (quietSince < 0) quietSince = Date.now();
        else if (Date.now() - quietSince > 200) break;
      }
      if (timed && now() > end && peerDone()) break;
      if (!side.channel) await waiter.wait();
      continue;
    }
    quietSince = -1;
    const t = now();
    for (let k = 0; k < ne; k++) {
      const w = wc[k] as ibv_wc;
      checkWc(run, w, side.role);
      rcnt++;
      times.push(t);
      const r = postRecv(side, side.srq ? 0 : side.qps.findIndex((q) => q.qp_num === w.qp_num));
      if (r) fail(run, ` Couldn't post receive (${errnoName(r)})`);
    }
    waiter.progressed();
  }
  if (times.length < 2) return { size, iters: rcnt, bw_peak: 0, bw_avg: 0, msgRate_avg: 0 };
  const secs = ((times[times.length - 1] as number) - (times[0] as number)) / run.env.ticksPerSec || 1 / run.env.ticksPerSec;
  const unit = p.report_gbits ? 125000000 : 0x100000;
  const bw_avg = (size * rcnt) / secs / unit;
  return { size, iters: rcnt, bw_peak: p.noPeak ? 0 : bw_avg, bw_avg, msgRate_avg: rcnt / secs / 1e6 };
}

/**
 * One completion from `cq` if there is one now (checked), without an
 * await: the latency loops poll with it and wait in their own frame, so a
 * completion costs no promise of a helper (fewer scavenges, a lower p99).
 * With -e it declines and pollOne waits for the event.
 */
function pollOneNow(side: Side, cq: ibv_cq, wc: ibv_wc[], run: Run, waiter: Waiter, where: string): boolean {
  if (side.channel) return false;
  const ne = ibv_poll_cq(cq, 1, wc);
  if (ne < 0) fail(run, ` poll CQ failed ${ne}`);
  if (ne === 0) return false;
  checkWc(run, wc[0] as ibv_wc, where);
  waiter.progressed();
  return true;
}

/** Waits for one completion on `cq`; returns it. */
async function pollOne(side: Side, cq: ibv_cq, wc: ibv_wc[], run: Run, waiter: Waiter, where: string): Promise<ibv_wc> {
  const one = wc.length === 1 ? wc : wc.slice(0, 1);
  for (;;) {
    if (!side.channel) {
      if (pollOneNow(side, cq, one, run, waiter, where)) return one[0] as ibv_wc;
      await waiter.wait();
      continue;
    }
    const ne = await pollCq(side, cq, one, run, waiter);
    if (ne >= 1) {
      const w = one[0] as ibv_wc;
      checkWc(run, w, where);
      waiter.progressed();
      return w;
    }
  }
}

/**
 * run_iter_lat_write: ping-pong of RDMA WRITEs. Each side writes the
 * iteration number in the last byte of its message and spins on the last
 * byte of its own receive region for the other side's write. The server
 * (the side that starts, in perftest's write_lat) does not wait before its
 * first write.
 */
async function runLatWrite(side: Side, p: PerfParams, size: number, run: Run): Promise<number[]> {
  const starts = side.role === 'server'; // write_lat: the server writes first (send_lat: the client sends first)
  const tposted: number[] = [];
  const buf = side.buf as Uint8Array;
  const poll_at = side.recvOff(0) + size - 1;
  const post_at = side.sendOff(0) + size - 1;
  const wr = sendWr(side, p, 0, size);
  wr.send_flags = IBV_SEND_SIGNALED | inlineFlag(p, size);
  const wc = newWcArray(1);
  const waiter = new Waiter(run, 'waiting for the write_lat ping-pong');
  let scnt = 0;
  let rcnt = 0;
  while (scnt < p.iters || rcnt < p.iters) {
    if (rcnt < p.iters && !(scnt < 1 && starts)) {
      rcnt++;
      while (buf[poll_at] !== (rcnt & 0xff)) await waiter.wait();
      waiter.progressed();
    }
    if (scnt < p.iters) {
      tposted.push(run.env.now());
      buf[post_at] = ++scnt & 0xff;
      wr.wr_id = BigInt(scnt);
      const r = ibv_post_send(side.qps[0] as ibv_qp, wr, {});
      if (r) fail(run, ` Couldn't post send: scnt=${scnt} (${errnoName(r)})`);
      if (side.channel) await pollOne(side, side.send_cq as ibv_cq, wc, run, waiter, side.role);
      else while (!pollOneNow(side, side.send_cq as ibv_cq, wc, run, waiter, side.role)) await waiter.wait();
    }
  }
  return tposted;
}

/** run_iter_lat_send: ping-pong of SENDs, each side waiting for a receive before answering. */
async function runLatSend(side: Side, p: PerfParams, size: number, run: Run): Promise<number[]> {
  const starts = side.role === 'client';
  const tposted: number[] = [];
  const wr = sendWr(side, p, 0, size);
  wr.send_flags = IBV_SEND_SIGNALED | inlineFlag(p, size);
  const swc = newWcArray(1);
  const rwc = newWcArray(1);
  const waiter = new Waiter(run, 'waiting for the send_lat ping-pong');
  let scnt = 0;
  let rcnt = 0;
  while (scnt < p.iters || rcnt < p.iters) {
    if (rcnt < p.iters && !(scnt < 1 && starts)) {
      if (side.channel) await pollOne(side, side.recv_cq as ibv_cq, rwc, run, waiter, side.role);
      else while (!pollOneNow(side, side.recv_cq as ibv_cq, rwc, run, waiter, side.role)) await waiter.wait();
      rcnt++;
      const r = postRecv(side, 0);
      if (r) fail(run, ` Couldn't post receive (${errnoName(r)})`);
    }
    if (scnt < p.iters) {
      tposted.push(run.env.now());
      wr.wr_id = BigInt(++scnt);
      const r = ibv_post_send(side.qps[0] as ibv_qp, wr, {});
      if (r) fail(run, ` Couldn't post send: scnt=${scnt} (${errnoName(r)})`);
      if (side.channel) await pollOne(side, side.send_cq as ibv_cq, swc, run, waiter, side.role);
      else while (!pollOneNow(side, side.send_cq as ibv_cq, swc, run, waiter, side.role)) await waiter.wait();
    }
  }
  return tposted;
}

/**
 * Ping-pongs a loopback latency test runs before its measured ones, not
 * reported, whatever -n is (a whole number of 256s, so write_lat's
 * iteration byte ends at 0 as a fresh buffer's). The first few thousand
 * round trips of a process run while V8 is still compiling the path
 * (~60 µs each at first, ~20-50 after): measured, perftest's default
 * 1,000 read 9-16 µs typical and a p99 of 56-1000 µs after 768 warm-up
 * ping-pongs, 4.4-4.6 µs and ~8 µs after 8,192. Only in loopback, where
 * both sides are this program: a peer over TCP (perftest itself) expects
 * exactly -n.
 */
const LAT_WARM_UP = 8192;

async function latWarmUp(client: Side, server: Side, p: PerfParams, size: number, run: Run): Promise<void> {
  const q = { ...p, iters: LAT_WARM_UP };
  await both(run, runLat(client, q, size, run), p.verb === 'READ' || p.verb === 'ATOMIC' ? Promise.resolve([]) : runLat(server, q, size, run));
}

/** One loopback BW measurement: the client's run, and for SEND the server's receives beside it. */
async function bwBoth(client: Side, server: Side, p: PerfParams, size: number, run: Run): Promise<BwReport> {
  let clientDone = false;
  const [report] = await both<BwReport, BwReport | null>(
    run,
    runBwClient(client, p, size, run).finally(() => {
      clientDone = true;
    }),
    p.verb === 'SEND' ? runBwServer(server, p, size, run, () => clientDone) : Promise.resolve(null),
  );
  return report;
}

/**
 * Loopback only: before each size's measurement a BW test runs, unreported,
 * the same test for about BW_WARM_PACKETS packets (the first size) or an
 * eighth of that (each later one, whose code is mostly compiled already).
 * Until V8 has compiled the data path a message costs ~14 µs instead of
 * ~1 µs, so perftest's default 5,000 8 B WRITEs measured cold would report
 * ~0.07 M/s for a path that runs at ~1 M/s. Over TCP the peer (perhaps
 * perftest itself) expects exactly -n, so there is none.
 */
const BW_WARM_PACKETS = 1 << 16;

async function bwJitWarmUp(client: Side, server: Side, p: PerfParams, size: number, mtu: number, first: boolean, run: Run): Promise<void> {
  const packets = Math.max(1, Math.ceil(size / mtu));
  const budget = first ? BW_WARM_PACKETS : BW_WARM_PACKETS / 8;
  const iters = Math.max(p.tx_depth, Math.ceil(budget / packets / p.num_of_qps));
  await bwBoth(client, server, { ...p, iters }, size, run);
  for (const s of [client, server]) (s.buf as Uint8Array).fill(0);
}

/** run_iter_lat (READ, ATOMIC): the client reads, one at a time; the server is passive. */
async function runLatRead(side: Side, p: PerfParams, size: number, run: Run): Promise<number[]> {
  const tposted: number[] = [];
  const wr = sendWr(side, p, 0, size);
  wr.send_flags = IBV_SEND_SIGNALED;
  const wc = newWcArray(1);
  const waiter = new Waiter(run, `waiting for ${p.test} completions`);
  for (let scnt = 0; scnt < p.iters; scnt++) {
    tposted.push(run.env.now());
    wr.wr_id = BigInt(scnt);
    const r = ibv_post_send(side.qps[0] as ibv_qp, wr, {});
    if (r) fail(run, ` Couldn't post ${p.verb === 'READ' ? 'read' : 'atomic'}: scnt=${scnt} (${errnoName(r)})`);
    await pollOne(side, side.send_cq as ibv_cq, wc, run, waiter, 'client');
  }
  return tposted;
}

async function runLat(side: Side, p: PerfParams, size: number, run: Run): Promise<number[]> {
  if (p.verb === 'WRITE') return runLatWrite(side, p, size, run);
  if (p.verb === 'SEND') return runLatSend(side, p, size, run);
  return runLatRead(side, p, size, run);
}

/**
 * Runs the two sides of a loopback test together. The first failure is
 * recorded in `run`, which makes the other side's next wait throw, and both
 * have ended before this returns or throws (so nothing is torn down under a
 * running loop and no rejection goes unobserved).
 */
async function both<A, B>(run: Run, a: Promise<A>, b: Promise<B>): Promise<[A, B]> {
  const note = (e: unknown): never => {
    if (!run.failed) run.failed = e instanceof Error ? e : new Error(String(e));
    throw e;
  };
  const [ra, rb] = await Promise.allSettled([a.catch(note), b.catch(note)]);
  if (ra.status === 'rejected') throw ra.reason;
  if (rb.status === 'rejected') throw rb.reason;
  return [ra.value, rb.value];
}

function pickDevice(list: ibv_device[], name: string | null, fallback: ibv_device | undefined): ibv_device {
  if (name) {
    const d = list.find((x) => ibv_get_device_name(x) === name);
    if (!d) throw new PerfError(` IB device ${name} not found`);
    return d;
  }
  if (!fallback) throw new PerfError('no RDMA devices found');
  return fallback;
}

export interface LoopbackOptions extends Partial<Omit<PerfParams, 'test' | 'verb' | 'tst'>> {
  test: PerfTestName;
  /**
   * Run the unreported JIT warm-up first (default true, as `rnic perf
   * --loopback` does; latWarmUp, bwJitWarmUp). False for a short showcase
   * whose capture should hold the measured run alone (`rnic demo`).
   */
  jitWarmUp?: boolean;
  /** Where the text goes (default: nowhere; it is returned in `text`). */
  io?: Io;
  env?: Partial<PerfEnv>;
}

/**
 * Runs one test with both sides in this process: the client on `ib_devname`
 * (default: the first device), the server on `peer_devname` (default: the
 * second device, or the first again). Returns the rows and the printed text;
 * throws a PerfError (code 'PERF_FAILED') if the test cannot run.
 */
export async function runLoopback(opts: LoopbackOptions): Promise<PerfResults> {
  const p: PerfParams = { ...defaultParams(opts.test) };
  for (const [k, v] of Object.entries(opts)) {
    if (v !== undefined && k in p && k !== 'test') (p as unknown as Record<string, unknown>)[k] = v;
  }
  p.loopback = true;
  p.servername = null;
  const jitWarmUp = opts.jitWarmUp ?? true;
  const wrong = combinationError(p);
  if (wrong) throw new PerfError(` ${wrong}`);
  forceDependencies(p, opts.cq_mod !== undefined);

  let text = '';
  const sink = opts.io;
  const io: Io = {
    out: (t) => {
      text += t;
      sink?.out(t);
    },
    err: (t) => {
      sink?.err(t);
    },
  };
  const env: PerfEnv = { ...wallClockEnv(), ...opts.env };
  const run: Run = { env, failed: null, polls: new PollWait(env.pollSpin ?? pollSpin(), env.idle) };

  const list = ibv_get_device_list();
  const clientDev = pickDevice(list, p.ib_devname, list[0]);
  const serverDev = pickDevice(list, p.peer_devname, list[1] ?? list[0]);

  const sides: Side[] = [];
  try {
    const client = openSide('client', clientDev, p);
    sides.push(client);
    const server = openSide('server', serverDev, p);
    sides.push(server);
    const link = checkLink(sides, p, io);
    const mtuBytes = mtu_enum_to_bytes(link.mtu);
    const sizes = sizesOf(p, mtuBytes);
    const maxSize = Math.max(...sizes);

    io.out(
      testInfoText({
        verb: p.verb,
        tst: p.tst,
        role: 'client',
        device: client.name,
        num_of_qps: p.num_of_qps,
        transport_type: clientDev.transport_type,
        connection_type: p.connection_type,
        tx_depth: p.tx_depth,
        rx_depth: p.rx_depth,
        cq_mod: p.cq_mod,
        mtu_bytes: mtuBytes,
        link_type: link.link_type,
        gid_index: link.gid_index,
        inline_size: 0,
        out_reads: client.out_reads,
        exchange: `loopback (server on ${server.name})`,
      }),
    );

    for (const s of sides) {
      initResources(s, p, maxSize);
      makeDests(s, p, link.gid_index);
    }
    client.rem_dest = server.my_dest;
    server.rem_dest = client.my_dest;
    for (const d of client.my_dest) io.out(pingpongDataText(d, 'local', p.verb, link.gid_index));
    for (const d of server.my_dest) io.out(pingpongDataText(d, 'remote', p.verb, link.gid_index));
    connectSide(server, p, link.mtu, link.gid_index);
    connectSide(client, p, link.mtu, link.gid_index);

    io.out(RESULT_LINE);
    io.out(p.tst === 'BW' ? bwHeader(p.report_gbits) : latHeader());

    const results: PerfResults = {
      test: p.test,
      verb: p.verb,
      tst: p.tst,
      connection_type: p.connection_type,
      device: client.name,
      peer_device: server.name,
      mtu: mtuBytes,
      link_layer: perf_link_layer_str(link.link_type),
      gid_index: link.gid_index,
      num_of_qps: p.num_of_qps,
      bw_unit: p.report_gbits ? 'Gb/sec' : 'MB/sec',
      bw: [],
      lat: [],
      text: '',
    };

    for (const size of sizes) {
      for (const s of sides) (s.buf as Uint8Array).fill(0);
      if (p.tst === 'BW') {
        if (jitWarmUp) await bwJitWarmUp(client, server, p, size, mtuBytes, size === sizes[0], run);
        if (p.verb !== 'SEND') await warmUp(client, p, size, run);
        const report = await bwBoth(client, server, p, size, run);
        results.bw.push(report);
        io.out(bwRow(report, p.report_gbits));
      } else {
        if (jitWarmUp && size === sizes[0]) {
          await latWarmUp(client, server, p, size, run);
          for (const s of sides) (s.buf as Uint8Array).fill(0);
        }
        const [ct] = await both(
          run,
          runLat(client, p, size, run),
          p.verb === 'READ' || p.verb === 'ATOMIC' ? Promise.resolve([]) : runLat(server, p, size, run),
        );
        const report = computeLatReport({ size, verb: p.verb }, ct, env.ticksPerSec);
        results.lat.push(report);
        io.out(latRow(report));
      }
    }
    io.out(RESULT_LINE);
    results.text = text;
    return results;
  } catch (e) {
    if (!run.failed && e instanceof Error) run.failed = e;
    throw e;
  } finally {
    for (const s of sides.reverse()) destroySide(s);
  }
}

// ---------------------------------------------------------------------------
// Server / client over TCP
// ---------------------------------------------------------------------------

export interface MainOptions {
  io?: Io;
  argv0?: string;
  env?: Partial<PerfEnv>;
  /** Server only: called with the TCP port once a client can connect (useful with -p 0). */
  onListening?: (port: number) => void;
}

/**
 * get_best_gid_index: without -x perftest picks, on RoCE, an IPv4-mapped GID
 * over another, and of two alike the later (RoCE v2 follows v1 in the table).
 */
function bestGidIndex(side: Side, p: PerfParams): number {
  const v4 = (g: Uint8Array): boolean => g.subarray(0, 10).every((b) => b === 0) && g[10] === 0xff && g[11] === 0xff;
  const gid = newGid();
  let best = 0;
  let bestV4 = false;
  for (let i = 0; i < side.portinfo.gid_tbl_len; i++) {
    if (ibv_query_gid(side.context, p.ib_port, i, gid)) break;
    if (gid.raw.every((b) => b === 0)) continue;
    const isV4 = v4(gid.raw);
    if (i === 0 || isV4 || !bestV4) {
      best = i;
      bestV4 = isV4;
    }
  }
  return best;
}

/** Counts the handshakes that carry this side's addresses, as each perftest program does. */
async function addressPhase(comm: PerftestComm, side: Side, p: PerfParams, mtu: number, gid_index: number, io: Io): Promise<void> {
  const me0 = side.my_dest[0] as PerfDest;
  // The latency tests but send_lat swap QP 0's address once before the per-QP loop.
  if (p.tst === 'LAT' && p.verb !== 'SEND') side.rem_dest[0] = await comm.handshake(me0);
  for (let i = 0; i < side.my_dest.length; i++) side.rem_dest[i] = await comm.handshake(side.my_dest[i] as PerfDest);
  connectSide(side, p, mtu, gid_index);
  if (p.verb === 'SEND') await comm.handshake(me0); // send_* tests: the barrier after RTR comes before the print
  for (const d of side.my_dest) io.out(pingpongDataText(d, 'local', p.verb, gid_index));
  for (let i = 0; i < side.my_dest.length; i++) {
    side.rem_dest[i] = await comm.handshake(side.my_dest[i] as PerfDest);
    io.out(pingpongDataText(side.rem_dest[i] as PerfDest, 'remote', p.verb, gid_index));
  }
  if (p.verb !== 'SEND') await comm.handshake(me0); // "An additional handshake is required after moving qp to RTR"
}

const NO_REPORT: BwReport = { size: 0, iters: 0, bw_peak: 0, bw_avg: 0, msgRate_avg: 0 };

/** print_full_bw_report with the peer's report: the two directions summed. */
function sumReports(a: BwReport, b: BwReportWire): BwReport {
  return { size: a.size, iters: a.iters, bw_peak: a.bw_peak + b.bw_peak, bw_avg: a.bw_avg + b.bw_avg, msgRate_avg: a.msgRate_avg + b.msgRate_avg };
}

/** write_bw.c, read_bw.c, atomic_bw.c after the addresses. */
async function flowBwRdma(comm: PerftestComm, side: Side, p: PerfParams, sizes: number[], run: Run, io: Io): Promise<void> {
  const me0 = side.my_dest[0] as PerfDest;
  io.out(RESULT_LINE + bwHeader(p.report_gbits));
  if (side.role === 'server' && !p.duplex) {
    await comm.handshake(me0); // the client has finished
    const theirs = await comm.xchgBwReports(NO_REPORT);
    io.out(bwRow(theirs, p.report_gbits));
    await comm.close(me0);
    io.out(RESULT_LINE);
    return;
  }
  let report = NO_REPORT;
  for (const size of sizes) {
    if (!p.run_infinitely) await warmUp(side, p, size, run);
    if (p.duplex) await comm.handshake(me0);
    report = await runBwClient(side, p, size, run, io);
    if (p.duplex) {
      if (p.all) await comm.handshake(me0); // perftest's RUN_ALL syncs after each size too; a single size goes straight to the reports
      io.out(bwRow(sumReports(report, await comm.xchgBwReports(report)), p.report_gbits));
    } else if (!p.run_infinitely) {
      io.out(bwRow(report, p.report_gbits));
    }
  }
  io.out(RESULT_LINE);
  if (!p.duplex) {
    await comm.handshake(me0);
    await comm.xchgBwReports(report);
  }
  await comm.close(me0);
}

/** send_bw.c after the addresses: the server receives and prints what it received. */
async function flowBwSend(comm: PerftestComm, side: Side, p: PerfParams, sizes: number[], run: Run, io: Io): Promise<void> {
  const me0 = side.my_dest[0] as PerfDest;
  io.out(RESULT_LINE + bwHeader(p.report_gbits));
  for (const size of sizes) {
    await comm.handshake(me0); // the receives are posted
    let report: BwReport;
    if (p.duplex) {
      let sent = false;
      const [mine] = await Promise.all([
        runBwClient(side, p, size, run).finally(() => {
          sent = true;
        }),
        runBwServer(side, p, size, run, () => sent),
      ]);
      report = sumReports(mine, await comm.xchgBwReports(mine));
    } else if (side.role === 'client') {
      report = await runBwClient(side, p, size, run, io);
    } else {
      // UC/UD: a lost message is never retried; a quiet spell after the first receive ends the count
      report = await runBwServer(side, p, size, run, () => true);
    }
    if (!p.run_infinitely) io.out(bwRow(report, p.report_gbits));
    if (p.all) await comm.handshake(me0);
  }
  io.out(RESULT_LINE);
  await comm.close(me0);
}

/** write_lat.c, send_lat.c, read_lat.c, atomic_lat.c after the addresses. */
async function flowLat(comm: PerftestComm, side: Side, p: PerfParams, sizes: number[], run: Run, io: Io): Promise<void> {
  const me0 = side.my_dest[0] as PerfDest;
  const passive = (p.verb === 'READ' || p.verb === 'ATOMIC') && side.role === 'server';
  if (passive) {
    await comm.close(me0); // only the client posts; its close is this side's end
    io.out(RESULT_LINE);
    return;
  }
  io.out(RESULT_LINE + latHeader());
  for (const size of sizes) {
    if (p.verb === 'SEND') await comm.handshake(me0); // the receives are posted
    const t = await runLat(side, p, size, run);
    io.out(latRow(computeLatReport({ size, verb: p.verb }, t, run.env.ticksPerSec)));
  }
  io.out(RESULT_LINE);
  // perftest 6.06's write_lat ends without ctx_close_connection: each side just exits
  if (p.verb === 'WRITE') comm.end();
  else await comm.close(me0);
}

async function runTcp(p: PerfParams, io: Io, env: PerfEnv, onListening?: (port: number) => void): Promise<void> {
  const role = p.servername ? 'client' : 'server';
  const run: Run = { env, failed: null, polls: new PollWait(env.pollSpin ?? pollSpin(), env.idle) };
  const list = ibv_get_device_list();
  const dev = pickDevice(list, p.ib_devname, list[0]);
  const side = openSide(role, dev, p);
  let sock: MsgSocket | null = null;
  try {
    const link = checkLink([side], p, io);
    if (link.link_type === IBV_LINK_LAYER_ETHERNET && p.gid_index === -1) link.gid_index = bestGidIndex(side, p);
    if (role === 'server') {
      io.out('\n************************************\n');
      io.out('* Waiting for client to connect... *\n');
      io.out('************************************\n');
      try {
        sock = await tcpAcceptOne(p.port, onListening);
      } catch (e) {
        throw new PerfError(` Couldn't listen to port ${p.port} (${errText(e)})`);
      }
    } else {
      try {
        sock = await tcpConnect(p.servername as string, p.port);
      } catch (e) {
        throw new PerfError(`Couldn't connect to ${p.servername as string}:${p.port} (${errText(e)})`);
      }
    }
    const comm = new PerftestComm(sock, role === 'client', link.gid_index !== -1);
    await comm.exchangeVersions();
    await comm.checkSysData(CYCLE_BUFFER, CACHE_LINE);
    const mtu = await comm.checkMtu(link.mtu);
    const mtuBytes = mtu_enum_to_bytes(mtu);
    if (p.connection_type === 'UD' && p.size > mtuBytes && !p.all) {
      io.err(` Max msg size in UD is MTU ${mtuBytes}\n Changing to this MTU\n`);
      p.size = mtuBytes;
    }
    const sizes = sizesOf(p, mtuBytes);
    initResources(side, p, Math.max(...sizes));
    makeDests(side, p, link.gid_index);
    io.out(
      testInfoText({
        verb: p.verb,
        tst: p.tst,
        role,
        device: side.name,
        num_of_qps: p.num_of_qps,
        transport_type: dev.transport_type,
        connection_type: p.connection_type,
        tx_depth: p.tx_depth,
        rx_depth: p.rx_depth,
        cq_mod: p.cq_mod,
        mtu_bytes: mtuBytes,
        link_type: link.link_type,
        gid_index: link.gid_index,
        inline_size: p.inline_size,
        out_reads: side.out_reads,
        exchange: 'Ethernet',
        duplex: p.duplex,
        use_srq: p.use_srq,
        post_list: p.post_list,
      }),
    );
    await addressPhase(comm, side, p, mtu, link.gid_index, io);
    if (p.tst === 'LAT') await flowLat(comm, side, p, sizes, run, io);
    else if (p.verb === 'SEND') await flowBwSend(comm, side, p, sizes, run, io);
    else await flowBwRdma(comm, side, p, sizes, run, io);
    sock = null;
  } finally {
    sock?.close();
    destroySide(side);
  }
}

/** `rnic perf <test> [options] [host]`: returns the exit code (0, 1 failure, 2 usage mistake). */
export async function main(argv: string[], mo: MainOptions = {}): Promise<number> {
  const io = mo.io ?? processIo;
  const argv0 = mo.argv0 ?? 'perf';
  let p: PerfParams;
  try {
    p = parsePerfArgs(argv);
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === 'EXAMPLE_HELP') {
      io.out(usage(argv0));
      return 0;
    }
    if (code !== 'EXAMPLE_USAGE') throw e;
    // perftest's style: the mistake on one line; the usage follows for reference.
    io.err(`${argv0}: ${(e as Error).message}\n${usage(argv0)}`);
    return 2;
  }
  const env: PerfEnv = { ...wallClockEnv(), ...mo.env };
  if (ibv_get_device_list().length === 0) {
    io.err('no RDMA devices found\n');
    return 1;
  }
  try {
    if (p.loopback) {
      await runLoopback({ ...p, io, env });
    } else {
      await runTcp(p, io, env, mo.onListening);
    }
    return 0;
  } catch (e) {
    if ((e as { code?: string }).code === 'PERF_FAILED') {
      io.err(`${(e as Error).message}\n`);
      return 1;
    }
    io.err(` ${errText(e)}\n`);
    return 1;
  }
}
