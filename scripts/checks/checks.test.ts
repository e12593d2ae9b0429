/**
 * The generated checks are what the schemas say: each generated module is what generate.ts makes of the
 * current schemas (`pnpm build` rewrites it; one that is not fails, and a test shows a stale one does), and each check accepts only what its schema returns
 * unchanged, over typical documents and many mutations of them (every one-field variant, and random
 * edits by fast-check). The other way round is not required: what a check refuses, zod decides.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import * as z from 'zod/mini';
import { checkName, compileChecks, generateChecks } from './generate';
import { applyEdits, editsArb, variants } from './mutations';
import { SAMPLES } from './samples';
import { TARGETS, type Target } from './targets';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * The files of `target`'s generated module whose text is not what its schemas generate now: a module
 * written before a schema changed (`pnpm install` and `pnpm build` write them). Nothing is written here
 * (a snapshot assertion would rewrite them under --update).
 */
async function staleFilesOf(target: Target): Promise<string[]> {
  const { js, dts } = await generateChecks(target);
  const files = [
    [`${target.out}.js`, js],
    [`${target.out}.d.ts`, dts],
  ] as const;
  return files.flatMap(([file, text]) => {
    const path = join(root, file);
    return existsSync(path) && readFileSync(path, 'utf8') === text ? [] : [file];
  });
}

test('a module generated before its schema changed is stale: the comparison follows the schemas, not the module', async (t) => {
  // Two copies of @ferry/net's schemas beside the real ones (so zod resolves), one with a field changed.
  const dir = mkdtempSync(join(root, 'packages/net/src/.stale-'));
  t.onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const source = readFileSync(join(root, 'packages/net/src/schemas.ts'), 'utf8');
  const changed = source.replace('  ifname: z.string(),\n', '  ifname: z.optional(z.string()),\n');
  expect(changed).not.toBe(source);
  const names = ['IpLinkListSchema'];
  const targetIn = (sub: string, text: string): Target => {
    mkdirSync(join(dir, sub));
    writeFileSync(join(dir, sub, 'schemas.ts'), text);
    return { out: join(relative(root, dir), sub, 'checks'), schemas: { './schemas': names } };
  };
  const before = targetIn('before', changed);
  const now = targetIn('now', source);
  const old = await generateChecks(before);
  writeFileSync(join(root, `${now.out}.js`), old.js);
  writeFileSync(join(root, `${now.out}.d.ts`), old.dts);
  expect(await staleFilesOf(now)).toEqual([`${now.out}.js`]);
  const fresh = await generateChecks(now);
  writeFileSync(join(root, `${now.out}.js`), fresh.js);
  expect(await staleFilesOf(now)).toEqual([]);
});

test('an edit never changes the value it puts in: a later edit of the run may land inside it', () => {
  // fast-check hands every run the same VALUES objects; one edited in place stays edited for every run
  // after it (here the second edit would make the shared array hold itself).
  const shared = [{}];
  const edits = [
    { at: 1, edit: { kind: 'set', value: shared } },
    { at: 2, edit: { kind: 'set', value: shared } },
  ] as const;
  expect(applyEdits({ a: 1 }, edits)).toEqual({ a: [[{}]] });
  expect(shared).toEqual([{}]);
});

describe.each(TARGETS)('$out', (target) => {
  test('the generated module is what the current schemas generate (pnpm build rewrites it)', async () => {
    expect(await staleFilesOf(target), 'stale generated checks: run pnpm build').toEqual([]);
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
