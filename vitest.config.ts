import { defineConfig } from 'vitest/config';

// Two projects (test/README.md says which test goes where): `unit` runs package sources next to their
// modules; `e2e` runs the built binaries in real network namespaces and needs root and `pnpm build`.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['packages/*/src/**/*.test.ts', 'scripts/**/*.test.ts'],
          testTimeout: 20_000,
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/**/*.test.ts'],
          globalSetup: ['test/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 60_000,
          // Each file starts its own ferryd processes and namespaces; two at a time fits 2-core machines.
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
