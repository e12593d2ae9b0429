/**
 * A hand check held to its zod schema (the schema is the oracle): over every one-field variant of some
 * typical documents, whatever the hand check accepts the schema accepts, with the same result. Used by
 * the shim (ferryd's answers) and by ferryd (its hot requests, its rows).
 */
import { expect, test } from 'vitest';
import * as z from 'zod/mini';

/** Values a field might wrongly (or rightly) hold. */
const VALUES: unknown[] = [
  undefined,
  null,
  '',
  'ferry',
  'eth0',
  'x'.repeat(300),
  'bad name!',
  0,
  1,
  -1,
  1.5,
  2 ** 60,
  4,
  6,
  true,
  {},
  [],
  [{}],
  'InfraNIC',
  'DelegatedNIC',
  'BackendNIC',
  'committed',
  'allocated',
  'gone',
  '10.244.0.5',
  '10.244.0.5/32',
  '10.244.0.5/33',
  '10.244.0.5/03',
  '256.1.1.1/32',
  '10.244.0.5/32/1',
  'fd00::5',
  'fd00::5/128',
  'fd00::5/129',
  'FD00::5/128',
  'fd00:::5/128',
  '1:2:3:4:5:6:7:8:9/64',
  '::ffff:10.0.0.1/128',
  '::/0',
  '1:2:3:4:5:6:7::/64',
  '1:2:3:4:5:6:7:8/64',
  '12345::1/64',
  'fe80::1',
  'fe80::g',
  'ee:ee:ee:ee:ee:ee',
  'EE:EE:EE:EE:EE:EE',
  'ee:ee:ee:ee:ee',
  'ee-ee-ee-ee-ee-ee',
  'Ee:ee:ee:ee:ee:ee',
  // Numbers as a query string carries them.
  '5',
  '05',
  '1e3',
  '0x10',
  ' 5',
  '-5',
];

/** Every variant of `doc` with one value replaced, one key removed or one unknown key added, at any depth. */
export function* variants(doc: unknown): Generator<unknown> {
  if (Array.isArray(doc)) {
    for (const [i, item] of doc.entries()) {
      for (const v of variants(item)) yield doc.map((x, j) => (j === i ? v : x));
      for (const v of VALUES) yield doc.map((x, j) => (j === i ? v : x));
    }
    return;
  }
  if (typeof doc !== 'object' || doc === null) return;
  const o = doc as Record<string, unknown>;
  yield { ...o, unknownKey: 1 };
  for (const key of Object.keys(o)) {
    const { [key]: _, ...without } = o;
    yield without;
    for (const v of VALUES) yield { ...o, [key]: v };
    for (const v of variants(o[key])) yield { ...o, [key]: v };
  }
}

export function holdToSchema<T>(
  name: string,
  docs: unknown[],
  accept: (d: unknown) => T | undefined,
  schema: z.core.$ZodType<T>,
) {
  test(`${name}: whatever the hand check accepts, the schema accepts with the same result`, () => {
    let accepted = 0;
    let refused = 0;
    for (const doc of docs) {
      expect(accept(doc), `${name} typical document`).toEqual(z.parse(schema, doc));
      for (const v of variants(doc)) {
        const variant = JSON.parse(JSON.stringify(v ?? null));
        const fast = accept(variant);
        if (fast === undefined) {
          refused++;
          continue;
        }
        accepted++;
        const oracle = z.safeParse(schema, variant);
        expect(oracle.success, JSON.stringify(variant)).toBe(true);
        expect(fast).toEqual(oracle.data);
      }
    }
    expect(accepted).toBeGreaterThan(20);
    expect(refused).toBeGreaterThan(100);
  });
}
