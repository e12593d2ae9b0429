import { NetworkConfigSchema } from '@ferry/shared-types/config/ferryd';
import { expect, test } from 'vitest';
import { podViewOf } from '../../pods/pod';
import { pendingPodsOf } from './demand';

const pod = (name: string, extra: { annotations?: Record<string, string>; spec?: object; status?: object } = {}) => {
  const r = podViewOf({
    metadata: { name, namespace: 'ns', uid: `u-${name}`, resourceVersion: '1', annotations: extra.annotations },
    spec: { nodeName: 'node-a', ...extra.spec },
    status: extra.status,
  });
  if ('problem' in r) throw new Error(r.problem);
  return r.pod;
};

const nics = (entries: object[]) => ({ 'ferry.dev/nics': JSON.stringify(entries) });

test('pods on their way count: not added yet, not on the host network, not finished', () => {
  const pods = [
    pod('added'),
    pod('new-1'),
    pod('new-2'),
    pod('host', { spec: { hostNetwork: true } }),
    pod('done', { status: { phase: 'Succeeded' } }),
    pod('storage', { annotations: nics([{ network: 'storage', group: 'sriov' }]) }),
    pod('static', { annotations: nics([{ network: 'storage', group: 'sriov', addresses: ['192.0.2.5/24'] }]) }),
  ];
  const store = {
    attachmentsOfNetwork: (network: string) => (network === 'pods' ? [{ pod_namespace: 'ns', pod_name: 'added' }] : []),
  };
  const primary = NetworkConfigSchema.parse({ name: 'pods', ipv4: { subnet: '10.0.0.0/16', blocks: {} } });
  const secondary = NetworkConfigSchema.parse({ name: 'storage', infraNIC: false, ipv4: { subnet: '10.1.0.0/16' } });
  expect(pendingPodsOf(pods, primary, store)).toBe(4);
  expect(pendingPodsOf(pods, secondary, store)).toBe(1);
});
