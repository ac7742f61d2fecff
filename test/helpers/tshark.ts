/** Running the real Wireshark dissector as a judge. */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export const TSHARK = ['/usr/bin/tshark', '/usr/local/bin/tshark'].find((p) => existsSync(p)) ?? null;

/**
 * Reads `file` once and returns, per frame, the value of each field (its
 * first occurrence, or with 'l' its last; '' when absent). RPC-over-RDMA is disabled: its heuristic
 * misreads small payloads, and it is not what is being judged.
 */
export function tsharkFields(file: string, fields: readonly string[], extraArgs: string[] = [], occurrence: 'f' | 'l' = 'f'): Record<string, string>[] {
  if (!TSHARK) throw new Error('tshark is not installed (apt-get install tshark)');
  const args = ['-n', '-r', file, '--disable-protocol', 'rpcordma', ...extraArgs, '-T', 'fields', '-E', 'separator=\t', '-E', `occurrence=${occurrence}`];
  for (const f of fields) args.push('-e', f);
  const out = execFileSync(TSHARK, args, { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, stdio: ['ignore', 'pipe', 'ignore'] });
  return out
    .split('\n')
    .filter((l) => l.length > 0)
    .map((line) => {
      const cols = line.split('\t');
      const rec: Record<string, string> = {};
      fields.forEach((f, i) => {
        rec[f] = cols[i] ?? '';
      });
      return rec;
    });
}

/** tshark prints integers as decimal or 0x-hex; hex byte strings without a prefix. */
export function tsharkInt(v: string): bigint | null {
  if (v === '') return null;
  if (/^0x[0-9a-f]+$/i.test(v)) return BigInt(v);
  if (/^\d+$/.test(v)) return BigInt(v);
  if (v === 'True') return 1n;
  if (v === 'False') return 0n;
  throw new Error(`not an integer: ${v}`);
}

/** A byte-string field (e.g. infiniband.immdt) as a 32-bit big-endian number. */
export function tsharkBytesU32(v: string): bigint | null {
  if (v === '') return null;
  return BigInt(`0x${v.replace(/:/g, '')}`);
}
