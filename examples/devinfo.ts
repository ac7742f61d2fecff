/**
 * ibv_devinfo: rdma-core's libibverbs/examples/devinfo.c, ported to the
 * rnic-model verbs API. Same options (-d, -i, -l, -v), same labels, tabs and
 * number formats, so its output can be diffed against the C tool's.
 *
 * -v prints the extended attributes of ibv_query_device_ex (ODP, timestamp
 * mask, core clock, TSO, RSS, packet pacing, tag matching, CQ moderation,
 * device memory) and the GIDs as devinfo.c prints them since GID types
 * (ibv_query_gid_ex): RoCE v2 GIDs in IPv6 text form (inet_ntop), others
 * as 16 hex bytes, each with ", RoCE v1" / ", RoCE v2" on Ethernet.
 *
 * Differences, and why:
 * - A provider without ibv_query_device_ex / ibv_query_gid_ex (EOPNOTSUPP)
 *   gets the older output: no extended section, GIDs in hex without a type.
 * - No devices is exit code 1 (C: -1, i.e. 255).
 *
 * The text is built by hca_text() from plain data, so it can be checked
 * without a device; print_hca_cap() does the queries.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  IBV_ATOMIC_GLOB,
  IBV_ATOMIC_HCA,
  IBV_ATOMIC_NONE,
  IBV_DEVICE_AUTO_PATH_MIG,
  IBV_DEVICE_BAD_PKEY_CNTR,
  IBV_DEVICE_BAD_QKEY_CNTR,
  IBV_DEVICE_CHANGE_PHY_PORT,
  IBV_DEVICE_CURR_QP_STATE_MOD,
  IBV_DEVICE_INIT_TYPE,
  IBV_DEVICE_MANAGED_FLOW_STEERING,
  IBV_DEVICE_MEM_MGT_EXTENSIONS,
  IBV_DEVICE_MEM_WINDOW,
  IBV_DEVICE_MEM_WINDOW_TYPE_2A,
  IBV_DEVICE_MEM_WINDOW_TYPE_2B,
  IBV_DEVICE_N_NOTIFY_CQ,
  IBV_DEVICE_PORT_ACTIVE_EVENT,
  IBV_DEVICE_RAW_IP_CSUM,
  IBV_DEVICE_RAW_MULTI,
  IBV_DEVICE_RC_IP_CSUM,
  IBV_DEVICE_RC_RNR_NAK_GEN,
  IBV_DEVICE_RESIZE_MAX_WR,
  IBV_DEVICE_SHUTDOWN_PORT,
  IBV_DEVICE_SRQ_RESIZE,
  IBV_DEVICE_SYS_IMAGE_GUID,
  IBV_DEVICE_UD_AV_PORT_ENFORCE,
  IBV_DEVICE_UD_IP_CSUM,
  IBV_DEVICE_XRC,
  IBV_LINK_LAYER_ETHERNET,
  IBV_LINK_LAYER_INFINIBAND,
  IBV_LINK_LAYER_UNSPECIFIED,
  IBV_MTU_1024,
  IBV_MTU_2048,
  IBV_MTU_256,
  IBV_MTU_4096,
  IBV_MTU_512,
  IBV_PORT_ACTIVE,
  IBV_PORT_ARMED,
  IBV_PORT_DOWN,
  IBV_PORT_INIT,
  IBV_TRANSPORT_IB,
  IBV_TRANSPORT_IWARP,
  IBV_TRANSPORT_UNSPECIFIED,
  IBV_TRANSPORT_USNIC,
  IBV_TRANSPORT_USNIC_UDP,
  errnoName,
  ibv_close_device,
  ibv_free_device_list,
  ibv_get_device_list,
  ibv_get_device_name,
  ibv_open_device,
  IBV_GID_TYPE_IB,
  IBV_GID_TYPE_ROCE_V1,
  IBV_GID_TYPE_ROCE_V2,
  IBV_QPT_RAW_PACKET,
  IBV_QPT_UD,
  errno,
  ibv_query_device,
  ibv_query_device_ex,
  ibv_query_gid,
  ibv_query_gid_ex,
  ibv_query_port,
  newDeviceAttr,
  newDeviceAttrEx,
  newGid,
  newGidEntry,
  newPortAttr,
} from '../src/driver/verbs/index.js';
import type { ibv_context, ibv_device, ibv_device_attr, ibv_device_attr_ex, ibv_gid, ibv_port_attr } from '../src/driver/verbs/index.js';
import { GetoptError, getopt_long, intArg, type OptionSpec } from './common/getopt.js';
import { errText, processIo, type Io } from './common/io.js';
import { inet_ntop6 } from './common/inet.js';
import { sprintf } from './common/printf.js';

export function null_gid(gid: ibv_gid): boolean {
  for (let i = 8; i < 16; i++) if (gid.raw[i] !== 0) return false;
  return true;
}

/** A GUID (as its numeric value, what be64toh gives in C) as four groups of four hex digits. */
export function guid_str(guid: bigint): string {
  const g = BigInt.asUintN(64, guid);
  return sprintf('%04x:%04x:%04x:%04x', (g >> 48n) & 0xffffn, (g >> 32n) & 0xffffn, (g >> 16n) & 0xffffn, g & 0xffffn);
}

export function transport_str(transport: number): string {
  switch (transport) {
    case IBV_TRANSPORT_IB:
      return 'InfiniBand';
    case IBV_TRANSPORT_IWARP:
      return 'iWARP';
    case IBV_TRANSPORT_USNIC:
      return 'usNIC';
    case IBV_TRANSPORT_USNIC_UDP:
      return 'usNIC UDP';
    case IBV_TRANSPORT_UNSPECIFIED:
      return 'unspecified';
    default:
      return 'invalid transport';
  }
}

export function port_state_str(pstate: number): string {
  switch (pstate) {
    case IBV_PORT_DOWN:
      return 'PORT_DOWN';
    case IBV_PORT_INIT:
      return 'PORT_INIT';
    case IBV_PORT_ARMED:
      return 'PORT_ARMED';
    case IBV_PORT_ACTIVE:
      return 'PORT_ACTIVE';
    default:
      return 'invalid state';
  }
}

export function port_phy_state_str(phys_state: number): string {
  switch (phys_state) {
    case 1:
      return 'SLEEP';
    case 2:
      return 'POLLING';
    case 3:
      return 'DISABLED';
    case 4:
      return 'PORT_CONFIGURATION TRAINNING'; // sic, as rdma-core prints it
    case 5:
      return 'LINK_UP';
    case 6:
      return 'LINK_ERROR_RECOVERY';
    case 7:
      return 'PHY TEST';
    default:
      return 'invalid physical state';
  }
}

export function atomic_cap_str(atom_cap: number): string {
  switch (atom_cap) {
    case IBV_ATOMIC_NONE:
      return 'ATOMIC_NONE';
    case IBV_ATOMIC_HCA:
      return 'ATOMIC_HCA';
    case IBV_ATOMIC_GLOB:
      return 'ATOMIC_GLOB';
    default:
      return 'invalid atomic capability';
  }
}

export function mtu_str(mtu: number): string {
  switch (mtu) {
    case IBV_MTU_256:
      return '256';
    case IBV_MTU_512:
      return '512';
    case IBV_MTU_1024:
      return '1024';
    case IBV_MTU_2048:
      return '2048';
    case IBV_MTU_4096:
      return '4096';
    default:
      return 'invalid MTU';
  }
}

export function width_str(width: number): string {
  switch (width) {
    case 1:
      return '1';
    case 2:
      return '4';
    case 4:
      return '8';
    case 8:
      return '12';
    case 16:
      return '2';
    default:
      return 'invalid width';
  }
}

/** active_speed (or active_speed_ex when set) → the per-lane rate text. */
export function speed_str(speed: number): string {
  switch (speed) {
    case 1:
      return '2.5 Gbps';
    case 2:
      return '5.0 Gbps';
    case 4:
    case 8:
      return '10.0 Gbps';
    case 16:
      return '14.0 Gbps';
    case 32:
      return '25.0 Gbps';
    case 64:
      return '50.0 Gbps';
    case 128:
      return '100.0 Gbps';
    case 256:
      return '200.0 Gbps';
    default:
      return 'invalid speed';
  }
}

export function vl_str(vl_num: number): string {
  switch (vl_num) {
    case 1:
      return '1';
    case 2:
      return '2';
    case 3:
      return '4';
    case 4:
      return '8';
    case 5:
      return '15';
    default:
      return 'invalid value';
  }
}

export function link_layer_str(link_layer: number): string {
  switch (link_layer) {
    case IBV_LINK_LAYER_UNSPECIFIED:
    case IBV_LINK_LAYER_INFINIBAND:
      return 'InfiniBand';
    case IBV_LINK_LAYER_ETHERNET:
      return 'Ethernet';
    default:
      return 'Unknown';
  }
}

const CAP_FLAGS: ReadonlyArray<readonly [number, string]> = [
  [IBV_DEVICE_RESIZE_MAX_WR, 'RESIZE_MAX_WR'],
  [IBV_DEVICE_BAD_PKEY_CNTR, 'BAD_PKEY_CNTR'],
  [IBV_DEVICE_BAD_QKEY_CNTR, 'BAD_QKEY_CNTR'],
  [IBV_DEVICE_RAW_MULTI, 'RAW_MULTI'],
  [IBV_DEVICE_AUTO_PATH_MIG, 'AUTO_PATH_MIG'],
  [IBV_DEVICE_CHANGE_PHY_PORT, 'CHANGE_PHY_PORT'],
  [IBV_DEVICE_UD_AV_PORT_ENFORCE, 'UD_AV_PORT_ENFORCE'],
  [IBV_DEVICE_CURR_QP_STATE_MOD, 'CURR_QP_STATE_MOD'],
  [IBV_DEVICE_SHUTDOWN_PORT, 'SHUTDOWN_PORT'],
  [IBV_DEVICE_INIT_TYPE, 'INIT_TYPE'],
  [IBV_DEVICE_PORT_ACTIVE_EVENT, 'PORT_ACTIVE_EVENT'],
  [IBV_DEVICE_SYS_IMAGE_GUID, 'SYS_IMAGE_GUID'],
  [IBV_DEVICE_RC_RNR_NAK_GEN, 'RC_RNR_NAK_GEN'],
  [IBV_DEVICE_SRQ_RESIZE, 'SRQ_RESIZE'],
  [IBV_DEVICE_N_NOTIFY_CQ, 'N_NOTIFY_CQ'],
  [IBV_DEVICE_MEM_WINDOW, 'MEM_WINDOW'],
  [IBV_DEVICE_UD_IP_CSUM, 'UD_IP_CSUM'],
  [IBV_DEVICE_XRC, 'XRC'],
  [IBV_DEVICE_MEM_MGT_EXTENSIONS, 'MEM_MGT_EXTENSIONS'],
  [IBV_DEVICE_MEM_WINDOW_TYPE_2A, 'MEM_WINDOW_TYPE_2A'],
  [IBV_DEVICE_MEM_WINDOW_TYPE_2B, 'MEM_WINDOW_TYPE_2B'],
  [IBV_DEVICE_RC_IP_CSUM, 'RC_IP_CSUM'],
  [IBV_DEVICE_RAW_IP_CSUM, 'RAW_IP_CSUM'],
  [IBV_DEVICE_MANAGED_FLOW_STEERING, 'MANAGED_FLOW_STEERING'],
];

export function print_device_cap_flags(dev_cap_flags: number): string {
  const flags = dev_cap_flags >>> 0;
  let known = 0;
  let s = '';
  for (const [bit, name] of CAP_FLAGS) {
    known |= bit;
    if (flags & bit) s += `\t\t\t\t\t${name}\n`;
  }
  const unknown = (flags & ~known) >>> 0;
  if (unknown) s += sprintf('\t\t\t\t\tUnknown flags: 0x%X\n', unknown);
  return s;
}

/** A GID table entry as ibv_query_gid_ex gives it; `gid_type` absent when only ibv_query_gid answered. */
export type GidInfo = ibv_gid & { gid_type?: number; index?: number };

/** What ibv_query_port and ibv_query_gid(_ex) told about one port. */
export interface PortInfo {
  port: number;
  attr: ibv_port_attr | null;
  /**
   * The GID table (verbose only), in index order; an entry's `index` is its
   * table index (default: its position). A null entry is an index whose
   * query failed, which ends the list.
   */
  gids: Array<GidInfo | null>;
}

export function gid_type_str(type: number): string {
  switch (type) {
    case IBV_GID_TYPE_IB:
      return 'IB';
    case IBV_GID_TYPE_ROCE_V1:
      return 'RoCE v1';
    case IBV_GID_TYPE_ROCE_V2:
      return 'RoCE v2';
    default:
      return 'Invalid gid type';
  }
}

/** One GID line: RoCE v2 in IPv6 text form, others as hex; with its type on Ethernet. */
export function gid_line(g: GidInfo, i: number, linkLayer: number): string {
  const suffix = g.gid_type !== undefined && linkLayer === IBV_LINK_LAYER_ETHERNET ? `, ${gid_type_str(g.gid_type)}` : '';
  if (g.gid_type === IBV_GID_TYPE_ROCE_V2) return sprintf('\t\t\tGID[%3d]:\t\t%s%s\n', i, inet_ntop6(g.raw), suffix);
  return sprintf(`\t\t\tGID[%3d]:\t\t${'%02x%02x:'.repeat(7)}%02x%02x%s\n`, i, ...g.raw, suffix);
}

const hex64 = (v: bigint) => BigInt.asUintN(64, v).toString(16);

function odp_trans_caps(trans: number): string {
  if (!trans) return '\t\t\t\t\tNO SUPPORT\n';
  const names: [number, string][] = [
    [1, 'SUPPORT_SEND'],
    [2, 'SUPPORT_RECV'],
    [4, 'SUPPORT_WRITE'],
    [8, 'SUPPORT_READ'],
    [16, 'SUPPORT_ATOMIC'],
    [32, 'SUPPORT_SRQ'],
  ];
  let s = '';
  for (const [bit, name] of names) if (trans & bit) s += `\t\t\t\t\t${name}\n`;
  const unknown = (trans & ~63) >>> 0;
  if (unknown) s += sprintf('\t\t\t\t\tUnknown flags: 0x%X\n', unknown);
  return s;
}

function qpt_lines(qpts: number, indent: string): string {
  let s = '';
  if (qpts & (1 << IBV_QPT_RAW_PACKET)) s += '\t\t\t\t\tSUPPORT_RAW_PACKET\n';
  if (qpts & (1 << IBV_QPT_UD)) s += '\t\t\t\t\tSUPPORT_UD\n';
  const unknown = (qpts & ~((1 << IBV_QPT_RAW_PACKET) | (1 << IBV_QPT_UD))) >>> 0;
  if (unknown) s += sprintf('\t\t\t\t\tUnknown flags: 0x%X\n', unknown);
  return `${indent}supported_qp:\n${s}`;
}

/** The extended section devinfo.c prints after local_ca_ack_delay with -v (ibv_device_attr_ex). */
export function attr_ex_text(x: ibv_device_attr_ex): string {
  let s = '\tgeneral_odp_caps:\n';
  if (x.odp_caps.general_caps & 1n) s += '\t\t\t\t\tODP_SUPPORT\n';
  if (x.odp_caps.general_caps & 2n) s += '\t\t\t\t\tODP_SUPPORT_IMPLICIT\n';
  if (x.odp_caps.general_caps & ~3n) s += `\t\t\t\t\tUnknown flags: 0x${(x.odp_caps.general_caps & ~3n).toString(16).toUpperCase()}\n`;
  s += '\trc_odp_caps:\n' + odp_trans_caps(x.odp_caps.per_transport_caps.rc_odp_caps);
  s += '\tuc_odp_caps:\n' + odp_trans_caps(x.odp_caps.per_transport_caps.uc_odp_caps);
  s += '\tud_odp_caps:\n' + odp_trans_caps(x.odp_caps.per_transport_caps.ud_odp_caps);
  s += '\txrc_odp_caps:\n' + odp_trans_caps(x.xrc_odp_caps);
  s += x.completion_timestamp_mask
    ? `\tcompletion timestamp_mask:\t\t\t0x${hex64(x.completion_timestamp_mask).padStart(16, '0')}\n`
    : '\tcompletion_timestamp_mask not supported\n';
  s += x.hca_core_clock ? `\thca_core_clock:\t\t\t${x.hca_core_clock}kHZ\n` : '\tcore clock not supported\n';
  if (x.raw_packet_caps) {
    s += '\traw packet caps:\n';
    const caps: [number, string][] = [
      [1, 'C-VLAN stripping offload'],
      [2, 'Scatter FCS offload'],
      [4, 'IP csum offload'],
      [8, 'Delay drop'],
    ];
    for (const [bit, name] of caps) if (x.raw_packet_caps & bit) s += `\t\t\t\t\t${name}\n`;
  }
  s += `\tdevice_cap_flags_ex:\t\t0x${hex64(x.device_cap_flags_ex).toUpperCase()}\n`;
  const ex = BigInt.asUintN(64, x.device_cap_flags_ex) & 0xffff_ffff_0000_0000n;
  if (ex & (1n << 34n)) s += '\t\t\t\t\tRAW_SCATTER_FCS\n';
  if (ex & (1n << 36n)) s += '\t\t\t\t\tPCI_WRITE_END_PADDING\n';
  if (ex & ~((1n << 34n) | (1n << 36n))) s += `\t\t\t\t\tUnknown flags: 0x${(ex & ~((1n << 34n) | (1n << 36n))).toString(16).toUpperCase()}\n`;
  s += '\ttso_caps:\n' + sprintf('\tmax_tso:\t\t\t%d\n', x.tso_caps.max_tso);
  if (x.tso_caps.max_tso) s += qpt_lines(x.tso_caps.supported_qpts, '\t');
  const r = x.rss_caps;
  s += '\trss_caps:\n';
  s += sprintf('\t\tmax_rwq_indirection_tables:\t\t\t%u\n', r.max_rwq_indirection_tables);
  s += sprintf('\t\tmax_rwq_indirection_table_size:\t\t\t%u\n', r.max_rwq_indirection_table_size);
  s += sprintf('\t\trx_hash_function:\t\t\t\t0x%x\n', r.rx_hash_function);
  s += `\t\trx_hash_fields_mask:\t\t\t\t0x${hex64(r.rx_hash_fields_mask).toUpperCase()}\n`;
  if (r.supported_qpts) s += qpt_lines(r.supported_qpts, '\t\t');
  s += sprintf('\tmax_wq_type_rq:\t\t\t%u\n', x.max_wq_type_rq);
  const pp = x.packet_pacing_caps;
  s +=
    '\tpacket_pacing_caps:\n' +
    sprintf('\t\tqp_rate_limit_min:\t%ukbps\n', pp.qp_rate_limit_min) +
    sprintf('\t\tqp_rate_limit_max:\t%ukbps\n', pp.qp_rate_limit_max);
  if (pp.qp_rate_limit_max) s += qpt_lines(pp.supported_qpts, '\t\t');
  const tm = x.tm_caps;
  if (tm.max_num_tags) {
    s += sprintf('\tmax_rndv_hdr_size:\t\t%u\n', tm.max_rndv_hdr_size) + sprintf('\tmax_num_tags:\t\t\t%u\n', tm.max_num_tags);
    s += sprintf('\tmax_ops:\t\t\t%u\n', tm.max_ops) + sprintf('\tmax_sge:\t\t\t%u\n', tm.max_sge) + '\tflags:\n';
    if (tm.flags & 1) s += '\t\t\t\t\tIBV_TM_CAP_RC\n';
  } else s += '\ttag matching not supported\n';
  const cm = x.cq_mod_caps;
  if (cm.max_cq_count && cm.max_cq_period)
    s += `\n\tcq moderation caps:\n\t\tmax_cq_count:\t${cm.max_cq_count}\n\t\tmax_cq_period:\t${cm.max_cq_period} us\n\n`;
  if (x.max_dm_size) s += `\tmaximum available device memory:\t${x.max_dm_size}Bytes\n\n`;
  return s;
}

/** Everything print_hca_cap prints about one device. */
export interface HcaInfo {
  name: string;
  transport_type: number;
  attr: ibv_device_attr;
  /** The sysfs board_id, when the device has one. */
  board_id: string | null;
  /** ibv_query_device_ex's answer (-v prints its extended section), or absent when the provider has none. */
  attr_ex?: ibv_device_attr_ex | null;
  /** The opened context's num_comp_vectors (printed with the extended section). */
  num_comp_vectors?: number;
  ports: PortInfo[];
}

/** The text print_hca_cap writes for one device, and what it writes on stderr. */
export function hca_text(h: HcaInfo, verbose: boolean): { out: string; err: string } {
  const a = h.attr;
  let s = '';
  let err = '';
  s += `hca_id:\t${h.name}\n`;
  s += `\ttransport:\t\t\t${transport_str(h.transport_type)} (${h.transport_type})\n`;
  if (a.fw_ver.length) s += `\tfw_ver:\t\t\t\t${a.fw_ver}\n`;
  s += `\tnode_guid:\t\t\t${guid_str(a.node_guid)}\n`;
  s += `\tsys_image_guid:\t\t\t${guid_str(a.sys_image_guid)}\n`;
  s += sprintf('\tvendor_id:\t\t\t0x%04x\n', a.vendor_id);
  s += sprintf('\tvendor_part_id:\t\t\t%d\n', a.vendor_part_id);
  s += sprintf('\thw_ver:\t\t\t\t0x%X\n', a.hw_ver);
  if (h.board_id) s += `\tboard_id:\t\t\t${h.board_id}\n`;
  s += sprintf('\tphys_port_cnt:\t\t\t%d\n', a.phys_port_cnt);

  if (verbose) {
    s += sprintf('\tmax_mr_size:\t\t\t0x%llx\n', a.max_mr_size);
    s += sprintf('\tpage_size_cap:\t\t\t0x%llx\n', a.page_size_cap);
    s += sprintf('\tmax_qp:\t\t\t\t%d\n', a.max_qp);
    s += sprintf('\tmax_qp_wr:\t\t\t%d\n', a.max_qp_wr);
    s += sprintf('\tdevice_cap_flags:\t\t0x%08x\n', a.device_cap_flags >>> 0);
    s += print_device_cap_flags(a.device_cap_flags);
    s += sprintf('\tmax_sge:\t\t\t%d\n', a.max_sge);
    s += sprintf('\tmax_sge_rd:\t\t\t%d\n', a.max_sge_rd);
    s += sprintf('\tmax_cq:\t\t\t\t%d\n', a.max_cq);
    s += sprintf('\tmax_cqe:\t\t\t%d\n', a.max_cqe);
    s += sprintf('\tmax_mr:\t\t\t\t%d\n', a.max_mr);
    s += sprintf('\tmax_pd:\t\t\t\t%d\n', a.max_pd);
    s += sprintf('\tmax_qp_rd_atom:\t\t\t%d\n', a.max_qp_rd_atom);
    s += sprintf('\tmax_ee_rd_atom:\t\t\t%d\n', a.max_ee_rd_atom);
    s += sprintf('\tmax_res_rd_atom:\t\t%d\n', a.max_res_rd_atom);
    s += sprintf('\tmax_qp_init_rd_atom:\t\t%d\n', a.max_qp_init_rd_atom);
    s += sprintf('\tmax_ee_init_rd_atom:\t\t%d\n', a.max_ee_init_rd_atom);
    s += sprintf('\tatomic_cap:\t\t\t%s (%d)\n', atomic_cap_str(a.atomic_cap), a.atomic_cap);
    s += sprintf('\tmax_ee:\t\t\t\t%d\n', a.max_ee);
    s += sprintf('\tmax_rdd:\t\t\t%d\n', a.max_rdd);
    s += sprintf('\tmax_mw:\t\t\t\t%d\n', a.max_mw);
    s += sprintf('\tmax_raw_ipv6_qp:\t\t%d\n', a.max_raw_ipv6_qp);
    s += sprintf('\tmax_raw_ethy_qp:\t\t%d\n', a.max_raw_ethy_qp);
    s += sprintf('\tmax_mcast_grp:\t\t\t%d\n', a.max_mcast_grp);
    s += sprintf('\tmax_mcast_qp_attach:\t\t%d\n', a.max_mcast_qp_attach);
    s += sprintf('\tmax_total_mcast_qp_attach:\t%d\n', a.max_total_mcast_qp_attach);
    s += sprintf('\tmax_ah:\t\t\t\t%d\n', a.max_ah);
    s += sprintf('\tmax_fmr:\t\t\t%d\n', a.max_fmr);
    if (a.max_fmr) s += sprintf('\tmax_map_per_fmr:\t\t%d\n', a.max_map_per_fmr);
    s += sprintf('\tmax_srq:\t\t\t%d\n', a.max_srq);
    if (a.max_srq) {
      s += sprintf('\tmax_srq_wr:\t\t\t%d\n', a.max_srq_wr);
      s += sprintf('\tmax_srq_sge:\t\t\t%d\n', a.max_srq_sge);
    }
    s += sprintf('\tmax_pkeys:\t\t\t%d\n', a.max_pkeys);
    s += sprintf('\tlocal_ca_ack_delay:\t\t%d\n', a.local_ca_ack_delay);
    // devinfo.c ends the extended section with the context's completion vectors.
    if (h.attr_ex) s += attr_ex_text(h.attr_ex) + sprintf('\tnum_comp_vectors:\t\t%d\n', h.num_comp_vectors ?? 0);
  }

  for (const p of h.ports) {
    const pa = p.attr;
    if (!pa) {
      err += `Failed to query port ${p.port} props\n`;
      break;
    }
    s += `\t\tport:\t${p.port}\n`;
    s += `\t\t\tstate:\t\t\t${port_state_str(pa.state)} (${pa.state})\n`;
    s += `\t\t\tmax_mtu:\t\t${mtu_str(pa.max_mtu)} (${pa.max_mtu})\n`;
    s += `\t\t\tactive_mtu:\t\t${mtu_str(pa.active_mtu)} (${pa.active_mtu})\n`;
    s += sprintf('\t\t\tsm_lid:\t\t\t%d\n', pa.sm_lid);
    s += sprintf('\t\t\tport_lid:\t\t%d\n', pa.lid);
    s += sprintf('\t\t\tport_lmc:\t\t0x%02x\n', pa.lmc);
    s += `\t\t\tlink_layer:\t\t${link_layer_str(pa.link_layer)}\n`;

    if (verbose) {
      const speed = pa.active_speed_ex ? pa.active_speed_ex : pa.active_speed;
      s += sprintf('\t\t\tmax_msg_sz:\t\t0x%x\n', pa.max_msg_sz);
      s += sprintf('\t\t\tport_cap_flags:\t\t0x%08x\n', pa.port_cap_flags >>> 0);
      s += sprintf('\t\t\tport_cap_flags2:\t0x%04x\n', pa.port_cap_flags2);
      s += sprintf('\t\t\tmax_vl_num:\t\t%s (%d)\n', vl_str(pa.max_vl_num), pa.max_vl_num);
      s += sprintf('\t\t\tbad_pkey_cntr:\t\t0x%x\n', pa.bad_pkey_cntr);
      s += sprintf('\t\t\tqkey_viol_cntr:\t\t0x%x\n', pa.qkey_viol_cntr);
      s += sprintf('\t\t\tsm_sl:\t\t\t%d\n', pa.sm_sl);
      s += sprintf('\t\t\tpkey_tbl_len:\t\t%d\n', pa.pkey_tbl_len);
      s += sprintf('\t\t\tgid_tbl_len:\t\t%d\n', pa.gid_tbl_len);
      s += sprintf('\t\t\tsubnet_timeout:\t\t%d\n', pa.subnet_timeout);
      s += sprintf('\t\t\tinit_type_reply:\t%d\n', pa.init_type_reply);
      s += sprintf('\t\t\tactive_width:\t\t%sX (%d)\n', width_str(pa.active_width), pa.active_width);
      s += sprintf('\t\t\tactive_speed:\t\t%s (%d)\n', speed_str(speed), speed);
      if (h.transport_type === IBV_TRANSPORT_IB) {
        s += sprintf('\t\t\tphys_state:\t\t%s (%d)\n', port_phy_state_str(pa.phys_state), pa.phys_state);
      }
      let failed = false;
      for (let i = 0; i < p.gids.length; i++) {
        const gid = p.gids[i];
        if (!gid) {
          err += `Failed to query gid to port ${p.port}, index ${i}\n`;
          failed = true;
          break;
        }
        if (!null_gid(gid)) s += gid_line(gid, gid.index ?? i, pa.link_layer);
      }
      if (failed) break;
    }
    s += '\n';
  }
  return { out: s, err };
}

function read_board_id(ib_dev: ibv_device): string | null {
  try {
    const v = readFileSync(join(ib_dev.ibdev_path, 'board_id'), 'latin1').replace(/\n$/, '');
    return v.length ? v : null;
  } catch {
    return null;
  }
}

/** Opens the device, queries it and prints it. Returns C's codes: 0, 1 open, 2 query, 3 close, 4 bad port. */
export function print_hca_cap(ib_dev: ibv_device, ib_port: number, verbose: boolean, io: Io = processIo): number {
  let ctx: ibv_context;
  try {
    ctx = ibv_open_device(ib_dev);
  } catch (e) {
    io.err(`Failed to open device (${errText(e)})\n`);
    return 1;
  }
  let rc = 0;
  try {
    const ex = newDeviceAttrEx();
    let attr_ex: ibv_device_attr_ex | null = ex;
    let attr = ex.orig_attr;
    let q = ibv_query_device_ex(ctx, null, ex);
    if (q === errno.EOPNOTSUPP) {
      attr_ex = null;
      attr = newDeviceAttr();
      q = ibv_query_device(ctx, attr);
    }
    if (q) {
      io.err(`Failed to query device props (${errnoName(q)})\n`);
      rc = 2;
      return rc;
    }
    if (ib_port && ib_port > attr.phys_port_cnt) {
      io.err('Invalid port requested for device\n');
      rc = 4;
      return rc;
    }
    const ports: PortInfo[] = [];
    for (let port = 1; port <= attr.phys_port_cnt; ++port) {
      if (ib_port && port !== ib_port) continue;
      const pa = newPortAttr();
      if (ibv_query_port(ctx, port, pa)) {
        ports.push({ port, attr: null, gids: [] });
        rc = 1;
        break;
      }
      const gids: Array<GidInfo | null> = [];
      if (verbose) {
        let typed = true;
        for (let i = 0; i < pa.gid_tbl_len; i++) {
          const e = newGidEntry();
          const r = typed ? ibv_query_gid_ex(ctx, port, i, e, 0) : errno.EOPNOTSUPP;
          if (r === 0) {
            gids.push({ raw: e.gid.raw, gid_type: e.gid_type, index: i });
            continue;
          }
          if (r === errno.ENODATA) continue;
          typed = false;
          // No typed query (EOPNOTSUPP): the plain one, as devinfo did before GID types.
          const gid = newGid();
          if (ibv_query_gid(ctx, port, i, gid)) {
            gids.push(null);
            rc = 1;
            break;
          }
          gids.push({ raw: gid.raw, index: i });
        }
      }
      ports.push({ port, attr: pa, gids });
    }
    const text = hca_text(
      {
        name: ibv_get_device_name(ib_dev),
        transport_type: ib_dev.transport_type,
        attr,
        attr_ex,
        num_comp_vectors: ctx.num_comp_vectors,
        board_id: read_board_id(ib_dev),
        ports,
      },
      verbose,
    );
    io.out(text.out);
    if (text.err) io.err(text.err);
    return rc;
  } finally {
    if (ibv_close_device(ctx)) {
      io.err('Failed to close device');
      rc = 3;
    }
  }
}

export function usage(argv0: string): string {
  return [
    `Usage: ${argv0}             print the ca attributes`,
    '',
    'Options:',
    '  -d, --ib-dev=<dev>     only this RDMA device (default: every device)',
    '  -i, --ib-port=<port>   only this port of the device (default: every port)',
    '  -l, --list             list the device names only',
    '  -v, --verbose          print every attribute, and the GID tables',
    '',
  ].join('\n');
}

export interface DevinfoOptions {
  ib_devname: string | null;
  ib_port: number;
  list: boolean;
  verbose: boolean;
}

const OPTIONS: readonly OptionSpec[] = [
  { short: 'd', long: 'ib-dev', arg: true },
  { short: 'i', long: 'ib-port', arg: true },
  { short: 'l', long: 'list', arg: false },
  { short: 'v', long: 'verbose', arg: false },
];

/** Throws GetoptError on a usage mistake. */
export function parse_args(argv: readonly string[]): DevinfoOptions {
  const o: DevinfoOptions = { ib_devname: null, ib_port: 0, list: false, verbose: false };
  const { options, operands } = getopt_long(argv, OPTIONS);
  for (const opt of options) {
    switch (opt.name) {
      case 'ib-dev':
        if (!opt.value) throw new GetoptError(`${opt.as}: the device name is empty`);
        o.ib_devname = opt.value;
        break;
      case 'ib-port':
        o.ib_port = intArg(opt, 1, 255);
        break;
      case 'list':
        o.list = true;
        break;
      case 'verbose':
        o.verbose = true;
        break;
    }
  }
  if (operands.length) throw new GetoptError(`unexpected argument '${operands[0] as string}'`);
  return o;
}

export interface MainOptions {
  io?: Io;
  argv0?: string;
}

export async function main(argv: string[], mo: MainOptions = {}): Promise<number> {
  const io = mo.io ?? processIo;
  const argv0 = mo.argv0 ?? 'ibv_devinfo';
  let o: DevinfoOptions;
  try {
    o = parse_args(argv);
  } catch (e) {
    if ((e as { code?: string }).code !== 'EXAMPLE_USAGE') throw e;
    io.err(`${argv0}: ${(e as Error).message}\n${usage(argv0)}`);
    return 2;
  }

  const dev_list = ibv_get_device_list();
  if (o.list) {
    io.out(`${dev_list.length} HCA${dev_list.length !== 1 ? 's' : ''} found:\n`);
    for (const d of dev_list) io.out(`\t${ibv_get_device_name(d)}\n`);
    io.out('\n');
    ibv_free_device_list(dev_list);
    return 0;
  }

  let ret = 0;
  if (o.ib_devname) {
    const dev = dev_list.find((d) => ibv_get_device_name(d) === o.ib_devname);
    if (!dev) {
      io.err(`IB device '${o.ib_devname}' wasn't found\n`);
      return 1;
    }
    ret |= print_hca_cap(dev, o.ib_port, o.verbose, io);
  } else {
    if (!dev_list.length) {
      io.err('no RDMA devices found\n');
      return 1;
    }
    for (const dev of dev_list) ret |= print_hca_cap(dev, o.ib_port, o.verbose, io);
  }
  ibv_free_device_list(dev_list);
  return ret;
}
