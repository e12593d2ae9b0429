import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { configDefaults, defineConfig } from 'vitest/config';

const UNIT = ['packages/*/src/**/*.test.ts', 'scripts/**/*.test.ts'];
const root = import.meta.dirname;
const UNIT_DIRS = [...readdirSync(join(root, 'packages')).map((p) => join('packages', p, 'src')), 'scripts'];
/** The unit test files that mock modules (found by their `vi.mock(` calls). */
const MOCKING = UNIT_DIRS.flatMap((dir) =>
  readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.ts') && !f.includes('node_modules'))
    .map((f) => join(dir, f))
    .filter((f) => readFileSync(join(root, f), 'utf8').includes('vi.mock(')),
);

// The projects (test/README.md says which test goes where): `unit` and `unit-isolated` run package sources
// next to their modules; `e2e` runs the built binaries in real network namespaces and needs root and
// `pnpm build`.
export default defineConfig({
  test: {
    projects: [
      {
        // One module cache per worker: importing ferryd's modules (fastify, SQLite, the Kubernetes client)
        // afresh for every file cost most of the unit suite's time. Files that mock a module need a
        // registry of their own (`vi.mock` cannot replace a module another file already loaded): `unit-isolated`.
        test: {
          name: 'unit',
          include: UNIT,
          exclude: [...configDefaults.exclude, ...MOCKING],
          isolate: false,
          testTimeout: 20_000,
          // Vitest's default on two cores is one worker, which left a core idle: 24 s -> 18 s with two.
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          name: 'unit-isolated',
          include: MOCKING,
          testTimeout: 20_000,
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/**/*.test.ts'],
          globalSetup: ['test/global-setup.ts'],
          // What the suite starts (ferryds, ferryctl, the API stand-ins) talks only to the tests' own
          // servers, whose CAs the tests hand over themselves: a bundle named by NODE_EXTRA_CA_CERTS (set on
          // some machines) would be parsed at each of the run's ~700 Node starts for nothing, 30-60 ms of a
          // ferryd start's ~530. Empty is unset for Node.
          env: { NODE_EXTRA_CA_CERTS: '' },
          testTimeout: 120_000,
          hookTimeout: 60_000,
          // Each file starts its own ferryd processes and namespaces; two at a time fits 2-core machines.
          // One module cache per worker, as in `unit`: the fixtures are imported once per worker, not once
          // per file.
          maxWorkers: 2,
          isolate: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
