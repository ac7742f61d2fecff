/**
 * XRC domains (ibv_open_xrcd / ibv_close_xrcd), porting the domain part of
 * rdma-core's tests/test_xrc.py: opens of one file share a domain, fd -1
 * gives a private one, and each refusal with the errno the kernel
 * (ib_uverbs_open_xrcd) or libibverbs (ibv_cmd_open_xrcd) gives. Then a
 * seeded random sequence of opens and closes over a few files and two
 * contexts of one device, checked against a small reference model of the
 * kernel's per-device inode table, and the device's maxXrcd limit.
 *
 * RNIC_XRCD_FUZZ_SEED and RNIC_XRCD_FUZZ_CASES change the random run.
 */
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IBV_XRCD_INIT_ATTR_FD,
  IBV_XRCD_INIT_ATTR_OFLAGS,
  IBV_XRCD_INIT_ATTR_RESERVED,
  O_CREAT,
  O_EXCL,
  errno,
  ibv_close_device,
  ibv_close_xrcd,
  ibv_get_device_list,
  ibv_get_device_name,
  ibv_open_device,
  ibv_open_xrcd,
  VerbsError,
} from '../../src/driver/verbs/index.js';
import type { ibv_context, ibv_xrcd } from '../../src/driver/verbs/index.js';
import * as H from './harness.js';

const MASK = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
const SEED = Number(process.env.RNIC_XRCD_FUZZ_SEED ?? 0x13c1);
const CASES = Number(process.env.RNIC_XRCD_FUZZ_CASES ?? 2000);
const MAX_XRCD = 6;

/** The device's domain number behind a handle (the model provider's ModelXrcd). */
const xrcdn = (x: ibv_xrcd) => (x as unknown as { xrcdn: number }).xrcdn;

function errnoOf(fn: () => unknown): number {
  try {
    fn();
    return 0;
  } catch (e) {
    if (e instanceof VerbsError) return e.errno;
    throw e;
  }
}

function openCtx(name: string): ibv_context {
  const dev = ibv_get_device_list().find((d) => ibv_get_device_name(d) === name)!;
  return ibv_open_device(dev);
}

describe('XRC domains', () => {
  let f: H.Fabric;
  let dir: string;
  const files: string[] = [];
  const fds: number[] = [];
  beforeAll(async () => {
    f = await H.openFabric(H.twoDeviceConfig(0, (c) => void (c.devices[0]!.caps = { maxXrcd: MAX_XRCD })));
    dir = mkdtempSync(join(tmpdir(), 'rnic-xrcd-'));
    for (let i = 0; i < 3; i++) {
      const p = join(dir, `f${i}`);
      writeFileSync(p, '');
      files.push(p);
      fds.push(openSync(p, 'r'));
    }
  });
  afterAll(async () => {
    for (const fd of fds) closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
    await f?.close();
  });

  const open = (ctx: ibv_context, fd: number, oflags: number, comp_mask = MASK) => ibv_open_xrcd(ctx, { comp_mask, fd, oflags });

  it('opens of one file share a domain (also through another fd of the same file); another file or fd -1 gets its own', () => {
    const a = open(f.a.ctx, fds[0]!, O_CREAT);
    const fd2 = openSync(files[0]!, 'r');
    try {
      const b = open(f.a.ctx, fd2, 0);
      const c = open(f.a.ctx, fds[1]!, O_CREAT);
      const p1 = open(f.a.ctx, -1, 0);
      const p2 = open(f.a.ctx, -1, O_CREAT | O_EXCL);
      expect(a).not.toBe(b);
      expect(a.context).toBe(f.a.ctx);
      expect(xrcdn(b)).toBe(xrcdn(a));
      expect(new Set([xrcdn(a), xrcdn(c), xrcdn(p1), xrcdn(p2)]).size).toBe(4);
      // Closing one open keeps the domain for the other: a reopen without O_CREAT finds it.
      expect(ibv_close_xrcd(a)).toBe(0);
      const d = open(f.a.ctx, fds[0]!, 0);
      expect(xrcdn(d)).toBe(xrcdn(b));
      for (const x of [b, c, p1, p2, d]) expect(ibv_close_xrcd(x)).toBe(0);
      // The last close freed it: the file has no domain any more.
      expect(errnoOf(() => open(f.a.ctx, fds[0]!, 0))).toBe(errno.EAGAIN);
    } finally {
      closeSync(fd2);
    }
  });

  it('two contexts of one device share the domain of a file; another device does not', () => {
    const ctx2 = openCtx('rnic0');
    try {
      const a = open(f.a.ctx, fds[2]!, O_CREAT);
      const b = open(ctx2, fds[2]!, 0);
      expect(xrcdn(b)).toBe(xrcdn(a));
      expect(errnoOf(() => open(f.b.ctx, fds[2]!, 0))).toBe(errno.EAGAIN);
      // Closing the second context drops its open only.
      expect(ibv_close_device(ctx2)).toBe(0);
      expect(ibv_close_xrcd(b)).toBe(errno.EINVAL);
      const c = open(f.a.ctx, fds[2]!, 0);
      expect(xrcdn(c)).toBe(xrcdn(a));
      expect(ibv_close_xrcd(a)).toBe(0);
      expect(ibv_close_xrcd(c)).toBe(0);
    } finally {
      try {
        ibv_close_device(ctx2);
      } catch {
        // closed above
      }
    }
  });

  it('refusals: the errno of the kernel and of libibverbs', () => {
    const fd = fds[1]!;
    // libibverbs: both FD and OFLAGS are required; an unknown bit is not supported.
    expect(errnoOf(() => open(f.a.ctx, fd, O_CREAT, IBV_XRCD_INIT_ATTR_FD))).toBe(errno.EINVAL);
    expect(errnoOf(() => open(f.a.ctx, fd, O_CREAT, IBV_XRCD_INIT_ATTR_OFLAGS))).toBe(errno.EINVAL);
    expect(errnoOf(() => open(f.a.ctx, fd, O_CREAT, MASK | IBV_XRCD_INIT_ATTR_RESERVED))).toBe(errno.EOPNOTSUPP);
    // The kernel: a closed fd EBADF, no domain without O_CREAT EAGAIN, O_EXCL on an existing domain EINVAL.
    const dead = openSync(files[1]!, 'r');
    closeSync(dead);
    expect(errnoOf(() => open(f.a.ctx, dead, O_CREAT))).toBe(errno.EBADF);
    expect(errnoOf(() => open(f.a.ctx, -2, O_CREAT))).toBe(errno.EBADF);
    expect(errnoOf(() => open(f.a.ctx, fd, 0))).toBe(errno.EAGAIN);
    const x = open(f.a.ctx, fd, O_CREAT | O_EXCL);
    expect(errnoOf(() => open(f.a.ctx, fd, O_CREAT | O_EXCL))).toBe(errno.EINVAL);
    // Not an object, not a context.
    expect(errnoOf(() => ibv_open_xrcd(f.a.ctx, null as never))).toBe(errno.EINVAL);
    expect(errnoOf(() => ibv_open_xrcd({} as never, { comp_mask: MASK, fd: -1, oflags: 0 }))).toBe(errno.EINVAL);
    expect(ibv_close_xrcd(x)).toBe(0);
    expect(ibv_close_xrcd(x)).toBe(errno.EINVAL);
    expect(ibv_close_xrcd({} as never)).toBe(errno.EINVAL);
    expect(ibv_close_xrcd(null as never)).toBe(errno.EINVAL);
  });

  it(`the device's maxXrcd (${MAX_XRCD}): one more domain is ENOMEM, an open of an existing one still works`, () => {
    const held = [open(f.a.ctx, fds[0]!, O_CREAT)];
    while (held.length < MAX_XRCD) held.push(open(f.a.ctx, -1, 0));
    expect(errnoOf(() => open(f.a.ctx, -1, 0))).toBe(errno.ENOMEM);
    expect(errnoOf(() => open(f.a.ctx, fds[1]!, O_CREAT))).toBe(errno.ENOMEM);
    const shared = open(f.a.ctx, fds[0]!, 0);
    expect(xrcdn(shared)).toBe(xrcdn(held[0]!));
    for (const x of [shared, ...held]) expect(ibv_close_xrcd(x)).toBe(0);
  });

  it(`${CASES} seeded random open / close sequences match a reference model of the kernel's inode table`, () => {
    const ctx2 = openCtx('rnic0');
    const ctxs = [f.a.ctx, ctx2];
    let s = SEED >>> 0;
    const rnd = (n: number) => {
      s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
      return s % n;
    };
    // Reference: per file, the open handles of its domain; fd -1 domains are counted only.
    const model = new Map<number, ibv_xrcd[]>();
    const priv: ibv_xrcd[] = [];
    const closed: ibv_xrcd[] = [];
    const live = () => model.size + priv.length;
    try {
      for (let i = 0; i < CASES; i++) {
        const what = `seed 0x${SEED.toString(16)} case ${i}`;
        const op = rnd(10);
        const ctx = ctxs[rnd(2)]!;
        if (op < 5) {
          const useFile = rnd(4) !== 0;
          const fi = rnd(fds.length);
          const oflags = [0, O_CREAT, O_CREAT | O_EXCL, O_EXCL][rnd(4)]!;
          const mask = [MASK, MASK, MASK, IBV_XRCD_INIT_ATTR_FD, MASK | IBV_XRCD_INIT_ATTR_RESERVED][rnd(5)]!;
          const fd = useFile ? fds[fi]! : -1;
          const have = useFile ? model.get(fi) : undefined;
          let want = 0;
          if (mask & IBV_XRCD_INIT_ATTR_RESERVED) want = errno.EOPNOTSUPP;
          else if (mask !== MASK) want = errno.EINVAL;
          else if (useFile && !have && !(oflags & O_CREAT)) want = errno.EAGAIN;
          else if (have && oflags & O_EXCL) want = errno.EINVAL;
          else if (!have && live() >= MAX_XRCD) want = errno.ENOMEM;
          let got: ibv_xrcd | null = null;
          const e = errnoOf(() => (got = open(ctx, fd, oflags, mask)));
          expect(e, `${what}: open(fd ${fd}, oflags 0x${oflags.toString(16)}, mask ${mask})`).toBe(want);
          if (got) {
            if (!useFile) priv.push(got);
            else if (have) {
              expect(xrcdn(got), `${what}: shares its file's domain`).toBe(xrcdn(have[0]!));
              have.push(got);
            } else model.set(fi, [got]);
          }
        } else if (op < 9) {
          const all = [...[...model.values()].flat(), ...priv];
          if (all.length === 0) continue;
          const x = all[rnd(all.length)]!;
          expect(ibv_close_xrcd(x), `${what}: close`).toBe(0);
          closed.push(x);
          const pi = priv.indexOf(x);
          if (pi >= 0) priv.splice(pi, 1);
          for (const [k, hs] of model) {
            const j = hs.indexOf(x);
            if (j < 0) continue;
            hs.splice(j, 1);
            if (hs.length === 0) model.delete(k);
          }
        } else if (closed.length) {
          expect(ibv_close_xrcd(closed[rnd(closed.length)]!), `${what}: a second close`).toBe(errno.EINVAL);
        }
      }
    } finally {
      for (const x of [...[...model.values()].flat(), ...priv]) ibv_close_xrcd(x);
      ibv_close_device(ctx2);
    }
    // Everything was freed: the device holds MAX_XRCD new domains again.
    const again = Array.from({ length: MAX_XRCD }, () => open(f.a.ctx, -1, 0));
    for (const x of again) expect(ibv_close_xrcd(x)).toBe(0);
  });
});
