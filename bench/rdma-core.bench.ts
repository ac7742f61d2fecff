/**
 * The rdma-core provider's binding overhead, on the first real device (or
 * the one named): what ibv_post_send and ibv_poll_cq cost from JS beside
 * the floor of a Node-API call into the same addon. Skipped, saying so,
 * when no real device is present (run it in the hw-tests guest:
 * `node dist/bench/rdma-core.bench.js rxe0`; under TCG every number is
 * several times what it is on hardware).
 *
 * - poll_cq, empty CQ: ibv_poll_cq through the verbs layer and the provider
 *   (libibverbs' poll included), beside the addon's pollCq called directly.
 * - post_send, rejected in the provider library: a WR with one SGE more
 *   than the QP has, which libibverbs' provider refuses before it rings a
 *   doorbell: the JS encoding of the WR + the call, no kernel.
 * - RDMA WRITE 8 B, post + poll to completion: the whole round on the device.
 */
import {
  IBV_SEND_SIGNALED,
  IBV_WR_RDMA_WRITE,
  ibv_get_device_list,
  ibv_poll_cq,
  ibv_create_cq_ex,
  ibv_start_poll,
  IBV_WC_STANDARD_FLAGS,
  ibv_post_send,
  ibv_query_qp,
  newQpAttr,
  newWcArray,
  type ibv_qp_init_attr,
  type ibv_send_wr,
} from '../src/index.js';
import { rdmaCoreAddon } from '../src/driver/rdma-core/addon.js';
import { RcContext, RcCq, RcDevice, RcPd, RcQp } from '../src/driver/rdma-core/objects.js';
import { rdma_core_ctx_ops, rdmaCoreProvider } from '../src/driver/rdma-core/provider.js';
import { IBV_QPT_RC } from '../src/device/abi/constants.js';
import { closeDev, connectedPair, mem, openDev } from '../hw-tests/pair.js';

export interface RdmaCoreBenchResult {
  name: string;
  ns: number;
}

function time(n: number, f: () => void): number {
  for (let i = 0; i < Math.min(n, 2000); i++) f(); // warm up
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) f();
  return Number(process.hrtime.bigint() - t0) / n;
}

export async function benchRdmaCore(devName?: string): Promise<RdmaCoreBenchResult[] | string> {
  const addon = rdmaCoreAddon();
  if (!addon) return 'the rdma-core addon is not built';
  const dev = ibv_get_device_list().find((d) => (d as { provider?: { name: string } }).provider?.name === 'rdma-core' && (!devName || d.name === devName));
  if (!dev) return 'no rdma-core device';
  const a = openDev(dev.name);
  const b = openDev(dev.name);
  try {
    const [x] = connectedPair(a, b);
    const src = mem(a, 4096);
    const dst = mem(b, 4096);
    const wc = newWcArray(16);
    const out: RdmaCoreBenchResult[] = [];
    const cqPtr = (x.cq as RcCq).ptr;
    out.push({ name: 'addon.pollCq (N-API floor), empty CQ', ns: time(200_000, () => addon.pollCq(cqPtr, 16)) });
    out.push({ name: 'ibv_poll_cq, empty CQ', ns: time(200_000, () => ibv_poll_cq(x.cq, 16, wc)) });
    const cqx = ibv_create_cq_ex(a.ctx, { cqe: 16, wc_flags: IBV_WC_STANDARD_FLAGS });
    out.push({ name: 'ibv_start_poll (extended CQ), empty CQ', ns: time(200_000, () => ibv_start_poll(cqx, { comp_mask: 0 })) });
    const qa = newQpAttr();
    const init = {} as ibv_qp_init_attr;
    ibv_query_qp(x.qp, qa, 0, init);
    const over = init.cap.max_send_sge + 1;
    const bad: ibv_send_wr = {
      wr_id: 1n,
      next: null,
      opcode: IBV_WR_RDMA_WRITE,
      send_flags: IBV_SEND_SIGNALED,
      num_sge: over,
      sg_list: Array.from({ length: over }, () => ({ addr: src.mr.addr, length: 8, lkey: src.mr.lkey })),
      wr: { rdma: { remote_addr: dst.mr.addr, rkey: dst.mr.rkey } },
    };
    out.push({ name: `ibv_post_send refused by the provider lib (${over} SGEs)`, ns: time(100_000, () => ibv_post_send(x.qp, bad)) });
    const wr: ibv_send_wr = {
      wr_id: 2n,
      next: null,
      opcode: IBV_WR_RDMA_WRITE,
      send_flags: IBV_SEND_SIGNALED,
      num_sge: 1,
      sg_list: [{ addr: src.mr.addr, length: 8, lkey: src.mr.lkey }],
      wr: { rdma: { remote_addr: dst.mr.addr, rkey: dst.mr.rkey } },
    };
    out.push({
      name: 'RDMA WRITE 8 B: post + poll to completion',
      ns: time(2000, () => {
        if (ibv_post_send(x.qp, wr) !== 0) throw new Error('post_send failed');
        const t0 = Date.now();
        while (ibv_poll_cq(x.cq, 1, wc) === 0) if (Date.now() - t0 > 5000) throw new Error('no completion in 5 s');
        if (wc[0]!.status !== 0) throw new Error(`status ${wc[0]!.status}`);
      }),
    });
    return out;
  } finally {
    closeDev(a);
    closeDev(b);
  }
}

/**
 * Without a device: the provider's JS share of a post and a poll (the verbs
 * layer, the WR encoding, the WC decoding) with the native call replaced by
 * a no-op, and the floor of one Node-API call into the addon (unwatchFd of
 * no watch). Their sum is the binding's cost over libibverbs' own work.
 */
export function benchRdmaCoreJs(): RdmaCoreBenchResult[] | string {
  const addon = rdmaCoreAddon();
  if (!addon) return 'the rdma-core addon is not built';
  const nd = { ptr: 1, name: 'bench0', dev_name: 'uverbs0', dev_path: '', ibdev_path: '', node_type: 1, transport_type: 0, guid: 0n, index: 0 };
  const ctx = new RcContext(rdma_core_ctx_ops, new RcDevice(rdmaCoreProvider, 1, nd, 0n), 1, -1, -1, 1);
  const pd = new RcPd(ctx, 1, 0);
  const cq = new RcCq(ctx, 2, null, null, 0, 16);
  const qp = new RcQp(ctx, pd, 3, null, cq, cq, null, 0, 1, IBV_QPT_RC, 0);
  const mutable = addon as unknown as Record<string, unknown>;
  const saved = { postSend: addon.postSend, pollCq: addon.pollCq };
  mutable['postSend'] = () => 0;
  mutable['pollCq'] = () => 1;
  try {
    const wr: ibv_send_wr = {
      wr_id: 2n,
      next: null,
      opcode: IBV_WR_RDMA_WRITE,
      send_flags: IBV_SEND_SIGNALED,
      num_sge: 1,
      sg_list: [{ addr: 0x10000n, length: 8, lkey: 5 }],
      wr: { rdma: { remote_addr: 0x20000n, rkey: 6 } },
    };
    const wc = newWcArray(1);
    return [
      { name: 'N-API call floor (addon.unwatchFd of nothing)', ns: time(2_000_000, () => addon.unwatchFd(0)) },
      { name: 'N-API call + registry lookup (addon.reqNotifyCq of an unknown CQ)', ns: time(2_000_000, () => addon.reqNotifyCq(0x1000, 0)) },
      { name: 'ibv_post_send JS share (1 WR, 1 SGE; native stubbed)', ns: time(2_000_000, () => ibv_post_send(qp, wr)) },
      { name: 'ibv_poll_cq JS share (1 WC decoded; native stubbed)', ns: time(2_000_000, () => ibv_poll_cq(cq, 1, wc)) },
    ];
  } finally {
    mutable['postSend'] = saved.postSend;
    mutable['pollCq'] = saved.pollCq;
  }
}

export function printRdmaCoreJs(r: RdmaCoreBenchResult[] | string): void {
  console.log('\n## rdma-core provider binding, JS share (no device needed)');
  if (typeof r === 'string') {
    console.log(`skipped: ${r}`);
    return;
  }
  for (const x of r) console.log(`${x.name.padEnd(52)} ${x.ns.toFixed(0).padStart(9)} ns/op`);
}

export function printRdmaCore(r: RdmaCoreBenchResult[] | string): void {
  console.log('\n## rdma-core provider binding (real device)');
  if (typeof r === 'string') {
    console.log(`skipped: ${r} (npm run hw-test measures it on rxe0 in the guest)`);
    return;
  }
  for (const x of r) console.log(`${x.name.padEnd(52)} ${x.ns.toFixed(0).padStart(9)} ns/op`);
}

if (process.argv[1]?.endsWith('rdma-core.bench.js')) {
  printRdmaCoreJs(benchRdmaCoreJs());
  printRdmaCore(await benchRdmaCore(process.argv[2]));
  process.exit(0);
}
