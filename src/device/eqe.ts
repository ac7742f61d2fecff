/**
 * Event queue entries and the EQ ring protocol.
 *
 * An EQ ring has 2^logSize entries of 32 bytes. It carries two kinds of
 * events: completion events (type EQE_TYPE_COMPLETION, resource = CQN: an
 * armed CQ got a CQE, ibv_get_cq_event) and asynchronous events (type =
 * the ibv_event_type value, resource = QPN / CQN / SRQN / port number, as
 * ibv_get_async_event reports them).
 *
 * Ownership works as for CQEs (cqe.ts): phase bit in the last byte, 1 on
 * the first lap, flipping every lap; the device writes the body, then
 * Atomics.store's the owner byte; the driver Atomics.load's it.
 * The EQ consumer counter lives in the EQ's BAR doorbell slot (bits 23:0,
 * modulo 2^24), written by the driver with updateEqCi(); bit 31 of that
 * write re-arms the EQ. After writing an EQE, the device fires the EQ's
 * interrupt vector if the EQ is armed, and disarms it (one interrupt per
 * arm). A full EQ drops the event and sets EqFlag.OVERFLOW.
 */
import {
  IBV_EVENT_CQ_ERR,
  IBV_EVENT_QP_FATAL,
  IBV_EVENT_QP_REQ_ERR,
  IBV_EVENT_QP_ACCESS_ERR,
  IBV_EVENT_COMM_EST,
  IBV_EVENT_SQ_DRAINED,
  IBV_EVENT_PATH_MIG,
  IBV_EVENT_PATH_MIG_ERR,
  IBV_EVENT_DEVICE_FATAL,
  IBV_EVENT_PORT_ACTIVE,
  IBV_EVENT_PORT_ERR,
  IBV_EVENT_LID_CHANGE,
  IBV_EVENT_PKEY_CHANGE,
  IBV_EVENT_SM_CHANGE,
  IBV_EVENT_SRQ_ERR,
  IBV_EVENT_SRQ_LIMIT_REACHED,
  IBV_EVENT_QP_LAST_WQE_REACHED,
  IBV_EVENT_CLIENT_REREGISTER,
  IBV_EVENT_GID_CHANGE,
  IBV_EVENT_WQ_FATAL,
} from './abi/constants.js';
import { CtxOff, EQC, EqFlag, type ContextTables } from './contexts.js';
import { ringPhase } from './cqe.js';
import type { HostMemory } from './host-memory.js';
import { defineLayout, reserved, u, u64 } from './layout.js';
import { DbKind, DbVal, raiseIrq, type Bar } from './registers.js';

export const EQE_SIZE = 32;
export const EQE_OWNER_OFFSET = 0x1f;
/** EQE type of a completion event (not an ibv_event_type value). */
export const EQE_TYPE_COMPLETION = 0x80;

const EVENT_NAMES: Readonly<Record<number, string>> = Object.freeze({
  [IBV_EVENT_CQ_ERR]: 'CQ_ERR',
  [IBV_EVENT_QP_FATAL]: 'QP_FATAL',
  [IBV_EVENT_QP_REQ_ERR]: 'QP_REQ_ERR',
  [IBV_EVENT_QP_ACCESS_ERR]: 'QP_ACCESS_ERR',
  [IBV_EVENT_COMM_EST]: 'COMM_EST',
  [IBV_EVENT_SQ_DRAINED]: 'SQ_DRAINED',
  [IBV_EVENT_PATH_MIG]: 'PATH_MIG',
  [IBV_EVENT_PATH_MIG_ERR]: 'PATH_MIG_ERR',
  [IBV_EVENT_DEVICE_FATAL]: 'DEVICE_FATAL',
  [IBV_EVENT_PORT_ACTIVE]: 'PORT_ACTIVE',
  [IBV_EVENT_PORT_ERR]: 'PORT_ERR',
  [IBV_EVENT_LID_CHANGE]: 'LID_CHANGE',
  [IBV_EVENT_PKEY_CHANGE]: 'PKEY_CHANGE',
  [IBV_EVENT_SM_CHANGE]: 'SM_CHANGE',
  [IBV_EVENT_SRQ_ERR]: 'SRQ_ERR',
  [IBV_EVENT_SRQ_LIMIT_REACHED]: 'SRQ_LIMIT_REACHED',
  [IBV_EVENT_QP_LAST_WQE_REACHED]: 'QP_LAST_WQE_REACHED',
  [IBV_EVENT_CLIENT_REREGISTER]: 'CLIENT_REREGISTER',
  [IBV_EVENT_GID_CHANGE]: 'GID_CHANGE',
  [IBV_EVENT_WQ_FATAL]: 'WQ_FATAL',
  [EQE_TYPE_COMPLETION]: 'COMPLETION',
});

export const EQE = defineLayout('eqe', 32, 'Event queue entry.', [
  u('type', 0x00, 0, 8, 'ibv_event_type (0..19) of an async event, or 0x80 COMPLETION', EVENT_NAMES),
  reserved(0x01, 8),
  reserved(0x02, 16),
  u(
    'resource',
    0x04,
    0,
    32,
    'CQN (COMPLETION, CQ_ERR), QPN (QP_* / COMM_EST / SQ_DRAINED / PATH_MIG* / LAST_WQE_REACHED), SRQN (SRQ_*), port number (PORT_* / LID / PKEY / SM / GID / CLIENT_REREGISTER), 0 (DEVICE_FATAL)',
  ),
  u('syndrome', 0x08, 0, 32, 'detail: for QP errors the ibv_wc_status that caused it; 0 otherwise'),
  reserved(0x0c, 32),
  u64('timestamp', 0x10, 'event time in device clock ticks'),
  reserved(0x18, 32),
  reserved(0x1c, 24),
  u('owner', 0x1f, 0, 1, 'phase bit, written last'),
  reserved(0x1f, 7, 1),
]);

/** Driver side: is EQE number `ci` ready? (Atomics.load of the owner byte.) */
export function eqeReady(mem: HostMemory, ringOff: number, ci: number, logSize: number): boolean {
  const off = ringOff + (ci & ((1 << logSize) - 1)) * EQE_SIZE;
  return (Atomics.load(mem.u8, off + EQE_OWNER_OFFSET) & 1) === ringPhase(ci, logSize);
}

/** Byte offset (into host memory) of EQE number `n`. */
export function eqeOffset(ringOff: number, n: number, logSize: number): number {
  return ringOff + (n & ((1 << logSize) - 1)) * EQE_SIZE;
}

/** Fire the EQ's interrupt if it is armed, consuming the arm. */
function fireIfArmed(t: ContextTables, bar: Bar, eq: number): boolean {
  const i32 = t.i32;
  const flagsW = (eq + CtxOff.EQ_FLAGS) >> 2;
  for (;;) {
    const fl = Atomics.load(i32, flagsW);
    if (!(fl & EqFlag.ARMED)) return false;
    if (Atomics.compareExchange(i32, flagsW, fl, fl & ~EqFlag.ARMED) === fl) {
      raiseIrq(bar, EQC.f.intVector.get(t.dv, eq));
      return true;
    }
  }
}

/**
 * Device side: append an event to EQ `eqn`, then fire its interrupt if
 * armed. Returns false (and sets EqFlag.OVERFLOW) if the EQ was full or
 * does not exist. Allocates nothing.
 */
export function eqPush(mem: HostMemory, t: ContextTables, bar: Bar, eqn: number, type: number, resource: number, syndrome = 0, timestamp = 0): boolean {
  const eq = t.eqByNumber(eqn);
  if (eq < 0) return false;
  const dv = t.dv;
  const i32 = t.i32;
  const logSize = EQC.f.logSize.get(dv, eq);
  const n = Atomics.add(i32, (eq + CtxOff.EQ_PRODUCER) >> 2, 1) >>> 0;
  const ci = Atomics.load(bar.i32, bar.slotBase[DbKind.EQ]! + eqn) & DbVal.CI_MASK;
  if (((n - ci) & DbVal.CI_MASK) >= 1 << logSize) {
    Atomics.sub(i32, (eq + CtxOff.EQ_PRODUCER) >> 2, 1);
    Atomics.or(i32, (eq + CtxOff.EQ_FLAGS) >> 2, EqFlag.OVERFLOW);
    return false;
  }
  const off = EQC.f.ringAddr.getNum(dv, eq) - mem.baseNum + (n & ((1 << logSize) - 1)) * EQE_SIZE;
  const h = mem.dv;
  h.setUint32(off + 0x00, type & 0xff, true);
  h.setUint32(off + 0x04, resource, true);
  h.setUint32(off + 0x08, syndrome, true);
  h.setUint32(off + 0x0c, 0, true);
  h.setUint32(off + 0x10, timestamp >>> 0, true);
  h.setUint32(off + 0x14, Math.floor(timestamp / 4294967296) >>> 0, true);
  h.setUint32(off + 0x18, 0, true);
  h.setUint16(off + 0x1c, 0, true);
  h.setUint8(off + 0x1e, 0);
  Atomics.store(mem.u8, off + EQE_OWNER_OFFSET, ringPhase(n, logSize));
  fireIfArmed(t, bar, eq);
  return true;
}

/**
 * Device side: handle an EQ doorbell (slot value `v`). With the arm bit,
 * arm the EQ; if EQEs beyond the reported consumer index already exist,
 * fire the interrupt at once. Returns true if it fired.
 */
export function eqDoorbell(t: ContextTables, bar: Bar, eqn: number, v: number): boolean {
  const eq = t.eqByNumber(eqn);
  if (eq < 0 || !(v & DbVal.ARM)) return false;
  const i32 = t.i32;
  Atomics.or(i32, (eq + CtxOff.EQ_FLAGS) >> 2, EqFlag.ARMED);
  const producer = Atomics.load(i32, (eq + CtxOff.EQ_PRODUCER) >> 2);
  if (((producer - (v & DbVal.CI_MASK)) & DbVal.CI_MASK) === 0) return false;
  return fireIfArmed(t, bar, eq);
}
