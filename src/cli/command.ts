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
