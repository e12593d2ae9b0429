import { expect, test } from 'vitest';
import { handOverProblem } from './handover';

const successor = { pid: 42, apiVersion: 2, schemaVersion: 3 };

test('a successor takes over only what it can serve: the database it finds and the shims on the node', () => {
  // The same release, or the next one (it serves the node's shims of API 1 by the version-skew rule).
  expect(handOverProblem({ apiVersion: 2, schemaVersion: 2 }, successor)).toBeUndefined();
  expect(handOverProblem({ apiVersion: 1, schemaVersion: 3 }, successor)).toBeUndefined();
  expect(handOverProblem({ apiVersion: 1, schemaVersion: 4 }, successor)).toMatch(
    /schema 3 is older .*\(4\): roll forward/,
  );
  // Two API versions ahead of the node's shims, or behind them (a rollback across an API change).
  expect(handOverProblem({ apiVersion: 1, schemaVersion: 3 }, { ...successor, apiVersion: 3 })).toMatch(
    /would not serve the shims on the node: ferry-cni speaks API 1, ferryd API 3: ferry-cni is more than one API version older/,
  );
  expect(handOverProblem({ apiVersion: 3, schemaVersion: 3 }, successor)).toMatch(
    /would not serve the shims on the node: ferry-cni speaks API 3, ferryd API 2: ferryd is older/,
  );
});
