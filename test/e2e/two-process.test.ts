/**
 * Two model processes joined by a UDP cable on 127.0.0.1 (RoCE v2 frames in
 * UDP datagrams, QEMU socket convention): this process runs rnic0, a forked
 * child (two-process-child.ts) runs rnic1, each from its own RNIC_CONFIG
 * JSON file. QP numbers, GIDs, PSNs and the child's rkey/address cross the
 * fork IPC channel; the data crosses the cable. The parent WRITEs into the
 * child's memory, SENDs to it, and READs from it; the bytes are checked on
 * both sides. Neither driver knows the other's MAC: the ports resolve it
 * with ARP over the cable.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { freeUdpPort } from '../helpers/ports.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentModel, restartModel, stopModel } from '../../src/boot.js';
import { loadConfig } from '../../src/runtime/config.js';
import { IBV_QPT_RC, IBV_WC_RDMA_READ, IBV_WC_RDMA_WRITE, IBV_WC_SEND, IBV_WC_SUCCESS, IBV_WC_WITH_IMM } from '../../src/driver/verbs/index.js';
import * as H from './harness.js';

const HALF = 65536;
/** Deadlines here only catch a hang: a loaded machine makes everything slow, not wrong. */
const HANG_MS = 60_000;
/** ~17 s transport timeout: timing is not what is tested. */
const PATIENT = { timeout: 22 };

interface Msg {
  type: string;
  [k: string]: unknown;
}

/** Messages from the child, awaited by type with a deadline. */
class Mailbox {
  private readonly queue: Msg[] = [];
  private waiter: (() => void) | null = null;
  private exited: string | null = null;
  constructor(
    readonly child: ChildProcess,
    private readonly stderr: () => string,
  ) {
    child.on('message', (m: Msg) => {
      this.queue.push(m);
      this.waiter?.();
    });
    child.on('exit', (code, sig) => {
      this.exited = `exited (code ${code}, signal ${sig})`;
      this.waiter?.();
    });
  }
  async next(type: string, id?: number, ms = HANG_MS): Promise<Msg> {
    const end = Date.now() + ms;
    for (;;) {
      const err = this.queue.find((m) => m.type === 'error');
      if (err) throw new Error(`child failed: ${String(err['message'])}\n${this.stderr()}`);
      const i = this.queue.findIndex((m) => m.type === type && (id === undefined || m['id'] === id));
      if (i >= 0) return this.queue.splice(i, 1)[0]!;
      if (this.exited) throw new Error(`child ${this.exited} before sending '${type}'\n${this.stderr()}`);
      const left = end - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for '${type}' from the child\n${this.stderr()}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, left);
        this.waiter = () => {
          clearTimeout(t);
          r();
        };
      });
      this.waiter = null;
    }
  }
}

/**
 * Either the ports' cables meet directly, or this process runs a switch
 * (docs/fabric.md, "Switches in the realtime runtime") between rnic0 (a
 * wire) and the child's rnic1 (the UDP cable, with rnic1's addresses
 * named on it): the same traffic, the switch answering ARP for both.
 */
describe.each([{ via: 'directly' }, { via: 'through a switch in this process' }])('two processes over a UDP cable, $via', ({ via }) => {
  const switched = via !== 'directly';
  let dir: string;
  let child: ChildProcess | null = null;
  let box: Mailbox;
  let dev: H.Dev;
  let stderr = '';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rnic-e2e-'));
    const [pa, pb] = [await freeUdpPort(), await freeUdpPort()];
    const device = (name: string, n: number) => ({
      name,
      ports: [
        {
          mac: `02:00:00:00:00:0${n}`,
          ipv4: [`192.0.2.${n}`],
          ipv6: [`fd00::${n}`],
          mtu: 4096,
          ...(process.env.E2E_CAPTURE ? { capture: `${process.env.E2E_CAPTURE}-${name}.pcap` } : {}),
        },
      ],
    });
    const cfgA = switched
      ? {
          workers: 1,
          devices: [device('rnic0', 1)],
          switches: [{ name: 'sw0', ports: 2 }],
          cables: [
            { kind: 'wire', a: 'rnic0:1', b: 'sw0:1' },
            {
              kind: 'udp',
              port: 'sw0:2',
              local: `127.0.0.1:${pa}`,
              remote: `127.0.0.1:${pb}`,
              hosts: [{ mac: '02:00:00:00:00:02', ipv4: ['192.0.2.2'], ipv6: ['fd00::2'] }],
            },
          ],
        }
      : { workers: 1, devices: [device('rnic0', 1)], cables: [{ kind: 'udp', port: 'rnic0:1', local: `127.0.0.1:${pa}`, remote: `127.0.0.1:${pb}` }] };
    const cfgB = { workers: 1, devices: [device('rnic1', 2)], cables: [{ kind: 'udp', port: 'rnic1:1', local: `127.0.0.1:${pb}`, remote: `127.0.0.1:${pa}` }] };
    writeFileSync(join(dir, 'a.json'), JSON.stringify(cfgA, null, 2));
    writeFileSync(join(dir, 'b.json'), JSON.stringify(cfgB, null, 2));

    // Answering at once, and on the cable once its socket is bound.
    await (await restartModel(loadConfig({ RNIC_CONFIG: join(dir, 'a.json') }))).cabled;
    dev = H.openDev('rnic0');

    const script = fileURLToPath(new URL('./two-process-child.ts', import.meta.url));
    const register = new URL('../fabric/register-ts.mjs', import.meta.url).href;
    child = fork(script, [], {
      execArgv: ['--import', register],
      env: { ...process.env, RNIC_CONFIG: join(dir, 'b.json'), E2E_HALF: String(HALF) },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout!.on('data', (d: Buffer) => (stderr += d.toString()));
    box = new Mailbox(child, () => stderr);
    await box.next('started', undefined, HANG_MS);
  }, 2 * HANG_MS);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      child.send({ type: 'exit' });
      const gone = new Promise<void>((r) => child!.once('exit', () => r()));
      if ((await H.within(gone, 5000)) === H.TIMEOUT) child.kill('SIGKILL');
    }
    if (dev) H.closeDev(dev);
    await stopModel();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, HANG_MS);

  let nextId = 0;
  /** A connected RC QP pair: ours on rnic0, the child's on rnic1. */
  async function session(): Promise<{ id: number; ep: H.Ep; raddr: bigint; rkey: number }> {
    const id = ++nextId;
    child!.send({ type: 'newqp', id });
    const ready = await box.next('ready', id);
    expect(ready['half']).toBe(HALF);
    const remote: H.RemoteQp = { qpn: ready['qpn'] as number, gid: { raw: Uint8Array.from(Buffer.from(ready['gid'] as string, 'hex')) } };
    const ep = H.createQp(dev, IBV_QPT_RC);
    H.toInit(ep);
    H.toRtr(ep, remote, ready['psn'] as number);
    H.toRts(ep, 0x777, PATIENT);
    child!.send({ type: 'connect', id, qpn: ep.qp.qp_num, gid: Buffer.from(dev.gid.raw).toString('hex'), psn: 0x777 });
    await box.next('connected', id);
    return { id, ep, raddr: BigInt(ready['addr'] as string), rkey: ready['rkey'] as number };
  }

  it('the first WRITE goes out once ARP has resolved the peer (nobody in this process knows its MAC)', async () => {
    const s = await session();
    const src = H.region(dev, 4096, H.ALL_ACCESS, { fill: (i) => i ^ 0xa5 });
    H.postSend(s.ep, H.wrWrite({ wrId: 1n, sge: [src.sge(0, 3000)], remote: { addr: s.raddr, rkey: s.rkey } }));
    H.expectWc(
      await H.poll1(s.ep.scq, 'the first WRITE to the other process (ARP, then 3 packets)', HANG_MS),
      { wr_id: 1n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_WRITE },
      'write',
    );
    child!.send({ type: 'region', id: s.id });
    const r = await box.next('region', s.id);
    const region = Uint8Array.from(Buffer.from(r['region'] as string, 'hex'));
    H.expectBytes(region.subarray(0, 3000), src.data.subarray(0, 3000), 'WRITE target in the child');
    expect(region.subarray(3000, 4096).every((x) => x === 0)).toBe(true);
  });

  it('RDMA WRITE + SEND + READ between the processes', async () => {
    const { ep, raddr, rkey, id } = await session();
    const wlen = 20_000;
    const src = H.region(dev, HALF, H.ALL_ACCESS, { fill: (i) => (i * 7 + (i >> 9)) & 0xff });
    const back = H.region(dev, HALF);
    const before = H.counters(dev);

    // WRITE 20 000 B at offset 100 of the child's first half (20 packets).
    H.postSend(ep, H.wrWrite({ wrId: 1n, sge: [src.sge(0, wlen)], remote: { addr: raddr + 100n, rkey } }));
    H.expectWc(await H.poll1(ep.scq, 'WRITE across processes', HANG_MS), { wr_id: 1n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_WRITE }, 'write');
    // SEND with immediate, 3000 B, after the WRITE on the same QP: the child sees the WRITE's bytes when the SEND lands.
    H.postSend(ep, H.wrSend({ wrId: 2n, sge: [src.sge(wlen, 3000)], imm: 0xabcdef01 }));
    H.expectWc(await H.poll1(ep.scq, 'SEND across processes', HANG_MS), { wr_id: 2n, status: IBV_WC_SUCCESS, opcode: IBV_WC_SEND }, 'send');
    const got = await box.next('recv', id);
    expect({ status: got['status'], byteLen: got['byteLen'], imm: got['imm'], flags: got['flags'], wrId: got['wrId'] }).toEqual({
      status: IBV_WC_SUCCESS,
      byteLen: 3000,
      imm: 0xabcdef01,
      flags: IBV_WC_WITH_IMM,
      wrId: '1',
    });
    H.expectBytes(Uint8Array.from(Buffer.from(got['payload'] as string, 'hex')), src.data.subarray(wlen, wlen + 3000), 'SEND payload seen by the child');
    const region = Uint8Array.from(Buffer.from(got['region'] as string, 'hex'));
    const expected = new Uint8Array(HALF);
    expected.set(src.data.subarray(0, wlen), 100);
    H.expectBytes(region, expected, "the child's WRITE target (written bytes, zeros around them)");

    // READ the child's pattern half (64 KiB: 64 response packets) in two parts.
    H.postSend(ep, [
      H.wrRead({ wrId: 3n, sge: [back.sge(0, HALF / 2)], remote: { addr: raddr + BigInt(HALF), rkey } }),
      H.wrRead({ wrId: 4n, sge: [back.sge(HALF / 2, HALF / 2)], remote: { addr: raddr + BigInt(HALF + HALF / 2), rkey } }),
    ]);
    const rd = await H.pollN(ep.scq, 2, 'two READs across processes', HANG_MS);
    H.expectWc(rd[0]!, { wr_id: 3n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_READ, byte_len: HALF / 2 }, 'read 1');
    H.expectWc(rd[1]!, { wr_id: 4n, status: IBV_WC_SUCCESS, opcode: IBV_WC_RDMA_READ, byte_len: HALF / 2 }, 'read 2');
    H.expectBytes(back.data, H.pattern(HALF, 77), 'bytes READ from the child');
    back.checkGuards();

    const d = H.counterDelta(before, H.counters(dev));
    // 20 WRITE packets + 3 SEND packets + 2 READ requests, at least.
    expect(d['sent_pkts'] ?? 0n, 'packets sent by rnic0').toBeGreaterThanOrEqual(25n);
    expect(d['rcvd_pkts'] ?? 0n, 'packets received by rnic0 (ACKs + 64 read responses)').toBeGreaterThanOrEqual(64n);
    expect(d['rx_icrc_encapsulated'] ?? 0n, 'ICRC errors').toBe(0n);
    if (switched) {
      // It all went through the switch, which answered rnic0's ARP for the child (the child learns rnic0's MAC from its packets).
      const [p1, p2] = (await currentModel()!.fabricStats!()).switches.sw0!;
      expect(p1!.rxFrames, 'frames from rnic0 into the switch').toBeGreaterThanOrEqual(25);
      expect(p2!.rxFrames, 'frames from the child into the switch').toBeGreaterThanOrEqual(64);
      expect(p1!.arpReplies, 'ARP answered by the switch').toBeGreaterThanOrEqual(1);
      expect(p1!.droppedNoRoute + p2!.droppedNoRoute + p1!.droppedFrames + p2!.droppedFrames).toBe(0);
    }
  });

  it('20 × 1 KiB SEND ping-pong: every byte back, and no packet sent twice (no loss on loopback, so no retransmission)', async () => {
    const s = await session();
    const out = H.region(dev, 1024, H.ALL_ACCESS);
    const back = H.region(dev, 20 * 1024, H.ALL_ACCESS);
    child!.send({ type: 'echo', id: s.id, count: 20 });
    const before = H.counters(dev);
    child!.send({ type: 'counters', id: s.id });
    const childBefore = (await box.next('counters', s.id))['counters'] as Record<string, string>;
    for (let i = 0; i < 20; i++) {
      out.data.set(H.pattern(1024, 100 + i));
      H.postRecv(s.ep, H.recvWr(BigInt(i), [back.sge(i * 1024, 1024)]));
      H.postSend(s.ep, H.wrSend({ wrId: BigInt(i), sge: [out.sge(0, 1024)] }));
      H.expectWc(await H.poll1(s.ep.scq, `ping ${i}`, HANG_MS), { wr_id: BigInt(i), status: IBV_WC_SUCCESS, opcode: IBV_WC_SEND }, `ping ${i}`);
      H.expectWc(await H.poll1(s.ep.rcq, `pong ${i}`, HANG_MS), { wr_id: BigInt(i), status: IBV_WC_SUCCESS, byte_len: 1024 }, `pong ${i}`);
      H.expectBytes(back.data.subarray(i * 1024, (i + 1) * 1024), H.pattern(1024, 100 + i), `pong ${i} payload`);
    }
    // Let the last ACK arrive before reading the counters.
    child!.send({ type: 'counters', id: s.id });
    let childAfter = (await box.next('counters', s.id))['counters'] as Record<string, string>;
    for (let i = 0; i < 100 && BigInt(childAfter['rcvd_pkts']!) - BigInt(childBefore['rcvd_pkts']!) < 40n; i++) {
      await new Promise((r) => setTimeout(r, 20));
      child!.send({ type: 'counters', id: s.id });
      childAfter = (await box.next('counters', s.id))['counters'] as Record<string, string>;
    }
    const d = H.counterDelta(before, H.counters(dev));
    const dc = Object.fromEntries(Object.keys(childAfter).map((k) => [k, BigInt(childAfter[k]!) - BigInt(childBefore[k] ?? '0')]));
    // 20 SENDs and 20 ACKs each way: one packet per message, none twice.
    expect({ sent: d['sent_pkts'], rcvd: d['rcvd_pkts'], dup: d['duplicate_request'] ?? 0n, timeouts: d['local_ack_timeout_err'] ?? 0n }, 'rnic0').toEqual({
      sent: 40n,
      rcvd: 40n,
      dup: 0n,
      timeouts: 0n,
    });
    expect({ sent: dc['sent_pkts'], rcvd: dc['rcvd_pkts'], dup: dc['duplicate_request'], timeouts: dc['local_ack_timeout_err'] }, 'rnic1 in the child').toEqual(
      { sent: 40n, rcvd: 40n, dup: 0n, timeouts: 0n },
    );
  });
});
