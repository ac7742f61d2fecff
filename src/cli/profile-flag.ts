/**
 * `--profile NAME` for the commands that run the ported examples (`rnic
 * perf`, the pingpongs): the device profile (src/pipeline/profiles.ts) of
 * every device the command starts, instead of the configuration's. The CLI
 * takes it out of the arguments before the example's own parser (which
 * keeps the C program's flags) sees them.
 */
import type { ModelConfig } from '../runtime/config.js';
import { PROFILE_NAMES, type ProfileName } from '../pipeline/profiles.js';
import { CliError } from './command.js';

/** The line the commands' --help adds. */
export const PROFILE_USAGE = `  --profile NAME     the device profile of the model's devices (${PROFILE_NAMES.join(', ')}; default: the configuration's, else ibta)`;

/** Removes `--profile NAME` / `--profile=NAME`; throws CliError on a missing or unknown name, or on a repeat. */
export function takeProfileFlag(args: readonly string[]): { profile?: ProfileName; rest: string[] } {
  const rest: string[] = [];
  let profile: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    let v: string | undefined;
    if (a === '--profile') {
      v = args[++i];
      if (v === undefined || v.startsWith('-')) throw new CliError(`--profile needs a profile name (${PROFILE_NAMES.join(', ')})`);
    } else if (a.startsWith('--profile=')) v = a.slice('--profile='.length);
    else {
      rest.push(a);
      continue;
    }
    if (profile !== undefined) throw new CliError('--profile given twice');
    if (!(PROFILE_NAMES as readonly string[]).includes(v)) throw new CliError(`unknown profile ${JSON.stringify(v)} (known: ${PROFILE_NAMES.join(', ')})`);
    profile = v;
  }
  return profile === undefined ? { rest } : { profile: profile as ProfileName, rest };
}

/** `config` with every device on `profile`. */
export function withProfile(config: ModelConfig, profile: ProfileName): ModelConfig {
  return { ...config, devices: config.devices.map((d) => ({ ...d, profile })) };
}
