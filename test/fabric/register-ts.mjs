/** `--import ./register-ts.mjs`: run TypeScript sources in workers and child processes (see ts-hooks.mjs). */
import { register } from 'node:module';

register('./ts-hooks.mjs', import.meta.url);
