/**
 * `rnic compare` end to end, through the built command: a run against
 * itself, against the same run with one frame dropped, the ibta profile
 * against rxe, recorded runs from directories, and bad input (exit 2).
 * The reported frame indices are checked against the captures --out wrote.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { CompareReport } from '../../src/compare/index.js';
import { decodePacket, encodePcapGlobalHeader, encodePcapRecordHeader, LINKTYPE_ETHERNET, readPcap } from '../../src/wire/index.js';

const ROOT = join(import.meta.dirname, '../..');
const CLI = join(ROOT, 'dist/src/cli/main.js');
const WRITES = join(ROOT, 'scenarios/write-basic.json');
const PROFILES = join(ROOT, 'scenarios/compare-profiles.json');
const dir = mkdtempSync(join(tmpdir(), 'rnic-compare-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function rnic(...args: string[]) {
  return spawnSync(process.execPath, [CLI, 'compare', ...args], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
}
function report(...args: string[]): { status: number | null; r: CompareReport } {
  const x = rnic(...args, '--json');
  expect(x.stderr).toBe('');
  return { status: x.status, r: JSON.parse(x.stdout) as CompareReport };
}
const frame = (pcap: string, i: number) => {
  const d = decodePacket(readPcap(new Uint8Array(readFileSync(pcap))).records[i]!.data);
  if (!d.ok) throw new Error(d.error.message);
  return d.packet;
};

describe('rnic compare', () => {
  it('a run against itself: no differences, exit 0', () => {
    const { status, r } = report(WRITES, '--a', 'ibta', '--b', 'ibta');
    expect(status).toBe(0);
    expect(r.differences).toEqual([]);
    expect(r.a.packets).toBe(200); // 100 WRITEs, 100 ACKs
    expect(r.matchedPackets).toBe(200);
    const text = rnic(WRITES, '--a', 'rxe', '--b', 'rxe');
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(/\nno differences\n/);
  });

  it('one WRITE dropped in run B: the go-back-N from its PSN, the NAK, exit 1', () => {
    const out = join(dir, 'drop');
    const { status, r } = report(WRITES, '--a', 'ibta', '--b', 'ibta', '--fault-b', 'drop:opcode=RC_RDMA_WRITE_ONLY,after=10,count=1', '--out', out);
    expect(status).toBe(1);
    const resent = r.differences.filter((d) => d.kind === 'packet-only-in-b' && d.where.flow?.startsWith('requests'));
    expect(resent).toHaveLength(1);
    const d = resent[0]!;
    // The 11th WRITE (relative PSN 10) was lost; B resends it and every later one it had sent.
    expect(d.where.relPsn).toBe(10);
    expect(d.text).toMatch(/^B sent RC_RDMA_WRITE_ONLY PSN \+10\.\.\+\d+ \(\d+ packets, transmission 2\); A did not$/);
    const p = frame(join(out, 'b', 'capture.pcap'), d.where.packetB!);
    expect(p.bth.psn).toBe(d.where.psnB);
    // That frame is the second time this PSN went out.
    const b = readPcap(new Uint8Array(readFileSync(join(out, 'b', 'capture.pcap'))));
    const same = b.records.slice(0, d.where.packetB! + 1).filter((rec) => {
      const x = decodePacket(rec.data);
      return x.ok && x.packet.bth.psn === d.where.psnB && x.packet.bth.opcode === p.bth.opcode;
    });
    expect(same).toHaveLength(2);
    // The responder NAKed the gap at that PSN: an ACK in A, a NAK PSN sequence error in B.
    const nak = r.differences.find((x) => x.kind === 'packet-field' && x.field === 'syndrome');
    expect(nak).toMatchObject({ a: 0x1f, b: 0x60, where: { relPsn: 10 } });
    expect(r.differences.every((x) => x.explainedBy === undefined)).toBe(true);
    // Recorded runs: the two directories --out wrote compare as the scenario run did.
    const again = report(join(out, 'a'), join(out, 'b'));
    expect(again.status).toBe(1);
    expect(again.r.differences.map((x) => x.text)).toEqual(r.differences.map((x) => x.text));
  });

  it('ibta against rxe: exactly the profile choices that differ on this traffic (TTL, ECT, UD source port), exit 0; --strict exit 1', () => {
    const { status, r } = report(PROFILES, '--a', 'ibta', '--b', 'rxe');
    expect(status).toBe(0);
    expect(r.unexplained).toBe(0);
    expect(new Set(r.differences.map((d) => `${d.kind}/${d.field}/${d.explainedBy}`))).toEqual(
      new Set(['packet-field/ttl/ipHopLimit', 'packet-field/ecn/ectWithCongestionControl', 'packet-field/udpSrcPort/udSourcePort']),
    );
    // ECT(0) under ibta (congestion control's ECN is on by default), the traffic class's 0 under rxe: every packet.
    const ecn = r.differences.filter((d) => d.field === 'ecn');
    expect(ecn.every((d) => d.a === 2 && d.b === 0)).toBe(true);
    expect(ecn.reduce((n, d) => n + (d.count ?? 1), 0)).toBe(r.matchedPackets);
    // Every packet differs in TTL (1 against 64); each UD datagram in its port.
    const ttl = r.differences.filter((d) => d.field === 'ttl');
    expect(ttl.every((d) => d.a === 1 && d.b === 64)).toBe(true);
    expect(ttl.reduce((n, d) => n + (d.count ?? 1), 0)).toBe(r.matchedPackets);
    const ud = r.differences.filter((d) => d.field === 'udpSrcPort');
    expect(ud).toHaveLength(1);
    expect(ud[0]).toMatchObject({ a: 'flow-label', b: 'rxe-qpn-hash' });
    expect(ud[0]!.count).toBe(4);
    const strict = rnic(PROFILES, '--strict');
    expect(strict.status).toBe(1);
    expect(strict.stdout).toMatch(new RegExp(`\n${r.differences.length} unexplained differences\n$`));
    // --allow ttl,ecn: only the UD port is left, counted under --strict.
    const allowed = report(PROFILES, '--allow', 'ttl,ecn', '--strict');
    expect(allowed.status).toBe(1);
    expect(allowed.r.unexplained).toBe(1);
  });
});

describe('rnic compare: bad input is exit 2 with one line naming it', () => {
  const bad = (...args: string[]) => {
    const x = rnic(...args);
    expect(x.stdout).toBe('');
    return x;
  };

  it('a missing file', () => {
    const x = bad(join(dir, 'nope'), join(dir, 'nope2'));
    expect(x.status).toBe(2);
    expect(x.stderr).toBe(`rnic compare: ${join(dir, 'nope')}: no such file or directory\n`);
    const s = bad(join(dir, 'nope.json'));
    expect(s.status).toBe(2);
    expect(s.stderr).toMatch(/^rnic compare: .*nope\.json.*\n$/);
  });

  it('not a pcap', () => {
    const f = join(dir, 'text.pcap');
    writeFileSync(f, 'hello, this is not a capture at all');
    const x = bad(f, f);
    expect(x.status).toBe(2);
    expect(x.stderr).toMatch(/^rnic compare: .*text\.pcap: not a pcap capture we can read: .*\n$/);
  });

  it('a truncated frame: cut by the snaplen, or cut inside its headers', () => {
    const good = readPcap(new Uint8Array(readFileSync(join(dir, 'drop', 'a', 'capture.pcap'))));
    const data = good.records[0]!.data;
    const file = (name: string, recs: { bytes: Uint8Array; orig: number }[]) => {
      const parts = [encodePcapGlobalHeader({ linktype: LINKTYPE_ETHERNET, nanosecond: true })];
      for (const r of recs) {
        const h = new Uint8Array(16);
        encodePcapRecordHeader(h, 0, 0n, r.bytes.length, r.orig, true);
        parts.push(h, r.bytes);
      }
      writeFileSync(join(dir, name), Buffer.concat(parts));
      return join(dir, name);
    };
    const snapped = file('snapped.pcap', [
      { bytes: data, orig: data.length },
      { bytes: data.subarray(0, 60), orig: data.length },
    ]);
    let x = bad(snapped, snapped);
    expect(x.status).toBe(2);
    expect(x.stderr).toMatch(/^rnic compare: .*snapped\.pcap: frame 2 is truncated \(60 of \d+ bytes captured; .*\n$/);
    const cut = file('cut.pcap', [{ bytes: data.subarray(0, 50), orig: 50 }]);
    x = bad(cut, cut);
    expect(x.status).toBe(2);
    expect(x.stderr).toMatch(/^rnic compare: .*cut\.pcap: frame 1 is cut short: .*\n$/);
  });

  it('a run directory with a broken timeline, an unknown profile, a bad --allow', () => {
    const run = join(dir, 'drop', 'a');
    writeFileSync(join(dir, 'drop', 'b', 'timeline.json'), '{"qps": [{"qp": "q0", "wrs": [{"index": "one"}]}]}');
    let x = bad(run, join(dir, 'drop', 'b'));
    expect(x.status).toBe(2);
    expect(x.stderr).toMatch(/^rnic compare: .*timeline\.json\.qps\[0\]\.wrs\[0\]\.index: expected an integer\n$/);
    x = bad(WRITES, '--b', 'mlx4');
    expect(x.status).toBe(2);
    expect(x.stderr).toMatch(/--b: unknown profile "mlx4" \(known: ibta, rxe\)/);
    x = bad(WRITES, '--allow', 'ttl,everything');
    expect(x.status).toBe(2);
    expect(x.stderr).toMatch(/--allow: unknown "everything"/);
  });
});
