#!/usr/bin/env node
// pnpm build: dist/bin/{ferry-cni,ferryd,ferryctl} (docs/architecture.md "Entry points").
// ferry-cni is one self-contained executable (bun build --compile, see docs/shipping.md for the numbers
// that chose it); ferryd and ferryctl are Node bundles with their native addons copied to dist/lib.
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PROTOS, recordBuild, sourcesFingerprint } from './build-manifest.mjs';
import { compileShim } from './compile-shim.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = join(root, 'dist', 'bin');
const lib = join(root, 'dist', 'lib');
const bun = join(root, 'node_modules', '.bin', 'bun');
const only = process.argv.slice(2);
const wants = (name) => only.length === 0 || only.includes(name);

function run(args) {
  execFileSync(bun, args, { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
}

mkdirSync(bin, { recursive: true });
mkdirSync(lib, { recursive: true });
// The checks generated from the zod schemas (also written by `pnpm install`; scripts/checks/checks.test.ts
// fails when they are stale): written first, so the fingerprint below covers what is bundled.
run(['scripts/checks/generate.ts']);
// Taken before building: a source edited during the build makes the set-up call the result stale.
const sources = sourcesFingerprint(root);

// `node --enable-source-maps` reads and parses every loaded bundle's whole map at start-up; the sources'
// text, two thirds of a map, is never used to map a stack trace (bun has no flag to leave it out). Without
// it a ferryd start costs about 290 ms less CPU, a ferryctl call about 100 ms less.
function dropSourcesContent() {
  for (const f of readdirSync(lib).filter((n) => n.endsWith('.mjs.map'))) {
    const map = JSON.parse(readFileSync(join(lib, f), 'utf8'));
    if (!('sourcesContent' in map)) continue;
    delete map.sourcesContent;
    writeFileSync(join(lib, f), JSON.stringify(map));
  }
}

// The bundle and the native addons it loads live in dist/lib (addons are found relative to the bundle);
// dist/bin/NAME is a two-line launcher, because an extension-less file cannot be an ES module.
function nodeBundle(entry, name, { launcher = true, splitting = false } = {}) {
  run([
    'build',
    entry,
    // Code behind a dynamic import() goes to a chunk of its own, read only when it is imported. The
    // chunks must be .mjs: dist/ has no package.json that would make .js files ES modules.
    ...(splitting ? ['--splitting', '--chunk-naming', '[name]-[hash].mjs'] : []),
    '--target=node',
    '--format=esm',
    '--outdir',
    lib,
    '--entry-naming',
    `${name}.mjs`,
    '--asset-naming',
    '[name].[ext]',
    // Minified whole, names kept (fastify and avvio name plugins by their functions; stack traces are
    // mapped back through the source map): a ferryd start parses a 1.2 MB entry, not 2.3 MB.
    '--minify',
    '--keep-names',
    '--sourcemap=linked',
  ]);
  dropSourcesContent();
  if (!launcher) return;
  const file = join(bin, name);
  writeFileSync(file, `#!/usr/bin/env -S node --enable-source-maps\nimport('../lib/${name}.mjs');\n`);
  chmodSync(file, 0o755);
}

if (wants('ferryd')) {
  // Chunks carry a content hash in their name: those of an earlier build would stay behind unused.
  for (const f of readdirSync(lib)) if (/-[a-z0-9]{8}\.mjs(\.map)?$/.test(f)) rmSync(join(lib, f));
  nodeBundle('packages/cns-daemon/src/bin/ferryd.ts', 'ferryd', { splitting: true });
  const require = createRequire(join(root, 'packages/cns-daemon/package.json'));
  const sqliteDir = dirname(realpathSync(require.resolve('better-sqlite3/package.json')));
  copyFileSync(join(sqliteDir, 'build', 'Release', 'better_sqlite3.node'), join(lib, 'better_sqlite3.node'));
  // The device plugin loads the kubelet's protos at run time, from beside the chunk that holds it.
  mkdirSync(join(lib, 'protos'), { recursive: true });
  for (const f of PROTOS)
    copyFileSync(join(root, 'packages/cns-daemon/src/device-plugin/protos', f), join(lib, 'protos', f));
  recordBuild(root, 'ferryd', sources);
}
if (wants('ferryctl')) {
  nodeBundle('packages/ferryctl/src/bin/ferryctl.ts', 'ferryctl');
  recordBuild(root, 'ferryctl', sources);
}
if (wants('ferry-cni')) {
  // The same shim through the Node runtime, for the e2e suite only (not an entry point).
  nodeBundle('packages/cni-shim/src/bin/ferry-cni-node.ts', 'ferry-cni-node', { launcher: false });
  compileShim('packages/cni-shim/src/bin/ferry-cni.ts', join(bin, 'ferry-cni'));
  recordBuild(root, 'ferry-cni', sources);
}
