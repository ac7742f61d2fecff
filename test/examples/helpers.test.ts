/** The small C-compatibility pieces the examples stand on: printf, getopt_long, inet_ntop. */
import { describe, expect, it } from 'vitest';
import { GetoptError, getopt_long, parseCInt } from '../../examples/common/getopt.js';
import { inet_ntop6 } from '../../examples/common/inet.js';
import { exactFixed, sprintf } from '../../examples/common/printf.js';

describe('sprintf (glibc printf semantics)', () => {
  it('integers: width, zero padding, left alignment, hex, the # flag', () => {
    expect(sprintf('%04x:%06x:%06x', 0, 0x11, 0xabcdef)).toBe('0000:000011:abcdef');
    expect(sprintf('0x%04x', 0x1a)).toBe('0x001a');
    expect(sprintf('[%-7lu]', 2)).toBe('[2      ]');
    expect(sprintf('[%5d][%-5d][%05d]', -42, -42, -42)).toBe('[  -42][-42  ][-0042]');
    expect(sprintf('%X %x', 0xbeef, 255)).toBe('BEEF ff');
    expect(sprintf('%lld', 123456789012345678n)).toBe('123456789012345678');
    expect(sprintf('%llx', 0xfedcba9876543210n)).toBe('fedcba9876543210');
  });

  it("'#' counts 0x inside the width and leaves 0 alone (perftest's LID 0000 and QPN 0x0011)", () => {
    expect(sprintf('%#04x', 0)).toBe('0000');
    expect(sprintf('%#04x', 3)).toBe('0x03');
    expect(sprintf('%#06x', 0x11)).toBe('0x0011');
    expect(sprintf('%#06x', 0xb0c21c)).toBe('0xb0c21c');
    expect(sprintf('%#08x', 0x10011b4d)).toBe('0x10011b4d');
    expect(sprintf('%#016llx', 0x7f10cb874000n)).toBe('0x007f10cb874000');
  });

  it('negative numbers under %x and %u wrap to 32 bits, or 64 with l/ll', () => {
    expect(sprintf('%x', -1)).toBe('ffffffff');
    expect(sprintf('%u', -1)).toBe('4294967295');
    expect(sprintf('%llx', -1)).toBe('ffffffffffffffff');
  });

  it('%f rounds the exact binary value, ties to even', () => {
    expect(sprintf('%.2f', 0.125)).toBe('0.12'); // exactly representable tie
    expect(sprintf('%.2f', 0.375)).toBe('0.38');
    expect(sprintf('%.2f', 1.005)).toBe('1.00'); // 1.00499999999999989...
    expect(sprintf('%.2f', 2.675)).toBe('2.67');
    expect(sprintf('%.6f', 0.1)).toBe('0.100000');
    expect(sprintf('%f', 1 / 3)).toBe('0.333333');
    expect(sprintf('%.0f', 2.5)).toBe('2');
    expect(sprintf('%.0f', 3.5)).toBe('4');
    expect(sprintf('%.2f', 1e21)).toBe('1000000000000000000000.00');
    expect(exactFixed(5e-324, 3)).toBe('0.000');
  });

  it('%f: width, left alignment, sign, nan and inf', () => {
    expect(sprintf('[%-7.2f]', 1.5)).toBe('[1.50   ]');
    expect(sprintf('[%-7.2lf]', 11234.567)).toBe('[11234.57]');
    expect(sprintf('[%8.3f]', -2.5)).toBe('[  -2.500]');
    expect(sprintf('[%08.3f]', -2.5)).toBe('[-002.500]');
    expect(sprintf('%.2f', -0)).toBe('-0.00');
    expect(sprintf('%.2f %.2f %.2f', NaN, Infinity, -Infinity)).toBe('nan inf -inf');
  });

  it('%s with precision, %c, %%', () => {
    expect(sprintf('%.3s|%5s|%-5s|%c|100%%', 'abcdef', 'ab', 'ab', 65)).toBe('abc|   ab|ab   |A|100%');
  });

  it('too few arguments is a programming error, not silent garbage', () => {
    expect(() => sprintf('%d %d', 1)).toThrow(RangeError);
  });
});

describe('getopt_long', () => {
  const specs = [
    { short: 'p', long: 'port', arg: true },
    { short: 'e', long: 'events', arg: false },
    { short: 'c', long: 'chk', arg: false },
    { short: 'g', long: 'gid-idx', arg: true },
    { long: 'iters', arg: true },
    { long: 'iodp', arg: false },
  ];
  const names = (argv: string[]): string[] => getopt_long(argv, specs).options.map((o) => `${o.name}=${o.value ?? ''}`);

  it('takes every form C getopt_long takes', () => {
    expect(names(['-p', '1', '-p2', '--port=3', '--port', '4', '-ec', '-eg5', '-cg', '6'])).toEqual([
      'port=1',
      'port=2',
      'port=3',
      'port=4',
      'events=',
      'chk=',
      'events=',
      'gid-idx=5',
      'chk=',
      'gid-idx=6',
    ]);
  });

  it('permutes operands to the end and stops at --', () => {
    const r = getopt_long(['host', '-e', '--', '-p'], specs);
    expect(r.operands).toEqual(['host', '-p']);
    expect(r.options.map((o) => o.name)).toEqual(['events']);
  });

  it('accepts an unambiguous prefix of a long name, refuses an ambiguous one', () => {
    expect(names(['--it', '7', '--ev'])).toEqual(['iters=7', 'events=']);
    expect(() => getopt_long(['--i', '1'], specs)).toThrow(/ambiguous/);
  });

  it("reports mistakes with glibc's wording", () => {
    expect(() => getopt_long(['-z'], specs)).toThrow("invalid option -- 'z'");
    expect(() => getopt_long(['--zap'], specs)).toThrow("unrecognized option '--zap'");
    expect(() => getopt_long(['-p'], specs)).toThrow("option requires an argument -- 'p'");
    expect(() => getopt_long(['--port'], specs)).toThrow("option '--port' requires an argument");
    expect(() => getopt_long(['--events=1'], specs)).toThrow("option '--events' doesn't allow an argument");
    expect(() => getopt_long(['-z'], specs)).toThrow(GetoptError);
  });

  it('parseCInt reads what strtol(s, NULL, 0) reads, and nothing else', () => {
    expect(parseCInt('18515')).toBe(18515);
    expect(parseCInt('0x10')).toBe(16);
    expect(parseCInt('010')).toBe(8);
    expect(parseCInt('0')).toBe(0);
    expect(parseCInt('-1')).toBe(-1);
    expect(parseCInt(' 42 ')).toBe(42);
    expect(parseCInt('12abc')).toBeNull();
    expect(parseCInt('abc')).toBeNull();
    expect(parseCInt('')).toBeNull();
    expect(parseCInt('09')).toBeNull();
    expect(parseCInt('1e3')).toBeNull();
  });
});

describe('inet_ntop6 (glibc text form)', () => {
  const raw = (hex: string): Uint8Array => Uint8Array.from(Buffer.from(hex, 'hex'));
  it.each([
    ['00000000000000000000000000000000', '::'],
    ['00000000000000000000000000000001', '::1'],
    ['fe800000000000000202c9fffe0a1b2c', 'fe80::202:c9ff:fe0a:1b2c'],
    ['00000000000000000000ffffc0a80101', '::ffff:192.168.1.1'],
    ['000000000000000000000000c0a80101', '::192.168.1.1'],
    ['20010db8000000010000000000000001', '2001:db8:0:1::1'], // the longest run wins
    ['20010db8000000000001000000000001', '2001:db8::1:0:0:1'], // the first of equal runs wins
    ['20010db8000100010001000100010001', '2001:db8:1:1:1:1:1:1'],
    ['20010000000000010000000000000000', '2001:0:0:1::'], // a trailing run
    ['00010000000000000000000000000000', '1::'],
    ['00000000000000000000000000000102', '::102'], // not IPv4-compatible: the run is 7 words
  ])('%s → %s', (hex, text) => {
    expect(inet_ntop6(raw(hex))).toBe(text);
  });
});
