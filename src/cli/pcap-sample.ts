/** `rnic pcap-sample`: every opcode in every framing, for Wireshark. */
import { parseArgs } from 'node:util';
import { LINKTYPE_ETHERNET, LINKTYPE_INFINIBAND, sampleFrames } from '../wire/index.js';
import { CliError, type Command } from './command.js';
import { openPcapFile } from '../runtime/pcap-file.js';

const USAGE = `usage: rnic pcap-sample --out FILE [--ib-out FILE] [--nanosecond]

Writes one frame of every RC, UC and UD opcode in RoCE v2 (IPv4 and IPv6)
and RoCE v1 framing, plus CNPs, PFC and 802.3x PAUSE frames, to FILE
(Ethernet link type), and the same opcodes in native InfiniBand framing to
the --ib-out file (link type 247; default: FILE with '-ib' before '.pcap').`;

export function ibPathFor(out: string): string {
  return out.endsWith('.pcap') ? `${out.slice(0, -5)}-ib.pcap` : `${out}-ib.pcap`;
}

export const pcapSampleCommand: Command = {
  summary: 'write a capture with one frame of every opcode in every framing',
  usage: USAGE,
  async run(args) {
    const { values } = parseArgs({
      args,
      options: { out: { type: 'string' }, 'ib-out': { type: 'string' }, nanosecond: { type: 'boolean', default: false } },
      strict: true,
    });
    if (!values.out) throw new CliError('--out FILE is required');
    const ibOut = values['ib-out'] ?? ibPathFor(values.out);
    if (ibOut === values.out) throw new CliError('--ib-out must differ from --out');
    const nanosecond = values.nanosecond === true;
    const eth = openPcapFile(values.out, { linktype: LINKTYPE_ETHERNET, nanosecond });
    const ib = openPcapFile(ibOut, { linktype: LINKTYPE_INFINIBAND, nanosecond });
    // One frame a microsecond from a fixed epoch, so the file is the same on every run.
    let t = 1_700_000_000_000_000_000n;
    for (const f of sampleFrames()) {
      (f.framing === 'ib' ? ib : eth).write(f.bytes, t);
      t += 1000n;
    }
    eth.close();
    ib.close();
    process.stdout.write(`wrote ${eth.framesWritten} Ethernet frames (RoCE v2, RoCE v1, CNP, PFC, PAUSE) to ${values.out}\n`);
    process.stdout.write(`wrote ${ib.framesWritten} native InfiniBand frames to ${ibOut}\n`);
    process.stdout.write(`open them with: wireshark ${values.out}   (or: tshark -r ${values.out})\n`);
    return 0;
  },
};
