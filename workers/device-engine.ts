/**
 * Worker-thread entry: runs the devices it is given until told to stop.
 * Thin by design: the runtime (src/runtime) does the work.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Bar } from '../src/device/registers.js';
import { DeviceHost, type RingCable } from '../src/runtime/device-host.js';
import type { CableConfig } from '../src/runtime/config.js';
import type { DeviceResources } from '../src/runtime/device-resources.js';
import type { HostedSwitchSpec } from '../src/runtime/realtime-switch.js';
import type { UdpCableShm } from '../src/runtime/udp-io.js';
import { monotonicClock, runDeviceLoop, DEFAULT_TUNING, type LoopTuning } from '../src/runtime/run-loop.js';

interface EngineData {
  devices: DeviceResources[];
  /** Switches this engine runs (docs/fabric.md). */
  switches: HostedSwitchSpec[];
  cables: CableConfig[];
  rings: RingCable[];
  /** Shared memory of the UDP cables, by index in `cables`. */
  udp: [number, UdpCableShm][];
  seed?: number;
  stop: SharedArrayBuffer;
  tuning?: Partial<LoopTuning>;
}

const data = workerData as EngineData;
const host = new DeviceHost(data.devices, monotonicClock(), {
  specs: data.switches,
  ...(data.seed === undefined ? {} : { seed: data.seed }),
});
const stop = new Int32Array(data.stop);

parentPort!.on('message', (m: { type: string; port?: string; path?: string | null }) => {
  if (m.type === 'stop') {
    Atomics.store(stop, 0, 1);
    return;
  }
  if (m.type === 'fabric-stats') {
    parentPort!.postMessage({ type: 'fabric-stats', stats: host.fabricStats() });
    return;
  }
  if (m.type === 'capture' && m.port) {
    try {
      host.setCapture(m.port, m.path ?? null);
      parentPort!.postMessage({ type: 'capture-ok' });
    } catch (e) {
      parentPort!.postMessage({ type: 'error', message: (e as Error).message });
    }
  }
});

const fail = (e: unknown) => parentPort!.postMessage({ type: 'error', message: `${(e as { code?: string }).code ?? 'ERROR'}: ${(e as Error).message}` });
try {
  // The devices answer their driver at once; UDP cables come up when their
  // I/O thread has bound (DeviceHost.cable), without holding the loop.
  const cabled = host
    .cable(data.cables, data.rings, data.seed, new Map(data.udp))
    .then(() => parentPort!.postMessage({ type: 'ready', udpLocal: host.udpLocal }), fail);
  await runDeviceLoop(
    host,
    host.devices.map((d) => Bar.attach(d.bar.sab)),
    stop,
    { ...DEFAULT_TUNING, ...data.tuning },
  );
  await cabled;
} catch (e) {
  fail(e);
} finally {
  await host.close();
  parentPort!.postMessage({ type: 'stopped' });
  // Nothing may keep this thread alive once the loop has ended (the message listener would).
  parentPort!.close();
}
