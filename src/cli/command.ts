/** What every `rnic` verb provides. */
export interface Command {
  summary: string;
  usage: string;
  /** Returns the exit code. */
  run(args: string[]): Promise<number>;
}

/** A usage mistake: printed with the command's usage, exit code 2. */
export class CliError extends Error {
  readonly code = 'CLI_USAGE';
}

/**
 * `--opt -1` as `--opt=-1` for the options that take a value: node's
 * parseArgs refuses a value that starts with a dash ("argument is
 * ambiguous"), where the user plainly meant the number. The value is then
 * judged by the command, which names the option in its error.
 */
export function joinDashValues(args: readonly string[], valued: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const next = args[i + 1];
    if (valued.includes(a) && next !== undefined && /^-\d/.test(next)) {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

/**
 * One line for an error that ends a command: `CODE: message`, the code
 * once (Node's fs errors already start their message with it: "ENOENT:
 * no such file or directory, open 'x'").
 */
export function errorLine(e: unknown): string {
  const err = e as { code?: unknown; message?: unknown };
  const message = typeof err?.message === 'string' ? err.message : String(e);
  const code = typeof err?.code === 'string' ? err.code : '';
  if (!code || message.startsWith(`${code}:`) || message.startsWith(`${code} `)) return message;
  return `${code}: ${message}`;
}
