/**
 * The generated checks are what the schemas say: each generated module is what generate.ts makes of the
 * current schemas (`pnpm build` rewrites it), and each check accepts only what its schema returns
 * unchanged, over typical documents and many mutations of them (every one-field variant, and random
 * edits by fast-check). The other way round is not required: what a check refuses, zod decides.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import * as z from 'zod/mini';
import { checkName, compileChecks, generateChecks } from './generate';
import { applyEdits, editsArb, variants } from './mutations';
import { SAMPLES } from './samples';
import { TARGETS } from './targets';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

describe.each(TARGETS)('$out', (target) => {
  test('the generated module is what the current schemas generate (pnpm build rewrites it)', async () => {
    const { js, dts } = await generateChecks(target);
    await expect(js).toMatchFileSnapshot(join(root, `${target.out}.js`));
    await expect(dts).toMatchFileSnapshot(join(root, `${target.out}.d.ts`));
  });

  const schemas = Object.entries(target.schemas).flatMap(([module, names]) =>
    names.map((name) => ({ module, name, check: checkName(name) })),
  );
  test.each(schemas)('$check accepts only what $name returns, unchanged', async ({ module, name, check }) => {
    const schema: z.ZodMiniType = (await import(join(root, dirname(target.out), `${module}.ts`)))[name];
    const isValid: (v: unknown) => boolean = (await import(join(root, `${target.out}.js`)))[check];
    const samples = SAMPLES[check] ?? [];
    expect(samples.length, `typical documents of ${check} in samples.ts`).toBeGreaterThan(0);
    for (const doc of samples) {
      // The hot path's documents take the check, or the hot path would pay for zod.
      expect(isValid(doc), JSON.stringify(doc)).toBe(true);
      expect(z.parse(schema, doc)).toStrictEqual(doc);
    }
    const counts = { accepted: 0, refused: 0 };
    const judge = (doc: unknown) => {
      if (!isValid(doc)) {
        counts.refused++;
        return;
      }
      counts.accepted++;
      const r = z.safeParse(schema, doc);
      expect(r.error?.issues, JSON.stringify(doc)).toBeUndefined();
      expect(r.data, JSON.stringify(doc)).toStrictEqual(doc);
    };
    for (const doc of samples) for (const v of variants(doc)) judge(JSON.parse(JSON.stringify(v ?? null)));
    fc.assert(
      fc.property(fc.constantFrom(...samples), editsArb, (doc, edits) => judge(applyEdits(doc, edits))),
      { numRuns: 1000 },
    );
    // Both ways are exercised: the mutations neither all pass nor all fail.
    expect(counts.accepted).toBeGreaterThan(20);
    expect(counts.refused).toBeGreaterThan(20);
  });
});

describe('a schema whose JSON Schema would not state every rule gets no check', () => {
  test.each([
    ['a refinement', z.object({ a: z.string().check(z.refine((v) => v.length > 2)) }), /refinement/],
    ['a superRefine', z.string().check(z.superRefine(() => undefined)), /refinement/],
    ['an overwrite (trim)', z.string().check(z.trim()), /refinement/],
    [
      'a transform',
      z.pipe(
        z.string(),
        z.transform((v) => v.length),
      ),
      /Transforms/,
    ],
    ['a default', z.object({ a: z._default(z.string(), 'x') }), /default/],
    ['a format zod checks more closely than its pattern', z.email(), /unknown format "email"/],
    ['a format without a pattern', z.url(), /without its pattern/],
    ['a classic zod schema', undefined, /not a zod\/mini schema/],
  ])('%s', async (_, schema, refusal) => {
    const classic = (await import('zod')).string();
    expect(() => compileChecks({ ASchema: (schema ?? classic) as z.ZodMiniType }, 'test')).toThrow(refusal);
  });
});
