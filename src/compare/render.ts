/** The human report of a comparison (the JSON report is the CompareReport itself). */
import type { CompareReport, Difference, Where } from './types.js';

function where(w: Where): string {
  const parts: string[] = [];
  if (w.flow) parts.push(w.flow);
  if (w.qp) parts.push(`QP ${w.qp}`);
  if (w.wr !== undefined) parts.push(`WR ${w.wr}`);
  if (w.relPsn !== undefined) parts.push(`PSN +${w.relPsn} (A ${w.psnA ?? '-'}, B ${w.psnB ?? '-'})`);
  // Capture records are shown 1-based, as Wireshark numbers frames.
  if (w.packetA !== undefined || w.packetB !== undefined)
    parts.push(`frame A ${w.packetA === undefined ? '-' : w.packetA + 1}, B ${w.packetB === undefined ? '-' : w.packetB + 1}`);
  if (w.nsA !== undefined || w.nsB !== undefined) parts.push(`t A ${w.nsA ?? '-'} ns, B ${w.nsB ?? '-'} ns`);
  if (w.device) parts.push(w.device);
  return parts.join('; ');
}

function line(d: Difference): string {
  const tag = d.allowed ? 'allowed' : d.explainedBy ? `profile: ${d.explainedBy}` : 'DIFFERS';
  const at = where(d.where);
  return `  [${tag}] ${d.text}${at ? `\n      at ${at}` : ''}`;
}

export function renderReport(r: CompareReport): string {
  const run = (k: 'A' | 'B', s: CompareReport['a']) =>
    `${k}: ${s.label}${s.profile ? ` (profile ${s.profile})` : ''}: ${s.packets} packets in ${s.flows} flows, ${s.retransmissions} retransmitted${s.invalidFrames ? `, ${s.invalidFrames} invalid frames` : ''}`;
  const explained = r.differences.filter((d) => d.explainedBy && !d.allowed).length;
  const allowed = r.differences.filter((d) => d.allowed).length;
  const out = [run('A', r.a), run('B', r.b), `${r.flows} flows aligned, ${r.matchedPackets} packets matched`, ''];
  if (r.differences.length === 0) out.push('no differences');
  else {
    out.push(`${r.differences.length} differences: ${r.unexplained} unexplained, ${explained} explained by the profiles, ${allowed} allowed`);
    for (const d of r.differences) out.push(line(d));
  }
  out.push('', r.unexplained === 0 ? 'identical, modulo the differences above that are explained or allowed' : `${r.unexplained} unexplained differences`);
  return `${out.join('\n')}\n`;
}
