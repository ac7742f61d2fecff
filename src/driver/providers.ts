/**
 * The providers behind ibv_get_device_list. A provider registers itself;
 * the model provider is registered by the runtime that starts model devices.
 */
import type { VerbsProvider } from './verbs/ops.js';

const registered: VerbsProvider[] = [];

export function registerProvider(p: VerbsProvider): void {
  if (!registered.includes(p)) registered.push(p);
}

export function unregisterProvider(p: VerbsProvider): void {
  const i = registered.indexOf(p);
  if (i >= 0) registered.splice(i, 1);
}

let beforeList: (() => void) | null = null;

/**
 * Set by whoever makes devices appear on demand (the model's boot, like a
 * module load on first use): called before every device listing.
 */
export function onDeviceListing(hook: (() => void) | null): void {
  beforeList = hook;
}

export function providers(): readonly VerbsProvider[] {
  beforeList?.();
  return registered;
}
