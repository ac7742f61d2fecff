/**
 * For commands that talk to a peer process: start the model the user
 * configured (RNIC_CONFIG), or else the two-hosts default (two-hosts.ts).
 * And, for every command: stop the model on every way out (normal end,
 * error, SIGINT/SIGTERM/SIGHUP), so frames still queued reach the cable
 * and captures are complete.
 */
import { ensureModel, stopModel } from '../boot.js';
import { takeTwoHostRole, twoHostNote, TWO_HOSTS_TAKEN } from './two-hosts.js';

/** Returns false (having said why) when no model could be set up. */
export function ensurePeerModel(err: (s: string) => void = (s) => process.stderr.write(s)): boolean {
  if (process.env.RNIC_CONFIG || process.env.RNIC_NO_MODEL === '1') return true;
  const r = takeTwoHostRole();
  if (!r) {
    err(TWO_HOSTS_TAKEN);
    return false;
  }
  err(twoHostNote(r));
  ensureModel(r.config);
  return true;
}

const SIGNALS: Record<string, number> = { SIGINT: 2, SIGTERM: 15, SIGHUP: 1 };

/** On a signal: stop the model (drain, flush captures), then exit 128 + signal number. */
export function stopModelOnSignals(): void {
  for (const [sig, num] of Object.entries(SIGNALS)) {
    process.once(sig as NodeJS.Signals, () => {
      const t = setTimeout(() => process.exit(128 + num), 5000);
      t.unref();
      void stopModel().finally(() => process.exit(128 + num));
    });
  }
}
