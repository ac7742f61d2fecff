/**
 * Runs the hw-tests (cases.ts) on two named devices, whatever their
 * provider, and prints one JSON line per test ("HWTEST {...}").
 *
 *   node dist/hw-tests/run-cases.js <devA> <devB> [test-name-substring ...]
 *
 * In the guest: `RNIC_NO_MODEL=1 node dist/hw-tests/run-cases.js rxe0 rxe0`.
 * On the host: `node dist/hw-tests/run-cases.js rnic0 rnic1`.
 */
import { stopModel } from '../src/boot.js';
import { CASES, DEVICE_DIFFERENCES } from './cases.js';
import { closeDev, openDev, type Dev } from './pair.js';

export interface CaseResult {
  test: string;
  provider: string;
  device: string;
  result: 'passed' | 'failed' | 'difference';
  detail: string;
  ms: number;
}

export async function runCases(devA: string, devB: string, filter: string[] = []): Promise<CaseResult[]> {
  const out: CaseResult[] = [];
  for (const c of CASES) {
    if (filter.length && !filter.some((f) => c.name.includes(f))) continue;
    const t0 = Date.now();
    let a: Dev | null = null;
    let b: Dev | null = null;
    let provider = '?';
    let res: CaseResult['result'] = 'passed';
    let detail = '';
    try {
      a = openDev(devA);
      b = openDev(devB);
      provider = a.provider;
      const behaviour = provider === 'model' ? 'model' : a.name.startsWith('rxe') ? 'rxe' : 'other';
      await c.run({ provider, behaviour, a, b });
      const diff = DEVICE_DIFFERENCES[c.name]?.[behaviour];
      if (diff) {
        res = 'difference';
        detail = diff;
      }
    } catch (e) {
      res = 'failed';
      detail = e instanceof Error ? `${e.name === 'Fail' || e.constructor.name === 'Fail' ? '' : e.name + ': '}${e.message}` : String(e);
    } finally {
      for (const d of [a, b]) {
        try {
          if (d) closeDev(d);
        } catch {
          // the next test opens fresh contexts
        }
      }
    }
    const r: CaseResult = { test: c.name, provider, device: devA === devB ? devA : `${devA}+${devB}`, result: res, detail, ms: Date.now() - t0 };
    out.push(r);
    console.log(`HWTEST ${JSON.stringify(r)}`);
  }
  return out;
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/.*\//, ''))) {
  const [devA = 'rnic0', devB = devA === 'rnic0' ? 'rnic1' : devA, ...filter] = process.argv.slice(2);
  const r = await runCases(devA, devB, filter);
  await stopModel();
  process.exit(r.some((x) => x.result === 'failed') ? 1 : 0);
}
