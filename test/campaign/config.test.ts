/** Campaign files: defaults, the shipped default file, and one-line errors naming the field. */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CAMPAIGN_KEYS, CampaignError, DEFAULT_CAMPAIGN, campaignJson, parseCampaign } from '../../src/campaign/config.js';

const bad = (raw: unknown): string => {
  try {
    parseCampaign(raw, 'c.json');
  } catch (e) {
    expect(e).toBeInstanceOf(CampaignError);
    return (e as Error).message;
  }
  throw new Error('accepted');
};

describe('campaign files', () => {
  it('an empty file is the default campaign', () => {
    expect(parseCampaign({}, 'c.json')).toEqual(DEFAULT_CAMPAIGN);
  });

  it('campaigns/default.json is the built-in campaign', () => {
    const file = JSON.parse(readFileSync(new URL('../../campaigns/default.json', import.meta.url), 'utf8'));
    expect(parseCampaign(file, 'campaigns/default.json')).toEqual(DEFAULT_CAMPAIGN);
    expect(campaignJson(parseCampaign(campaignJson(DEFAULT_CAMPAIGN)))).toEqual(campaignJson(DEFAULT_CAMPAIGN));
  });

  it('every campaign file in campaigns/ is valid', () => {
    const dir = new URL('../../campaigns/', import.meta.url);
    const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
    expect(files).toContain('stress.json');
    for (const f of files) expect(() => parseCampaign(JSON.parse(readFileSync(new URL(f, dir), 'utf8')), f), f).not.toThrow();
  });

  it('the default workload is the one asked for: 2-4 RC, one UC, one UD, every op, 0-12000 B, full PSN range, 1-10% faults of five kinds', () => {
    const c = DEFAULT_CAMPAIGN;
    expect(c.qps).toEqual({ RC: [2, 4], UC: [1, 1], UD: [1, 1], XRC: [0, 0] });
    expect(
      Object.entries(c.ops)
        .filter(([, w]) => w > 0)
        .map(([k]) => k)
        .sort(),
    ).toEqual(['cmp_swap', 'fetch_add', 'read', 'send', 'send_imm', 'write', 'write_imm']);
    expect(c.sizes.max).toBe(12000);
    expect(c.psn).toEqual([0, 0xffffff]);
    expect(c.mtus).toEqual([256, 512, 1024, 2048, 4096]);
    expect(c.depth).toEqual([1, 16]);
    expect(c.timeout).toEqual([4, 10]);
    expect(c.faults.rate).toEqual([0.01, 0.1]);
    expect([...c.faults.kinds].sort()).toEqual(['corrupt', 'delay', 'drop', 'duplicate', 'reorder']);
  });

  it('names the field of a mistake', () => {
    expect(bad({ faults: { rate: [0.1, 0.01] } })).toBe('c.json.faults.rate: min 0.1 is above max 0.01');
    expect(bad({ faults: { kinds: ['drop', 'melt'] } })).toBe('c.json.faults.kinds[1]: expected one of drop, corrupt, duplicate, reorder, delay, got "melt"');
    expect(bad({ mtus: [1500] })).toBe('c.json.mtus[0]: expected 256, 512, 1024, 2048 or 4096, got 1500');
    expect(bad({ faults: { delayNs: 0 } })).toBe('c.json.faults.delayNs: 0 is outside [1, 1000000000000]');
    expect(bad({ qps: { RC: [1, 99] } })).toBe('c.json.qps.RC[1]: 99 is outside [0, 16]');
    expect(bad({ qps: { RD: 1 } })).toMatch(/^c\.json\.qps\.RD: unknown setting/);
    expect(bad({ qps: { XRC: [2, 1] } })).toMatch(/^c\.json\.qps\.XRC/);
    expect(bad({ wrs: 'many' })).toBe('c.json.wrs: expected [min, max] or a number, got "many"');
    expect(bad({ psn: [0, 0x1000000] })).toBe('c.json.psn[1]: 16777216 is outside [0, 16777215]');
    expect(bad({ inline: 2 })).toBe('c.json.inline: 2 is outside [0, 1]');
    expect(bad({ ops: { send: 0, write: 0 } })).toMatch(/^c\.json\.ops: every weight is 0/);
    expect(bad({ lateRecv: { delayNs: ['5us', 'soon'] } })).toMatch(/^c\.json\.lateRecv\.delayNs\[1\]: /);
    expect(bad({ profile: 'mlx4' })).toBe('c.json.profile: unknown profile "mlx4" (known: ibta, rxe)');
    expect(bad({ profile: { base: 'rxe', nope: true } })).toMatch(/^c\.json\.profile\.nope: unknown setting/);
    expect(bad({ seeds: 5 })).toMatch(/^c\.json\.seeds: unknown setting/);
    expect(parseCampaign({ faults: { kinds: ['drop'], perSeed: [1, 3] } }).faults.perSeed).toEqual([1, 1]);
  });

  it('durations take units', () => {
    const c = parseCampaign({ lateRecv: { delayNs: ['5us', '1ms'] }, duration: '50ms', faults: { delayNs: 700 } });
    expect(c.lateRecv.delayNs).toEqual([5000, 1_000_000]);
    expect(c.durationNs).toBe(50_000_000);
    expect(c.faults.delayNs).toEqual([700, 700]);
  });

  it('docs/faults.md documents every campaign key', () => {
    const text = readFileSync(new URL('../../docs/faults.md', import.meta.url), 'utf8');
    for (const [where, keys] of Object.entries(CAMPAIGN_KEYS)) for (const k of keys) expect(text, `${where}.${k}`).toContain(`\`${k}\``);
  });
});
