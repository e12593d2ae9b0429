import { expect, test } from 'vitest';
import { CniError, Code } from '../errors';
import { parseCniArgs } from './args';

test('parses what kubelet sends', () => {
  const args = parseCniArgs(
    'IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_UID=u-1',
  );
  expect(args).toEqual({
    ignoreUnknown: true,
    podNamespace: 'default',
    podName: 'web-0',
    podInfraContainerId: 'abc',
    podUid: 'u-1',
  });
});

test('empty and absent CNI_ARGS are fine', () => {
  expect(parseCniArgs(undefined)).toEqual({ ignoreUnknown: false });
  expect(parseCniArgs('')).toEqual({ ignoreUnknown: false });
  expect(parseCniArgs(';;')).toEqual({ ignoreUnknown: false });
});

test('unknown keys are ignored only with IgnoreUnknown, wherever it appears', () => {
  expect(parseCniArgs('FOO=bar;IgnoreUnknown=true').ignoreUnknown).toBe(true);
  expect(parseCniArgs('FOO=bar;IgnoreUnknown=TRUE')).toEqual({ ignoreUnknown: true });
  expect(() => parseCniArgs('FOO=bar')).toThrow(/unknown key "FOO"/);
  expect(() => parseCniArgs('FOO=bar;IgnoreUnknown=0')).toThrow(/unknown key "FOO"/);
});

test('a value may contain "="', () => {
  expect(parseCniArgs('IgnoreUnknown=1;K8S_POD_NAME=a=b').podName).toBe('a=b');
});

test.for(['novalue', '=x', 'IgnoreUnknown=maybe'])('rejects %j with code 4 naming CNI_ARGS', (raw) => {
  try {
    parseCniArgs(raw);
    expect.unreachable();
  } catch (err) {
    expect(err).toBeInstanceOf(CniError);
    expect((err as CniError).code).toBe(Code.InvalidEnv);
    expect((err as CniError).message).toMatch(/^invalid CNI_ARGS: /);
  }
});
