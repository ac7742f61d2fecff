/**
 * The server side of two-process.test.ts, in its own process with its own
 * model (RNIC_CONFIG: one device, a UDP cable to the parent's model). Talks
 * to the parent over the fork IPC channel:
 *
 *   → { type: 'started' }
 *   ← { type: 'newqp', id }                  a QP in INIT, its MR, a receive posted
 *   → { type: 'ready', id, qpn, gid, psn, addr, rkey, half }
 *   ← { type: 'connect', id, qpn, gid, psn }  → RTR → RTS
 *   → { type: 'connected', id }
 *   → { type: 'recv', id, status, byteLen, imm, flags, payload, region }   when a SEND lands
 *   ← { type: 'region', id } → { type: 'region', id, region }              the WRITE target now
 *   ← { type: 'echo', id, count }            answer the next `count` SENDs with the same bytes
 *   ← { type: 'counters', id } → { type: 'counters', id, counters }       rnic_read_counters
 *   ← { type: 'exit' }                        clean up and exit
 *
 * Its MR: [0, HALF) is the parent's WRITE target (zeroed), [HALF, 2·HALF)
 * holds pattern(HALF, 77) for the parent's READ. Uses the verbs API only.
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
  ibv_alloc_pd,
  ibv_close_device,
  ibv_create_cq,
  ibv_create_qp,
  ibv_get_device_list,
  ibv_modify_qp,
  ibv_open_device,
  ibv_poll_cq,
  ibv_post_recv,
  ibv_post_send,
  rnic_read_counters,
  IBV_SEND_SIGNALED,
  IBV_WR_SEND,
  ibv_query_gid,
  ibv_reg_mr,
  newGid,
  newQpAttr,
  newWcArray,
  rnic_alloc_buf,
} from '../../src/driver/verbs/index.js';
import type { ibv_cq, ibv_qp } from '../../src/driver/verbs/index.js';

const HALF = Number(process.env.E2E_HALF ?? 65536);
const RECV_LEN = 16384;
const GID_INDEX = 3;
const PSN = 0x4242;

function pattern(len: number, seed: number): Uint8Array {
  const out = new Uint8Array(len);
  let x = (seed * 2654435761 + 12345) >>> 0;
  for (let i = 0; i < len; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = (x >>> 16) & 0xff;
  }
  return out;
}

function send(m: unknown): void {
  process.send!(m);
}

function must(rc: number, what: string): void {
  if (rc !== 0) throw new Error(`${what} failed: ${rc}`);
}

const hex = (u: Uint8Array) => Buffer.from(u).toString('hex');

interface Session {
  id: number;
  qp: ibv_qp;
  cq: ibv_cq;
  region: Uint8Array;
  rbuf: Uint8Array;
  reported: boolean;
  /** Echo mode: receives left to answer with a SEND of the same bytes. */
  echo: number;
  rlkey: number;
  raddr: bigint;
}

async function main(): Promise<void> {
  const devs = ibv_get_device_list();
  if (devs.length !== 1) throw new Error(`expected one device, got ${devs.map((d) => d.name).join(', ')}`);
  const ctx = ibv_open_device(devs[0]!);
  const pd = ibv_alloc_pd(ctx);
  const gid = newGid();
  must(ibv_query_gid(ctx, 1, GID_INDEX, gid), 'ibv_query_gid');
  const sessions = new Map<number, Session>();
  // The devices answer at once; the UDP socket is bound a little later.
  await currentModel()?.cabled;

  /** A new RC QP in INIT with its MR and one receive posted. */
  function newSession(id: number): void {
    const cq = ibv_create_cq(ctx, 64, null, null, 0);
    const qp = ibv_create_qp(pd, {
      send_cq: cq,
      recv_cq: cq,
      cap: { max_send_wr: 16, max_recv_wr: 16, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 },
      qp_type: IBV_QPT_RC,
      sq_sig_all: 0,
    });
    const region = rnic_alloc_buf(ctx, 2 * HALF, 64);
    region.fill(0);
    region.set(pattern(HALF, 77), HALF);
    const mr = ibv_reg_mr(pd, region, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    const rbuf = rnic_alloc_buf(ctx, RECV_LEN, 64);
    const rmr = ibv_reg_mr(pd, rbuf, IBV_ACCESS_LOCAL_WRITE);
    const attr = newQpAttr();
    attr.qp_state = IBV_QPS_INIT;
    attr.port_num = 1;
    attr.pkey_index = 0;
    attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    must(ibv_modify_qp(qp, attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 'modify INIT');
    must(ibv_post_recv(qp, { wr_id: 1n, next: null, sg_list: [{ addr: rmr.addr, length: RECV_LEN, lkey: rmr.lkey }], num_sge: 1 }, {}), 'post_recv');
    sessions.set(id, { id, qp, cq, region, rbuf, reported: false, echo: 0, rlkey: rmr.lkey, raddr: rmr.addr });
    send({ type: 'ready', id, qpn: qp.qp_num, gid: hex(gid.raw), psn: PSN, addr: mr.addr.toString(), rkey: mr.rkey, half: HALF });
  }

  function connect(s: Session, m: { qpn: number; gid: string; psn: number }): void {
    const a = newQpAttr();
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = m.qpn;
    a.rq_psn = m.psn;
    a.max_dest_rd_atomic = 4;
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    a.ah_attr.port_num = 1;
    a.ah_attr.grh.dgid = { raw: Uint8Array.from(Buffer.from(m.gid, 'hex')) };
    a.ah_attr.grh.sgid_index = GID_INDEX;
    a.ah_attr.grh.hop_limit = 64;
    must(
      ibv_modify_qp(s.qp, a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
      'modify RTR',
    );
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = PSN;
    // ~17 s: the test is about bytes crossing processes, not about timing on a busy machine.
    a.timeout = 22;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 4;
    must(ibv_modify_qp(s.qp, a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC), 'modify RTS');
    send({ type: 'connected', id: s.id });
  }

  let stop = false;
  process.on('message', (m: { type: string; id: number; qpn: number; gid: string; psn: number }) => {
    try {
      if (m.type === 'newqp') newSession(m.id);
      else if (m.type === 'connect') connect(sessions.get(m.id)!, m);
      else if (m.type === 'region') send({ type: 'region', id: m.id, region: hex(sessions.get(m.id)!.region.subarray(0, HALF)) });
      else if (m.type === 'echo') {
        const s = sessions.get(m.id)!;
        s.echo = (m as unknown as { count: number }).count;
        s.reported = true;
      } else if (m.type === 'counters')
        send({ type: 'counters', id: m.id, counters: Object.fromEntries(Object.entries(rnic_read_counters(ctx)).map(([k, v]) => [k, String(v)])) });
      else if (m.type === 'exit') stop = true;
    } catch (e) {
      send({ type: 'error', message: `${(e as Error).message}\n${(e as Error).stack}` });
    }
  });
  send({ type: 'started' });

  // Report each session's first receive (the parent's SEND), with the WRITE target's bytes then.
  const wc = newWcArray(4);
  const deadline = Date.now() + 600_000;
  while (!stop) {
    for (const s of sessions.values()) {
      if (s.echo > 0) {
        const n = ibv_poll_cq(s.cq, 4, wc);
        if (n < 0) throw new Error(`ibv_poll_cq: ${n}`);
        for (let i = 0; i < n; i++) {
          const w = wc[i]!;
          if (w.status !== 0) throw new Error(`echo: completion status ${w.status}`);
          if (w.wr_id !== 1n) continue; // our SEND done
          must(ibv_post_recv(s.qp, { wr_id: 1n, next: null, sg_list: [{ addr: s.raddr, length: RECV_LEN, lkey: s.rlkey }], num_sge: 1 }, {}), 'post_recv');
          must(
            ibv_post_send(
              s.qp,
              {
                wr_id: 2n,
                next: null,
                sg_list: [{ addr: s.raddr, length: w.byte_len, lkey: s.rlkey }],
                num_sge: 1,
                opcode: IBV_WR_SEND,
                send_flags: IBV_SEND_SIGNALED,
              },
              {},
            ),
            'post_send',
          );
          s.echo--;
        }
        continue;
      }
      if (s.reported) continue;
      const n = ibv_poll_cq(s.cq, 4, wc);
      if (n < 0) throw new Error(`ibv_poll_cq: ${n}`);
      if (n > 0) {
        const w = wc[0]!;
        send({
          type: 'recv',
          id: s.id,
          status: w.status,
          byteLen: w.byte_len,
          imm: w.imm_data >>> 0,
          flags: w.wc_flags,
          wrId: String(w.wr_id),
          payload: hex(s.rbuf.subarray(0, Math.min(w.byte_len, RECV_LEN))),
          region: hex(s.region.subarray(0, HALF)),
        });
        s.reported = true;
      }
    }
    if (Date.now() > deadline) throw new Error('the parent never finished');
    await new Promise((r) => ([...sessions.values()].some((x) => x.echo > 0) ? setImmediate(r) : setTimeout(r, 1)));
  }
  ibv_close_device(ctx);
  await stopModel();
}

main().then(
  () => process.disconnect(),
  (e: Error) => {
    send({ type: 'error', message: `${e.message}\n${e.stack}` });
    process.exitCode = 1;
    process.disconnect();
  },
);
