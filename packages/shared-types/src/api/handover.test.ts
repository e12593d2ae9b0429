import { expect, test } from 'vitest';
import { handOverProblem } from './handover';

const successor = { pid: 42, apiVersion: 2, minApiVersion: 1, schemaVersion: 3 };

test('a successor takes over only what it can serve: the database it finds and the shims on the node', () => {
  expect(handOverProblem({ apiVersion: 1, schemaVersion: 3 }, successor)).toBeUndefined();
  expect(handOverProblem({ apiVersion: 2, schemaVersion: 2 }, successor)).toBeUndefined();
  expect(handOverProblem({ apiVersion: 1, schemaVersion: 4 }, successor)).toMatch(
    /schema 3 is older .*\(4\): roll forward/,
  );
  expect(handOverProblem({ apiVersion: 1, schemaVersion: 3 }, { ...successor, minApiVersion: 2 })).toMatch(
    /serves API versions 2–2, and the shims on the node speak 1/,
  );
});
