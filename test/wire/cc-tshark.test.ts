/**
 * Wireshark judges what the model itself sends for congestion control: a
 * simulated run where an ecn-mark fault makes rnic1 send CNPs and rnic1's
 * port sends PFC frames, both ports captured; tshark reads the captures
 * back. Every CNP decodes as InfiniBand over UDP 4791 with opcode 0x81
 * (tshark 4.0 calls it unknown but reads the BTH), its destination QP and
 * DSCP, ECN ECT(0), and a good ICRC (checked with src/wire); every PFC frame
 * as MAC Control class-based flow control with the class vector and times
 * sent, not malformed, to 01:80:c2:00:00:01.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startSimModel, stopModel } from '../../src/boot.js';
import { IBV_QPT_RC, IBV_WC_SUCCESS } from '../../src/driver/verbs/index.js';
import { decodePacket, readPcap } from '../../src/wire/index.js';
import { closeDev, connect, createQp, openDev, pollN, postSend, region, twoDeviceConfig, wrWrite } from '../e2e/harness.js';
import { TSHARK, tsharkFields, tsharkInt } from '../helpers/tshark.js';

const dir = mkdtempSync(join(tmpdir(), 'rnic-cc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(!TSHARK)('CNPs and PFC frames the model sends, judged by tshark', () => {
  it('decodes every one as sent', async () => {
    const pcap = join(dir, 'rnic1.pcap');
    const sim = await startSimModel({
      ...twoDeviceConfig(0, (c) => {
        c.devices[1]!.ports[0]!.capture = pcap;
        c.devices[1]!.congestion = { min_time_between_cnps: 2, cnp_dscp: 46 };
      }),
      seed: 'cc-tshark',
      faults: [{ action: 'ecn-mark', direction: 'a->b', match: { opcode: 'write' } }],
    });
    const a = openDev('rnic0');
    const b = openDev('rnic1');
    const p = { a: createQp(a, IBV_QPT_RC), b: createQp(b, IBV_QPT_RC) };
    connect(p.a, p.b);
    const src = region(a, 8 * 16384);
    const dst = region(b, 8 * 16384);
    for (let i = 0; i < 8; i++)
      postSend(p.a, wrWrite({ sge: [src.sge(i * 16384, 16384)], remote: { addr: dst.at(i * 16384), rkey: dst.rkey }, wrId: BigInt(i) }));
    for (const w of await pollN(p.a.scq, 8, 'WRITEs')) expect(w.status).toBe(IBV_WC_SUCCESS);
    const pfcs: [number, number[]][] = [
      [0x08, [0, 0, 0, 0xffff, 0, 0, 0, 0]],
      [0x08, [0, 0, 0, 0, 0, 0, 0, 0]],
      [0xa5, [1, 0, 300, 0, 0, 4000, 0, 65535]],
    ];
    for (const [ce, t] of pfcs) {
      sim.sendPfc('rnic1:1', ce, t);
      sim.advance(1000);
    }
    closeDev(a);
    closeDev(b);
    await stopModel();

    // Our own decode first: which frames are CNPs, and their ICRC is good.
    const frames = readPcap(readFileSync(pcap)).records;
    const cnpIdx: number[] = [];
    frames.forEach((r, i) => {
      const d = decodePacket(r.data);
      if (d.ok && d.packet.bth.opcode === 0x81) {
        cnpIdx.push(i);
        expect(d.packet.bth.destQp).toBe(p.a.qp.qp_num);
      }
    });
    expect(cnpIdx.length).toBeGreaterThan(3);

    const rows = tsharkFields(pcap, [
      'frame.protocols',
      '_ws.malformed',
      'eth.dst',
      'infiniband.bth.opcode',
      'infiniband.bth.destqp',
      'infiniband.bth.psn',
      'infiniband.bth.p_key',
      'ip.dsfield.dscp',
      'ip.dsfield.ecn',
      'udp.srcport',
      'udp.dstport',
      'macc.opcode',
      'macc.cbfc.enbv',
      ...Array.from({ length: 8 }, (_, i) => `macc.cbfc.pause_time.c${i}`),
    ]);
    expect(rows.length).toBe(frames.length);
    const problems: string[] = [];
    for (const i of cnpIdx) {
      const t = rows[i]!;
      if (!t['frame.protocols']!.includes('udp:infiniband')) problems.push(`frame ${i}: protocols ${t['frame.protocols']}`);
      if (t['_ws.malformed'] !== '') problems.push(`frame ${i}: malformed`);
      if (tsharkInt(t['infiniband.bth.opcode']!) !== 0x81n) problems.push(`frame ${i}: opcode ${t['infiniband.bth.opcode']}`);
      if (tsharkInt(t['infiniband.bth.destqp']!) !== BigInt(p.a.qp.qp_num)) problems.push(`frame ${i}: destqp ${t['infiniband.bth.destqp']}`);
      if (tsharkInt(t['infiniband.bth.psn']!) !== 0n || tsharkInt(t['infiniband.bth.p_key']!) !== 0xffffn) problems.push(`frame ${i}: psn/pkey`);
      if (tsharkInt(t['ip.dsfield.dscp']!) !== 46n || tsharkInt(t['ip.dsfield.ecn']!) !== 2n)
        problems.push(`frame ${i}: dscp ${t['ip.dsfield.dscp']} ecn ${t['ip.dsfield.ecn']}`);
      if (t['udp.srcport'] !== '0' || t['udp.dstport'] !== '4791') problems.push(`frame ${i}: ports ${t['udp.srcport']} → ${t['udp.dstport']}`);
    }
    const pfcRows = rows.filter((t) => t['macc.opcode'] !== '');
    expect(pfcRows.length).toBe(pfcs.length);
    pfcRows.forEach((t, k) => {
      const [ce, times] = pfcs[k]!;
      if (t['_ws.malformed'] !== '') problems.push(`PFC ${k}: malformed`);
      if (t['eth.dst'] !== '01:80:c2:00:00:01') problems.push(`PFC ${k}: dst ${t['eth.dst']}`);
      if (tsharkInt(t['macc.opcode']!) !== 0x0101n) problems.push(`PFC ${k}: opcode ${t['macc.opcode']}`);
      if (tsharkInt(t['macc.cbfc.enbv']!) !== BigInt(ce)) problems.push(`PFC ${k}: class vector ${t['macc.cbfc.enbv']}`);
      times.forEach((q, c) => {
        const got = tsharkInt(t[`macc.cbfc.pause_time.c${c}`]!);
        if (got !== BigInt(q)) problems.push(`PFC ${k}: C${c} ${got} ≠ ${q}`);
      });
    });
    expect(problems).toEqual([]);
  });
});
