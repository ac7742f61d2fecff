/**
 * The model end to end through the verbs API: RDMA WRITE message rate and
 * bandwidth, and SEND/RECV ping-pong latency, beside the limits measured in
 * the same run (memcpy and zlib.crc32 of the same sizes: every payload byte
 * is copied and CRC'd at least twice on its way).
 */
import { crc32 } from 'node:zlib';
import {
  IBV_SEND_INLINE,
  IBV_SEND_SIGNALED,
  IBV_WC_SUCCESS,
  IBV_WR_RDMA_WRITE,
  IBV_WR_SEND,
  ibv_poll_cq,
  ibv_post_recv,
  ibv_post_send,
  newWcArray,
  type ibv_recv_wr,
  type ibv_send_wr,
  type ibv_wc,
} from '../src/index.js';
import { rcPair, type Side } from './rc-pair.js';

export interface VerbsBenchResult {
  name: string;
  value: number;
  unit: string;
  limit: string;
}

function pollOne(s: Side, wc: ibv_wc[], deadline: number): number {
  for (;;) {
    const n = ibv_poll_cq(s.cq, wc.length, wc);
    if (n < 0) throw new Error(`poll_cq ${n}`);
    if (n > 0) {
      for (let i = 0; i < n; i++) if (wc[i]!.status !== IBV_WC_SUCCESS) throw new Error(`completion status ${wc[i]!.status}`);
      return n;
    }
    if (performance.now() > deadline) throw new Error('benchmark stalled: no completion for 10 s');
  }
}

/** Posts `count` WRITEs of `size` bytes, signaling every `sigEvery`th, keeping `depth` in flight. Returns seconds. */
function writeStream(a: Side, b: Side, size: number, count: number, depth: number, sigEvery: number): number {
  const wc = newWcArray(16);
  const wr: ibv_send_wr = {
    wr_id: 0n,
    next: null,
    num_sge: 1,
    opcode: IBV_WR_RDMA_WRITE,
    send_flags: 0,
    sg_list: [{ addr: a.mr.addr, length: size, lkey: a.mr.lkey }],
    wr: { rdma: { remote_addr: b.mr.addr, rkey: b.mr.rkey } },
  };
  let posted = 0;
  let done = 0;
  const t0 = performance.now();
  while (done < count) {
    while (posted < count && posted - done < depth) {
      wr.send_flags = (posted + 1) % sigEvery === 0 || posted + 1 === count ? IBV_SEND_SIGNALED : 0;
      wr.wr_id = BigInt(posted);
      const rc = ibv_post_send(a.qp, wr);
      if (rc !== 0) throw new Error(`post_send ${rc}`);
      posted++;
    }
    const n = pollOne(a, wc, performance.now() + 10_000);
    for (let i = 0; i < n; i++) done = Number(wc[i]!.wr_id) + 1;
  }
  return (performance.now() - t0) / 1000;
}

function pingPong(a: Side, b: Side, iters: number): number {
  const wc = newWcArray(4);
  const send = (s: Side): ibv_send_wr => ({
    wr_id: 1n,
    next: null,
    num_sge: 1,
    opcode: IBV_WR_SEND,
    send_flags: IBV_SEND_SIGNALED | IBV_SEND_INLINE,
    sg_list: [{ addr: s.mr.addr, length: 8, lkey: s.mr.lkey }],
  });
  const recv = (s: Side): ibv_recv_wr => ({ wr_id: 2n, next: null, num_sge: 1, sg_list: [{ addr: s.mr.addr + 4096n, length: 64, lkey: s.mr.lkey }] });
  const sa = send(a);
  const sb = send(b);
  const ra = recv(a);
  const rb = recv(b);
  ibv_post_recv(a.qp, ra);
  ibv_post_recv(b.qp, rb);
  // Wait for both the send completion and the receive on each side.
  const waitRecv = (s: Side, r: ibv_recv_wr) => {
    let got = false;
    const deadline = performance.now() + 10_000;
    while (!got) {
      const n = pollOne(s, wc, deadline);
      for (let i = 0; i < n; i++) if (wc[i]!.wr_id === 2n) got = true;
    }
    ibv_post_recv(s.qp, r);
  };
  const t0 = performance.now();
  for (let i = 0; i < iters; i++) {
    ibv_post_send(a.qp, sa);
    waitRecv(b, rb);
    ibv_post_send(b.qp, sb);
    waitRecv(a, ra);
  }
  return ((performance.now() - t0) * 1000) / iters / 2;
}

function memcpyRate(size: number): number {
  const src = new Uint8Array(size).fill(1);
  const dst = new Uint8Array(size);
  const n = Math.max(100, Math.floor(2e8 / size));
  const t0 = performance.now();
  for (let i = 0; i < n; i++) dst.set(src);
  return (n * size) / ((performance.now() - t0) / 1000);
}

function crcRate(size: number): number {
  const src = new Uint8Array(size).fill(1);
  const n = Math.max(100, Math.floor(2e8 / size));
  const t0 = performance.now();
  let x = 0;
  for (let i = 0; i < n; i++) x ^= crc32(src);
  if (x === 0.5) console.log(x);
  return (n * size) / ((performance.now() - t0) / 1000);
}

export function benchVerbs(): VerbsBenchResult[] {
  const [a, b] = rcPair(1 << 20, 512);
  const out: VerbsBenchResult[] = [];
  const gbs = (x: number) => `${(x / 1e9).toFixed(2)} GB/s`;
  writeStream(a, b, 8, 2000, 256, 64); // warm up
  const nSmall = 100_000;
  const tSmall = writeStream(a, b, 8, nSmall, 256, 64);
  out.push({ name: 'RDMA WRITE 8 B message rate', value: nSmall / tSmall / 1e6, unit: 'M writes/s', limit: `target 1 M/s` });
  const nBig = 3000;
  const size = 65536;
  const tBig = writeStream(a, b, size, nBig, 32, 8);
  out.push({
    name: 'RDMA WRITE 64 KiB bandwidth',
    value: (nBig * size) / tBig / 1e9,
    unit: 'GB/s',
    limit: `memcpy ${gbs(memcpyRate(size))}, crc32 ${gbs(crcRate(size))}; target 2 GB/s`,
  });
  pingPong(a, b, 200);
  out.push({ name: 'SEND/RECV ping-pong half round trip', value: pingPong(a, b, 5000), unit: 'µs', limit: 'target ≤ 5 µs' });
  return out;
}

export function printVerbs(results: VerbsBenchResult[]): void {
  console.log('\n## verbs end to end (two model devices on one worker thread, RC, RoCE v2)');
  for (const r of results) console.log(`${r.name.padEnd(40)} ${r.value.toFixed(3).padStart(10)} ${r.unit.padEnd(12)} (${r.limit})`);
}
