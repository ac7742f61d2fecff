/**
 * The model's setup, kept outside the application as rdma-core keeps it in
 * the kernel: which devices exist, their ports and addresses, the cables
 * between them, how many worker threads run them, and captures. A program
 * only names a device. Read from the JSON file named by RNIC_CONFIG, else
 * the built-in default: two devices, rnic0 and rnic1, cabled together.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { DEVICE_PARAMS } from '../device/capabilities.js';
import { resolveFaultRules, type ResolvedFaultRule } from '../fabric/faults.js';
import { bool, firstIssue, schemaRef, int, list, numberOrText, oneOf, paramsObject, parsed, shown, strictObject, text } from '../params/schema.js';
import { CC_PARAMS, resolveCcParams } from '../pipeline/cc-params.js';
import type { SwitchConfig } from '../fabric/switch/config.js';
import { PROFILE_NAMES, type ProfileSpec } from '../pipeline/profiles.js';
import { FabricError } from '../fabric/cable.js';
import { ConfigError } from './config-error.js';
import type { HostAddresses } from './switch-routes.js';
import { duration, rate, resolveSwitchConfig, SwitchSchema } from './switch-schema.js';
import { checkUdpAddresses, endpointText, type UdpEndpoint } from './udp-cable.js';

export interface PortConfig {
  /** Station MAC, 'xx:xx:xx:xx:xx:xx'. */
  mac: string;
  ipv4: string[];
  ipv6: string[];
  /** Active MTU in bytes (256..4096). */
  mtu: number;
  /** Write every frame in and out of this port to a pcap file. */
  capture?: string;
  /** Native InfiniBand link layer (absent: Ethernet, RoCE). */
  ib?: IbPortConfig;
}

/** What a native InfiniBand port has that the subnet manager would assign (docs/configuration.md). */
export interface IbPortConfig {
  /** Base LID, 1..0xBFFF, a multiple of 2^lmc. */
  lid: number;
  /** LID mask count 0..7: the port answers lid .. lid + 2^lmc - 1. */
  lmc: number;
  /** The subnet manager's LID (ibv_query_port sm_lid). */
  smLid: number;
  /** VL of each SL 0..15 (SL2VL table); identity when not given. */
  sl2vl: readonly number[];
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
  /** Where this device's behaviour differs from the IBTA's (src/pipeline/profiles.ts); absent: `ibta`. */
  profile?: ProfileSpec;
}

/**
 * Fault rules (docs/faults.md) on a cable, applied where frames are sent: on
 * a wire 'a->b' is from `a` to `b`; on a UDP cable 'a->b' is what this port
 * sends and 'b->a' what it receives (rules with `on: 'rx'` act there: the
 * peer may be a program the model does not run). Wires between devices on
 * different worker threads carry no faults.
 */
export type CableFaults = readonly ResolvedFaultRule[];

export type CableConfig =
  | { kind: 'wire'; a: string; b: string; faults?: CableFaults }
  | {
      kind: 'udp';
      port: string;
      local: string;
      remote: string;
      socketBufferBytes?: number;
      /** Pace what the port sends to this many bit/s (src/runtime/pacer.ts); absent: as fast as the socket takes it. */
      rate?: number;
      /** With `rate`: bytes that may go back to back (default DEFAULT_BURST_BYTES). */
      burstBytes?: number;
      faults?: CableFaults;
      /** On a switch port: the hosts beyond the cable (the switch routes their addresses to it). */
      hosts?: HostAddresses[];
    };

/**
 * A switch between the devices (src/fabric/switch); cables name its ports
 * 'sw0:1' ... The simulator takes each port's rate, delay and MTU from the
 * link behind it; the realtime runtime from here.
 */
export interface SwitchEntry {
  readonly name: string;
  readonly ports: number;
  readonly config?: SwitchConfig;
  /** Realtime: every port's line rate, bit/s. */
  readonly linkRate?: number;
  /** Realtime: the cable delay PFC headroom is sized for, ns. */
  readonly delayNs?: number;
  /** Realtime: the largest frame forwarded (bytes, no FCS), for the headroom. */
  readonly mtu?: number;
}

export interface ModelConfig {
  /** Worker threads that run the devices (0: run them in the application's thread). */
  workers: number;
  /** How long an idle device engine (a worker) polls before it sleeps, µs (LoopTuning.spinNs; default 50). */
  engineSpinUs?: number;
  devices: DeviceConfig[];
  cables: CableConfig[];
  /** Seed of everything random (realtime: the fault dice; the simulator takes strings and bigints too); default 1. */
  seed?: number | string | bigint;
  /** Switches between the devices (docs/fabric.md). */
  switches?: readonly SwitchEntry[];
}

export { ConfigError };

/**
 * `workers` when the configuration names none: 0 (the devices in the
 * application's thread) on a machine with at most 2 cores, where every
 * hand-off between threads waits for a core and the inline layout is 2-20x
 * faster on every figure; else 1 (docs/pipeline.md, "Choosing the thread
 * layout").
 */
export function defaultWorkers(cores: number = availableParallelism()): number {
  return cores <= 2 ? 0 : 1;
}

export const DEFAULT_CONFIG: ModelConfig = Object.freeze({
  workers: defaultWorkers(),
  devices: [
    { name: 'rnic0', memoryBytes: 64 << 20, caps: {}, ports: [{ mac: '02:00:00:00:00:01', ipv4: ['192.0.2.1'], ipv6: ['fd00::1'], mtu: 4096 }] },
    { name: 'rnic1', memoryBytes: 64 << 20, caps: {}, ports: [{ mac: '02:00:00:00:00:02', ipv4: ['192.0.2.2'], ipv6: ['fd00::2'], mtu: 4096 }] },
  ],
  cables: [{ kind: 'wire', a: 'rnic0:1', b: 'rnic1:1' }],
}) as ModelConfig;

function fail(path: string, msg: string): never {
  throw new ConfigError(`${path}: ${msg}`);
}

// ---- the file's shape, described once (schemas/config.schema.json and docs/configuration.md come from it) ----

const MAC = /^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$/;
const IPV4 = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;
const IPV6 = /^[0-9a-fA-F:.]+$/;
const PORT_REF = /^[A-Za-z0-9_.-]+:\d+$/;
const NAME = /^[A-Za-z0-9_.-]+$/;

const matching = (re: RegExp, what: string) => text().regex(re, { error: (iss) => `${shown(iss.input)} is not ${what}` });

/** Bytes, or a size with KiB, MiB or GiB. */
function size(v: unknown, path: string): number {
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
  const n = size(v, path);
  if (n % 4096 !== 0) fail(path, `${JSON.stringify(v)} is not a whole number of 4 KiB pages`);
  if (n > MAX_MEMORY_BYTES) fail(path, `${JSON.stringify(v)} is more than the model's limit of 64 TiB`);
  return n;
}

function socketBufferSize(v: unknown, path: string): number {
  const b = size(v, path);
  if (b < 1024 || b > 1 << 30) fail(path, `expected 1KiB..1GiB, got ${JSON.stringify(v)}`);
  return b;
}

function burstSize(v: unknown, path: string): number {
  const b = size(v, path);
  if (b < 1024 || b > 64 << 20) fail(path, `expected 1KiB..64MiB, got ${JSON.stringify(v)}`);
  return b;
}

/** Fault rules (docs/faults.md); their own checker names the rule. */
const faultsField = () =>
  parsed(list(z.unknown(), 'a list of fault rules'), (raw) => resolveFaultRules(raw))
    .optional()
    .meta({
      description:
        'fault rules on the cable (docs/faults.md), applied where frames are sent: on a wire `a->b` is from `a` to `b`; on a UDP cable what this port sends. Dice are seeded; delays and time windows are wall time in this runtime',
      defaultText: 'none',
    });

const PortSchema = strictObject({
  mac: matching(MAC, 'a MAC address').meta({ description: "station MAC; the node GUID is derived from port 1's (EUI-64)" }),
  ipv4: list(matching(IPV4, 'an IPv4 address'), 'a list of IPv4 addresses')
    .default([])
    .meta({ description: 'IPv4 addresses the port owns: answered by ARP; each gives a RoCE v1 and a v2 GID', defaultText: 'none' }),
  ipv6: list(matching(IPV6, 'an IPv6 address'), 'a list of IPv6 addresses')
    .default([])
    .meta({ description: 'IPv6 addresses the port owns: answered by ND; each gives a RoCE v1 and a v2 GID', defaultText: 'none' }),
  mtu: oneOf([256, 512, 1024, 2048, 4096], '256, 512, 1024, 2048 or 4096').default(4096).meta({ description: 'active MTU, 256..4096' }),
  capture: text().optional().meta({ description: 'write every frame in and out of the port to this pcap (ns timestamps)', defaultText: 'none' }),
  linkLayer: oneOf(['ethernet', 'infiniband'], "'ethernet' or 'infiniband'")
    .default('ethernet')
    .meta({ description: "'infiniband': native IB framing (LRH, optional GRH, VCRC); GID 0 is fe80::/64 + the port GUID (from the MAC)" }),
  lid: int(1, 0xbfff).optional().meta({ description: 'InfiniBand only: the base LID, 1..0xBFFF, a multiple of 2^lmc', defaultText: 'required on IB' }),
  lmc: int(0, 7).default(0).meta({ description: 'InfiniBand only: LID mask count (the port owns 2^lmc LIDs)' }),
  smLid: int(0, 0xbfff).default(1).meta({ description: "InfiniBand only: the subnet manager's LID" }),
  sl2vl: list(int(0, 14), 'a list of 16 VLs').length(16, { error: 'sl2vl has one VL per SL: 16 entries' }).optional().meta({
    description: 'InfiniBand only: the VL of each SL 0..15 (VL 15 is management only)',
    defaultText: 'identity (SL 15 to VL 14)',
  }),
});

const profileName = () => oneOf(PROFILE_NAMES, PROFILE_NAMES.map((n) => `'${n}'`).join(' or '));

/** A device profile (src/pipeline/profiles.ts): a name, or a named base with some of its choices changed. */
export const ProfileSchema = z
  .union(
    [
      profileName(),
      strictObject({
        base: profileName().optional(),
        retryCnt7Infinite: bool().optional(),
        recvOverflow: oneOf(
          ['nak-invalid-request', 'nak-invalid-request-rem-inv', 'nak-remote-op'],
          "'nak-invalid-request', 'nak-invalid-request-rem-inv' or 'nak-remote-op'",
        ).optional(),
        flushRecvPostedInErr: bool().optional(),
        ipHopLimit: int(1, 255).nullable().optional(),
        udSourcePort: oneOf(['flow-label', 'rxe-qpn-hash'], "'flow-label' or 'rxe-qpn-hash'").optional(),
        ectWithCongestionControl: bool().optional(),
        readResponseGap: oneOf(['reissue', 'ignore'], "'reissue' or 'ignore'").optional(),
        ackReqEveryMessage: bool().optional(),
      }),
    ],
    {
      error: (iss) =>
        iss.code === 'invalid_union' && typeof iss.input === 'string'
          ? `unknown profile ${shown(iss.input)} (known: ${PROFILE_NAMES.join(', ')})`
          : `expected a profile name (${PROFILE_NAMES.join(', ')}) or an object with \`base\` and the choices to change, got ${shown(iss.input)}`,
    },
  )
  .optional();

const profileField = (what: string) =>
  ProfileSchema.meta({
    description: `${what}: \`"ibta"\` or \`"rxe"\` (Linux 6.1 Soft-RoCE), or \`{"base": "rxe", "retryCnt7Infinite": false, …}\` to change single choices; the choices are in docs/compare.md`,
    defaultText: '`ibta`',
  });

/** One device, as the configuration and scenario files write it. */
export const DeviceSchema = strictObject({
  name: text()
    .regex(NAME, { error: (iss) => `${shown(iss.input)}: use letters, digits, '_', '.', '-'` })
    .meta({ description: 'the name `ibv_get_device_name` reports' }),
  ports: list(PortSchema, 'a non-empty list of ports')
    .min(1, { error: 'expected a non-empty list of ports' })
    .max(8, { error: 'a device has 1..8 ports' })
    .meta({ description: "the device's ports (1..8), port 1 first" }),
  memory: parsed(numberOrText(), memorySize).prefault('64MiB').meta({
    description:
      'host memory the driver allocates from (`rnic_alloc_buf`), bytes or `"64MiB"` (`KiB`, `MiB`, `GiB`); whole 4 KiB pages, at most 64 TiB; a size this machine cannot allocate is an error naming the device\'s `memory`',
    defaultText: '64 MiB',
  }),
  caps: paramsObject(DEVICE_PARAMS).default({}).meta({
    description:
      'device capability overrides (`maxQp`, `maxQpWr`, `maxSge`, `maxCqe`, … — `DEVICE_PARAMS` in `src/device/capabilities.ts`, listed in docs/device-interface.md)',
    defaultText: 'rxe-like',
  }),
  congestion: paramsObject(CC_PARAMS).optional().meta({
    description:
      'QoS and congestion-control parameters (`trust`, `ecn`, DCQCN `rpg_*`, `dce_tcp_*`, CNP `min_time_between_cnps`, … — `CC_PARAMS` in `src/pipeline/cc-params.ts`, listed in docs/pipeline.md)',
    defaultText: 'mlx5 defaults',
  }),
  profile: profileField("where the device's behaviour may differ from the IBTA's"),
});

const WireCableSchema = strictObject({
  kind: z.literal('wire'),
  a: matching(PORT_REF, 'DEVICE:PORT').meta({ description: 'one end, `"DEVICE:PORT"` (or `"SWITCH:PORT"`)' }),
  b: matching(PORT_REF, 'DEVICE:PORT').meta({ description: 'the other end; the two ends must differ in MAC and in every IPv4 / IPv6 address' }),
  faults: faultsField(),
}).meta({ description: 'an in-process cable between two ports' });

const UdpCableSchema = strictObject({
  kind: z.literal('udp'),
  port: matching(PORT_REF, 'DEVICE:PORT').meta({ description: 'the port, `"DEVICE:PORT"` (or `"SWITCH:PORT"`)' }),
  local: text().meta({
    description:
      "where we bind, `'a.b.c.d:port'` or `'[v6]:port'`: a literal address (no name lookup), port 0 for a free one; no two cables of a file bind the same address",
  }),
  remote: text().meta({
    description: "where frames go: the peer's own bound address, of local's family; not port 0, multicast, broadcast or unspecified",
  }),
  socketBufferBytes: parsed(numberOrText(), socketBufferSize).optional().meta({
    description:
      'SO_RCVBUF / SO_SNDBUF asked of the OS, bytes or `"4MiB"`, 1 KiB..1 GiB. Linux grants at most `net.core.rmem_max` / `wmem_max` (raise it with `sysctl -w net.core.rmem_max=…` for more). 4 MiB holds a 64 KiB `write_bw` run with no socket drop (they are counted: `rxSocketDrops`)',
    defaultText: '4 MiB',
  }),
  rate: rate.optional().meta({
    description:
      'pace what the port sends to this rate (`"1Gb/s"`, `"200Mbps"`, or bit/s): a token bucket on the I/O thread holds frames in the TX ring, never drops one (counted: `txPacedFrames`, `txPacedNs`). For a peer that loses frames at line rate, e.g. a QEMU TCG guest',
    defaultText: 'unpaced',
  }),
  burstBytes: parsed(numberOrText(), burstSize).optional().meta({
    description:
      'with `rate`: bytes that may go back to back after an idle spell, 1 KiB..64 MiB. The I/O thread wakes about once a millisecond, so the rate reached is at most about burst per ms (64 KiB: ~500 Mb/s)',
    defaultText: '64 KiB',
  }),
  faults: faultsField(),
  hosts: list(
    strictObject({
      mac: matching(MAC, 'a MAC address').meta({ description: "the host's MAC" }),
      ipv4: list(matching(IPV4, 'an IPv4 address'), 'a list of IPv4 addresses').default([]).meta({ description: 'its IPv4 addresses', defaultText: 'none' }),
      ipv6: list(matching(IPV6, 'an IPv6 address'), 'a list of IPv6 addresses').default([]).meta({ description: 'its IPv6 addresses', defaultText: 'none' }),
    }),
    'a list of hosts',
  )
    .optional()
    .meta({
      description:
        'only when `port` is a switch port: the hosts beyond the cable (a device of another model process, a VM), `{mac, ipv4, ipv6}` each; the switch routes their addresses to this port and answers ARP / ND for them',
      defaultText: 'none',
    }),
}).meta({
  description:
    "the port's frames as UDP datagrams, one frame each (QEMU's `-netdev socket,udp=…,localaddr=…` convention). The socket lives on its own I/O thread (see Threads)",
});

const CableSchema = z.discriminatedUnion('kind', [WireCableSchema, UdpCableSchema], {
  error: (iss) =>
    iss.code === 'invalid_union'
      ? `expected 'wire' or 'udp', got ${shown((iss.input as { kind?: unknown } | null)?.kind)}`
      : `expected an object, got ${shown(iss.input)}`,
});

/** A switch of the realtime runtime (docs/fabric.md, "Switches in the realtime runtime"). */
const ConfigSwitchSchema = strictObject({
  name: text()
    .regex(NAME, { error: (iss) => `${shown(iss.input)}: use letters, digits, '_', '.', '-'` })
    .meta({ description: 'its name; cables name its ports `"NAME:PORT"` (1-based)' }),
  ports: int(1, 1024).meta({ description: 'how many ports, 1..1024' }),
  linkRate: rate
    .default(10_000_000_000)
    .refine((r) => r >= 1_000_000 && r <= 1e13, 'must be 1Mbps..10Tbps')
    .meta({
      description:
        'every port\'s line rate, bit/s or `"10Gbps"`: a port sends one frame at a time at this rate (preamble, FCS and gap counted), so its queue builds when devices send faster; ECN thresholds are picked by it',
      defaultText: '10 Gb/s',
    }),
  delay: duration
    .default(1000)
    .meta({ description: 'the cable delay PFC headroom is sized for (3 × rate × delay + 2 MTU), ns or `"1us"`', defaultText: '1 µs' }),
  mtu: int(256, 16384).default(9018).meta({ description: 'largest frame forwarded (bytes, no FCS), for the headroom' }),
  config: SwitchSchema.prefault({}).meta({
    description:
      "buffer, PFC, ECN and scheduling settings: the scenario file's `switch` section (`buffer`, `pfc`, `ecn.thresholds`, `scheduler`, `trust`, …, docs/scenarios.md)",
    defaultText: 'the HPCC ns-3 switch',
  }),
});

/** The model configuration file (`RNIC_CONFIG`). */
export const ConfigSchema = strictObject({
  $schema: schemaRef('config.schema.json'),
  workers: int(0, 64).optional().meta({
    description:
      "worker threads that run the devices, 0..64; `0` runs them in the application's thread (they advance when the driver rings a doorbell or polls a CQ)",
    defaultText: '0 on a machine with at most 2 cores (`os.availableParallelism()`), else 1',
  }),
  engineSpinUs: int(0, 1_000_000).optional().meta({
    description:
      'with workers: how long an idle device engine keeps polling for a doorbell before it sleeps, µs, 0..1000000. Longer: a doorbell within it is seen in under a µs instead of a ~50 µs wake-up, at the cost of a core kept busy that long after each burst of work (docs/pipeline.md, "Choosing the thread layout")',
    defaultText: '50',
  }),
  devices: list(DeviceSchema, 'a non-empty list of devices').min(1, { error: 'expected a non-empty list of devices' }).meta({ description: 'the devices' }),
  cables: list(CableSchema).default([]).meta({ description: 'what connects the ports', defaultText: 'none' }),
  profile: profileField('the profile of every device that names none'),
  seed: int(0, Number.MAX_SAFE_INTEGER)
    .optional()
    .meta({ description: "seed of the fault dice (each cable gets its own stream) and of the switches' ECN marking", defaultText: '1' }),
  switches: list(ConfigSwitchSchema).default([]).meta({
    description: 'switches between the devices (docs/fabric.md): output-queued, shared buffer, PFC, ECN; cables name their ports',
    defaultText: 'none',
  }),
}).meta({ title: 'rnic-model configuration (RNIC_CONFIG)' });

// ---- what the shape cannot say: references between entries ----

/** Two ends of one wire must not share a MAC or an IP address (the peer's frames would look like its own, ARP would answer itself). */
function distinctEnds(a: PortConfig, b: PortConfig, aRef: string, bRef: string, path: string): void {
  if (a.mac.toLowerCase() === b.mac.toLowerCase()) fail(path, `${aRef} and ${bRef} are on one wire with the same MAC ${a.mac}`);
  const same4 = a.ipv4.find((x) => b.ipv4.includes(x));
  if (same4) fail(path, `${aRef} and ${bRef} are on one wire with the same IPv4 address ${same4}`);
  const norm6 = (x: string) => x.toLowerCase();
  const same6 = a.ipv6.find((x) => b.ipv6.map(norm6).includes(norm6(x)));
  if (same6) fail(path, `${aRef} and ${bRef} are on one wire with the same IPv6 address ${same6}`);
}

/**
 * Why a wire between `a` and `b` (null: a switch port, which is Ethernet)
 * cannot work, or null when both ends have one link layer.
 */
export function mixedLinkLayers(a: PortConfig | null, aRef: string, b: PortConfig | null, bRef: string): string | null {
  if ((a?.ib === undefined) === (b?.ib === undefined)) return null;
  const what = (p: PortConfig | null, ref: string) => `${ref} is ${p === null ? 'an Ethernet switch port' : p.ib ? 'InfiniBand' : 'Ethernet'}`;
  return `a wire joins ports of one link layer: ${what(a, aRef)}, ${what(b, bRef)}`;
}

/** Every wire of a configuration built in code (parseConfig checks a file's as it reads them): a ConfigError for one of mixed link layers. */
export function checkWireLinkLayers(config: Pick<ModelConfig, 'devices' | 'cables'>): void {
  const port = (ref: string): PortConfig | null => {
    const [dev, num] = ref.split(':') as [string, string];
    return config.devices.find((d) => d.name === dev)?.ports[Number(num) - 1] ?? null;
  };
  config.cables.forEach((c, i) => {
    const mixed = c.kind === 'wire' ? mixedLinkLayers(port(c.a), c.a, port(c.b), c.b) : null;
    if (mixed) throw new ConfigError(`cables[${i}]: ${mixed}`);
  });
}

/** The `ib` part of a port (empty for Ethernet); IB-only keys on an Ethernet port are an error, not ignored. */
function ibPortOf(p: z.output<typeof PortSchema>, path: string): { ib?: IbPortConfig } {
  if (p.linkLayer === 'ethernet') {
    if (p.lid !== undefined || p.sl2vl !== undefined) fail(path, `lid and sl2vl are for linkLayer 'infiniband' ports`);
    return {};
  }
  if (p.lid === undefined) fail(`${path}.lid`, 'an InfiniBand port needs its LID (1..0xBFFF), as the subnet manager would assign it');
  if (p.lid & ((1 << p.lmc) - 1)) fail(`${path}.lid`, `base LID ${p.lid} is not a multiple of 2^lmc = ${1 << p.lmc}`);
  if (p.ipv4.length > 0 || p.ipv6.length > 0) fail(path, 'an InfiniBand port has no IP addresses (its only GID is fe80::/64 + the port GUID)');
  return { ib: { lid: p.lid, lmc: p.lmc, smLid: p.smLid, sl2vl: p.sl2vl ?? Array.from({ length: 16 }, (_, sl) => Math.min(sl, 14)) } };
}

/** Validates raw JSON into a ModelConfig; every fault names its path. */
export function parseConfig(raw: unknown, source = 'config'): ModelConfig {
  const r = ConfigSchema.safeParse(raw);
  if (!r.success) throw new ConfigError(firstIssue(r.error, source));
  const o = r.data;
  const devices = resolveDevices(o.devices, source, o.profile);
  const switches = o.switches.map((w, i): SwitchEntry => {
    if (devices.some((d) => d.name === w.name)) fail(`${source}.switches[${i}].name`, `${w.name} is already the name of a device`);
    if (o.switches.findIndex((x) => x.name === w.name) !== i) fail(`${source}.switches[${i}].name`, `switch ${w.name} is defined twice`);
    return { name: w.name, ports: w.ports, linkRate: w.linkRate, delayNs: w.delay, mtu: w.mtu, config: resolveSwitchConfig(w.config) };
  });
  /** The device port a reference names, or null for a switch port. */
  const portOf = (ref: string, path: string): PortConfig | null => {
    const [dev, port] = ref.split(':') as [string, string];
    const w = switches.find((x) => x.name === dev);
    if (w) {
      if (Number(port) < 1 || Number(port) > w.ports) fail(path, `switch ${dev} has no port ${port} (ports 1..${w.ports})`);
      return null;
    }
    const d = devices.find((x) => x.name === dev);
    if (!d) fail(path, `no device or switch named ${dev}`);
    if (Number(port) < 1 || Number(port) > d.ports.length) fail(path, `${dev} has no port ${port}`);
    return d.ports[Number(port) - 1]!;
  };
  const used = new Set<string>();
  const use = (ref: string, path: string): PortConfig | null => {
    const p = portOf(ref, path);
    if (used.has(ref)) fail(path, `port ${ref} already has a cable`);
    used.add(ref);
    return p;
  };
  /** Local addresses bound so far (port 0 picks a free port, so it never clashes), by the cable that binds it. */
  const bound = new Map<string, number>();
  const cables = o.cables.map((c, i): CableConfig => {
    const path = `${source}.cables[${i}]`;
    const faults = c.faults === undefined ? {} : { faults: c.faults };
    if (c.kind === 'wire') {
      const a = use(c.a, `${path}.a`);
      const b = use(c.b, `${path}.b`);
      if (a && b) distinctEnds(a, b, c.a, c.b, path);
      const mixed = mixedLinkLayers(a, c.a, b, c.b);
      if (mixed) fail(path, mixed);
      return { kind: 'wire', a: c.a, b: c.b, ...faults };
    }
    const udpEnd = use(c.port, `${path}.port`);
    const onSwitch = udpEnd === null;
    if (udpEnd?.ib) fail(`${path}.port`, `${c.port} is an InfiniBand port: a UDP cable carries RoCE v2 (Ethernet) frames`);
    if (c.hosts !== undefined && !onSwitch) fail(`${path}.hosts`, `only a switch port's cable names the hosts beyond it (${c.port} is a device port)`);
    if (c.burstBytes !== undefined && c.rate === undefined) fail(`${path}.burstBytes`, 'only a paced cable (one with a rate) has a burst');
    let local: UdpEndpoint;
    try {
      local = checkUdpAddresses(c.local, c.remote).local;
    } catch (e) {
      if (!(e instanceof FabricError)) throw e;
      fail(`${path}.${e.message.startsWith('local') ? 'local' : 'remote'}`, e.message);
    }
    if (local.port !== 0) {
      const key = endpointText(local);
      const other = bound.get(key);
      if (other !== undefined) fail(`${path}.local`, `${key} is already the local address of cables[${other}]: two sockets cannot bind one address`);
      bound.set(key, i);
    }
    return {
      kind: 'udp',
      port: c.port,
      local: c.local,
      remote: c.remote,
      ...(c.socketBufferBytes === undefined ? {} : { socketBufferBytes: c.socketBufferBytes }),
      ...(c.rate === undefined ? {} : { rate: c.rate }),
      ...(c.burstBytes === undefined ? {} : { burstBytes: c.burstBytes }),
      ...faults,
      ...(c.hosts === undefined ? {} : { hosts: c.hosts }),
    };
  });
  return {
    workers: o.workers ?? defaultWorkers(),
    ...(o.engineSpinUs === undefined ? {} : { engineSpinUs: o.engineSpinUs }),
    devices,
    cables,
    ...(o.seed === undefined ? {} : { seed: o.seed }),
    ...(switches.length === 0 ? {} : { switches }),
  };
}

/**
 * Checked devices (DeviceSchema's output) with unique names; `source` starts
 * the paths. A device that names no profile gets `profile` (the file's).
 */
export function resolveDevices(parsed: readonly z.output<typeof DeviceSchema>[], source: string, profile?: ProfileSpec): DeviceConfig[] {
  const names = new Set<string>();
  return parsed.map((d, i): DeviceConfig => {
    if (names.has(d.name)) fail(`${source}.devices[${i}].name`, `device ${d.name} is defined twice`);
    names.add(d.name);
    const ports = d.ports.map(
      (p, j): PortConfig => ({
        mac: p.mac,
        ipv4: p.ipv4,
        ipv6: p.ipv6,
        mtu: p.mtu,
        ...(p.capture === undefined ? {} : { capture: p.capture }),
        ...ibPortOf(p, `${source}.devices[${i}].ports[${j}]`),
      }),
    );
    if (d.congestion !== undefined) {
      try {
        resolveCcParams(d.congestion, `${source}.devices[${i}].congestion`);
      } catch (e) {
        // The parameter checker names the key: config.devices[0].congestion.rpg_gd: 0 is outside [1, 15].
        throw new ConfigError((e as Error).message);
      }
    }
    const spec = d.profile ?? profile;
    return {
      name: d.name,
      ports,
      memoryBytes: d.memory,
      caps: d.caps,
      ...(d.congestion === undefined ? {} : { congestion: d.congestion }),
      ...(spec === undefined ? {} : { profile: spec }),
    };
  });
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
