import { expect, test } from 'vitest';
import { addresses, linkNames, ping } from '../fixtures/kernel';
import { inNetns, netnsNames, useNetns, useVeth } from '../fixtures/netns';
import { manualScope } from '../fixtures/scope';

// Other test files (and podman) create namespaces concurrently, so this looks at its own names only.
test('node and pod namespaces joined by a veth ping each other, and teardown removes both namespaces', async () => {
  const scope = manualScope();
  const ours: string[] = [];
  try {
    const node = await useNetns(scope, 'node');
    const pod = await useNetns(scope, 'pod');
    ours.push(node.name, pod.name);
    expect(await netnsNames()).toEqual(expect.arrayContaining(ours));
    await useVeth(node, 'n0', pod, 'p0');
    await inNetns(node, 'ip', 'addr', 'add', '192.0.2.1/24', 'dev', 'n0');
    await inNetns(pod, 'ip', 'addr', 'add', '192.0.2.2/24', 'dev', 'p0');
    expect(await linkNames(node)).toEqual(['lo', 'n0']);
    expect(await addresses(pod, 'p0')).toEqual(['192.0.2.2/24']);
    expect(await ping(pod, '192.0.2.1')).toBe(true);
    expect(await ping(node, '192.0.2.2')).toBe(true);
    expect(await ping(node, '192.0.2.3')).toBe(false);
  } finally {
    await scope.runCleanups();
  }
  expect(ours).toHaveLength(2);
  const left = await netnsNames();
  expect(ours.filter((n) => left.includes(n))).toEqual([]);
});
