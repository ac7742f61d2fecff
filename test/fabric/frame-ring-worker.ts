/**
 * One side of the two-thread FrameRing test: the producer pushes `count`
 * frames of pseudo-random sizes; the consumer pops them and checks that each
 * arrives in order with the right length and bytes. Both derive sizes and
 * contents from the same seed, so nothing but the ring carries the frames.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { FrameRing, type RingWaitWord } from '../../src/fabric/frame-ring.js';

export interface RingWorkerData {
  sab: SharedArrayBuffer;
  role: 'producer' | 'consumer';
  count: number;
  seed: number;
  maxLen: number;
}

export interface RingWorkerResult {
  role: 'producer' | 'consumer';
  frames: number;
  bytes: number;
  /** Times a push found the ring full / a pop found it empty and waited. */
  waits: number;
  /**
   * Lost wake-ups: waits that ran into the safety timeout although the word
   * they waited on had already changed. A timeout with the word unchanged is
   * only a slow peer (a loaded machine), not a fault of the ring.
   */
  timeouts: number;
  errors: string[];
}

const WAIT_TIMEOUT_MS = 2000;

/** Blocks on a ring's wait word; true when the wait timed out though the word had changed. */
function lostWakeUp(ww: RingWaitWord | null): boolean {
  if (!ww) return false;
  return Atomics.wait(ww.array, ww.index, ww.value, WAIT_TIMEOUT_MS) === 'timed-out' && Atomics.load(ww.array, ww.index) !== ww.value;
}

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Sizes: mostly small, some full-size, a few zero-length and jumbo. */
function nextLength(rnd: () => number, maxLen: number): number {
  const r = rnd();
  if (r < 0.01) return 0;
  if (r < 0.03) return maxLen;
  if (r < 0.6) return 4 + Math.floor(rnd() * 124);
  return 4 + Math.floor(rnd() * (maxLen - 4));
}

const { sab, role, count, seed, maxLen } = workerData as RingWorkerData;
const ring = FrameRing.attach(sab);
const rnd = mulberry32(seed);
// Frame i is PATTERN[i & 255 ...] with its index in the first 4 bytes.
const pattern = new Uint8Array(maxLen + 256);
const prnd = mulberry32(seed ^ 0x9e3779b9);
for (let k = 0; k < pattern.length; k++) pattern[k] = Math.floor(prnd() * 256);
const res: RingWorkerResult = { role, frames: 0, bytes: 0, waits: 0, timeouts: 0, errors: [] };

if (role === 'producer') {
  const buf = new Uint8Array(maxLen);
  for (let i = 0; i < count; i++) {
    const len = nextLength(rnd, maxLen);
    buf.set(pattern.subarray(i & 255, (i & 255) + len), 0);
    if (len >= 4) new DataView(buf.buffer).setUint32(0, i, true);
    const f = buf.subarray(0, len);
    while (!ring.push(f)) {
      res.waits++;
      if (lostWakeUp(ring.spaceWaitWord())) res.timeouts++;
    }
    res.frames++;
    res.bytes += len;
  }
} else {
  const into = new Uint8Array(maxLen);
  for (let i = 0; i < count && res.errors.length < 5; i++) {
    const len = nextLength(rnd, maxLen);
    let f: Uint8Array | null;
    // Half the frames into a reused buffer, half as fresh copies.
    while (!(f = i & 1 ? ring.pop(into) : ring.pop())) {
      res.waits++;
      if (lostWakeUp(ring.dataWaitWord())) res.timeouts++;
    }
    res.frames++;
    res.bytes += f.length;
    if (f.length !== len) {
      res.errors.push(`frame ${i}: length ${f.length}, expected ${len}`);
      continue;
    }
    if (len >= 4) {
      const seq = new DataView(f.buffer, f.byteOffset, f.length).getUint32(0, true);
      if (seq !== i) res.errors.push(`frame ${i}: carries index ${seq} (out of order)`);
    }
    const want = pattern.subarray((i & 255) + 4, (i & 255) + len);
    if (len > 4 && Buffer.compare(Buffer.from(f.buffer, f.byteOffset + 4, len - 4), Buffer.from(want.buffer, want.byteOffset, len - 4)) !== 0) {
      res.errors.push(`frame ${i}: content differs`);
    }
  }
  if (ring.pop() !== null) res.errors.push('frames left over after the last one');
}
parentPort!.postMessage(res);
