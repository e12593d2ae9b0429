// What `pnpm build` records in dist/build-manifest.json, and the check the e2e set-up runs against it:
// for each of the three builds, a fingerprint of the sources it was built from and a hash of every file
// it left in dist/. A build older than the checkout, one that stopped half-way, or a partial build
// (`node scripts/build.mjs ferryd`) after other sources changed is then refused loudly, instead of the
// suite testing yesterday's binaries.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

export const MANIFEST = join('dist', 'build-manifest.json');

/** The kubelet's protos that ferryd's device plugin loads at run time (dist/lib/protos/). */
export const PROTOS = ['deviceplugin.proto', 'podresources.proto'];

/** Each build and the files it leaves in dist/ (relative to the repository root). */
export const OUTPUTS = {
  ferryd: [
    'dist/bin/ferryd',
    'dist/lib/ferryd.mjs',
    'dist/lib/better_sqlite3.node',
    ...PROTOS.map((f) => `dist/lib/protos/${f}`),
  ],
  ferryctl: ['dist/bin/ferryctl', 'dist/lib/ferryctl.mjs'],
  'ferry-cni': ['dist/bin/ferry-cni', 'dist/lib/ferry-cni-node.mjs'],
};

/** The files a build reads: every package's sources (not its tests) and manifests, the lockfile, this script. */
function inputFiles(root) {
  const files = ['package.json', 'pnpm-lock.yaml', 'tsconfig.json', 'tsconfig.base.json'];
  files.push('scripts/build.mjs', 'scripts/build-manifest.mjs', 'scripts/compile-shim.mjs');
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name !== 'node_modules') walk(p);
      } else if (!e.name.endsWith('.test.ts')) files.push(relative(root, p));
    }
  };
  for (const pkg of readdirSync(join(root, 'packages'))) {
    const dir = join(root, 'packages', pkg);
    if (!statSync(dir).isDirectory()) continue;
    for (const f of readdirSync(dir)) if (f.endsWith('.json')) files.push(join('packages', pkg, f));
    if (existsSync(join(dir, 'src'))) walk(join(dir, 'src'));
  }
  return files.filter((f) => existsSync(join(root, f))).sort();
}

/** One hash over the names and contents of every input file. */
export function sourcesFingerprint(root) {
  const h = createHash('sha256');
  for (const f of inputFiles(root))
    h.update(`${f}\0`)
      .update(readFileSync(join(root, f)))
      .update('\0');
  return h.digest('hex');
}

const hashOf = (path) => createHash('sha256').update(readFileSync(path)).digest('hex');

/** ferryd's bundle is split (scripts/build.mjs): its content-hashed chunks are outputs too. */
const CHUNK_RE = /-[a-z0-9]{8}\.mjs$/;
const chunksOf = (root, target) =>
  target === 'ferryd'
    ? readdirSync(join(root, 'dist', 'lib'))
        .filter((f) => CHUNK_RE.test(f))
        .map((f) => `dist/lib/${f}`)
    : [];

/** Records that `target` was just built from sources with this fingerprint. */
export function recordBuild(root, target, fingerprint) {
  const path = join(root, MANIFEST);
  const manifest = existsSync(path) ? JSON.parse(readFileSync(path, 'utf8')) : { builds: {} };
  const files = [...OUTPUTS[target], ...chunksOf(root, target)];
  const outputs = Object.fromEntries(files.map((f) => [f, hashOf(join(root, f))]));
  manifest.builds[target] = { sources: fingerprint, outputs };
  writeFileSync(path, `${JSON.stringify(manifest, null, 2)}\n`);
}

/** What is wrong with dist/ for this checkout: one line per problem, none when every build is current. */
export function buildProblems(root) {
  const path = join(root, MANIFEST);
  if (!existsSync(path)) return [`${MANIFEST} is missing: dist/ was not made by this checkout's \`pnpm build\``];
  const { builds } = JSON.parse(readFileSync(path, 'utf8'));
  const current = sourcesFingerprint(root);
  const problems = [];
  for (const [target, outputs] of Object.entries(OUTPUTS)) {
    const b = builds[target];
    if (!b) {
      problems.push(`${target} was never built`);
      continue;
    }
    if (b.sources !== current) problems.push(`${target} was built from other sources than the checkout's`);
    for (const f of new Set([...outputs, ...Object.keys(b.outputs)])) {
      if (!existsSync(join(root, f))) problems.push(`${f} is missing`);
      else if (b.outputs[f] !== hashOf(join(root, f))) problems.push(`${f} is not the file ${target}'s build wrote`);
    }
  }
  return problems;
}
