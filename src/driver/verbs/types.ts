/**
 * libibverbs structures as TypeScript interfaces, with the exact C field
 * names of rdma-core `libibverbs/verbs.h`.
 *
 * Mapping rules from C to TypeScript:
 * - `uint64_t` and `__be64` fields (wr_id, addresses, compare_add, swap,
 *   GUIDs, max_mr_size, page_size_cap, ...) are `bigint`.
 * - `size_t` lengths and every integer of 32 bits or fewer are `number`
 *   (size_t lengths index JS buffers, so they stay below 2^53).
 * - Enums are `number` (see the aliases in constants.ts).
 * - `void *` context pointers are `unknown`; pointers to other verbs objects
 *   are object references or `null`.
 * - A pointer + count pair (`sg_list` + `num_sge`) is an array plus the count:
 *   providers read `num_sge` entries, as the C code does.
 * - C unions become objects whose members are all optional: fill in only the
 *   member the operation uses (`wr.rdma` for RDMA WRITE, `wr.ud` for UD, ...).
 * - Byte order: `__be64` GUIDs are kept as their natural numeric value (what
 *   `be64toh()` gives in C), so `node_guid.toString(16)` prints the GUID the
 *   way ibv_devinfo does. `__be32 imm_data` is different: it is kept as the
 *   32-bit value exactly as the application stores it in C, i.e. already in
 *   network byte order if the application called htonl(). The provider moves
 *   those 32 bits unchanged, so a ported program that does
 *   `imm_data = htonl(x)` on the sender and `ntohl(wc.imm_data)` on the
 *   receiver sees the same numbers as it would in C.
 * - Opaque handles (device, context, pd, cq, ...) expose the public fields of
 *   the C struct; providers may extend them with private state.
 */

import type {
  ibv_access_flags,
  ibv_atomic_cap,
  ibv_event_type,
  ibv_mig_state,
  ibv_mtu,
  ibv_mw_type,
  ibv_node_type,
  ibv_port_state,
  ibv_qp_state,
  ibv_qp_type,
  ibv_send_flags,
  ibv_transport_type,
  ibv_wc_flags,
  ibv_wc_opcode,
  ibv_wc_status,
  ibv_wr_opcode,
} from '../../device/abi/constants.js';

// ---------------------------------------------------------------------------
// GID
// ---------------------------------------------------------------------------

/**
 * `union ibv_gid`. `raw` is always 16 bytes, in network order (for RoCE, the
 * IPv6 or IPv4-mapped address). The C `global.subnet_prefix` /
 * `global.interface_id` view is bytes 0..7 and 8..15 of `raw`.
 */
export interface ibv_gid {
  raw: Uint8Array;
}

// ---------------------------------------------------------------------------
// Device and context (opaque handles)
// ---------------------------------------------------------------------------

/** `struct ibv_device`: an entry of ibv_get_device_list(). */
export interface ibv_device {
  readonly node_type: ibv_node_type;
  readonly transport_type: ibv_transport_type;
  /** Kernel IB device name, e.g. "mlx5_0" or "rxe0". */
  readonly name: string;
  /** uverbs device name, e.g. "uverbs0". */
  readonly dev_name: string;
  readonly dev_path: string;
  readonly ibdev_path: string;
}

/** `struct ibv_context`: an open device (ibv_open_device()). */
export interface ibv_context {
  readonly device: ibv_device;
  readonly cmd_fd: number;
  readonly async_fd: number;
  readonly num_comp_vectors: number;
}

/** `struct ibv_pd` */
export interface ibv_pd {
  readonly context: ibv_context;
  readonly handle: number;
}

/** `struct ibv_xrcd` */
export interface ibv_xrcd {
  readonly context: ibv_context;
}

/** `struct ibv_xrcd_init_attr` (ibv_open_xrcd) */
export interface ibv_xrcd_init_attr {
  /** IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS: both are required. */
  comp_mask: number;
  /** An open file whose inode names the domain (opens of one inode share it), or -1 for a private domain. */
  fd: number;
  /** O_CREAT (create the domain of the file if it has none) and O_EXCL (fail if it has one). */
  oflags: number;
}

/** `struct ibv_mr` */
export interface ibv_mr {
  readonly context: ibv_context;
  readonly pd: ibv_pd;
  /** Start address of the registered range in host memory. */
  readonly addr: bigint;
  readonly length: number;
  readonly handle: number;
  readonly lkey: number;
  readonly rkey: number;
}

/** `struct ibv_mw` */
export interface ibv_mw {
  readonly context: ibv_context;
  readonly pd: ibv_pd;
  readonly rkey: number;
  readonly handle: number;
  readonly type: ibv_mw_type;
}

/** `struct ibv_comp_channel` */
export interface ibv_comp_channel {
  readonly context: ibv_context;
  readonly fd: number;
  readonly refcnt: number;
}

/** `struct ibv_cq` */
export interface ibv_cq {
  readonly context: ibv_context;
  readonly channel: ibv_comp_channel | null;
  readonly cq_context: unknown;
  readonly handle: number;
  /** Actual number of CQEs (may exceed the requested count). */
  readonly cqe: number;
}

/** `struct ibv_srq` */
export interface ibv_srq {
  readonly context: ibv_context;
  readonly srq_context: unknown;
  readonly pd: ibv_pd;
  readonly handle: number;
}

/** `struct ibv_ah` */
export interface ibv_ah {
  readonly context: ibv_context;
  readonly pd: ibv_pd;
  readonly handle: number;
}

/** `struct ibv_qp`. `state` is the driver's cached state, as in libibverbs. */
export interface ibv_qp {
  readonly context: ibv_context;
  readonly qp_context: unknown;
  /** null for an XRC receive QP (it has an XRC domain instead). */
  readonly pd: ibv_pd | null;
  readonly send_cq: ibv_cq | null;
  readonly recv_cq: ibv_cq | null;
  readonly srq: ibv_srq | null;
  readonly handle: number;
  readonly qp_num: number;
  readonly state: ibv_qp_state;
  readonly qp_type: ibv_qp_type;
}

/** `struct ibv_wq` (receive work queue, RSS). */
export interface ibv_wq {
  readonly context: ibv_context;
  readonly wq_context: unknown;
  readonly pd: ibv_pd;
  readonly cq: ibv_cq;
  readonly wq_num: number;
  readonly handle: number;
  readonly state: number;
  readonly wq_type: number;
}

// ---------------------------------------------------------------------------
// Device / port attributes
// ---------------------------------------------------------------------------

/** `struct ibv_device_attr` (ibv_query_device); every field ibv_devinfo -v prints. */
export interface ibv_device_attr {
  /** char[64] in C. */
  fw_ver: string;
  node_guid: bigint;
  sys_image_guid: bigint;
  max_mr_size: bigint;
  page_size_cap: bigint;
  vendor_id: number;
  vendor_part_id: number;
  hw_ver: number;
  max_qp: number;
  max_qp_wr: number;
  device_cap_flags: number;
  max_sge: number;
  max_sge_rd: number;
  max_cq: number;
  max_cqe: number;
  max_mr: number;
  max_pd: number;
  max_qp_rd_atom: number;
  max_ee_rd_atom: number;
  max_res_rd_atom: number;
  max_qp_init_rd_atom: number;
  max_ee_init_rd_atom: number;
  atomic_cap: ibv_atomic_cap;
  max_ee: number;
  max_rdd: number;
  max_mw: number;
  max_raw_ipv6_qp: number;
  max_raw_ethy_qp: number;
  max_mcast_grp: number;
  max_mcast_qp_attach: number;
  max_total_mcast_qp_attach: number;
  max_ah: number;
  max_fmr: number;
  max_map_per_fmr: number;
  max_srq: number;
  max_srq_wr: number;
  max_srq_sge: number;
  max_pkeys: number;
  local_ca_ack_delay: number;
  phys_port_cnt: number;
}

export interface ibv_odp_caps {
  general_caps: bigint;
  per_transport_caps: {
    rc_odp_caps: number;
    uc_odp_caps: number;
    ud_odp_caps: number;
  };
}

export interface ibv_tso_caps {
  max_tso: number;
  supported_qpts: number;
}

export interface ibv_rss_caps {
  supported_qpts: number;
  max_rwq_indirection_tables: number;
  max_rwq_indirection_table_size: number;
  rx_hash_fields_mask: bigint;
  rx_hash_function: number;
}

export interface ibv_packet_pacing_caps {
  /** kbps */
  qp_rate_limit_min: number;
  /** kbps */
  qp_rate_limit_max: number;
  supported_qpts: number;
}

/** ibv_modify_qp_rate_limit's argument. */
export interface ibv_qp_rate_limit_attr {
  /** kbit/s; 0: no limit. */
  rate_limit: number;
  /** Bytes; 0: the device's choice. */
  max_burst_sz: number;
  /** Bytes; 0: the device's choice. */
  typical_pkt_sz: number;
  comp_mask: number;
}

export interface ibv_tm_caps {
  max_rndv_hdr_size: number;
  max_num_tags: number;
  flags: number;
  max_ops: number;
  max_sge: number;
}

export interface ibv_cq_moderation_caps {
  max_cq_count: number;
  /** microseconds */
  max_cq_period: number;
}

export interface ibv_pci_atomic_caps {
  fetch_add: number;
  swap: number;
  compare_swap: number;
}

/** `struct ibv_device_attr_ex` (ibv_query_device_ex). */
export interface ibv_device_attr_ex {
  orig_attr: ibv_device_attr;
  comp_mask: number;
  odp_caps: ibv_odp_caps;
  completion_timestamp_mask: bigint;
  /** kHz */
  hca_core_clock: bigint;
  /** 64-bit flags: the low 32 bits mirror device_cap_flags. */
  device_cap_flags_ex: bigint;
  tso_caps: ibv_tso_caps;
  rss_caps: ibv_rss_caps;
  max_wq_type_rq: number;
  packet_pacing_caps: ibv_packet_pacing_caps;
  raw_packet_caps: number;
  tm_caps: ibv_tm_caps;
  cq_mod_caps: ibv_cq_moderation_caps;
  max_dm_size: bigint;
  pci_atomic_caps: ibv_pci_atomic_caps;
  xrc_odp_caps: number;
  phys_port_cnt_ex: number;
}

/** `struct ibv_query_device_ex_input` (ibv_query_device_ex): comp_mask must be 0. */
export interface ibv_query_device_ex_input {
  comp_mask: number;
}

/** `struct ibv_gid_entry` (ibv_query_gid_ex, ibv_query_gid_table). */
export interface ibv_gid_entry {
  gid: ibv_gid;
  gid_index: number;
  port_num: number;
  /** IBV_GID_TYPE_IB / IBV_GID_TYPE_ROCE_V1 / IBV_GID_TYPE_ROCE_V2 */
  gid_type: number;
  /** The netdev of a RoCE GID (0: the model has no host netdevs). */
  ndev_ifindex: number;
}

/**
 * `struct ibv_values_ex` (ibv_query_rt_values_ex). With
 * IBV_VALUES_MASK_RAW_CLOCK, raw_clock.tv_nsec is the free-running device
 * clock in hca_core_clock ticks and tv_sec is 0 (as mlx5 returns it: the
 * raw cycle count, not a time).
 */
export interface ibv_values_ex {
  comp_mask: number;
  raw_clock: { tv_sec: bigint; tv_nsec: bigint };
}

/** The out-argument of ibv_query_pkey (C: `__be16 *pkey`), the P_Key as its numeric value. */
export interface ibv_pkey_out {
  pkey: number;
}

/** `struct ibv_port_attr` (ibv_query_port). */
export interface ibv_port_attr {
  state: ibv_port_state;
  max_mtu: ibv_mtu;
  active_mtu: ibv_mtu;
  gid_tbl_len: number;
  port_cap_flags: number;
  max_msg_sz: number;
  bad_pkey_cntr: number;
  qkey_viol_cntr: number;
  pkey_tbl_len: number;
  lid: number;
  sm_lid: number;
  lmc: number;
  max_vl_num: number;
  sm_sl: number;
  subnet_timeout: number;
  init_type_reply: number;
  /** IB encoding: 1=1X, 2=4X, 4=8X, 8=12X, 16=2X. */
  active_width: number;
  /** IB encoding: 1=SDR 2.5, 2=DDR 5, 4=QDR 10, 8=FDR10, 16=FDR 14, 32=EDR 25, 64=HDR 50, 128=NDR 100 (Gb/s per lane). */
  active_speed: number;
  /** 1 sleep, 2 polling, 3 disabled, 4 port configuration training, 5 link up, 6 link error recovery, 7 phy test. */
  phys_state: number;
  /** IBV_LINK_LAYER_* */
  link_layer: number;
  flags: number;
  port_cap_flags2: number;
  /** Extended speed (used for speeds the 8-bit field cannot hold, e.g. XDR); 0 if unused. */
  active_speed_ex: number;
}

// ---------------------------------------------------------------------------
// Address vectors
// ---------------------------------------------------------------------------

/** `struct ibv_global_route` (the GRH part of an address vector). */
export interface ibv_global_route {
  dgid: ibv_gid;
  /** 20 bits */
  flow_label: number;
  sgid_index: number;
  hop_limit: number;
  traffic_class: number;
}

/** `struct ibv_ah_attr` */
export interface ibv_ah_attr {
  grh: ibv_global_route;
  dlid: number;
  sl: number;
  src_path_bits: number;
  /** enum ibv_rate */
  static_rate: number;
  /** 0 or 1: `grh` is valid (always 1 for RoCE). */
  is_global: number;
  port_num: number;
}

/** `struct ibv_grh`: the 40 bytes a UD receive buffer starts with. */
export interface ibv_grh {
  /** __be32 in C; here the host-order value (version 4 | tclass 8 | flow 20). */
  version_tclass_flow: number;
  paylen: number;
  next_hdr: number;
  hop_limit: number;
  sgid: ibv_gid;
  dgid: ibv_gid;
}

// ---------------------------------------------------------------------------
// Work requests and completions
// ---------------------------------------------------------------------------

/** `struct ibv_sge` */
export interface ibv_sge {
  addr: bigint;
  length: number;
  lkey: number;
}

/** `wr.rdma` of struct ibv_send_wr */
export interface ibv_send_wr_rdma {
  remote_addr: bigint;
  rkey: number;
}

/** `wr.atomic` of struct ibv_send_wr */
export interface ibv_send_wr_atomic {
  remote_addr: bigint;
  compare_add: bigint;
  swap: bigint;
  rkey: number;
}

/** `wr.ud` of struct ibv_send_wr */
export interface ibv_send_wr_ud {
  ah: ibv_ah | null;
  remote_qpn: number;
  remote_qkey: number;
}

/**
 * The `wr` union of struct ibv_send_wr: set only the member the opcode uses
 * (rdma for READ/WRITE[_WITH_IMM]/ATOMIC_WRITE/FLUSH, atomic for CMP_AND_SWP /
 * FETCH_AND_ADD, ud for UD QPs).
 */
export interface ibv_send_wr_wr {
  rdma?: ibv_send_wr_rdma;
  atomic?: ibv_send_wr_atomic;
  ud?: ibv_send_wr_ud;
}

/** `struct ibv_mw_bind_info` */
export interface ibv_mw_bind_info {
  mr: ibv_mr | null;
  addr: bigint;
  length: bigint;
  mw_access_flags: ibv_access_flags;
}

/**
 * `struct ibv_send_wr` (ibv_post_send).
 *
 * In C, `imm_data` and `invalidate_rkey` share storage: set `imm_data` for
 * *_WITH_IMM opcodes and `invalidate_rkey` for SEND_WITH_INV / LOCAL_INV.
 * `imm_data` is the 32-bit value as the application wrote it (network order
 * if it used htonl); the provider does not swap it.
 */
export interface ibv_send_wr {
  wr_id: bigint;
  next: ibv_send_wr | null;
  sg_list: ibv_sge[] | null;
  num_sge: number;
  opcode: ibv_wr_opcode;
  send_flags: ibv_send_flags;
  imm_data?: number;
  invalidate_rkey?: number;
  wr?: ibv_send_wr_wr;
  /** XRC: `qp_type.xrc.remote_srqn` */
  qp_type?: { xrc?: { remote_srqn: number } };
  /** IBV_WR_BIND_MW */
  bind_mw?: { mw: ibv_mw; rkey: number; bind_info: ibv_mw_bind_info };
  /** IBV_WR_ATOMIC_WRITE (ibv_wr_atomic_write): the 8 bytes to write, in wire order. */
  atomic_wire?: Uint8Array;
  /** IBV_WR_FLUSH (ibv_wr_flush): length, placement type (IBV_FLUSH_GLOBAL / _PERSISTENT), selectivity (IBV_FLUSH_RANGE / _MR). */
  flush?: { len: number; type: number; level: number };
  /** IBV_WR_TSO (RAW_PACKET QPs) */
  tso?: { hdr: Uint8Array; hdr_sz: number; mss: number };
}

/** `struct ibv_recv_wr` (ibv_post_recv / ibv_post_srq_recv). */
export interface ibv_recv_wr {
  wr_id: bigint;
  next: ibv_recv_wr | null;
  sg_list: ibv_sge[] | null;
  num_sge: number;
}

/** `struct ibv_mw_bind` (ibv_bind_mw, type 1 windows). */
export interface ibv_mw_bind {
  wr_id: bigint;
  send_flags: ibv_send_flags;
  bind_info: ibv_mw_bind_info;
}

/**
 * `struct ibv_wc` (ibv_poll_cq).
 *
 * `imm_data` and `invalidated_rkey` are one union in C; providers set both to
 * the same 32 bits. Which one is meaningful is told by wc_flags
 * (IBV_WC_WITH_IMM / IBV_WC_WITH_INV). For a non-success status only wr_id,
 * status, qp_num and vendor_err are valid.
 */
export interface ibv_wc {
  wr_id: bigint;
  status: ibv_wc_status;
  opcode: ibv_wc_opcode;
  vendor_err: number;
  byte_len: number;
  imm_data: number;
  invalidated_rkey: number;
  qp_num: number;
  src_qp: number;
  wc_flags: ibv_wc_flags;
  pkey_index: number;
  slid: number;
  sl: number;
  dlid_path_bits: number;
}

/**
 * A completion as the extended CQ reads it: an ibv_wc plus the completion
 * timestamp (raw device clock ticks, IBV_WC_EX_WITH_COMPLETION_TIMESTAMP).
 * Providers fill it in poll_cq_ex; applications read it through
 * ibv_wc_read_* (C's ibv_cq_ex has no such struct: the provider reads the
 * CQE in place).
 */
export interface ibv_wc_ex extends ibv_wc {
  completion_ts: bigint;
}

/** `struct ibv_cq_init_attr_ex` (ibv_create_cq_ex). */
export interface ibv_cq_init_attr_ex {
  cqe: number;
  cq_context?: unknown;
  channel?: ibv_comp_channel | null;
  comp_vector?: number;
  /** IBV_WC_EX_WITH_* (uint64_t in C; all defined bits fit a number). */
  wc_flags: number;
  /** IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD */
  comp_mask?: number;
  /** IBV_CREATE_CQ_ATTR_* (with IBV_CQ_INIT_ATTR_MASK_FLAGS) */
  flags?: number;
  parent_domain?: ibv_pd | null;
}

/** `struct ibv_poll_cq_attr` (ibv_start_poll): comp_mask must be 0. */
export interface ibv_poll_cq_attr {
  comp_mask: number;
}

/** `struct ibv_moderate_cq` */
export interface ibv_moderate_cq {
  cq_count: number;
  /** microseconds */
  cq_period: number;
}

/** `struct ibv_modify_cq_attr` (ibv_modify_cq). */
export interface ibv_modify_cq_attr {
  /** IBV_CQ_ATTR_MODERATE */
  attr_mask: number;
  moderate: ibv_moderate_cq;
}

// ---------------------------------------------------------------------------
// QP / SRQ creation and modification
// ---------------------------------------------------------------------------

/** `struct ibv_qp_cap` */
export interface ibv_qp_cap {
  max_send_wr: number;
  max_recv_wr: number;
  max_send_sge: number;
  max_recv_sge: number;
  max_inline_data: number;
}

/** `struct ibv_qp_init_attr` (ibv_create_qp). */
export interface ibv_qp_init_attr {
  qp_context?: unknown;
  send_cq: ibv_cq | null;
  recv_cq: ibv_cq | null;
  srq?: ibv_srq | null;
  cap: ibv_qp_cap;
  qp_type: ibv_qp_type;
  /** Non-zero: every send WR generates a completion (IBV_SEND_SIGNALED implied). */
  sq_sig_all: number;
}

/** `struct ibv_qp_init_attr_ex` (ibv_create_qp_ex): ibv_qp_init_attr plus the comp_mask-selected fields. */
export interface ibv_qp_init_attr_ex extends ibv_qp_init_attr {
  /** IBV_QP_INIT_ATTR_*: which of the fields below are given. */
  comp_mask: number;
  /** IBV_QP_INIT_ATTR_PD (required but for XRC receive QPs). */
  pd?: ibv_pd | null;
  /** IBV_QP_INIT_ATTR_XRCD */
  xrcd?: ibv_xrcd | null;
  /** IBV_QP_INIT_ATTR_CREATE_FLAGS: IBV_QP_CREATE_* */
  create_flags?: number;
  /** IBV_QP_INIT_ATTR_MAX_TSO_HEADER */
  max_tso_header?: number;
  /** IBV_QP_INIT_ATTR_IND_TABLE */
  rwq_ind_tbl?: unknown;
  /** IBV_QP_INIT_ATTR_RX_HASH */
  rx_hash_conf?: unknown;
  source_qpn?: number;
  /** IBV_QP_INIT_ATTR_SEND_OPS_FLAGS: IBV_QP_EX_WITH_* (the ibv_wr_* a program will use) */
  send_ops_flags?: number;
}

/** `struct ibv_qp_open_attr` (ibv_open_qp): an existing XRC receive QP by number, in an XRC domain. */
export interface ibv_qp_open_attr {
  /** IBV_QP_OPEN_ATTR_*: NUM, XRCD and TYPE are required; CONTEXT gives qp_context. */
  comp_mask: number;
  qp_num: number;
  xrcd: ibv_xrcd | null;
  qp_context?: unknown;
  qp_type: ibv_qp_type;
}

/** `struct ibv_data_buf` (ibv_wr_set_inline_data_list): bytes at a device-reachable address. */
export interface ibv_data_buf {
  addr: bigint;
  length: number;
}

/** `struct ibv_qp_attr` (ibv_modify_qp / ibv_query_qp). */
export interface ibv_qp_attr {
  qp_state: ibv_qp_state;
  cur_qp_state: ibv_qp_state;
  path_mtu: ibv_mtu;
  path_mig_state: ibv_mig_state;
  qkey: number;
  rq_psn: number;
  sq_psn: number;
  dest_qp_num: number;
  qp_access_flags: ibv_access_flags;
  cap: ibv_qp_cap;
  ah_attr: ibv_ah_attr;
  alt_ah_attr: ibv_ah_attr;
  pkey_index: number;
  alt_pkey_index: number;
  en_sqd_async_notify: number;
  sq_draining: number;
  max_rd_atomic: number;
  max_dest_rd_atomic: number;
  min_rnr_timer: number;
  port_num: number;
  timeout: number;
  retry_cnt: number;
  rnr_retry: number;
  alt_port_num: number;
  alt_timeout: number;
  /** kbps, packet pacing */
  rate_limit: number;
}

/** `struct ibv_srq_attr` */
export interface ibv_srq_attr {
  max_wr: number;
  max_sge: number;
  srq_limit: number;
}

/** `struct ibv_srq_init_attr` (ibv_create_srq). */
export interface ibv_srq_init_attr {
  srq_context?: unknown;
  attr: ibv_srq_attr;
}

/** `struct ibv_srq_init_attr_ex` (ibv_create_srq_ex). */
export interface ibv_srq_init_attr_ex extends ibv_srq_init_attr {
  /** IBV_SRQ_INIT_ATTR_* */
  comp_mask: number;
  /** IBV_SRQT_BASIC / _XRC / _TM (with IBV_SRQ_INIT_ATTR_TYPE) */
  srq_type?: number;
  pd?: ibv_pd | null;
  xrcd?: ibv_xrcd | null;
  cq?: ibv_cq | null;
  tm_cap?: { max_num_tags: number; max_ops: number };
}

// ---------------------------------------------------------------------------
// Asynchronous events
// ---------------------------------------------------------------------------

/**
 * `struct ibv_async_event` (ibv_get_async_event). `element` is a union in C:
 * exactly one member is set, chosen by event_type (cq for CQ_ERR; qp for the
 * QP events; srq for SRQ_*; wq for WQ_FATAL; port_num for port events).
 */
export interface ibv_async_event {
  element: {
    cq?: ibv_cq;
    qp?: ibv_qp;
    srq?: ibv_srq;
    wq?: ibv_wq;
    port_num?: number;
  };
  event_type: ibv_event_type;
}
