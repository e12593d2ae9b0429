import { expect, test } from 'vitest';
import * as z from 'zod/mini';
import { CniError, Code } from './errors';
import { parseAs } from './parse';

const Conf = z.strictObject({
  mtu: z.optional(z.number().check(z.minimum(68))),
  level: z.optional(z.enum(['debug', 'info'])),
  path: z.optional(z.string().check(z.regex(/^\//, { message: 'must be an absolute path' }))),
});

const messageOf = (input: unknown) => {
  try {
    parseAs(Conf, input, Code.InvalidConfig, 'config');
  } catch (err) {
    expect(err).toBeInstanceOf(CniError);
    return (err as CniError).message;
  }
  throw new Error('parsed');
};

const cases = [
  [{ mtu: 67 }, 'config: mtu: must be at least 68'],
  [{ mtu: '1500' }, 'config: mtu: expected number'],
  [{ level: 'loud' }, 'config: level: must be one of "debug", "info"'],
  [{ extra: 1 }, 'config: (root): unknown field "extra"'],
  [{ path: 'relative' }, 'config: path: must be an absolute path'],
] as const;

// The shim has no zod locale, ferryd has zod's English one: the wording is Ferry's in both, a schema's own
// message kept. (The unit files share a module cache, so the test sets the locale it means and puts back
// what it found.)
async function withLocale(locale: 'none' | 'en', run: () => void): Promise<void> {
  const before = z.config().localeError;
  z.config({ localeError: locale === 'en' ? (await import('zod/locales')).en().localeError : undefined });
  try {
    run();
  } finally {
    z.config({ localeError: before });
  }
}

test.each(cases)('without zod’s locale: %j', async (input, message) => {
  await withLocale('none', () => expect(messageOf(input)).toBe(message));
});

test.each(cases)('with zod’s English locale loaded: %j', async (input, message) => {
  await withLocale('en', () => expect(messageOf(input)).toBe(message));
});
