/**
 * The switch's memory management unit: one shared packet buffer, accounted
 * per ingress (port, priority) for admission and PFC, and per egress
 * (port, priority) for ECN, in the shape of the HPCC ns-3 simulator's
 * SwitchMmu (read for what each quantity means; this is our own code):
 *
 *   reserve    each ingress (port, priority) first fills a small private
 *              reserve (reserveBytes);
 *   shared     beyond it, bytes come from the shared pool;
 *   headroom   once the (port, priority) is over its XOFF threshold, further
 *              bytes of a lossless priority go to the port's headroom: what
 *              is still in flight after the PAUSE is sent.
 *
 * XOFF threshold, dynamic: (buffer − total headroom − total reserve −
 * shared used) >> alphaShift; static: xoffBytes. A (port, priority) is
 * paused when it uses headroom or its shared bytes reach the threshold;
 * resumed when its headroom is empty and its shared bytes + resumeOffset
 * fit under the threshold (static: are at most xonBytes). A lossless
 * packet is dropped only when both headroom and the threshold are
 * exhausted; a lossy one (PFC off, or a priority not lossless) when it
 * would take its shared bytes over the threshold or the buffer is full.
 */
import { PRIORITIES, type SwitchConfig } from './config.js';

export class Mmu {
  readonly #cfg: SwitchConfig;
  readonly #ingress: Float64Array;
  readonly #hdrm: Float64Array;
  readonly #egress: Float64Array;
  readonly #paused: Uint8Array;
  readonly #headroom: Float64Array;
  readonly #lossless: number;
  #shared = 0;
  #used = 0;
  readonly #fixed: number;

  /** `headroom[p]`: PFC headroom of port p in bytes. */
  constructor(cfg: SwitchConfig, headroom: readonly number[]) {
    const n = headroom.length * PRIORITIES;
    this.#cfg = cfg;
    this.#ingress = new Float64Array(n);
    this.#hdrm = new Float64Array(n);
    this.#egress = new Float64Array(n);
    this.#paused = new Uint8Array(n);
    this.#headroom = Float64Array.from(headroom);
    this.#lossless = cfg.pfc.enabled ? cfg.pfc.priorities : 0;
    const totalHdrm = cfg.pfc.enabled ? headroom.reduce((s, h) => s + h, 0) : 0;
    this.#fixed = totalHdrm + headroom.length * cfg.reserveBytes;
  }

  /** Bytes in the buffer now. */
  get usedBytes(): number {
    return this.#used;
  }

  /** Bytes of the shared pool in use. */
  get sharedBytes(): number {
    return this.#shared;
  }

  /** Bytes queued at egress (port, priority). */
  egressBytes(port: number, prio: number): number {
    return this.#egress[port * PRIORITIES + prio]!;
  }

  /** Bytes held for ingress (port, priority), headroom included. */
  ingressBytes(port: number, prio: number): number {
    const k = port * PRIORITIES + prio;
    return this.#ingress[k]! + this.#hdrm[k]!;
  }

  headroomUsed(port: number, prio: number): number {
    return this.#hdrm[port * PRIORITIES + prio]!;
  }

  isLossless(prio: number): boolean {
    return ((this.#lossless >>> prio) & 1) === 1;
  }

  /** The XOFF threshold on shared bytes of one (port, priority) now. */
  threshold(): number {
    const pfc = this.#cfg.pfc;
    if (pfc.enabled && pfc.mode === 'static') return pfc.xoffBytes;
    const free = this.#cfg.bufferBytes - this.#fixed - this.#shared;
    return free > 0 ? Math.floor(free / 2 ** pfc.alphaShift) : 0;
  }

  #sharedOf(k: number): number {
    const v = this.#ingress[k]! - this.#cfg.reserveBytes;
    return v > 0 ? v : 0;
  }

  /** May a packet of `size` from `inPort` at `prio` enter the buffer? */
  admit(inPort: number, prio: number, size: number): boolean {
    if (this.#used + size > this.#cfg.bufferBytes) return false;
    const k = inPort * PRIORITIES + prio;
    const fitsShared = this.#sharedOf(k) + size <= this.threshold() || this.#ingress[k]! + size <= this.#cfg.reserveBytes;
    if (!this.isLossless(prio)) return fitsShared;
    return fitsShared || this.#hdrm[k]! + size <= this.#headroom[inPort]!;
  }

  /** Accounts an admitted packet at ingress (inPort, prio) and egress (outPort, prio). */
  enqueue(inPort: number, outPort: number, prio: number, size: number): void {
    const k = inPort * PRIORITIES + prio;
    const next = this.#ingress[k]! + size;
    const reserve = this.#cfg.reserveBytes;
    if (next <= reserve) {
      this.#ingress[k] = next;
    } else if (this.isLossless(prio) && next - reserve > this.threshold()) {
      this.#hdrm[k] = this.#hdrm[k]! + size;
    } else {
      this.#ingress[k] = next;
      this.#shared += Math.min(size, next - reserve);
    }
    this.#egress[outPort * PRIORITIES + prio] += size;
    this.#used += size;
  }

  /** Releases a packet as it leaves egress (outPort, prio). */
  dequeue(inPort: number, outPort: number, prio: number, size: number): void {
    const k = inPort * PRIORITIES + prio;
    const fromHdrm = Math.min(this.#hdrm[k]!, size);
    const rest = size - fromHdrm;
    const fromShared = Math.min(rest, this.#sharedOf(k));
    this.#hdrm[k] = this.#hdrm[k]! - fromHdrm;
    this.#ingress[k] = this.#ingress[k]! - rest;
    this.#shared -= fromShared;
    this.#egress[outPort * PRIORITIES + prio] -= size;
    this.#used -= size;
  }

  /** Should ingress (port, prio) be paused now (and is it not already)? */
  shouldPause(port: number, prio: number): boolean {
    if (!this.isLossless(prio)) return false;
    const k = port * PRIORITIES + prio;
    if (this.#paused[k] === 1) return false;
    return this.#hdrm[k]! > 0 || this.#sharedOf(k) >= this.threshold();
  }

  /** Should paused ingress (port, prio) be resumed now? */
  shouldResume(port: number, prio: number): boolean {
    const k = port * PRIORITIES + prio;
    if (this.#paused[k] === 0 || this.#hdrm[k]! > 0) return false;
    const shared = this.#sharedOf(k);
    const pfc = this.#cfg.pfc;
    if (pfc.mode === 'static') return shared <= pfc.xonBytes;
    return shared === 0 || shared + pfc.resumeOffsetBytes <= this.threshold();
  }

  isPaused(port: number, prio: number): boolean {
    return this.#paused[port * PRIORITIES + prio] === 1;
  }

  setPaused(port: number, prio: number, paused: boolean): void {
    this.#paused[port * PRIORITIES + prio] = paused ? 1 : 0;
  }
}
