/**
 * Seeded random misuse of XRC domains, XRC SRQs, XRC send and receive QPs
 * and ibv_open_qp, against a small reference model of what must succeed
 * and which errno the rest gets. Each sequence starts from nothing, runs a
 * few random verbs, then tears everything down (the teardown is checked
 * too). The reference:
 *  - an XRC domain is shared by the opens of one file (fd) and private for
 *    fd -1; closing an open that is not the last always succeeds; the last
 *    one is EBUSY while XRC SRQs or XRC receive QPs use the domain;
 *  - an XRC receive QP lives while it has handles (its creator's and each
 *    ibv_open_qp's); ibv_open_qp needs an open XRC domain holding the QP
 *    (EINVAL otherwise, and for another qp_type or a mask without
 *    NUM | XRCD | TYPE), EOPNOTSUPP for unknown mask bits;
 *  - destroying a handle twice is EINVAL; posts on XRC receive QPs and
 *    receives on XRC send QPs are EINVAL; RESET→INIT needs the kernel's
 *    attributes (a Q_Key is EINVAL) and moves the one QP all handles share.
 */
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  errno,
  IBV_QP_ACCESS_FLAGS,
  IBV_QP_INIT_ATTR_PD,
  IBV_QP_INIT_ATTR_XRCD,
  IBV_QP_OPEN_ATTR_NUM,
  IBV_QP_OPEN_ATTR_TYPE,
  IBV_QP_OPEN_ATTR_XRCD,
  IBV_QP_PKEY_INDEX,
  IBV_QP_PORT,
  IBV_QP_QKEY,
  IBV_QP_STATE,
  IBV_QPS_INIT,
  IBV_QPT_XRC_RECV,
  IBV_QPT_XRC_SEND,
  IBV_SRQT_XRC,
  IBV_XRCD_INIT_ATTR_FD,
  IBV_XRCD_INIT_ATTR_OFLAGS,
  O_CREAT,
  ibv_close_xrcd,
  ibv_create_cq,
  ibv_create_qp_ex,
  ibv_create_srq_ex,
  ibv_destroy_cq,
  ibv_destroy_qp,
  ibv_destroy_srq,
  ibv_modify_qp,
  ibv_open_qp,
  ibv_open_xrcd,
  ibv_post_recv,
  ibv_post_send,
  newQpAttr,
  newQpCap,
} from '../../src/driver/verbs/index.js';
import type { ibv_cq, ibv_qp, ibv_srq, ibv_xrcd } from '../../src/driver/verbs/index.js';
import { seededRandom } from '../seeded.js';
import * as H from './harness.js';
import { ACCESS, XRC_SRQ_MASK, toSrq } from './xrc-setup.js';

const SEED = Number(process.env['RNIC_XRC_QP_FUZZ_SEED'] ?? 0x0c0ffee);
const SEQUENCES = Number(process.env['RNIC_XRC_QP_FUZZ_SEQUENCES'] ?? 1000);
const STEPS = 8;
const OPEN_MASK = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;

interface Domain {
  opens: number;
  /** XRC SRQs and receive QPs using it. */
  users: number;
}
interface Xrcd {
  x: ibv_xrcd;
  d: Domain;
  open: boolean;
}
interface RecvQp {
  qpn: number;
  d: Domain;
  handles: number;
  state: 'RESET' | 'INIT';
}
interface Handle {
  qp: ibv_qp;
  r: RecvQp;
  live: boolean;
}

const codeOf = (fn: () => unknown): string => {
  try {
    fn();
    return 'ok';
  } catch (e) {
    return (e as { code?: string }).code ?? String(e);
  }
};
const name = (n: number) => (n === 0 ? 'ok' : (Object.entries(errno).find(([, v]) => v === n)?.[0] ?? String(n)));

describe('XRC QPs: seeded random misuse against a reference model', () => {
  let f: H.Fabric;
  let dir: string;
  beforeAll(async () => {
    f = await H.openFabric(H.twoDeviceConfig(0));
    dir = mkdtempSync(join(tmpdir(), 'rnic-xrc-fuzz-'));
  });
  afterAll(async () => {
    await f?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it(`${SEQUENCES} random sequences of ${STEPS} verbs over domains, XRC SRQs, send / receive QPs and ibv_open_qp`, () => {
    const rnd = seededRandom(SEED);
    const int = (n: number) => Math.floor(rnd() * n);
    const pick = <T>(a: readonly T[]): T | undefined => (a.length ? a[int(a.length)] : undefined);
    const ctx = f.b.ctx;
    const counts: Record<string, number> = {};
    for (let seq = 0; seq < SEQUENCES; seq++) {
      const fd = openSync(join(dir, `domain-${seq % 4}`), 'a+');
      const fileDomain: Domain = { opens: 0, users: 0 };
      const xs: Xrcd[] = [];
      const srqs: { srq: ibv_srq; d: Domain }[] = [];
      const recvs: RecvQp[] = [];
      const handles: Handle[] = [];
      const sends: ibv_qp[] = [];
      const cq: ibv_cq = ibv_create_cq(ctx, 8, null, null, 0);
      const at = (step: number, what: string) => `seed 0x${SEED.toString(16)} sequence ${seq} step ${step}: ${what}`;
      try {
        for (let step = 0; step < STEPS; step++) {
          const op = int(9);
          counts[op] = (counts[op] ?? 0) + 1;
          if (op === 0) {
            // Open a domain: the file's (shared) or a private one.
            const shared = rnd() < 0.5;
            const x = ibv_open_xrcd(ctx, { comp_mask: IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS, fd: shared ? fd : -1, oflags: O_CREAT });
            const d = shared ? fileDomain : { opens: 0, users: 0 };
            d.opens++;
            xs.push({ x, d, open: true });
          } else if (op === 1) {
            const x = pick(xs);
            if (!x) continue;
            let srq: ibv_srq | null = null;
            const got = codeOf(() => {
              srq = ibv_create_srq_ex(ctx, {
                comp_mask: XRC_SRQ_MASK,
                srq_type: IBV_SRQT_XRC,
                pd: f.b.pd,
                xrcd: x.x,
                cq,
                srq_context: null,
                attr: { max_wr: 4, max_sge: 1, srq_limit: 0 },
              });
            });
            expect(got, at(step, `XRC SRQ in a domain ${x.open ? 'open' : 'closed'}`)).toBe(x.open ? 'ok' : 'EINVAL');
            if (srq) {
              srqs.push({ srq, d: x.d });
              x.d.users++;
            }
          } else if (op === 2) {
            const x = pick(xs);
            if (!x) continue;
            let qp: ibv_qp | null = null;
            const got = codeOf(() => {
              qp = ibv_create_qp_ex(ctx, {
                comp_mask: IBV_QP_INIT_ATTR_XRCD,
                xrcd: x.x,
                qp_type: IBV_QPT_XRC_RECV,
                send_cq: null,
                recv_cq: null,
                cap: newQpCap(),
                sq_sig_all: 0,
              });
            });
            expect(got, at(step, `XRC receive QP in a domain ${x.open ? 'open' : 'closed'}`)).toBe(x.open ? 'ok' : 'EINVAL');
            if (qp) {
              const r: RecvQp = { qpn: (qp as ibv_qp).qp_num, d: x.d, handles: 1, state: 'RESET' };
              recvs.push(r);
              handles.push({ qp, r, live: true });
              x.d.users++;
            }
          } else if (op === 3) {
            // ibv_open_qp, with now and then a wrong type or mask.
            const picked = pick(recvs);
            const x = pick(xs);
            if (!picked || !x) continue;
            // A destroyed QP's number may already belong to a newer one.
            const r = recvs.find((q) => q.qpn === picked.qpn && q.handles > 0) ?? picked;
            const flaw = int(6);
            const mask = flaw === 1 ? OPEN_MASK & ~IBV_QP_OPEN_ATTR_TYPE : flaw === 2 ? OPEN_MASK | 0x40 : OPEN_MASK;
            const type = flaw === 3 ? IBV_QPT_XRC_SEND : IBV_QPT_XRC_RECV;
            let qp: ibv_qp | null = null;
            const got = codeOf(() => {
              qp = ibv_open_qp(ctx, { comp_mask: mask, qp_num: r.qpn, xrcd: x.x, qp_type: type });
            });
            const want = flaw === 2 ? 'EOPNOTSUPP' : flaw === 1 || flaw === 3 || !x.open || r.handles === 0 || x.d !== r.d ? 'EINVAL' : 'ok';
            expect(
              got,
              at(
                step,
                `open QP ${r.qpn} (${r.handles} handles) through a domain ${x.open ? 'open' : 'closed'}, ${x.d === r.d ? 'its own' : 'another'}, flaw ${flaw}`,
              ),
            ).toBe(want);
            if (qp) {
              r.handles++;
              handles.push({ qp, r, live: true });
            }
          } else if (op === 4) {
            const h = pick(handles);
            if (!h) continue;
            expect(name(ibv_destroy_qp(h.qp)), at(step, `destroy a ${h.live ? 'live' : 'destroyed'} handle`)).toBe(h.live ? 'ok' : 'EINVAL');
            if (h.live) {
              h.live = false;
              if (--h.r.handles === 0) h.r.d.users--;
            }
          } else if (op === 5) {
            const x = pick(xs);
            if (!x) continue;
            const want = !x.open ? 'EINVAL' : x.d.opens > 1 || x.d.users === 0 ? 'ok' : 'EBUSY';
            expect(name(ibv_close_xrcd(x.x)), at(step, `close a domain open (${x.open}, opens ${x.d.opens}, users ${x.d.users})`)).toBe(want);
            if (want === 'ok') {
              x.open = false;
              x.d.opens--;
            }
          } else if (op === 6) {
            const e = pick(srqs);
            if (!e) continue;
            expect(ibv_destroy_srq(e.srq), at(step, 'destroy an XRC SRQ')).toBe(0);
            e.d.users--;
            srqs.splice(srqs.indexOf(e), 1);
          } else if (op === 7) {
            // An XRC send QP: created, refuses receives, destroyed later.
            if (rnd() < 0.5 || sends.length === 0) {
              const cap = newQpCap();
              cap.max_send_wr = 2;
              cap.max_send_sge = 1;
              sends.push(
                ibv_create_qp_ex(ctx, {
                  comp_mask: IBV_QP_INIT_ATTR_PD,
                  pd: f.b.pd,
                  qp_type: IBV_QPT_XRC_SEND,
                  send_cq: cq,
                  recv_cq: null,
                  cap,
                  sq_sig_all: 0,
                }),
              );
            }
            const s = pick(sends)!;
            expect(ibv_post_recv(s, H.recvWr(1n, [])), at(step, 'receive on an XRC send QP')).toBe(errno.EINVAL);
          } else {
            // A live handle: no posts; RESET→INIT with the right mask moves the QP every handle shares.
            const h = pick(handles.filter((x) => x.live));
            if (!h) continue;
            expect(ibv_post_send(h.qp, toSrq(H.wrSend({}), 1)), at(step, 'send on an XRC receive QP')).toBe(errno.EINVAL);
            expect(ibv_post_recv(h.qp, H.recvWr(1n, [])), at(step, 'receive on an XRC receive QP')).toBe(errno.EINVAL);
            const a = newQpAttr();
            a.qp_state = IBV_QPS_INIT;
            a.port_num = H.PORT;
            a.qp_access_flags = ACCESS;
            const good = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
            const withQkey = rnd() < 0.3;
            // RESET→INIT needs the three attributes; INIT→INIT takes them as optional; a Q_Key is never XRC's.
            const want = withQkey ? 'EINVAL' : 'ok';
            expect(
              name(ibv_modify_qp(h.qp, a, withQkey ? good | IBV_QP_QKEY : good)),
              at(step, `to INIT from ${h.r.state}${withQkey ? ' with a Q_Key' : ''}`),
            ).toBe(want);
            if (want === 'ok') h.r.state = 'INIT';
          }
        }
      } finally {
        // Teardown in the reference's order, each result checked: handles, SRQs, send QPs, CQ, domains.
        for (const h of handles) if (h.live) expect(ibv_destroy_qp(h.qp), `sequence ${seq}: teardown of a handle`).toBe(0);
        for (const e of srqs) expect(ibv_destroy_srq(e.srq), `sequence ${seq}: teardown of an SRQ`).toBe(0);
        for (const s of sends) expect(ibv_destroy_qp(s), `sequence ${seq}: teardown of a send QP`).toBe(0);
        expect(ibv_destroy_cq(cq), `sequence ${seq}: teardown of the CQ`).toBe(0);
        for (const x of xs) if (x.open) expect(ibv_close_xrcd(x.x), `sequence ${seq}: teardown of a domain`).toBe(0);
        // Every receive QP is gone with its last handle: its number opens nothing any more.
        for (const r of recvs) {
          const x = ibv_open_xrcd(ctx, { comp_mask: IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS, fd: -1, oflags: 0 });
          expect(
            codeOf(() => ibv_open_qp(ctx, { comp_mask: OPEN_MASK, qp_num: r.qpn, xrcd: x, qp_type: IBV_QPT_XRC_RECV })),
            `sequence ${seq}: QP ${r.qpn} after teardown`,
          ).toBe('EINVAL');
          ibv_close_xrcd(x);
        }
        closeSync(fd);
      }
    }
    // Every kind of step ran many times.
    for (let op = 0; op < 9; op++) expect(counts[op] ?? 0, `step kind ${op}`).toBeGreaterThan(SEQUENCES / 2);
  });
});
