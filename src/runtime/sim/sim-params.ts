/**
 * Parameters of the sim runtime itself (STYLE §6), beside the timing model
 * of src/fabric/timing-params.ts: how the device's transmit path holds
 * frames, how far an empty ibv_poll_cq moves virtual time, and how the
 * stages a packet crosses are counted. Each has a default, a unit and a
 * one-line description; docs/simulator.md ("The sim runtime") carries the
 * table and a test checks it.
 */
import { count, describeParams, type ParamValues, resolveParams, size } from '../../params/params.js';
import { durationNs } from '../../fabric/timing-params.js';

export const SIM_RUNTIME_PARAMS = {
  txQueueFrames: count(
    64,
    'frames a device holds between its packet builder and the MAC (waiting for DMA or for the line); the pipeline is not asked for more',
    1,
    1 << 16,
  ),
  pollStep: durationNs(
    '1us',
    'how far one empty ibv_poll_cq may move virtual time when nothing completes (it always runs at least the next event)',
    1,
    1_000_000_000,
  ),
  txStages: count(2, 'pipeline stages a packet crosses from the DMA engine to the MAC (packet builder, transmit arbiter), each stageProcessing', 0, 64),
  rxStages: count(
    2,
    'pipeline stages a packet crosses from the MAC to where it takes effect (receive parser, responder or completer), each stageProcessing',
    0,
    64,
  ),
  wqeBytes: size('64B', 'what the device reads to fetch one send WQE', 1, 4096),
  cqeBytes: size('64B', 'what the device writes for one CQE or EQE', 1, 4096),
} as const;

export type SimRuntimeParams = ParamValues<typeof SIM_RUNTIME_PARAMS>;

/** Validates the sim runtime's own settings (DEV_ERR_BAD_CONFIG naming the path on error). */
export function resolveSimRuntimeParams(raw: Readonly<Record<string, unknown>> = {}, path = 'sim'): SimRuntimeParams {
  return resolveParams(SIM_RUNTIME_PARAMS, raw, path);
}

/** The schema as a markdown table (docs/simulator.md embeds it). */
export function describeSimRuntimeParams(): string {
  return describeParams(SIM_RUNTIME_PARAMS);
}
