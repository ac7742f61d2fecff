/**
 * Priority flow control (IEEE 802.1Qbb) as one port's MAC sees it: which
 * of its 8 transmit priorities the far end has paused and until when, and
 * what it has itself told the far end, with the per-priority counters
 * ethtool shows for mlx5 (`rx_prio3_pause`, `rx_prio3_pause_duration`,
 * `rx_prio3_pause_transition`, `tx_prio3_pause`, `tx_prio3_pause_duration`).
 *
 * A PFC frame pauses exactly the priorities whose bit is set in its
 * class-enable vector, each for its own time: quanta × 512 bit times at
 * the port's link rate, from the moment the frame has arrived. A time of 0
 * (XON) ends the pause at once; a new frame for a paused priority restarts
 * its time from now. A legacy 802.3x PAUSE stops all eight. Time is kept in
 * integer picoseconds (a quantum is 5.12 ns at 100 Gb/s), so a pause ends
 * at its exact time, and the runtime's ns clock sees it at the first whole
 * ns at or after that.
 *
 * Pure logic: no timers. The transmit side asks `isPaused` before it
 * starts a frame and `resumeNs` for when to look again.
 */
import { EtherType } from '../wire/ethernet.js';
import { decodeMacControl } from '../wire/mac-control.js';

export const PFC_PRIORITIES = 8;

/** The counter names, per priority p (in this order per p), then the global PAUSE ones. */
const PER_PRIO = ['rx_prio%_pause', 'rx_prio%_pause_duration', 'rx_prio%_pause_transition', 'tx_prio%_pause', 'tx_prio%_pause_duration'] as const;

export interface PfcCounterDecl {
  readonly name: string;
  readonly unit: 'frames' | 'us' | 'transitions';
  readonly doc: string;
}

/** The PFC counters (mlx5 ethtool names), in the order `PriorityPause.counters` reports them. */
export const PFC_COUNTERS: readonly PfcCounterDecl[] = Object.freeze([
  ...Array.from({ length: PFC_PRIORITIES }, (_, p) => [
    { name: PER_PRIO[0].replace('%', String(p)), unit: 'frames' as const, doc: `PFC frames received that name priority ${p} (XOFF and XON)` },
    { name: PER_PRIO[1].replace('%', String(p)), unit: 'us' as const, doc: `time priority ${p} was paused by the far end, µs (mlx5 reports µs)` },
    {
      name: PER_PRIO[2].replace('%', String(p)),
      unit: 'transitions' as const,
      doc: `times priority ${p} went from paused to flowing (XON received or the pause time ran out)`,
    },
    { name: PER_PRIO[3].replace('%', String(p)), unit: 'frames' as const, doc: `PFC frames sent that name priority ${p} (XOFF and XON)` },
    { name: PER_PRIO[4].replace('%', String(p)), unit: 'us' as const, doc: `time this port asked the far end to hold priority ${p}, µs` },
  ]).flat(),
  { name: 'rx_global_pause', unit: 'frames', doc: '802.3x PAUSE frames received (they pause every priority)' },
  { name: 'tx_global_pause', unit: 'frames', doc: '802.3x PAUSE frames sent' },
]);

/** Pause times on one side (received: we are held; sent: we hold the far end). */
class PauseSide {
  /** End of the current pause per priority, ps; 0 when none was ever set. */
  readonly untilPs = new Float64Array(PFC_PRIORITIES);
  /** Start of the current (or last) pause, ps. */
  readonly sincePs = new Float64Array(PFC_PRIORITIES);
  /** Paused time of pauses already over, ps. */
  readonly donePs = new Float64Array(PFC_PRIORITIES);
  readonly frames = new Float64Array(PFC_PRIORITIES);
  readonly transitions = new Float64Array(PFC_PRIORITIES);
  /** Bit p: priority p has a pause that may still run (cleared lazily once over). */
  mask = 0;
  global = 0;

  /** Closes pauses whose time ran out by `nowPs`. */
  settle(nowPs: number): void {
    let m = this.mask;
    while (m !== 0) {
      const p = 31 - Math.clz32(m);
      m &= ~(1 << p);
      const until = this.untilPs[p]!;
      if (until <= nowPs) {
        this.donePs[p]! += until - this.sincePs[p]!;
        this.transitions[p]!++;
        this.mask &= ~(1 << p);
      }
    }
  }

  /** One frame's time for priority p: quanta > 0 (re)starts a pause of `ps`, 0 ends it. */
  apply(p: number, ps: number, nowPs: number, perPriorityFrame = true): void {
    if (perPriorityFrame) this.frames[p]!++;
    const bit = 1 << p;
    if (ps > 0) {
      if ((this.mask & bit) === 0) this.sincePs[p] = nowPs;
      this.untilPs[p] = nowPs + ps;
      this.mask |= bit;
    } else if (this.mask & bit) {
      this.donePs[p]! += nowPs - this.sincePs[p]!;
      this.untilPs[p] = nowPs;
      this.transitions[p]!++;
      this.mask &= ~bit;
    }
  }

  /** Paused time of priority p up to `nowPs` (an ongoing pause counts so far), ps. */
  durationPs(p: number, nowPs: number): number {
    let d = this.donePs[p]!;
    if (this.mask & (1 << p)) d += Math.min(nowPs, this.untilPs[p]!) - this.sincePs[p]!;
    return d;
  }
}

/** Outcome of `PriorityPause.receive`. */
export type PauseReceipt = 'applied' | 'malformed';

export class PriorityPause {
  #rateBps: number;
  readonly #rx = new PauseSide();
  readonly #tx = new PauseSide();
  /** Reused for frames that arrive: 8 times in ps. */
  readonly #times = new Float64Array(PFC_PRIORITIES);

  /** `linkRateBps`: the port's signalling rate, which sets the length of a quantum. */
  constructor(linkRateBps = 100e9) {
    this.#rateBps = checkRate(linkRateBps);
  }

  get linkRateBps(): number {
    return this.#rateBps;
  }

  /** The runtime tells the port its link rate when it is cabled (pauses already running keep their end). */
  setLinkRate(bps: number): void {
    this.#rateBps = checkRate(bps);
  }

  /** `quanta` × 512 bit times at the link rate, in ps, rounded up to a whole ps. */
  quantaPs(quanta: number): number {
    if (quanta === 0) return 0;
    const r = BigInt(this.#rateBps);
    return Number((BigInt(quanta) * 512_000_000_000_000n + r - 1n) / r);
  }

  /** Bit p set: priority p may be paused (a cheap first test; `isPaused` is the answer). */
  get pausedMask(): number {
    return this.#rx.mask;
  }

  /** Whether the far end holds priority `p` at `nowNs`. */
  isPaused(p: number, nowNs: number): boolean {
    return (this.#rx.mask & (1 << p)) !== 0 && nowNs * 1000 < this.#rx.untilPs[p]!;
  }

  /** The first ns at which priority `p` may send again (≤ now when it is not paused). */
  resumeNs(p: number): number {
    return (this.#rx.mask & (1 << p)) === 0 ? 0 : Math.ceil(this.#rx.untilPs[p]! / 1000);
  }

  /**
   * A MAC Control frame received at `nowPs` (the time its last bit
   * arrived). PFC: each enabled priority takes its time; 802.3x PAUSE: all
   * of them take the one time. Anything else MAC Control is 'malformed'.
   */
  receive(frame: Uint8Array, nowPs: number): PauseReceipt {
    const f = decodeMacControl(frame);
    if (typeof f === 'string') return 'malformed';
    const side = this.#rx;
    side.settle(nowPs);
    if (f.kind === 'pause') {
      side.global++;
      const ps = this.quantaPs(f.pauseTime);
      // Not a per-priority frame: it holds every priority, counted as rx_global_pause.
      for (let p = 0; p < PFC_PRIORITIES; p++) side.apply(p, ps, nowPs, false);
      return 'applied';
    }
    const times = this.#times;
    for (let p = 0; p < PFC_PRIORITIES; p++) times[p] = this.quantaPs(f.pauseTimes[p]!);
    for (let p = 0; p < PFC_PRIORITIES; p++) if (f.classEnable & (1 << p)) side.apply(p, times[p]!, nowPs);
    return 'applied';
  }

  /** A frame this port transmits at `nowPs`: PFC and PAUSE frames are counted on the send side. */
  noteTransmit(frame: Uint8Array, nowPs: number): void {
    if (frame.length < 16 || ((frame[12]! << 8) | frame[13]!) !== EtherType.MAC_CONTROL) return;
    const f = decodeMacControl(frame);
    if (typeof f === 'string') return;
    const side = this.#tx;
    side.settle(nowPs);
    if (f.kind === 'pause') {
      side.global++;
      return;
    }
    for (let p = 0; p < PFC_PRIORITIES; p++) if (f.classEnable & (1 << p)) side.apply(p, this.quantaPs(f.pauseTimes[p]!), nowPs);
  }

  /** The counters at `nowPs`, in PFC_COUNTERS order, as name → value. */
  counters(nowPs: number): Record<string, number> {
    const rx = this.#rx;
    const tx = this.#tx;
    rx.settle(nowPs);
    tx.settle(nowPs);
    const out: Record<string, number> = {};
    for (let p = 0; p < PFC_PRIORITIES; p++) {
      out[`rx_prio${p}_pause`] = rx.frames[p]!;
      out[`rx_prio${p}_pause_duration`] = Math.floor(rx.durationPs(p, nowPs) / 1e6);
      out[`rx_prio${p}_pause_transition`] = rx.transitions[p]!;
      out[`tx_prio${p}_pause`] = tx.frames[p]!;
      out[`tx_prio${p}_pause_duration`] = Math.floor(tx.durationPs(p, nowPs) / 1e6);
    }
    out.rx_global_pause = rx.global;
    out.tx_global_pause = tx.global;
    return out;
  }
}

function checkRate(bps: number): number {
  if (!Number.isSafeInteger(bps) || bps <= 0) throw new RangeError(`PFC: a link rate is a positive integer of bits per second, got ${bps}`);
  return bps;
}
