/**
 * What the interleaving tests beyond RC share (interleavings-*.test.ts):
 * a seed's scheduling of the hand-turned devices (how many passes a driver
 * call runs, passes between calls, time standing or jumping past timers),
 * the step loop that runs an application against it with a hang bound,
 * and the run over many seeds; an application reading its CQ by polling or
 * by completion events (CqReader), and a requester's QP taken through SQD
 * and back mid-run (sqdDrain). test/runtime/interleavings.test.ts (RC)
 * has its own step loop (two flows on one QP pair).
 */
import { expect } from 'vitest';
import {
  IBV_EVENT_SQ_DRAINED,
  IBV_QP_EN_SQD_ASYNC_NOTIFY,
  IBV_QP_STATE,
  IBV_QPS_RTS,
  IBV_QPS_SQD,
  ibv_ack_async_event,
  ibv_ack_cq_events,
  ibv_get_async_event,
  ibv_get_cq_event,
  ibv_modify_qp,
  ibv_poll_cq,
  ibv_req_notify_cq,
  newQpAttr,
  newWc,
  type ibv_comp_channel,
  type ibv_context,
  type ibv_cq,
  type ibv_qp,
  type ibv_wc,
} from '../../src/index.js';
import { handTurnedHost, type HandTurnedHost, type ServicePolicy } from './hand-turned-host.js';

/** RNIC_INTERLEAVING_SEEDS=N runs N seeds; else `fallback`. */
export const seedCount = (fallback: number) => Number(process.env.RNIC_INTERLEAVING_SEEDS ?? fallback);

/** Past any run that works (RC timeout 17, 537 ms, with retries; RNR timer). */
const MAX_VIRTUAL_NS = 120e9;
const MAX_STEPS = 50_000;

export interface Schedule {
  readonly policy: ServicePolicy;
  /** Time between two steps of the driver loop (ns). */
  advance(): number;
  extraPasses(): number;
}

export function drawSchedule(rand: () => number): Schedule {
  const serve = rand(); // chance that a driver call finds the device running
  const settle = rand() * 0.5; // chance that it runs until quiet
  return {
    policy: () => {
      const r = rand();
      return r < settle ? 'settle' : r < settle + serve * (1 - settle) ? 1 + Math.floor(rand() * 3) : 0;
    },
    advance: () => {
      const r = rand();
      if (r < 0.6) return 0;
      if (r < 0.97) return Math.floor(rand() * 20_000);
      return Math.floor(rand() * 150e6); // past a retransmit or RNR timer
    },
    extraPasses: () => (rand() < 0.3 ? Math.floor(rand() * 3) : 0),
  };
}

/**
 * Runs `step` (the applications' next driver calls; a failure or null)
 * with passes and time between, until `done`. A run past the bounds is a
 * hang, reported with `where()`. `await` between steps lets woken
 * event waits run: every step while `waits()` (an application waits for
 * events, or an SQD drain for its async event). When `asleep()` (every
 * application is waiting) the device thread gets the core, or nothing
 * would run.
 */
export async function drive(
  t: HandTurnedHost,
  sched: Schedule,
  app: { step(n: number): string | null; done(): boolean; where(): string; waits?(): boolean; asleep?(): boolean },
): Promise<string | null> {
  t.policy = sched.policy;
  for (let n = 0; !app.done(); n++) {
    if (n > MAX_STEPS || t.clock.t > MAX_VIRTUAL_NS) return `hang: after ${n} steps and ${(t.clock.t / 1e9).toFixed(3)} s virtual; ${app.where()}`;
    const e = app.step(n);
    if (e) return e;
    for (let k = sched.extraPasses(); k > 0; k--) t.host.poll();
    if (app.asleep?.()) t.host.poll();
    t.clock.t += sched.advance();
    t.deliverInterrupts();
    if (app.waits?.() || n % 16 === 15) await new Promise<void>((r) => setImmediate(r));
  }
  return null;
}

/**
 * One application reading its CQ: by polling, or (`useEvents`) as the
 * rdma-core examples with -e: poll while completions come; when one poll
 * finds none, arm the CQ and poll once more (what completed before the arm
 * raises no event), then wait for the event without polling. A lost event
 * leaves it waiting for ever: the hang check sees it. `take()` polls the
 * CQ once and says how many completions it took.
 */
export class CqReader {
  waiting = false;
  armed = false;
  events = 0;
  failure: string | null = null;
  ended = false;

  constructor(
    readonly cq: ibv_cq,
    readonly channel: ibv_comp_channel | null,
    readonly name: string,
    readonly useEvents: boolean,
    readonly take: () => number,
  ) {}

  serve(): void {
    if (this.waiting) return;
    if (this.take() > 0 || !this.useEvents) return;
    if (!this.armed) {
      if (ibv_req_notify_cq(this.cq, 0) !== 0) this.failure = `${this.name}: req_notify_cq failed`;
      this.armed = true;
      if (this.take() > 0) return;
    }
    this.waiting = true;
    ibv_get_cq_event(this.channel!).then(
      (ev) => {
        if (ev.cq !== this.cq) this.failure = `${this.name}: an event for another CQ`;
        ibv_ack_cq_events(this.cq, 1);
        this.events++;
        this.armed = false;
        this.waiting = false;
      },
      (e: Error) => {
        if (!this.ended) this.failure = `${this.name}: get_cq_event: ${e.message}`;
      },
    );
  }

  how(): string {
    return `${this.name} ${this.useEvents ? `waits for events (${this.events} had${this.waiting ? ', waiting' : ''})` : 'polls'}`;
  }
}

/** What sqdDrain watches of a requester's traffic (read live). */
export interface SentView {
  /** WRs posted so far. */
  readonly posted: number;
  /** WRs whose send queue slot is free again. */
  readonly retired: number;
  /** The send completions read so far. */
  readonly sent: readonly ibv_wc[];
}

/**
 * A requester's QP into SQD at step `at` or the first after it with two WRs
 * or more outstanding (with en_sqd_async_notify), back to RTS `stay` steps
 * after IBV_EVENT_SQ_DRAINED; `at` < 0: never. While in SQD no WR posted
 * after the move may complete (`index(wc)`: the WR's posting index).
 * `step` returns a failure, or null.
 */
export function sqdDrain(qp: ibv_qp, ctx: ibv_context, f: SentView, index: (wc: ibv_wc) => number, at: number, stay: number) {
  let state: 'before' | 'draining' | 'drained' | 'back' = at < 0 ? 'back' : 'before';
  let postedBefore = 0;
  let drainedAt = -1;
  let failure: string | null = null;
  let ended = false;
  let checked = 0;
  let now = 0;
  const d = {
    drained: false,
    // Not moved yet (the workload ended first) or back in RTS.
    settled: () => state === 'back' || state === 'before',
    end() {
      ended = true;
    },
    state: () => state,
    step(step: number): string | null {
      now = step;
      if (failure) return failure;
      if (state === 'draining' || state === 'drained') {
        for (; checked < f.sent.length; checked++) {
          const i = index(f.sent[checked]!);
          if (i >= postedBefore) return `SQD: WR ${i}, posted after the move to SQD, completed in SQD`;
        }
      }
      // Into SQD with WRs outstanding, so that the drain has some to finish.
      if (state === 'before' && step >= at && f.posted - f.retired >= 2) {
        postedBefore = f.posted;
        checked = f.sent.length;
        const attr = newQpAttr();
        attr.qp_state = IBV_QPS_SQD;
        attr.en_sqd_async_notify = 1;
        const rc = ibv_modify_qp(qp, attr, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY);
        if (rc !== 0) return `RTS → SQD: ${rc}`;
        state = 'draining';
        ibv_get_async_event(ctx).then(
          (ev) => {
            if (ev.event_type !== IBV_EVENT_SQ_DRAINED || ev.element.qp !== qp) failure = `SQD: async event ${ev.event_type} instead of SQ_DRAINED`;
            ibv_ack_async_event(ev);
            state = 'drained';
            d.drained = true;
            drainedAt = now;
          },
          (e: Error) => {
            if (!ended) failure = `SQD: get_async_event: ${e.message}`;
          },
        );
      } else if (state === 'drained' && step >= drainedAt + stay) {
        const attr = newQpAttr();
        attr.qp_state = IBV_QPS_RTS;
        const rc = ibv_modify_qp(qp, attr, IBV_QP_STATE);
        if (rc !== 0) return `SQD → RTS: ${rc}`;
        state = 'back';
      }
      return null;
    },
  };
  return d;
}

const wcs = Array.from({ length: 16 }, () => newWc());
/** Everything on `cq` now (copies). */
export function pollAll(cq: ibv_cq): ibv_wc[] {
  const out: ibv_wc[] = [];
  for (;;) {
    const n = ibv_poll_cq(cq, wcs.length, wcs);
    if (n < 0) throw new Error(`ibv_poll_cq: ${n}`);
    for (let i = 0; i < n; i++) out.push({ ...wcs[i]! });
    if (n < wcs.length) return out;
  }
}

/**
 * Runs `seeds` seeds of `runSeed` on fresh hand-turned devices, each failure
 * (or throw) named with its seed; expects none.
 */
export async function runSeeds(seeds: number, runSeed: (t: HandTurnedHost, seed: number) => Promise<string | null>): Promise<void> {
  const failures: string[] = [];
  for (let seed = 1; seed <= seeds; seed++) {
    const t = await handTurnedHost();
    let failure: string | null;
    try {
      failure = await runSeed(t, seed);
    } catch (e) {
      failure = `threw: ${(e as Error).stack ?? String(e)}`;
    } finally {
      await t.close();
    }
    if (failure) failures.push(`seed ${seed}: ${failure}`);
  }
  expect(failures.slice(0, 10)).toEqual([]);
}

/** A random byte pattern of `len` bytes written into `buf` at `at`. */
export function fill(buf: Uint8Array, at: number, len: number, rand: () => number): void {
  for (let k = 0; k < len; k++) buf[at + k] = Math.floor(rand() * 256);
}

/** Where `got` (at `at`, `len` bytes then zeros to `slot`) differs from `want` at `from`; or null. */
export function bytesDiffer(got: Uint8Array, at: number, want: Uint8Array, from: number, len: number, slot: number): string | null {
  for (let k = 0; k < slot; k++) {
    const w = k < len ? want[from + k]! : 0;
    if (got[at + k] !== w) return `byte ${k} is ${got[at + k]}, expected ${w}`;
  }
  return null;
}
