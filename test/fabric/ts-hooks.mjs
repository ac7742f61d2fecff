/**
 * Node module hooks that let a worker thread or a child process (which
 * vitest does not transform) import the project's TypeScript sources:
 * a relative `./x.js` that does not exist resolves to `./x.ts`, and `.ts`
 * files are transpiled (types stripped, const enums kept as objects) with
 * the project's own `typescript`. Registered by `register-ts.mjs`.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (err) {
    if (err?.code === 'ERR_MODULE_NOT_FOUND' && specifier.endsWith('.js') && /^(\.|\/|file:)/.test(specifier)) {
      return next(`${specifier.slice(0, -3)}.ts`, context);
    }
    throw err;
  }
}

export async function load(url, context, next) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return next(url, context);
  const file = fileURLToPath(url);
  const out = ts.transpileModule(await readFile(file, 'utf8'), {
    fileName: file,
    compilerOptions: {
      module: ts.ModuleKind.ESNext,
      target: ts.ScriptTarget.ES2022,
      // Another file's `const enum` member is read as a property at run time.
      preserveConstEnums: true,
      inlineSourceMap: true,
    },
  });
  return { format: 'module', source: out.outputText, shortCircuit: true };
}
