import { expect, test } from 'vitest';
import { isNetError, kindOfErrno, kindOfStrerror, NetError } from './net-error';

test('the errno the kernel answers with, and its strerror as the tools print it: the same kinds', () => {
  expect(
    ['File exists', 'No such device', 'No such process', 'Invalid argument', undefined].map(kindOfStrerror),
  ).toEqual(['exists', 'no-device', 'not-found', 'failed', 'failed']);
  expect([17, 19, 2, 3, 101, 113, 22, 1, 0].map(kindOfErrno)).toEqual([
    'exists',
    'no-device',
    'not-found',
    'not-found',
    'unreachable',
    'unreachable',
    'failed',
    'failed',
    'failed',
  ]);
});

test('isNetError matches the kind, and the line when one is given', () => {
  const err = new NetError('exists', 'create veth', 'File exists', { failedLine: 0 });
  expect(isNetError(err, 'exists')).toBe(true);
  expect(isNetError(err, 'exists', 0)).toBe(true);
  expect(isNetError(err, 'exists', 1)).toBe(false);
  expect(isNetError(err, 'no-device')).toBe(false);
  // Text is never read: an Error that says "File exists" is no NetError of kind exists.
  expect(isNetError(new Error('create veth: RTNETLINK answers: File exists'), 'exists')).toBe(false);
});
