/**
 * The e2e set-up refuses a dist/ that is not a whole, current build of the checkout
 * (scripts/build-manifest.mjs), checked here on a small stand-in repository in a temp dir.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { expect, test } from 'vitest';
import { buildProblems, MANIFEST, OUTPUTS, recordBuild, sourcesFingerprint } from '../../scripts/build-manifest.mjs';
import { ROOT } from '../fixtures/paths';
import type { Scope } from '../fixtures/scope';
import { useTmpDir } from '../fixtures/tmp';

const TARGETS = Object.keys(OUTPUTS) as (keyof typeof OUTPUTS)[];

function put(root: string, file: string, text: string): void {
  mkdirSync(dirname(join(root, file)), { recursive: true });
  writeFileSync(join(root, file), text);
}

/** A repository with one package and a dist/ as `pnpm build` leaves it. */
function useBuiltRepo(t: Scope): string {
  const root = useTmpDir(t, 'repo');
  put(root, 'package.json', '{}');
  put(root, 'packages/cns-daemon/package.json', '{}');
  put(root, 'packages/cns-daemon/src/daemon.ts', 'export const a = 1;\n');
  put(root, 'packages/cns-daemon/src/daemon.test.ts', 'test();\n');
  for (const files of Object.values(OUTPUTS)) for (const f of files) put(root, f, `built ${f}`);
  put(root, 'dist/lib/kube-source-abcd1234.mjs', 'a chunk of the split ferryd bundle');
  const sources = sourcesFingerprint(root);
  for (const target of TARGETS) recordBuild(root, target, sources);
  return root;
}

test('a whole, current build passes; so does this checkout, which the suite is running on', (t) => {
  expect(buildProblems(useBuiltRepo(t))).toEqual([]);
  expect(buildProblems(ROOT)).toEqual([]);
});

test('a source changed after the build makes every build stale; a test file does not', (t) => {
  const root = useBuiltRepo(t);
  put(root, 'packages/cns-daemon/src/daemon.test.ts', 'test(); test();\n');
  expect(buildProblems(root)).toEqual([]);
  put(root, 'packages/cns-daemon/src/daemon.ts', 'export const a = 2;\n');
  expect(buildProblems(root)).toEqual(TARGETS.map((b) => `${b} was built from other sources than the checkout's`));
  // Building one of them again (`node scripts/build.mjs ferryd`) leaves the other two stale.
  recordBuild(root, 'ferryd', sourcesFingerprint(root));
  expect(buildProblems(root)).toEqual([
    "ferryctl was built from other sources than the checkout's",
    "ferry-cni was built from other sources than the checkout's",
  ]);
});

test('a partial or damaged dist/ is named file by file', (t) => {
  const root = useBuiltRepo(t);
  rmSync(join(root, 'dist/bin/ferry-cni'));
  put(root, 'dist/lib/ferryd.mjs', 'cut sho');
  expect(buildProblems(root)).toEqual([
    "dist/lib/ferryd.mjs is not the file ferryd's build wrote",
    'dist/bin/ferry-cni is missing',
  ]);
  rmSync(join(root, MANIFEST));
  expect(buildProblems(root)).toEqual([
    "dist/build-manifest.json is missing: dist/ was not made by this checkout's `pnpm build`",
  ]);
});

test('a build that never ran for one binary is named', (t) => {
  const root = useTmpDir(t, 'repo');
  put(root, 'package.json', '{}');
  mkdirSync(join(root, 'packages'));
  for (const f of OUTPUTS.ferryd) put(root, f, 'x');
  recordBuild(root, 'ferryd', sourcesFingerprint(root));
  expect(buildProblems(root)).toEqual(['ferryctl was never built', 'ferry-cni was never built']);
});

test("a chunk of ferryd's split bundle that is missing or altered is named", (t) => {
  const root = useBuiltRepo(t);
  put(root, 'dist/lib/kube-source-abcd1234.mjs', 'edited');
  expect(buildProblems(root)).toEqual(["dist/lib/kube-source-abcd1234.mjs is not the file ferryd's build wrote"]);
  rmSync(join(root, 'dist/lib/kube-source-abcd1234.mjs'));
  expect(buildProblems(root)).toEqual(['dist/lib/kube-source-abcd1234.mjs is missing']);
});
