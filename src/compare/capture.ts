/**
 * A capture's bytes as the packets compareRuns takes: every RoCE frame
 * decoded (ICRC and checksums verified), other traffic (ARP, ND, TCP)
 * skipped, a corrupted frame counted, a frame cut short an error.
 */
import { decodePacket, readPcap, WireError } from '../wire/index.js';
import type { CapturedPacket } from './types.js';

export class CompareInputError extends Error {
  readonly code = 'COMPARE_BAD_INPUT';
}

/** A capture's RoCE frames. Other traffic (ARP, ND, TCP) is skipped; a frame cut short is an error. */
export function decodeCapture(bytes: Uint8Array, what: string): { packets: CapturedPacket[]; invalidFrames: number } {
  let file: ReturnType<typeof readPcap>;
  try {
    file = readPcap(bytes);
  } catch (e) {
    if (e instanceof WireError) throw new CompareInputError(`${what}: not a pcap capture we can read: ${e.message}`);
    throw e;
  }
  const packets: CapturedPacket[] = [];
  let invalidFrames = 0;
  // Times from the first record: epoch nanoseconds do not fit a double exactly.
  const t0 = file.records[0]?.timestampNs ?? 0n;
  file.records.forEach((r, index) => {
    if (r.data.length < r.originalLength)
      throw new CompareInputError(
        `${what}: frame ${index + 1} is truncated (${r.data.length} of ${r.originalLength} bytes captured; capture with a larger snaplen, e.g. tcpdump -s 0)`,
      );
    const d = decodePacket(r.data, file.linktype);
    if (d.ok) {
      packets.push({ index, ns: Number(r.timestampNs - t0), packet: d.packet });
      return;
    }
    const code = d.error.code;
    if (code === 'WIRE_NOT_RDMA') return;
    if (code === 'WIRE_TRUNCATED' || code === 'WIRE_LENGTH_MISMATCH')
      throw new CompareInputError(`${what}: frame ${index + 1} is cut short: ${d.error.message}`);
    invalidFrames++; // a bad ICRC or checksum: a corrupted frame (a fault rule's, or the wire's)
  });
  return { packets, invalidFrames };
}
