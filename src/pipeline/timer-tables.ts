/**
 * Transport timer values (IBTA §9.7.6.1.3 local ACK timeout, §9.7.5.2.8 RNR
 * NAK timer; SPEC-DIGEST §4.4, §4.6).
 */

/** Local ACK timeout in ns: 4.096 µs × 2^timeout; 0 means no timer (infinite). */
export function localAckTimeoutNs(timeout: number): number {
  if (timeout === 0) return Infinity;
  return 4096 * 2 ** timeout;
}

/** The RNR NAK timer codes, in µs (code 0 is the longest: 655.36 ms). */
export const RNR_TIMER_US: readonly number[] = [
  655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920,
  122880, 163840, 245760, 327680, 491520,
];

export function rnrTimerNs(code: number): number {
  return RNR_TIMER_US[code & 0x1f]! * 1000;
}

/** ACK credit codes (AETH syndrome low 5 bits) → receive WQEs advertised; 31 = unlimited. */
export const CREDIT_TABLE: readonly number[] = [
  0,
  1,
  2,
  3,
  4,
  6,
  8,
  12,
  16,
  24,
  32,
  48,
  64,
  96,
  128,
  192,
  256,
  384,
  512,
  768,
  1024,
  1536,
  2048,
  3072,
  4096,
  6144,
  8192,
  12288,
  16384,
  24576,
  32768,
  Infinity,
];
