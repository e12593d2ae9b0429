import { expect, test } from 'vitest';
import * as z from 'zod/mini';
import { serializerCompilerOf } from './serializer';

const compile = (schema: z.ZodMiniType) =>
  serializerCompilerOf(true)({ schema, method: 'GET', url: '/x', httpStatus: '200' });

test("the tests' encoder refuses an answer carrying a field its schema does not have, at any depth", () => {
  const schema = z.object({ code: z.number(), items: z.array(z.object({ name: z.string() })) });
  const encode = compile(schema);
  expect(encode({ code: 1, items: [{ name: 'a' }] })).toBe('{"code":1,"items":[{"name":"a"}]}');
  expect(() => encode({ code: 1, items: [], stack: 'at x (y.ts:1)' })).toThrow(
    'response of GET /x: "stack" is not in the response schema',
  );
  expect(() => encode({ code: 1, items: [{ name: 'a' }, { name: 'b', secret: 's' }] })).toThrow('"items[1].secret"');
});

test("the tests' encoder still refuses an answer of the wrong shape", () => {
  expect(() => compile(z.object({ code: z.number() }))({ code: 'one' })).toThrow();
});

test('production writes the answer as it is', () => {
  const encode = serializerCompilerOf(false)({ schema: z.object({}), method: 'GET', url: '/x', httpStatus: '200' });
  expect(encode({ a: 1 })).toBe('{"a":1}');
});
