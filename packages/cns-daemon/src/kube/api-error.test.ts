import { ApiException } from '@kubernetes/client-node';
import { describe, expect, test } from 'vitest';
import { KubeApiError, toKubeApiError } from './api-error';

const status = (code: number, reason: string, message = `${reason} happened`) =>
  new ApiException(code, message, JSON.stringify({ kind: 'Status', code, reason, message }), {});

describe('toKubeApiError', () => {
  test('409 is exists or conflict by the Status reason; other codes by class', () => {
    const kinds = [
      status(409, 'AlreadyExists'),
      status(409, 'Conflict'),
      status(404, 'NotFound'),
      status(410, 'Gone'),
      status(403, 'Forbidden'),
      status(401, 'Unauthorized'),
      status(422, 'Invalid'),
      status(400, 'BadRequest'),
      status(429, 'TooManyRequests'),
      status(503, 'ServiceUnavailable'),
      new Error('connect ECONNREFUSED 127.0.0.1:1'),
    ].map((e) => toKubeApiError(e, 'create ipblocks x').kind);
    expect(kinds).toEqual([
      'exists',
      'conflict',
      'gone',
      'gone',
      'forbidden',
      'forbidden',
      'invalid',
      'invalid',
      'unavailable',
      'unavailable',
      'unavailable',
    ]);
  });

  test('the message names the call and carries the API server message; the cause is kept; only unavailable is retryable', () => {
    const cause = status(409, 'AlreadyExists', 'ipblocks.ferry.dev "x" already exists');
    const e = toKubeApiError(cause, 'create ipblocks x');
    expect(e.message).toBe('create ipblocks x: kubernetes api: HTTP 409: ipblocks.ferry.dev "x" already exists');
    expect(e.cause).toBe(cause);
    expect(e.httpStatus).toBe(409);
    expect(e.isRetryable).toBe(false);
    const away = toKubeApiError(new Error('socket hang up'), 'get leases l');
    expect(away.isRetryable).toBe(true);
    expect(away.message).toBe('get leases l: kubernetes api: socket hang up');
    expect(KubeApiError.is(away)).toBe(true);
    expect(toKubeApiError(away, 'other')).toBe(away);
    // A 409 whose body is not a Status is a conflict: nothing says a name is taken.
    expect(toKubeApiError(new ApiException(409, 'x', 'not json', {}), 'w').kind).toBe('conflict');
  });
});
