/**
 * The generated parts of docs/device-interface.md: every layout table, the
 * register map, the command reference, capabilities and counters, rendered
 * from the declarations. The manual holds them between
 * `<!-- BEGIN GENERATED: name -->` and `<!-- END GENERATED: name -->`
 * markers; docs.test.ts fails when they drift, and
 * `UPDATE_DOCS=1 npx vitest run src/device/docs.test.ts` rewrites them.
 */
import { AV } from './av.js';
import { DEVICE_PARAMS, PORT_PARAMS } from './capabilities.js';
import { CMD_STATUSES, COMMANDS, QP_ATTR } from './commands.js';
import { CQC, EQC, MPT, QPC, SRQC } from './contexts.js';
import { COUNTERS } from './counters.js';
import { CQE } from './cqe.js';
import { EQE } from './eqe.js';
import { hexOffset, layoutTable, type Layout } from './layout.js';
import { MAILBOX_HDR } from './mailbox.js';
import { describeParams } from '../params/params.js';
import { CQ_DBREC, QP_DBREC, REGISTERS, SRQ_DBREC } from './registers.js';
import { ATOMIC_SEG, BIND_SEG, DATA_SEG, INLINE_HDR, RADDR_SEG, RECV_WQE_HDR, SEND_CTRL, SRQ_WQE_HDR, UD_SEG } from './wqe.js';

function layoutSection(...layouts: Layout[]): string {
  return layouts.map((l) => `**\`${l.name}\`** — ${l.size} bytes. ${l.doc}\n\n${layoutTable(l)}`).join('\n\n');
}

function registersTable(): string {
  const rows = ['| offset | register | access | description |', '| --- | --- | --- | --- |'];
  for (const r of REGISTERS) rows.push(`| ${hexOffset(r.offset).padEnd(5)} | \`${r.name}\` | ${r.access} | ${r.doc.replace(/\|/g, '\\|')} |`);
  return rows.join('\n');
}

function statusesTable(): string {
  const rows = ['| code | status | errno | meaning |', '| --- | --- | --- | --- |'];
  for (const s of CMD_STATUSES) rows.push(`| ${hexOffset(s.code)} | \`${s.name}\` | ${s.errnoName} | ${s.doc} |`);
  return rows.join('\n');
}

function commandsSection(): string {
  const index = ['| opcode | command | input | output |', '| --- | --- | --- | --- |'];
  for (const c of COMMANDS) {
    index.push(
      `| ${hexOffset(c.opcode)} | [\`${c.name}\`](#${c.name.toLowerCase()}) | \`${c.input.name}\` (${c.input.size} B) | ${c.output ? `\`${c.output.name}\` (${c.output.size} B)` : '—'} |`,
    );
  }
  const parts = [index.join('\n')];
  const seen = new Set<string>();
  for (const c of COMMANDS) {
    const p = [`#### ${c.name}`, '', `Opcode ${hexOffset(c.opcode)}. ${c.doc}`, ''];
    const table = (l: Layout, what: string) => {
      if (seen.has(l.name)) {
        p.push(`${what}: \`${l.name}\`, ${l.size} bytes (table above).`, '');
      } else {
        seen.add(l.name);
        p.push(`${what}: \`${l.name}\`, ${l.size} bytes. ${l.doc}`, '', layoutTable(l), '');
      }
    };
    table(c.input, 'Input (at 0x40)');
    if (c.output) table(c.output, 'Output (at 0x800)');
    else p.push('Output: none.', '');
    p.push(c.errors.length ? 'Failures: ' + c.errors.map((e) => `\`${e.split(':')[0]}\`:${e.slice(e.indexOf(':') + 1)}`).join('; ') + '.' : 'Failures: none.');
    parts.push(p.join('\n'));
  }
  return parts.join('\n\n');
}

function countersTable(): string {
  const rows = ['| index | counter | source | meaning |', '| --- | --- | --- | --- |'];
  COUNTERS.forEach((c, i) => rows.push(`| ${i} | \`${c.name}\` | ${c.source} | ${c.doc} |`));
  return rows.join('\n');
}

/** Every generated section, by marker name. */
export function generatedDocSections(): Record<string, string> {
  return {
    registers: registersTable(),
    'doorbell-records': layoutSection(QP_DBREC, SRQ_DBREC, CQ_DBREC),
    'send-wqe': layoutSection(SEND_CTRL, RADDR_SEG, ATOMIC_SEG, BIND_SEG, UD_SEG, DATA_SEG, INLINE_HDR),
    'recv-wqe': layoutSection(RECV_WQE_HDR, SRQ_WQE_HDR),
    'address-vector': layoutSection(AV),
    cqe: layoutSection(CQE),
    eqe: layoutSection(EQE),
    mailbox: layoutSection(MAILBOX_HDR),
    statuses: statusesTable(),
    'qp-attr': layoutSection(QP_ATTR),
    commands: commandsSection(),
    contexts: layoutSection(QPC, CQC, EQC, SRQC, MPT),
    'device-params': describeParams(DEVICE_PARAMS),
    'port-params': describeParams(PORT_PARAMS),
    counters: countersTable(),
  };
}

const MARKER = /<!-- BEGIN GENERATED: ([\w-]+) -->\n[\s\S]*?<!-- END GENERATED: \1 -->/g;

/** `doc` with every generated section replaced by its current rendering. */
export function applyGeneratedSections(doc: string): string {
  const sections = generatedDocSections();
  return doc.replace(MARKER, (_, name: string) => {
    const body = sections[name];
    if (body === undefined) return `<!-- BEGIN GENERATED: ${name} -->\n(unknown section)\n<!-- END GENERATED: ${name} -->`;
    return `<!-- BEGIN GENERATED: ${name} -->\n${body}\n<!-- END GENERATED: ${name} -->`;
  });
}

/** Names of the generated sections present in `doc`. */
export function sectionsIn(doc: string): string[] {
  return Array.from(doc.matchAll(MARKER), (m) => m[1]!);
}
