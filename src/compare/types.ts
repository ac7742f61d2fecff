/**
 * What `rnic compare` compares (one run of a scenario on one target) and
 * what it reports. Plain data: the CLI reads captures and JSON files into
 * a RunRecord; compareRuns (compare.ts) turns two of them into a report.
 */
import type { Packet } from '../wire/index.js';
import type { DeviceProfile } from '../pipeline/profiles.js';

/** One decoded RoCE frame of a capture: its record index in the file and its time. */
export interface CapturedPacket {
  /** Record index in the capture (0-based), for pointing at it in Wireshark (frame index + 1). */
  readonly index: number;
  readonly ns: number;
  readonly packet: Packet;
}

/** One work request as a timeline records it (scenario timeline.json, or a recorder beside a real device). */
export interface CompletionRecord {
  readonly index: number;
  readonly op: string;
  /** Bytes: the WR's length (byte_len of a receive). */
  readonly size: number;
  /** 'IBV_WC_SUCCESS', …; null: it never completed. */
  readonly status: string | null;
  readonly completedNs: number | null;
}

export interface QpCompletions {
  /** The QP's name (a scenario's), or its position. */
  readonly qp: string;
  readonly wrs: readonly CompletionRecord[];
}

export interface RunRecord {
  /** How the report names this run ('A: model, profile ibta'). */
  readonly label: string;
  readonly packets: readonly CapturedPacket[];
  /** Frames that were RoCE but failed a check (ICRC, checksum): counted, not aligned. */
  readonly invalidFrames: number;
  /** Absent when the run has no timeline. */
  readonly completions?: readonly QpCompletions[];
  /** Per device (in order), per port, counter name → value. Absent: no counters. */
  readonly counters?: readonly { readonly device: string; readonly ports: Readonly<Record<string, Readonly<Record<string, number>>>> }[];
  /** The profile the run's devices followed, when known (explains differences). */
  readonly profile?: DeviceProfile;
}

/** Fields and kinds of difference; `--allow` takes these names. */
export const PACKET_FIELDS = ['opcode', 'ackReq', 'solicited', 'syndrome', 'msn', 'length', 'dmaLength', 'udpSrcPort', 'ttl', 'ecn', 'dscp'] as const;
export type PacketField = (typeof PACKET_FIELDS)[number];

export type DifferenceKind =
  | 'packet-field'
  /** A packet one run sent and the other did not (a retransmission, a NAK, a READ segment). */
  | 'packet-only-in-a'
  | 'packet-only-in-b'
  /** A flow (one direction of one QP: requests or responses) seen in one run only. */
  | 'flow-only-in-a'
  | 'flow-only-in-b'
  /** The interval before a retransmission (the transport or RNR timer) differs beyond the tolerance. */
  | 'timer'
  | 'completion-field'
  | 'completion-order'
  | 'completion-missing'
  | 'counter'
  | 'invalid-frames';

/** Where a difference happened, as precisely as the runs say. */
export interface Where {
  /** The flow, e.g. 'requests 192.0.2.1 → QP 0x000011 (flow 1)'; in run A's terms. */
  readonly flow?: string;
  readonly qp?: string;
  /** PSN relative to the flow's first (runs start at different PSNs), and the absolute ones. */
  readonly relPsn?: number;
  readonly psnA?: number;
  readonly psnB?: number;
  /** Capture record indices and times (ns) in each run. */
  readonly packetA?: number;
  readonly packetB?: number;
  readonly nsA?: number;
  readonly nsB?: number;
  readonly wr?: number;
  readonly device?: string;
  readonly counter?: string;
}

export interface Difference {
  readonly kind: DifferenceKind;
  readonly field?: string;
  readonly where: Where;
  readonly a: unknown;
  readonly b: unknown;
  /** Consecutive packets (one PSN range) this difference stands for: a go-back-N burst is one difference. */
  readonly packets?: number;
  /** How many times it happened (the same kind, field and values in one flow, QP or device); where is the first. */
  readonly count?: number;
  /** The profile choice that makes the runs differ here (the two runs' profiles differ in it). */
  readonly explainedBy?: string;
  /** Ignored by request (--allow). */
  readonly allowed?: boolean;
  readonly text: string;
}

export interface CompareOptions {
  /** Fields or kinds not to count (PACKET_FIELDS, 'timer', 'counter', 'completion-order', 'retransmission'). */
  readonly allow?: readonly string[];
  /** Two timer intervals agree when |a − b| ≤ tolerance × max(a, b); default 0.5. */
  readonly timerTolerance?: number;
  /** Count differences the profiles explain too. */
  readonly strict?: boolean;
}

export interface CompareReport {
  readonly a: RunSummary;
  readonly b: RunSummary;
  /** Flows aligned, packets matched. */
  readonly flows: number;
  readonly matchedPackets: number;
  readonly differences: readonly Difference[];
  /** Differences neither explained by the profiles nor allowed: what the exit status counts. */
  readonly unexplained: number;
  /** Compared values the comparison never looks at, and why (documented in docs/compare.md). */
  readonly ignored: readonly string[];
}

export interface RunSummary {
  readonly label: string;
  readonly packets: number;
  readonly flows: number;
  readonly retransmissions: number;
  readonly invalidFrames: number;
  readonly profile?: string;
}
