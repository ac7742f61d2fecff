/**
 * The model's setup, kept outside the application as rdma-core keeps it in
 * the kernel: which devices exist, their ports and addresses, the cables
 * between them, how many worker threads run them, and captures. A program
 * only names a device. Read from the JSON file named by RNIC_CONFIG, else
 * the built-in default: two devices, rnic0 and rnic1, cabled together.
 */
import { readFileSync } from 'node:fs';
import { resolveFaultRules, type ResolvedFaultRule } from '../fabric/faults.js';
import { resolveCcParams } from '../pipeline/cc-params.js';
import { QUIRK_NAMES } from '../pipeline/nic-env.js';
import { RnicError } from '../wire/errors.js';

export interface PortConfig {
  /** Station MAC, 'xx:xx:xx:xx:xx:xx'. */
  mac: string;
  ipv4: string[];
  ipv6: string[];
  /** Active MTU in bytes (256..4096). */
  mtu: number;
  /** Write every frame in and out of this port to a pcap file. */
  capture?: string;
}

export interface DeviceConfig {
  name: string;
  ports: PortConfig[];
  /** Host memory the driver may allocate from, bytes. */
  memoryBytes: number;
  /** Device capability overrides (see docs/device-interface.md, DEVICE_PARAMS). */
  caps: Record<string, unknown>;
  /** QoS and congestion-control parameters (CC_PARAMS, docs/configuration.md); validated at parse time. */
  congestion?: Record<string, unknown>;
}

/**
 * Fault rules (docs/faults.md) on a cable, applied where frames are sent: on
 * a wire 'a->b' is from `a` to `b`; on a UDP cable 'a->b' is what this port
 * sends (the other process faults its own sends). Wires between devices on
 * different worker threads carry no faults.
 */
export type CableFaults = readonly ResolvedFaultRule[];

export type CableConfig =
  | { kind: 'wire'; a: string; b: string; faults?: CableFaults }
  | { kind: 'udp'; port: string; local: string; remote: string; socketBufferBytes?: number; faults?: CableFaults };

export interface ModelConfig {
  /** Worker threads that run the devices (0: run them in the application's thread). */
  workers: number;
  devices: DeviceConfig[];
  cables: CableConfig[];
  /** Named device behaviours (docs/pipeline.md). */
  quirks: Record<string, boolean>;
  /** Seed of everything random (realtime: the fault dice; the simulator takes strings and bigints too); default 1. */
  seed?: number | string | bigint;
}

export class ConfigError extends RnicError<'CONFIG_INVALID'> {
  constructor(message: string) {
    super('CONFIG_INVALID', message);
    this.name = 'ConfigError';
  }
}

export const DEFAULT_CONFIG: ModelConfig = Object.freeze({
  workers: 1,
  devices: [
    { name: 'rnic0', memoryBytes: 64 << 20, caps: {}, ports: [{ mac: '02:00:00:00:00:01', ipv4: ['192.0.2.1'], ipv6: ['fd00::1'], mtu: 4096 }] },
    { name: 'rnic1', memoryBytes: 64 << 20, caps: {}, ports: [{ mac: '02:00:00:00:00:02', ipv4: ['192.0.2.2'], ipv6: ['fd00::2'], mtu: 4096 }] },
  ],
  cables: [{ kind: 'wire', a: 'rnic0:1', b: 'rnic1:1' }],
  quirks: {},
}) as ModelConfig;

const KNOWN_QUIRKS = new Set<string>(QUIRK_NAMES);

function fail(path: string, msg: string): never {
  throw new ConfigError(`${path}: ${msg}`);
}

function obj(v: unknown, path: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) fail(path, `expected an object, got ${JSON.stringify(v)}`);
  return v as Record<string, unknown>;
}

function onlyKeys(o: Record<string, unknown>, keys: string[], path: string): void {
  for (const k of Object.keys(o)) if (!keys.includes(k)) fail(`${path}.${k}`, `unknown setting (known: ${keys.join(', ')})`);
}

function str(v: unknown, path: string): string {
  if (typeof v !== 'string' || v.length === 0) fail(path, `expected a non-empty string, got ${JSON.stringify(v)}`);
  return v;
}

function strList(v: unknown, path: string, re: RegExp, what: string): string[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) fail(path, `expected a list of ${what}`);
  return v.map((x, i) => {
    const s = str(x, `${path}[${i}]`);
    if (!re.test(s)) fail(`${path}[${i}]`, `${JSON.stringify(s)} is not ${what}`);
    return s;
  });
}

const MAC = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i;
const IPV4 = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;
const IPV6 = /^[0-9a-f:.]+$/i;
const PORT_REF = /^[A-Za-z0-9_.-]+:\d+$/;

function size(v: unknown, path: string, def: number): number {
  if (v === undefined) return def;
  if (typeof v === 'number' && Number.isSafeInteger(v) && v > 0) return v;
  if (typeof v === 'string') {
    const m = /^(\d+)\s*(KiB|MiB|GiB)?$/.exec(v.trim());
    if (m) {
      const n = Number(m[1]) * ({ KiB: 1024, MiB: 1 << 20, GiB: 1 << 30 }[m[2] as 'KiB'] ?? 1);
      if (Number.isSafeInteger(n) && n > 0) return n;
    }
  }
  fail(path, `expected a size such as 64MiB, got ${JSON.stringify(v)}`);
}

/** Host memory: whole 4 KiB pages, and an address space the driver can name (HostMemory: below 2^53). */
const MAX_MEMORY_BYTES = 2 ** 46;
function memorySize(v: unknown, path: string): number {
  const n = size(v, path, 64 << 20);
  if (n % 4096 !== 0) fail(path, `${JSON.stringify(v)} is not a whole number of 4 KiB pages`);
  if (n > MAX_MEMORY_BYTES) fail(path, `${JSON.stringify(v)} is more than the model's limit of 64 TiB`);
  return n;
}

/** Two ends of one wire must not share a MAC or an IP address (the peer's frames would look like its own, ARP would answer itself). */
function distinctEnds(a: PortConfig, b: PortConfig, aRef: string, bRef: string, path: string): void {
  if (a.mac.toLowerCase() === b.mac.toLowerCase()) fail(path, `${aRef} and ${bRef} are on one wire with the same MAC ${a.mac}`);
  const same4 = a.ipv4.find((x) => b.ipv4.includes(x));
  if (same4) fail(path, `${aRef} and ${bRef} are on one wire with the same IPv4 address ${same4}`);
  const norm6 = (x: string) => x.toLowerCase();
  const same6 = a.ipv6.find((x) => b.ipv6.map(norm6).includes(norm6(x)));
  if (same6) fail(path, `${aRef} and ${bRef} are on one wire with the same IPv6 address ${same6}`);
}

/** Validates raw JSON into a ModelConfig; every fault names its path. */
export function parseConfig(raw: unknown, source = 'config'): ModelConfig {
  const o = obj(raw, source);
  onlyKeys(o, ['workers', 'devices', 'cables', 'quirks', 'seed'], source);
  const workers = o.workers === undefined ? 1 : o.workers;
  if (typeof workers !== 'number' || !Number.isInteger(workers) || workers < 0 || workers > 64) fail(`${source}.workers`, `expected an integer 0..64, got ${JSON.stringify(workers)}`);
  if (!Array.isArray(o.devices) || o.devices.length === 0) fail(`${source}.devices`, 'expected a non-empty list of devices');
  const names = new Set<string>();
  const devices = o.devices.map((d, i): DeviceConfig => {
    const path = `${source}.devices[${i}]`;
    const dv = obj(d, path);
    onlyKeys(dv, ['name', 'ports', 'memory', 'caps', 'congestion'], path);
    const name = str(dv.name, `${path}.name`);
    if (!/^[A-Za-z0-9_.-]+$/.test(name)) fail(`${path}.name`, `${JSON.stringify(name)}: use letters, digits, '_', '.', '-'`);
    if (names.has(name)) fail(`${path}.name`, `device ${name} is defined twice`);
    names.add(name);
    if (!Array.isArray(dv.ports) || dv.ports.length === 0) fail(`${path}.ports`, 'expected a non-empty list of ports');
    const ports = dv.ports.map((p, j): PortConfig => {
      const pp = `${path}.ports[${j}]`;
      const po = obj(p, pp);
      onlyKeys(po, ['mac', 'ipv4', 'ipv6', 'mtu', 'capture'], pp);
      const mac = str(po.mac, `${pp}.mac`);
      if (!MAC.test(mac)) fail(`${pp}.mac`, `${JSON.stringify(mac)} is not a MAC address`);
      const mtu = po.mtu === undefined ? 4096 : po.mtu;
      if (![256, 512, 1024, 2048, 4096].includes(mtu as number)) fail(`${pp}.mtu`, `expected 256, 512, 1024, 2048 or 4096, got ${JSON.stringify(mtu)}`);
      const port: PortConfig = { mac, ipv4: strList(po.ipv4, `${pp}.ipv4`, IPV4, 'an IPv4 address'), ipv6: strList(po.ipv6, `${pp}.ipv6`, IPV6, 'an IPv6 address'), mtu: mtu as number };
      if (po.capture !== undefined) port.capture = str(po.capture, `${pp}.capture`);
      return port;
    });
    const caps = dv.caps === undefined ? {} : obj(dv.caps, `${path}.caps`);
    const device: DeviceConfig = { name, ports, memoryBytes: memorySize(dv.memory, `${path}.memory`), caps };
    if (dv.congestion !== undefined) {
      const cc = obj(dv.congestion, `${path}.congestion`);
      try {
        resolveCcParams(cc, `${path}.congestion`);
      } catch (e) {
        // The parameter checker names the key: config.devices[0].congestion.rpg_gd: 0 is outside [1, 15].
        throw new ConfigError((e as Error).message);
      }
      device.congestion = cc;
    }
    return device;
  });
  const portExists = (ref: string, path: string) => {
    if (!PORT_REF.test(ref)) fail(path, `${JSON.stringify(ref)} is not DEVICE:PORT`);
    const [dev, port] = ref.split(':') as [string, string];
    const d = devices.find((x) => x.name === dev);
    if (!d) fail(path, `no device named ${dev}`);
    if (Number(port) < 1 || Number(port) > d.ports.length) fail(path, `${dev} has no port ${port}`);
  };
  const portOf = (ref: string): PortConfig => {
    const [dev, port] = ref.split(':') as [string, string];
    return devices.find((x) => x.name === dev)!.ports[Number(port) - 1]!;
  };
  const used = new Set<string>();
  const cables = (o.cables === undefined ? [] : Array.isArray(o.cables) ? o.cables : fail(`${source}.cables`, 'expected a list')).map((c, i): CableConfig => {
    const path = `${source}.cables[${i}]`;
    const co = obj(c, path);
    const use = (ref: string, p: string) => {
      portExists(ref, p);
      if (used.has(ref)) fail(p, `port ${ref} already has a cable`);
      used.add(ref);
    };
    const faults = (): { faults?: CableFaults } => {
      if (co.faults === undefined) return {};
      try {
        return { faults: resolveFaultRules(co.faults) };
      } catch (e) {
        return fail(`${path}.faults`, (e as Error).message);
      }
    };
    if (co.kind === 'wire') {
      onlyKeys(co, ['kind', 'a', 'b', 'faults'], path);
      const a = str(co.a, `${path}.a`);
      const b = str(co.b, `${path}.b`);
      use(a, `${path}.a`);
      use(b, `${path}.b`);
      distinctEnds(portOf(a), portOf(b), a, b, path);
      return { kind: 'wire', a, b, ...faults() };
    }
    if (co.kind === 'udp') {
      onlyKeys(co, ['kind', 'port', 'local', 'remote', 'socketBufferBytes', 'faults'], path);
      const port = str(co.port, `${path}.port`);
      use(port, `${path}.port`);
      const cable: CableConfig = { kind: 'udp', port, local: str(co.local, `${path}.local`), remote: str(co.remote, `${path}.remote`), ...faults() };
      if (co.socketBufferBytes !== undefined) {
        const b = size(co.socketBufferBytes, `${path}.socketBufferBytes`, 0);
        if (b < 1024 || b > 1 << 30) fail(`${path}.socketBufferBytes`, `expected 1KiB..1GiB, got ${JSON.stringify(co.socketBufferBytes)}`);
        cable.socketBufferBytes = b;
      }
      return cable;
    }
    fail(`${path}.kind`, `expected 'wire' or 'udp', got ${JSON.stringify(co.kind)}`);
  });
  const quirks: Record<string, boolean> = {};
  if (o.quirks !== undefined) {
    for (const [k, v] of Object.entries(obj(o.quirks, `${source}.quirks`))) {
      if (!KNOWN_QUIRKS.has(k)) fail(`${source}.quirks.${k}`, `unknown device behaviour (known: ${[...KNOWN_QUIRKS].join(', ')})`);
      if (typeof v !== 'boolean') fail(`${source}.quirks.${k}`, 'expected true or false');
      quirks[k] = v;
    }
  }
  let seed: number | undefined;
  if (o.seed !== undefined) {
    if (typeof o.seed !== 'number' || !Number.isSafeInteger(o.seed) || o.seed < 0) fail(`${source}.seed`, `expected a non-negative integer, got ${JSON.stringify(o.seed)}`);
    seed = o.seed;
  }
  return { workers, devices, cables, quirks, ...(seed === undefined ? {} : { seed }) };
}

/** The configuration in force: RNIC_CONFIG's file, or the default. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): ModelConfig {
  const file = env.RNIC_CONFIG;
  if (!file) return DEFAULT_CONFIG;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(`RNIC_CONFIG=${file}: cannot read it (${(e as Error).message})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new ConfigError(`${file}: not valid JSON (${(e as Error).message})`);
  }
  return parseConfig(json, file);
}
