/**
 * Device and port capabilities: what QUERY_DEVICE / QUERY_PORT / QUERY_GID /
 * QUERY_PKEY report and what the firmware enforces. Declared once as
 * parameter schemas (STYLE §6) so a configuration file can override any of
 * them; the defaults follow Soft-RoCE (rxe, `rxe_param.h`) where rxe has a
 * value and where the model implements the feature.
 *
 * Deviations from rxe, on purpose:
 *  - deviceCapFlags: only the rxe flags whose behaviour the model
 *    implements (no SRQ resize, no automatic path migration, no memory
 *    management extensions: memory windows yes, type 1 and 2B as rxe, but
 *    no fast-register MRs); XRC (IBV_DEVICE_XRC), which rxe does not have.
 *  - multicast (maxMcast*) is 0: not modelled (rxe: 8192 / 56 / 0x70000).
 *  - port: active MTU 4096 (rxe derives it from the netdev MTU), link up,
 *    4X EDR (100 Gb/s) width/speed.
 *  - extra, model-specific entries: maxInlineData (rxe: 400, reported
 *    through the QP caps), maxEq, numCompVectors, hcaCoreClock,
 *    completionTimestampMask.
 */
import {
  IBV_ATOMIC_GLOB,
  IBV_ATOMIC_HCA,
  IBV_ATOMIC_NONE,
  IBV_DEVICE_BAD_PKEY_CNTR,
  IBV_DEVICE_BAD_QKEY_CNTR,
  IBV_DEVICE_CURR_QP_STATE_MOD,
  IBV_DEVICE_MEM_WINDOW,
  IBV_DEVICE_MEM_WINDOW_TYPE_2B,
  IBV_DEVICE_PORT_ACTIVE_EVENT,
  IBV_DEVICE_RC_RNR_NAK_GEN,
  IBV_DEVICE_XRC,
  IBV_DEVICE_SYS_IMAGE_GUID,
  IBV_DEVICE_UD_AV_PORT_ENFORCE,
  IBV_GID_TYPE_IB,
  IBV_GID_TYPE_ROCE_V1,
  IBV_GID_TYPE_ROCE_V2,
  IBV_LINK_LAYER_ETHERNET,
  IBV_LINK_LAYER_INFINIBAND,
  IBV_PORT_ACTIVE,
  IBV_PORT_ARMED,
  IBV_PORT_CM_SUP,
  IBV_PORT_DOWN,
  IBV_PORT_INIT,
  IBV_PORT_IP_BASED_GIDS,
  mtu_bytes_to_enum,
} from './abi/constants.js';
import { bad, choice, count, flags, list, mtu, resolveParams, size, text, u64Param, type ParamValues } from '../params/params.js';

/** `ibv_port_attr.flags`: IBV_QPF_GRH_REQUIRED (verbs.h; not in abi/constants.ts yet). */
export const IBV_QPF_GRH_REQUIRED = 1;

const INT_MAX = 2 ** 31 - 1;

/** ibv_device_attr (and a few model extensions), camelCased. */
export const DEVICE_PARAMS = {
  fwVer: text('1.0.0', 'firmware version string (ibv_device_attr.fw_ver)'),
  nodeGuid: u64Param(0x020000fffe000001n, 'node GUID', 'guid'),
  sysImageGuid: u64Param(0x020000fffe000001n, 'system image GUID', 'guid'),
  maxMrSize: u64Param(0xffffffffffffffffn, 'largest MR, bytes (rxe: -1ull)', 'bytes'),
  pageSizeCap: u64Param(0xfffff000n, 'supported page sizes bitmask (rxe)', 'flags'),
  vendorId: count(
    0xffffff,
    'IEEE vendor id: 0xFFFFFF, what Linux rxe reports (RXE_VENDOR_ID, rxe_param.h: "IBTA v1.4 A3.3.1 VENDOR INFORMATION"; rxe reported 0 before kernel commit 0184afd15a14)',
    0,
    0xffffffff,
  ),
  vendorPartId: count(0, 'vendor part id', 0, 0xffffffff),
  hwVer: count(0, 'hardware version', 0, 0xffffffff),
  maxQp: count(0x10000, 'QPs (rxe 0x10000); QPNs are 2..maxQp+1', 1, 0xfffffd),
  maxQpWr: count(0x4000, 'WQEs per send or receive queue (rxe)', 1, 1 << 20),
  deviceCapFlags: flags(
    IBV_DEVICE_BAD_PKEY_CNTR |
      IBV_DEVICE_BAD_QKEY_CNTR |
      IBV_DEVICE_UD_AV_PORT_ENFORCE |
      IBV_DEVICE_CURR_QP_STATE_MOD |
      IBV_DEVICE_PORT_ACTIVE_EVENT |
      IBV_DEVICE_SYS_IMAGE_GUID |
      IBV_DEVICE_RC_RNR_NAK_GEN |
      IBV_DEVICE_MEM_WINDOW |
      IBV_DEVICE_MEM_WINDOW_TYPE_2B |
      IBV_DEVICE_XRC,
    'IBV_DEVICE_* flags the model implements',
  ),
  maxSge: count(32, 'scatter/gather entries per send / receive WQE (rxe)', 1, 255),
  maxSgeRd: count(32, 'SGEs per RDMA READ WQE (rxe)', 1, 255),
  maxCq: count(16384, 'CQs (rxe)', 1, 0xfffffe),
  maxCqe: count(32767, 'CQEs per CQ (rxe: 2^15 - 1); rings are powers of two ≤ maxCqe + 1', 1, 1 << 22),
  maxMr: count(0x40000, 'MRs (rxe 256 Ki); keys are index << 8 | 8-bit variant', 1, 0xfffffe),
  maxPd: count(0x7ffc, 'PDs (rxe)', 1, 0xfffffe),
  maxXrcd: count(0x7ffc, 'model: XRC domains (ibv_open_xrcd; libibverbs reports no limit, as many as PDs here)', 0, 0xfffffe),
  maxQpRdAtom: count(128, 'responder resources per QP, max_dest_rd_atomic (rxe)', 0, 255),
  maxEeRdAtom: count(0, 'EE (RD) responder resources: RD not modelled', 0, INT_MAX),
  maxResRdAtom: count(0x3f000, 'responder resources per device (rxe)', 0, INT_MAX),
  maxQpInitRdAtom: count(128, 'initiator depth per QP, max_rd_atomic (rxe)', 0, 255),
  maxEeInitRdAtom: count(0, 'EE initiator depth: RD not modelled', 0, INT_MAX),
  atomicCap: choice('HCA', { NONE: IBV_ATOMIC_NONE, HCA: IBV_ATOMIC_HCA, GLOB: IBV_ATOMIC_GLOB }, 'atomicity of ATOMIC operations'),
  maxEe: count(0, 'EE contexts: RD not modelled', 0, INT_MAX),
  maxRdd: count(0, 'RD domains: RD not modelled', 0, INT_MAX),
  maxMw: count(0x1000, 'memory windows, type 1 and type 2B (rxe RXE_MAX_MW 0x1000); they share the MPT with the MRs', 0, 0xfffffe),
  maxRawIpv6Qp: count(0, 'raw IPv6 QPs', 0, INT_MAX),
  maxRawEthyQp: count(0, 'raw Ethertype QPs', 0, INT_MAX),
  maxMcastGrp: count(8192, 'UD multicast groups (rxe 8192)', 0, INT_MAX),
  maxMcastQpAttach: count(56, 'QPs per multicast group (rxe 56)', 0, INT_MAX),
  maxTotalMcastQpAttach: count(0x70000, 'multicast attachments in all (rxe 0x70000)', 0, INT_MAX),
  maxAh: count(100, 'address handles (rxe); AHs are driver objects, the driver enforces this', 0, INT_MAX),
  maxFmr: count(0, 'FMRs: obsolete', 0, INT_MAX),
  maxMapPerFmr: count(0, 'FMR maps: obsolete', 0, INT_MAX),
  maxSrq: count(960, 'SRQs (rxe)', 0, 0xfffffe),
  maxSrqWr: count(0x4000, 'WQEs per SRQ (rxe)', 1, 1 << 20),
  maxSrqSge: count(27, 'SGEs per SRQ WQE (rxe)', 1, 255),
  maxPkeys: count(64, 'P_Key table entries (rxe)', 1, 0xffff),
  localCaAckDelay: count(15, 'local CA ACK delay, 4.096 µs × 2^n (rxe)', 0, 31),
  maxInlineData: count(400, 'model: bytes of inline data per send WQE (rxe 400)', 0, 0xffff),
  maxEq: count(64, 'model: event queues', 1, 0xffff),
  numCompVectors: count(8, 'model: interrupt vectors (ibv_context.num_comp_vectors)', 1, 1024),
  hcaCoreClock: count(1_000_000, 'model: timestamp clock in kHz (1 GHz: CQE timestamps are ns)', 1, INT_MAX),
  completionTimestampMask: u64Param(0xffffffffffffffffn, 'model: valid bits of CQE timestamps', 'flags'),
} as const;

const MAC_RE = /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/i;

function parseMac(raw: unknown, path: string): string {
  if (typeof raw !== 'string' || !MAC_RE.test(raw)) bad(path, `expected a MAC like 02:00:00:00:00:01, got ${JSON.stringify(raw)}`);
  return raw.toLowerCase();
}

function parseIpv4(raw: unknown, path: string): string {
  const parts = typeof raw === 'string' ? raw.split('.') : [];
  if (parts.length !== 4 || parts.some((p) => !/^\d{1,3}$/.test(p) || Number(p) > 255)) {
    bad(path, `expected a dotted IPv4 address, got ${JSON.stringify(raw)}`);
  }
  return parts.map(Number).join('.');
}

/** Parse an IPv6 address (with :: and an optional dotted IPv4 tail) into 16 bytes. */
export function ipv6ToBytes(s: string): Uint8Array | null {
  let head = s;
  const out = new Uint8Array(16);
  const tail: number[] = [];
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(head);
  if (v4) {
    const b = v4[1]!.split('.').map(Number);
    if (b.some((x) => x > 255)) return null;
    head = head.slice(0, -v4[1]!.length) + '0:0';
    tail.push(...b);
  }
  const halves = head.split('::');
  if (halves.length > 2) return null;
  const parse = (h: string) => (h === '' ? [] : h.split(':'));
  const a = parse(halves[0]!);
  const b = halves.length === 2 ? parse(halves[1]!) : [];
  const groups = halves.length === 2 ? [...a, ...Array(8 - a.length - b.length).fill('0'), ...b] : a;
  if (groups.length !== 8 || groups.some((g) => !/^[0-9a-f]{1,4}$/i.test(g))) return null;
  groups.forEach((g, i) => {
    const v = parseInt(g, 16);
    out[2 * i] = v >> 8;
    out[2 * i + 1] = v & 0xff;
  });
  if (tail.length) out.set(tail, 12);
  return out;
}

function parseIpv6(raw: unknown, path: string): string {
  if (typeof raw !== 'string' || !ipv6ToBytes(raw)) bad(path, `expected an IPv6 address, got ${JSON.stringify(raw)}`);
  return raw.toLowerCase();
}

function parsePkey(raw: unknown, path: string): number {
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 0 || raw > 0xffff) bad(path, 'expected a 16-bit P_Key');
  return raw;
}

/** ibv_port_attr (camelCased) and what the GID / P_Key tables are built from. */
export const PORT_PARAMS = {
  state: choice('ACTIVE', { DOWN: IBV_PORT_DOWN, INIT: IBV_PORT_INIT, ARMED: IBV_PORT_ARMED, ACTIVE: IBV_PORT_ACTIVE }, 'logical port state'),
  maxMtu: mtu(4096, 'largest MTU the port supports (rxe 4096)'),
  activeMtu: mtu(4096, 'active MTU; path_mtu may not exceed it'),
  gidTblLen: count(1024, 'GID table length (rxe)', 1, 0xffff),
  portCapFlags: flags(IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS, 'IBV_PORT_* capability flags'),
  portCapFlags2: flags(0, 'IBV_PORT_* capability flags, second word'),
  maxMsgSz: size('8MiB', 'largest message (rxe 0x800000)', 1, 0xffffffff),
  pkeyTblLen: count(64, 'P_Key table length (rxe)', 1, 0xffff),
  lid: count(0, 'base LID (0 on RoCE)', 0, 0xffff),
  smLid: count(0, 'subnet manager LID', 0, 0xffff),
  lmc: count(0, 'LID mask count', 0, 7),
  maxVlNum: count(1, 'virtual lanes (rxe 1)', 0, 15),
  smSl: count(0, 'subnet manager SL', 0, 15),
  subnetTimeout: count(0, 'subnet propagation timeout', 0, 31),
  initTypeReply: count(0, 'init type reply', 0, 255),
  activeWidth: choice('4X', { '1X': 1, '4X': 2, '8X': 4, '12X': 8, '2X': 16 }, 'link width'),
  activeSpeed: choice('EDR', { SDR: 1, DDR: 2, QDR: 4, FDR10: 8, FDR: 16, EDR: 32, HDR: 64, NDR: 128 }, 'lane speed (EDR: 25 Gb/s)'),
  activeSpeedEx: count(0, 'extended speed (0 = use activeSpeed)', 0, 0xffffffff),
  physState: choice('LINK_UP', { SLEEP: 1, POLLING: 2, DISABLED: 3, TRAINING: 4, LINK_UP: 5, ERROR_RECOVERY: 6, PHY_TEST: 7 }, 'physical port state'),
  linkLayer: choice('ETHERNET', { INFINIBAND: IBV_LINK_LAYER_INFINIBAND, ETHERNET: IBV_LINK_LAYER_ETHERNET }, 'link layer'),
  flags: flags(IBV_QPF_GRH_REQUIRED, 'ibv_port_attr.flags (IBV_QPF_GRH_REQUIRED on RoCE)'),
  macAddress: {
    default: '02:00:00:00:00:<port>',
    unit: 'mac',
    doc: 'port MAC; the link-local GIDs are derived from it (EUI-64)',
    parse: parseMac,
  },
  ipv4Addresses: list(['192.0.2.<port>'], 'ipv4[]', 'IPv4 addresses: IPv4-mapped GIDs ::ffff:a.b.c.d', parseIpv4),
  ipv6Addresses: list([], 'ipv6[]', 'IPv6 addresses: one RoCE v1 and one v2 GID each', parseIpv6),
  pkeys: list([0xffff], 'pkey[]', 'P_Key table contents from index 0 (the rest is 0)', parsePkey),
} as const;

export type DeviceAttrs = ParamValues<typeof DEVICE_PARAMS> & {
  /** Number of ports (ibv_device_attr.phys_port_cnt): the length of the ports list. */
  readonly physPortCnt: number;
};

export interface GidEntry {
  readonly gid: Uint8Array;
  /** IBV_GID_TYPE_ROCE_V1 / _V2 (or _IB). */
  readonly type: number;
}

export type PortAttrs = ParamValues<typeof PORT_PARAMS> & {
  readonly portNum: number;
  /** ibv_mtu enums of maxMtu / activeMtu. */
  readonly maxMtuEnum: number;
  readonly activeMtuEnum: number;
  /** Populated entries from index 0 (the rest of the gidTblLen entries are empty). */
  readonly gidTable: readonly GidEntry[];
  /** pkeyTblLen entries. */
  readonly pkeyTable: readonly number[];
};

export interface Capabilities {
  readonly device: DeviceAttrs;
  /** ports[i] is port number i + 1. */
  readonly ports: readonly PortAttrs[];
}

/** What a configuration file may say. */
export interface CapabilitiesConfig {
  readonly device?: Readonly<Record<string, unknown>>;
  /** One entry per port (default: one port with all defaults). */
  readonly ports?: readonly Readonly<Record<string, unknown>>[];
}

function macBytes(mac: string): number[] {
  return mac.split(':').map((x) => parseInt(x, 16));
}

/** fe80::/64 with the modified EUI-64 interface id of `mac`. */
export function linkLocalGid(mac: string): Uint8Array {
  const m = macBytes(mac);
  const g = new Uint8Array(16);
  g[0] = 0xfe;
  g[1] = 0x80;
  g.set([m[0]! ^ 0x02, m[1]!, m[2]!, 0xff, 0xfe, m[3]!, m[4]!, m[5]!], 8);
  return g;
}

/** ::ffff:a.b.c.d */
export function ipv4MappedGid(ip: string): Uint8Array {
  const g = new Uint8Array(16);
  g[10] = 0xff;
  g[11] = 0xff;
  g.set(ip.split('.').map(Number), 12);
  return g;
}

/**
 * The GID table as Linux fills it for a RoCE port: the default link-local
 * GID as RoCE v1 (index 0) and v2 (index 1), then for each IPv4 address
 * its IPv4-mapped GID as v1 and v2, then each IPv6 address as v1 and v2.
 */
export function buildGidTable(mac: string, ipv4: readonly string[], ipv6: readonly string[]): GidEntry[] {
  const out: GidEntry[] = [];
  const both = (gid: Uint8Array) => {
    out.push({ gid, type: IBV_GID_TYPE_ROCE_V1 }, { gid: gid.slice(), type: IBV_GID_TYPE_ROCE_V2 });
  };
  both(linkLocalGid(mac));
  for (const ip of ipv4) both(ipv4MappedGid(ip));
  for (const ip of ipv6) both(ipv6ToBytes(ip)!);
  return out;
}

/**
 * The GID table of a native InfiniBand port: GID 0 is the default subnet
 * prefix fe80::/64 with the port GUID (the MAC's EUI-64, as the node GUID
 * is derived) as interface id; nothing else until an SM assigns more.
 */
export function ibGidTable(mac: string): GidEntry[] {
  return [{ gid: linkLocalGid(mac), type: IBV_GID_TYPE_IB }];
}

function checkIbLids(p: { lid: number; lmc: number }, path: string): void {
  if (p.lid === 0 || p.lid > 0xbfff) bad(`${path}.lid`, `an InfiniBand port's base LID is a unicast LID 1..0xBFFF, got ${p.lid}`);
  if (p.lid & ((1 << p.lmc) - 1)) bad(`${path}.lid`, `base LID ${p.lid} is not a multiple of 2^lmc = ${1 << p.lmc}`);
}

function resolvePort(raw: Readonly<Record<string, unknown>>, portNum: number): PortAttrs {
  const hex = portNum.toString(16).padStart(2, '0');
  // An IB port: no IP addresses, no GRH requirement, GIDs not from IP addresses.
  const ib = raw['linkLayer'] === 'INFINIBAND';
  const withDefaults: Record<string, unknown> = {
    macAddress: `02:00:00:00:00:${hex}`,
    ipv4Addresses: ib ? [] : [`192.0.2.${portNum}`],
    ...(ib ? { flags: 0, portCapFlags: IBV_PORT_CM_SUP } : {}),
    ...raw,
  };
  const path = `ports[${portNum - 1}]`;
  const p = resolveParams(PORT_PARAMS, withDefaults, path);
  if (p.activeMtu > p.maxMtu) bad(`${path}.activeMtu`, `${p.activeMtu} exceeds maxMtu ${p.maxMtu}`);
  const gidTable = p.linkLayer === IBV_LINK_LAYER_INFINIBAND ? ibGidTable(p.macAddress) : buildGidTable(p.macAddress, p.ipv4Addresses, p.ipv6Addresses);
  if (p.linkLayer === IBV_LINK_LAYER_INFINIBAND) checkIbLids(p, path);
  if (gidTable.length > p.gidTblLen) bad(`${path}.gidTblLen`, `${gidTable.length} GIDs do not fit ${p.gidTblLen} entries`);
  if (p.pkeys.length > p.pkeyTblLen) bad(`${path}.pkeys`, `${p.pkeys.length} P_Keys do not fit ${p.pkeyTblLen} entries`);
  const pkeyTable = Array.from({ length: p.pkeyTblLen }, (_, i) => p.pkeys[i] ?? 0);
  return Object.freeze({
    ...p,
    portNum,
    maxMtuEnum: mtu_bytes_to_enum(p.maxMtu),
    activeMtuEnum: mtu_bytes_to_enum(p.activeMtu),
    gidTable: Object.freeze(gidTable),
    pkeyTable: Object.freeze(pkeyTable),
  });
}

/** Validate a configuration and produce frozen capabilities. Throws DEV_ERR_BAD_CONFIG. */
export function resolveCapabilities(config: CapabilitiesConfig = {}): Capabilities {
  const portsRaw = config.ports ?? [{}];
  if (portsRaw.length < 1 || portsRaw.length > 8) bad('ports', 'a device has 1..8 ports');
  const d = resolveParams(DEVICE_PARAMS, config.device ?? {}, 'device');
  if (d.maxSrqSge > d.maxSge) bad('device.maxSrqSge', 'exceeds maxSge');
  if (d.maxPkeys < 1) bad('device.maxPkeys', 'must be at least 1');
  const ports = portsRaw.map((p, i) => resolvePort(p, i + 1));
  for (const p of ports) {
    if (p.pkeyTblLen > d.maxPkeys) bad(`ports[${p.portNum - 1}].pkeyTblLen`, `exceeds device.maxPkeys ${d.maxPkeys}`);
  }
  return Object.freeze({
    device: Object.freeze({ ...d, physPortCnt: ports.length }),
    ports: Object.freeze(ports),
  });
}

/**
 * The effective configuration as JSON-able data (bigints as hex strings,
 * derived tables left out), to write next to a run's results.
 */
export function capabilitiesToJSON(caps: Capabilities): { device: Record<string, unknown>; ports: Record<string, unknown>[] } {
  const plain = (o: object, skip: readonly string[]) =>
    Object.fromEntries(
      Object.entries(o)
        .filter(([k]) => !skip.includes(k))
        .map(([k, v]) => [k, typeof v === 'bigint' ? '0x' + v.toString(16) : v]),
    );
  return {
    device: plain(caps.device, ['physPortCnt']),
    ports: caps.ports.map((p) => plain(p, ['portNum', 'maxMtuEnum', 'activeMtuEnum', 'gidTable', 'pkeyTable'])),
  };
}

/** Default capabilities (one port). */
export const DEFAULT_CAPABILITIES: Capabilities = resolveCapabilities();
