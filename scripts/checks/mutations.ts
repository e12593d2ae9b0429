/**
 * Mutations of a valid document, for holding a generated check to its schema: every one-field variant
 * (`variants`), and random sequences of edits anywhere in the document (`editsArb`, for fast-check).
 */
import fc from 'fast-check';

/** Values a field might wrongly (or rightly) hold: the edges of the rules the schemas state. */
export const VALUES: unknown[] = [
  undefined,
  null,
  '',
  'ferry',
  'eth0',
  'x'.repeat(15),
  'x'.repeat(16),
  'x'.repeat(253),
  'x'.repeat(256),
  '😀'.repeat(128),
  'bad name!',
  'é',
  '.',
  '..',
  'a/b',
  'a:b',
  'a\nb',
  'a\u0000b',
  '/abs/path',
  'rel/path',
  0,
  1,
  -1,
  1.5,
  68,
  65_536,
  2 ** 53,
  2 ** 60,
  4,
  6,
  true,
  false,
  {},
  [],
  [{}],
  'InfraNIC',
  'DelegatedNIC',
  'BackendNIC',
  'committed',
  'allocated',
  'gone',
  'debug',
  '10.244.0.5',
  '10.244.0.5/32',
  '10.244.0.5/33',
  '10.244.0.5/03',
  '010.244.0.5/32',
  '256.1.1.1/32',
  '10.244.0.5/32/1',
  'fd00::5',
  'fd00::5/128',
  'fd00::5/129',
  'FD00::5/128',
  'fd00:::5/128',
  '1:2:3:4:5:6:7:8:9/64',
  '::ffff:10.0.0.1',
  '::ffff:10.0.0.1/128',
  '::/0',
  '::',
  '1:2:3:4:5:6:7::/64',
  '12345::1/64',
  'fe80::1',
  'fe80::g',
  'fe80::1%eth0',
  'ee:ee:ee:ee:ee:ee',
  'EE:EE:EE:EE:EE:EE',
  'Ee:ee:ee:ee:ee:ee',
  'ee:ee:ee:ee:ee',
  'ee-ee-ee-ee-ee-ee',
  // Numbers as a query string carries them.
  '5',
  '05',
  '1e3',
  '0x10',
  ' 5',
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
  if (!isObject(doc)) return;
  yield { ...doc, unknownKey: 1 };
  for (const key of Object.keys(doc)) {
    const { [key]: _, ...without } = doc;
    yield without;
    for (const v of VALUES) yield { ...doc, [key]: v };
    for (const v of variants(doc[key])) yield { ...doc, [key]: v };
  }
}

type Edit =
  | { kind: 'set'; value: unknown }
  | { kind: 'delete' }
  | { kind: 'add'; key: string; value: unknown }
  | { kind: 'string'; how: (s: string) => string }
  | { kind: 'number'; delta: number }
  | { kind: 'wrap' };

/** Ways to bend a string past a pattern or a length: case, non-ASCII and non-BMP text, separators, size. */
const STRING_EDITS: ((s: string) => string)[] = [
  (s) => s.toUpperCase(),
  (s) => s.toLowerCase(),
  (s) => `${s}😀`,
  (s) => `é${s}`,
  (s) => `${s}\n`,
  (s) => ` ${s}`,
  (s) => `${s}:`,
  (s) => `${s}/`,
  (s) => `${s}.0`,
  (s) => `${s}0`,
  (s) => s.slice(1),
  (s) => s.slice(0, -1),
  (s) => s.repeat(20),
  (s) => s.replace(/[0-9]/, 'g'),
  (s) => s.replace(':', '::'),
];

const editArb: fc.Arbitrary<Edit> = fc.oneof(
  fc.constantFrom(...VALUES).map((value): Edit => ({ kind: 'set', value })),
  fc.jsonValue({ maxDepth: 2 }).map((value): Edit => ({ kind: 'set', value })),
  fc.constant<Edit>({ kind: 'delete' }),
  fc
    .record({
      key: fc.constantFrom('unknownKey', '__proto__', 'constructor', 'toString', 'ifName'),
      value: fc.jsonValue({ maxDepth: 1 }),
    })
    .map(({ key, value }): Edit => ({ kind: 'add', key, value })),
  fc.constantFrom(...STRING_EDITS).map((how): Edit => ({ kind: 'string', how })),
  fc.constantFrom(1, -1, 0.5, -0.5, 2 ** 53, -(2 ** 53), 1e308).map((delta): Edit => ({ kind: 'number', delta })),
  fc.constant<Edit>({ kind: 'wrap' }),
);

/** One to three edits, each at a position picked among every value of the document (the root included). */
export const editsArb = fc.array(fc.record({ at: fc.nat(), edit: editArb }), { minLength: 1, maxLength: 3 });

/** `doc` with `edits` applied in turn, as JSON would carry it (a copy; `doc` is left as it is). */
export function applyEdits(doc: unknown, edits: readonly { at: number; edit: Edit }[]): unknown {
  let out = structuredClone(doc);
  for (const { at, edit } of edits) {
    const places = placesOf(out);
    const place = places[at % places.length];
    if (!place) continue;
    const value = place.get();
    const next = applyEdit(value, edit);
    if (next === DELETE) place.remove();
    else if (place.isRoot) out = next;
    else place.set(next);
  }
  // Text, as the wire carries it: an own "__proto__" key stays an own key, undefined is dropped.
  return JSON.parse(JSON.stringify(out) ?? 'null');
}

const DELETE = Symbol('delete');

function applyEdit(value: unknown, edit: Edit): unknown {
  switch (edit.kind) {
    // A copy: fast-check hands every run the same VALUES object, and a later edit of the same run may land
    // inside what this one put in; edited in place, the constant would change for every run after it (one
    // seed in a thousand made an array hold itself, and every check after it failed).
    case 'set':
      return structuredClone(edit.value);
    case 'delete':
      return DELETE;
    case 'add':
      if (!isObject(value)) return value;
      // An own property even for "__proto__", as JSON.parse makes it.
      return Object.defineProperty({ ...value }, edit.key, {
        value: structuredClone(edit.value),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    case 'string':
      return typeof value === 'string' ? edit.how(value) : value;
    case 'number':
      return typeof value === 'number' ? value + edit.delta : value;
    case 'wrap':
      return [value];
  }
}

interface Place {
  isRoot: boolean;
  get(): unknown;
  set(v: unknown): void;
  remove(): void;
}

function placesOf(doc: unknown): Place[] {
  const out: Place[] = [{ isRoot: true, get: () => doc, set: () => undefined, remove: () => undefined }];
  const walk = (v: unknown) => {
    if (Array.isArray(v)) {
      v.forEach((item, i) => {
        out.push({ isRoot: false, get: () => v[i], set: (x) => (v[i] = x), remove: () => v.splice(i, 1) });
        walk(item);
      });
    } else if (isObject(v)) {
      for (const key of Object.keys(v)) {
        out.push({
          isRoot: false,
          get: () => v[key],
          set: (x) => Object.defineProperty(v, key, { value: x, enumerable: true, writable: true, configurable: true }),
          remove: () => delete v[key],
        });
        walk(v[key]);
      }
    }
  };
  walk(doc);
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
