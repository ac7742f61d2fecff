/**
 * Fault injection between ports: drop, corrupt (the receiver sees a bad
 * ICRC), duplicate, reorder, delay and link down/up, chosen by rules
 * (direction, opcode, QP, PSN range, every n-th, a time window) or by
 * probability, all seeded. See docs/faults.md.
 *
 *  - faults/rules.ts        the rule format, its checker, FaultError, durations
 *  - faults/spec.ts         the `--fault` one-line form, both ways
 *  - faults/injector.ts     FaultInjector: apply(frame, nowNs, direction) → FaultVerdict
 *  - faults/classify.ts     reading a frame with the wire decoder; the corrupting bit flip
 *  - faults/random.ts       the seeded default random source (mulberry32)
 *  - faults/carry-out.ts    carrying out a verdict (now, later, released frames)
 *  - faults/faulty-cable.ts FaultyCableEnd, for the realtime runtime (sends and receives)
 */
export {
  type CorruptTarget,
  CORRUPT_TARGETS,
  type Duration,
  FAULT_ACTIONS,
  FAULT_DIRECTIONS,
  type FaultAction,
  type FaultDirection,
  type FaultDirectionSpec,
  FaultError,
  FAULT_STAGES,
  type FaultStage,
  type FaultErrorCode,
  type FaultMatch,
  type FaultRule,
  MAX_COPIES,
  MAX_FAULT_DURATION_NS,
  MAX_REORDER_DEPTH,
  OPCODE_KINDS,
  type ResolvedFaultMatch,
  type ResolvedFaultRule,
  canonicalOpcode,
  formatDurationNs,
  parseDurationNs,
  resolveFaultRule,
  resolveFaultRules,
} from './faults/rules.js';
export { formatFaultRule, parseFaultSpec, parseFaultSpecs } from './faults/spec.js';
export {
  FAULT_STATS,
  type FaultFiredEvent,
  FaultInjector,
  type FaultInjectorOptions,
  type FaultRuleStats,
  type FaultStatDecl,
  type FaultStats,
  type FaultVerdict,
  type FaultVerdictKind,
  type LinkDownEvent,
  PASS,
} from './faults/injector.js';
export { type BitFlip, corruptFrame } from './faults/classify.js';
export { carryOut } from './faults/carry-out.js';
export { type RandomSource, mulberry32, streamSeed } from './faults/random.js';
export { FaultyCableEnd, type FaultyCableEndOptions, type FaultyCableEndStats } from './faults/faulty-cable.js';
