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
import { rcPair } from '../../bench/rc-pair.js';
import { currentModel, stopModel } from '../../src/boot.js';
import {
  IBV_SEND_SIGNALED,
  IBV_WR_RDMA_READ,
  IBV_WR_RDMA_WRITE,
  ibv_close_device,
  ibv_poll_cq,
  ibv_post_send,
  newWcArray,
} from '../../src/driver/verbs/index.js';

const MSG = 64 * 1024;
const N = 64;

function must(rc: number, what: string): void {
  if (rc !== 0) throw new Error(`${what} failed: ${rc}`);
}

async function main(): Promise<void> {
  const mode = process.env.EXIT_MODE ?? 'return';
  // The verbs benchmarks' RC pair (rc_pingpong's setup), then the cables up before any packet.
  const [a, b] = rcPair(N * MSG, 2 * N);
  await currentModel()?.cabled;
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
