import { Code } from '@ferry/shared-types/errors';
import { describe, expect, test } from 'vitest';
import { applyMasquerade, renderIptablesRestore, renderNftRuleset } from './masquerade';

// What these rules do to packets is tested in real namespaces (test/e2e/masquerade.test.ts).
describe('masquerade rendering', () => {
  const rules = {
    sources: { 4: ['10.244.1.0/24'], 6: [] },
    direct: { 4: ['10.244.0.0/16', '169.254.0.0/16'], 6: ['fe80::/10'] },
  };

  test('nft: one transaction that creates, deletes and rewrites only table inet ferry', () => {
    const text = renderNftRuleset(rules);
    expect(text.split('\n').slice(0, 3)).toEqual(['table inet ferry', 'delete table inet ferry', 'table inet ferry {']);
    expect(text).toContain('elements = { 10.244.0.0/16, 169.254.0.0/16 }');
    expect(text).toContain('ip saddr @pod4 ip daddr != @direct4 masquerade');
    // No IPv6 pod CIDR: no IPv6 rule (an empty set would match nothing anyway, but say so plainly).
    expect(text).not.toContain('ip6 saddr');
    expect(text.match(/^table /gm)).toHaveLength(2);
  });

  test('iptables: declares (so flushes) FERRY-POSTROUTING, RETURNs direct destinations before MASQUERADE', () => {
    expect(renderIptablesRestore(rules, 4).split('\n')).toEqual([
      '*nat',
      ':FERRY-POSTROUTING - [0:0]',
      '-A FERRY-POSTROUTING -d 10.244.0.0/16 -j RETURN',
      '-A FERRY-POSTROUTING -d 169.254.0.0/16 -j RETURN',
      '-A FERRY-POSTROUTING -s 10.244.1.0/24 -j MASQUERADE',
      'COMMIT',
      '',
    ]);
  });
});

describe('applyMasquerade refuses a bad spec before running anything', () => {
  const run = () => {
    throw new Error('must not run');
  };
  test.for([
    [{ podCIDRs: ['10.244.1.0/24 }; flush ruleset; {'], clusterCIDRs: [] }, /pod CIDR/],
    [{ podCIDRs: ['10.244.1.5/24'], clusterCIDRs: [] }, /host bits/],
    [{ podCIDRs: ['10.244.1.0/24'], clusterCIDRs: ['10.0.0.0/33'] }, /cluster CIDR.*prefix/],
  ] as const)('%o', async ([spec, message]) => {
    await expect(applyMasquerade(spec, { run, firewall: 'nft' })).rejects.toMatchObject({
      code: Code.InvalidConfig,
      message: expect.stringMatching(message),
    });
  });
});
