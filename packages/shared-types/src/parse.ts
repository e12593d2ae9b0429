import type * as z from 'zod/mini';
import { CniError, type Code } from './errors';

/**
 * JSON.parse for text that may be anything (an answer of a server, a file someone else wrote): the value,
 * or undefined when there is no text or it is not JSON. The schema the value meets next says what is wrong.
 */
export function parseJsonOrUndefined(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Describes a zod issue path as `a.b[0].c`, or `(root)` for the value itself. */
export function describePath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out ? `.${String(key)}` : String(key);
  }
  return out || '(root)';
}

/** The parts of a zod issue (or of fastify's copy of one) that say what was wrong. */
export interface IssueLike {
  code?: string;
  message?: string;
  expected?: unknown;
  minimum?: unknown;
  maximum?: unknown;
  origin?: unknown;
  format?: unknown;
  keys?: unknown;
  values?: unknown;
}

const GENERIC = 'Invalid input';

type LocaleError = NonNullable<z.core.$ZodConfig['localeError']>;

/**
 * The locale zod would word an issue with, if one is loaded. Read from the global where zod keeps its
 * config (zod/v4/core/core.js) rather than through `config()`: importing that puts zod's core utilities on
 * the shim's start-up path, ~3 % of a VERSION exec, for a locale the shim never loads. parse.test.ts loads
 * zod's English locale through `config()` and fails if the two part ways.
 */
function loadedLocaleError(): LocaleError | undefined {
  return (globalThis as { __zod_globalConfig?: { localeError?: LocaleError } }).__zod_globalConfig?.localeError;
}

/**
 * zod's own wording rather than a schema's: "Invalid input" where no locale is loaded (zod/mini leaves it
 * out, building it would cost every shim start), its locale's message where one is (ferryd has zod's
 * English one through fastify-type-provider-zod).
 */
function isZodsOwnMessage(issue: IssueLike): boolean {
  // The locale's "Invalid input: expected number, received string" names the input, which a reported
  // issue no longer carries: it cannot be worded again below to compare.
  if (!issue.message || issue.message === GENERIC || issue.message.startsWith(`${GENERIC}:`)) return true;
  const localeError = loadedLocaleError();
  if (!localeError) return false;
  try {
    const own = localeError(issue as Parameters<LocaleError>[0]);
    return (typeof own === 'string' ? own : own?.message) === issue.message;
  } catch {
    return false;
  }
}

/**
 * Says what was wrong in plain words: a schema's own message, else Ferry's wording from the issue's
 * fields, the same in the shim and in ferryd whether or not zod's locale is loaded.
 */
export function describeIssue(issue: IssueLike | undefined): string {
  if (!issue) return 'invalid';
  if (issue.message && !isZodsOwnMessage(issue)) return issue.message;
  const list = (v: unknown) => (Array.isArray(v) ? v.map((x) => JSON.stringify(x)).join(', ') : String(v));
  const size = issue.origin === 'string' ? ' characters' : issue.origin === 'array' ? ' items' : '';
  switch (issue.code) {
    case 'invalid_type':
      return issue.expected === 'never' ? 'unexpected field' : `expected ${String(issue.expected)}`;
    case 'too_small':
      return `must be at least ${String(issue.minimum)}${size}`;
    case 'too_big':
      return `must be at most ${String(issue.maximum)}${size}`;
    case 'invalid_format':
      return `not a valid ${String(issue.format)}`;
    case 'unrecognized_keys':
      return `unknown field ${list(issue.keys)}`;
    case 'invalid_value':
      return `must be one of ${list(issue.values)}`;
    case 'invalid_union':
      return 'matches none of the accepted forms';
    default:
      return issue.message ?? 'invalid';
  }
}

/** `field.path: what was wrong` for the first issue of a failed parse. */
export function describeFirstIssue(error: {
  issues: readonly (IssueLike & { path: readonly PropertyKey[] })[];
}): string {
  const issue = error.issues[0];
  return `${issue ? describePath(issue.path) : '(root)'}: ${describeIssue(issue)}`;
}

/**
 * Parses `input` with `schema`, or throws a CniError with `code` whose message names `what`, the first
 * offending field and the problem, e.g. `invalid network config: delegatedNICs.count: must be at least 1`.
 */
export function parseAs<T>(schema: z.ZodMiniType<T>, input: unknown, code: Code, what: string): T {
  const r = schema.safeParse(input);
  if (r.success) return r.data;
  throw new CniError(code, `${what}: ${describeFirstIssue(r.error)}`);
}

/**
 * Reads `text` as JSON of `schema`'s shape: the value, or the problem (`not JSON: …`, or the first
 * offending field and what is wrong with it), for the caller to say whose text it was.
 */
export function readJsonAs<T>(schema: z.ZodMiniType<T>, text: string): { value: T } | { problem: string } {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return { problem: `not JSON: ${(err as Error).message}` };
  }
  const r = schema.safeParse(json);
  return r.success ? { value: r.data } : { problem: describeFirstIssue(r.error) };
}
