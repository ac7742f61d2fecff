/**
 * The transmit side places each frame so that its payload has the host
 * source's alignment mod 8 (packet-builder.ts `begin`, dma.ts
 * `gatherAlign`), once per message for one SGE and per packet for several,
 * and reuses completed send WQEs (work-requests.ts `releaseSendWqe`). This
 * drives both through the verbs API with seeded source and destination
 * offsets of every residue mod 8, 1 to 3 SGEs and lengths across packet
 * boundaries, on each thread layout, and checks that every byte lands where
 * it should and nowhere else.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IBV_MTU_1024, IBV_QPT_RC, IBV_WC_RDMA_WRITE, IBV_WC_RECV, IBV_WC_SEND, IBV_WC_SUCCESS } from '../../src/driver/verbs/index.js';
import { seededRandom } from '../seeded.js';
import * as H from './harness.js';

const MTU = H.pathMtuBytes(IBV_MTU_1024);
const SRC = 8 * MTU + 64;

describe.each([0, 1, 2])('devices on %i worker thread(s)', (workers) => {
  let f: H.Fabric;
  let p: H.Pair;
  let src: H.Region;
  let dst: H.Region;
  beforeAll(async () => {
    f = await H.openFabric(H.twoDeviceConfig(workers));
    src = H.region(f.a, SRC, H.ALL_ACCESS, { fill: (i) => i * 151 + (i >> 9) + 7 });
    dst = H.region(f.b, 2 * SRC, H.ALL_ACCESS);
    p = H.makePair(f, IBV_QPT_RC, { maxSendWr: 128, maxRecvWr: 128, maxSendSge: 4, maxRecvSge: 4 });
  });
  afterAll(async () => {
    await f?.close();
  });

  it('WRITE and SEND from seeded offsets and SGE lists land byte for byte (120 messages)', async () => {
    const r = seededRandom(1000 + workers);
    const n = (k: number) => Math.floor(r() * k);
    for (let m = 0; m < 120; m++) {
      // 1-3 SGEs over disjoint pieces of the source, each at any offset mod 8.
      const nsge = 1 + n(3);
      const pieces: { off: number; len: number }[] = [];
      let at = n(64);
      for (let s = 0; s < nsge; s++) {
        const len = n(4) === 0 ? n(64) : n(3 * MTU);
        if (at + len > SRC) break;
        pieces.push({ off: at, len });
        at += len + n(64);
      }
      if (pieces.length === 0) pieces.push({ off: n(8), len: 1 + n(MTU) });
      const want = new Uint8Array(pieces.reduce((a, q) => a + q.len, 0));
      let k = 0;
      for (const q of pieces) {
        want.set(src.data.subarray(q.off, q.off + q.len), k);
        k += q.len;
      }
      const dOff = n(SRC);
      dst.data.fill(0x5a);
      const sge = pieces.map((q) => src.sge(q.off, q.len));
      const what = `message ${m}: ${want.length} B from ${pieces.map((q) => `${q.off}+${q.len}`).join(', ')} to ${dOff}`;
      if (m % 3 === 2) {
        H.postRecv(p.b, H.recvWr(BigInt(m), [dst.sge(dOff, 2 * SRC - dOff)]));
        H.postSend(p.a, H.wrSend({ wrId: BigInt(m), sge }));
        H.expectWc(await H.poll1(p.a.scq, what), { wr_id: BigInt(m), status: IBV_WC_SUCCESS, opcode: IBV_WC_SEND }, what);
        H.expectWc(await H.poll1(p.b.rcq, what), { wr_id: BigInt(m), status: IBV_WC_SUCCESS, opcode: IBV_WC_RECV, byte_len: want.length }, what);
      } else {
        H.postSend(p.a, H.wrWrite({ wrId: BigInt(m), sge, remote: { addr: dst.at(dOff), rkey: dst.rkey } }));
        H.expectWc(await H.poll1(p.a.scq, what), { wr_id: BigInt(m), status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_WRITE }, what);
      }
      H.expectBytes(dst.data.subarray(dOff, dOff + want.length), want, what);
      // Nothing outside the message changed.
      const outside = dst.data.findIndex((b, i) => b !== 0x5a && (i < dOff || i >= dOff + want.length));
      expect(outside, `${what}: a byte outside it changed`).toBe(-1);
    }
    dst.checkGuards();
    src.checkGuards();
  });
});
