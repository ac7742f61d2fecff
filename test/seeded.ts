/**
 * A seeded stream of numbers in [0, 1) for choosing test cases: the fault
 * dice's mulberry32 (src/fabric/faults/random.ts), so every test draws from
 * the one generator the model itself uses.
 */
import { mulberry32 } from '../src/fabric/faults/random.js';

export function seededRandom(seed: number): () => number {
  const r = mulberry32(seed);
  return () => r.next();
}
