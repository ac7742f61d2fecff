import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../test/seeded.js';
import { decodePacket, Hdr, icrcPending, ipv4MappedGid, markIcrcPending, OPCODES, Op, parseIpv6, sealIcrc, takeAsBuilt } from '../wire/index.js';
import { acquireFrame, PathTemplate, type PathInfo, releaseFrame } from './packet-builder.js';
import type { AddressVector } from './work-requests.js';

const SRC_MAC = Uint8Array.of(2, 0, 0, 0, 0, 1);

function template(kind: 'v4' | 'v6' | 'v1', defer: boolean): PathTemplate {
  const v4 = kind !== 'v6';
  const sgid = v4 ? ipv4MappedGid(Uint8Array.of(192, 0, 2, 1)) : parseIpv6('2001:db8::1');
  const dgid = v4 ? ipv4MappedGid(Uint8Array.of(192, 0, 2, 2)) : parseIpv6('2001:db8::2');
  const av: AddressVector = {
    dgid,
    dmac: Uint8Array.of(2, 0, 0, 0, 0, 2),
    flowLabel: 5,
    sl: 0,
    trafficClass: 0x68,
    hopLimit: 64,
    sgidIndex: 0,
    portNum: 1,
    dlid: 0,
    srcPathBits: 0,
    isGlobal: true,
  };
  const path: PathInfo = { framing: kind === 'v1' ? 'roce-v1' : 'roce-v2', v6: kind === 'v6', sgid, dgid, lrh: null };
  return new PathTemplate(path, av, SRC_MAC, 0x123, { hopLimit: 64, udpSrcPort: 0xc123 }, false, defer);
}

/** The request opcodes the requester sends with a payload and a RETH, or one of them. */
const REQUESTS = [
  Op.RC_SEND_ONLY,
  Op.RC_SEND_FIRST,
  Op.RC_SEND_MIDDLE,
  Op.RC_RDMA_WRITE_ONLY,
  Op.RC_RDMA_WRITE_FIRST,
  Op.RC_RDMA_WRITE_MIDDLE,
  Op.RC_RDMA_WRITE_LAST,
];

describe('PathTemplate', () => {
  it('builds frames that decode to what was asked, on every path kind, at every payload alignment (seeded, 1500 frames)', () => {
    const r = seededRandom(91);
    const n = (k: number) => Math.floor(r() * k);
    const paths = (['v4', 'v6', 'v1'] as const).flatMap((k) => [template(k, false), template(k, true)]);
    for (let i = 0; i < 1500; i++) {
      const t = paths[i % paths.length]!;
      const opcode = REQUESTS[n(REQUESTS.length)]!;
      const len = n(4) === 0 ? n(64) : 64 + n(4033);
      const align = n(9) - 1; // -1: no wish
      const psn = n(1 << 24);
      const va = n(2 ** 32) * 2 ** 16 + n(2 ** 16);
      t.setReth(va, 0xabcd1234, 0x10000);
      const { frame, payload } = t.begin(opcode, psn, 0x456, n(2), 0, len, align);
      expect(payload.length).toBe(len);
      if (align >= 0) expect(payload.byteOffset & 7).toBe(align);
      for (let j = 0; j < len; j++) payload[j] = (j * 7 + i) & 0xff;
      const built = t.finish(frame, i);
      const d = decodePacket(sealIcrc(built));
      if (!d.ok) throw d.error;
      const p = d.packet;
      expect(p.bth.opcode).toBe(opcode);
      expect(p.bth.psn).toBe(psn);
      expect(p.bth.destQp).toBe(0x456);
      expect(p.payload.length).toBe(len);
      for (let j = 0; j < len; j += 61) expect(p.payload[j]).toBe((j * 7 + i) & 0xff);
      expect(p.reth !== null).toBe((OPCODES[opcode]!.headers & Hdr.RETH) !== 0);
      if (p.reth) {
        expect(p.reth.va).toBe(BigInt(va));
        expect(p.reth.rkey).toBe(0xabcd1234);
        expect(p.reth.dmaLength).toBe(0x10000);
      }
      if (p.ipv4) expect(p.ipv4.id).toBe(i & 0xffff);
      releaseFrame(built);
    }
  });

  it('the frame pool hands out views of the asked length and start, unmarked, never one still held (seeded, 20,000 acquires)', () => {
    const r = seededRandom(17);
    const n = (k: number) => Math.floor(r() * k);
    const held: Uint8Array[] = [];
    const buffers = new Set<ArrayBufferLike>();
    const lens = [60, 82, 82, 82, 1100, 2048, 2049, 4200, 9216, 9300];
    for (let i = 0; i < 20000; i++) {
      if (held.length > 0 && (n(2) === 0 || held.length > 40)) {
        const f = held.splice(n(held.length), 1)[0]!;
        buffers.delete(f.buffer);
        // Whatever state its ICRC mark was left in goes with it.
        if (n(3) === 0) markIcrcPending(f, false, 14, 42, f.length - 4);
        else if (n(2) === 0) takeAsBuilt(f);
        releaseFrame(f);
        continue;
      }
      const len = lens[n(lens.length)]!;
      const start = n(3) === 0 ? n(8) : 0;
      const f = acquireFrame(len, start);
      expect(f.length).toBe(len);
      if (len <= 9216) expect(f.byteOffset).toBe(start);
      expect(icrcPending(f)).toBe(false);
      expect(takeAsBuilt(f)).toBe(false);
      expect(buffers.has(f.buffer)).toBe(false);
      buffers.add(f.buffer);
      held.push(f);
    }
  });
});
