/**
 * Opening and closing a model device (the provider's alloc_context /
 * free_context). Opening maps nothing new: the handle already gives the
 * driver its host memory and the BAR. It waits for DEVICE_STATUS.READY,
 * takes a mailbox page for a CommandChannel, reads the device and port
 * attributes, learns the ports' GIDs, and creates this context's event
 * queue — one EQ per context carries both its completion events and its
 * asynchronous events (section 8 of the device manual).
 *
 * Closing destroys what the application left behind, in reverse order of
 * dependence (QPs, SRQs, CQs, MRs, PDs, the EQ), as the kernel does when a
 * verbs file is closed, and frees every host allocation of the context,
 * including rnic_alloc_buf buffers.
 */
import { IBV_LINK_LAYER_ETHERNET, errno } from '../../device/abi/constants.js';
import { Cmd } from '../../device/commands.js';
import { EQE_SIZE } from '../../device/eqe.js';
import { CommandChannel } from '../../device/mailbox.js';
import { DevStatus, Reg } from '../../device/registers.js';
import type { Bar } from '../../device/registers.js';
import type { HostMemory } from '../../device/host-memory.js';
import { VerbsError } from '../verbs/errno-error.js';
import type { VerbsContextOps } from '../verbs/ops.js';
import type { ibv_context } from '../verbs/types.js';
import { model_cmd, model_cmd_or_throw } from './cmd.js';
import type { ModelIbvDevice } from './device.js';
import type { ModelDeviceHandle } from './handle.js';
import { macFromLinkLocalGid, neighLearn, type NeighSource } from './neigh.js';
import type { ModelAh, ModelCompChannel, ModelCq, ModelMr, ModelMw, ModelPd, ModelQp, ModelSrq, ModelXrcd } from './objects.js';
import { releaseXrcRecv } from './xrc-qp.js';
import { releaseDomain } from './xrcd.js';

/** log2 entries of a context's EQ: 4096 events of 32 bytes (128 KiB). */
export const MODEL_EQ_LOG_SIZE = 12;
/**
 * How long open waits for DEVICE_STATUS.READY when the device runs on another
 * thread. A device worker that is still loading its code on a loaded machine
 * is slow, not broken: wait as a driver waits for firmware to come up (mlx5
 * allows two minutes), sleeping on the status word meanwhile.
 */
const READY_TIMEOUT_MS = 120_000;

/** The device attributes the driver checks against (from QUERY_DEVICE at open). */
export interface DeviceLimits {
  readonly maxQpWr: number;
  readonly maxSge: number;
  readonly maxCqe: number;
  readonly maxSrqWr: number;
  readonly maxSrqSge: number;
  readonly maxInlineData: number;
  readonly maxAh: number;
  readonly physPortCnt: number;
  readonly numCompVectors: number;
}

export interface PortInfo {
  readonly portNum: number;
  readonly linkLayer: number;
  readonly gidTblLen: number;
  /** Populated GIDs from index 0 (reloaded after IBV_EVENT_GID_CHANGE). */
  gids: Uint8Array[];
  /** The port MAC, from its link-local GID (null on InfiniBand). */
  mac: Uint8Array | null;
  gidsValid: boolean;
}

/** An event read from the EQ that is not a completion event, kept until get_async_event. */
export interface RawAsyncEvent {
  readonly type: number;
  readonly resource: number;
}

let nextFd = 3;

export class ModelContext implements ibv_context {
  /** Set by the provider right after open. */
  ops!: VerbsContextOps;
  readonly cmd_fd: number;
  readonly async_fd: number;
  readonly num_comp_vectors: number;
  readonly handle: ModelDeviceHandle;
  readonly mem: HostMemory;
  readonly bar: Bar;
  readonly cmd: CommandChannel;
  readonly limits: DeviceLimits;
  readonly ports: PortInfo[] = [];

  // The context's event queue.
  eqn = 0;
  eqRingAddr = 0;
  eqRingOff = 0;
  readonly eqLogSize = MODEL_EQ_LOG_SIZE;
  /** EQ consumer counter. */
  eqCi = 0;
  /** Interrupt vector of the EQ. */
  readonly vector: number;

  // Objects by device number (the CQE / EQE → object lookups).
  readonly qps = new Map<number, ModelQp>();
  readonly cqs = new Map<number, ModelCq>();
  readonly srqs = new Map<number, ModelSrq>();
  // Everything else the context owns, for close.
  readonly pds = new Set<ModelPd>();
  readonly mrs = new Set<ModelMr>();
  readonly mws = new Set<ModelMw>();
  readonly xrcds = new Set<ModelXrcd>();
  readonly ahs = new Set<ModelAh>();
  readonly channels = new Set<ModelCompChannel>();
  /** Addresses of rnic_alloc_buf buffers. */
  readonly buffers = new Set<number>();
  readonly asyncEvents: RawAsyncEvent[] = [];
  nextAhHandle = 1;

  closed = false;
  /** The device was removed and its IBV_EVENT_DEVICE_FATAL handed out (ibv_get_async_event). */
  fatalReported = false;
  /** Resolves at close (wakes every waiter of this context). */
  readonly gone: Promise<void>;
  private markGone!: () => void;

  constructor(readonly device: ModelIbvDevice) {
    const h = device.handle;
    this.handle = h;
    this.mem = h.mem;
    this.bar = h.bar;
    this.cmd_fd = nextFd++;
    this.async_fd = nextFd++;
    this.gone = new Promise((r) => (this.markGone = r));
    waitReady(h);
    this.cmd = outOfMemory(() => new CommandChannel(h.mem, h.bar, h.serviceInline));
    try {
      const d = model_cmd_or_throw(this, Cmd.QUERY_DEVICE, {}, 'ibv_open_device');
      const n = (k: string) => d[k] as number;
      this.limits = Object.freeze({
        maxQpWr: n('maxQpWr'),
        maxSge: n('maxSge'),
        maxCqe: n('maxCqe'),
        maxSrqWr: n('maxSrqWr'),
        maxSrqSge: n('maxSrqSge'),
        maxInlineData: n('maxInlineData'),
        maxAh: n('maxAh'),
        physPortCnt: n('physPortCnt'),
        numCompVectors: n('numCompVectors'),
      });
      this.num_comp_vectors = this.limits.numCompVectors;
      this.vector = device.opened++ % Math.max(1, Math.min(this.num_comp_vectors, h.bar.numIrq));
      for (let p = 1; p <= this.limits.physPortCnt; p++) {
        const a = model_cmd_or_throw(this, Cmd.QUERY_PORT, { portNum: p }, 'ibv_open_device');
        const port: PortInfo = {
          portNum: p,
          linkLayer: a['linkLayer'] as number,
          gidTblLen: a['gidTblLen'] as number,
          gids: [],
          mac: null,
          gidsValid: false,
        };
        this.ports.push(port);
        model_port_gids(this, p);
      }
      const ring = outOfMemory(() => h.mem.alloc(EQE_SIZE << MODEL_EQ_LOG_SIZE, 4096));
      this.eqRingAddr = ring.addrNum;
      this.eqRingOff = ring.addrNum - h.mem.baseNum;
      const r = model_cmd(this, Cmd.CREATE_EQ, { ringAddr: ring.addr, logSize: MODEL_EQ_LOG_SIZE, intVector: this.vector });
      if (r.errno) {
        h.mem.free(ring.addrNum);
        throw new VerbsError(r.errno, `ibv_open_device: ${r.what}`);
      }
      this.eqn = r.out['eqn'] as number;
    } catch (e) {
      this.cmd.close();
      throw e;
    }
  }

  /** Called by close: resolve `gone`. */
  signalGone(): void {
    this.markGone();
  }
}

function waitReady(h: ModelDeviceHandle): void {
  const i32 = h.bar.i32;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const s = Atomics.load(i32, Reg.DEVICE_STATUS);
    if (s & DevStatus.FATAL) throw new VerbsError(errno.EIO, `ibv_open_device: ${h.name} is in a fatal state`);
    if (s & DevStatus.READY) return;
    const left = deadline - Date.now();
    if (left <= 0) throw new VerbsError(errno.ENODEV, `ibv_open_device: ${h.name} is not ready`);
    if (h.serviceInline) {
      // The device runs on this thread: let it act once more, then give up.
      h.serviceInline();
      if (Atomics.load(i32, Reg.DEVICE_STATUS) & (DevStatus.READY | DevStatus.FATAL)) continue;
      throw new VerbsError(errno.ENODEV, `ibv_open_device: ${h.name} is not ready`);
    }
    Atomics.wait(i32, Reg.DEVICE_STATUS, s, left);
  }
}

/** Open a context on a model device. Throws a VerbsError. */
export function model_open_device(dev: ModelIbvDevice): ModelContext {
  if (!dev.present) throw new VerbsError(errno.ENODEV, `ibv_open_device: ${dev.name} was removed`);
  return new ModelContext(dev);
}

/**
 * The populated GIDs of a port (QUERY_GID from index 0 until the first empty
 * entry), cached until a GID_CHANGE event. Also teaches the process-wide
 * neighbour table this port's addresses.
 */
export function model_port_gids(ctx: ModelContext, portNum: number): PortInfo | null {
  if (typeof portNum !== 'number') return null;
  const port = ctx.ports[portNum - 1];
  if (!port) return null;
  if (port.gidsValid) return port;
  const gids: Uint8Array[] = [];
  for (let i = 0; i < port.gidTblLen; i++) {
    const r = model_cmd(ctx, Cmd.QUERY_GID, { portNum, index: i });
    if (r.errno) break;
    const g = r.out['gid'] as Uint8Array;
    if (g.every((b) => b === 0)) break;
    gids.push(g);
  }
  port.gids = gids;
  port.mac = port.linkLayer === IBV_LINK_LAYER_ETHERNET && gids[0] ? macFromLinkLocalGid(gids[0]) : null;
  port.gidsValid = true;
  neighLearn(ctx.device.name, gids, port.mac);
  return port;
}

/** What neighResolve needs for one port of this context. */
export function model_neigh_source(ctx: ModelContext, portNum: number): NeighSource {
  const port = model_port_gids(ctx, portNum);
  const h = ctx.handle;
  return {
    ownGids: port?.gids ?? [],
    ownMac: port?.mac ?? null,
    resolveMac: h.resolveMac ? (p, g) => h.resolveMac!(p, g) : undefined,
  };
}

/**
 * ibv_open_device's allocations (mailbox, EQ ring) in host memory: a full
 * memory is ENOMEM, as the other verbs report it, not a DeviceError.
 */
function outOfMemory<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    if ((e as { code?: string }).code !== 'DEV_ERR_NO_MEMORY') throw e;
    throw new VerbsError(errno.ENOMEM, `ibv_open_device: ${(e as Error).message} (the device's host memory: its \`memory\` setting)`);
  }
}

/** Throws EINVAL (as a VerbsError) for a closed context. */
export function model_live(ctx: ModelContext, verb: string): void {
  if (!(ctx instanceof ModelContext)) throw new VerbsError(errno.EINVAL, `${verb}: not an ibv_context of the model provider`);
  if (ctx.closed) throw new VerbsError(errno.EINVAL, `${verb}: the context is closed`);
}

function freeQuiet(mem: HostMemory, addr: number): void {
  try {
    mem.free(addr);
  } catch {
    // already freed
  }
}

/**
 * ibv_close_device: destroy everything the context still owns, then the EQ
 * and the mailbox. Returns 0 (EINVAL if already closed).
 */
export function model_close_device(ibctx: ibv_context): number {
  const ctx = ibctx as ModelContext;
  if (!(ctx instanceof ModelContext) || ctx.closed) return errno.EINVAL;
  const mem = ctx.mem;
  for (const qp of ctx.qps.values()) {
    if (qp.destroyed) continue;
    // A handle on a shared XRC receive QP closes; the QP goes with its last handle.
    if (qp.xrcShare) {
      releaseXrcRecv(qp, qp.xrcShare);
      continue;
    }
    model_cmd(ctx, Cmd.DESTROY_QP, { qpn: qp.qp_num });
    qp.destroyed = true;
    for (const a of qp.allocations) freeQuiet(mem, a);
  }
  for (const ah of ctx.ahs) {
    ah.destroyed = true;
    ctx.device.ahCount--;
  }
  ctx.ahs.clear();
  for (const srq of ctx.srqs.values()) {
    model_cmd(ctx, Cmd.DESTROY_SRQ, { srqn: srq.srqn });
    srq.destroyed = true;
    freeQuiet(mem, srq.ringAddr);
    freeQuiet(mem, srq.dbrecAddr);
  }
  for (const cq of ctx.cqs.values()) {
    model_cmd(ctx, Cmd.DESTROY_CQ, { cqn: cq.cqn });
    cq.destroyed = true;
    freeQuiet(mem, cq.ringAddr);
    freeQuiet(mem, cq.dbrecAddr);
  }
  for (const ch of ctx.channels) {
    ch.destroyed = true;
    ch.markGone();
  }
  // Windows first: an MR with windows bound cannot be deregistered.
  for (const mw of ctx.mws) {
    model_cmd(ctx, Cmd.DEALLOC_MW, { key: mw.rkey });
    mw.destroyed = true;
  }
  ctx.mws.clear();
  for (const mr of ctx.mrs) {
    model_cmd(ctx, Cmd.DEREG_MR, { key: mr.lkey });
    mr.destroyed = true;
  }
  for (const pd of ctx.pds) {
    model_cmd(ctx, Cmd.DEALLOC_PD, { pdn: pd.pdn });
    pd.destroyed = true;
  }
  // After the SRQs and QPs that use them; an open of a shared domain just goes away.
  for (const x of ctx.xrcds) {
    releaseDomain(ctx, x.domain);
    x.destroyed = true;
  }
  ctx.xrcds.clear();
  model_cmd(ctx, Cmd.DESTROY_EQ, { eqn: ctx.eqn });
  freeQuiet(mem, ctx.eqRingAddr);
  for (const b of ctx.buffers) freeQuiet(mem, b);
  ctx.qps.clear();
  ctx.srqs.clear();
  ctx.cqs.clear();
  ctx.channels.clear();
  ctx.mrs.clear();
  ctx.pds.clear();
  // ctx.buffers stays: rnic_free_buf of one of them after the close is a no-op, of anything else EINVAL.
  ctx.asyncEvents.length = 0;
  ctx.cmd.close();
  ctx.closed = true;
  ctx.signalGone();
  return 0;
}
