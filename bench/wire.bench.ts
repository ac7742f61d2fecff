/**
 * Wire codec rates: encode+ICRC and decode+ICRC check of RoCE v2 RDMA
 * WRITE packets, against zlib.crc32 over the same bytes (the limit: the
 * ICRC has to read every byte once).
 */
import { crc32 } from 'node:zlib';
import { decodePacket, encodePacket, newPacket, Op, payloadOffset } from '../src/wire/index.js';
import { fmtRate, measure, ratio, type Rate } from './harness.js';

export interface WireBenchResult {
  size: number;
  crc: Rate;
  /** The packet builder's path: payload already gathered (DMA'd) into the frame. */
  encode: Rate;
  /** Payload copied in from elsewhere by the encoder. */
  encodeCopy: Rate;
  decode: Rate;
}

export function benchWire(sizes = [64, 4096]): WireBenchResult[] {
  const out: WireBenchResult[] = [];
  for (const size of sizes) {
    const payload = new Uint8Array(size).map((_, i) => i);
    const p = newPacket('roce-v2', Op.RC_RDMA_WRITE_MIDDLE, { payload, destQp: 0x11, psn: 1 });
    const frame = encodePacket(p);
    const out1 = new Uint8Array(frame.length);
    const crc = measure(`zlib.crc32 over the frame (${size} B payload)`, frame.length, (n) => {
      let x = 0;
      for (let i = 0; i < n; i++) x ^= crc32(frame);
      if (x === 0.5) console.log(x);
    });
    const encodeCopy = measure(`encode + payload copy + ICRC (${size} B)`, frame.length, (n) => {
      for (let i = 0; i < n; i++) {
        p.bth.psn = i & 0xffffff;
        encodePacket(p, out1);
      }
    });
    // A packet whose payload view already sits where the encoder puts it.
    const inPlace = newPacket('roce-v2', Op.RC_RDMA_WRITE_MIDDLE, { payload, destQp: 0x11, psn: 1 });
    inPlace.payload = out1.subarray(payloadOffset(p), payloadOffset(p) + size);
    inPlace.payload.set(payload);
    const encode = measure(`encode + ICRC, payload in place (${size} B)`, frame.length, (n) => {
      for (let i = 0; i < n; i++) {
        inPlace.bth.psn = i & 0xffffff;
        encodePacket(inPlace, out1);
      }
    });
    const decode = measure(`decode + ICRC check (${size} B payload)`, frame.length, (n) => {
      let ok = 0;
      for (let i = 0; i < n; i++) if (decodePacket(frame).ok) ok++;
      if (ok !== n) throw new Error('decode failed in benchmark');
    });
    out.push({ size, crc, encode, encodeCopy, decode });
  }
  return out;
}

export function printWire(results: WireBenchResult[]): void {
  console.log('\n## wire codec (RoCE v2 / IPv4 RDMA WRITE MIDDLE), best of 5 rounds');
  for (const r of results) {
    console.log(fmtRate(r.crc), '  (limit)');
    console.log(fmtRate(r.encode), `  ${ratio(r.encode, r.crc)} of limit`);
    console.log(fmtRate(r.encodeCopy), `  ${ratio(r.encodeCopy, r.crc)} of limit`);
    console.log(fmtRate(r.decode), `  ${ratio(r.decode, r.crc)} of limit`);
  }
}
