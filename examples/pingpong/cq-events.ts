/**
 * What every rdma-core pingpong does around its CQ with `-e`: wait for the
 * completion channel's event, check it names the CQ, re-arm it, and
 * acknowledge the events in one batch at the end. Also the shared
 * throughput line the RC/UC/UD/SRQ pingpongs print.
 */
import { ibv_ack_cq_events, ibv_get_cq_event, ibv_poll_cq, ibv_req_notify_cq } from '../../src/driver/verbs/index.js';
import type { ibv_comp_channel, ibv_cq, ibv_wc } from '../../src/driver/verbs/index.js';
import { errText, PollWait, type Io } from '../common/io.js';
import { sprintf } from '../common/printf.js';

export class CqEvents {
  /** Events received and not yet acknowledged. */
  #unacked = 0;

  constructor(
    private readonly channel: ibv_comp_channel | null,
    private readonly cq: ibv_cq,
  ) {}

  /** Waits for the next event and re-arms the CQ; false (the error printed as rdma-core does) when that fails. */
  async next(io: Io): Promise<boolean> {
    let ev: { cq: ibv_cq };
    try {
      ev = await ibv_get_cq_event(this.channel as ibv_comp_channel);
    } catch (e) {
      io.err(`Failed to get cq_event (${errText(e)})\n`);
      return false;
    }
    ++this.#unacked;
    if (ev.cq !== this.cq) {
      io.err('CQ event for unknown CQ\n');
      return false;
    }
    if (ibv_req_notify_cq(this.cq, 0)) {
      io.err("Couldn't request CQ notification\n");
      return false;
    }
    return true;
  }

  /** Acknowledges what `next` received (a CQ cannot be destroyed with events unacknowledged). */
  ack(): void {
    if (this.#unacked) ibv_ack_cq_events(this.cq, this.#unacked);
    this.#unacked = 0;
  }
}

/**
 * Polls `cq` for up to `max` completions into `wc`: after an event one poll
 * (it may find none), else until at least one, waiting between empty polls
 * as PollWait does. -1 (the error printed) when the poll fails.
 */
export async function pollSome(io: Io, cq: ibv_cq, max: number, wc: ibv_wc[], afterEvent: boolean): Promise<number> {
  let polls: PollWait | null = null;
  for (;;) {
    const ne = ibv_poll_cq(cq, max, wc);
    if (ne < 0) {
      io.err(`poll CQ failed ${ne}\n`);
      return -1;
    }
    if (afterEvent || ne >= 1) return ne;
    polls ??= new PollWait();
    await polls.wait();
  }
}

/** The two lines rdma-core prints after the loop: `start` from `process.hrtime.bigint()`, both directions counted. */
export function printThroughput(io: Io, start: bigint, size: number, iters: number): void {
  // gettimeofday() has microseconds, and C keeps the difference in a float.
  const usec = Math.fround(Number((process.hrtime.bigint() - start) / 1000n));
  const bytes = BigInt(size) * BigInt(iters) * 2n;
  io.out(sprintf('%lld bytes in %.2f seconds = %.2f Mbit/sec\n', bytes, usec / 1000000, (Number(bytes) * 8) / usec));
  io.out(sprintf('%d iters in %.2f seconds = %.2f usec/iter\n', iters, usec / 1000000, usec / iters));
}
