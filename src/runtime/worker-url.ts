/** Where a compiled worker entry is (tests run the sources; workers need JavaScript). */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export function compiledWorker(name: string): URL {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.js')) return new URL(`../../workers/${name}.js`, import.meta.url);
  const built = new URL(`../../dist/workers/${name}.js`, import.meta.url);
  if (!existsSync(fileURLToPath(built))) throw new Error(`dist/workers/${name}.js is missing: run \`npm run build\` first`);
  return built;
}
