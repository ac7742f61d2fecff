/**
 * Piscina task entry for `rnic campaign`: one seed, or one scenario (a
 * shrinking candidate), run and judged in this worker thread. Thin by
 * design: src/campaign does the work.
 */
import '../src/boot.js';
import { runCampaignTask, type CampaignTask } from '../src/campaign/task.js';

export default function task(t: CampaignTask): Promise<unknown> {
  return runCampaignTask(t);
}
