/**
 * devinfo without a device: arguments, and the printed text, against
 * hand-written expectations and against the output of the real ibv_devinfo.
 */
import { describe, expect, it } from 'vitest';
import { BufferIo } from '../../examples/common/io.js';
import {
  attr_ex_text,
  gid_line,
  guid_str,
  hca_text,
  link_layer_str,
  main,
  mtu_str,
  parse_args,
  port_phy_state_str,
  port_state_str,
  print_device_cap_flags,
  speed_str,
  transport_str,
  vl_str,
  width_str,
  type HcaInfo,
} from '../../examples/devinfo.js';
import {
  IBV_GID_TYPE_ROCE_V1,
  IBV_GID_TYPE_ROCE_V2,
  IBV_LINK_LAYER_ETHERNET,
  IBV_LINK_LAYER_INFINIBAND,
  IBV_TRANSPORT_IB,
  IBV_TRANSPORT_IWARP,
  newDeviceAttr,
  newDeviceAttrEx,
  newPortAttr,
  type ibv_port_attr,
} from '../../src/driver/verbs/index.js';
import { noRdmaDevice } from './device.js';

describe('devinfo arguments', () => {
  it('flags, short and long', () => {
    expect(parse_args([])).toEqual({ ib_devname: null, ib_port: 0, list: false, verbose: false });
    expect(parse_args(['-d', 'mlx5_0', '-i', '2', '-v'])).toEqual({ ib_devname: 'mlx5_0', ib_port: 2, list: false, verbose: true });
    expect(parse_args(['--ib-dev=rxe0', '--ib-port=1', '--list', '--verbose'])).toEqual({ ib_devname: 'rxe0', ib_port: 1, list: true, verbose: true });
  });

  it.each([
    [['-i', '0'], 'ibv_devinfo: -i: 0 is out of range (1..255)'],
    [['-i', 'x'], "ibv_devinfo: -i: 'x' is not a number"],
    [['-x'], "ibv_devinfo: invalid option -- 'x'"],
    [['-d'], "ibv_devinfo: option requires an argument -- 'd'"],
    [['mlx5_0'], "ibv_devinfo: unexpected argument 'mlx5_0'"],
  ])('%j → exit 2: %s', async (argv, first) => {
    const io = new BufferIo();
    expect(await main(argv, { io })).toBe(2);
    expect(io.stderr.split('\n')[0]).toBe(first);
    expect(io.stderr).toContain('-v, --verbose');
  });

  it.skipIf(!noRdmaDevice)('with no device: "no RDMA devices found" (exit 1), -l lists none (exit 0), -d names the missing one', async () => {
    let io = new BufferIo();
    expect(await main([], { io })).toBe(1);
    expect(io.stderr).toBe('no RDMA devices found\n');
    io = new BufferIo();
    expect(await main(['-l'], { io })).toBe(0);
    expect(io.stdout).toBe('0 HCAs found:\n\n');
    io = new BufferIo();
    expect(await main(['-d', 'mlx5_9'], { io })).toBe(1);
    expect(io.stderr).toBe("IB device 'mlx5_9' wasn't found\n");
  });
});

describe('devinfo strings', () => {
  it('as devinfo.c names things', () => {
    expect(guid_str(0x043f720300a1b2c3n)).toBe('043f:7203:00a1:b2c3');
    expect(guid_str(0n)).toBe('0000:0000:0000:0000');
    expect([0, 1, 2, 3, 4, 9].map(transport_str)).toEqual(['InfiniBand', 'iWARP', 'usNIC', 'usNIC UDP', 'unspecified', 'invalid transport']);
    expect([1, 2, 3, 4, 0, 5].map(port_state_str)).toEqual(['PORT_DOWN', 'PORT_INIT', 'PORT_ARMED', 'PORT_ACTIVE', 'invalid state', 'invalid state']);
    expect([1, 5, 0, 6].map(mtu_str)).toEqual(['256', '4096', 'invalid MTU', 'invalid MTU']);
    expect([1, 2, 4, 8, 16, 3].map(width_str)).toEqual(['1', '4', '8', '12', '2', 'invalid width']);
    expect([1, 2, 4, 8, 16, 32, 64, 128, 256, 3].map(speed_str)).toEqual([
      '2.5 Gbps',
      '5.0 Gbps',
      '10.0 Gbps',
      '10.0 Gbps',
      '14.0 Gbps',
      '25.0 Gbps',
      '50.0 Gbps',
      '100.0 Gbps',
      '200.0 Gbps',
      'invalid speed',
    ]);
    expect([1, 2, 3, 4, 5, 6].map(vl_str)).toEqual(['1', '2', '4', '8', '15', 'invalid value']);
    expect([0, 1, 2, 3].map(link_layer_str)).toEqual(['InfiniBand', 'InfiniBand', 'Ethernet', 'Unknown']);
    expect([4, 5, 0].map(port_phy_state_str)).toEqual(['PORT_CONFIGURATION TRAINNING', 'LINK_UP', 'invalid physical state']);
  });

  it('device_cap_flags as a real ibv_devinfo listed 0xed721c36, unknown bits included', () => {
    expect(print_device_cap_flags(0xed721c36)).toBe(
      [
        'BAD_PKEY_CNTR',
        'BAD_QKEY_CNTR',
        'AUTO_PATH_MIG',
        'CHANGE_PHY_PORT',
        'PORT_ACTIVE_EVENT',
        'SYS_IMAGE_GUID',
        'RC_RNR_NAK_GEN',
        'MEM_WINDOW',
        'XRC',
        'MEM_MGT_EXTENSIONS',
        'MEM_WINDOW_TYPE_2B',
        'RAW_IP_CSUM',
        'MANAGED_FLOW_STEERING',
        'Unknown flags: 0xC8400000',
      ]
        .map((f) => `\t\t\t\t\t${f}\n`)
        .join(''),
    );
  });
});

/** The attributes of a ConnectX-6 Dx as a real `ibv_devinfo -vv` printed them. */
function cx6(): HcaInfo {
  const attr = Object.assign(newDeviceAttr(), {
    fw_ver: '20.37.1700',
    node_guid: 0x88e9a4ffff25a462n,
    sys_image_guid: 0x88e9a4ffff25a462n,
    vendor_id: 0x02c9,
    vendor_part_id: 4123,
    hw_ver: 0,
    phys_port_cnt: 1,
    max_mr_size: 0xffffffffffffffffn,
    page_size_cap: 0xfffffffffffff000n,
    max_qp: 131072,
    max_qp_wr: 32768,
    device_cap_flags: 0x21361c36,
    max_sge: 30,
    max_sge_rd: 30,
    max_cq: 16777216,
    max_cqe: 4194303,
    max_mr: 16777216,
    max_pd: 8388608,
    max_qp_rd_atom: 16,
    max_ee_rd_atom: 0,
    max_res_rd_atom: 2097152,
    max_qp_init_rd_atom: 16,
    max_ee_init_rd_atom: 0,
    atomic_cap: 1,
    max_ee: 0,
    max_rdd: 0,
    max_mw: 16777216,
    max_raw_ipv6_qp: 0,
    max_raw_ethy_qp: 0,
    max_mcast_grp: 2097152,
    max_mcast_qp_attach: 240,
    max_total_mcast_qp_attach: 503316480,
    max_ah: 2147483647,
    max_fmr: 0,
    max_srq: 8388608,
    max_srq_wr: 32767,
    max_srq_sge: 31,
    max_pkeys: 128,
    local_ca_ack_delay: 16,
  });
  return { name: 'mlx5_0', transport_type: IBV_TRANSPORT_IB, attr, board_id: 'MT_0000000594', ports: [] };
}

/** The device part of that real output, up to where the extended attributes (not printed here) begin. */
const REAL_VV_DEVICE =
  'hca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n\tfw_ver:\t\t\t\t20.37.1700\n\tnode_guid:\t\t\t88e9:a4ff:ff25:a462\n' +
  '\tsys_image_guid:\t\t\t88e9:a4ff:ff25:a462\n\tvendor_id:\t\t\t0x02c9\n\tvendor_part_id:\t\t\t4123\n\thw_ver:\t\t\t\t0x0\n' +
  '\tboard_id:\t\t\tMT_0000000594\n\tphys_port_cnt:\t\t\t1\n\tmax_mr_size:\t\t\t0xffffffffffffffff\n' +
  '\tpage_size_cap:\t\t\t0xfffffffffffff000\n\tmax_qp:\t\t\t\t131072\n\tmax_qp_wr:\t\t\t32768\n' +
  '\tdevice_cap_flags:\t\t0x21361c36\n\t\t\t\t\tBAD_PKEY_CNTR\n\t\t\t\t\tBAD_QKEY_CNTR\n\t\t\t\t\tAUTO_PATH_MIG\n' +
  '\t\t\t\t\tCHANGE_PHY_PORT\n\t\t\t\t\tPORT_ACTIVE_EVENT\n\t\t\t\t\tSYS_IMAGE_GUID\n\t\t\t\t\tRC_RNR_NAK_GEN\n' +
  '\t\t\t\t\tMEM_WINDOW\n\t\t\t\t\tUD_IP_CSUM\n\t\t\t\t\tXRC\n\t\t\t\t\tMEM_MGT_EXTENSIONS\n\t\t\t\t\tMEM_WINDOW_TYPE_2B\n' +
  '\t\t\t\t\tMANAGED_FLOW_STEERING\n\tmax_sge:\t\t\t30\n\tmax_sge_rd:\t\t\t30\n\tmax_cq:\t\t\t\t16777216\n' +
  '\tmax_cqe:\t\t\t4194303\n\tmax_mr:\t\t\t\t16777216\n\tmax_pd:\t\t\t\t8388608\n\tmax_qp_rd_atom:\t\t\t16\n' +
  '\tmax_ee_rd_atom:\t\t\t0\n\tmax_res_rd_atom:\t\t2097152\n\tmax_qp_init_rd_atom:\t\t16\n\tmax_ee_init_rd_atom:\t\t0\n' +
  '\tatomic_cap:\t\t\tATOMIC_HCA (1)\n\tmax_ee:\t\t\t\t0\n\tmax_rdd:\t\t\t0\n\tmax_mw:\t\t\t\t16777216\n' +
  '\tmax_raw_ipv6_qp:\t\t0\n\tmax_raw_ethy_qp:\t\t0\n\tmax_mcast_grp:\t\t\t2097152\n\tmax_mcast_qp_attach:\t\t240\n' +
  '\tmax_total_mcast_qp_attach:\t503316480\n\tmax_ah:\t\t\t\t2147483647\n\tmax_fmr:\t\t\t0\n\tmax_srq:\t\t\t8388608\n' +
  '\tmax_srq_wr:\t\t\t32767\n\tmax_srq_sge:\t\t\t31\n\tmax_pkeys:\t\t\t128\n\tlocal_ca_ack_delay:\t\t16\n';

function ibPort(over: Partial<ibv_port_attr> = {}): ibv_port_attr {
  return Object.assign(newPortAttr(), {
    state: 4,
    max_mtu: 5,
    active_mtu: 5,
    sm_lid: 1,
    lid: 3,
    lmc: 0,
    link_layer: 1,
    max_msg_sz: 0x40000000,
    port_cap_flags: 0x2651e848,
    port_cap_flags2: 0x0012,
    max_vl_num: 4,
    pkey_tbl_len: 128,
    gid_tbl_len: 8,
    subnet_timeout: 18,
    active_width: 2,
    active_speed: 64,
    phys_state: 5,
    ...over,
  });
}

describe('devinfo text', () => {
  it('-v: the device attributes exactly as the real ibv_devinfo printed them', () => {
    expect(hca_text(cx6(), true).out).toBe(REAL_VV_DEVICE);
  });

  it('without -v: the short form, and each port', () => {
    const h = cx6();
    h.ports = [{ port: 1, attr: ibPort(), gids: [] }];
    expect(hca_text(h, false)).toEqual({
      out:
        'hca_id:\tmlx5_0\n' +
        '\ttransport:\t\t\tInfiniBand (0)\n' +
        '\tfw_ver:\t\t\t\t20.37.1700\n' +
        '\tnode_guid:\t\t\t88e9:a4ff:ff25:a462\n' +
        '\tsys_image_guid:\t\t\t88e9:a4ff:ff25:a462\n' +
        '\tvendor_id:\t\t\t0x02c9\n' +
        '\tvendor_part_id:\t\t\t4123\n' +
        '\thw_ver:\t\t\t\t0x0\n' +
        '\tboard_id:\t\t\tMT_0000000594\n' +
        '\tphys_port_cnt:\t\t\t1\n' +
        '\t\tport:\t1\n' +
        '\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n' +
        '\t\t\tmax_mtu:\t\t4096 (5)\n' +
        '\t\t\tactive_mtu:\t\t4096 (5)\n' +
        '\t\t\tsm_lid:\t\t\t1\n' +
        '\t\t\tport_lid:\t\t3\n' +
        '\t\t\tport_lmc:\t\t0x00\n' +
        '\t\t\tlink_layer:\t\tInfiniBand\n' +
        '\n',
      err: '',
    });
  });

  it('-v: the port attributes and the non-null GIDs', () => {
    const h = cx6();
    const gid = (hex: string): { raw: Uint8Array } => ({ raw: Uint8Array.from(Buffer.from(hex, 'hex')) });
    h.ports = [
      {
        port: 1,
        attr: ibPort(),
        gids: [gid('fe80000000000000043f720300a1b2c3'), gid('fe800000000000000000000000000000'), gid('00000000000000000000ffff0a000001')],
      },
    ];
    const text = hca_text(h, true).out;
    expect(text.slice(REAL_VV_DEVICE.length)).toBe(
      '\t\tport:\t1\n' +
        '\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n' +
        '\t\t\tmax_mtu:\t\t4096 (5)\n' +
        '\t\t\tactive_mtu:\t\t4096 (5)\n' +
        '\t\t\tsm_lid:\t\t\t1\n' +
        '\t\t\tport_lid:\t\t3\n' +
        '\t\t\tport_lmc:\t\t0x00\n' +
        '\t\t\tlink_layer:\t\tInfiniBand\n' +
        '\t\t\tmax_msg_sz:\t\t0x40000000\n' +
        '\t\t\tport_cap_flags:\t\t0x2651e848\n' +
        '\t\t\tport_cap_flags2:\t0x0012\n' +
        '\t\t\tmax_vl_num:\t\t8 (4)\n' +
        '\t\t\tbad_pkey_cntr:\t\t0x0\n' +
        '\t\t\tqkey_viol_cntr:\t\t0x0\n' +
        '\t\t\tsm_sl:\t\t\t0\n' +
        '\t\t\tpkey_tbl_len:\t\t128\n' +
        '\t\t\tgid_tbl_len:\t\t8\n' +
        '\t\t\tsubnet_timeout:\t\t18\n' +
        '\t\t\tinit_type_reply:\t0\n' +
        '\t\t\tactive_width:\t\t4X (2)\n' +
        '\t\t\tactive_speed:\t\t50.0 Gbps (64)\n' +
        '\t\t\tphys_state:\t\tLINK_UP (5)\n' +
        '\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:043f:7203:00a1:b2c3\n' +
        '\t\t\tGID[  2]:\t\t0000:0000:0000:0000:0000:ffff:0a00:0001\n' +
        '\n',
    );
  });

  it('-v: active_speed_ex wins when set; no phys_state line off InfiniBand transport', () => {
    const h = { ...cx6(), transport_type: IBV_TRANSPORT_IWARP };
    h.ports = [{ port: 1, attr: ibPort({ active_speed: 0, active_speed_ex: 256 }), gids: [] }];
    const text = hca_text(h, true).out;
    expect(text).toContain('\t\t\tactive_speed:\t\t200.0 Gbps (256)\n');
    expect(text).not.toContain('phys_state');
  });

  it('failures are reported on stderr where devinfo.c reports them, and stop the listing', () => {
    const h = cx6();
    h.ports = [{ port: 1, attr: ibPort(), gids: [{ raw: new Uint8Array(16) }, null] }];
    const r = hca_text(h, true);
    expect(r.err).toBe('Failed to query gid to port 1, index 1\n');
    expect(r.out.endsWith('\t\t\tphys_state:\t\tLINK_UP (5)\n')).toBe(true);
    const p = cx6();
    p.ports = [{ port: 1, attr: null, gids: [] }];
    expect(hca_text(p, false).err).toBe('Failed to query port 1 props\n');
  });

  it('no fw_ver line when the firmware version is empty, no board_id without one', () => {
    const h = cx6();
    h.attr.fw_ver = '';
    h.board_id = null;
    const out = hca_text(h, false).out;
    expect(out).not.toContain('fw_ver');
    expect(out).not.toContain('board_id');
  });
});

describe('devinfo with GID types and the extended attributes (ibv_query_gid_ex, ibv_query_device_ex)', () => {
  const raw = (hex: string) => Uint8Array.from(Buffer.from(hex, 'hex'));
  it('RoCE v2 GIDs print in IPv6 text form, RoCE v1 in hex, each with its type on Ethernet', () => {
    const e = IBV_LINK_LAYER_ETHERNET;
    expect(gid_line({ raw: raw('fe800000000000000000000000000001'), gid_type: IBV_GID_TYPE_ROCE_V1 }, 0, e)).toBe(
      '\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:0000:0000:0000:0001, RoCE v1\n',
    );
    expect(gid_line({ raw: raw('fe800000000000000000000000000001'), gid_type: IBV_GID_TYPE_ROCE_V2 }, 1, e)).toBe('\t\t\tGID[  1]:\t\tfe80::1, RoCE v2\n');
    expect(gid_line({ raw: raw('00000000000000000000ffffc0000201'), gid_type: IBV_GID_TYPE_ROCE_V2 }, 3, e)).toBe(
      '\t\t\tGID[  3]:\t\t::ffff:192.0.2.1, RoCE v2\n',
    );
    // Two zero runs of equal length: the first is compressed, as glibc's inet_ntop does.
    expect(gid_line({ raw: raw('20010db8000000000001000000000001'), gid_type: IBV_GID_TYPE_ROCE_V2 }, 12, e)).toBe(
      '\t\t\tGID[ 12]:\t\t2001:db8::1:0:0:1, RoCE v2\n',
    );
    // InfiniBand: no type suffix; no type known (plain ibv_query_gid): hex without one.
    expect(gid_line({ raw: raw('fe800000000000000000000000000001'), gid_type: 0 }, 0, IBV_LINK_LAYER_INFINIBAND)).toBe(
      '\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:0000:0000:0000:0001\n',
    );
    expect(gid_line({ raw: raw('fe800000000000000000000000000001') }, 0, e)).toBe('\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:0000:0000:0000:0001\n');
  });

  it("-v prints the extended section after local_ca_ack_delay, in devinfo.c's labels", () => {
    const x = newDeviceAttrEx();
    x.completion_timestamp_mask = 0xffff_ffff_ffff_ffffn;
    x.hca_core_clock = 1_000_000n;
    x.device_cap_flags_ex = 0x1cc6n;
    x.cq_mod_caps = { max_cq_count: 65535, max_cq_period: 65535 };
    const t = attr_ex_text(x);
    expect(t).toBe(
      '\tgeneral_odp_caps:\n\trc_odp_caps:\n\t\t\t\t\tNO SUPPORT\n\tuc_odp_caps:\n\t\t\t\t\tNO SUPPORT\n\tud_odp_caps:\n\t\t\t\t\tNO SUPPORT\n' +
        '\txrc_odp_caps:\n\t\t\t\t\tNO SUPPORT\n' +
        '\tcompletion timestamp_mask:\t\t\t0xffffffffffffffff\n\thca_core_clock:\t\t\t1000000kHZ\n' +
        '\tdevice_cap_flags_ex:\t\t0x1CC6\n\ttso_caps:\n\tmax_tso:\t\t\t0\n' +
        '\trss_caps:\n\t\tmax_rwq_indirection_tables:\t\t\t0\n\t\tmax_rwq_indirection_table_size:\t\t\t0\n\t\trx_hash_function:\t\t\t\t0x0\n\t\trx_hash_fields_mask:\t\t\t\t0x0\n' +
        '\tmax_wq_type_rq:\t\t\t0\n\tpacket_pacing_caps:\n\t\tqp_rate_limit_min:\t0kbps\n\t\tqp_rate_limit_max:\t0kbps\n' +
        '\ttag matching not supported\n\n\tcq moderation caps:\n\t\tmax_cq_count:\t65535\n\t\tmax_cq_period:\t65535 us\n\n',
    );
    const none = newDeviceAttrEx();
    expect(attr_ex_text(none)).toContain('\tcompletion_timestamp_mask not supported\n\tcore clock not supported\n');
    expect(attr_ex_text(none)).not.toContain('cq moderation');
    const h = cx6();
    h.attr_ex = x;
    h.num_comp_vectors = 3;
    const out = hca_text(h, true).out;
    expect(out).toContain('\tlocal_ca_ack_delay:\t\t16\n\tgeneral_odp_caps:\n');
    // As ibv_devinfo -v printed it on rxe0 (rdma-core 44): the section ends with num_comp_vectors.
    expect(out).toContain(
      '\ttag matching not supported\n\n\tcq moderation caps:\n\t\tmax_cq_count:\t65535\n\t\tmax_cq_period:\t65535 us\n\n\tnum_comp_vectors:\t\t3\n',
    );
    expect(hca_text(h, false).out).not.toContain('general_odp_caps');
  });
});
