/**
 * The responder: checks request PSNs, places SENDs into receive WQEs (or
 * the SRQ) and WRITEs into registered memory, executes READs and atomics,
 * and queues ACKs, NAKs and responses (IBTA §9.7.4–9.7.5; SPEC-DIGEST §4.2–4.3).
 */
import {
  IBV_ACCESS_FLUSH_GLOBAL,
  IBV_ACCESS_FLUSH_PERSISTENT,
  IBV_ACCESS_LOCAL_WRITE,
  IBV_ACCESS_REMOTE_ATOMIC,
  IBV_ACCESS_REMOTE_READ,
  IBV_ACCESS_REMOTE_WRITE,
  IBV_EVENT_QP_ACCESS_ERR,
  IBV_EVENT_QP_REQ_ERR,
  IBV_EVENT_SRQ_LIMIT_REACHED,
  IBV_QPS_ERR,
  IBV_QPS_RESET,
  IBV_QPS_INIT,
  IBV_QPT_UD,
  IBV_QPT_XRC_RECV,
  IBV_WC_GRH,
  IBV_WC_LOC_LEN_ERR,
  IBV_WC_LOC_QP_OP_ERR,
  IBV_WC_LOC_PROT_ERR,
  IBV_WC_RECV,
  IBV_WC_RECV_RDMA_WITH_IMM,
  IBV_WC_SUCCESS,
  IBV_WC_WITH_IMM,
  IBV_WC_WITH_INV,
  IBV_WC_REM_INV_REQ_ERR,
} from '../device/abi/constants.js';
import { checkAccess, MPT, MrCheck, SRQC } from '../device/contexts.js';
import { Ctr } from '../device/counters.js';
import { QPC } from '../device/contexts.js';
import { MwFault, mwInvalidate } from '../device/mw.js';
import { rqAdvance, rqPeek, srqAdvance, srqHead, srqPeek } from '../device/queues.js';
import { type Lrh, Op, OPCODES, Position, rethVaNumber, type ScratchPacket, Syndrome } from '../wire/index.js';
import type { NicCore } from './core.js';
import { copyBytes, copyToHost, scatter, remoteOffset } from './dma.js';
import { bswap32 } from './paths.js';
import { psnAdd, psnCompare } from './psn.js';
import type { RecvOverflow } from './profiles.js';
import { type PendingResponse, plainResponse, type QpCtx, type ResponderResource } from './qp-ctx.js';
import { readRecvWqe, type RecvWqe } from './work-requests.js';

const GRH_BYTES = 40;

function queueAck(q: QpCtx, psn: number): void {
  // Coalesce: an ACK not yet sent is moved forward instead of queueing another.
  const last = q.responses[q.responses.length - 1];
  if (last && last.kind === 'ack') {
    last.psn = psn;
    last.syndrome = Syndrome.ACK_UNLIMITED;
    return;
  }
  q.responses.push(plainResponse('ack', psn, Syndrome.ACK_UNLIMITED));
}

function queueNak(q: QpCtx, psn: number, syndrome: number): void {
  q.responses.push(plainResponse('nak', psn, syndrome));
}

/**
 * RNR NAK for `psn`: the requester will resend from it after the timer. The
 * packets of the message already in flight behind it are dropped silently
 * (the RNR NAK is this gap's one NAK), not answered with NAK-sequence.
 */
function rnrNak(nic: NicCore, q: QpCtx, psn: number): void {
  queueNak(q, psn, Syndrome.RNR_NAK_BASE | (q.minRnrTimer & 0x1f));
  q.nakSent = true;
  nic.ctr(q.portNum)[Ctr.SEND_RNR_ERR]!++;
  nic.schedule(q);
}

/** Takes the next receive WQE (own RQ or SRQ), or null if none is posted. */
function takeRecv(nic: NicCore, q: QpCtx, qp: number): RecvWqe | null {
  const { mem, tables: t } = nic.env;
  if (q.hasSrq) {
    const srq = t.srqByNumber(q.srqn);
    if (srq < 0) return null;
    const addr = srqPeek(mem, t, srq);
    if (addr < 0) return null;
    const head = srqHead(t, srq);
    const w = readRecvWqe(mem, addr, head, 255);
    const ev = srqAdvance(mem, t, srq);
    if (ev === IBV_EVENT_SRQ_LIMIT_REACHED) nic.asyncEvent(q.recvCqn, ev, q.srqn);
    return w;
  }
  const addr = rqPeek(mem, t, qp);
  if (addr < 0) return null;
  const counter = rqAdvance(t, qp);
  return readRecvWqe(mem, addr, counter, q.maxRecvSge);
}

function completeRecv(
  nic: NicCore,
  q: QpCtx,
  w: RecvWqe,
  status: number,
  opcode: number,
  byteLen: number,
  flags: number,
  imm: number,
  srcQp: number,
  solicited: boolean,
  /** A native IB UD packet's LRH: the CQE's slid, sl and dlid_path_bits. */
  lrh: Lrh | null = null,
): void {
  const f = nic.cqe();
  if (lrh !== null) {
    f.slid = lrh.slid;
    f.sl = lrh.sl;
    f.dlidPathBits = lrh.dlid & ((1 << (nic.port(q.portNum).ib?.lmc ?? 0)) - 1);
  }
  f.wrIdLo = w.wrIdLo;
  f.wrIdHi = w.wrIdHi;
  f.status = status;
  f.opcode = opcode;
  f.byteLen = byteLen;
  f.wcFlags = flags;
  f.immData = imm;
  f.qpNum = q.qpn;
  f.srcQp = srcQp;
  f.srqn = q.qpType === IBV_QPT_XRC_RECV ? q.srqn : 0;
  f.wqeCounter = w.counter & 0xffff;
  f.solicited = solicited;
  if (status !== IBV_WC_SUCCESS) nic.ctr(q.portNum)[Ctr.RESP_CQE_ERROR]!++;
  else nic.ctr(q.portNum)[Ctr.RDMA_RECVS]!++;
  nic.complete(q.recvCqn, f);
}

/**
 * A class C error (IBTA §9.9.3): NAK the request, report it on the receive
 * side where a WQE is in progress, move the QP to ERR.
 */
/** An RC SEND longer than its receive buffer: the NAK and the receive's status, per profile (profiles.ts RecvOverflow). */
const RECV_OVERFLOW: Record<RecvOverflow, readonly [number, number]> = {
  'nak-invalid-request': [Syndrome.NAK_INVALID_REQUEST, IBV_WC_LOC_LEN_ERR],
  'nak-invalid-request-rem-inv': [Syndrome.NAK_INVALID_REQUEST, IBV_WC_REM_INV_REQ_ERR],
  'nak-remote-op': [Syndrome.NAK_REMOTE_OP, IBV_WC_LOC_QP_OP_ERR],
};

function fatal(nic: NicCore, q: QpCtx, psn: number, syndrome: number, recvStatus: number, event: number): void {
  queueNak(q, psn, syndrome);
  if (q.recv) {
    completeRecv(nic, q, q.recv, recvStatus, IBV_WC_RECV, 0, 0, 0, 0, false);
    q.recv = null;
  }
  q.inMessage = 0;
  nic.asyncEvent(q.recvCqn, event, q.qpn);
  nic.fail(q);
}

/**
 * The key of a READ being answered stopped working mid-response (the MR was
 * deregistered, the window invalidated): no more of that memory goes out.
 * The responder NAKs the PSN of the packet it cannot send (remote access
 * error, as for a bad key up front) and the QP goes to ERR.
 */
export function readKeyGone(nic: NicCore, q: QpCtx, psn: number): void {
  q.responses.length = 0;
  nic.ctr(q.portNum)[Ctr.RESP_REMOTE_ACCESS_ERRORS]!++;
  fatal(nic, q, psn, Syndrome.NAK_REMOTE_ACCESS, IBV_WC_LOC_PROT_ERR, IBV_EVENT_QP_ACCESS_ERR);
}

function saveResource(q: QpCtx, r: ResponderResource): void {
  const cap = Math.max(1, q.maxDestRdAtomic);
  if (q.resources.length >= cap) q.resources.shift();
  q.resources.push(r);
}

/** A request packet for QP `q`. `frame` is the frame it came in (for the UD GRH). */
export function responderReceive(nic: NicCore, q: QpCtx, qp: number, p: ScratchPacket, frame: Uint8Array): void {
  const t = nic.env.tables;
  const state = t.qpState(qp);
  if (state === IBV_QPS_RESET || state === IBV_QPS_INIT || state === IBV_QPS_ERR) return;
  if (q.qpType === IBV_QPT_UD) {
    udReceive(nic, q, qp, p, frame);
    return;
  }
  const ctr = nic.ctr(q.portNum);
  const psn = p.bth.psn;
  const rc = q.reliable;
  const d = psnCompare(psn, q.ePsn);
  if (q.qpType === IBV_QPT_XRC_RECV && !xrcTarget(nic, q, p)) {
    // Only the expected request is answered: a bad one behind or ahead of it is dropped.
    if (d === 0) fatal(nic, q, psn, Syndrome.NAK_INVALID_REQUEST, IBV_WC_REM_INV_REQ_ERR, IBV_EVENT_QP_REQ_ERR);
    return;
  }
  if (rc) {
    if (d > 0) {
      // A gap: one NAK-sequence per gap, then silence until ePSN shows up.
      if (!q.nakSent) {
        queueNak(q, q.ePsn, Syndrome.NAK_PSN_SEQ_ERR);
        q.nakSent = true;
        ctr[Ctr.OUT_OF_SEQ_REQUEST]!++;
      }
      ctr[Ctr.OUT_OF_SEQUENCE]!++;
      nic.schedule(q);
      return;
    }
    if (d < 0) {
      duplicate(nic, q, p);
      nic.schedule(q);
      return;
    }
    q.nakSent = false;
  } else if (d !== 0) {
    // UC: a gap loses the message in progress; no retransmission.
    if (q.inMessage !== 0) dropUcMessage(q);
    q.ePsn = psn;
  }
  const info = OPCODES[p.bth.opcode]!;
  const pos = info.position;
  const starts = pos === Position.FIRST || pos === Position.ONLY || pos === Position.SINGLE;
  // Opcode sequence (rxe check_op_seq): a message must start with FIRST/ONLY and continue with its own kind.
  if (q.inMessage !== 0 && (starts || (q.inMessage === 1) !== (info.kind === 'send'))) {
    if (rc) return fatal(nic, q, psn, Syndrome.NAK_INVALID_REQUEST, IBV_WC_LOC_LEN_ERR, IBV_EVENT_QP_REQ_ERR);
    dropUcMessage(q);
  }
  if (q.inMessage === 0 && !starts) {
    if (rc) return fatal(nic, q, psn, Syndrome.NAK_INVALID_REQUEST, IBV_WC_LOC_LEN_ERR, IBV_EVENT_QP_REQ_ERR);
    q.ePsn = psnAdd(psn, 1);
    return; // UC: MIDDLE/LAST without FIRST is dropped
  }
  if ((info.kind === 'send' || info.kind === 'write') && !fitsMtu(p.payloadLength, pos, q.mtu)) {
    // rxe check_length: a FIRST or MIDDLE carries exactly the path MTU, an ONLY at most it, a
    // LAST 1 to it. RC: class C (invalid request, QP to ERR); UC: the message is dropped.
    ctr[Ctr.RESP_LOCAL_LENGTH_ERROR]!++;
    if (rc) return fatal(nic, q, psn, Syndrome.NAK_INVALID_REQUEST, IBV_WC_LOC_LEN_ERR, IBV_EVENT_QP_REQ_ERR);
    dropUcMessage(q);
    q.ePsn = psnAdd(psn, 1);
    return;
  }
  let next = psnAdd(psn, 1);
  switch (info.kind) {
    case 'send':
      if (!handleSend(nic, q, qp, p, info.position)) return;
      break;
    case 'write':
      if (!handleWrite(nic, q, qp, p, info.position)) return;
      break;
    case 'read-request': {
      const n = handleRead(nic, q, p);
      if (n < 0) return;
      next = psnAdd(psn, n);
      break;
    }
    case 'atomic':
      if (!handleAtomic(nic, q, p)) return;
      break;
    case 'atomic-write':
      if (!handleAtomicWrite(nic, q, p)) return;
      break;
    case 'flush':
      if (!handleFlush(nic, q, p)) return;
      break;
    default:
      if (rc) fatal(nic, q, psn, Syndrome.NAK_INVALID_REQUEST, IBV_WC_LOC_LEN_ERR, IBV_EVENT_QP_REQ_ERR);
      return;
  }
  q.ePsn = next;
  QPC.f.rqPsn.set(t.dv, qp, next);
  if (rc && p.bth.ackReq && (info.kind === 'send' || info.kind === 'write')) queueAck(q, psn);
  if (q.responses.length > 0) nic.schedule(q);
}

/**
 * XRC_RECV: the XRCETH names the XRC SRQ whose receive WQEs, CQ and PD this
 * request uses (its PD is the one memory keys are checked against). It must
 * be a live XRC SRQ of the receive QP's XRC domain; anything else is an
 * invalid request. A message keeps the SRQ its first packet named.
 */
function xrcTarget(nic: NicCore, q: QpCtx, p: ScratchPacket): boolean {
  const t = nic.env.tables;
  const srqn = p.xrceth?.xrcSrq ?? 0;
  const srq = t.srqByNumber(srqn);
  if (srq < 0 || SRQC.f.xrcdn.get(t.dv, srq) !== q.xrcdn) {
    return false;
  }
  if (q.inMessage !== 0 && srqn !== q.srqn) return false;
  q.srqn = srqn;
  q.hasSrq = true;
  q.pdn = SRQC.f.pdn.get(t.dv, srq);
  q.recvCqn = SRQC.f.cqn.get(t.dv, srq);
  return true;
}

/** A SEND or WRITE packet's payload against the path MTU, by its place in the message. */
function fitsMtu(len: number, pos: Position, mtu: number): boolean {
  if (pos === Position.FIRST || pos === Position.MIDDLE) return len === mtu;
  if (pos === Position.LAST) return len > 0 && len <= mtu;
  return len <= mtu;
}

function dropUcMessage(q: QpCtx): void {
  // The receive WQE stays consumed-but-unfinished in hardware terms; we keep
  // it for the next message, as a real UC responder reuses it.
  q.inMessage = 0;
  q.recvOffset = 0;
  q.writeHostOff = -1;
}

function handleSend(nic: NicCore, q: QpCtx, qp: number, p: ScratchPacket, pos: Position): boolean {
  const ctr = nic.ctr(q.portNum);
  const psn = p.bth.psn;
  const rc = q.reliable;
  if (pos === Position.FIRST || pos === Position.ONLY) {
    if (!q.recv) {
      const w = takeRecv(nic, q, qp);
      if (!w) {
        ctr[Ctr.OUT_OF_BUFFER]!++;
        if (rc) rnrNak(nic, q, psn);
        return false;
      }
      q.recv = w;
    }
    q.recvOffset = 0;
    q.inMessage = 1;
  }
  const w = q.recv!;
  const len = p.payloadLength;
  if (q.recvOffset + len > w.length) {
    ctr[Ctr.RESP_LOCAL_LENGTH_ERROR]!++;
    if (rc) {
      const [syndrome, status] = RECV_OVERFLOW[nic.env.profile.recvOverflow];
      fatal(nic, q, psn, syndrome, status, IBV_EVENT_QP_REQ_ERR);
    } else {
      dropUcMessage(q);
    }
    return false;
  }
  if (len > 0 && scatter(nic.env.mem, nic.env.tables, q.pdn, w.sges, q.recvOffset, p.payloadBytes, p.payloadAt, len, IBV_ACCESS_LOCAL_WRITE) !== MrCheck.OK) {
    if (rc) fatal(nic, q, psn, Syndrome.NAK_REMOTE_OP, IBV_WC_LOC_PROT_ERR, IBV_EVENT_QP_ACCESS_ERR);
    else {
      completeRecv(nic, q, w, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, 0, 0, 0, false);
      q.recv = null;
      dropUcMessage(q);
    }
    return false;
  }
  q.recvOffset += len;
  if (pos === Position.LAST || pos === Position.ONLY) {
    let flags = 0;
    let imm = 0;
    if (p.immDt !== null) {
      flags |= IBV_WC_WITH_IMM;
      imm = bswap32(p.immDt);
    } else if (p.ieth !== null) {
      // Remote invalidation (IBTA 10.6.7.2.x; rxe invalidate_rkey): a window that
      // cannot be invalidated is the responder's error class J (rxe: REM_INV_REQ_ERR).
      if (mwInvalidate(nic.env.tables, p.ieth >>> 0, q.qpn, q.pdn, true) !== MwFault.OK) {
        if (rc) fatal(nic, q, psn, Syndrome.NAK_INVALID_REQUEST, IBV_WC_REM_INV_REQ_ERR, IBV_EVENT_QP_REQ_ERR);
        return false;
      }
      flags |= IBV_WC_WITH_INV;
      imm = p.ieth;
    }
    completeRecv(nic, q, w, IBV_WC_SUCCESS, IBV_WC_RECV, q.recvOffset, flags, imm, q.destQpn, p.bth.se === 1);
    q.recv = null;
    q.inMessage = 0;
    q.msn = (q.msn + 1) & 0xffffff;
  }
  return true;
}

function handleWrite(nic: NicCore, q: QpCtx, qp: number, p: ScratchPacket, pos: Position): boolean {
  const { mem, tables: t } = nic.env;
  const ctr = nic.ctr(q.portNum);
  const psn = p.bth.psn;
  const rc = q.reliable;
  const last = pos === Position.LAST || pos === Position.ONLY;
  if (p.immDt !== null && last && !q.recv) {
    // WRITE with immediate consumes a receive WQE. Checked first, before any
    // state of the message changes (rxe check_resource precedes the length
    // and rkey checks): a request that finds none gets RNR NAK, and its
    // retry after the RNR timer is the same request again, not a new one.
    const w = takeRecv(nic, q, qp);
    if (!w) {
      ctr[Ctr.OUT_OF_BUFFER]!++;
      if (rc) rnrNak(nic, q, psn);
      else dropUcMessage(q);
      return false;
    }
    q.recv = w;
  }
  if (pos === Position.FIRST || pos === Position.ONLY) {
    ctr[Ctr.RX_WRITE_REQUESTS]!++;
    if (!(q.accessFlags & IBV_ACCESS_REMOTE_WRITE)) {
      if (rc) fatal(nic, q, psn, Syndrome.NAK_INVALID_REQUEST, IBV_WC_LOC_PROT_ERR, IBV_EVENT_QP_REQ_ERR);
      return false;
    }
    const r = p.reth!;
    const va = rethVaNumber(r);
    q.writeLength = r.dmaLength;
    q.writeLeft = r.dmaLength;
    if (r.dmaLength === 0) q.writeHostOff = 0;
    else {
      const off = remoteOffset(mem, t, q.pdn, q.qpn, r.rkey, va, r.dmaLength, IBV_ACCESS_REMOTE_WRITE);
      if (off < 0) {
        ctr[Ctr.RESP_REMOTE_ACCESS_ERRORS]!++;
        if (rc) fatal(nic, q, psn, Syndrome.NAK_REMOTE_ACCESS, IBV_WC_LOC_PROT_ERR, IBV_EVENT_QP_ACCESS_ERR);
        return false;
      }
      q.writeHostOff = off;
    }
    q.writeRkey = r.rkey;
    q.writeVa = va;
    q.writeGen = t.mptGen;
    q.inMessage = 2;
  }
  const len = p.payloadLength;
  if (len > q.writeLeft || (last && len !== q.writeLeft)) {
    ctr[Ctr.RESP_LOCAL_LENGTH_ERROR]!++;
    if (rc) fatal(nic, q, psn, Syndrome.NAK_INVALID_REQUEST, IBV_WC_LOC_LEN_ERR, IBV_EVENT_QP_REQ_ERR);
    else dropUcMessage(q);
    return false;
  }
  if (len > 0) {
    if ((pos === Position.MIDDLE || pos === Position.LAST) && q.writeGen !== t.mptGen) {
      // The key again: once ibv_dereg_mr (or an invalidation) has returned, no byte may
      // land in that memory, even mid-message (it may be freed and someone else's by now).
      // Only when an MPT entry has changed since the last check: else it would pass again
      // (the first packet checked the whole RETH range) and give the offset we hold.
      q.writeGen = t.mptGen;
      const off = remoteOffset(mem, t, q.pdn, q.qpn, q.writeRkey, q.writeVa, len, IBV_ACCESS_REMOTE_WRITE);
      if (off < 0) {
        ctr[Ctr.RESP_REMOTE_ACCESS_ERRORS]!++;
        if (rc) fatal(nic, q, psn, Syndrome.NAK_REMOTE_ACCESS, IBV_WC_LOC_PROT_ERR, IBV_EVENT_QP_ACCESS_ERR);
        else dropUcMessage(q);
        return false;
      }
      q.writeHostOff = off;
    }
    copyToHost(mem, q.writeHostOff, p.payloadBytes, p.payloadAt, len);
    q.writeHostOff += len;
    q.writeVa += len;
    q.writeLeft -= len;
  }
  if (last) {
    q.inMessage = 0;
    q.msn = (q.msn + 1) & 0xffffff;
    if (p.immDt !== null) {
      completeRecv(nic, q, q.recv!, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, q.writeLength, IBV_WC_WITH_IMM, bswap32(p.immDt), q.destQpn, p.bth.se === 1);
      q.recv = null;
    }
  }
  return true;
}

/** Returns the number of PSNs the READ uses, or -1 on error. */
function handleRead(nic: NicCore, q: QpCtx, p: ScratchPacket): number {
  const { mem, tables: t } = nic.env;
  const ctr = nic.ctr(q.portNum);
  const psn = p.bth.psn;
  ctr[Ctr.RX_READ_REQUESTS]!++;
  if (!(q.accessFlags & IBV_ACCESS_REMOTE_READ) || q.maxDestRdAtomic === 0) {
    fatal(nic, q, psn, Syndrome.NAK_INVALID_REQUEST, IBV_WC_LOC_PROT_ERR, IBV_EVENT_QP_REQ_ERR);
    return -1;
  }
  const r = p.reth!;
  const va = rethVaNumber(r);
  let hostOff = 0;
  if (r.dmaLength > 0) {
    hostOff = remoteOffset(mem, t, q.pdn, q.qpn, r.rkey, va, r.dmaLength, IBV_ACCESS_REMOTE_READ);
    if (hostOff < 0) {
      ctr[Ctr.RESP_REMOTE_ACCESS_ERRORS]!++;
      fatal(nic, q, psn, Syndrome.NAK_REMOTE_ACCESS, IBV_WC_LOC_PROT_ERR, IBV_EVENT_QP_ACCESS_ERR);
      return -1;
    }
  }
  const n = Math.max(1, Math.ceil(r.dmaLength / q.mtu));
  saveResource(q, { kind: 'read', firstPsn: psn, lastPsn: psnAdd(psn, n - 1), va, rkey: r.rkey, length: r.dmaLength, orig: 0n });
  q.msn = (q.msn + 1) & 0xffffff; // rxe counts a READ when it starts (C9-148)
  q.responses.push({
    kind: 'read',
    psn,
    syndrome: Syndrome.ACK_UNLIMITED,
    hostOff,
    left: r.dmaLength,
    total: r.dmaLength,
    sent: 0,
    rkey: r.rkey,
    va,
    pdn: q.pdn,
    orig: 0n,
  });
  return n;
}

function handleAtomic(nic: NicCore, q: QpCtx, p: ScratchPacket): boolean {
  const { mem, tables: t } = nic.env;
  const ctr = nic.ctr(q.portNum);
  const psn = p.bth.psn;
  ctr[Ctr.RX_ATOMIC_REQUESTS]!++;
  const a = p.atomicEth!;
  const va = Number(a.va);
  if (!(q.accessFlags & IBV_ACCESS_REMOTE_ATOMIC) || q.maxDestRdAtomic === 0 || va % 8 !== 0) {
    fatal(nic, q, psn, Syndrome.NAK_INVALID_REQUEST, IBV_WC_LOC_PROT_ERR, IBV_EVENT_QP_REQ_ERR);
    return false;
  }
  const off = remoteOffset(mem, t, q.pdn, q.qpn, a.rkey, va, 8, IBV_ACCESS_REMOTE_ATOMIC);
  if (off < 0) {
    ctr[Ctr.RESP_REMOTE_ACCESS_ERRORS]!++;
    fatal(nic, q, psn, Syndrome.NAK_REMOTE_ACCESS, IBV_WC_LOC_PROT_ERR, IBV_EVENT_QP_ACCESS_ERR);
    return false;
  }
  const orig = executeAtomic(mem.sab, off, (p.bth.opcode & 0x1f) === Op.RC_COMPARE_SWAP, a.swapAdd, a.compare);
  saveResource(q, { kind: 'atomic', firstPsn: psn, lastPsn: psn, va, rkey: a.rkey, length: 8, orig });
  q.msn = (q.msn + 1) & 0xffffff;
  q.responses.push(plainResponse('atomic', psn, Syndrome.ACK_UNLIMITED, orig));
  return true;
}

/** ATOMIC_WRITE (IBA 1.5): 8 bytes written at once to an 8-byte aligned address, REMOTE_WRITE access (rxe). */
function handleAtomicWrite(nic: NicCore, q: QpCtx, p: ScratchPacket): boolean {
  const { mem, tables: t } = nic.env;
  const ctr = nic.ctr(q.portNum);
  const psn = p.bth.psn;
  ctr[Ctr.RX_WRITE_REQUESTS]!++;
  const r = p.reth!;
  const va = rethVaNumber(r);
  if (!(q.accessFlags & IBV_ACCESS_REMOTE_WRITE) || q.maxDestRdAtomic === 0 || va % 8 !== 0 || r.dmaLength !== 8 || p.payload.length !== 8) {
    fatal(nic, q, psn, Syndrome.NAK_INVALID_REQUEST, IBV_WC_LOC_PROT_ERR, IBV_EVENT_QP_REQ_ERR);
    return false;
  }
  const off = remoteOffset(mem, t, q.pdn, q.qpn, r.rkey, va, 8, IBV_ACCESS_REMOTE_WRITE);
  if (off < 0) {
    ctr[Ctr.RESP_REMOTE_ACCESS_ERRORS]!++;
    fatal(nic, q, psn, Syndrome.NAK_REMOTE_ACCESS, IBV_WC_LOC_PROT_ERR, IBV_EVENT_QP_ACCESS_ERR);
    return false;
  }
  // The wire bytes land as they are: one 64-bit store of their little-endian value.
  const v = new DataView(p.payload.buffer, p.payload.byteOffset, 8).getBigUint64(0, true);
  if (off % 8 === 0 && mem.sab instanceof SharedArrayBuffer) Atomics.store(new BigUint64Array(mem.sab, off, 1), 0, v);
  else copyBytes(mem.u8, off, p.payload, 0, 8);
  saveResource(q, { kind: 'atomic-write', firstPsn: psn, lastPsn: psn, va, rkey: r.rkey, length: 8, orig: 0n });
  q.msn = (q.msn + 1) & 0xffffff;
  q.responses.push(plainResponse('read', psn, Syndrome.ACK_UNLIMITED));
  return true;
}

/**
 * FLUSH (IBA 1.5): FETH placement type (bit 0 global visibility, bit 1
 * persistence) and selectivity (0 a range, 1 the whole MR). The MR must
 * grant IBV_ACCESS_FLUSH_GLOBAL / _PERSISTENT for the placement asked
 * (rxe). Host memory is always globally visible and persistent here, so
 * the flush is its check and its in-order answer.
 */
function handleFlush(nic: NicCore, q: QpCtx, p: ScratchPacket): boolean {
  const { tables: t } = nic.env;
  const ctr = nic.ctr(q.portNum);
  const psn = p.bth.psn;
  const type = p.feth!.raw & 0xf;
  const level = (p.feth!.raw >>> 4) & 3;
  if (q.maxDestRdAtomic === 0 || type === 0 || type > 3 || level > 1) {
    fatal(nic, q, psn, Syndrome.NAK_INVALID_REQUEST, IBV_WC_LOC_PROT_ERR, IBV_EVENT_QP_REQ_ERR);
    return false;
  }
  const needed = (type & 1 ? IBV_ACCESS_FLUSH_GLOBAL : 0) | (type & 2 ? IBV_ACCESS_FLUSH_PERSISTENT : 0);
  const r = p.reth!;
  const mr = t.mrByKey(r.rkey);
  // Whole MR: its first byte stands for it; a range: every byte of it.
  const va = level === 1 && mr >= 0 ? MPT.f.iova.getNum(t.dv, mr) : rethVaNumber(r);
  const len = level === 1 ? 0 : r.dmaLength;
  if (checkAccess(t, mr, q.pdn, va, len, needed) !== MrCheck.OK) {
    ctr[Ctr.RESP_REMOTE_ACCESS_ERRORS]!++;
    fatal(nic, q, psn, Syndrome.NAK_REMOTE_ACCESS, IBV_WC_LOC_PROT_ERR, IBV_EVENT_QP_ACCESS_ERR);
    return false;
  }
  saveResource(q, { kind: 'flush', firstPsn: psn, lastPsn: psn, va, rkey: r.rkey, length: len, orig: 0n });
  q.msn = (q.msn + 1) & 0xffffff;
  q.responses.push(plainResponse('read', psn, Syndrome.ACK_UNLIMITED));
  return true;
}

/**
 * Executes an atomic on host memory (little-endian 64-bit). With the target
 * 8-byte aligned in the SharedArrayBuffer, JavaScript's Atomics make it
 * atomic against every thread, the driver's included.
 */
export function executeAtomic(sab: SharedArrayBuffer | ArrayBufferLike, off: number, cas: boolean, swapAdd: bigint, compare: bigint): bigint {
  if (off % 8 === 0 && sab instanceof SharedArrayBuffer) {
    const v = new BigUint64Array(sab, off, 1);
    if (cas) return Atomics.compareExchange(v, 0, compare, swapAdd);
    return Atomics.add(v, 0, swapAdd);
  }
  const dv = new DataView(sab as ArrayBuffer, off, 8);
  const old = dv.getBigUint64(0, true);
  if (cas) {
    if (old === compare) dv.setBigUint64(0, swapAdd, true);
  } else dv.setBigUint64(0, (old + swapAdd) & 0xffff_ffff_ffff_ffffn, true);
  return old;
}

/**
 * A duplicate READ or ATOMIC (the request's PSNs `firstPsn`..`lastPsn`;
 * `answer.psn` is where a resumed READ asks from) means the requester went
 * back to that PSN: the responses still queued for that request and for
 * later ones are for what it will ask again, in PSN order. `answer` replaces
 * them (rxe moves its current resource the same way); otherwise stale
 * responses pile up behind each retry and the requester's timer expires
 * before the one it waits for is sent. That includes an earlier answer to
 * the same READ: left in front of one resumed in its middle, it streamed
 * again what the requester had and held back what it asked for until the
 * timer fired (campaign seed 9981298). Responses stay in PSN order: an ACK
 * or NAK queued for a later PSN goes after the answer, and is dropped if it
 * would cover a later READ or ATOMIC whose answer was abandoned here (the
 * requester asks for that again, and for what follows it). An ACK kept in
 * front of the answer told the requester a READ was done whose responses
 * had not all gone: an implied NAK, a retry spent (campaign seed 9401193).
 */
export function answerAgain(q: QpCtx, firstPsn: number, lastPsn: number, answer: PendingResponse): void {
  const rs = q.responses;
  let after: PendingResponse[] | null = null;
  /** The first PSN past the duplicate whose READ or ATOMIC answer is abandoned (-1: none). */
  let cut = -1;
  let w = 0;
  for (const r of rs) {
    // Answers to earlier requests stay where they are.
    if (psnCompare(r.psn, firstPsn) < 0) rs[w++] = r;
    else if (r.kind === 'ack' || r.kind === 'nak') (after ??= []).push(r);
    else if (psnCompare(r.psn, lastPsn) > 0 && (cut < 0 || psnCompare(r.psn, cut) < 0)) cut = r.psn;
  }
  rs.length = w;
  rs.push(answer);
  if (after) for (const r of after) if (cut < 0 || psnCompare(r.psn, cut) < 0) rs.push(r);
}

/** PSN behind ePSN: answer again without executing again (C9-105, §9.7.5.1.2). */
function duplicate(nic: NicCore, q: QpCtx, p: ScratchPacket): void {
  const ctr = nic.ctr(q.portNum);
  ctr[Ctr.DUPLICATE_REQUEST]!++;
  const psn = p.bth.psn;
  const info = OPCODES[p.bth.opcode]!;
  if (info.kind === 'read-request') {
    const r = q.resources.find((x) => x.kind === 'read' && psnCompare(psn, x.firstPsn) >= 0 && psnCompare(psn, x.lastPsn) <= 0);
    const reth = p.reth!;
    const va = rethVaNumber(reth);
    if (!r || reth.rkey !== r.rkey || va < r.va || va + reth.dmaLength > r.va + r.length) return;
    const hostOff = reth.dmaLength > 0 ? remoteOffset(nic.env.mem, nic.env.tables, q.pdn, q.qpn, reth.rkey, va, reth.dmaLength, IBV_ACCESS_REMOTE_READ) : 0;
    if (hostOff < 0) return;
    answerAgain(q, r.firstPsn, r.lastPsn, {
      kind: 'read',
      psn,
      syndrome: Syndrome.ACK_UNLIMITED,
      hostOff,
      left: reth.dmaLength,
      total: reth.dmaLength,
      sent: 0,
      rkey: reth.rkey,
      va,
      pdn: q.pdn,
      orig: 0n,
    });
    return;
  }
  if (info.kind === 'atomic-write' || info.kind === 'flush') {
    // Executed once: a duplicate gets its zero-length READ response again.
    const r = q.resources.find((x) => x.kind === info.kind && x.firstPsn === psn);
    if (r) answerAgain(q, psn, psn, plainResponse('read', psn, Syndrome.ACK_UNLIMITED));
    return;
  }
  if (info.kind === 'atomic') {
    const r = q.resources.find((x) => x.kind === 'atomic' && x.firstPsn === psn);
    if (r) answerAgain(q, psn, psn, plainResponse('atomic', psn, Syndrome.ACK_UNLIMITED, r.orig));
    return;
  }
  // SEND / WRITE: acknowledge again up to the last PSN we have (ePSN - 1).
  queueAck(q, psnAdd(q.ePsn, -1));
}

/** UD: no PSN checks; Q_Key, a receive WQE, and the 40-byte GRH in front of the data. */
function udReceive(nic: NicCore, q: QpCtx, qp: number, p: ScratchPacket, frame: Uint8Array): void {
  const ctr = nic.ctr(q.portNum);
  const deth = p.deth!;
  if (deth.qkey !== q.qkey) {
    ctr[Ctr.QKEY_VIOL_CNTR]!++;
    return;
  }
  const w = takeRecv(nic, q, qp);
  if (!w) {
    ctr[Ctr.OUT_OF_BUFFER]!++;
    return;
  }
  const len = p.payloadLength;
  if (GRH_BYTES + len > w.length) {
    // rxe drops it; we complete the WQE with a length error so the loss is visible.
    ctr[Ctr.RESP_LOCAL_LENGTH_ERROR]!++;
    completeRecv(nic, q, w, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, 0, 0, deth.srcQp, false);
    return;
  }
  const grh = new Uint8Array(GRH_BYTES);
  let flags = IBV_WC_GRH;
  if (p.framing === 'ib') {
    // The GRH as it came (after the 8-byte LRH); an LRH-only packet leaves the 40 bytes undefined (zero here) and no IBV_WC_GRH.
    if (p.grh) grh.set(frame.subarray(8, 8 + GRH_BYTES));
    else flags = 0;
  } else if (p.ipv4) {
    // IPv4: 20 zero bytes, then the IPv4 header (Linux rxe's layout).
    const ipOff = p.eth!.vlan ? 18 : 14;
    grh.set(frame.subarray(ipOff, ipOff + 20), 20);
  } else {
    const off = p.eth!.vlan ? 18 : 14;
    grh.set(frame.subarray(off, off + 40));
  }
  const { mem, tables: t } = nic.env;
  if (
    scatter(mem, t, q.pdn, w.sges, 0, grh, 0, grh.length, IBV_ACCESS_LOCAL_WRITE) !== MrCheck.OK ||
    (len > 0 && scatter(mem, t, q.pdn, w.sges, GRH_BYTES, p.payloadBytes, p.payloadAt, len, IBV_ACCESS_LOCAL_WRITE) !== MrCheck.OK)
  ) {
    completeRecv(nic, q, w, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, 0, 0, deth.srcQp, false);
    return;
  }
  let imm = 0;
  if (p.immDt !== null) {
    flags |= IBV_WC_WITH_IMM;
    imm = bswap32(p.immDt);
  }
  completeRecv(nic, q, w, IBV_WC_SUCCESS, IBV_WC_RECV, GRH_BYTES + len, flags, imm, deth.srcQp, p.bth.se === 1, p.lrh);
}
