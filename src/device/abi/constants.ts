/**
 * libibverbs constants, with rdma-core's exact names and numeric values.
 *
 * Every enum of `<infiniband/verbs.h>` that an application touches is
 * exported here as plain `const` numbers (not TypeScript enums), so a C
 * verbs program ports line by line:
 *
 *   C:  wr.opcode = IBV_WR_RDMA_WRITE; wr.send_flags = IBV_SEND_SIGNALED;
 *   TS: wr.opcode = IBV_WR_RDMA_WRITE; wr.send_flags = IBV_SEND_SIGNALED;
 *
 * Each group also gets a `type` alias named after the C enum (all `number`):
 * it documents intent in signatures without making arithmetic on flags
 * awkward.
 *
 * Sources (facts only; no text or code copied):
 * - linux-rdma/rdma-core `libibverbs/verbs.h` (read at 00b335ca and 85d8a414).
 *   Those copies predate FLUSH / ATOMIC_WRITE; the newer values (WR opcodes
 *   14/15, WC opcodes 8/9, FLUSH access flags, rate 800/1200 Gb/s, NDR/XDR
 *   port_cap_flags2, DRIVER2/3 WC opcodes, *_UNSPECIFIED node/transport types)
 *   were taken from several independent bindings generated from a current
 *   verbs.h and from the rdma-core patches that added them.
 * - rdma-core `libibverbs/enum_strs.c` (newest copy: has WQ_FATAL,
 *   TM_* statuses, NODE_UNSPECIFIED and ibv_wr_opcode_str) for the strings.
 * - rdma-core `libibverbs/verbs.c` for the ibv_rate helpers (userspace
 *   tables, which differ from the kernel's ib_rate_to_mult; see below).
 * - Linux uapi `rdma/ib_user_verbs.h` for the 64-bit device capability bits.
 *
 * Values above 2^31 that fit in 32 bits are plain numbers; flags beyond bit 31
 * (64-bit `device_cap_flags_ex`) are `bigint`.
 */

// ---------------------------------------------------------------------------
// enum ibv_node_type
// ---------------------------------------------------------------------------
export type ibv_node_type = number;
export const IBV_NODE_UNKNOWN = -1;
export const IBV_NODE_CA = 1;
export const IBV_NODE_SWITCH = 2;
export const IBV_NODE_ROUTER = 3;
export const IBV_NODE_RNIC = 4;
export const IBV_NODE_USNIC = 5;
export const IBV_NODE_USNIC_UDP = 6;
export const IBV_NODE_UNSPECIFIED = 7;

// ---------------------------------------------------------------------------
// enum ibv_transport_type
// ---------------------------------------------------------------------------
export type ibv_transport_type = number;
export const IBV_TRANSPORT_UNKNOWN = -1;
export const IBV_TRANSPORT_IB = 0;
export const IBV_TRANSPORT_IWARP = 1;
export const IBV_TRANSPORT_USNIC = 2;
export const IBV_TRANSPORT_USNIC_UDP = 3;
export const IBV_TRANSPORT_UNSPECIFIED = 4;

// ---------------------------------------------------------------------------
// enum ibv_device_cap_flags (ibv_device_attr.device_cap_flags, 32 bits)
// ---------------------------------------------------------------------------
export type ibv_device_cap_flags = number;
export const IBV_DEVICE_RESIZE_MAX_WR = 1 << 0;
export const IBV_DEVICE_BAD_PKEY_CNTR = 1 << 1;
export const IBV_DEVICE_BAD_QKEY_CNTR = 1 << 2;
export const IBV_DEVICE_RAW_MULTI = 1 << 3;
export const IBV_DEVICE_AUTO_PATH_MIG = 1 << 4;
export const IBV_DEVICE_CHANGE_PHY_PORT = 1 << 5;
export const IBV_DEVICE_UD_AV_PORT_ENFORCE = 1 << 6;
export const IBV_DEVICE_CURR_QP_STATE_MOD = 1 << 7;
export const IBV_DEVICE_SHUTDOWN_PORT = 1 << 8;
export const IBV_DEVICE_INIT_TYPE = 1 << 9;
export const IBV_DEVICE_PORT_ACTIVE_EVENT = 1 << 10;
export const IBV_DEVICE_SYS_IMAGE_GUID = 1 << 11;
export const IBV_DEVICE_RC_RNR_NAK_GEN = 1 << 12;
export const IBV_DEVICE_SRQ_RESIZE = 1 << 13;
export const IBV_DEVICE_N_NOTIFY_CQ = 1 << 14;
export const IBV_DEVICE_MEM_WINDOW = 1 << 17;
export const IBV_DEVICE_UD_IP_CSUM = 1 << 18;
export const IBV_DEVICE_XRC = 1 << 20;
export const IBV_DEVICE_MEM_MGT_EXTENSIONS = 1 << 21;
export const IBV_DEVICE_MEM_WINDOW_TYPE_2A = 1 << 23;
export const IBV_DEVICE_MEM_WINDOW_TYPE_2B = 1 << 24;
export const IBV_DEVICE_RC_IP_CSUM = 1 << 25;
export const IBV_DEVICE_RAW_IP_CSUM = 1 << 26;
export const IBV_DEVICE_MANAGED_FLOW_STEERING = 1 << 29;

/**
 * 64-bit capability bits of `ibv_device_attr_ex.device_cap_flags_ex`.
 * verbs.h defines the first two as `1ULL << n` macros; the others come from
 * the kernel uapi enum ib_uverbs_device_cap_flags, which verbs.h includes and
 * which applications test directly (e.g. for FLUSH / ATOMIC_WRITE support).
 */
export const IBV_DEVICE_RAW_SCATTER_FCS = 1n << 34n;
export const IBV_DEVICE_PCI_WRITE_END_PADDING = 1n << 36n;
export const IB_UVERBS_DEVICE_FLUSH_GLOBAL = 1n << 38n;
export const IB_UVERBS_DEVICE_FLUSH_PERSISTENT = 1n << 39n;
export const IB_UVERBS_DEVICE_ATOMIC_WRITE = 1n << 40n;

// ---------------------------------------------------------------------------
// enum ibv_atomic_cap
// ---------------------------------------------------------------------------
export type ibv_atomic_cap = number;
export const IBV_ATOMIC_NONE = 0;
export const IBV_ATOMIC_HCA = 1;
export const IBV_ATOMIC_GLOB = 2;

// ---------------------------------------------------------------------------
// enum ibv_mtu
// ---------------------------------------------------------------------------
export type ibv_mtu = number;
export const IBV_MTU_256 = 1;
export const IBV_MTU_512 = 2;
export const IBV_MTU_1024 = 3;
export const IBV_MTU_2048 = 4;
export const IBV_MTU_4096 = 5;

// ---------------------------------------------------------------------------
// enum ibv_port_state
// ---------------------------------------------------------------------------
export type ibv_port_state = number;
export const IBV_PORT_NOP = 0;
export const IBV_PORT_DOWN = 1;
export const IBV_PORT_INIT = 2;
export const IBV_PORT_ARMED = 3;
export const IBV_PORT_ACTIVE = 4;
export const IBV_PORT_ACTIVE_DEFER = 5;

// ---------------------------------------------------------------------------
// IBV_LINK_LAYER_* (anonymous enum; ibv_port_attr.link_layer)
// ---------------------------------------------------------------------------
export const IBV_LINK_LAYER_UNSPECIFIED = 0;
export const IBV_LINK_LAYER_INFINIBAND = 1;
export const IBV_LINK_LAYER_ETHERNET = 2;

// ---------------------------------------------------------------------------
// enum ibv_port_cap_flags (ibv_port_attr.port_cap_flags)
// ---------------------------------------------------------------------------
export type ibv_port_cap_flags = number;
export const IBV_PORT_SM = 1 << 1;
export const IBV_PORT_NOTICE_SUP = 1 << 2;
export const IBV_PORT_TRAP_SUP = 1 << 3;
export const IBV_PORT_OPT_IPD_SUP = 1 << 4;
export const IBV_PORT_AUTO_MIGR_SUP = 1 << 5;
export const IBV_PORT_SL_MAP_SUP = 1 << 6;
export const IBV_PORT_MKEY_NVRAM = 1 << 7;
export const IBV_PORT_PKEY_NVRAM = 1 << 8;
export const IBV_PORT_LED_INFO_SUP = 1 << 9;
export const IBV_PORT_SYS_IMAGE_GUID_SUP = 1 << 11;
export const IBV_PORT_PKEY_SW_EXT_PORT_TRAP_SUP = 1 << 12;
export const IBV_PORT_EXTENDED_SPEEDS_SUP = 1 << 14;
export const IBV_PORT_CAP_MASK2_SUP = 1 << 15;
export const IBV_PORT_CM_SUP = 1 << 16;
export const IBV_PORT_SNMP_TUNNEL_SUP = 1 << 17;
export const IBV_PORT_REINIT_SUP = 1 << 18;
export const IBV_PORT_DEVICE_MGMT_SUP = 1 << 19;
export const IBV_PORT_VENDOR_CLASS_SUP = 1 << 20;
export const IBV_PORT_DR_NOTICE_SUP = 1 << 21;
export const IBV_PORT_CAP_MASK_NOTICE_SUP = 1 << 22;
export const IBV_PORT_BOOT_MGMT_SUP = 1 << 23;
export const IBV_PORT_LINK_LATENCY_SUP = 1 << 24;
export const IBV_PORT_CLIENT_REG_SUP = 1 << 25;
export const IBV_PORT_IP_BASED_GIDS = 1 << 26;

// enum ibv_port_cap_flags2 (ibv_port_attr.port_cap_flags2)
export type ibv_port_cap_flags2 = number;
export const IBV_PORT_SET_NODE_DESC_SUP = 1 << 0;
export const IBV_PORT_INFO_EXT_SUP = 1 << 1;
export const IBV_PORT_VIRT_SUP = 1 << 2;
export const IBV_PORT_SWITCH_PORT_STATE_TABLE_SUP = 1 << 3;
export const IBV_PORT_LINK_WIDTH_2X_SUP = 1 << 4;
export const IBV_PORT_LINK_SPEED_HDR_SUP = 1 << 5;
export const IBV_PORT_LINK_SPEED_NDR_SUP = 1 << 10;
export const IBV_PORT_LINK_SPEED_XDR_SUP = 1 << 12;

// ---------------------------------------------------------------------------
// enum ibv_gid_type (ibv_query_gid_ex / ibv_gid_entry.gid_type)
// ---------------------------------------------------------------------------
export type ibv_gid_type = number;
export const IBV_GID_TYPE_IB = 0;
export const IBV_GID_TYPE_ROCE_V1 = 1;
export const IBV_GID_TYPE_ROCE_V2 = 2;

// ---------------------------------------------------------------------------
// enum ibv_event_type (asynchronous events, ibv_get_async_event)
// ---------------------------------------------------------------------------
export type ibv_event_type = number;
export const IBV_EVENT_CQ_ERR = 0;
export const IBV_EVENT_QP_FATAL = 1;
export const IBV_EVENT_QP_REQ_ERR = 2;
export const IBV_EVENT_QP_ACCESS_ERR = 3;
export const IBV_EVENT_COMM_EST = 4;
export const IBV_EVENT_SQ_DRAINED = 5;
export const IBV_EVENT_PATH_MIG = 6;
export const IBV_EVENT_PATH_MIG_ERR = 7;
export const IBV_EVENT_DEVICE_FATAL = 8;
export const IBV_EVENT_PORT_ACTIVE = 9;
export const IBV_EVENT_PORT_ERR = 10;
export const IBV_EVENT_LID_CHANGE = 11;
export const IBV_EVENT_PKEY_CHANGE = 12;
export const IBV_EVENT_SM_CHANGE = 13;
export const IBV_EVENT_SRQ_ERR = 14;
export const IBV_EVENT_SRQ_LIMIT_REACHED = 15;
export const IBV_EVENT_QP_LAST_WQE_REACHED = 16;
export const IBV_EVENT_CLIENT_REREGISTER = 17;
export const IBV_EVENT_GID_CHANGE = 18;
export const IBV_EVENT_WQ_FATAL = 19;

// ---------------------------------------------------------------------------
// enum ibv_wc_status (all 24)
// ---------------------------------------------------------------------------
export type ibv_wc_status = number;
export const IBV_WC_SUCCESS = 0;
export const IBV_WC_LOC_LEN_ERR = 1;
export const IBV_WC_LOC_QP_OP_ERR = 2;
export const IBV_WC_LOC_EEC_OP_ERR = 3;
export const IBV_WC_LOC_PROT_ERR = 4;
export const IBV_WC_WR_FLUSH_ERR = 5;
export const IBV_WC_MW_BIND_ERR = 6;
export const IBV_WC_BAD_RESP_ERR = 7;
export const IBV_WC_LOC_ACCESS_ERR = 8;
export const IBV_WC_REM_INV_REQ_ERR = 9;
export const IBV_WC_REM_ACCESS_ERR = 10;
export const IBV_WC_REM_OP_ERR = 11;
export const IBV_WC_RETRY_EXC_ERR = 12;
export const IBV_WC_RNR_RETRY_EXC_ERR = 13;
export const IBV_WC_LOC_RDD_VIOL_ERR = 14;
export const IBV_WC_REM_INV_RD_REQ_ERR = 15;
export const IBV_WC_REM_ABORT_ERR = 16;
export const IBV_WC_INV_EECN_ERR = 17;
export const IBV_WC_INV_EEC_STATE_ERR = 18;
export const IBV_WC_FATAL_ERR = 19;
export const IBV_WC_RESP_TIMEOUT_ERR = 20;
export const IBV_WC_GENERAL_ERR = 21;
export const IBV_WC_TM_ERR = 22;
export const IBV_WC_TM_RNDV_INCOMPLETE = 23;

// ---------------------------------------------------------------------------
// enum ibv_wc_opcode
// IBV_WC_RECV is 1 << 7 so that `opcode & IBV_WC_RECV` tests for a receive.
// ---------------------------------------------------------------------------
export type ibv_wc_opcode = number;
export const IBV_WC_SEND = 0;
export const IBV_WC_RDMA_WRITE = 1;
export const IBV_WC_RDMA_READ = 2;
export const IBV_WC_COMP_SWAP = 3;
export const IBV_WC_FETCH_ADD = 4;
export const IBV_WC_BIND_MW = 5;
export const IBV_WC_LOCAL_INV = 6;
export const IBV_WC_TSO = 7;
export const IBV_WC_FLUSH = 8;
export const IBV_WC_ATOMIC_WRITE = 9;
export const IBV_WC_RECV = 1 << 7;
export const IBV_WC_RECV_RDMA_WITH_IMM = 129;
export const IBV_WC_TM_ADD = 130;
export const IBV_WC_TM_DEL = 131;
export const IBV_WC_TM_SYNC = 132;
export const IBV_WC_TM_RECV = 133;
export const IBV_WC_TM_NO_TAG = 134;
export const IBV_WC_DRIVER1 = 135;
export const IBV_WC_DRIVER2 = 136;
export const IBV_WC_DRIVER3 = 137;

// ---------------------------------------------------------------------------
// enum ibv_wc_flags (ibv_wc.wc_flags)
// ---------------------------------------------------------------------------
export type ibv_wc_flags = number;
export const IBV_WC_IP_CSUM_OK_SHIFT = 2;
export const IBV_WC_GRH = 1 << 0;
export const IBV_WC_WITH_IMM = 1 << 1;
export const IBV_WC_IP_CSUM_OK = 1 << IBV_WC_IP_CSUM_OK_SHIFT;
export const IBV_WC_WITH_INV = 1 << 3;
export const IBV_WC_TM_SYNC_REQ = 1 << 4;
export const IBV_WC_TM_MATCH = 1 << 5;
export const IBV_WC_TM_DATA_VALID = 1 << 6;

// enum ibv_create_cq_wc_flags (ibv_cq_init_attr_ex.wc_flags)
export type ibv_create_cq_wc_flags = number;
export const IBV_WC_EX_WITH_BYTE_LEN = 1 << 0;
export const IBV_WC_EX_WITH_IMM = 1 << 1;
export const IBV_WC_EX_WITH_QP_NUM = 1 << 2;
export const IBV_WC_EX_WITH_SRC_QP = 1 << 3;
export const IBV_WC_EX_WITH_SLID = 1 << 4;
export const IBV_WC_EX_WITH_SL = 1 << 5;
export const IBV_WC_EX_WITH_DLID_PATH_BITS = 1 << 6;
export const IBV_WC_EX_WITH_COMPLETION_TIMESTAMP = 1 << 7;
export const IBV_WC_EX_WITH_CVLAN = 1 << 8;
export const IBV_WC_EX_WITH_FLOW_TAG = 1 << 9;
export const IBV_WC_EX_WITH_TM_INFO = 1 << 10;
export const IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK = 1 << 11;
export const IBV_WC_STANDARD_FLAGS =
  IBV_WC_EX_WITH_BYTE_LEN |
  IBV_WC_EX_WITH_IMM |
  IBV_WC_EX_WITH_QP_NUM |
  IBV_WC_EX_WITH_SRC_QP |
  IBV_WC_EX_WITH_SLID |
  IBV_WC_EX_WITH_SL |
  IBV_WC_EX_WITH_DLID_PATH_BITS;
export const IBV_CREATE_CQ_SUP_WC_FLAGS =
  IBV_WC_STANDARD_FLAGS |
  IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
  IBV_WC_EX_WITH_CVLAN |
  IBV_WC_EX_WITH_FLOW_TAG |
  IBV_WC_EX_WITH_TM_INFO |
  IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;

// ---------------------------------------------------------------------------
// enum ibv_access_flags (MR / MW / QP access)
// ---------------------------------------------------------------------------
export type ibv_access_flags = number;
export const IBV_ACCESS_LOCAL_WRITE = 1 << 0;
export const IBV_ACCESS_REMOTE_WRITE = 1 << 1;
export const IBV_ACCESS_REMOTE_READ = 1 << 2;
export const IBV_ACCESS_REMOTE_ATOMIC = 1 << 3;
export const IBV_ACCESS_MW_BIND = 1 << 4;
export const IBV_ACCESS_ZERO_BASED = 1 << 5;
export const IBV_ACCESS_ON_DEMAND = 1 << 6;
export const IBV_ACCESS_HUGETLB = 1 << 7;
export const IBV_ACCESS_FLUSH_GLOBAL = 1 << 8;
export const IBV_ACCESS_FLUSH_PERSISTENT = 1 << 9;
/** First "optional" access bit (verbs_api.h: IB_UVERBS_ACCESS_OPTIONAL_FIRST). */
export const IBV_ACCESS_OPTIONAL_FIRST = 1 << 20;
export const IBV_ACCESS_RELAXED_ORDERING = IBV_ACCESS_OPTIONAL_FIRST;
/** Mask of the optional access bits 20..29, which a kernel may ignore. */
export const IBV_ACCESS_OPTIONAL_RANGE = 0x3ff00000;

// ---------------------------------------------------------------------------
// enum ibv_mw_type
// ---------------------------------------------------------------------------
export type ibv_mw_type = number;
export const IBV_MW_TYPE_1 = 1;
export const IBV_MW_TYPE_2 = 2;

// ---------------------------------------------------------------------------
// enum ibv_rate (ibv_ah_attr.static_rate). Note the values are not ordered by
// speed: they are IBTA encodings.
// ---------------------------------------------------------------------------
export type ibv_rate = number;
export const IBV_RATE_MAX = 0;
export const IBV_RATE_2_5_GBPS = 2;
export const IBV_RATE_5_GBPS = 5;
export const IBV_RATE_10_GBPS = 3;
export const IBV_RATE_20_GBPS = 6;
export const IBV_RATE_30_GBPS = 4;
export const IBV_RATE_40_GBPS = 7;
export const IBV_RATE_60_GBPS = 8;
export const IBV_RATE_80_GBPS = 9;
export const IBV_RATE_120_GBPS = 10;
export const IBV_RATE_14_GBPS = 11;
export const IBV_RATE_56_GBPS = 12;
export const IBV_RATE_112_GBPS = 13;
export const IBV_RATE_168_GBPS = 14;
export const IBV_RATE_25_GBPS = 15;
export const IBV_RATE_100_GBPS = 16;
export const IBV_RATE_200_GBPS = 17;
export const IBV_RATE_300_GBPS = 18;
export const IBV_RATE_28_GBPS = 19;
export const IBV_RATE_50_GBPS = 20;
export const IBV_RATE_400_GBPS = 21;
export const IBV_RATE_600_GBPS = 22;
export const IBV_RATE_800_GBPS = 23;
export const IBV_RATE_1200_GBPS = 24;

// ---------------------------------------------------------------------------
// enum ibv_srq_attr_mask / ibv_srq_type / ibv_srq_init_attr_mask
// ---------------------------------------------------------------------------
export type ibv_srq_attr_mask = number;
export const IBV_SRQ_MAX_WR = 1 << 0;
export const IBV_SRQ_LIMIT = 1 << 1;

export type ibv_srq_type = number;
export const IBV_SRQT_BASIC = 0;
export const IBV_SRQT_XRC = 1;
export const IBV_SRQT_TM = 2;

export type ibv_srq_init_attr_mask = number;
export const IBV_SRQ_INIT_ATTR_TYPE = 1 << 0;
export const IBV_SRQ_INIT_ATTR_PD = 1 << 1;
export const IBV_SRQ_INIT_ATTR_XRCD = 1 << 2;
export const IBV_SRQ_INIT_ATTR_CQ = 1 << 3;
export const IBV_SRQ_INIT_ATTR_TM = 1 << 4;
export const IBV_SRQ_INIT_ATTR_RESERVED = 1 << 5;

// ---------------------------------------------------------------------------
// enum ibv_xrcd_init_attr_mask (ibv_xrcd_init_attr.comp_mask), and the open(2)
// flags ibv_xrcd_init_attr.oflags takes (Linux values)
// ---------------------------------------------------------------------------
export const IBV_XRCD_INIT_ATTR_FD = 1 << 0;
export const IBV_XRCD_INIT_ATTR_OFLAGS = 1 << 1;
export const IBV_XRCD_INIT_ATTR_RESERVED = 1 << 2;
export const O_CREAT = 0o100;
export const O_EXCL = 0o200;

// ---------------------------------------------------------------------------
// enum ibv_qp_type
// ---------------------------------------------------------------------------
export type ibv_qp_type = number;
export const IBV_QPT_RC = 2;
export const IBV_QPT_UC = 3;
export const IBV_QPT_UD = 4;
export const IBV_QPT_RAW_PACKET = 8;
export const IBV_QPT_XRC_SEND = 9;
export const IBV_QPT_XRC_RECV = 10;
export const IBV_QPT_DRIVER = 0xff;

// enum ibv_qp_init_attr_mask (ibv_qp_init_attr_ex.comp_mask)
export type ibv_qp_init_attr_mask = number;
export const IBV_QP_INIT_ATTR_PD = 1 << 0;
export const IBV_QP_INIT_ATTR_XRCD = 1 << 1;
export const IBV_QP_INIT_ATTR_CREATE_FLAGS = 1 << 2;
export const IBV_QP_INIT_ATTR_MAX_TSO_HEADER = 1 << 3;
export const IBV_QP_INIT_ATTR_IND_TABLE = 1 << 4;
export const IBV_QP_INIT_ATTR_RX_HASH = 1 << 5;
export const IBV_QP_INIT_ATTR_SEND_OPS_FLAGS = 1 << 6;

// enum ibv_qp_open_attr_mask (ibv_qp_open_attr.comp_mask, ibv_open_qp)
export type ibv_qp_open_attr_mask = number;
export const IBV_QP_OPEN_ATTR_NUM = 1 << 0;
export const IBV_QP_OPEN_ATTR_XRCD = 1 << 1;
export const IBV_QP_OPEN_ATTR_CONTEXT = 1 << 2;
export const IBV_QP_OPEN_ATTR_TYPE = 1 << 3;
export const IBV_QP_OPEN_ATTR_RESERVED = 1 << 4;

// enum ibv_qp_create_flags
export type ibv_qp_create_flags = number;
export const IBV_QP_CREATE_BLOCK_SELF_MCAST_LB = 1 << 1;
export const IBV_QP_CREATE_SCATTER_FCS = 1 << 8;
export const IBV_QP_CREATE_CVLAN_STRIPPING = 1 << 9;
export const IBV_QP_CREATE_SOURCE_QPN = 1 << 10;
export const IBV_QP_CREATE_PCI_WRITE_END_PADDING = 1 << 11;

// enum ibv_qp_create_send_ops_flags (ibv_qp_init_attr_ex.send_ops_flags)
export type ibv_qp_create_send_ops_flags = number;
export const IBV_QP_EX_WITH_RDMA_WRITE = 1 << 0;
export const IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM = 1 << 1;
export const IBV_QP_EX_WITH_SEND = 1 << 2;
export const IBV_QP_EX_WITH_SEND_WITH_IMM = 1 << 3;
export const IBV_QP_EX_WITH_RDMA_READ = 1 << 4;
export const IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP = 1 << 5;
export const IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD = 1 << 6;
export const IBV_QP_EX_WITH_LOCAL_INV = 1 << 7;
export const IBV_QP_EX_WITH_BIND_MW = 1 << 8;
export const IBV_QP_EX_WITH_SEND_WITH_INV = 1 << 9;
export const IBV_QP_EX_WITH_TSO = 1 << 10;
export const IBV_QP_EX_WITH_FLUSH = 1 << 11;
export const IBV_QP_EX_WITH_ATOMIC_WRITE = 1 << 12;

// ---------------------------------------------------------------------------
// enum ibv_qp_attr_mask (ibv_modify_qp / ibv_query_qp attr_mask)
// Bits 21..24 were SMAC/ALT_SMAC/VID/ALT_VID on old kernels and were never
// exposed by libibverbs; they are deliberately absent.
// ---------------------------------------------------------------------------
export type ibv_qp_attr_mask = number;
export const IBV_QP_STATE = 1 << 0;
export const IBV_QP_CUR_STATE = 1 << 1;
export const IBV_QP_EN_SQD_ASYNC_NOTIFY = 1 << 2;
export const IBV_QP_ACCESS_FLAGS = 1 << 3;
export const IBV_QP_PKEY_INDEX = 1 << 4;
export const IBV_QP_PORT = 1 << 5;
export const IBV_QP_QKEY = 1 << 6;
export const IBV_QP_AV = 1 << 7;
export const IBV_QP_PATH_MTU = 1 << 8;
export const IBV_QP_TIMEOUT = 1 << 9;
export const IBV_QP_RETRY_CNT = 1 << 10;
export const IBV_QP_RNR_RETRY = 1 << 11;
export const IBV_QP_RQ_PSN = 1 << 12;
export const IBV_QP_MAX_QP_RD_ATOMIC = 1 << 13;
export const IBV_QP_ALT_PATH = 1 << 14;
export const IBV_QP_MIN_RNR_TIMER = 1 << 15;
export const IBV_QP_SQ_PSN = 1 << 16;
export const IBV_QP_MAX_DEST_RD_ATOMIC = 1 << 17;
export const IBV_QP_PATH_MIG_STATE = 1 << 18;
export const IBV_QP_CAP = 1 << 19;
export const IBV_QP_DEST_QPN = 1 << 20;
export const IBV_QP_RATE_LIMIT = 1 << 25;

/** Names of the ibv_qp_attr_mask bits, lowest bit first (for diagnostics). */
export const IBV_QP_ATTR_MASK_NAMES: ReadonlyArray<readonly [number, string]> = Object.freeze([
  [IBV_QP_STATE, 'IBV_QP_STATE'],
  [IBV_QP_CUR_STATE, 'IBV_QP_CUR_STATE'],
  [IBV_QP_EN_SQD_ASYNC_NOTIFY, 'IBV_QP_EN_SQD_ASYNC_NOTIFY'],
  [IBV_QP_ACCESS_FLAGS, 'IBV_QP_ACCESS_FLAGS'],
  [IBV_QP_PKEY_INDEX, 'IBV_QP_PKEY_INDEX'],
  [IBV_QP_PORT, 'IBV_QP_PORT'],
  [IBV_QP_QKEY, 'IBV_QP_QKEY'],
  [IBV_QP_AV, 'IBV_QP_AV'],
  [IBV_QP_PATH_MTU, 'IBV_QP_PATH_MTU'],
  [IBV_QP_TIMEOUT, 'IBV_QP_TIMEOUT'],
  [IBV_QP_RETRY_CNT, 'IBV_QP_RETRY_CNT'],
  [IBV_QP_RNR_RETRY, 'IBV_QP_RNR_RETRY'],
  [IBV_QP_RQ_PSN, 'IBV_QP_RQ_PSN'],
  [IBV_QP_MAX_QP_RD_ATOMIC, 'IBV_QP_MAX_QP_RD_ATOMIC'],
  [IBV_QP_ALT_PATH, 'IBV_QP_ALT_PATH'],
  [IBV_QP_MIN_RNR_TIMER, 'IBV_QP_MIN_RNR_TIMER'],
  [IBV_QP_SQ_PSN, 'IBV_QP_SQ_PSN'],
  [IBV_QP_MAX_DEST_RD_ATOMIC, 'IBV_QP_MAX_DEST_RD_ATOMIC'],
  [IBV_QP_PATH_MIG_STATE, 'IBV_QP_PATH_MIG_STATE'],
  [IBV_QP_CAP, 'IBV_QP_CAP'],
  [IBV_QP_DEST_QPN, 'IBV_QP_DEST_QPN'],
  [IBV_QP_RATE_LIMIT, 'IBV_QP_RATE_LIMIT'],
] as const);

// ---------------------------------------------------------------------------
// enum ibv_qp_state
// ---------------------------------------------------------------------------
export type ibv_qp_state = number;
export const IBV_QPS_RESET = 0;
export const IBV_QPS_INIT = 1;
export const IBV_QPS_RTR = 2;
export const IBV_QPS_RTS = 3;
export const IBV_QPS_SQD = 4;
export const IBV_QPS_SQE = 5;
export const IBV_QPS_ERR = 6;
export const IBV_QPS_UNKNOWN = 7;

// ---------------------------------------------------------------------------
// enum ibv_mig_state
// ---------------------------------------------------------------------------
export type ibv_mig_state = number;
export const IBV_MIG_MIGRATED = 0;
export const IBV_MIG_REARM = 1;
export const IBV_MIG_ARMED = 2;

// ---------------------------------------------------------------------------
// enum ibv_wr_opcode (ibv_send_wr.opcode). 12 and 13 are unassigned in
// libibverbs (the kernel uses them for masked atomics).
// ---------------------------------------------------------------------------
export type ibv_wr_opcode = number;
export const IBV_WR_RDMA_WRITE = 0;
export const IBV_WR_RDMA_WRITE_WITH_IMM = 1;
export const IBV_WR_SEND = 2;
export const IBV_WR_SEND_WITH_IMM = 3;
export const IBV_WR_RDMA_READ = 4;
export const IBV_WR_ATOMIC_CMP_AND_SWP = 5;
export const IBV_WR_ATOMIC_FETCH_AND_ADD = 6;
export const IBV_WR_LOCAL_INV = 7;
export const IBV_WR_BIND_MW = 8;
export const IBV_WR_SEND_WITH_INV = 9;
export const IBV_WR_TSO = 10;
export const IBV_WR_DRIVER1 = 11;
export const IBV_WR_FLUSH = 14;
export const IBV_WR_ATOMIC_WRITE = 15;

// ---------------------------------------------------------------------------
// enum ibv_send_flags (ibv_send_wr.send_flags)
// ---------------------------------------------------------------------------
export type ibv_send_flags = number;
export const IBV_SEND_FENCE = 1 << 0;
export const IBV_SEND_SIGNALED = 1 << 1;
export const IBV_SEND_SOLICITED = 1 << 2;
export const IBV_SEND_INLINE = 1 << 3;
export const IBV_SEND_IP_CSUM = 1 << 4;

// enum ibv_placement_type / ibv_selectivity_level (ibv_wr_flush)
export const IBV_FLUSH_GLOBAL = 1;
export const IBV_FLUSH_PERSISTENT = 2;
export const IBV_FLUSH_RANGE = 0;
export const IBV_FLUSH_MR = 1;

// ---------------------------------------------------------------------------
// enum ibv_cq_init_attr_mask / ibv_create_cq_attr_flags
// ---------------------------------------------------------------------------
export const IBV_CQ_INIT_ATTR_MASK_FLAGS = 1 << 0;
export const IBV_CQ_INIT_ATTR_MASK_PD = 1 << 1;
export const IBV_CQ_INIT_ATTR_MASK_RESERVED = 1 << 2;
// enum ibv_cq_attr_mask (ibv_modify_cq)
export const IBV_CQ_ATTR_MODERATE = 1 << 0;
export const IBV_CQ_ATTR_RESERVED = 1 << 1;
// enum ibv_values_mask (ibv_query_rt_values_ex)
export const IBV_VALUES_MASK_RAW_CLOCK = 1 << 0;
export const IBV_VALUES_MASK_RESERVED = 1 << 1;
export const IBV_CREATE_CQ_ATTR_SINGLE_THREADED = 1 << 0;
export const IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN = 1 << 1;

// ---------------------------------------------------------------------------
// enum ibv_rereg_mr_flags (ibv_rereg_mr)
// ---------------------------------------------------------------------------
export const IBV_REREG_MR_CHANGE_TRANSLATION = 1 << 0;
export const IBV_REREG_MR_CHANGE_PD = 1 << 1;
export const IBV_REREG_MR_CHANGE_ACCESS = 1 << 2;
export const IBV_REREG_MR_FLAGS_SUPPORTED = 1 << 3;
// enum ibv_rereg_mr_err_code (ibv_rereg_mr's negative returns; errno says why)
export const IBV_REREG_MR_ERR_INPUT = -1;
export const IBV_REREG_MR_ERR_DONT_FORK_NEW = -2;
export const IBV_REREG_MR_ERR_DO_FORK_OLD = -3;
export const IBV_REREG_MR_ERR_CMD = -4;
export const IBV_REREG_MR_ERR_CMD_AND_DO_FORK_NEW = -5;

// ---------------------------------------------------------------------------
// String helpers: the strings libibverbs returns (enum_strs.c, newest copy).
// Out-of-range values give "unknown", as in libibverbs.
// ---------------------------------------------------------------------------

const NODE_TYPE_STR: Readonly<Record<number, string>> = Object.freeze({
  [IBV_NODE_CA]: 'InfiniBand channel adapter',
  [IBV_NODE_SWITCH]: 'InfiniBand switch',
  [IBV_NODE_ROUTER]: 'InfiniBand router',
  [IBV_NODE_RNIC]: 'iWARP NIC',
  [IBV_NODE_USNIC]: 'usNIC',
  [IBV_NODE_USNIC_UDP]: 'usNIC UDP',
  [IBV_NODE_UNSPECIFIED]: 'unspecified',
});

const PORT_STATE_STR: readonly string[] = Object.freeze(['no state change (NOP)', 'down', 'init', 'armed', 'active', 'active defer']);

const EVENT_TYPE_STR: readonly string[] = Object.freeze([
  'CQ error',
  'local work queue catastrophic error',
  'invalid request local work queue error',
  'local access violation work queue error',
  'communication established',
  'send queue drained',
  'path migrated',
  'path migration request error',
  'local catastrophic error',
  'port active',
  'port error',
  'LID change',
  'P_Key change',
  'SM change',
  'SRQ catastrophic error',
  'SRQ limit reached',
  'last WQE reached',
  'client reregistration',
  'GID table change',
  'WQ fatal',
]);

const WC_STATUS_STR: readonly string[] = Object.freeze([
  'success',
  'local length error',
  'local QP operation error',
  'local EE context operation error',
  'local protection error',
  'Work Request Flushed Error',
  'memory management operation error',
  'bad response error',
  'local access error',
  'remote invalid request error',
  'remote access error',
  'remote operation error',
  'transport retry counter exceeded',
  'RNR retry counter exceeded',
  'local RDD violation error',
  'remote invalid RD request',
  'aborted error',
  'invalid EE context number',
  'invalid EE context state',
  'fatal error',
  'response timeout error',
  'general error',
  'TM error',
  'TM software rendezvous',
]);

const WR_OPCODE_STR: Readonly<Record<number, string>> = Object.freeze({
  [IBV_WR_RDMA_WRITE]: 'rdma-write',
  [IBV_WR_RDMA_WRITE_WITH_IMM]: 'rdma-write-with-imm',
  [IBV_WR_SEND]: 'send',
  [IBV_WR_SEND_WITH_IMM]: 'send-with-imm',
  [IBV_WR_RDMA_READ]: 'rdma-read',
  [IBV_WR_ATOMIC_CMP_AND_SWP]: 'atomic-cmp-and-swp',
  [IBV_WR_ATOMIC_FETCH_AND_ADD]: 'atomic-fetch-and-add',
  [IBV_WR_LOCAL_INV]: 'local-inv',
  [IBV_WR_BIND_MW]: 'bind-mw',
  [IBV_WR_SEND_WITH_INV]: 'send-with-inv',
  [IBV_WR_TSO]: 'tso',
  [IBV_WR_DRIVER1]: 'driver1',
  [IBV_WR_FLUSH]: 'flush',
  [IBV_WR_ATOMIC_WRITE]: 'atomic-write',
});

function lookup(table: Readonly<Record<number, string>> | readonly string[], v: number): string {
  if (!Number.isInteger(v)) return 'unknown';
  const s = (table as Readonly<Record<number, string | undefined>>)[v];
  return s ?? 'unknown';
}

/** `const char *ibv_node_type_str(enum ibv_node_type)` */
export function ibv_node_type_str(node_type: ibv_node_type): string {
  return lookup(NODE_TYPE_STR, node_type);
}

/** `const char *ibv_port_state_str(enum ibv_port_state)` */
export function ibv_port_state_str(port_state: ibv_port_state): string {
  return lookup(PORT_STATE_STR, port_state);
}

/** `const char *ibv_event_type_str(enum ibv_event_type)` */
export function ibv_event_type_str(event: ibv_event_type): string {
  return lookup(EVENT_TYPE_STR, event);
}

/** `const char *ibv_wc_status_str(enum ibv_wc_status)` */
export function ibv_wc_status_str(status: ibv_wc_status): string {
  return lookup(WC_STATUS_STR, status);
}

/**
 * `const char *ibv_wr_opcode_str(enum ibv_wr_opcode)`. libibverbs indexes a
 * sparse array and would return NULL for the unassigned 12 and 13; we return
 * "unknown" for them, as for any other out-of-range value.
 */
export function ibv_wr_opcode_str(opcode: ibv_wr_opcode): string {
  return lookup(WR_OPCODE_STR, opcode);
}

// ---------------------------------------------------------------------------
// Rate helpers (rdma-core libibverbs/verbs.c, userspace tables).
// Note: the userspace ibv_rate_to_mult has no entry for the FDR/EDR-style
// rates (14, 56, 112, 168, 25, 100, 200, 300 Gb/s) and returns -1 for them,
// while the kernel's ib_rate_to_mult does map them. We follow rdma-core.
// 800 and 1200 Gb/s follow the rdma-core patch that added those rates.
// ---------------------------------------------------------------------------

const RATE_MULT: ReadonlyArray<readonly [number, number]> = [
  [IBV_RATE_2_5_GBPS, 1],
  [IBV_RATE_5_GBPS, 2],
  [IBV_RATE_10_GBPS, 4],
  [IBV_RATE_20_GBPS, 8],
  [IBV_RATE_30_GBPS, 12],
  [IBV_RATE_40_GBPS, 16],
  [IBV_RATE_60_GBPS, 24],
  [IBV_RATE_80_GBPS, 32],
  [IBV_RATE_120_GBPS, 48],
  [IBV_RATE_28_GBPS, 11],
  [IBV_RATE_50_GBPS, 20],
  [IBV_RATE_400_GBPS, 160],
  [IBV_RATE_600_GBPS, 240],
  [IBV_RATE_800_GBPS, 320],
  [IBV_RATE_1200_GBPS, 480],
];

const RATE_MBPS: ReadonlyArray<readonly [number, number]> = [
  [IBV_RATE_2_5_GBPS, 2500],
  [IBV_RATE_5_GBPS, 5000],
  [IBV_RATE_10_GBPS, 10000],
  [IBV_RATE_20_GBPS, 20000],
  [IBV_RATE_30_GBPS, 30000],
  [IBV_RATE_40_GBPS, 40000],
  [IBV_RATE_60_GBPS, 60000],
  [IBV_RATE_80_GBPS, 80000],
  [IBV_RATE_120_GBPS, 120000],
  [IBV_RATE_14_GBPS, 14062],
  [IBV_RATE_56_GBPS, 56250],
  [IBV_RATE_112_GBPS, 112500],
  [IBV_RATE_168_GBPS, 168750],
  [IBV_RATE_25_GBPS, 25781],
  [IBV_RATE_100_GBPS, 103125],
  [IBV_RATE_200_GBPS, 206250],
  [IBV_RATE_300_GBPS, 309375],
  [IBV_RATE_28_GBPS, 28125],
  [IBV_RATE_50_GBPS, 53125],
  [IBV_RATE_400_GBPS, 425000],
  [IBV_RATE_600_GBPS, 637500],
  [IBV_RATE_800_GBPS, 850000],
  [IBV_RATE_1200_GBPS, 1275000],
];

const RATE_TO_MULT = new Map<number, number>(RATE_MULT);
const MULT_TO_RATE = new Map<number, number>(RATE_MULT.map(([r, m]) => [m, r] as const));
const RATE_TO_MBPS = new Map<number, number>(RATE_MBPS);
const MBPS_TO_RATE = new Map<number, number>(RATE_MBPS.map(([r, m]) => [m, r] as const));

/** `int ibv_rate_to_mult(enum ibv_rate)`: multiple of 2.5 Gb/s, or -1. */
export function ibv_rate_to_mult(rate: ibv_rate): number {
  return RATE_TO_MULT.get(rate) ?? -1;
}

/** `enum ibv_rate mult_to_ibv_rate(int)`: IBV_RATE_MAX when unknown. */
export function mult_to_ibv_rate(mult: number): ibv_rate {
  return MULT_TO_RATE.get(mult) ?? IBV_RATE_MAX;
}

/** `int ibv_rate_to_mbps(enum ibv_rate)`: Mbit/s (signalling-adjusted), or -1. */
export function ibv_rate_to_mbps(rate: ibv_rate): number {
  return RATE_TO_MBPS.get(rate) ?? -1;
}

/** `enum ibv_rate mbps_to_ibv_rate(int)`: exact match only, else IBV_RATE_MAX. */
export function mbps_to_ibv_rate(mbps: number): ibv_rate {
  return MBPS_TO_RATE.get(mbps) ?? IBV_RATE_MAX;
}

// ---------------------------------------------------------------------------
// MTU helpers. verbs.h has NO enum<->bytes helper (no ibv_mtu_to_num /
// ibv_num_to_mtu exist in rdma-core), so these carry our own names rather
// than inventing ibv_* symbols. The kernel analogues are
// ib_mtu_enum_to_int / ib_mtu_int_to_enum.
// ---------------------------------------------------------------------------

/** Bytes for an ibv_mtu value (IBV_MTU_256..IBV_MTU_4096), or -1 if invalid. */
export function mtu_enum_to_bytes(mtu: ibv_mtu): number {
  if (!Number.isInteger(mtu) || mtu < IBV_MTU_256 || mtu > IBV_MTU_4096) return -1;
  return 128 << mtu;
}

/**
 * Largest ibv_mtu not above `bytes` (so 1500 → IBV_MTU_1024, 9000 →
 * IBV_MTU_4096), or 0 (not a valid ibv_mtu) when `bytes` < 256.
 */
export function mtu_bytes_to_enum(bytes: number): ibv_mtu {
  if (!(bytes >= 256)) return 0;
  if (bytes >= 4096) return IBV_MTU_4096;
  if (bytes >= 2048) return IBV_MTU_2048;
  if (bytes >= 1024) return IBV_MTU_1024;
  if (bytes >= 512) return IBV_MTU_512;
  return IBV_MTU_256;
}

// ---------------------------------------------------------------------------
// Small static-inline helpers of verbs.h
// ---------------------------------------------------------------------------

/** `ibv_inc_rkey`: bump the low 8 bits (the key tag) of an rkey, wrapping. */
export function ibv_inc_rkey(rkey: number): number {
  return ((rkey & ~0xff) | ((rkey + 1) & 0xff)) >>> 0;
}

/** `ibv_is_qpt_supported`: test bit `qpt` of a supported_qpts mask (1 / 0). */
export function ibv_is_qpt_supported(caps: number, qpt: ibv_qp_type): number {
  if (!Number.isInteger(qpt) || qpt < 0 || qpt > 31) return 0;
  return (caps >>> qpt) & 1;
}

// ---------------------------------------------------------------------------
// errno values returned by verbs (Linux numbering, as on x86-64 / arm64).
// Verbs return these positive values (ibv_post_send returns ENOMEM, ...);
// object-creating verbs return null and set errno.
// ---------------------------------------------------------------------------
export const errno = Object.freeze({
  EPERM: 1,
  ENOENT: 2,
  ESRCH: 3,
  EINTR: 4,
  EIO: 5,
  ENXIO: 6,
  E2BIG: 7,
  ENOEXEC: 8,
  EBADF: 9,
  ECHILD: 10,
  EAGAIN: 11,
  ENOMEM: 12,
  EACCES: 13,
  EFAULT: 14,
  EBUSY: 16,
  EEXIST: 17,
  EXDEV: 18,
  ENODEV: 19,
  ENOTDIR: 20,
  EISDIR: 21,
  EINVAL: 22,
  ENFILE: 23,
  EMFILE: 24,
  ENOTTY: 25,
  EFBIG: 27,
  ENOSPC: 28,
  ESPIPE: 29,
  EROFS: 30,
  EPIPE: 32,
  EDOM: 33,
  ERANGE: 34,
  EDEADLK: 35,
  ENAMETOOLONG: 36,
  ENOLCK: 37,
  ENOSYS: 38,
  ENOTEMPTY: 39,
  ELOOP: 40,
  ENOMSG: 42,
  EIDRM: 43,
  ENODATA: 61,
  ETIME: 62,
  ENOLINK: 67,
  EPROTO: 71,
  EBADMSG: 74,
  EOVERFLOW: 75,
  EPROTOTYPE: 91,
  ENOPROTOOPT: 92,
  EPROTONOSUPPORT: 93,
  EOPNOTSUPP: 95,
  EAFNOSUPPORT: 97,
  EADDRINUSE: 98,
  EADDRNOTAVAIL: 99,
  ENETDOWN: 100,
  ENETUNREACH: 101,
  ENETRESET: 102,
  ECONNABORTED: 103,
  ECONNRESET: 104,
  ENOBUFS: 105,
  EISCONN: 106,
  ENOTCONN: 107,
  ETIMEDOUT: 110,
  ECONNREFUSED: 111,
  EHOSTDOWN: 112,
  EHOSTUNREACH: 113,
  EALREADY: 114,
  EINPROGRESS: 115,
  ECANCELED: 125,
  // Aliases (same number as the canonical name above; errnoName returns the
  // canonical one).
  EWOULDBLOCK: 11,
  EDEADLOCK: 35,
  ENOTSUP: 95,
} as const);

export type ErrnoName = keyof typeof errno;

const ERRNO_NAME = new Map<number, string>();
for (const [name, n] of Object.entries(errno)) {
  if (!ERRNO_NAME.has(n)) ERRNO_NAME.set(n, name);
}

/**
 * Symbolic name of an errno value ("EINVAL" for 22). Accepts kernel-style
 * negative values too (-22 → "EINVAL"). Unknown values give "E<n>?" so a
 * log line still shows the number.
 */
export function errnoName(n: number): string {
  const v = Math.abs(n);
  return ERRNO_NAME.get(v) ?? `E${v}?`;
}
