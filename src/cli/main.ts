#!/usr/bin/env node
/** The `rnic` command: one verb per file in this folder. */
import '../boot.js';
import { campaignCommand } from './commands/campaign.js';
import { compareCommand } from './commands/compare.js';
import { countersCommand } from './commands/counters.js';
import { demoCommand } from './commands/demo.js';
import { devinfoCommand } from './commands/devinfo.js';
import { perfCommand } from './commands/perf.js';
import { pingpongCommand, srqPingpongCommand, xsrqPingpongCommand } from './commands/pingpong.js';
import { rcPingpongCommand } from './commands/rc-pingpong.js';
import { simCommand } from './commands/sim.js';
import { pcapSampleCommand } from './pcap-sample.js';
import { CliError, errorLine, type Command } from './command.js';
import { stopModel } from '../boot.js';
import { stopModelOnSignals } from './peer-model.js';

const COMMANDS: Record<string, Command> = {
  demo: demoCommand,
  counters: countersCommand,
  'pcap-sample': pcapSampleCommand,
  'rc-pingpong': rcPingpongCommand,
  rc_pingpong: rcPingpongCommand,
  'uc-pingpong': pingpongCommand('UC'),
  uc_pingpong: pingpongCommand('UC'),
  'ud-pingpong': pingpongCommand('UD'),
  ud_pingpong: pingpongCommand('UD'),
  'srq-pingpong': srqPingpongCommand,
  srq_pingpong: srqPingpongCommand,
  'xsrq-pingpong': xsrqPingpongCommand,
  xsrq_pingpong: xsrqPingpongCommand,
  perf: perfCommand,
  devinfo: devinfoCommand,
  sim: simCommand,
  campaign: campaignCommand,
  compare: compareCommand,
};

function usage(): string {
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(14)} ${c.summary}`);
  return `usage: rnic <command> [options]\n\ncommands:\n${lines.join('\n')}\n\nrnic <command> --help shows a command's options.`;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage() + '\n');
    return name ? 0 : 2;
  }
  const cmd = COMMANDS[name];
  if (!cmd) {
    process.stderr.write(`rnic: unknown command '${name}'\n\n${usage()}\n`);
    return 2;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(`${cmd.usage}\n`);
    return 0;
  }
  try {
    return await cmd.run(rest);
  } catch (e) {
    if (
      e instanceof CliError ||
      (e as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ||
      (e as { code?: string }).code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' ||
      (e as { code?: string }).code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL'
    ) {
      process.stderr.write(`rnic ${name}: ${(e as Error).message}\n${cmd.usage}\n`);
      return 2;
    }
    process.stderr.write(`rnic ${name}: ${errorLine(e)}\n`);
    // A bad input file (scenario, configuration, campaign) is bad usage too, as for compare and campaign.
    return BAD_INPUT.has((e as { code?: string }).code ?? '') ? 2 : 1;
  }
}

/** Error codes of the checkers of the files a command reads and of --fault: exit 2, like a bad option. */
const BAD_INPUT: ReadonlySet<string> = new Set(['SCENARIO_INVALID', 'CONFIG_INVALID', 'CAMPAIGN_INVALID', 'FAULT_BAD_RULE']);

// Output piped into `head` and the like: a closed pipe ends the command quietly.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});

stopModelOnSignals();
const code = await main(process.argv.slice(2));
// Every way out stops the model: what it still had to send goes out, captures are complete.
await stopModel();
process.exitCode = code;
