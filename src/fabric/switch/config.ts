/**
 * A switch's resolved settings: plain frozen data in base units (bytes,
 * bit/s, ns), checked before the switch is built (the scenario's zod
 * schema, src/runtime/sim/fabric-schema.ts, produces it). Defaults follow
 * the HPCC ns-3 simulator's switch (alibaba-edu/High-Precision-Congestion-Control,
 * switch-mmu.cc and third.cc) where it has one; docs/fabric.md gives each.
 */

/** The eight IEEE 802.1Q priorities. */
export const PRIORITIES = 8;

/** ECN marking thresholds of one egress queue (RED-style, on the instantaneous queue). */
export interface EcnThresholds {
  /** Bytes at or below which nothing is marked. */
  readonly kminBytes: number;
  /** Bytes above which every ECT packet is marked. */
  readonly kmaxBytes: number;
  /** Marking probability just below kmax (linear from 0 at kmin). */
  readonly pmax: number;
}

/** ECN thresholds configured for one link rate; other rates scale linearly from the nearest entry. */
export interface EcnAtRate extends EcnThresholds {
  readonly linkRate: number;
}

export interface PfcConfig {
  /** Generate PAUSE frames (the switch obeys received ones either way). */
  readonly enabled: boolean;
  /** 'dynamic': XOFF at a fraction of the free shared buffer; 'static': fixed xoff/xon bytes. */
  readonly mode: 'dynamic' | 'static';
  /** Dynamic threshold = free shared buffer >> alphaShift (3: 1/8, HPCC's default). */
  readonly alphaShift: number;
  /** Static thresholds: shared bytes of one (ingress port, priority) that pause it, and resume it. */
  readonly xoffBytes: number;
  readonly xonBytes: number;
  /** Dynamic mode: resume when shared use + resumeOffset <= threshold (HPCC: 3 KB). */
  readonly resumeOffsetBytes: number;
  /** Headroom per ingress port = factor × link rate × cable delay (bytes) + mtuCount × MTU. */
  readonly headroomFactor: number;
  readonly headroomMtus: number;
  /** Pause time sent in each XOFF, in quanta of 512 bit times (refreshed at half of it while paused). */
  readonly pauseQuanta: number;
  /** Bit i set: priority i is lossless (paused, never dropped while headroom lasts). */
  readonly priorities: number;
}

export interface SwitchConfig {
  /** Shared packet buffer of the whole switch, bytes. */
  readonly bufferBytes: number;
  /** Guaranteed ingress bytes per (port, priority) outside the shared pool (HPCC: 4 KB). */
  readonly reserveBytes: number;
  readonly pfc: PfcConfig;
  /** Mark CE at egress; thresholds by link rate. Null: never mark. */
  readonly ecn: { readonly thresholds: readonly EcnAtRate[]; readonly priorities: number } | null;
  /** Between priorities at egress: strict (7 first) or deficit-weighted round robin. */
  readonly scheduler: 'strict' | 'dwrr';
  /** DWRR weights per priority (quantum = weight × dwrrQuantumBytes). */
  readonly dwrrWeights: readonly number[];
  readonly dwrrQuantumBytes: number;
  /** Where a frame's priority comes from: the VLAN PCP, or the IP DSCP through dscpToPriority. */
  readonly trust: 'pcp' | 'dscp';
  /** 64 entries: priority of each DSCP (default dscp >> 3). */
  readonly dscpToPriority: readonly number[];
  /** Seed of the ECMP hash (each switch mixes in its own index, so that tiers do not polarise). */
  readonly ecmpSeed: number;
}

export const DEFAULT_SWITCH_CONFIG: SwitchConfig = Object.freeze({
  bufferBytes: 32 * 1024 * 1024,
  reserveBytes: 4 * 1024,
  pfc: Object.freeze({
    enabled: true,
    mode: 'dynamic' as const,
    alphaShift: 3,
    xoffBytes: 256 * 1024,
    xonBytes: 252 * 1024,
    resumeOffsetBytes: 3 * 1024,
    headroomFactor: 3,
    headroomMtus: 2,
    pauseQuanta: 0xffff,
    priorities: 1 << 3,
  }),
  ecn: Object.freeze({
    thresholds: Object.freeze([Object.freeze({ linkRate: 100e9, kminBytes: 400_000, kmaxBytes: 1_600_000, pmax: 0.2 })]),
    priorities: 0xfe,
  }),
  scheduler: 'strict' as const,
  dwrrWeights: Object.freeze([1, 1, 1, 1, 1, 1, 1, 1]),
  dwrrQuantumBytes: 1500,
  trust: 'dscp' as const,
  dscpToPriority: Object.freeze(Array.from({ length: 64 }, (_, d) => d >> 3)),
  ecmpSeed: 0,
});

/** The thresholds a port of `linkRate` uses: its rate's entry, or the nearest entry scaled by rate. */
export function ecnForRate(list: readonly EcnAtRate[], linkRate: number): EcnThresholds {
  let best = list[0]!;
  for (const e of list) {
    if (e.linkRate === linkRate) return e;
    if (Math.abs(Math.log(e.linkRate / linkRate)) < Math.abs(Math.log(best.linkRate / linkRate))) best = e;
  }
  const k = linkRate / best.linkRate;
  return { kminBytes: Math.round(best.kminBytes * k), kmaxBytes: Math.round(best.kmaxBytes * k), pmax: best.pmax };
}

/** PFC headroom of an ingress port (HPCC third.cc: 3 × rate × delay, plus 2 packets). */
export function headroomBytes(pfc: PfcConfig, linkRate: number, delayNs: number, mtu: number): number {
  return Math.ceil((pfc.headroomFactor * linkRate * delayNs) / 8e9) + pfc.headroomMtus * mtu;
}
