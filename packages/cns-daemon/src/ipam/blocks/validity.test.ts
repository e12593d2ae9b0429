import { NetworkConfigSchema } from '@ferry/shared-types/config/ferryd';
import { expect, test } from 'vitest';
import { poolSpecsOf } from '../pool';
import type { ClusterBlock } from './ports';
import { judgeBlocks } from './validity';

const [range] = poolSpecsOf(NetworkConfigSchema.parse({ name: 'pods', ipv4: { subnet: '10.244.0.0/16', blocks: {} } }));
const rules = {
  rangeOf: (network: string, family: 4 | 6) => (network === 'pods' && family === 4 ? range : undefined),
  nameOf: (network: string, family: 4 | 6, cidr: string) => `${network}.v${family}.${cidr.replace(/[./]/g, '-')}`,
};
const block = (cidr: string, over: Partial<ClusterBlock> = {}): ClusterBlock => ({
  name: rules.nameOf(over.network ?? 'pods', 4, cidr),
  uid: `uid-${cidr}`,
  network: 'pods',
  family: 4,
  cidr,
  node: 'node-1',
  isDeleting: false,
  ...over,
});

test('well-formed blocks are valid; names, ranges, prefixes and overlaps are judged', () => {
  const verdicts = judgeBlocks(
    [
      block('10.244.3.0/26'),
      block('10.244.3.64/26', { node: 'node-2' }),
      // Edited by hand: a /24 over node-1's and node-2's blocks, under its own right name.
      block('10.244.3.0/24', { node: 'node-3' }),
      block('10.244.9.0/25', { node: 'node-3' }),
      block('10.245.0.0/26'),
      { ...block('10.244.4.0/26'), name: 'pods.v4.10-244-5-0-26' },
      block('10.9.0.0/26', { network: 'other' }),
    ],
    rules,
  );
  const summary = Object.fromEntries(
    [...verdicts].map(([n, v]) => [n, v.isValid ? 'valid' : `${v.reason}: ${v.message}`]),
  );
  expect(summary).toEqual({
    'pods.v4.10-244-3-0-26': 'valid',
    'pods.v4.10-244-3-64-26': 'valid',
    'pods.v4.10-244-3-0-24': 'Overlap: 10.244.3.0/24 overlaps block 10.244.3.0/26 of node node-1',
    'pods.v4.10-244-9-0-25': 'OutsideRange: 10.244.9.0/25 is not a /26 block of 10.244.0.0/16',
    'pods.v4.10-245-0-0-26': 'OutsideRange: 10.245.0.0/26 is not inside the range 10.244.0.0/16',
    'pods.v4.10-244-5-0-26': 'NameMismatch: the name of a block of 10.244.4.0/26 is pods.v4.10-244-4-0-26',
    'other.v4.10-9-0-0-26': 'UnknownRange: network "other" IPv4 is not a range split into blocks on this node',
  });
});
