/**
 * Helpers for the simulator's tests: scenarios from the scenarios/ folder
 * (patched per test), their captures decoded into rows, counters by name.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseScenario, type Scenario } from '../../src/scenario/scenario.js';
import { runScenario, type RunScenarioOptions, type ScenarioResult } from '../../src/scenario/scenario-runner.js';
import { decodePacket, iteratePcap, LINKTYPE_ETHERNET, Op, opcodeName } from '../../src/wire/index.js';
import { expect } from 'vitest';
import { IBV_WC_SUCCESS } from '../../src/driver/verbs/index.js';
import { startSimModel } from '../../src/boot.js';
import { DEFAULT_CONFIG, type ModelConfig } from '../../src/runtime/config.js';
import type { FaultRule } from '../../src/fabric/faults/rules.js';
import type { SimModel } from '../../src/runtime/sim/sim-model.js';
import { closeDev, type Ep, type Fabric, openDev, pollN, postSend, type Region, wrWrite } from '../e2e/harness.js';

export const SCENARIOS = fileURLToPath(new URL('../../scenarios/', import.meta.url));

/** The JSON of scenarios/<name>.json, as an object to patch. */
export function scenarioJson(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(`${SCENARIOS}${name}.json`, 'utf8')) as Record<string, unknown>;
}

export function scenario(json: Record<string, unknown>, source = 'test-scenario'): Scenario {
  return parseScenario(json, source);
}

export async function run(json: Record<string, unknown>, opts?: RunScenarioOptions): Promise<ScenarioResult> {
  return runScenario(scenario(json), opts);
}

/** One frame of a capture, decoded. */
export interface Row {
  ns: number;
  op: string;
  psn: number;
  destQp: number;
  /** AETH syndrome, or -1. */
  syndrome: number;
  len: number;
}

export function rows(pcap: Uint8Array): Row[] {
  const out: Row[] = [];
  for (const r of iteratePcap(pcap)) {
    const d = decodePacket(r.data);
    if (!d.ok) {
      out.push({ ns: Number(r.timestampNs), op: d.error.code, psn: -1, destQp: -1, syndrome: -1, len: r.data.length });
      continue;
    }
    const p = d.packet;
    out.push({
      ns: Number(r.timestampNs),
      op: opcodeName(p.bth.opcode),
      psn: p.bth.psn,
      destQp: p.bth.destQp,
      syndrome: p.aeth ? p.aeth.syndrome : -1,
      len: r.data.length,
    });
  }
  return out;
}

/** Counter `name` of `dev` port 1. */
export function ctr(r: ScenarioResult, dev: string, name: string): number {
  return r.counters[dev]!['1']![name]!;
}

/**
 * The default two hosts on the simulator (devices in this thread, `faults`
 * on their cable), both devices opened: a Fabric for the e2e harness, and
 * the simulator to move or read virtual time. Stop it with stopModel().
 */
export async function simFabric(faults: readonly FaultRule[] = [], seed: number | string = 1): Promise<Fabric & { sim: SimModel }> {
  const config: ModelConfig = { ...(JSON.parse(JSON.stringify(DEFAULT_CONFIG)) as ModelConfig), workers: 0 };
  const sim = await startSimModel({ ...config, seed, faults: [...faults] });
  const a = openDev(config.devices[0]!.name);
  const b = openDev(config.devices[1]!.name);
  return {
    a,
    b,
    config,
    sim,
    close: async () => {
      closeDev(a);
      closeDev(b);
    },
  };
}

/** One RDMA WRITE of QP `from` as it left rnic0 (a port of `linktype`): the packet a hostile flood is cut from. */
export async function captureWriteTemplate(sim: SimModel, from: Ep, src: Region, dst: Region, linktype = LINKTYPE_ETHERNET): Promise<Uint8Array> {
  let frame: Uint8Array | null = null;
  const off = sim.observe((e) => {
    if (frame || e.dir !== 'tx' || e.device !== 'rnic0') return;
    const d = decodePacket(e.frame, linktype);
    if (d.ok && d.packet.bth.opcode === Op.RC_RDMA_WRITE_ONLY) frame = e.frame.slice();
  });
  postSend(from, wrWrite({ sge: [src.sge(0, 512)], remote: { addr: dst.at(0), rkey: dst.rkey }, wrId: 1n }));
  const [wc] = await pollN(from.scq, 1, 'template WRITE');
  off();
  expect(wc!.status).toBe(IBV_WC_SUCCESS);
  expect(frame).not.toBeNull();
  return frame!;
}
