/**
 * Command-line scanning with glibc `getopt_long` rules, so the ported tools
 * take exactly the argument forms the C tools take: clustered short options
 * (`-ec`), a short option's argument attached or separate (`-p18515`,
 * `-p 18515`), `--name=value` and `--name value`, unambiguous prefixes of
 * long names (`--it 10` is `--iters 10`), `--` to end options, and operands
 * anywhere (getopt permutes them to the end).
 *
 * Unlike getopt, a mistake is thrown as a GetoptError (with glibc's wording)
 * instead of being printed, so each tool decides how to report it.
 */
import { RnicError } from '../../src/wire/errors.js';

export interface OptionSpec {
  /** The short letter, e.g. 'p' (optional). */
  short?: string;
  /** The long name, e.g. 'port' (optional). */
  long?: string;
  /** Whether the option takes an argument (getopt's has_arg = 1). */
  arg: boolean;
}

export interface ParsedOption {
  /** The spec's long name, or its short letter when it has no long name. */
  name: string;
  /** How the user spelled it ('-p' or '--port'), for error messages. */
  as: string;
  value?: string;
}

export interface GetoptResult {
  options: ParsedOption[];
  operands: string[];
}

/** A usage mistake on a ported tool's command line (exit code 2). */
export class GetoptError extends RnicError<'EXAMPLE_USAGE'> {
  constructor(message: string) {
    super('EXAMPLE_USAGE', message);
    this.name = 'GetoptError';
  }
}

export function getopt_long(argv: readonly string[], specs: readonly OptionSpec[]): GetoptResult {
  const options: ParsedOption[] = [];
  const operands: string[] = [];
  const nameOf = (s: OptionSpec): string => s.long ?? (s.short as string);
  let i = 0;
  while (i < argv.length) {
    const a = argv[i++] as string;
    if (a === '--') {
      operands.push(...argv.slice(i));
      break;
    }
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      const key = eq >= 0 ? a.slice(2, eq) : a.slice(2);
      const exact = specs.find((s) => s.long === key);
      const candidates = exact ? [exact] : specs.filter((s) => s.long?.startsWith(key));
      if (candidates.length === 0) throw new GetoptError(`unrecognized option '--${key}'`);
      if (candidates.length > 1) {
        const names = candidates.map((s) => `'--${s.long}'`).join(' ');
        throw new GetoptError(`option '--${key}' is ambiguous; possibilities: ${names}`);
      }
      const spec = candidates[0] as OptionSpec;
      const as = `--${spec.long}`;
      if (spec.arg) {
        let value: string | undefined;
        if (eq >= 0) value = a.slice(eq + 1);
        else if (i < argv.length) value = argv[i++];
        if (value === undefined) throw new GetoptError(`option '${as}' requires an argument`);
        options.push({ name: nameOf(spec), as, value });
      } else {
        if (eq >= 0) throw new GetoptError(`option '${as}' doesn't allow an argument`);
        options.push({ name: nameOf(spec), as });
      }
      continue;
    }
    if (a.startsWith('-') && a.length > 1) {
      for (let k = 1; k < a.length; k++) {
        const ch = a[k] as string;
        const spec = specs.find((s) => s.short === ch);
        if (!spec) throw new GetoptError(`invalid option -- '${ch}'`);
        const as = `-${ch}`;
        if (!spec.arg) {
          options.push({ name: nameOf(spec), as });
          continue;
        }
        let value: string | undefined;
        if (k + 1 < a.length) value = a.slice(k + 1);
        else if (i < argv.length) value = argv[i++];
        if (value === undefined) throw new GetoptError(`option requires an argument -- '${ch}'`);
        options.push({ name: nameOf(spec), as, value });
        break;
      }
      continue;
    }
    operands.push(a);
  }
  return { options, operands };
}

/**
 * An integer as C's `strtol(s, NULL, 0)` reads it (decimal, `0x` hex,
 * leading-`0` octal, optional sign), except that the whole string must be a
 * number: where C silently reads "12abc" as 12 and "abc" as 0, this returns
 * null.
 */
export function parseCInt(s: string): number | null {
  const m = /^\s*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)\s*$/.exec(s);
  if (!m) return null;
  const body = m[2] as string;
  let v: number;
  if (/^0[xX]/.test(body)) v = parseInt(body.slice(2), 16);
  else if (body.length > 1 && body.startsWith('0')) v = parseInt(body.slice(1), 8);
  else v = parseInt(body, 10);
  if (!Number.isSafeInteger(v)) return null;
  return m[1] === '-' ? -v : v;
}

/** parseCInt, then a range check; the message names the option as typed. */
export function intArg(opt: ParsedOption, min: number, max: number, what?: string): number {
  const v = parseCInt(opt.value ?? '');
  const label = what ?? opt.as;
  if (v === null) throw new GetoptError(`${label}: '${opt.value ?? ''}' is not a number`);
  if (v < min || v > max) throw new GetoptError(`${label}: ${v} is out of range (${min}..${max})`);
  return v;
}
