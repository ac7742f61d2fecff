/**
 * Memory windows as a state machine: thousands of seeded random binds
 * (type 1 through ibv_bind_mw, type 2 through IBV_WR_BIND_MW), local and
 * remote invalidations, remote WRITEs and READs through current, stale and
 * foreign keys, window reallocation and MR deregistration attempts, all
 * through the verbs API against the model, each checked against a
 * reference model of the IBTA rules written here independently of the
 * device (windows VALID / FREE / freed; bound range, rights, MR and QP; the
 * MR's bound-window count). Every completion status, every post-time
 * errno, every errno of ibv_dereg_mr, and the bytes of the MR (a shadow
 * copy follows every successful WRITE) must match the reference.
 *
 * RNIC_MW_FUZZ_SEED and RNIC_MW_FUZZ_CASES change the run; the seed and the
 * case number are in every failure.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IBV_ACCESS_LOCAL_WRITE,
  IBV_ACCESS_MW_BIND,
  IBV_ACCESS_REMOTE_ATOMIC,
  IBV_ACCESS_REMOTE_READ,
  IBV_ACCESS_REMOTE_WRITE,
  IBV_ACCESS_ZERO_BASED,
  IBV_MW_TYPE_1,
  IBV_MW_TYPE_2,
  IBV_QP_STATE,
  IBV_QPS_RESET,
  IBV_QPT_RC,
  IBV_SEND_SIGNALED,
  IBV_WC_MW_BIND_ERR,
  IBV_WC_LOC_QP_OP_ERR,
  IBV_WC_REM_ACCESS_ERR,
  IBV_WC_REM_INV_REQ_ERR,
  IBV_WC_SUCCESS,
  IBV_WC_WITH_INV,
  IBV_WR_BIND_MW,
  IBV_WR_LOCAL_INV,
  IBV_WR_SEND_WITH_INV,
  errno,
  ibv_alloc_mw,
  ibv_alloc_pd,
  ibv_bind_mw,
  ibv_dealloc_mw,
  ibv_dealloc_pd,
  ibv_dereg_mr,
  ibv_inc_rkey,
  ibv_modify_qp,
  ibv_post_send,
  ibv_reg_mr,
  ibv_wc_status_str,
  newQpAttr,
} from '../../src/driver/verbs/index.js';
import type { ibv_mr, ibv_mw, ibv_pd, ibv_send_wr } from '../../src/driver/verbs/index.js';
import * as H from './harness.js';
import { seededRandom } from '../seeded.js';

const SEED = Number(process.env.RNIC_MW_FUZZ_SEED ?? 0x3a7c1);
const CASES = Number(process.env.RNIC_MW_FUZZ_CASES ?? 3000);
const MR_LEN = 2048;
const RR = IBV_ACCESS_REMOTE_READ;
const RW = IBV_ACCESS_REMOTE_WRITE;
const RA = IBV_ACCESS_REMOTE_ATOMIC;
const ZB = IBV_ACCESS_ZERO_BASED;

const prng = seededRandom;

// ---------------------------------------------------------------------------
// The reference model
// ---------------------------------------------------------------------------

interface RefMr {
  name: string;
  region: H.Region | null;
  mr: ibv_mr;
  access: number;
  pd: ibv_pd;
  /** Windows bound to it. */
  windows: number;
}

interface Binding {
  mr: RefMr;
  /** Window start as an MR address, and its length. */
  addr: bigint;
  len: number;
  access: number;
  /** The pair whose B QP a type 2 window is bound to (-1: type 1). */
  pair: number;
}

interface RefMw {
  mw: ibv_mw;
  type: number;
  pd: ibv_pd;
  /** The key the device holds (a bind replaces its low byte). */
  key: number;
  /** Type 2: false = FREE. Type 1 is always VALID while allocated. */
  valid: boolean;
  bound: Binding | null;
  /** Keys it had before (stale keys to try). */
  old: number[];
}

function unbind(w: RefMw): void {
  if (w.bound) w.bound.mr.windows--;
  w.bound = null;
}

/** Does the window grant `needed` over [va, va+len) to a request on `pair`? Returns the MR offset or -1. */
function windowAccess(w: RefMw, pair: number, qpPd: ibv_pd, va: bigint, len: number, needed: number): number {
  const b = w.bound;
  if (!b || w.pd !== qpPd || (w.type === IBV_MW_TYPE_2 && b.pair !== pair) || (b.access & needed) !== needed) return -1;
  const first = b.access & ZB ? b.addr + va : va;
  if (b.access & ZB ? va < 0n || va + BigInt(len) > BigInt(b.len) : va < b.addr || va + BigInt(len) > b.addr + BigInt(b.len)) return -1;
  return Number(first - b.mr.mr.addr);
}

/** The IBTA's bind rules (C10-72..75, o10-36.2.2, o10-37.2.30/40): can `w` be bound so on `pair`'s QP (PD `qpPd`)? */
function bindAllowed(w: RefMw, mr: RefMr | null, addr: bigint, len: number, access: number, qpPd: ibv_pd): boolean {
  if (access & ~(RR | RW | RA | ZB)) return false;
  if (w.type === IBV_MW_TYPE_1) {
    if (access & ZB) return false;
  } else {
    if (w.valid || w.pd !== qpPd || !mr || len === 0) return false;
  }
  if (!mr || len === 0) return true;
  if (mr.pd !== w.pd || !(mr.access & IBV_ACCESS_MW_BIND)) return false;
  if (access & (RW | RA) && !(mr.access & IBV_ACCESS_LOCAL_WRITE)) return false;
  return addr >= mr.mr.addr && addr + BigInt(len) <= mr.mr.addr + BigInt(mr.mr.length);
}

// ---------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------

describe('memory windows: seeded random bind / invalidate / access sequences against a reference model', () => {
  let f: H.Fabric;
  beforeAll(async () => {
    f = await H.openFabric(H.twoDeviceConfig(0));
  });
  afterAll(async () => {
    await f?.close();
  });

  it(`${CASES} cases (seed ${SEED}): every status, errno and byte as the reference says`, async () => {
    const rnd = prng(SEED);
    const int = (n: number) => Math.floor(rnd() * n);
    const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
    const b = f.b;
    const pd2 = ibv_alloc_pd(b.ctx);
    const pairs = [H.makePair(f, IBV_QPT_RC), H.makePair(f, IBV_QPT_RC)];
    const src = H.region(f.a, MR_LEN, H.ALL_ACCESS, { fill: (i) => (i * 7 + 3) & 0xff });
    const readBack = H.region(f.a, MR_LEN);
    const recvBuf = H.region(b, 64);
    // The MR whose bytes are followed, and MRs that break one rule each.
    const main = H.region(b, MR_LEN, H.ALL_ACCESS | IBV_ACCESS_MW_BIND);
    const shadow = new Uint8Array(MR_LEN);
    const mrs: RefMr[] = [
      { name: 'main', region: main, mr: main.mr, access: H.ALL_ACCESS | IBV_ACCESS_MW_BIND, pd: b.pd, windows: 0 },
      { name: 'no MW_BIND', region: null, mr: H.region(b, 256, H.ALL_ACCESS).mr, access: H.ALL_ACCESS, pd: b.pd, windows: 0 },
      {
        name: 'no LOCAL_WRITE',
        region: null,
        mr: H.region(b, 256, IBV_ACCESS_MW_BIND | RR).mr,
        access: IBV_ACCESS_MW_BIND | RR,
        pd: b.pd,
        windows: 0,
      },
    ];
    const otherBuf = H.region(b, 256, 0).data;
    const otherPdMr: RefMr = {
      name: 'other PD',
      region: null,
      mr: ibv_reg_mr(pd2, otherBuf, H.ALL_ACCESS | IBV_ACCESS_MW_BIND),
      access: 0,
      pd: pd2,
      windows: 0,
    };
    otherPdMr.access = H.ALL_ACCESS | IBV_ACCESS_MW_BIND;
    mrs.push(otherPdMr);
    const newWindow = (slot: number): RefMw => {
      const type = pick([IBV_MW_TYPE_1, IBV_MW_TYPE_2]);
      const pd = slot === 0 ? pd2 : b.pd;
      const mw = ibv_alloc_mw(pd, type);
      return { mw, type, pd, key: mw.rkey, valid: type === IBV_MW_TYPE_1, bound: null, old: [] };
    };
    const windows: RefMw[] = Array.from({ length: 6 }, (_, i) => newWindow(i));
    const failures: string[] = [];
    const counts: Record<string, number> = {};
    let c = 0;
    const check = (what: string, got: unknown, want: unknown) => {
      if (got !== want && failures.length < 30) failures.push(`case ${c} (seed ${SEED}) ${what}: got ${String(got)}, want ${String(want)}`);
      const kind = `${what.split(':')[0]!} → ${String(want)}`;
      counts[kind] = (counts[kind] ?? 0) + 1;
    };
    const st = (s: number) => ibv_wc_status_str(s);

    /** After an error the pair's QPs are in ERR: reset and reconnect them, drop the flushed completions. */
    const recover = (k: number) => {
      const p = pairs[k]!;
      const attr = newQpAttr();
      attr.qp_state = IBV_QPS_RESET;
      for (const ep of [p.a, p.b]) expect(ibv_modify_qp(ep.qp, attr, IBV_QP_STATE)).toBe(0);
      for (const ep of [p.a, p.b]) for (const cq of [ep.scq, ep.rcq]) H.pollNow(cq, 64);
      H.connect(p.a, p.b);
    };
    /** A key to use: a window's current or old key, an MR's, or garbage. */
    const someKey = (): { key: number; w: RefMw | null } => {
      const r = int(10);
      const w = pick(windows);
      if (r < 6) return { key: w.key, w };
      if (r < 8 && w.old.length) return { key: pick(w.old), w: null };
      if (r === 8) return { key: main.mr.rkey, w: null };
      return { key: (w.key ^ (1 + int(255))) >>> 0, w: null };
    };
    const windowOf = (key: number) => windows.find((w) => w.key === key) ?? null;

    for (c = 0; c < CASES; c++) {
      const k = int(2);
      const p = pairs[k]!;
      const op = int(100);
      if (op < 30) {
        // Bind a window: to main (mostly) or an MR that breaks a rule; a range inside, straddling or outside.
        const slot = int(windows.length);
        const w = windows[slot]!;
        const mr = int(8) === 0 ? null : int(4) === 0 ? pick(mrs) : mrs[0]!;
        const mrLen = mr ? mr.mr.length : 0;
        const off = int(10) === 0 ? mrLen - int(64) : int(Math.max(1, mrLen));
        const len = int(12) === 0 ? 0 : 1 + int(Math.max(1, mrLen - Math.max(0, off)) + (int(6) === 0 ? 64 : 0));
        const addr = mr ? mr.mr.addr + BigInt(off) : 0n;
        let access = pick([RR, RW, RR | RW, RR | RW | RA, RA]);
        if (int(8) === 0) access |= ZB;
        if (int(30) === 0) access |= IBV_ACCESS_LOCAL_WRITE;
        if (w.type === IBV_MW_TYPE_1) {
          const driverKey = w.mw.rkey;
          const info = { mr: mr?.mr ?? null, addr: mr ? addr : 0n, length: BigInt(mr ? len : 0), mw_access_flags: access };
          const rc = ibv_bind_mw(p.b.qp, w.mw, { wr_id: BigInt(c), send_flags: IBV_SEND_SIGNALED, bind_info: info });
          // libibverbs' and rxe's post-time checks: an MR of another PD EPERM, zero-based EINVAL.
          const want = mr && mr.pd !== w.pd ? errno.EPERM : access & ZB ? errno.EINVAL : 0;
          check('bind1 post', rc, want);
          // The provider gives the window its next key once the WR is posted (ibv_inc_rkey), whatever the device then says.
          check('bind1 mw.rkey', w.mw.rkey, rc === 0 ? ibv_inc_rkey(driverKey) : driverKey);
          if (rc !== 0) continue;
          const ok = bindAllowed(w, mr, addr, mr ? len : 0, access, p.b.qp.pd!);
          const wc = await H.poll1(p.b.scq, 'type 1 bind');
          check(`bind1: ${mr?.name ?? 'null'} off ${off} len ${len} access ${access}`, st(wc.status), st(ok ? IBV_WC_SUCCESS : IBV_WC_MW_BIND_ERR));
          if (ok) {
            unbind(w);
            w.old.push(w.key);
            w.key = w.mw.rkey;
            if (mr && len > 0) {
              w.bound = { mr, addr, len, access, pair: -1 };
              mr.windows++;
            }
          } else recover(k);
        } else {
          const newKey = ((w.key & ~0xff) | int(256)) >>> 0;
          const wr: ibv_send_wr = {
            wr_id: BigInt(c),
            next: null,
            sg_list: null,
            num_sge: 0,
            opcode: IBV_WR_BIND_MW,
            send_flags: IBV_SEND_SIGNALED,
            bind_mw: { mw: w.mw, rkey: newKey, bind_info: { mr: mr?.mr ?? null, addr, length: BigInt(len), mw_access_flags: access } },
          };
          check('bind2 post', ibv_post_send(p.b.qp, wr, {}), 0);
          const ok = bindAllowed(w, mr, addr, len, access, p.b.qp.pd!);
          const wc = await H.poll1(p.b.scq, 'type 2 bind');
          check(
            `bind2: ${mr?.name ?? 'null'} off ${off} len ${len} access ${access} valid ${w.valid}`,
            st(wc.status),
            st(ok ? IBV_WC_SUCCESS : IBV_WC_MW_BIND_ERR),
          );
          if (ok) {
            w.old.push(w.key);
            w.key = newKey;
            w.valid = true;
            w.bound = { mr: mr!, addr, len, access, pair: k };
            mr!.windows++;
          } else recover(k);
        }
      } else if (op < 60) {
        // A remote WRITE or READ through some key, inside or around the window.
        const { key } = someKey();
        const w = windowOf(key);
        const write = int(2) === 0;
        const len = 1 + int(64);
        const b0 = w?.bound;
        const base = b0 ? (b0.access & ZB ? 0n : b0.addr) : main.mr.addr;
        const span = b0 ? b0.len : MR_LEN;
        const shifted = base + BigInt(int(span + 16)) - 8n;
        const va = shifted < 0n ? 0n : shifted;
        const needed = write ? RW : RR;
        let off = -1;
        if (w) off = windowAccess(w, k, p.b.qp.pd!, va, len, needed);
        else if (key === main.mr.rkey && va >= main.mr.addr && va + BigInt(len) <= main.mr.addr + BigInt(MR_LEN)) off = Number(va - main.mr.addr);
        const srcOff = int(MR_LEN - len);
        if (write) H.postSend(p.a, H.wrWrite({ wrId: BigInt(c), sge: [src.sge(srcOff, len)], remote: { addr: va, rkey: key } }));
        else H.postSend(p.a, H.wrRead({ wrId: BigInt(c), sge: [readBack.sge(0, len)], remote: { addr: va, rkey: key } }));
        const wc = await H.poll1(p.a.scq, 'remote access');
        const target = off >= 0 && w?.bound ? w.bound.mr : off >= 0 ? mrs[0]! : null;
        check(
          `${write ? 'write' : 'read'}: key ${key.toString(16)} window ${w ? 'yes' : 'no'}`,
          st(wc.status),
          st(off >= 0 ? IBV_WC_SUCCESS : IBV_WC_REM_ACCESS_ERR),
        );
        if (wc.status === IBV_WC_SUCCESS && off >= 0 && target === mrs[0]) {
          if (write) shadow.set(src.data.subarray(srcOff, srcOff + len), off);
          else check('read bytes', Buffer.compare(readBack.data.subarray(0, len), shadow.subarray(off, off + len)), 0);
        }
        if (wc.status !== IBV_WC_SUCCESS || off < 0) recover(k);
        check('main bytes', Buffer.compare(main.data, shadow), 0);
      } else if (op < 72) {
        // LOCAL_INV on the B QP: only a bound type 2 window of the QP's PD.
        const { key } = someKey();
        const w = windowOf(key);
        const wr: ibv_send_wr = {
          wr_id: BigInt(c),
          next: null,
          sg_list: null,
          num_sge: 0,
          opcode: IBV_WR_LOCAL_INV,
          send_flags: IBV_SEND_SIGNALED,
          invalidate_rkey: key,
        };
        H.postSend(p.b, wr);
        const ok = !!w && w.type === IBV_MW_TYPE_2 && w.valid && w.pd === p.b.qp.pd;
        const wc = await H.poll1(p.b.scq, 'LOCAL_INV');
        check('local_inv', st(wc.status), st(ok ? IBV_WC_SUCCESS : IBV_WC_LOC_QP_OP_ERR));
        if (ok) {
          unbind(w!);
          w!.valid = false;
        } else recover(k);
      } else if (op < 84) {
        // SEND_WITH_INV from A: the window must be a bound type 2 window of this pair's B QP.
        const { key } = someKey();
        const w = windowOf(key);
        H.postRecv(p.b, H.recvWr(BigInt(c), [recvBuf.sge(0, 64)]));
        H.postSend(p.a, {
          wr_id: BigInt(c),
          next: null,
          sg_list: [src.sge(0, 8)],
          num_sge: 1,
          opcode: IBV_WR_SEND_WITH_INV,
          send_flags: IBV_SEND_SIGNALED,
          invalidate_rkey: key,
        });
        const ok = !!w && w.type === IBV_MW_TYPE_2 && w.valid && w.pd === p.b.qp.pd && w.bound?.pair === k;
        const sw = await H.poll1(p.a.scq, 'SEND_WITH_INV');
        const rw = await H.poll1(p.b.rcq, 'its receive');
        check('send_inv requester', st(sw.status), st(ok ? IBV_WC_SUCCESS : IBV_WC_REM_INV_REQ_ERR));
        check('send_inv responder', st(rw.status), st(ok ? IBV_WC_SUCCESS : IBV_WC_REM_INV_REQ_ERR));
        if (ok) {
          check('send_inv flags', rw.wc_flags & IBV_WC_WITH_INV, IBV_WC_WITH_INV);
          check('send_inv rkey', rw.invalidated_rkey >>> 0, key);
          unbind(w!);
          w!.valid = false;
        } else recover(k);
      } else if (op < 92) {
        // Replace a window: dealloc (bound or not) and allocate a fresh one of a random type.
        const slot = int(windows.length);
        const w = windows[slot]!;
        check('dealloc', ibv_dealloc_mw(w.mw), 0);
        unbind(w);
        windows[slot] = newWindow(slot);
      } else {
        // Deregister main: EBUSY while windows are bound to it; else it goes, and is registered again.
        const m = mrs[0]!;
        const rc = ibv_dereg_mr(m.mr);
        check(`dereg with ${m.windows} windows`, rc, m.windows > 0 ? errno.EBUSY : 0);
        if (rc === 0) {
          m.mr = ibv_reg_mr(b.pd, main.data, m.access);
          (main as { mr: ibv_mr }).mr = m.mr;
        }
      }
    }
    expect(failures, `counts ${JSON.stringify(counts)}`).toEqual([]);
    // Every kind of step ran, and the state-changing ones both succeeded and failed somewhere in the run.
    const ok = st(IBV_WC_SUCCESS);
    for (const kind of ['bind1', 'bind2', 'write', 'read', 'local_inv', 'send_inv requester']) {
      expect(counts[`${kind} → ${ok}`] ?? 0, `${kind} succeeding (${JSON.stringify(counts)})`).toBeGreaterThan(0);
      expect(
        Object.keys(counts).some((x) => x.startsWith(`${kind} → `) && x !== `${kind} → ${ok}`),
        `${kind} failing (${JSON.stringify(counts)})`,
      ).toBe(true);
    }
    expect(counts['dereg with 0 windows → 0'] ?? 0, 'a deregistration that succeeds').toBeGreaterThan(0);
    expect(
      Object.keys(counts).some((x) => /^dereg with [1-9]/.test(x)),
      'a deregistration refused with EBUSY',
    ).toBe(true);
    expect(counts['dealloc → 0'] ?? 0).toBeGreaterThan(0);
    for (const w of windows) ibv_dealloc_mw(w.mw);
    ibv_dereg_mr(otherPdMr.mr);
    ibv_dealloc_pd(pd2);
  }, 600_000);
});
