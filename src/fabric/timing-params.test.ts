import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { DeviceError } from '../device/errors.js';
import {
  ceilDiv,
  describeTimingParams,
  durationPs,
  parseDurationNs,
  parseDurationPs,
  parseRate,
  psPerBit,
  resolveTimingParams,
  TIMING_PARAMS,
  transferNs,
  transferPs,
} from './timing-params.js';

function errOf(f: () => unknown): DeviceError | undefined {
  try {
    f();
  } catch (e) {
    return e as DeviceError;
  }
  return undefined;
}

describe('parseRate', () => {
  it.each([
    ['100Gbps', 100e9],
    ['25Gbit/s', 25e9],
    ['25 Gb/s', 25e9],
    ['400Mbps', 400e6],
    ['1kbps', 1000],
    ['1Kbit/s', 1000],
    ['1.6Tbps', 1.6e12],
    ['12.5GB/s', 100e9],
    ['16GiB/s', 16 * 2 ** 30 * 8],
    ['8Bps', 64],
    ['2.5Gbps', 2.5e9],
    [56_000_000_000, 56e9],
  ])('%s → %d bit/s', (raw, want) => {
    expect(parseRate(raw, 'x')).toBe(want);
  });

  it.each(['100', '100G', '100 gbps', 'fast', '-1Gbps', '0Gbps', '1.5bps', '1e9bps', '', 0, -5, 1.5])('rejects %j', (raw) => {
    const e = errOf(() => parseRate(raw, 'timing.linkRate'));
    expect(e?.code).toBe('DEV_ERR_BAD_CONFIG');
    expect(e?.message).toContain('timing.linkRate');
  });
});

describe('parseDuration', () => {
  it.each([
    ['500ns', 500],
    ['1.5us', 1500],
    ['1.5µs', 1500],
    ['2ms', 2_000_000],
    ['0.25 us', 250],
    ['1s', 1e9],
    ['0ns', 0],
    ['3000ps', 3],
    [42, 42],
  ])('%s → %d ns', (raw, want) => {
    expect(parseDurationNs(raw, 'x')).toBe(want);
  });

  it('picoseconds keep fractions of a nanosecond exactly', () => {
    expect(parseDurationPs('121.92ns', 'x')).toBe(121_920);
    expect(parseDurationPs('0.001ns', 'x')).toBe(1);
    expect(parseDurationPs(7, 'x', 'ps')).toBe(7);
    expect(parseDurationPs(7, 'x')).toBe(7000);
    expect(durationPs('6.72ns', 'one 64-byte frame at 100 Gb/s').parse('6.72ns', 'x')).toBe(6720);
  });

  it.each(['0.5ns', '1.0001us', '500', '5 sec', '1e3ns', '-1ns', 'ns', 1.5, -1])('rejects %j as ns', (raw) => {
    const e = errOf(() => parseDurationNs(raw, 'timing.pcieLatency'));
    expect(e?.code).toBe('DEV_ERR_BAD_CONFIG');
    expect(e?.message).toContain('timing.pcieLatency');
  });

  it('rejects values finer than a picosecond', () => {
    expect(errOf(() => parseDurationPs('0.0001ns', 'x'))?.code).toBe('DEV_ERR_BAD_CONFIG');
  });
});

describe('TIMING_PARAMS', () => {
  it('defaults resolve to integer base units', () => {
    const t = resolveTimingParams();
    expect(t).toEqual({
      doorbellLatency: 450,
      pcieLatency: 900,
      dmaBandwidth: 110e9,
      stageProcessing: 20,
      linkRate: 100e9,
      propagationDelay: 500,
    });
    expect(Object.isFrozen(t)).toBe(true);
    for (const v of Object.values(t)) expect(Number.isSafeInteger(v)).toBe(true);
  });

  it('every entry has a default, a unit and a description', () => {
    for (const [k, spec] of Object.entries(TIMING_PARAMS)) {
      expect(typeof spec.default, k).toBe('string');
      expect(['ns', 'bit/s']).toContain(spec.unit);
      expect(spec.doc.length, k).toBeGreaterThan(10);
    }
    const md = describeTimingParams();
    for (const k of Object.keys(TIMING_PARAMS)) expect(md).toContain(`\`${k}\``);
  });

  it('overrides are parsed; bad values and unknown keys name the path', () => {
    const t = resolveTimingParams({ linkRate: '25Gbit/s', propagationDelay: '1.5us', pcieLatency: '2ms' });
    expect(t.linkRate).toBe(25e9);
    expect(t.propagationDelay).toBe(1500);
    expect(t.pcieLatency).toBe(2e6);
    expect(errOf(() => resolveTimingParams({ linkRate: 'fast' }))?.message).toContain('timing.linkRate');
    expect(errOf(() => resolveTimingParams({ pcieLatency: '2s' }))?.message).toContain('timing.pcieLatency');
    expect(errOf(() => resolveTimingParams({ linkRate: '100bps' }, 'sim.timing'))?.message).toContain('sim.timing.linkRate');
    const unknown = errOf(() => resolveTimingParams({ mtu: 4096 }));
    expect(unknown?.code).toBe('DEV_ERR_BAD_CONFIG');
    expect(unknown?.message).toContain('timing.mtu');
  });
});

describe('transfer time', () => {
  it('a 1500-byte frame at 100 Gb/s: (1500 + 24) × 8 / 100 = 121.92 ns', () => {
    expect(transferPs(1524, 100e9)).toBe(121_920);
    expect(transferNs(1524, 100e9)).toBe(122);
  });

  it('reduces 10^12 / rate to small integers', () => {
    expect(psPerBit(100e9)).toEqual([10, 1]);
    expect(psPerBit(25e9)).toEqual([40, 1]);
    expect(psPerBit(56e9)).toEqual([125, 7]);
    expect(psPerBit(3)).toEqual([1e12, 3]);
  });

  it('rounds up, and is exact where a float product would not be', () => {
    expect(transferPs(1, 56e9)).toBe(143); // 8 × 125 / 7 = 142.86
    expect(transferPs(7, 56e9)).toBe(1000);
    // Products beyond 2^53 take the BigInt path.
    expect(ceilDiv(10 ** 7, 10 ** 12, 3 * 10 ** 6)).toBe(3_333_333_333_334);
    expect(ceilDiv(12_192, 10 ** 12, 10 ** 11)).toBe(121_920);
    // Against BigInt for random safe operands.
    let x = 12345;
    for (let i = 0; i < 2000; i++) {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      const a = x % 100_000;
      const b = ((x >>> 7) % 1_000_000) + 1;
      const d = ((x >>> 3) % 999) + 1;
      const want = Number((BigInt(a) * BigInt(b) + BigInt(d) - 1n) / BigInt(d));
      expect(ceilDiv(a, b, d)).toBe(want);
    }
  });
});

describe('docs/simulator.md', () => {
  it('carries the TIMING_PARAMS table as generated from the schema', () => {
    const doc = readFileSync(new URL('../../docs/simulator.md', import.meta.url), 'utf8');
    expect(doc).toContain(describeTimingParams());
  });
});
