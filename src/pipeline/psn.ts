/**
 * 24-bit packet sequence numbers (IBTA §9.7.1). Comparison splits the space
 * in halves around a reference, as Linux rxe's psn_compare does: "later"
 * means within the next 2^23 - 1, "earlier" within the previous 2^23.
 */
export const PSN_MASK = 0xffffff;

export function psnAdd(psn: number, n: number): number {
  return (psn + n) & PSN_MASK;
}

/** Negative when a is earlier than b, 0 when equal, positive when later. */
export function psnCompare(a: number, b: number): number {
  return ((a - b) << 8) >> 8;
}

/** Number of PSNs from b forward to a (a - b, modulo 2^24). */
export function psnDistance(a: number, b: number): number {
  return (a - b) & PSN_MASK;
}
