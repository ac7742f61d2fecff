/**
 * Hot paths of the model provider (STYLE §8):
 *   npx vitest bench --run src/driver/model
 * Each iteration does 1000 operations. The device side is the fake
 * device's CQE writer (cqPush); the SQ doorbells are left pending (nobody
 * drains them), which costs the driver the same atomics. fake.complete
 * (a test helper that builds its CQE from an object literal) is part of
 * each round, so the driver's own share is smaller than the figures.
 */
import { bench, describe } from 'vitest';
import {
  IBV_ACCESS_LOCAL_WRITE,
  IBV_QPT_RC,
  IBV_SEND_INLINE,
  IBV_SEND_SIGNALED,
  IBV_WC_RECV,
  IBV_WC_SEND,
  IBV_WR_RDMA_WRITE,
} from '../../device/abi/constants.js';
import { serviceCommandDoorbell } from '../../device/mailbox.js';
import { SMALL_DEVICE } from '../../device/testbed.js';
import { newGid, newRecvWr, newSendWr, newWcArray } from '../verbs/structs.js';
import type { ibv_recv_wr, ibv_send_wr } from '../verbs/types.js';
import {
  ibv_alloc_pd,
  ibv_create_cq,
  ibv_create_qp,
  ibv_open_device,
  ibv_poll_cq,
  ibv_post_recv,
  ibv_post_send,
  ibv_query_gid,
  ibv_reg_mr,
  rnic_alloc_buf,
} from '../verbs/verbs.js';
import { createFakeDevice } from './fake-device.js';
import { rcConnect, rcToInit } from './harness.js';
import type { ModelQp } from './objects.js';
import { addModelDevice } from './provider.js';

const fake = createFakeDevice({ config: SMALL_DEVICE });
const { fw, bar } = fake.tb;
// Commands inline; doorbells not drained (no per-doorbell bookkeeping in the way).
const dev = addModelDevice({ ...fake.handle, name: 'bench0', serviceInline: () => void serviceCommandDoorbell(fw, bar) });
const ctx = ibv_open_device(dev);
const pd = ibv_alloc_pd(ctx);
const cq = ibv_create_cq(ctx, 255, null, null, 0);
const buf = rnic_alloc_buf(ctx, 1 << 16, 4096);
const mr = ibv_reg_mr(pd, buf, IBV_ACCESS_LOCAL_WRITE);
const qp = ibv_create_qp(pd, {
  send_cq: cq,
  recv_cq: cq,
  cap: { max_send_wr: 256, max_recv_wr: 256, max_send_sge: 2, max_recv_sge: 1, max_inline_data: 64 },
  qp_type: IBV_QPT_RC,
  sq_sig_all: 0,
});
const gid = newGid();
ibv_query_gid(ctx, 1, 1, gid);
rcToInit(qp);
rcConnect(qp, qp.qp_num, gid, 1);

const write: ibv_send_wr = {
  ...newSendWr(),
  wr_id: 1n,
  opcode: IBV_WR_RDMA_WRITE,
  send_flags: IBV_SEND_SIGNALED,
  sg_list: [{ addr: mr.addr, length: 4096, lkey: mr.lkey }],
  num_sge: 1,
  wr: { rdma: { remote_addr: mr.addr + 8192n, rkey: mr.rkey } },
};
const inline: ibv_send_wr = { ...write, send_flags: IBV_SEND_SIGNALED | IBV_SEND_INLINE, sg_list: [{ addr: mr.addr, length: 32, lkey: 0 }] };
const recv: ibv_recv_wr = { ...newRecvWr(), wr_id: 2n, sg_list: [{ addr: mr.addr, length: 4096, lkey: mr.lkey }], num_sge: 1 };
const wc = newWcArray(16);
const cqn = cq.handle;
const qpn = qp.qp_num;
let counter = 0;
let recvCounter = 0;
let sink = 0;

/** Post, complete as the device would, poll: one round trip of the driver's rings. */
function round(wr: ibv_send_wr): void {
  sink += ibv_post_send(qp, wr);
  fake.complete(cqn, { wrId: 1n, qpNum: qpn, opcode: IBV_WC_SEND, wqeCounter: counter & 0xffff });
  counter++;
  sink += ibv_poll_cq(cq, 16, wc);
}

describe('model provider hot paths (×1000)', () => {
  bench('post_send RDMA WRITE (1 SGE) + CQE + poll_cq', () => {
    for (let i = 0; i < 1000; i++) round(write);
  });
  bench('post_send inline 32 B + CQE + poll_cq', () => {
    for (let i = 0; i < 1000; i++) round(inline);
  });
  bench('post_recv + CQE + poll_cq', () => {
    for (let i = 0; i < 1000; i++) {
      sink += ibv_post_recv(qp, recv);
      fake.complete(cqn, { wrId: 2n, qpNum: qpn, opcode: IBV_WC_RECV, wqeCounter: recvCounter++ & 0xffff });
      sink += ibv_poll_cq(cq, 16, wc);
    }
  });
  bench('post_send RDMA WRITE alone (slots retired by hand)', () => {
    const q = qp as ModelQp;
    for (let i = 0; i < 1000; i++) {
      sink += ibv_post_send(qp, write);
      q.sqCi = q.sqPi;
    }
  });
  bench('CQE only (fake.complete) + poll_cq: subtract from the rounds', () => {
    for (let i = 0; i < 1000; i++) {
      fake.complete(cqn, { wrId: 3n, qpNum: 0, opcode: IBV_WC_SEND });
      sink += ibv_poll_cq(cq, 16, wc);
    }
  });
  bench('poll_cq empty', () => {
    for (let i = 0; i < 1000; i++) sink += ibv_poll_cq(cq, 16, wc);
  });
});

export { sink };
