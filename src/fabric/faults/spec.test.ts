import { describe, expect, it } from 'vitest';
import {
  FaultError,
  type FaultRule,
  formatDurationNs,
  formatFaultRule,
  parseDurationNs,
  parseFaultSpec,
  parseFaultSpecs,
  resolveFaultRule,
  resolveFaultRules,
} from '../faults.js';

const err = (f: () => unknown): FaultError => {
  try {
    f();
  } catch (e) {
    if (e instanceof FaultError) return e;
    throw e;
  }
  throw new Error('did not throw');
};

describe('parseFaultSpec: the --fault form', () => {
  it('reads the examples of the issue', () => {
    expect(parseFaultSpec('drop:opcode=RC_RDMA_WRITE_MIDDLE,psn=5-5')).toEqual({
      action: 'drop',
      direction: 'both',
      match: { opcode: 'RC_RDMA_WRITE_MIDDLE', psn: [5, 5] },
    });
    expect(parseFaultSpec('drop:p=0.01')).toEqual({ action: 'drop', direction: 'both', match: {}, probability: 0.01 });
    expect(parseFaultSpec('corrupt:every=100,dir=a->b')).toEqual({
      action: 'corrupt',
      direction: 'a->b',
      match: { every: 100 },
      target: 'any',
    });
    expect(parseFaultSpec('link-down:at=2ms,for=1ms')).toEqual({
      action: 'link-down',
      direction: 'both',
      match: {},
      atNs: 2_000_000,
      downForNs: 1_000_000,
    });
  });

  it('reads every key, with aliases', () => {
    expect(parseFaultSpec('delay:op=ack,qp=0x12,psn=7,window=1us-,after=2,every=3,count=4,p=50%,delay=1.5us,dir=b->a,name=slow-acks')).toEqual({
      action: 'delay',
      direction: 'b->a',
      match: { opcode: 'ack', qpn: 0x12, psn: [7, 7], window: [1000, null], after: 2, every: 3, count: 4 },
      probability: 0.5,
      delayNs: 1500,
      name: 'slow-acks',
    });
    expect(parseFaultSpec('duplicate:copies=3,opcode=0x11')).toMatchObject({ copies: 3, match: { opcode: 0x11 } });
    expect(parseFaultSpec('reorder:depth=4,window=0-2ms')).toMatchObject({ reorderDepth: 4, match: { window: [0, 2_000_000] } });
    expect(parseFaultSpec('corrupt:target=payload')).toMatchObject({ target: 'payload' });
    expect(parseFaultSpec('link-down:for=10us,opcode=any,count=1')).toMatchObject({ downForNs: 10_000, match: { opcode: 'any', count: 1 } });
    expect(parseFaultSpec(' drop ')).toEqual({ action: 'drop', direction: 'both', match: {} });
    expect(parseFaultSpecs(['drop', 'delay:delay=1ms'])).toHaveLength(2);
  });

  it('round trip: parse(format(rule)) is the rule, format(parse(s)) is stable', () => {
    const rules: FaultRule[] = [
      { action: 'drop', match: { opcode: 'RC_RDMA_WRITE_MIDDLE', after: 4, count: 1 } },
      { action: 'drop', probability: 0.01 },
      { action: 'corrupt', direction: 'a->b', match: { every: 100 }, target: 'icrc' },
      { action: 'duplicate', copies: 2, match: { qpn: 17, psn: [0xfffff0, 5] } },
      { action: 'reorder', reorderDepth: 3, match: { opcode: 'write', window: ['1ms', '1.5ms'] } },
      { action: 'delay', delayNs: 1234, direction: 'b->a', match: { opcode: 0x0d, window: [5, null] }, name: 'x' },
      { action: 'link-down', atNs: '2ms', downForNs: '1ms', direction: 'a->b' },
      { action: 'link-down', downForNs: 1e9, probability: 0.25, match: { opcode: 'any' } },
    ];
    for (const r of rules) {
      const resolved = resolveFaultRule(r);
      const text = formatFaultRule(r);
      expect(parseFaultSpec(text)).toEqual(resolved);
      expect(formatFaultRule(parseFaultSpec(text))).toBe(text);
      expect(resolveFaultRule(resolved)).toEqual(resolved);
      expect(JSON.parse(JSON.stringify(resolved))).toEqual(resolved);
    }
    expect(formatFaultRule(rules[0]!)).toBe('drop:opcode=RC_RDMA_WRITE_MIDDLE,after=4,count=1');
    expect(formatFaultRule(rules[3]!)).toBe('duplicate:qpn=17,psn=16777200-5,copies=2');
    expect(formatFaultRule(rules[4]!)).toBe('reorder:opcode=write,window=1ms-1500us,depth=3');
    expect(formatFaultRule(rules[5]!)).toBe('delay:dir=b->a,opcode=0x0d,window=5ns-,delay=1234ns,name=x');
  });

  it('says what is wrong, and where', () => {
    const cases: [string, string, RegExp][] = [
      ['', '', /empty fault/],
      ['explode', 'action', /unknown action "explode"; expected one of drop, corrupt/],
      ['drop:psn', '', /expected key=value, got "psn"/],
      ['drop:colour=red', 'colour', /unknown key; expected one of dir, direction, on, opcode/],
      ['drop:psn=1,psn=2', 'psn', /given twice/],
      ['drop:qpn=', 'qpn', /has no value/],
      ['drop:psn=a-b', 'psn', /expected an integer, got "a"/],
      ['drop:psn=5-', 'psn', /expected from-to/],
      ['drop:opcode=RC_WRITE', 'opcode', /is not an opcode: use a name such as 'RC_RDMA_WRITE_MIDDLE'/],
      ['drop:p=lots', 'p', /expected a probability such as 0.01 or 1%/],
      ['drop:p=1.5', 'p', /expected a number in \[0, 1\], got 1.5/],
      ['drop:dir=a-b', 'dir', /expected 'a->b', 'b->a' or 'both'/],
      ['drop:delay=5us', 'delay', /applies to delay, not to drop/],
      ['delay', 'delay', /a delay rule needs delayNs/],
      ['delay:delay=5 parsecs', 'delay', /cannot read "5 parsecs" as a duration/],
      ['delay:delay=0.5ns', 'delay', /not a whole number of nanoseconds/],
      ['link-down:at=2ms', 'for', /a link-down rule needs downForNs/],
      ['link-down:at=2ms,for=1ms,qpn=3', 'match', /takes no match/],
      ['reorder:window=2ms-1ms', 'window', /ends \(1000000 ns\) before it starts/],
      ['duplicate:copies=1000', 'copies', /1000 is outside \[1, 64\]/],
      ['drop:every=0', 'every', /0 is outside \[1,/],
    ];
    cases.forEach(([spec, field, msg], i) => {
      const e = err(() => parseFaultSpec(spec, i));
      expect(e.code).toBe('FAULT_BAD_RULE');
      expect(e.ruleIndex).toBe(i);
      expect(e.field).toBe(field);
      expect(e.message).toMatch(msg);
      expect(e.message.startsWith(`--fault #${i} ${JSON.stringify(spec)}`)).toBe(true);
    });
    expect(err(() => parseFaultSpecs(['drop', 'drop:x=1'])).ruleIndex).toBe(1);
  });
});

describe('resolveFaultRule: the object form', () => {
  it('fills defaults and normalises', () => {
    expect(resolveFaultRule({ action: 'duplicate' })).toEqual({ action: 'duplicate', direction: 'both', match: {}, copies: 1 });
    expect(resolveFaultRule({ action: 'reorder' })).toMatchObject({ reorderDepth: 1 });
    expect(resolveFaultRule({ action: 'drop', match: { opcode: 'ib_opcode_rc_send_only', qpn: '0x10' as never } }).match).toEqual({
      opcode: 'RC_SEND_ONLY',
      qpn: 16,
    });
    expect(resolveFaultRule({ action: 'drop', match: { opcode: 'WRITE' } }).match.opcode).toBe('write');
    expect(resolveFaultRule({ action: 'drop', match: { opcode: '7' } }).match.opcode).toBe(7);
    expect(Object.isFrozen(resolveFaultRule({ action: 'drop' }))).toBe(true);
  });

  it('typed errors naming the rule index and field', () => {
    const cases: [unknown, string, RegExp][] = [
      [null, '', /expected a rule object, got null/],
      [{ action: 'drop', colour: 1 }, 'colour', /unknown field; expected one of action, direction, on, match/],
      [{ action: 'drop', match: { psm: 1 } }, 'match.psm', /unknown field; expected one of opcode, qpn, psn/],
      [{ action: 'drop', match: 3 }, 'match', /expected an object/],
      [{ action: 'drop', match: { psn: 5 } }, 'match.psn', /expected \[from, to\]/],
      [{ action: 'drop', match: { psn: [0, 0x1000000] } }, 'match.psn', /16777216 is outside \[0, 16777215\]/],
      [{ action: 'drop', match: { qpn: 1.5 } }, 'match.qpn', /expected an integer/],
      [{ action: 'drop', match: { opcode: 0x15 } }, 'match.opcode', /opcode 0x15 is reserved/],
      [{ action: 'drop', match: { opcode: 300 } }, 'match.opcode', /300 is outside \[0, 255\]/],
      [{ action: 'drop', match: { window: 'soon' } }, 'match.window', /expected \[fromNs, toNs\]/],
      [{ action: 'drop', match: { count: 0 } }, 'match.count', /0 is outside \[1,/],
      [{ action: 'drop', match: { after: -1 } }, 'match.after', /-1 is outside \[0,/],
      [{ action: 'drop', probability: '1%' }, 'probability', /expected a number in \[0, 1\]/],
      [{ action: 'corrupt', target: 'icrcs' }, 'target', /expected one of any, header, payload, icrc/],
      [{ action: 'delay', delayNs: 0 }, 'delayNs', /must be at least 1 ns/],
      [{ action: 'delay', delayNs: '2h' }, 'delayNs', /cannot read "2h"/],
      [{ action: 'delay', delayNs: 4e12 }, 'delayNs', /more than an hour/],
      [{ action: 'link-down', downForNs: 5, atNs: 0, probability: 0.5 }, 'probability', /is certain/],
      [{ action: 'drop', name: 'a,b' }, 'name', /cannot carry/],
      [{ action: 'drop', direction: 'up' }, 'direction', /expected 'a->b', 'b->a' or 'both', got "up"/],
      [{ action: 'nuke' }, 'action', /expected one of drop, corrupt, duplicate, reorder, delay, link-down, ecn-mark, got "nuke"/],
      [{ action: 'reorder', copies: 2 }, 'copies', /applies to duplicate, not to reorder/],
    ];
    cases.forEach(([raw, field, msg], i) => {
      const e = err(() => resolveFaultRules([...new Array(i).fill({ action: 'drop' }), raw]));
      expect(e).toMatchObject({ code: 'FAULT_BAD_RULE', ruleIndex: i, field });
      expect(e.message).toMatch(msg);
      expect(e.message).toMatch(new RegExp(`^rule ${i}`));
    });
    expect(err(() => resolveFaultRules({})).message).toMatch(/expected a list of rules/);
    // [from] alone (or [from, null]) is a window with no end.
    expect(resolveFaultRule({ action: 'drop', match: { window: [5] as never } }).match.window).toEqual([5, null]);
  });

  it('durations: units, fractions, formatting', () => {
    expect(parseDurationNs(1500)).toBe(1500);
    expect(parseDurationNs('1500')).toBe(1500);
    expect(parseDurationNs('1.5us')).toBe(1500);
    expect(parseDurationNs('1.5µs')).toBe(1500);
    expect(parseDurationNs('0.1ms')).toBe(100_000);
    expect(parseDurationNs('2 s')).toBe(2e9);
    expect(parseDurationNs('1.000ns')).toBe(1);
    expect(() => parseDurationNs(-1)).toThrow(FaultError);
    expect(() => parseDurationNs('1e3ns')).toThrow(/cannot read/);
    expect([0, 1, 999, 1000, 1500, 2e6, 3e9, 1_000_001].map(formatDurationNs)).toEqual(['0', '1ns', '999ns', '1us', '1500ns', '2ms', '3s', '1000001ns']);
  });
});

describe('docs/faults.md', () => {
  it('every example row: the --fault form and the rule object are the same rule', async () => {
    const { readFile } = await import('node:fs/promises');
    const md = await readFile(new URL('../../../docs/faults.md', import.meta.url), 'utf8');
    const section = md.slice(md.indexOf('## Examples'), md.indexOf('## Seeds'));
    const rows = section.split('\n').filter((l) => l.startsWith('| ') && l.includes('`{'));
    expect(rows.length).toBeGreaterThanOrEqual(10);
    for (const row of rows) {
      const cells = row.split(' | ');
      const spec = /`([^`]+)`/.exec(cells[1]!)![1]!;
      const json = /`(\{.*\})`/.exec(cells[2]!)![1]!;
      expect(parseFaultSpec(spec), row).toEqual(resolveFaultRule(JSON.parse(json)));
    }
  });
});
