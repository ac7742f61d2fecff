/** `rnic devinfo`: what ibv_devinfo prints (examples/devinfo.ts). */
import { main, usage } from '../../../examples/devinfo.js';
import type { Command } from '../command.js';

const NAME = 'rnic devinfo';

export const devinfoCommand: Command = {
  summary: 'list RDMA devices and their attributes, as ibv_devinfo does',
  usage: usage(NAME),
  run: (args) => main(args, { argv0: NAME }),
};
