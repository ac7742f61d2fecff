/** Native InfiniBand test fabrics: two IB hosts on one wire (test/e2e/ib-link.test.ts, the IB fuzz). */
import { join } from 'node:path';
import { type ModelConfig, parseConfig } from '../../src/runtime/config.js';

export const LID_A = 0x10;
export const LID_B = 0x24;

/**
 * rnic0 (LID 0x10, LMC 2: it owns LIDs 0x10..0x13) and rnic1 (LID 0x24, SM
 * at LID 1), one wire (with `faults` when given); rnic0's port is captured to `dir`/a.pcap when `dir` is given.
 */
export function ibConfig(workers: number, dir?: string, faults?: readonly object[]): ModelConfig {
  return parseConfig(
    {
      workers,
      devices: [
        {
          name: 'rnic0',
          ports: [{ mac: '02:00:00:00:00:01', linkLayer: 'infiniband', lid: LID_A, lmc: 2, ...(dir === undefined ? {} : { capture: join(dir, 'a.pcap') }) }],
        },
        { name: 'rnic1', ports: [{ mac: '02:00:00:00:00:02', linkLayer: 'infiniband', lid: LID_B, smLid: 1 }] },
      ],
      cables: [{ kind: 'wire', a: 'rnic0:1', b: 'rnic1:1', ...(faults === undefined ? {} : { faults }) }],
    },
    'ib-test',
  );
}
