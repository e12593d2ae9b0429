// A one-layer image in the `docker save` layout (manifest.json, the config, the layer tar), which
// `podman load`, `docker load` and `ctr images import` read: how images are made on machines with no image
// registry and no builder (scripts/build-image.mjs, the test fixtures' pause image). The archive is a
// function of the layer and the config alone, so one layer gives one image ID; `podman import` would
// stamp the time of the import into the config, and so a new ID, on every build.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, linkSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The hex SHA-256 of a file, streamed (a root filesystem's layer is hundreds of MB). */
export async function sha256OfFile(path) {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk);
  return hash.digest('hex');
}

/**
 * Writes the archive `out` holding the uncompressed layer tar `layer`, tagged `ref`, with the image
 * config `config` (Entrypoint, Env, Labels…) and the creation time `createdSec` (Unix seconds) in the
 * config and on the archive's members. Returns the image ID (the config's digest, as podman and docker
 * show it) and the layer's diff ID.
 */
export async function writeDockerArchive({ layer, out, ref, config, createdSec = 0, createdBy = 'ferry' }) {
  const diffId = `sha256:${await sha256OfFile(layer)}`;
  const created = new Date(createdSec * 1000).toISOString();
  const imageConfig = {
    architecture: process.arch === 'x64' ? 'amd64' : process.arch,
    os: 'linux',
    created,
    config,
    rootfs: { type: 'layers', diff_ids: [diffId] },
    history: [{ created, created_by: createdBy }],
  };
  const configText = JSON.stringify(imageConfig);
  const imageId = createHash('sha256').update(configText).digest('hex');
  const staging = mkdtempSync(join(dirname(out), '.archive-'));
  try {
    writeFileSync(join(staging, `${imageId}.json`), configText);
    writeFileSync(
      join(staging, 'manifest.json'),
      JSON.stringify([{ Config: `${imageId}.json`, RepoTags: [ref], Layers: ['layer.tar'] }]),
    );
    // A link, not a copy: the staging dir is beside `out`, and a copy of the layer would double the disk use.
    linkSync(layer, join(staging, 'layer.tar'));
    execFileSync('tar', [
      ...['--sort=name', `--mtime=@${createdSec}`, '--owner=0', '--group=0', '--numeric-owner', '--format=pax'],
      '--pax-option=delete=atime,delete=ctime',
      ...['-C', staging, '-cf', out, 'manifest.json', `${imageId}.json`, 'layer.tar'],
    ]);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return { imageId: `sha256:${imageId}`, diffId };
}
