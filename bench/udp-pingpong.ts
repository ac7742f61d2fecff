/**
 * Two model processes on one host joined by a UDP cable on 127.0.0.1:
 * RC SEND ping-pong of `size` bytes, `iters` round trips. Prints the half
 * round trip (min / median / max, µs) and what each side counted, in
 * particular packets sent beyond one per message and ACK (retransmissions)
 * and local ACK timeouts; with no loss on loopback both must be 0.
 *
 *   node dist/bench/udp-pingpong.js [iters=20] [size=1024] [workers=1]
 *
 * The child is this file run again with the role 'echo'.
 */
import { fork } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

type Msg = { type: string; [k: string]: unknown };

async function freeUdpPort(): Promise<number> {
  const s = createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', () => r()));
  const p = s.address().port;
  await new Promise<void>((r) => s.close(() => r()));
  return p;
}

async function side(role: 'ping' | 'echo', iters: number, size: number, send: (m: Msg) => void, next: () => Promise<Msg>): Promise<Msg> {
  const v = await import('../src/index.js');
  const { currentModel, stopModel, ensureModel } = await import('../src/boot.js');
  if (process.env.RNIC_SPIN_NS) ensureModel(undefined, { tuning: { spinNs: Number(process.env.RNIC_SPIN_NS) } });
  const [dev] = v.ibv_get_device_list();
  await currentModel()?.cabled;
  const ctx = v.ibv_open_device(dev!);
  const pd = v.ibv_alloc_pd(ctx);
  const cq = v.ibv_create_cq(ctx, 64, null, null, 0);
  const qp = v.ibv_create_qp(pd, {
    send_cq: cq,
    recv_cq: cq,
    qp_type: v.IBV_QPT_RC,
    sq_sig_all: 1,
    cap: { max_send_wr: 4, max_recv_wr: 16, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 },
  });
  const buf = v.rnic_alloc_buf(ctx, 2 * size + 64);
  const mr = v.ibv_reg_mr(pd, buf, v.IBV_ACCESS_LOCAL_WRITE);
  const a = v.newQpAttr();
  a.qp_state = v.IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qp_access_flags = 0;
  v.ibv_modify_qp(qp, a, v.IBV_QP_STATE | v.IBV_QP_PKEY_INDEX | v.IBV_QP_PORT | v.IBV_QP_ACCESS_FLAGS);
  const recv = () => v.ibv_post_recv(qp, { wr_id: 1n, next: null, sg_list: [{ addr: mr.addr + BigInt(size), length: size, lkey: mr.lkey }], num_sge: 1 }, {});
  for (let i = 0; i < 8; i++) recv();
  const gid = v.newGid();
  v.ibv_query_gid(ctx, 1, 3, gid);
  send({ type: 'addr', qpn: qp.qp_num, gid: Buffer.from(gid.raw).toString('hex') });
  const peer = await next();
  a.qp_state = v.IBV_QPS_RTR;
  a.path_mtu = v.IBV_MTU_1024;
  a.dest_qp_num = peer['qpn'] as number;
  a.rq_psn = 0;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid = { raw: Uint8Array.from(Buffer.from(peer['gid'] as string, 'hex')) };
  a.ah_attr.grh.sgid_index = 3;
  a.ah_attr.grh.hop_limit = 64;
  a.ah_attr.port_num = 1;
  v.ibv_modify_qp(
    qp,
    a,
    v.IBV_QP_STATE | v.IBV_QP_AV | v.IBV_QP_PATH_MTU | v.IBV_QP_DEST_QPN | v.IBV_QP_RQ_PSN | v.IBV_QP_MAX_DEST_RD_ATOMIC | v.IBV_QP_MIN_RNR_TIMER,
  );
  // rc_pingpong's transport attributes: timeout 14 (67 ms), 7 retries.
  a.qp_state = v.IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.sq_psn = 0;
  a.max_rd_atomic = 1;
  v.ibv_modify_qp(qp, a, v.IBV_QP_STATE | v.IBV_QP_TIMEOUT | v.IBV_QP_RETRY_CNT | v.IBV_QP_RNR_RETRY | v.IBV_QP_SQ_PSN | v.IBV_QP_MAX_QP_RD_ATOMIC);
  send({ type: 'rts' });
  await next();
  const wc = v.newWcArray(4);
  const postSend = () =>
    v.ibv_post_send(
      qp,
      { wr_id: 2n, next: null, sg_list: [{ addr: mr.addr, length: size, lkey: mr.lkey }], num_sge: 1, opcode: v.IBV_WR_SEND, send_flags: v.IBV_SEND_SIGNALED },
      {},
    );
  /** Waits for a completion of `wrId`; others are counted. */
  let sends = 0;
  const waitFor = async (wrId: bigint) => {
    for (;;) {
      const n = v.ibv_poll_cq(cq, 4, wc);
      let hit = false;
      for (let i = 0; i < n; i++) {
        if (wc[i]!.status !== v.IBV_WC_SUCCESS) throw new Error(`${role}: completion status ${v.ibv_wc_status_str(wc[i]!.status)}`);
        if (wc[i]!.wr_id === 2n) sends++;
        if (wc[i]!.wr_id === wrId) hit = true;
        if (wc[i]!.wr_id === 1n) recv();
      }
      if (hit) return;
      if (n === 0) await new Promise<void>((r) => setImmediate(r));
    }
  };
  const half: number[] = [];
  for (let i = 0; i < iters; i++) {
    if (role === 'ping') {
      const t0 = process.hrtime.bigint();
      postSend();
      await waitFor(1n);
      half.push(Number(process.hrtime.bigint() - t0) / 2000);
    } else {
      await waitFor(1n);
      postSend();
    }
  }
  while (sends < iters) await waitFor(2n);
  // Let the last ACK go, then read the counters.
  await new Promise((r) => setTimeout(r, 300));
  const counters = v.rnic_read_counters(ctx);
  const udp = currentModel()?.udpStats?.() ?? {};
  await stopModel();
  const pick = ['sent_pkts', 'rcvd_pkts', 'duplicate_request', 'local_ack_timeout_err', 'out_of_sequence', 'packet_seq_err', 'retry_exceeded_err'];
  return { type: 'result', half, counters: Object.fromEntries(pick.map((k) => [k, Number(counters[k] ?? 0n)])), udp: Object.values(udp)[0] ?? null };
}

function stats(xs: number[]): string {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!.toFixed(0);
  return `min ${s[0]!.toFixed(0)}  median ${q(0.5)}  p90 ${q(0.9)}  max ${s[s.length - 1]!.toFixed(0)} µs`;
}

const role = process.argv[2] === 'echo' ? 'echo' : 'ping';
if (role === 'echo') {
  const inbox: Msg[] = [];
  let wake: (() => void) | null = null;
  process.on('message', (m: Msg) => {
    inbox.push(m);
    wake?.();
  });
  const next = async () => {
    while (inbox.length === 0) await new Promise<void>((r) => (wake = r));
    return inbox.shift()!;
  };
  const iters = Number(process.argv[3]);
  const size = Number(process.argv[4]);
  const r = await side('echo', iters, size, (m) => process.send!(m), next);
  process.send!(r);
  process.disconnect();
} else {
  const iters = Number(process.argv[2] ?? 20);
  const size = Number(process.argv[3] ?? 1024);
  const workers = Number(process.argv[4] ?? 1);
  const dir = mkdtempSync(join(tmpdir(), 'rnic-pp-'));
  const [pa, pb] = [await freeUdpPort(), await freeUdpPort()];
  const cfg = (n: number, local: number, remote: number) => ({
    workers,
    devices: [{ name: `rnic${n - 1}`, ports: [{ mac: `02:00:00:00:00:0${n}`, ipv4: [`192.0.2.${n}`] }] }],
    cables: [{ kind: 'udp', port: `rnic${n - 1}:1`, local: `127.0.0.1:${local}`, remote: `127.0.0.1:${remote}` }],
  });
  writeFileSync(join(dir, 'a.json'), JSON.stringify(cfg(1, pa, pb)));
  writeFileSync(join(dir, 'b.json'), JSON.stringify(cfg(2, pb, pa)));
  process.env.RNIC_CONFIG = join(dir, 'a.json');
  const child = fork(fileURLToPath(import.meta.url), ['echo', String(iters), String(size)], { env: { ...process.env, RNIC_CONFIG: join(dir, 'b.json') } });
  const inbox: Msg[] = [];
  let wake: (() => void) | null = null;
  child.on('message', (m: Msg) => {
    inbox.push(m);
    wake?.();
  });
  const next = async () => {
    while (inbox.length === 0) await new Promise<void>((r) => (wake = r));
    return inbox.shift()!;
  };
  const mine = await side('ping', iters, size, (m) => child.send(m), next);
  const theirs = await next();
  rmSync(dir, { recursive: true, force: true });
  const half = mine['half'] as number[];
  console.log(`UDP cable ping-pong, two processes, ${iters} × ${size} B, workers ${workers}`);
  console.log(`  half round trip: ${stats(half)} (first, with ARP: ${half[0]!.toFixed(0)} µs)`);
  if (half.length > 1) console.log(`  after the first:  ${stats(half.slice(1))}`);
  console.log(`  pinger: ${JSON.stringify(mine['counters'])}`);
  console.log(`  echoer: ${JSON.stringify(theirs['counters'])}`);
  const c = [mine['counters'], theirs['counters']] as Record<string, number>[];
  const extra = c.map((x) => x['sent_pkts']! - 2 * iters);
  console.log(
    `  packets sent beyond one SEND + one ACK per message: pinger ${extra[0]}, echoer ${extra[1]}; local ACK timeouts ${c[0]!['local_ack_timeout_err']! + c[1]!['local_ack_timeout_err']!}`,
  );
  if (mine['udp']) console.log(`  pinger's UDP cable: ${JSON.stringify(mine['udp'])}`);
  process.exit(0);
}
