/**
 * A small C `printf` for the ported programs, so their output lines can be
 * written with the very format strings the C tools print (and checked side by
 * side against them).
 *
 * Supported: `%d %i %u %x %X %o %c %s %f %F %%`, the flags `- 0 # + space`,
 * a width, a precision, and the length modifiers `hh h l ll L z j t q`
 * (accepted and, except for the width of negative numbers under %u/%x/%o,
 * ignored). `%f` is exact: the double is expanded in full and rounded half
 * to even, as glibc does, so `sprintf('%.2f', 0.125)` is "0.12".
 */

export type PrintfArg = number | bigint | string;

const SPEC = /%([-+ #0]*)(\d+)?(?:\.(\d*))?(hh|h|ll|l|L|z|j|t|q)?([diuxXocsfF%])/g;

export function sprintf(fmt: string, ...args: PrintfArg[]): string {
  let next = 0;
  const take = (): PrintfArg => {
    if (next >= args.length) throw new RangeError(`sprintf: too few arguments for "${fmt}"`);
    return args[next++] as PrintfArg;
  };
  return fmt.replace(SPEC, (_m, flags: string, width: string | undefined, prec: string | undefined, len: string | undefined, conv: string) => {
    if (conv === '%') return '%';
    const f = {
      left: flags.includes('-'),
      zero: flags.includes('0'),
      alt: flags.includes('#'),
      plus: flags.includes('+'),
      space: flags.includes(' '),
      width: width === undefined ? 0 : Number(width),
      prec: prec === undefined ? -1 : Number(prec === '' ? '0' : prec),
      long64: len === 'll' || len === 'L' || len === 'q' || len === 'j' || len === 'l' || len === 'z' || len === 't',
    };
    const v = take();
    switch (conv) {
      case 'd':
      case 'i':
        return formatSigned(toBigInt(v), f);
      case 'u':
      case 'x':
      case 'X':
      case 'o':
        return formatUnsigned(toBigInt(v), conv, f);
      case 'c':
        return pad(typeof v === 'string' ? v.slice(0, 1) : String.fromCharCode(Number(v)), f.width, f.left, ' ');
      case 's': {
        let s = String(v);
        if (f.prec >= 0) s = s.slice(0, f.prec);
        return pad(s, f.width, f.left, ' ');
      }
      default:
        return formatFixed(Number(v), f);
    }
  });
}

interface Flags {
  left: boolean;
  zero: boolean;
  alt: boolean;
  plus: boolean;
  space: boolean;
  width: number;
  prec: number;
  long64: boolean;
}

function toBigInt(v: PrintfArg): bigint {
  if (typeof v === 'bigint') return v;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new RangeError(`sprintf: not an integer: ${String(v)}`);
  return BigInt(Math.trunc(n));
}

function pad(s: string, width: number, left: boolean, ch: string): string {
  if (s.length >= width) return s;
  return left ? s + ' '.repeat(width - s.length) : ch.repeat(width - s.length) + s;
}

/** Sign/prefix, then zero padding, then digits (C's rule for `0` with a width). */
function assemble(prefix: string, digits: string, f: Flags, zeroAllowed: boolean): string {
  if (f.zero && !f.left && zeroAllowed && prefix.length + digits.length < f.width) {
    digits = '0'.repeat(f.width - prefix.length - digits.length) + digits;
  }
  return pad(prefix + digits, f.width, f.left, ' ');
}

function formatSigned(v: bigint, f: Flags): string {
  const neg = v < 0n;
  let digits = (neg ? -v : v).toString();
  if (f.prec >= 0) digits = f.prec === 0 && v === 0n ? '' : digits.padStart(f.prec, '0');
  const sign = neg ? '-' : f.plus ? '+' : f.space ? ' ' : '';
  return assemble(sign, digits, f, f.prec < 0);
}

function formatUnsigned(v: bigint, conv: string, f: Flags): string {
  if (v < 0n) v = BigInt.asUintN(f.long64 ? 64 : 32, v);
  let digits = conv === 'o' ? v.toString(8) : v.toString(conv === 'u' ? 10 : 16);
  if (conv === 'X') digits = digits.toUpperCase();
  if (f.prec >= 0) digits = f.prec === 0 && v === 0n ? '' : digits.padStart(f.prec, '0');
  let prefix = '';
  if (f.alt && v !== 0n) {
    if (conv === 'x') prefix = '0x';
    else if (conv === 'X') prefix = '0X';
    else if (conv === 'o' && !digits.startsWith('0')) digits = `0${digits}`;
  }
  return assemble(prefix, digits, f, f.prec < 0);
}

function formatFixed(x: number, f: Flags): string {
  const prec = f.prec < 0 ? 6 : f.prec;
  const neg = x < 0 || Object.is(x, -0);
  let body: string;
  if (Number.isNaN(x)) body = 'nan';
  else if (!Number.isFinite(x)) body = 'inf';
  else body = exactFixed(Math.abs(x), prec);
  if (f.alt && prec === 0 && Number.isFinite(x)) body += '.';
  const sign = neg && !Number.isNaN(x) ? '-' : f.plus ? '+' : f.space ? ' ' : '';
  return assemble(sign, body, f, Number.isFinite(x));
}

const F64 = new DataView(new ArrayBuffer(8));

/** `x` (finite, ≥ 0) with `prec` decimals, from its exact binary value, ties to even. */
export function exactFixed(x: number, prec: number): string {
  F64.setFloat64(0, x);
  const hi = F64.getUint32(0);
  const lo = F64.getUint32(4);
  const biased = (hi >>> 20) & 0x7ff;
  let mant = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
  let exp: number;
  if (biased === 0) {
    exp = -1074; // subnormal
  } else {
    mant |= 1n << 52n;
    exp = biased - 1075;
  }
  // value = mant * 2^exp; scaled = round(value * 10^prec), half to even.
  const ten = 10n ** BigInt(prec);
  let scaled: bigint;
  if (exp >= 0) {
    scaled = (mant << BigInt(exp)) * ten;
  } else {
    const num = mant * ten;
    const den = 1n << BigInt(-exp);
    const q = num / den;
    const r2 = (num % den) * 2n;
    scaled = r2 > den || (r2 === den && (q & 1n) === 1n) ? q + 1n : q;
  }
  const s = scaled.toString().padStart(prec + 1, '0');
  return prec === 0 ? s : `${s.slice(0, s.length - prec)}.${s.slice(s.length - prec)}`;
}
