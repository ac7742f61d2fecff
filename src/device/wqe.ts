/**
 * Work queue entries: the formats the driver writes into SQ, RQ and SRQ
 * rings in host memory and the device fetches by DMA.
 *
 * A ring has 2^logSize entries of a fixed stride of 2^logStride bytes
 * (≥ 64), both chosen by the driver at create time and given to
 * CREATE_QP / CREATE_SRQ. WQE number n (a free-running 32-bit producer
 * counter) lives at ring + (n mod 2^logSize) · stride.
 *
 * Send WQE: segments at FIXED offsets per QP type, so the device never
 * parses a variable header (the stride has to hold the worst case anyway):
 *
 *   RC / UC   0x00 control (32) | 0x20 remote address (16) | 0x30 atomic (16) | 0x40 data
 *   UD        0x00 control (32) | 0x20 UD address (48, with the full AV)    | 0x50 data
 *
 * Segments an opcode does not use are ignored (their bytes are don't-care).
 * "data" is either numDataSegs data segments of 16 bytes, or, when
 * sendFlags has IBV_SEND_INLINE, a 4-byte byte count followed by the bytes.
 *
 * Stride formula (send):  stride = max(64, 2^ceil(log2(H + D))) where
 *   H = 0x40 (RC/UC) or 0x50 (UD),
 *   D = max(16 · maxSendSge, maxInlineData > 0 ? roundUp16(4 + maxInlineData) : 0).
 * Receive / SRQ:  stride = max(64, 2^ceil(log2(16 + 16 · maxRecvSge))).
 *
 * Ordering (driver): write the whole WQE (plain stores), then publish it by
 * Atomics.store of the producer counter into the doorbell record, then ring
 * the doorbell (registers.ts). The device reads the record with Atomics.load
 * before it reads any WQE below it.
 */
import {
  IBV_QPT_UD,
  IBV_WR_ATOMIC_CMP_AND_SWP,
  IBV_WR_ATOMIC_FETCH_AND_ADD,
  IBV_WR_ATOMIC_WRITE,
  IBV_WR_BIND_MW,
  IBV_WR_FLUSH,
  IBV_WR_LOCAL_INV,
  IBV_WR_RDMA_READ,
  IBV_WR_RDMA_WRITE,
  IBV_WR_RDMA_WRITE_WITH_IMM,
  IBV_WR_SEND,
  IBV_WR_SEND_WITH_IMM,
  IBV_WR_SEND_WITH_INV,
  IBV_WR_TSO,
} from './abi/constants.js';
import { AV } from './av.js';
import { defineLayout, embed, reserved, u, u64 } from './layout.js';

const WR_OPCODE_NAMES: Readonly<Record<number, string>> = Object.freeze({
  [IBV_WR_RDMA_WRITE]: 'RDMA_WRITE',
  [IBV_WR_RDMA_WRITE_WITH_IMM]: 'RDMA_WRITE_WITH_IMM',
  [IBV_WR_SEND]: 'SEND',
  [IBV_WR_SEND_WITH_IMM]: 'SEND_WITH_IMM',
  [IBV_WR_RDMA_READ]: 'RDMA_READ',
  [IBV_WR_ATOMIC_CMP_AND_SWP]: 'ATOMIC_CMP_AND_SWP',
  [IBV_WR_ATOMIC_FETCH_AND_ADD]: 'ATOMIC_FETCH_AND_ADD',
  [IBV_WR_LOCAL_INV]: 'LOCAL_INV',
  [IBV_WR_BIND_MW]: 'BIND_MW',
  [IBV_WR_SEND_WITH_INV]: 'SEND_WITH_INV',
  [IBV_WR_TSO]: 'TSO',
  [IBV_WR_FLUSH]: 'FLUSH',
  [IBV_WR_ATOMIC_WRITE]: 'ATOMIC_WRITE',
});

/** Byte offsets of the send WQE segments. */
export const enum WqeOff {
  CTRL = 0x00,
  RADDR = 0x20,
  ATOMIC = 0x30,
  /** Data segments / inline data of RC and UC send WQEs. */
  RC_DATA = 0x40,
  UD = 0x20,
  /** Data segments / inline data of UD send WQEs. */
  UD_DATA = 0x50,
  /** Data segments of receive and SRQ WQEs. */
  RECV_DATA = 0x10,
  /** Inline bytes start this far after the inline header. */
  INLINE_BYTES = 0x04,
}

export const DATA_SEG_SIZE = 16;
export const MIN_WQE_STRIDE = 64;
/** Largest stride CREATE_QP / CREATE_SRQ accept. */
export const MAX_WQE_STRIDE = 4096;

export const SEND_CTRL = defineLayout('send-ctrl', 32, 'Send WQE control segment, at offset 0x00 of every send WQE.', [
  u64('wrId', 0x00, 'ibv_send_wr.wr_id, returned in the CQE'),
  u('opcode', 0x08, 0, 8, 'IBV_WR_* opcode', WR_OPCODE_NAMES),
  u('sendFlags', 0x09, 0, 8, 'IBV_SEND_*: FENCE 1, SIGNALED 2, SOLICITED 4, INLINE 8 (the inline flag: data is inline), IP_CSUM 16'),
  u('wqeIndex', 0x0a, 0, 16, 'the producer counter of this WQE mod 2^16 (a sanity tag the device may check)'),
  u('immData', 0x0c, 0, 32, 'imm_data (*_WITH_IMM) or invalidate_rkey (SEND_WITH_INV, LOCAL_INV); ImmDt on the wire carries these 4 bytes in memory order'),
  u('numDataSegs', 0x10, 0, 8, 'number of data segments (0 when inline)'),
  u('flushType', 0x11, 0, 8, 'FLUSH: placement type, the FETH bits 3..0 (IBV_FLUSH_GLOBAL 1, IBV_FLUSH_PERSISTENT 2)'),
  u('flushLevel', 0x12, 0, 8, 'FLUSH: selectivity level, the FETH bits 5..4 (IBV_FLUSH_RANGE 0, IBV_FLUSH_MR 1)'),
  reserved(0x13, 8),
  u('xrcSrqn', 0x14, 0, 24, 'XRC send QPs: the remote XRC SRQ (the XRCETH of every request packet); ignored by other QP types'),
  reserved(0x17, 8),
  reserved(0x18, 64),
]);

export const RADDR_SEG = defineLayout(
  'raddr-seg',
  16,
  'Remote address segment at 0x20 of RC/UC send WQEs: used by RDMA WRITE[_WITH_IMM], RDMA READ, the ATOMICs, ATOMIC_WRITE and FLUSH.',
  [
    u64('remoteAddr', 0x00, 'remote virtual address (in the remote MR iova space)'),
    u('rkey', 0x08, 0, 32, 'remote key'),
    u('length', 0x0c, 0, 32, 'FLUSH: bytes to flush (the RETH DMA length; ignored with IBV_FLUSH_MR)'),
  ],
);

export const BIND_SEG = defineLayout(
  'bind-seg',
  32,
  'Bind segment at 0x20 of RC/UC BIND_MW WQEs (in place of the remote address and atomic segments): the window, its new key byte, the MR and the range and rights to bind (device manual, memory windows).',
  [
    u64('addr', 0x00, 'first address of the window, in the iova space of the MR'),
    u64('length', 0x08, 'length of the window in bytes (type 1: 0 unbinds)'),
    u('mwKey', 0x10, 0, 32, "the window's key (ibv_mw.rkey): its index names the window"),
    u('newKey', 0x14, 0, 32, 'the key after the bind: its low byte replaces the key byte (ibv_inc_rkey)'),
    u('mrLkey', 0x18, 0, 32, 'lkey of the MR the window is bound to (ignored when length is 0)'),
    u('access', 0x1c, 0, 32, 'mw_access_flags: REMOTE_READ, REMOTE_WRITE, REMOTE_ATOMIC, ZERO_BASED'),
  ],
);

export const ATOMIC_SEG = defineLayout(
  'atomic-seg',
  16,
  'Atomic segment at 0x30 of RC send WQEs: used by ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD and ATOMIC_WRITE.',
  [
    u64(
      'swapAdd',
      0x00,
      'swap value (CMP_AND_SWP), add value (FETCH_AND_ADD), or the 8 bytes ATOMIC_WRITE writes (in memory order: the little-endian value of those bytes)',
    ),
    u64('compare', 0x08, 'compare value (CMP_AND_SWP)'),
  ],
);

export const UD_SEG = defineLayout(
  'ud-seg',
  48,
  'UD address segment at 0x20 of UD send WQEs: destination QP, Q_Key and the full address vector (no device-side address handles).',
  [
    u('remoteQpn', 0x00, 0, 24, 'destination QP number'),
    reserved(0x03, 8),
    u('qkey', 0x04, 0, 32, 'Q_Key to send in the DETH (if its bit 31 is set, the QP context Q_Key is used instead)'),
    ...embed('av', AV, 0x08),
  ],
);

export const DATA_SEG = defineLayout('data-seg', 16, 'Data (scatter/gather) segment: ibv_sge.', [
  u64('addr', 0x00, 'address (in the MR iova space of lkey)'),
  u('length', 0x08, 0, 32, 'length in bytes (0: an empty segment)'),
  u('lkey', 0x0c, 0, 32, 'local key'),
]);

export const INLINE_HDR = defineLayout('inline-hdr', 4, 'Inline data header at the data offset of a send WQE with IBV_SEND_INLINE; the bytes follow at +4.', [
  u('byteCount', 0x00, 0, 32, 'number of inline bytes that follow'),
]);

export const RECV_WQE_HDR = defineLayout('recv-wqe-hdr', 16, 'Receive WQE header at offset 0 of an RQ entry; numDataSegs data segments follow at 0x10.', [
  u64('wrId', 0x00, 'ibv_recv_wr.wr_id, returned in the CQE'),
  u('numDataSegs', 0x08, 0, 8, 'number of data segments'),
  reserved(0x09, 24),
  reserved(0x0c, 32),
]);

export const SRQ_WQE_HDR = defineLayout(
  'srq-wqe-hdr',
  16,
  'SRQ WQE header at offset 0 of an SRQ entry; data segments follow at 0x10. The free entries form a list through nextWqeIndex (see the SRQ section).',
  [
    u64('wrId', 0x00, 'ibv_recv_wr.wr_id, returned in the CQE'),
    u('numDataSegs', 0x08, 0, 8, 'number of data segments'),
    reserved(0x09, 8),
    u('nextWqeIndex', 0x0a, 0, 16, 'ring index of the entry the device consumes after this one'),
    reserved(0x0c, 32),
  ],
);

function nextPow2(n: number): number {
  return n <= 1 ? 1 : 2 ** Math.ceil(Math.log2(n));
}

/** Offset of the data segments / inline data in a send WQE of this QP type. */
export function sendWqeDataOffset(qpType: number): number {
  return qpType === IBV_QPT_UD ? WqeOff.UD_DATA : WqeOff.RC_DATA;
}

/** The send WQE stride (bytes) for the requested caps (formula in the file header). */
export function sendWqeStride(qpType: number, maxSendSge: number, maxInlineData: number): number {
  const d = Math.max(DATA_SEG_SIZE * maxSendSge, maxInlineData > 0 ? Math.ceil((4 + maxInlineData) / 16) * 16 : 0);
  return Math.max(MIN_WQE_STRIDE, nextPow2(sendWqeDataOffset(qpType) + d));
}

/** What a send WQE of `stride` bytes actually holds (the driver may report these larger caps). */
export function sendWqeCaps(qpType: number, stride: number): { maxSendSge: number; maxInlineData: number } {
  const room = stride - sendWqeDataOffset(qpType);
  return { maxSendSge: Math.floor(room / DATA_SEG_SIZE), maxInlineData: Math.max(0, room - 4) };
}

/** The receive / SRQ WQE stride for `maxRecvSge` data segments. */
export function recvWqeStride(maxRecvSge: number): number {
  return Math.max(MIN_WQE_STRIDE, nextPow2(WqeOff.RECV_DATA + DATA_SEG_SIZE * maxRecvSge));
}

/** Data segments a receive / SRQ WQE of `stride` bytes holds. */
export function recvWqeMaxSge(stride: number): number {
  return Math.floor((stride - WqeOff.RECV_DATA) / DATA_SEG_SIZE);
}

/** log2 of a power of two. */
export function log2(n: number): number {
  return 31 - Math.clz32(n);
}

/** Device address of entry `counter` of a ring (number arithmetic, no allocation). */
export function ringEntryAddr(ringAddr: number, counter: number, logSize: number, logStride: number): number {
  return ringAddr + (counter & ((1 << logSize) - 1)) * (1 << logStride);
}
