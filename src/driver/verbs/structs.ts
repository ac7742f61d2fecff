/**
 * Zero-initialised verbs structures: the TypeScript for C's
 * `struct ibv_qp_attr attr; memset(&attr, 0, sizeof(attr));` or `= {}`.
 *
 * A ported program writes `const attr = newQpAttr();` and then sets fields
 * exactly as the C code does. Each call returns a fresh object (nothing is
 * shared between calls, including the nested GIDs and caps).
 */

import type {
  ibv_ah_attr,
  ibv_device_attr,
  ibv_device_attr_ex,
  ibv_gid_entry,
  ibv_values_ex,
  ibv_gid,
  ibv_global_route,
  ibv_port_attr,
  ibv_qp_attr,
  ibv_qp_cap,
  ibv_recv_wr,
  ibv_send_wr,
  ibv_sge,
  ibv_srq_attr,
  ibv_wc,
} from './types.js';

export function newGid(): ibv_gid {
  return { raw: new Uint8Array(16) };
}

export function newGlobalRoute(): ibv_global_route {
  return { dgid: newGid(), flow_label: 0, sgid_index: 0, hop_limit: 0, traffic_class: 0 };
}

export function newAhAttr(): ibv_ah_attr {
  return { grh: newGlobalRoute(), dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, is_global: 0, port_num: 0 };
}

export function newQpCap(): ibv_qp_cap {
  return { max_send_wr: 0, max_recv_wr: 0, max_send_sge: 0, max_recv_sge: 0, max_inline_data: 0 };
}

export function newQpAttr(): ibv_qp_attr {
  return {
    qp_state: 0,
    cur_qp_state: 0,
    path_mtu: 0,
    path_mig_state: 0,
    qkey: 0,
    rq_psn: 0,
    sq_psn: 0,
    dest_qp_num: 0,
    qp_access_flags: 0,
    cap: newQpCap(),
    ah_attr: newAhAttr(),
    alt_ah_attr: newAhAttr(),
    pkey_index: 0,
    alt_pkey_index: 0,
    en_sqd_async_notify: 0,
    sq_draining: 0,
    max_rd_atomic: 0,
    max_dest_rd_atomic: 0,
    min_rnr_timer: 0,
    port_num: 0,
    timeout: 0,
    retry_cnt: 0,
    rnr_retry: 0,
    alt_port_num: 0,
    alt_timeout: 0,
    rate_limit: 0,
  };
}

export function newSrqAttr(): ibv_srq_attr {
  return { max_wr: 0, max_sge: 0, srq_limit: 0 };
}

export function newSge(): ibv_sge {
  return { addr: 0n, length: 0, lkey: 0 };
}

export function newSendWr(): ibv_send_wr {
  return { wr_id: 0n, next: null, sg_list: null, num_sge: 0, opcode: 0, send_flags: 0 };
}

export function newRecvWr(): ibv_recv_wr {
  return { wr_id: 0n, next: null, sg_list: null, num_sge: 0 };
}

export function newWc(): ibv_wc {
  return {
    wr_id: 0n,
    status: 0,
    opcode: 0,
    vendor_err: 0,
    byte_len: 0,
    imm_data: 0,
    invalidated_rkey: 0,
    qp_num: 0,
    src_qp: 0,
    wc_flags: 0,
    pkey_index: 0,
    slid: 0,
    sl: 0,
    dlid_path_bits: 0,
  };
}

/** `struct ibv_wc wc[n]`: an array of n zeroed completions for ibv_poll_cq. */
export function newWcArray(n: number): ibv_wc[] {
  return Array.from({ length: n }, newWc);
}

export function newPortAttr(): ibv_port_attr {
  return {
    state: 0,
    max_mtu: 0,
    active_mtu: 0,
    gid_tbl_len: 0,
    port_cap_flags: 0,
    max_msg_sz: 0,
    bad_pkey_cntr: 0,
    qkey_viol_cntr: 0,
    pkey_tbl_len: 0,
    lid: 0,
    sm_lid: 0,
    lmc: 0,
    max_vl_num: 0,
    sm_sl: 0,
    subnet_timeout: 0,
    init_type_reply: 0,
    active_width: 0,
    active_speed: 0,
    phys_state: 0,
    link_layer: 0,
    flags: 0,
    port_cap_flags2: 0,
    active_speed_ex: 0,
  };
}

export function newDeviceAttr(): ibv_device_attr {
  return {
    fw_ver: '',
    node_guid: 0n,
    sys_image_guid: 0n,
    max_mr_size: 0n,
    page_size_cap: 0n,
    vendor_id: 0,
    vendor_part_id: 0,
    hw_ver: 0,
    max_qp: 0,
    max_qp_wr: 0,
    device_cap_flags: 0,
    max_sge: 0,
    max_sge_rd: 0,
    max_cq: 0,
    max_cqe: 0,
    max_mr: 0,
    max_pd: 0,
    max_qp_rd_atom: 0,
    max_ee_rd_atom: 0,
    max_res_rd_atom: 0,
    max_qp_init_rd_atom: 0,
    max_ee_init_rd_atom: 0,
    atomic_cap: 0,
    max_ee: 0,
    max_rdd: 0,
    max_mw: 0,
    max_raw_ipv6_qp: 0,
    max_raw_ethy_qp: 0,
    max_mcast_grp: 0,
    max_mcast_qp_attach: 0,
    max_total_mcast_qp_attach: 0,
    max_ah: 0,
    max_fmr: 0,
    max_map_per_fmr: 0,
    max_srq: 0,
    max_srq_wr: 0,
    max_srq_sge: 0,
    max_pkeys: 0,
    local_ca_ack_delay: 0,
    phys_port_cnt: 0,
  };
}

export function newDeviceAttrEx(): ibv_device_attr_ex {
  return {
    orig_attr: newDeviceAttr(),
    comp_mask: 0,
    odp_caps: { general_caps: 0n, per_transport_caps: { rc_odp_caps: 0, uc_odp_caps: 0, ud_odp_caps: 0 } },
    completion_timestamp_mask: 0n,
    hca_core_clock: 0n,
    device_cap_flags_ex: 0n,
    tso_caps: { max_tso: 0, supported_qpts: 0 },
    rss_caps: { supported_qpts: 0, max_rwq_indirection_tables: 0, max_rwq_indirection_table_size: 0, rx_hash_fields_mask: 0n, rx_hash_function: 0 },
    max_wq_type_rq: 0,
    packet_pacing_caps: { qp_rate_limit_min: 0, qp_rate_limit_max: 0, supported_qpts: 0 },
    raw_packet_caps: 0,
    tm_caps: { max_rndv_hdr_size: 0, max_num_tags: 0, flags: 0, max_ops: 0, max_sge: 0 },
    cq_mod_caps: { max_cq_count: 0, max_cq_period: 0 },
    max_dm_size: 0n,
    pci_atomic_caps: { fetch_add: 0, swap: 0, compare_swap: 0 },
    xrc_odp_caps: 0,
    phys_port_cnt_ex: 0,
  };
}

export function newGidEntry(): ibv_gid_entry {
  return { gid: newGid(), gid_index: 0, port_num: 0, gid_type: 0, ndev_ifindex: 0 };
}

/** `struct ibv_gid_entry entries[n]` for ibv_query_gid_table. */
export function newGidEntryArray(n: number): ibv_gid_entry[] {
  return Array.from({ length: n }, newGidEntry);
}

export function newValuesEx(): ibv_values_ex {
  return { comp_mask: 0, raw_clock: { tv_sec: 0n, tv_nsec: 0n } };
}
