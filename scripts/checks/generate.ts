/**
 * Checks generated from the zod schemas (scripts/checks/targets.ts lists them): each schema becomes JSON
 * Schema through zod's own z.toJSONSchema (output side), and Ajv's standalone code generation makes a
 * plain validator function of that, written to a generated module (`.js`, with a `.d.ts` typing each
 * check as a guard of its schema's output type). They are build output, not sources: `pnpm install`
 * (the root's postinstall) and `pnpm build` write them (`bun scripts/checks/generate.ts`), git ignores
 * them; checks.test.ts fails when one is stale, and holds every check to its schema.
 *
 * A check accepts only what its schema returns unchanged, so a caller may use the value it checked as the
 * parsed one and leave everything else to zod, which also words the error. That is true by construction
 * for the parts of zod that JSON Schema states exactly; anything else is refused here, at build time:
 * - refinements (`.check(fn)`, `refine`, `superRefine`) and transforms are absent from JSON Schema (zod
 *   drops the first silently), so a schema node carrying any check zod does not translate is refused;
 * - objects are taken on the output side: `z.object` and `z.strictObject` say `additionalProperties:
 *   false` (zod would strip or refuse an unknown key), `z.looseObject` keeps every key, as zod does,
 *   but one: zod's copy loses an own `__proto__` key (as JSON.parse makes it), which JSON Schema
 *   cannot say of zod, so the check refuses it (`propertyNames`);
 * - string lengths count UTF-16 units, as zod's do (Ajv's `unicode: false`), and patterns are compiled
 *   without flags, as zod's own formats are (Ajv's `unicodeRegExp: false`; zod emits a pattern's source
 *   only, so a flagged z.regex would lose its flags: the schemas use none, and checks.test.ts's
 *   mutations include case and non-BMP variants);
 * - a format is taken only where zod emits its own pattern for it and that pattern accepts nothing zod
 *   refuses: ipv4, cidrv4 and mac are checked by zod with that very pattern; for ipv6 and cidrv6 zod
 *   accepts more (it asks the URL parser: embedded IPv4, for one), so the check leaves those to zod;
 * - a coerced number is checked as the number it becomes; a value of that type coerces to itself.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv from 'ajv';
import standaloneCode from 'ajv/dist/standalone';
import * as z from 'zod/mini';
import { TARGETS, type Target } from './targets';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Formats whose pattern zod emits and whose pattern accepts nothing zod refuses (see above). */
const FORMATS = ['ipv4', 'ipv6', 'cidrv4', 'cidrv6', 'mac'] as const;

/** Schema kinds JSON Schema states exactly (the JSON Schema of each is zod's). */
const KINDS = new Set([
  'string',
  'number',
  'boolean',
  'null',
  'literal',
  'enum',
  'object',
  'array',
  'union',
  'optional',
  'nullable',
  'unknown',
  'never',
]);

/** Checks zod translates into JSON Schema keywords that mean the same (lengths, patterns, bounds, integers). */
const CHECKS = [
  z.core.$ZodCheckMinLength,
  z.core.$ZodCheckMaxLength,
  z.core.$ZodCheckLengthEquals,
  z.core.$ZodCheckRegex,
  z.core.$ZodCheckGreaterThan,
  z.core.$ZodCheckLessThan,
  z.core.$ZodCheckNumberFormat,
];

/** The name of a schema's check: `AllocationSchema` → `isAllocation`. */
export const checkName = (schemaName: string) => `is${schemaName.replace(/Schema$/, '')}`;

type Json = Record<string, unknown>;

/** Refuses a schema node whose JSON Schema would not state all of its rules (the override zod calls per node). */
function refuseUnrepresentable(where: string) {
  return ({ zodSchema, jsonSchema }: { zodSchema: unknown; jsonSchema: Json }) => {
    if (!(zodSchema instanceof z.ZodMiniType)) throw new Error(`${where}: not a zod/mini schema`);
    const { type, def } = zodSchema;
    if (!KINDS.has(type)) throw new Error(`${where}: a ${type} schema has no exact JSON Schema`);
    for (const check of def.checks ?? []) {
      if (!CHECKS.some((kind) => check instanceof kind)) throw new Error(`${where}: a refinement has no JSON Schema`);
    }
    if (jsonSchema.format !== undefined && jsonSchema.pattern === undefined) {
      throw new Error(`${where}: format ${String(jsonSchema.format)} comes without its pattern`);
    }
  };
}

/** The schemas of `target`, by name, from their modules. */
async function schemasOf(target: Target): Promise<Record<string, z.ZodMiniType>> {
  const out: Record<string, z.ZodMiniType> = {};
  for (const [module, names] of Object.entries(target.schemas)) {
    const exports: Record<string, unknown> = await import(join(root, dirname(target.out), `${module}.ts`));
    for (const name of names) {
      const schema = exports[name];
      if (!(schema instanceof z.ZodMiniType)) throw new Error(`${module}: ${name} is not a zod/mini schema`);
      out[name] = schema;
    }
  }
  return out;
}

/**
 * The JSON Schema of each of `schemas`, by check name, and of the schemas they share (zod's `reused:
 * 'ref'`), by their own names: given to Ajv as separate schemas, so a large shared one becomes one function.
 */
function jsonSchemasOf(schemas: Record<string, z.ZodMiniType>, where: string): Record<string, Json> {
  const registry = z.registry<{ id: string }>();
  for (const [name, schema] of Object.entries(schemas)) registry.add(schema, { id: checkName(name) });
  const { __shared, ...tops } = z.toJSONSchema(registry, {
    io: 'output',
    target: 'draft-07',
    unrepresentable: 'throw',
    reused: 'ref',
    uri: (id) => id,
    override: refuseUnrepresentable(where),
  }).schemas;
  // "__shared#/definitions/schema3" → "schema3": each shared definition is a schema of its own.
  const unshare = (s: unknown): Json =>
    withoutProtoKeys(JSON.parse(JSON.stringify(s).replaceAll('"__shared#/definitions/', '"')));
  const out: Record<string, Json> = {};
  for (const [id, def] of Object.entries(__shared?.definitions ?? {})) out[id] = unshare(def);
  for (const [id, { $schema: _, ...schema }] of Object.entries(tops)) out[id] = unshare(schema);
  return out;
}

/** `schema` with every object that keeps unknown keys refusing an own `__proto__` key (see above). */
function withoutProtoKeys(schema: Json): Json {
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v !== 'object' || v === null) return v;
    const out = Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    if (out.type === 'object' && out.additionalProperties !== false) {
      out.propertyNames = { not: { const: '__proto__' } };
    }
    return out;
  };
  return walk(schema) as Json;
}

/**
 * The checks of `schemas` (by schema name) as one ES module exporting each as `checkName(name)`. Throws
 * for a schema whose JSON Schema would not state every rule zod applies (see above); `where` names it.
 */
export function compileChecks(schemas: Record<string, z.ZodMiniType>, where: string): string {
  const warnings: string[] = [];
  const ajv = new Ajv({
    code: { source: true, esm: true, lines: true, optimize: true },
    strict: true,
    allowUnionTypes: true,
    // A shared schema of fewer than 10 keywords (a name, an address, an object of a few fields) is
    // inlined where it is used: a call to it costs an options object and a path string per value,
    // which showed as ~20 µs more per 6 rows in ferryd's sparse regime than inlined code.
    inlineRefs: 10,
    messages: false,
    // The deprecated option is the one that counts string lengths in UTF-16 units, as zod does.
    unicode: false,
    unicodeRegExp: false,
    formats: Object.fromEntries(FORMATS.map((f) => [f, true])),
    logger: {
      log: () => undefined,
      warn: (message: string) => {
        if (!message.startsWith('DEPRECATED: option unicode.')) warnings.push(message);
      },
      error: (message: string) => warnings.push(message),
    },
  });
  for (const [id, schema] of Object.entries(jsonSchemasOf(schemas, where))) ajv.addSchema({ ...schema, $id: id });
  const checks = Object.keys(schemas).map(checkName);
  const js = standaloneCode(ajv, Object.fromEntries(checks.map((c) => [c, c])));
  if (warnings.length > 0) throw new Error(`${where}: ${warnings.join('; ')}`);
  // Nothing to bundle with it: the checks need none of Ajv's runtime helpers.
  if (/\brequire\(|\bimport\b/.test(js)) throw new Error(`${where}: the generated code imports a helper`);
  return js;
}

const header = (target: Target) =>
  `// Generated by scripts/checks/generate.ts (pnpm build) from the zod schemas of ${Object.keys(target.schemas)
    .map((m) => `${m}.ts`)
    .join(', ')}; do not edit.\n`;

/** The generated module of `target`: its JavaScript and its declarations. */
export async function generateChecks(target: Target): Promise<{ js: string; dts: string }> {
  const js = compileChecks(await schemasOf(target), target.out);
  const imports = Object.entries(target.schemas).map(
    ([module, names]) => `import type { ${names.join(', ')} } from '${module}';`,
  );
  const guards = Object.values(target.schemas)
    .flat()
    .map(
      (name) =>
        `/** True when \`value\` is what ${name} returns for it, unchanged; false: let the schema decide. */\n` +
        `export declare function ${checkName(name)}(value: unknown): value is z.output<typeof ${name}>;`,
    );
  return {
    js: `${header(target)}${js}\n`,
    dts: `${header(target)}import type * as z from 'zod/mini';\n${imports.join('\n')}\n\n${guards.join('\n')}\n`,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const target of TARGETS) {
    const { js, dts } = await generateChecks(target);
    for (const [file, text] of [
      [`${target.out}.js`, js],
      [`${target.out}.d.ts`, dts],
    ] as const) {
      const path = join(root, file);
      // Rewritten only when it changes, as a source an editor or a watcher may have open.
      if (!existsSync(path) || readFileSync(path, 'utf8') !== text) writeFileSync(path, text);
    }
    console.log(`${target.out}.js: ${js.length} bytes`);
  }
}
