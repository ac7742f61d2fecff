/**
 * The extended QP and the new post API (libibverbs `struct ibv_qp_ex`):
 * ibv_create_qp_ex, ibv_qp_to_qp_ex, and the ibv_wr_* builders.
 *
 * Semantics are rdma-core's (rxe / mlx5): ibv_wr_start opens a batch;
 * each ibv_wr_<opcode> starts a work request with the qp_ex's `wr_id` and
 * `wr_flags` as they are at that call; ibv_wr_set_* fill in its data
 * (gather list, inline bytes) or UD / XRC addressing; ibv_wr_complete posts
 * the whole batch and rings the doorbell once, or, if any request was bad,
 * posts nothing and returns the errno of the first bad one; ibv_wr_abort
 * posts nothing. Errors of the requests themselves are reported only at
 * ibv_wr_complete, as in C; using the API out of sequence (a builder
 * outside a batch, a second ibv_wr_start, a setter before any builder),
 * which is undefined in C, throws a VerbsError (EINVAL).
 *
 * Here the batch is a list of ibv_send_wr objects that ibv_wr_complete
 * hands to the provider's post_send_all (the model writes the WQEs and
 * publishes the producer counter only if all were accepted). A builder of
 * an opcode not in the QP's send_ops_flags is a bad request (EINVAL at
 * ibv_wr_complete): in C its function pointer is not set up.
 */
import {
  errno,
  IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
  IBV_QP_EX_WITH_ATOMIC_WRITE,
  IBV_QP_EX_WITH_BIND_MW,
  IBV_QP_EX_WITH_FLUSH,
  IBV_QP_EX_WITH_LOCAL_INV,
  IBV_QP_EX_WITH_RDMA_READ,
  IBV_QP_EX_WITH_RDMA_WRITE,
  IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
  IBV_QP_EX_WITH_SEND,
  IBV_QP_EX_WITH_SEND_WITH_IMM,
  IBV_QP_EX_WITH_SEND_WITH_INV,
  IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
  IBV_SEND_INLINE,
  IBV_WR_ATOMIC_CMP_AND_SWP,
  IBV_WR_ATOMIC_FETCH_AND_ADD,
  IBV_WR_ATOMIC_WRITE,
  IBV_WR_BIND_MW,
  IBV_WR_FLUSH,
  IBV_WR_LOCAL_INV,
  IBV_WR_RDMA_READ,
  IBV_WR_RDMA_WRITE,
  IBV_WR_RDMA_WRITE_WITH_IMM,
  IBV_WR_SEND,
  IBV_WR_SEND_WITH_IMM,
  IBV_WR_SEND_WITH_INV,
  IBV_WR_TSO,
} from '../../device/abi/constants.js';
import { isObj, objOps, ops } from './dispatch.js';
import { VerbsError } from './errno-error.js';
import type { ibv_ah, ibv_context, ibv_data_buf, ibv_mw, ibv_mw_bind_info, ibv_qp, ibv_qp_init_attr_ex, ibv_send_wr, ibv_sge } from './types.js';

/** The IBV_QP_EX_WITH_* bit that enables each IBV_WR_* builder. */
const OP_FLAG: Readonly<Record<number, number>> = {
  [IBV_WR_RDMA_WRITE]: IBV_QP_EX_WITH_RDMA_WRITE,
  [IBV_WR_RDMA_WRITE_WITH_IMM]: IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
  [IBV_WR_SEND]: IBV_QP_EX_WITH_SEND,
  [IBV_WR_SEND_WITH_IMM]: IBV_QP_EX_WITH_SEND_WITH_IMM,
  [IBV_WR_RDMA_READ]: IBV_QP_EX_WITH_RDMA_READ,
  [IBV_WR_ATOMIC_CMP_AND_SWP]: IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
  [IBV_WR_ATOMIC_FETCH_AND_ADD]: IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
  [IBV_WR_LOCAL_INV]: IBV_QP_EX_WITH_LOCAL_INV,
  [IBV_WR_BIND_MW]: IBV_QP_EX_WITH_BIND_MW,
  [IBV_WR_SEND_WITH_INV]: IBV_QP_EX_WITH_SEND_WITH_INV,
  [IBV_WR_FLUSH]: IBV_QP_EX_WITH_FLUSH,
  [IBV_WR_ATOMIC_WRITE]: IBV_QP_EX_WITH_ATOMIC_WRITE,
};

/** `struct ibv_qp_ex`: the public fields, and the QP it extends (`qp_base`). */
export class ibv_qp_ex {
  /** wr_id of the next builder call. */
  wr_id = 0n;
  /** IBV_SEND_* flags of the next builder call. */
  wr_flags = 0;
  readonly comp_mask = 0;
  /** The batch of an open ibv_wr_start, or null. */
  batch: ibv_send_wr[] | null = null;
  /** First errno of the batch found before complete (a builder not enabled). */
  err = 0;
  constructor(
    readonly qp_base: ibv_qp,
    readonly send_ops_flags: number,
  ) {}
}

const extended = new WeakMap<ibv_qp, ibv_qp_ex>();

/**
 * ibv_create_qp_ex: returns the ibv_qp (as C does); with
 * IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, ibv_qp_to_qp_ex gives its ibv_qp_ex.
 */
export function ibv_create_qp_ex(context: ibv_context, qp_init_attr_ex: ibv_qp_init_attr_ex): ibv_qp {
  const o = ops(context, 'ibv_create_qp_ex');
  if (!isObj(qp_init_attr_ex)) throw new VerbsError(errno.EINVAL, 'ibv_create_qp_ex: no attributes');
  const qp = o.create_qp_ex(context, qp_init_attr_ex);
  if (qp_init_attr_ex.comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) extended.set(qp, new ibv_qp_ex(qp, qp_init_attr_ex.send_ops_flags ?? 0));
  return qp;
}

/** The ibv_qp_ex of a QP created by ibv_create_qp_ex with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS. */
export function ibv_qp_to_qp_ex(qp: ibv_qp): ibv_qp_ex {
  const x = isObj(qp) ? extended.get(qp) : undefined;
  if (!x) throw new VerbsError(errno.EINVAL, 'ibv_qp_to_qp_ex: the QP was not created by ibv_create_qp_ex with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS');
  return x;
}

function open(qp: ibv_qp_ex, verb: string): ibv_send_wr[] {
  if (!(qp instanceof ibv_qp_ex)) throw new VerbsError(errno.EINVAL, `${verb}: not an ibv_qp_ex from ibv_qp_to_qp_ex`);
  if (!qp.batch) throw new VerbsError(errno.EINVAL, `${verb}: no batch open (call ibv_wr_start first)`);
  return qp.batch;
}

/** The request the setters fill: the last one built. */
function last(qp: ibv_qp_ex, verb: string): ibv_send_wr {
  const b = open(qp, verb);
  const wr = b[b.length - 1];
  if (!wr) throw new VerbsError(errno.EINVAL, `${verb}: no work request yet (call an ibv_wr_<opcode> first)`);
  return wr;
}

function build(qp: ibv_qp_ex, verb: string, opcode: number, fill?: (wr: ibv_send_wr) => void): void {
  const b = open(qp, verb);
  const wr: ibv_send_wr = { wr_id: qp.wr_id, next: null, sg_list: null, num_sge: 0, opcode, send_flags: qp.wr_flags };
  fill?.(wr);
  if (!(qp.send_ops_flags & OP_FLAG[opcode]!) && qp.err === 0) qp.err = errno.EINVAL;
  const prev = b[b.length - 1];
  if (prev) prev.next = wr;
  b.push(wr);
}

export function ibv_wr_start(qp: ibv_qp_ex): void {
  if (!(qp instanceof ibv_qp_ex)) throw new VerbsError(errno.EINVAL, 'ibv_wr_start: not an ibv_qp_ex from ibv_qp_to_qp_ex');
  if (qp.batch) throw new VerbsError(errno.EINVAL, 'ibv_wr_start: a batch is already open (ibv_wr_complete or ibv_wr_abort it first)');
  qp.batch = [];
  qp.err = 0;
}

/** Posts the batch (0), or nothing and the errno of the first bad request. */
export function ibv_wr_complete(qp: ibv_qp_ex): number {
  const b = open(qp, 'ibv_wr_complete');
  qp.batch = null;
  if (qp.err !== 0) return qp.err;
  if (b.length === 0) return 0;
  const o = objOps(qp.qp_base);
  if (!o) return errno.EINVAL;
  return o.post_send_all(qp.qp_base, b[0]!);
}

/** Drops the batch: nothing is posted. */
export function ibv_wr_abort(qp: ibv_qp_ex): void {
  open(qp, 'ibv_wr_abort');
  qp.batch = null;
  qp.err = 0;
}

// ---- builders ------------------------------------------------------------

const rdma = (rkey: number, remote_addr: bigint) => (wr: ibv_send_wr) => {
  wr.wr = { rdma: { rkey, remote_addr } };
};

export function ibv_wr_send(qp: ibv_qp_ex): void {
  build(qp, 'ibv_wr_send', IBV_WR_SEND);
}
export function ibv_wr_send_imm(qp: ibv_qp_ex, imm_data: number): void {
  build(qp, 'ibv_wr_send_imm', IBV_WR_SEND_WITH_IMM, (wr) => (wr.imm_data = imm_data));
}
export function ibv_wr_send_inv(qp: ibv_qp_ex, invalidate_rkey: number): void {
  build(qp, 'ibv_wr_send_inv', IBV_WR_SEND_WITH_INV, (wr) => (wr.invalidate_rkey = invalidate_rkey));
}
export function ibv_wr_rdma_write(qp: ibv_qp_ex, rkey: number, remote_addr: bigint): void {
  build(qp, 'ibv_wr_rdma_write', IBV_WR_RDMA_WRITE, rdma(rkey, remote_addr));
}
export function ibv_wr_rdma_write_imm(qp: ibv_qp_ex, rkey: number, remote_addr: bigint, imm_data: number): void {
  build(qp, 'ibv_wr_rdma_write_imm', IBV_WR_RDMA_WRITE_WITH_IMM, (wr) => {
    rdma(rkey, remote_addr)(wr);
    wr.imm_data = imm_data;
  });
}
export function ibv_wr_rdma_read(qp: ibv_qp_ex, rkey: number, remote_addr: bigint): void {
  build(qp, 'ibv_wr_rdma_read', IBV_WR_RDMA_READ, rdma(rkey, remote_addr));
}
/** The local 8-byte buffer (where the original value lands) is given with ibv_wr_set_sge. */
export function ibv_wr_atomic_cmp_swp(qp: ibv_qp_ex, rkey: number, remote_addr: bigint, compare: bigint, swap: bigint): void {
  build(qp, 'ibv_wr_atomic_cmp_swp', IBV_WR_ATOMIC_CMP_AND_SWP, (wr) => (wr.wr = { atomic: { rkey, remote_addr, compare_add: compare, swap } }));
}
export function ibv_wr_atomic_fetch_add(qp: ibv_qp_ex, rkey: number, remote_addr: bigint, add: bigint): void {
  build(qp, 'ibv_wr_atomic_fetch_add', IBV_WR_ATOMIC_FETCH_AND_ADD, (wr) => (wr.wr = { atomic: { rkey, remote_addr, compare_add: add, swap: 0n } }));
}
export function ibv_wr_bind_mw(qp: ibv_qp_ex, mw: ibv_mw, rkey: number, bind_info: ibv_mw_bind_info): void {
  build(qp, 'ibv_wr_bind_mw', IBV_WR_BIND_MW, (wr) => (wr.bind_mw = { mw, rkey, bind_info }));
}
export function ibv_wr_local_inv(qp: ibv_qp_ex, invalidate_rkey: number): void {
  build(qp, 'ibv_wr_local_inv', IBV_WR_LOCAL_INV, (wr) => (wr.invalidate_rkey = invalidate_rkey));
}
/** `atomic_wire`: the 8 bytes written, in the order they go on the wire (C: const void *). */
export function ibv_wr_atomic_write(qp: ibv_qp_ex, rkey: number, remote_addr: bigint, atomic_wire: Uint8Array): void {
  build(qp, 'ibv_wr_atomic_write', IBV_WR_ATOMIC_WRITE, (wr) => {
    rdma(rkey, remote_addr)(wr);
    wr.atomic_wire = atomic_wire;
  });
}
export function ibv_wr_flush(qp: ibv_qp_ex, rkey: number, remote_addr: bigint, len: number, type: number, level: number): void {
  build(qp, 'ibv_wr_flush', IBV_WR_FLUSH, (wr) => {
    rdma(rkey, remote_addr)(wr);
    wr.flush = { len, type, level };
  });
}
/**
 * A UD or raw-packet send with TCP segmentation offload. The model offers no
 * TSO (max_tso 0; IBV_QP_EX_WITH_TSO is refused at create), so on a model
 * QP this is a bad request: ibv_wr_complete returns EINVAL.
 */
export function ibv_wr_send_tso(qp: ibv_qp_ex, hdr: Uint8Array, hdr_sz: number, mss: number): void {
  build(qp, 'ibv_wr_send_tso', IBV_WR_TSO, (wr) => (wr.tso = { hdr, hdr_sz, mss }));
}

// ---- setters of the last request ------------------------------------------

export function ibv_wr_set_sge(qp: ibv_qp_ex, lkey: number, addr: bigint, length: number): void {
  const wr = last(qp, 'ibv_wr_set_sge');
  wr.sg_list = [{ lkey, addr, length }];
  wr.num_sge = 1;
}

export function ibv_wr_set_sge_list(qp: ibv_qp_ex, num_sge: number, sg_list: ibv_sge[]): void {
  const wr = last(qp, 'ibv_wr_set_sge_list');
  // The list is copied: C reads it during the call.
  wr.sg_list = Array.isArray(sg_list) ? sg_list.slice(0, typeof num_sge === 'number' ? Math.max(0, num_sge) : 0).map((s) => ({ ...s })) : (sg_list as never);
  wr.num_sge = num_sge;
}

/** Inline bytes at `addr` (device-reachable memory, copied into the WQE by ibv_wr_complete's post). */
export function ibv_wr_set_inline_data(qp: ibv_qp_ex, addr: bigint, length: number): void {
  ibv_wr_set_inline_data_list(qp, 1, [{ addr, length }]);
}

export function ibv_wr_set_inline_data_list(qp: ibv_qp_ex, num_buf: number, buf_list: ibv_data_buf[]): void {
  const wr = last(qp, 'ibv_wr_set_inline_data_list');
  wr.send_flags |= IBV_SEND_INLINE;
  wr.sg_list = Array.isArray(buf_list)
    ? buf_list.slice(0, typeof num_buf === 'number' ? Math.max(0, num_buf) : 0).map((b) => ({ addr: b?.addr, length: b?.length, lkey: 0 }) as ibv_sge)
    : (buf_list as never);
  wr.num_sge = num_buf;
}

export function ibv_wr_set_ud_addr(qp: ibv_qp_ex, ah: ibv_ah, remote_qpn: number, remote_qkey: number): void {
  const wr = last(qp, 'ibv_wr_set_ud_addr');
  wr.wr = { ...wr.wr, ud: { ah, remote_qpn, remote_qkey } };
}

export function ibv_wr_set_xrc_srqn(qp: ibv_qp_ex, remote_srqn: number): void {
  const wr = last(qp, 'ibv_wr_set_xrc_srqn');
  wr.qp_type = { xrc: { remote_srqn } };
}
