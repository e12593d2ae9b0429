/**
 * The kustomize overlays per distribution (deploy-overlays/): each renders (fixtures/kustomize.ts, kustomize's
 * own rules; where kubectl is on PATH, `kubectl kustomize` renders the same objects), every object validates
 * against its Kubernetes schema, and the DaemonSet's host paths are the ones docs/runbook.md's table gives for
 * that distribution, so the table and the manifests cannot drift apart.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import type { IDaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import { DaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import { expect, test } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { type K8sObject, kustomize } from '../fixtures/kustomize';
import { ROOT } from '../fixtures/paths';

const OVERLAYS = join(ROOT, 'deploy-overlays');

/** docs/runbook.md's "Paths per distribution": overlay dir → the paths its row gives. */
function documentedPaths(): Map<string, { cniBin: string; cniConf: string; kubelet: string }> {
  const doc = readFileSync(join(ROOT, 'docs', 'runbook.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Paths per distribution'));
  const rows = section
    .split('\n')
    .filter((l) => l.startsWith('| ') && !l.startsWith('| distribution') && !l.startsWith('| ---'));
  const out = new Map<string, { cniBin: string; cniConf: string; kubelet: string }>();
  for (const row of rows) {
    const [, overlays = '', cniBin = '', cniConf = '', kubelet = ''] = row
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim().replaceAll('`', ''));
    for (const o of overlays.split(',').map((x) => x.trim())) {
      const paths = { cniBin, cniConf, kubelet };
      const seen = out.get(o);
      if (seen) expect(seen, `${o}: two rows of the table disagree`).toEqual(paths);
      out.set(o, paths);
    }
  }
  return out;
}

const key = (o: K8sObject) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
const hostPathOf = (ds: IDaemonSet, volume: string) =>
  ds.spec?.template.spec?.volumes?.find((v) => v.name === volume)?.hostPath?.path;

test('each overlay renders, validates, and mounts the paths docs/runbook.md gives for its distribution', async () => {
  const documented = documentedPaths();
  const overlays = readdirSync(OVERLAYS).sort();
  expect(overlays).toEqual(['k3s', 'kind', 'kubeadm']);
  const kubectl = await execa('kubectl', ['version', '--client'], { reject: false });
  for (const overlay of [...overlays.map((o) => `deploy-overlays/${o}`), 'deploy/']) {
    const dir = join(ROOT, overlay);
    const objects = kustomize(dir);
    const ds = objects.find((o) => o.kind === 'DaemonSet') as unknown as IDaemonSet;
    expect(() => new DaemonSet(ds).validate(), overlay).not.toThrow();
    const paths = documented.get(overlay);
    expect(paths, `${overlay} has a row in docs/runbook.md`).toBeDefined();
    expect(
      {
        cniBin: hostPathOf(ds, 'cni-bin'),
        cniConf: hostPathOf(ds, 'cni-conf'),
        kubelet: hostPathOf(ds, 'device-plugins')?.replace(/\/device-plugins$/, ''),
      },
      overlay,
    ).toEqual(paths);
    expect(hostPathOf(ds, 'pod-resources'), overlay).toBe(`${paths?.kubelet}/pod-resources`);
    // What kubectl makes of it, where kubectl is installed (it is not a Debian package here): the same objects.
    if (kubectl.exitCode === 0) {
      const out = await execa('kubectl', ['kustomize', dir]);
      const theirs = parseAllDocuments(out.stdout).map((d) => d.toJSON() as K8sObject);
      expect(new Map(objects.map((o) => [key(o), o])), overlay).toEqual(new Map(theirs.map((o) => [key(o), o])));
    }
  }
});
