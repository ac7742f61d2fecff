/**
 * UDP cables off the device loop's thread. The sockets live on their own
 * small worker (workers/udp-io.ts), which moves datagrams to and from a
 * pair of FrameRings per cable; the device loop sees each cable as a
 * RingEnd and polls it every pass. So a frame from a real peer reaches the
 * pipeline within one pass of the loop (microseconds), not when the loop
 * next yields to its event loop, and the loop never has to yield for I/O.
 */
import { Worker } from 'node:worker_threads';
import { FabricError, type FabricErrorCode } from '../fabric/cable.js';
import { FrameRing } from '../fabric/frame-ring.js';
import { DEFAULT_SOCKET_BUFFER_BYTES, type UdpCableOptions, type UdpCableStats } from './udp-cable.js';
import type { PaceSettings } from './pacer.js';
import { RingEnd } from './ring-end.js';
import { compiledWorker } from './worker-url.js';

/** One cable as posted to the I/O thread. */
export interface UdpIoCable {
  options: UdpCableOptions;
  /** The I/O thread pushes received frames here. */
  rx: SharedArrayBuffer;
  /** The device loop pushes frames to send here. */
  tx: SharedArrayBuffer;
  /** Float64 per UDP_IO_STAT_NAMES, written by the I/O thread. */
  stats: SharedArrayBuffer;
  /** UdpCableShm.exit. */
  exit: SharedArrayBuffer;
  /** Pace sending to this rate (the cable's `rate`); absent: line rate. */
  pace?: PaceSettings;
  /** Which cable of the configuration it is ('cables[1] (rnic1:1)'), for its errors. */
  label?: string;
}

/**
 * A process that exits while a socket thread still receives can abort
 * inside Node (a datagram arriving while the worker is torn down:
 * "FATAL ERROR: v8::FromJust Maybe value is Nothing" in UDPWrap::OnRecv).
 * So at 'exit' (synchronous) the application's thread tells every I/O
 * thread to close its sockets and waits, at most `ms`, until they have.
 * Returns the listener to remove once the model is stopped.
 */
export function closeSocketsOnExit(exit: SharedArrayBuffer, threads: number, ms = 200): () => void {
  const w = new Int32Array(exit);
  const listener = () => {
    Atomics.store(w, 0, 1);
    Atomics.notify(w, 0);
    const end = Date.now() + ms;
    for (let done = Atomics.load(w, 1); done < threads; done = Atomics.load(w, 1)) {
      const left = end - Date.now();
      if (left <= 0) break;
      Atomics.wait(w, 1, done, left);
    }
  };
  process.on('exit', listener);
  return () => process.off('exit', listener);
}

export type UdpIoRequest = { type: 'close' };
export type UdpIoReply = { type: 'bound'; local: string[] } | { type: 'error'; code: string; message: string } | { type: 'closed' };

/** What a UDP cable counts (UdpCableStats), plus frames the I/O thread had no room for. */
export const UDP_IO_STAT_NAMES = [
  'framesSent',
  'bytesSent',
  'framesReceived',
  'bytesReceived',
  'framesDropped',
  'rxTooLarge',
  'rxTooSmall',
  'rxForeign',
  'rxNoHandler',
  'txBadSize',
  'txClosed',
  'txErrors',
  'rxSocketDrops',
  'rxRingFull',
  'receiveBufferBytes',
  'txPacedFrames',
  'txPacedNs',
] as const;

export type UdpIoStats = UdpCableStats & {
  /** Received frames dropped because the device loop had not made room in the RX ring or the 32 MiB backlog behind it. */
  readonly rxRingFull: number;
  /** SO_RCVBUF as the OS granted it (Linux: twice what was asked, at most 2 × net.core.rmem_max). */
  readonly receiveBufferBytes: number;
  /** Frames the pacer (the cable's `rate`) held back before sending; 0 on an unpaced cable. */
  readonly txPacedFrames: number;
  /** Total ns those frames waited for the pacer. */
  readonly txPacedNs: number;
};

/** The shared memory of one UDP cable, made where the model is started (so any thread can read its stats). */
export interface UdpCableShm {
  rx: SharedArrayBuffer;
  tx: SharedArrayBuffer;
  stats: SharedArrayBuffer;
  /**
   * Shared by every UDP cable of a model: Int32 [0] = the process is
   * exiting, [1] = I/O threads that have closed their sockets since. See
   * `closeSocketsOnExit`.
   */
  exit: SharedArrayBuffer;
}

/**
 * RX: 16 MiB, ~4,000 full-size RoCE frames, a 64 KiB × 128 window and more:
 * what the socket delivers is never held up for the device loop.
 * TX: 1 MiB, ~240 frames, a few ms of sending: the device loop sends no
 * more than fits (DeviceHost.budget), so a packet does not wait in a long
 * queue behind the socket while its retransmission timer runs.
 */
export const UDP_RX_RING_BYTES = 16 << 20;
export const UDP_TX_RING_BYTES = 1 << 20;

export function createUdpCableShm(exit: SharedArrayBuffer = new SharedArrayBuffer(8)): UdpCableShm {
  return {
    exit,
    rx: FrameRing.create(UDP_RX_RING_BYTES).buffer,
    tx: FrameRing.create(UDP_TX_RING_BYTES).buffer,
    stats: new SharedArrayBuffer(UDP_IO_STAT_NAMES.length * 8),
  };
}

export function readUdpIoStats(stats: SharedArrayBuffer): UdpIoStats {
  const f = new Float64Array(stats);
  const out: Record<string, number> = {};
  UDP_IO_STAT_NAMES.forEach((n, i) => (out[n] = f[i]!));
  return out as unknown as UdpIoStats;
}

/** A device host's UDP cables, on one I/O thread. */
export class UdpIoThread {
  private constructor(
    private readonly worker: Worker,
    readonly local: string[],
  ) {}

  /**
   * The device loop's end of a UDP cable: its TX ring is the I/O thread's
   * consumer side and vice versa. It can be plugged before the thread runs:
   * what is sent meanwhile waits in the TX ring.
   */
  static end(shm: UdpCableShm): RingEnd {
    return new RingEnd(shm.tx, shm.rx);
  }

  /** Starts the thread and binds every socket; resolves once they are bound. */
  static async open(cables: { options: UdpCableOptions; shm: UdpCableShm; pace?: PaceSettings; label?: string }[]): Promise<UdpIoThread> {
    const posted: UdpIoCable[] = cables.map((c) => ({
      ...(c.pace ? { pace: c.pace } : {}),
      ...(c.label ? { label: c.label } : {}),
      options: { socketBufferBytes: DEFAULT_SOCKET_BUFFER_BYTES, ...c.options },
      rx: c.shm.rx,
      tx: c.shm.tx,
      stats: c.shm.stats,
      exit: c.shm.exit,
    }));
    const worker = new Worker(compiledWorker('udp-io'), { workerData: { cables: posted } });
    // Like the device engines, the I/O thread must not keep the application alive.
    worker.unref();
    const local = await new Promise<string[]>((resolve, reject) => {
      worker.once('message', (m: UdpIoReply) => {
        if (m.type === 'bound') resolve(m.local);
        else if (m.type === 'error') reject(new FabricError(m.code as FabricErrorCode, m.message));
      });
      worker.once('error', reject);
      worker.once('exit', () => reject(new FabricError('FABRIC_BIND_FAILED', 'the UDP I/O thread ended before binding')));
    });
    return new UdpIoThread(worker, local);
  }

  /**
   * Sends what is still in the TX rings, then closes the sockets and ends
   * the thread. Waits at most `ms` (then the thread is terminated).
   */
  async close(ms = 2000): Promise<void> {
    const w = this.worker;
    w.ref(); // until the last datagram is out
    await new Promise<void>((resolve) => {
      let done = false;
      const end = () => {
        if (done) return;
        done = true;
        clearTimeout(t);
        resolve();
      };
      const t = setTimeout(() => void w.terminate().then(end, end), ms);
      w.once('exit', end);
      w.on('message', (m: UdpIoReply) => {
        if (m.type === 'closed') end();
      });
      w.postMessage({ type: 'close' } satisfies UdpIoRequest);
    });
    w.unref();
  }
}
