/** The responder's transmit side: ACKs, NAKs, read responses and atomic ACKs, in order. */
import { IBV_ACCESS_REMOTE_READ } from '../device/abi/constants.js';
import { Op } from '../wire/index.js';
import type { NicCore } from './core.js';
import { copyBytes, remoteOffset } from './dma.js';
import { connectedPath } from './paths.js';
import { psnAdd } from './psn.js';
import { readKeyGone } from './responder.js';
import type { QpCtx } from './qp-ctx.js';

/**
 * Sends up to `budget` response packets; returns how many went out. With
 * `singlesOnly`, stops at a READ response (a multi-packet stream waits for
 * the scheduler; ACKs, NAKs and atomic ACKs go now).
 */
export function responderTransmit(nic: NicCore, q: QpCtx, budget: number, singlesOnly = false): number {
  if (q.responses.length === 0) return 0;
  const path = connectedPath(nic, q);
  if (!path) return 0;
  const { mem } = nic.env;
  const portNum = q.portNum;
  let sent = 0;
  while (sent < budget && q.responses.length > 0) {
    const r = q.responses[0]!;
    if (singlesOnly && r.kind === 'read') break;
    let frame: Uint8Array;
    if (r.kind === 'ack' || r.kind === 'nak') {
      path.setAeth(r.syndrome, q.msn);
      frame = path.begin(q.opBase + Op.RC_ACKNOWLEDGE, r.psn, q.destQpn, 0, 0, 0).frame;
      q.responses.shift();
    } else if (r.kind === 'atomic') {
      path.setAeth(r.syndrome, q.msn);
      path.setAtomicAck(r.orig);
      frame = path.begin(q.opBase + Op.RC_ATOMIC_ACKNOWLEDGE, r.psn, q.destQpn, 0, 0, 0).frame;
      q.responses.shift();
    } else {
      // READ: FIRST (AETH) / MIDDLE / LAST (AETH), or ONLY (AETH), one PSN each.
      const n = Math.min(q.mtu, r.left);
      // The key again before each packet: once ibv_dereg_mr (or a rereg to other memory) has
      // returned, the memory it named is not read.
      if (n > 0) {
        const off = remoteOffset(mem, nic.env.tables, r.pdn, q.qpn, r.rkey, r.va, n, IBV_ACCESS_REMOTE_READ);
        if (off < 0) {
          readKeyGone(nic, q, psnAdd(r.psn, r.sent));
          continue;
        }
        r.hostOff = off;
        r.va += n;
      }
      const first = r.sent === 0;
      const last = r.left <= q.mtu;
      const op =
        q.opBase +
        (first && last
          ? Op.RC_RDMA_READ_RESPONSE_ONLY
          : first
            ? Op.RC_RDMA_READ_RESPONSE_FIRST
            : last
              ? Op.RC_RDMA_READ_RESPONSE_LAST
              : Op.RC_RDMA_READ_RESPONSE_MIDDLE);
      path.setAeth(r.syndrome, q.msn);
      const b = path.begin(op, psnAdd(r.psn, r.sent), q.destQpn, 0, 0, n);
      if (n > 0) copyBytes(b.payload, 0, mem.u8, r.hostOff, n);
      frame = b.frame;
      r.hostOff += n;
      r.left -= n;
      r.sent++;
      if (last) q.responses.shift();
    }
    nic.transmit(portNum, path.finish(frame, nic.nextIpId(portNum)), q.prio);
    sent++;
  }
  return sent;
}
