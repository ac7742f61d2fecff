/**
 * The device's QoS and congestion-control parameters (STYLE §6): how a QP's
 * traffic maps to one of the 8 transmit priorities, ECN marking of what it
 * sends, the notification point (CNPs) and the DCQCN reaction point. Names
 * are the mlx5 firmware's (mlxconfig ROCE_CC / the NVIDIA "DCQCN
 * parameters"), in its units: rates in Mb/s, times in µs, α in 1/1024.
 * docs/pipeline.md carries the table with sources; a test checks it.
 */
import { bad, count, describeParams, type ParamSpec, type ParamValues, resolveParams } from '../params/params.js';

function bool(def: boolean, doc: string): ParamSpec<boolean> {
  return {
    default: def,
    unit: 'bool',
    doc,
    parse: (raw, path) => (typeof raw === 'boolean' ? raw : bad(path, `expected true or false, got ${JSON.stringify(raw)}`)),
  };
}

function ranged(def: number, unit: string, doc: string, min: number, max: number): ParamSpec<number> {
  return { ...count(def, doc, min, max), unit };
}

export const enum Trust {
  /** The priority is the address handle's SL (the VLAN PCP a tagged frame would carry). */
  PCP = 0,
  /** The priority is DSCP >> 3 (mlx5's default dscp2prio map), DSCP = traffic_class >> 2. */
  DSCP = 1,
}

const TRUST_NAMES: Readonly<Record<string, Trust>> = Object.freeze({ pcp: Trust.PCP, dscp: Trust.DSCP });

function trustParam(def: string, doc: string): ParamSpec<Trust> {
  return {
    default: def,
    unit: 'enum',
    doc: `${doc} (pcp, dscp)`,
    parse: (raw, path) =>
      typeof raw === 'string' && Object.hasOwn(TRUST_NAMES, raw) ? TRUST_NAMES[raw]! : bad(path, `${JSON.stringify(raw)} is not one of pcp, dscp`),
  };
}

const MBPS_MAX = 10_000_000; // 10 Tb/s
const US_MAX = 100_000_000; // 100 s

export const CC_PARAMS = {
  trust: trustParam(
    'pcp',
    "which field picks a QP's transmit priority: its address handle's SL (pcp) or its traffic class's DSCP (dscp, priority = DSCP >> 3)",
  ),
  ecn: bool(true, "RoCE v2 packets leave ECN-capable, ECT(0); false: the traffic class's low 2 bits go out as given"),
  np_enable: ranged(
    0xff,
    'mask',
    'notification point: bit p set, a CE-marked RoCE v2 packet of priority p is answered with a CNP (mlx5 ecn/roce_np/enable/<p>)',
    0,
    0xff,
  ),
  rp_enable: ranged(
    0xff,
    'mask',
    'reaction point: bit p set, a CNP for a QP of priority p runs DCQCN; clear, it is counted in rp_cnp_ignored (mlx5 ecn/roce_rp/enable/<p>)',
    0,
    0xff,
  ),
  min_time_between_cnps: ranged(4, 'us', 'notification point: at most one CNP per QP in this time; 0 = one for every CE-marked packet', 0, US_MAX),
  cnp_dscp: ranged(48, 'dscp', 'DSCP of the CNPs sent', 0, 63),
  cnp_802p_prio: ranged(6, 'priority', 'transmit priority (802.1p) of the CNPs sent', 0, 7),
  rpg_time_reset: ranged(300, 'us', 'rate-increase timer: one increase event per period without a rate cut', 1, US_MAX),
  rpg_byte_reset: ranged(32767, 'bytes', 'rate-increase byte counter: one increase event per this many bytes sent; 0 = off', 0, 2 ** 31 - 1),
  rpg_threshold: ranged(1, 'count', 'increase events (of the timer or the byte counter) spent in fast recovery before additive increase (F)', 1, 31),
  rpg_max_rate: ranged(0, 'Mb/s', "highest rate a QP may be paced at; 0 = the port's line rate", 0, MBPS_MAX),
  rpg_ai_rate: ranged(5, 'Mb/s', 'additive increase step of the target rate', 1, MBPS_MAX),
  rpg_hai_rate: ranged(50, 'Mb/s', 'hyper increase step of the target rate', 1, MBPS_MAX),
  rpg_gd: ranged(11, 'log2', "rate cut on CNP: rate × (1 − α·1024 / 2^rpg_gd), α in [0, 1]; 11 gives the paper's 1 − α/2", 1, 15),
  rpg_min_dec_fac: ranged(50, 'percent', 'one cut leaves at least this percentage of the current rate', 1, 100),
  rpg_min_rate: ranged(1, 'Mb/s', 'lowest rate a cut may leave', 1, MBPS_MAX),
  rate_to_set_on_first_cnp: ranged(0, 'Mb/s', 'current and target rate set when a QP gets its first CNP; 0 = the line rate', 0, MBPS_MAX),
  dce_tcp_g: ranged(1019, '1/1024', 'α gain: every dce_tcp_rtt, α ← α·G/1024 + (1024 − G)/1024 after a CNP, α·G/1024 without (g = (1024 − G)/1024)', 0, 1024),
  dce_tcp_rtt: ranged(1, 'us', 'α update period', 1, US_MAX),
  rate_reduce_monitor_period: ranged(4, 'us', 'at most one rate cut per period: CNPs in a period cause one cut at its end', 1, US_MAX),
  initial_alpha_value: ranged(1023, '1/1024', 'α given to a QP on its first CNP', 0, 1024),
  clamp_tgt_rate: bool(false, 'a cut always sets the target rate to the current rate'),
  clamp_tgt_rate_after_time_inc: bool(true, 'a cut sets the target rate to the current rate if a timer increase ran since the last cut'),
} as const;

export type CcParams = ParamValues<typeof CC_PARAMS>;

/** Validates a device's `congestion` section (DEV_ERR_BAD_CONFIG naming the path on error). */
export function resolveCcParams(raw: Readonly<Record<string, unknown>> = {}, path = 'congestion'): CcParams {
  return resolveParams(CC_PARAMS, raw, path);
}

export const DEFAULT_CC_PARAMS: CcParams = resolveCcParams();

/** The schema as a markdown table (docs/pipeline.md embeds it). */
export function describeCcParams(): string {
  return describeParams(CC_PARAMS);
}

/**
 * The transmit priority of traffic with service level `sl` and IP traffic
 * class `trafficClass` (DSCP = traffic class >> 2). PCP trust: the SL, as
 * rdma-core and mlx5 map a RoCE address handle's SL to the frame priority;
 * DSCP trust: DSCP >> 3, mlx5's default dscp2prio table.
 */
export function txPriority(sl: number, trafficClass: number, trust: Trust): number {
  return trust === Trust.DSCP ? (trafficClass >>> 5) & 7 : sl & 7;
}
