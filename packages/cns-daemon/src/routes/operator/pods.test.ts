import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Code } from '@ferry/shared-types/errors';
import { expect, test } from 'vitest';
import { createKubePeerSource } from '../../cluster/kube-source';
import { buildPodServices } from '../../pods/build';
import { tempDir, useApp } from '../../testing/harness';

/** A kubeconfig whose API server refuses every connection. */
function unreachableKubeconfig(dir: string): string {
  const path = join(dir, 'kubeconfig');
  writeFileSync(
    path,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{ name: c, cluster: { server: "http://127.0.0.1:1", insecure-skip-tls-verify: true } }]',
      'users: [{ name: u, user: { token: t } }]',
      'contexts: [{ name: x, context: { cluster: c, user: u } }]',
      'current-context: x',
    ].join('\n'),
  );
  return path;
}

test('without the pod watch, the pod routes say it is not configured', async (t) => {
  const h = await useApp(t);
  const r = await h.app.inject({ method: 'GET', url: '/v1/operator/pods' });
  expect(r.statusCode).toBe(404);
  expect(r.json()).toMatchObject({ code: Code.NotFound, msg: expect.stringMatching(/does not watch pods/) });
});

test("the pod routes: the cache's pods with their intent or problem; one the cache lacks is asked for, code 11 when nobody answers", async (t) => {
  const kubeconfig = unreachableKubeconfig(tempDir(t));
  const h = await useApp(
    t,
    {
      cluster: { nodeName: 'node-a', kubernetes: { kubeconfig, pods: { lookupTimeoutMs: 200, networkStatus: true } } },
    },
    { services: { podServices: buildPodServices, kubeSource: createKubePeerSource } },
  );
  const pods = h.services.pods;
  if (!pods) throw new Error('no pod services');
  const pod = (name: string, annotations: Record<string, string>) => ({
    metadata: { namespace: 'a', name, uid: `uid-${name}`, resourceVersion: '9', annotations },
    spec: { nodeName: 'node-a' },
  });
  pods.cache.upsert(pod('asks', { 'ferry.dev/nics': '[{"group":"frontend"}]' }));
  pods.cache.upsert(pod('bad', { 'ferry.dev/nics': '[{"group":"frontend","mac":"02:00:00:00:00:01"}]' }));
  pods.cache.upsert(pod('plain', {}));
  const all = await h.app.inject({ method: 'GET', url: '/v1/operator/pods' });
  expect(all.statusCode).toBe(200);
  expect(all.json()).toMatchObject({
    nodeName: 'node-a',
    watch: { synced: false, lastSync: null },
    networkStatus: { pending: 0, written: 0 },
    pods: [
      { name: 'asks', source: 'cache', nics: [{ group: 'frontend' }] },
      { name: 'bad', problem: 'pod a/bad: annotation ferry.dev/nics: [0]: gives group and mac: give only one' },
      { name: 'plain', uid: 'uid-plain' },
    ],
  });
  const one = await h.app.inject({ method: 'GET', url: '/v1/operator/pods/a/asks?uid=uid-asks' });
  expect(one.json()).toMatchObject({ name: 'asks', source: 'cache', resourceVersion: '9' });
  const missing = await h.app.inject({ method: 'GET', url: '/v1/operator/pods/a/elsewhere' });
  expect(missing.statusCode).toBe(503);
  expect(missing.json()).toMatchObject({
    code: Code.TryAgainLater,
    msg: expect.stringMatching(
      /^look up pod a\/elsewhere: the Kubernetes API did not answer within 200 ms \(kubernetes api: .*ECONNREFUSED.*\); try again later$/,
    ),
  });
});
