/**
 * deploy/: the manifests parse and validate against the Kubernetes schemas (kubernetes-models), hang
 * together (mounts name volumes, probes and the install step call commands ferryctl has), and carry a
 * conflist and a ferryd config template that Ferry's own schemas accept. No cluster runs here.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NetConfSchema } from '@ferry/shared-types/cni/config';
import { FerrydConfigSchema } from '@ferry/shared-types/config/ferryd';
import { PodMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor';
import { execa } from 'execa';
import { DaemonSet, type IDaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import { ClusterRole } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole';
import { ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding';
import { Role } from 'kubernetes-models/rbac.authorization.k8s.io/v1/Role';
import { RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { expect, test } from 'vitest';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import {
  DEBIAN_PACKAGES,
  DEBIAN_SUITE,
  ENTRYPOINT,
  FERRY_PREFIX,
  NODE_MAJOR,
  NODE_PATH,
} from '../../scripts/image-contents.mjs';
import { DIST_BIN, ROOT } from '../fixtures/paths';
import { ferryRules, RBAC_FILE } from '../fixtures/rbac';
import { readRbac } from '../fixtures/rbac-authorizer.mjs';

const DEPLOY = join(ROOT, 'deploy');
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'v1/Namespace': Namespace,
  'v1/ServiceAccount': ServiceAccount,
  'v1/ConfigMap': ConfigMap,
  'apps/v1/DaemonSet': DaemonSet,
  'rbac.authorization.k8s.io/v1/ClusterRole': ClusterRole,
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': ClusterRoleBinding,
  'rbac.authorization.k8s.io/v1/Role': Role,
  'rbac.authorization.k8s.io/v1/RoleBinding': RoleBinding,
};

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  [k: string]: unknown;
}

function manifests(): { file: string; obj: K8sObject }[] {
  const out: { file: string; obj: K8sObject }[] = [];
  for (const file of readdirSync(DEPLOY).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')) {
    for (const doc of parseAllDocuments(readFileSync(join(DEPLOY, file), 'utf8'))) {
      expect(doc.errors, file).toEqual([]);
      out.push({ file, obj: doc.toJSON() as K8sObject });
    }
  }
  return out;
}

test('every manifest validates against its Kubernetes schema, and the kustomization lists them all', () => {
  const all = manifests();
  // RBAC objects are whatever rbac.yaml holds (the RBAC test below holds each rule to its purpose).
  const isRbac = (kind: string) => /^(Cluster)?Role(Binding)?$/.test(kind);
  const rbacFiles = all.filter((m) => isRbac(m.obj.kind)).map((m) => m.file);
  expect(rbacFiles.length).toBeGreaterThan(0);
  expect(new Set(rbacFiles)).toEqual(new Set(['rbac.yaml']));
  expect(
    all
      .filter((m) => !isRbac(m.obj.kind))
      .map((m) => `${m.obj.kind}/${m.obj.metadata.name}`)
      .sort(),
  ).toEqual(['ConfigMap/ferry-config', 'DaemonSet/ferryd', 'Namespace/ferry-system', 'ServiceAccount/ferry']);
  for (const { file, obj } of all) {
    const Model = MODELS[`${obj.apiVersion}/${obj.kind}`];
    expect(Model, `${file}: ${obj.apiVersion} ${obj.kind} has a model`).toBeDefined();
    expect(
      () => new (Model as NonNullable<typeof Model>)(obj as never).validate(),
      `${file} ${obj.kind}`,
    ).not.toThrow();
    if (obj.kind !== 'Namespace' && !obj.kind.startsWith('Cluster'))
      expect(obj.metadata.namespace, file).toBe('ferry-system');
  }
  const kustomization = parseYaml(readFileSync(join(DEPLOY, 'kustomization.yaml'), 'utf8')) as { resources: string[] };
  expect([...kustomization.resources].sort()).toEqual([...new Set(all.map((m) => m.file))].sort());
});

test('the RBAC is least privilege: no wildcard, no write to pods or nodes, every rule says what it is for', () => {
  const objects = readRbac(RBAC_FILE);
  // Cluster-wide, and in Ferry's own namespace (Roles for what lives there alone).
  const rules = ferryRules('ferry-system');
  expect(rules.length).toBeGreaterThan(0);
  for (const { role, rule } of rules) {
    const where = `${role}: ${JSON.stringify(rule)}`;
    for (const list of [rule.apiGroups, rule.resources, rule.verbs]) expect(list, where).not.toContain('*');
    expect(
      rule.resources.some((r) => r.startsWith('*/') || r.endsWith('/*')),
      where,
    ).toBe(false);
    // What the comment above a rule says is the request that needs it (a sentence, not a word).
    expect(rule.comment.split(/\s+/).length, `${where} has no comment saying what it is for`).toBeGreaterThan(5);
    const writes = rule.verbs.filter((v) => !['get', 'list', 'watch'].includes(v));
    if (rule.apiGroups.includes('') && writes.length > 0) {
      // A node's token may write a pod's status (its network-status annotation), never a pod or a Node.
      expect(rule.resources, where).toEqual(['pods/status']);
      expect(writes, where).toEqual(['patch']);
    }
  }
  // Every role in the file is bound to Ferry's account (an unbound one would be dead weight, or meant for
  // someone else), and every binding names a role of the file.
  const roles = objects.filter((o) => o.kind === 'ClusterRole' || o.kind === 'Role');
  expect(new Set(rules.map((r) => r.role))).toEqual(new Set(roles.map((r) => `${r.kind}/${r.metadata.name}`)));
  // test/e2e/pods-kube.test.ts checks that ferryd's and the install step's requests need these rules and
  // no more; the API stand-in refuses any other request of theirs in every e2e test.
});

test('ferryd has what the node and pod watches need: its node name, and a token of the account bound to each role', () => {
  const all = manifests();
  const ds = all.find((m) => m.obj.kind === 'DaemonSet')?.obj as unknown as IDaemonSet;
  const pod = ds.spec?.template.spec;
  const ferryd = pod?.containers.find((c) => c.name === 'ferryd');
  // NODE_NAME from the downward API: the node excludes itself from its peers and watches its own pods.
  expect(ferryd?.env?.find((e) => e.name === 'NODE_NAME')?.valueFrom?.fieldRef?.fieldPath).toBe('spec.nodeName');
  // An optional override of the API server's address (clusters without kube-proxy) must stay optional.
  for (const from of ferryd?.envFrom ?? []) expect(from.configMapRef?.optional, JSON.stringify(from)).toBe(true);
  // In-cluster credentials: the pod's service account token is mounted, and that account is bound to the roles.
  expect(pod?.automountServiceAccountToken).not.toBe(false);
  const bindings = all
    .filter((m) => m.obj.kind === 'ClusterRoleBinding')
    .map((m) => m.obj as unknown as { roleRef: { kind: string; name: string }; subjects: unknown[] });
  const roles = all.filter((m) => m.obj.kind === 'ClusterRole').map((m) => m.obj.metadata.name);
  expect(bindings.map((b) => b.roleRef.name).sort()).toEqual([...roles].sort());
  for (const binding of bindings) {
    expect(binding.roleRef.kind).toBe('ClusterRole');
    expect(binding.subjects).toEqual([
      { kind: 'ServiceAccount', name: pod?.serviceAccountName, namespace: ds.metadata?.namespace },
    ]);
  }
});

test('the DaemonSet hangs together: mounts, probes, host paths, and an install step ferryctl understands', async () => {
  const ds = manifests().find((m) => m.obj.kind === 'DaemonSet')?.obj as unknown as IDaemonSet;
  const pod = ds.spec?.template.spec;
  if (!pod) throw new Error('the DaemonSet has no pod spec');
  expect(pod.hostNetwork).toBe(true);
  // A rollout surges: the new ferryd takes over from the old one before the old one is deleted.
  expect(ds.spec?.updateStrategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } });
  const volumes = new Set((pod.volumes ?? []).map((v) => v.name));
  for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
    for (const m of c.volumeMounts ?? []) expect(volumes.has(m.name), `${c.name} mounts ${m.name}`).toBe(true);
    expect(c.lifecycle?.preStop, `${c.name} has no preStop hook (nothing may remove the conflist)`).toBeUndefined();
  }
  const hostPaths = (pod.volumes ?? []).flatMap((v) => (v.hostPath ? [v.hostPath.path] : []));
  expect(hostPaths).toEqual(
    expect.arrayContaining([
      '/opt/cni/bin',
      '/etc/cni/net.d',
      '/run/ferry',
      '/var/lib/ferry',
      '/var/run/netns',
      // The device plugin's (ferryd.yaml's devicePlugin.kubeletDir).
      '/var/lib/kubelet/device-plugins',
      '/var/lib/kubelet/pod-resources',
      // The device-info files Multus reads (devicePlugin.deviceInfoDir's default).
      '/var/run/k8s.cni.cncf.io/devinfo/dp',
    ]),
  );
  const ferryd = pod.containers.find((c) => c.name === 'ferryd');
  // The probes are HTTP on the scrape listener: no process started per probe.
  const cm = manifests().find((m) => m.obj.kind === 'ConfigMap')?.obj as unknown as { data: Record<string, string> };
  const metrics = FerrydConfigSchema.parse(
    parseYaml((cm.data['ferryd.yaml.tmpl'] ?? '').replaceAll('{{POD_CIDR_V4}}', '10.244.7.0/24')),
  ).metrics;
  expect(ferryd?.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: metrics?.port });
  expect(ferryd?.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: metrics?.port });
  expect(ferryd?.livenessProbe?.exec ?? ferryd?.readinessProbe?.exec).toBeUndefined();
  // Ready means this pod's ferryd serves: the probes start after the postStart hook, which waits for this
  // pod's ready file (the ferryd of this pod holds the socket and the listener then).
  expect(ferryd?.command).toContain('--ready-file=/run/ferry-pod/ready');

  // The config is rendered and checked before the CNI files go onto the host.
  expect((pod.initContainers ?? []).map((c) => c.name)).toEqual(['render-config', 'check-config']);
  // The version-skew rule under surge: the CNI files go in from ferryd's postStart hook, once this pod's
  // ferryd serves the socket (its ready file), never from an init container (the old ferryd still serves).
  const postStart = ferryd?.lifecycle?.postStart?.exec?.command ?? [];
  expect(postStart).toContain('--ready-file=/run/ferry-pod/ready');
  const commands = new Map([
    ['render-config', pod.initContainers?.find((c) => c.name === 'render-config')?.command ?? []],
    ['install (postStart)', postStart],
  ]);
  // Each ferryctl command line, as written, is one ferryctl accepts: with every path pointing nowhere it
  // gets past its arguments (a usage error is exit 2, whatever its wording) and fails on the first file.
  for (const [name, install] of commands) {
    expect(install.slice(0, 2)).toEqual(['/opt/ferry/bin/ferryctl', 'install']);
    const flags = install.slice(2).filter((a) => a !== '--node=$(NODE_NAME)');
    const dry = await execa(
      `${DIST_BIN}/ferryctl`,
      ['install', ...flags.map((f) => (f.startsWith('--wait-sec=') ? f : f.replace(/=.*/, '=/nonexistent')))],
      { reject: false },
    );
    expect(dry.exitCode, `${name}: ${dry.stderr}`).toBe(1);
    expect(dry.stderr, name).toMatch(/^ferryctl: read the .* \/nonexistent: ENOENT$/);
  }
});

test("the ConfigMap's conflist and ferryd template pass Ferry's own schemas and ferryd's --check", async (t) => {
  const cm = manifests().find((m) => m.obj.kind === 'ConfigMap')?.obj as unknown as { data: Record<string, string> };
  const conflist = JSON.parse(cm.data['10-ferry.conflist'] ?? '') as {
    cniVersion: string;
    cniVersions?: string[];
    name: string;
    plugins: Record<string, unknown>[];
  };
  const ferry = conflist.plugins.find((p) => p.type === 'ferry-cni');
  // containerd 1.6 and 1.7 (libcni 1.1) refuse a 1.1.0 list; runtimes with a newer libcni take the highest
  // version in cniVersions, which brings STATUS and GC.
  expect(conflist.cniVersion).toBe('1.0.0');
  expect(conflist.cniVersions).toEqual(['1.0.0', '1.1.0']);
  expect(NetConfSchema.safeParse({ ...ferry, cniVersion: conflist.cniVersion, name: conflist.name }).success).toBe(
    true,
  );
  const rendered = (cm.data['ferryd.yaml.tmpl'] ?? '').replaceAll('{{POD_CIDR_V4}}', '10.244.7.0/24');
  const parsed = FerrydConfigSchema.safeParse(parseYaml(rendered));
  expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
  // The shim and ferryd must meet: the same socket, the same delete queue, the same network.
  expect(ferry?.daemonSocket).toBe(parsed.data?.socket);
  expect(ferry?.deleteQueue).toBe(parsed.data?.deleteQueue);
  expect(parsed.data?.networks.map((n) => n.name)).toContain(conflist.name);
  // The check-config init step, as the DaemonSet writes it, on the rendered config.
  const ds = manifests().find((m) => m.obj.kind === 'DaemonSet')?.obj as unknown as IDaemonSet;
  const init = ds.spec?.template.spec?.initContainers?.find((c) => c.name === 'check-config');
  const check = init?.command ?? [];
  expect(check.slice(0, 2)).toEqual(['/opt/ferry/bin/ferryd', '--check']);
  // The environment the kubelet gives the container: its downward-API values, and the API server's Service.
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    KUBERNETES_SERVICE_HOST: '10.96.0.1',
    KUBERNETES_SERVICE_PORT: '443',
  };
  for (const e of init?.env ?? []) {
    if (e.valueFrom?.fieldRef?.fieldPath === 'spec.nodeName') env[e.name] = 'node-7';
    else if (e.value !== undefined) env[e.name] = e.value;
  }
  const dir = mkdtempSync(join(tmpdir(), 'ferry-t-deploy-'));
  t.onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'ferryd.yaml'), rendered);
  const args = check.slice(1).map((a) => (a === '/run/ferry-config/ferryd.yaml' ? join(dir, 'ferryd.yaml') : a));
  const r = await execa(`${DIST_BIN}/ferryd`, args, { reject: false, env, extendEnv: false });
  expect(r.exitCode, r.stderr).toBe(0);
  expect(r.stdout).toMatch(/vxlan/);
  expect(r.stdout).toContain('metrics on 0.0.0.0:9479');
});

test('Prometheus finds the scrape listener: annotations, the config and the PodMonitor agree, with no containerPort', () => {
  const all = manifests();
  const ds = all.find((m) => m.obj.kind === 'DaemonSet')?.obj as unknown as IDaemonSet;
  const template = ds.spec?.template;
  // No container declares a port: with hostNetwork it would be a host port (test/e2e/schedule.test.ts).
  for (const c of [...(template?.spec?.initContainers ?? []), ...(template?.spec?.containers ?? [])]) {
    expect(c.ports, c.name).toBeUndefined();
  }
  const annotations = template?.metadata?.annotations ?? {};
  expect(annotations).toEqual({
    'prometheus.io/scrape': 'true',
    'prometheus.io/port': expect.stringMatching(/^\d+$/),
    'prometheus.io/path': '/metrics',
  });
  // ferryd listens where the annotation says, on every address of the node (hostNetwork: the node's port).
  const cm = all.find((m) => m.obj.kind === 'ConfigMap')?.obj as unknown as { data: Record<string, string> };
  const config = FerrydConfigSchema.parse(
    parseYaml((cm.data['ferryd.yaml.tmpl'] ?? '').replaceAll('{{POD_CIDR_V4}}', '10.244.7.0/24')),
  );
  expect(config.metrics).toEqual({ host: '0.0.0.0', port: Number(annotations['prometheus.io/port']) });

  const monitoring = join(DEPLOY, 'monitoring');
  const kustomization = parseYaml(readFileSync(join(monitoring, 'kustomization.yaml'), 'utf8')) as {
    resources: string[];
    configMapGenerator: { files: string[]; options: { labels: Record<string, string> } }[];
  };
  expect(kustomization.resources).toContain('podmonitor.yaml');
  const podMonitor = parseYaml(readFileSync(join(monitoring, 'podmonitor.yaml'), 'utf8'));
  expect(() => new PodMonitor(podMonitor).validate()).not.toThrow();
  const pm = new PodMonitor(podMonitor);
  expect(pm.metadata?.namespace).toBe(ds.metadata?.namespace);
  // The selector picks the DaemonSet's pods; the address comes from the pod's IP and the annotation (a
  // real Prometheus follows these relabelings in test/e2e/prometheus.test.ts).
  for (const [k, v] of Object.entries(pm.spec.selector.matchLabels ?? {}))
    expect(template?.metadata?.labels?.[k], k).toBe(v);
  const [endpoint, ...more] = pm.spec.podMetricsEndpoints;
  expect(more).toEqual([]);
  expect(endpoint?.port).toBeUndefined();
  expect(endpoint?.path).toBe(annotations['prometheus.io/path']);
  expect(endpoint?.relabelings?.map((r) => r.targetLabel ?? r.action)).toEqual([
    'keep',
    '__address__',
    '__address__',
    'node',
  ]);
  const generated = kustomization.configMapGenerator[0];
  expect(generated?.options.labels).toEqual({ grafana_dashboard: '1' });
  for (const f of generated?.files ?? []) expect(existsSync(join(monitoring, f)), f).toBe(true);
});

test('deploy/Dockerfile describes the image scripts/build-image.mjs builds', () => {
  const dockerfile = readFileSync(join(DEPLOY, 'Dockerfile'), 'utf8');
  const instructions = dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('#'))
    .map((l) => l.replace(/\s+/g, ' ').trim());
  expect(instructions.filter((l) => l.startsWith('FROM '))).toEqual([
    `FROM node:${NODE_MAJOR}-${DEBIAN_SUITE}-slim AS node`,
    `FROM debian:${DEBIAN_SUITE}-slim`,
  ]);
  const install = instructions
    .find((l) => l.startsWith('RUN '))
    ?.match(/apt-get install -y --no-install-recommends ([^&]+)/);
  expect(install?.[1]?.trim().split(' ').sort()).toEqual([...DEBIAN_PACKAGES].sort());
  expect(instructions).toContain(`COPY --from=node /usr/local/bin/node ${NODE_PATH}`);
  expect(instructions).toContain(`COPY dist/ ${FERRY_PREFIX}/`);
  expect(instructions.at(-1)).toBe(`ENTRYPOINT ${JSON.stringify(ENTRYPOINT)}`);
  // The tag it is built as is the one the DaemonSet runs.
  const ds = manifests().find((m) => m.obj.kind === 'DaemonSet')?.obj as unknown as IDaemonSet;
  const images = new Set(
    [...(ds.spec?.template.spec?.initContainers ?? []), ...(ds.spec?.template.spec?.containers ?? [])].map(
      (c) => c.image,
    ),
  );
  expect([...images]).toEqual([dockerfile.match(/docker build .* -t (\S+) \./)?.[1]]);
});
