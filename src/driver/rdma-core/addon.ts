/**
 * Loading the rdma-core provider's native addon (native/*.cc, built
 * by native/build.mjs at install). Loaded on first use; when it is missing
 * (no libibverbs-dev at install, another OS) or does not load (no
 * libibverbs.so.1 at run time), `rdmaCoreAddon()` is null and
 * `rdmaCoreUnavailable()` says why.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The functions the addon exports (native/rdma_core.cc, native/extended.cc; the conventions are at the top of rdma_core.cc). */
export interface RdmaCoreAddon {
  setScratch(wr: Uint8Array, wc: Uint8Array): void;
  getDeviceList(): NativeDevice[] | number;
  openDevice(name: string): { ptr: number; cmd_fd: number; async_fd: number; num_comp_vectors: number } | number;
  closeDevice(ctx: number): number;
  queryDevice(ctx: number): Record<string, number | bigint | string> | number;
  queryPort(ctx: number, port: number): Record<string, number> | number;
  queryGid(ctx: number, port: number, index: number): Uint8Array | number;
  queryPkey(ctx: number, port: number, index: number): number;
  allocPd(ctx: number): { ptr: number; handle: number } | number;
  deallocPd(pd: number): number;
  allocBuf(length: number, align: number): ArrayBuffer | number;
  regMr(pd: number, buf: Uint8Array, access: number): NativeMr | number;
  deregMr(mr: number): number;
  allocMw(pd: number, type: number): { ptr: number; rkey: number; handle: number } | number;
  deallocMw(mw: number): number;
  /** ibv_bind_mw (type 1): [rc, the window's rkey after]. */
  bindMw(qp: number, mw: number, mr: number, wrId: bigint, sendFlags: number, addr: bigint, length: bigint, access: number): [number, number];
  addrOf(buf: Uint8Array): bigint;
  createCompChannel(ctx: number): { ptr: number; fd: number } | number;
  destroyCompChannel(ch: number): number;
  createCq(ctx: number, cqe: number, ch: number, vector: number): { ptr: number; cqe: number; handle: number } | number;
  destroyCq(cq: number): number;
  reqNotifyCq(cq: number, solicited: number): number;
  getCqEvent(ch: number): number;
  ackCqEvents(cq: number, n: number): void;
  pollCq(cq: number, n: number): number;
  createSrq(pd: number, maxWr: number, maxSge: number, limit: number): { ptr: number; handle: number; max_wr: number; max_sge: number } | number;
  modifySrq(srq: number, maxWr: number, maxSge: number, limit: number, mask: number): number;
  querySrq(srq: number): [number, number, number] | number;
  destroySrq(srq: number): number;
  createQp(
    pd: number,
    sendCq: number,
    recvCq: number,
    srq: number,
    qpType: number,
    sqSigAll: number,
    maxSendWr: number,
    maxRecvWr: number,
    maxSendSge: number,
    maxRecvSge: number,
    maxInline: number,
  ): { ptr: number; qp_num: number; handle: number; cap: Record<string, number> } | number;
  modifyQp(qp: number, attr: object, mask: number): number;
  queryQp(qp: number, mask: number): { attr: Record<string, unknown>; init: Record<string, unknown> } | number;
  destroyQp(qp: number): number;
  postSend(qp: number, n: number): number;
  postRecv(qpOrSrq: number, n: number, srq: boolean): number;
  createAh(pd: number, attr: object): { ptr: number; handle: number } | number;
  destroyAh(ah: number): number;
  getAsyncEvent(ctx: number): { event_type: number; kind: 'cq' | 'qp' | 'srq' | 'wq' | 'port' | 'device'; ptr?: number; port_num?: number } | number;
  ackAsyncEvent(eventType: number, kind: string, ptrOrPort: number): void;
  watchFd(fd: number, cb: (status: number) => void): number;
  unwatchFd(id: number): void;
  // ---- the extended verbs (native/extended.cc)
  queryDeviceEx(ctx: number): ({ orig_attr: Record<string, number | bigint | string> } & Record<string, unknown>) | number;
  queryGidEx(
    ctx: number,
    port: number,
    index: number,
    flags: number,
  ): { gid: Uint8Array; gid_index: number; port_num: number; gid_type: number; ndev_ifindex: number } | number;
  queryRtValuesEx(ctx: number, compMask: number): { comp_mask: number; tv_sec: bigint; tv_nsec: bigint } | number;
  createCqEx(
    ctx: number,
    cqe: number,
    ch: number,
    vector: number,
    wcFlags: number,
    compMask: number,
    flags: number,
  ): { ptr: number; cqe: number; handle: number } | number;
  /** Extended wc records (56 bytes: PollCq's 48, then the completion timestamp): the count, or -errno. */
  pollCqEx(cq: number, n: number): number;
  resizeCq(cq: number, cqe: number): [number, number];
  modifyCq(cq: number, attrMask: number, cqCount: number, cqPeriod: number): number;
  createQpEx(
    ctx: number,
    pd: number,
    sendCq: number,
    recvCq: number,
    srq: number,
    qpType: number,
    sqSigAll: number,
    maxSendWr: number,
    maxRecvWr: number,
    maxSendSge: number,
    maxRecvSge: number,
    maxInline: number,
    compMask: number,
    createFlags: number,
    sendOpsFlags: number,
  ): { ptr: number; qp_num: number; handle: number; cap: Record<string, number>; ex: boolean } | number;
  /** The n send records of the scratch through ibv_wr_start .. ibv_wr_complete: all posted (0) or none. */
  postSendEx(qp: number, n: number): number;
  regMrIova(pd: number, buf: Uint8Array, iova: bigint, access: number): NativeMr | number;
  allocNullMr(pd: number): NativeMr | number;
  reregMr(mr: number, flags: number, pd: number, buf: Uint8Array | null, access: number): { rc: number; errno: number; mr?: NativeMr };
  attachMcast(qp: number, gid: Uint8Array, lid: number): number;
  detachMcast(qp: number, gid: Uint8Array, lid: number): number;
  modifyQpRateLimit(qp: number, rateLimit: number, maxBurst: number, typicalPkt: number, compMask: number): number;
  openXrcd(ctx: number, compMask: number, fd: number, oflags: number): { ptr: number } | number;
  closeXrcd(xrcd: number): number;
  createSrqXrc(
    ctx: number,
    pd: number,
    xrcd: number,
    cq: number,
    maxWr: number,
    maxSge: number,
    limit: number,
  ): { ptr: number; handle: number; max_wr: number; max_sge: number } | number;
  getSrqNum(srq: number): [number, number];
}

export interface NativeMr {
  ptr: number;
  addr: bigint;
  length: number;
  handle: number;
  lkey: number;
  rkey: number;
}

export interface NativeDevice {
  ptr: number;
  name: string;
  dev_name: string;
  dev_path: string;
  ibdev_path: string;
  node_type: number;
  transport_type: number;
  guid: bigint;
  /** ibv_get_device_index: the kernel's index, -1 where the kernel cannot tell. */
  index: number;
}

let addon: RdmaCoreAddon | null | undefined;
let why = '';

/** Where native/build.mjs puts the addon, from dist/src/driver/rdma-core or src/driver/rdma-core. */
function addonPath(): string | null {
  const here = dirname(fileURLToPath(import.meta.url));
  const rel = join('native', 'build', 'Release', 'rnic_rdma_core.node');
  for (const p of [join(here, rel), join(here, '..', '..', '..', '..', 'src', 'driver', 'rdma-core', rel)]) if (existsSync(p)) return p;
  return null;
}

export function rdmaCoreAddon(): RdmaCoreAddon | null {
  if (addon !== undefined) return addon;
  addon = null;
  const p = addonPath();
  if (!p) {
    why = 'the native addon is not built (install libibverbs-dev, then npm install or node src/driver/rdma-core/native/build.mjs)';
    return null;
  }
  try {
    addon = createRequire(import.meta.url)(p) as RdmaCoreAddon;
  } catch (e) {
    why = `the native addon does not load: ${(e as Error).message}`;
  }
  return addon;
}

/** Why the provider is unavailable, or null when the addon loads. */
export function rdmaCoreUnavailable(): string | null {
  return rdmaCoreAddon() ? null : why;
}
