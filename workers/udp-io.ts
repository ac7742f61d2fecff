/**
 * The UDP I/O thread: owns the sockets of a device host's UDP cables, so a
 * datagram is read the moment it arrives, whatever the device loop is
 * doing. Each cable is two FrameRings shared with the device loop: RX (we
 * push what the socket received; the loop pops it every pass) and TX (the
 * loop pushes; we wait on it and send). Thin: the socket work is
 * src/fabric/udp-cable.ts, the protocol src/runtime/udp-io.ts.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { FrameRing } from '../src/fabric/frame-ring.js';
import { UdpCable } from '../src/runtime/udp-cable.js';
import { UDP_IO_STAT_NAMES, type UdpIoCable, type UdpIoReply, type UdpIoRequest } from '../src/runtime/udp-io.js';
import { Pacer } from '../src/runtime/pacer.js';

type WaitAsync = (a: Int32Array, i: number, v: number, t?: number) => { async: boolean; value: Promise<string> | string };
const nowNs = () => performance.now() * 1e6;
const waitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync;

const { cables } = workerData as { cables: UdpIoCable[] };
const port = parentPort!;
const post = (m: UdpIoReply) => port.postMessage(m);

/** Received frames waiting for room in the RX ring, bounded. */
const RX_BACKLOG_BYTES = 32 << 20;

class Pump {
  readonly rx: FrameRing;
  readonly tx: FrameRing;
  readonly stats: Float64Array;
  readonly backlog: Uint8Array[] = [];
  backlogBytes = 0;
  rxRingFull = 0;
  waitingForSpace = false;
  closing = false;
  /** Null: send at once (line rate). */
  readonly pacer: Pacer | null;
  /** The frame popped from the TX ring that the pacer holds back (the rest wait in the ring). */
  held: Uint8Array | null = null;
  heldSince = 0;
  txPacedFrames = 0;
  txPacedNs = 0;

  constructor(
    readonly cable: UdpCable,
    c: UdpIoCable,
  ) {
    this.rx = FrameRing.attach(c.rx);
    this.tx = FrameRing.attach(c.tx);
    this.stats = new Float64Array(c.stats);
    this.pacer = c.pace ? new Pacer(c.pace, nowNs()) : null;
    cable.onReceive((f) => this.received(f));
  }

  received(f: Uint8Array): void {
    if (this.backlog.length === 0 && this.rx.push(f)) return;
    if (this.backlogBytes + f.length > RX_BACKLOG_BYTES) {
      this.rxRingFull++;
      return;
    }
    this.backlog.push(f);
    this.backlogBytes += f.length;
    if (!this.waitingForSpace) void this.drainBacklog();
  }

  /** The device loop is behind: push the backlog as it makes room. */
  async drainBacklog(): Promise<void> {
    this.waitingForSpace = true;
    while (this.backlog.length > 0 && !this.closing) {
      while (this.backlog.length > 0 && this.rx.push(this.backlog[0]!)) this.backlogBytes -= this.backlog.shift()!.length;
      if (this.backlog.length === 0) break;
      const w = this.rx.spaceWaitWord();
      if (!w) continue;
      const r = waitAsync(w.array, w.index, w.value, 100);
      if (r.async) await r.value;
    }
    this.waitingForSpace = false;
  }

  /** Sends everything in the TX ring, paced unless `unpaced`; returns how many frames, and the ns to wait if the pacer holds one back. */
  sendAll(unpaced = false): { sent: number; waitNs: number } {
    let sent = 0;
    for (let f = this.held ?? this.tx.pop(); f; f = this.tx.pop()) {
      if (this.pacer && !unpaced) {
        const now = nowNs();
        const waitNs = this.pacer.take(f.length, now);
        if (waitNs > 0) {
          if (!this.held) {
            this.held = f;
            this.heldSince = now;
          }
          return { sent, waitNs };
        }
      }
      if (this.held) {
        this.txPacedFrames++;
        this.txPacedNs += nowNs() - this.heldSince;
        this.held = null;
      }
      this.cable.sendOwned(f);
      sent++;
    }
    return { sent, waitNs: 0 };
  }

  async txLoop(): Promise<void> {
    let published = performance.now();
    while (!this.closing) {
      const { sent, waitNs } = this.sendAll();
      if (waitNs > 0) {
        // Node's timers tick in ms: sleep at least one, and the bucket sends what it earned meanwhile (burst permitting).
        await new Promise((r) => setTimeout(r, Math.max(1, Math.floor(waitNs / 1e6))));
        continue;
      }
      if (sent > 0) continue;
      // Stats (with the socket's drops from /proc, ~100 µs to read) at most every 250 ms, never per frame.
      const now = performance.now();
      if (now - published >= 250) {
        this.publish();
        published = now;
      }
      const w = this.tx.dataWaitWord();
      if (!w) continue;
      const r = waitAsync(w.array, w.index, w.value, 250);
      if (r.async) await r.value;
    }
  }

  /** The counters this thread keeps, not the socket. */
  readonly own = {
    rxRingFull: () => this.rxRingFull,
    txPacedFrames: () => this.txPacedFrames,
    txPacedNs: () => this.txPacedNs,
  };

  publish(): void {
    const s = this.cable.stats as unknown as Record<string, number>;
    UDP_IO_STAT_NAMES.forEach((name, i) => {
      this.stats[i] = name in this.own ? this.own[name as keyof Pump['own']]() : name === 'receiveBufferBytes' ? this.cable.receiveBufferBytes : (s[name] ?? 0);
    });
  }
}

let pumps: Pump[] = [];
try {
  const settled = await Promise.allSettled(cables.map((c) => UdpCable.open(c.options)));
  const failed = settled.findIndex((r) => r.status === 'rejected');
  if (failed >= 0) {
    // The sockets that did bind go too: nothing would ever close them, and a model started again would find its ports taken.
    for (const r of settled) if (r.status === 'fulfilled') r.value.close();
    const e = (settled[failed] as PromiseRejectedResult).reason as Error & { code?: string };
    const label = cables[failed]!.label;
    throw Object.assign(new Error(label ? `${label}: ${e.message}` : e.message), { code: e.code });
  }
  const opened = settled.map((r) => (r as PromiseFulfilledResult<UdpCable>).value);
  pumps = opened.map((u, i) => new Pump(u, cables[i]!));
  for (const p of pumps) p.publish();
  post({
    type: 'bound',
    local: opened.map((u) => `${u.localEndpoint.family === 6 ? `[${u.localEndpoint.address}]` : u.localEndpoint.address}:${u.localEndpoint.port}`),
  });
  for (const p of pumps) void p.txLoop();
} catch (e) {
  post({ type: 'error', code: (e as { code?: string }).code ?? 'ERROR', message: (e as Error).message });
  port.close();
}

// The process is exiting (src/runtime/udp-io.ts closeSocketsOnExit): close the sockets now, say so.
if (cables.length > 0) {
  const exit = new Int32Array(cables[0]!.exit);
  void (async () => {
    while (Atomics.load(exit, 0) === 0) {
      const r = waitAsync(exit, 0, 0);
      if (r.async) await r.value;
    }
    for (const p of pumps) {
      p.closing = true;
      p.cable.close();
    }
    Atomics.add(exit, 1, 1);
    Atomics.notify(exit, 1);
  })();
}

port.on('message', (m: UdpIoRequest) => {
  if (m.type !== 'close') return;
  void (async () => {
    // Drain on stop: what the device loop queued before it stopped still goes out.
    for (const p of pumps) {
      p.closing = true;
      p.sendAll(true); // unpaced: the model is stopping
    }
    await Promise.all(pumps.map((p) => p.cable.flush()));
    for (const p of pumps) {
      p.publish();
      p.cable.close();
      p.publish();
    }
    await Promise.all(pumps.map((p) => p.cable.closed));
    post({ type: 'closed' });
    port.close();
  })();
});
