#!/usr/bin/env node
// The DaemonSet's image, built from the package registries alone (no image registry, no Docker engine):
// a Debian bookworm root filesystem made by mmdebstrap from this machine's apt sources, holding what
// ferryd runs (iproute2: ip; nftables: nft, the egress masquerade; iptables, its fallback; util-linux:
// flock, nsenter), Node 20 taken from the files of the nodejs package installed here (Debian's own
// nodejs is 18, and the SQLite addon `pnpm build` made is built for this Node's ABI), and dist/ at
// /opt/ferry. Written as a docker-archive that `podman load`, `docker load` and `ctr images import` read,
// tagged as deploy/daemonset.yaml names it. deploy/Dockerfile describes the same image for builders with a
// registry.
//
//   node scripts/build-image.mjs [--out FILE] [--load] [--push REF [--push-insecure]]   (as root, after `pnpm build`)
//   node scripts/build-image.mjs --archive FILE --push REF [--push-insecure]           (push a built archive)
//
// --push copies the image to any registry with skopeo (Debian's), e.g. --push
// registry.example:5000/ferry-cni/ferry:0.1.0; nodes then pull it as the DaemonSet names it
// (ghcr.io/ferry-cni/ferry:0.1.0) through a registry mirror, or by that name after an `images:` edit of the
// kustomization. --push-insecure: a registry on plain HTTP or with a certificate the build host does not
// trust. skopeo's credentials are its own (`skopeo login`, or REGISTRY_AUTH_FILE).
//
// Reproducible: with the same dist/, nodejs package and apt mirror content, two builds give the same
// layer and the same image ID. SOURCE_DATE_EPOCH (default: the commit time of HEAD) is every file's
// mtime cap and the image's creation time; mmdebstrap sorts the tar and drops what varies per run (logs,
// machine-id, caches); resolv.conf and hostname, copied from the build host, are removed. What varies:
// the Debian packages (the mirror moves with point releases and security updates; `dpkg-query -W` in
// the image lists them), the nodejs package installed on the build machine (image.json says which).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { buildProblems } from './build-manifest.mjs';
import { writeDockerArchive } from './docker-archive.mjs';
import {
  CNI_PLUGINS,
  CNI_PLUGINS_DIR,
  DEBIAN_PACKAGES,
  DEBIAN_SUITE,
  ENTRYPOINT,
  FERRY_PREFIX,
  NODE_MAJOR,
  NODE_PATH,
} from './image-contents.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
/** What the image takes of the nodejs package: the runtime and its licence, not npm, headers or docs. */
const NODE_FILES = [NODE_PATH, '/usr/share/doc/nodejs/LICENSE', '/usr/share/doc/nodejs/copyright'];
const SOURCES = ['/etc/apt/sources.list.d/debian.sources', '/etc/apt/sources.list'];

const { values: flags } = parseArgs({
  options: {
    out: { type: 'string' },
    load: { type: 'boolean', default: false },
    push: { type: 'string' },
    'push-insecure': { type: 'boolean', default: false },
    archive: { type: 'string' },
  },
  strict: true,
});
const fail = (msg) => {
  process.stderr.write(`build-image: ${msg}\n`);
  process.exit(1);
};
const text = (cmd, args, opts = {}) => execFileSync(cmd, args, { encoding: 'utf8', ...opts }).trim();
const started = Date.now();

if (flags.archive) {
  if (!flags.push) fail('--archive pushes a built archive: it needs --push REF');
  if (!existsSync(flags.archive)) fail(`--archive ${flags.archive}: no such file`);
  push(resolve(flags.archive), flags.push);
  process.exit(0);
}

const problems = buildProblems(root);
if (problems.length > 0) fail(`dist/ is not a build of this checkout; run \`pnpm build\`:\n  ${problems.join('\n  ')}`);
if (process.getuid?.() !== 0) fail('needs root (mmdebstrap makes the root filesystem as root)');

const ref = imageOfDaemonSet();
const version = ref.slice(ref.lastIndexOf(':') + 1);
const out = resolve(flags.out ?? join(root, 'dist-image', `ferry-${version}.tar`));
const epoch = Number(process.env.SOURCE_DATE_EPOCH ?? text('git', ['-C', root, 'log', '-1', '--format=%ct']));
const revision = `${text('git', ['-C', root, 'rev-parse', 'HEAD'])}${text('git', ['-C', root, 'status', '--porcelain']) ? '-dirty' : ''}`;
const node = nodePackage();
const sources = SOURCES.find((f) => existsSync(f)) ?? fail(`no apt sources (${SOURCES.join(', ')})`);
ensureMmdebstrap();

const provenance = {
  image: ref,
  revision,
  sourceDateEpoch: epoch,
  debian: { suite: DEBIAN_SUITE, packages: DEBIAN_PACKAGES, listedBy: 'dpkg-query -W' },
  node: { version: node.version, package: `nodejs ${node.packageVersion}`, files: NODE_FILES },
};
mkdirSync(dirname(out), { recursive: true });
const work = join(dirname(out), `.build-${process.pid}`);
mkdirSync(work, { recursive: true });
// On every exit, fail() included: the root filesystem's tar is as large as the image.
process.on('exit', () => rmSync(work, { recursive: true, force: true }));
writeFileSync(join(work, 'image.json'), `${JSON.stringify(provenance, null, 2)}\n`);
const layer = join(work, 'rootfs.tar');
buildRootfs(layer, sources, join(work, 'image.json'));
const labels = {
  'org.opencontainers.image.title': 'ferry',
  'org.opencontainers.image.version': version,
  'org.opencontainers.image.revision': revision,
  'org.opencontainers.image.created': new Date(epoch * 1000).toISOString(),
  'dev.ferry.image.debian': DEBIAN_SUITE,
  'dev.ferry.image.node': `${node.version} (nodejs ${node.packageVersion}, the build machine's package)`,
};
const { imageId, diffId } = await writeDockerArchive({
  layer,
  out,
  ref,
  createdSec: epoch,
  createdBy: 'scripts/build-image.mjs',
  config: {
    Entrypoint: ENTRYPOINT,
    Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
    Labels: labels,
  },
});
const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;
const size = statSync(layer).size;
const nodeSize = statSync(NODE_PATH).size;
const distSize = Number(text('du', ['-sb', join(root, 'dist')]).split(/\s/)[0]);
process.stdout.write(
  [
    `image ${ref}`,
    `  id ${imageId}, layer ${diffId}`,
    `  size ${mb(size)} uncompressed: dist/ ${mb(distSize)}, node ${mb(nodeSize)}, Debian ${DEBIAN_SUITE} ${mb(size - distSize - nodeSize)}`,
    `  node ${node.version} from nodejs ${node.packageVersion}; SOURCE_DATE_EPOCH ${epoch}; revision ${revision}`,
    `  archive ${out} (podman load -i, ctr -n k8s.io images import, docker load -i)`,
    `  built in ${((Date.now() - started) / 1000).toFixed(0)} s`,
    '',
  ].join('\n'),
);
if (flags.load) run('podman', ['load', '-i', out]);
if (flags.push) push(out, flags.push);

/** The archive to `ref` in a registry (skopeo copy: the layer and config as they are, so the same digest). */
function push(archive, ref) {
  const dest = ref.startsWith('docker://') ? ref : `docker://${ref}`;
  ensurePackage('skopeo', 'skopeo');
  const digestFile = `${archive}.digest`;
  run('skopeo', [
    'copy',
    '--quiet',
    ...(flags['push-insecure'] ? ['--dest-tls-verify=false'] : []),
    `--digestfile=${digestFile}`,
    `docker-archive:${archive}`,
    dest,
  ]);
  const digest = readFileSync(digestFile, 'utf8').trim();
  rmSync(digestFile, { force: true });
  process.stdout.write(`pushed ${dest.slice('docker://'.length)}@${digest}\n`);
}

/** The image deploy/daemonset.yaml runs (every container of it runs the same one). */
function imageOfDaemonSet() {
  const docs = parseAllDocuments(readFileSync(join(root, 'deploy', 'daemonset.yaml'), 'utf8')).map((d) => d.toJSON());
  const spec = docs.find((d) => d?.kind === 'DaemonSet')?.spec?.template?.spec;
  const images = new Set([...(spec?.initContainers ?? []), ...(spec?.containers ?? [])].map((c) => c.image));
  if (images.size !== 1) fail(`deploy/daemonset.yaml: expected one image for every container, found ${[...images]}`);
  return [...images][0];
}

/** The installed nodejs package: its version, and that the files the image takes are its own, unmodified. */
function nodePackage() {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's own format syntax
  const status = text('dpkg-query', ['-W', '-f', '${Status}\t${Version}', 'nodejs'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  }).split('\t');
  if (status[0] !== 'install ok installed') fail('the nodejs package is not installed');
  const listed = new Set(text('dpkg', ['-L', 'nodejs']).split('\n'));
  for (const f of NODE_FILES) if (!listed.has(f)) fail(`the nodejs package has no ${f}`);
  // dpkg's checksums of the package's files: a binary changed since it was installed is not the package's.
  const changed = text('dpkg', ['--verify', 'nodejs'], { stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 << 20 })
    .split('\n')
    .filter((l) => NODE_FILES.some((f) => l.endsWith(` ${f}`)));
  if (changed.length > 0)
    fail(`files of the nodejs package changed since it was installed:\n  ${changed.join('\n  ')}`);
  const nodeVersion = text(NODE_PATH, ['--version']);
  if (Number(nodeVersion.slice(1).split('.')[0]) !== NODE_MAJOR) {
    fail(`the nodejs package has Node ${nodeVersion}; the image needs Node ${NODE_MAJOR} (better-sqlite3 12's ABI)`);
  }
  return { version: nodeVersion, packageVersion: status[1] };
}

function ensureMmdebstrap() {
  ensurePackage('mmdebstrap', 'mmdebstrap');
}

/** Installs the Debian package that has `command`, when it is not on PATH. */
function ensurePackage(command, pkg) {
  if (text('sh', ['-c', `command -v ${command} || true`])) return;
  process.stdout.write(`build-image: installing ${pkg} (Debian package)\n`);
  run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', pkg], {
    DEBIAN_FRONTEND: 'noninteractive',
  });
}

/** mmdebstrap → one tar: the Essential set plus DEBIAN_PACKAGES, Node's files, dist/ in FERRY_PREFIX, checked. */
function buildRootfs(layer, sources, imageJson) {
  const inImage = (cmd) => `chroot "$1" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin ${cmd}`;
  const hooks = [
    // From the build host, and different on every host.
    'rm -f "$1/etc/resolv.conf" "$1/etc/hostname"',
    `mkdir -p "$1${FERRY_PREFIX}" "$1/usr/share/doc/nodejs"`,
    // copy-in, unlike upload, keeps the files' modes (node is executable).
    ...[...new Set(NODE_FILES.map((f) => dirname(f)))].map(
      (dir) => `copy-in ${NODE_FILES.filter((f) => dirname(f) === dir).join(' ')} ${dir}`,
    ),
    `sync-in ${join(root, 'dist')} ${FERRY_PREFIX}`,
    `upload ${imageJson} ${FERRY_PREFIX}/image.json`,
    // The image fails here, not on a node: the tools ferryd runs answer, and this Node loads the addon.
    [
      inImage('sh -ec "ip -V; nft --version; iptables --version; flock --version; nsenter --version"'),
      inImage(
        `sh -ec "ls ${CNI_PLUGINS_DIR}; ${CNI_PLUGINS.map((p) => `test -x ${CNI_PLUGINS_DIR}/${p}`).join('; ')}"`,
      ),
      inImage(
        `node -e "require('${FERRY_PREFIX}/lib/better_sqlite3.node'); console.log('node', process.version, 'loads better_sqlite3.node (ABI', process.versions.modules + ')')"`,
      ),
    ].join(' && '),
  ];
  run(
    'mmdebstrap',
    [
      '--quiet',
      '--mode=root',
      '--variant=essential',
      `--include=${DEBIAN_PACKAGES.join(',')}`,
      // /usr merged the way debootstrap does it: the usrmerge package would bring Perl (~55 MB) along.
      '--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr',
      // Manuals, translations and docs are not run in a DaemonSet; copyright files stay.
      ...['man', 'locale', 'info', 'doc'].map((d) => `--dpkgopt=path-exclude=/usr/share/${d}/*`),
      '--dpkgopt=path-include=/usr/share/doc/*/copyright',
      // Of the reference plugins (~45 MB), the ones nodes may lack (CNI_PLUGINS, ~5 MB).
      `--dpkgopt=path-exclude=${CNI_PLUGINS_DIR}/*`,
      ...CNI_PLUGINS.map((p) => `--dpkgopt=path-include=${CNI_PLUGINS_DIR}/${p}`),
      ...hooks.map((h) => `--customize-hook=${h}`),
      DEBIAN_SUITE,
      layer,
      sources,
    ],
    { SOURCE_DATE_EPOCH: String(epoch) },
  );
}

/** Runs a build step with its output on ours; a failed one ends the build with one line (its own output says why). */
function run(cmd, args, env = {}) {
  try {
    execFileSync(cmd, args, { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, ...env } });
  } catch (err) {
    fail(`${cmd} failed (${err.status === null ? err.signal : `exit ${err.status}`}); its output is above`);
  }
}
