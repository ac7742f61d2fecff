/**
 * `rnic counters`: the hardware counters of the configured devices, by the
 * names Linux drivers use (as /sys/class/infiniband/DEV/ports/N/hw_counters
 * shows them), with their meanings under -v.
 */
import { parseArgs } from 'node:util';
import { COUNTERS } from '../../device/counters.js';
import { ibv_close_device, ibv_get_device_list, ibv_open_device, ibv_query_device, newDeviceAttr, rnic_read_counters } from '../../driver/verbs/index.js';
import { CliError, type Command } from '../command.js';

const USAGE = `usage: rnic counters [-d DEVICE] [-a] [-v] [--json]

Prints each port's counters by their Linux names: the port counters
(/sys/class/infiniband/DEV/ports/N/counters: port_xmit_data, port_rcv_data,
port_xmit_packets, port_rcv_packets, port_rcv_errors, ...) always, then the
hw_counters (rxe and mlx5 names) that are not zero.
  -d DEVICE  only this device
  -a         also hw_counters that are zero
  -v         every counter, zeros included, with its meaning
  --json     as JSON: {device: {port: {counter: value}}}`;

const DOC = new Map(COUNTERS.map((c) => [c.name, `${c.doc} [${c.source}]`]));
/** The counters Linux shows under ports/N/counters (IBTA PortCounters), listed first and even when zero. */
const PORT_COUNTERS = new Set([
  ...COUNTERS.filter((c) => c.source === 'ib_port').map((c) => c.name),
  'port_xmit_data',
  'port_rcv_data',
  'port_xmit_packets',
  'port_rcv_packets',
  'port_rcv_errors',
  'port_xmit_discards',
  'port_xmit_wait',
  'symbol_error',
  'link_error_recovery',
  'link_downed',
  'local_link_integrity_errors',
  'excessive_buffer_overrun_errors',
  'port_rcv_remote_physical_errors',
  'port_rcv_switch_relay_errors',
  'port_rcv_constraint_errors',
  'port_xmit_constraint_errors',
  'VL15_dropped',
  'unicast_xmit_packets',
  'unicast_rcv_packets',
  'multicast_xmit_packets',
  'multicast_rcv_packets',
]);

export const countersCommand: Command = {
  summary: 'print hardware counters by their Linux names',
  usage: USAGE,
  async run(args) {
    const { values } = parseArgs({
      args,
      options: {
        device: { type: 'string', short: 'd' },
        all: { type: 'boolean', short: 'a' },
        verbose: { type: 'boolean', short: 'v' },
        json: { type: 'boolean' },
      },
      strict: true,
    });
    const devs = ibv_get_device_list().filter((d) => !values.device || d.name === values.device);
    if (devs.length === 0) throw new CliError(values.device ? `no device named ${values.device}` : 'no RDMA devices found');
    const out: Record<string, Record<string, Record<string, string>>> = {};
    for (const dev of devs) {
      const ctx = ibv_open_device(dev);
      const attr = newDeviceAttr();
      ibv_query_device(ctx, attr);
      out[dev.name] = {};
      for (let port = 1; port <= attr.phys_port_cnt; port++) {
        const c = Object.entries(rnic_read_counters(ctx, port));
        const keep = ([k, v]: [string, bigint]) => values.all || values.verbose || v !== 0n || PORT_COUNTERS.has(k);
        // Port counters first, as sysfs lists counters/ before hw_counters/.
        const ordered = [...c.filter(([k]) => PORT_COUNTERS.has(k)), ...c.filter(([k]) => !PORT_COUNTERS.has(k))];
        out[dev.name]![port] = Object.fromEntries(ordered.filter(keep).map(([k, v]) => [k, v.toString()]));
      }
      ibv_close_device(ctx);
    }
    if (values.json) {
      process.stdout.write(JSON.stringify(out, null, 2) + '\n');
      return 0;
    }
    for (const [dev, ports] of Object.entries(out)) {
      for (const [port, cs] of Object.entries(ports)) {
        process.stdout.write(`${dev} port ${port}:\n`);
        const entries = Object.entries(cs);
        if (entries.length === 0) process.stdout.write('  (all zero)\n');
        for (const [k, v] of entries) process.stdout.write(`  ${k.padEnd(30)} ${v.padStart(12)}${values.verbose ? `  ${DOC.get(k) ?? ''}` : ''}\n`);
      }
    }
    return 0;
  },
};
