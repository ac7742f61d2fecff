/**
 * Building blocks for the zod schemas of the files a user writes (the model
 * configuration, scenario files): each check says what was wrong in our
 * words, and `firstIssue` turns zod's first issue into the one line every
 * configuration error is, `<source><path>: <what was wrong>`. The schemas
 * built from these are also what `z.toJSONSchema` publishes (schemas/) and
 * what the option tables in docs/ are generated from, so a field is
 * described once: its type, range, default and one-line description.
 *
 * Metadata beyond JSON Schema's own: `defaultText`, the default as the docs
 * say it when it is not one literal value ("the file name", "rxe-like").
 */
import { z } from 'zod';
import type { ParamSchema } from './params.js';

/** A value as a message shows it. */
export function shown(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (typeof v === 'bigint') return `${v}n`;
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

/** `.devices[0].ports[1].mtu` */
export function formatPath(path: readonly PropertyKey[]): string {
  return path.map((k) => (typeof k === 'number' ? `[${k}]` : `.${String(k)}`)).join('');
}

/**
 * The first issue of a failed parse as one line. An unknown key is named in
 * the path (`.devices[0].colour: unknown setting (known: …)`).
 */
export function firstIssue(error: z.ZodError, source: string): string {
  const iss = error.issues[0];
  if (!iss) return `${source}: invalid`;
  const path = iss.code === 'unrecognized_keys' ? [...iss.path, iss.keys[0]!] : iss.path;
  return `${source}${formatPath(path)}: ${iss.message}`;
}

/** An object that refuses keys it does not declare, listing the ones it knows. */
export function strictObject<S extends z.ZodRawShape>(shape: S, unknownKey = `unknown setting (known: ${Object.keys(shape).join(', ')})`) {
  return z.strictObject(shape, {
    error: (iss) => (iss.code === 'unrecognized_keys' ? unknownKey : `expected an object, got ${shown(iss.input)}`),
  });
}

/** An integer in [min, max]. */
export function int(min: number, max: number) {
  const error = (iss: { code: string; input?: unknown }) =>
    iss.code === 'too_small' || iss.code === 'too_big' ? `${shown(iss.input)} is outside [${min}, ${max}]` : `expected an integer, got ${shown(iss.input)}`;
  return z.int({ error }).min(min, { error }).max(max, { error });
}

/** A string of at least one character. */
export function text() {
  const error = (iss: { input?: unknown }) => `expected a non-empty string, got ${shown(iss.input)}`;
  return z.string({ error }).min(1, { error });
}

/** true or false. */
export function bool() {
  return z.boolean({ error: (iss) => `expected true or false, got ${shown(iss.input)}` });
}

/** A list of `item`. */
export function list<T extends z.ZodType>(item: T, what = 'a list') {
  return z.array(item, { error: (iss) => `expected ${what}, got ${shown(iss.input)}` });
}

/** One of a few literal values, named in the message as `choices` says them. */
export function oneOf<const T extends readonly [string | number, ...(string | number)[]]>(values: T, choices: string) {
  return z.literal(values, { error: (iss) => `expected ${choices}, got ${shown(iss.input)}` });
}

/**
 * A value in a unit (a duration, a rate, a size) that a ParamSpec-style
 * parser checks and converts: `parse(raw, path)` throws an error whose
 * message starts with `path: `; that start is replaced by zod's path.
 */
export function parsed<T>(input: z.ZodType, parse: (raw: unknown, path: string) => T) {
  const MARK = '\u0000';
  return input.transform((raw, ctx): T => {
    try {
      return parse(raw, MARK);
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      ctx.issues.push({ code: 'custom', message: msg.startsWith(`${MARK}: `) ? msg.slice(MARK.length + 2) : msg, input: raw });
      return z.NEVER;
    }
  });
}

/** A number or a text with a unit ('10us', '100Gbps', '64MiB'). */
export const numberOrText = () => z.union([z.number(), z.string()], { error: (iss) => `expected a number or a text with a unit, got ${shown(iss.input)}` });

/**
 * The settings of a ParamSchema (src/params/params.ts) as an object schema
 * for the published JSON Schema and the docs: every key with its
 * description and default, unknown keys refused. The values are checked by
 * the ParamSchema itself (resolveParams), which converts their units.
 */
export function paramsObject(schema: ParamSchema) {
  const shape: Record<string, z.ZodOptional<z.ZodUnknown>> = {};
  for (const [k, spec] of Object.entries(schema)) {
    shape[k] = z
      .unknown()
      .optional()
      .meta({ description: `${spec.doc} (${spec.unit})`, default: spec.default as never });
  }
  return strictObject(shape, 'unknown parameter');
}

/** `"$schema"`: the JSON Schema a file follows, for an editor to complete and check it; ignored by the model. */
export const schemaRef = (file: string) =>
  z
    .string()
    .optional()
    .meta({ description: `the JSON Schema the file follows, for an editor (e.g. \`"./node_modules/rnic-model/schemas/${file}"\`); ignored`, defaultText: '' });
