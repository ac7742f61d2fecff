/**
 * For commands that talk to a peer process: start the model the user
 * configured (RNIC_CONFIG), or else the two-hosts default (two-hosts.ts).
 * And, for every command: stop the model on every way out (normal end,
 * error, SIGINT/SIGTERM/SIGHUP), so frames still queued reach the cable
 * and captures are complete.
 */
import { currentModel, ensureModel, stopModel } from '../boot.js';
import { loadConfig, type ModelConfig } from '../runtime/config.js';
import type { ProfileName } from '../pipeline/profiles.js';
import { withProfile } from './profile-flag.js';
import { takeTwoHostRole, twoHostNote, TWO_HOSTS_TAKEN } from './two-hosts.js';

/**
 * Starts the model (every device on `profile`, if given) and waits until its cables are up (a frame to a peer
 * whose socket is not bound yet would be lost). Returns false (having said
 * why) when no model could be set up.
 */
export async function ensurePeerModel(err: (s: string) => void = (s) => process.stderr.write(s), profile?: ProfileName): Promise<boolean> {
  if (process.env.RNIC_NO_MODEL === '1') return true;
  const on = (c: ModelConfig): ModelConfig => (profile === undefined ? c : withProfile(c, profile));
  if (!process.env.RNIC_CONFIG) {
    const r = takeTwoHostRole();
    if (!r) {
      err(TWO_HOSTS_TAKEN);
      return false;
    }
    err(twoHostNote(r));
    ensureModel(on(r.config));
  } else ensureModel(on(loadConfig()));
  await currentModel()?.cabled;
  return true;
}

/**
 * Whether the example's own parser refuses `args` (a usage mistake) or
 * asks for its help text: the example then answers alone, with no model
 * started and no two-hosts role taken (another process holding both roles
 * must not turn a usage mistake's exit 2 into a "both roles taken" 1).
 */
export function answersWithoutModel(parse: (argv: readonly string[]) => unknown, args: readonly string[]): boolean {
  try {
    parse(args);
    return false;
  } catch (e) {
    const code = (e as { code?: string }).code;
    return code === 'EXAMPLE_USAGE' || code === 'EXAMPLE_HELP';
  }
}

const SIGNALS: Record<string, number> = { SIGINT: 2, SIGTERM: 15, SIGHUP: 1 };

/**
 * On a signal: stop the model (drain, flush captures), then exit 128 +
 * signal number. A command that handles the signal itself (rnic campaign
 * stops gracefully on SIGINT) has a listener of its own: then this one
 * leaves it to that command.
 */
export function stopModelOnSignals(): void {
  for (const [sig, num] of Object.entries(SIGNALS)) {
    let stopping = false;
    process.on(sig as NodeJS.Signals, () => {
      if (process.listenerCount(sig) > 1 || stopping) return;
      stopping = true;
      const t = setTimeout(() => process.exit(128 + num), 5000);
      t.unref();
      void stopModel().finally(() => process.exit(128 + num));
    });
  }
}
