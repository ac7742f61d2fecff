/** `rnic perf`: perftest-style bandwidth and latency tests (examples/perf.ts). */
import { main, parsePerfArgs, usage } from '../../../examples/perf.js';
import type { Command } from '../command.js';
import { ensureModel } from '../../boot.js';
import { loadConfig } from '../../runtime/config.js';
import { answersWithoutModel, ensurePeerModel } from '../peer-model.js';
import { PROFILE_USAGE, takeProfileFlag, withProfile } from '../profile-flag.js';

const NAME = 'rnic perf';

export const perfCommand: Command = {
  summary: 'bandwidth/latency of SEND, RDMA WRITE and RDMA READ, perftest style (write_bw, read_lat, ...)',
  usage: `${usage(NAME)}\n${PROFILE_USAGE}`,
  // Without --loopback it talks to a peer process: without RNIC_CONFIG, the two-hosts loopback default.
  run: async (args) => {
    const { profile, rest } = takeProfileFlag(args);
    if (answersWithoutModel(parsePerfArgs, rest)) return main(rest, { argv0: NAME });
    if (rest.includes('--loopback')) {
      if (profile !== undefined && process.env.RNIC_NO_MODEL !== '1') ensureModel(withProfile(loadConfig(), profile));
      return main(rest, { argv0: NAME });
    }
    return (await ensurePeerModel(undefined, profile)) ? main(rest, { argv0: NAME }) : 1;
  },
};
