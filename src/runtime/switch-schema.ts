/**
 * A switch's settings as the files a user writes give them (the scenario's
 * `switch` section, the configuration's `switches[].config`): one zod
 * schema, and its resolution into the plain SwitchConfig the switch is
 * built from (src/fabric/switch/config.ts). Also the unit-bearing values
 * both files use ('100Gbps', '1us', '32MiB').
 */
import { z } from 'zod';
import { type EcnAtRate, DEFAULT_SWITCH_CONFIG, PRIORITIES, type SwitchConfig } from '../fabric/switch/config.js';
import { parseDurationNs, parseRate } from '../fabric/timing-params.js';
import { parseBytes } from '../params/params.js';

/** A value in units ('100Gbps', '1us', '32MiB') or a bare number, converted by `parse` (which throws on bad input). */
function unit(parse: (raw: unknown, path: string) => number, what: string) {
  return z.union([z.number(), z.string()]).transform((v, ctx) => {
    try {
      return parse(v, '');
    } catch (e) {
      ctx.addIssue({ code: 'custom', message: `${what}: ${(e as Error).message.replace(/^: /, '')}` });
      return z.NEVER;
    }
  });
}

export const rate = unit(parseRate, 'a rate');
export const duration = unit(parseDurationNs, 'a duration');
export const bytes = unit(parseBytes, 'a size');
export const prio = z
  .number()
  .int()
  .min(0)
  .max(PRIORITIES - 1);
export const prioList = z.array(prio).max(PRIORITIES);

const ecnAtRate = z
  .strictObject({ linkRate: rate, kmin: bytes, kmax: bytes, pmax: z.number().min(0).max(1) })
  .refine((e) => e.kmax > e.kmin, { message: 'must be above kmin', path: ['kmax'] });

const D = DEFAULT_SWITCH_CONFIG;
const bits = (list: readonly number[]): number => list.reduce((m, p) => m | (1 << p), 0);

export const SwitchSchema = z
  .strictObject({
    buffer: bytes.default(D.bufferBytes),
    reserve: bytes.default(D.reserveBytes),
    pfc: z
      .strictObject({
        enabled: z.boolean().default(true),
        mode: z.enum(['dynamic', 'static']).default('dynamic'),
        alphaShift: z.number().int().min(0).max(16).default(D.pfc.alphaShift),
        xoff: bytes.default(D.pfc.xoffBytes),
        xon: bytes.default(D.pfc.xonBytes),
        resumeOffset: bytes.default(D.pfc.resumeOffsetBytes),
        headroomFactor: z.number().min(0).max(100).default(D.pfc.headroomFactor),
        headroomMtus: z.number().int().min(0).max(64).default(D.pfc.headroomMtus),
        pauseQuanta: z.number().int().min(1).max(0xffff).default(D.pfc.pauseQuanta),
        priorities: prioList.default([3]),
      })
      .refine((p) => p.xon <= p.xoff, { message: 'must be at most xoff', path: ['xon'] })
      .prefault({}),
    ecn: z
      .strictObject({
        enabled: z.boolean().default(true),
        thresholds: z
          .array(ecnAtRate)
          .min(1)
          .default([{ linkRate: 100e9, kmin: 400_000, kmax: 1_600_000, pmax: 0.2 }]),
        priorities: prioList.default([1, 2, 3, 4, 5, 6, 7]),
      })
      .prefault({}),
    scheduler: z.enum(['strict', 'dwrr']).default('strict'),
    dwrrWeights: z
      .array(z.number().int().min(1).max(1000))
      .length(PRIORITIES)
      .default([...D.dwrrWeights]),
    dwrrQuantum: bytes.default(D.dwrrQuantumBytes),
    trust: z.enum(['dscp', 'pcp']).default('dscp'),
    /** 64 priorities, one per DSCP. */
    dscpToPriority: z
      .array(prio)
      .length(64)
      .default([...D.dscpToPriority]),
    ecmpSeed: z.number().int().min(0).max(0xffffffff).default(0),
  })
  .refine((s) => s.buffer > 0, { message: 'must be more than 0', path: ['buffer'] })
  .refine((s) => s.dwrrQuantum >= 64, { message: 'must be at least 64 bytes', path: ['dwrrQuantum'] });

/** The schema's output as the switch takes it. */
export function resolveSwitchConfig(s: z.output<typeof SwitchSchema>): SwitchConfig {
  const thresholds: EcnAtRate[] = s.ecn.thresholds.map((t) => ({ linkRate: t.linkRate, kminBytes: t.kmin, kmaxBytes: t.kmax, pmax: t.pmax }));
  return Object.freeze({
    bufferBytes: s.buffer,
    reserveBytes: s.reserve,
    pfc: Object.freeze({
      enabled: s.pfc.enabled,
      mode: s.pfc.mode,
      alphaShift: s.pfc.alphaShift,
      xoffBytes: s.pfc.xoff,
      xonBytes: s.pfc.xon,
      resumeOffsetBytes: s.pfc.resumeOffset,
      headroomFactor: s.pfc.headroomFactor,
      headroomMtus: s.pfc.headroomMtus,
      pauseQuanta: s.pfc.pauseQuanta,
      priorities: bits(s.pfc.priorities),
    }),
    ecn: s.ecn.enabled ? Object.freeze({ thresholds: Object.freeze(thresholds), priorities: bits(s.ecn.priorities) }) : null,
    scheduler: s.scheduler,
    dwrrWeights: Object.freeze(s.dwrrWeights),
    dwrrQuantumBytes: s.dwrrQuantum,
    trust: s.trust,
    dscpToPriority: Object.freeze(s.dscpToPriority),
    ecmpSeed: s.ecmpSeed,
  });
}
