import { setImmediate as tick } from 'node:timers/promises';
import { expect, test } from 'vitest';
import type { ClusterBlock } from '../ipam/blocks/ports';
import { BlockPeerSource } from './block-peers';
import type { Peer } from './peers';
import { StaticPeerSource } from './static-source';

test('each peer gains the blocks it holds; a block claimed or released is a new view, an unchanged one is not', async () => {
  let blocks: ClusterBlock[] = [];
  const listeners: (() => void)[] = [];
  const block = (node: string, cidr: string): ClusterBlock => ({
    name: cidr,
    uid: cidr,
    network: 'pods',
    family: 4,
    cidr,
    node,
    isDeleting: false,
  });
  const source = new BlockPeerSource(
    new StaticPeerSource(
      [
        { name: 'a', addresses: ['192.0.2.11'], podCIDRs: ['10.1.0.0/24'] },
        { name: 'b', addresses: ['192.0.2.12'], podCIDRs: ['10.2.0.0/24'] },
      ],
      'a',
    ),
    { routed: () => blocks, onChange: (l) => listeners.push(l) },
  );
  const views: Peer[][] = [];
  source.start((peers) => views.push([...peers]));
  await tick();
  expect(views).toEqual([[{ name: 'b', addresses: ['192.0.2.12'], podCIDRs: ['10.2.0.0/24'] }]]);
  blocks = [block('b', '10.9.0.64/26'), block('b', '10.9.0.0/26'), block('gone', '10.9.1.0/26')];
  for (const l of listeners) l();
  for (const l of listeners) l();
  await tick();
  expect(views.at(-1)).toEqual([
    { name: 'b', addresses: ['192.0.2.12'], podCIDRs: ['10.2.0.0/24'], blocks: ['10.9.0.0/26', '10.9.0.64/26'] },
  ]);
  expect(views).toHaveLength(2);
  for (const l of listeners) l();
  await tick();
  expect(views).toHaveLength(2);
  blocks = [block('b', '10.9.0.0/26')];
  for (const l of listeners) l();
  await tick();
  expect(views.at(-1)?.[0]?.blocks).toEqual(['10.9.0.0/26']);
});
