/**
 * XRC domains: ibv_open_xrcd / ibv_close_xrcd as the kernel's uverbs layer
 * does them (ib_uverbs_open_xrcd, ib_uverbs_dealloc_xrcd). A domain opened
 * through a file is named by the file's inode: every open of the same inode
 * on the same device shares one device domain (ALLOC_XRCD once), and the
 * domain is freed (DEALLOC_XRCD) by the close that leaves it with no opens.
 * A domain opened with fd -1 is private to its one handle.
 *
 * Errors are the kernel's: EBADF for an fd that is not open, EAGAIN for an
 * inode with no domain yet and no O_CREAT, EINVAL for an inode that has one
 * and O_EXCL; libibverbs' own: EINVAL without both IBV_XRCD_INIT_ATTR_FD and
 * IBV_XRCD_INIT_ATTR_OFLAGS, EOPNOTSUPP for a comp_mask bit it does not know.
 */
import { fstatSync } from 'node:fs';
import { errno, IBV_XRCD_INIT_ATTR_FD, IBV_XRCD_INIT_ATTR_OFLAGS, IBV_XRCD_INIT_ATTR_RESERVED, O_CREAT, O_EXCL } from '../../device/abi/constants.js';
import { Cmd } from '../../device/commands.js';
import { VerbsError } from '../verbs/errno-error.js';
import type { ibv_context, ibv_xrcd, ibv_xrcd_init_attr } from '../verbs/types.js';
import { isU32 } from './check.js';
import { model_cmd, model_cmd_or_throw } from './cmd.js';
import { model_live, type ModelContext } from './context.js';
import type { ModelDeviceHandle } from './handle.js';
import { ModelXrcd, XrcdDomain } from './objects.js';

/** Per device: the domains of inodes ("dev:ino"), as the kernel's per-device xrcd tree. */
const byInode = new WeakMap<ModelDeviceHandle, Map<string, XrcdDomain>>();

function inodeOf(fd: number): string {
  try {
    const st = fstatSync(fd, { bigint: true });
    return `${st.dev}:${st.ino}`;
  } catch {
    throw new VerbsError(errno.EBADF, `ibv_open_xrcd: fd ${fd} is not an open file`);
  }
}

export function model_open_xrcd(ibctx: ibv_context, attr: ibv_xrcd_init_attr): ibv_xrcd {
  const ctx = ibctx as ModelContext;
  model_live(ctx, 'ibv_open_xrcd');
  if (typeof attr !== 'object' || attr === null) throw new VerbsError(errno.EINVAL, 'ibv_open_xrcd: xrcd_init_attr is not an object');
  const mask = attr.comp_mask;
  if (!isU32(mask)) throw new VerbsError(errno.EINVAL, `ibv_open_xrcd: comp_mask ${String(mask)} is not a u32`);
  if (mask >= IBV_XRCD_INIT_ATTR_RESERVED) throw new VerbsError(errno.EOPNOTSUPP, `ibv_open_xrcd: unknown comp_mask bits 0x${(mask & ~3).toString(16)}`);
  if (!(mask & IBV_XRCD_INIT_ATTR_FD) || !(mask & IBV_XRCD_INIT_ATTR_OFLAGS))
    throw new VerbsError(errno.EINVAL, 'ibv_open_xrcd: comp_mask needs both IBV_XRCD_INIT_ATTR_FD and IBV_XRCD_INIT_ATTR_OFLAGS');
  const { fd, oflags } = attr;
  if (!Number.isInteger(fd) || fd < -1 || fd > 0x7fffffff) throw new VerbsError(errno.EBADF, `ibv_open_xrcd: fd ${String(fd)} is not a file descriptor or -1`);
  if (!isU32(oflags)) throw new VerbsError(errno.EINVAL, `ibv_open_xrcd: oflags ${String(oflags)} is not a u32`);
  let table: Map<string, XrcdDomain> | undefined;
  let inode: string | null = null;
  let domain: XrcdDomain | undefined;
  if (fd !== -1) {
    inode = inodeOf(fd);
    table = byInode.get(ctx.handle);
    if (!table) byInode.set(ctx.handle, (table = new Map()));
    domain = table.get(inode);
    if (!domain && !(oflags & O_CREAT))
      throw new VerbsError(errno.EAGAIN, `ibv_open_xrcd: the file of fd ${fd} has no XRC domain yet and oflags lacks O_CREAT`);
    if (domain && oflags & O_EXCL)
      throw new VerbsError(errno.EINVAL, `ibv_open_xrcd: the file of fd ${fd} already has XRC domain ${domain.xrcdn} and oflags has O_EXCL`);
  }
  if (!domain) {
    const out = model_cmd_or_throw(ctx, Cmd.ALLOC_XRCD, {}, 'ibv_open_xrcd');
    domain = new XrcdDomain(out['xrcdn'] as number, inode);
    if (table && inode !== null) table.set(inode, domain);
  }
  domain.opens++;
  const xrcd = new ModelXrcd(ctx, domain);
  ctx.xrcds.add(xrcd);
  return xrcd;
}

export function model_close_xrcd(ibxrcd: ibv_xrcd): number {
  const x = ibxrcd as ModelXrcd;
  if (!(x instanceof ModelXrcd) || x.destroyed || x.context.closed) return errno.EINVAL;
  const r = releaseDomain(x.context, x.domain);
  if (r) return r;
  x.destroyed = true;
  x.context.xrcds.delete(x);
  return 0;
}

/**
 * One open of `d` goes away. The last one frees the device domain; while
 * XRC SRQs or receive QPs use it the device says BUSY (EBUSY) and the open
 * stays, as ib_dealloc_xrcd_user refuses a domain in use.
 */
export function releaseDomain(ctx: ModelContext, d: XrcdDomain): number {
  if (d.opens > 1) {
    d.opens--;
    return 0;
  }
  const r = model_cmd(ctx, Cmd.DEALLOC_XRCD, { xrcdn: d.xrcdn });
  if (r.errno) return r.errno;
  d.opens = 0;
  if (d.inode !== null) byInode.get(ctx.handle)?.delete(d.inode);
  return 0;
}
