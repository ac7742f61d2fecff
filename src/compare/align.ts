/**
 * Aligns two sequences whose items have keys unique within each sequence
 * (a flow's packets: opcode, relative PSN, transmission count). The
 * longest common subsequence of unique keys is the longest increasing
 * subsequence of B's positions taken in A's order: O(n log n), exact.
 */

export interface Alignment {
  /** Matched positions, in order: [index in a, index in b]. */
  readonly pairs: readonly (readonly [number, number])[];
  readonly onlyA: readonly number[];
  readonly onlyB: readonly number[];
}

export function align(a: readonly string[], b: readonly string[]): Alignment {
  const posB = new Map<string, number>();
  b.forEach((k, j) => posB.set(k, j));
  // Candidates: A's items that B has, as (i, j) with i increasing.
  const cand: [number, number][] = [];
  a.forEach((k, i) => {
    const j = posB.get(k);
    if (j !== undefined) cand.push([i, j]);
  });
  // Longest strictly increasing run of j: patience sorting with back links.
  const tails: number[] = []; // tails[len-1] = index into cand of the smallest tail
  const back = new Int32Array(cand.length).fill(-1);
  for (let c = 0; c < cand.length; c++) {
    const j = cand[c]![1];
    let lo = 0;
    let hi = tails.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cand[tails[mid]!]![1] < j) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0) back[c] = tails[lo - 1]!;
    tails[lo] = c;
  }
  const pairs: [number, number][] = [];
  for (let c = tails.length > 0 ? tails[tails.length - 1]! : -1; c >= 0; c = back[c]!) pairs.push(cand[c]!);
  pairs.reverse();
  const inA = new Set(pairs.map((p) => p[0]));
  const inB = new Set(pairs.map((p) => p[1]));
  return {
    pairs,
    onlyA: a.map((_, i) => i).filter((i) => !inA.has(i)),
    onlyB: b.map((_, j) => j).filter((j) => !inB.has(j)),
  };
}
