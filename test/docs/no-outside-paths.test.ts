/**
 * A user's clone has only the repository: no tracked file may name a place
 * outside it (issue 8: tests read a capture from ../shared/captures/ or
 * /work/shared and skipped silently elsewhere). Fixtures live in
 * test/fixtures/.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');

it('no tracked file in src, test, bench, examples, workers, hw-tests, docs or README.md names /work/ or ../shared', () => {
  const r = spawnSync('git', ['grep', '-nE', String.raw`/work/|\.\./shared`, '--', 'src', 'test', 'bench', 'examples', 'workers', 'hw-tests', 'docs', 'README.md', ':!test/docs/no-outside-paths.test.ts'], { cwd: ROOT, encoding: 'utf8' });
  // git grep: 1 = no match, 0 = matches (listed), anything else = git failed.
  expect(r.status === 0 ? r.stdout : '', 'these lines name a path outside the repository').toBe('');
  expect(r.status, r.stderr).toBe(1);
});
