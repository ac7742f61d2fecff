/**
 * Test harness of the model provider's tests: a fake device (fake-device.ts)
 * registered with addModelDevice and opened through the verbs API, and the
 * QP state sequences of the rdma-core example programs (rc_pingpong,
 * uc_pingpong, ud_pingpong), with their exact attributes and masks.
 */
import {
  IBV_QP_ACCESS_FLAGS,
  IBV_QP_AV,
  IBV_QP_DEST_QPN,
  IBV_QP_MAX_DEST_RD_ATOMIC,
  IBV_QP_MAX_QP_RD_ATOMIC,
  IBV_QP_MIN_RNR_TIMER,
  IBV_QP_PATH_MTU,
  IBV_QP_PKEY_INDEX,
  IBV_QP_PORT,
  IBV_QP_QKEY,
  IBV_QP_RETRY_CNT,
  IBV_QP_RNR_RETRY,
  IBV_QP_RQ_PSN,
  IBV_QP_SQ_PSN,
  IBV_QP_STATE,
  IBV_QP_TIMEOUT,
  IBV_QPS_INIT,
  IBV_QPS_RTR,
  IBV_QPS_RTS,
  IBV_MTU_1024,
} from '../../device/abi/constants.js';
import type { CapabilitiesConfig } from '../../device/capabilities.js';
import { newQpAttr } from '../verbs/structs.js';
import type { ibv_context, ibv_device, ibv_gid, ibv_qp } from '../verbs/types.js';
import { ibv_close_device, ibv_modify_qp, ibv_open_device } from '../verbs/verbs.js';
import { createFakeDevice, type FakeDevice } from './fake-device.js';
import { addModelDevice, removeModelDevice } from './provider.js';

export interface Harness {
  readonly fake: FakeDevice;
  readonly dev: ibv_device;
  readonly ctx: ibv_context;
  close(): void;
}

export function openHarness(opts: { config?: CapabilitiesConfig; memBytes?: number } = {}): Harness {
  const fake = createFakeDevice(opts);
  const dev = addModelDevice(fake.handle);
  const ctx = ibv_open_device(dev);
  let open = true;
  return {
    fake,
    dev,
    ctx,
    close() {
      if (open) ibv_close_device(ctx);
      open = false;
      removeModelDevice(fake.handle.name);
    },
  };
}

/** rc_pingpong's pp_init_ctx modify: RESET → INIT. */
export function rcToInit(qp: ibv_qp, port = 1): number {
  const attr = newQpAttr();
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = port;
  attr.qp_access_flags = 0;
  return ibv_modify_qp(qp, attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

/** rc_pingpong's pp_connect_ctx: INIT → RTR → RTS, with a GRH towards `dgid`. Returns [rtr errno, rts errno]. */
export function rcConnect(
  qp: ibv_qp,
  destQpn: number,
  dgid: ibv_gid,
  sgidIndex: number,
  opts: { port?: number; psn?: number; destPsn?: number; rtrOnly?: boolean } = {},
): [number, number] {
  const attr = newQpAttr();
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = IBV_MTU_1024;
  attr.dest_qp_num = destQpn;
  attr.rq_psn = opts.destPsn ?? 0x123456;
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = 12;
  attr.ah_attr.is_global = 1;
  attr.ah_attr.dlid = 0;
  attr.ah_attr.sl = 0;
  attr.ah_attr.src_path_bits = 0;
  attr.ah_attr.port_num = opts.port ?? 1;
  attr.ah_attr.grh.hop_limit = 1;
  attr.ah_attr.grh.dgid = { raw: Uint8Array.from(dgid.raw) };
  attr.ah_attr.grh.sgid_index = sgidIndex;
  const rtr = ibv_modify_qp(
    qp,
    attr,
    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
  );
  if (rtr || opts.rtrOnly) return [rtr, 0];
  attr.qp_state = IBV_QPS_RTS;
  attr.timeout = 14;
  attr.retry_cnt = 7;
  attr.rnr_retry = 7;
  attr.sq_psn = opts.psn ?? 0x654321;
  attr.max_rd_atomic = 1;
  const rts = ibv_modify_qp(qp, attr, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
  return [rtr, rts];
}

/** uc_pingpong's sequence: INIT (as RC), RTR = STATE | AV | PATH_MTU | DEST_QPN | RQ_PSN, RTS = STATE | SQ_PSN. */
export function ucConnect(qp: ibv_qp, destQpn: number, dgid: ibv_gid, sgidIndex: number): [number, number, number] {
  const init = rcToInit(qp);
  if (init) return [init, 0, 0];
  const attr = newQpAttr();
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = IBV_MTU_1024;
  attr.dest_qp_num = destQpn;
  attr.rq_psn = 0x111;
  attr.ah_attr.is_global = 1;
  attr.ah_attr.port_num = 1;
  attr.ah_attr.grh.hop_limit = 1;
  attr.ah_attr.grh.dgid = { raw: Uint8Array.from(dgid.raw) };
  attr.ah_attr.grh.sgid_index = sgidIndex;
  const rtr = ibv_modify_qp(qp, attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN);
  if (rtr) return [0, rtr, 0];
  attr.qp_state = IBV_QPS_RTS;
  attr.sq_psn = 0x222;
  return [0, 0, ibv_modify_qp(qp, attr, IBV_QP_STATE | IBV_QP_SQ_PSN)];
}

/** ud_pingpong's pp_init_ctx / pp_connect_ctx: INIT = STATE | PKEY_INDEX | PORT | QKEY, RTR = STATE, RTS = STATE | SQ_PSN. */
export function udConnect(qp: ibv_qp, port = 1, qkey = 0x11111111): [number, number, number] {
  const attr = newQpAttr();
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = port;
  attr.qkey = qkey;
  const init = ibv_modify_qp(qp, attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
  if (init) return [init, 0, 0];
  const rtr = ibv_modify_qp(qp, { qp_state: IBV_QPS_RTR }, IBV_QP_STATE);
  if (rtr) return [0, rtr, 0];
  return [0, 0, ibv_modify_qp(qp, { qp_state: IBV_QPS_RTS, sq_psn: 0x333 }, IBV_QP_STATE | IBV_QP_SQ_PSN)];
}

/** Let pending promise callbacks run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
  await new Promise((r) => setImmediate(r));
}
