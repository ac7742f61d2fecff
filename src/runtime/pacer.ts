/**
 * A token bucket that paces a UDP cable's sending to a rate: a peer that
 * cannot take frames at line rate (a TCG guest's virtio-net) drops them,
 * and every drop costs a retransmission timeout. The bucket only decides
 * when a frame may go; it never drops one. The clock is handed in (ns), so
 * the decisions can be tested without time passing.
 */
export interface PaceSettings {
  /** Bits per second, long-term. */
  readonly rate: number;
  /** Bytes that may go back to back after an idle spell. */
  readonly burstBytes: number;
}

/** 64 KiB: one 64 KiB message at once; with a ~1 ms timer tick this caps the rate near 500 Mb/s (burst per tick). */
export const DEFAULT_BURST_BYTES = 64 << 10;

export class Pacer {
  /** Bytes that may be sent now; negative after a frame larger than what was left. */
  #tokens: number;
  #last: number;
  readonly #bytesPerNs: number;
  readonly #burst: number;

  constructor(settings: PaceSettings, nowNs: number) {
    const { rate, burstBytes } = settings;
    if (!(rate > 0) || !Number.isFinite(rate)) throw new RangeError(`pacer rate ${rate} must be a positive number of bits/s`);
    if (!(burstBytes >= 1) || !Number.isFinite(burstBytes)) throw new RangeError(`pacer burstBytes ${burstBytes} must be at least 1`);
    this.#bytesPerNs = rate / 8e9;
    this.#burst = burstBytes;
    this.#tokens = burstBytes;
    this.#last = nowNs;
  }

  /**
   * Asks to send `bytes` at `nowNs`. Returns 0 and takes the tokens if it
   * may go now, else the ns to wait (taking nothing). A frame larger than
   * the burst goes once the bucket is full, leaving it in debt, so the
   * long-term rate holds for any frame size.
   */
  take(bytes: number, nowNs: number): number {
    this.#refill(nowNs);
    const need = Math.min(bytes, this.#burst);
    if (this.#tokens >= need) {
      this.#tokens -= bytes;
      return 0;
    }
    return Math.ceil((need - this.#tokens) / this.#bytesPerNs);
  }

  #refill(nowNs: number): void {
    const dt = nowNs - this.#last;
    if (dt <= 0) return;
    this.#last = nowNs;
    this.#tokens = Math.min(this.#burst, this.#tokens + dt * this.#bytesPerNs);
  }
}
