/**
 * `rnic demo` (what `npm start` runs): the built-in default setup — two
 * model hosts, rnic0 and rnic1, on the in-process wire — a SEND/RECV
 * ping-pong, an RDMA WRITE bandwidth run and an RDMA READ run, with a pcap
 * of everything rnic0's port saw, and the hardware counters.
 */
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import { restartModel, stopModel } from '../../boot.js';
import { DEFAULT_CONFIG, type ModelConfig } from '../../runtime/config.js';
import { decodePacket, iteratePcap, opcodeName } from '../../wire/index.js';
import { ibv_close_device, ibv_get_device_list, ibv_open_device, rnic_read_counters } from '../../driver/verbs/index.js';
import { runLoopback } from '../../../examples/perf.js';
import { processIo } from '../../../examples/common/io.js';
import { CliError, joinDashValues, type Command } from '../command.js';

const USAGE = `usage: rnic demo [--pcap FILE] [--iters N] [--size BYTES] [--workers N]

Starts the default model (rnic0 and rnic1 cabled together), runs a SEND/RECV
ping-pong (send_lat), an RDMA WRITE bandwidth test (write_bw) and an RDMA READ
bandwidth test (read_bw) between them, prints perftest-style results and the
hardware counters, and writes every frame of rnic0's port to FILE
(default rnic-demo.pcap; open it in Wireshark).`;

/** GID index 3 of the default ports: ::ffff:192.0.2.x as RoCE v2 (index 0/1: link-local v1/v2, 2: v4-mapped v1). */
const ROCE_V2_GID = 3;

/** A decimal integer in [min, max] (perftest's own limits: the demo's tests would refuse more, after setting up). */
function integer(v: string | undefined, name: string, def: number, min: number, max: number): number {
  if (v === undefined) return def;
  const n = /^[0-9]+$/.test(v) ? Number(v) : Number.NaN;
  if (!(n >= 1)) throw new CliError(`--${name} must be a positive integer, got ${JSON.stringify(v)}`);
  if (n < min || n > max) throw new CliError(`--${name} must be ${min}..${max}, got ${v}`);
  return n;
}

export const demoCommand: Command = {
  summary: 'run the default two-host setup: ping-pong, WRITE and READ bandwidth, pcap',
  usage: USAGE,
  async run(args) {
    const { values } = parseArgs({
      args: joinDashValues(args, ['--iters', '--size', '--workers']),
      options: { pcap: { type: 'string' }, iters: { type: 'string' }, size: { type: 'string' }, workers: { type: 'string' } },
      strict: true,
    });
    const pcap = values.pcap ?? 'rnic-demo.pcap';
    const iters = integer(values.iters, 'iters', 300, 5, 100_000_000);
    const size = integer(values.size, 'size', 65536, 1, 1 << 30);
    const workers = values.workers === undefined ? DEFAULT_CONFIG.workers : /^[0-9]+$/.test(values.workers) ? Number(values.workers) : Number.NaN;
    if (!(workers >= 0 && workers <= 64)) throw new CliError(`--workers must be 0..64, got ${JSON.stringify(values.workers)}`);
    const base = DEFAULT_CONFIG;
    const config: ModelConfig = {
      ...base,
      workers,
      devices: base.devices.map((d, i) => (i === 0 ? { ...d, ports: d.ports.map((p, j) => (j === 0 ? { ...p, capture: pcap } : p)) } : d)),
    };
    await restartModel(config);
    const out = processIo;
    out.out(
      `rnic-model demo: ${config.devices.map((d) => `${d.name} (${d.ports[0]!.ipv4[0]}, ${d.ports[0]!.mac})`).join(' <-> ')}, ${workers} worker thread(s)\n\n`,
    );
    out.out('== SEND/RECV ping-pong (send_lat, 64 B)\n');
    await runLoopback({ test: 'send_lat', size: 64, iters, io: out, gid_index: ROCE_V2_GID, jitWarmUp: false });
    out.out('\n== RDMA WRITE bandwidth (write_bw)\n');
    await runLoopback({ test: 'write_bw', size, iters, io: out, gid_index: ROCE_V2_GID, jitWarmUp: false });
    out.out('\n== RDMA READ bandwidth (read_bw)\n');
    await runLoopback({ test: 'read_bw', size, iters: Math.max(5, Math.floor(iters / 2)), io: out, gid_index: ROCE_V2_GID, jitWarmUp: false });

    out.out('\n== hardware counters (non-zero)\n');
    for (const dev of ibv_get_device_list()) {
      const ctx = ibv_open_device(dev);
      const c = rnic_read_counters(ctx, 1);
      const shown = Object.entries(c)
        .filter(([, v]) => v !== 0n)
        .map(([k, v]) => `${k}=${v}`);
      out.out(`${dev.name}: ${shown.join(' ')}\n`);
      ibv_close_device(ctx);
    }
    await stopModel();

    // Summarise the capture by opcode, read back with our own decoder.
    const byOp = new Map<string, number>();
    let frames = 0;
    for (const r of iteratePcap(readFileSync(pcap))) {
      frames++;
      const d = decodePacket(r.data);
      const k = d.ok ? opcodeName(d.packet.bth.opcode) : d.error.code === 'WIRE_NOT_RDMA' ? 'other (ARP/ND)' : d.error.code;
      byOp.set(k, (byOp.get(k) ?? 0) + 1);
    }
    out.out(`\n== capture: ${frames} frames on rnic0 port 1 written to ${pcap}\n`);
    for (const [k, n] of [...byOp].sort((a, b) => b[1] - a[1])) out.out(`  ${String(n).padStart(8)}  ${k}\n`);
    out.out(`\nopen it with: wireshark ${pcap}   (or: tshark -r ${pcap})\n`);
    return 0;
  },
};
