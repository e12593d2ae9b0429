import pino from 'pino';
import { describe, expect, test, vi } from 'vitest';
import { StartupError } from '../errors';
import { createKubePeerSource, peerOfNode } from './kube-source';

describe('peerOfNode', () => {
  test('InternalIP addresses only, spec.podCIDRs before spec.podCIDR', () => {
    const node = {
      metadata: { name: 'node-b', labels: { any: 'thing' } },
      spec: { podCIDR: '10.244.2.0/24', podCIDRs: ['10.244.2.0/24', 'fd00:10:244:2::/64'] },
      status: {
        addresses: [
          { type: 'Hostname', address: 'node-b' },
          { type: 'InternalIP', address: '192.0.2.12' },
          { type: 'ExternalIP', address: '203.0.113.12' },
          { type: 'InternalIP', address: '2001:db8::12' },
        ],
      },
    };
    expect(peerOfNode(node)).toEqual({
      peer: {
        name: 'node-b',
        addresses: ['192.0.2.12', '2001:db8::12'],
        podCIDRs: ['10.244.2.0/24', 'fd00:10:244:2::/64'],
      },
    });
  });

  test('only spec.podCIDR (before dual-stack), or none yet: still a peer', () => {
    expect(peerOfNode({ metadata: { name: 'old' }, spec: { podCIDR: '10.244.4.0/24' } })).toEqual({
      peer: { name: 'old', addresses: [], podCIDRs: ['10.244.4.0/24'] },
    });
    expect(peerOfNode({ metadata: { name: 'new' } })).toEqual({ peer: { name: 'new', addresses: [], podCIDRs: [] } });
  });

  test.for([
    ['no name', { metadata: {} }, /metadata\.name/],
    ['empty name', { metadata: { name: '' } }, /metadata\.name/],
    [
      'InternalIP not an IP',
      { metadata: { name: 'x' }, status: { addresses: [{ type: 'InternalIP', address: 'x' }] } },
      /InternalIP/,
    ],
    ['podCIDRs a string', { metadata: { name: 'x' }, spec: { podCIDRs: '10.244.2.0/24' } }, /spec\.podCIDRs/],
    ['podCIDR not a CIDR', { metadata: { name: 'x' }, spec: { podCIDR: '10.244.2.0' } }, /spec\.podCIDR/],
    ['addresses not a list', { metadata: { name: 'x' }, status: { addresses: 'x' } }, /status\.addresses/],
    ['not an object', 'node', /\(root\)/],
  ] as const)('%s: a problem naming the field, not a peer', ([, node, problem]) => {
    const r = peerOfNode(node);
    expect(r).not.toHaveProperty('peer');
    expect(r).toEqual({ problem: expect.stringMatching(problem) });
  });
});

describe('createKubePeerSource refuses a config it cannot use, naming why', () => {
  const log = pino({ level: 'silent' });

  test('a kubeconfig file that is not there', () => {
    const create = () => createKubePeerSource({ kubeconfig: '/nonexistent/kubeconfig', nodeName: 'a', log });
    expect(create).toThrow(StartupError);
    expect(create).toThrow(/load kubeconfig \/nonexistent\/kubeconfig: .*ENOENT/);
  });

  test('no kubeconfig and not in a cluster', () => {
    vi.stubEnv('KUBERNETES_SERVICE_HOST', undefined);
    vi.stubEnv('KUBERNETES_SERVICE_PORT', undefined);
    try {
      expect(() => createKubePeerSource({ nodeName: 'a', log })).toThrow(/not in a cluster/);
    } finally {
      vi.unstubAllEnvs();
    }
  });
});
