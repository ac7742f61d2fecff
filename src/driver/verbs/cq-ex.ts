/**
 * The extended CQ (libibverbs `struct ibv_cq_ex`): ibv_create_cq_ex, the
 * iterator ibv_start_poll / ibv_next_poll / ibv_end_poll, and the
 * ibv_wc_read_* accessors of the current completion.
 *
 * In C, ibv_cq_ex begins with the fields of ibv_cq and ibv_cq_ex_to_cq is a
 * cast; here the ibv_cq_ex is its own object that holds the provider's CQ
 * (`ibv_cq_ex_to_cq` returns it), so every classic verb (ibv_poll_cq,
 * ibv_req_notify_cq, ibv_destroy_cq, QP creation) takes that CQ unchanged.
 *
 * Rules from libibverbs / rxe: ibv_start_poll returns ENOENT on an empty CQ
 * (and then ibv_end_poll must not be called), ibv_next_poll ENOENT when no
 * more completions are ready; `status` and `wr_id` are public fields valid
 * after a successful start/next; ibv_wc_read_<field> reads the current
 * completion and is only defined for fields requested in wc_flags. In C an
 * unrequested reader is a NULL function pointer; here it throws a
 * VerbsError (EINVAL) naming the missing flag, as does a reader called
 * outside a poll.
 */
import {
  errno,
  IBV_CQ_INIT_ATTR_MASK_RESERVED,
  IBV_WC_EX_WITH_BYTE_LEN,
  IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
  IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,
  IBV_WC_EX_WITH_CVLAN,
  IBV_WC_EX_WITH_TM_INFO,
  IBV_WC_EX_WITH_DLID_PATH_BITS,
  IBV_WC_EX_WITH_FLOW_TAG,
  IBV_WC_EX_WITH_IMM,
  IBV_WC_EX_WITH_QP_NUM,
  IBV_WC_EX_WITH_SL,
  IBV_WC_EX_WITH_SLID,
  IBV_WC_EX_WITH_SRC_QP,
} from '../../device/abi/constants.js';
import { VerbsError } from './errno-error.js';
import { newWc } from './structs.js';
import type { ibv_comp_channel, ibv_context, ibv_cq, ibv_cq_init_attr_ex, ibv_poll_cq_attr, ibv_wc_ex } from './types.js';
import { isObj, objOps as objectOps, ops as contextOps } from './dispatch.js';

/** `struct ibv_cq_ex`: the public fields, and the provider CQ it extends. */
export class ibv_cq_ex {
  /** Status of the current completion (valid after start_poll / next_poll returned 0). */
  status = 0;
  /** wr_id of the current completion. */
  wr_id = 0n;
  readonly comp_mask = 0;
  /** Between a successful ibv_start_poll and ibv_end_poll. */
  polling = false;
  /** The completion being read (one reused object: the iterator allocates nothing). */
  readonly cur: ibv_wc_ex = { ...newWc(), completion_ts: 0n };
  readonly one: ibv_wc_ex[] = [this.cur];
  constructor(
    /** The provider's CQ (ibv_cq_ex_to_cq). */
    readonly cq: ibv_cq,
    readonly wc_flags: number,
  ) {}
  get context(): ibv_context {
    return this.cq.context;
  }
  get channel(): ibv_comp_channel | null {
    return this.cq.channel;
  }
  get cq_context(): unknown {
    return this.cq.cq_context;
  }
  get handle(): number {
    return this.cq.handle;
  }
  get cqe(): number {
    return this.cq.cqe;
  }
}

/**
 * ibv_create_cq_ex. comp_mask bits libibverbs does not know are EINVAL
 * (verbs.h checks them before calling the provider); the provider refuses
 * wc_flags and creation flags it cannot honour with EOPNOTSUPP.
 */
export function ibv_create_cq_ex(context: ibv_context, cq_attr: ibv_cq_init_attr_ex): ibv_cq_ex {
  const o = contextOps(context, 'ibv_create_cq_ex');
  if (!isObj(cq_attr)) throw new VerbsError(errno.EINVAL, 'ibv_create_cq_ex: no attributes');
  const mask = cq_attr.comp_mask ?? 0;
  if (typeof mask !== 'number' || mask >>> 0 !== mask || mask & ~(IBV_CQ_INIT_ATTR_MASK_RESERVED - 1)) {
    throw new VerbsError(errno.EINVAL, `ibv_create_cq_ex: unknown comp_mask bits in ${String(mask)}`);
  }
  const flags = cq_attr.wc_flags;
  if (typeof flags !== 'number' || flags >>> 0 !== flags) throw new VerbsError(errno.EINVAL, `ibv_create_cq_ex: bad wc_flags ${String(flags)}`);
  if (cq_attr.channel !== null && cq_attr.channel !== undefined && !objectOps(cq_attr.channel))
    throw new VerbsError(errno.EINVAL, 'ibv_create_cq_ex: channel is not an ibv_comp_channel');
  return new ibv_cq_ex(o.create_cq_ex(context, cq_attr), flags);
}

/** The ibv_cq of an extended CQ, for the classic verbs. */
export function ibv_cq_ex_to_cq(cq: ibv_cq_ex): ibv_cq {
  if (!(cq instanceof ibv_cq_ex)) throw new VerbsError(errno.EINVAL, 'ibv_cq_ex_to_cq: not an ibv_cq_ex from ibv_create_cq_ex');
  return cq.cq;
}

function pollNext(cq: ibv_cq_ex, verb: string): number {
  const o = objectOps(cq.cq);
  if (!o) return errno.EINVAL;
  const n = o.poll_cq_ex(cq.cq, 1, cq.one);
  if (n < 0) return -n;
  if (n === 0) return errno.ENOENT;
  if (verb === 'ibv_start_poll') cq.polling = true;
  cq.status = cq.cur.status;
  cq.wr_id = cq.cur.wr_id;
  return 0;
}

/** 0 and the first completion made current, ENOENT if the CQ is empty, or an errno. */
export function ibv_start_poll(cq: ibv_cq_ex, attr: ibv_poll_cq_attr): number {
  if (!(cq instanceof ibv_cq_ex)) return errno.EINVAL;
  if (!isObj(attr) || attr.comp_mask !== 0) return errno.EINVAL;
  if (cq.polling) return errno.EINVAL; // C: the CQ lock is already held (a deadlock)
  return pollNext(cq, 'ibv_start_poll');
}

/** 0 and the next completion made current, or ENOENT. */
export function ibv_next_poll(cq: ibv_cq_ex): number {
  if (!(cq instanceof ibv_cq_ex) || !cq.polling) return errno.EINVAL;
  return pollNext(cq, 'ibv_next_poll');
}

/** Ends the poll (the consumer index was already published by each step). */
export function ibv_end_poll(cq: ibv_cq_ex): void {
  if (!(cq instanceof ibv_cq_ex)) throw new VerbsError(errno.EINVAL, 'ibv_end_poll: not an ibv_cq_ex');
  if (!cq.polling) throw new VerbsError(errno.EINVAL, 'ibv_end_poll: no poll in progress (ibv_start_poll did not return 0)');
  cq.polling = false;
}

const FLAG_NAMES: Readonly<Record<number, string>> = {
  [IBV_WC_EX_WITH_BYTE_LEN]: 'IBV_WC_EX_WITH_BYTE_LEN',
  [IBV_WC_EX_WITH_IMM]: 'IBV_WC_EX_WITH_IMM',
  [IBV_WC_EX_WITH_QP_NUM]: 'IBV_WC_EX_WITH_QP_NUM',
  [IBV_WC_EX_WITH_SRC_QP]: 'IBV_WC_EX_WITH_SRC_QP',
  [IBV_WC_EX_WITH_SLID]: 'IBV_WC_EX_WITH_SLID',
  [IBV_WC_EX_WITH_SL]: 'IBV_WC_EX_WITH_SL',
  [IBV_WC_EX_WITH_DLID_PATH_BITS]: 'IBV_WC_EX_WITH_DLID_PATH_BITS',
  [IBV_WC_EX_WITH_COMPLETION_TIMESTAMP]: 'IBV_WC_EX_WITH_COMPLETION_TIMESTAMP',
  [IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK]: 'IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK',
  [IBV_WC_EX_WITH_CVLAN]: 'IBV_WC_EX_WITH_CVLAN',
  [IBV_WC_EX_WITH_TM_INFO]: 'IBV_WC_EX_WITH_TM_INFO',
  [IBV_WC_EX_WITH_FLOW_TAG]: 'IBV_WC_EX_WITH_FLOW_TAG',
};

/** The current completion, after checking that `flag` (0: always there) was requested. */
function current(cq: ibv_cq_ex, verb: string, flag: number): ibv_wc_ex {
  if (!(cq instanceof ibv_cq_ex)) throw new VerbsError(errno.EINVAL, `${verb}: not an ibv_cq_ex`);
  if (!cq.polling) throw new VerbsError(errno.EINVAL, `${verb}: no current completion (call ibv_start_poll first)`);
  if (flag !== 0 && !(cq.wc_flags & flag)) throw new VerbsError(errno.EINVAL, `${verb}: the CQ was created without ${FLAG_NAMES[flag]}`);
  return cq.cur;
}

export function ibv_wc_read_opcode(cq: ibv_cq_ex): number {
  return current(cq, 'ibv_wc_read_opcode', 0).opcode;
}
export function ibv_wc_read_vendor_err(cq: ibv_cq_ex): number {
  return current(cq, 'ibv_wc_read_vendor_err', 0).vendor_err;
}
export function ibv_wc_read_wc_flags(cq: ibv_cq_ex): number {
  return current(cq, 'ibv_wc_read_wc_flags', 0).wc_flags;
}
export function ibv_wc_read_byte_len(cq: ibv_cq_ex): number {
  return current(cq, 'ibv_wc_read_byte_len', IBV_WC_EX_WITH_BYTE_LEN).byte_len;
}
export function ibv_wc_read_imm_data(cq: ibv_cq_ex): number {
  return current(cq, 'ibv_wc_read_imm_data', IBV_WC_EX_WITH_IMM).imm_data;
}
/** libibverbs reads the invalidated rkey through the IMM reader's slot: it needs IBV_WC_EX_WITH_IMM too. */
export function ibv_wc_read_invalidated_rkey(cq: ibv_cq_ex): number {
  return current(cq, 'ibv_wc_read_invalidated_rkey', IBV_WC_EX_WITH_IMM).invalidated_rkey;
}
export function ibv_wc_read_qp_num(cq: ibv_cq_ex): number {
  return current(cq, 'ibv_wc_read_qp_num', IBV_WC_EX_WITH_QP_NUM).qp_num;
}
export function ibv_wc_read_src_qp(cq: ibv_cq_ex): number {
  return current(cq, 'ibv_wc_read_src_qp', IBV_WC_EX_WITH_SRC_QP).src_qp;
}
export function ibv_wc_read_slid(cq: ibv_cq_ex): number {
  return current(cq, 'ibv_wc_read_slid', IBV_WC_EX_WITH_SLID).slid;
}
export function ibv_wc_read_sl(cq: ibv_cq_ex): number {
  return current(cq, 'ibv_wc_read_sl', IBV_WC_EX_WITH_SL).sl;
}
export function ibv_wc_read_dlid_path_bits(cq: ibv_cq_ex): number {
  return current(cq, 'ibv_wc_read_dlid_path_bits', IBV_WC_EX_WITH_DLID_PATH_BITS).dlid_path_bits;
}
/** Raw device clock ticks (ibv_device_attr_ex.hca_core_clock kHz) when the device wrote the CQE. */
export function ibv_wc_read_completion_ts(cq: ibv_cq_ex): bigint {
  return current(cq, 'ibv_wc_read_completion_ts', IBV_WC_EX_WITH_COMPLETION_TIMESTAMP).completion_ts;
}
/* The readers below need wc_flags no model CQ accepts (EOPNOTSUPP at create); they exist so a program links. */
export function ibv_wc_read_completion_wallclock_ns(cq: ibv_cq_ex): bigint {
  current(cq, 'ibv_wc_read_completion_wallclock_ns', IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK);
  return 0n;
}
export function ibv_wc_read_cvlan(cq: ibv_cq_ex): number {
  current(cq, 'ibv_wc_read_cvlan', IBV_WC_EX_WITH_CVLAN);
  return 0;
}
/** Tag matching is not modelled (tm_caps zero): the reader exists so a program links. */
export function ibv_wc_read_tm_info(cq: ibv_cq_ex, tm_info: { tag: bigint; priv: number }): void {
  current(cq, 'ibv_wc_read_tm_info', IBV_WC_EX_WITH_TM_INFO);
  tm_info.tag = 0n;
  tm_info.priv = 0;
}
export function ibv_wc_read_flow_tag(cq: ibv_cq_ex): number {
  current(cq, 'ibv_wc_read_flow_tag', IBV_WC_EX_WITH_FLOW_TAG);
  return 0;
}
