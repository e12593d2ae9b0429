import { expect, test } from 'vitest';
import { Code } from '../errors';
import { parseJsonOrUndefined } from '../parse';
import { errorOfAnswer } from './error';

const decode = (status: number, body: string) =>
  errorOfAnswer('ferryd GET /v1/x', status, body, parseJsonOrUndefined(body));

test("ferryd's own error body is passed on with its code, message and details", () => {
  const err = decode(409, JSON.stringify({ code: Code.AttachmentConflict, msg: 'taken', details: 'by c2' }));
  expect(err).toMatchObject({ code: Code.AttachmentConflict, message: 'taken', details: 'by c2' });
});

test.for([
  ['not JSON', 503, 'ferryd is not ready: storage failing', 'HTTP 503: ferryd is not ready: storage failing'],
  ['JSON, not CNI-shaped', 502, '{"error":"bad gateway"}', 'HTTP 502: {"error":"bad gateway"}'],
  ['a code outside the catalog', 400, '{"code":4242,"msg":"?"}', 'HTTP 400: {"code":4242,"msg":"?"}'],
] as const)('%s: DaemonProtocol naming the request, the status and the body', ([, status, body, says]) => {
  expect(decode(status, body)).toMatchObject({ code: Code.DaemonProtocol, message: `ferryd GET /v1/x: ${says}` });
});

test('a long body is quoted only in part', () => {
  expect(decode(500, 'x'.repeat(2000)).message).toBe(`ferryd GET /v1/x: HTTP 500: ${'x'.repeat(500)}`);
});

test('parseJsonOrUndefined: the value, or undefined for no text and for text that is not JSON', () => {
  expect(parseJsonOrUndefined('{"a":[1]}')).toEqual({ a: [1] });
  expect(parseJsonOrUndefined('null')).toBeNull();
  expect(parseJsonOrUndefined('')).toBeUndefined();
  expect(parseJsonOrUndefined('{"a":')).toBeUndefined();
  expect(parseJsonOrUndefined(undefined)).toBeUndefined();
});
