/**
 * The program of exit-paths.test.ts: two devices of this process's model
 * (RNIC_CONFIG), an RC QP between them with 64 × 64 KiB WRITEs and READs
 * posted, then it leaves as EXIT_MODE says, with all of it still in flight:
 *   return       main returns (nothing cleaned up)
 *   exit         process.exit(0)
 *   throw        an uncaught exception (exit code 1)
 *   stop         await stopModel(), then return
 *   close        ibv_close_device both, then return
 * Prints 'posted' when the work is in flight. Uses the verbs API only.
 */
import { currentModel, stopModel } from '../../src/boot.js';
import {
  IBV_ACCESS_LOCAL_WRITE,
  IBV_ACCESS_REMOTE_READ,
  IBV_ACCESS_REMOTE_WRITE,
  IBV_MTU_1024,
  IBV_QP_ACCESS_FLAGS,
  IBV_QP_AV,
  IBV_QP_DEST_QPN,
  IBV_QP_MAX_DEST_RD_ATOMIC,
  IBV_QP_MAX_QP_RD_ATOMIC,
  IBV_QP_MIN_RNR_TIMER,
  IBV_QP_PATH_MTU,
  IBV_QP_PKEY_INDEX,
  IBV_QP_PORT,
  IBV_QP_RETRY_CNT,
  IBV_QP_RNR_RETRY,
  IBV_QP_RQ_PSN,
  IBV_QP_SQ_PSN,
  IBV_QP_STATE,
  IBV_QP_TIMEOUT,
  IBV_QPS_INIT,
  IBV_QPS_RTR,
  IBV_QPS_RTS,
  IBV_QPT_RC,
  IBV_SEND_SIGNALED,
  IBV_WR_RDMA_READ,
  IBV_WR_RDMA_WRITE,
  type ibv_context,
  type ibv_gid,
  type ibv_qp,
  ibv_alloc_pd,
  ibv_close_device,
  ibv_create_cq,
  ibv_create_qp,
  ibv_get_device_list,
  ibv_modify_qp,
  ibv_open_device,
  ibv_poll_cq,
  ibv_post_send,
  ibv_query_gid,
  ibv_reg_mr,
  newGid,
  newQpAttr,
  newWcArray,
  rnic_alloc_buf,
} from '../../src/driver/verbs/index.js';

const MSG = 64 * 1024;
const N = 64;
const ACCESS = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

function must(rc: number, what: string): void {
  if (rc !== 0) throw new Error(`${what} failed: ${rc}`);
}

function side(ctx: ibv_context) {
  const pd = ibv_alloc_pd(ctx);
  const gid: ibv_gid = newGid();
  must(ibv_query_gid(ctx, 1, 3, gid), 'ibv_query_gid');
  const cq = ibv_create_cq(ctx, 4 * N, null, null, 0);
  const qp = ibv_create_qp(pd, {
    send_cq: cq,
    recv_cq: cq,
    cap: { max_send_wr: 2 * N, max_recv_wr: 1, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 },
    qp_type: IBV_QPT_RC,
    sq_sig_all: 0,
  });
  const buf = rnic_alloc_buf(ctx, N * MSG, 64);
  const mr = ibv_reg_mr(pd, buf, ACCESS);
  const a = newQpAttr();
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.pkey_index = 0;
  a.qp_access_flags = ACCESS;
  must(ibv_modify_qp(qp, a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 'modify INIT');
  return { ctx, pd, gid, cq, qp, mr };
}

function connect(qp: ibv_qp, qpn: number, dgid: ibv_gid): void {
  const a = newQpAttr();
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = qpn;
  a.rq_psn = 0x100;
  a.max_dest_rd_atomic = 16;
  a.min_rnr_timer = 12;
  a.ah_attr.is_global = 1;
  a.ah_attr.port_num = 1;
  a.ah_attr.grh.dgid = dgid;
  a.ah_attr.grh.sgid_index = 3;
  a.ah_attr.grh.hop_limit = 64;
  must(
    ibv_modify_qp(qp, a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
    'RTR',
  );
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 0x100;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 16;
  must(ibv_modify_qp(qp, a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC), 'RTS');
}

async function main(): Promise<void> {
  const mode = process.env.EXIT_MODE ?? 'return';
  const [da, db] = ibv_get_device_list();
  const a = side(ibv_open_device(da!));
  const b = side(ibv_open_device(db!));
  await currentModel()?.cabled;
  connect(a.qp, b.qp.qp_num, b.gid);
  connect(b.qp, a.qp.qp_num, a.gid);
  for (let i = 0; i < N; i++) {
    const op = i % 2 === 0 ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
    const wr = {
      wr_id: BigInt(i),
      next: null,
      sg_list: [{ addr: a.mr.addr + BigInt(i * MSG), length: MSG, lkey: a.mr.lkey }],
      num_sge: 1,
      opcode: op,
      send_flags: IBV_SEND_SIGNALED,
      wr: { rdma: { remote_addr: b.mr.addr + BigInt(i * MSG), rkey: b.mr.rkey } },
    };
    must(ibv_post_send(a.qp, wr as never, {}), 'post_send');
  }
  // One completion: the traffic really flows.
  const wc = newWcArray(1);
  const end = Date.now() + 60_000;
  while (ibv_poll_cq(a.cq, 1, wc) === 0) {
    if (Date.now() > end) throw new Error('no completion in 60 s');
    await new Promise((r) => setImmediate(r));
  }
  console.log('posted');
  if (mode === 'exit') process.exit(0);
  if (mode === 'throw') throw new Error('the program failed on purpose');
  if (mode === 'stop') await stopModel();
  if (mode === 'close') {
    must(ibv_close_device(a.ctx), 'close a');
    must(ibv_close_device(b.ctx), 'close b');
  }
  console.log('returned');
}

await main();
