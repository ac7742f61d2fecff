/** What a campaign worker is asked to do, and the doing of it (the same code runs inline for --jobs 1). */
import type { Campaign } from './config.js';
import type { ScenarioJson } from './generator.js';
import { runJudged, runRecorded, runSeed, type RecordedRun, type SeedResult } from './run-seed.js';
import type { JudgedRun } from './executor.js';

export type CampaignTask =
  | { readonly kind: 'seed'; readonly campaign: Campaign; readonly seed: number }
  | { readonly kind: 'scenario'; readonly json: ScenarioJson; readonly source: string }
  | { readonly kind: 'record'; readonly json: ScenarioJson; readonly source: string };

export function runCampaignTask(t: CampaignTask): Promise<SeedResult | JudgedRun | RecordedRun> {
  switch (t.kind) {
    case 'seed':
      return runSeed(t.campaign, t.seed);
    case 'scenario':
      return runJudged(t.json, t.source);
    case 'record':
      return runRecorded(t.json, t.source);
  }
}
