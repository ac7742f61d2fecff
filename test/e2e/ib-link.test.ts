/**
 * Native InfiniBand end to end: two devices whose ports have link layer
 * INFINIBAND, cabled, driven through the verbs API. Every operation over
 * RC (SEND, WRITE, WRITE_IMM, READ, atomics), UC and UD, with the GRH
 * (LNH 3) and without it (LRH only, LNH 2); the bytes that land, the work
 * completions, the counters, and the capture decoded as LINKTYPE_INFINIBAND.
 *
 * Runs on the simulator and on the realtime runtime (devices in this thread
 * and on a worker thread).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restartModel, startSimModel, stopModel } from '../../src/boot.js';
import type { ModelConfig } from '../../src/runtime/config.js';
import {
  IBV_GID_TYPE_IB,
  IBV_LINK_LAYER_INFINIBAND,
  IBV_PORT_ACTIVE,
  IBV_QPT_RC,
  IBV_QPT_UC,
  IBV_QPT_UD,
  IBV_WC_COMP_SWAP,
  IBV_WC_FETCH_ADD,
  IBV_WC_GRH,
  IBV_WC_RDMA_READ,
  IBV_WC_RDMA_WRITE,
  IBV_WC_RECV,
  IBV_WC_RECV_RDMA_WITH_IMM,
  IBV_WC_SEND,
  IBV_WC_SUCCESS,
  ibv_query_gid_ex,
  newGidEntry,
} from '../../src/driver/verbs/index.js';
import { decodePacket, iteratePcap, LINKTYPE_INFINIBAND, Lnh, readPcapHeader } from '../../src/wire/index.js';
import { ibConfig, LID_A, LID_B } from '../helpers/ib.js';
import * as H from './harness.js';

const RUNTIMES: { name: string; start: (c: ModelConfig) => Promise<unknown> }[] = [
  { name: 'simulator', start: (c) => startSimModel({ ...c, workers: 0, seed: 7 }) },
  { name: 'realtime, devices in this thread', start: (c) => restartModel({ ...c, workers: 0 }) },
  { name: 'realtime, devices on a worker', start: (c) => restartModel({ ...c, workers: 1 }) },
];

describe.each(RUNTIMES)('native InfiniBand on the $name', ({ start }) => {
  let f: H.Fabric;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rnic-ib-'));
    const config = ibConfig(0, dir);
    await start(config);
    const a = H.openDev('rnic0', 0);
    const b = H.openDev('rnic1', 0);
    f = {
      a,
      b,
      config,
      close: async () => {
        H.closeDev(a);
        H.closeDev(b);
        await stopModel();
      },
    };
  });
  let closed = false;
  afterAll(async () => {
    if (!closed) await f?.close();
  });

  it('ibv_query_port: link layer IB, LID, LMC, SM LID, ACTIVE; GID 0 is fe80::/64 + the port GUID', () => {
    const pa = f.a.portAttr;
    expect(pa.link_layer).toBe(IBV_LINK_LAYER_INFINIBAND);
    expect(pa.state).toBe(IBV_PORT_ACTIVE);
    expect([pa.lid, pa.lmc]).toEqual([LID_A, 2]);
    expect([f.b.portAttr.lid, f.b.portAttr.lmc, f.b.portAttr.sm_lid]).toEqual([LID_B, 0, 1]);
    expect(pa.flags & 1, 'no IBV_QPF_GRH_REQUIRED on IB').toBe(0);
    // EUI-64 of 02:00:00:00:00:01: 00:00:00:ff:fe:00:00:01.
    expect(Array.from(f.a.gid.raw)).toEqual([0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xfe, 0, 0, 1]);
    const e = newGidEntry();
    expect(ibv_query_gid_ex(f.a.ctx, 1, 0, e, 0)).toBe(0);
    expect(e.gid_type, 'GID 0 is of type IB').toBe(IBV_GID_TYPE_IB);
    expect(ibv_query_gid_ex(f.a.ctx, 1, 1, e, 0), 'no GID 1 on an IB port without an SM-assigned prefix').not.toBe(0);
  });

  for (const global of [false, true]) {
    const lnh = global ? 'LRH+GRH' : 'LRH only';
    describe(`${lnh}`, () => {
      it(`RC: SEND, WRITE, WRITE_IMM, READ, CAS, FAA land their bytes (${lnh})`, async () => {
        const p = H.makePair(f, IBV_QPT_RC, { ib: { global } });
        const src = H.region(f.a, 10_000, H.ALL_ACCESS, { fill: (i) => i * 13 + 5 });
        const dst = H.region(f.b, 10_000, H.ALL_ACCESS);
        const before = H.counters(f.b);
        // SEND 5000 B (5 packets at MTU 1024).
        H.postRecv(p.b, H.recvWr(1n, [dst.sge(0, 10_000)]));
        H.postSend(p.a, H.wrSend({ wrId: 2n, sge: [src.sge(0, 5000)] }));
        H.expectWc(await H.poll1(p.a.scq, 'SEND'), { wr_id: 2n, status: IBV_WC_SUCCESS, opcode: IBV_WC_SEND }, 'SEND');
        H.expectWc(await H.poll1(p.b.rcq, 'RECV'), { wr_id: 1n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RECV, byte_len: 5000 }, 'RECV');
        H.expectBytes(dst.data.subarray(0, 5000), src.data.subarray(0, 5000), 'SEND payload');
        // WRITE 3000 B at offset 6000, then WRITE_IMM 10 B.
        H.postSend(p.a, H.wrWrite({ wrId: 3n, sge: [src.sge(100, 3000)], remote: { addr: dst.at(6000), rkey: dst.rkey } }));
        H.expectWc(await H.poll1(p.a.scq, 'WRITE'), { wr_id: 3n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_WRITE }, 'WRITE');
        H.expectBytes(dst.data.subarray(6000, 9000), src.data.subarray(100, 3100), 'WRITE payload');
        H.postRecv(p.b, H.recvWr(4n, []));
        H.postSend(p.a, H.wrWrite({ wrId: 5n, sge: [src.sge(0, 10)], remote: { addr: dst.at(9100), rkey: dst.rkey }, imm: 0x1234abcd }));
        H.expectWc(await H.poll1(p.a.scq, 'WRITE_IMM'), { wr_id: 5n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_WRITE }, 'WRITE_IMM');
        const wi = await H.poll1(p.b.rcq, 'WRITE_IMM receive');
        H.expectWc(wi, { wr_id: 4n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RECV_RDMA_WITH_IMM, byte_len: 10 }, 'WRITE_IMM receive');
        expect(wi.imm_data >>> 0).toBe(0x1234abcd);
        // READ 2500 B back into src at 7000.
        H.postSend(p.a, H.wrRead({ wrId: 6n, sge: [src.sge(7000, 2500)], remote: { addr: dst.at(6000), rkey: dst.rkey } }));
        H.expectWc(await H.poll1(p.a.scq, 'READ'), { wr_id: 6n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_READ, byte_len: 2500 }, 'READ');
        H.expectBytes(src.data.subarray(7000, 9500), dst.data.subarray(6000, 8500), 'READ payload');
        // Atomics on an aligned u64 at 9600.
        const dv = new DataView(dst.data.buffer, dst.data.byteOffset);
        dv.setBigUint64(9600, 40n, true);
        H.postSend(p.a, H.wrFaa({ wrId: 7n, sge: [src.sge(9800, 8)], atomic: { addr: dst.at(9600), rkey: dst.rkey, compareAdd: 2n } }));
        H.expectWc(await H.poll1(p.a.scq, 'FAA'), { wr_id: 7n, status: IBV_WC_SUCCESS, opcode: IBV_WC_FETCH_ADD }, 'FAA');
        H.postSend(p.a, H.wrCas({ wrId: 8n, sge: [src.sge(9808, 8)], atomic: { addr: dst.at(9600), rkey: dst.rkey, compareAdd: 42n, swap: 99n } }));
        H.expectWc(await H.poll1(p.a.scq, 'CAS'), { wr_id: 8n, status: IBV_WC_SUCCESS, opcode: IBV_WC_COMP_SWAP }, 'CAS');
        const sv = new DataView(src.data.buffer, src.data.byteOffset);
        expect([sv.getBigUint64(9800, true), sv.getBigUint64(9808, true), dv.getBigUint64(9600, true)]).toEqual([40n, 42n, 99n]);
        const d = H.counterDelta(before, H.counters(f.b));
        expect(d['port_rcv_errors'] ?? 0n, 'no receive errors').toBe(0n);
        expect(d['rx_dlid_mismatch'] ?? 0n).toBe(0n);
        // 5 SEND + 3 WRITE + 1 WRITE_IMM + 1 READ request + 2 atomics.
        expect(d['rcvd_pkts'], 'requests received by rnic1').toBe(12n);
        dst.checkGuards();
        src.checkGuards();
      });

      it(`UC: a 3000-byte WRITE and a SEND (${lnh})`, async () => {
        const p = H.makePair(f, IBV_QPT_UC, { ib: { global } });
        const src = H.region(f.a, 4096, H.ALL_ACCESS, { fill: (i) => i ^ 0x5a });
        const dst = H.region(f.b, 4096, H.ALL_ACCESS);
        H.postSend(p.a, H.wrWrite({ wrId: 1n, sge: [src.sge(0, 3000)], remote: { addr: dst.at(0), rkey: dst.rkey } }));
        H.expectWc(await H.poll1(p.a.scq, 'UC WRITE'), { wr_id: 1n, status: IBV_WC_SUCCESS }, 'UC WRITE');
        H.postRecv(p.b, H.recvWr(2n, [dst.sge(3000, 1000)]));
        H.postSend(p.a, H.wrSend({ wrId: 3n, sge: [src.sge(10, 700)] }));
        H.expectWc(await H.poll1(p.b.rcq, 'UC RECV'), { wr_id: 2n, status: IBV_WC_SUCCESS, byte_len: 700 }, 'UC RECV');
        H.expectBytes(dst.data.subarray(0, 3000), src.data.subarray(0, 3000), 'UC WRITE payload');
        H.expectBytes(dst.data.subarray(3000, 3700), src.data.subarray(10, 710), 'UC SEND payload');
      });

      it(`UD: a datagram, its GRH bytes, slid, sl and dlid_path_bits in the CQE (${lnh})`, async () => {
        const p = H.makePair(f, IBV_QPT_UD);
        // From rnic1 to rnic0's LID 0x12 (path bits 2 of its LMC 2), SL 3, source path bits ignored (LMC 0).
        const ah = H.createAh(f.b, f.a, 0, f.a.gid, { global, dlid: LID_A + 2 });
        const src = H.region(f.b, 1024, H.ALL_ACCESS, { fill: (i) => 255 - i });
        const dst = H.region(f.a, 2048, H.ALL_ACCESS);
        H.postRecv(p.a, H.recvWr(1n, [dst.sge(0, 2048)]));
        H.postSend(p.b, H.wrSend({ wrId: 2n, sge: [src.sge(0, 600)], ud: { ah, qpn: p.a.qp.qp_num, qkey: H.QKEY } }));
        H.expectWc(await H.poll1(p.b.scq, 'UD SEND'), { wr_id: 2n, status: IBV_WC_SUCCESS }, 'UD SEND');
        const w = await H.poll1(p.a.rcq, 'UD RECV');
        H.expectWc(w, { wr_id: 1n, status: IBV_WC_SUCCESS, byte_len: 640, src_qp: p.b.qp.qp_num, wc_flags: global ? IBV_WC_GRH : 0 }, 'UD RECV');
        expect([w.slid, w.dlid_path_bits]).toEqual([LID_B, 2]);
        H.expectBytes(dst.data.subarray(40, 640), src.data.subarray(0, 600), 'UD payload');
        if (global) {
          expect(Array.from(dst.data.subarray(8, 24)), 'GRH SGID').toEqual(Array.from(f.b.gid.raw));
          expect(Array.from(dst.data.subarray(24, 40)), 'GRH DGID').toEqual(Array.from(f.a.gid.raw));
        } else expect(dst.data.subarray(0, 40).every((x) => x === 0)).toBe(true);
      });
    });
  }

  it('the capture is LINKTYPE_INFINIBAND; every frame decodes with LNH 2 or 3, its VCRC and ICRC good', async () => {
    // Stopping the model closes (flushes) the capture.
    closed = true;
    await f.close();
    const bytes = readFileSync(join(dir, 'a.pcap'));
    expect(readPcapHeader(bytes).linktype).toBe(LINKTYPE_INFINIBAND);
    let n = 0;
    const lnhs = new Set<number>();
    for (const r of iteratePcap(bytes)) {
      const d = decodePacket(r.data, LINKTYPE_INFINIBAND);
      expect(d.ok, d.ok ? '' : d.error.message).toBe(true);
      if (d.ok) lnhs.add(d.packet.lrh!.lnh);
      n++;
    }
    expect(n).toBeGreaterThan(20);
    expect([...lnhs].sort()).toEqual([Lnh.IBA_LOCAL, Lnh.IBA_GLOBAL]);
  });
});
