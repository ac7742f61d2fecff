/**
 * Wiring the model into the verbs API, as loading a kernel module makes
 * devices appear: on the first ibv_get_device_list, the model described by
 * RNIC_CONFIG (or the built-in default) starts and its devices are added to
 * the model provider. Only this top-level file knows both sides.
 */
import { addModelDevice, removeModelDevice } from './driver/model/provider.js';
import { onDeviceListing } from './driver/providers.js';
import { syncRdmaCoreProvider } from './driver/rdma-core/provider.js';
import { loadConfig, type ModelConfig } from './runtime/config.js';
import { startModel, type RunningModel, type StartOptions } from './runtime/model.js';
import type { SimModel, SimModelConfig } from './runtime/sim/sim-model.js';

let running: RunningModel | null = null;
let disabled = false;

/** Starts the configured model if it is not running (idempotent). */
export function ensureModel(config?: ModelConfig, opts?: StartOptions): RunningModel | null {
  if (running) return running;
  if (disabled && !config) return null;
  running = startModel(config ?? loadConfig(), opts);
  for (const d of running.devices) addModelDevice(d);
  return running;
}

/** The running model, if any. */
export function currentModel(): RunningModel | null {
  return running;
}

/** Stops the model and removes its devices (a later listing starts it again). */
export async function stopModel(): Promise<void> {
  const r = running;
  if (!r) return;
  running = null;
  for (const d of r.devices) removeModelDevice(d.name);
  await r.stop();
}

/**
 * Replaces the running model with one built from `config` (tests and tools
 * that set up their own topology).
 */
export async function restartModel(config: ModelConfig, opts?: StartOptions): Promise<RunningModel> {
  await stopModel();
  return ensureModel(config, opts)!;
}

/**
 * Replaces the running model with a simulated one (src/runtime/sim): the
 * same devices, driven by a discrete-event scheduler on a virtual clock,
 * seeded. The verbs API is unchanged; waiting is an await (docs/simulator.md).
 * Loaded on first use: a program on the realtime model does not load it.
 */
export async function startSimModel(config: SimModelConfig): Promise<SimModel> {
  await stopModel();
  const { startSim } = await import('./runtime/sim/sim-model.js');
  const sim = startSim(config);
  running = sim;
  for (const d of sim.devices) addModelDevice(d);
  return sim;
}

/** No automatic start (an application that only wants the rdma-core provider, say). */
export function disableAutoStart(): void {
  disabled = true;
}

onDeviceListing(() => {
  if (!running && !disabled && process.env.RNIC_NO_MODEL !== '1') ensureModel();
  // Real devices through libibverbs (src/driver/rdma-core), listed after the
  // model's; none when the addon is not built, RNIC_NO_RDMA_CORE=1 hides them.
  syncRdmaCoreProvider();
});
