/**
 * Programs written against the verbs API run unchanged on the simulator:
 * perftest-style perf (busy-polling its CQs) and rc_pingpong (with
 * completion events: ibv_get_cq_event waits through waitIrq), both ends in
 * this process; and the sim's own waiting API (sleep, until, advance).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startSimModel, stopModel } from '../../src/boot.js';
import { DEFAULT_CONFIG, type ModelConfig } from '../../src/runtime/config.js';
import type { SimModel } from '../../src/runtime/sim/sim-model.js';
import { runLoopback } from '../../examples/perf.js';
import { expectPingpong, rcPingpongPair } from '../examples/scenarios.js';
import {
  IBV_ACCESS_LOCAL_WRITE,
  IBV_ACCESS_REMOTE_WRITE,
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
  IBV_MTU_1024,
  IBV_SEND_SIGNALED,
  IBV_WC_SUCCESS,
  IBV_WR_RDMA_WRITE,
  ibv_alloc_pd,
  ibv_close_device,
  ibv_create_comp_channel,
  ibv_create_cq,
  ibv_create_qp,
  ibv_get_cq_event,
  ibv_ack_cq_events,
  ibv_get_device_list,
  ibv_modify_qp,
  ibv_open_device,
  ibv_poll_cq,
  ibv_post_send,
  ibv_query_gid,
  ibv_reg_mr,
  ibv_req_notify_cq,
  newAhAttr,
  newGid,
  newQpAttr,
  newQpCap,
  newWcArray,
  rnic_alloc_buf,
} from '../../src/driver/verbs/index.js';
import type { ibv_context, ibv_cq, ibv_gid, ibv_qp } from '../../src/driver/verbs/index.js';

function config(): ModelConfig {
  return { ...(JSON.parse(JSON.stringify(DEFAULT_CONFIG)) as ModelConfig), workers: 0 };
}

afterEach(async () => {
  await stopModel();
});

describe('unchanged verbs programs on the simulator', () => {
  it('perf write_bw --loopback (busy polling), timed by the virtual clock: close to the 100 Gb/s line rate', async () => {
    const sim = await startSimModel({ ...config(), seed: 1 });
    const r = await runLoopback({
      test: 'write_bw',
      size: 65536,
      iters: 400,
      gid_index: 3,
      report_gbits: true,
      env: { now: () => sim.now(), ticksPerSec: 1e9 },
    });
    expect(r.bw).toHaveLength(1);
    const gbps = r.bw[0]!.bw_avg;
    expect(gbps).toBeGreaterThan(90);
    expect(gbps).toBeLessThan(100);
    expect(sim.now()).toBeGreaterThan((400 * 65536 * 8) / 100);
  });

  it('perf send_lat --loopback: a few microseconds of virtual round trip', async () => {
    const sim = await startSimModel({ ...config(), seed: 1 });
    const r = await runLoopback({ test: 'send_lat', size: 64, iters: 100, gid_index: 3, env: { now: () => sim.now(), ticksPerSec: 1e9 } });
    const lat = r.lat[0]!;
    // Half a round trip: doorbell, WQE fetch and gather, the wire both ways, the CQE: a few µs.
    expect(lat.t_typical).toBeGreaterThan(2);
    expect(lat.t_typical).toBeLessThan(6);
    // Virtual time has no jitter: every sample is the same.
    expect(lat.t_max - lat.t_min).toBeLessThan(0.01);
  });

  it('rc_pingpong with completion events (-e), server and client in this process', async () => {
    const sim = await startSimModel({ ...config(), seed: 1 });
    const { server, client } = await rcPingpongPair(['-n', '50', '-s', '4096', '-e']);
    expectPingpong(server, 4096, 50);
    expectPingpong(client, 4096, 50);
    // It ran on the simulator: 50 round trips of virtual time, a few µs each.
    expect(sim.eventsRun).toBeGreaterThan(500);
    expect(sim.now()).toBeGreaterThan(50 * 2 * 3_000);
    expect(sim.now()).toBeLessThan(50 * 2 * 10_000);
  });

  it('rc_pingpong polling, with -c (contents checked)', async () => {
    const sim = await startSimModel({ ...config(), seed: 2 });
    const { server, client } = await rcPingpongPair(['-n', '100', '-s', '1000', '-c']);
    expect(sim.eventsRun).toBeGreaterThan(1000);
    expectPingpong(server, 1000, 100);
    expectPingpong(client, 1000, 100);
  });
});

/** A connected RC pair on rnic0 → rnic1, by hand, for the API tests. */
function rcPair(): {
  ctxs: ibv_context[];
  qp: ibv_qp;
  cq: ibv_cq;
  laddr: bigint;
  lkey: number;
  raddr: bigint;
  rkey: number;
  channel: ReturnType<typeof ibv_create_comp_channel>;
} {
  const devs = ibv_get_device_list();
  const ctxs = [ibv_open_device(devs[0]!), ibv_open_device(devs[1]!)];
  const gids: ibv_gid[] = ctxs.map((c) => {
    const g = newGid();
    ibv_query_gid(c, 1, 3, g);
    return g;
  });
  const pds = ctxs.map((c) => ibv_alloc_pd(c));
  const channel = ibv_create_comp_channel(ctxs[0]!);
  const cqs = ctxs.map((c, i) => ibv_create_cq(c, 64, null, i === 0 ? channel : null, 0));
  const qps = ctxs.map((_, i) => {
    const cap = newQpCap();
    cap.max_send_wr = 16;
    cap.max_recv_wr = 16;
    cap.max_send_sge = 1;
    cap.max_recv_sge = 1;
    return ibv_create_qp(pds[i]!, { send_cq: cqs[i]!, recv_cq: cqs[i]!, srq: null, cap, qp_type: IBV_QPT_RC, sq_sig_all: 0 });
  });
  const bufs = ctxs.map((c) => rnic_alloc_buf(c, 4096, 64));
  const mrs = bufs.map((b, i) => ibv_reg_mr(pds[i]!, b, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
  for (let i = 0; i < 2; i++) {
    const j = 1 - i;
    const a = newQpAttr();
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    expect(ibv_modify_qp(qps[i]!, a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)).toBe(0);
    const b = newQpAttr();
    b.qp_state = IBV_QPS_RTR;
    b.path_mtu = IBV_MTU_1024;
    b.dest_qp_num = qps[j]!.qp_num;
    b.rq_psn = 0;
    b.max_dest_rd_atomic = 1;
    b.min_rnr_timer = 12;
    b.ah_attr = newAhAttr();
    b.ah_attr.is_global = 1;
    b.ah_attr.port_num = 1;
    b.ah_attr.grh.dgid = { raw: Uint8Array.from(gids[j]!.raw) };
    b.ah_attr.grh.sgid_index = 3;
    b.ah_attr.grh.hop_limit = 64;
    expect(
      ibv_modify_qp(
        qps[i]!,
        b,
        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
      ),
    ).toBe(0);
    const c = newQpAttr();
    c.qp_state = IBV_QPS_RTS;
    c.sq_psn = 0;
    c.timeout = 14;
    c.retry_cnt = 7;
    c.rnr_retry = 7;
    c.max_rd_atomic = 1;
    expect(ibv_modify_qp(qps[i]!, c, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC)).toBe(0);
  }
  return { ctxs, qp: qps[0]!, cq: cqs[0]!, laddr: mrs[0]!.addr, lkey: mrs[0]!.lkey, raddr: mrs[1]!.addr, rkey: mrs[1]!.rkey, channel };
}

function postWrite(p: ReturnType<typeof rcPair>, len = 1024): void {
  const rc = ibv_post_send(p.qp, {
    wr_id: 7n,
    next: null,
    sg_list: [{ addr: p.laddr, length: len, lkey: p.lkey }],
    num_sge: 1,
    opcode: IBV_WR_RDMA_WRITE,
    send_flags: IBV_SEND_SIGNALED,
    wr: { rdma: { remote_addr: p.raddr, rkey: p.rkey } },
  });
  expect(rc).toBe(0);
}

describe('waiting in virtual time', () => {
  it('a doorbell only schedules: nothing moves until the program polls, waits or sleeps', async () => {
    const sim: SimModel = await startSimModel({ ...config(), seed: 1 });
    const p = rcPair();
    const ran = sim.eventsRun;
    postWrite(p);
    expect(sim.eventsRun).toBe(ran);
    expect(sim.now()).toBe(0);
    expect(sim.scheduler.pending).toBeGreaterThan(0);
    // Busy-polling moves the clock to the completion.
    const wc = newWcArray(1);
    let polls = 0;
    while (ibv_poll_cq(p.cq, 1, wc) === 0) polls++;
    expect(wc[0]!.status).toBe(IBV_WC_SUCCESS);
    expect(polls).toBeGreaterThan(0);
    expect(polls).toBeLessThan(50);
    const t = sim.now();
    // The 1024-byte WRITE's completion: the worked example's 2960 ns arrival, an ACK back, a CQE.
    expect(t).toBeGreaterThan(2960);
    expect(t).toBeLessThan(6000);
    for (const c of p.ctxs) ibv_close_device(c);
  });

  it('ibv_get_cq_event waits through waitIrq until the completion event, in virtual time', async () => {
    const sim = await startSimModel({ ...config(), seed: 1 });
    const p = rcPair();
    expect(ibv_req_notify_cq(p.cq, 0)).toBe(0);
    postWrite(p);
    const ev = await ibv_get_cq_event(p.channel);
    expect(ev.cq).toBe(p.cq);
    ibv_ack_cq_events(p.cq, 1);
    const wc = newWcArray(1);
    expect(ibv_poll_cq(p.cq, 1, wc)).toBe(1);
    expect(wc[0]!.status).toBe(IBV_WC_SUCCESS);
    expect(sim.now()).toBeGreaterThan(2960);
    expect(sim.now()).toBeLessThan(6000);
    for (const c of p.ctxs) ibv_close_device(c);
  });

  it('sleep, until and advance', async () => {
    const sim = await startSimModel({ ...config(), seed: 1 });
    await sim.sleep(12_345);
    expect(sim.now()).toBe(12_345);
    sim.advance(655);
    expect(sim.now()).toBe(13_000);
    let woke = false;
    const p = rcPair();
    postWrite(p);
    const wc = newWcArray(1);
    const got = await sim.until(() => (woke = ibv_poll_cq(p.cq, 1, wc) > 0), 1_000_000);
    expect(got).toBe(true);
    expect(woke).toBe(true);
    expect(sim.now()).toBeLessThan(13_000 + 6_000);
    // A deadline with nothing to wait for: the clock goes to it.
    expect(await sim.until(() => false, 100_000)).toBe(false);
    expect(sim.now()).toBe(100_000);
    for (const c of p.ctxs) ibv_close_device(c);
  });
});
