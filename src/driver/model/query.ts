/**
 * Device, port, GID and P_Key queries: QUERY_DEVICE, QUERY_PORT, QUERY_GID
 * and QUERY_PKEY, their outputs copied field by field into the libibverbs
 * structures the caller passes (as ibv_cmd_query_device does).
 */
import {
  errno,
  IB_UVERBS_DEVICE_ATOMIC_WRITE,
  IB_UVERBS_DEVICE_FLUSH_GLOBAL,
  IB_UVERBS_DEVICE_FLUSH_PERSISTENT,
  IBV_QPT_RC,
  IBV_QPT_UC,
  IBV_QPT_UD,
  IBV_VALUES_MASK_RAW_CLOCK,
  IBV_VALUES_MASK_RESERVED,
} from '../../device/abi/constants.js';
import { Cmd, QP_RATE_LIMIT_MAX_KBPS, QP_RATE_LIMIT_MIN_KBPS } from '../../device/commands.js';
import { VerbsError } from '../verbs/errno-error.js';
import type { ibv_context, ibv_device_attr, ibv_device_attr_ex, ibv_gid, ibv_gid_entry, ibv_port_attr, ibv_values_ex } from '../verbs/types.js';
import { MODEL_CQ_MOD_MAX } from './cq.js';
import { model_cmd } from './cmd.js';
import { ModelContext } from './context.js';

function ascii(b: Uint8Array): string {
  let s = '';
  for (let i = 0; i < b.length && b[i] !== 0; i++) s += String.fromCharCode(b[i]!);
  return s;
}

export function model_query_device(ibctx: ibv_context, attr: ibv_device_attr): number {
  const ctx = ibctx as ModelContext;
  if (!(ctx instanceof ModelContext) || ctx.closed || typeof attr !== 'object' || attr === null) return errno.EINVAL;
  const r = model_cmd(ctx, Cmd.QUERY_DEVICE);
  if (r.errno) return r.errno;
  const o = r.out;
  const n = (k: string) => o[k] as number;
  attr.fw_ver = ascii(o['fwVer'] as Uint8Array);
  attr.node_guid = o['nodeGuid'] as bigint;
  attr.sys_image_guid = o['sysImageGuid'] as bigint;
  attr.max_mr_size = o['maxMrSize'] as bigint;
  attr.page_size_cap = o['pageSizeCap'] as bigint;
  attr.vendor_id = n('vendorId');
  attr.vendor_part_id = n('vendorPartId');
  attr.hw_ver = n('hwVer');
  attr.max_qp = n('maxQp');
  attr.max_qp_wr = n('maxQpWr');
  attr.device_cap_flags = n('deviceCapFlags');
  attr.max_sge = n('maxSge');
  attr.max_sge_rd = n('maxSgeRd');
  attr.max_cq = n('maxCq');
  attr.max_cqe = n('maxCqe');
  attr.max_mr = n('maxMr');
  attr.max_pd = n('maxPd');
  attr.max_qp_rd_atom = n('maxQpRdAtom');
  attr.max_ee_rd_atom = n('maxEeRdAtom');
  attr.max_res_rd_atom = n('maxResRdAtom');
  attr.max_qp_init_rd_atom = n('maxQpInitRdAtom');
  attr.max_ee_init_rd_atom = n('maxEeInitRdAtom');
  attr.atomic_cap = n('atomicCap');
  attr.max_ee = n('maxEe');
  attr.max_rdd = n('maxRdd');
  attr.max_mw = n('maxMw');
  attr.max_raw_ipv6_qp = n('maxRawIpv6Qp');
  attr.max_raw_ethy_qp = n('maxRawEthyQp');
  attr.max_mcast_grp = n('maxMcastGrp');
  attr.max_mcast_qp_attach = n('maxMcastQpAttach');
  attr.max_total_mcast_qp_attach = n('maxTotalMcastQpAttach');
  attr.max_ah = n('maxAh');
  attr.max_fmr = n('maxFmr');
  attr.max_map_per_fmr = n('maxMapPerFmr');
  attr.max_srq = n('maxSrq');
  attr.max_srq_wr = n('maxSrqWr');
  attr.max_srq_sge = n('maxSrqSge');
  attr.max_pkeys = n('maxPkeys');
  attr.local_ca_ack_delay = n('localCaAckDelay');
  attr.phys_port_cnt = n('physPortCnt');
  return 0;
}

export function model_query_port(ibctx: ibv_context, port_num: number, attr: ibv_port_attr): number {
  const ctx = ibctx as ModelContext;
  if (!(ctx instanceof ModelContext) || ctx.closed || typeof attr !== 'object' || attr === null) return errno.EINVAL;
  const r = model_cmd(ctx, Cmd.QUERY_PORT, { portNum: port_num });
  if (r.errno) return r.errno;
  const o = r.out;
  const n = (k: string) => o[k] as number;
  attr.state = n('state');
  attr.max_mtu = n('maxMtu');
  attr.active_mtu = n('activeMtu');
  attr.gid_tbl_len = n('gidTblLen');
  attr.port_cap_flags = n('portCapFlags');
  attr.max_msg_sz = n('maxMsgSz');
  attr.bad_pkey_cntr = n('badPkeyCntr');
  attr.qkey_viol_cntr = n('qkeyViolCntr');
  attr.pkey_tbl_len = n('pkeyTblLen');
  attr.lid = n('lid');
  attr.sm_lid = n('smLid');
  attr.lmc = n('lmc');
  attr.max_vl_num = n('maxVlNum');
  attr.sm_sl = n('smSl');
  attr.subnet_timeout = n('subnetTimeout');
  attr.init_type_reply = n('initTypeReply');
  attr.active_width = n('activeWidth');
  attr.active_speed = n('activeSpeed');
  attr.phys_state = n('physState');
  attr.link_layer = n('linkLayer');
  attr.flags = n('flags');
  attr.port_cap_flags2 = n('portCapFlags2');
  attr.active_speed_ex = n('activeSpeedEx');
  return 0;
}

export function model_query_gid(ibctx: ibv_context, port_num: number, index: number, gid: ibv_gid): number {
  const ctx = ibctx as ModelContext;
  if (!(ctx instanceof ModelContext) || ctx.closed || typeof gid !== 'object' || gid === null) return errno.EINVAL;
  const r = model_cmd(ctx, Cmd.QUERY_GID, { portNum: port_num, index });
  if (r.errno) return r.errno;
  const g = r.out['gid'] as Uint8Array;
  if (gid.raw instanceof Uint8Array && gid.raw.length === 16) gid.raw.set(g);
  else gid.raw = g;
  return 0;
}

/** The P_Key at `index`; throws a VerbsError (C returns it through a pointer). */
export function model_query_pkey(ibctx: ibv_context, port_num: number, index: number): number {
  const ctx = ibctx as ModelContext;
  if (!(ctx instanceof ModelContext)) throw new VerbsError(errno.EINVAL, 'ibv_query_pkey: not an ibv_context of the model provider');
  if (ctx.closed) throw new VerbsError(errno.EINVAL, 'ibv_query_pkey: the context is closed');
  const r = model_cmd(ctx, Cmd.QUERY_PKEY, { portNum: port_num, index });
  if (r.errno) throw new VerbsError(r.errno, `ibv_query_pkey: ${r.what}`);
  return r.out['pkey'] as number;
}

/**
 * ibv_query_device_ex: ibv_device_attr plus what the model has of the
 * extended attributes: the CQE clock (hca_core_clock kHz and the timestamp
 * mask), CQ moderation limits, and the port count. What the model does not
 * model (ODP, TSO, RSS, WQs, packet pacing, tag matching, device memory,
 * PCI atomics, raw packet caps) reads as 0, which is how a device without
 * them answers.
 */
export function model_query_device_ex(ibctx: ibv_context, attr: ibv_device_attr_ex): number {
  const ctx = ibctx as ModelContext;
  if (!(ctx instanceof ModelContext) || ctx.closed || typeof attr !== 'object' || attr === null) return errno.EINVAL;
  if (typeof attr.orig_attr !== 'object' || attr.orig_attr === null) return errno.EINVAL;
  const rc = model_query_device(ctx, attr.orig_attr);
  if (rc) return rc;
  const r = model_cmd(ctx, Cmd.QUERY_DEVICE);
  if (r.errno) return r.errno;
  attr.comp_mask = 0;
  attr.completion_timestamp_mask = r.out['completionTimestampMask'] as bigint;
  attr.hca_core_clock = BigInt(r.out['hcaCoreClock'] as number);
  // Bits 32+ (ib_uverbs_device_cap_flags): the IBA 1.5 operations the device executes, as rxe reports them.
  attr.device_cap_flags_ex =
    BigInt(attr.orig_attr.device_cap_flags >>> 0) | IB_UVERBS_DEVICE_FLUSH_GLOBAL | IB_UVERBS_DEVICE_FLUSH_PERSISTENT | IB_UVERBS_DEVICE_ATOMIC_WRITE;
  attr.cq_mod_caps = { max_cq_count: MODEL_CQ_MOD_MAX, max_cq_period: MODEL_CQ_MOD_MAX };
  attr.phys_port_cnt_ex = attr.orig_attr.phys_port_cnt;
  // Per-QP pacing (ibv_modify_qp_rate_limit), packet by packet: no burst support.
  attr.packet_pacing_caps = {
    qp_rate_limit_min: QP_RATE_LIMIT_MIN_KBPS,
    qp_rate_limit_max: QP_RATE_LIMIT_MAX_KBPS,
    supported_qpts: (1 << IBV_QPT_RC) | (1 << IBV_QPT_UC) | (1 << IBV_QPT_UD),
  };
  return 0;
}

/**
 * ibv_query_gid_ex: one GID table entry with its type. An index beyond the
 * table: EINVAL; an empty entry: ENODATA, as libibverbs gives.
 */
export function model_query_gid_ex(ibctx: ibv_context, port_num: number, index: number, entry: ibv_gid_entry, flags: number): number {
  const ctx = ibctx as ModelContext;
  if (!(ctx instanceof ModelContext) || ctx.closed || typeof entry !== 'object' || entry === null) return errno.EINVAL;
  if (flags !== 0) return errno.EINVAL;
  const r = model_cmd(ctx, Cmd.QUERY_GID, { portNum: port_num, index });
  if (r.errno) return r.errno;
  const g = r.out['gid'] as Uint8Array;
  if (g.every((b) => b === 0)) return errno.ENODATA;
  entry.gid = { raw: Uint8Array.from(g) };
  entry.gid_index = index;
  entry.port_num = port_num;
  entry.gid_type = r.out['gidType'] as number;
  entry.ndev_ifindex = 0;
  return 0;
}

/** ibv_query_rt_values_ex: the device clock now (QUERY_CLOCK), in raw_clock.tv_nsec. */
export function model_query_rt_values(ibctx: ibv_context, values: ibv_values_ex): number {
  const ctx = ibctx as ModelContext;
  if (!(ctx instanceof ModelContext) || ctx.closed || typeof values !== 'object' || values === null) return errno.EINVAL;
  const mask = values.comp_mask;
  if (typeof mask !== 'number' || mask >>> 0 !== mask || mask & ~(IBV_VALUES_MASK_RESERVED - 1)) return errno.EINVAL;
  if (!(mask & IBV_VALUES_MASK_RAW_CLOCK)) return 0;
  const r = model_cmd(ctx, Cmd.QUERY_CLOCK);
  if (r.errno) return r.errno;
  values.raw_clock = { tv_sec: 0n, tv_nsec: r.out['clock'] as bigint };
  values.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
  return 0;
}
