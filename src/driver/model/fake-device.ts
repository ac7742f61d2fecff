/**
 * A test double of the device for the model provider's tests: the real
 * firmware on one thread (createTestbed: commands go through the mailbox
 * and the BAR and execute inline), plus just enough of a device to answer
 * doorbells — CQ arms (cqArm, then a completion EQE), EQ arms (eqDoorbell)
 * — and a hand that writes CQEs and EQEs the way the pipeline will
 * (cqPush / eqPush). It records the SQ doorbells it sees. It executes no
 * WQE: a test reads the WQEs back from host memory and plays the device.
 *
 * Not used by the provider itself; the runtime builds the real handles.
 */
import { IBV_EVENT_CQ_ERR } from '../../device/abi/constants.js';
import type { CapabilitiesConfig } from '../../device/capabilities.js';
import { CQC } from '../../device/contexts.js';
import { cqArm, CqeFields, CqPush, cqPush } from '../../device/cqe.js';
import { eqDoorbell, eqPush, EQE_TYPE_COMPLETION } from '../../device/eqe.js';
import { serviceCommandDoorbell } from '../../device/mailbox.js';
import { DbKind, drainDoorbells, irqCount, takeSummary } from '../../device/registers.js';
import { createTestbed, type Testbed } from '../../device/testbed.js';
import type { ModelDeviceHandle } from './handle.js';

export interface FakeCqe {
  wrId?: bigint;
  byteLen?: number;
  immData?: number;
  qpNum?: number;
  srcQp?: number;
  vendorErr?: number;
  wcFlags?: number;
  pkeyIndex?: number;
  slid?: number;
  wqeCounter?: number;
  status?: number;
  opcode?: number;
  sl?: number;
  dlidPathBits?: number;
  timestamp?: number;
  solicited?: boolean;
}

export interface FakeDevice {
  readonly tb: Testbed;
  readonly handle: ModelDeviceHandle;
  /** Every SQ doorbell the device saw: [qpn, producer counter]. */
  readonly sqDoorbells: [number, number][];
  /** Every CQ arm doorbell: [cqn, slot value]. */
  readonly cqArms: [number, number][];
  /** Complete into CQ `cqn` as the CQE writer does; raises the completion / CQ_ERR event. Returns CqPush bits. */
  complete(cqn: number, cqe: FakeCqe): number;
  /** Write an async event EQE to EQ `eqn` (and fire its vector if armed). */
  event(eqn: number, type: number, resource: number, syndrome?: number): boolean;
  /** The EQ a CQ reports to. */
  eqnOfCq(cqn: number): number;
  /** Interrupt waiters still pending. */
  pendingWaiters(): number;
}

let seq = 0;

export function createFakeDevice(opts: { name?: string; config?: CapabilitiesConfig; memBytes?: number; nodeGuid?: bigint } = {}): FakeDevice {
  const tb = createTestbed({ ...(opts.config ? { config: opts.config } : {}), memBytes: opts.memBytes ?? 16 << 20 });
  const { fw, bar } = tb;
  const t = fw.tables;
  const dmem = fw.mem;
  const sqDoorbells: [number, number][] = [];
  const cqArms: [number, number][] = [];
  const pairs = new Int32Array(256);
  const waiters: { v: number; seen: number; resolve: (n: number) => void }[] = [];

  const notify = () => {
    for (let i = waiters.length - 1; i >= 0; i--) {
      const w = waiters[i]!;
      const now = irqCount(bar, w.v);
      if (now !== w.seen) {
        waiters.splice(i, 1);
        w.resolve(now);
      }
    }
  };

  const eqnOfCq = (cqn: number) => {
    const cq = t.cqByNumber(cqn);
    return cq < 0 ? 0 : CQC.f.eqn.get(t.dv, cq);
  };

  const service = () => {
    serviceCommandDoorbell(fw, bar);
    const kinds = takeSummary(bar);
    if (kinds & (1 << DbKind.SQ)) {
      const n = drainDoorbells(bar, DbKind.SQ, pairs);
      for (let i = 0; i < n; i++) sqDoorbells.push([pairs[2 * i]!, pairs[2 * i + 1]! >>> 0]);
    }
    if (kinds & (1 << DbKind.RQ)) drainDoorbells(bar, DbKind.RQ, pairs);
    if (kinds & (1 << DbKind.SRQ)) drainDoorbells(bar, DbKind.SRQ, pairs);
    if (kinds & (1 << DbKind.CQ)) {
      const n = drainDoorbells(bar, DbKind.CQ, pairs);
      for (let i = 0; i < n; i++) {
        const cqn = pairs[2 * i]!;
        const v = pairs[2 * i + 1]!;
        cqArms.push([cqn, v >>> 0]);
        const cq = t.cqByNumber(cqn);
        if (cq >= 0 && cqArm(t, cq, v)) eqPush(dmem, t, bar, eqnOfCq(cqn), EQE_TYPE_COMPLETION, cqn);
      }
    }
    if (kinds & (1 << DbKind.EQ)) {
      const n = drainDoorbells(bar, DbKind.EQ, pairs);
      for (let i = 0; i < n; i++) eqDoorbell(t, bar, pairs[2 * i]!, pairs[2 * i + 1]!);
    }
    notify();
  };

  const handle: ModelDeviceHandle = {
    name: opts.name ?? `fake${seq++}`,
    nodeGuid: opts.nodeGuid ?? tb.caps.device.nodeGuid,
    mem: tb.mem,
    bar,
    counters: fw.counters,
    serviceInline: service,
    waitIrq(vector: number, seen: number): Promise<number> {
      const now = irqCount(bar, vector);
      if (now !== seen) return Promise.resolve(now);
      return new Promise((resolve) => waiters.push({ v: vector, seen, resolve }));
    },
  };

  const f = new CqeFields();
  return {
    tb,
    handle,
    sqDoorbells,
    cqArms,
    complete(cqn, c) {
      const cq = t.cqByNumber(cqn);
      if (cq < 0) throw new Error(`no CQ ${cqn}`);
      f.reset();
      const id = c.wrId ?? 0n;
      f.wrIdLo = Number(id & 0xffffffffn);
      f.wrIdHi = Number((id >> 32n) & 0xffffffffn);
      f.byteLen = c.byteLen ?? 0;
      f.immData = c.immData ?? 0;
      f.qpNum = c.qpNum ?? 0;
      f.srcQp = c.srcQp ?? 0;
      f.vendorErr = c.vendorErr ?? 0;
      f.wcFlags = c.wcFlags ?? 0;
      f.pkeyIndex = c.pkeyIndex ?? 0;
      f.slid = c.slid ?? 0;
      f.wqeCounter = c.wqeCounter ?? 0;
      f.status = c.status ?? 0;
      f.opcode = c.opcode ?? 0;
      f.sl = c.sl ?? 0;
      f.dlidPathBits = c.dlidPathBits ?? 0;
      f.timestamp = c.timestamp ?? 0;
      f.solicited = c.solicited ?? false;
      const r = cqPush(dmem, t, cq, f);
      if (r & CqPush.EVENT) eqPush(dmem, t, bar, eqnOfCq(cqn), EQE_TYPE_COMPLETION, cqn);
      if (r & CqPush.OVERFLOW) eqPush(dmem, t, bar, eqnOfCq(cqn), IBV_EVENT_CQ_ERR, cqn);
      notify();
      return r;
    },
    event(eqn, type, resource, syndrome = 0) {
      const ok = eqPush(dmem, t, bar, eqn, type, resource, syndrome);
      notify();
      return ok;
    },
    eqnOfCq,
    pendingWaiters: () => waiters.length,
  };
}
