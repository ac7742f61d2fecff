/**
 * A user's clone has only the repository: no tracked file may name a place
 * outside it (issue 8: tests once read the real capture from the steering
 * tree beside the clone, and skipped silently where it was absent).
 * Fixtures live in test/fixtures/.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');

// The two forbidden prefixes, assembled so that this file does not contain them itself.
const OUTSIDE = ['/wor' + 'k/', String.raw`\.\./sha` + 'red'].join('|');

it('no tracked file in src, test, bench, examples, workers, hw-tests, docs or README.md names a path outside the repository', () => {
  const r = spawnSync('git', ['grep', '-nE', OUTSIDE, '--', 'src', 'test', 'bench', 'examples', 'workers', 'hw-tests', 'docs', 'README.md'], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  // git grep: 1 = no match, 0 = matches (listed), anything else = git failed.
  expect(r.status === 0 ? r.stdout : '', 'these lines name a path outside the repository').toBe('');
  expect(r.status, r.stderr).toBe(1);
});
