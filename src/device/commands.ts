/**
 * The firmware command set: for each command its opcode, input and output
 * layouts (inside the mailbox page, see mailbox.ts), what it checks, and
 * the status it returns. Table-driven: COMMANDS is the one list that the
 * dispatcher, the driver helpers and the reference manual read.
 *
 * Failure never changes anything: every command validates all of its
 * inputs before it writes any state. The status goes to the mailbox header
 * and the CMD_STATUS register; the syndrome names the offending input
 * field: 1 + its bit position in the input structure (offset · 8 +
 * bitOffset), 0 when the failure is not about one field. `Firmware.lastError`
 * keeps a sentence for humans.
 */
import {
  IBV_ACCESS_FLUSH_GLOBAL,
  IBV_ACCESS_FLUSH_PERSISTENT,
  IBV_ACCESS_LOCAL_WRITE,
  IBV_ACCESS_MW_BIND,
  IBV_MW_TYPE_1,
  IBV_MW_TYPE_2,
  IBV_ACCESS_OPTIONAL_RANGE,
  IBV_ACCESS_REMOTE_ATOMIC,
  IBV_ACCESS_REMOTE_READ,
  IBV_ACCESS_REMOTE_WRITE,
  IBV_ACCESS_ZERO_BASED,
  IBV_LINK_LAYER_ETHERNET,
  IBV_MTU_256,
  IBV_QP_ACCESS_FLAGS,
  IBV_QP_ALT_PATH,
  IBV_QP_AV,
  IBV_QP_CUR_STATE,
  IBV_QP_DEST_QPN,
  IBV_QP_EN_SQD_ASYNC_NOTIFY,
  IBV_QP_MAX_DEST_RD_ATOMIC,
  IBV_QP_MAX_QP_RD_ATOMIC,
  IBV_QP_MIN_RNR_TIMER,
  IBV_QP_PATH_MIG_STATE,
  IBV_QP_PATH_MTU,
  IBV_QP_PKEY_INDEX,
  IBV_QP_PORT,
  IBV_QP_QKEY,
  IBV_QP_RATE_LIMIT,
  IBV_QP_RETRY_CNT,
  IBV_QP_RNR_RETRY,
  IBV_QP_RQ_PSN,
  IBV_QP_SQ_PSN,
  IBV_QP_STATE,
  IBV_QP_TIMEOUT,
  IBV_QPS_ERR,
  IBV_QPS_RESET,
  IBV_QPS_SQD,
  IBV_QPT_RC,
  IBV_QPT_UC,
  IBV_QPT_UD,
  IBV_QPT_XRC_RECV,
  IBV_QPT_XRC_SEND,
  IBV_SRQ_LIMIT,
  IBV_SRQ_MAX_WR,
  IBV_MTU_4096,
  IBV_RATE_1200_GBPS,
  IBV_MIG_ARMED,
} from './abi/constants.js';
import { IBV_QP_ATTR_MASK_ALL, modifyQpIsOk, qpTransitionMasks } from './abi/qp-state.js';
import { AV } from './av.js';
import { CQC, CtxOff, EQC, MPT, MptFlag, QPC, QpFlag, SRQC, SrqFlag, CqFlag, EqFlag } from './contexts.js';
import { Ctr } from './counters.js';
import type { Firmware } from './firmware.js';
import { mwByIndex, mwFree, mwInit, mwReleaseQp } from './mw.js';
import {
  bytes,
  decodeStruct,
  defineLayout,
  embed,
  encodeStruct,
  reserved,
  u,
  u64,
  type FieldDecl,
  type Layout,
  type StructInput,
  type StructValues,
} from './layout.js';
import { DbKind, loadDbrec } from './registers.js';
import { log2, MAX_WQE_STRIDE, recvWqeStride, sendWqeStride } from './wqe.js';
import { EQE_SIZE } from './eqe.js';
import { CQE_OWNER_OFFSET, CQE_SIZE, cqeOffset, ringPhase } from './cqe.js';

// ---------------------------------------------------------------------------
// Opcodes and status codes
// ---------------------------------------------------------------------------

export const enum Cmd {
  QUERY_DEVICE = 0x01,
  QUERY_PORT = 0x02,
  QUERY_GID = 0x03,
  QUERY_PKEY = 0x04,
  QUERY_CLOCK = 0x05,
  ALLOC_PD = 0x10,
  DEALLOC_PD = 0x11,
  ALLOC_XRCD = 0x12,
  DEALLOC_XRCD = 0x13,
  REG_MR = 0x20,
  DEREG_MR = 0x21,
  REREG_MR = 0x22,
  ALLOC_MW = 0x23,
  DEALLOC_MW = 0x24,
  CREATE_CQ = 0x30,
  DESTROY_CQ = 0x31,
  RESIZE_CQ = 0x32,
  MODIFY_CQ = 0x33,
  CREATE_EQ = 0x40,
  DESTROY_EQ = 0x41,
  CREATE_SRQ = 0x50,
  MODIFY_SRQ = 0x51,
  QUERY_SRQ = 0x52,
  DESTROY_SRQ = 0x53,
  CREATE_QP = 0x60,
  MODIFY_QP = 0x61,
  QUERY_QP = 0x62,
  DESTROY_QP = 0x63,
  ATTACH_MCAST = 0x64,
  DETACH_MCAST = 0x65,
  MODIFY_QP_RATE_LIMIT = 0x6f,
}

export const enum CmdStatus {
  OK = 0x00,
  /** Unknown (or unimplemented) opcode. */
  BAD_OPCODE = 0x01,
  /** An input value is out of range, malformed or inconsistent. */
  BAD_PARAM = 0x02,
  /** The object is in a state where the operation is not allowed (QP state machine). */
  BAD_STATE = 0x03,
  /** A referenced object (PD, CQ, EQ, SRQ, QP, key) does not exist. */
  BAD_RESOURCE = 0x04,
  /** A table is full. */
  NO_RESOURCES = 0x05,
  /** The object is still referenced (destroy / dealloc refused). */
  BUSY = 0x06,
  /** inputLength is smaller than the command's input structure, or too large. */
  BAD_INPUT_LEN = 0x07,
  /** The mailbox address is not in host memory, or an internal failure. */
  INTERNAL_ERR = 0x08,
}

export interface StatusInfo {
  readonly code: number;
  readonly name: string;
  /** The errno a verbs driver returns for it. */
  readonly errno: number;
  readonly errnoName: string;
  readonly doc: string;
}

/** Status codes, their errno mapping (Linux numbers) and meaning. */
export const CMD_STATUSES: readonly StatusInfo[] = Object.freeze([
  { code: CmdStatus.OK, name: 'OK', errno: 0, errnoName: '0', doc: 'success' },
  { code: CmdStatus.BAD_OPCODE, name: 'BAD_OPCODE', errno: 95, errnoName: 'EOPNOTSUPP', doc: 'unknown or unimplemented opcode' },
  { code: CmdStatus.BAD_PARAM, name: 'BAD_PARAM', errno: 22, errnoName: 'EINVAL', doc: 'an input value is out of range or inconsistent' },
  { code: CmdStatus.BAD_STATE, name: 'BAD_STATE', errno: 22, errnoName: 'EINVAL', doc: 'operation not allowed in the current state (QP state machine)' },
  { code: CmdStatus.BAD_RESOURCE, name: 'BAD_RESOURCE', errno: 22, errnoName: 'EINVAL', doc: 'a referenced PD / CQ / EQ / SRQ / QP / key does not exist' },
  { code: CmdStatus.NO_RESOURCES, name: 'NO_RESOURCES', errno: 12, errnoName: 'ENOMEM', doc: 'the table is full' },
  { code: CmdStatus.BUSY, name: 'BUSY', errno: 16, errnoName: 'EBUSY', doc: 'the object is still in use' },
  { code: CmdStatus.BAD_INPUT_LEN, name: 'BAD_INPUT_LEN', errno: 22, errnoName: 'EINVAL', doc: 'inputLength too small or too large' },
  { code: CmdStatus.INTERNAL_ERR, name: 'INTERNAL_ERR', errno: 5, errnoName: 'EIO', doc: 'mailbox not in host memory, or internal error' },
]);

/** errno for a command status (EIO for unknown values). */
export function cmdStatusToErrno(status: number): number {
  return CMD_STATUSES[status]?.errno ?? 5;
}

export function cmdStatusName(status: number): string {
  return CMD_STATUSES[status]?.name ?? `status 0x${status.toString(16)}`;
}

// ---------------------------------------------------------------------------
// Failures
// ---------------------------------------------------------------------------

/** Thrown by a command handler; turned into status + syndrome by executeCommand. */
export class CommandFailure {
  constructor(
    readonly status: CmdStatus,
    /** Name of the offending input field, or '' when none. */
    readonly field: string,
    readonly message: string,
  ) {}
}

function fail(status: CmdStatus, field: string, message: string): never {
  throw new CommandFailure(status, field, message);
}

/** Syndrome of a field: 1 + its bit position in the input layout; 0 if none. */
export function fieldSyndrome(layout: Layout, field: string): number {
  const d = layout.fields.find((x) => x.name === field);
  return d ? d.offset * 8 + d.bitOffset + 1 : 0;
}

/** The input field a syndrome points at (for driver diagnostics), or ''. */
export function syndromeField(layout: Layout, syndrome: number): string {
  if (syndrome === 0) return '';
  return layout.fields.find((d) => d.offset * 8 + d.bitOffset + 1 === syndrome)?.name ?? '';
}

// ---------------------------------------------------------------------------
// Shared sub-structures
// ---------------------------------------------------------------------------

/** ibv_qp_attr. Used by MODIFY_QP (input) and QUERY_QP (output). */
export const QP_ATTR = defineLayout('qp-attr', 0x90, 'ibv_qp_attr, every field.', [
  u('qpState', 0x00, 0, 8, 'qp_state'),
  u('curQpState', 0x01, 0, 8, 'cur_qp_state'),
  u('pathMtu', 0x02, 0, 8, 'path_mtu (ibv_mtu 1..5)'),
  u('pathMigState', 0x03, 0, 8, 'path_mig_state (ibv_mig_state)'),
  u('qkey', 0x04, 0, 32, 'qkey'),
  u('rqPsn', 0x08, 0, 24, 'rq_psn'),
  reserved(0x0b, 8),
  u('sqPsn', 0x0c, 0, 24, 'sq_psn'),
  reserved(0x0f, 8),
  u('destQpNum', 0x10, 0, 24, 'dest_qp_num'),
  reserved(0x13, 8),
  u('qpAccessFlags', 0x14, 0, 32, 'qp_access_flags'),
  u('capMaxSendWr', 0x18, 0, 32, 'cap.max_send_wr'),
  u('capMaxRecvWr', 0x1c, 0, 32, 'cap.max_recv_wr'),
  u('capMaxSendSge', 0x20, 0, 32, 'cap.max_send_sge'),
  u('capMaxRecvSge', 0x24, 0, 32, 'cap.max_recv_sge'),
  u('capMaxInlineData', 0x28, 0, 32, 'cap.max_inline_data'),
  u('pkeyIndex', 0x2c, 0, 16, 'pkey_index'),
  u('altPkeyIndex', 0x2e, 0, 16, 'alt_pkey_index'),
  u('enSqdAsyncNotify', 0x30, 0, 8, 'en_sqd_async_notify'),
  u('sqDraining', 0x31, 0, 8, 'sq_draining (output only)'),
  u('maxRdAtomic', 0x32, 0, 8, 'max_rd_atomic'),
  u('maxDestRdAtomic', 0x33, 0, 8, 'max_dest_rd_atomic'),
  u('minRnrTimer', 0x34, 0, 8, 'min_rnr_timer (0..31)'),
  u('portNum', 0x35, 0, 8, 'port_num'),
  u('timeout', 0x36, 0, 8, 'timeout (0..31)'),
  u('retryCnt', 0x37, 0, 8, 'retry_cnt (0..7)'),
  u('rnrRetry', 0x38, 0, 8, 'rnr_retry (0..7)'),
  u('altPortNum', 0x39, 0, 8, 'alt_port_num'),
  u('altTimeout', 0x3a, 0, 8, 'alt_timeout (0..31)'),
  reserved(0x3b, 8),
  u('rateLimit', 0x3c, 0, 32, 'rate_limit (kbit/s)'),
  ...embed('ah', AV, 0x40),
  ...embed('altAh', AV, 0x68),
]);

// ---------------------------------------------------------------------------
// Command structures
// ---------------------------------------------------------------------------

const NONE_IN = defineLayout('no-input', 4, 'No input.', [reserved(0x00, 32)]);

export const QUERY_DEVICE_OUT = defineLayout('query-device-out', 0x100, 'ibv_device_attr plus model extensions.', [
  bytes('fwVer', 0x00, 64, 'fw_ver, NUL-padded ASCII'),
  u64('nodeGuid', 0x40, 'node_guid (numeric value)'),
  u64('sysImageGuid', 0x48, 'sys_image_guid'),
  u64('maxMrSize', 0x50, 'max_mr_size'),
  u64('pageSizeCap', 0x58, 'page_size_cap'),
  u('vendorId', 0x60, 0, 32, 'vendor_id'),
  u('vendorPartId', 0x64, 0, 32, 'vendor_part_id'),
  u('hwVer', 0x68, 0, 32, 'hw_ver'),
  u('maxQp', 0x6c, 0, 32, 'max_qp'),
  u('maxQpWr', 0x70, 0, 32, 'max_qp_wr'),
  u('deviceCapFlags', 0x74, 0, 32, 'device_cap_flags'),
  u('maxSge', 0x78, 0, 32, 'max_sge'),
  u('maxSgeRd', 0x7c, 0, 32, 'max_sge_rd'),
  u('maxCq', 0x80, 0, 32, 'max_cq'),
  u('maxCqe', 0x84, 0, 32, 'max_cqe'),
  u('maxMr', 0x88, 0, 32, 'max_mr'),
  u('maxPd', 0x8c, 0, 32, 'max_pd'),
  u('maxQpRdAtom', 0x90, 0, 32, 'max_qp_rd_atom'),
  u('maxEeRdAtom', 0x94, 0, 32, 'max_ee_rd_atom'),
  u('maxResRdAtom', 0x98, 0, 32, 'max_res_rd_atom'),
  u('maxQpInitRdAtom', 0x9c, 0, 32, 'max_qp_init_rd_atom'),
  u('maxEeInitRdAtom', 0xa0, 0, 32, 'max_ee_init_rd_atom'),
  u('atomicCap', 0xa4, 0, 32, 'atomic_cap'),
  u('maxEe', 0xa8, 0, 32, 'max_ee'),
  u('maxRdd', 0xac, 0, 32, 'max_rdd'),
  u('maxMw', 0xb0, 0, 32, 'max_mw'),
  u('maxRawIpv6Qp', 0xb4, 0, 32, 'max_raw_ipv6_qp'),
  u('maxRawEthyQp', 0xb8, 0, 32, 'max_raw_ethy_qp'),
  u('maxMcastGrp', 0xbc, 0, 32, 'max_mcast_grp'),
  u('maxMcastQpAttach', 0xc0, 0, 32, 'max_mcast_qp_attach'),
  u('maxTotalMcastQpAttach', 0xc4, 0, 32, 'max_total_mcast_qp_attach'),
  u('maxAh', 0xc8, 0, 32, 'max_ah'),
  u('maxFmr', 0xcc, 0, 32, 'max_fmr'),
  u('maxMapPerFmr', 0xd0, 0, 32, 'max_map_per_fmr'),
  u('maxSrq', 0xd4, 0, 32, 'max_srq'),
  u('maxSrqWr', 0xd8, 0, 32, 'max_srq_wr'),
  u('maxSrqSge', 0xdc, 0, 32, 'max_srq_sge'),
  u('maxPkeys', 0xe0, 0, 16, 'max_pkeys'),
  u('localCaAckDelay', 0xe2, 0, 8, 'local_ca_ack_delay'),
  u('physPortCnt', 0xe3, 0, 8, 'phys_port_cnt'),
  u('maxInlineData', 0xe4, 0, 32, 'model: largest max_inline_data'),
  u('maxEq', 0xe8, 0, 32, 'model: event queues'),
  u('numCompVectors', 0xec, 0, 32, 'model: interrupt vectors'),
  u('hcaCoreClock', 0xf0, 0, 32, 'model: timestamp clock, kHz'),
  u('maxXrcd', 0xf4, 0, 32, 'model: XRC domains'),
  u64('completionTimestampMask', 0xf8, 'model: valid timestamp bits'),
]);

const PORT_IN = defineLayout('port-in', 4, 'A port number.', [u('portNum', 0x00, 0, 8, 'port, 1-based'), reserved(0x01, 24)]);

export const QUERY_PORT_OUT = defineLayout('query-port-out', 0x30, 'ibv_port_attr.', [
  u('state', 0x00, 0, 8, 'state (ibv_port_state)'),
  u('maxMtu', 0x01, 0, 8, 'max_mtu (ibv_mtu)'),
  u('activeMtu', 0x02, 0, 8, 'active_mtu (ibv_mtu)'),
  u('physState', 0x03, 0, 8, 'phys_state'),
  u('gidTblLen', 0x04, 0, 32, 'gid_tbl_len'),
  u('portCapFlags', 0x08, 0, 32, 'port_cap_flags'),
  u('maxMsgSz', 0x0c, 0, 32, 'max_msg_sz'),
  u('badPkeyCntr', 0x10, 0, 32, 'bad_pkey_cntr (from the counters)'),
  u('qkeyViolCntr', 0x14, 0, 32, 'qkey_viol_cntr (from the counters)'),
  u('pkeyTblLen', 0x18, 0, 16, 'pkey_tbl_len'),
  u('lid', 0x1a, 0, 16, 'lid'),
  u('smLid', 0x1c, 0, 16, 'sm_lid'),
  u('lmc', 0x1e, 0, 8, 'lmc'),
  u('maxVlNum', 0x1f, 0, 8, 'max_vl_num'),
  u('smSl', 0x20, 0, 8, 'sm_sl'),
  u('subnetTimeout', 0x21, 0, 8, 'subnet_timeout'),
  u('initTypeReply', 0x22, 0, 8, 'init_type_reply'),
  u('activeWidth', 0x23, 0, 8, 'active_width'),
  u('activeSpeed', 0x24, 0, 8, 'active_speed'),
  u('linkLayer', 0x25, 0, 8, 'link_layer'),
  u('flags', 0x26, 0, 8, 'flags (IBV_QPF_GRH_REQUIRED)'),
  reserved(0x27, 8),
  u('portCapFlags2', 0x28, 0, 16, 'port_cap_flags2'),
  reserved(0x2a, 16),
  u('activeSpeedEx', 0x2c, 0, 32, 'active_speed_ex'),
]);

const TABLE_INDEX_IN = defineLayout('table-index-in', 4, 'A port and a table index.', [
  u('portNum', 0x00, 0, 8, 'port, 1-based'),
  reserved(0x01, 8),
  u('index', 0x02, 0, 16, 'table index'),
]);

export const QUERY_GID_OUT = defineLayout('query-gid-out', 0x18, 'One GID table entry (all zero when empty).', [
  bytes('gid', 0x00, 16, 'GID, network byte order'),
  u('gidType', 0x10, 0, 8, 'IBV_GID_TYPE_IB 0, ROCE_V1 1, ROCE_V2 2'),
  reserved(0x11, 24),
  reserved(0x14, 32),
]);

export const QUERY_PKEY_OUT = defineLayout('query-pkey-out', 4, 'One P_Key table entry.', [u('pkey', 0x00, 0, 16, 'P_Key (0 when empty)'), reserved(0x02, 16)]);

const XRCDN_LAYOUT = defineLayout('xrcdn', 4, 'An XRC domain number.', [u('xrcdn', 0x00, 0, 32, 'XRC domain number')]);
const PDN_LAYOUT = defineLayout('pdn', 4, 'A protection domain number.', [u('pdn', 0x00, 0, 32, 'protection domain number')]);

export const REG_MR_IN = defineLayout('reg-mr-in', 0x20, 'ibv_reg_mr / ibv_reg_mr_iova.', [
  u('pdn', 0x00, 0, 32, 'protection domain'),
  u(
    'access',
    0x04,
    0,
    32,
    'ibv_access_flags (LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC, ZERO_BASED, FLUSH_GLOBAL, FLUSH_PERSISTENT; optional-range bits ignored)',
  ),
  u64('hostAddr', 0x08, 'host memory address of the buffer'),
  u64('length', 0x10, 'length in bytes (≥ 1, ≤ maxMrSize)'),
  u64('iova', 0x18, 'virtual address of the first byte as keys see it (= hostAddr for ibv_reg_mr)'),
]);

/** REREG_MR flags: which parts of the MR change (ibv_rereg_mr's IBV_REREG_MR_CHANGE_*). */
export const enum ReregFlag {
  TRANSLATION = 1 << 0,
  PD = 1 << 1,
  ACCESS = 1 << 2,
}

export const REREG_MR_IN = defineLayout('rereg-mr-in', 0x28, 'ibv_rereg_mr: change an MR in place; its keys stay.', [
  u('key', 0x00, 0, 32, "the MR's key"),
  u('flags', 0x04, 0, 32, 'ReregFlag: TRANSLATION 1 (hostAddr, length, iova), PD 2 (pdn), ACCESS 4 (access); other fields are ignored'),
  u('pdn', 0x08, 0, 32, 'new protection domain (PD)'),
  u('access', 0x0c, 0, 32, 'new ibv_access_flags (ACCESS), checked as REG_MR checks them'),
  u64('hostAddr', 0x10, 'new host memory address (TRANSLATION)'),
  u64('length', 0x18, 'new length (TRANSLATION)'),
  u64('iova', 0x20, 'new iova (TRANSLATION)'),
]);

export const MCAST_IN = defineLayout('mcast-in', 0x14, 'ibv_attach_mcast / ibv_detach_mcast: a UD QP and a multicast GID.', [
  u('qpn', 0x00, 0, 32, 'UD QP number'),
  bytes('mgid', 0x04, 16, 'multicast GID, network order: ff00::/8, or IPv4-mapped 224.0.0.0/4 (RoCE v2 over IPv4)'),
]);

export const REG_MR_OUT = defineLayout('reg-mr-out', 8, 'The keys of the new MR (equal: key = index << 8 | variant).', [
  u('lkey', 0x00, 0, 32, 'local key'),
  u('rkey', 0x04, 0, 32, 'remote key'),
]);

const KEY_IN = defineLayout('key-in', 4, 'A memory key.', [u('key', 0x00, 0, 32, 'lkey / rkey')]);

export const ALLOC_MW_IN = defineLayout('alloc-mw-in', 8, 'ibv_alloc_mw.', [
  u('pdn', 0x00, 0, 32, 'protection domain'),
  u('type', 0x04, 0, 32, 'IBV_MW_TYPE_1 (bound by ibv_bind_mw) or IBV_MW_TYPE_2 (bound by a BIND_MW WQE to one QP)'),
]);

export const ALLOC_MW_OUT = defineLayout('alloc-mw-out', 4, 'The key of the new window: (index << 8) | variant; a bind replaces its low byte.', [
  u('rkey', 0x00, 0, 32, 'remote key'),
]);

export const CREATE_CQ_IN = defineLayout('create-cq-in', 0x18, 'ibv_create_cq.', [
  u64('ringAddr', 0x00, 'ring of 2^logSize 64-byte CQEs, 64-byte aligned, zeroed'),
  u64('dbrecAddr', 0x08, 'CQ doorbell record, 8-byte aligned'),
  u('eqn', 0x10, 0, 32, 'EQ for completion events'),
  u('logSize', 0x14, 0, 8, 'log2 entries; 2^logSize ≤ maxCqe + 1'),
  reserved(0x15, 24),
]);

const CQN_LAYOUT = defineLayout('cqn', 4, 'A CQ number.', [u('cqn', 0x00, 0, 32, 'CQ number')]);

export const RESIZE_CQ_IN = defineLayout('resize-cq-in', 0x10, 'ibv_resize_cq: the new ring (the doorbell record and EQ stay).', [
  u64('ringAddr', 0x00, 'new ring of 2^logSize 64-byte CQEs, 64-byte aligned, zeroed'),
  u('cqn', 0x08, 0, 32, 'CQ number'),
  u('logSize', 0x0c, 0, 8, 'log2 entries; 2^logSize ≤ maxCqe + 1 and > the CQEs not yet consumed'),
  reserved(0x0d, 24),
]);

export const MODIFY_CQ_IN = defineLayout('modify-cq-in', 8, 'ibv_modify_cq (IBV_CQ_ATTR_MODERATE).', [
  u('cqn', 0x00, 0, 32, 'CQ number'),
  u('cqCount', 0x04, 0, 16, 'cq_count: CQEs per completion event (0 or 1: every armed CQE)'),
  u('cqPeriod', 0x06, 0, 16, 'cq_period: µs after the first held-back CQE at which the event fires anyway (0: none)'),
]);

export const QUERY_CLOCK_OUT = defineLayout('query-clock-out', 8, 'The free-running device clock (ibv_query_rt_values_ex).', [
  u64('clock', 0x00, 'hca_core_clock ticks now: the clock of CQE timestamps'),
]);

export const CREATE_EQ_IN = defineLayout('create-eq-in', 0x10, 'Create an event queue.', [
  u64('ringAddr', 0x00, 'ring of 2^logSize 32-byte EQEs, 32-byte aligned, zeroed'),
  u('logSize', 0x08, 0, 8, 'log2 entries (1..22)'),
  reserved(0x09, 8),
  u('intVector', 0x0a, 0, 16, 'interrupt vector (< numCompVectors)'),
  reserved(0x0c, 32),
]);

const EQN_LAYOUT = defineLayout('eqn', 4, 'An EQ number.', [u('eqn', 0x00, 0, 32, 'EQ number')]);

export const CREATE_SRQ_IN = defineLayout('create-srq-in', 0x28, 'ibv_create_srq / ibv_create_srq_ex.', [
  u('pdn', 0x00, 0, 32, 'protection domain'),
  u('limit', 0x04, 0, 32, 'srq_limit (0 = no limit event)'),
  u64('ringAddr', 0x08, 'ring of 2^logSize WQEs of 2^logStride bytes, 64-byte aligned'),
  u64('dbrecAddr', 0x10, 'SRQ doorbell record, 8-byte aligned'),
  u('logSize', 0x18, 0, 8, 'log2 entries'),
  u('logStride', 0x19, 0, 8, 'log2 WQE stride (≥ recvWqeStride(maxSge))'),
  u('maxSge', 0x1a, 0, 8, 'data segments per WQE (≤ maxSrqSge)'),
  reserved(0x1b, 8),
  u('xrcdn', 0x1c, 0, 32, 'XRC SRQ: its XRC domain (0: a basic SRQ)'),
  u('cqn', 0x20, 0, 32, 'XRC SRQ: the CQ its receives complete on (0 for a basic SRQ)'),
  reserved(0x24, 32),
]);

const SRQN_LAYOUT = defineLayout('srqn', 4, 'An SRQ number.', [u('srqn', 0x00, 0, 32, 'SRQ number')]);

export const MODIFY_SRQ_IN = defineLayout('modify-srq-in', 0x10, 'ibv_modify_srq.', [
  u('srqn', 0x00, 0, 32, 'SRQ number'),
  u('attrMask', 0x04, 0, 32, 'IBV_SRQ_MAX_WR 1 (resize: not supported), IBV_SRQ_LIMIT 2'),
  u('maxWr', 0x08, 0, 32, 'max_wr'),
  u('limit', 0x0c, 0, 32, 'srq_limit; non-zero arms the limit event'),
]);

export const QUERY_SRQ_OUT = defineLayout('query-srq-out', 0x0c, 'ibv_srq_attr.', [
  u('maxWr', 0x00, 0, 32, 'max_wr (ring entries)'),
  u('maxSge', 0x04, 0, 32, 'max_sge'),
  u('limit', 0x08, 0, 32, 'srq_limit (0 once the limit event fired)'),
]);

/** CREATE_QP flag bits. */
export const enum CreateQpFlag {
  SQ_SIG_ALL = 1 << 0,
  HAS_SRQ = 1 << 1,
  /** UD only: multicast this QP sends is not delivered to members on this device. */
  BLOCK_SELF_MCAST_LB = 1 << 2,
}

export const CREATE_QP_IN = defineLayout('create-qp-in', 0x40, 'ibv_create_qp. A ring address of 0 means "no such queue" (max_*_wr = 0, or an SRQ).', [
  u('qpType', 0x00, 0, 8, 'IBV_QPT_RC 2, UC 3, UD 4, XRC_SEND 9, XRC_RECV 10'),
  u('flags', 0x01, 0, 8, 'bit 0 sq_sig_all, bit 1 receives from an SRQ, bit 2 block multicast loopback (UD)'),
  reserved(0x02, 16),
  u('pdn', 0x04, 0, 32, 'protection domain (0 for XRC_RECV)'),
  u('sendCqn', 0x08, 0, 32, 'send CQ (0 for XRC_RECV)'),
  u('recvCqn', 0x0c, 0, 32, "receive CQ (0 for XRC_SEND and XRC_RECV: XRC receives complete on the SRQ's CQ)"),
  u('srqn', 0x10, 0, 32, 'SRQ (flags bit 1)'),
  u('xrcdn', 0x14, 0, 32, 'XRC_RECV: its XRC domain (0 for every other type)'),
  u64('sqRingAddr', 0x18, 'send ring (0: none), 64-byte aligned'),
  u64('rqRingAddr', 0x20, 'receive ring (0: none; must be 0 with an SRQ)'),
  u64('dbrecAddr', 0x28, 'QP doorbell record, 8-byte aligned'),
  u('sqLogSize', 0x30, 0, 8, 'log2 send ring entries; 2^n ≤ maxQpWr rounded up to a power of two'),
  u('sqLogStride', 0x31, 0, 8, 'log2 send WQE stride; ≥ sendWqeStride(qpType, maxSendSge, maxInlineData), ≤ 4096'),
  u('rqLogSize', 0x32, 0, 8, 'log2 receive ring entries'),
  u('rqLogStride', 0x33, 0, 8, 'log2 receive WQE stride; ≥ recvWqeStride(maxRecvSge)'),
  u('maxSendSge', 0x34, 0, 8, 'cap.max_send_sge (≤ maxSge)'),
  u('maxRecvSge', 0x35, 0, 8, 'cap.max_recv_sge (≤ maxSge)'),
  u('maxInlineData', 0x36, 0, 16, 'cap.max_inline_data (≤ maxInlineData)'),
  reserved(0x38, 64),
]);

const QPN_LAYOUT = defineLayout('qpn', 4, 'A QP number.', [u('qpn', 0x00, 0, 24, 'QP number'), reserved(0x03, 8)]);

/** What ibv_modify_qp_rate_limit may ask (packet_pacing_caps), kbit/s: 1 kbit/s to 400 Gb/s. */
export const QP_RATE_LIMIT_MIN_KBPS = 1;
export const QP_RATE_LIMIT_MAX_KBPS = 400_000_000;

export const MODIFY_QP_RATE_LIMIT_IN = defineLayout('modify-qp-rate-limit-in', 12, 'ibv_modify_qp_rate_limit (struct ibv_qp_rate_limit_attr).', [
  u('qpn', 0x00, 0, 24, 'QP number'),
  reserved(0x03, 8),
  u('rateLimit', 0x04, 0, 32, 'rate_limit, kbit/s (0: no limit)'),
  u('maxBurstSz', 0x08, 0, 16, 'max_burst_sz, bytes (0: one packet)'),
  u('typicalPktSz', 0x0a, 0, 16, 'typical_pkt_sz, bytes (0: the path MTU)'),
]);

export const MODIFY_QP_IN = defineLayout(
  'modify-qp-in',
  0x98,
  'ibv_modify_qp: QP number, attribute mask and every ibv_qp_attr field (only the masked ones are read).',
  [u('qpn', 0x00, 0, 24, 'QP number'), reserved(0x03, 8), u('attrMask', 0x04, 0, 32, 'ibv_qp_attr_mask'), ...embed('', QP_ATTR, 0x08)],
);

export const QUERY_QP_OUT = defineLayout('query-qp-out', 0xa0, 'ibv_query_qp: every ibv_qp_attr field, and the creation attributes.', [
  ...embed('', QP_ATTR, 0x00),
  u('qpType', 0x90, 0, 8, 'qp_type'),
  u('sqSigAll', 0x91, 0, 8, 'sq_sig_all'),
  reserved(0x92, 16),
  u('sendCqn', 0x94, 0, 32, 'send CQ'),
  u('recvCqn', 0x98, 0, 32, 'receive CQ'),
  u('srqn', 0x9c, 0, 32, 'SRQ (0: none)'),
]);

const NUM_OUT = (name: string, field: string, doc: string) => defineLayout(name, 4, doc, [u(field, 0x00, 0, 32, doc)]);

export const ALLOC_PD_OUT = NUM_OUT('alloc-pd-out', 'pdn', 'the new protection domain number');
export const ALLOC_XRCD_OUT = NUM_OUT('alloc-xrcd-out', 'xrcdn', 'the new XRC domain number');
export const CREATE_CQ_OUT = NUM_OUT('create-cq-out', 'cqn', 'the new CQ number');
export const CREATE_EQ_OUT = NUM_OUT('create-eq-out', 'eqn', 'the new EQ number');
export const CREATE_SRQ_OUT = NUM_OUT('create-srq-out', 'srqn', 'the new SRQ number');
export const CREATE_QP_OUT = NUM_OUT('create-qp-out', 'qpn', 'the new QP number');

// ---------------------------------------------------------------------------
// The command table
// ---------------------------------------------------------------------------

export interface CommandDef {
  readonly opcode: number;
  readonly name: string;
  readonly doc: string;
  readonly input: Layout;
  readonly output: Layout | null;
  /** The failure statuses it can return, with their causes (for the manual). */
  readonly errors: readonly string[];
  readonly run: (fw: Firmware, input: Record<string, unknown>) => Record<string, unknown> | void;
}

function command<IF extends readonly FieldDecl[], OF extends readonly FieldDecl[]>(spec: {
  opcode: number;
  name: string;
  doc: string;
  input: Layout<IF>;
  output: Layout<OF> | null;
  errors: readonly string[];
  run: (fw: Firmware, input: StructValues<IF>) => StructInput<OF> | void;
}): CommandDef {
  return spec as unknown as CommandDef;
}

const SUPPORTED_QP_TYPES = [IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD, IBV_QPT_XRC_SEND, IBV_QPT_XRC_RECV];
const MR_ACCESS_SUPPORTED =
  IBV_ACCESS_MW_BIND |
  IBV_ACCESS_LOCAL_WRITE |
  IBV_ACCESS_REMOTE_WRITE |
  IBV_ACCESS_REMOTE_READ |
  IBV_ACCESS_REMOTE_ATOMIC |
  IBV_ACCESS_ZERO_BASED |
  IBV_ACCESS_FLUSH_GLOBAL |
  IBV_ACCESS_FLUSH_PERSISTENT;
const QP_ACCESS_SUPPORTED = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

function nextPow2(n: number): number {
  return n <= 1 ? 1 : 2 ** Math.ceil(Math.log2(n));
}

/**
 * The XRC rules of CREATE_QP: an XRC_SEND QP has a PD and a send CQ but no
 * receive side (no receive CQ, ring or SRQ); an XRC_RECV QP has only its XRC
 * domain (no PD, CQs, rings or SRQ: each request names its XRC SRQ). Other
 * types name no domain.
 */
function checkXrcQp(
  fw: Firmware,
  type: number,
  inp: { pdn: number; sendCqn: number; recvCqn: number; xrcdn: number; sqRingAddr: bigint; rqRingAddr: bigint },
  hasSrq: boolean,
): void {
  if (type !== IBV_QPT_XRC_RECV) {
    if (inp.xrcdn !== 0) fail(CmdStatus.BAD_PARAM, 'xrcdn', 'only an XRC_RECV QP has an XRC domain');
    if (type === IBV_QPT_XRC_SEND) {
      if (inp.recvCqn !== 0) fail(CmdStatus.BAD_PARAM, 'recvCqn', 'an XRC_SEND QP has no receive CQ');
      if (hasSrq || inp.rqRingAddr !== 0n) fail(CmdStatus.BAD_PARAM, 'rqRingAddr', 'an XRC_SEND QP has no receive queue or SRQ');
    }
    return;
  }
  if (!fw.xrcds.isLive(inp.xrcdn)) fail(CmdStatus.BAD_RESOURCE, 'xrcdn', `no XRC domain ${inp.xrcdn}`);
  if (inp.pdn !== 0 || inp.sendCqn !== 0 || inp.recvCqn !== 0) fail(CmdStatus.BAD_PARAM, 'pdn', 'an XRC_RECV QP has no PD and no CQs');
  if (hasSrq || inp.sqRingAddr !== 0n || inp.rqRingAddr !== 0n)
    fail(CmdStatus.BAD_PARAM, 'sqRingAddr', 'an XRC_RECV QP has no send or receive queue and no SRQ');
}

function needPd(fw: Firmware, pdn: number, field = 'pdn'): void {
  if (!fw.pds.isLive(pdn)) fail(CmdStatus.BAD_RESOURCE, field, `no PD ${pdn}`);
}

function needCq(fw: Firmware, cqn: number, field: string): number {
  const off = fw.tables.cqByNumber(cqn);
  if (off < 0) fail(CmdStatus.BAD_RESOURCE, field, `no CQ ${cqn}`);
  return off;
}

function needPort(fw: Firmware, portNum: number, field: string) {
  const p = fw.port(portNum);
  if (!p) fail(CmdStatus.BAD_PARAM, field, `no port ${portNum}`);
  return p;
}

function needRing(fw: Firmware, addr: number, bytes: number, align: number, field: string): void {
  if (!fw.hostRangeOk(addr, bytes, align)) {
    fail(CmdStatus.BAD_PARAM, field, `[0x${addr.toString(16)}, +${bytes}) is not ${align}-byte aligned host memory`);
  }
}

function ascii64(s: string): Uint8Array {
  const b = new Uint8Array(64);
  for (let i = 0; i < s.length && i < 63; i++) b[i] = s.charCodeAt(i);
  return b;
}

/** Read the QP attributes of a context into QP_ATTR field values. */
function qpAttrsOf(fw: Firmware, qp: number): StructInput<typeof QP_ATTR.fields> {
  const dv = fw.tables.dv;
  const c = decodeStruct(QPC, dv, qp);
  const state = fw.tables.qpState(qp);
  const av = (prefix: 'av' | 'altAv', to: 'ah' | 'altAh') => {
    const o: Record<string, unknown> = {};
    for (const d of AV.fields) {
      if (d.name.startsWith('reserved')) continue;
      const cap = d.name[0]!.toUpperCase() + d.name.slice(1);
      o[to + cap] = (c as Record<string, unknown>)[prefix + cap];
    }
    return o;
  };
  return {
    qpState: state,
    curQpState: state,
    pathMtu: c.pathMtu,
    pathMigState: c.pathMigState,
    qkey: c.qkey,
    rqPsn: c.rqPsn,
    sqPsn: c.sqPsn,
    destQpNum: c.destQpn,
    qpAccessFlags: c.accessFlags,
    capMaxSendWr: c.sqRingAddr ? 1 << c.sqLogSize : 0,
    capMaxRecvWr: c.rqRingAddr ? 1 << c.rqLogSize : 0,
    capMaxSendSge: c.maxSendSge,
    capMaxRecvSge: c.maxRecvSge,
    capMaxInlineData: c.maxInlineData,
    pkeyIndex: c.pkeyIndex,
    altPkeyIndex: c.altPkeyIndex,
    enSqdAsyncNotify: c.flags & QpFlag.EN_SQD_ASYNC_NOTIFY ? 1 : 0,
    sqDraining: c.flags & QpFlag.SQ_DRAINING ? 1 : 0,
    maxRdAtomic: c.maxRdAtomic,
    maxDestRdAtomic: c.maxDestRdAtomic,
    minRnrTimer: c.minRnrTimer,
    portNum: c.portNum,
    timeout: c.timeout,
    retryCnt: c.retryCnt,
    rnrRetry: c.rnrRetry,
    altPortNum: c.altPortNum,
    altTimeout: c.altTimeout,
    rateLimit: c.rateLimit,
    ...av('av', 'ah'),
    ...av('altAv', 'altAh'),
  } as StructInput<typeof QP_ATTR.fields>;
}

/** Check an address vector given in MODIFY_QP (prefix 'ah' or 'altAh'). */
function checkAv(fw: Firmware, inp: Record<string, unknown>, prefix: 'ah' | 'altAh', qpPort: number): void {
  const g = (n: string) => inp[prefix + n] as number;
  const portNum = g('PortNum') || qpPort;
  const port = needPort(fw, portNum, prefix + 'PortNum');
  const sgid = g('SgidIndex');
  if (sgid >= port.gidTblLen || (port.linkLayer === IBV_LINK_LAYER_ETHERNET && sgid >= port.gidTable.length)) {
    fail(CmdStatus.BAD_PARAM, prefix + 'SgidIndex', `GID index ${sgid} is empty on port ${portNum}`);
  }
  if (port.linkLayer === IBV_LINK_LAYER_ETHERNET && !g('IsGlobal')) {
    fail(CmdStatus.BAD_PARAM, prefix + 'IsGlobal', 'RoCE requires a GRH (is_global = 1)');
  }
  if (port.linkLayer !== IBV_LINK_LAYER_ETHERNET) {
    const dlid = g('Dlid');
    if (dlid === 0 || dlid === 0xffff)
      fail(CmdStatus.BAD_PARAM, prefix + 'Dlid', `DLID ${dlid} is reserved (0) or permissive (0xFFFF): an InfiniBand path needs a port's LID`);
    if (g('IsGlobal') && sgid >= port.gidTable.length) fail(CmdStatus.BAD_PARAM, prefix + 'SgidIndex', `GID index ${sgid} is empty on port ${portNum}`);
  }
  if (g('StaticRate') > IBV_RATE_1200_GBPS) fail(CmdStatus.BAD_PARAM, prefix + 'StaticRate', `bad ibv_rate ${g('StaticRate')}`);
}

/** Copy the AV fields of MODIFY_QP (ah / altAh) into the QP context (av / altAv). */
function applyAv(fw: Firmware, qp: number, inp: Record<string, unknown>, from: 'ah' | 'altAh', to: 'av' | 'altAv'): void {
  const vals: Record<string, unknown> = {};
  for (const d of AV.fields) {
    if (d.name.startsWith('reserved')) continue;
    const cap = d.name[0]!.toUpperCase() + d.name.slice(1);
    vals[to + cap] = inp[from + cap];
  }
  encodeStruct(QPC, fw.tables.dv, qp, vals);
}

/** Create-time defaults of the modifiable QP attributes (also restored on RESET). */
function resetQpAttrs(fw: Firmware, qp: number): void {
  const t = fw.tables;
  const keep = new Set([
    'state',
    'flags',
    'modifySeq',
    'qpn',
    'qpType',
    'pdn',
    'sendCqn',
    'recvCqn',
    'srqn',
    'sqRingAddr',
    'rqRingAddr',
    'dbrecAddr',
    'sqLogSize',
    'sqLogStride',
    'rqLogSize',
    'rqLogStride',
    'maxSendSge',
    'maxRecvSge',
    'maxInlineData',
  ]);
  for (const d of QPC.fields) {
    if (keep.has(d.name)) continue;
    const a = (QPC.f as Record<string, { decl: FieldDecl; set: (dv: DataView, b: number, v: never) => void }>)[d.name]!;
    if (d.width <= 32) (a.set as (dv: DataView, b: number, v: number) => void)(t.dv, qp, 0);
    else t.u8.fill(0, qp + d.offset, qp + d.offset + d.width / 8);
  }
  QPC.f.pathMtu.set(t.dv, qp, IBV_MTU_256);
}

const MODIFY_RANGES: readonly [mask: number, field: string, max: number][] = [
  [IBV_QP_TIMEOUT, 'timeout', 31],
  [IBV_QP_RETRY_CNT, 'retryCnt', 7],
  [IBV_QP_RNR_RETRY, 'rnrRetry', 7],
  [IBV_QP_MIN_RNR_TIMER, 'minRnrTimer', 31],
  [IBV_QP_PATH_MIG_STATE, 'pathMigState', IBV_MIG_ARMED],
  [IBV_QP_EN_SQD_ASYNC_NOTIFY, 'enSqdAsyncNotify', 1],
  [IBV_QP_ALT_PATH, 'altTimeout', 31],
];

export const COMMANDS: readonly CommandDef[] = Object.freeze([
  command({
    opcode: Cmd.QUERY_DEVICE,
    name: 'QUERY_DEVICE',
    doc: 'Device attributes (ibv_query_device).',
    input: NONE_IN,
    output: QUERY_DEVICE_OUT,
    errors: [],
    run: (fw) => {
      const d = fw.caps.device as unknown as Record<string, unknown>;
      const out: Record<string, unknown> = {};
      for (const f of QUERY_DEVICE_OUT.fields) if (!f.name.startsWith('reserved')) out[f.name] = d[f.name];
      out['fwVer'] = ascii64(fw.caps.device.fwVer);
      return out as StructInput<typeof QUERY_DEVICE_OUT.fields>;
    },
  }),
  command({
    opcode: Cmd.QUERY_PORT,
    name: 'QUERY_PORT',
    doc: 'Port attributes (ibv_query_port). MTUs are ibv_mtu enums; the two counters come from the hardware counters.',
    input: PORT_IN,
    output: QUERY_PORT_OUT,
    errors: ['BAD_PARAM: no such port'],
    run: (fw, inp) => {
      const p = needPort(fw, inp.portNum, 'portNum');
      return {
        state: p.state,
        maxMtu: p.maxMtuEnum,
        activeMtu: p.activeMtuEnum,
        physState: p.physState,
        gidTblLen: p.gidTblLen,
        portCapFlags: p.portCapFlags,
        maxMsgSz: p.maxMsgSz,
        badPkeyCntr: Math.min(fw.counters.read(p.portNum, Ctr.BAD_PKEY_CNTR), 0xffffffff),
        qkeyViolCntr: Math.min(fw.counters.read(p.portNum, Ctr.QKEY_VIOL_CNTR), 0xffffffff),
        pkeyTblLen: p.pkeyTblLen,
        lid: p.lid,
        smLid: p.smLid,
        lmc: p.lmc,
        maxVlNum: p.maxVlNum,
        smSl: p.smSl,
        subnetTimeout: p.subnetTimeout,
        initTypeReply: p.initTypeReply,
        activeWidth: p.activeWidth,
        activeSpeed: p.activeSpeed,
        linkLayer: p.linkLayer,
        flags: p.flags,
        portCapFlags2: p.portCapFlags2,
        activeSpeedEx: p.activeSpeedEx,
      };
    },
  }),
  command({
    opcode: Cmd.QUERY_GID,
    name: 'QUERY_GID',
    doc: 'One GID table entry (ibv_query_gid / ibv_query_gid_ex). Entries past the populated ones read as zero.',
    input: TABLE_INDEX_IN,
    output: QUERY_GID_OUT,
    errors: ['BAD_PARAM: no such port, or index ≥ gidTblLen'],
    run: (fw, inp) => {
      const p = needPort(fw, inp.portNum, 'portNum');
      if (inp.index >= p.gidTblLen) fail(CmdStatus.BAD_PARAM, 'index', `GID index ${inp.index} ≥ ${p.gidTblLen}`);
      const e = p.gidTable[inp.index];
      return e ? { gid: e.gid, gidType: e.type } : {};
    },
  }),
  command({
    opcode: Cmd.QUERY_PKEY,
    name: 'QUERY_PKEY',
    doc: 'One P_Key table entry (ibv_query_pkey).',
    input: TABLE_INDEX_IN,
    output: QUERY_PKEY_OUT,
    errors: ['BAD_PARAM: no such port, or index ≥ pkeyTblLen'],
    run: (fw, inp) => {
      const p = needPort(fw, inp.portNum, 'portNum');
      if (inp.index >= p.pkeyTblLen) fail(CmdStatus.BAD_PARAM, 'index', `P_Key index ${inp.index} ≥ ${p.pkeyTblLen}`);
      return { pkey: p.pkeyTable[inp.index]! };
    },
  }),
  command({
    opcode: Cmd.QUERY_CLOCK,
    name: 'QUERY_CLOCK',
    doc: 'Read the free-running device clock (ibv_query_rt_values_ex raw_clock), in hcaCoreClock ticks.',
    input: NONE_IN,
    output: QUERY_CLOCK_OUT,
    errors: [],
    run: (fw) => ({ clock: BigInt(fw.clockTicks()) }),
  }),
  command({
    opcode: Cmd.ALLOC_PD,
    name: 'ALLOC_PD',
    doc: 'Allocate a protection domain (ibv_alloc_pd). PD numbers start at 1.',
    input: NONE_IN,
    output: ALLOC_PD_OUT,
    errors: ['NO_RESOURCES: maxPd PDs exist'],
    run: (fw) => {
      const pdn = fw.pds.alloc();
      if (pdn < 0) fail(CmdStatus.NO_RESOURCES, '', 'PD table full');
      return { pdn };
    },
  }),
  command({
    opcode: Cmd.DEALLOC_PD,
    name: 'DEALLOC_PD',
    doc: 'Free a protection domain (ibv_dealloc_pd).',
    input: PDN_LAYOUT,
    output: null,
    errors: ['BAD_RESOURCE: no such PD', 'BUSY: MRs, QPs or SRQs still use it'],
    run: (fw, inp) => {
      needPd(fw, inp.pdn);
      if (fw.pdRefs[inp.pdn]! > 0) fail(CmdStatus.BUSY, 'pdn', `PD ${inp.pdn} still has ${fw.pdRefs[inp.pdn]} users`);
      fw.pds.free(inp.pdn);
    },
  }),
  command({
    opcode: Cmd.ALLOC_XRCD,
    name: 'ALLOC_XRCD',
    doc: "Allocate an XRC domain (ibv_open_xrcd of a new domain). XRC domain numbers start at 1; which file a domain belongs to is the driver's business.",
    input: NONE_IN,
    output: ALLOC_XRCD_OUT,
    errors: ['NO_RESOURCES: maxXrcd XRC domains exist'],
    run: (fw) => {
      const xrcdn = fw.xrcds.alloc();
      if (xrcdn < 0) fail(CmdStatus.NO_RESOURCES, '', `maxXrcd (${fw.caps.device.maxXrcd}) XRC domains exist`);
      return { xrcdn };
    },
  }),
  command({
    opcode: Cmd.DEALLOC_XRCD,
    name: 'DEALLOC_XRCD',
    doc: 'Free an XRC domain (the last ibv_close_xrcd of it).',
    input: XRCDN_LAYOUT,
    output: null,
    errors: ['BAD_RESOURCE: no such XRC domain', 'BUSY: XRC SRQs or XRC receive QPs still use it'],
    run: (fw, inp) => {
      if (!fw.xrcds.isLive(inp.xrcdn)) fail(CmdStatus.BAD_RESOURCE, 'xrcdn', `no XRC domain ${inp.xrcdn}`);
      if (fw.xrcdRefs[inp.xrcdn]! > 0) fail(CmdStatus.BUSY, 'xrcdn', `XRC domain ${inp.xrcdn} still has ${fw.xrcdRefs[inp.xrcdn]} users`);
      fw.xrcds.free(inp.xrcdn);
    },
  }),
  command({
    opcode: Cmd.REG_MR,
    name: 'REG_MR',
    doc: 'Register a memory region (ibv_reg_mr): creates an MPT entry. lkey = rkey = (index << 8) | variant; the variant changes every time an index is reused.',
    input: REG_MR_IN,
    output: REG_MR_OUT,
    errors: [
      'BAD_RESOURCE: no such PD',
      'BAD_PARAM: unsupported access bit; REMOTE_WRITE or REMOTE_ATOMIC without LOCAL_WRITE; length 0 or > maxMrSize; buffer not in host memory; iova + length ≥ 2^53',
      'NO_RESOURCES: maxMr MRs exist',
    ],
    run: (fw, inp) => {
      needPd(fw, inp.pdn);
      const access = inp.access & ~IBV_ACCESS_OPTIONAL_RANGE;
      if (access & ~MR_ACCESS_SUPPORTED) fail(CmdStatus.BAD_PARAM, 'access', `unsupported access flags 0x${(access & ~MR_ACCESS_SUPPORTED).toString(16)}`);
      if (access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC) && !(access & IBV_ACCESS_LOCAL_WRITE)) {
        fail(CmdStatus.BAD_PARAM, 'access', 'REMOTE_WRITE / REMOTE_ATOMIC need LOCAL_WRITE');
      }
      if (inp.length === 0n || inp.length > fw.caps.device.maxMrSize) fail(CmdStatus.BAD_PARAM, 'length', `bad length ${inp.length}`);
      const len = Number(inp.length);
      if (!fw.hostRangeOk(Number(inp.hostAddr), len, 1) || inp.hostAddr > BigInt(Number.MAX_SAFE_INTEGER)) {
        fail(CmdStatus.BAD_PARAM, 'hostAddr', 'buffer is not inside host memory');
      }
      if (inp.iova + inp.length > BigInt(Number.MAX_SAFE_INTEGER)) fail(CmdStatus.BAD_PARAM, 'iova', 'iova + length must stay below 2^53');
      if (fw.mrs.inUse - fw.mws.size >= fw.caps.device.maxMr) fail(CmdStatus.NO_RESOURCES, '', `maxMr (${fw.caps.device.maxMr}) MRs exist`);
      const idx = fw.mrs.alloc();
      if (idx < 0) fail(CmdStatus.NO_RESOURCES, '', 'MPT full');
      const key = ((idx << 8) | fw.mrVariant[idx]!) >>> 0;
      const t = fw.tables;
      const off = t.mptOff(idx);
      t.mptChanged();
      encodeStruct(MPT, t.dv, off, { key, pdn: inp.pdn, access, iova: inp.iova, length: inp.length, hostAddr: inp.hostAddr });
      Atomics.store(t.i32, (off + CtxOff.MPT_FLAGS) >> 2, MptFlag.VALID);
      fw.pdRefs[inp.pdn]!++;
      return { lkey: key, rkey: key };
    },
  }),
  command({
    opcode: Cmd.REREG_MR,
    name: 'REREG_MR',
    doc: 'Change a memory region in place (ibv_rereg_mr): its translation, PD and/or access. The keys stay the same; the new values are checked as REG_MR checks them, all before any is applied.',
    input: REREG_MR_IN,
    output: null,
    errors: [
      'BAD_RESOURCE: no live MR with exactly this key, or no such PD',
      'BAD_PARAM: no flag or an unknown one; a value REG_MR would refuse',
      'BUSY: memory windows are bound to the MR',
    ],
    run: (fw, inp) => {
      const t = fw.tables;
      const off = t.mrByLkey(inp.key);
      if (off < 0) fail(CmdStatus.BAD_RESOURCE, 'key', `no MR with key 0x${inp.key.toString(16)}`);
      const windows = Atomics.load(t.i32, (off + CtxOff.MPT_MW_COUNT) >> 2);
      if (windows > 0) fail(CmdStatus.BUSY, 'key', `${windows} memory window(s) are bound to the MR`);
      if (inp.flags === 0 || inp.flags & ~(ReregFlag.TRANSLATION | ReregFlag.PD | ReregFlag.ACCESS))
        fail(CmdStatus.BAD_PARAM, 'flags', `bad flags 0x${inp.flags.toString(16)}`);
      const cur = decodeStruct(MPT, t.dv, off);
      const pdn = inp.flags & ReregFlag.PD ? inp.pdn : cur.pdn;
      if (inp.flags & ReregFlag.PD) needPd(fw, pdn);
      const access = inp.flags & ReregFlag.ACCESS ? inp.access & ~IBV_ACCESS_OPTIONAL_RANGE : cur.access;
      if (access & ~MR_ACCESS_SUPPORTED) fail(CmdStatus.BAD_PARAM, 'access', `unsupported access flags 0x${(access & ~MR_ACCESS_SUPPORTED).toString(16)}`);
      if (access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC) && !(access & IBV_ACCESS_LOCAL_WRITE))
        fail(CmdStatus.BAD_PARAM, 'access', 'REMOTE_WRITE / REMOTE_ATOMIC need LOCAL_WRITE');
      let { hostAddr, length, iova } = cur;
      if (inp.flags & ReregFlag.TRANSLATION) {
        ({ hostAddr, length, iova } = inp);
        if (length === 0n || length > fw.caps.device.maxMrSize) fail(CmdStatus.BAD_PARAM, 'length', `bad length ${length}`);
        if (!fw.hostRangeOk(Number(hostAddr), Number(length), 1) || hostAddr > BigInt(Number.MAX_SAFE_INTEGER))
          fail(CmdStatus.BAD_PARAM, 'hostAddr', 'buffer is not inside host memory');
        if (iova + length > BigInt(Number.MAX_SAFE_INTEGER)) fail(CmdStatus.BAD_PARAM, 'iova', 'iova + length must stay below 2^53');
      }
      t.mptChanged();
      encodeStruct(MPT, t.dv, off, { pdn, access, hostAddr, length, iova });
      if (pdn !== cur.pdn) {
        fw.pdRefs[cur.pdn]!--;
        fw.pdRefs[pdn]!++;
      }
    },
  }),
  command({
    opcode: Cmd.DEREG_MR,
    name: 'DEREG_MR',
    doc: "Deregister a memory region (ibv_dereg_mr). The key stops working at once; the index's next key has a new variant.",
    input: KEY_IN,
    output: null,
    errors: ['BAD_RESOURCE: no live MR with exactly this key', 'BUSY: memory windows are bound to the MR (IBTA: deregistration fails while windows are bound)'],
    run: (fw, inp) => {
      const t = fw.tables;
      const off = t.mrByLkey(inp.key);
      if (off < 0) fail(CmdStatus.BAD_RESOURCE, 'key', `no MR with key 0x${inp.key.toString(16)}`);
      const idx = inp.key >>> 8;
      const pdn = MPT.f.pdn.get(t.dv, off);
      // The key stops first, then the window count is read: a concurrent bind sees one or the other (mw.ts).
      Atomics.store(t.i32, (off + CtxOff.MPT_FLAGS) >> 2, 0);
      const windows = Atomics.load(t.i32, (off + CtxOff.MPT_MW_COUNT) >> 2);
      if (windows > 0) {
        Atomics.store(t.i32, (off + CtxOff.MPT_FLAGS) >> 2, MptFlag.VALID);
        fail(CmdStatus.BUSY, 'key', `${windows} memory window(s) are bound to the MR`);
      }
      t.mptChanged(); // no packet runs between the store above and here (one thread)
      fw.clearEntry(off, MPT.size);
      fw.mrVariant[idx] = (fw.mrVariant[idx]! + 1) & 0xff;
      fw.mrs.free(idx);
      fw.pdRefs[pdn]!--;
    },
  }),
  command({
    opcode: Cmd.ALLOC_MW,
    name: 'ALLOC_MW',
    doc: 'Allocate a memory window (ibv_alloc_mw): an MPT entry in the key space of MRs, unbound. A type 1 window is VALID at once (ibv_bind_mw binds it), a type 2 window FREE until a BIND_MW WQE binds it to its QP (device manual, memory windows).',
    input: ALLOC_MW_IN,
    output: ALLOC_MW_OUT,
    errors: ['BAD_RESOURCE: no such PD', 'BAD_PARAM: type not 1 or 2', 'NO_RESOURCES: maxMw windows exist'],
    run: (fw, inp) => {
      needPd(fw, inp.pdn);
      if (inp.type !== IBV_MW_TYPE_1 && inp.type !== IBV_MW_TYPE_2) fail(CmdStatus.BAD_PARAM, 'type', `memory window type ${inp.type} (1 or 2)`);
      if (fw.mws.size >= fw.caps.device.maxMw) fail(CmdStatus.NO_RESOURCES, '', `maxMw (${fw.caps.device.maxMw}) windows exist`);
      const idx = fw.mrs.alloc();
      if (idx < 0) fail(CmdStatus.NO_RESOURCES, '', 'MPT full');
      const key = ((idx << 8) | fw.mrVariant[idx]!) >>> 0;
      mwInit(fw.tables, fw.tables.mptOff(idx), key, inp.pdn, inp.type === IBV_MW_TYPE_2);
      fw.mws.add(idx);
      fw.pdRefs[inp.pdn]!++;
      return { rkey: key };
    },
  }),
  command({
    opcode: Cmd.DEALLOC_MW,
    name: 'DEALLOC_MW',
    doc: "Free a memory window (ibv_dealloc_mw), bound or not: its key (any key byte) stops working at once and the MR it was bound to loses a window. The index's next key has a new variant.",
    input: KEY_IN,
    output: null,
    errors: ['BAD_RESOURCE: no window at this key index'],
    run: (fw, inp) => {
      const t = fw.tables;
      const idx = inp.key >>> 8;
      const off = mwByIndex(t, idx);
      if (off < 0 || !fw.mws.has(idx)) fail(CmdStatus.BAD_RESOURCE, 'key', `no memory window with key 0x${inp.key.toString(16)}`);
      const pdn = MPT.f.pdn.get(t.dv, off);
      mwFree(t, off);
      fw.mws.delete(idx);
      fw.mrVariant[idx] = (fw.mrVariant[idx]! + 1) & 0xff;
      fw.mrs.free(idx);
      fw.pdRefs[pdn]!--;
    },
  }),
  command({
    opcode: Cmd.CREATE_CQ,
    name: 'CREATE_CQ',
    doc: 'Create a completion queue (ibv_create_cq). The driver rounds cqe + 1 up to a power of two.',
    input: CREATE_CQ_IN,
    output: CREATE_CQ_OUT,
    errors: ['BAD_PARAM: size, ring or record not valid', 'BAD_RESOURCE: no such EQ', 'NO_RESOURCES: maxCq CQs exist'],
    run: (fw, inp) => {
      if (inp.logSize > 24 || 1 << inp.logSize > nextPow2(fw.caps.device.maxCqe + 1)) {
        fail(CmdStatus.BAD_PARAM, 'logSize', `2^${inp.logSize} entries exceed maxCqe`);
      }
      needRing(fw, Number(inp.ringAddr), CQE_SIZE << inp.logSize, CQE_SIZE, 'ringAddr');
      needRing(fw, Number(inp.dbrecAddr), 8, 8, 'dbrecAddr');
      if (fw.tables.eqByNumber(inp.eqn) < 0) fail(CmdStatus.BAD_RESOURCE, 'eqn', `no EQ ${inp.eqn}`);
      const cqn = fw.cqs.alloc();
      if (cqn < 0) fail(CmdStatus.NO_RESOURCES, '', 'CQ table full');
      const t = fw.tables;
      const off = t.cqOff(cqn);
      fw.clearEntry(off, CQC.size);
      encodeStruct(CQC, t.dv, off, { ringAddr: inp.ringAddr, dbrecAddr: inp.dbrecAddr, eqn: inp.eqn, logSize: inp.logSize });
      Atomics.store(t.i32, (off + CtxOff.CQ_FLAGS) >> 2, CqFlag.VALID);
      fw.eqRefs[inp.eqn]!++;
      return { cqn };
    },
  }),
  command({
    opcode: Cmd.DESTROY_CQ,
    name: 'DESTROY_CQ',
    doc: 'Destroy a completion queue (ibv_destroy_cq).',
    input: CQN_LAYOUT,
    output: null,
    errors: ['BAD_RESOURCE: no such CQ', 'BUSY: QPs still use it'],
    run: (fw, inp) => {
      const off = needCq(fw, inp.cqn, 'cqn');
      if (fw.cqRefs[inp.cqn]! > 0) fail(CmdStatus.BUSY, 'cqn', `CQ ${inp.cqn} still has ${fw.cqRefs[inp.cqn]} QPs`);
      const eqn = CQC.f.eqn.get(fw.tables.dv, off);
      Atomics.store(fw.tables.i32, (off + CtxOff.CQ_FLAGS) >> 2, 0);
      fw.clearEntry(off, CQC.size);
      fw.cqs.free(inp.cqn);
      fw.eqRefs[eqn]!--;
    },
  }),
  command({
    opcode: Cmd.RESIZE_CQ,
    name: 'RESIZE_CQ',
    doc: "Move a CQ to a new ring (ibv_resize_cq). The CQEs the driver has not consumed (from its doorbell record up to the producer) are copied to the same counter positions of the new ring, with the new ring's phase; the producer counter is kept. The driver frees the old ring after success.",
    input: RESIZE_CQ_IN,
    output: null,
    errors: ['BAD_RESOURCE: no such CQ', 'BAD_PARAM: size or ring not valid, or fewer entries than unconsumed CQEs', 'BAD_STATE: the CQ overflowed'],
    run: (fw, inp) => {
      const off = needCq(fw, inp.cqn, 'cqn');
      if (inp.logSize > 24 || 1 << inp.logSize > nextPow2(fw.caps.device.maxCqe + 1))
        fail(CmdStatus.BAD_PARAM, 'logSize', `2^${inp.logSize} entries exceed maxCqe`);
      needRing(fw, Number(inp.ringAddr), CQE_SIZE << inp.logSize, CQE_SIZE, 'ringAddr');
      const t = fw.tables;
      if (Atomics.load(t.i32, (off + CtxOff.CQ_FLAGS) >> 2) & CqFlag.ERROR) fail(CmdStatus.BAD_STATE, 'cqn', `CQ ${inp.cqn} overflowed`);
      const mem = fw.mem;
      const producer = Atomics.load(t.i32, (off + CtxOff.CQ_PRODUCER) >> 2) >>> 0;
      const ci = loadDbrec(mem, CQC.f.dbrecAddr.getNum(t.dv, off));
      const outstanding = (producer - ci) >>> 0;
      if (outstanding >= 1 << inp.logSize)
        fail(CmdStatus.BAD_PARAM, 'logSize', `${outstanding} CQEs are not consumed yet; 2^${inp.logSize} - 1 cannot hold them`);
      const oldLog = CQC.f.logSize.get(t.dv, off);
      const oldRing = CQC.f.ringAddr.getNum(t.dv, off) - mem.baseNum;
      const newRing = Number(inp.ringAddr) - mem.baseNum;
      for (let n = ci; n !== producer; n = (n + 1) >>> 0) {
        const from = cqeOffset(oldRing, n, oldLog);
        const to = cqeOffset(newRing, n, inp.logSize);
        mem.u8.copyWithin(to, from, from + CQE_OWNER_OFFSET);
        Atomics.store(mem.u8, to + CQE_OWNER_OFFSET, ringPhase(n, inp.logSize));
      }
      encodeStruct(CQC, t.dv, off, { ringAddr: inp.ringAddr, logSize: inp.logSize });
    },
  }),
  command({
    opcode: Cmd.MODIFY_CQ,
    name: 'MODIFY_CQ',
    doc: 'Set CQ moderation (ibv_modify_cq): an armed CQ raises its completion event at the cqCount-th CQE, or cqPeriod µs after the first CQE it held back, whichever comes first.',
    input: MODIFY_CQ_IN,
    output: null,
    errors: ['BAD_RESOURCE: no such CQ'],
    run: (fw, inp) => {
      const off = needCq(fw, inp.cqn, 'cqn');
      encodeStruct(CQC, fw.tables.dv, off, { modCount: inp.cqCount, modPeriod: inp.cqPeriod });
    },
  }),
  command({
    opcode: Cmd.CREATE_EQ,
    name: 'CREATE_EQ',
    doc: 'Create an event queue. It starts disarmed: arm it with an EQ doorbell (updateEqCi(..., arm = true)). Its BAR consumer index is reset to 0.',
    input: CREATE_EQ_IN,
    output: CREATE_EQ_OUT,
    errors: ['BAD_PARAM: size, ring or vector not valid', 'NO_RESOURCES: maxEq EQs exist'],
    run: (fw, inp) => {
      if (inp.logSize < 1 || inp.logSize > 22) fail(CmdStatus.BAD_PARAM, 'logSize', 'logSize must be 1..22');
      needRing(fw, Number(inp.ringAddr), EQE_SIZE << inp.logSize, EQE_SIZE, 'ringAddr');
      if (inp.intVector >= fw.caps.device.numCompVectors) fail(CmdStatus.BAD_PARAM, 'intVector', `no interrupt vector ${inp.intVector}`);
      const eqn = fw.eqs.alloc();
      if (eqn < 0) fail(CmdStatus.NO_RESOURCES, '', 'EQ table full');
      const t = fw.tables;
      const off = t.eqOff(eqn);
      fw.clearEntry(off, EQC.size);
      encodeStruct(EQC, t.dv, off, { ringAddr: inp.ringAddr, logSize: inp.logSize, intVector: inp.intVector });
      Atomics.store(fw.bar.i32, fw.bar.slotBase[DbKind.EQ]! + eqn, 0);
      Atomics.store(t.i32, (off + CtxOff.EQ_FLAGS) >> 2, EqFlag.VALID);
      return { eqn };
    },
  }),
  command({
    opcode: Cmd.DESTROY_EQ,
    name: 'DESTROY_EQ',
    doc: 'Destroy an event queue.',
    input: EQN_LAYOUT,
    output: null,
    errors: ['BAD_RESOURCE: no such EQ', 'BUSY: CQs still use it'],
    run: (fw, inp) => {
      const off = fw.tables.eqByNumber(inp.eqn);
      if (off < 0) fail(CmdStatus.BAD_RESOURCE, 'eqn', `no EQ ${inp.eqn}`);
      if (fw.eqRefs[inp.eqn]! > 0) fail(CmdStatus.BUSY, 'eqn', `EQ ${inp.eqn} still has ${fw.eqRefs[inp.eqn]} CQs`);
      Atomics.store(fw.tables.i32, (off + CtxOff.EQ_FLAGS) >> 2, 0);
      fw.clearEntry(off, EQC.size);
      fw.eqs.free(inp.eqn);
    },
  }),
  command({
    opcode: Cmd.CREATE_SRQ,
    name: 'CREATE_SRQ',
    doc: 'Create a shared receive queue (ibv_create_srq), or an XRC SRQ (xrcdn ≠ 0: ibv_create_srq_ex with IBV_SRQT_XRC) in an XRC domain with the CQ its receives complete on. The driver links the free entries through nextWqeIndex (entry i → i + 1 mod size) before posting.',
    input: CREATE_SRQ_IN,
    output: CREATE_SRQ_OUT,
    errors: [
      'BAD_RESOURCE: no such PD, XRC domain or CQ',
      'BAD_PARAM: size, stride, SGEs, limit, ring or record not valid; a CQ for a basic SRQ',
      'NO_RESOURCES: maxSrq SRQs exist',
    ],
    run: (fw, inp) => {
      const d = fw.caps.device;
      needPd(fw, inp.pdn);
      if (inp.xrcdn !== 0) {
        if (!fw.xrcds.isLive(inp.xrcdn)) fail(CmdStatus.BAD_RESOURCE, 'xrcdn', `no XRC domain ${inp.xrcdn}`);
        needCq(fw, inp.cqn, 'cqn');
      } else if (inp.cqn !== 0) fail(CmdStatus.BAD_PARAM, 'cqn', 'only an XRC SRQ has a CQ');
      if (inp.logSize > 24 || 1 << inp.logSize > nextPow2(d.maxSrqWr)) fail(CmdStatus.BAD_PARAM, 'logSize', `2^${inp.logSize} entries exceed maxSrqWr`);
      if (inp.maxSge > d.maxSrqSge) fail(CmdStatus.BAD_PARAM, 'maxSge', `${inp.maxSge} SGEs exceed maxSrqSge ${d.maxSrqSge}`);
      if (inp.logStride > 12 || 1 << inp.logStride < recvWqeStride(inp.maxSge)) fail(CmdStatus.BAD_PARAM, 'logStride', 'stride too small or > 4096');
      if (inp.limit > 1 << inp.logSize) fail(CmdStatus.BAD_PARAM, 'limit', 'limit exceeds the SRQ size');
      needRing(fw, Number(inp.ringAddr), (1 << inp.logSize) << inp.logStride, 64, 'ringAddr');
      needRing(fw, Number(inp.dbrecAddr), 8, 8, 'dbrecAddr');
      const srqn = fw.srqs.alloc();
      if (srqn < 0) fail(CmdStatus.NO_RESOURCES, '', 'SRQ table full');
      const t = fw.tables;
      const off = t.srqOff(srqn);
      fw.clearEntry(off, SRQC.size);
      encodeStruct(SRQC, t.dv, off, {
        pdn: inp.pdn,
        ringAddr: inp.ringAddr,
        dbrecAddr: inp.dbrecAddr,
        logSize: inp.logSize,
        logStride: inp.logStride,
        maxSge: inp.maxSge,
        limit: inp.limit,
        xrcdn: inp.xrcdn,
        cqn: inp.cqn,
      });
      Atomics.store(t.i32, (off + CtxOff.SRQ_FLAGS) >> 2, SrqFlag.VALID | (inp.limit > 0 ? SrqFlag.LIMIT_ARMED : 0));
      fw.pdRefs[inp.pdn]!++;
      if (inp.xrcdn !== 0) {
        fw.xrcdRefs[inp.xrcdn]!++;
        fw.cqRefs[inp.cqn]!++;
      }
      return { srqn };
    },
  }),
  command({
    opcode: Cmd.MODIFY_SRQ,
    name: 'MODIFY_SRQ',
    doc: 'Set the SRQ limit (ibv_modify_srq with IBV_SRQ_LIMIT); a non-zero limit arms the SRQ_LIMIT_REACHED event, 0 disarms it. Resizing (IBV_SRQ_MAX_WR) is not supported.',
    input: MODIFY_SRQ_IN,
    output: null,
    errors: ['BAD_RESOURCE: no such SRQ', 'BAD_PARAM: IBV_SRQ_MAX_WR or unknown mask bits; limit > size'],
    run: (fw, inp) => {
      const t = fw.tables;
      const off = t.srqByNumber(inp.srqn);
      if (off < 0) fail(CmdStatus.BAD_RESOURCE, 'srqn', `no SRQ ${inp.srqn}`);
      if (inp.attrMask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)) fail(CmdStatus.BAD_PARAM, 'attrMask', 'unknown mask bits');
      if (inp.attrMask & IBV_SRQ_MAX_WR) fail(CmdStatus.BAD_PARAM, 'attrMask', 'SRQ resize is not supported');
      if (inp.attrMask & IBV_SRQ_LIMIT) {
        if (inp.limit > 1 << SRQC.f.logSize.get(t.dv, off)) fail(CmdStatus.BAD_PARAM, 'limit', 'limit exceeds the SRQ size');
        SRQC.f.limit.set(t.dv, off, inp.limit);
        const w = (off + CtxOff.SRQ_FLAGS) >> 2;
        if (inp.limit > 0) Atomics.or(t.i32, w, SrqFlag.LIMIT_ARMED);
        else Atomics.and(t.i32, w, ~SrqFlag.LIMIT_ARMED);
      }
    },
  }),
  command({
    opcode: Cmd.QUERY_SRQ,
    name: 'QUERY_SRQ',
    doc: 'SRQ attributes (ibv_query_srq).',
    input: SRQN_LAYOUT,
    output: QUERY_SRQ_OUT,
    errors: ['BAD_RESOURCE: no such SRQ'],
    run: (fw, inp) => {
      const t = fw.tables;
      const off = t.srqByNumber(inp.srqn);
      if (off < 0) fail(CmdStatus.BAD_RESOURCE, 'srqn', `no SRQ ${inp.srqn}`);
      const armed = Atomics.load(t.i32, (off + CtxOff.SRQ_FLAGS) >> 2) & SrqFlag.LIMIT_ARMED;
      return {
        maxWr: 1 << SRQC.f.logSize.get(t.dv, off),
        maxSge: SRQC.f.maxSge.get(t.dv, off),
        limit: armed ? SRQC.f.limit.get(t.dv, off) : 0,
      };
    },
  }),
  command({
    opcode: Cmd.DESTROY_SRQ,
    name: 'DESTROY_SRQ',
    doc: 'Destroy a shared receive queue (ibv_destroy_srq).',
    input: SRQN_LAYOUT,
    output: null,
    errors: ['BAD_RESOURCE: no such SRQ', 'BUSY: QPs still use it'],
    run: (fw, inp) => {
      const t = fw.tables;
      const off = t.srqByNumber(inp.srqn);
      if (off < 0) fail(CmdStatus.BAD_RESOURCE, 'srqn', `no SRQ ${inp.srqn}`);
      if (fw.srqRefs[inp.srqn]! > 0) fail(CmdStatus.BUSY, 'srqn', `SRQ ${inp.srqn} still has ${fw.srqRefs[inp.srqn]} QPs`);
      const pdn = SRQC.f.pdn.get(t.dv, off);
      const xrcdn = SRQC.f.xrcdn.get(t.dv, off);
      const cqn = SRQC.f.cqn.get(t.dv, off);
      Atomics.store(t.i32, (off + CtxOff.SRQ_FLAGS) >> 2, 0);
      fw.clearEntry(off, SRQC.size);
      fw.srqs.free(inp.srqn);
      fw.pdRefs[pdn]!--;
      if (xrcdn !== 0) {
        fw.xrcdRefs[xrcdn]!--;
        fw.cqRefs[cqn]!--;
      }
    },
  }),
  command({
    opcode: Cmd.CREATE_QP,
    name: 'CREATE_QP',
    doc: 'Create a queue pair (ibv_create_qp) in RESET. QPNs start at 2. The driver computes ring sizes (powers of two ≥ max_*_wr) and strides (sendWqeStride / recvWqeStride).',
    input: CREATE_QP_IN,
    output: CREATE_QP_OUT,
    errors: [
      'BAD_PARAM: QP type not RC/UC/UD/XRC_SEND/XRC_RECV; an XRC_SEND QP with a receive CQ, ring or SRQ; an XRC_RECV QP with a PD, a CQ, a ring or an SRQ; an XRC domain on another type; an XRC SRQ given as the SRQ of another QP type; unknown flag; ring size, stride, SGE or inline count out of range; ring or record not in host memory; a receive ring together with an SRQ',
      'BAD_RESOURCE: no such PD, CQ, SRQ or XRC domain',
      'NO_RESOURCES: maxQp QPs exist',
    ],
    run: (fw, inp) => {
      const d = fw.caps.device;
      if (!SUPPORTED_QP_TYPES.includes(inp.qpType)) fail(CmdStatus.BAD_PARAM, 'qpType', `QP type ${inp.qpType} not supported`);
      if (inp.flags & ~(CreateQpFlag.SQ_SIG_ALL | CreateQpFlag.HAS_SRQ | CreateQpFlag.BLOCK_SELF_MCAST_LB)) fail(CmdStatus.BAD_PARAM, 'flags', 'unknown flags');
      if (inp.flags & CreateQpFlag.BLOCK_SELF_MCAST_LB && inp.qpType !== IBV_QPT_UD)
        fail(CmdStatus.BAD_PARAM, 'flags', 'multicast loopback blocking is for UD QPs');
      const hasSrq = (inp.flags & CreateQpFlag.HAS_SRQ) !== 0;
      checkXrcQp(fw, inp.qpType, inp, hasSrq);
      if (inp.qpType !== IBV_QPT_XRC_RECV) {
        needPd(fw, inp.pdn);
        needCq(fw, inp.sendCqn, 'sendCqn');
        if (inp.qpType !== IBV_QPT_XRC_SEND) needCq(fw, inp.recvCqn, 'recvCqn');
      }
      if (hasSrq && fw.tables.srqByNumber(inp.srqn) < 0) fail(CmdStatus.BAD_RESOURCE, 'srqn', `no SRQ ${inp.srqn}`);
      if (hasSrq && SRQC.f.xrcdn.get(fw.tables.dv, fw.tables.srqByNumber(inp.srqn)) !== 0)
        fail(CmdStatus.BAD_PARAM, 'srqn', `SRQ ${inp.srqn} is an XRC SRQ: only XRC receive QPs deliver into it`);
      if (hasSrq && inp.rqRingAddr !== 0n) fail(CmdStatus.BAD_PARAM, 'rqRingAddr', 'a QP with an SRQ has no receive ring');
      const maxWrLog = log2(nextPow2(d.maxQpWr));
      if (inp.maxSendSge > d.maxSge) fail(CmdStatus.BAD_PARAM, 'maxSendSge', `${inp.maxSendSge} > maxSge ${d.maxSge}`);
      if (inp.maxRecvSge > d.maxSge) fail(CmdStatus.BAD_PARAM, 'maxRecvSge', `${inp.maxRecvSge} > maxSge ${d.maxSge}`);
      if (inp.maxInlineData > d.maxInlineData) fail(CmdStatus.BAD_PARAM, 'maxInlineData', `${inp.maxInlineData} > ${d.maxInlineData}`);
      if (inp.sqRingAddr !== 0n) {
        if (inp.sqLogSize > maxWrLog) fail(CmdStatus.BAD_PARAM, 'sqLogSize', `2^${inp.sqLogSize} entries exceed maxQpWr`);
        const stride = 1 << inp.sqLogStride;
        if (inp.sqLogStride > log2(MAX_WQE_STRIDE) || stride < sendWqeStride(inp.qpType, inp.maxSendSge, inp.maxInlineData)) {
          fail(CmdStatus.BAD_PARAM, 'sqLogStride', `stride ${stride} does not hold the send caps (or > ${MAX_WQE_STRIDE})`);
        }
        needRing(fw, Number(inp.sqRingAddr), (1 << inp.sqLogSize) * stride, 64, 'sqRingAddr');
      }
      if (inp.rqRingAddr !== 0n) {
        if (inp.rqLogSize > maxWrLog) fail(CmdStatus.BAD_PARAM, 'rqLogSize', `2^${inp.rqLogSize} entries exceed maxQpWr`);
        const stride = 1 << inp.rqLogStride;
        if (inp.rqLogStride > log2(MAX_WQE_STRIDE) || stride < recvWqeStride(inp.maxRecvSge)) {
          fail(CmdStatus.BAD_PARAM, 'rqLogStride', `stride ${stride} does not hold ${inp.maxRecvSge} SGEs (or > ${MAX_WQE_STRIDE})`);
        }
        needRing(fw, Number(inp.rqRingAddr), (1 << inp.rqLogSize) * stride, 64, 'rqRingAddr');
      }
      needRing(fw, Number(inp.dbrecAddr), 8, 8, 'dbrecAddr');
      const qpn = fw.qps.alloc();
      if (qpn < 0) fail(CmdStatus.NO_RESOURCES, '', 'QP table full');
      const t = fw.tables;
      const off = t.qpOff(qpn);
      fw.clearEntry(off, QPC.size, [CtxOff.QP_MODIFY_SEQ]);
      encodeStruct(QPC, t.dv, off, {
        qpn,
        qpType: inp.qpType,
        pdn: inp.pdn,
        sendCqn: inp.sendCqn,
        recvCqn: inp.recvCqn,
        srqn: hasSrq ? inp.srqn : 0,
        xrcdn: inp.xrcdn,
        sqRingAddr: inp.sqRingAddr,
        rqRingAddr: inp.rqRingAddr,
        dbrecAddr: inp.dbrecAddr,
        sqLogSize: inp.sqRingAddr ? inp.sqLogSize : 0,
        sqLogStride: inp.sqRingAddr ? inp.sqLogStride : 0,
        rqLogSize: inp.rqRingAddr ? inp.rqLogSize : 0,
        rqLogStride: inp.rqRingAddr ? inp.rqLogStride : 0,
        maxSendSge: inp.maxSendSge,
        maxRecvSge: inp.maxRecvSge,
        maxInlineData: inp.maxInlineData,
        pathMtu: IBV_MTU_256,
      });
      Atomics.add(t.i32, (off + CtxOff.QP_MODIFY_SEQ) >> 2, 1);
      Atomics.store(t.i32, (off + CtxOff.QP_STATE) >> 2, IBV_QPS_RESET);
      Atomics.store(
        t.i32,
        (off + CtxOff.QP_FLAGS) >> 2,
        QpFlag.VALID |
          (inp.flags & CreateQpFlag.SQ_SIG_ALL ? QpFlag.SQ_SIG_ALL : 0) |
          (hasSrq ? QpFlag.HAS_SRQ : 0) |
          (inp.flags & CreateQpFlag.BLOCK_SELF_MCAST_LB ? QpFlag.BLOCK_SELF_MCAST_LB : 0),
      );
      // What the QP holds (0: an XRC QP without that object).
      if (inp.pdn) fw.pdRefs[inp.pdn]!++;
      if (inp.sendCqn) fw.cqRefs[inp.sendCqn]!++;
      if (inp.recvCqn) fw.cqRefs[inp.recvCqn]!++;
      if (inp.xrcdn) fw.xrcdRefs[inp.xrcdn]!++;
      if (hasSrq) fw.srqRefs[inp.srqn]!++;
      fw.qpChanges.note(qpn);
      return { qpn };
    },
  }),
  command({
    opcode: Cmd.MODIFY_QP,
    name: 'MODIFY_QP',
    doc:
      "Modify a QP (ibv_modify_qp). The device enforces the QP state machine (abi/qp-state.ts, the kernel's qp_state_table) and the value ranges, then applies every masked attribute at once. " +
      'Entering ERR sets QpFlag.FLUSH_PENDING (the pipeline flushes outstanding WQEs with WR_FLUSH_ERR); entering RESET sets RESET_PENDING, zeroes the consumer counters and restores the create-time attribute defaults. ' +
      'IBV_QP_CUR_STATE, when given, must equal the actual state.',
    input: MODIFY_QP_IN,
    output: null,
    errors: [
      'BAD_RESOURCE: no such QP',
      'BAD_STATE: the transition cur → next is not in the table; IBV_QP_CUR_STATE differs from the actual state; the QP changed state concurrently',
      "BAD_PARAM: unknown mask bit; a required attribute missing or one not allowed for this transition; a value out of range (timeout, min_rnr_timer, alt_timeout > 31; retry_cnt, rnr_retry > 7; path_mtu not 1..5 or above the port's active MTU; max_rd_atomic > maxQpInitRdAtom; max_dest_rd_atomic > maxQpRdAtom; bad port, P_Key index, GID index, access flags; no GRH on RoCE)",
    ],
    run: (fw, inp) => {
      const t = fw.tables;
      const qp = t.qpByNumber(inp.qpn);
      if (qp < 0) fail(CmdStatus.BAD_RESOURCE, 'qpn', `no QP ${inp.qpn}`);
      const mask = inp.attrMask >>> 0;
      if (mask & ~IBV_QP_ATTR_MASK_ALL) fail(CmdStatus.BAD_PARAM, 'attrMask', `unknown mask bits 0x${(mask & ~IBV_QP_ATTR_MASK_ALL).toString(16)}`);
      const cur = t.qpState(qp);
      const qpType = QPC.f.qpType.get(t.dv, qp);
      if (mask & IBV_QP_CUR_STATE && inp.curQpState !== cur) {
        fail(CmdStatus.BAD_STATE, 'curQpState', `cur_qp_state ${inp.curQpState} differs from the actual state ${cur}`);
      }
      const next = mask & IBV_QP_STATE ? inp.qpState : cur;
      if (next > IBV_QPS_ERR) fail(CmdStatus.BAD_PARAM, 'qpState', `bad state ${next}`);
      const ok = modifyQpIsOk(cur, next, qpType, mask);
      if (!ok.ok) {
        fail(qpTransitionMasks(cur, next, qpType) ? CmdStatus.BAD_PARAM : CmdStatus.BAD_STATE, 'attrMask', ok.reason);
      }
      // Value ranges.
      const d = fw.caps.device;
      const raw = inp as unknown as Record<string, number>;
      for (const [bit, field, max] of MODIFY_RANGES) {
        if (mask & bit && raw[field]! > max) fail(CmdStatus.BAD_PARAM, field, `${field} ${raw[field]} > ${max}`);
      }
      const portNum = mask & IBV_QP_PORT ? inp.portNum : QPC.f.portNum.get(t.dv, qp);
      if (mask & IBV_QP_PORT) needPort(fw, inp.portNum, 'portNum');
      const port = fw.port(portNum);
      if (mask & IBV_QP_PKEY_INDEX && (!port || inp.pkeyIndex >= port.pkeyTblLen)) {
        fail(CmdStatus.BAD_PARAM, 'pkeyIndex', `P_Key index ${inp.pkeyIndex} out of range`);
      }
      if (mask & IBV_QP_ACCESS_FLAGS && inp.qpAccessFlags & ~QP_ACCESS_SUPPORTED) {
        fail(CmdStatus.BAD_PARAM, 'qpAccessFlags', `unsupported access flags 0x${inp.qpAccessFlags.toString(16)}`);
      }
      if (mask & IBV_QP_PATH_MTU) {
        const limit = port ? port.activeMtuEnum : IBV_MTU_4096;
        if (inp.pathMtu < IBV_MTU_256 || inp.pathMtu > limit) fail(CmdStatus.BAD_PARAM, 'pathMtu', `path_mtu ${inp.pathMtu} not in 1..${limit}`);
      }
      if (mask & IBV_QP_MAX_QP_RD_ATOMIC && inp.maxRdAtomic > d.maxQpInitRdAtom) {
        fail(CmdStatus.BAD_PARAM, 'maxRdAtomic', `max_rd_atomic ${inp.maxRdAtomic} > ${d.maxQpInitRdAtom}`);
      }
      if (mask & IBV_QP_MAX_DEST_RD_ATOMIC && inp.maxDestRdAtomic > d.maxQpRdAtom) {
        fail(CmdStatus.BAD_PARAM, 'maxDestRdAtomic', `max_dest_rd_atomic ${inp.maxDestRdAtomic} > ${d.maxQpRdAtom}`);
      }
      if (mask & IBV_QP_AV) checkAv(fw, raw, 'ah', portNum);
      if (mask & IBV_QP_ALT_PATH) {
        needPort(fw, inp.altPortNum, 'altPortNum');
        checkAv(fw, raw, 'altAh', inp.altPortNum);
        const altPort = fw.port(inp.altPortNum)!;
        if (inp.altPkeyIndex >= altPort.pkeyTblLen) fail(CmdStatus.BAD_PARAM, 'altPkeyIndex', 'alternate P_Key index out of range');
      }

      // Apply: nothing above changed any state.
      const dv = t.dv;
      if (next === IBV_QPS_RESET && cur !== IBV_QPS_RESET) resetQpAttrs(fw, qp);
      const set: Record<string, unknown> = {};
      if (mask & IBV_QP_ACCESS_FLAGS) set['accessFlags'] = inp.qpAccessFlags;
      if (mask & IBV_QP_PKEY_INDEX) set['pkeyIndex'] = inp.pkeyIndex;
      if (mask & IBV_QP_PORT) set['portNum'] = inp.portNum;
      if (mask & IBV_QP_QKEY) set['qkey'] = inp.qkey;
      if (mask & IBV_QP_PATH_MTU) set['pathMtu'] = inp.pathMtu;
      if (mask & IBV_QP_TIMEOUT) set['timeout'] = inp.timeout;
      if (mask & IBV_QP_RETRY_CNT) set['retryCnt'] = inp.retryCnt;
      if (mask & IBV_QP_RNR_RETRY) set['rnrRetry'] = inp.rnrRetry;
      if (mask & IBV_QP_RQ_PSN) set['rqPsn'] = inp.rqPsn;
      if (mask & IBV_QP_SQ_PSN) set['sqPsn'] = inp.sqPsn;
      if (mask & IBV_QP_MAX_QP_RD_ATOMIC) set['maxRdAtomic'] = inp.maxRdAtomic;
      if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) set['maxDestRdAtomic'] = inp.maxDestRdAtomic;
      if (mask & IBV_QP_MIN_RNR_TIMER) set['minRnrTimer'] = inp.minRnrTimer;
      if (mask & IBV_QP_PATH_MIG_STATE) set['pathMigState'] = inp.pathMigState;
      if (mask & IBV_QP_DEST_QPN) set['destQpn'] = inp.destQpNum;
      if (mask & IBV_QP_RATE_LIMIT) set['rateLimit'] = inp.rateLimit;
      if (mask & IBV_QP_ALT_PATH) {
        set['altPortNum'] = inp.altPortNum;
        set['altTimeout'] = inp.altTimeout;
        set['altPkeyIndex'] = inp.altPkeyIndex;
      }
      encodeStruct(QPC, dv, qp, set);
      if (mask & IBV_QP_AV) applyAv(fw, qp, raw, 'ah', 'av');
      if (mask & IBV_QP_ALT_PATH) applyAv(fw, qp, raw, 'altAh', 'altAv');
      const flagsW = (qp + CtxOff.QP_FLAGS) >> 2;
      if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY) {
        if (inp.enSqdAsyncNotify) Atomics.or(t.i32, flagsW, QpFlag.EN_SQD_ASYNC_NOTIFY);
        else Atomics.and(t.i32, flagsW, ~QpFlag.EN_SQD_ASYNC_NOTIFY);
      }
      if (next !== cur) {
        // Leaving SQD ends a drain still running (sq_draining reads 0, no SQ_DRAINED event).
        if (cur === IBV_QPS_SQD) Atomics.and(t.i32, flagsW, ~QpFlag.SQ_DRAINING);
        if (next === IBV_QPS_RESET) {
          QPC.f.sqConsumed.set(dv, qp, 0);
          QPC.f.rqConsumed.set(dv, qp, 0);
          Atomics.and(t.i32, flagsW, ~(QpFlag.FLUSH_PENDING | QpFlag.SQ_DRAINING));
          Atomics.or(t.i32, flagsW, QpFlag.RESET_PENDING);
        } else if (next === IBV_QPS_ERR) {
          Atomics.or(t.i32, flagsW, QpFlag.FLUSH_PENDING);
        } else if (next === IBV_QPS_SQD) {
          Atomics.or(t.i32, flagsW, QpFlag.SQ_DRAINING);
        }
      }
      Atomics.add(t.i32, (qp + CtxOff.QP_MODIFY_SEQ) >> 2, 1);
      fw.qpChanges.note(inp.qpn);
      if (Atomics.compareExchange(t.i32, (qp + CtxOff.QP_STATE) >> 2, cur, next) !== cur) {
        fail(CmdStatus.BAD_STATE, '', 'the QP changed state while being modified');
      }
    },
  }),
  command({
    opcode: Cmd.QUERY_QP,
    name: 'QUERY_QP',
    doc: 'QP attributes (ibv_query_qp): every ibv_qp_attr field (sq_psn / rq_psn as the pipeline left them) and the creation attributes.',
    input: QPN_LAYOUT,
    output: QUERY_QP_OUT,
    errors: ['BAD_RESOURCE: no such QP'],
    run: (fw, inp) => {
      const t = fw.tables;
      const qp = t.qpByNumber(inp.qpn);
      if (qp < 0) fail(CmdStatus.BAD_RESOURCE, 'qpn', `no QP ${inp.qpn}`);
      const flags = t.qpFlags(qp);
      return {
        ...(qpAttrsOf(fw, qp) as Record<string, unknown>),
        qpType: QPC.f.qpType.get(t.dv, qp),
        sqSigAll: flags & QpFlag.SQ_SIG_ALL ? 1 : 0,
        sendCqn: QPC.f.sendCqn.get(t.dv, qp),
        recvCqn: QPC.f.recvCqn.get(t.dv, qp),
        srqn: QPC.f.srqn.get(t.dv, qp),
      } as StructInput<typeof QUERY_QP_OUT.fields>;
    },
  }),
  command({
    opcode: Cmd.DESTROY_QP,
    name: 'DESTROY_QP',
    doc: 'Destroy a QP (ibv_destroy_qp), in any state. The context is zeroed (VALID cleared) except modifySeq, which is incremented so the pipeline can tell a reused QPN from the old QP.',
    input: QPN_LAYOUT,
    output: null,
    errors: ['BAD_RESOURCE: no such QP'],
    run: (fw, inp) => {
      const t = fw.tables;
      const qp = t.qpByNumber(inp.qpn);
      if (qp < 0) fail(CmdStatus.BAD_RESOURCE, 'qpn', `no QP ${inp.qpn}`);
      const c = decodeStruct(QPC, t.dv, qp);
      Atomics.store(t.i32, (qp + CtxOff.QP_FLAGS) >> 2, 0);
      Atomics.store(t.i32, (qp + CtxOff.QP_STATE) >> 2, IBV_QPS_RESET);
      fw.clearEntry(qp, QPC.size, [CtxOff.QP_MODIFY_SEQ]);
      Atomics.add(t.i32, (qp + CtxOff.QP_MODIFY_SEQ) >> 2, 1);
      fw.qps.free(inp.qpn);
      fw.qpChanges.note(inp.qpn);
      if (c.pdn) fw.pdRefs[c.pdn]!--;
      if (c.sendCqn) fw.cqRefs[c.sendCqn]!--;
      if (c.recvCqn) fw.cqRefs[c.recvCqn]!--;
      if (c.xrcdn) fw.xrcdRefs[c.xrcdn]!--;
      if (c.flags & QpFlag.HAS_SRQ) fw.srqRefs[c.srqn]!--;
      // Type 2 windows bound to it go back to FREE: no QP may use them any more.
      for (const idx of fw.mws) mwReleaseQp(t, t.mptOff(idx), inp.qpn);
      // A destroyed QP leaves its multicast groups (rxe does the same).
      for (const [k, g] of fw.mcast) if (g.delete(inp.qpn) && g.size === 0) fw.mcast.delete(k);
    },
  }),
  command({
    opcode: Cmd.ATTACH_MCAST,
    name: 'ATTACH_MCAST',
    doc: "Attach a UD QP to a multicast group (ibv_attach_mcast): UD packets to the group's GID with destination QPN 0xFFFFFF are delivered to every attached QP on the port that receives them. Attaching twice is a no-op.",
    input: MCAST_IN,
    output: null,
    errors: [
      'BAD_RESOURCE: no such QP',
      'BAD_PARAM: not a UD QP, or not a multicast GID',
      'NO_RESOURCES: maxMcastGrp groups, maxMcastQpAttach QPs in the group, or maxTotalMcastQpAttach attachments exist',
    ],
    run: (fw, inp) => {
      const key = mcastKey(fw, inp.qpn, inp.mgid);
      const g = fw.mcast.get(key);
      if (g?.has(inp.qpn)) return;
      const d = fw.caps.device;
      let total = 0;
      for (const x of fw.mcast.values()) total += x.size;
      if (!g && fw.mcast.size >= d.maxMcastGrp) fail(CmdStatus.NO_RESOURCES, 'mgid', `${d.maxMcastGrp} multicast groups exist`);
      if (g && g.size >= d.maxMcastQpAttach) fail(CmdStatus.NO_RESOURCES, 'qpn', `the group has ${d.maxMcastQpAttach} QPs`);
      if (total >= d.maxTotalMcastQpAttach) fail(CmdStatus.NO_RESOURCES, 'qpn', `${d.maxTotalMcastQpAttach} attachments exist`);
      if (g) g.add(inp.qpn);
      else fw.mcast.set(key, new Set([inp.qpn]));
    },
  }),
  command({
    opcode: Cmd.DETACH_MCAST,
    name: 'DETACH_MCAST',
    doc: 'Detach a UD QP from a multicast group (ibv_detach_mcast).',
    input: MCAST_IN,
    output: null,
    errors: ['BAD_RESOURCE: no such QP', 'BAD_PARAM: not a UD QP, not a multicast GID, or the QP is not attached to the group'],
    run: (fw, inp) => {
      const key = mcastKey(fw, inp.qpn, inp.mgid);
      const g = fw.mcast.get(key);
      if (!g?.has(inp.qpn)) fail(CmdStatus.BAD_PARAM, 'mgid', `QP ${inp.qpn} is not attached to the group`);
      g.delete(inp.qpn);
      if (g.size === 0) fw.mcast.delete(key);
    },
  }),
  command({
    opcode: Cmd.MODIFY_QP_RATE_LIMIT,
    name: 'MODIFY_QP_RATE_LIMIT',
    doc: "Pace a QP's requests (ibv_modify_qp_rate_limit), in any state: no request packet starts sooner than the previous one's bytes (line bytes: padding, FCS, preamble and gap counted) at this rate; with congestion control on, the lower of the two rates holds. 0 lifts the limit. The kernel's modify_qp takes IB_QP_RATE_LIMIT only on raw packet QPs; this command is the model's provider op for RC, UC and UD (packet_pacing_caps).",
    input: MODIFY_QP_RATE_LIMIT_IN,
    output: null,
    errors: [
      'BAD_RESOURCE: no such QP',
      `BAD_PARAM: not an RC, UC or UD QP; rate_limit not 0 and outside ${QP_RATE_LIMIT_MIN_KBPS}..${QP_RATE_LIMIT_MAX_KBPS} kbit/s; max_burst_sz or typical_pkt_sz not 0 (no burst support)`,
    ],
    run: (fw, inp) => {
      const t = fw.tables;
      const qp = t.qpByNumber(inp.qpn);
      if (qp < 0) fail(CmdStatus.BAD_RESOURCE, 'qpn', `no QP ${inp.qpn}`);
      const type = QPC.f.qpType.get(t.dv, qp);
      if (type !== IBV_QPT_RC && type !== IBV_QPT_UC && type !== IBV_QPT_UD) fail(CmdStatus.BAD_PARAM, 'qpn', `QP ${inp.qpn} is not RC, UC or UD`);
      const r = inp.rateLimit >>> 0;
      if (r !== 0 && (r < QP_RATE_LIMIT_MIN_KBPS || r > QP_RATE_LIMIT_MAX_KBPS))
        fail(CmdStatus.BAD_PARAM, 'rateLimit', `rate_limit ${r} kbit/s outside ${QP_RATE_LIMIT_MIN_KBPS}..${QP_RATE_LIMIT_MAX_KBPS}`);
      // As a device without burst support (mlx5 without MLX5_IB_PP_SUPPORT_BURST): packet by packet.
      if (inp.maxBurstSz !== 0 || inp.typicalPktSz !== 0)
        fail(CmdStatus.BAD_PARAM, 'maxBurstSz', 'the device paces packet by packet: max_burst_sz and typical_pkt_sz must be 0');
      QPC.f.rateLimit.set(t.dv, qp, r);
      Atomics.add(t.i32, (qp + CtxOff.QP_MODIFY_SEQ) >> 2, 1);
      fw.qpChanges.note(inp.qpn);
    },
  }),
]);

/** The group key of a multicast GID, after checking the QP (UD) and the GID (multicast). */
function mcastKey(fw: Firmware, qpn: number, mgid: Uint8Array): string {
  const qp = fw.tables.qpByNumber(qpn);
  if (qp < 0) fail(CmdStatus.BAD_RESOURCE, 'qpn', `no QP ${qpn}`);
  if (QPC.f.qpType.get(fw.tables.dv, qp) !== IBV_QPT_UD) fail(CmdStatus.BAD_PARAM, 'qpn', `QP ${qpn} is not UD`);
  const v4mapped = mgid.subarray(0, 10).every((b) => b === 0) && mgid[10] === 0xff && mgid[11] === 0xff;
  if (mgid[0] !== 0xff && !(v4mapped && (mgid[12]! & 0xf0) === 0xe0)) fail(CmdStatus.BAD_PARAM, 'mgid', 'not a multicast GID');
  let k = '';
  for (let i = 0; i < 16; i++) k += (mgid[i]! | 0x100).toString(16).slice(1);
  return k;
}

const BY_OPCODE = new Map(COMMANDS.map((c) => [c.opcode, c] as const));

/** The command definition of an opcode, or undefined. */
export function commandByOpcode(opcode: number): CommandDef | undefined {
  return BY_OPCODE.get(opcode);
}
