/**
 * Object creation: what a control-path verb costs, each beside the same
 * run's empty mailbox round trip (ibv_query_pkey: one command that changes
 * nothing, through the same driver → BAR → firmware path).
 *
 * - ibv_create_cq / ibv_create_qp / ibv_reg_mr, µs per call, at default caps;
 * - 10 K and 100 K QPs: wall time to create them all, and the memory each
 *   costs beyond its rings (JS heap after a GC, and host memory taken beyond
 *   the ring bytes: doorbell record, alignment);
 * - the setup part of a fault-campaign seed in the sim runtime:
 *   startSimModel + open both devices + PD + 6 QPs (3 RC pairs, each with
 *   its CQs and an MR) brought to RTS + teardown, as seeds/s.
 *
 * Every figure is min / median / max over repeats (the machine is shared).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import {
  DEFAULT_CONFIG,
  IBV_ACCESS_LOCAL_WRITE,
  IBV_ACCESS_REMOTE_READ,
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
  ibv_alloc_pd,
  ibv_close_device,
  ibv_create_cq,
  ibv_create_qp,
  ibv_dealloc_pd,
  ibv_dereg_mr,
  ibv_destroy_cq,
  ibv_destroy_qp,
  ibv_get_device_list,
  ibv_modify_qp,
  ibv_open_device,
  ibv_post_recv,
  ibv_query_gid,
  ibv_query_pkey,
  ibv_reg_mr,
  newAhAttr,
  newGid,
  newQpAttr,
  newQpCap,
  restartModel,
  rnic_alloc_buf,
  startSimModel,
  stopModel,
  type ibv_context,
  type ibv_cq,
  type ibv_pd,
  type ibv_qp,
  type ModelConfig,
} from '../src/index.js';

export interface Spread {
  min: number;
  median: number;
  max: number;
}

export interface ObjectsRow {
  name: string;
  unit: string;
  value: Spread;
  note: string;
}

export interface ObjectsResult {
  runtime: string;
  rows: ObjectsRow[];
}

function spread(xs: number[]): Spread {
  const s = [...xs].sort((a, b) => a - b);
  return { min: s[0]!, median: s[s.length >> 1]!, max: s[s.length - 1]! };
}

let gcFn: (() => void) | null = null;
function gc(): void {
  if (!gcFn) {
    setFlagsFromString('--expose-gc');
    gcFn = runInNewContext('gc') as () => void;
  }
  gcFn();
  gcFn();
}

const now = (): number => performance.now();

function cap(sendWr: number, recvWr: number) {
  const c = newQpCap();
  c.max_send_wr = sendWr;
  c.max_recv_wr = recvWr;
  c.max_send_sge = 1;
  c.max_recv_sge = 1;
  c.max_inline_data = 0;
  return c;
}

function createQp(pd: ibv_pd, cq: ibv_cq, sendWr = 16, recvWr = 16): ibv_qp {
  return ibv_create_qp(pd, { send_cq: cq, recv_cq: cq, srq: null, cap: cap(sendWr, recvWr), qp_type: IBV_QPT_RC, sq_sig_all: 0 });
}

/** A round-mean spread and the per-call distribution under it. */
interface PerCall extends Spread {
  /** Over every counted call, µs: the typical call and the tail (GC pauses, a thread off its core). */
  readonly p50: number;
  readonly p99: number;
}

/**
 * µs per call of `body(i)` over `n` calls, `rounds` times; `undo` runs
 * untimed after each round. The spread is of the rounds' means; p50 / p99
 * are of the single calls (timing each costs ~0.1 µs, within the noise).
 */
function perCall(n: number, rounds: number, body: (i: number) => void, undo: () => void): PerCall {
  const xs: number[] = [];
  const calls = new Float64Array(n * rounds);
  for (let r = 0; r < rounds + 1; r++) {
    const t0 = now();
    let last = t0;
    for (let i = 0; i < n; i++) {
      body(i);
      const t = now();
      if (r > 0) calls[(r - 1) * n + i] = (t - last) * 1000;
      last = t;
    }
    const us = ((last - t0) * 1000) / n;
    undo();
    if (r > 0) xs.push(us); // round 0 warms the JIT
  }
  calls.sort();
  return { ...spread(xs), p50: calls[calls.length >> 1]!, p99: calls[Math.floor(calls.length * 0.99)]! };
}

/** "per call p50 6.1, p99 40 µs" for a row's note. */
function callNote(c: PerCall): string {
  return `per call p50 ${c.p50.toFixed(1)}, p99 ${c.p99.toFixed(0)} µs`;
}

function hostUsed(ctx: ibv_context): number {
  const mem = (ctx as unknown as { mem: { size: number; bytesFree: number } }).mem;
  return mem.size - mem.bytesFree;
}

/** The per-verb figures on an open context of the running model. */
function verbRows(ctx: ibv_context, n: number, rounds: number): ObjectsRow[] {
  const pd = ibv_alloc_pd(ctx);
  const rows: ObjectsRow[] = [];
  const pkeyOut = { pkey: 0 };
  const base = perCall(
    n,
    rounds,
    () => void ibv_query_pkey(ctx, 1, 0, pkeyOut),
    () => {},
  );
  rows.push({ name: 'empty mailbox round trip (ibv_query_pkey)', unit: 'µs', value: base, note: `baseline; ${callNote(base)}` });
  const cqs: ibv_cq[] = [];
  const cqRow = perCall(
    n,
    rounds,
    () => void cqs.push(ibv_create_cq(ctx, 16, null, null, 0)),
    () => {
      for (const c of cqs.splice(0)) ibv_destroy_cq(c);
    },
  );
  rows.push({
    name: 'ibv_create_cq (16 CQEs)',
    unit: 'µs',
    value: cqRow,
    note: `${(cqRow.median / base.median).toFixed(1)}× baseline; ${callNote(cqRow)}; target ≤ 20 µs`,
  });
  const cq = ibv_create_cq(ctx, 64, null, null, 0);
  const qps: ibv_qp[] = [];
  const qpRow = perCall(
    n,
    rounds,
    () => void qps.push(createQp(pd, cq)),
    () => {
      for (const q of qps.splice(0)) ibv_destroy_qp(q);
    },
  );
  rows.push({
    name: 'ibv_create_qp (RC, 16 + 16 WRs)',
    unit: 'µs',
    value: qpRow,
    note: `${(qpRow.median / base.median).toFixed(1)}× baseline; ${callNote(qpRow)}; target ≤ 20 µs`,
  });
  const buf = rnic_alloc_buf(ctx, 1 << 16, 4096);
  const mrs: ReturnType<typeof ibv_reg_mr>[] = [];
  const mrRow = perCall(
    n,
    rounds,
    () => void mrs.push(ibv_reg_mr(pd, buf, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)),
    () => {
      for (const m of mrs.splice(0)) ibv_dereg_mr(m);
    },
  );
  rows.push({ name: 'ibv_reg_mr (64 KiB)', unit: 'µs', value: mrRow, note: `${(mrRow.median / base.median).toFixed(1)}× baseline; ${callNote(mrRow)}` });
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  return rows;
}

/**
 * Create `count` QPs on one CQ: wall time, and heap / host memory per QP
 * beyond the ring bytes; with `measureActive` (devices on this thread, so
 * the heap is theirs too) also the pipeline state each QP gets when first used.
 */
function manyQps(ctx: ibv_context, count: number, rounds: number, measureActive = false): ObjectsRow[] {
  const pd = ibv_alloc_pd(ctx);
  const cq = ibv_create_cq(ctx, 64, null, null, 0);
  const secs: number[] = [];
  const heap: number[] = [];
  const host: number[] = [];
  const active: number[] = [];
  const recvMr = ibv_reg_mr(pd, rnic_alloc_buf(ctx, 4096, 4096), IBV_ACCESS_LOCAL_WRITE);
  // 16 send WQEs of 64 B and 16 receive WQEs of 32 B (1 SGE): the ring bytes.
  const probe = createQp(pd, cq);
  const ringBytes = probe as unknown as { sqSize: number; sqLogStride: number; rqSize: number; rqLogStride: number };
  const rings = (ringBytes.sqSize << ringBytes.sqLogStride) + (ringBytes.rqSize << ringBytes.rqLogStride);
  ibv_destroy_qp(probe);
  for (let r = 0; r < rounds; r++) {
    const qps: ibv_qp[] = new Array<ibv_qp>(count);
    gc();
    const h0 = process.memoryUsage().heapUsed;
    const m0 = hostUsed(ctx);
    const t0 = now();
    for (let i = 0; i < count; i++) qps[i] = createQp(pd, cq);
    secs.push((now() - t0) / 1000);
    gc();
    heap.push((process.memoryUsage().heapUsed - h0) / count);
    host.push((hostUsed(ctx) - m0) / count - rings);
    if (measureActive) {
      // The pipeline's own state (QpCtx) is made when a QP is first met: a receive doorbell here.
      const h1 = process.memoryUsage().heapUsed;
      for (const q of qps) {
        const a = newQpAttr();
        a.qp_state = IBV_QPS_INIT;
        a.port_num = 1;
        a.pkey_index = 0;
        a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
        ok(ibv_modify_qp(q, a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS));
        ok(ibv_post_recv(q, { wr_id: 1n, next: null, num_sge: 1, sg_list: [{ addr: recvMr.addr, length: 64, lkey: recvMr.lkey }] }));
      }
      gc();
      active.push((process.memoryUsage().heapUsed - h1) / count);
    }
    for (const q of qps) ibv_destroy_qp(q);
  }
  ibv_dereg_mr(recvMr);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  const k = `${count / 1000} K`;
  const extra: ObjectsRow[] = active.length
    ? [
        {
          name: `${k} QPs to INIT, a receive posted: more JS heap per QP`,
          unit: 'B',
          value: spread(active),
          note: "the pipeline's per-QP state, made on first use",
        },
        {
          name: `${k} QPs used (to INIT, a receive posted): JS heap + host memory per QP beyond its rings`,
          unit: 'B',
          value: spread(active.map((a, i) => a + heap[i]! + host[i]!)),
          note: 'target ≤ 2 KiB (2,048 B)',
        },
      ]
    : [];
  return [
    { name: `${k} ibv_create_qp`, unit: 's', value: spread(secs), note: count >= 100_000 ? 'target ≤ 5 s' : '' },
    { name: `${k} QPs: JS heap per QP`, unit: 'B', value: spread(heap), note: 'driver + firmware + pipeline objects' },
    {
      name: `${k} QPs: host memory per QP beyond its ${rings} ring bytes`,
      unit: 'B',
      value: spread(host),
      note: 'record + alignment; target heap + this ≤ 2 KiB',
    },
    ...extra,
  ];
}

function twoHostConfig(extraCaps: Record<string, unknown> = {}, memoryBytes?: number): ModelConfig {
  return {
    ...DEFAULT_CONFIG,
    devices: DEFAULT_CONFIG.devices.map((d) => ({
      ...d,
      memoryBytes: memoryBytes ?? d.memoryBytes,
      caps: { ...d.caps, ...extraCaps },
      ports: d.ports.map((p) => ({ ...p })),
    })),
  };
}

/** One campaign seed's setup and teardown in the sim runtime (no traffic). */
export async function seedSetup(): Promise<void> {
  await startSimModel({ ...twoHostConfig(), workers: 0, seed: 1 });
  const devs = ibv_get_device_list();
  const ctxs = devs.slice(0, 2).map((d) => ibv_open_device(d));
  const pds = ctxs.map((c) => ibv_alloc_pd(c));
  const gids = ctxs.map((c) => {
    const g = newGid();
    ibv_query_gid(c, 1, 1, g);
    return g;
  });
  const ends: { qp: ibv_qp; cqs: ibv_cq[]; mr: ReturnType<typeof ibv_reg_mr> }[][] = [[], []];
  for (let p = 0; p < 3; p++) {
    for (let side = 0; side < 2; side++) {
      const ctx = ctxs[side]!;
      const scq = ibv_create_cq(ctx, 64, null, null, 0);
      const rcq = ibv_create_cq(ctx, 64, null, null, 0);
      const qp = ibv_create_qp(pds[side]!, { send_cq: scq, recv_cq: rcq, srq: null, cap: cap(16, 16), qp_type: IBV_QPT_RC, sq_sig_all: 0 });
      const mr = ibv_reg_mr(pds[side]!, rnic_alloc_buf(ctx, 16384, 4096), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
      ends[side]!.push({ qp, cqs: [scq, rcq], mr });
    }
    for (let side = 0; side < 2; side++) {
      const me = ends[side]![p]!;
      const peer = ends[1 - side]![p]!;
      const a = newQpAttr();
      a.qp_state = IBV_QPS_INIT;
      a.port_num = 1;
      a.pkey_index = 0;
      a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
      ok(ibv_modify_qp(me.qp, a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS));
      const r = newQpAttr();
      r.qp_state = IBV_QPS_RTR;
      r.path_mtu = IBV_MTU_1024;
      r.dest_qp_num = peer.qp.qp_num;
      r.rq_psn = 0;
      r.max_dest_rd_atomic = 4;
      r.min_rnr_timer = 1;
      const ah = newAhAttr();
      ah.is_global = 1;
      ah.port_num = 1;
      ah.grh.dgid = { raw: Uint8Array.from(gids[1 - side]!.raw) };
      ah.grh.sgid_index = 1;
      ah.grh.hop_limit = 64;
      r.ah_attr = ah;
      ok(
        ibv_modify_qp(
          me.qp,
          r,
          IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
        ),
      );
      const s = newQpAttr();
      s.qp_state = IBV_QPS_RTS;
      s.sq_psn = 0;
      s.timeout = 8;
      s.retry_cnt = 7;
      s.rnr_retry = 7;
      s.max_rd_atomic = 4;
      ok(ibv_modify_qp(me.qp, s, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC));
    }
  }
  for (const side of ends) {
    for (const e of side) {
      ok(ibv_destroy_qp(e.qp));
      ok(ibv_dereg_mr(e.mr));
      for (const c of e.cqs) ok(ibv_destroy_cq(c));
    }
  }
  pds.forEach((p) => ok(ibv_dealloc_pd(p)));
  ctxs.forEach((c) => ok(ibv_close_device(c)));
  await stopModel();
}

function ok(rc: number): void {
  if (rc !== 0) throw new Error(`objects bench: a verb returned ${rc}`);
}

export interface ObjectsBenchOptions {
  /** Calls per round for the per-verb figures. */
  calls?: number;
  rounds?: number;
  /** Also create 100 K QPs (the sim runtime only; a device with maxQp 131072 and 1 GiB of host memory). */
  big?: boolean;
  /** Realtime runtimes to measure beside the sim runtime (worker counts). */
  workers?: number[];
  /** Measure the sim runtime (default true). */
  sim?: boolean;
}

export async function benchObjects(opts: ObjectsBenchOptions = {}): Promise<ObjectsResult[]> {
  const calls = opts.calls ?? 1000;
  const rounds = opts.rounds ?? 5;
  const out: ObjectsResult[] = [];

  // Sim runtime.
  if (opts.sim !== false) {
    const seeds: number[] = [];
    for (let r = 0; r < rounds * 4 + 1; r++) {
      const t0 = now();
      await seedSetup();
      if (r > 0) seeds.push(1000 / (now() - t0));
    }
    await startSimModel({ ...twoHostConfig({ maxQp: 131072 }, 1 << 30), workers: 0 });
    const ctx = ibv_open_device(ibv_get_device_list()[0]!);
    const rows = verbRows(ctx, calls, rounds);
    rows.push(...manyQps(ctx, 10_000, 3));
    if (opts.big !== false) rows.push(...manyQps(ctx, 100_000, 3));
    const s = spread(seeds);
    rows.push({
      name: 'campaign seed setup: start 2 hosts, open, 6 QPs to RTS, CQs, MRs, teardown',
      unit: 'seeds/s',
      value: s,
      note: 'target ≥ 20 seeds/s per core overall',
    });
    ibv_close_device(ctx);
    await stopModel();
    out.push({ runtime: 'sim runtime (startSimModel)', rows });
  }
  // Realtime runtime: devices on the application's thread (0) or a worker (1).
  for (const workers of opts.workers ?? [0, 1]) {
    await restartModel({ ...twoHostConfig(), workers });
    const ctx = ibv_open_device(ibv_get_device_list()[0]!);
    const rows = verbRows(ctx, calls, rounds);
    rows.push(...manyQps(ctx, 10_000, 1, workers === 0));
    ibv_close_device(ctx);
    await stopModel();
    out.push({ runtime: `realtime runtime, workers: ${workers}`, rows });
  }
  return out;
}

export function printObjects(results: ObjectsResult[]): void {
  console.log('\n## object creation (min / median / max over repeats, beside the empty mailbox round trip)');
  const f = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
  for (const r of results) {
    console.log(`### ${r.runtime}`);
    for (const row of r.rows) {
      const v = row.value;
      console.log(`${row.name.padEnd(72)} ${`${f(v.min)} / ${f(v.median)} / ${f(v.max)}`.padStart(24)} ${row.unit.padEnd(8)} ${row.note}`);
    }
  }
}
