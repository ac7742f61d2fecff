import { constants as osConstants, platform } from 'node:os';
import { describe, expect, it } from 'vitest';
import * as C from '../../device/abi/constants.js';
import * as Index from './index.js';
import {
  errno,
  errnoName,
  ibv_event_type_str,
  ibv_inc_rkey,
  ibv_is_qpt_supported,
  ibv_node_type_str,
  ibv_port_state_str,
  ibv_rate_to_mbps,
  ibv_rate_to_mult,
  ibv_wc_status_str,
  ibv_wr_opcode_str,
  mbps_to_ibv_rate,
  mtu_bytes_to_enum,
  mtu_enum_to_bytes,
  mult_to_ibv_rate,
} from '../../device/abi/constants.js';
import { newQpAttr, newWcArray } from './structs.js';

// Values as read from rdma-core libibverbs/verbs.h (and, for the entries
// added after the copies read, from bindings generated from a current
// verbs.h). Written out as literals so a typo in constants.ts shows here.
const KNOWN: ReadonlyArray<readonly [string, number | bigint]> = [
  ['IBV_WR_RDMA_WRITE', 0],
  ['IBV_WR_RDMA_WRITE_WITH_IMM', 1],
  ['IBV_WR_SEND', 2],
  ['IBV_WR_SEND_WITH_IMM', 3],
  ['IBV_WR_RDMA_READ', 4],
  ['IBV_WR_ATOMIC_CMP_AND_SWP', 5],
  ['IBV_WR_ATOMIC_FETCH_AND_ADD', 6],
  ['IBV_WR_LOCAL_INV', 7],
  ['IBV_WR_BIND_MW', 8],
  ['IBV_WR_SEND_WITH_INV', 9],
  ['IBV_WR_TSO', 10],
  ['IBV_WR_DRIVER1', 11],
  ['IBV_WR_FLUSH', 14],
  ['IBV_WR_ATOMIC_WRITE', 15],
  ['IBV_SEND_FENCE', 1],
  ['IBV_SEND_SIGNALED', 2],
  ['IBV_SEND_SOLICITED', 4],
  ['IBV_SEND_INLINE', 8],
  ['IBV_SEND_IP_CSUM', 16],
  ['IBV_WC_SUCCESS', 0],
  ['IBV_WC_WR_FLUSH_ERR', 5],
  ['IBV_WC_REM_ACCESS_ERR', 10],
  ['IBV_WC_RETRY_EXC_ERR', 12],
  ['IBV_WC_RNR_RETRY_EXC_ERR', 13],
  ['IBV_WC_GENERAL_ERR', 21],
  ['IBV_WC_TM_RNDV_INCOMPLETE', 23],
  ['IBV_WC_SEND', 0],
  ['IBV_WC_TSO', 7],
  ['IBV_WC_FLUSH', 8],
  ['IBV_WC_ATOMIC_WRITE', 9],
  ['IBV_WC_RECV', 128],
  ['IBV_WC_RECV_RDMA_WITH_IMM', 129],
  ['IBV_WC_DRIVER1', 135],
  ['IBV_WC_DRIVER3', 137],
  ['IBV_WC_GRH', 1],
  ['IBV_WC_WITH_IMM', 2],
  ['IBV_WC_IP_CSUM_OK', 4],
  ['IBV_WC_WITH_INV', 8],
  ['IBV_WC_TM_DATA_VALID', 64],
  ['IBV_QPS_RESET', 0],
  ['IBV_QPS_RTS', 3],
  ['IBV_QPS_SQE', 5],
  ['IBV_QPS_ERR', 6],
  ['IBV_QPS_UNKNOWN', 7],
  ['IBV_QPT_RC', 2],
  ['IBV_QPT_UC', 3],
  ['IBV_QPT_UD', 4],
  ['IBV_QPT_RAW_PACKET', 8],
  ['IBV_QPT_XRC_SEND', 9],
  ['IBV_QPT_XRC_RECV', 10],
  ['IBV_QPT_DRIVER', 0xff],
  ['IBV_QP_STATE', 0x1],
  ['IBV_QP_ACCESS_FLAGS', 0x8],
  ['IBV_QP_AV', 0x80],
  ['IBV_QP_PATH_MTU', 0x100],
  ['IBV_QP_RQ_PSN', 0x1000],
  ['IBV_QP_MIN_RNR_TIMER', 0x8000],
  ['IBV_QP_SQ_PSN', 0x10000],
  ['IBV_QP_MAX_DEST_RD_ATOMIC', 0x20000],
  ['IBV_QP_CAP', 0x80000],
  ['IBV_QP_DEST_QPN', 0x100000],
  ['IBV_QP_RATE_LIMIT', 0x2000000],
  ['IBV_ACCESS_LOCAL_WRITE', 1],
  ['IBV_ACCESS_REMOTE_WRITE', 2],
  ['IBV_ACCESS_REMOTE_READ', 4],
  ['IBV_ACCESS_REMOTE_ATOMIC', 8],
  ['IBV_ACCESS_MW_BIND', 16],
  ['IBV_ACCESS_ON_DEMAND', 64],
  ['IBV_ACCESS_FLUSH_GLOBAL', 256],
  ['IBV_ACCESS_FLUSH_PERSISTENT', 512],
  ['IBV_ACCESS_RELAXED_ORDERING', 1048576],
  ['IBV_MTU_256', 1],
  ['IBV_MTU_1024', 3],
  ['IBV_MTU_4096', 5],
  ['IBV_PORT_DOWN', 1],
  ['IBV_PORT_ACTIVE', 4],
  ['IBV_PORT_ACTIVE_DEFER', 5],
  ['IBV_ATOMIC_HCA', 1],
  ['IBV_ATOMIC_GLOB', 2],
  ['IBV_MIG_ARMED', 2],
  ['IBV_EVENT_CQ_ERR', 0],
  ['IBV_EVENT_COMM_EST', 4],
  ['IBV_EVENT_DEVICE_FATAL', 8],
  ['IBV_EVENT_QP_LAST_WQE_REACHED', 16],
  ['IBV_EVENT_WQ_FATAL', 19],
  ['IBV_NODE_UNKNOWN', -1],
  ['IBV_NODE_CA', 1],
  ['IBV_NODE_RNIC', 4],
  ['IBV_NODE_UNSPECIFIED', 7],
  ['IBV_TRANSPORT_IB', 0],
  ['IBV_TRANSPORT_IWARP', 1],
  ['IBV_SRQ_MAX_WR', 1],
  ['IBV_SRQ_LIMIT', 2],
  ['IBV_DEVICE_RESIZE_MAX_WR', 1],
  ['IBV_DEVICE_RC_RNR_NAK_GEN', 4096],
  ['IBV_DEVICE_MEM_WINDOW', 131072],
  ['IBV_DEVICE_XRC', 1048576],
  ['IBV_DEVICE_MEM_MGT_EXTENSIONS', 2097152],
  ['IBV_DEVICE_MANAGED_FLOW_STEERING', 536870912],
  ['IBV_DEVICE_RAW_SCATTER_FCS', 17179869184n],
  ['IB_UVERBS_DEVICE_ATOMIC_WRITE', 1099511627776n],
  ['IBV_PORT_SM', 2],
  ['IBV_PORT_CM_SUP', 65536],
  ['IBV_PORT_IP_BASED_GIDS', 67108864],
  ['IBV_PORT_LINK_SPEED_NDR_SUP', 1024],
  ['IBV_LINK_LAYER_UNSPECIFIED', 0],
  ['IBV_LINK_LAYER_INFINIBAND', 1],
  ['IBV_LINK_LAYER_ETHERNET', 2],
  ['IBV_RATE_MAX', 0],
  ['IBV_RATE_2_5_GBPS', 2],
  ['IBV_RATE_10_GBPS', 3],
  ['IBV_RATE_30_GBPS', 4],
  ['IBV_RATE_5_GBPS', 5],
  ['IBV_RATE_25_GBPS', 15],
  ['IBV_RATE_100_GBPS', 16],
  ['IBV_RATE_400_GBPS', 21],
  ['IBV_RATE_1200_GBPS', 24],
  ['IBV_GID_TYPE_ROCE_V2', 2],
  ['IBV_MW_TYPE_2', 2],
  ['IBV_WC_STANDARD_FLAGS', 127],
  ['IBV_CREATE_CQ_SUP_WC_FLAGS', 4095],
  ['IBV_QP_EX_WITH_ATOMIC_WRITE', 4096],
];

describe('verbs constants: values match rdma-core verbs.h', () => {
  it.each(KNOWN)('%s = %s', (name, value) => {
    expect((C as Record<string, unknown>)[name]).toBe(value);
  });

  it('has the 24 work-completion statuses, 0..23 in order', () => {
    const names = [
      'SUCCESS',
      'LOC_LEN_ERR',
      'LOC_QP_OP_ERR',
      'LOC_EEC_OP_ERR',
      'LOC_PROT_ERR',
      'WR_FLUSH_ERR',
      'MW_BIND_ERR',
      'BAD_RESP_ERR',
      'LOC_ACCESS_ERR',
      'REM_INV_REQ_ERR',
      'REM_ACCESS_ERR',
      'REM_OP_ERR',
      'RETRY_EXC_ERR',
      'RNR_RETRY_EXC_ERR',
      'LOC_RDD_VIOL_ERR',
      'REM_INV_RD_REQ_ERR',
      'REM_ABORT_ERR',
      'INV_EECN_ERR',
      'INV_EEC_STATE_ERR',
      'FATAL_ERR',
      'RESP_TIMEOUT_ERR',
      'GENERAL_ERR',
      'TM_ERR',
      'TM_RNDV_INCOMPLETE',
    ];
    expect(names).toHaveLength(24);
    names.forEach((n, i) => expect((C as Record<string, unknown>)[`IBV_WC_${n}`]).toBe(i));
  });

  it('has the 20 async event types, 0..19 in order', () => {
    const names = [
      'CQ_ERR',
      'QP_FATAL',
      'QP_REQ_ERR',
      'QP_ACCESS_ERR',
      'COMM_EST',
      'SQ_DRAINED',
      'PATH_MIG',
      'PATH_MIG_ERR',
      'DEVICE_FATAL',
      'PORT_ACTIVE',
      'PORT_ERR',
      'LID_CHANGE',
      'PKEY_CHANGE',
      'SM_CHANGE',
      'SRQ_ERR',
      'SRQ_LIMIT_REACHED',
      'QP_LAST_WQE_REACHED',
      'CLIENT_REREGISTER',
      'GID_CHANGE',
      'WQ_FATAL',
    ];
    names.forEach((n, i) => expect((C as Record<string, unknown>)[`IBV_EVENT_${n}`]).toBe(i));
  });

  it('qp_attr_mask bits are distinct single bits, with 21..24 unused', () => {
    const bits = C.IBV_QP_ATTR_MASK_NAMES.map(([b]) => b);
    expect(new Set(bits).size).toBe(bits.length);
    for (const b of bits) expect(b & (b - 1)).toBe(0);
    for (let i = 21; i <= 24; i++) expect(bits).not.toContain(1 << i);
    for (const [bit, name] of C.IBV_QP_ATTR_MASK_NAMES) {
      expect((C as Record<string, unknown>)[name]).toBe(bit);
    }
  });

  it('relaxed ordering is the first optional access bit', () => {
    expect(C.IBV_ACCESS_RELAXED_ORDERING & C.IBV_ACCESS_OPTIONAL_RANGE).toBe(C.IBV_ACCESS_RELAXED_ORDERING);
    expect(C.IBV_ACCESS_OPTIONAL_RANGE).toBe((1 << 29) * 2 - 1 - ((1 << 20) - 1));
  });

  it('IBV_WC_RECV can be tested as a bit', () => {
    expect(C.IBV_WC_RECV_RDMA_WITH_IMM & C.IBV_WC_RECV).toBeTruthy();
    expect(C.IBV_WC_RDMA_READ & C.IBV_WC_RECV).toBe(0);
  });

  it('exports plain numbers (no TS enums) and is re-exported by the index', () => {
    expect(typeof C.IBV_WR_RDMA_WRITE).toBe('number');
    expect(Index.IBV_WR_RDMA_WRITE).toBe(0);
    expect(Index.IBV_QPT_RC).toBe(2);
    expect(typeof Index.modifyQpIsOk).toBe('function');
    expect(typeof Index.ibv_wc_status_str).toBe('function');
  });
});

describe('string helpers return libibverbs strings', () => {
  it('ibv_wc_status_str', () => {
    expect(ibv_wc_status_str(C.IBV_WC_SUCCESS)).toBe('success');
    expect(ibv_wc_status_str(C.IBV_WC_WR_FLUSH_ERR)).toBe('Work Request Flushed Error');
    expect(ibv_wc_status_str(C.IBV_WC_REM_ACCESS_ERR)).toBe('remote access error');
    expect(ibv_wc_status_str(C.IBV_WC_RETRY_EXC_ERR)).toBe('transport retry counter exceeded');
    expect(ibv_wc_status_str(C.IBV_WC_RNR_RETRY_EXC_ERR)).toBe('RNR retry counter exceeded');
    expect(ibv_wc_status_str(C.IBV_WC_REM_ABORT_ERR)).toBe('aborted error');
    expect(ibv_wc_status_str(C.IBV_WC_TM_ERR)).toBe('TM error');
    expect(ibv_wc_status_str(C.IBV_WC_TM_RNDV_INCOMPLETE)).toBe('TM software rendezvous');
    expect(ibv_wc_status_str(24)).toBe('unknown');
    expect(ibv_wc_status_str(-1)).toBe('unknown');
    expect(ibv_wc_status_str(1.5)).toBe('unknown');
    for (let s = 0; s <= 23; s++) expect(ibv_wc_status_str(s)).not.toBe('unknown');
  });

  it('ibv_event_type_str', () => {
    expect(ibv_event_type_str(C.IBV_EVENT_CQ_ERR)).toBe('CQ error');
    expect(ibv_event_type_str(C.IBV_EVENT_QP_FATAL)).toBe('local work queue catastrophic error');
    expect(ibv_event_type_str(C.IBV_EVENT_PORT_ACTIVE)).toBe('port active');
    expect(ibv_event_type_str(C.IBV_EVENT_PKEY_CHANGE)).toBe('P_Key change');
    expect(ibv_event_type_str(C.IBV_EVENT_GID_CHANGE)).toBe('GID table change');
    expect(ibv_event_type_str(C.IBV_EVENT_WQ_FATAL)).toBe('WQ fatal');
    expect(ibv_event_type_str(20)).toBe('unknown');
  });

  it('ibv_port_state_str', () => {
    expect(ibv_port_state_str(C.IBV_PORT_NOP)).toBe('no state change (NOP)');
    expect(ibv_port_state_str(C.IBV_PORT_DOWN)).toBe('down');
    expect(ibv_port_state_str(C.IBV_PORT_ACTIVE)).toBe('active');
    expect(ibv_port_state_str(C.IBV_PORT_ACTIVE_DEFER)).toBe('active defer');
    expect(ibv_port_state_str(6)).toBe('unknown');
  });

  it('ibv_node_type_str', () => {
    expect(ibv_node_type_str(C.IBV_NODE_CA)).toBe('InfiniBand channel adapter');
    expect(ibv_node_type_str(C.IBV_NODE_RNIC)).toBe('iWARP NIC');
    expect(ibv_node_type_str(C.IBV_NODE_USNIC_UDP)).toBe('usNIC UDP');
    expect(ibv_node_type_str(C.IBV_NODE_UNSPECIFIED)).toBe('unspecified');
    expect(ibv_node_type_str(C.IBV_NODE_UNKNOWN)).toBe('unknown');
    expect(ibv_node_type_str(0)).toBe('unknown');
  });

  it('ibv_wr_opcode_str', () => {
    expect(ibv_wr_opcode_str(C.IBV_WR_RDMA_WRITE)).toBe('rdma-write');
    expect(ibv_wr_opcode_str(C.IBV_WR_ATOMIC_CMP_AND_SWP)).toBe('atomic-cmp-and-swp');
    expect(ibv_wr_opcode_str(C.IBV_WR_ATOMIC_WRITE)).toBe('atomic-write');
    expect(ibv_wr_opcode_str(12)).toBe('unknown');
    expect(ibv_wr_opcode_str(16)).toBe('unknown');
  });
});

describe('rate and MTU helpers', () => {
  it('ibv_rate_to_mult / mult_to_ibv_rate follow the rdma-core userspace table', () => {
    expect(ibv_rate_to_mult(C.IBV_RATE_2_5_GBPS)).toBe(1);
    expect(ibv_rate_to_mult(C.IBV_RATE_40_GBPS)).toBe(16);
    expect(ibv_rate_to_mult(C.IBV_RATE_400_GBPS)).toBe(160);
    expect(ibv_rate_to_mult(C.IBV_RATE_1200_GBPS)).toBe(480);
    expect(ibv_rate_to_mult(C.IBV_RATE_100_GBPS)).toBe(-1); // not in the userspace table
    expect(ibv_rate_to_mult(C.IBV_RATE_MAX)).toBe(-1);
    expect(mult_to_ibv_rate(4)).toBe(C.IBV_RATE_10_GBPS);
    expect(mult_to_ibv_rate(7)).toBe(C.IBV_RATE_MAX);
  });

  it('ibv_rate_to_mbps / mbps_to_ibv_rate', () => {
    expect(ibv_rate_to_mbps(C.IBV_RATE_10_GBPS)).toBe(10000);
    expect(ibv_rate_to_mbps(C.IBV_RATE_25_GBPS)).toBe(25781);
    expect(ibv_rate_to_mbps(C.IBV_RATE_100_GBPS)).toBe(103125);
    expect(ibv_rate_to_mbps(C.IBV_RATE_800_GBPS)).toBe(850000);
    expect(ibv_rate_to_mbps(C.IBV_RATE_MAX)).toBe(-1);
    expect(mbps_to_ibv_rate(103125)).toBe(C.IBV_RATE_100_GBPS);
    expect(mbps_to_ibv_rate(100000)).toBe(C.IBV_RATE_MAX);
  });

  it('mtu_enum_to_bytes / mtu_bytes_to_enum', () => {
    expect([1, 2, 3, 4, 5].map(mtu_enum_to_bytes)).toEqual([256, 512, 1024, 2048, 4096]);
    expect(mtu_enum_to_bytes(0)).toBe(-1);
    expect(mtu_enum_to_bytes(6)).toBe(-1);
    expect(mtu_bytes_to_enum(4096)).toBe(C.IBV_MTU_4096);
    expect(mtu_bytes_to_enum(9000)).toBe(C.IBV_MTU_4096);
    expect(mtu_bytes_to_enum(1500)).toBe(C.IBV_MTU_1024);
    expect(mtu_bytes_to_enum(256)).toBe(C.IBV_MTU_256);
    expect(mtu_bytes_to_enum(255)).toBe(0);
    expect(mtu_bytes_to_enum(Number.NaN)).toBe(0);
    for (let m = 1; m <= 5; m++) expect(mtu_bytes_to_enum(mtu_enum_to_bytes(m))).toBe(m);
  });

  it('no invented ibv_mtu_to_num / ibv_num_to_mtu (verbs.h has none)', () => {
    expect((C as Record<string, unknown>)['ibv_mtu_to_num']).toBeUndefined();
    expect((C as Record<string, unknown>)['ibv_num_to_mtu']).toBeUndefined();
  });
});

describe('verbs.h inline helpers', () => {
  it('ibv_inc_rkey bumps the 8-bit tag and wraps', () => {
    expect(ibv_inc_rkey(0x12345600)).toBe(0x12345601);
    expect(ibv_inc_rkey(0x123456ff)).toBe(0x12345600);
    expect(ibv_inc_rkey(0xffffffff)).toBe(0xffffff00);
  });

  it('ibv_is_qpt_supported', () => {
    const caps = (1 << C.IBV_QPT_RC) | (1 << C.IBV_QPT_UD);
    expect(ibv_is_qpt_supported(caps, C.IBV_QPT_RC)).toBe(1);
    expect(ibv_is_qpt_supported(caps, C.IBV_QPT_UC)).toBe(0);
    expect(ibv_is_qpt_supported(caps, C.IBV_QPT_DRIVER)).toBe(0);
  });
});

describe('errno', () => {
  it('has the Linux values verbs return', () => {
    expect(errno.EPERM).toBe(1);
    expect(errno.ENOENT).toBe(2);
    expect(errno.EAGAIN).toBe(11);
    expect(errno.ENOMEM).toBe(12);
    expect(errno.EFAULT).toBe(14);
    expect(errno.EBUSY).toBe(16);
    expect(errno.EEXIST).toBe(17);
    expect(errno.EINVAL).toBe(22);
    expect(errno.ENOSPC).toBe(28);
    expect(errno.ERANGE).toBe(34);
    expect(errno.ENOSYS).toBe(38);
    expect(errno.EOPNOTSUPP).toBe(95);
    expect(errno.ETIMEDOUT).toBe(110);
  });

  it.runIf(platform() === 'linux')('agrees with the running Linux kernel (os.constants.errno)', () => {
    const host = osConstants.errno as Record<string, number | undefined>;
    for (const [name, n] of Object.entries(errno)) {
      if (host[name] !== undefined) expect([name, n]).toEqual([name, host[name]]);
    }
  });

  it('errnoName gives the canonical name, accepts negatives, marks unknowns', () => {
    expect(errnoName(22)).toBe('EINVAL');
    expect(errnoName(-22)).toBe('EINVAL');
    expect(errnoName(11)).toBe('EAGAIN');
    expect(errnoName(95)).toBe('EOPNOTSUPP');
    expect(errnoName(35)).toBe('EDEADLK');
    expect(errnoName(9999)).toBe('E9999?');
  });
});

describe('zeroed structures', () => {
  it('newQpAttr is all zero and unshared', () => {
    const a = newQpAttr();
    const b = newQpAttr();
    expect(a.ah_attr.grh.dgid.raw).toHaveLength(16);
    expect(a.ah_attr.grh.dgid.raw).not.toBe(b.ah_attr.grh.dgid.raw);
    expect(a.ah_attr).not.toBe(a.alt_ah_attr);
    expect(a.qp_state).toBe(0);
    expect(a.cap.max_send_wr).toBe(0);
  });

  it('newWcArray gives n distinct completions', () => {
    const wc = newWcArray(4);
    expect(wc).toHaveLength(4);
    expect(wc[0]).not.toBe(wc[1]);
    expect(wc[3]!.wr_id).toBe(0n);
  });
});
