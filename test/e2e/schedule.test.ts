/**
 * A rollout of deploy/'s DaemonSet on a real scheduler's rules: the pods the DaemonSet controller makes
 * from the template as `kubectl kustomize deploy` renders it, defaulted as the API server defaults a Pod,
 * put through the scheduler's filters (fixtures/scheduler.ts) on one node. A surge (maxSurge 1,
 * maxUnavailable 0) needs the new pod to fit beside the old one: no host port, no request the node
 * cannot give twice. The same check refuses the manifest as it was (a containerPort, which a hostNetwork
 * pod turns into a host port).
 */
import { join } from 'node:path';
import type { IDaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import type { IPodTemplateSpec } from 'kubernetes-models/v1/PodTemplateSpec';
import { expect, test } from 'vitest';
import { kustomize } from '../fixtures/kustomize';
import { ROOT } from '../fixtures/paths';
import { daemonSetPod, type SchedNode, unschedulableReasons } from '../fixtures/scheduler';

/** A kubeadm worker of modest size, with the control-plane taint a single-node cluster has. */
const NODE: SchedNode = {
  name: 'node-a',
  labels: { 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', 'kubernetes.io/hostname': 'node-a' },
  allocatable: { cpu: '2', memory: '3800Mi', pods: '110' },
  taints: [{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }],
};

function renderedDaemonSet(): IDaemonSet {
  const ds = kustomize(join(ROOT, 'deploy')).find((o) => o.kind === 'DaemonSet');
  if (!ds) throw new Error('deploy/ renders no DaemonSet');
  return ds as unknown as IDaemonSet;
}

/** The next release's template: what a rollout changes (the image), nothing else. */
function upgraded(template: IPodTemplateSpec): IPodTemplateSpec {
  const next = structuredClone(template);
  for (const c of [...(next.spec?.initContainers ?? []), ...(next.spec?.containers ?? [])]) {
    c.image = c.image?.replace(/:[^:/]+$/, ':0.1.1');
  }
  return next;
}

test('a surge fits: the new pod is scheduled onto the node beside the old one', () => {
  const ds = renderedDaemonSet();
  expect(ds.spec?.updateStrategy?.rollingUpdate).toEqual({ maxSurge: 1, maxUnavailable: 0 });
  const template = ds.spec?.template as IPodTemplateSpec;
  const old = daemonSetPod(template, NODE.name, 'ferryd-old');
  expect(unschedulableReasons(old, NODE, [])).toEqual([]);
  const surge = daemonSetPod(upgraded(template), NODE.name, 'ferryd-new');
  expect(unschedulableReasons(surge, NODE, [old])).toEqual([]);
  // Even as the API server has defaulted it, no container holds a host port.
  for (const c of [...(surge.spec?.initContainers ?? []), ...(surge.spec?.containers ?? [])]) {
    expect(c.ports ?? [], c.name).toEqual([]);
  }
});

test('the check can fail: a containerPort (the manifest before) keeps the surge pod Pending', () => {
  const template = structuredClone(renderedDaemonSet().spec?.template as IPodTemplateSpec);
  const ferryd = template.spec?.containers.find((c) => c.name === 'ferryd');
  if (!ferryd) throw new Error('no ferryd container');
  ferryd.ports = [{ name: 'metrics', containerPort: 9479 }];
  const old = daemonSetPod(template, NODE.name, 'ferryd-old');
  // The API server made the containerPort a host port (hostNetwork).
  expect(old.spec?.containers.find((c) => c.name === 'ferryd')?.ports).toEqual([
    { name: 'metrics', containerPort: 9479, hostPort: 9479, protocol: 'TCP' },
  ]);
  expect(unschedulableReasons(old, NODE, [])).toEqual([]);
  const surge = daemonSetPod(upgraded(template), NODE.name, 'ferryd-new');
  expect(unschedulableReasons(surge, NODE, [old])).toEqual([
    "node(s) didn't have free ports for the requested pod ports",
  ]);
});

test('the other filters: every taint tolerated, requests that fit twice, Linux nodes only', () => {
  const template = renderedDaemonSet().spec?.template as IPodTemplateSpec;
  const old = daemonSetPod(template, NODE.name, 'ferryd-old');
  // A node that is not ready, cordoned and under pressure still gets its CNI (the controller's tolerations
  // and the manifest's own `operator: Exists`).
  const troubled: SchedNode = {
    ...NODE,
    taints: [
      { key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' },
      { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' },
      { key: 'node.kubernetes.io/network-unavailable', effect: 'NoSchedule' },
      { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' },
    ],
  };
  expect(unschedulableReasons(daemonSetPod(upgraded(template), NODE.name, 'n'), troubled, [old])).toEqual([]);
  // A small node: room for the two ferryds' requests (50m, 64Mi each), not for three.
  const small: SchedNode = { ...NODE, allocatable: { cpu: '100m', memory: '128Mi', pods: '110' } };
  expect(unschedulableReasons(daemonSetPod(upgraded(template), NODE.name, 'n'), small, [old])).toEqual([]);
  expect(unschedulableReasons(daemonSetPod(template, NODE.name, 'n'), small, [old, old])).toEqual([
    'Insufficient cpu',
    'Insufficient memory',
  ]);
  const windows: SchedNode = { ...NODE, labels: { ...NODE.labels, 'kubernetes.io/os': 'windows' } };
  expect(unschedulableReasons(daemonSetPod(template, NODE.name, 'w'), windows, [])).toEqual([
    "node(s) didn't match Pod's node affinity/selector",
  ]);
  // Bound to its own node: another node is no place for it.
  expect(unschedulableReasons(daemonSetPod(template, 'node-b', 'b'), NODE, [])).toEqual([
    "node(s) didn't match Pod's node affinity/selector",
  ]);
});
