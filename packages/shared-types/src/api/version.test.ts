import { expect, test } from 'vitest';
import { apiSkewOf, FERRY_API_VERSION, parseApiVersion } from './version';

test.for([
  // [shim, ferryd, in the rule]
  [1, 1, true],
  [1, 2, true],
  [7, 7, true],
  [7, 8, true],
  [2, 1, false],
  [8, 7, false],
  [1, 3, false],
  [5, 9, false],
] as const)('ferry-cni API %i with ferryd API %i: in the rule %s', ([shim, ferryd, inRule]) => {
  expect(apiSkewOf(shim, ferryd) === undefined).toBe(inRule);
});

test('out of the rule, the words name both versions and what to do', () => {
  expect(apiSkewOf(2, 1)).toBe(
    "ferry-cni speaks API 2, ferryd API 1: ferryd is older than ferry-cni; finish rolling out the ferryd DaemonSet (each of its pods installs the ferry-cni of its own release), or install the ferry-cni of ferryd's release",
  );
  expect(apiSkewOf(1, 3)).toBe(
    "ferry-cni speaks API 1, ferryd API 3: ferry-cni is more than one API version older than ferryd; install the ferry-cni of ferryd's release (ferryctl install --shim, as the ferryd container's postStart hook does)",
  );
  expect(apiSkewOf(undefined, 1)).toMatch(
    /^ferry-cni speaks API \(none stated\), ferryd API 1: .* not a ferry-cni or ferryd/,
  );
  expect(apiSkewOf(1, undefined)).toMatch(/^ferry-cni speaks API 1, ferryd API \(none stated\): /);
});

test('a header states a version only as one plain decimal number', () => {
  expect(parseApiVersion(String(FERRY_API_VERSION))).toBe(FERRY_API_VERSION);
  expect(parseApiVersion('12')).toBe(12);
  for (const h of [undefined, '', '0', '01', '1.0', ' 1', 'one', '1234567', ['1', '1']]) {
    expect(parseApiVersion(h), JSON.stringify(h)).toBeUndefined();
  }
});
