/**
 * The deferred ICRC (src/wire/lazy-icrc.ts): the simulator's devices build
 * frames with the ICRC left pending, and every reader of a frame's bytes
 * must see the ICRC the frame would have had if computed at once. Checked
 * at the encoder (every sample packet, every framing), at each byte reader
 * (the pcap writer, a link's fault hook), and end to end: every frame in the captures and every
 * frame shown to a frame observer of whole scenarios (every operation; an
 * incast through a switch that marks ECN; a lossy link) carries a good ICRC.
 */
import { describe, expect, it } from 'vitest';
import { type FaultHook, SimLink, Verdict } from '../../src/fabric/link.js';
import { Scheduler } from '../../src/runtime/sim/scheduler.js';
import type { FrameEvent } from '../../src/runtime/sim/sim-device.js';
import {
  decodePacket,
  encodePacket,
  icrcPending,
  iteratePcap,
  LINKTYPE_ETHERNET,
  LINKTYPE_INFINIBAND,
  PcapWriter,
  readIcrc,
  readPcap,
  sampleFrames,
  sealBeforeChange,
  sealIcrc,
  takeAsBuilt,
} from '../../src/wire/index.js';
import { run, scenarioJson } from './helpers.js';

interface Case {
  label: string;
  framing: 'roce-v1' | 'roce-v2' | 'ib';
  v6: boolean;
  /** An IPv6 UDP checksum is computed (it covers the ICRC). */
  udpChecksum: boolean;
  encode: (defer: boolean) => Uint8Array;
}

/** Every sample packet (src/wire/sample.ts), and the IPv6 ones again without a UDP checksum. */
function samples(): Case[] {
  const out: Case[] = [];
  for (const s of sampleFrames()) {
    if (s.packet === null || s.framing === 'mac-control') continue;
    const p = s.packet;
    const framing = s.framing;
    const v6 = p.ipv6 !== null;
    out.push({ label: s.label, framing, v6, udpChecksum: v6, encode: (defer) => encodePacket(p, undefined, 0, { deferIcrc: defer }) });
    if (v6) {
      out.push({
        label: `${s.label} (no UDP checksum)`,
        framing,
        v6,
        udpChecksum: false,
        encode: (defer) => encodePacket(p, undefined, 0, { deferIcrc: defer, ipv6UdpChecksum: false }),
      });
    }
  }
  return out;
}

const linktype = (c: Case): number => (c.framing === 'ib' ? LINKTYPE_INFINIBAND : LINKTYPE_ETHERNET);

/** Offset of the ICRC in an Ethernet RoCE frame as encoded (no padding past it for these samples). */
function icrcOffset(frame: Uint8Array): number {
  const d = decodePacket(frame, LINKTYPE_ETHERNET, { verifyIcrc: false });
  if (!d.ok) throw d.error;
  const p = d.packet;
  return p.payload.byteOffset - frame.byteOffset + p.payload.length + (-p.payload.length & 3);
}

describe('the encoder', () => {
  const cases = samples();

  it('has samples of every framing', () => {
    const framings = new Set(sampleFrames().flatMap((s) => (s.packet ? [s.packet.framing] : [])));
    expect([...framings].sort()).toEqual(['ib', 'roce-v1', 'roce-v2']);
    expect(cases.length).toBeGreaterThan(100);
  });

  it('defers only RoCE frames whose other fields do not cover the ICRC, and sealing gives the bytes of an encode done at once', () => {
    let deferred = 0;
    for (const c of cases) {
      const now = c.encode(false);
      const later = c.encode(true);
      expect(decodePacket(now, linktype(c)).ok, c.label).toBe(true);
      const mayDefer = c.framing !== 'ib' && !c.udpChecksum;
      expect(icrcPending(later), c.label).toBe(mayDefer);
      if (mayDefer) {
        deferred++;
        const at = icrcOffset(later);
        expect(readIcrc(later, at), c.label).toBe(0);
        expect(readIcrc(now, at), c.label).not.toBe(0);
        expect(decodePacket(later, linktype(c)).ok, c.label).toBe(false);
        expect(Buffer.from(sealIcrc(later)).equals(Buffer.from(now)), c.label).toBe(true);
        expect(icrcPending(later)).toBe(false);
        expect(decodePacket(later, linktype(c)).ok, c.label).toBe(true);
      } else {
        expect(Buffer.from(later).equals(Buffer.from(now)), c.label).toBe(true);
      }
    }
    expect(deferred).toBeGreaterThan(50);
  });

  it('a field the ICRC masks (IPv4 TOS: an ECN mark, TTL, checksum) may change before sealing: the same ICRC as marking after', () => {
    for (const c of cases.filter((x) => x.framing === 'roce-v2' && !x.v6)) {
      const now = c.encode(false);
      const later = c.encode(true);
      for (const f of [now, later]) {
        f[14 + 1] = f[14 + 1]! | 3; // CE
        f[14 + 8] = f[14 + 8]! - 1; // TTL
        f[14 + 10] ^= 0x5a; // the checksum a switch would recompute
      }
      sealIcrc(later);
      expect(Buffer.from(later).equals(Buffer.from(now)), c.label).toBe(true);
    }
  });

  it('sealing a frame that was never deferred changes nothing', () => {
    for (const s of sampleFrames()) {
      const copy = s.bytes.slice();
      sealIcrc(copy);
      expect(Buffer.from(copy).equals(Buffer.from(s.bytes)), s.label).toBe(true);
    }
  });
});

describe('the byte readers', () => {
  const roce = () => samples().filter((c) => c.framing === 'roce-v2' && !c.v6);

  it('the pcap writer writes the ICRC as computed at once', () => {
    const chunks: Uint8Array[] = [];
    const w = new PcapWriter({ write: (c) => chunks.push(c.slice()), close: () => {} }, { linktype: LINKTYPE_ETHERNET, nanosecond: true });
    const want: Uint8Array[] = [];
    for (const c of roce()) {
      want.push(c.encode(false));
      w.write(c.encode(true), 1n);
    }
    w.close();
    const got = readPcap(Buffer.concat(chunks)).records.map((r) => r.data);
    expect(got.length).toBe(want.length);
    for (let i = 0; i < got.length; i++) expect(Buffer.from(got[i]!).equals(Buffer.from(want[i]!))).toBe(true);
  });

  it('a link hands a hook that may change bytes the complete frame, a read-only hook the frame as it is', () => {
    for (const readOnly of [false, true]) {
      const sched = new Scheduler();
      const link = new SimLink(sched);
      const seen: boolean[] = [];
      const hook: FaultHook = (f) => {
        seen.push(decodePacket(f).ok);
        return Verdict.pass;
      };
      link.setFaultHook('aToB', hook, { readOnly });
      const got: Uint8Array[] = [];
      link.b.onReceive((f) => got.push(f));
      const cases = roce().slice(0, 20);
      for (const c of cases) link.sendOwned('aToB', c.encode(true));
      sched.runUntilIdle();
      expect(got.length).toBe(cases.length);
      expect(seen.every((ok) => ok === !readOnly)).toBe(true);
      for (let i = 0; i < got.length; i++) {
        expect(icrcPending(got[i]!)).toBe(readOnly);
        expect(Buffer.from(sealIcrc(got[i]!)).equals(Buffer.from(cases[i]!.encode(false)))).toBe(true);
      }
    }
  });
});

/** Every RoCE frame of every capture of a run, and of its observer, decodes with its ICRC checked. */
async function checkRun(json: Record<string, unknown>): Promise<{ captured: number; observed: number; cnps: number }> {
  let observed = 0;
  const bad: string[] = [];
  const observe = (e: FrameEvent): void => {
    if (e.frame[12] === 0x08 && e.frame[13] === 0x00 && e.frame[23] === 17) {
      observed++;
      const d = decodePacket(e.frame);
      if (!d.ok) bad.push(`${e.dir} ${e.device} at ${e.ns}: ${d.error.message}`);
    }
  };
  const r = await run(json, { observe });
  let captured = 0;
  let cnps = 0;
  for (const [port, pcap] of Object.entries(r.captures)) {
    for (const rec of iteratePcap(pcap)) {
      const f = rec.data;
      if (!(f[12] === 0x08 && f[13] === 0x00 && f[23] === 17)) continue;
      captured++;
      const d = decodePacket(f);
      if (!d.ok) bad.push(`${port} at ${rec.timestampNs}: ${d.error.message}`);
      else if (d.packet.bth?.opcode === 0x81) cnps++;
    }
  }
  expect(bad.slice(0, 5)).toEqual([]);
  return { captured, observed, cnps };
}

describe('end to end, every frame anyone reads has its ICRC', () => {
  it('every operation between two hosts, both ports captured', async () => {
    const json = scenarioJson('all-ops');
    json.capture = ['rnic0:1', 'rnic1:1'];
    const n = await checkRun(json);
    expect(n.captured).toBeGreaterThan(100);
    expect(n.observed).toBeGreaterThan(100);
  });

  it('an incast through a switch that marks ECN', async () => {
    const json = scenarioJson('incast-8to1');
    json.capture = ['h0:1', 'h1:1', 'h8:1'];
    const n = await checkRun(json);
    expect(n.captured).toBeGreaterThan(1000);
    // CNPs are built with their ICRC deferred too (pipeline/cnp.ts): the captures show them complete.
    expect(n.cnps).toBeGreaterThan(0);
  });

  it('a lossy link (fault hooks see complete frames; the receivers count no ICRC error)', async () => {
    const json = scenarioJson('random-loss');
    json.capture = ['rnic0:1', 'rnic1:1'];
    const n = await checkRun(json);
    expect(n.captured).toBeGreaterThan(100);
  });
});

describe('reading and changing', () => {
  it('sealing for a reader keeps the frame as built; sealing before a change ends it', () => {
    const c = samples().find((x) => x.framing === 'roce-v2' && !x.v6)!;
    const read = c.encode(true);
    sealIcrc(read);
    expect(icrcPending(read)).toBe(false);
    expect(takeAsBuilt(read)).toBe(true);
    const changed = c.encode(true);
    sealBeforeChange(changed);
    expect(decodePacket(changed).ok).toBe(true);
    expect(takeAsBuilt(changed)).toBe(false);
    // A frame from outside was never built here.
    expect(takeAsBuilt(c.encode(false))).toBe(false);
  });
});

describe('frame observers', () => {
  it('an observer reading only `headers` costs no CRC pass (the frame is still pending); `frame` is complete', async () => {
    const json = scenarioJson('write-basic');
    json.capture = [];
    let pendingAtTx = 0;
    let txRoce = 0;
    const bad: string[] = [];
    await run(json, {
      observe: (e) => {
        const h = e.headers;
        if (!(h[12] === 0x08 && h[13] === 0x00 && h[23] === 17) || e.dir !== 'tx') return;
        txRoce++;
        if (icrcPending(h)) pendingAtTx++;
        const d = decodePacket(e.frame);
        if (!d.ok) bad.push(d.error.message);
        expect(icrcPending(e.headers)).toBe(false);
      },
    });
    expect(bad).toEqual([]);
    expect(txRoce).toBeGreaterThan(10);
    // Every data frame and ACK the devices built; the scenario runner's own observers read headers only.
    expect(pendingAtTx).toBe(txRoce);
  });
});
