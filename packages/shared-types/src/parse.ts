import type * as z from 'zod/mini';
import { CniError, type Code } from './errors';

/** Describes a zod issue path as `a.b[0].c`, or `(root)` for the value itself. */
export function describePath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out ? `.${String(key)}` : String(key);
  }
  return out || '(root)';
}

/**
 * Parses `input` with `schema`, or throws a CniError with `code` whose message names `what` and the
 * first offending field, e.g. `invalid network config: delegatedNICs.count: expected int`.
 */
export function parseAs<T>(schema: z.ZodMiniType<T>, input: unknown, code: Code, what: string): T {
  const r = schema.safeParse(input);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const where = issue ? describePath(issue.path) : '(root)';
  throw new CniError(code, `${what}: ${where}: ${issue?.message ?? 'invalid'}`);
}
