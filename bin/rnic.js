#!/usr/bin/env node
// The `rnic` command. It runs the build that `npm install` made (dist/) and
// never builds: a build from here would race with another `rnic` starting
// at the same moment. See scripts/build-once.mjs.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const main = new URL('../dist/src/cli/main.js', import.meta.url);
if (!existsSync(main)) {
  const dir = fileURLToPath(new URL('..', import.meta.url));
  process.stderr.write(`rnic: the package is not built: run \`npm install\` (or \`npm run build\`) in ${dir}\n`);
  process.exit(1);
}
await import(main.href);
