/**
 * The shared memory of one model device, made where the "machine" is made
 * (the application's thread) and handed to whichever thread runs the
 * device: host memory (with the driver's allocator on this side), the BAR,
 * the context tables and the counters. All of it is SharedArrayBuffers, so
 * it crosses to a worker by reference.
 */
import { resolveCapabilities, type Capabilities, type CapabilitiesConfig } from '../device/capabilities.js';
import { ContextTables, type ContextTablesDescriptor } from '../device/contexts.js';
import { HwCounters, type HwCountersDescriptor } from '../device/counters.js';
import { HostMemory, type HostMemoryDescriptor } from '../device/host-memory.js';
import { Bar } from '../device/registers.js';
import { ConfigError } from './config-error.js';
import { type DeviceProfile, resolveProfile } from '../pipeline/profiles.js';
import { EthPort, type PortClock, resolveEthPortParams } from '../pipeline/eth-port.js';
import { LINKTYPE_ETHERNET, LINKTYPE_INFINIBAND } from '../wire/pcap.js';
import type { DeviceConfig, PortConfig } from './config.js';

/** Plain data: posted to a worker as is. */
export interface DeviceResources {
  name: string;
  capsConfig: CapabilitiesConfig;
  /** The device's `congestion` section as configured (resolveCcParams makes the values). */
  ccConfig: Record<string, unknown>;
  /** Where the device's behaviour differs from the IBTA's (resolved from the configuration's `profile`). */
  profile: DeviceProfile;
  ports: PortConfig[];
  mem: HostMemoryDescriptor;
  bar: SharedArrayBuffer;
  tables: ContextTablesDescriptor;
  counters: HwCountersDescriptor;
}

export interface DeviceOnHost {
  readonly resources: DeviceResources;
  readonly caps: Capabilities;
  /** The driver's view: host memory with its allocator, the BAR, the counter window. */
  readonly mem: HostMemory;
  readonly bar: Bar;
  readonly counters: HwCounters;
  readonly nodeGuid: bigint;
}

/** Node GUID from the first port's MAC, as Linux derives it (EUI-64). */
export function guidFromMac(mac: string): bigint {
  const m = mac.split(':').map((x) => parseInt(x, 16));
  const bytes = [m[0]! ^ 0x02, m[1]!, m[2]!, 0xff, 0xfe, m[3]!, m[4]!, m[5]!];
  return bytes.reduce((acc, b) => (acc << 8n) | BigInt(b), 0n);
}

export function capsConfigOf(d: DeviceConfig): CapabilitiesConfig {
  const guid = `0x${guidFromMac(d.ports[0]!.mac).toString(16).padStart(16, '0')}`;
  return {
    device: { nodeGuid: guid, sysImageGuid: guid, ...d.caps },
    ports: d.ports.map((p) => ({
      macAddress: p.mac,
      ipv4Addresses: p.ipv4,
      ipv6Addresses: p.ipv6,
      activeMtu: p.mtu,
      ...(p.ib ? { linkLayer: 'INFINIBAND', lid: p.ib.lid, lmc: p.ib.lmc, smLid: p.ib.smLid } : {}),
    })),
  };
}

export function createDevice(d: DeviceConfig): DeviceOnHost {
  const capsConfig = capsConfigOf(d);
  const caps = resolveCapabilities(capsConfig);
  let mem: HostMemory;
  try {
    mem = HostMemory.create({ size: d.memoryBytes });
  } catch (e) {
    // V8 says only "Array buffer allocation failed": name the setting.
    throw new ConfigError(`devices[${d.name}].memory: cannot allocate ${d.memoryBytes} bytes of host memory (${(e as Error).message})`);
  }
  const bar = Bar.create(caps);
  const tables = ContextTables.create(caps);
  const counters = HwCounters.create(caps.ports.length, 1);
  return {
    resources: {
      name: d.name,
      capsConfig,
      ccConfig: d.congestion ?? {},
      profile: resolveProfile(d.profile),
      ports: d.ports,
      mem: mem.descriptor,
      bar: bar.sab,
      tables: tables.descriptor,
      counters: counters.descriptor,
    },
    caps,
    mem,
    bar,
    counters,
    nodeGuid: guidFromMac(d.ports[0]!.mac),
  };
}

/** The MAC function of a configured port: Ethernet, or a native InfiniBand link with its LIDs and SL2VL map. */
export function makePort(p: PortConfig, path: string, clock: PortClock): EthPort {
  const params = resolveEthPortParams({ macAddress: p.mac, ipv4Addresses: p.ipv4, ipv6Addresses: p.ipv6 }, path);
  return new EthPort(params, clock, undefined, p.ib ? { lid: p.ib.lid, lmc: p.ib.lmc, sl2vl: p.ib.sl2vl } : null);
}

/** The pcap link type of a configured port's capture. */
export function portLinktype(p: PortConfig): number {
  return p.ib ? LINKTYPE_INFINIBAND : LINKTYPE_ETHERNET;
}
