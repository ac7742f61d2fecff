/**
 * A tiny benchmark harness: run a body for a time budget, several rounds,
 * keep the best round (the machine is shared and noisy; the best round is
 * the one least disturbed). Results are compared only with baselines
 * measured in the same run.
 */
export interface Rate {
  name: string;
  opsPerSec: number;
  bytesPerOp: number;
}

export function measure(name: string, bytesPerOp: number, body: (iterations: number) => void, budgetMs = 300, rounds = 5): Rate {
  // Calibrate: find an iteration count that takes ~budget/10.
  let n = 1;
  for (;;) {
    const t0 = process.hrtime.bigint();
    body(n);
    const dt = Number(process.hrtime.bigint() - t0) / 1e6;
    if (dt > budgetMs / 10) break;
    n *= 2;
  }
  let best = 0;
  for (let r = 0; r < rounds; r++) {
    const t0 = process.hrtime.bigint();
    body(n * 10);
    const sec = Number(process.hrtime.bigint() - t0) / 1e9;
    best = Math.max(best, (n * 10) / sec);
  }
  return { name, opsPerSec: best, bytesPerOp };
}

export function fmtRate(r: Rate): string {
  const gbs = (r.opsPerSec * r.bytesPerOp) / 1e9;
  return `${r.name.padEnd(44)} ${(r.opsPerSec / 1e6).toFixed(3).padStart(9)} Mpps ${gbs.toFixed(2).padStart(7)} GB/s`;
}

export function ratio(r: Rate, base: Rate): string {
  return `${(((r.opsPerSec * r.bytesPerOp) / (base.opsPerSec * base.bytesPerOp)) * 100).toFixed(1)}%`;
}
